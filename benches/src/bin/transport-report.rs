//! `transport-report`: switchboard-tokio against a raw tokio length-delimited echo, as one
//! JSON line.
//!
//! Run `cargo run --release -p switchboard-benches --bin transport-report` (about 45 s).
//! Progress goes to stderr; stdout is one JSON object:
//! - `ours_msgs_per_sec` / `baseline_msgs_per_sec`: round trips per second with a window of
//!   `window` (256) messages in flight, best of `rounds` runs per side, the sides alternating
//!   which goes first. Ours = a `Poster` (messages gathered until the
//!   window is full, handed over with `post_many`; outcomes read in batches from its
//!   `PostOutcomes`) → `Outcome::Delivered` over a direct link (data out, the core's ack
//!   back); baseline = frame → echo, the client gathering frames the same way. `ratio` =
//!   ours / baseline. For context: `ours_post_msgs_per_sec` (`NodeHandle::post`, one command
//!   and one outcome future per message), `ours_submit_msgs_per_sec` (the same with `submit`, which waits for the
//!   driver to accept each message) and `baseline_write_per_msg_msgs_per_sec` (the baseline
//!   client writing each frame with its own `write_all`, as `SinkExt::send` on a `Framed`
//!   does).
//! - `ours_p99_us` (= `direct_p99_us_at_10k`), `baseline_p99_us`, `proxy_hop_p99_us`:
//!   round-trip p99 at a paced `rate_per_sec` (10 000; ours with a poster), best (lowest) of
//!   `rounds` runs of about 20 000 samples per path, the three paths rotating their order each
//!   round (other processes on the machine only add latency, so the least disturbed run is
//!   the estimate, as the best throughput run is); `proxy_hop_added_p99_us` = proxied − direct. Beside them: p50, p99
//!   and p99.9 over every sample of every round (`*_pooled`), each round's p99 (`*_runs`),
//!   the p99 under the windowed load, and every throughput run.
//! - `goal_*`: ratio ≥ 0.7, ours p99 ≤ 2 × baseline p99, proxy hop adds ≤ 1000 µs p99.
//! - `ours_failures` (outcomes other than `Delivered`, by label), `ours_exactly_once` (every
//!   run's receiver count equals its `Delivered` count, with sender, relay, type and payload
//!   bytes as sent — the proxied route's messages must arrive `via` the proxy).
//!
//! Flags (all optional): `--rounds N` (3), `--throughput-seconds S` (2), `--latency-seconds S`
//! (2), `--window N` (256), `--rate N` (10000). A bad flag prints one line and exits with 2.

use std::{
    collections::BTreeMap,
    net::{Ipv4Addr, SocketAddr},
    process::ExitCode,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use switchboard_benches::transport::{
    BenchError, PAYLOAD_BYTES, WORKER_THREADS,
    baseline::{ClientWrites, EchoServer, run_baseline},
    load::{Load, RunOutcome},
    ours::{OursCluster, OursRoute, SendApi, run_ours},
    run_on_workers, runtime,
    stats::Latencies,
};

const LOOPBACK: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
const READY_TIMEOUT: Duration = Duration::from_secs(15);
const WARMUP: Duration = Duration::from_millis(500);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(2);
/// The call the headline figures of ours use: a poster (bursts with `post_many`, outcomes in
/// batches), the adapter's streaming API.
const OURS_API: SendApi = SendApi::Stream;

/// The run's parameters.
#[derive(Clone, Copy, Debug)]
struct Params {
    rounds: u32,
    throughput: Duration,
    latency: Duration,
    window: usize,
    rate_per_sec: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            rounds: 3,
            throughput: Duration::from_secs(2),
            latency: Duration::from_secs(2),
            window: 256,
            rate_per_sec: 10_000,
        }
    }
}

/// A bad command line, named by its flag.
#[derive(Debug, thiserror::Error)]
enum UsageError {
    #[error(
        "unknown flag `{0}` (flags: --rounds, --throughput-seconds, --latency-seconds, --window, --rate)"
    )]
    UnknownFlag(String),
    #[error("flag {0} needs a value")]
    MissingValue(&'static str),
    #[error("flag {flag}: `{value}` is not {expected}")]
    BadValue {
        flag: &'static str,
        value: String,
        expected: &'static str,
    },
}

impl Params {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Params, UsageError> {
        let mut p = Params::default();
        while let Some(flag) = args.next() {
            let name: &'static str = match flag.as_str() {
                "--rounds" => "--rounds",
                "--throughput-seconds" => "--throughput-seconds",
                "--latency-seconds" => "--latency-seconds",
                "--window" => "--window",
                "--rate" => "--rate",
                _ => return Err(UsageError::UnknownFlag(flag)),
            };
            let value = args.next().ok_or(UsageError::MissingValue(name))?;
            let bad = |expected| UsageError::BadValue {
                flag: name,
                value: value.clone(),
                expected,
            };
            match name {
                "--rounds" => {
                    p.rounds = positive_int(&value).ok_or_else(|| bad("an integer in 1..=100"))?;
                    if p.rounds > 100 {
                        return Err(bad("an integer in 1..=100"));
                    }
                }
                "--throughput-seconds" => {
                    p.throughput = seconds(&value).ok_or_else(|| bad("seconds in (0, 60]"))?;
                }
                "--latency-seconds" => {
                    p.latency = seconds(&value).ok_or_else(|| bad("seconds in (0, 60]"))?;
                }
                "--window" => {
                    p.window = positive_int(&value)
                        .filter(|&w: &usize| w <= 4096)
                        .ok_or_else(|| bad("an integer in 1..=4096"))?;
                }
                _ => {
                    p.rate_per_sec = positive_int(&value)
                        .filter(|&r: &u64| r <= 1_000_000)
                        .ok_or_else(|| bad("an integer in 1..=1000000"))?;
                }
            }
        }
        Ok(p)
    }
}

fn positive_int<T: std::str::FromStr + PartialOrd + Default>(s: &str) -> Option<T> {
    s.parse::<T>().ok().filter(|v| *v > T::default())
}

fn seconds(s: &str) -> Option<Duration> {
    let v: f64 = s.parse().ok()?;
    (v > 0.0 && v <= 60.0).then(|| Duration::from_secs_f64(v))
}

fn main() -> ExitCode {
    let params = match Params::parse(std::env::args().skip(1)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("transport-report: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("transport-report: cannot build the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match run_on_workers(&rt, measure(params)) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("transport-report: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Everything gathered for one path across rounds.
#[derive(Default)]
struct PathResults {
    throughput_runs: Vec<f64>,
    under_window: Latencies,
    /// Every paced sample of every round.
    paced: Latencies,
    /// Each paced round's p99, µs.
    paced_p99_runs: Vec<f64>,
    failures: BTreeMap<String, u64>,
}

impl PathResults {
    fn add_throughput(&mut self, run: &RunOutcome) {
        self.throughput_runs.push(run.msgs_per_sec());
        self.under_window.extend(&run.latencies);
        self.add_failures(run);
    }

    fn add_paced(&mut self, run: &mut RunOutcome) {
        self.paced_p99_runs
            .push(run.latencies.percentile_us(99.0).unwrap_or(f64::NAN));
        self.paced.extend(&run.latencies);
        self.add_failures(run);
    }

    fn add_failures(&mut self, run: &RunOutcome) {
        for (label, n) in &run.failures {
            *self.failures.entry(label.clone()).or_insert(0) += n;
        }
    }

    fn best_throughput(&self) -> f64 {
        self.throughput_runs.iter().copied().fold(0.0, f64::max)
    }

    /// The lowest paced p99 of the rounds (NaN without rounds).
    fn best_p99(&self) -> f64 {
        self.paced_p99_runs
            .iter()
            .copied()
            .reduce(f64::min)
            .unwrap_or(f64::NAN)
    }
}

/// Tracks exactly-once delivery on our routes across runs.
struct DeliveryCheck {
    exact: bool,
}

impl DeliveryCheck {
    /// One ours run on `route`, with the receiver's count checked against the run's
    /// `Delivered` count (exact when nothing ended `Unknown`).
    async fn run(
        &mut self,
        route: &OursRoute,
        load: &Load,
        api: SendApi,
    ) -> Result<RunOutcome, BenchError> {
        let before = route.receiver().received();
        let run = run_ours(route, load, api).await?;
        let expected = before + run.completed;
        let got = route.settle_received(expected, SETTLE_TIMEOUT).await;
        let unknown = run.failures.keys().any(|k| k.starts_with("unknown"));
        let exact = if unknown {
            got >= expected
        } else {
            got == expected
        };
        if !exact || route.receiver().unexpected() > 0 {
            eprintln!(
                "  ! {}: receiver counted {} for {} delivered ({} unexpected)",
                route.name(),
                got - before,
                run.completed,
                route.receiver().unexpected()
            );
            self.exact = false;
        }
        Ok(run)
    }
}

async fn measure(p: Params) -> Result<String, BenchError> {
    let started = Instant::now();
    let echo = EchoServer::bind(LOOPBACK)
        .await
        .map_err(|e| BenchError::io("bind the echo server", e))?;
    eprintln!("transport-report: starting registry + 5 nodes on loopback");
    let cluster = OursCluster::start(READY_TIMEOUT).await?;
    let mut check = DeliveryCheck { exact: true };

    eprintln!("warm-up ({} ms per path)", WARMUP.as_millis());
    let warm = Load::windowed(p.window, WARMUP);
    check.run(&cluster.direct, &warm, OURS_API).await?;
    check.run(&cluster.direct, &warm, SendApi::Post).await?;
    check.run(&cluster.direct, &warm, SendApi::Submit).await?;
    run_baseline(echo.local_addr(), &warm, ClientWrites::Batched).await?;
    check.run(&cluster.proxied, &warm, OURS_API).await?;

    let mut posted = PathResults::default();
    let mut ours = PathResults::default();
    let mut baseline = PathResults::default();
    let mut proxied = PathResults::default();
    let mut per_message = PathResults::default();
    let mut submitted = PathResults::default();

    let windowed = Load::windowed(p.window, p.throughput);
    for round in 0..p.rounds {
        for slot in 0..5 {
            match (round + slot) % 5 {
                0 => {
                    let run = check.run(&cluster.direct, &windowed, OURS_API).await?;
                    report_throughput(round, "ours (poster)", &run);
                    ours.add_throughput(&run);
                }
                4 => {
                    let run = check.run(&cluster.direct, &windowed, SendApi::Post).await?;
                    report_throughput(round, "ours (post)", &run);
                    posted.add_throughput(&run);
                }
                1 => {
                    let run =
                        run_baseline(echo.local_addr(), &windowed, ClientWrites::Batched).await?;
                    report_throughput(round, "baseline", &run);
                    baseline.add_throughput(&run);
                }
                2 => {
                    let run = check
                        .run(&cluster.direct, &windowed, SendApi::Submit)
                        .await?;
                    report_throughput(round, "ours (submit)", &run);
                    submitted.add_throughput(&run);
                }
                _ => {
                    let run = run_baseline(echo.local_addr(), &windowed, ClientWrites::PerMessage)
                        .await?;
                    report_throughput(round, "baseline (write per message)", &run);
                    per_message.add_throughput(&run);
                }
            }
        }
    }

    let paced = Load::paced(p.rate_per_sec, p.window, p.latency);
    for round in 0..p.rounds {
        for slot in 0..3 {
            match (round + slot) % 3 {
                0 => {
                    let mut run = check.run(&cluster.direct, &paced, OURS_API).await?;
                    report_paced(round, "ours direct", &mut run);
                    ours.add_paced(&mut run);
                }
                1 => {
                    let mut run =
                        run_baseline(echo.local_addr(), &paced, ClientWrites::Batched).await?;
                    report_paced(round, "baseline", &mut run);
                    baseline.add_paced(&mut run);
                }
                _ => {
                    let mut run = check.run(&cluster.proxied, &paced, OURS_API).await?;
                    report_paced(round, "ours proxied", &mut run);
                    proxied.add_paced(&mut run);
                }
            }
        }
    }
    let exactly_once = check.exact
        && cluster.direct.receiver().unexpected() == 0
        && cluster.proxied.receiver().unexpected() == 0;
    cluster.shutdown(Duration::from_secs(2)).await;
    let paths = Paths {
        ours,
        baseline,
        proxied,
        per_message,
        submitted,
        posted,
    };
    Ok(json_line(&p, paths, exactly_once, started.elapsed()))
}

fn report_throughput(round: u32, path: &str, run: &RunOutcome) {
    eprintln!(
        "throughput round {round}: {path:<28} {:>9.0} msg/s ({} failed)",
        run.msgs_per_sec(),
        run.failed
    );
}

fn report_paced(round: u32, path: &str, run: &mut RunOutcome) {
    let p50 = run.latencies.percentile_us(50.0).unwrap_or(f64::NAN);
    let p99 = run.latencies.percentile_us(99.0).unwrap_or(f64::NAN);
    eprintln!(
        "latency round {round}: {path:<12} p50 {p50:>8.1} µs  p99 {p99:>8.1} µs  ({} samples, {} failed)",
        run.completed, run.failed
    );
}

/// Results of every measured path.
struct Paths {
    ours: PathResults,
    baseline: PathResults,
    proxied: PathResults,
    per_message: PathResults,
    submitted: PathResults,
    posted: PathResults,
}

fn json_line(p: &Params, paths: Paths, exactly_once: bool, elapsed: Duration) -> String {
    let Paths {
        mut ours,
        mut baseline,
        mut proxied,
        per_message,
        submitted,
        posted,
    } = paths;
    let ours_tp = ours.best_throughput();
    let base_tp = baseline.best_throughput();
    let ratio = if base_tp > 0.0 {
        ours_tp / base_tp
    } else {
        0.0
    };
    let ours_p99 = ours.best_p99();
    let base_p99 = baseline.best_p99();
    let proxy_p99 = proxied.best_p99();
    let added = proxy_p99 - ours_p99;
    let mut failures = ours.failures.clone();
    for (k, v) in &proxied.failures {
        *failures.entry(k.clone()).or_insert(0) += v;
    }
    let us = |v: f64| json!(round_to(v, 1));
    let pct = |l: &mut Latencies, q: f64| us(l.percentile_us(q).unwrap_or(f64::NAN));
    let list =
        |v: &[f64], decimals| json!(v.iter().map(|x| round_to(*x, decimals)).collect::<Vec<_>>());
    let fields: Vec<(&str, Value)> = vec![
        ("ours_msgs_per_sec", json!(ours_tp.round())),
        ("baseline_msgs_per_sec", json!(base_tp.round())),
        ("ratio", json!(round_to(ratio, 3))),
        ("ours_p99_us", us(ours_p99)),
        ("baseline_p99_us", us(base_p99)),
        ("proxy_hop_p99_us", us(proxy_p99)),
        ("direct_p99_us_at_10k", us(ours_p99)),
        ("proxy_hop_added_p99_us", us(added)),
        ("ours_p50_us", pct(&mut ours.paced, 50.0)),
        ("baseline_p50_us", pct(&mut baseline.paced, 50.0)),
        ("proxy_hop_p50_us", pct(&mut proxied.paced, 50.0)),
        ("ours_p99_us_pooled", pct(&mut ours.paced, 99.0)),
        ("baseline_p99_us_pooled", pct(&mut baseline.paced, 99.0)),
        ("proxy_hop_p99_us_pooled", pct(&mut proxied.paced, 99.0)),
        ("ours_p999_us_pooled", pct(&mut ours.paced, 99.9)),
        ("baseline_p999_us_pooled", pct(&mut baseline.paced, 99.9)),
        ("proxy_hop_p999_us_pooled", pct(&mut proxied.paced, 99.9)),
        ("ours_p99_us_runs", list(&ours.paced_p99_runs, 1)),
        ("baseline_p99_us_runs", list(&baseline.paced_p99_runs, 1)),
        ("proxy_hop_p99_us_runs", list(&proxied.paced_p99_runs, 1)),
        ("ours_p99_us_windowed", pct(&mut ours.under_window, 99.0)),
        (
            "baseline_p99_us_windowed",
            pct(&mut baseline.under_window, 99.0),
        ),
        (
            "ours_post_msgs_per_sec",
            json!(posted.best_throughput().round()),
        ),
        (
            "ours_submit_msgs_per_sec",
            json!(submitted.best_throughput().round()),
        ),
        (
            "baseline_write_per_msg_msgs_per_sec",
            json!(per_message.best_throughput().round()),
        ),
        ("ours_msgs_per_sec_runs", list(&ours.throughput_runs, 0)),
        (
            "baseline_msgs_per_sec_runs",
            list(&baseline.throughput_runs, 0),
        ),
        ("goal_ratio_met", json!(ratio >= 0.7)),
        ("goal_p99_met", json!(ours_p99 <= 2.0 * base_p99)),
        ("goal_proxy_hop_met", json!(added <= 1000.0)),
        ("ours_failures", json!(failures)),
        ("ours_exactly_once", json!(exactly_once)),
        ("samples_per_latency_path", json!(ours.paced.len())),
        ("ours_send_api", json!(OURS_API.name())),
        ("window", json!(p.window)),
        ("rate_per_sec", json!(p.rate_per_sec)),
        ("rounds", json!(p.rounds)),
        ("throughput_seconds", json!(p.throughput.as_secs_f64())),
        ("latency_seconds", json!(p.latency.as_secs_f64())),
        ("payload_bytes", json!(PAYLOAD_BYTES)),
        ("worker_threads", json!(WORKER_THREADS)),
        ("elapsed_s", json!(round_to(elapsed.as_secs_f64(), 1))),
    ];
    let body: Vec<String> = fields
        .into_iter()
        .map(|(k, v)| format!("{}:{v}", Value::from(k)))
        .collect();
    format!("{{{}}}", body.join(","))
}

fn round_to(v: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (v * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Params, UsageError> {
        Params::parse(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn defaults_without_flags() {
        let p = parse(&[]).expect("no flags is valid");
        assert_eq!(p.rounds, 3);
        assert_eq!(p.throughput, Duration::from_secs(2));
        assert_eq!(p.latency, Duration::from_secs(2));
        assert_eq!(p.window, 256);
        assert_eq!(p.rate_per_sec, 10_000);
    }

    #[test]
    fn every_flag_is_read() {
        let p = parse(&[
            "--rounds",
            "1",
            "--throughput-seconds",
            "0.5",
            "--latency-seconds",
            "1.5",
            "--window",
            "64",
            "--rate",
            "5000",
        ])
        .expect("valid flags");
        assert_eq!(p.rounds, 1);
        assert_eq!(p.throughput, Duration::from_millis(500));
        assert_eq!(p.latency, Duration::from_millis(1500));
        assert_eq!(p.window, 64);
        assert_eq!(p.rate_per_sec, 5000);
    }

    #[test]
    fn bad_flags_name_the_field() {
        assert_eq!(
            parse(&["--window", "0"])
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err("flag --window: `0` is not an integer in 1..=4096".to_owned())
        );
        assert_eq!(
            parse(&["--rate"]).map(|_| ()).map_err(|e| e.to_string()),
            Err("flag --rate needs a value".to_owned())
        );
        assert_eq!(
            parse(&["--latency-seconds", "-1"])
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err("flag --latency-seconds: `-1` is not seconds in (0, 60]".to_owned())
        );
        assert!(matches!(
            parse(&["--fast"]),
            Err(UsageError::UnknownFlag(f)) if f == "--fast"
        ));
    }

    #[test]
    fn json_values_are_rounded() {
        assert_eq!(round_to(12.345_67, 1), 12.3);
        assert_eq!(round_to(0.699_96, 3), 0.7);
    }
}
