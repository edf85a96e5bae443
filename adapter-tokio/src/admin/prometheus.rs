//! [`Metrics`] (a node's) and [`RegistryMetrics`](crate::observe::RegistryMetrics) (a
//! registry's) as Prometheus text exposition format 0.0.4: one `# HELP` and one `# TYPE`
//! line per family, then its samples. Labelled families always list the labels a node can
//! produce (every outcome, refusal and link state, at 0 until counted), so a scrape of a
//! fresh node already shows every series, plus any other label the driver reported; the
//! exceptions are the RPC families labelled by `method`: methods are the application's, so
//! they list the series counted (and, for `switchboard_rpc_served_total`, every method served
//! now), at most [`MAX_METHOD_LABELS`](crate::observe::MAX_METHOD_LABELS) names plus `other`.
//! Both end with `switchboard_build_info`; the admin server appends the standard
//! `process_*` families ([`render_process`]) to either.
//!
//! The delivery latency and the call duration are histograms with fixed buckets
//! ([`LATENCY_BUCKETS_NANOS`](crate::observe::LATENCY_BUCKETS_NANOS)), counted in whole nanoseconds and printed as exact decimal
//! seconds, so the text is exact.

mod process;
mod registry;
mod text;

use std::collections::BTreeMap;

use switchboard_core::{
    node::SendError,
    outcome::{FailReason, Outcome},
};

pub use process::render_process;
pub use registry::render_registry;
use text::{
    header, histogram, histogram_samples, labelled, outcome_and_reason, sample, scalar, with_known,
};

use crate::observe::{Metrics, RPC_STATS};

/// The `Content-Type` of [`render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Every refusal, named in labels by [`SendError::as_str`].
const REFUSALS: [SendError; 5] = [
    SendError::InvalidTarget,
    SendError::UnknownTarget,
    SendError::NoRoute,
    SendError::PayloadTooLarge { len: 0, max: 0 },
    SendError::Shutdown,
];

/// Link states of `Metrics::links`.
const LINK_STATES: [&str; 3] = ["connecting", "handshaking", "up"];

/// Renders `metrics` as Prometheus text (see the module docs for the families).
#[must_use]
pub fn render(metrics: &Metrics) -> String {
    let mut out = String::with_capacity(4096);
    scalar(
        &mut out,
        "switchboard_sent_total",
        "counter",
        "Messages the node accepted for sending.",
        metrics.sent,
    );
    let refusals = REFUSALS.iter().map(|e| e.as_str().to_owned());
    labelled(
        &mut out,
        "switchboard_refused_total",
        "counter",
        "Sends the node refused, by reason.",
        "reason",
        &with_known(refusals, &metrics.refused),
    );
    let outcomes = std::iter::once("delivered".to_owned())
        .chain(FailReason::MESSAGE_REASONS.map(|r| Outcome::Failed(r).label()))
        .chain(FailReason::MESSAGE_REASONS.map(|r| Outcome::Unknown(r).label()));
    let outcomes = with_known(outcomes, &metrics.outcomes);
    let outcomes: BTreeMap<(&str, &str), u64> = outcomes
        .iter()
        .map(|(label, &count)| (outcome_and_reason(label), count))
        .collect();
    header(
        &mut out,
        "switchboard_messages_total",
        "counter",
        "Outcomes of accepted messages, with the reason of those not delivered (unknown = transmitted, not acknowledged).",
    );
    for ((outcome, reason), count) in outcomes {
        sample(
            &mut out,
            "switchboard_messages_total",
            &[("outcome", outcome), ("reason", reason)],
            count,
        );
    }
    histogram(
        &mut out,
        "switchboard_delivery_latency_seconds",
        "Time from an accepted send to its delivered outcome.",
        &metrics.delivery_latency,
    );
    scalar(
        &mut out,
        "switchboard_received_total",
        "counter",
        "Messages received for this node.",
        metrics.received,
    );
    scalar(
        &mut out,
        "switchboard_pending_messages",
        "gauge",
        "Messages queued in endpoints' pending queues.",
        metrics.pending,
    );
    scalar(
        &mut out,
        "switchboard_dials_total",
        "counter",
        "Dials to peers (first connects and reconnects).",
        metrics.dials,
    );
    scalar(
        &mut out,
        "switchboard_dial_failures_total",
        "counter",
        "Dials that failed.",
        metrics.dial_failures,
    );
    scalar(
        &mut out,
        "switchboard_ring_updates_total",
        "counter",
        "Consistent-hash ring updates applied.",
        metrics.ring_updates,
    );
    scalar(
        &mut out,
        "switchboard_select_bounded_spills_total",
        "counter",
        "Bounded-load picks that went past the key's ring owner because it was at the load bound.",
        metrics.select_bounded_spills,
    );
    scalar(
        &mut out,
        "switchboard_registry_events_total",
        "counter",
        "Registry events handled.",
        metrics.registry_events,
    );
    let states = LINK_STATES.iter().map(|s| (*s).to_owned());
    labelled(
        &mut out,
        "switchboard_links",
        "gauge",
        "Links by state.",
        "state",
        &with_known(states, &metrics.links),
    );
    scalar(
        &mut out,
        "switchboard_peer_restarts_total",
        "counter",
        "Peers seen restarting (a new incarnation).",
        metrics.peer_restarts,
    );
    let evidence = switchboard_core::Evidence::ALL
        .iter()
        .map(|e| e.as_str().to_owned());
    labelled(
        &mut out,
        "switchboard_peer_deaths_total",
        "counter",
        "Evidence of a peer incarnation's death, by what showed it.",
        "evidence",
        &with_known(evidence, &metrics.peer_deaths),
    );
    scalar(
        &mut out,
        "switchboard_forward_dropped_total",
        "counter",
        "Messages this node could not forward as a relay.",
        metrics.forward_dropped,
    );
    scalar(
        &mut out,
        "switchboard_registry_session_up",
        "gauge",
        "1 while the node is registered with its registry, 0 while the registry is lost.",
        metrics.registry_session_up,
    );
    let registry_counters = [
        (
            "switchboard_discovery_deletes_total",
            "Peers that left the discovery view.",
            metrics.discovery_deletes,
        ),
        (
            "switchboard_registrations_total",
            "Times the node was registered (first time and after every reconnect).",
            metrics.registrations,
        ),
        (
            "switchboard_registry_disconnects_total",
            "Times the registry was lost (failed dials included).",
            metrics.registry_disconnects,
        ),
        (
            "switchboard_registry_conflicts_total",
            "Registrations refused because another live instance holds the id or another node the name.",
            metrics.registry_conflicts,
        ),
        (
            "switchboard_links_rejected_total",
            "Links closed because of what the peer sent.",
            metrics.links_rejected,
        ),
        (
            "switchboard_handshake_timeouts_total",
            "Links closed because their handshake did not finish in time.",
            metrics.handshake_timeouts,
        ),
        (
            "switchboard_handshakes_refused_total",
            "Inbound connections closed for the pending-handshake cap (the oldest silent one makes room).",
            metrics.handshakes_refused,
        ),
        (
            "switchboard_inbox_dropped_total",
            "Received messages dropped because nobody reads the inbox.",
            metrics.inbox_dropped,
        ),
    ];
    for (name, help, value) in registry_counters {
        scalar(&mut out, name, "counter", help, value);
    }
    let kinds = switchboard_core::AuthFailure::ALL
        .iter()
        .map(|f| f.as_str().to_owned());
    labelled(
        &mut out,
        "switchboard_auth_refusals_total",
        "counter",
        "Links closed because the peer failed the cluster-key challenge, by kind.",
        "kind",
        &with_known(kinds, &metrics.auth_refusals),
    );
    rpc(&mut out, metrics);
    build_info(&mut out);
    out
}

/// The RPC families: calls by method, outcome and reason, their duration by method (only
/// what was counted: methods are the application's, bounded by
/// [`MAX_METHOD_LABELS`](crate::observe::MAX_METHOD_LABELS)), requests served by method
/// (every method served now), and the core's RPC counters.
fn rpc(out: &mut String, metrics: &Metrics) {
    header(
        out,
        "switchboard_rpc_calls_total",
        "counter",
        "Ended calls of this node by method, outcome (reply, failed = never executed, unknown = maybe executed) and reason (empty for a reply).",
    );
    for (method, by_label) in &metrics.rpc_calls {
        for (label, &count) in by_label {
            let (outcome, reason) = outcome_and_reason(label);
            sample(
                out,
                "switchboard_rpc_calls_total",
                &[("method", method), ("outcome", outcome), ("reason", reason)],
                count,
            );
        }
    }
    header(
        out,
        "switchboard_rpc_call_duration_seconds",
        "histogram",
        "Time from a call the node accepted to its outcome (every outcome), by method.",
    );
    for (method, histogram) in &metrics.rpc_call_duration {
        histogram_samples(
            out,
            "switchboard_rpc_call_duration_seconds",
            &[("method", method)],
            histogram,
        );
    }
    labelled(
        out,
        "switchboard_rpc_served_total",
        "counter",
        "Requests handed to this node's handlers, by method.",
        "method",
        &metrics.rpc_served,
    );
    let counters = [
        (
            "switchboard_rpc_in_flight",
            "gauge",
            "Calls of this node waiting for a server or a reply.",
            metrics.rpc_in_flight,
        ),
        (
            "switchboard_rpc_grace_waits_total",
            "counter",
            "Calls that waited for a server of their method to appear.",
            metrics.rpc_grace_waits,
        ),
        (
            "switchboard_rpc_fast_fails_total",
            "counter",
            "Calls ended early on evidence of their server's death.",
            metrics.rpc_fast_fails,
        ),
        (
            "switchboard_rpc_broadcasts_total",
            "counter",
            "Broadcasts this node started.",
            metrics.rpc_broadcasts,
        ),
        (
            "switchboard_rpc_budgets_capped_total",
            "counter",
            "Requests whose budget from the wire was cut to this server's max_call_budget.",
            metrics.rpc_budgets_capped,
        ),
        (
            "switchboard_rpc_overloaded_total",
            "counter",
            "Requests this server shed unexecuted at a concurrency limit (callers: Failed(Overloaded)).",
            metrics.rpc_overloaded,
        ),
        (
            "switchboard_outlier_ejections_total",
            "counter",
            "Servers this node ejected as outliers for failing its calls (failed probes included).",
            metrics.outlier_ejections,
        ),
        (
            "switchboard_outlier_ejections_refused_total",
            "counter",
            "Outlier ejections refused by the cap on a filter's share of ejected servers.",
            metrics.outlier_ejections_refused,
        ),
        (
            "switchboard_outlier_restored_total",
            "counter",
            "Ejected servers whose probe call succeeded (restored).",
            metrics.outlier_restored,
        ),
        (
            "switchboard_outlier_probes_failed_total",
            "counter",
            "Ejected servers whose probe call failed (ejected again at once, for longer).",
            metrics.outlier_probes_failed,
        ),
        (
            "switchboard_outlier_ejected",
            "gauge",
            "Servers ejected as outliers now.",
            metrics.outlier_ejected,
        ),
    ];
    for (name, kind, help, value) in counters {
        scalar(out, name, kind, help, value);
    }
    for (name, help) in RPC_STATS {
        let value = metrics.rpc_stats.get(name).copied().unwrap_or(0);
        scalar(
            out,
            &format!("switchboard_rpc_{name}_total"),
            "counter",
            help,
            value,
        );
    }
}

/// The commit this was built from (the build script's `git rev-parse --short HEAD`, or
/// `SWITCHBOARD_COMMIT` from the build environment), or `unknown` outside a git checkout.
pub const COMMIT: &str = env!("SWITCHBOARD_COMMIT");

/// The optional features compiled in, comma-separated.
pub const FEATURES: &str = if cfg!(feature = "etcd") {
    "admin,etcd"
} else {
    "admin"
};

/// `switchboard_build_info{version,commit,features} 1`.
pub(super) fn build_info(out: &mut String) {
    header(
        out,
        "switchboard_build_info",
        "gauge",
        "Version, commit and optional features of this build; always 1.",
    );
    sample(
        out,
        "switchboard_build_info",
        &[
            ("version", env!("CARGO_PKG_VERSION")),
            ("commit", COMMIT),
            ("features", FEATURES),
        ],
        1,
    );
}

#[cfg(test)]
mod tests;
