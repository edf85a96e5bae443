//! The TCP address syntax of discovery records: which `host:port` a published listen address
//! dials, and what a node publishes for a listener. Both adapters (tokio, mio) use these so a
//! node written with either one dials and publishes alike.

use alloc::{format, string::String};
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The schemes that name a TCP listener (libatapp's `atcp`, plus plain forms).
const TCP_SCHEMES: [&str; 4] = ["atcp", "tcp", "ipv4", "ipv6"];

/// The `host:port` part of a published address: `atcp://h:p`, `tcp://h:p`, `ipv4://h:p`,
/// `ipv6://[h]:p` or a bare `h:p` (scheme case-insensitive, a trailing `/` allowed). `None`
/// for other schemes (`unix://`, `shm://`, ...) and for an address without a host or port.
#[must_use]
pub fn tcp_host_port(addr: &str) -> Option<&str> {
    let rest = match addr.split_once("://") {
        Some((scheme, rest)) => {
            if !TCP_SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(scheme)) {
                return None;
            }
            rest
        }
        None => addr,
    };
    let rest = rest.trim_end_matches('/');
    let (host, port) = rest.rsplit_once(':')?;
    (!host.is_empty() && port.parse::<u16>().is_ok()).then_some(rest)
}

/// The socket address of a published address whose host is an IP literal (`None` for host
/// names, which need a resolver, and for what [`tcp_host_port`] refuses).
#[must_use]
pub fn tcp_socket_addr(addr: &str) -> Option<SocketAddr> {
    tcp_host_port(addr)?.parse().ok()
}

/// The address a node publishes for a listener bound at `bound`: `atcp://ip:port`, with an
/// unspecified ip (`0.0.0.0`, `::`) replaced by loopback (a node listening everywhere is at
/// least reachable from its own host; set `Config::listen` to publish another address).
#[must_use]
pub fn published_tcp_address(bound: SocketAddr) -> String {
    let ip = match bound.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(v6) if v6.is_unspecified() => Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    format!("atcp://{}", SocketAddr::new(ip, bound.port()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().expect("a literal socket address")
    }

    #[test]
    fn published_addresses_dial_back_to_their_socket_address() {
        for (bound, published) in [
            ("127.0.0.1:4100", "atcp://127.0.0.1:4100"),
            ("0.0.0.0:4100", "atcp://127.0.0.1:4100"),
            ("[::]:4100", "atcp://[::1]:4100"),
            ("[::1]:7", "atcp://[::1]:7"),
        ] {
            let p = published_tcp_address(sa(bound));
            assert_eq!(p, published);
            let dialled = published
                .strip_prefix("atcp://")
                .expect("published with atcp");
            assert_eq!(tcp_socket_addr(&p), Some(sa(dialled)));
        }
    }

    #[test]
    fn tcp_schemes_and_bare_addresses_give_their_host_and_port() {
        assert_eq!(tcp_host_port("atcp://node-a:21437"), Some("node-a:21437"));
        assert_eq!(tcp_host_port("TCP://10.0.0.1:5/"), Some("10.0.0.1:5"));
        assert_eq!(tcp_host_port("ipv6://[::1]:9"), Some("[::1]:9"));
        assert_eq!(tcp_host_port("10.0.0.1:21902"), Some("10.0.0.1:21902"));
        assert_eq!(
            tcp_socket_addr("ipv4://10.0.0.1:21902"),
            Some(sa("10.0.0.1:21902"))
        );
    }

    #[test]
    fn other_schemes_host_names_without_a_resolver_and_malformed_input_are_none() {
        for bad in [
            "unix:///tmp/a.sock",
            "shm://0x1234",
            "atcp://:80",
            "atcp://host",
            "atcp://host:99999",
            "",
        ] {
            assert_eq!(tcp_host_port(bad), None, "{bad}");
        }
        assert_eq!(tcp_socket_addr("atcp://node-a:21437"), None);
    }
}
