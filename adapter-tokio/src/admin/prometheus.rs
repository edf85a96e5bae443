//! [`Metrics`] (a node's) and [`RegistryMetrics`] (a registry's) as Prometheus text
//! exposition format 0.0.4: one `# HELP` and one `# TYPE` line per family, then its samples.
//! Labelled families always list the labels a node can produce (every outcome, refusal and
//! link state, at 0 until counted), so a scrape of a fresh node already shows every series,
//! plus any other label the driver reported; the exception is `switchboard_rpc_calls_total`,
//! whose `method` label is the application's, so it lists only the series counted. Both end
//! with `switchboard_build_info`.
//!
//! The delivery latency and the call duration are histograms with fixed buckets
//! ([`LATENCY_BUCKETS_NANOS`]), counted in whole nanoseconds and printed as exact decimal
//! seconds, so the text is exact.

use std::{collections::BTreeMap, fmt::Write as _};

use switchboard_core::{
    node::SendError,
    outcome::{FailReason, Outcome},
};

use crate::observe::{Histogram, LATENCY_BUCKETS_NANOS, Metrics, RegistryMetrics};

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

/// The RPC families: calls by method, outcome and reason (only what was counted: methods are
/// the application's), their duration, and the core's RPC counters.
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
    histogram(
        out,
        "switchboard_rpc_call_duration_seconds",
        "Time from a call the node accepted to its outcome (every outcome).",
        &metrics.rpc_call_duration,
    );
    let counters = [
        (
            "switchboard_rpc_served_total",
            "counter",
            "Requests handed to this node's handlers.",
            metrics.rpc_served,
        ),
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
    ];
    for (name, kind, help, value) in counters {
        scalar(out, name, kind, help, value);
    }
}

/// Renders a registry's `metrics` as Prometheus text.
#[must_use]
pub fn render_registry(metrics: &RegistryMetrics) -> String {
    let mut out = String::with_capacity(1024);
    let nodes = BTreeMap::from([
        ("live".to_owned(), metrics.nodes_live),
        ("protected".to_owned(), metrics.nodes_protected),
    ]);
    labelled(
        &mut out,
        "switchboard_registry_nodes",
        "gauge",
        "Listed nodes: registered on a live connection, or disconnected and protected.",
        "state",
        &nodes,
    );
    scalar(
        &mut out,
        "switchboard_registry_connections",
        "gauge",
        "Open client connections (registered or not yet).",
        metrics.connections,
    );
    scalar(
        &mut out,
        "switchboard_registry_unregistered_connections",
        "gauge",
        "Open client connections that have not registered yet.",
        metrics.unregistered,
    );
    let caps = BTreeMap::from([
        (
            "max_connections".to_owned(),
            metrics.refused_at_max_connections,
        ),
        (
            "max_unregistered".to_owned(),
            metrics.refused_at_max_unregistered,
        ),
    ]);
    labelled(
        &mut out,
        "switchboard_registry_connections_refused_total",
        "counter",
        "Connections closed at once because a connection cap was reached, by cap.",
        "cap",
        &caps,
    );
    scalar(
        &mut out,
        "switchboard_registry_accept_errors_total",
        "counter",
        "Errors accepting a connection (each pauses accepting briefly).",
        metrics.accept_errors,
    );
    scalar(
        &mut out,
        "switchboard_registry_snapshots_sent_total",
        "counter",
        "Snapshots sent (one per registration).",
        metrics.snapshots_sent,
    );
    let refusals = BTreeMap::from([
        ("duplicate_id".to_owned(), metrics.duplicate_ids),
        ("name_taken".to_owned(), metrics.names_taken),
        ("record_too_large".to_owned(), metrics.records_too_large),
        ("unauthenticated".to_owned(), metrics.unauthenticated),
    ]);
    labelled(
        &mut out,
        "switchboard_registry_refusals_total",
        "counter",
        "Registrations (and name updates) refused, records or frames too large, and connections that did not prove the cluster key, by kind.",
        "kind",
        &refusals,
    );
    let auth: BTreeMap<String, u64> = switchboard_core::AuthFailure::ALL
        .iter()
        .map(|&f| (f.as_str().to_owned(), metrics.auth_refusals.of(f)))
        .collect();
    labelled(
        &mut out,
        "switchboard_registry_auth_refusals_total",
        "counter",
        "Connections whose cluster-key handshake did not complete, by kind (their sum is the unauthenticated refusals).",
        "kind",
        &auth,
    );
    scalar(
        &mut out,
        "switchboard_registry_takeovers_total",
        "counter",
        "Live connections replaced by a new incarnation that proved the holder's identity.",
        metrics.takeovers,
    );
    build_info(&mut out);
    out
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
fn build_info(out: &mut String) {
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

/// An outcome label (`delivered`, `failed_no_route`, ...) as its `outcome` and `reason`
/// labels (`("delivered", "")`, `("failed", "no_route")`).
fn outcome_and_reason(label: &str) -> (&str, &str) {
    ["failed", "unknown"]
        .into_iter()
        .find_map(|kind| {
            let reason = label.strip_prefix(kind)?.strip_prefix('_')?;
            Some((kind, reason))
        })
        .unwrap_or((label, ""))
}

/// A histogram family: cumulative `_bucket` samples, `_sum` in seconds and `_count`.
fn histogram(out: &mut String, name: &str, help: &str, histogram: &Histogram) {
    header(out, name, "histogram", help);
    let bucket = format!("{name}_bucket");
    let mut cumulative = 0;
    for (i, count) in histogram.buckets.iter().enumerate() {
        cumulative += count;
        let le = LATENCY_BUCKETS_NANOS
            .get(i)
            .map_or_else(|| "+Inf".to_owned(), |&bound| seconds(bound));
        sample(out, &bucket, &[("le", &le)], cumulative);
    }
    let _ = writeln!(out, "{name}_sum {}", seconds(histogram.sum_nanos));
    let _ = writeln!(out, "{name}_count {}", histogram.count);
}

/// `nanos` as exact decimal seconds without trailing zeros (`0.0025`, `1`, `2.5`).
fn seconds(nanos: u64) -> String {
    let (whole, fraction) = (nanos / 1_000_000_000, nanos % 1_000_000_000);
    if fraction == 0 {
        return whole.to_string();
    }
    let fraction = format!("{fraction:09}");
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

/// `known` labels at 0, overlaid with the reported `values` (which may add labels).
fn with_known(
    known: impl Iterator<Item = String>,
    values: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    let mut all: BTreeMap<String, u64> = known.map(|label| (label, 0)).collect();
    all.extend(values.iter().map(|(k, v)| (k.clone(), *v)));
    all
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    // Writing to a String cannot fail.
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn scalar(out: &mut String, name: &str, kind: &str, help: &str, value: u64) {
    header(out, name, kind, help);
    let _ = writeln!(out, "{name} {value}");
}

fn labelled(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    label: &str,
    values: &BTreeMap<String, u64>,
) {
    header(out, name, kind, help);
    for (value_label, value) in values {
        sample(out, name, &[(label, value_label)], *value);
    }
}

/// One sample line with `labels` (names as given, values escaped).
fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: u64) {
    out.push_str(name);
    out.push('{');
    for (i, (label, label_value)) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{label}=\"{}\"", escape_label_value(label_value));
    }
    let _ = writeln!(out, "}} {value}");
}

/// Escapes a label value: backslash, double quote and line feed.
fn escape_label_value(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            other => escaped.push(other),
        }
    }
    escaped
}

#[cfg(test)]
mod tests;
