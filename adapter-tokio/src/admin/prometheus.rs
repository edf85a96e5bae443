//! [`Metrics`] as Prometheus text exposition format 0.0.4: one `# HELP` and one `# TYPE` line
//! per family, then its samples. Labelled families always list the labels a node can produce
//! (every outcome, refusal and link state, at 0 until counted), so a scrape of a fresh node
//! already shows every series, plus any other label the driver reported.

use std::{collections::BTreeMap, fmt::Write as _};

use switchboard_core::{
    node::SendError,
    outcome::{FailReason, Outcome},
};

use crate::observe::Metrics;

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
        .chain(FailReason::ALL.map(|r| Outcome::Failed(r).label()))
        .chain(FailReason::ALL.map(|r| Outcome::Unknown(r).label()));
    labelled(
        &mut out,
        "switchboard_messages_total",
        "counter",
        "Outcomes of accepted messages (unknown_* = transmitted, not acknowledged).",
        "outcome",
        &with_known(outcomes, &metrics.outcomes),
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
            "Inbound connections closed at once: too many handshakes pending.",
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
    out
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
        let _ = writeln!(
            out,
            "{name}{{{label}=\"{}\"}} {value}",
            escape_label_value(value_label)
        );
    }
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
