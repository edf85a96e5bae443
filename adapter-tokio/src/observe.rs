//! What a running node reports: [`Metrics`] (counters and gauges, rendered as Prometheus text
//! on `/metrics`) and [`Status`] (the core's snapshot of endpoints, route records and links,
//! served as JSON on `/status`). The driver counts the metrics from the core's outputs and
//! takes the status from `Node::status`, adding what its registry backend reports.

use std::{collections::BTreeMap, time::Duration};

use serde::Serialize;
use switchboard_core::ids::NodeId;
pub use switchboard_core::node::{EndpointStatus, LinkStatus, RouteStatus, Status};

/// Counters since start and current gauges of one node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Metrics {
    /// Sends the core accepted.
    pub sent: u64,
    /// Sends the core refused, by [`SendError::as_str`](switchboard_core::node::SendError::as_str)
    /// (`unknown_target`, ...).
    pub refused: BTreeMap<String, u64>,
    /// Outcomes by [`Outcome::label`](switchboard_core::outcome::Outcome::label):
    /// `delivered`, `failed_<reason>`, `unknown_<reason>` (e.g. `failed_no_route`).
    pub outcomes: BTreeMap<String, u64>,
    /// Messages received for this node.
    pub received: u64,
    /// Messages queued in endpoints' pending queues now (gauge).
    pub pending: u64,
    /// Dials the core asked for (first connects and reconnects).
    pub dials: u64,
    /// Dials that failed.
    pub dial_failures: u64,
    /// Ring updates applied by the discovery set (all rings).
    pub ring_updates: u64,
    /// Bounded-load picks that went past the key's owner because it carried too much
    /// (`SelectStats::bounded_spills`).
    pub select_bounded_spills: u64,
    /// Registry events applied or ignored.
    pub registry_events: u64,
    /// Links by state now (gauge): `connecting`, `handshaking`, `up`.
    pub links: BTreeMap<String, u64>,
    /// Peers restarted (new incarnation seen).
    pub peer_restarts: u64,
    /// Evidence of a peer incarnation's death, by what showed it (`registry_deleted`,
    /// `new_incarnation`, `redial_failed`, `heartbeats_stopped`, `relay_notice`).
    pub peer_deaths: BTreeMap<String, u64>,
    /// Messages this node could not forward as a relay.
    pub forward_dropped: u64,
    /// Discovery deletes the registry backend passed to the core (a peer left the view).
    pub discovery_deletes: u64,
    /// Times the registry backend reported the node registered (first time and after every
    /// reconnect).
    pub registrations: u64,
    /// Times the registry backend lost the registry (including failed dials).
    pub registry_disconnects: u64,
    /// The registry session now (gauge): 1 while registered, 0 while the registry is lost
    /// or not reached yet.
    pub registry_session_up: u64,
    /// Registrations refused because another live instance holds this node's id, or another
    /// node its name.
    pub registry_conflicts: u64,
    /// Links this node closed because of what the peer sent (bad frames, refused handshakes).
    pub links_rejected: u64,
    /// Links whose peer failed the cluster-key challenge, by kind (`no_proof`, `bad_proof`,
    /// `replay`, `unknown_key`, `before_auth`), or its certificate: `not_certified` (the
    /// handshake claimed an id the TLS certificate does not name) and `no_node_id` (a
    /// certificate naming no node id while one is required, or an invalid one; dropped
    /// right after the TLS handshake, not counted in `links_rejected`).
    pub auth_refusals: BTreeMap<String, u64>,
    /// Links closed because their handshake did not finish within `handshake_timeout`
    /// (accepted and dialled).
    pub handshake_timeouts: u64,
    /// Inbound connections closed for the pending-handshake cap: the oldest silent accepted
    /// link closed to make room when `max_pending_handshakes` were handshaking (or, with
    /// TLS, a new connection closed at once while that many TLS handshakes were under way).
    pub handshakes_refused: u64,
    /// Received messages dropped because the [`crate::Inbox`] was dropped.
    pub inbox_dropped: u64,
    /// Time from a send the node accepted to its `Delivered` outcome.
    pub delivery_latency: Histogram,
    /// Ended calls of this node, by method label (the method, or [`OTHER_METHOD`] past the
    /// first [`MAX_METHOD_LABELS`] distinct methods called), then by outcome label: `reply`,
    /// `failed_<reason>` or `unknown_<reason>` (reasons as
    /// [`FailReason::as_str`](switchboard_core::FailReason::as_str)).
    pub rpc_calls: BTreeMap<String, BTreeMap<String, u64>>,
    /// Time from a call the node accepted to its outcome (every class), by method label (as
    /// in `rpc_calls`).
    pub rpc_call_duration: BTreeMap<String, Histogram>,
    /// Requests handed to this node's handlers, by method label: every method served now
    /// (at 0 until a request comes), and those served before that were counted (past the
    /// first [`MAX_METHOD_LABELS`] distinct methods, [`OTHER_METHOD`]).
    pub rpc_served: BTreeMap<String, u64>,
    /// Calls of this node waiting for a server or a reply now (gauge).
    pub rpc_in_flight: u64,
    /// Calls that had to wait for a server to appear (entered the grace).
    pub rpc_grace_waits: u64,
    /// Calls ended early on evidence of their server's death.
    pub rpc_fast_fails: u64,
    /// Broadcasts this node started.
    pub rpc_broadcasts: u64,
    /// Requests whose budget from the wire was cut to `Config::max_call_budget`.
    pub rpc_budgets_capped: u64,
    /// The core's other RPC counters ([`RpcStats`](switchboard_core::rpc::RpcStats)), by name:
    /// see [`RPC_STATS`].
    pub rpc_stats: BTreeMap<&'static str, u64>,
    /// Requests shed unexecuted (their callers' calls ended `Failed(Overloaded)`): beyond a
    /// method's concurrency limit ([`NodeHandle::serve_bounded`](crate::NodeHandle::serve_bounded),
    /// a tower service not ready under [`NodeHandle::serve_service`](crate::NodeHandle::serve_service))
    /// or by [`Request::shed`](crate::Request::shed). The core's `RpcStats::overloaded`.
    pub rpc_overloaded: u64,
    /// Servers this node ejected as outliers (a failed probe's new ejection included).
    pub outlier_ejections: u64,
    /// Ejections the `outlier_max_ejection_percent` cap refused.
    pub outlier_ejections_refused: u64,
    /// Ejected servers whose probe succeeded (restored).
    pub outlier_restored: u64,
    /// Ejected servers whose probe failed (ejected again at once).
    pub outlier_probes_failed: u64,
    /// Servers ejected now (gauge).
    pub outlier_ejected: u64,
}

/// Distinct method names the RPC metrics label by name (on each side: calls made, requests
/// served); later ones are counted under [`OTHER_METHOD`].
pub const MAX_METHOD_LABELS: usize = 32;
/// The `method` label of calls and requests past the first [`MAX_METHOD_LABELS`] methods.
pub const OTHER_METHOD: &str = "other";

/// The core's RPC counters exported as `switchboard_rpc_<name>_total` (`Metrics::rpc_stats`),
/// with their help text.
pub const RPC_STATS: [(&str, &str); 12] = [
    (
        "lookups",
        "Server selections made (each pick over a method's servers).",
    ),
    (
        "moved",
        "Calls whose queued request moved to another server when its server was found dead.",
    ),
    (
        "duplicate_requests",
        "Requests this server dropped as a repeat of one already handed on.",
    ),
    (
        "expired_requests",
        "Requests this server refused because their budget was spent on arrival.",
    ),
    (
        "not_served",
        "Requests this server refused because it does not serve their method.",
    ),
    (
        "late_replies",
        "Replies or refusals that arrived for no waiting call (late or duplicate).",
    ),
    (
        "dropped_replies",
        "Handler replies dropped because the request was cancelled or past its deadline.",
    ),
    ("bad_messages", "RPC messages that did not decode."),
    ("retries", "Call retries made after a backoff."),
    (
        "hedges",
        "Hedge requests sent for calls without a reply by their hedge delay.",
    ),
    (
        "budget_exhausted",
        "Retries and hedges not made for want of retry budget.",
    ),
    (
        "hedge_cancels",
        "Losing attempts of hedged calls withdrawn or cancelled when the other won.",
    ),
];

impl Metrics {
    /// Fills `rpc_stats` (and the RPC gauges and counters with a field of their own) from
    /// the core's `stats`.
    pub(crate) fn set_rpc_stats(&mut self, stats: &switchboard_core::rpc::RpcStats) {
        self.rpc_in_flight = stats.in_flight;
        self.rpc_grace_waits = stats.grace_waits;
        self.rpc_fast_fails = stats.fast_fails;
        self.rpc_budgets_capped = stats.budgets_capped;
        self.rpc_broadcasts = stats.broadcasts;
        self.rpc_overloaded = stats.overloaded;
        let values = [
            stats.lookups,
            stats.moved,
            stats.duplicate_requests,
            stats.expired_requests,
            stats.not_served,
            stats.late_replies,
            stats.dropped_replies,
            stats.bad_messages,
            stats.retries,
            stats.hedges,
            stats.budget_exhausted,
            stats.hedge_cancels,
        ];
        for ((name, _), value) in RPC_STATS.iter().zip(values) {
            self.rpc_stats.insert(name, value);
        }
    }

    /// Fills the `outlier_*` fields from the core's outlier `stats`.
    pub(crate) const fn set_outlier_stats(
        &mut self,
        stats: &switchboard_core::select::OutlierStats,
    ) {
        self.outlier_ejections = stats.ejections;
        self.outlier_ejections_refused = stats.ejections_refused;
        self.outlier_restored = stats.restored;
        self.outlier_probes_failed = stats.probes_failed;
        self.outlier_ejected = stats.ejected;
    }
}

/// Counters since start and current gauges of an embedded registry
/// ([`crate::registry::RegistryHandle::metrics`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RegistryMetrics {
    /// Listed nodes registered on a live connection now (gauge).
    pub nodes_live: u64,
    /// Listed nodes whose connection closed, inside disconnect protection now (gauge).
    pub nodes_protected: u64,
    /// Open client connections now, registered or not (gauge).
    pub connections: u64,
    /// Snapshots sent (one per registration).
    pub snapshots_sent: u64,
    /// Registrations refused because another incarnation holds the id.
    pub duplicate_ids: u64,
    /// Registrations refused, and updates rejected, because another node holds the name.
    pub names_taken: u64,
    /// Live connections taken over by a new incarnation that proved the holder's identity.
    pub takeovers: u64,
    /// Connections refused because they did not prove the cluster key (no proof, a bad or
    /// replayed one, an unknown key, or a frame before the proof), or whose handshake never
    /// completed (closed after the registry's proof — a client holding only a retired key —
    /// or timed out).
    pub unauthenticated: u64,
    /// The same refused handshakes by kind (`switchboard_registry_auth_refusals_total`).
    pub auth_refusals: switchboard_core::AuthRefusals,
    /// Registrations and updates refused for their size, and frames refused from their
    /// header for theirs.
    pub records_too_large: u64,
    /// Open connections that have not registered yet (gauge).
    pub unregistered: u64,
    /// Connections closed at once because `max_connections` were open.
    pub refused_at_max_connections: u64,
    /// Connections closed for `max_unregistered`: the oldest unregistered one, closed to make
    /// room for a new connection (or the new one, closed at once, when every place is a TLS
    /// handshake in flight).
    pub refused_at_max_unregistered: u64,
    /// `accept` errors (each pauses accepting; see the registry server's docs).
    pub accept_errors: u64,
    /// Nodes registered (first registrations, restores and takeovers; not watchers).
    pub registrations: u64,
    /// Nodes removed from the listing: their protection ran out, or they said goodbye.
    pub removals: u64,
    /// Connections closed because they did not register within the access timeout.
    pub access_timeouts: u64,
    /// Registered connections closed after the heartbeat timeout of silence.
    pub heartbeat_timeouts: u64,
    /// Connections closed for a protocol error.
    pub protocol_errors: u64,
    /// Open sessions now: connections that registered or watch (gauge).
    pub sessions: u64,
    /// Sessions opened (registrations and watches; each got a snapshot).
    pub sessions_opened: u64,
}

/// Upper bounds of the [`Histogram`] buckets, in nanoseconds (0.5 ms to 10 s; `+Inf` is
/// implied).
pub const LATENCY_BUCKETS_NANOS: [u64; 14] = [
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// A fixed-bucket histogram of durations ([`LATENCY_BUCKETS_NANOS`]), kept in whole
/// nanoseconds so it stays exact (and `Eq`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Histogram {
    /// Observations per bucket, not cumulative: `buckets[i]` counts the durations in
    /// `(LATENCY_BUCKETS_NANOS[i-1], LATENCY_BUCKETS_NANOS[i]]`; the last entry counts those
    /// above every bound.
    pub buckets: [u64; LATENCY_BUCKETS_NANOS.len() + 1],
    /// Observations.
    pub count: u64,
    /// Sum of the observed durations in nanoseconds (saturating).
    pub sum_nanos: u64,
}

impl Histogram {
    /// Counts one duration.
    pub fn observe(&mut self, duration: Duration) {
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let bucket = LATENCY_BUCKETS_NANOS.partition_point(|&bound| bound < nanos);
        self.buckets[bucket] += 1;
        self.count += 1;
        self.sum_nanos = self.sum_nanos.saturating_add(nanos);
    }
}

/// What a node's registry view holds now, published by the driver on a watch channel after
/// every registry event (see `NodeHandle::wait_for`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Known {
    /// Whether the registry backend reports the node registered.
    pub registered: bool,
    /// Whether the registry serves this node's own record marked leaving (it drains before a
    /// graceful exit: `NodeHandle::leave`).
    pub leaving: bool,
    /// Why the registry refused the node's registration, while it does (another live
    /// instance holds its id, or another node its name); `None` once it registers.
    pub conflict: Option<String>,
    /// Why the registry backend last said the registry is lost (its
    /// [`FeedEvent::Disconnected`](crate::registry::FeedEvent::Disconnected) reason: etcd's
    /// error, a failed dial), while the node is not registered; `None` once it registers.
    pub unavailable: Option<String>,
    /// The node's current upstream (0 = none), as its applied topology says.
    pub upstream: u64,
    /// Nodes in the discovery set, with their published listen addresses.
    pub discovery: BTreeMap<NodeId, Vec<String>>,
    /// Nodes with an applied topology record, with their upstream (`NodeId::NONE` = root).
    pub topology: BTreeMap<NodeId, NodeId>,
}

impl Known {
    /// Whether every id in `ids` has both a discovery and a topology record.
    #[must_use]
    pub fn knows_all(&self, ids: &[NodeId]) -> bool {
        ids.iter()
            .all(|id| self.discovery.contains_key(id) && self.topology.contains_key(id))
    }
}

/// Node ids in log lines: decimal, comma-separated (`501,502`), `none` for no list — the
/// one form every log line writes an id in (as the CLI flags take it).
pub(crate) struct DecimalIds<'a>(pub(crate) Option<&'a [NodeId]>);

impl std::fmt::Display for DecimalIds<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(ids) = self.0 else {
            return f.write_str("none");
        };
        for (i, id) in ids.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", id.0)?;
        }
        Ok(())
    }
}
