//! TLS for bus links and registry connections (feature `tls`): rustls with the `ring`
//! provider, **mutual**: every connection's two sides present a certificate chain signed by
//! the cluster CA and verify the other's.
//!
//! **Names are not checked.** Nodes dial the address a peer publishes (`atcp://HOST:PORT`),
//! which changes with the host, NAT, `--advertise` and restarts, and a node's certificate need
//! not list it; what admits a peer is that its chain leads to the cluster CA and is valid now
//! (and the core's in-band handshake then identifies the node). So the server verifier is the
//! standard webpki one (signature chain to the CA, validity period, key usage for TLS server
//! auth) with only the name mismatch forgiven, and the client verifier is webpki's client
//! verifier (chain to the CA, client auth usage). A certificate therefore needs the
//! `serverAuth` and `clientAuth` extended key usages (or none), since every node both dials and
//! accepts.
//!
//! **Node ids can be.** A certificate may name the node ids it is for in SAN URIs
//! `urn:switchboard:node:<id>` (decimal, 1 ..= 2^64 - 1; [`cert_node_ids`]). A node binds
//! every link whose peer's certificate names ids to them
//! ([`Node::bind_link_identity`](switchboard_core::Node::bind_link_identity)): a handshake
//! claiming another id is refused before anything of the link is acted on, both when the
//! node accepts (the dialler's `Hello`) and when it dials (the acceptor's `HelloAck`). A
//! certificate naming no id admits any id (membership only) unless the node requires one
//! ([`TlsConfig::require_node_id`]; `--tls-require-node-id`), in which case its connection is
//! dropped right after the TLS handshake. A certificate with a `urn:switchboard:node:` URI
//! that does not parse is refused either way.

use std::{fmt, io, path::Path, sync::Arc};

use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig,
    SignatureScheme,
    client::{
        WebPkiServerVerifier,
        danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    },
    pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime, pem::PemObject},
    server::WebPkiClientVerifier,
};
use switchboard_core::ids::NodeId;
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector, TlsStream};

/// Which of the three PEM inputs an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsFile {
    /// This side's certificate chain.
    Cert,
    /// This side's private key.
    Key,
    /// The cluster CA.
    Ca,
}

/// A TLS setup that could not be built: which input, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsError {
    /// The input at fault.
    pub file: TlsFile,
    /// What went wrong (names the path when read from a file).
    pub reason: String,
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.file {
            TlsFile::Cert => "certificate",
            TlsFile::Key => "private key",
            TlsFile::Ca => "CA certificate",
        };
        write!(f, "{what}: {}", self.reason)
    }
}

impl std::error::Error for TlsError {}

fn err(file: TlsFile, reason: impl Into<String>) -> TlsError {
    TlsError {
        file,
        reason: reason.into(),
    }
}

/// Both sides of mutual TLS for one node (or registry, or client): its certificate chain and
/// key, and the cluster CA it verifies peers against.
#[derive(Clone)]
pub struct TlsConfig {
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    require_node_id: bool,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("require_node_id", &self.require_node_id)
            .finish_non_exhaustive()
    }
}

impl TlsConfig {
    /// Reads the three PEM files: `cert` (this side's chain, leaf first), `key` (its private
    /// key: PKCS#8, PKCS#1 or SEC1) and `ca` (one or more CA certificates).
    ///
    /// # Errors
    ///
    /// A file that cannot be read or parsed, or a key that does not fit the certificate.
    pub fn from_files(cert: &Path, key: &Path, ca: &Path) -> Result<TlsConfig, TlsError> {
        let read = |file, path: &Path| {
            std::fs::read(path).map_err(|e| err(file, format!("{}: {e}", path.display())))
        };
        let with_path =
            |e: TlsError, path: &Path| err(e.file, format!("{}: {}", path.display(), e.reason));
        let cert_pem = read(TlsFile::Cert, cert)?;
        let key_pem = read(TlsFile::Key, key)?;
        let ca_pem = read(TlsFile::Ca, ca)?;
        TlsConfig::from_pem(&cert_pem, &key_pem, &ca_pem).map_err(|e| match e.file {
            TlsFile::Cert => with_path(e, cert),
            TlsFile::Key => with_path(e, key),
            TlsFile::Ca => with_path(e, ca),
        })
    }

    /// Builds the setup from PEM text (see [`TlsConfig::from_files`]).
    ///
    /// # Errors
    ///
    /// Unparsable PEM, no certificate / key in it, or a key that does not fit the certificate.
    pub fn from_pem(cert: &[u8], key: &[u8], ca: &[u8]) -> Result<TlsConfig, TlsError> {
        let chain = certs(TlsFile::Cert, cert)?;
        let key = PrivateKeyDer::from_pem_slice(key)
            .map_err(|e| err(TlsFile::Key, format!("no private key: {e}")))?;
        let mut roots = RootCertStore::empty();
        for ca in certs(TlsFile::Ca, ca)? {
            roots
                .add(ca)
                .map_err(|e| err(TlsFile::Ca, format!("not a usable CA certificate: {e}")))?;
        }
        let roots = Arc::new(roots);
        let provider = Arc::new(rustls::crypto::ring::default_provider());

        let server_verifier =
            WebPkiServerVerifier::builder_with_provider(Arc::clone(&roots), Arc::clone(&provider))
                .build()
                .map_err(|e| err(TlsFile::Ca, e.to_string()))?;
        let client = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| err(TlsFile::Cert, e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(server_verifier)))
            .with_client_auth_cert(chain.clone(), key.clone_key())
            .map_err(|e| key_error(&e))?;

        let client_verifier =
            WebPkiClientVerifier::builder_with_provider(roots, Arc::clone(&provider))
                .build()
                .map_err(|e| err(TlsFile::Ca, e.to_string()))?;
        let server = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| err(TlsFile::Cert, e.to_string()))?
            .with_client_cert_verifier(client_verifier)
            .with_single_cert(chain, key)
            .map_err(|e| key_error(&e))?;
        Ok(TlsConfig {
            client: Arc::new(client),
            server: Arc::new(server),
            require_node_id: false,
        })
    }

    /// Whether a node refuses bus links whose peer's certificate names no node id (default
    /// `false`: such a certificate admits any id, membership only). A certificate that names
    /// ids always binds the link to them, whatever this says. Registry connections are not
    /// affected (a registry is not a node).
    #[must_use]
    pub fn require_node_id(mut self, require: bool) -> TlsConfig {
        self.require_node_id = require;
        self
    }

    /// See [`TlsConfig::require_node_id`].
    #[must_use]
    pub fn requires_node_id(&self) -> bool {
        self.require_node_id
    }

    /// The client side of the handshake on a connection dialled to `addr`.
    pub(crate) async fn connect(
        &self,
        addr: &str,
        stream: TcpStream,
    ) -> io::Result<TlsStream<TcpStream>> {
        let connector = TlsConnector::from(Arc::clone(&self.client));
        let stream = connector.connect(server_name(addr), stream).await?;
        Ok(TlsStream::Client(stream))
    }

    /// The server side of the handshake on an accepted connection.
    pub(crate) async fn accept(&self, stream: TcpStream) -> io::Result<TlsStream<TcpStream>> {
        let acceptor = TlsAcceptor::from(Arc::clone(&self.server));
        let stream = acceptor.accept(stream).await?;
        Ok(TlsStream::Server(stream))
    }
}

/// The prefix of the SAN URI that names a node id: `urn:switchboard:node:<id>`.
pub const NODE_ID_URI_PREFIX: &str = "urn:switchboard:node:";

/// The node ids `cert` (DER) names in its `urn:switchboard:node:<id>` SAN URIs, in
/// certificate order (empty: it names none; other SANs are ignored).
///
/// # Errors
///
/// A certificate that does not parse, or a `urn:switchboard:node:` URI whose id is not a
/// decimal in 1 ..= 2^64 - 1 (no sign, no spaces).
pub fn cert_node_ids(cert: &[u8]) -> Result<Vec<NodeId>, String> {
    use x509_parser::{extensions::GeneralName, prelude::FromDer};
    let (_, parsed) = x509_parser::certificate::X509Certificate::from_der(cert)
        .map_err(|e| format!("unparsable certificate: {e}"))?;
    let san = parsed
        .subject_alternative_name()
        .map_err(|e| format!("unparsable subjectAltName: {e}"))?;
    let mut ids = Vec::new();
    for name in san.iter().flat_map(|san| san.value.general_names.iter()) {
        let GeneralName::URI(uri) = name else {
            continue;
        };
        let Some(id) = uri.strip_prefix(NODE_ID_URI_PREFIX) else {
            continue;
        };
        let parsed = Some(id)
            .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|id| id.parse::<u64>().ok())
            .map(NodeId)
            .filter(|id| id.is_valid());
        match parsed {
            Some(id) => ids.push(id),
            None => return Err(format!("invalid node id in SAN URI {uri:?}")),
        }
    }
    Ok(ids)
}

/// [`cert_node_ids`] of the first certificate (the leaf) in PEM text, e.g. a file from
/// `switchboard cert node`.
///
/// # Errors
///
/// No certificate in the PEM, or as [`cert_node_ids`].
pub fn pem_node_ids(pem: &[u8]) -> Result<Vec<NodeId>, String> {
    let leaf = CertificateDer::pem_slice_iter(pem)
        .next()
        .ok_or_else(|| String::from("no certificate in the PEM"))?
        .map_err(|e| format!("unparsable PEM: {e}"))?;
    cert_node_ids(&leaf)
}

/// The node ids the peer's certificate on `stream` names ([`cert_node_ids`] of its leaf).
pub(crate) fn peer_node_ids(stream: &TlsStream<TcpStream>) -> Result<Vec<NodeId>, String> {
    let certs = match stream {
        TlsStream::Client(s) => s.get_ref().1.peer_certificates(),
        TlsStream::Server(s) => s.get_ref().1.peer_certificates(),
    };
    match certs.and_then(|c| c.first()) {
        Some(leaf) => cert_node_ids(leaf),
        None => Err(String::from("the peer presented no certificate")),
    }
}

fn certs(file: TlsFile, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(file, format!("unparsable PEM: {e}")))?;
    if certs.is_empty() {
        return Err(err(file, "no certificate in the PEM"));
    }
    Ok(certs)
}

fn key_error(e: &rustls::Error) -> TlsError {
    err(TlsFile::Key, format!("does not fit the certificate: {e}"))
}

/// The name a dial to `addr` presents (SNI; never checked, see the module doc): the host of
/// `host:port`, or `switchboard` when it is not a valid name.
fn server_name(addr: &str) -> ServerName<'static> {
    let host = switchboard_core::discovery::address::tcp_host_port(addr)
        .and_then(|hp| hp.rsplit_once(':'))
        .map(|(host, _)| host.trim_start_matches('[').trim_end_matches(']'));
    let name = host.and_then(|h| ServerName::try_from(h.to_owned()).ok());
    name.or_else(|| ServerName::try_from("switchboard").ok())
        .unwrap_or(ServerName::IpAddress(rustls::pki_types::IpAddr::from(
            std::net::Ipv4Addr::LOCALHOST,
        )))
}

/// webpki's server verifier with the name mismatch forgiven: the chain, validity and key
/// usage are still checked (webpki checks the name last, after the chain).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
