//! The memory request bodies hold while they arrive: a budget for all of them and one for
//! each client network (an IPv4 /24, an IPv6 /64), so that bodies sent slowly but within
//! the minimum rate cannot pin the server's memory (a key sending small bodies on two
//! hundred connections held 354 MB; from eight addresses, 3 GB). A body is charged what it
//! announces (`Content-Length`) before its first byte is read, and what arrives beyond it
//! as it arrives; the charge is given back when the body is dropped (after it is parsed).
//! Over a budget the request is refused at once, nothing read further: `429` over its
//! network's, `503` over the server's, both with `Retry-After`. (A leaf: it names nothing
//! of the state that holds it.)

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex, MutexGuard};

/// Which budget a body would exceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// The client network's.
    Network,
    /// The server's, all networks together.
    Server,
}

#[derive(Debug, Clone)]
pub struct BodyMemory(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    total_limit: u64,
    per_network_limit: u64,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    total: u64,
    by_network: HashMap<IpAddr, u64>,
}

/// One body's charge, given back when dropped.
#[derive(Debug)]
pub struct Charge {
    memory: Arc<Inner>,
    network: Option<IpAddr>,
    bytes: u64,
}

impl BodyMemory {
    pub fn new(total_bytes: u64, per_network_bytes: u64) -> Self {
        Self(Arc::new(Inner {
            total_limit: total_bytes,
            per_network_limit: per_network_bytes,
            held: Mutex::new(Held::default()),
        }))
    }

    /// A charge of nothing yet for a body from `peer` (none: the server's own requests).
    pub fn charge(&self, peer: Option<IpAddr>) -> Charge {
        Charge { memory: Arc::clone(&self.0), network: peer.map(network_of), bytes: 0 }
    }

    /// Bytes held by every body and by `peer`'s network (for tests and metrics).
    pub fn held(&self, peer: IpAddr) -> (u64, u64) {
        let held = self.0.lock();
        (held.total, held.by_network.get(&network_of(peer)).copied().unwrap_or(0))
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Held> {
        // The counts stay whole under a panic elsewhere: every change is one assignment.
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
        if let Some(network) = self.network {
            let mine = held.by_network.entry(network).or_insert(0);
            if mine.saturating_add(more) > memory.per_network_limit {
                if *mine == 0 {
                    held.by_network.remove(&network);
                }
                return Err(Over::Network);
            }
            *mine += more;
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
        if let Some(network) = self.network {
            if let Some(mine) = held.by_network.get_mut(&network) {
                *mine = mine.saturating_sub(self.bytes);
                if *mine == 0 {
                    held.by_network.remove(&network);
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
        let memory = BodyMemory::new(100, 60);
        let mut a = memory.charge(Some(ip("203.0.113.7")));
        let mut b = memory.charge(Some(ip("203.0.113.200")));
        assert_eq!(a.grow(40), Ok(()));
        assert_eq!(b.grow(30), Err(Over::Network), "the same /24");
        assert_eq!(b.grow(20), Ok(()));
        let mut c = memory.charge(Some(ip("198.51.100.1")));
        assert_eq!(c.grow(50), Err(Over::Server));
        assert_eq!(c.grow(40), Ok(()));
        assert_eq!(memory.held(ip("203.0.113.1")), (100, 60));
        drop(a);
        assert_eq!(memory.held(ip("203.0.113.1")), (60, 20));
        drop((b, c));
        assert_eq!(memory.held(ip("203.0.113.1")), (0, 0));
        assert!(memory.0.lock().by_network.is_empty(), "nothing kept for networks that hold nothing");
    }

    #[test]
    fn addresses_are_counted_by_their_network() {
        assert_eq!(network_of(ip("192.0.2.77")), ip("192.0.2.0"));
        assert_eq!(network_of(ip("::ffff:192.0.2.77")), ip("192.0.2.0"));
        assert_eq!(network_of(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_ne!(network_of(ip("2001:db8:1:3::1")), network_of(ip("2001:db8:1:2::1")));
    }
}
