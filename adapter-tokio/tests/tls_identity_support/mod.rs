//! What the TLS node-identity tests share (`driver_tls_identity`, `etcd_tls_identity`): a
//! transport from a test certificate, the warnings the process logged, and the node's
//! authentication refusals by kind.

use std::{
    io::Write,
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use switchboard_tokio::{NodeHandle, Transport, transport::tls::TlsConfig};

use crate::tls_certs::Leaf;

/// The TLS configuration of `leaf` (its certificate, key and CA files).
pub fn config(leaf: &Leaf) -> TlsConfig {
    TlsConfig::from_files(&leaf.cert, &leaf.key, &leaf.ca).expect("TLS config")
}

/// A TLS transport presenting `leaf`.
pub fn tls(leaf: &Leaf) -> Transport {
    Transport::tls(config(leaf))
}

/// Every warning of this test process, kept (each test binary runs one test per process
/// under nextest; under `cargo test` the lines of the others mix in, which the assertions
/// tolerate: they look for exact lines, not for their absence).
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("logs").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// The process's log, captured from the first call on.
    pub fn capture() -> Logs {
        static LOGS: OnceLock<Logs> = OnceLock::new();
        LOGS.get_or_init(|| {
            let logs = Logs::default();
            let writer = logs.clone();
            let _ = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::WARN)
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .try_init();
            logs
        })
        .clone()
    }

    /// Everything logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("logs")).into_owned()
    }
}

/// How many handshakes `node` refused for `kind` (`not_certified`, `no_node_id`, ...).
pub async fn auth_refusals(node: &NodeHandle, kind: &str) -> u64 {
    let metrics = node.metrics().await.expect("running");
    metrics.auth_refusals.get(kind).copied().unwrap_or(0)
}

/// Waits (at most `step`) until `node` counted at least `n` refusals of `kind`.
pub async fn wait_refusals(node: &NodeHandle, kind: &str, n: u64, step: Duration) {
    let deadline = tokio::time::Instant::now() + step;
    while auth_refusals(node, kind).await < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "node {} counted fewer than {n} {kind} refusals: {:?}",
            node.id(),
            node.metrics().await.map(|m| m.auth_refusals)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
