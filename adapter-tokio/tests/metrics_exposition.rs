//! Every exporter's `/metrics` text is valid Prometheus text exposition: a node's and an
//! embedded registry's, scraped from real admin servers on loopback after real calls, and
//! the renderers fed every label they can carry. Each is read by the `prometheus-parse`
//! crate and checked line by line: no line the parser ignores, one `# HELP` and one
//! `# TYPE` per family (no family twice), every sample after its family's header and typed
//! as declared, histograms with every bucket, `_sum` and `_count`.

#![cfg(feature = "admin")]

mod support;

use std::{
    collections::{BTreeMap, BTreeSet},
    net::SocketAddr,
    time::Duration,
};

use bytes::Bytes;
use prometheus_parse::{LineInfo, SampleType, Scrape, Value};
use support::{direct, init_logs, scrape, start, start_registry, wait_known, within};
use switchboard_core::{CallOutcome, CallSpec};
use switchboard_tokio::{
    admin::{AdminServer, process::ProcessMetrics, prometheus},
    observe::{Histogram, LATENCY_BUCKETS_NANOS, Metrics, RPC_STATS, RegistryMetrics},
};

/// Checks `text` as described in the module docs; returns the families by name with
/// their declared type.
fn assert_valid(text: &str) -> BTreeMap<String, SampleType> {
    let mut helps = BTreeSet::new();
    let mut families: BTreeMap<String, SampleType> = BTreeMap::new();
    // The family whose samples may follow now (its TYPE was the last header).
    let mut current: Option<(String, SampleType)> = None;
    let mut finished = BTreeSet::new();
    for line in text.lines() {
        match LineInfo::parse(line) {
            LineInfo::Doc { metric_name, .. } => {
                assert!(helps.insert(metric_name.to_owned()), "HELP twice: {line}");
            }
            LineInfo::Type {
                metric_name,
                metric_alias,
                sample_type,
            } => {
                let name = metric_alias.unwrap_or(metric_name);
                assert!(helps.contains(&name), "TYPE before its HELP: {line}");
                assert_ne!(sample_type, SampleType::Untyped, "{line}");
                if sample_type == SampleType::Counter {
                    assert!(name.ends_with("_total"), "a counter named _total: {line}");
                }
                let previous = families.insert(name.clone(), sample_type);
                assert!(previous.is_none(), "family declared twice: {line}");
                if let Some((done, _)) = current.replace((name, sample_type)) {
                    finished.insert(done);
                }
            }
            LineInfo::Sample {
                metric_name, value, ..
            } => {
                let (family, kind) = current.as_ref().expect("a sample after a TYPE");
                let own = match kind {
                    SampleType::Histogram => ["_bucket", "_sum", "_count"]
                        .iter()
                        .any(|suffix| metric_name.strip_suffix(suffix) == Some(family)),
                    _ => metric_name == family,
                };
                assert!(own, "sample outside its family {family}: {line}");
                assert!(!finished.contains(metric_name), "{line}");
                assert!(value.parse::<f64>().is_ok(), "a number: {line}");
            }
            LineInfo::Empty | LineInfo::Ignored => panic!("not exposition text: {line:?}"),
        }
    }
    assert_eq!(
        helps,
        families.keys().cloned().collect(),
        "a HELP for every TYPE"
    );
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("parsed");
    for sample in &scrape.samples {
        match &sample.value {
            Value::Histogram(buckets) => {
                assert_eq!(buckets.len(), LATENCY_BUCKETS_NANOS.len() + 1, "{sample:?}");
                assert!(buckets.last().is_some_and(|b| b.less_than.is_infinite()));
            }
            Value::Counter(v) | Value::Gauge(v) => assert!(*v >= 0.0, "{sample:?}"),
            // `_sum` and `_count` of a histogram (the crate types only its buckets).
            Value::Untyped(_) => {
                let family = (sample.metric.strip_suffix("_sum"))
                    .or_else(|| sample.metric.strip_suffix("_count"))
                    .unwrap_or(&sample.metric);
                assert_eq!(
                    families.get(family),
                    Some(&SampleType::Histogram),
                    "{sample:?}"
                );
            }
            Value::Summary(_) => panic!("no summaries are exported: {sample:?}"),
        }
    }
    families
}

fn observed(durations: &[Duration]) -> Histogram {
    let mut histogram = Histogram::default();
    for &d in durations {
        histogram.observe(d);
    }
    histogram
}

/// A node's metrics with every map holding several labels, awkward values included.
fn busy_node() -> Metrics {
    let mut metrics = Metrics::default();
    metrics.refused.insert("no_route".to_owned(), 3);
    metrics.outcomes.insert("delivered".to_owned(), 9);
    metrics.outcomes.insert("failed_timeout".to_owned(), 1);
    metrics.links.insert("up".to_owned(), 2);
    metrics.delivery_latency = observed(&[Duration::from_millis(3)]);
    for method in ["echo", "we\"ird\\name\nx", "other"] {
        metrics.rpc_calls.insert(
            method.to_owned(),
            BTreeMap::from([("reply".to_owned(), 4), ("unknown_timeout".to_owned(), 1)]),
        );
        let latencies = observed(&[Duration::from_micros(900), Duration::from_secs(20)]);
        metrics
            .rpc_call_duration
            .insert(method.to_owned(), latencies);
        metrics.rpc_served.insert(method.to_owned(), 7);
    }
    for (name, _) in RPC_STATS {
        metrics.rpc_stats.insert(name, 2);
    }
    metrics
}

#[test]
fn every_renderer_writes_valid_exposition_text() {
    let node = assert_valid(&prometheus::render(&busy_node()));
    assert_eq!(
        node.get("switchboard_rpc_call_duration_seconds"),
        Some(&SampleType::Histogram)
    );
    // Outlier ejection's families (issue 26): the counters and the gauge of servers ejected.
    assert_eq!(
        node.get("switchboard_outlier_ejections_total"),
        Some(&SampleType::Counter)
    );
    assert_eq!(
        node.get("switchboard_outlier_ejected"),
        Some(&SampleType::Gauge)
    );
    let mut registry = RegistryMetrics::default();
    registry.nodes_live = 2;
    registry.registrations = 5;
    registry.sessions = 2;
    let registry = assert_valid(&prometheus::render_registry(&registry));
    assert!(registry.contains_key("switchboard_registry_sessions_opened_total"));
    let process = assert_valid(&prometheus::render_process(&ProcessMetrics::read()));
    if cfg!(target_os = "linux") {
        assert_eq!(process.len(), 6, "{process:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_node_and_registry_serve_valid_exposition_text() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let registry_admin = AdminServer::bind_registry(loopback, registry.stats())
        .await
        .expect("bind");
    let (client, _) = start(direct(addr, 0x61, "client")).await;
    let (server, _) = start(direct(addr, 0x62, "server").serve("echo")).await;
    let mut requests = within("serve", server.serve("echo")).await.expect("served");
    tokio::spawn(async move {
        while let Some(request) = requests.recv().await {
            let payload = request.payload().clone();
            let _ = request.respond(payload).await;
        }
    });
    wait_known(&client, &[0x61, 0x62]).await;
    let call = CallSpec::new("echo", Bytes::from_static(b"x")).timeout(Duration::from_secs(10));
    let outcome = within("call", client.call(call)).await.expect("accepted");
    assert_eq!(outcome, CallOutcome::Reply(Bytes::from_static(b"x")));
    let client_admin = AdminServer::bind(loopback, client.clone())
        .await
        .expect("bind");
    let server_admin = AdminServer::bind(loopback, server.clone())
        .await
        .expect("bind");

    let client_text = scrape(client_admin.local_addr()).await;
    assert_valid(&client_text);
    assert!(
        client_text.contains("\nswitchboard_rpc_call_duration_seconds_count{method=\"echo\"} 1\n"),
        "{client_text}"
    );
    let server_text = scrape(server_admin.local_addr()).await;
    assert_valid(&server_text);
    assert!(
        server_text.contains("\nswitchboard_rpc_served_total{method=\"echo\"} 1\n"),
        "{server_text}"
    );
    let registry_text = scrape(registry_admin.local_addr()).await;
    let families = assert_valid(&registry_text);
    assert!(
        registry_text.contains("\nswitchboard_registry_sessions 2\n"),
        "{registry_text}"
    );
    if cfg!(target_os = "linux") {
        assert_eq!(
            families.get("process_start_time_seconds"),
            Some(&SampleType::Gauge)
        );
    }
}

/// The check itself refuses a family written twice (two exporters' texts pasted together).
#[test]
#[should_panic(expected = "twice")]
fn a_family_written_twice_is_refused() {
    let text = prometheus::render_registry(&RegistryMetrics::default());
    assert_valid(&format!("{text}{text}"));
}

/// The check refuses a line that is not exposition text.
#[test]
#[should_panic(expected = "not exposition text")]
fn a_stray_line_is_refused() {
    assert_valid("# HELP a_total A.\n# TYPE a_total counter\na_total 1\n\n");
}
