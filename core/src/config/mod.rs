//! Node configuration: plain data with the defaults of ARCHITECTURE §14, and its validation.
//!
//! A [`Config`] is what an adapter reads from a file or flags and hands to the node once; the
//! core never reads the environment. It deserializes with serde (every field optional, missing
//! ones take their defaults, unknown keys are an error so a typo cannot silently keep a
//! default) and is checked by [`Config::validate`] before use: each problem is a
//! [`ConfigError`] naming the offending field by its serialized key.
//!
//! **Durations** are [`Duration`] fields in Rust (the type carries the unit) and whole
//! milliseconds on the wire, under keys ending in `_ms` (`message_timeout_ms: 8000`), so a
//! JSON or TOML file says its unit in every key. Serializing truncates to whole milliseconds.
//!
//! **Zero** means "unlimited" for the limits inherited from libatapp (`send_buffer_number`,
//! `send_buffer_size`, `flush_batch`, `reconnect_max_tries`) and "immediately" for
//! `endpoint_gc_timeout`; every other zero is rejected by `validate`.

use alloc::{borrow::ToOwned, string::String, vec, vec::Vec};
use core::net::SocketAddr;

use crate::auth::ClusterKey;
use crate::{
    discovery::{
        DiscoveryInfo, TopologyData, TopologyInfo,
        address::{Advertise, published_tcp_address},
    },
    ids::NodeId,
    time::Duration,
    topology::TopologyPolicy,
};

/// Everything the connection manager and its parts are configured with.
///
/// `Config::default()` holds the documented defaults with node id 0, which `validate` rejects:
/// a node must be given its id. Use [`Config::new`] for "defaults plus identity" and set the
/// other fields by assignment (the struct is `#[non_exhaustive]`: fields may be added).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// This node's id (libatapp's bus id). 0 is reserved and rejected.
    pub id: NodeId,
    /// This node's name, as published in discovery. May be empty (the node is then reachable
    /// by id only).
    pub name: String,
    /// First reconnect delay (before jitter). Default 1 s. Key `reconnect_start_ms`.
    #[serde(rename = "reconnect_start_ms", with = "millis")]
    pub reconnect_start: Duration,
    /// Cap on the reconnect delay (before jitter); must be ≥ `reconnect_start`. Default 60 s.
    /// Key `reconnect_max_ms`.
    #[serde(rename = "reconnect_max_ms", with = "millis")]
    pub reconnect_max: Duration,
    /// Reconnect attempts before a route record is removed; 0 = unlimited. Default 8.
    pub reconnect_max_tries: u32,
    /// Cap on the embedded registry client's redial delay (±20 %): a registry back is rejoined
    /// within it. Default 500 ms. Key `registry_reconnect_max_ms`.
    #[serde(rename = "registry_reconnect_max_ms", with = "millis")]
    pub registry_reconnect_max: Duration,
    /// Jitter applied to each reconnect delay, ± this percentage (0..=100). Default 20.
    pub reconnect_jitter_percent: u32,
    /// How long a route record survives its topology record's deletion while its link is
    /// down. Default 120 s. Key `lost_topology_timeout_ms`.
    #[serde(rename = "lost_topology_timeout_ms", with = "millis")]
    pub lost_topology_timeout: Duration,
    /// Deadline of each accepted message, counted from acceptance. Default 8 s.
    /// Key `message_timeout_ms`.
    #[serde(rename = "message_timeout_ms", with = "millis")]
    pub message_timeout: Duration,
    /// Pending messages per endpoint (count limit); 0 = unlimited. Default 4096.
    pub send_buffer_number: usize,
    /// Pending payload bytes per endpoint (byte limit); 0 = unlimited. Default 8 MiB.
    pub send_buffer_size: usize,
    /// How long an endpoint with no handles lives before it is collected (its queue failed
    /// with `TargetGone`); 0 = at the next timeout. Default 60 s. Key `endpoint_gc_timeout_ms`.
    #[serde(rename = "endpoint_gc_timeout_ms", with = "millis")]
    pub endpoint_gc_timeout: Duration,
    /// Messages one flush call hands to a link before yielding (libatapp's `loop_times`);
    /// 0 = unlimited. Default 1000. See [`Config::flush_budget`].
    pub flush_batch: usize,
    /// Virtual points per node on each consistent-hash ring. Default 80.
    pub ring_points_per_node: u32,
    /// How ring points and keys are hashed: `"fast"` (default; does not interoperate with
    /// libatapp), `"libatapp-v0.12"` (the placement of libatapp releases v0.11.0–v0.12.5) or
    /// `"libatapp-main"` (libatapp main since commit `45f5fda`, unreleased). See
    /// [`HashMode`](crate::hash::HashMode).
    pub ring_hash_mode: crate::hash::HashMode,
    /// Silence on a link before it gets a `Ping`, and between pings. Default 1.5 s. Key
    /// `heartbeat_interval_ms`.
    ///
    /// A link last heard at `t` is declared dead (half-open: the peer vanished without a FIN)
    /// and closed at exactly `t + heartbeat_interval × heartbeat_dead_after`: with the defaults
    /// 1.5 s × 3 = 4.5 s, inside the 5 s ARCHITECTURE §14 allows for detection, with pings at
    /// 1.5 s and 3 s so a live peer has two chances and a full interval (1.5 s, far above a
    /// loopback or LAN round trip) to answer the last one. 1.5 s rather than 1 s × 4: the
    /// interval is also how long the oldest unacknowledged message waits before it is sent
    /// again, and half as many pings per idle link.
    #[serde(rename = "heartbeat_interval_ms", with = "millis")]
    pub heartbeat_interval: Duration,
    /// Silent heartbeat intervals after which a link is declared dead (see
    /// [`heartbeat_interval`](Self::heartbeat_interval)); `heartbeat_dead_after - 1` pings go
    /// out before. At least 2 (with 1 no ping would ever keep an idle link alive). Default 3.
    pub heartbeat_dead_after: u32,
    /// How long a peer whose redial failed (refused, timed out) stays a suspect in doubt
    /// before it is declared dead without other evidence (docs/ARCHITECTURE.md §9.3): a
    /// refusal is a fact about the path, so a death needs the registry's word (session lost,
    /// record deleted, a new incarnation), an indirect probe, or this bound. Default 1.5 s:
    /// above a path hiccup (a proxy or load balancer restart, a firewall reload: ~150 ms
    /// measured) *and* the connector's first retry (`reconnect_start` 1 s + 20 % jitter), so
    /// a path back within the bound is found before it — keep it so when changing either;
    /// below heartbeat detection (4.5 s) and the message timeout (8 s), so where nothing
    /// corroborates (etcd before the lease expires, static peers) a death is still learnt
    /// within 1.5 s of the first failed redial. Key `suspicion_timeout_ms`.
    #[serde(rename = "suspicion_timeout_ms", with = "millis")]
    pub suspicion_timeout: Duration,
    /// How long a link may take from accept (or a dial's connect) to a completed
    /// `Hello`/`HelloAck` exchange; a link still handshaking then is closed at exactly that
    /// instant and counted (`Event::HandshakeTimedOut`; a dialled one counts as a failed
    /// dial). Bytes received meanwhile, a truncated frame included, do not extend it. Default
    /// 10 s. Key `handshake_timeout_ms`.
    #[serde(rename = "handshake_timeout_ms", with = "millis")]
    pub handshake_timeout: Duration,
    /// Accepted links that may be handshaking at once; a connection accepted while that many
    /// are closes the oldest of them that has not sent a whole `Hello` (else the oldest) and
    /// counts it (`Event::HandshakeLimit`), so idle or slow strangers can neither hold an
    /// unbounded number of sockets nor lock real peers out until their handshake deadlines.
    /// Links this node dialled do not count. At least 1. Default 256.
    pub max_pending_handshakes: usize,
    /// Legacy shared secret of the cluster, kept so old config files still load: when
    /// [`cluster_keys`](Self::cluster_keys) is empty and this is not, the cluster key is
    /// derived from it ([`ClusterKey::from_token`]). Prefer key files. Empty (the default) and
    /// no keys = no authentication. A [`Secret`](crate::secret::Secret): redacted in `Debug`
    /// and left out when the config is serialized (read from a file as a plain string).
    #[serde(skip_serializing)]
    pub cluster_token: crate::secret::Secret,
    /// The cluster keys (never in a config file: the CLI reads them from key files): the
    /// first proves this node in every handshake, either checks a peer
    /// ([`crate::bus::handshake`]: HMAC-SHA256 challenge-response). Two keys roll a cluster
    /// from one key to another without a failed link. At most 2. Empty (the default) = no
    /// authentication, unless `cluster_token` is set.
    #[serde(skip)]
    pub cluster_keys: Vec<ClusterKey>,
    /// 32 bytes of OS randomness for the handshake nonces, handed over by the driver
    /// (both adapters fill it when it is all zeros). Zeros (the default): none given — a node
    /// with cluster keys refuses to start ([`ConfigError::NoNonceEntropy`]); the simulator
    /// and tests opt in to replayable nonces with
    /// [`NonceEntropy::deterministic_for_tests`](crate::auth::NonceEntropy::deterministic_for_tests).
    /// Never read from a file.
    #[serde(skip)]
    pub nonce_entropy: crate::auth::NonceEntropy,
    /// Seed of the node's random generator (jitter, random picks). Default 0. The node mixes
    /// in its id, so nodes sharing a seed still draw different jitter; set distinct seeds to
    /// replay a particular run.
    pub rng_seed: u64,
    /// This node's own upstream (its proxy in the topology tree); [`NodeId::NONE`] for a root.
    /// The node keeps a link to it (re-dialled with the reconnect backoff, without a try
    /// limit) and relays traffic it cannot route otherwise through it. A topology record for
    /// this node that names another upstream switches it at run time.
    pub upstream: NodeId,
    /// Address to dial the configured `upstream` at (libatapp's `bus.proxy`). Empty: use the
    /// first address the upstream publishes in discovery.
    pub upstream_address: String,
    /// Addresses this node listens on, as published in its discovery record. The core does not
    /// listen itself (adapters do); it only reports them.
    pub listen: Vec<String>,
    /// Host this node runs on (topology data; same-host policies and address classes).
    pub hostname: String,
    /// Process id of this node (topology data; same-process policies).
    pub pid: i64,
    /// This deployment's identity (libatapp's `identity`): a secret. The discovery and
    /// topology records publish only its hash
    /// ([`published_identity`](crate::discovery::published_identity)); a `Register` carries a
    /// proof of it ([`IdentityProof`](crate::discovery::IdentityProof)). Equal non-empty
    /// identities mean the same deployment: a restart that finds its id still registered under
    /// its own identity takes the registration over at once instead of being refused. Empty = none; see [`deployment_identity`] for a stable
    /// default.
    pub identity: String,
    /// This node's topology labels (libatapp's `bus.topology.data.label`), matched by other
    /// nodes' `match_label` policies.
    pub labels: crate::discovery::Labels,
    /// When this node may link a peer directly instead of going through the upstream tree
    /// (libatapp's `bus.topology.rule`). Everything off by default.
    pub topology_policy: TopologyPolicy,
    /// A call's deadline when its `CallSpec` names none (30 s, like happy-server and
    /// Orleans).
    pub rpc_call_timeout: Duration,
    /// How long a call waits for a server of its method to appear when its `CallSpec` names
    /// no grace (15 s, happy-server's).
    pub rpc_grace: Duration,
    /// How long a send may still name a member whose discovery record was deleted (a
    /// graceful restart's gap): the message is held for its next life instead of refused,
    /// and what still waits for it when the grace ends with no record back ends
    /// `Failed(TargetGone)` (docs/ARCHITECTURE.md §7). Default 15 s, like `rpc_grace`. Key
    /// `send_grace_ms`.
    #[serde(rename = "send_grace_ms", with = "millis")]
    pub send_grace: Duration,
    /// Whether a call may resolve to this node itself (its own handler answers it); off: such
    /// a call ends `Failed(SelfCall)`.
    pub rpc_allow_self_calls: bool,
    /// The longest budget a request from the wire is served with: a caller announcing more
    /// (up to centuries) gets this much, so no caller pins this server's state for longer
    /// (counted in `RpcStats::budgets_capped`). Default 5 minutes. Key `max_call_budget_ms`.
    #[serde(rename = "max_call_budget_ms", with = "millis")]
    pub max_call_budget: Duration,
    /// Retries, backoff, the retry budget and hedging of calls (docs/ARCHITECTURE.md,
    /// "Retries, budget and hedging"). Block `rpc_retry`.
    pub rpc_retry: crate::rpc::retry::RetryConfig,
    /// Methods served from the start: in the very first record this node publishes, so a
    /// restarted server is never listed without them (what [`Node::serve`] adds later needs a
    /// republication). Never read from a file: each method needs a handler in code.
    ///
    /// [`Node::serve`]: crate::node::Node::serve
    #[serde(skip)]
    pub serve: Vec<String>,
    /// Slots of each Maglev table ([`Select::Maglev`](crate::select::Select::Maglev)): a
    /// prime up to 2^24. Default 65,537 (the Maglev paper's and Envoy's). Key
    /// `maglev_table_size`.
    pub maglev_table_size: u32,
    /// How Maglev tables are filled: `"balanced"` (the paper's: every node owns `⌊M/N⌋` or
    /// `⌈M/N⌉` slots) or `"stable"` (at most `⌈M/N⌉ + 1` slots each, and a membership change
    /// moves under twice a ring's share of keys; see
    /// [`MaglevFill`](crate::select::MaglevFill)). Default `"balanced"`. Key `maglev_fill`.
    pub maglev_fill: crate::select::MaglevFill,
    /// The bounded-load factor `c` of [`Select::Bounded`](crate::select::Select::Bounded) in
    /// percent of the mean load, at least 100. Default 125 (c = 1.25). Key
    /// `bounded_load_percent`.
    pub bounded_load_percent: u32,
    /// Outlier ejection on or off ([`OutlierConfig::enabled`]). Default on.
    pub outlier_ejection: bool,
    /// [`OutlierConfig::consecutive_failures`]. Default 5.
    pub outlier_consecutive_failures: u32,
    /// [`OutlierConfig::base_ejection_time`]. Default 30 s. Key
    /// `outlier_base_ejection_time_ms`.
    #[serde(rename = "outlier_base_ejection_time_ms", with = "millis")]
    pub outlier_base_ejection_time: Duration,
    /// [`OutlierConfig::max_ejection_time`]. Default 300 s. Key `outlier_max_ejection_time_ms`.
    #[serde(rename = "outlier_max_ejection_time_ms", with = "millis")]
    pub outlier_max_ejection_time: Duration,
    /// [`OutlierConfig::max_ejection_percent`]. Default 10.
    pub outlier_max_ejection_percent: u32,
    /// [`OutlierConfig::interval`]. Default 10 s. Key `outlier_interval_ms`.
    #[serde(rename = "outlier_interval_ms", with = "millis")]
    pub outlier_interval: Duration,
    /// [`OutlierConfig::success_rate_percent`]. Default 0 (off).
    pub outlier_success_rate_percent: u32,
    /// [`OutlierConfig::success_rate_min_requests`]. Default 100.
    pub outlier_success_rate_min_requests: u32,
}

impl Default for Config {
    fn default() -> Config {
        let outlier = OutlierConfig::default();
        Config {
            id: NodeId::NONE,
            name: String::new(),
            reconnect_start: Duration::from_secs(1),
            reconnect_max: Duration::from_secs(60),
            reconnect_max_tries: 8,
            registry_reconnect_max: Duration::from_millis(500),
            reconnect_jitter_percent: 20,
            lost_topology_timeout: Duration::from_secs(120),
            message_timeout: Duration::from_secs(8),
            send_buffer_number: 4096,
            send_buffer_size: 8 * 1024 * 1024,
            endpoint_gc_timeout: Duration::from_secs(60),
            flush_batch: 1000,
            ring_points_per_node: 80,
            ring_hash_mode: crate::hash::HashMode::Fast,
            heartbeat_interval: Duration::from_millis(1_500),
            heartbeat_dead_after: 3,
            suspicion_timeout: Duration::from_millis(1_500),
            handshake_timeout: Duration::from_secs(10),
            max_pending_handshakes: 256,
            cluster_token: crate::secret::Secret::default(),
            cluster_keys: Vec::new(),
            nonce_entropy: crate::auth::NonceEntropy::default(),
            rng_seed: 0,
            upstream: NodeId::NONE,
            upstream_address: String::new(),
            listen: Vec::new(),
            hostname: String::new(),
            pid: 0,
            identity: String::new(),
            labels: crate::discovery::Labels::new(),
            topology_policy: TopologyPolicy::default(),
            rpc_call_timeout: Duration::from_secs(30),
            rpc_grace: Duration::from_secs(15),
            send_grace: Duration::from_secs(15),
            rpc_allow_self_calls: false,
            max_call_budget: Duration::from_secs(5 * 60),
            rpc_retry: crate::rpc::retry::RetryConfig::default(),
            serve: Vec::new(),
            maglev_table_size: crate::select::MaglevTable::DEFAULT_SIZE,
            maglev_fill: crate::select::MaglevFill::Balanced,
            bounded_load_percent: crate::select::SelectConfig::DEFAULT_BOUNDED_LOAD_PERCENT,
            outlier_ejection: outlier.enabled,
            outlier_consecutive_failures: outlier.consecutive_failures,
            outlier_base_ejection_time: outlier.base_ejection_time,
            outlier_max_ejection_time: outlier.max_ejection_time,
            outlier_max_ejection_percent: outlier.max_ejection_percent,
            outlier_interval: outlier.interval,
            outlier_success_rate_percent: outlier.success_rate_percent,
            outlier_success_rate_min_requests: outlier.success_rate_min_requests,
        }
    }
}

impl Config {
    /// The discovery record this node publishes: id, name, host, pid, listen addresses, and
    /// its labels as metadata labels (so filters select on them). What a registry backend
    /// registers; the revision is the registry's to set.
    #[must_use]
    pub fn discovery_info(&self) -> DiscoveryInfo {
        DiscoveryInfo {
            id: self.id,
            name: self.name.clone(),
            hostname: self.hostname.clone(),
            pid: i32::try_from(self.pid).unwrap_or(0),
            listen: self.listen.clone(),
            identity: crate::discovery::published_identity(&self.identity),
            // Boxed only when there are labels.
            metadata: crate::discovery::Metadata {
                labels: self.labels.clone(),
                ..crate::discovery::Metadata::default()
            }
            .into(),
            ..DiscoveryInfo::default()
        }
    }

    /// The topology record this node publishes with `upstream` as its upstream (the configured
    /// one at start, another after an upstream switch): id, name, host, pid, labels.
    #[must_use]
    pub fn topology_info(&self, upstream: NodeId) -> TopologyInfo {
        TopologyInfo {
            id: self.id,
            name: self.name.clone(),
            hostname: self.hostname.clone(),
            pid: i32::try_from(self.pid).unwrap_or(0),
            identity: crate::discovery::published_identity(&self.identity),
            upstream_id: upstream,
            data: TopologyData {
                label: self.labels.clone(),
            }
            .into(),
            ..TopologyInfo::default()
        }
    }

    /// Fills in what the operator left to the process, from facts its driver gathered at
    /// start (the core reads none itself): an empty `listen` becomes the address published
    /// for the listener bound at `bound` ([`published_tcp_address`]), a zero `pid` becomes
    /// `pid`, an empty `hostname` becomes `hostname()` (called only then; see [`host_name`]),
    /// and `entropy` ([`crate::rng::entropy_seed`]) is mixed into `rng_seed` so a restarted
    /// node is a new incarnation whatever seed it was given.
    pub fn fill_from_process(
        &mut self,
        bound: SocketAddr,
        pid: u32,
        hostname: impl FnOnce() -> String,
        entropy: u64,
    ) {
        self.fill_from_process_advertised(bound, None, pid, hostname, entropy);
    }

    /// [`fill_from_process`](Self::fill_from_process) with the address the operator
    /// advertises: an empty `listen` becomes `advertise`'s address
    /// ([`Advertise::published`]: its host, and its port or else the bound one) when there is
    /// one, else the address published for `bound`. Check beforehand with
    /// [`check_listen`](crate::discovery::address::check_listen) that a wildcard listener has
    /// an advertised address (without one it publishes loopback).
    pub fn fill_from_process_advertised(
        &mut self,
        bound: SocketAddr,
        advertise: Option<&Advertise>,
        pid: u32,
        hostname: impl FnOnce() -> String,
        entropy: u64,
    ) {
        if self.listen.is_empty() {
            self.listen = vec![match advertise {
                Some(a) => a.published(bound.port()),
                None => published_tcp_address(bound),
            }];
        }
        if self.pid == 0 {
            self.pid = i64::from(pid);
        }
        if self.hostname.is_empty() {
            self.hostname = hostname();
        }
        self.rng_seed ^= entropy;
    }

    /// The defaults with this node's identity filled in.
    #[must_use]
    pub fn new(id: NodeId, name: impl Into<String>) -> Config {
        Config {
            id,
            name: name.into(),
            ..Config::default()
        }
    }

    /// The keys this node authenticates with: `cluster_keys`, or the key derived from a
    /// legacy `cluster_token` when no keys are given (empty: no authentication).
    #[must_use]
    pub fn auth_keys(&self) -> crate::auth::ClusterKeys {
        if self.cluster_keys.is_empty() && !self.cluster_token.is_empty() {
            return crate::auth::ClusterKeys::new(&[ClusterKey::from_token(
                self.cluster_token.expose().as_bytes(),
            )]);
        }
        crate::auth::ClusterKeys::new(&self.cluster_keys)
    }

    /// Checks every field; the first problem (in field order) is returned.
    ///
    /// Call once before building a node from the config; a node never runs with a config that
    /// fails this check.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the field: node id 0, an upstream equal to the node's own id,
    /// a zero timeout or interval, a zero ring point or pending-handshake count, a Maglev table size that is not a prime up
    /// to 2^24, a bounded-load factor below 100 %, a heartbeat
    /// count below 2, `reconnect_max_ms` below `reconnect_start_ms`, a jitter above 100 %, more than two cluster keys, a name longer than [`wire::MAX_NAME_LEN`](crate::wire::MAX_NAME_LEN) bytes, or labels over
    /// [`DEFAULT_MAX_LABELS`](crate::registry::limits::DEFAULT_MAX_LABELS) bytes.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !self.id.is_valid() {
            return Err(ConfigError::ReservedNodeId);
        }
        if self.cluster_keys.len() > crate::auth::MAX_KEYS {
            return Err(ConfigError::TooManyKeys {
                count: self.cluster_keys.len(),
            });
        }
        if self.upstream == self.id {
            return Err(ConfigError::SelfUpstream { id: self.id });
        }
        if self.name.len() > crate::wire::MAX_NAME_LEN {
            return Err(ConfigError::NameTooLong {
                len: self.name.len(),
            });
        }
        let labels = crate::registry::limits::labels_len(&self.labels);
        if labels > crate::registry::limits::DEFAULT_MAX_LABELS {
            return Err(ConfigError::LabelsTooLarge {
                len: labels,
                max: crate::registry::limits::DEFAULT_MAX_LABELS,
            });
        }
        if let Some(method) = self.serve.iter().find(|m| !crate::rpc::is_valid_method(m)) {
            return Err(ConfigError::InvalidMethod {
                method: method.clone(),
            });
        }
        nonzero_duration("reconnect_start_ms", self.reconnect_start)?;
        nonzero_duration("reconnect_max_ms", self.reconnect_max)?;
        nonzero_duration("registry_reconnect_max_ms", self.registry_reconnect_max)?;
        if self.reconnect_max < self.reconnect_start {
            return Err(ConfigError::ReconnectMaxBelowStart {
                start: self.reconnect_start,
                max: self.reconnect_max,
            });
        }
        if self.reconnect_jitter_percent > 100 {
            return Err(ConfigError::JitterOutOfRange {
                percent: self.reconnect_jitter_percent,
            });
        }
        nonzero_duration("lost_topology_timeout_ms", self.lost_topology_timeout)?;
        nonzero_duration("message_timeout_ms", self.message_timeout)?;
        if self.ring_points_per_node == 0 {
            return Err(ConfigError::Zero {
                field: "ring_points_per_node",
            });
        }
        nonzero_duration("heartbeat_interval_ms", self.heartbeat_interval)?;
        if self.heartbeat_dead_after == 0 {
            return Err(ConfigError::Zero {
                field: "heartbeat_dead_after",
            });
        }
        if self.heartbeat_dead_after < 2 {
            return Err(ConfigError::BelowMinimum {
                field: "heartbeat_dead_after",
                min: 2,
            });
        }
        nonzero_duration("suspicion_timeout_ms", self.suspicion_timeout)?;
        nonzero_duration("handshake_timeout_ms", self.handshake_timeout)?;
        if self.max_pending_handshakes == 0 {
            return Err(ConfigError::Zero {
                field: "max_pending_handshakes",
            });
        }
        nonzero_duration("max_call_budget_ms", self.max_call_budget)?;
        nonzero_duration("send_grace_ms", self.send_grace)?;
        if !crate::select::MaglevTable::valid_size(self.maglev_table_size) {
            return Err(ConfigError::NotPrime {
                field: "maglev_table_size",
                value: self.maglev_table_size,
            });
        }
        if self.bounded_load_percent < 100 {
            return Err(ConfigError::BelowMinimum {
                field: "bounded_load_percent",
                min: 100,
            });
        }
        if self.rpc_retry.max_attempts == 0 {
            return Err(ConfigError::Zero {
                field: "rpc_retry.max_attempts",
            });
        }
        self.outlier().validate()
    }

    /// The outlier-ejection settings of the `outlier_*` keys.
    #[must_use]
    pub const fn outlier(&self) -> OutlierConfig {
        OutlierConfig {
            enabled: self.outlier_ejection,
            consecutive_failures: self.outlier_consecutive_failures,
            base_ejection_time: self.outlier_base_ejection_time,
            max_ejection_time: self.outlier_max_ejection_time,
            max_ejection_percent: self.outlier_max_ejection_percent,
            interval: self.outlier_interval,
            success_rate_percent: self.outlier_success_rate_percent,
            success_rate_min_requests: self.outlier_success_rate_min_requests,
        }
    }

    /// Sets the `outlier_*` keys to `outlier`.
    pub const fn set_outlier(&mut self, outlier: OutlierConfig) {
        self.outlier_ejection = outlier.enabled;
        self.outlier_consecutive_failures = outlier.consecutive_failures;
        self.outlier_base_ejection_time = outlier.base_ejection_time;
        self.outlier_max_ejection_time = outlier.max_ejection_time;
        self.outlier_max_ejection_percent = outlier.max_ejection_percent;
        self.outlier_interval = outlier.interval;
        self.outlier_success_rate_percent = outlier.success_rate_percent;
        self.outlier_success_rate_min_requests = outlier.success_rate_min_requests;
    }

    /// The selection modes' settings ([`Selector::with_config`](crate::select::Selector::with_config)).
    #[must_use]
    pub const fn select_config(&self) -> crate::select::SelectConfig {
        crate::select::SelectConfig {
            maglev_table_size: self.maglev_table_size,
            maglev_fill: self.maglev_fill,
            bounded_load_percent: self.bounded_load_percent,
        }
    }

    /// `flush_batch` as a per-call budget: 0 ("unlimited") becomes `usize::MAX`.
    #[must_use]
    pub const fn flush_budget(&self) -> usize {
        if self.flush_batch == 0 {
            usize::MAX
        } else {
            self.flush_batch
        }
    }
}

fn nonzero_duration(field: &'static str, d: Duration) -> Result<(), ConfigError> {
    if d.is_zero() {
        Err(ConfigError::Zero { field })
    } else {
        Ok(())
    }
}

/// A host name from the sources a driver read, in order of preference (say the contents of
/// `/proc/sys/kernel/hostname`, then `$HOSTNAME`): the first that is not blank, trimmed;
/// `localhost` when none is.
#[must_use]
pub fn host_name<'a>(candidates: impl IntoIterator<Item = Option<&'a str>>) -> String {
    candidates
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|name| !name.is_empty())
        .unwrap_or("localhost")
        .to_owned()
}

/// A stable identity for one deployment of a node: 32 lower-case hex digits of
/// murmur3-x64-128 over what stays the same across its restarts — the host name, the node id,
/// the node name and the config file's path, if any (each length-prefixed, so no two
/// different tuples hash the same bytes). A restarted process gets the same identity; another
/// host, id, name or config file gets another.
#[must_use]
pub fn deployment_identity(hostname: &str, id: NodeId, name: &str, config: Option<&str>) -> String {
    let mut bytes = Vec::new();
    for part in [
        hostname.as_bytes(),
        &id.0.to_le_bytes(),
        name.as_bytes(),
        config.unwrap_or("").as_bytes(),
    ] {
        bytes.extend_from_slice(&(part.len() as u64).to_le_bytes());
        bytes.extend_from_slice(part);
    }
    let (hi, lo) = crate::hash::murmur3_x64_128(&bytes, IDENTITY_SEED);
    alloc::format!("{hi:016x}{lo:016x}")
}

/// Seed of [`deployment_identity`]'s hash (libatapp's FNV prime, as for `hash_code`).
const IDENTITY_SEED: u32 = 0x0100_0193;

/// Why a [`Config`] was rejected. Field names are the serialized keys.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Cluster keys without the driver's [`NonceEntropy`](crate::auth::NonceEntropy)
    /// (all zeros): the handshake nonces would repeat after every restart. Checked by
    /// `Node::new` (the adapters fill the entropy from the OS; the simulator and tests opt in
    /// with `NonceEntropy::deterministic_for_tests`).
    #[error(
        "nonce_entropy: cluster keys need 32 bytes of OS randomness for the handshake nonces \
         (all zeros given); drivers fill it, tests opt in with NonceEntropy::deterministic_for_tests"
    )]
    NoNonceEntropy,
    /// More than two cluster keys.
    #[error("cluster_keys: {count} keys given; at most 2 (current, next)")]
    TooManyKeys {
        /// How many were given.
        count: usize,
    },
    /// `name` is longer than a handshake frame carries.
    #[error("name: {len} bytes; at most {max} (a handshake frame carries the name)", max = crate::wire::MAX_NAME_LEN)]
    NameTooLong {
        /// The name's length in bytes.
        len: usize,
    },
    /// The labels (keys and values summed) exceed what a registry accepts in one record
    /// ([`DEFAULT_MAX_LABELS`](crate::registry::limits::DEFAULT_MAX_LABELS)).
    #[error("labels: {len} bytes of keys and values; at most {max}")]
    LabelsTooLarge {
        /// The labels' size in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// `id` is 0, which is reserved for "no node".
    #[error("id: node id 0 is reserved; give the node a non-zero id")]
    ReservedNodeId,
    /// `upstream` names the node itself.
    #[error("upstream: node {id} cannot be its own upstream")]
    SelfUpstream {
        /// The node's id.
        id: NodeId,
    },
    /// A timeout, interval or count that must be positive is 0.
    #[error("{field} must be greater than zero")]
    Zero {
        /// The serialized key of the field.
        field: &'static str,
    },
    /// A count is positive but below the smallest value that works.
    #[error("{field} must be at least {min}")]
    BelowMinimum {
        /// The serialized key of the field.
        field: &'static str,
        /// The smallest accepted value.
        min: u64,
    },
    /// `reconnect_max_ms` is below `reconnect_start_ms`.
    #[error("reconnect_max_ms ({max:?}) is below reconnect_start_ms ({start:?})")]
    ReconnectMaxBelowStart {
        /// The configured first delay.
        start: Duration,
        /// The configured cap.
        max: Duration,
    },
    /// A method in `serve` is not a valid method name.
    #[error("serve: {method:?} is not a method name (1 to 128 ASCII letters, digits and `._-:`)")]
    InvalidMethod {
        /// The refused name.
        method: String,
    },
    /// `maglev_table_size` is not a prime between 2 and 2^24.
    #[error("{field} is {value}; it must be a prime between 2 and 16777216")]
    NotPrime {
        /// The serialized key of the field.
        field: &'static str,
        /// The configured value.
        value: u32,
    },
    /// `outlier_max_ejection_time_ms` is below `outlier_base_ejection_time_ms`.
    #[error(
        "outlier_max_ejection_time_ms ({max:?}) is below outlier_base_ejection_time_ms ({base:?})"
    )]
    OutlierMaxBelowBase {
        /// The configured base time.
        base: Duration,
        /// The configured cap.
        max: Duration,
    },
    /// A percentage key is above 100.
    #[error("{field} is {percent}; it must be between 0 and 100")]
    PercentOutOfRange {
        /// The serialized key of the field.
        field: &'static str,
        /// The configured percentage.
        percent: u32,
    },
    /// `reconnect_jitter_percent` is above 100.
    #[error("reconnect_jitter_percent is {percent}; it must be between 0 and 100")]
    JitterOutOfRange {
        /// The configured percentage.
        percent: u32,
    },
}

/// Serde helper: a [`Duration`] as whole milliseconds (`u64`).
mod millis {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::time::Duration;

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

mod outlier;

pub use outlier::OutlierConfig;

#[cfg(test)]
mod tests;
