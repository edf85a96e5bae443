//! The embedded registry's address as people write it: `127.0.0.1:7000`, `[::1]:7000` or a
//! host name and port (`registry:7000`, `localhost:7000`) — compose and Kubernetes service
//! names. A name must resolve at start; the node resolves it again at every reconnect.

use std::{
    fmt,
    net::{SocketAddr, ToSocketAddrs},
    str::FromStr,
};

use serde::Deserialize;
use switchboard_tokio::RegistrySpec;

use crate::error::CliError;

/// `--registry` / `registry`: `HOST:PORT`, checked for its shape.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub(crate) struct RegistryAddr(String);

impl FromStr for RegistryAddr {
    type Err = String;

    fn from_str(text: &str) -> Result<RegistryAddr, String> {
        if text.parse::<SocketAddr>().is_ok() {
            return Ok(RegistryAddr(text.to_owned()));
        }
        let bad =
            || format!("expected HOST:PORT (e.g. 127.0.0.1:7000 or registry:7000), got {text:?}");
        let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
        let host_ok = !host.is_empty()
            && host.len() <= 253
            && (host.chars())
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_');
        match port.parse::<u16>() {
            Ok(p) if p > 0 && host_ok => Ok(RegistryAddr(text.to_owned())),
            _ => Err(bad()),
        }
    }
}

impl TryFrom<String> for RegistryAddr {
    type Error = String;

    fn try_from(text: String) -> Result<RegistryAddr, String> {
        text.parse()
    }
}

impl From<SocketAddr> for RegistryAddr {
    fn from(addr: SocketAddr) -> RegistryAddr {
        RegistryAddr(addr.to_string())
    }
}

impl fmt::Display for RegistryAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl RegistryAddr {
    /// The registry spec: an address as it is, a name once resolved (it must resolve now; the
    /// node resolves it again at every reconnect).
    ///
    /// # Errors
    ///
    /// The name does not resolve (field `registry`).
    pub(crate) fn spec(self) -> Result<RegistrySpec, CliError> {
        if let Ok(addr) = self.0.parse::<SocketAddr>() {
            return Ok(RegistrySpec::Embedded(addr));
        }
        match self.0.to_socket_addrs().map(|mut addrs| addrs.next()) {
            Ok(Some(_)) => Ok(RegistrySpec::EmbeddedHost(self.0)),
            Ok(None) => Err(CliError::invalid(
                "registry",
                format!("{} resolves to no address", self.0),
            )),
            Err(e) => Err(CliError::invalid(
                "registry",
                format!("cannot resolve {}: {e}", self.0),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_names_are_taken_and_bad_shapes_refused() {
        for good in [
            "127.0.0.1:7000",
            "[::1]:7000",
            "localhost:7000",
            "registry_1.svc:80",
        ] {
            assert_eq!(
                good.parse::<RegistryAddr>().map(|a| a.to_string()),
                Ok(good.to_owned())
            );
        }
        for bad in [
            "7000",
            "localhost",
            ":7000",
            "host:0",
            "host:99999",
            "a b:1",
            "::1:7000x",
        ] {
            assert_eq!(
                bad.parse::<RegistryAddr>(),
                Err(format!(
                    "expected HOST:PORT (e.g. 127.0.0.1:7000 or registry:7000), got {bad:?}"
                )),
            );
        }
    }

    #[test]
    fn a_name_resolves_at_start_and_stays_a_name() {
        let spec = |text: &str| text.parse::<RegistryAddr>().expect("shape").spec();
        assert_eq!(
            spec("127.0.0.1:7000").expect("an address"),
            RegistrySpec::Embedded(SocketAddr::from(([127, 0, 0, 1], 7000)))
        );
        assert_eq!(
            spec("localhost:7000").expect("localhost resolves"),
            RegistrySpec::EmbeddedHost("localhost:7000".to_owned())
        );
        let e = spec("no-such-host.invalid:7000").expect_err("does not resolve");
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .starts_with("registry: cannot resolve no-such-host.invalid:7000: "),
            "{e}"
        );
    }
}
