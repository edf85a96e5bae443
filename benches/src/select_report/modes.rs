//! The `modes` section of `select-report` (see the [parent](super)): the selection modes of
//! issue 26 against their plain baselines, each through the core's own code (`MaglevTable`,
//! `Ring`, `Selector::pick`).
//!
//! - **Maglev against the ring**, 1,000 nodes, the default 65,537 slots: the median of 9
//!   full builds each (`maglev_build_ns`, `ring_build_ns`; a Maglev build starts from a fresh
//!   table, so it hashes every permutation too), the mean lookup of the same 2^20 keys
//!   (`maglev_lookup_ns`, `ring_lookup_ns`; key hashing included, median of 5 passes; the
//!   same keys hashed beforehand: `…_lookup_hashed_ns`), and
//!   the key space that changes owner when one node is removed, averaged over removing each
//!   of the 1,000 in turn, exactly: Maglev's changed slots ÷ 65,537, the ring's removed arcs
//!   ÷ 2^64 (`maglev_moved_vs_ring` = Maglev ÷ ring; both fractions reported too), and
//!   the same for a 655,373-slot table over 50 of the removals (`maglev_655373_moved_vs_ring`);
//!   the fewest and most slots a node owns ÷ the mean (`maglev_min_share_of_mean`,
//!   `maglev_max_share_of_mean`); and the same build, disruption (over every fifth removal)
//!   and shares for the stable fill (`maglev_stable_*`).
//! - **Bounded loads under Zipf keys** (virtual time, seeded): 100 nodes, keys drawn from
//!   10,000 with Zipf(1.1) probabilities, Poisson arrivals at 1 per unit, each request holding
//!   its node for an exponential time of mean 10,000 units (so 10,000 outstanding on average,
//!   100 per node). Load = a node's outstanding requests, read by the pick. After 50,000
//!   arrivals of warm-up, each of 200,000 arrivals records the busiest node's load ÷ the mean
//!   load right after its pick; `bounded_peak_mean` is the mean of that ratio with
//!   `Select::Bounded` (c = 1.25), `ring_peak_mean_zipf` with `Select::Hash`, and
//!   `…_max` the largest ratio seen.
//! - **One slow node** (virtual time, seeded): 10 single-server FIFO queues, one with 10×
//!   the mean service time (exponential, 1 unit; 10 units), Poisson arrivals at half the
//!   servers' total capacity (4.55 per unit), 200,000 requests; load = a server's outstanding
//!   requests (queued or in service). `p2c_slow_share_of_fair` is the share of requests the
//!   slow server got with `Select::LeastOutstanding` ÷ 1/10, `rr_slow_share_of_fair` the same
//!   with `Select::RoundRobin`.

use std::{
    cmp::Reverse,
    collections::BinaryHeap,
    hint::black_box,
    time::{Duration, Instant},
};

use bytes::Bytes;
use serde_json::json;
use switchboard_core::{
    discovery::Metadata,
    hash::{KeyHash, key_hash},
    ids::NodeId,
    ring::{Ring, RingConfig, RingMember, RingSet},
    rng::Rng,
    select::{Among, MaglevFill, MaglevTable, Select, SelectConfig, Selector},
};

use super::Figures;

/// Runs the section's seeded experiments and adds their figures to `out`.
pub fn run(out: &mut Figures) {
    maglev_against_ring(out);
    zipf_loads(out);
    slow_node(out);
}

/// Rounds to 4 decimals for the report.
fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

const NODES: u64 = 1_000;
const BUILDS: usize = 9;
const LOOKUP_KEYS: u64 = 1 << 20;
const LOOKUP_PASSES: usize = 5;

/// Names `node-1` … `node-<n>` for [`members`].
#[must_use]
pub fn node_names(n: u64) -> Vec<String> {
    (1..=n).map(|id| format!("node-{id}")).collect()
}

/// Ring members with ids 1, 2, … named by `names` (the Maglev against ring nodes, shared
/// with the `select` criterion bench).
pub fn members(names: &[String]) -> impl Iterator<Item = RingMember<'_>> {
    names
        .iter()
        .zip(1..)
        .map(|(name, id)| RingMember::new(NodeId(id), name))
}

fn maglev_against_ring(out: &mut Figures) {
    let names = node_names(NODES);
    let members = || members(&names);
    let ids = || (1..=NODES).map(NodeId);
    let size = MaglevTable::DEFAULT_SIZE;
    let maglev_builds = (0..BUILDS)
        .map(|_| {
            let started = Instant::now();
            let mut table = MaglevTable::new(size).expect("a prime");
            table.build(ids());
            black_box(table.node_count());
            started.elapsed()
        })
        .collect();
    let mut ring = Ring::new(RingConfig::fast());
    let ring_builds = (0..BUILDS)
        .map(|_| {
            let started = Instant::now();
            ring.build(members()).expect("valid members");
            black_box(ring.point_count());
            started.elapsed()
        })
        .collect();
    let mut table = MaglevTable::new(size).expect("a prime");
    table.build(ids());
    let mut rng = Rng::new(26);
    let keys: Vec<[u8; 8]> = (0..LOOKUP_KEYS)
        .map(|_| rng.next_u64().to_le_bytes())
        .collect();
    let per_lookup = |lookup: &dyn Fn(&[u8]) -> Option<NodeId>| {
        let passes = (0..LOOKUP_PASSES)
            .map(|_| {
                let started = Instant::now();
                for key in &keys {
                    black_box(lookup(black_box(key)));
                }
                started.elapsed()
            })
            .collect();
        median(passes).as_secs_f64() * 1e9 / LOOKUP_KEYS as f64
    };
    let maglev_lookup = per_lookup(&|key| table.lookup(key));
    let ring_lookup = per_lookup(&|key| ring.lookup(key));
    // The same lookups of keys hashed beforehand: the table or ring part alone.
    let hashes: Vec<KeyHash> = keys.iter().map(|k| key_hash(k)).collect();
    let per_hashed = |lookup: &dyn Fn(KeyHash) -> Option<NodeId>| {
        let passes = (0..LOOKUP_PASSES)
            .map(|_| {
                let started = Instant::now();
                for &hash in &hashes {
                    black_box(lookup(black_box(hash)));
                }
                started.elapsed()
            })
            .collect();
        median(passes).as_secs_f64() * 1e9 / LOOKUP_KEYS as f64
    };
    let maglev_hashed = per_hashed(&|hash| table.lookup_hash(hash));
    let ring_hashed = per_hashed(&|hash| ring.lookup_hash(hash));
    out.insert(
        "maglev_lookup_hashed_ns".into(),
        json!(round4(maglev_hashed)),
    );
    out.insert("ring_lookup_hashed_ns".into(), json!(round4(ring_hashed)));
    let (maglev_moved, ring_moved) = moved_by_one_removal(&table, &ring);
    // A table ten times larger (the paper's 655,373) over 50 of the removals: how the extra
    // disruption falls with slots per node.
    let mut large = MaglevTable::new(LARGE_SIZE).expect("a prime");
    large.build(ids());
    out.insert(
        "maglev_655373_moved_vs_ring".into(),
        json!(round4(sampled_moved(&large, LARGE_SAMPLES) / ring_moved)),
    );
    out.insert(
        "maglev_build_ns".into(),
        json!(nanos(median(maglev_builds))),
    );
    out.insert("ring_build_ns".into(), json!(nanos(median(ring_builds))));
    out.insert("maglev_lookup_ns".into(), json!(round4(maglev_lookup)));
    out.insert("ring_lookup_ns".into(), json!(round4(ring_lookup)));
    out.insert(
        "maglev_moved_vs_ring".into(),
        json!(round4(maglev_moved / ring_moved)),
    );
    out.insert("maglev_moved_fraction".into(), json!(maglev_moved));
    out.insert("ring_moved_fraction".into(), json!(ring_moved));
    out.insert("maglev_table_bytes".into(), json!(table.memory_bytes()));
    let (low, high) = shares(&table);
    out.insert("maglev_min_share_of_mean".into(), json!(round4(low)));
    out.insert("maglev_max_share_of_mean".into(), json!(round4(high)));
    stable_fill(out, ring_moved);
}

/// Removals the stable fill's disruption is averaged over (every fifth node: its builds take
/// about twice the paper fill's).
const STABLE_SAMPLES: u64 = 200;

/// The stable fill ([`MaglevFill::Stable`]) on the same 1,000 nodes: build time (median of
/// 9), keys moved by one removal over 200 of the removals (every fifth node) ÷ the ring's
/// exact mean, and the least and the most slots a node owns ÷ the mean.
fn stable_fill(out: &mut Figures, ring_moved: f64) {
    let ids = || (1..=NODES).map(NodeId);
    let stable = || {
        MaglevTable::new(MaglevTable::DEFAULT_SIZE)
            .expect("a prime")
            .with_fill(MaglevFill::Stable)
    };
    let builds = (0..BUILDS)
        .map(|_| {
            let started = Instant::now();
            let mut table = stable();
            table.build(ids());
            black_box(table.node_count());
            started.elapsed()
        })
        .collect();
    let mut table = stable();
    table.build(ids());
    let moved = sampled_moved(&table, STABLE_SAMPLES);
    let (low, high) = shares(&table);
    out.insert(
        "maglev_stable_build_ns".into(),
        json!(nanos(median(builds))),
    );
    out.insert(
        "maglev_stable_moved_vs_ring".into(),
        json!(round4(moved / ring_moved)),
    );
    out.insert("maglev_stable_min_share_of_mean".into(), json!(round4(low)));
    out.insert(
        "maglev_stable_max_share_of_mean".into(),
        json!(round4(high)),
    );
}

/// The fewest and the most slots a node of `table` owns, each ÷ the mean (size ÷ nodes).
fn shares(table: &MaglevTable) -> (f64, f64) {
    let mut owned = std::collections::HashMap::new();
    for id in table.slots() {
        *owned.entry(id).or_insert(0u32) += 1;
    }
    let mean = f64::from(table.size()) / table.node_count() as f64;
    let fewest = if owned.len() < table.node_count() {
        0
    } else {
        owned.values().copied().min().unwrap_or(0)
    };
    let most = owned.values().copied().max().unwrap_or(0);
    (f64::from(fewest) / mean, f64::from(most) / mean)
}

const LARGE_SIZE: u32 = 655_373;
const LARGE_SAMPLES: u64 = 50;

/// The mean fraction of `table`'s slots that change owner when one node is removed, over
/// removing every `NODES / samples`-th node in turn.
fn sampled_moved(table: &MaglevTable, samples: u64) -> f64 {
    let before: Vec<NodeId> = table.slots().collect();
    let mut without = MaglevTable::new(table.size())
        .expect("a prime")
        .with_fill(table.fill());
    let mut changed = 0u64;
    for gone in (1..=NODES).step_by((NODES / samples) as usize) {
        without.build((1..=NODES).filter(|&id| id != gone).map(NodeId));
        changed += before
            .iter()
            .zip(without.slots())
            .filter(|(b, a)| *b != a)
            .count() as u64;
    }
    changed as f64 / (f64::from(table.size()) * samples as f64)
}

/// The mean fraction of the key space that changes owner when one of the nodes is removed,
/// over removing each node in turn: (Maglev, ring), both exact.
fn moved_by_one_removal(table: &MaglevTable, ring: &Ring) -> (f64, f64) {
    let maglev = sampled_moved(table, NODES);
    // A key at position p belongs to the first point at or after p: removing a node hands
    // the arc (previous point, its point] of each of its points to the next node. Summed
    // over every node the arcs cover the circle once, so the mean is the circle ÷ N.
    let points: Vec<(u64, NodeId)> = ring.view().points().collect();
    let mut arcs = 0u128;
    for (i, &(position, _)) in points.iter().enumerate() {
        let previous = points[(i + points.len() - 1) % points.len()].0;
        arcs += u128::from(position.wrapping_sub(previous));
    }
    let ring = arcs as f64 / (2f64.powi(64) * NODES as f64);
    (maglev, ring)
}

/// Uniform in [0, 1) from 53 random bits.
fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Exponential with `mean`.
fn exponential(rng: &mut Rng, mean: f64) -> f64 {
    -(1.0 - unit(rng)).ln() * mean
}

/// A ring set of `n` nodes, ids 1..=n, named `node-<id>`.
fn ring_set(n: u64) -> RingSet {
    let mut set = RingSet::new(RingConfig::fast());
    for id in 1..=n {
        let name = format!("node-{id}");
        set.insert(RingMember::new(NodeId(id), &name), &Metadata::default())
            .expect("distinct non-zero ids");
    }
    set
}

/// Virtual-time requests holding their node: completions by time, loads by node id.
struct Holds {
    ends: BinaryHeap<Reverse<(u64, u64)>>,
    load: Vec<u32>,
}

impl Holds {
    fn new(nodes: usize) -> Holds {
        Holds {
            ends: BinaryHeap::new(),
            load: vec![0; nodes + 1],
        }
    }

    /// Ends every request whose time is up by `now`.
    fn advance(&mut self, now: u64) {
        while let Some(&Reverse((end, node))) = self.ends.peek() {
            if end > now {
                break;
            }
            self.ends.pop();
            self.load[node as usize] -= 1;
        }
    }

    fn hold(&mut self, node: NodeId, until: u64) {
        self.load[node.0 as usize] += 1;
        self.ends.push(Reverse((until, node.0)));
    }
}

const ZIPF_NODES: u64 = 100;
const ZIPF_KEYS: usize = 10_000;
const ZIPF_EXPONENT: f64 = 1.1;
/// Virtual time units per arrival (Poisson arrivals at 1 per unit, in 1/1000 units).
const TICKS_PER_UNIT: f64 = 1_000.0;
const HOLD_MEAN_UNITS: f64 = 10_000.0;
const WARM_UP: usize = 50_000;
const MEASURED: usize = 200_000;

/// (mean, max) over the measured arrivals of the busiest node's load ÷ the mean load.
fn peak_over_mean(mode: fn(Bytes) -> Select, seed: u64) -> (f64, f64) {
    let set = ring_set(ZIPF_NODES);
    let among = Among {
        rings: &set,
        filter: None,
    };
    let mut selector = Selector::with_config(SelectConfig::default());
    let mut rng = Rng::new(seed);
    let mut pick_rng = Rng::new(seed ^ 0x5e1);
    let keys: Vec<Bytes> = (0..ZIPF_KEYS as u64)
        .map(|k| Bytes::copy_from_slice(&k.to_le_bytes()))
        .collect();
    let mut cdf: Vec<f64> = Vec::with_capacity(ZIPF_KEYS);
    let mut sum = 0.0;
    for rank in 1..=ZIPF_KEYS {
        sum += (rank as f64).powf(-ZIPF_EXPONENT);
        cdf.push(sum);
    }
    let mut holds = Holds::new(ZIPF_NODES as usize);
    let (mut now, mut ratios, mut peak) = (0u64, 0.0f64, 0.0f64);
    for arrival in 0..WARM_UP + MEASURED {
        now += (exponential(&mut rng, 1.0) * TICKS_PER_UNIT) as u64;
        holds.advance(now);
        let u = unit(&mut rng) * sum;
        let key = cdf.partition_point(|&c| c < u).min(ZIPF_KEYS - 1);
        let load = &holds.load;
        let node = selector
            .pick(
                &mode(keys[key].clone()),
                among,
                &mut pick_rng,
                |id| load[id.0 as usize],
                &[],
            )
            .expect("100 nodes");
        let until = now + (exponential(&mut rng, HOLD_MEAN_UNITS) * TICKS_PER_UNIT) as u64;
        holds.hold(node, until);
        if arrival >= WARM_UP {
            let total: u64 = holds.load.iter().map(|&l| u64::from(l)).sum();
            let max = holds.load.iter().copied().max().unwrap_or(0);
            let ratio = f64::from(max) * ZIPF_NODES as f64 / total as f64;
            ratios += ratio;
            peak = peak.max(ratio);
        }
    }
    (ratios / MEASURED as f64, peak)
}

fn zipf_loads(out: &mut Figures) {
    let (bounded, bounded_max) = peak_over_mean(Select::Bounded, 11);
    let (ring, ring_max) = peak_over_mean(Select::Hash, 11);
    out.insert("bounded_peak_mean".into(), json!(round4(bounded)));
    out.insert("bounded_peak_mean_max".into(), json!(round4(bounded_max)));
    out.insert("ring_peak_mean_zipf".into(), json!(round4(ring)));
    out.insert("ring_peak_mean_zipf_max".into(), json!(round4(ring_max)));
}

const SERVERS: u64 = 10;
const SLOW: u64 = 1;
const SERVICE_UNITS: f64 = 1.0;
const SLOWDOWN: f64 = 10.0;
const REQUESTS: usize = 200_000;

/// The share of requests the slow server got with `select`, ÷ its fair share 1/10.
fn slow_share_of_fair(select: &Select, seed: u64) -> f64 {
    let set = ring_set(SERVERS);
    let among = Among {
        rings: &set,
        filter: None,
    };
    let capacity = (SERVERS - 1) as f64 / SERVICE_UNITS + 1.0 / (SERVICE_UNITS * SLOWDOWN);
    let rate = capacity / 2.0;
    let mut selector = Selector::new();
    let mut rng = Rng::new(seed);
    let mut pick_rng = Rng::new(seed ^ 0x9c2);
    let mut holds = Holds::new(SERVERS as usize);
    let mut busy_until = vec![0u64; SERVERS as usize + 1];
    let (mut now, mut slow) = (0u64, 0usize);
    for _ in 0..REQUESTS {
        now += (exponential(&mut rng, 1.0 / rate) * TICKS_PER_UNIT) as u64;
        holds.advance(now);
        let load = &holds.load;
        let server = selector
            .pick(select, among, &mut pick_rng, |id| load[id.0 as usize], &[])
            .expect("10 servers");
        let mean = if server.0 == SLOW {
            SERVICE_UNITS * SLOWDOWN
        } else {
            SERVICE_UNITS
        };
        let start = now.max(busy_until[server.0 as usize]);
        let done = start + (exponential(&mut rng, mean) * TICKS_PER_UNIT) as u64;
        busy_until[server.0 as usize] = done;
        holds.hold(server, done);
        slow += usize::from(server.0 == SLOW);
    }
    slow as f64 / REQUESTS as f64 * SERVERS as f64
}

fn slow_node(out: &mut Figures) {
    let p2c = slow_share_of_fair(&Select::LeastOutstanding, 7);
    let rr = slow_share_of_fair(&Select::RoundRobin, 7);
    out.insert("p2c_slow_share_of_fair".into(), json!(round4(p2c)));
    out.insert("rr_slow_share_of_fair".into(), json!(round4(rr)));
}
