//! The memory request bodies hold while they arrive: a budget for all of them, one for each
//! client network (an IPv4 /24, an IPv6 /64) and one for each API key, so that bodies sent
//! slowly but within the minimum rate cannot pin the server's memory (a key sending small
//! bodies on two hundred connections held 354 MB; from eight addresses, 3 GB): a network
//! cannot, and neither can a key spread over many networks. A body is charged what it
//! announces (`Content-Length`) before its first byte is read, and what arrives beyond it
//! as it arrives; the charge is given back when the body is dropped (after it is parsed).
//! Over a budget the request is refused at once, nothing read further: `429` over its
//! network's or its key's, `503` over the server's, both with `Retry-After`. (A leaf: it names nothing
//! of the state that holds it.)

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex, MutexGuard};

/// Which budget a body would exceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// The client network's.
    Network,
    /// The API key's, all its networks together.
    Key,
    /// The server's, all networks together.
    Server,
}

/// What holds a share of the budget besides the server: a network, or an API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Holder {
    Network(IpAddr),
    Key(i64),
}

impl Holder {
    fn over(self) -> Over {
        match self {
            Self::Network(_) => Over::Network,
            Self::Key(_) => Over::Key,
        }
    }
}

#[derive(Debug, Clone)]
pub struct BodyMemory(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    total_limit: u64,
    per_network_limit: u64,
    per_key_limit: u64,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    total: u64,
    /// Only holders that hold something.
    by_holder: HashMap<Holder, u64>,
}

/// One body's charge, given back when dropped.
#[derive(Debug)]
pub struct Charge {
    memory: Arc<Inner>,
    holders: Vec<Holder>,
    bytes: u64,
}

impl BodyMemory {
    pub fn new(total_bytes: u64, per_network_bytes: u64, per_key_bytes: u64) -> Self {
        Self(Arc::new(Inner {
            total_limit: total_bytes,
            per_network_limit: per_network_bytes,
            per_key_limit: per_key_bytes,
            held: Mutex::new(Held::default()),
        }))
    }

    /// A charge of nothing yet for a body from `peer` (none: the server's own requests),
    /// sent with the API key `key_id` (none: no valid key).
    pub fn charge(&self, peer: Option<IpAddr>, key_id: Option<i64>) -> Charge {
        let holders = peer.map(|ip| Holder::Network(network_of(ip))).into_iter().chain(key_id.map(Holder::Key));
        Charge { memory: Arc::clone(&self.0), holders: holders.collect(), bytes: 0 }
    }

    /// Bytes held by every body and by `peer`'s network (for tests and metrics).
    pub fn held(&self, peer: IpAddr) -> (u64, u64) {
        let held = self.0.lock();
        (held.total, held.by_holder.get(&Holder::Network(network_of(peer))).copied().unwrap_or(0))
    }

    /// Bytes held by the bodies sent with the API key `key_id`.
    pub fn held_by_key(&self, key_id: i64) -> u64 {
        self.0.lock().by_holder.get(&Holder::Key(key_id)).copied().unwrap_or(0)
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Held> {
        // The counts stay whole under a panic elsewhere: every change is made after every
        // check, with nothing that can panic between.
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn limit(&self, holder: Holder) -> u64 {
        match holder {
            Holder::Network(_) => self.per_network_limit,
            Holder::Key(_) => self.per_key_limit,
        }
    }
}

impl Charge {
    /// Charges `more` bytes, unless a budget would go over: then nothing is charged.
    pub fn grow(&mut self, more: u64) -> Result<(), Over> {
        if more == 0 {
            return Ok(());
        }
        let memory = &self.memory;
        let mut held = memory.lock();
        if held.total.saturating_add(more) > memory.total_limit {
            return Err(Over::Server);
        }
        for &holder in &self.holders {
            let mine = held.by_holder.get(&holder).copied().unwrap_or(0);
            if mine.saturating_add(more) > memory.limit(holder) {
                return Err(holder.over());
            }
        }
        for &holder in &self.holders {
            *held.by_holder.entry(holder).or_insert(0) += more;
        }
        held.total += more;
        self.bytes += more;
        Ok(())
    }

    /// Bytes charged so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        let mut held = self.memory.lock();
        held.total = held.total.saturating_sub(self.bytes);
        for holder in &self.holders {
            if let Some(mine) = held.by_holder.get_mut(holder) {
                *mine = mine.saturating_sub(self.bytes);
                if *mine == 0 {
                    held.by_holder.remove(holder);
                }
            }
        }
    }
}

/// The network an address is counted with: its /24 (IPv4, also written `::ffff:a.b.c.d`)
/// or its /64 (IPv6, what one host is given).
pub fn network_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(Ipv4Addr::from(u32::from(v4) & 0xffff_ff00)),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => network_of(IpAddr::V4(v4)),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_network_holds_at_most_its_budget_and_all_of_them_the_servers() {
        let memory = BodyMemory::new(100, 60, 1000);
        let mut a = memory.charge(Some(ip("203.0.113.7")), None);
        let mut b = memory.charge(Some(ip("203.0.113.200")), None);
        assert_eq!(a.grow(40), Ok(()));
        assert_eq!(b.grow(30), Err(Over::Network), "the same /24");
        assert_eq!(b.grow(20), Ok(()));
        let mut c = memory.charge(Some(ip("198.51.100.1")), None);
        assert_eq!(c.grow(50), Err(Over::Server));
        assert_eq!(c.grow(40), Ok(()));
        assert_eq!(memory.held(ip("203.0.113.1")), (100, 60));
        drop(a);
        assert_eq!(memory.held(ip("203.0.113.1")), (60, 20));
        drop((b, c));
        assert_eq!(memory.held(ip("203.0.113.1")), (0, 0));
        assert!(memory.0.lock().by_holder.is_empty(), "nothing kept for networks that hold nothing");
    }

    #[test]
    fn a_key_holds_at_most_its_budget_over_every_network() {
        let memory = BodyMemory::new(1000, 60, 100);
        let mut from_one = memory.charge(Some(ip("203.0.113.7")), Some(7));
        let mut from_another = memory.charge(Some(ip("198.51.100.1")), Some(7));
        assert_eq!(from_one.grow(60), Ok(()));
        assert_eq!(from_another.grow(50), Err(Over::Key), "each network has room, the key has not");
        assert_eq!(memory.held(ip("198.51.100.1")), (60, 0), "a refused charge takes nothing");
        assert_eq!(from_another.grow(40), Ok(()));
        let mut other_key = memory.charge(Some(ip("198.51.100.2")), Some(8));
        assert_eq!(other_key.grow(20), Ok(()), "another key of the same network");
        assert_eq!(memory.held_by_key(7), 100);
        drop((from_one, from_another, other_key));
        assert_eq!((memory.held_by_key(7), memory.held_by_key(8)), (0, 0));
        assert!(memory.0.lock().by_holder.is_empty());
    }

    #[test]
    fn addresses_are_counted_by_their_network() {
        assert_eq!(network_of(ip("192.0.2.77")), ip("192.0.2.0"));
        assert_eq!(network_of(ip("::ffff:192.0.2.77")), ip("192.0.2.0"));
        assert_eq!(network_of(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_ne!(network_of(ip("2001:db8:1:3::1")), network_of(ip("2001:db8:1:2::1")));
    }
}
