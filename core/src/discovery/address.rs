//! The TCP address syntax of discovery records: which `host:port` a published listen address
//! dials, and what a node publishes for a listener. Both adapters (tokio, mio) use these so a
//! node written with either one dials and publishes alike.

use alloc::{
    format,
    string::{String, ToString},
};
use core::{
    fmt,
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    str::FromStr,
};

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
/// least reachable from its own host; give an [`Advertise`] or set `Config::listen` to
/// publish another address, and see [`check_listen`] for refusing the loopback fallback).
#[must_use]
pub fn published_tcp_address(bound: SocketAddr) -> String {
    let ip = match bound.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(v6) if v6.is_unspecified() => Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    format!("atcp://{}", SocketAddr::new(ip, bound.port()))
}

/// The address other hosts reach a node at, as an operator gives it (`--advertise
/// HOST[:PORT]`): a host name or IP literal and an optional port. Without a port the listener's
/// bound port is published, so `--listen 0.0.0.0:0 --advertise 10.0.0.5` publishes the port
/// the kernel chose.
///
/// Accepted forms: `host`, `host:port`, `a.b.c.d`, `a.b.c.d:port`, `[v6]`, `[v6]:port` and a
/// bare IPv6 literal (`fd00::5`, no port). A host name is ASCII letters, digits, `-` and `.`
/// (labels of 1 to 63 characters not starting or ending with `-`, 253 characters at most); an
/// unspecified ip (`0.0.0.0`, `::`) is refused (no one can dial it), and so is port 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Advertise {
    host: String,
    port: Option<u16>,
}

/// Why an advertised address was refused, or is missing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AdvertiseError {
    /// The text is empty.
    #[error("is empty; give HOST or HOST:PORT")]
    Empty,
    /// The host is neither an IP literal nor a valid host name.
    #[error("{host:?} is not a host name or IP address")]
    BadHost {
        /// The host part as given.
        host: String,
    },
    /// The host is `0.0.0.0` or `::`, which no one can dial.
    #[error("{host} is a wildcard address; give the address other hosts reach this node at")]
    WildcardHost {
        /// The host part as given.
        host: String,
    },
    /// The port is not a number in 1..=65535.
    #[error("port {port:?} is not a number in 1..=65535")]
    BadPort {
        /// The port part as given.
        port: String,
    },
    /// The listener is bound to a wildcard address and nothing says which address to publish.
    #[error(
        "required when listening on {listen} (a wildcard address): give HOST[:PORT], the \
         address other hosts reach this node at"
    )]
    Required {
        /// The listen address.
        listen: SocketAddr,
    },
}

impl Advertise {
    /// Parses `HOST[:PORT]` (see the type's documentation for the accepted forms).
    ///
    /// # Errors
    ///
    /// An empty text, a bad host, a wildcard host or a bad port.
    pub fn parse(text: &str) -> Result<Advertise, AdvertiseError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(AdvertiseError::Empty);
        }
        let (host, port) = split_host_port(text)?;
        let port = port
            .map(|p| match p.parse::<u16>() {
                Ok(n) if n != 0 => Ok(n),
                _ => Err(AdvertiseError::BadPort {
                    port: p.to_string(),
                }),
            })
            .transpose()?;
        let host = match host.parse::<IpAddr>() {
            Ok(ip) if ip.is_unspecified() => {
                return Err(AdvertiseError::WildcardHost {
                    host: host.to_string(),
                });
            }
            Ok(ip) => ip.to_string(),
            Err(_) if is_host_name(host) => host.to_ascii_lowercase(),
            Err(_) => {
                return Err(AdvertiseError::BadHost {
                    host: host.to_string(),
                });
            }
        };
        Ok(Advertise { host, port })
    }

    /// The host (an IP literal in canonical form, or a lower-case host name).
    #[must_use]
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port, if one was given.
    #[must_use]
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// The address published for a listener bound on `bound_port`: `atcp://host:port` (an
    /// IPv6 host in brackets), the port being the advertised one or else `bound_port`.
    #[must_use]
    pub fn published(&self, bound_port: u16) -> String {
        let port = self.port.unwrap_or(bound_port);
        if self.host.contains(':') {
            format!("atcp://[{}]:{port}", self.host)
        } else {
            format!("atcp://{}:{port}", self.host)
        }
    }
}

impl FromStr for Advertise {
    type Err = AdvertiseError;

    fn from_str(text: &str) -> Result<Advertise, AdvertiseError> {
        Advertise::parse(text)
    }
}

impl fmt::Display for Advertise {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.host.contains(':'), self.port) {
            (true, Some(p)) => write!(f, "[{}]:{p}", self.host),
            (true, None) => write!(f, "[{}]", self.host),
            (false, Some(p)) => write!(f, "{}:{p}", self.host),
            (false, None) => f.write_str(&self.host),
        }
    }
}

/// Splits `host[:port]`, `[v6][:port]` or a bare IPv6 literal.
fn split_host_port(text: &str) -> Result<(&str, Option<&str>), AdvertiseError> {
    let bad_host = || AdvertiseError::BadHost {
        host: text.to_string(),
    };
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(bad_host)?;
        if host.parse::<Ipv6Addr>().is_err() {
            return Err(bad_host());
        }
        return match after {
            "" => Ok((host, None)),
            _ => after
                .strip_prefix(':')
                .map(|port| (host, Some(port)))
                .ok_or_else(bad_host),
        };
    }
    match text.matches(':').count() {
        0 => Ok((text, None)),
        1 => Ok(text
            .split_once(':')
            .map(|(h, p)| (h, Some(p)))
            .unwrap_or((text, None))),
        // More than one colon: only a bare IPv6 literal (its port needs brackets).
        _ if text.parse::<Ipv6Addr>().is_ok() => Ok((text, None)),
        _ => Err(bad_host()),
    }
}

/// A DNS host name: labels of ASCII letters, digits and `-` (not at either end), 1 to 63
/// characters each, 253 in all; a trailing dot is not accepted.
fn is_host_name(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// Checks that a listener on `listen` publishes an address other hosts can dial: a wildcard
/// listen address (`0.0.0.0`, `[::]`) needs an [`Advertise`] (without one the node would
/// publish loopback, reachable from its own host only).
///
/// # Errors
///
/// [`AdvertiseError::Required`] for a wildcard `listen` without `advertise`.
pub fn check_listen(
    listen: SocketAddr,
    advertise: Option<&Advertise>,
) -> Result<(), AdvertiseError> {
    if listen.ip().is_unspecified() && advertise.is_none() {
        return Err(AdvertiseError::Required { listen });
    }
    Ok(())
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

    #[test]
    fn advertised_hosts_publish_the_given_or_the_bound_port() {
        for (given, published) in [
            ("10.0.0.5", "atcp://10.0.0.5:4100"),
            ("10.0.0.5:7000", "atcp://10.0.0.5:7000"),
            ("Node-A.example", "atcp://node-a.example:4100"),
            ("node-a:9", "atcp://node-a:9"),
            ("[fd00::5]:7000", "atcp://[fd00::5]:7000"),
            ("[fd00::5]", "atcp://[fd00::5]:4100"),
            ("fd00::5", "atcp://[fd00::5]:4100"),
            (" 10.0.0.5 ", "atcp://10.0.0.5:4100"),
        ] {
            let a = Advertise::parse(given).expect(given);
            let p = a.published(4100);
            assert_eq!(p, published, "{given}");
            assert!(tcp_host_port(&p).is_some(), "{p}");
            assert_eq!(Advertise::parse(&a.to_string()), Ok(a), "{given}");
        }
    }

    #[test]
    fn bad_advertised_hosts_and_ports_are_refused() {
        assert_eq!(Advertise::parse("  "), Err(AdvertiseError::Empty));
        for bad_host in [
            "-a",
            "a-",
            "a..b",
            "a_b",
            "a b",
            "[10.0.0.1]:4",
            "[fd00::5",
            "a:b:c",
        ] {
            assert!(
                matches!(
                    Advertise::parse(bad_host),
                    Err(AdvertiseError::BadHost { .. })
                ),
                "{bad_host}"
            );
        }
        for bad_port in ["h:0", "h:65536", "h:", "h:x", "[::1]:-1"] {
            assert!(
                matches!(
                    Advertise::parse(bad_port),
                    Err(AdvertiseError::BadPort { .. })
                ),
                "{bad_port}"
            );
        }
        for wildcard in ["0.0.0.0", "0.0.0.0:5", "::", "[::]:5"] {
            assert!(
                matches!(
                    Advertise::parse(wildcard),
                    Err(AdvertiseError::WildcardHost { .. })
                ),
                "{wildcard}"
            );
        }
        assert!(matches!(
            Advertise::parse(&"a".repeat(64)),
            Err(AdvertiseError::BadHost { .. })
        ));
    }

    #[test]
    fn a_wildcard_listener_needs_an_advertised_address() {
        let a = Advertise::parse("10.0.0.5").expect("valid");
        assert_eq!(
            check_listen(sa("0.0.0.0:0"), None),
            Err(AdvertiseError::Required {
                listen: sa("0.0.0.0:0")
            })
        );
        assert!(check_listen(sa("[::]:1"), None).is_err());
        assert_eq!(check_listen(sa("0.0.0.0:0"), Some(&a)), Ok(()));
        assert_eq!(check_listen(sa("127.0.0.1:0"), None), Ok(()));
        assert_eq!(check_listen(sa("10.0.0.5:0"), None), Ok(()));
    }
}
