//! A registry's [`RegistryMetrics`] as Prometheus text.

use std::collections::BTreeMap;

use super::{
    build_info,
    text::{labelled, scalar},
};
use crate::observe::RegistryMetrics;

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
    let lives = [
        (
            "switchboard_registry_takeovers_total",
            "Live connections replaced by a new incarnation that proved the holder's identity.",
            metrics.takeovers,
        ),
        (
            "switchboard_registry_registrations_total",
            "Nodes registered (first registrations, restores after a reconnect, takeovers).",
            metrics.registrations,
        ),
        (
            "switchboard_registry_removals_total",
            "Nodes removed from the listing (their protection ran out, or they said goodbye).",
            metrics.removals,
        ),
    ];
    for (name, help, value) in lives {
        scalar(&mut out, name, "counter", help, value);
    }
    let timers = BTreeMap::from([
        ("access".to_owned(), metrics.access_timeouts),
        ("heartbeat".to_owned(), metrics.heartbeat_timeouts),
    ]);
    labelled(
        &mut out,
        "switchboard_registry_expiries_total",
        "counter",
        "Connections closed when a timer expired: access (not registered in time) or heartbeat (a registered node fell silent).",
        "timer",
        &timers,
    );
    let sessions = [
        (
            "switchboard_registry_protocol_errors_total",
            "counter",
            "Connections closed for a protocol error.",
            metrics.protocol_errors,
        ),
        (
            "switchboard_registry_sessions",
            "gauge",
            "Open sessions: connections that registered or watch.",
            metrics.sessions,
        ),
        (
            "switchboard_registry_sessions_opened_total",
            "counter",
            "Sessions opened (registrations and watches).",
            metrics.sessions_opened,
        ),
    ];
    for (name, kind, help, value) in sessions {
        scalar(&mut out, name, kind, help, value);
    }
    build_info(&mut out);
    out
}
