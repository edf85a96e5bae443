//! The `retry` section of `select-report` (see the [parent](super)): seeded experiments on
//! virtual time driving real core `Node`s in the simulator (`switchboard_core::sim`), a
//! caller and its method's servers under one root, the handlers played by this module.
//!
//! - **Retry budget** (`retry_attempts_per_offered`): every server sheds every call
//!   (`Failed(Overloaded)`: unexecuted, so retried); idempotent calls at 100 calls/s for
//!   10 s. Attempts (first requests + retries + hedges) per offered call, with the default
//!   budget (target ≤ 1.2 + 10/s × the run's seconds ÷ 1,000 calls, ≈ 1.3) and without a
//!   budget
//!   (`retry_attempts_per_offered_no_budget`: every call makes its 5 attempts).
//! - **Hedging** (`hedge_p99_reduction`, `hedge_extra_attempts`): 25 servers, one 10×
//!   slower (50 ms against 5 ms ± 20 %), round robin, idempotent calls at 100 calls/s for
//!   10 s; first without hedging (`no_hedge_p99_ms`, and its p95, `hedge_p95_ms`), then
//!   hedged at the method's p95 as the caller measures it (`CallSpec::hedge_at_method_p95`:
//!   the first 20 replies unhedged, then the p95 of the last 128; `hedge_p99_ms`). The
//!   reduction is 1 − hedged p99 / unhedged p99 (target ≥ 0.40); the extra attempts are
//!   hedges per call (target ≤ 0.10).

use std::collections::BTreeMap;

use bytes::Bytes;
use switchboard_core::{
    config::Config,
    ids::NodeId,
    rng::Rng,
    rpc::{CallId, CallSpec, RequestId, RpcOutput, retry::RetryConfig},
    sim::{Sim, topology_info},
    time::{Duration, Instant},
};

use super::Figures;

const ROOT: u64 = 0x900;
const CALLER: u64 = 0x901;
const METHOD: &str = "work";
/// Offered load: one call every 10 ms, for 10 s.
const CALLS: u64 = 1_000;
const INTERVAL: Duration = Duration::from_millis(10);

/// Runs the section's seeded experiments and adds their figures to `out`.
pub fn run(out: &mut Figures) {
    let (budgeted, duration) = every_server_failing(RetryConfig::default());
    let (unbounded, _) = every_server_failing(RetryConfig {
        budget_min_per_sec: 1_000_000,
        ..RetryConfig::default()
    });
    // The target: 1.2 × the offered calls + 10 per second of the run (first call to last
    // outcome), per offered call.
    let target = 1.2 + 10.0 * duration.as_secs_f64() / CALLS as f64;
    out.insert("retry_attempts_per_offered".into(), round(budgeted).into());
    out.insert(
        "retry_attempts_per_offered_no_budget".into(),
        round(unbounded).into(),
    );
    out.insert("retry_attempts_target".into(), round(target).into());
    out.insert("retry_run_s".into(), round(duration.as_secs_f64()).into());
    // The same as rates: attempts per second of the run against 1.2 × the offered 100/s
    // + 10/s.
    let per_sec = budgeted * CALLS as f64 / duration.as_secs_f64();
    out.insert("retry_attempts_per_sec".into(), round(per_sec).into());
    out.insert("retry_attempts_per_sec_target".into(), 130.0.into());

    let plain = one_slow_server(false);
    let p95 = percentile(&plain.latencies, 95);
    let hedged = one_slow_server(true);
    let (p99_plain, p99_hedged) = (
        percentile(&plain.latencies, 99),
        percentile(&hedged.latencies, 99),
    );
    let reduction = 1.0 - p99_hedged.as_secs_f64() / p99_plain.as_secs_f64();
    out.insert("hedge_p95_ms".into(), round(ms(p95)).into());
    out.insert("no_hedge_p99_ms".into(), round(ms(p99_plain)).into());
    out.insert("hedge_p99_ms".into(), round(ms(p99_hedged)).into());
    out.insert("hedge_p99_reduction".into(), round(reduction).into());
    out.insert(
        "hedge_extra_attempts".into(),
        round(hedged.hedges as f64 / CALLS as f64).into(),
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The `p`-th percentile (nearest rank) of `values`.
fn percentile(values: &[Duration], p: usize) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// What a handler does with a request.
enum Handling {
    /// Shed it (unexecuted).
    Shed,
    /// Answer it after this long.
    Reply(Duration),
}

/// What one run measured.
struct Run {
    /// From the first call to the last outcome.
    duration: Duration,
    /// Each call's time to its outcome.
    latencies: Vec<Duration>,
    /// The caller's retries, hedges.
    retries: u64,
    hedges: u64,
}

/// A caller and `servers` servers under one root, published and settled at 0; the caller
/// with `retry`.
fn cluster(servers: u64, retry: RetryConfig) -> (Sim, Vec<NodeId>) {
    let mut sim = Sim::new();
    sim.add_node(config(ROOT, 0, retry)).expect("root config");
    sim.add_node(config(CALLER, ROOT, retry))
        .expect("caller config");
    let ids: Vec<NodeId> = (1..=servers).map(|i| NodeId(0xa00 + i)).collect();
    for &id in &ids {
        sim.add_node(config(id.0, ROOT, retry))
            .expect("server config");
    }
    sim.run_until_idle();
    for &id in &ids {
        sim.act(id, |node, now| node.serve(now, METHOD))
            .expect("a valid method");
    }
    let all: Vec<u64> = [ROOT, CALLER]
        .into_iter()
        .chain(ids.iter().map(|id| id.0))
        .collect();
    for &id in &all {
        let up = if id == ROOT { 0 } else { ROOT };
        sim.registry_put_topology(topology_info(NodeId(id), &name(id), NodeId(up)));
    }
    for &id in &all {
        let info = sim.node(NodeId(id)).discovery_info();
        sim.registry_put_discovery(info);
    }
    sim.run_until_idle();
    (sim, ids)
}

fn name(id: u64) -> String {
    format!("node-{id:x}")
}

fn config(id: u64, upstream: u64, retry: RetryConfig) -> Config {
    let mut c = super::sim_node_config(id, upstream);
    c.suspicion_timeout = Duration::from_secs(600);
    c.rng_seed = 26;
    c.rpc_retry = retry;
    c
}

/// Offers [`CALLS`] calls built by `spec`, one per [`INTERVAL`], to a cluster of `servers`
/// whose handlers do what `handle(server, jitter)` says; runs until every call ended.
fn offer(
    servers: u64,
    retry: RetryConfig,
    spec: impl Fn() -> CallSpec,
    mut handle: impl FnMut(NodeId, &mut Rng) -> Handling,
) -> Run {
    let (mut sim, ids) = cluster(servers, retry);
    let caller = NodeId(CALLER);
    let start = sim.now();
    let mut rng = Rng::new(0x2626);
    let mut issued: BTreeMap<CallId, Instant> = BTreeMap::new();
    let mut latencies = Vec::new();
    let mut replies: Vec<(Instant, NodeId, RequestId)> = Vec::new();
    let mut cursors: BTreeMap<NodeId, usize> =
        ids.iter().map(|&id| (id, sim.log(id).rpc.len())).collect();
    let mut caller_cursor = sim.log(caller).rpc.len();
    let mut next_call = 0u64;
    let call_at = |n: u64| start + INTERVAL * u32::try_from(n).unwrap_or(u32::MAX);
    let mut last_outcome = start;
    while latencies.len() < CALLS as usize {
        let now = sim.now();
        if next_call < CALLS && now >= call_at(next_call) {
            let id = sim
                .act(caller, |node, now| node.call(now, spec()))
                .expect("the call is accepted");
            issued.insert(id, now);
            next_call += 1;
        }
        for &server in &ids {
            let log = &sim.log(server).rpc;
            let new: Vec<RequestId> = log[cursors[&server]..]
                .iter()
                .filter_map(|r| match &r.output {
                    RpcOutput::Request(request) => Some(request.request),
                    _ => None,
                })
                .collect();
            cursors.insert(server, log.len());
            for request in new {
                match handle(server, &mut rng) {
                    Handling::Shed => {
                        sim.act(server, |node, now| node.shed(now, request));
                    }
                    Handling::Reply(after) => replies.push((now + after, server, request)),
                }
            }
        }
        let (due, later): (Vec<_>, Vec<_>) = replies.into_iter().partition(|r| r.0 <= now);
        replies = later;
        for (_, server, request) in due {
            let _ = sim.act(server, |node, now| {
                node.reply(now, request, Bytes::from_static(b"ok"))
            });
        }
        let log = &sim.log(caller).rpc;
        for record in &log[caller_cursor..] {
            if let RpcOutput::CallDone { call, .. } = &record.output
                && let Some(at) = issued.remove(call)
            {
                latencies.push(record.at - at);
                last_outcome = record.at;
            }
        }
        caller_cursor = log.len();
        // Event by event: the next call, the next handler answer, the next delivery or
        // timer; handlers see each request at the instant it arrives.
        let next = [
            (next_call < CALLS).then(|| call_at(next_call)),
            replies.iter().map(|r| r.0).min(),
            sim.next_event_time(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(now)
        .max(now + Duration::from_micros(1));
        sim.advance_to(next);
    }
    let stats = sim.node(caller).inspect().rpc_stats();
    Run {
        duration: last_outcome - start,
        latencies,
        retries: stats.retries,
        hedges: stats.hedges,
    }
}

/// (a): three servers shedding every call; attempts per offered call, and how long the
/// run took.
fn every_server_failing(retry: RetryConfig) -> (f64, Duration) {
    let spec = || {
        CallSpec::new(METHOD, Bytes::from_static(b"x"))
            .idempotent(true)
            .timeout(Duration::from_secs(5))
    };
    let run = offer(3, retry, spec, |_, _| Handling::Shed);
    let attempts = (CALLS + run.retries + run.hedges) as f64 / CALLS as f64;
    (attempts, run.duration)
}

/// (b): 25 servers, the first 10× slower; `hedged` at the method's p95.
fn one_slow_server(hedged: bool) -> Run {
    let slow = NodeId(0xa01);
    let spec = move || {
        let spec = CallSpec::new(METHOD, Bytes::from_static(b"x"))
            .idempotent(true)
            .timeout(Duration::from_secs(5));
        if hedged {
            spec.hedge_at_method_p95()
        } else {
            spec
        }
    };
    offer(25, RetryConfig::default(), spec, |server, rng| {
        let base = 4_000 + rng.below(2_001);
        let micros = if server == slow { base * 10 } else { base };
        Handling::Reply(Duration::from_micros(micros))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_is_the_nearest_rank() {
        let values: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&values, 95), Duration::from_millis(95));
        assert_eq!(percentile(&values, 99), Duration::from_millis(99));
        assert_eq!(percentile(&values[..1], 99), Duration::from_millis(1));
    }
}
