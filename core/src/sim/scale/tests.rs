//! The scale scenarios at N = 50: exact convergence instants (the egress serializes 8 ns per
//! byte at 125 MB/s, links take 250 µs, dials 500 µs) and exact frame and byte counts.

use super::*;
use crate::wire::{Delete, PUT_OVERHEAD, SNAPSHOT_OVERHEAD};

const N: u64 = 50;
/// Nanoseconds per byte on the 1 Gbit/s egress.
const NS_PER_BYTE: u64 = 8;

fn joined() -> (ScaleRun, ScenarioFigures) {
    let mut run = ScaleRun::new(ScaleConfig::gigabit(N as usize));
    let join = run.mass_join();
    (run, join)
}

fn nanos(d: Option<Duration>) -> u64 {
    d.map(|d| u64::try_from(d.as_nanos()).unwrap()).unwrap()
}

/// The `k`-th registration (k registered before it) is answered with a snapshot of k + 1
/// entries and pushed as a `Put` to the k others: N(N+1)/2 frames carrying N² entries.
/// Every `Register` reaches the registry at 750 µs (dial 500 µs, link 250 µs); the egress
/// sends every byte from then on back to back; the last arrives 250 µs after it left.
#[test]
fn a_mass_join_converges_when_the_last_byte_of_n_squared_entries_lands() {
    let (run, join) = joined();
    let entry = run.entry_len() as u64;
    let bytes =
        N * N * entry + N * SNAPSHOT_OVERHEAD as u64 + N * (N - 1) / 2 * PUT_OVERHEAD as u64;
    assert_eq!(join.sent.frames, N * (N + 1) / 2);
    assert_eq!(join.sent.record_frames, N * (N + 1) / 2);
    assert_eq!(join.sent.bytes, bytes);
    assert_eq!(
        nanos(join.converge),
        750_000 + bytes * NS_PER_BYTE + 250_000
    );
    assert_eq!(nanos(Some(join.bound)), N * N * entry * NS_PER_BYTE);
    assert!(run.exact());
    // Every full member was handed each of the N nodes' two records (discovery, topology)
    // once.
    assert_eq!(join.node_events, 16 * N * 2);
    assert_eq!(join.events_per_change(), 2.0);
}

/// One record changed: one `Put` to every connection, the changed node's own included.
#[test]
fn one_change_costs_one_put_per_connection() {
    let (mut run, _) = joined();
    let change = run.one_change(run.full_members()[8]);
    assert_eq!(change.watchers, N);
    assert_eq!(change.sent.frames, N);
    let entry = run.entry_len() as u64;
    assert_eq!(change.sent.bytes, N * (PUT_OVERHEAD as u64 + entry));
    assert_eq!(
        change.over_floor(),
        (PUT_OVERHEAD as u64 + entry) as f64 / entry as f64
    );
}

/// Five nodes die at once: each death is a suspect `Put` to every node still connected; 30 s
/// of disconnect protection later a `Delete` of each to the 45 left. Converged when the last
/// `Delete` lands.
#[test]
fn killed_nodes_leave_every_view_when_their_protection_ends() {
    let (mut run, _) = joined();
    let killed_at = run.now();
    let kill = run.kill_tenth();
    assert_eq!(kill.changes, 5);
    let suspects: u64 = (0..5).map(|k| N - 1 - k).sum();
    assert_eq!(kill.sent.record_frames, suspects + 5 * (N - 5));
    let delete = Delete {
        epoch: 1,
        revision: 1,
        id: node_id(1),
        name: &name(1),
    };
    let mut bytes = Vec::new();
    wire::encode(&delete.into(), &mut bytes).unwrap();
    let deletes = 5 * (N - 5) * bytes.len() as u64;
    assert_eq!(
        nanos(kill.converge),
        30_000_000_000 + deletes * NS_PER_BYTE + 250_000,
        "from {killed_at:?}"
    );
    // Each full member heard each death three times: the session lost, then the deletes of
    // its discovery and topology records.
    assert_eq!(kill.node_events, 3 * 5 * 16);
    assert!(run.exact());
}

/// Every node restarted 10 ms apart: its death is a suspect `Put` to the N - 1 others, its
/// new incarnation a snapshot of N entries to it and a `Put` to the N - 1 others. Converged
/// when the last node's frames land: its `Register` 750 µs after its start, then its
/// snapshot and `Put`s back to back, 250 µs on the link.
#[test]
fn a_rolling_restart_converges_when_the_last_node_is_known_everywhere() {
    let (mut run, _) = joined();
    let rolling = run.rolling_restart(Duration::from_millis(10));
    assert_eq!(rolling.sent.record_frames, N * (2 * N - 1));
    let entry = run.entry_len() as u64;
    let last = SNAPSHOT_OVERHEAD as u64 + N * entry + (N - 1) * (PUT_OVERHEAD as u64 + entry);
    assert_eq!(
        nanos(rolling.converge),
        (N - 1) * 10_000_000 + 750_000 + last * NS_PER_BYTE + 250_000
    );
    assert!(run.exact());
}

/// A new registry: every client redials after its backoff and registers again, which costs
/// what the join did (the same frames and bytes); no full member's records change.
#[test]
fn a_registry_restart_resends_the_join_and_changes_no_record() {
    let (mut run, join) = joined();
    let restart = run.registry_restart(Duration::ZERO);
    assert_eq!(restart.sent.record_frames, join.sent.record_frames);
    assert_eq!(restart.sent.bytes, join.sent.bytes, "{restart:?} {join:?}");
    assert_eq!(restart.node_events, 0);
    // The clients redial after their seeded backoff draws (a node's first: 100 ms ± 20 %):
    // the last one's `Register` lands 750 µs after its draw, and at most every byte of the
    // re-join follows.
    let converge = nanos(restart.converge);
    let most = 120_000_000 + 750_000 + restart.sent.bytes * NS_PER_BYTE + 250_000;
    assert!((80_000_000..=most).contains(&converge), "{restart:?}");
    assert_eq!(converge, 104_696_923);
    assert!(run.exact());
}
