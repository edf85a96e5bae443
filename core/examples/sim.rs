//! The seeds runner: runs the seeded chaos scenario of `core::sim::scenario` for a range of
//! seeds and reports one JSON line.
//!
//! ```text
//! cargo run --profile sim -p switchboard-core --features sim --example sim -- --seeds N [--from S] [--faults all] [--registry scripted] [--jobs J]
//! ```
//!
//! Runs seeds `S..S+N` (`S` defaults to 0) with the default (mild) fault set, or every fault
//! kind with `--faults all` (`--faults mild` names the default). The nodes register through
//! the real registry machines (`--registry machines`, the default) or learn from the scripted
//! registry (`--registry scripted`). Seeds run on `J` threads (default: the cores available,
//! at most `N`); each seed is a deterministic run of its own, and the results are reported
//! in seed order, so the counts and the lines printed do not depend on `J`. Progress goes to
//! stderr. The last stdout line is
//! `{"seeds":N,"violations":V,"sent":..,"delivered":..,"failed":{reason:count},"events":..,"jobs":J,"events_per_sec":..,"events_per_sec_per_job":..}`:
//! `sent` counts accepted messages, `delivered` distinct messages handed to an application,
//! `failed` every outcome other than `Delivered` by key — `Failed(r)` as the reason
//! (`timeout`, `queue_full`, `no_route`, `target_gone`, `shutdown`), `Unknown(r)` as
//! `unknown_<reason>`, and accepted messages whose sender was killed before reporting as
//! `sender_killed` — `events` the deliveries and timer firings simulated, `events_per_sec`
//! per wall-clock second with `J` threads, `events_per_sec_per_job` per second of one
//! thread's run time (the events over the summed run times of the seeds). For each seed with a
//! violation, stderr gets the violations and stdout a line (before the JSON) with the seed and
//! the command that replays it. `--trace FILE` also writes the full simulator trace of seed
//! `S` to `FILE` (a replay aid). Exit code 1 when violations > 0, 2 on bad flags.

use std::{
    collections::BTreeMap,
    num::NonZeroUsize,
    process::ExitCode,
    sync::{
        atomic::{AtomicU64, Ordering},
        mpsc,
    },
    thread,
    time::Instant,
};

use switchboard_core::sim::scenario::{Faults, RegistryMode, SeedReport, run_seed_with};

/// The runner's allocator: the simulated nodes allocate small, short-lived buffers at every
/// step (frames, records, events), and mimalloc serves them faster than the system
/// allocator; the library itself leaves the choice to its users.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Args {
    seeds: u64,
    from: u64,
    all: bool,
    mode: RegistryMode,
    trace: Option<String>,
    /// Threads; `None` for the cores available.
    jobs: Option<NonZeroUsize>,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        seeds: 1,
        from: 0,
        all: false,
        mode: RegistryMode::Machines,
        trace: None,
        jobs: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "--seeds" => {
                args.seeds = value("--seeds")?
                    .parse()
                    .map_err(|e| format!("--seeds: {e}"))?;
            }
            "--from" => {
                args.from = value("--from")?
                    .parse()
                    .map_err(|e| format!("--from: {e}"))?;
            }
            "--faults" => match value("--faults")?.as_str() {
                "all" => args.all = true,
                "mild" => args.all = false,
                other => return Err(format!("--faults: expected all or mild, got {other:?}")),
            },
            "--registry" => match value("--registry")?.as_str() {
                "machines" => args.mode = RegistryMode::Machines,
                "scripted" => args.mode = RegistryMode::Scripted,
                other => {
                    return Err(format!(
                        "--registry: expected machines or scripted, got {other:?}"
                    ));
                }
            },
            "--trace" => args.trace = Some(value("--trace")?),
            "--jobs" => {
                args.jobs = Some(
                    value("--jobs")?
                        .parse()
                        .map_err(|e| format!("--jobs: expected a count of 1 or more: {e}"))?,
                );
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

#[expect(
    clippy::disallowed_methods,
    reason = "the runner reports events per wall-clock second; the simulation itself never reads the clock"
)]
fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "sim: {e} (usage: --seeds N [--from S] [--faults all|mild] [--registry machines|scripted] [--jobs J] [--trace FILE])"
            );
            return ExitCode::from(2);
        }
    };
    let faults = if args.all {
        Faults::all()
    } else {
        Faults::mild()
    };
    let mut flag = String::from(if args.all { " --faults all" } else { "" });
    if args.mode == RegistryMode::Scripted {
        flag.push_str(" --registry scripted");
    }
    if let Some(path) = &args.trace {
        // Replay aid: the full trace of seed `--from` goes to `path`.
        let chaos = run_seed_with(args.from, faults, args.mode, true);
        let text = chaos.sim.trace().join("\n");
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("sim: writing {path}: {e}");
            return ExitCode::from(2);
        }
        eprintln!("sim: trace of seed {} written to {path}", args.from);
    }
    let started = Instant::now();
    let (mut sent, mut delivered, mut events, mut violations) = (0u64, 0u64, 0u64, 0u64);
    let mut rpc = [0u64; 6];
    let mut call_outcomes: BTreeMap<String, u64> = BTreeMap::new();
    let mut failed: BTreeMap<String, u64> = BTreeMap::new();
    let end = args.from.saturating_add(args.seeds);
    let jobs = args
        .jobs
        .or_else(|| thread::available_parallelism().ok())
        .map_or(1, NonZeroUsize::get)
        .min(usize::try_from(args.seeds).unwrap_or(usize::MAX))
        .max(1);
    let mut run_secs = 0.0;
    let mut finished = 0u64;
    for (seed, report, secs) in run_in_seed_order(args.from..end, jobs, faults, args.mode) {
        finished += 1;
        run_secs += secs;
        sent += report.totals.sent;
        delivered += report.totals.delivered;
        events += report.events;
        let r = &report.rpc;
        for (k, v) in &r.outcomes {
            *call_outcomes.entry(k.clone()).or_insert(0) += v;
        }
        for (sum, n) in rpc.iter_mut().zip([
            r.calls,
            r.replies,
            r.failed,
            r.unknown,
            r.executed,
            r.broadcasts,
        ]) {
            *sum += n;
        }
        for (k, v) in &report.totals.failed {
            *failed.entry(k.clone()).or_insert(0) += v;
        }
        if !report.violations.is_empty() {
            violations += report.violations.len() as u64;
            let replay = format!(
                "cargo run --profile sim -p switchboard-core --features sim --example sim -- --seeds 1 --from {seed}{flag}"
            );
            eprintln!(
                "sim: seed {seed}: {} violation(s); replay: {replay}",
                report.violations.len()
            );
            for v in report.violations.iter().take(10) {
                eprintln!("  {v}");
            }
            println!(
                "{{\"violation_seed\":{seed},\"violations\":{},\"replay\":\"{replay}\"}}",
                report.violations.len()
            );
        }
        let done = seed - args.from + 1;
        if done % 100 == 0 || done == args.seeds {
            eprintln!(
                "sim: {done}/{} seeds, {violations} violations, {:.1}s",
                args.seeds,
                started.elapsed().as_secs_f64()
            );
        }
    }
    if finished < end - args.from {
        // A worker's seed panicked (its message is above); the seeds after it may have run.
        let seed = args.from + finished;
        eprintln!(
            "sim: seed {seed} did not finish: its run panicked; replay: cargo run --profile sim -p \
             switchboard-core --features sim --example sim -- --seeds 1 --from {seed}{flag}"
        );
        return ExitCode::from(1);
    }
    let secs = started.elapsed().as_secs_f64();
    let failed_json: Vec<String> = failed.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    let call_json: Vec<String> = call_outcomes
        .iter()
        .map(|(k, v)| format!("\"{k}\":{v}"))
        .collect();
    let [
        calls,
        replies,
        call_failed,
        call_unknown,
        executed,
        broadcasts,
    ] = rpc;
    let rate = |secs: f64| {
        if secs > 0.0 {
            (events as f64 / secs) as u64
        } else {
            0
        }
    };
    println!(
        "{{\"seeds\":{},\"violations\":{violations},\"sent\":{sent},\"delivered\":{delivered},\"failed\":{{{}}},\"calls\":{calls},\"replies\":{replies},\"calls_failed\":{call_failed},\"calls_unknown\":{call_unknown},\"handler_runs\":{executed},\"broadcasts\":{broadcasts},\"call_outcomes\":{{{}}},\"events\":{events},\"jobs\":{jobs},\"events_per_sec\":{},\"events_per_sec_per_job\":{}}}",
        args.seeds,
        failed_json.join(","),
        call_json.join(","),
        rate(secs),
        rate(run_secs),
    );
    if violations > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Runs `seeds` on `jobs` threads and yields each seed's report and run time (in seconds) in
/// seed order, as soon as it and every seed before it are done.
#[expect(
    clippy::disallowed_methods,
    reason = "the run time of a seed is a wall-clock figure of the runner, not of the simulation"
)]
fn run_in_seed_order(
    seeds: std::ops::Range<u64>,
    jobs: usize,
    faults: Faults,
    mode: RegistryMode,
) -> impl Iterator<Item = (u64, SeedReport, f64)> {
    let (tx, rx) = mpsc::channel::<(u64, SeedReport, f64)>();
    let next = std::sync::Arc::new(AtomicU64::new(seeds.start));
    for _ in 0..jobs {
        let (tx, next, end) = (tx.clone(), std::sync::Arc::clone(&next), seeds.end);
        thread::spawn(move || {
            loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= end {
                    break;
                }
                let started = Instant::now();
                let report = run_seed_with(seed, faults, mode, false).report(seed);
                if tx
                    .send((seed, report, started.elapsed().as_secs_f64()))
                    .is_err()
                {
                    break;
                }
            }
        });
    }
    drop(tx);
    let mut waiting: BTreeMap<u64, (SeedReport, f64)> = BTreeMap::new();
    let mut expected = seeds.start;
    std::iter::from_fn(move || {
        loop {
            if let Some((report, secs)) = waiting.remove(&expected) {
                expected += 1;
                return Some((expected - 1, report, secs));
            }
            let (seed, report, secs) = rx.recv().ok()?;
            waiting.insert(seed, (report, secs));
        }
    })
}
