//! TLS and user authentication towards etcd: the [`EtcdOptions`] files read into
//! `etcd-client`'s [`ConnectOptions`]. The files are read at every connection attempt, so a
//! renewed certificate or password is picked up by the next reconnect; the password is never
//! logged.

use std::path::Path;

use etcd_client::{Certificate, ConnectOptions, Identity, TlsOptions};

use crate::registry::EtcdOptions;

/// Whether `endpoint` is an `https://` URL (the scheme compared case-insensitively).
#[must_use]
pub(super) fn is_https(endpoint: &str) -> bool {
    endpoint
        .get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
}

/// Adds TLS (when the endpoints are `https://`) and the user (when one is set) to `base`.
///
/// # Errors
///
/// One line naming the option and the problem: an unreadable or empty file, https mixed
/// with http endpoints, a CA or client certificate with http endpoints, https without a CA,
/// a certificate without its key (or the reverse), a user without a password file (or the
/// reverse).
pub(super) fn connect_options(
    options: &EtcdOptions,
    base: ConnectOptions,
) -> Result<ConnectOptions, String> {
    let https = options.endpoints.iter().filter(|e| is_https(e)).count();
    let mut connect = base;
    if https > 0 && https < options.endpoints.len() {
        return Err(String::from(
            "etcd endpoints: mix https:// and http:// URLs (use one scheme)",
        ));
    }
    if https > 0 {
        let Some(ca) = &options.ca else {
            return Err(String::from(
                "etcd CA: required with https:// endpoints (the PEM of the CA that signs etcd's certificate)",
            ));
        };
        let mut tls = TlsOptions::new().ca_certificate(Certificate::from_pem(read("CA", ca)?));
        match (&options.cert, &options.key) {
            (Some(cert), Some(key)) => {
                tls = tls.identity(Identity::from_pem(
                    read("client certificate", cert)?,
                    read("client key", key)?,
                ));
            }
            (None, None) => {}
            (Some(_), None) => {
                return Err(String::from(
                    "etcd client certificate: given without its key",
                ));
            }
            (None, Some(_)) => {
                return Err(String::from(
                    "etcd client key: given without its certificate",
                ));
            }
        }
        connect = connect.with_tls(tls);
    } else if options.ca.is_some() || options.cert.is_some() || options.key.is_some() {
        return Err(String::from(
            "etcd TLS files: given with http:// endpoints (use https:// URLs)",
        ));
    }
    match (&options.user, &options.password_file) {
        (Some(user), Some(file)) => {
            let password = read("password file", file)?;
            let password = String::from_utf8(password)
                .map_err(|_| format!("etcd password file {}: not UTF-8", file.display()))?;
            let password = password.trim_end_matches(['\n', '\r']);
            if password.is_empty() {
                return Err(format!("etcd password file {}: empty", file.display()));
            }
            connect = connect.with_user(user.clone(), password);
        }
        (None, None) => {}
        (Some(_), None) => return Err(String::from("etcd user: given without a password file")),
        (None, Some(_)) => return Err(String::from("etcd password file: given without a user")),
    }
    Ok(connect)
}

/// The bytes of `path`, or one line naming `what` and the problem.
fn read(what: &str, path: &Path) -> Result<Vec<u8>, String> {
    match std::fs::read(path) {
        Ok(bytes) if bytes.is_empty() => Err(format!("etcd {what} {}: empty file", path.display())),
        Ok(bytes) => Ok(bytes),
        Err(e) => Err(format!("etcd {what} {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn options(urls: &[&str]) -> EtcdOptions {
        EtcdOptions::new(urls.iter().map(|u| (*u).to_owned()).collect())
    }

    #[test]
    fn https_is_recognised_in_any_case() {
        assert!(is_https("https://h:1"));
        assert!(is_https("HTTPS://h:1"));
        assert!(!is_https("http://h:1"));
        assert!(!is_https("h:1"));
    }

    #[test]
    fn bad_combinations_are_one_line_naming_the_option() {
        let base = ConnectOptions::new;
        let mut mixed = options(&["https://a:1", "http://b:1"]);
        mixed.ca = Some(PathBuf::from("/nonexistent"));
        let e = connect_options(&mixed, base()).expect_err("mixed");
        assert!(e.starts_with("etcd endpoints: mix"), "{e}");

        let e = connect_options(&options(&["https://a:1"]), base()).expect_err("no CA");
        assert!(e.starts_with("etcd CA: required"), "{e}");

        let mut ca_on_http = options(&["http://a:1"]);
        ca_on_http.ca = Some(PathBuf::from("/nonexistent"));
        let e = connect_options(&ca_on_http, base()).expect_err("CA on http");
        assert!(e.starts_with("etcd TLS files: given with http://"), "{e}");

        let mut missing = options(&["https://a:1"]);
        missing.ca = Some(PathBuf::from("/nonexistent/ca.pem"));
        let e = connect_options(&missing, base()).expect_err("missing CA file");
        assert!(e.starts_with("etcd CA /nonexistent/ca.pem: "), "{e}");

        let mut user_only = options(&["http://a:1"]);
        user_only.user = Some("root".to_owned());
        let e = connect_options(&user_only, base()).expect_err("no password file");
        assert!(e.starts_with("etcd user: given without"), "{e}");

        assert!(connect_options(&options(&["http://a:1"]), base()).is_ok());
    }

    #[test]
    fn the_password_is_read_from_its_file_and_never_shown() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("pw");
        std::fs::write(&file, "hunter2-pw\r\n").expect("write");
        let mut with_user = options(&["http://a:1"]);
        with_user.user = Some("root".to_owned());
        with_user.password_file = Some(file.clone());
        assert!(connect_options(&with_user, ConnectOptions::new()).is_ok());
        assert!(!format!("{with_user:?}").contains("hunter2"));
        std::fs::write(&file, "\n").expect("write");
        let e = connect_options(&with_user, ConnectOptions::new()).expect_err("empty");
        assert!(e.ends_with(": empty"), "{e}");
    }
}
