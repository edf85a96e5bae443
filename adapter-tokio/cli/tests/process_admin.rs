//! `/metrics` and `/status` of real `switchboard` nodes after a known load.
//!
//! One clean run of N messages to echo leaf A through the proxy; then A's counters and every
//! node's status must match the run exactly.

mod process_support;

use process_support::{
    cluster::SETTLE_TIMEOUT,
    http::{counter, counter_sum, parse_prometheus, parse_response},
    load::run_load,
    scenario::{KNOWN_NODES, LEAF_A_ID, LEAF_B_ID, PROXY_ID, ProxyCluster, RATE},
    wait_until,
};

const N: u64 = 1000;
const LOAD_ID: u64 = 930;

#[test]
fn process_admin() {
    let cluster = ProxyCluster::start();

    let summary = run_load(&cluster.load_to_a(LOAD_ID, N, RATE));
    summary.assert_all_delivered(N);

    // A received exactly what the load had delivered; nobody else received anything.
    let a_metrics = cluster.leaf_a.metrics();
    assert_eq!(
        counter(&a_metrics, "switchboard_received_total", &[]),
        Some(N),
        "A's received_total"
    );
    assert_eq!(cluster.leaf_b.received_total(), 0, "B received nothing");
    assert_eq!(cluster.proxy.received_total(), 0, "the proxy only relays");

    // A echoed each message once: N sends, and in the end N outcomes (the load's node acks
    // the echoes or leaves, which ends the rest with a reason).
    assert_eq!(
        counter(&a_metrics, "switchboard_sent_total", &[]),
        Some(N),
        "A's sent_total (one echo per message)"
    );
    let outcomes = wait_until(
        SETTLE_TIMEOUT,
        "A's echo outcomes to add up to N",
        || {
            let total = counter_sum(&cluster.leaf_a.metrics(), "switchboard_messages_total");
            (total == N).then_some(total)
        },
        || format!("{:?}", cluster.leaf_a.metrics()),
    );
    assert_eq!(outcomes, N);
    // Every delivered echo was timed once.
    let a_metrics = cluster.leaf_a.metrics();
    assert_eq!(
        counter(
            &a_metrics,
            "switchboard_delivery_latency_seconds_count",
            &[]
        ),
        counter(
            &a_metrics,
            "switchboard_messages_total",
            &[("outcome", "delivered")]
        ),
        "A's latency count is its deliveries"
    );

    // /status of A: itself, under the proxy, one up link it dialled to the proxy, nothing
    // queued for anyone.
    let a = cluster.leaf_a.wait_known(KNOWN_NODES);
    assert_eq!((a.id, a.name.as_str()), (LEAF_A_ID, "leaf-a"));
    assert_eq!(a.upstream, PROXY_ID);
    assert!(a.registered);
    assert_eq!(a.listen, format!("atcp://{}", cluster.leaf_a.listen));
    let a_links: Vec<_> = a
        .links
        .iter()
        .map(|l| (l.peer, l.state.as_str(), l.outbound))
        .collect();
    assert_eq!(a_links, [(Some(PROXY_ID), "up", true)], "A's links: {a:?}");
    // Was: one endpoint (the load's node, which A echoed to, drained) and two routes (the
    // proxy directly, the load's node through it). The load is a light client now (issue
    // 22): when it leaves, its endpoint and route go at once, and so does the passive
    // record of the proxy that route went through — the link to the proxy stays up.
    let a_endpoints: Vec<_> = a
        .endpoints
        .iter()
        .map(|e| (e.id, e.pending, e.unacked))
        .collect();
    assert_eq!(a_endpoints, [], "A's endpoints: {a:?}");
    let to_proxy = a.routes.iter().find(|r| r.target == PROXY_ID);
    assert_eq!(
        to_proxy.map(|r| (r.flags.clone(), r.proxy, r.retry_count)),
        None,
        "A's route to the proxy: {a:?}"
    );
    let to_load = a.routes.iter().find(|r| r.target == LOAD_ID);
    assert_eq!(
        to_load.map(|r| r.proxy),
        None,
        "A's route to the load: {a:?}"
    );
    assert_eq!(a.routes.len(), 0, "A's routes: {a:?}");

    // /status of the proxy: both leaves dialled it and are up; the load's node is gone.
    let proxy = wait_until(
        SETTLE_TIMEOUT,
        "the proxy to list exactly the two leaves' links",
        || {
            let status = cluster.proxy.try_status().ok()?;
            let mut links: Vec<_> = status
                .links
                .iter()
                .map(|l| (l.peer, l.state.clone(), l.outbound))
                .collect();
            links.sort();
            (links
                == [
                    (Some(LEAF_A_ID), "up".to_owned(), false),
                    (Some(LEAF_B_ID), "up".to_owned(), false),
                ])
            .then_some(status)
        },
        || format!("{:?}", cluster.proxy.try_status()),
    );
    assert_eq!(proxy.upstream, 0);
    assert_eq!(proxy.known_nodes, KNOWN_NODES);
}

/// The harness's Prometheus parser reads names, escaped label values and exact counts.
#[test]
fn harness_parses_prometheus_text() {
    let text = "# HELP x y\n# TYPE switchboard_messages_total counter\n\
        switchboard_messages_total{outcome=\"delivered\"} 12\n\
        switchboard_messages_total{node=\"a\\\"b\",outcome=\"failed\",reason=\"timeout\"} 3\n\
        switchboard_received_total 7\n";
    let samples = parse_prometheus(text);
    assert_eq!(samples.len(), 3);
    assert_eq!(
        counter(
            &samples,
            "switchboard_messages_total",
            &[("outcome", "delivered")]
        ),
        Some(12)
    );
    assert_eq!(samples[1].labels["node"], "a\"b");
    assert_eq!(
        counter(&samples, "switchboard_received_total", &[]),
        Some(7)
    );
    assert_eq!(counter_sum(&samples, "switchboard_messages_total"), 15);
    assert_eq!(counter(&samples, "nope", &[]), None);
}

/// The harness's HTTP client decodes a chunked body byte for byte.
#[test]
fn harness_decodes_a_chunked_body() {
    let raw =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    let response = parse_response(raw).expect("well-formed");
    assert_eq!(response.status, 200);
    assert_eq!(response.body, "abcde");
}

/// An admin endpoint on a non-loopback address without a token gets one warning line at the
/// start (issue 24 item 4); on loopback, none.
#[test]
fn an_open_admin_endpoint_without_a_token_is_warned_about() {
    use process_support::cluster::{ANY_PORT, NodeSpec, start_node, start_registry};
    const WARNING: &str =
        "the admin endpoint is reachable from other hosts and has no admin_token_file";
    let registry = start_registry("registry", ANY_PORT);
    let mut open = NodeSpec::new(941, "open-admin", registry.addr);
    open.admin = Some("0.0.0.0:0".to_owned());
    let open = start_node(open);
    let closed = start_node(NodeSpec::new(942, "loopback-admin", registry.addr));
    // Printed before the ready line, read from stderr by its own thread: waited for, bounded.
    wait_until(
        std::time::Duration::from_secs(5),
        "the warning",
        || open.proc.stderr_tail().contains(WARNING).then_some(()),
        || open.proc.diagnostics(),
    );
    assert_eq!(
        open.proc.stderr_tail().matches(WARNING).count(),
        1,
        "{}",
        open.proc.diagnostics()
    );
    assert!(
        !closed.proc.stderr_tail().contains(WARNING),
        "{}",
        closed.proc.diagnostics()
    );
}
