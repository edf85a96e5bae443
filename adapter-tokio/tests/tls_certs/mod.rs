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

    /// Writes `<dir>/<name>.crt`, `<name>.key` and this CA as `<name>-ca.crt`.
    pub fn leaf(&self, dir: &Path, name: &str) -> Leaf {
        let mut params =
            CertificateParams::new(vec![String::from("localhost")]).expect("leaf params");
        params.distinguished_name.push(DnType::CommonName, name);
        params
            .subject_alt_names
            .push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
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
        std::fs::write(&leaf.key, key.serialize_pem()).expect("write key");
        std::fs::write(&leaf.ca, &self.pem).expect("write CA");
        leaf
    }
}
