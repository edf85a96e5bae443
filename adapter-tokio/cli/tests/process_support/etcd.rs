//! A private `etcd` process for the process tests that run nodes with `--etcd`: the blocking
//! twin of `adapter-tokio/tests/etcd_support` (same binary lookup, same flags: two free
//! loopback ports, a data dir in a temporary directory, preferably on tmpfs), without the
//! etcd client — readiness is etcd's own `GET /health` on the client port.
//!
//! A missing binary fails the test with a clear message, never skips it. The process is
//! SIGKILLed when the [`EtcdProc`] drops.

use std::{
    net::{SocketAddr, TcpListener},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use super::http::{http_get, http_post_json};

/// Bound on etcd answering after a start.
const START_BOUND: Duration = Duration::from_secs(30);
/// Attempts at finding free ports that etcd can bind.
const PORT_ATTEMPTS: usize = 5;

/// A running private etcd. See the module docs.
pub struct EtcdProc {
    child: Child,
    client_port: u16,
    // Dropped after the process is killed (fields drop in order after `Drop::drop`).
    dir: tempfile::TempDir,
}

impl EtcdProc {
    /// Starts etcd and waits until `/health` answers `{"health":"true"}`.
    ///
    /// # Panics
    ///
    /// No `etcd` on `PATH`, or it does not come up after [`PORT_ATTEMPTS`] tries.
    #[must_use]
    pub fn start() -> EtcdProc {
        let binary = etcd_binary();
        let mut last_log = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let dir = match data_parent() {
                Some(parent) => tempfile::tempdir_in(parent),
                None => tempfile::tempdir(),
            }
            .expect("create a temporary directory for etcd");
            let (client_port, peer_port) = (free_port(), free_port());
            let child = spawn(&binary, dir.path(), client_port, peer_port);
            let mut etcd = EtcdProc {
                child,
                client_port,
                dir,
            };
            match etcd.wait_healthy() {
                Ok(()) => return etcd,
                Err(log) => last_log = log,
            }
        }
        panic!("etcd did not start after {PORT_ATTEMPTS} attempts; last log:\n{last_log}");
    }

    /// The client URL, e.g. `http://127.0.0.1:40123`.
    #[must_use]
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// The process's log so far.
    #[must_use]
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
    }

    /// Every key in the store with its value and revisions, and the store's revision: a
    /// linearizable range read of the whole key space through etcd's JSON gateway
    /// (`POST /v3/kv/range`, keys and values in base64, compared as they come). Any write —
    /// a put, a delete, a txn — raises the revision, so two equal reads mean nothing was
    /// written in between.
    ///
    /// # Panics
    ///
    /// etcd does not answer 200 with a JSON body.
    #[must_use]
    pub fn read_all(&self) -> serde_json::Value {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.client_port));
        // "\0" as key and range end: every key.
        let response = http_post_json(addr, "/v3/kv/range", r#"{"key":"AA==","range_end":"AA=="}"#)
            .unwrap_or_else(|e| panic!("etcd range read: {e}"));
        assert_eq!(response.status, 200, "etcd range read: {}", response.body);
        let mut read: serde_json::Value =
            serde_json::from_str(&response.body).expect("etcd answers JSON");
        // The header names the member that answered and its raft term: not the store.
        let revision = read["header"]["revision"].take();
        serde_json::json!({ "revision": revision, "kvs": read["kvs"].take() })
    }

    fn wait_healthy(&mut self) -> Result<(), String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.client_port));
        let deadline = Instant::now() + START_BOUND;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("exited with {status}:\n{}", self.log()));
            }
            if http_get(addr, "/health")
                .is_ok_and(|r| r.status == 200 && r.body.contains("\"health\":\"true\""))
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!("no answer within {START_BOUND:?}:\n{}", self.log()));
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for EtcdProc {
    fn drop(&mut self) {
        // std's kill is SIGKILL on Unix; an error means it already exited.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `etcd` binary on `PATH`.
///
/// # Panics
///
/// There is none.
#[must_use]
pub fn etcd_binary() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("etcd"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "this test needs the `etcd` binary on PATH, and none was found. Install etcd \
                 3.4+ (Debian/Ubuntu: `apt-get install etcd-server`), or run scripts/test, \
                 which installs it."
            )
        })
}

fn free_port() -> u16 {
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

fn spawn(binary: &Path, dir: &Path, client_port: u16, peer_port: u16) -> Child {
    let client = format!("http://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    let log = std::fs::File::create(dir.join("etcd.log")).expect("create the etcd log file");
    let err = log.try_clone().expect("clone the etcd log file handle");
    Command::new(binary)
        .arg("--name=switchboard-test")
        .arg(format!("--data-dir={}", dir.join("data").display()))
        .arg(format!("--listen-client-urls={client}"))
        .arg(format!("--advertise-client-urls={client}"))
        .arg(format!("--listen-peer-urls={peer}"))
        .arg(format!("--initial-advertise-peer-urls={peer}"))
        .arg(format!("--initial-cluster=switchboard-test={peer}"))
        .arg("--initial-cluster-state=new")
        .arg("--logger=zap")
        .arg("--log-level=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(err))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()))
}
