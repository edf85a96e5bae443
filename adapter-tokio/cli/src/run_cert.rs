//! `switchboard cert ca` and `switchboard cert node`: a cluster CA and per-node certificates
//! for mutual TLS (rcgen, ECDSA P-256). A node certificate names its node id in the SAN URI
//! `urn:switchboard:node:<id>`, so a peer refuses a link from it that claims another id (see
//! `switchboard_tokio::transport::tls`). Keys are written readable by their owner only; no
//! file is ever overwritten.

use crate::{cli::CertCommand, error::CliError};

/// Runs `switchboard cert ...` (no runtime needed): writes the files and prints one JSON line
/// naming them.
///
/// # Errors
///
/// Bad values, an existing output file, an unusable or group-readable CA (exit 2), or a
/// build without the `tls` feature (exit 2); a write failure (exit 1).
pub(crate) fn run(command: CertCommand) -> Result<(), CliError> {
    #[cfg(feature = "tls")]
    {
        match command {
            CertCommand::Ca(args) => imp::ca(&args),
            CertCommand::Node(args) => imp::node(&args),
        }
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = command;
        Err(CliError::invalid(
            "cert",
            "this build has no TLS (build switchboard with the `tls` feature)",
        ))
    }
}

#[cfg(feature = "tls")]
mod imp {
    use std::path::{Path, PathBuf};

    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose, SanType, SerialNumber,
    };
    use serde::Serialize;
    use switchboard_tokio::transport::tls::NODE_ID_URI_PREFIX;

    use crate::{
        cli::{CertCaArgs, CertNodeArgs},
        error::CliError,
        lifecycle::print_json_line,
        secret_file::{check_private, create, create_private},
    };

    /// What `cert ca` prints.
    #[derive(Serialize)]
    struct CaWritten {
        ca: String,
        ca_key: String,
    }

    /// What `cert node` prints.
    #[derive(Serialize)]
    struct NodeWritten {
        cert: String,
        key: String,
        ca: String,
        node_id: Option<u64>,
    }

    fn rcgen_failed(what: &str, e: &rcgen::Error) -> CliError {
        CliError::failed(format!("cannot {what}: {e}"))
    }

    /// Creates `dir` (and its parents) if missing.
    fn out_dir(dir: &Path) -> Result<(), CliError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::invalid("out", format!("cannot create {}: {e}", dir.display())))
    }

    /// A random 16-byte serial number (positive: the top bit clear).
    fn serial() -> Result<SerialNumber, CliError> {
        let mut bytes = [0u8; 16];
        getrandom::getrandom(&mut bytes)
            .map_err(|e| CliError::failed(format!("no randomness from the OS: {e}")))?;
        bytes[0] &= 0x7f;
        bytes[0] |= 0x01;
        Ok(SerialNumber::from_slice(&bytes))
    }

    /// Valid from an hour ago (clock skew between hosts) for `days` days.
    fn validity(params: &mut CertificateParams, days: u32) {
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::hours(1);
        params.not_after = now + time::Duration::days(i64::from(days));
    }

    fn display(path: &Path) -> String {
        path.display().to_string()
    }

    pub(super) fn ca(args: &CertCaArgs) -> Result<(), CliError> {
        if args.name.trim().is_empty() {
            return Err(CliError::invalid("name", "is blank"));
        }
        let cert_path = args.out.join("ca.pem");
        let key_path = args.out.join("ca.key");
        for path in [&cert_path, &key_path] {
            if path.exists() {
                return Err(CliError::invalid(
                    "out",
                    format!("{} exists; it is never overwritten", path.display()),
                ));
            }
        }
        let mut params = CertificateParams::new(Vec::<String>::new())
            .map_err(|e| rcgen_failed("build the CA", &e))?;
        params
            .distinguished_name
            .push(DnType::CommonName, args.name.as_str());
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.serial_number = Some(serial()?);
        validity(&mut params, args.days);
        let key = KeyPair::generate().map_err(|e| rcgen_failed("generate a key", &e))?;
        let cert = params
            .self_signed(&key)
            .map_err(|e| rcgen_failed("sign the CA", &e))?;
        out_dir(&args.out)?;
        create_private("out", &key_path, key.serialize_pem().as_bytes())?;
        create("out", &cert_path, cert.pem().as_bytes(), 0o644)?;
        print_json_line(&CaWritten {
            ca: display(&cert_path),
            ca_key: display(&key_path),
        })
    }

    /// The CA of `dir`: its certificate's path and an issuer from it and its key.
    fn load_ca(dir: &Path) -> Result<(PathBuf, Issuer<'static, KeyPair>), CliError> {
        let cert_path = dir.join("ca.pem");
        let key_path = dir.join("ca.key");
        check_private("ca_dir", &key_path)?;
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|e| {
                CliError::invalid("ca_dir", format!("cannot read {}: {e}", path.display()))
            })
        };
        let cert_pem = read(&cert_path)?;
        let key_pem = read(&key_path)?;
        let key = KeyPair::from_pem(&key_pem).map_err(|e| {
            CliError::invalid(
                "ca_dir",
                format!("{}: not a private key: {e}", key_path.display()),
            )
        })?;
        let issuer = Issuer::from_ca_cert_pem(&cert_pem, key).map_err(|e| {
            CliError::invalid(
                "ca_dir",
                format!("{}: not a CA certificate: {e}", cert_path.display()),
            )
        })?;
        Ok((cert_path, issuer))
    }

    pub(super) fn node(args: &CertNodeArgs) -> Result<(), CliError> {
        if args.id == Some(0) {
            return Err(CliError::invalid("id", "node id 0 is reserved"));
        }
        let name = match (&args.name, args.id) {
            (Some(name), _) => name.clone(),
            (None, Some(id)) => format!("node-{id}"),
            (None, None) => return Err(CliError::invalid("id", "give --id or --name")),
        };
        let valid_name = !name.is_empty()
            && name != "."
            && name != ".."
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !valid_name {
            return Err(CliError::invalid(
                "name",
                format!("{name:?}: use letters, digits, `-`, `_` and `.` (it names the files)"),
            ));
        }
        let cert_path = args.out.join(format!("{name}.pem"));
        let key_path = args.out.join(format!("{name}.key"));
        for path in [&cert_path, &key_path] {
            if path.exists() {
                return Err(CliError::invalid(
                    "out",
                    format!("{} exists; it is never overwritten", path.display()),
                ));
            }
        }
        let (ca_path, issuer) = load_ca(&args.ca_dir)?;
        let mut params = CertificateParams::new(Vec::<String>::new())
            .map_err(|e| rcgen_failed("build the certificate", &e))?;
        params
            .distinguished_name
            .push(DnType::CommonName, name.as_str());
        if let Some(id) = args.id {
            let uri = format!("{NODE_ID_URI_PREFIX}{id}");
            let uri = uri
                .try_into()
                .map_err(|e| rcgen_failed("encode the node id", &e))?;
            params.subject_alt_names.push(SanType::URI(uri));
        }
        for dns in &args.dns {
            let san = dns
                .as_str()
                .try_into()
                .map_err(|e: rcgen::Error| CliError::invalid("dns", format!("{dns:?}: {e}")))?;
            params.subject_alt_names.push(SanType::DnsName(san));
        }
        for ip in &args.ip {
            params.subject_alt_names.push(SanType::IpAddress(*ip));
        }
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(serial()?);
        validity(&mut params, args.days);
        let key = KeyPair::generate().map_err(|e| rcgen_failed("generate a key", &e))?;
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(|e| rcgen_failed("sign the certificate", &e))?;
        out_dir(&args.out)?;
        create_private("out", &key_path, key.serialize_pem().as_bytes())?;
        create("out", &cert_path, cert.pem().as_bytes(), 0o644)?;
        print_json_line(&NodeWritten {
            cert: display(&cert_path),
            key: display(&key_path),
            ca: display(&ca_path),
            node_id: args.id,
        })
    }
}
