use std::{collections::BTreeMap, time::Duration};

use crate::observe::Histogram;

use super::{text::*, *};
use crate::observe::RegistryMetrics;

/// The text for a fresh node: every family, every known series, all 0. (Issue 24 labelled
/// the call duration and the served requests by `method`: a fresh node, having called and
/// served nothing, shows their headers only — it used to show one unlabelled series each.)
const FRESH_NODE_TEXT: &str = "# HELP switchboard_sent_total Messages the node accepted for sending.
# TYPE switchboard_sent_total counter
switchboard_sent_total 0
# HELP switchboard_refused_total Sends the node refused, by reason.
# TYPE switchboard_refused_total counter
switchboard_refused_total{reason=\"invalid_target\"} 0
switchboard_refused_total{reason=\"no_route\"} 0
switchboard_refused_total{reason=\"payload_too_large\"} 0
switchboard_refused_total{reason=\"shutdown\"} 0
switchboard_refused_total{reason=\"unknown_target\"} 0
# HELP switchboard_messages_total Outcomes of accepted messages, with the reason of those not delivered (unknown = transmitted, not acknowledged).
# TYPE switchboard_messages_total counter
switchboard_messages_total{outcome=\"delivered\",reason=\"\"} 0
switchboard_messages_total{outcome=\"failed\",reason=\"duplicate_id\"} 0
switchboard_messages_total{outcome=\"failed\",reason=\"no_route\"} 0
switchboard_messages_total{outcome=\"failed\",reason=\"queue_full\"} 0
switchboard_messages_total{outcome=\"failed\",reason=\"shutdown\"} 0
switchboard_messages_total{outcome=\"failed\",reason=\"stream_abandoned\"} 0
switchboard_messages_total{outcome=\"failed\",reason=\"target_gone\"} 0
switchboard_messages_total{outcome=\"failed\",reason=\"target_restarted\"} 0
switchboard_messages_total{outcome=\"failed\",reason=\"timeout\"} 0
switchboard_messages_total{outcome=\"failed\",reason=\"version_mismatch\"} 0
switchboard_messages_total{outcome=\"failed\",reason=\"wrong_cluster\"} 0
switchboard_messages_total{outcome=\"unknown\",reason=\"duplicate_id\"} 0
switchboard_messages_total{outcome=\"unknown\",reason=\"no_route\"} 0
switchboard_messages_total{outcome=\"unknown\",reason=\"queue_full\"} 0
switchboard_messages_total{outcome=\"unknown\",reason=\"shutdown\"} 0
switchboard_messages_total{outcome=\"unknown\",reason=\"stream_abandoned\"} 0
switchboard_messages_total{outcome=\"unknown\",reason=\"target_gone\"} 0
switchboard_messages_total{outcome=\"unknown\",reason=\"target_restarted\"} 0
switchboard_messages_total{outcome=\"unknown\",reason=\"timeout\"} 0
switchboard_messages_total{outcome=\"unknown\",reason=\"version_mismatch\"} 0
switchboard_messages_total{outcome=\"unknown\",reason=\"wrong_cluster\"} 0
# HELP switchboard_delivery_latency_seconds Time from an accepted send to its delivered outcome.
# TYPE switchboard_delivery_latency_seconds histogram
switchboard_delivery_latency_seconds_bucket{le=\"0.0005\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"0.001\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"0.0025\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"0.005\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"0.01\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"0.025\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"0.05\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"0.1\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"0.25\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"0.5\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"1\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"2.5\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"5\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"10\"} 0
switchboard_delivery_latency_seconds_bucket{le=\"+Inf\"} 0
switchboard_delivery_latency_seconds_sum 0
switchboard_delivery_latency_seconds_count 0
# HELP switchboard_received_total Messages received for this node.
# TYPE switchboard_received_total counter
switchboard_received_total 0
# HELP switchboard_pending_messages Messages queued in endpoints' pending queues.
# TYPE switchboard_pending_messages gauge
switchboard_pending_messages 0
# HELP switchboard_dials_total Dials to peers (first connects and reconnects).
# TYPE switchboard_dials_total counter
switchboard_dials_total 0
# HELP switchboard_dial_failures_total Dials that failed.
# TYPE switchboard_dial_failures_total counter
switchboard_dial_failures_total 0
# HELP switchboard_ring_updates_total Consistent-hash ring updates applied.
# TYPE switchboard_ring_updates_total counter
switchboard_ring_updates_total 0
# HELP switchboard_select_bounded_spills_total Bounded-load picks that went past the key's ring owner because it was at the load bound.
# TYPE switchboard_select_bounded_spills_total counter
switchboard_select_bounded_spills_total 0
# HELP switchboard_registry_events_total Registry events handled.
# TYPE switchboard_registry_events_total counter
switchboard_registry_events_total 0
# HELP switchboard_links Links by state.
# TYPE switchboard_links gauge
switchboard_links{state=\"connecting\"} 0
switchboard_links{state=\"handshaking\"} 0
switchboard_links{state=\"up\"} 0
# HELP switchboard_peer_restarts_total Peers seen restarting (a new incarnation).
# TYPE switchboard_peer_restarts_total counter
switchboard_peer_restarts_total 0
# HELP switchboard_peer_deaths_total Evidence of a peer incarnation's death, by what showed it.
# TYPE switchboard_peer_deaths_total counter
switchboard_peer_deaths_total{evidence=\"heartbeats_stopped\"} 0
switchboard_peer_deaths_total{evidence=\"new_incarnation\"} 0
switchboard_peer_deaths_total{evidence=\"redial_failed\"} 0
switchboard_peer_deaths_total{evidence=\"registry_deleted\"} 0
switchboard_peer_deaths_total{evidence=\"relay_notice\"} 0
# HELP switchboard_forward_dropped_total Messages this node could not forward as a relay.
# TYPE switchboard_forward_dropped_total counter
switchboard_forward_dropped_total 0
# HELP switchboard_registry_session_up 1 while the node is registered with its registry, 0 while the registry is lost.
# TYPE switchboard_registry_session_up gauge
switchboard_registry_session_up 0
# HELP switchboard_discovery_deletes_total Peers that left the discovery view.
# TYPE switchboard_discovery_deletes_total counter
switchboard_discovery_deletes_total 0
# HELP switchboard_registrations_total Times the node was registered (first time and after every reconnect).
# TYPE switchboard_registrations_total counter
switchboard_registrations_total 0
# HELP switchboard_registry_disconnects_total Times the registry was lost (failed dials included).
# TYPE switchboard_registry_disconnects_total counter
switchboard_registry_disconnects_total 0
# HELP switchboard_registry_conflicts_total Registrations refused because another live instance holds the id or another node the name.
# TYPE switchboard_registry_conflicts_total counter
switchboard_registry_conflicts_total 0
# HELP switchboard_links_rejected_total Links closed because of what the peer sent.
# TYPE switchboard_links_rejected_total counter
switchboard_links_rejected_total 0
# HELP switchboard_handshake_timeouts_total Links closed because their handshake did not finish in time.
# TYPE switchboard_handshake_timeouts_total counter
switchboard_handshake_timeouts_total 0
# HELP switchboard_handshakes_refused_total Inbound connections closed for the pending-handshake cap (the oldest silent one makes room).
# TYPE switchboard_handshakes_refused_total counter
switchboard_handshakes_refused_total 0
# HELP switchboard_inbox_dropped_total Received messages dropped because nobody reads the inbox.
# TYPE switchboard_inbox_dropped_total counter
switchboard_inbox_dropped_total 0
# HELP switchboard_auth_refusals_total Links closed because the peer failed the cluster-key challenge, by kind.
# TYPE switchboard_auth_refusals_total counter
switchboard_auth_refusals_total{kind=\"aborted\"} 0
switchboard_auth_refusals_total{kind=\"bad_proof\"} 0
switchboard_auth_refusals_total{kind=\"before_auth\"} 0
switchboard_auth_refusals_total{kind=\"no_proof\"} 0
switchboard_auth_refusals_total{kind=\"replay\"} 0
switchboard_auth_refusals_total{kind=\"timed_out\"} 0
switchboard_auth_refusals_total{kind=\"unknown_key\"} 0
# HELP switchboard_rpc_calls_total Ended calls of this node by method, outcome (reply, failed = never executed, unknown = maybe executed) and reason (empty for a reply).
# TYPE switchboard_rpc_calls_total counter
# HELP switchboard_rpc_call_duration_seconds Time from a call the node accepted to its outcome (every outcome), by method.
# TYPE switchboard_rpc_call_duration_seconds histogram
# HELP switchboard_rpc_served_total Requests handed to this node's handlers, by method.
# TYPE switchboard_rpc_served_total counter
# HELP switchboard_rpc_in_flight Calls of this node waiting for a server or a reply.
# TYPE switchboard_rpc_in_flight gauge
switchboard_rpc_in_flight 0
# HELP switchboard_rpc_grace_waits_total Calls that waited for a server of their method to appear.
# TYPE switchboard_rpc_grace_waits_total counter
switchboard_rpc_grace_waits_total 0
# HELP switchboard_rpc_fast_fails_total Calls ended early on evidence of their server's death.
# TYPE switchboard_rpc_fast_fails_total counter
switchboard_rpc_fast_fails_total 0
# HELP switchboard_rpc_broadcasts_total Broadcasts this node started.
# TYPE switchboard_rpc_broadcasts_total counter
switchboard_rpc_broadcasts_total 0
# HELP switchboard_rpc_budgets_capped_total Requests whose budget from the wire was cut to this server's max_call_budget.
# TYPE switchboard_rpc_budgets_capped_total counter
switchboard_rpc_budgets_capped_total 0
# HELP switchboard_rpc_overloaded_total Requests this server shed unexecuted at a concurrency limit (callers: Failed(Overloaded)).
# TYPE switchboard_rpc_overloaded_total counter
switchboard_rpc_overloaded_total 0
# HELP switchboard_outlier_ejections_total Servers this node ejected as outliers for failing its calls (failed probes included).
# TYPE switchboard_outlier_ejections_total counter
switchboard_outlier_ejections_total 0
# HELP switchboard_outlier_ejections_refused_total Outlier ejections refused by the cap on a filter's share of ejected servers.
# TYPE switchboard_outlier_ejections_refused_total counter
switchboard_outlier_ejections_refused_total 0
# HELP switchboard_outlier_restored_total Ejected servers whose probe call succeeded (restored).
# TYPE switchboard_outlier_restored_total counter
switchboard_outlier_restored_total 0
# HELP switchboard_outlier_probes_failed_total Ejected servers whose probe call failed (ejected again at once, for longer).
# TYPE switchboard_outlier_probes_failed_total counter
switchboard_outlier_probes_failed_total 0
# HELP switchboard_outlier_ejected Servers ejected as outliers now.
# TYPE switchboard_outlier_ejected gauge
switchboard_outlier_ejected 0
# HELP switchboard_rpc_lookups_total Server selections made (each pick over a method's servers).
# TYPE switchboard_rpc_lookups_total counter
switchboard_rpc_lookups_total 0
# HELP switchboard_rpc_moved_total Calls whose queued request moved to another server when its server was found dead.
# TYPE switchboard_rpc_moved_total counter
switchboard_rpc_moved_total 0
# HELP switchboard_rpc_duplicate_requests_total Requests this server dropped as a repeat of one already handed on.
# TYPE switchboard_rpc_duplicate_requests_total counter
switchboard_rpc_duplicate_requests_total 0
# HELP switchboard_rpc_expired_requests_total Requests this server refused because their budget was spent on arrival.
# TYPE switchboard_rpc_expired_requests_total counter
switchboard_rpc_expired_requests_total 0
# HELP switchboard_rpc_not_served_total Requests this server refused because it does not serve their method.
# TYPE switchboard_rpc_not_served_total counter
switchboard_rpc_not_served_total 0
# HELP switchboard_rpc_late_replies_total Replies or refusals that arrived for no waiting call (late or duplicate).
# TYPE switchboard_rpc_late_replies_total counter
switchboard_rpc_late_replies_total 0
# HELP switchboard_rpc_dropped_replies_total Handler replies dropped because the request was cancelled or past its deadline.
# TYPE switchboard_rpc_dropped_replies_total counter
switchboard_rpc_dropped_replies_total 0
# HELP switchboard_rpc_bad_messages_total RPC messages that did not decode.
# TYPE switchboard_rpc_bad_messages_total counter
switchboard_rpc_bad_messages_total 0
# HELP switchboard_rpc_retries_total Call retries made after a backoff.
# TYPE switchboard_rpc_retries_total counter
switchboard_rpc_retries_total 0
# HELP switchboard_rpc_hedges_total Hedge requests sent for calls without a reply by their hedge delay.
# TYPE switchboard_rpc_hedges_total counter
switchboard_rpc_hedges_total 0
# HELP switchboard_rpc_budget_exhausted_total Retries and hedges not made for want of retry budget.
# TYPE switchboard_rpc_budget_exhausted_total counter
switchboard_rpc_budget_exhausted_total 0
# HELP switchboard_rpc_hedge_cancels_total Losing attempts of hedged calls withdrawn or cancelled when the other won.
# TYPE switchboard_rpc_hedge_cancels_total counter
switchboard_rpc_hedge_cancels_total 0
# HELP switchboard_build_info Version, commit and optional features of this build; always 1.
# TYPE switchboard_build_info gauge
";

#[test]
fn a_fresh_node_shows_every_series_at_zero() {
    assert_eq!(
        render(&Metrics::default()),
        format!("{FRESH_NODE_TEXT}{}\n", build_info_sample())
    );
}

/// The build-info sample of this build.
fn build_info_sample() -> String {
    format!(
        "switchboard_build_info{{version=\"{}\",commit=\"{COMMIT}\",features=\"{FEATURES}\"}} 1",
        env!("CARGO_PKG_VERSION")
    )
}

#[test]
fn build_info_names_the_compiled_features() {
    let expected = if cfg!(feature = "etcd") {
        "admin,etcd"
    } else {
        "admin"
    };
    assert_eq!(FEATURES, expected);
    assert!(!COMMIT.is_empty());
}

#[test]
fn counted_values_replace_the_zeros_and_new_labels_are_added() {
    let metrics = Metrics {
        sent: 12,
        refused: BTreeMap::from([("unknown_target".to_owned(), 2)]),
        outcomes: BTreeMap::from([
            ("delivered".to_owned(), 10),
            ("failed_no_route".to_owned(), 1),
            ("unknown_timeout".to_owned(), 1),
        ]),
        received: 7,
        pending: 3,
        dials: 4,
        dial_failures: 1,
        ring_updates: 9,
        select_bounded_spills: 19,
        registry_events: 11,
        links: BTreeMap::from([("up".to_owned(), 2), ("draining".to_owned(), 1)]),
        peer_restarts: 1,
        peer_deaths: BTreeMap::from([("redial_failed".to_owned(), 2)]),
        forward_dropped: 5,
        discovery_deletes: 6,
        registrations: 2,
        registry_disconnects: 1,
        registry_session_up: 1,
        registry_conflicts: 0,
        links_rejected: 3,
        auth_refusals: BTreeMap::from([("replay".to_owned(), 1)]),
        handshake_timeouts: 8,
        handshakes_refused: 13,
        inbox_dropped: 4,
        delivery_latency: latencies(&[
            Duration::from_micros(300),
            Duration::from_micros(500),
            Duration::from_micros(501),
            Duration::from_millis(40),
            Duration::from_millis(40),
            Duration::from_secs(3),
            Duration::from_secs(11),
        ]),
        rpc_calls: BTreeMap::from([
            (
                "echo".to_owned(),
                BTreeMap::from([
                    ("reply".to_owned(), 5),
                    ("failed_not_available".to_owned(), 2),
                ]),
            ),
            (
                "sleep".to_owned(),
                BTreeMap::from([("unknown_target_gone".to_owned(), 1)]),
            ),
        ]),
        rpc_call_duration: BTreeMap::from([
            (
                "echo".to_owned(),
                latencies(&[Duration::from_millis(2), Duration::from_secs(15)]),
            ),
            ("other".to_owned(), latencies(&[Duration::from_micros(700)])),
        ]),
        rpc_served: BTreeMap::from([("echo".to_owned(), 21), ("other".to_owned(), 2)]),
        rpc_in_flight: 3,
        rpc_grace_waits: 2,
        rpc_fast_fails: 1,
        rpc_broadcasts: 4,
        rpc_budgets_capped: 5,
        rpc_stats: RPC_STATS
            .iter()
            .zip(11..)
            .map(|((name, _), value)| (*name, value))
            .collect(),
        rpc_overloaded: 6,
        outlier_ejections: 7,
        outlier_ejections_refused: 8,
        outlier_restored: 9,
        outlier_probes_failed: 10,
        outlier_ejected: 1,
    };
    let text = render(&metrics);
    let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        samples,
        vec![
            "switchboard_sent_total 12",
            "switchboard_refused_total{reason=\"invalid_target\"} 0",
            "switchboard_refused_total{reason=\"no_route\"} 0",
            "switchboard_refused_total{reason=\"payload_too_large\"} 0",
            "switchboard_refused_total{reason=\"shutdown\"} 0",
            "switchboard_refused_total{reason=\"unknown_target\"} 2",
            "switchboard_messages_total{outcome=\"delivered\",reason=\"\"} 10",
            "switchboard_messages_total{outcome=\"failed\",reason=\"duplicate_id\"} 0",
            "switchboard_messages_total{outcome=\"failed\",reason=\"no_route\"} 1",
            "switchboard_messages_total{outcome=\"failed\",reason=\"queue_full\"} 0",
            "switchboard_messages_total{outcome=\"failed\",reason=\"shutdown\"} 0",
            "switchboard_messages_total{outcome=\"failed\",reason=\"stream_abandoned\"} 0",
            "switchboard_messages_total{outcome=\"failed\",reason=\"target_gone\"} 0",
            "switchboard_messages_total{outcome=\"failed\",reason=\"target_restarted\"} 0",
            "switchboard_messages_total{outcome=\"failed\",reason=\"timeout\"} 0",
            "switchboard_messages_total{outcome=\"failed\",reason=\"version_mismatch\"} 0",
            "switchboard_messages_total{outcome=\"failed\",reason=\"wrong_cluster\"} 0",
            "switchboard_messages_total{outcome=\"unknown\",reason=\"duplicate_id\"} 0",
            "switchboard_messages_total{outcome=\"unknown\",reason=\"no_route\"} 0",
            "switchboard_messages_total{outcome=\"unknown\",reason=\"queue_full\"} 0",
            "switchboard_messages_total{outcome=\"unknown\",reason=\"shutdown\"} 0",
            "switchboard_messages_total{outcome=\"unknown\",reason=\"stream_abandoned\"} 0",
            "switchboard_messages_total{outcome=\"unknown\",reason=\"target_gone\"} 0",
            "switchboard_messages_total{outcome=\"unknown\",reason=\"target_restarted\"} 0",
            "switchboard_messages_total{outcome=\"unknown\",reason=\"timeout\"} 1",
            "switchboard_messages_total{outcome=\"unknown\",reason=\"version_mismatch\"} 0",
            "switchboard_messages_total{outcome=\"unknown\",reason=\"wrong_cluster\"} 0",
            "switchboard_delivery_latency_seconds_bucket{le=\"0.0005\"} 2",
            "switchboard_delivery_latency_seconds_bucket{le=\"0.001\"} 3",
            "switchboard_delivery_latency_seconds_bucket{le=\"0.0025\"} 3",
            "switchboard_delivery_latency_seconds_bucket{le=\"0.005\"} 3",
            "switchboard_delivery_latency_seconds_bucket{le=\"0.01\"} 3",
            "switchboard_delivery_latency_seconds_bucket{le=\"0.025\"} 3",
            "switchboard_delivery_latency_seconds_bucket{le=\"0.05\"} 5",
            "switchboard_delivery_latency_seconds_bucket{le=\"0.1\"} 5",
            "switchboard_delivery_latency_seconds_bucket{le=\"0.25\"} 5",
            "switchboard_delivery_latency_seconds_bucket{le=\"0.5\"} 5",
            "switchboard_delivery_latency_seconds_bucket{le=\"1\"} 5",
            "switchboard_delivery_latency_seconds_bucket{le=\"2.5\"} 5",
            "switchboard_delivery_latency_seconds_bucket{le=\"5\"} 6",
            "switchboard_delivery_latency_seconds_bucket{le=\"10\"} 6",
            "switchboard_delivery_latency_seconds_bucket{le=\"+Inf\"} 7",
            "switchboard_delivery_latency_seconds_sum 14.081301",
            "switchboard_delivery_latency_seconds_count 7",
            "switchboard_received_total 7",
            "switchboard_pending_messages 3",
            "switchboard_dials_total 4",
            "switchboard_dial_failures_total 1",
            "switchboard_ring_updates_total 9",
            "switchboard_select_bounded_spills_total 19",
            "switchboard_registry_events_total 11",
            "switchboard_links{state=\"connecting\"} 0",
            "switchboard_links{state=\"draining\"} 1",
            "switchboard_links{state=\"handshaking\"} 0",
            "switchboard_links{state=\"up\"} 2",
            "switchboard_peer_restarts_total 1",
            "switchboard_peer_deaths_total{evidence=\"heartbeats_stopped\"} 0",
            "switchboard_peer_deaths_total{evidence=\"new_incarnation\"} 0",
            "switchboard_peer_deaths_total{evidence=\"redial_failed\"} 2",
            "switchboard_peer_deaths_total{evidence=\"registry_deleted\"} 0",
            "switchboard_peer_deaths_total{evidence=\"relay_notice\"} 0",
            "switchboard_forward_dropped_total 5",
            "switchboard_registry_session_up 1",
            "switchboard_discovery_deletes_total 6",
            "switchboard_registrations_total 2",
            "switchboard_registry_disconnects_total 1",
            "switchboard_registry_conflicts_total 0",
            "switchboard_links_rejected_total 3",
            "switchboard_handshake_timeouts_total 8",
            "switchboard_handshakes_refused_total 13",
            "switchboard_inbox_dropped_total 4",
            "switchboard_auth_refusals_total{kind=\"aborted\"} 0",
            "switchboard_auth_refusals_total{kind=\"bad_proof\"} 0",
            "switchboard_auth_refusals_total{kind=\"before_auth\"} 0",
            "switchboard_auth_refusals_total{kind=\"no_proof\"} 0",
            "switchboard_auth_refusals_total{kind=\"replay\"} 1",
            "switchboard_auth_refusals_total{kind=\"timed_out\"} 0",
            "switchboard_auth_refusals_total{kind=\"unknown_key\"} 0",
            "switchboard_rpc_calls_total{method=\"echo\",outcome=\"failed\",reason=\"not_available\"} 2",
            "switchboard_rpc_calls_total{method=\"echo\",outcome=\"reply\",reason=\"\"} 5",
            "switchboard_rpc_calls_total{method=\"sleep\",outcome=\"unknown\",reason=\"target_gone\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"0.0005\"} 0",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"0.001\"} 0",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"0.0025\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"0.005\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"0.01\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"0.025\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"0.05\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"0.1\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"0.25\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"0.5\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"1\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"2.5\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"5\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"10\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"echo\",le=\"+Inf\"} 2",
            "switchboard_rpc_call_duration_seconds_sum{method=\"echo\"} 15.002",
            "switchboard_rpc_call_duration_seconds_count{method=\"echo\"} 2",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"0.0005\"} 0",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"0.001\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"0.0025\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"0.005\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"0.01\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"0.025\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"0.05\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"0.1\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"0.25\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"0.5\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"1\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"2.5\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"5\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"10\"} 1",
            "switchboard_rpc_call_duration_seconds_bucket{method=\"other\",le=\"+Inf\"} 1",
            "switchboard_rpc_call_duration_seconds_sum{method=\"other\"} 0.0007",
            "switchboard_rpc_call_duration_seconds_count{method=\"other\"} 1",
            "switchboard_rpc_served_total{method=\"echo\"} 21",
            "switchboard_rpc_served_total{method=\"other\"} 2",
            "switchboard_rpc_in_flight 3",
            "switchboard_rpc_grace_waits_total 2",
            "switchboard_rpc_fast_fails_total 1",
            "switchboard_rpc_broadcasts_total 4",
            "switchboard_rpc_budgets_capped_total 5",
            "switchboard_rpc_overloaded_total 6",
            "switchboard_outlier_ejections_total 7",
            "switchboard_outlier_ejections_refused_total 8",
            "switchboard_outlier_restored_total 9",
            "switchboard_outlier_probes_failed_total 10",
            "switchboard_outlier_ejected 1",
            "switchboard_rpc_lookups_total 11",
            "switchboard_rpc_moved_total 12",
            "switchboard_rpc_duplicate_requests_total 13",
            "switchboard_rpc_expired_requests_total 14",
            "switchboard_rpc_not_served_total 15",
            "switchboard_rpc_late_replies_total 16",
            "switchboard_rpc_dropped_replies_total 17",
            "switchboard_rpc_bad_messages_total 18",
            // Added (issue 26): retries, hedges and the retry budget.
            "switchboard_rpc_retries_total 19",
            "switchboard_rpc_hedges_total 20",
            "switchboard_rpc_budget_exhausted_total 21",
            "switchboard_rpc_hedge_cancels_total 22",
            &build_info_sample(),
        ]
    );
}

#[test]
fn label_values_are_escaped() {
    assert_eq!(escape_label_value(r#"a"b\c"#), r#"a\"b\\c"#);
    assert_eq!(escape_label_value("line\nbreak"), "line\\nbreak");
    let metrics = Metrics {
        outcomes: BTreeMap::from([("we\"ird".to_owned(), 1)]),
        ..Metrics::default()
    };
    assert!(
        render(&metrics)
            .contains("switchboard_messages_total{outcome=\"we\\\"ird\",reason=\"\"} 1\n"),
        "escaped sample present"
    );
}

fn latencies(durations: &[Duration]) -> Histogram {
    let mut histogram = Histogram::default();
    for &duration in durations {
        histogram.observe(duration);
    }
    histogram
}

#[test]
fn seconds_are_exact_decimals() {
    assert_eq!(seconds(0), "0");
    assert_eq!(seconds(500_000), "0.0005");
    assert_eq!(seconds(2_500_000_000), "2.5");
    assert_eq!(seconds(10_000_000_000), "10");
    assert_eq!(seconds(1), "0.000000001");
}

#[test]
fn outcome_labels_split_into_outcome_and_reason() {
    assert_eq!(outcome_and_reason("delivered"), ("delivered", ""));
    assert_eq!(
        outcome_and_reason("failed_no_route"),
        ("failed", "no_route")
    );
    assert_eq!(
        outcome_and_reason("unknown_timeout"),
        ("unknown", "timeout")
    );
    assert_eq!(outcome_and_reason("failedx"), ("failedx", ""));
}

#[test]
fn a_registry_shows_its_nodes_connections_sessions_refusals_expiries_and_takeovers() {
    let metrics = RegistryMetrics {
        nodes_live: 3,
        nodes_protected: 1,
        connections: 4,
        snapshots_sent: 6,
        duplicate_ids: 2,
        names_taken: 1,
        takeovers: 5,
        unauthenticated: 3,
        auth_refusals: switchboard_core::AuthRefusals {
            aborted: 2,
            unknown_key: 1,
            ..switchboard_core::AuthRefusals::default()
        },
        records_too_large: 7,
        unregistered: 2,
        refused_at_max_connections: 8,
        refused_at_max_unregistered: 9,
        accept_errors: 10,
        registrations: 11,
        removals: 12,
        access_timeouts: 13,
        heartbeat_timeouts: 14,
        protocol_errors: 15,
        sessions: 16,
        sessions_opened: 17,
    };
    let expected = format!(
        "# HELP switchboard_registry_nodes Listed nodes: registered on a live connection, or disconnected and protected.
# TYPE switchboard_registry_nodes gauge
switchboard_registry_nodes{{state=\"live\"}} 3
switchboard_registry_nodes{{state=\"protected\"}} 1
# HELP switchboard_registry_connections Open client connections (registered or not yet).
# TYPE switchboard_registry_connections gauge
switchboard_registry_connections 4
# HELP switchboard_registry_unregistered_connections Open client connections that have not registered yet.
# TYPE switchboard_registry_unregistered_connections gauge
switchboard_registry_unregistered_connections 2
# HELP switchboard_registry_connections_refused_total Connections closed at once because a connection cap was reached, by cap.
# TYPE switchboard_registry_connections_refused_total counter
switchboard_registry_connections_refused_total{{cap=\"max_connections\"}} 8
switchboard_registry_connections_refused_total{{cap=\"max_unregistered\"}} 9
# HELP switchboard_registry_accept_errors_total Errors accepting a connection (each pauses accepting briefly).
# TYPE switchboard_registry_accept_errors_total counter
switchboard_registry_accept_errors_total 10
# HELP switchboard_registry_snapshots_sent_total Snapshots sent (one per registration).
# TYPE switchboard_registry_snapshots_sent_total counter
switchboard_registry_snapshots_sent_total 6
# HELP switchboard_registry_refusals_total Registrations (and name updates) refused, records or frames too large, and connections that did not prove the cluster key, by kind.
# TYPE switchboard_registry_refusals_total counter
switchboard_registry_refusals_total{{kind=\"duplicate_id\"}} 2
switchboard_registry_refusals_total{{kind=\"name_taken\"}} 1
switchboard_registry_refusals_total{{kind=\"record_too_large\"}} 7
switchboard_registry_refusals_total{{kind=\"unauthenticated\"}} 3
# HELP switchboard_registry_auth_refusals_total Connections whose cluster-key handshake did not complete, by kind (their sum is the unauthenticated refusals).
# TYPE switchboard_registry_auth_refusals_total counter
switchboard_registry_auth_refusals_total{{kind=\"aborted\"}} 2
switchboard_registry_auth_refusals_total{{kind=\"bad_proof\"}} 0
switchboard_registry_auth_refusals_total{{kind=\"before_auth\"}} 0
switchboard_registry_auth_refusals_total{{kind=\"no_proof\"}} 0
switchboard_registry_auth_refusals_total{{kind=\"replay\"}} 0
switchboard_registry_auth_refusals_total{{kind=\"timed_out\"}} 0
switchboard_registry_auth_refusals_total{{kind=\"unknown_key\"}} 1
# HELP switchboard_registry_takeovers_total Live connections replaced by a new incarnation that proved the holder's identity.
# TYPE switchboard_registry_takeovers_total counter
switchboard_registry_takeovers_total 5
# HELP switchboard_registry_registrations_total Nodes registered (first registrations, restores after a reconnect, takeovers).
# TYPE switchboard_registry_registrations_total counter
switchboard_registry_registrations_total 11
# HELP switchboard_registry_removals_total Nodes removed from the listing (their protection ran out, or they said goodbye).
# TYPE switchboard_registry_removals_total counter
switchboard_registry_removals_total 12
# HELP switchboard_registry_expiries_total Connections closed when a timer expired: access (not registered in time) or heartbeat (a registered node fell silent).
# TYPE switchboard_registry_expiries_total counter
switchboard_registry_expiries_total{{timer=\"access\"}} 13
switchboard_registry_expiries_total{{timer=\"heartbeat\"}} 14
# HELP switchboard_registry_protocol_errors_total Connections closed for a protocol error.
# TYPE switchboard_registry_protocol_errors_total counter
switchboard_registry_protocol_errors_total 15
# HELP switchboard_registry_sessions Open sessions: connections that registered or watch.
# TYPE switchboard_registry_sessions gauge
switchboard_registry_sessions 16
# HELP switchboard_registry_sessions_opened_total Sessions opened (registrations and watches).
# TYPE switchboard_registry_sessions_opened_total counter
switchboard_registry_sessions_opened_total 17
# HELP switchboard_build_info Version, commit and optional features of this build; always 1.
# TYPE switchboard_build_info gauge
{}
",
        build_info_sample()
    );
    assert_eq!(render_registry(&metrics), expected);
}
