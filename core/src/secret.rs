//! [`Secret`]: a string that never prints — the legacy `cluster_token` of a [`Config`].
//!
//! `Debug` shows `Secret(<redacted>)` (`Secret("")` when empty, so an unset token is still
//! visible as unset), and it does not implement `Serialize`: the config field that holds it is
//! skipped when a config is serialized, so a dump of a config never carries the secret (and a
//! re-read dump has no token: set it again, or better use key files). It deserializes from a
//! plain string, so old config files keep loading.
//!
//! [`Config`]: crate::config::Config

use alloc::string::String;
use core::fmt;

/// A secret string; see the [module docs](self).
#[derive(Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// The secret itself, for the one place that needs it (deriving a key).
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether it is empty (unset).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for Secret {
    fn from(secret: String) -> Secret {
        Secret(secret)
    }
}

impl From<&str> for Secret {
    fn from(secret: &str) -> Secret {
        Secret(String::from(secret))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("Secret(\"\")")
        } else {
            f.write_str("Secret(<redacted>)")
        }
    }
}

#[cfg(test)]
mod tests {
    use alloc::format;

    use super::*;

    #[test]
    fn a_secret_never_prints() {
        let secret = Secret::from("hunter2-token");
        assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
        assert_eq!(format!("{:?}", Secret::default()), "Secret(\"\")");
        assert_eq!(secret.expose(), "hunter2-token");
        assert!(!secret.is_empty() && Secret::default().is_empty());
        let read: Secret = serde_json::from_str("\"hunter2-token\"").unwrap();
        assert_eq!(read, secret);
    }
}
