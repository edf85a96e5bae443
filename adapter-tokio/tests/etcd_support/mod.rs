//! Test harness: a private etcd process per test, plus helpers to drive the backend's feed.
//!
//! [`EtcdServer::start`] runs the `etcd` binary found on `PATH` (Debian's etcd-server 3.4;
//! `scripts/test` installs it) on two free loopback ports with a data dir in a temporary
//! directory, and waits until it answers. A missing binary fails the test with a clear
//! message — it never skips. The process is SIGKILLed when the server is dropped;
//! [`EtcdServer::kill`] and [`EtcdServer::restart`] stop it abruptly and start it again on
//! the same ports and data dir. Helpers compact, revoke a lease from outside, put raw
//! values (libatapp documents, garbage) and read keys back.
//!
//! [`EtcdServer::start_tls`] starts it with client-certificate authentication on `https://`
//! URLs instead: a CA, a server certificate (IP SAN 127.0.0.1) and a client certificate are
//! generated for the test ([`TlsFiles`]); the harness's own client and
//! [`EtcdServer::options`] present the client certificate.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test binary uses a part of the harness"
)]

pub mod feed;
mod member_args;
pub mod node;

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use etcd_client::{
    Certificate, Client, CompactionOptions, ConnectOptions, GetOptions, Identity, KeyValue,
    PutOptions, TlsOptions,
};
use switchboard_tokio::registry::EtcdOptions;

use self::member_args::member_args;

/// Bound on waiting for etcd to answer after a start.
const START_BOUND: Duration = Duration::from_secs(30);
/// Attempts at finding free ports that etcd can bind.
const PORT_ATTEMPTS: usize = 5;
/// Bound on every harness RPC.
const RPC_BOUND: Duration = Duration::from_secs(10);

/// A private etcd process. See the module docs.
pub struct EtcdServer {
    child: Option<Child>,
    dir: tempfile::TempDir,
    client_port: u16,
    peer_port: u16,
    binary: PathBuf,
    tls: Option<TlsFiles>,
}

/// PEM files of a TLS test etcd, in its temporary directory.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The CA certificate that signs the server and client certificates.
    pub ca: PathBuf,
    /// etcd's certificate (IP SAN 127.0.0.1; server and client auth).
    pub server_cert: PathBuf,
    /// Its key.
    pub server_key: PathBuf,
    /// A client certificate signed by the CA.
    pub client_cert: PathBuf,
    /// Its key.
    pub client_key: PathBuf,
}

impl TlsFiles {
    /// Generates a CA, a server and a client certificate into `dir`.
    pub fn generate(dir: &Path) -> TlsFiles {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
            KeyPair, KeyUsagePurpose,
        };
        let ca_key = KeyPair::generate().expect("generate the CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "switchboard test CA");
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params.self_signed(&ca_key).expect("self-sign the CA");
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf = |name: &str, sans: Vec<String>, usages: Vec<ExtendedKeyUsagePurpose>| {
            let key = KeyPair::generate().expect("generate a key");
            let mut params = CertificateParams::new(sans).expect("certificate params");
            params.distinguished_name.push(DnType::CommonName, name);
            params.extended_key_usages = usages;
            let cert = params.signed_by(&key, &issuer).expect("sign a certificate");
            (cert.pem(), key.serialize_pem())
        };
        let (server_pem, server_key_pem) = leaf(
            "etcd",
            vec!["127.0.0.1".to_owned(), "localhost".to_owned()],
            vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        );
        let (client_pem, client_key_pem) = leaf(
            "switchboard-test-client",
            Vec::new(),
            vec![ExtendedKeyUsagePurpose::ClientAuth],
        );
        let dir = dir.join("tls");
        std::fs::create_dir_all(&dir).expect("create the tls directory");
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).expect("write a PEM file");
            path
        };
        TlsFiles {
            ca: write("ca.pem", &ca_cert.pem()),
            server_cert: write("server.pem", &server_pem),
            server_key: write("server-key.pem", &server_key_pem),
            client_cert: write("client.pem", &client_pem),
            client_key: write("client-key.pem", &client_key_pem),
        }
    }
}

/// The `etcd` binary on `PATH`; panics (failing the test) when there is none.
pub fn etcd_binary() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("etcd"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "the etcd tests need the `etcd` binary on PATH, and none was found. Install \
                 etcd 3.4+ (Debian/Ubuntu: `apt-get install etcd-server`), or run \
                 scripts/test, which installs it."
            )
        })
}

/// A loopback port that was free a moment ago (bound to port 0, read, released).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0 to find a free port");
    listener
        .local_addr()
        .expect("a bound listener has an address")
        .port()
}

fn data_parent() -> Option<&'static Path> {
    // tmpfs makes etcd's fsyncs free; fall back to the default temp dir.
    let shm = Path::new("/dev/shm");
    (shm.is_dir() && tempfile::tempdir_in(shm).is_ok()).then_some(shm)
}

impl EtcdServer {
    /// Starts a private etcd and waits until it answers.
    pub async fn start() -> EtcdServer {
        EtcdServer::start_with(false).await
    }

    /// Starts a private etcd that serves `https://` only to clients presenting a certificate
    /// signed by the test CA ([`TlsFiles`]), and waits until it answers.
    pub async fn start_tls() -> EtcdServer {
        EtcdServer::start_with(true).await
    }

    async fn start_with(tls: bool) -> EtcdServer {
        let binary = etcd_binary();
        let mut dir = match data_parent() {
            Some(parent) => tempfile::tempdir_in(parent),
            None => tempfile::tempdir(),
        }
        .expect("create a temporary directory for etcd");
        let tls = tls.then(|| TlsFiles::generate(dir.path()));
        let mut last_log = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let mut server = EtcdServer {
                child: None,
                client_port: free_port(),
                peer_port: free_port(),
                binary: binary.clone(),
                dir,
                tls: tls.clone(),
            };
            match server.launch().await {
                Ok(()) => return server,
                Err(log) => {
                    last_log = log;
                    dir = server.take_dir();
                }
            }
        }
        panic!("etcd did not start after {PORT_ATTEMPTS} attempts; last log:\n{last_log}");
    }

    fn take_dir(mut self) -> tempfile::TempDir {
        self.stop();
        let placeholder = tempfile::tempdir().expect("create a temporary directory");
        std::mem::replace(&mut self.dir, placeholder)
    }

    /// The client URL, e.g. `http://127.0.0.1:40123` (`https://` for a TLS server).
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    /// The certificate files of a TLS server ([`EtcdServer::start_tls`]).
    pub fn tls(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    /// Connect options for the harness's own client: the CA and the client certificate of
    /// a TLS server.
    fn connect_options(&self) -> Option<ConnectOptions> {
        let tls = self.tls.as_ref()?;
        let read = |path: &Path| std::fs::read(path).expect("read a PEM file");
        Some(
            ConnectOptions::new().with_tls(
                TlsOptions::new()
                    .ca_certificate(Certificate::from_pem(read(&tls.ca)))
                    .identity(Identity::from_pem(
                        read(&tls.client_cert),
                        read(&tls.client_key),
                    )),
            ),
        )
    }

    /// Backend options for this server under `prefix`, with short timers so that tests
    /// finish quickly: TTL 5 s, keepalive every 1 s, a silent stream dead after 3 s.
    pub fn options(&self, prefix: &str) -> EtcdOptions {
        let mut options = EtcdOptions::new(vec![self.endpoint()]);
        options.prefix = prefix.to_owned();
        options.lease_ttl = Duration::from_secs(5);
        options.keepalive_interval = Duration::from_secs(1);
        options.watch_silence = Duration::from_secs(3);
        if let Some(tls) = &self.tls {
            options.ca = Some(tls.ca.clone());
            options.cert = Some(tls.client_cert.clone());
            options.key = Some(tls.client_key.clone());
        }
        options
    }

    /// A plain client for the test's own reads and writes.
    pub async fn client(&self) -> Client {
        bound(Client::connect([self.endpoint()], self.connect_options())).await
    }

    /// SIGKILLs the process (no clean shutdown) and waits for it to exit.
    pub fn kill(&mut self) {
        self.stop();
    }

    /// Starts the process again on the same ports and data dir and waits until it answers.
    pub async fn restart(&mut self) {
        self.stop();
        let mut last_log = String::new();
        for _ in 0..PORT_ATTEMPTS {
            match self.launch().await {
                Ok(()) => return,
                Err(log) => {
                    last_log = log;
                    self.stop();
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
        panic!("etcd did not restart on its ports; last log:\n{last_log}");
    }

    /// Compacts the history up to `revision` (physically: waits until it is done).
    pub async fn compact(&self, revision: i64, physical: bool) {
        let mut client = self.client().await;
        let options = physical.then(|| CompactionOptions::new().with_physical());
        bound(client.compact(revision, options)).await;
    }

    /// The current revision.
    pub async fn revision(&self) -> i64 {
        let mut client = self.client().await;
        let response = bound(client.get("/", Some(GetOptions::new().with_count_only()))).await;
        response
            .header()
            .expect("a range response has a header")
            .revision()
    }

    /// Revokes `lease` from outside (its keys are deleted at once).
    pub async fn revoke(&self, lease: i64) {
        let mut client = self.client().await;
        bound(client.lease_revoke(lease)).await;
    }

    /// The remaining TTL of `lease` in seconds (-1 when it does not exist).
    pub async fn lease_ttl(&self, lease: i64) -> i64 {
        let mut client = self.client().await;
        bound(client.lease_time_to_live(lease, None)).await.ttl()
    }

    /// Puts raw bytes (optionally on a lease); returns the revision of the put.
    pub async fn put(&self, key: &str, value: &[u8], lease: Option<i64>) -> i64 {
        let mut client = self.client().await;
        let options = lease.map(|id| PutOptions::new().with_lease(id));
        let response = bound(client.put(key, value.to_vec(), options)).await;
        response
            .header()
            .expect("a put response has a header")
            .revision()
    }

    /// Deletes one key; returns the revision of the delete.
    pub async fn delete(&self, key: &str) -> i64 {
        let mut client = self.client().await;
        let response = bound(client.delete(key, None)).await;
        response
            .header()
            .expect("a delete response has a header")
            .revision()
    }

    /// Grants a lease with `ttl` seconds from outside.
    pub async fn grant(&self, ttl: i64) -> i64 {
        let mut client = self.client().await;
        bound(client.lease_grant(ttl, None)).await.id()
    }

    /// One key, if it exists.
    pub async fn get(&self, key: &str) -> Option<KeyValue> {
        let mut client = self.client().await;
        let response = bound(client.get(key, None)).await;
        response.kvs().first().cloned()
    }

    /// Every key under `prefix`, in key order, as UTF-8 text.
    pub async fn keys(&self, prefix: &str) -> Vec<String> {
        let mut client = self.client().await;
        let options = GetOptions::new().with_prefix().with_keys_only();
        let response = bound(client.get(prefix, Some(options))).await;
        response
            .kvs()
            .iter()
            .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
            .collect()
    }

    fn command(&self) -> Command {
        let client = self.endpoint();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let mut command = Command::new(&self.binary);
        command
            .args(member_args(
                "switchboard-test",
                &self.dir.path().join("data"),
                &client,
                &peer,
                &format!("switchboard-test={peer}"),
            ))
            .stdin(Stdio::null());
        if let Some(tls) = &self.tls {
            command
                .arg(format!("--cert-file={}", tls.server_cert.display()))
                .arg(format!("--key-file={}", tls.server_key.display()))
                .arg(format!("--trusted-ca-file={}", tls.ca.display()))
                .arg("--client-cert-auth");
        }
        command
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("etcd.log")
    }

    /// Spawns the process and waits until it answers; on failure returns its log.
    async fn launch(&mut self) -> Result<(), String> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("open the etcd log file");
        let err = log.try_clone().expect("clone the etcd log file handle");
        let child = self
            .command()
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.binary.display()));
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + START_BOUND;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(format!("exited with {status}:\n{}", self.log()));
            }
            if self.answers().await {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!("no answer within {START_BOUND:?}:\n{}", self.log()));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn answers(&self) -> bool {
        let attempt = async {
            let mut client = Client::connect([self.endpoint()], self.connect_options()).await?;
            client.get("/health-probe", None).await
        };
        matches!(
            tokio::time::timeout(Duration::from_secs(1), attempt).await,
            Ok(Ok(_))
        )
    }

    /// The process's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // std's kill is SIGKILL on Unix.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Awaits an etcd RPC within [`RPC_BOUND`]; a failure fails the test.
pub async fn bound<T>(rpc: impl Future<Output = Result<T, etcd_client::Error>>) -> T {
    match tokio::time::timeout(RPC_BOUND, rpc).await {
        Ok(Ok(value)) => value,
        Ok(Err(e)) => panic!("etcd RPC failed: {e}"),
        Err(_) => panic!("etcd RPC took longer than {RPC_BOUND:?}"),
    }
}
