//! The `ejection` section of `select-report` (see the [parent](super)): outlier ejection of a
//! server that fails every call, through real `Node`s on the simulator's virtual time (a
//! root, a caller and ten servers of `echo`, direct links; deterministic, no clock).
//!
//! The caller calls `echo` round robin, one call every 50 ms for 120 s, each with a 1 s
//! budget; nine servers answer at once, one fails every call. Two ways of failing:
//!
//! - **refusing** — its driver sheds every request (`Node::shed`: `Failed(Overloaded)`, an
//!   answer in one round trip). `requests_before_ejection` is the requests it got before its
//!   first ejection (the target: ≤ 6);
//! - **silent** — it never answers, every call times out after 1 s; the calls sent to it
//!   within that second (one in ten, 20 calls a second) are out before the first timeout,
//!   so it gets more before the fifth failure is known: `silent_requests_before_ejection`.
//!
//! Each run is made with ejection on (the defaults) and off over the same schedule:
//! `failed_calls_with_ejection` / `failed_calls_without_ejection` (refusing server),
//! `silent_failed_calls_with_ejection` / `silent_failed_calls_without_ejection`, and
//! `ejections` (the caller's count over the refusing run: the first ejection, then one per
//! failed probe).

use bytes::Bytes;
use serde_json::json;
use switchboard_core::{
    CallSpec, Config, Duration, Instant, NodeId, RpcOutput,
    config::OutlierConfig,
    sim::{Sim, topology_info},
};

use super::Figures;

const ROOT: u64 = 0x100;
const CALLER: u64 = 0x101;
/// The servers; the failing one is the fourth.
const SERVERS: [u64; 10] = [
    0x201, 0x202, 0x203, 0x204, 0x205, 0x206, 0x207, 0x208, 0x209, 0x20a,
];
const FAILING: u64 = 0x204;
/// One call every this long, for `RUN`.
const PACE: Duration = Duration::from_millis(50);
const RUN: Duration = Duration::from_secs(120);
const CALL_BUDGET: Duration = Duration::from_secs(1);

/// How the failing server fails.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Failing {
    /// Sheds every request (an `Overloaded` refusal).
    Refusing,
    /// Never answers.
    Silent,
}

/// What one run measured.
struct Run {
    /// Requests the failing server got before the caller first ejected it (all of them when
    /// it never was).
    before_ejection: u64,
    /// Calls that ended without a reply.
    failed_calls: u64,
    /// The caller's ejections.
    ejections: u64,
}

fn config(id: u64, upstream: u64, outlier: OutlierConfig) -> Config {
    let mut c = super::sim_node_config(id, upstream);
    c.set_outlier(outlier);
    c
}

/// The cluster, every server serving `echo`, every record published, settled at 0.
fn cluster(outlier: OutlierConfig) -> Sim {
    let mut sim = Sim::new();
    sim.add_node(config(ROOT, 0, outlier)).expect("root config");
    for id in std::iter::once(CALLER).chain(SERVERS) {
        sim.add_node(config(id, ROOT, outlier))
            .expect("node config");
    }
    sim.run_until_idle();
    for id in SERVERS {
        sim.act(NodeId(id), |node, now| node.serve(now, "echo"))
            .expect("a valid method");
    }
    sim.registry_put_topology(topology_info(NodeId(ROOT), "node-100", NodeId(0)));
    for id in std::iter::once(CALLER).chain(SERVERS) {
        sim.registry_put_topology(topology_info(
            NodeId(id),
            &format!("node-{id:x}"),
            NodeId(ROOT),
        ));
    }
    for id in std::iter::once(ROOT).chain([CALLER]).chain(SERVERS) {
        let info = sim.node(NodeId(id)).discovery_info();
        sim.registry_put_discovery(info);
    }
    sim.run_until_idle();
    sim
}

/// One run of the schedule with `failing` and `outlier` settings.
fn measure(failing: Failing, outlier: OutlierConfig) -> Run {
    let mut sim = cluster(outlier);
    sim.advance(Duration::from_millis(100));
    let end = sim.now() + RUN;
    let mut seen = vec![0; SERVERS.len()];
    let mut before_ejection = None;
    let mut failing_requests = 0;
    while sim.now() < end {
        sim.act(NodeId(CALLER), |node, now| {
            node.call(
                now,
                CallSpec::new("echo", Bytes::new()).timeout(CALL_BUDGET),
            )
        })
        .expect("the call is accepted");
        sim.deliver_until_idle();
        for (i, &server) in SERVERS.iter().enumerate() {
            let requests: Vec<_> = sim.log(NodeId(server)).rpc[seen[i]..]
                .iter()
                .filter_map(|record| match &record.output {
                    RpcOutput::Request(request) => Some(request.request),
                    _ => None,
                })
                .collect();
            seen[i] = sim.log(NodeId(server)).rpc.len();
            for request in requests {
                if server != FAILING {
                    let reply = |node: &mut switchboard_core::Node, now: Instant| {
                        node.reply(now, request, Bytes::new())
                    };
                    sim.act(NodeId(server), reply).expect("the request waits");
                } else {
                    failing_requests += 1;
                    if failing == Failing::Refusing {
                        assert!(sim.act(NodeId(server), |node, now| node.shed(now, request)));
                    }
                }
            }
        }
        sim.deliver_until_idle();
        let ejections = sim.node(NodeId(CALLER)).inspect().outlier_stats().ejections;
        if ejections > 0 && before_ejection.is_none() {
            before_ejection = Some(failing_requests);
        }
        sim.advance(PACE);
    }
    sim.advance(CALL_BUDGET);
    let failed_calls = sim
        .log(NodeId(CALLER))
        .rpc
        .iter()
        .filter(|record| {
            matches!(&record.output, RpcOutput::CallDone { outcome, .. } if outcome.class() != "reply")
        })
        .count() as u64;
    Run {
        before_ejection: before_ejection.unwrap_or(failing_requests),
        failed_calls,
        ejections: sim.node(NodeId(CALLER)).inspect().outlier_stats().ejections,
    }
}

/// Runs the section's seeded experiments and adds their figures to `out`.
pub fn run(out: &mut Figures) {
    let on = OutlierConfig::default();
    let off = OutlierConfig::disabled();
    let refusing = measure(Failing::Refusing, on);
    let refusing_off = measure(Failing::Refusing, off);
    let silent = measure(Failing::Silent, on);
    let silent_off = measure(Failing::Silent, off);
    let figures = [
        ("requests_before_ejection", refusing.before_ejection),
        ("failed_calls_with_ejection", refusing.failed_calls),
        ("failed_calls_without_ejection", refusing_off.failed_calls),
        ("ejections", refusing.ejections),
        ("silent_requests_before_ejection", silent.before_ejection),
        ("silent_failed_calls_with_ejection", silent.failed_calls),
        (
            "silent_failed_calls_without_ejection",
            silent_off.failed_calls,
        ),
    ];
    for (name, value) in figures {
        out.insert(name.into(), json!(value));
    }
}
