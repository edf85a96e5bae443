//! `rpc-report`: switchboard calls against tonic unary (HTTP/2) on loopback, through one
//! proxy hop, and broadcast against unicast, as one JSON line.
//!
//! Run `cargo run --release -p switchboard-benches --bin rpc-report` (about 60 s). Both
//! sides run in this process on the same 2-worker runtime, client and server alike, with the
//! same payloads, the rounds alternating which side goes first. Progress goes to stderr;
//! stdout is one JSON object:
//! - `p64`, `p1024` (payload bytes): `ours_calls_per_sec` / `tonic_calls_per_sec` with
//!   `in_flight` (64) calls in flight over one connection (ours: `NodeHandle::call` to a node
//!   serving with `serve_inline` over one link; tonic: one `Channel`), best of `rounds`;
//!   `ours_p50_us`, `ours_p99_us`, `ours_p999_us` and tonic's at a paced `rate_per_sec`, the
//!   lowest of `rounds` runs; `calls_ratio` = ours / tonic calls per second, `p50_ratio` and
//!   `p99_ratio` = ours / tonic latency.
//! - `proxy_hop`: the same echo (64 B) from a client through one switchboard proxy to the
//!   server: `ours_calls_per_sec`, `ours_p50_us`, `ours_p99_us`, `vs_tonic_direct` = its
//!   calls per second / tonic's direct ones.
//! - `broadcast_vs_unicast`: recipient frames acknowledged per second broadcasting to 16
//!   leaves over unicasting the same 64-byte frames to each (the same number of frames in
//!   flight, 256), with both rates beside it.
//! - `goals`: the targets (calls ≥ 2 × tonic, p50 and p99 ≤ 0.5 × tonic for both
//!   sizes, proxy hop ≥ 1 × tonic direct, broadcast ≥ 0.7 × unicast) and whether each is met.
//! - `failures` (every call or frame without its exact reply or ack, by label) and
//!   `exactly_once` (each leaf counted every acknowledged frame once, as sent).
//!
//! Flags: `--rounds N` (2), `--seconds S` per run (2), `--rate N` (5000), `--short` (one
//! round of 0.3 s runs at 2000/s: checks, not speed — what `scripts/test` runs). Exits 1 when
//! a check fails (any failure, or a frame not counted exactly once), 2 on a bad flag.

use std::{
    collections::BTreeMap,
    process::ExitCode,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use switchboard_benches::{
    rpc::{
        CallRun, closed_loop,
        fanout::{Fanout, FanoutRun, LEAVES},
        ours_calls::{CallCluster, CallRoute},
        paced, payload,
        tonic_echo::{TonicClient, TonicServer},
    },
    transport::{BenchError, WORKER_THREADS, run_on_workers, runtime},
};

const READY_TIMEOUT: Duration = Duration::from_secs(15);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(2);
/// Calls in flight for throughput.
const IN_FLIGHT: usize = 64;
/// Frames in flight for the fan-out comparison.
const FRAMES_IN_FLIGHT: usize = 256;
const SIZES: [usize; 2] = [64, 1024];

#[derive(Clone, Copy, Debug)]
struct Params {
    rounds: u32,
    run: Duration,
    rate_per_sec: u64,
    short: bool,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Params, String> {
    let mut p = Params {
        rounds: 2,
        run: Duration::from_secs(2),
        rate_per_sec: 5000,
        short: false,
    };
    let mut args = args.peekable();
    while let Some(flag) = args.next() {
        if flag == "--short" {
            p = Params {
                rounds: 1,
                run: Duration::from_millis(300),
                rate_per_sec: 2000,
                short: true,
            };
            continue;
        }
        let value = args
            .next()
            .ok_or_else(|| format!("flag {flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("bad value for {flag}: {e}");
        match flag.as_str() {
            "--rounds" => p.rounds = value.parse::<u32>().map_err(|e| bad(&e))?.max(1),
            "--seconds" => {
                let s = value.parse::<f64>().map_err(|e| bad(&e))?;
                p.run = Duration::try_from_secs_f64(s).map_err(|e| bad(&e))?;
            }
            "--rate" => p.rate_per_sec = value.parse::<u64>().map_err(|e| bad(&e))?.max(1),
            other => {
                return Err(format!(
                    "unknown flag `{other}` (flags: --rounds, --seconds, --rate, --short)"
                ));
            }
        }
    }
    Ok(p)
}

fn main() -> ExitCode {
    let p = match parse(std::env::args().skip(1)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("rpc-report: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("rpc-report: runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match run_on_workers(&rt, measure(p)) {
        Ok((line, passed)) => {
            println!("{line}");
            if passed {
                ExitCode::SUCCESS
            } else {
                eprintln!("rpc-report: a check failed (see failures / exactly_once)");
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("rpc-report: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The best figures of one path over its rounds.
#[derive(Debug, Default)]
struct Best {
    calls_per_sec: f64,
    p50: Option<f64>,
    p99: Option<f64>,
    p999: Option<f64>,
}

impl Best {
    fn throughput(&mut self, run: &CallRun) {
        self.calls_per_sec = self.calls_per_sec.max(run.calls_per_sec());
    }

    fn latency(&mut self, run: &mut CallRun) {
        let lowest = |old: Option<f64>, new: Option<f64>| match (old, new) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.p50 = lowest(self.p50, run.latencies.percentile_us(50.0));
        self.p99 = lowest(self.p99, run.latencies.percentile_us(99.0));
        self.p999 = lowest(self.p999, run.latencies.percentile_us(99.9));
    }
}

/// Failures of every run, by label.
#[derive(Debug, Default)]
struct Failures(BTreeMap<String, u64>);

impl Failures {
    fn add(&mut self, failures: &BTreeMap<String, u64>) {
        for (label, n) in failures {
            *self.0.entry(label.clone()).or_insert(0) += n;
        }
    }
}

fn report(what: &str, run: &mut CallRun) {
    let p99 = run.latencies.percentile_us(99.0).unwrap_or(f64::NAN);
    eprintln!(
        "{what:<34} {:>9.0} calls/s  p99 {p99:>8.1} µs  ({} calls, {} failed)",
        run.calls_per_sec(),
        run.completed,
        run.failed()
    );
}

async fn measure(p: Params) -> Result<(String, bool), BenchError> {
    let started = Instant::now();
    eprintln!("rpc-report: tonic echo server, registry + 5 nodes, hub + {LEAVES} leaves");
    let server = TonicServer::start().await?;
    let tonic = server.client().await?;
    let cluster = CallCluster::start(READY_TIMEOUT).await?;
    let fanout = Fanout::start(READY_TIMEOUT).await?;
    let mut failures = Failures::default();

    let mut sizes = Vec::new();
    for size in SIZES {
        let body = payload(size);
        let (mut ours, mut theirs) = (Best::default(), Best::default());
        for round in 0..p.rounds {
            for ours_turn in [round % 2 == 0, round % 2 != 0] {
                let what = if ours_turn { "ours" } else { "tonic" };
                let mut tp = if ours_turn {
                    calls_closed(&cluster.direct, &body, p.run).await
                } else {
                    tonic_closed(&tonic, &body, p.run).await
                };
                report(&format!("{size} B {what} {IN_FLIGHT} in flight"), &mut tp);
                let mut lat = if ours_turn {
                    calls_paced(&cluster.direct, &body, &p).await
                } else {
                    tonic_paced(&tonic, &body, &p).await
                };
                report(
                    &format!("{size} B {what} at {}/s", p.rate_per_sec),
                    &mut lat,
                );
                let best = if ours_turn { &mut ours } else { &mut theirs };
                best.throughput(&tp);
                best.latency(&mut lat);
                failures.add(&tp.failures);
                failures.add(&lat.failures);
            }
        }
        sizes.push((size, ours, theirs));
    }

    let mut proxy = Best::default();
    let body = payload(64);
    for _ in 0..p.rounds {
        let mut tp = calls_closed(&cluster.proxied, &body, p.run).await;
        report("64 B ours proxied, 64 in flight", &mut tp);
        let mut lat = calls_paced(&cluster.proxied, &body, &p).await;
        report(
            &format!("64 B ours proxied at {}/s", p.rate_per_sec),
            &mut lat,
        );
        proxy.throughput(&tp);
        proxy.latency(&mut lat);
        failures.add(&tp.failures);
        failures.add(&lat.failures);
    }

    let (mut broadcast, mut unicast) = (0.0_f64, 0.0_f64);
    let mut exactly_once = true;
    for round in 0..p.rounds {
        for broadcast_turn in [round % 2 == 0, round % 2 != 0] {
            let (before, _) = fanout.received();
            let run = if broadcast_turn {
                fanout.broadcast(FRAMES_IN_FLIGHT, p.run).await
            } else {
                fanout.unicast(FRAMES_IN_FLIGHT, p.run).await?
            };
            let what = if broadcast_turn {
                "broadcast"
            } else {
                "unicast"
            };
            exactly_once &= counted_once(&fanout, before, &run).await;
            eprintln!(
                "{what:<34} {:>9.0} frames/s to {LEAVES} leaves",
                run.frames_per_sec()
            );
            let best = if broadcast_turn {
                &mut broadcast
            } else {
                &mut unicast
            };
            *best = best.max(run.frames_per_sec());
            failures.add(&run.failures);
        }
    }
    cluster.shutdown(Duration::from_secs(2)).await;
    fanout.shutdown(Duration::from_secs(2)).await;
    drop(server);

    let passed = failures.0.is_empty() && exactly_once;
    let line = json_line(
        &p,
        &sizes,
        &proxy,
        (broadcast, unicast),
        &failures,
        exactly_once,
        started.elapsed(),
    );
    Ok((line, passed))
}

/// Whether the leaves counted exactly the frames `run` had acknowledged since `before`.
async fn counted_once(fanout: &Fanout, before: u64, run: &FanoutRun) -> bool {
    let expected = before + run.delivered;
    let got = fanout.settle(expected, SETTLE_TIMEOUT).await;
    let (_, unexpected) = fanout.received();
    let exact = got == expected && unexpected == 0;
    if !exact {
        eprintln!(
            "  ! leaves counted {} for {} acknowledged ({unexpected} unexpected)",
            got - before,
            run.delivered
        );
    }
    exact
}

async fn calls_closed(route: &CallRoute, body: &bytes::Bytes, run: Duration) -> CallRun {
    closed_loop(IN_FLIGHT, run, || route.echo(body.clone())).await
}

async fn calls_paced(route: &CallRoute, body: &bytes::Bytes, p: &Params) -> CallRun {
    paced(p.rate_per_sec, p.run, || route.echo(body.clone())).await
}

async fn tonic_closed(client: &TonicClient, body: &bytes::Bytes, run: Duration) -> CallRun {
    closed_loop(IN_FLIGHT, run, || client.echo(body.clone())).await
}

async fn tonic_paced(client: &TonicClient, body: &bytes::Bytes, p: &Params) -> CallRun {
    paced(p.rate_per_sec, p.run, || client.echo(body.clone())).await
}

fn round_to(v: f64, decimals: i32) -> f64 {
    let f = 10_f64.powi(decimals);
    (v * f).round() / f
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { round_to(a / b, 3) } else { 0.0 }
}

fn json_line(
    p: &Params,
    sizes: &[(usize, Best, Best)],
    proxy: &Best,
    (broadcast, unicast): (f64, f64),
    failures: &Failures,
    exactly_once: bool,
    elapsed: Duration,
) -> String {
    let us = |v: Option<f64>| json!(v.map(|v| round_to(v, 1)));
    let lat_ratio = |a: Option<f64>, b: Option<f64>| json!(a.zip(b).map(|(a, b)| ratio(a, b)));
    let mut fields: Vec<(String, Value)> = Vec::new();
    let mut goals: Vec<(String, bool)> = Vec::new();
    let mut tonic_direct_64 = 0.0;
    for (size, ours, tonic) in sizes {
        if *size == 64 {
            tonic_direct_64 = tonic.calls_per_sec;
        }
        let calls = ratio(ours.calls_per_sec, tonic.calls_per_sec);
        let p50 = ours.p50.zip(tonic.p50).map(|(a, b)| ratio(a, b));
        let p99 = ours.p99.zip(tonic.p99).map(|(a, b)| ratio(a, b));
        fields.push((
            format!("p{size}"),
            json!({
                "ours_calls_per_sec": ours.calls_per_sec.round(),
                "tonic_calls_per_sec": tonic.calls_per_sec.round(),
                "ours_p50_us": us(ours.p50),
                "tonic_p50_us": us(tonic.p50),
                "ours_p99_us": us(ours.p99),
                "tonic_p99_us": us(tonic.p99),
                "ours_p999_us": us(ours.p999),
                "tonic_p999_us": us(tonic.p999),
                "calls_ratio": calls,
                "p50_ratio": lat_ratio(ours.p50, tonic.p50),
                "p99_ratio": lat_ratio(ours.p99, tonic.p99),
            }),
        ));
        goals.push((format!("p{size}_calls_2x"), calls >= 2.0));
        goals.push((format!("p{size}_p50_half"), p50.is_some_and(|r| r <= 0.5)));
        goals.push((format!("p{size}_p99_half"), p99.is_some_and(|r| r <= 0.5)));
    }
    let vs_tonic = ratio(proxy.calls_per_sec, tonic_direct_64);
    fields.push((
        "proxy_hop".to_owned(),
        json!({
            "ours_calls_per_sec": proxy.calls_per_sec.round(),
            "ours_p50_us": us(proxy.p50),
            "ours_p99_us": us(proxy.p99),
            "ours_p999_us": us(proxy.p999),
            "vs_tonic_direct": vs_tonic,
        }),
    ));
    goals.push(("proxy_hop_1x_tonic".to_owned(), vs_tonic >= 1.0));
    let fan = ratio(broadcast, unicast);
    fields.push(("broadcast_vs_unicast".to_owned(), json!(fan)));
    fields.push((
        "broadcast_frames_per_sec".to_owned(),
        json!(broadcast.round()),
    ));
    fields.push(("unicast_frames_per_sec".to_owned(), json!(unicast.round())));
    goals.push(("broadcast_0_7".to_owned(), fan >= 0.7));
    let goals: serde_json::Map<String, Value> =
        goals.into_iter().map(|(k, v)| (k, json!(v))).collect();
    fields.push(("goals".to_owned(), Value::Object(goals)));
    fields.push(("failures".to_owned(), json!(failures.0)));
    fields.push(("exactly_once".to_owned(), json!(exactly_once)));
    fields.push(("leaves".to_owned(), json!(LEAVES)));
    fields.push(("in_flight".to_owned(), json!(IN_FLIGHT)));
    fields.push(("frames_in_flight".to_owned(), json!(FRAMES_IN_FLIGHT)));
    fields.push(("rate_per_sec".to_owned(), json!(p.rate_per_sec)));
    fields.push(("rounds".to_owned(), json!(p.rounds)));
    fields.push(("seconds".to_owned(), json!(p.run.as_secs_f64())));
    fields.push(("short".to_owned(), json!(p.short)));
    fields.push(("worker_threads".to_owned(), json!(WORKER_THREADS)));
    fields.push((
        "elapsed_s".to_owned(),
        json!(round_to(elapsed.as_secs_f64(), 1)),
    ));
    let body: Vec<String> = fields
        .into_iter()
        .map(|(k, v)| format!("{}:{v}", Value::from(k)))
        .collect();
    format!("{{{}}}", body.join(","))
}
