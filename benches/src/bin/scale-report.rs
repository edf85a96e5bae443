//! `scale-report`: the registry at N = 1,000 and 10,000 nodes in the simulator, as one JSON
//! line.
//!
//! Run `cargo run --release -p switchboard-benches --bin scale-report` (`--nodes 1000,10000`
//! by default; progress on stderr). For each N (`"nN"`), on the real registry server and N
//! real registry clients over a 1 Gbit/s registry egress
//! (`switchboard_core::sim::scale::ScaleRun`, 16 full members, 4 from N = 5,000):
//!
//! - `join_converge_s` / `join_bound_s`: every node starts at once; virtual seconds until
//!   every view is exact, and N × N × the entry size ÷ the egress bandwidth;
//! - `bytes_per_change_over_floor`: one node's new record (a full member's), the bytes the
//!   registry sent ÷ (entry size × connections);
//! - `discovery_bytes_per_known_node`: a full member's client view, discovery set and rings
//!   after the join, per known node (estimated from capacities; see `scale::memory`);
//! - `restart_converge_s` / `restart_bound_s`: the registry killed and a new one started at
//!   once; from the kill until every view is exact again;
//! - `kill10_converge_s`: every tenth node killed; until every view lost them (the
//!   registry's 30 s disconnect protection included);
//! - `rolling_converge_s`: every node restarted in turn, `rolling_interval_ms` apart; from
//!   the first restart until every view holds every new incarnation;
//! - per scenario `*_frames` / `*_bytes` the registry sent and `*_events_per_change` (registry
//!   events a full member's records were handed per membership change);
//! - `entry_len`, `wall_s` (this N's wall-clock time).

use std::time::Instant as WallClock;

use serde_json::{Map, Value, json};
use switchboard_core::{
    sim::scale::{ScaleConfig, ScaleRun, ScenarioFigures, discovery_memory},
    time::Duration,
};

fn main() {
    let nodes = node_counts();
    let mut report = Map::new();
    for n in nodes {
        report.insert(format!("n{n}"), Value::Object(measure(n)));
    }
    println!("{}", Value::Object(report));
}

/// `--nodes A,B,...` or 1,000 and 10,000.
fn node_counts() -> Vec<usize> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--nodes") {
        Some(i) => args
            .get(i + 1)
            .map(|list| list.split(',').filter_map(|n| n.parse().ok()).collect())
            .unwrap_or_default(),
        None => vec![1000, 10_000],
    }
}

fn measure(n: usize) -> Map<String, Value> {
    let wall = WallClock::now();
    let mut config = ScaleConfig::gigabit(n);
    // A full member's ring takes every join as one insert that moves its points (O(N) each):
    // at 10,000 four full members keep the run within minutes.
    if n >= 5_000 {
        config.full = 4;
    }
    let mut run = ScaleRun::new(config);
    let mut out = Map::new();
    out.insert("entry_len".into(), json!(run.entry_len()));

    let join = run.mass_join();
    scenario(&mut out, "join", &join, &wall);
    let memory = run
        .full_members()
        .into_iter()
        .filter_map(|i| discovery_memory(&run, i))
        .max_by_key(|m| m.per_known_node());
    if let Some(m) = memory {
        out.insert(
            "discovery_bytes_per_known_node".into(),
            json!(m.per_known_node()),
        );
        out.insert("discovery_client_view_bytes".into(), json!(m.client_view));
        out.insert("discovery_set_bytes".into(), json!(m.discovery_set));
        out.insert("discovery_ring_bytes".into(), json!(m.rings));
    }

    // A full member (a light one's client never sees its snapshot, so it sends no updates).
    let full = run.full_members();
    let change = run.one_change(full[full.len() / 2]);
    out.insert(
        "bytes_per_change_over_floor".into(),
        json!(round3(change.over_floor())),
    );
    out.insert("change_bytes".into(), json!(change.sent.bytes));
    out.insert("change_frames".into(), json!(change.sent.frames));

    let restart = run.registry_restart(Duration::ZERO);
    scenario(&mut out, "restart", &restart, &wall);
    let kill = run.kill_tenth();
    scenario(&mut out, "kill10", &kill, &wall);
    let interval = Duration::from_millis(10);
    out.insert("rolling_interval_ms".into(), json!(interval.as_millis()));
    let rolling = run.rolling_restart(interval);
    scenario(&mut out, "rolling", &rolling, &wall);
    out.insert("wall_s".into(), json!(round3(wall.elapsed().as_secs_f64())));
    out
}

/// Adds `name`'s figures to `out` (and a progress line on stderr).
fn scenario(out: &mut Map<String, Value>, name: &str, f: &ScenarioFigures, wall: &WallClock) {
    let converge = f.converge.map(|d| round3(d.as_secs_f64()));
    eprintln!(
        "{name}: converge {converge:?} s, bound {:.3} s, {} frames, {} bytes ({:.1} s wall)",
        f.bound.as_secs_f64(),
        f.sent.frames,
        f.sent.bytes,
        wall.elapsed().as_secs_f64()
    );
    out.insert(format!("{name}_converge_s"), json!(converge));
    if !f.bound.is_zero() {
        out.insert(
            format!("{name}_bound_s"),
            json!(round3(f.bound.as_secs_f64())),
        );
    }
    out.insert(format!("{name}_frames"), json!(f.sent.frames));
    out.insert(format!("{name}_bytes"), json!(f.sent.bytes));
    out.insert(
        format!("{name}_events_per_change"),
        json!(round3(f.events_per_change())),
    );
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
