//! The cluster every process test starts from: one registry, one proxy (id 10) and two echo
//! leaves under it (ids 101 and 102), each node with an admin port; the load runs that send
//! to leaf A; and [`until_checked`], the rule every kill test shares (direct, proxied, on
//! etcd): a run whose kill ended nothing checkable is repeated on a fresh cluster.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use super::{
    Proc,
    cluster::{ANY_PORT, Node, NodeSpec, Registry, start_node, start_registry},
    load::{LoadSpec, spawn_load},
};

/// The proxy's id (both lives of it).
pub const PROXY_ID: u64 = 10;
/// The proxy's name.
pub const PROXY: &str = "proxy";
/// Leaf A's id.
pub const LEAF_A_ID: u64 = 101;
/// Leaf A's name (the load's `--to`).
pub const LEAF_A: &str = "leaf-a";
/// Leaf B's id.
pub const LEAF_B_ID: u64 = 102;
/// Leaf B's name.
pub const LEAF_B: &str = "leaf-b";

/// Nodes in every cluster node's discovery set once the proxy and both leaves registered
/// (each node counts itself).
pub const KNOWN_NODES: usize = 3;

/// Messages per load run.
pub const COUNT: u64 = 2000;
/// Messages per second of a load run.
pub const RATE: u64 = 1000;
/// Bound on a load run getting going (its node registers, finds the target, sends).
pub const RUN_START_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs of a kill test whose in-flight checks had nothing to check (the kill fell where no
/// message was in flight and none was sent into the dead link) are repeated on a fresh
/// cluster, at most this many runs in all; the test fails if every one was vacuous.
pub const KILL_ATTEMPTS: usize = 3;

/// Runs `attempt` (one whole kill run on a fresh cluster, returning whether its in-flight
/// checks had anything to check) until one did, at most [`KILL_ATTEMPTS`] times; fails if
/// none did, so a test cannot pass without checking what the kill ended.
///
/// # Panics
///
/// When every run was vacuous (and whenever `attempt` panics).
pub fn until_checked(what: &str, mut attempt: impl FnMut() -> bool) {
    for run in 1..=KILL_ATTEMPTS {
        if attempt() {
            return;
        }
        eprintln!(
            "{what}: run {run} of {KILL_ATTEMPTS}: nothing in flight at the kill was ended by \
             it and nothing was sent into the dead link; running again on a fresh cluster"
        );
    }
    panic!(
        "{what}: in {KILL_ATTEMPTS} runs nothing the kill ended was checked (each time every \
         message in flight reached the sender's ack or waited for the next life, and none was \
         transmitted into the dead link): the in-flight checks would pass vacuously"
    );
}

/// The label that marks the proxy (`--label role=proxy`).
pub const PROXY_LABEL: (&str, &str) = ("role", "proxy");

/// The load node's config file: `switchboard load` has no `--upstream` (its node links to its
/// targets directly), so its `[core]` topology policy allows direct links to proxies only.
/// The routing decision then skips the leaf (policy-denied) and takes the next candidate up
/// the leaf's chain, the proxy: every load message and every echo crosses the proxy.
pub const LOAD_THROUGH_PROXY_TOML: &str = "\
[core.topology_policy]
allow_direct_connection = true

[core.topology_policy.match_label]
role = [\"proxy\"]
";

/// Writes [`LOAD_THROUGH_PROXY_TOML`] under cargo's scratch directory for tests and returns
/// its path. Test processes running at once write the same bytes: each writes a file of its
/// own and renames it into place, so a reader never sees a partly written file.
///
/// # Panics
///
/// The file cannot be written.
#[must_use]
pub fn load_through_proxy_config() -> PathBuf {
    // Outside the CLI's tests (the report bins include this harness) cargo sets no
    // CARGO_TARGET_TMPDIR: the system's temporary directory then.
    let dir = option_env!("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let dir = dir.as_path();
    let path = dir.join("load-through-proxy.toml");
    let staging = dir.join(format!("load-through-proxy.toml.{}", std::process::id()));
    std::fs::write(&staging, LOAD_THROUGH_PROXY_TOML)
        .and_then(|()| std::fs::rename(&staging, &path))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

/// Registry, proxy and two echo leaves, settled: every node registered and knowing
/// [`KNOWN_NODES`] nodes, both leaves linked to the proxy.
pub struct ProxyCluster {
    /// The registry.
    pub registry: Registry,
    /// The proxy (id [`PROXY_ID`]).
    pub proxy: Node,
    /// Leaf A (id [`LEAF_A_ID`], `--echo`).
    pub leaf_a: Node,
    /// Leaf B (id [`LEAF_B_ID`], `--echo`).
    pub leaf_b: Node,
}

impl ProxyCluster {
    /// Starts the four processes and waits until the cluster settled.
    ///
    /// # Panics
    ///
    /// A process does not come up, or the cluster does not settle within the bounds.
    #[must_use]
    pub fn start() -> ProxyCluster {
        let registry = start_registry("registry", ANY_PORT);
        let proxy = start_node(proxy_spec(&registry));
        let leaf_a = start_node(leaf_spec(&registry, LEAF_A_ID, LEAF_A));
        let leaf_b = start_node(leaf_spec(&registry, LEAF_B_ID, LEAF_B));
        let cluster = ProxyCluster {
            registry,
            proxy,
            leaf_a,
            leaf_b,
        };
        cluster.wait_settled();
        cluster
    }

    /// Waits until every node is registered and knows [`KNOWN_NODES`] nodes and both leaves
    /// have an up link to the proxy.
    ///
    /// # Panics
    ///
    /// Not so within the settle bound.
    pub fn wait_settled(&self) {
        for node in [&self.proxy, &self.leaf_a, &self.leaf_b] {
            node.wait_known(KNOWN_NODES);
        }
        self.leaf_a.wait_link_up(PROXY_ID);
        self.leaf_b.wait_link_up(PROXY_ID);
    }

    /// A load run of `count` messages at `rate`/s from a node with id `load_id` to leaf A,
    /// through the proxy.
    #[must_use]
    pub fn load_to_a(&self, load_id: u64, count: u64, rate: u64) -> LoadSpec {
        let mut spec = LoadSpec::to_name(self.registry.addr, LEAF_A, load_id, count, rate);
        let config = load_through_proxy_config();
        spec.extra = vec!["--config".to_owned(), config.display().to_string()];
        spec
    }
}

impl ProxyCluster {
    /// Starts a cluster and a load run of `count` messages at `rate`/s from node `load_id` to
    /// leaf A through the proxy, logging every outcome to `log`; returns the run's spec and
    /// process once A has received `warm_up` messages.
    ///
    /// # Panics
    ///
    /// The cluster does not settle, or A does not receive `warm_up` messages within
    /// [`RUN_START_TIMEOUT`].
    #[must_use]
    pub fn start_logged_load(
        load_id: u64,
        (count, rate): (u64, u64),
        log: &Path,
        warm_up: u64,
    ) -> (ProxyCluster, LoadSpec, Proc) {
        let cluster = ProxyCluster::start();
        let spec = cluster.load_to_a(load_id, count, rate).outcomes_log(log);
        let run = spawn_load(&spec);
        cluster
            .leaf_a
            .wait_received_at_least(warm_up, RUN_START_TIMEOUT);
        (cluster, spec, run)
    }
}

/// The proxy: no upstream, labelled [`PROXY_LABEL`], admin port, no echo.
#[must_use]
pub fn proxy_spec(registry: &Registry) -> NodeSpec {
    let mut spec = NodeSpec::new(PROXY_ID, PROXY, registry.addr);
    spec.labels
        .push((PROXY_LABEL.0.to_owned(), PROXY_LABEL.1.to_owned()));
    spec
}

/// A leaf under the proxy that echoes what it receives.
#[must_use]
pub fn leaf_spec(registry: &Registry, id: u64, name: &str) -> NodeSpec {
    NodeSpec::new(id, name, registry.addr)
        .upstream(PROXY_ID)
        .echo()
}
