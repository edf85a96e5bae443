//! Throwaway PKI for the TLS tests and bench: a CA and leaf certificates it signs (ECDSA P-256,
//! `serverAuth` + `clientAuth`, SANs `localhost` and 127.0.0.1), written as PEM files.
//! Shared by path (`#[path]`) with the CLI tests and the transport bench.

#![allow(dead_code, reason = "each user takes a different subset")]

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// A CA that signs leaves.
pub struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

/// One leaf's files.
#[derive(Clone, Debug)]
pub struct Leaf {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
}

impl Ca {
    /// A fresh self-signed CA named `name`.
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("CA key");
        let cert = params.self_signed(&key).expect("CA cert");
        Ca {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// Writes `<dir>/<name>.crt`, `<name>.key` (mode 0600) and this CA as `<name>-ca.crt`.
    pub fn leaf(&self, dir: &Path, name: &str) -> Leaf {
        self.leaf_with_uris(dir, name, &[])
    }

    /// [`Ca::leaf`] naming node ids `ids` (SAN URIs `urn:switchboard:node:<id>`).
    pub fn node_leaf(&self, dir: &Path, name: &str, ids: &[u64]) -> Leaf {
        let uris: Vec<String> = ids
            .iter()
            .map(|id| format!("urn:switchboard:node:{id}"))
            .collect();
        let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
        self.leaf_with_uris(dir, name, &uris)
    }

    /// [`Ca::leaf`] with these extra SAN URIs.
    pub fn leaf_with_uris(&self, dir: &Path, name: &str, uris: &[&str]) -> Leaf {
        let mut params =
            CertificateParams::new(vec![String::from("localhost")]).expect("leaf params");
        params.distinguished_name.push(DnType::CommonName, name);
        params
            .subject_alt_names
            .push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
        for uri in uris {
            let uri = (*uri).try_into().expect("an IA5 URI");
            params.subject_alt_names.push(SanType::URI(uri));
        }
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &self.issuer).expect("leaf cert");
        let leaf = Leaf {
            cert: dir.join(format!("{name}.crt")),
            key: dir.join(format!("{name}.key")),
            ca: dir.join(format!("{name}-ca.crt")),
        };
        std::fs::write(&leaf.cert, cert.pem()).expect("write cert");
        write_private(&leaf.key, key.serialize_pem().as_bytes());
        std::fs::write(&leaf.ca, &self.pem).expect("write CA");
        leaf
    }
}

/// Writes `bytes` to a new file at `path` readable by its owner only (0600 on Unix).
pub fn write_private(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).expect("create a private file");
    file.write_all(bytes).expect("write a private file");
}
