//! Address plumbing: which socket address a published node address dials, what address a
//! node publishes for its listener, and the process facts (entropy, hostname) a node's
//! records carry.
//!
//! The driver never blocks, so it never resolves host names: a published address must carry
//! an IP literal (`atcp://127.0.0.1:4100`, `tcp://[::1]:4100`, `10.0.0.1:21902`). An address
//! it cannot dial makes the dial fail at once (`handle_connect_failed`), and the core's
//! backoff decides what happens next.

use std::{
    hash::{BuildHasher, Hasher},
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
};

/// The socket address behind a published address: `atcp://ip:port`, `tcp://ip:port`,
/// `ipv4://ip:port`, `ipv6://[ip]:port` or a bare `ip:port` (a trailing `/` is allowed).
/// `None` for other schemes (`unix://`, `shm://`, ...), host names and malformed input.
#[must_use]
pub fn dial_target(addr: &str) -> Option<SocketAddr> {
    let rest = match addr.split_once("://") {
        Some((scheme, rest)) => {
            let scheme = scheme.to_ascii_lowercase();
            if !matches!(scheme.as_str(), "atcp" | "tcp" | "ipv4" | "ipv6") {
                return None;
            }
            rest
        }
        None => addr,
    };
    rest.trim_end_matches('/').parse().ok()
}

/// The address a node publishes for a listener bound at `bound`: `atcp://ip:port`, an
/// unspecified ip (`0.0.0.0`, `::`) replaced by loopback.
#[must_use]
pub fn published_address(bound: SocketAddr) -> String {
    let ip = match bound.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(v6) if v6.is_unspecified() => Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    format!("atcp://{}", SocketAddr::new(ip, bound.port()))
}

/// Fresh entropy (randomly keyed hasher, wall clock, pid), mixed into the node's seed so a
/// restarted node is a new incarnation.
pub(crate) fn entropy() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    h.finish()
}

/// This host's name (`/proc/sys/kernel/hostname`, then `$HOSTNAME`, then `localhost`).
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| String::from("localhost"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().expect("literal")
    }

    #[test]
    fn published_addresses_dial_back_to_their_socket_address() {
        assert_eq!(
            published_address(sa("0.0.0.0:4100")),
            "atcp://127.0.0.1:4100"
        );
        assert_eq!(published_address(sa("[::]:4100")), "atcp://[::1]:4100");
        assert_eq!(
            dial_target("atcp://127.0.0.1:4100"),
            Some(sa("127.0.0.1:4100"))
        );
        assert_eq!(dial_target("atcp://[::1]:4100"), Some(sa("[::1]:4100")));
        assert_eq!(dial_target("TCP://10.0.0.1:80/"), Some(sa("10.0.0.1:80")));
        assert_eq!(dial_target("10.0.0.1:21902"), Some(sa("10.0.0.1:21902")));
    }

    #[test]
    fn undialable_addresses_are_none() {
        assert_eq!(dial_target("unix:///tmp/a.sock"), None);
        assert_eq!(dial_target("atcp://127.0.0.1"), None);
        assert_eq!(dial_target("atcp://:80"), None);
        assert_eq!(dial_target("atcp://127.0.0.1:99999"), None);
        assert_eq!(dial_target("atcp://host-a:80"), None);
        assert_eq!(dial_target(""), None);
    }
}
