//! `transport-profile`: one side of `transport-report`'s throughput run, alone, for a profiler.
//!
//! Runs a counted windowed run (`--messages N`, `--window W`) of one side — `ours` (a
//! `Poster` over the direct route, as `transport-report`'s headline figure) or `baseline`
//! (the raw tokio echo) — after an untimed warm-up, and prints one JSON line: round trips per
//! second, and the process's CPU time and thread context switches per round trip (read from
//! `/proc`, so the figures hold on a loaded machine better than wall time does). With
//! `--current-thread` everything runs on one thread (for callgrind: instruction counts per
//! round trip without scheduler noise).
//!
//! Examples: `perf record -g target/release/transport-profile --side ours --messages 2000000`;
//! `valgrind --tool=callgrind target/release/transport-profile --current-thread --messages 100000`.

use std::{
    net::{Ipv4Addr, SocketAddr},
    process::ExitCode,
    time::{Duration, Instant},
};

use serde_json::json;
use switchboard_benches::transport::{
    BenchError, WORKER_THREADS,
    baseline::{ClientWrites, EchoServer, run_baseline},
    load::{Load, RunOutcome, Stop},
    ours::{OursCluster, SendApi, run_ours},
};

const LOOPBACK: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
const READY_TIMEOUT: Duration = Duration::from_secs(15);
const WARMUP_MESSAGES: u64 = 20_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Ours,
    Baseline,
}

#[derive(Clone, Copy, Debug)]
struct Params {
    side: Side,
    messages: u64,
    window: usize,
    current_thread: bool,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Params, String> {
    let mut p = Params {
        side: Side::Ours,
        messages: 1_000_000,
        window: 256,
        current_thread: false,
    };
    while let Some(flag) = args.next() {
        if flag == "--current-thread" {
            p.current_thread = true;
            continue;
        }
        let value = args
            .next()
            .ok_or_else(|| format!("flag {flag} needs a value"))?;
        match flag.as_str() {
            "--side" => {
                p.side = match value.as_str() {
                    "ours" => Side::Ours,
                    "baseline" => Side::Baseline,
                    _ => return Err(format!("--side: `{value}` is not ours or baseline")),
                }
            }
            "--messages" => {
                p.messages =
                    value.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                        format!("--messages: `{value}` is not a positive integer")
                    })?;
            }
            "--window" => {
                p.window = value
                    .parse()
                    .ok()
                    .filter(|&w| (1..=4096).contains(&w))
                    .ok_or_else(|| format!("--window: `{value}` is not in 1..=4096"))?;
            }
            _ => {
                return Err(format!(
                    "unknown flag `{flag}` (flags: --side, --messages, --window, --current-thread)"
                ));
            }
        }
    }
    Ok(p)
}

/// CPU time of the whole process (user + system) and context switches of all its threads.
#[derive(Clone, Copy, Debug, Default)]
struct Usage {
    cpu: Duration,
    switches: u64,
}

impl Usage {
    fn now() -> Usage {
        // Fields 14 and 15 of /proc/self/stat (after the parenthesised name): utime, stime in
        // clock ticks (100 per second on Linux).
        let cpu = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|stat| {
                let rest = stat.rsplit_once(')')?.1;
                let fields: Vec<&str> = rest.split_whitespace().collect();
                let utime: u64 = fields.get(11)?.parse().ok()?;
                let stime: u64 = fields.get(12)?.parse().ok()?;
                Some(Duration::from_millis((utime + stime) * 10))
            })
            .unwrap_or_default();
        let mut switches = 0;
        if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
            for task in tasks.flatten() {
                let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
                    continue;
                };
                for line in status.lines() {
                    if let Some(n) = line
                        .strip_prefix("voluntary_ctxt_switches:")
                        .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
                    {
                        switches += n.trim().parse::<u64>().unwrap_or(0);
                    }
                }
            }
        }
        Usage { cpu, switches }
    }
}

async fn measure(p: Params) -> Result<String, BenchError> {
    let counted = |n| Load {
        in_flight: p.window,
        rate_per_sec: None,
        stop: Stop::Count(n),
    };
    let (run, before, after): (RunOutcome, Usage, Usage) = match p.side {
        Side::Ours => {
            let cluster = OursCluster::start(READY_TIMEOUT).await?;
            run_ours(&cluster.direct, &counted(WARMUP_MESSAGES), SendApi::Stream).await?;
            let before = Usage::now();
            let run = run_ours(&cluster.direct, &counted(p.messages), SendApi::Stream).await?;
            let after = Usage::now();
            cluster.shutdown(Duration::from_secs(2)).await;
            (run, before, after)
        }
        Side::Baseline => {
            let echo = EchoServer::bind(LOOPBACK)
                .await
                .map_err(|e| BenchError::io("bind the echo server", e))?;
            let addr = echo.local_addr();
            run_baseline(addr, &counted(WARMUP_MESSAGES), ClientWrites::Batched).await?;
            let before = Usage::now();
            let run = run_baseline(addr, &counted(p.messages), ClientWrites::Batched).await?;
            (run, before, Usage::now())
        }
    };
    let per_msg = |total: f64| total / run.completed.max(1) as f64;
    Ok(json!({
        "side": format!("{:?}", p.side).to_lowercase(),
        "current_thread": p.current_thread,
        "window": p.window,
        "completed": run.completed,
        "failed": run.failed,
        "msgs_per_sec": run.msgs_per_sec().round(),
        "cpu_ns_per_msg": per_msg((after.cpu - before.cpu).as_nanos() as f64).round(),
        "switches_per_1k_msgs": (per_msg((after.switches - before.switches) as f64) * 1000.0 * 10.0).round() / 10.0,
    })
    .to_string())
}

fn main() -> ExitCode {
    let p = match parse(std::env::args().skip(1)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("transport-profile: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = if p.current_thread {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKER_THREADS)
            .enable_all()
            .build()
    };
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("transport-profile: cannot build the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let started = Instant::now();
    let result = if p.current_thread {
        rt.block_on(measure(p))
    } else {
        switchboard_benches::transport::run_on_workers(&rt, measure(p))
    };
    match result {
        Ok(line) => {
            println!("{line}");
            eprintln!("transport-profile: {} ms", started.elapsed().as_millis());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("transport-profile: {e}");
            ExitCode::FAILURE
        }
    }
}
