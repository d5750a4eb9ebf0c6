//! Which IP addresses an outbound request may reach: public unicast only (the rule the
//! outbound client of `net` enforces and the webhook settings check).
//!
//! IPv6 forms that carry an IPv4 address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`,
//! NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:aabb:ccdd::`) are judged by the IPv4 address inside,
//! so `::ffff:127.0.0.1` is loopback however it is written.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// True when `ip` is a public unicast address; false for loopback, private, link-local,
/// shared (CGNAT), multicast, broadcast, documentation, benchmarking, reserved and
/// unspecified ranges, and IPv6 unique-local, link-local and site-local.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

/// True for the addresses `REHOME_ALLOW_PRIVATE_NETWORK` opens up (local testing): loopback,
/// private (10/8, 172.16/12, 192.168/16), shared 100.64/10, IPv6 `::1` and unique-local
/// `fc00::/7`. Link-local (cloud metadata at 169.254.169.254), unspecified, multicast,
/// broadcast, documentation and reserved addresses stay closed even then.
pub fn is_private(ip: IpAddr) -> bool {
    if is_cloud_metadata(ip) {
        return false;
    }
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_private_v4(v4),
            None => v6.is_loopback() || (v6.segments()[0] & 0xfe00) == 0xfc00,
        },
    }
}

/// Cloud instance-metadata services that sit inside the ranges the private-network switch
/// opens (the link-local ones, 169.254.169.254 and `fe80::a9fe:a9fe`, are never open):
/// AWS's IPv6 endpoint `fd00:ec2::254` (unique-local) and Alibaba Cloud's `100.100.100.200`
/// (shared address space). They hand out the instance's credentials, so they stay refused.
const CLOUD_METADATA: [IpAddr; 2] =
    [IpAddr::V6(Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254)), IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200))];

fn is_cloud_metadata(ip: IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    CLOUD_METADATA.contains(&ip)
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, _, _] = ip.octets();
    a == 127 || a == 10 || (a == 172 && (b & 0xf0) == 16) || (a == 192 && b == 168) || (a == 100 && (b & 0xc0) == 64)
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let blocked = a == 0                                 // 0.0.0.0/8 "this network", unspecified
        || a == 10                                       // 10.0.0.0/8 private
        || (a == 100 && (b & 0xc0) == 64)                // 100.64.0.0/10 shared address space (CGNAT)
        || a == 127                                      // 127.0.0.0/8 loopback
        || (a == 169 && b == 254)                        // 169.254.0.0/16 link-local (cloud metadata)
        || (a == 172 && (b & 0xf0) == 16)                // 172.16.0.0/12 private
        || (a == 192 && b == 0 && c == 0)                // 192.0.0.0/24 IETF protocol assignments
        || (a == 192 && b == 0 && c == 2)                // 192.0.2.0/24 documentation (TEST-NET-1)
        || (a == 192 && b == 88 && c == 99)              // 192.88.99.0/24 6to4 relay anycast (deprecated)
        || (a == 192 && b == 168)                        // 192.168.0.0/16 private
        || (a == 198 && (b & 0xfe) == 18)                // 198.18.0.0/15 benchmarking
        || (a == 198 && b == 51 && c == 100)             // 198.51.100.0/24 documentation (TEST-NET-2)
        || (a == 203 && b == 0 && c == 113)              // 203.0.113.0/24 documentation (TEST-NET-3)
        || a >= 224; // 224.0.0.0/4 multicast, 240.0.0.0/4 reserved, 255.255.255.255 broadcast
    !blocked
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return is_public_v4(v4);
    }
    let s = ip.segments();
    // Only global unicast (2000::/3) is public; everything outside it (unspecified,
    // loopback, unique-local fc00::/7, link-local fe80::/10, site-local fec0::/10,
    // multicast ff00::/8, discard 100::/64, reserved) is not.
    if s[0] & 0xe000 != 0x2000 {
        return false;
    }
    // 2001::/23 IETF protocol assignments (Teredo, benchmarking, ORCHID), 2001:db8::/32 and
    // 3fff::/20 documentation.
    let blocked = (s[0] == 0x2001 && (s[1] < 0x0200 || s[1] == 0x0db8)) || (s[0] & 0xfff0) == 0x3ff0;
    !blocked
}

/// The IPv4 address an IPv6 address stands for, when it is one of the forms that embed it.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low32 = || Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        // Mapped ::ffff:a.b.c.d and compatible ::a.b.c.d (which includes :: and ::1, both
        // landing in 0.0.0.0/8 and so refused).
        return Some(low32());
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low32()); // 64:ff9b::/96 NAT64
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        return Some(Ipv4Addr::UNSPECIFIED); // 64:ff9b:1::/48 local-use NAT64: never public
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8));
        // 2002::/16 6to4
    }
    None
}

/// A public DNS name or a public IP address: not localhost, not a private, loopback,
/// link-local or otherwise reserved range, not a single-label or numeric name.
pub fn is_public_host(host: &str) -> bool {
    // The same classification of addresses as every outbound request (src/net).
    if let Ok(ip) = host.parse::<IpAddr>() {
        return is_public(ip);
    }
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let labels: Vec<&str> = name.split('.').collect();
    let label_ok = |l: &&str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let internal =
        ["localhost", "local", "internal", "localdomain", "home", "lan", "corp", "intranet", "test", "invalid"];
    name.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(label_ok)
        && labels.last().is_some_and(|tld| !tld.bytes().all(|b| b.is_ascii_digit()) && !internal.contains(tld))
        && !(labels.len() >= 2 && name.ends_with(".home.arpa"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(cases: &[(&str, bool)]) {
        for (text, public) in cases {
            let ip: IpAddr = text.parse().unwrap_or_else(|_| panic!("bad test address {text}"));
            assert_eq!(is_public(ip), *public, "{text} should be {}", if *public { "public" } else { "refused" });
        }
    }

    #[test]
    fn the_private_network_switch_opens_loopback_and_private_ranges_only() {
        for text in
            ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1", "::1", "fd00::1", "::ffff:127.0.0.1"]
        {
            assert!(is_private(text.parse().unwrap()), "{text} is private");
        }
        for text in [
            "169.254.169.254",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "192.0.2.1",
            "fe80::1",
            "::",
            "::ffff:169.254.169.254",
            "8.8.8.8",
            "fd00:ec2::254",
            "100.100.100.200",
            "::ffff:100.100.100.200",
        ] {
            assert!(!is_private(text.parse().unwrap()), "{text} is not opened by the switch");
        }
    }

    #[test]
    fn ipv4_public_unicast_is_allowed_and_every_special_range_refused() {
        check(&[
            ("1.1.1.1", true),
            ("8.8.8.8", true),
            ("93.184.216.34", true),
            ("100.63.255.255", true),
            ("100.128.0.0", true),
            ("172.15.255.255", true),
            ("172.32.0.0", true),
            ("192.0.1.1", true),
            ("192.169.0.1", true),
            ("198.17.255.255", true),
            ("198.20.0.0", true),
            ("223.255.255.254", true),
            ("0.0.0.0", false),
            ("0.1.2.3", false),
            ("10.0.0.1", false),
            ("10.255.255.255", false),
            ("100.64.0.1", false),
            ("100.127.255.255", false),
            ("127.0.0.1", false),
            ("127.255.255.254", false),
            ("169.254.169.254", false),
            ("172.16.0.1", false),
            ("172.31.255.255", false),
            ("192.0.0.8", false),
            ("192.0.2.1", false),
            ("192.88.99.1", false),
            ("192.168.1.1", false),
            ("198.18.0.1", false),
            ("198.19.255.255", false),
            ("198.51.100.7", false),
            ("203.0.113.9", false),
            ("224.0.0.1", false),
            ("239.255.255.250", false),
            ("240.0.0.1", false),
            ("255.255.255.255", false),
        ]);
    }

    #[test]
    fn ipv6_global_unicast_is_allowed_and_every_special_range_refused() {
        check(&[
            ("2606:4700:4700::1111", true),
            ("2a00:1450:4001:80b::200e", true),
            ("2001:4860:4860::8888", true),
            ("::", false),
            ("::1", false),
            ("fc00::1", false),
            ("fd12:3456:789a::1", false),
            ("fe80::1", false),
            ("febf::1", false),
            ("fec0::1", false),
            ("ff02::1", false),
            ("ff05::2", false),
            ("100::1", false),
            ("2001::1", false),
            ("2001:2::1", false),
            ("2001:db8::1", false),
            ("3fff::1", false),
            ("64:ff9b:1::1", false),
            ("4000::1", false),
        ]);
    }

    #[test]
    fn ipv6_forms_that_embed_ipv4_are_judged_by_the_ipv4_address() {
        check(&[
            ("::ffff:127.0.0.1", false),
            ("::ffff:7f00:1", false),
            ("::ffff:10.0.0.1", false),
            ("::ffff:169.254.169.254", false),
            ("::ffff:8.8.8.8", true),
            ("::127.0.0.1", false),
            ("::10.1.2.3", false),
            ("::8.8.8.8", true),
            ("64:ff9b::127.0.0.1", false),
            ("64:ff9b::192.168.0.1", false),
            ("64:ff9b::8.8.8.8", true),
            ("2002:7f00:1::", false),
            ("2002:c0a8:101::1", false),
            ("2002:808:808::1", true),
        ]);
    }
}
