//! Starting `switchboard registry` and `switchboard node` with the CLI's flags, and reading
//! what they print: the ready lines, a node's `/status` and `/metrics`. Load runs are in
//! [`super::load`].
//!
//! Addresses: everything listens on `127.0.0.1:0` unless a test restarts a process on the
//! port its previous life printed in its ready line.

use std::{net::SocketAddr, time::Duration};

use super::{
    Proc,
    http::{Sample, counter, get_ok, http_get, parse_prometheus},
    unix_micros_now, wait_until,
};

/// Bound on a process printing its ready line.
pub const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// Bound on the cluster settling (registrations pushed, links up).
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(20);
/// Any loopback port.
pub const ANY_PORT: &str = "127.0.0.1:0";

/// A running `switchboard registry`.
pub struct Registry {
    /// The process.
    pub proc: Proc,
    /// The address it listens on (from its ready line).
    pub addr: SocketAddr,
}

/// Starts `switchboard registry --listen <listen>` and waits for its ready line
/// `{"ready":"registry","listen":"127.0.0.1:PORT"}`.
///
/// # Panics
///
/// No ready line within [`READY_TIMEOUT`], or a malformed one.
#[must_use]
pub fn start_registry(label: &str, listen: &str) -> Registry {
    start_registry_with(label, listen, &[])
}

/// [`start_registry`] with more flags (`--cluster-key-file PATH`, ...).
///
/// # Panics
///
/// No ready line within [`READY_TIMEOUT`], or a malformed one.
#[must_use]
pub fn start_registry_with(label: &str, listen: &str, flags: &[&str]) -> Registry {
    let mut command = args(["registry", "--listen", listen]);
    command.extend(flags.iter().map(|f| (*f).to_owned()));
    let mut proc = Proc::spawn(label, &command);
    let ready = proc.next_json_line(READY_TIMEOUT);
    assert_eq!(ready["ready"], "registry", "{label}: ready line {ready}");
    let addr = parse_addr(&ready["listen"], label, &ready);
    Registry { proc, addr }
}

/// Where a node or a load run finds its registry.
#[derive(Clone, Debug)]
pub enum RegistryAddr {
    /// `--registry ADDR`: the embedded registry.
    Embedded(SocketAddr),
    /// `--etcd URL`: an etcd server.
    Etcd(String),
}

impl From<SocketAddr> for RegistryAddr {
    fn from(addr: SocketAddr) -> RegistryAddr {
        RegistryAddr::Embedded(addr)
    }
}

impl RegistryAddr {
    /// The flags that name it.
    #[must_use]
    pub fn to_args(&self) -> Vec<String> {
        match self {
            RegistryAddr::Embedded(addr) => args(["--registry", &addr.to_string()]),
            RegistryAddr::Etcd(url) => args(["--etcd", url]),
        }
    }
}

/// How to start one `switchboard node`.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    /// `--id`.
    pub id: u64,
    /// `--name`.
    pub name: String,
    /// `--listen`.
    pub listen: String,
    /// `--upstream`, if any.
    pub upstream: Option<u64>,
    /// `--registry` or `--etcd`.
    pub registry: RegistryAddr,
    /// `--identity`, if any (the default is derived from host, id, name and config path).
    pub identity: Option<String>,
    /// `--label k=v` pairs.
    pub labels: Vec<(String, String)>,
    /// `--admin` address, if any.
    pub admin: Option<String>,
    /// `--echo`.
    pub echo: bool,
    /// `--config` file, if any.
    pub config: Option<String>,
    /// Any other flags, last (`--cluster-key-file PATH`, `--advertise ADDR`, ...).
    pub flags: Vec<String>,
}

impl NodeSpec {
    /// A node with an admin port, listening on any port, no upstream, no echo.
    #[must_use]
    pub fn new(id: u64, name: &str, registry: impl Into<RegistryAddr>) -> NodeSpec {
        NodeSpec {
            id,
            name: name.to_owned(),
            listen: ANY_PORT.to_owned(),
            upstream: None,
            registry: registry.into(),
            identity: None,
            labels: Vec::new(),
            admin: Some(ANY_PORT.to_owned()),
            echo: false,
            config: None,
            flags: Vec::new(),
        }
    }

    /// Sets `--upstream`.
    #[must_use]
    pub fn upstream(mut self, upstream: u64) -> NodeSpec {
        self.upstream = Some(upstream);
        self
    }

    /// Sets `--echo`.
    #[must_use]
    pub fn echo(mut self) -> NodeSpec {
        self.echo = true;
        self
    }

    /// Sets `--config` (a TOML file: its `[core]` table tunes the core).
    #[must_use]
    pub fn config(mut self, path: &str) -> NodeSpec {
        self.config = Some(path.to_owned());
        self
    }

    /// Adds `flags` after the others.
    #[must_use]
    pub fn flags(mut self, flags: &[&str]) -> NodeSpec {
        self.flags.extend(flags.iter().map(|f| (*f).to_owned()));
        self
    }

    /// Sets `--identity`.
    #[must_use]
    pub fn identity(mut self, identity: &str) -> NodeSpec {
        self.identity = Some(identity.to_owned());
        self
    }

    fn to_args(&self) -> Vec<String> {
        let mut out = args([
            "node",
            "--id",
            &self.id.to_string(),
            "--name",
            &self.name,
            "--listen",
            &self.listen,
        ]);
        out.extend(self.registry.to_args());
        if let Some(identity) = &self.identity {
            out.extend(args(["--identity", identity]));
        }
        if let Some(upstream) = self.upstream {
            out.extend(args(["--upstream", &upstream.to_string()]));
        }
        for (key, value) in &self.labels {
            out.extend(args(["--label", &format!("{key}={value}")]));
        }
        if let Some(admin) = &self.admin {
            out.extend(args(["--admin", admin]));
        }
        if self.echo {
            out.push("--echo".to_owned());
        }
        if let Some(config) = &self.config {
            out.extend(args(["--config", config]));
        }
        out.extend(self.flags.iter().cloned());
        out
    }
}

/// A running `switchboard node`.
pub struct Node {
    /// The process.
    pub proc: Proc,
    /// How it was started.
    pub spec: NodeSpec,
    /// The address it listens on.
    pub listen: SocketAddr,
    /// Its admin address, if it serves one.
    pub admin: Option<SocketAddr>,
    /// Its ready line.
    pub ready: serde_json::Value,
    /// When the test read the ready line: microseconds since the Unix epoch (the clock
    /// `load --outcomes-log` uses). The node printed it at most this late.
    pub ready_at_us: u64,
}

/// Starts a node and waits for its ready line
/// `{"ready":"node","id":N,"listen":"127.0.0.1:PORT","admin":"127.0.0.1:PORT"|null,
/// "registered":BOOL,"conflict":"WHY"|null}`.
///
/// # Panics
///
/// No ready line within [`READY_TIMEOUT`], or one that does not match `spec`.
#[must_use]
pub fn start_node(spec: NodeSpec) -> Node {
    let label = format!("{}#{}", spec.name, spec.id);
    let mut proc = Proc::spawn(&label, &spec.to_args());
    let ready = proc.next_json_line(READY_TIMEOUT);
    let ready_at_us = unix_micros_now();
    assert_eq!(ready["ready"], "node", "{label}: ready line {ready}");
    assert_eq!(ready["id"], spec.id, "{label}: ready line {ready}");
    let listen = parse_addr(&ready["listen"], &label, &ready);
    let admin = match (&spec.admin, &ready["admin"]) {
        (None, serde_json::Value::Null) => None,
        (Some(_), value @ serde_json::Value::String(_)) => Some(parse_addr(value, &label, &ready)),
        (asked, _) => panic!("{label}: admin asked {asked:?}, ready line {ready}"),
    };
    Node {
        proc,
        spec,
        listen,
        admin,
        ready,
        ready_at_us,
    }
}

impl Node {
    /// `"registered"` of the ready line.
    ///
    /// # Panics
    ///
    /// The ready line has no boolean `registered`.
    #[must_use]
    pub fn ready_registered(&self) -> bool {
        self.ready["registered"]
            .as_bool()
            .unwrap_or_else(|| panic!("{}: ready line {}", self.proc.label(), self.ready))
    }

    /// `"conflict"` of the ready line (`None` for `null`).
    ///
    /// # Panics
    ///
    /// The ready line's `conflict` is neither a string nor `null`.
    #[must_use]
    pub fn ready_conflict(&self) -> Option<String> {
        match &self.ready["conflict"] {
            serde_json::Value::Null => None,
            serde_json::Value::String(why) => Some(why.clone()),
            other => panic!("{}: conflict {other} in {}", self.proc.label(), self.ready),
        }
    }

    /// This node was refused at its start: its ready line says not registered and why, and
    /// it exits 1 (within 10 s). Returns the conflict.
    ///
    /// # Panics
    ///
    /// It registered, its ready line names no conflict, or it exits otherwise.
    pub fn expect_refused(&mut self) -> String {
        assert!(
            !self.ready_registered(),
            "{} registered: {}",
            self.proc.label(),
            self.ready
        );
        let conflict = self
            .ready_conflict()
            .unwrap_or_else(|| panic!("no conflict in {}", self.ready));
        let exit = self.proc.wait_exit(Duration::from_secs(10));
        assert_eq!(
            exit.code(),
            Some(1),
            "{}: the refused node's exit",
            self.proc.label()
        );
        conflict
    }

    /// The spec of this node's next life: same id, name and flags, on the same listen port.
    #[must_use]
    pub fn restart_spec(&self) -> NodeSpec {
        let mut spec = self.spec.clone();
        spec.listen = self.listen.to_string();
        spec
    }

    fn admin_addr(&self) -> SocketAddr {
        self.admin
            .unwrap_or_else(|| panic!("{} runs without --admin", self.proc.label()))
    }

    /// `GET /status`, parsed; `Err` if the node does not answer (yet).
    ///
    /// # Errors
    ///
    /// The request failed or the body is not the status JSON.
    pub fn try_status(&self) -> Result<NodeStatus, String> {
        let response = http_get(self.admin_addr(), "/status")?;
        if response.status != 200 {
            return Err(format!("/status answered {}", response.status));
        }
        serde_json::from_str(&response.body)
            .map_err(|e| format!("/status body {:?}: {e}", response.body))
    }

    /// `GET /status`, parsed.
    ///
    /// # Panics
    ///
    /// The request failed or the body is not the status JSON.
    #[must_use]
    pub fn status(&self) -> NodeStatus {
        self.try_status()
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", self.proc.label(), self.proc.diagnostics()))
    }

    /// `GET /metrics`, parsed into samples.
    ///
    /// # Panics
    ///
    /// The request failed or a line is malformed.
    #[must_use]
    pub fn metrics(&self) -> Vec<Sample> {
        parse_prometheus(&get_ok(self.admin_addr(), "/metrics"))
    }

    /// The value of counter `name` (no labels) in `/metrics`.
    ///
    /// # Panics
    ///
    /// The node does not answer or does not export it.
    #[must_use]
    pub fn counter(&self, name: &str) -> u64 {
        counter(&self.metrics(), name, &[])
            .unwrap_or_else(|| panic!("{}: no {name} in /metrics", self.proc.label()))
    }

    /// `switchboard_received_total`.
    ///
    /// # Panics
    ///
    /// The node does not answer or does not export it.
    #[must_use]
    pub fn received_total(&self) -> u64 {
        self.try_received_total()
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", self.proc.label(), self.proc.diagnostics()))
    }

    /// `switchboard_received_total`, or why it could not be read.
    ///
    /// # Errors
    ///
    /// The request failed or the counter is missing.
    pub fn try_received_total(&self) -> Result<u64, String> {
        let response = http_get(self.admin_addr(), "/metrics")?;
        if response.status != 200 {
            return Err(format!("/metrics answered {}", response.status));
        }
        counter(
            &parse_prometheus(&response.body),
            "switchboard_received_total",
            &[],
        )
        .ok_or_else(|| format!("no switchboard_received_total in {:?}", response.body))
    }

    /// Waits until `/status` says registered with exactly `known_nodes` nodes in discovery.
    ///
    /// # Panics
    ///
    /// Not so within [`SETTLE_TIMEOUT`].
    pub fn wait_known(&self, known_nodes: usize) -> NodeStatus {
        self.wait_known_within(known_nodes, SETTLE_TIMEOUT)
    }

    /// [`Node::wait_known`] with its own bound (e.g. to outlast a registry client's grace).
    ///
    /// # Panics
    ///
    /// Not so within `timeout`.
    pub fn wait_known_within(&self, known_nodes: usize, timeout: Duration) -> NodeStatus {
        let what = format!(
            "{} registered with known_nodes == {known_nodes}",
            self.proc.label()
        );
        wait_until(
            timeout,
            &what,
            || {
                self.try_status()
                    .ok()
                    .filter(|s| s.registered && s.known_nodes == known_nodes)
            },
            || format!("{:?}", self.try_status()),
        )
    }

    /// Waits until `/status` lists an `up` link to `peer`.
    ///
    /// # Panics
    ///
    /// Not so within [`SETTLE_TIMEOUT`].
    pub fn wait_link_up(&self, peer: u64) -> NodeStatus {
        let what = format!("{} with an up link to {peer}", self.proc.label());
        wait_until(
            SETTLE_TIMEOUT,
            &what,
            || {
                self.try_status().ok().filter(|s| {
                    s.links
                        .iter()
                        .any(|l| l.peer == Some(peer) && l.state == "up")
                })
            },
            || format!("{:?}", self.try_status()),
        )
    }

    /// Waits until `switchboard_received_total` reaches at least `count` (to act mid-run).
    ///
    /// # Panics
    ///
    /// Not so within `timeout`.
    pub fn wait_received_at_least(&self, count: u64, timeout: Duration) -> u64 {
        let what = format!("{} received_total >= {count}", self.proc.label());
        wait_until(
            timeout,
            &what,
            || self.try_received_total().ok().filter(|&n| n >= count),
            || format!("{:?}", self.try_received_total()),
        )
    }
}

/// `/status` of a node, parsed into the library's own types (it serves what they serialize).
pub use switchboard_tokio::observe::Status as NodeStatus;

pub(super) fn args<const N: usize>(items: [&str; N]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn parse_addr(value: &serde_json::Value, label: &str, line: &serde_json::Value) -> SocketAddr {
    value
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{label}: no socket address in ready line {line}"))
}
