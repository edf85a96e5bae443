//! Private `etcd` processes for the process tests that run nodes with `--etcd`: one member
//! ([`EtcdProc`], the blocking twin of `adapter-tokio/tests/etcd_support`: same binary lookup,
//! same flags) or a cluster of several ([`EtcdCluster`]: a leader to kill, a quorum to lose).
//! Each member has its own data dir in a temporary directory (preferably on tmpfs) and a
//! client and a peer port, both free on 127.0.0.1; readiness is etcd's own `GET /health` on
//! every running member's client port, without an etcd client.
//!
//! A missing binary fails the test with a clear message, never skips it. Every member is
//! SIGKILLed when its owner drops.

use std::{
    net::{SocketAddr, TcpListener},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use super::http::{http_get, http_post_json};

#[path = "../../../tests/etcd_support/member_args.rs"]
mod member_args;
use member_args::member_args;

/// Bound on every member answering healthy after a start or a restart.
pub const START_BOUND: Duration = Duration::from_secs(30);
/// Attempts at finding free ports that etcd can bind.
const PORT_ATTEMPTS: usize = 5;

/// A running private one-member etcd. See the module docs.
pub struct EtcdProc(EtcdCluster);

impl EtcdProc {
    /// Starts a one-member etcd and waits until `/health` answers `{"health":"true"}`.
    ///
    /// # Panics
    ///
    /// No `etcd` on `PATH`, or it does not come up after [`PORT_ATTEMPTS`] tries.
    #[must_use]
    pub fn start() -> EtcdProc {
        EtcdProc(EtcdCluster::start_named(&["switchboard-test"]))
    }

    /// The client URL, e.g. `http://127.0.0.1:40123`.
    #[must_use]
    pub fn endpoint(&self) -> String {
        self.0.endpoint(0)
    }

    /// The process's log so far.
    #[must_use]
    pub fn log(&self) -> String {
        self.0.log(0)
    }

    /// See [`EtcdCluster::read_all`].
    #[must_use]
    pub fn read_all(&self) -> serde_json::Value {
        self.0.read_all()
    }
}

/// One member: its ports, its data dir, its process while it runs.
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
    // Dropped after the process is killed (`EtcdCluster::drop` kills first).
    dir: tempfile::TempDir,
}

impl Member {
    fn client_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    fn client_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.client_port))
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // std's kill is SIGKILL on Unix; an error means it already exited.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A running private etcd cluster of one or more members, all started together with
/// `--initial-cluster` naming every member. Members can be SIGKILLed and restarted on their
/// own data dir (same name, ports and peers). See the module docs.
pub struct EtcdCluster {
    members: Vec<Member>,
    initial_cluster: String,
}

impl EtcdCluster {
    /// Starts a cluster of `size` members (`m0`, `m1`, ...) and waits until every member
    /// answers `/health` with `{"health":"true"}` (a leader is elected).
    ///
    /// # Panics
    ///
    /// No `etcd` on `PATH`, or the cluster does not come up after [`PORT_ATTEMPTS`] tries.
    #[must_use]
    pub fn start(size: usize) -> EtcdCluster {
        let names: Vec<String> = (0..size).map(|i| format!("m{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        EtcdCluster::start_named(&names)
    }

    fn start_named(names: &[&str]) -> EtcdCluster {
        let binary = etcd_binary();
        let mut last_log = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let members: Vec<Member> = names
                .iter()
                .map(|name| Member {
                    name: (*name).to_owned(),
                    client_port: free_port(),
                    peer_port: free_port(),
                    child: None,
                    dir: match data_parent() {
                        Some(parent) => tempfile::tempdir_in(parent),
                        None => tempfile::tempdir(),
                    }
                    .expect("create a temporary directory for etcd"),
                })
                .collect();
            let initial_cluster = (members.iter())
                .map(|m| format!("{}={}", m.name, m.peer_url()))
                .collect::<Vec<_>>()
                .join(",");
            let mut cluster = EtcdCluster {
                members,
                initial_cluster,
            };
            for at in 0..cluster.members.len() {
                cluster.spawn(&binary, at);
            }
            match cluster.try_wait_healthy() {
                Ok(()) => return cluster,
                Err(log) => last_log = log,
            }
        }
        panic!("etcd did not start after {PORT_ATTEMPTS} attempts; last log:\n{last_log}");
    }

    /// Member `at`'s client URL, e.g. `http://127.0.0.1:40123`.
    #[must_use]
    pub fn endpoint(&self, at: usize) -> String {
        self.members[at].client_url()
    }

    /// Every member's client URL, comma-separated (what `--etcd` takes).
    #[must_use]
    pub fn endpoints(&self) -> String {
        (self.members.iter())
            .map(Member::client_url)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Member `at`'s log so far (every life of it).
    #[must_use]
    pub fn log(&self, at: usize) -> String {
        self.members[at].log()
    }

    /// SIGKILLs member `at` (its data dir stays for [`EtcdCluster::restart`]).
    pub fn kill(&mut self, at: usize) {
        self.members[at].kill();
    }

    /// Starts member `at` again on its data dir, ports and peers (it must be down), without
    /// waiting: see [`EtcdCluster::wait_healthy`].
    pub fn restart(&mut self, at: usize) {
        assert!(self.members[at].child.is_none(), "member {at} still runs");
        self.spawn(&etcd_binary(), at);
    }

    /// The member that is the leader now: the running member whose `maintenance/status`
    /// names itself as the leader. `None` when there is none (no quorum, an election).
    #[must_use]
    pub fn leader(&self) -> Option<usize> {
        (self.members.iter().enumerate())
            .filter(|(_, m)| m.child.is_some())
            .find(|(_, m)| {
                http_post_json(m.client_addr(), "/v3/maintenance/status", "{}")
                    .ok()
                    .filter(|r| r.status == 200)
                    .and_then(|r| serde_json::from_str::<serde_json::Value>(&r.body).ok())
                    .is_some_and(|status| {
                        status["leader"].as_str().is_some()
                            && status["leader"] == status["header"]["member_id"]
                    })
            })
            .map(|(at, _)| at)
    }

    /// Waits until every running member answers `/health` with `{"health":"true"}`.
    ///
    /// # Panics
    ///
    /// Not so within [`START_BOUND`], or a member exited.
    pub fn wait_healthy(&mut self) {
        if let Err(log) = self.try_wait_healthy() {
            panic!("etcd cluster not healthy: {log}");
        }
    }

    /// Every key in the store with its value, lease and revisions, and the store's revision,
    /// read from the first running member: a linearizable range read of the whole key space
    /// through etcd's JSON gateway (`POST /v3/kv/range`, keys and values in base64, compared
    /// as they come). Any write — a put, a delete, a txn — raises the revision, so two equal
    /// reads mean nothing was written in between.
    ///
    /// # Panics
    ///
    /// No member runs, or it does not answer 200 with a JSON body.
    #[must_use]
    pub fn read_all(&self) -> serde_json::Value {
        let member = (self.members.iter())
            .find(|m| m.child.is_some())
            .expect("a running etcd member to read from");
        // "\0" as key and range end: every key.
        let response = http_post_json(
            member.client_addr(),
            "/v3/kv/range",
            r#"{"key":"AA==","range_end":"AA=="}"#,
        )
        .unwrap_or_else(|e| panic!("etcd range read: {e}"));
        assert_eq!(response.status, 200, "etcd range read: {}", response.body);
        let mut read: serde_json::Value =
            serde_json::from_str(&response.body).expect("etcd answers JSON");
        // The header names the member that answered and its raft term: not the store.
        let revision = read["header"]["revision"].take();
        serde_json::json!({ "revision": revision, "kvs": read["kvs"].take() })
    }

    fn spawn(&mut self, binary: &Path, at: usize) {
        let member = &self.members[at];
        let (client, peer) = (member.client_url(), member.peer_url());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(member.dir.path().join("etcd.log"))
            .expect("open the etcd log file");
        let err = log.try_clone().expect("clone the etcd log file handle");
        let child = Command::new(binary)
            .args(member_args(
                &member.name,
                &member.dir.path().join("data"),
                &client,
                &peer,
                &self.initial_cluster,
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
        self.members[at].child = Some(child);
    }

    /// Waits for every running member's health; on failure, every member's log.
    fn try_wait_healthy(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_BOUND;
        loop {
            let mut healthy = true;
            for member in &mut self.members {
                let Some(child) = member.child.as_mut() else {
                    continue;
                };
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!(
                        "{} exited with {status}:\n{}",
                        member.name,
                        member.log()
                    ));
                }
                healthy &= http_get(member.client_addr(), "/health")
                    .is_ok_and(|r| r.status == 200 && r.body.contains("\"health\":\"true\""));
            }
            if healthy {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let logs: Vec<String> = (self.members.iter())
                    .map(|m| format!("{}:\n{}", m.name, m.log()))
                    .collect();
                return Err(format!(
                    "no answer within {START_BOUND:?}:\n{}",
                    logs.join("\n")
                ));
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for member in &mut self.members {
            member.kill();
        }
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
