use alloc::{boxed::Box, collections::BTreeMap, format, vec, vec::Vec};

use proptest::{
    prelude::*,
    test_runner::{Config as ProptestConfig, FileFailurePersistence},
};

use super::*;
use crate::{rng::Rng, time::Duration};

fn t(secs: u64) -> Instant {
    Instant::from_secs(secs)
}

/// Checks every structural invariant: one live heap entry per armed key matching the map,
/// unique generations, a live root, heap order, and the bound on stale entries.
fn assert_consistent<K: Copy + Eq + Hash + Ord + fmt::Debug>(q: &TimerQueue<K>) {
    let mut generations: Vec<u64> = q.heap.iter().map(|e| e.generation).collect();
    generations.sort_unstable();
    generations.dedup();
    assert_eq!(generations.len(), q.heap.len(), "generation reused");
    assert!(generations.last().is_none_or(|&g| g < q.next_generation));
    let mut live_entries = 0;
    for entry in &q.heap {
        if TimerQueue::<K>::is_live(&q.live, entry) {
            live_entries += 1;
            assert_eq!(q.live[&entry.key].deadline, entry.deadline);
        }
    }
    assert_eq!(live_entries, q.live.len());
    if let Some(root) = q.heap.first() {
        assert!(TimerQueue::<K>::is_live(&q.live, root), "stale root");
    }
    for (pos, entry) in q.heap.iter().enumerate().skip(1) {
        let parent = &q.heap[(pos - 1) / ARITY];
        assert!(!entry.before(parent), "heap order broken at {pos}");
    }
    assert!(q.heap.len() <= (STALE_FACTOR + 1) * q.live.len() + q.stale_slack);
}

#[test]
fn later_deadline_never_replaces_a_nearer_one() {
    // libatapp E.4 / E.5: a 30 s reconnect timer is pulled in by an 8 s lost timer, and a
    // later deadline afterwards is ignored.
    let mut q = TimerQueue::new();
    assert_eq!(q.arm(1u64, t(30)), Armed::New);
    assert_eq!(q.arm(1, t(8)), Armed::MovedEarlier);
    assert_eq!(q.deadline(1), Some(t(8)));
    assert_eq!(q.arm(1, t(30)), Armed::KeptEarlier);
    assert_eq!(q.arm(1, t(8)), Armed::KeptEarlier);
    assert_eq!(q.deadline(1), Some(t(8)));
    assert_eq!(q.len(), 1);
    assert_eq!(q.next_deadline(), Some(t(8)));
    assert_consistent(&q);
}

#[test]
fn replace_moves_a_deadline_either_way() {
    let mut q = TimerQueue::new();
    assert_eq!(q.replace(5u64, t(10)), None);
    q.arm(6, t(20));
    assert_eq!(q.replace(5, t(40)), Some(t(10)));
    assert_eq!(q.next_deadline(), Some(t(20)));
    assert_eq!(q.replace(5, t(2)), Some(t(40)));
    assert_eq!(q.next_deadline(), Some(t(2)));
    assert_eq!(q.replace(5, t(2)), Some(t(2)));
    assert_eq!(q.deadline(5), Some(t(2)));
    assert_eq!(q.len(), 2);
    assert_consistent(&q);
}

#[test]
fn moving_the_earliest_deadline_later_sinks_its_entry_without_a_stale_copy() {
    let mut q = TimerQueue::new();
    for key in 1..=9u64 {
        q.arm(key, t(10 * key));
    }
    // Key 1 (10 s) is the root; moving it later updates that entry in place.
    assert_eq!(q.replace(1, t(55)), Some(t(10)));
    assert_eq!(q.heap.len(), 9);
    assert_eq!(q.peek(), Some((2, t(20))));
    assert_consistent(&q);
    // Again, past every other key but one: it sinks towards the bottom.
    assert_eq!(q.replace(2, t(90)), Some(t(20)));
    assert_eq!(q.heap.len(), 9);
    assert_consistent(&q);
    // Moving a root earlier, or a key that is not the root, leaves one stale entry each.
    assert_eq!(q.replace(3, t(1)), Some(t(30)));
    assert_eq!(q.replace(9, t(95)), Some(t(90)));
    assert_eq!(q.heap.len(), 11);
    assert_consistent(&q);
    let mut out = Vec::new();
    q.expire(Instant::MAX, &mut out);
    let order: Vec<u64> = out.iter().map(|&(k, _)| k).collect();
    assert_eq!(order, vec![3, 4, 5, 1, 6, 7, 8, 2, 9]);
    assert_eq!(out[7], (2, t(90)));
    assert_eq!(out[8], (9, t(95)));
    assert!(q.heap.is_empty());
}

#[test]
fn cancel_disarms_and_reports_the_deadline() {
    let mut q = TimerQueue::new();
    q.arm(1u64, t(3));
    q.arm(2, t(1));
    q.arm(3, t(2));
    assert_eq!(q.cancel(2), Some(t(1)));
    assert_eq!(q.cancel(2), None);
    assert_eq!(q.cancel(99), None);
    assert!(!q.contains(2));
    assert!(q.contains(1));
    assert_eq!(q.deadline(2), None);
    assert_eq!(q.next_deadline(), Some(t(2)));
    assert_eq!(q.len(), 2);
    assert_consistent(&q);
    assert_eq!(q.cancel(1), Some(t(3)));
    assert_eq!(q.cancel(3), Some(t(2)));
    assert!(q.is_empty());
    assert_eq!(q.next_deadline(), None);
}

#[test]
fn keys_fire_in_exact_deadline_order() {
    let mut q = TimerQueue::new();
    let base = Instant::from_nanos(1_000_000_000);
    // Nanosecond-apart deadlines, armed out of order.
    for (key, offset) in [
        (10u64, 7u64),
        (11, 1),
        (12, 5),
        (13, 2),
        (14, 1_000),
        (15, 3),
    ] {
        q.arm(key, base + Duration::from_nanos(offset));
    }
    let mut out = Vec::new();
    q.expire(base + Duration::from_nanos(5), &mut out);
    let ns = |n: u64| base + Duration::from_nanos(n);
    assert_eq!(
        out,
        vec![(11, ns(1)), (13, ns(2)), (15, ns(3)), (12, ns(5))]
    );
    assert_eq!(q.next_deadline(), Some(ns(7)));
    out.clear();
    q.expire(ns(999), &mut out);
    assert_eq!(out, vec![(10, ns(7))]);
    assert_eq!(q.pop_expired(ns(999)), None);
    assert_eq!(q.pop_expired(ns(1_000)), Some((14, ns(1_000))));
    assert!(q.is_empty());
}

#[test]
fn ties_fire_in_key_order_whatever_the_arm_order() {
    let mut q = TimerQueue::new();
    for key in [9u32, 3, 7, 1, 8] {
        q.arm(key, t(5));
    }
    q.arm(4, t(4));
    let mut out = Vec::new();
    q.expire(t(5), &mut out);
    assert_eq!(
        out,
        vec![
            (4, t(4)),
            (1, t(5)),
            (3, t(5)),
            (7, t(5)),
            (8, t(5)),
            (9, t(5))
        ]
    );
}

#[test]
fn a_key_fires_at_exactly_its_deadline_not_a_nanosecond_before() {
    let mut q = TimerQueue::new();
    let deadline = Instant::from_nanos(123_456_789);
    q.arm(1u64, deadline);
    assert_eq!(q.pop_expired(Instant::from_nanos(123_456_788)), None);
    assert_eq!(q.pop_expired(deadline), Some((1, deadline)));
    assert_eq!(q.pop_expired(deadline), None);
}

#[test]
fn far_future_deadlines_fire_only_at_instant_max() {
    let mut q = TimerQueue::new();
    q.arm(1u64, Instant::MAX);
    q.arm(2, Instant::MAX - Duration::from_nanos(1));
    q.arm(3, Instant::ZERO);
    assert_eq!(q.arm(1, Instant::MAX), Armed::KeptEarlier);
    assert_eq!(q.pop_expired(t(1_000_000_000)), Some((3, Instant::ZERO)));
    assert_eq!(q.pop_expired(t(1_000_000_000)), None);
    assert_eq!(
        q.next_deadline(),
        Some(Instant::MAX - Duration::from_nanos(1))
    );
    let mut out = Vec::new();
    q.expire(Instant::MAX, &mut out);
    assert_eq!(
        out,
        vec![
            (2, Instant::MAX - Duration::from_nanos(1)),
            (1, Instant::MAX)
        ]
    );
}

#[test]
fn time_standing_still_or_going_back_fires_nothing_early() {
    let mut q = TimerQueue::new();
    q.arm(1u64, t(10));
    q.arm(2, t(20));
    assert_eq!(q.pop_expired(t(15)), Some((1, t(10))));
    assert_eq!(q.pop_expired(t(15)), None);
    // The driver's clock jumps back: nothing new is due.
    assert_eq!(q.pop_expired(t(5)), None);
    // A deadline in the past relative to the last `now` is due immediately.
    q.arm(3, t(12));
    assert_eq!(q.pop_expired(t(12)), Some((3, t(12))));
    assert_eq!(q.pop_expired(t(19)), None);
    assert_eq!(q.pop_expired(t(20)), Some((2, t(20))));
    assert!(q.is_empty());
}

#[test]
fn expire_appends_to_a_reused_buffer() {
    let mut q = TimerQueue::new();
    q.arm(1u64, t(1));
    let mut out = vec![(0u64, t(0))];
    q.expire(t(1), &mut out);
    assert_eq!(out, vec![(0, t(0)), (1, t(1))]);
    q.expire(t(2), &mut out);
    assert_eq!(out.len(), 2);
}

#[test]
fn a_hundred_thousand_keys_drain_in_order() {
    const N: u64 = 100_000;
    let mut rng = Rng::new(17);
    let mut q = TimerQueue::with_capacity(1024);
    let mut expected = Vec::with_capacity(100_000);
    for key in 0..N {
        // Deadlines within one minute at ns resolution, plus deliberate ties.
        let deadline = if key % 10 == 0 {
            t(30)
        } else {
            Instant::from_nanos(rng.below(60_000_000_000))
        };
        assert_eq!(q.arm(key, deadline), Armed::New);
        expected.push((deadline, key));
    }
    // Cancel every seventh key.
    for key in (0..N).step_by(7) {
        assert!(q.cancel(key).is_some());
    }
    expected.retain(|&(_, key)| key % 7 != 0);
    expected.sort_unstable();
    assert_eq!(q.len(), expected.len());
    assert_consistent(&q);

    let mut out = Vec::new();
    q.expire(t(30), &mut out);
    let split = expected.partition_point(|&(d, _)| d <= t(30));
    assert_eq!(out.len(), split);
    q.expire(Instant::MAX, &mut out);
    let expected: Vec<(u64, Instant)> = expected.into_iter().map(|(d, k)| (k, d)).collect();
    assert_eq!(out, expected);
    assert!(q.is_empty());
}

#[test]
fn a_stale_entry_never_fires_even_when_its_key_is_rearmed() {
    let mut q = TimerQueue::new();
    q.arm(1u64, t(100));
    q.arm(2, t(10));
    q.arm(9, t(300));
    assert_eq!(q.cancel(1), Some(t(100)));
    // Key 1's entry stays in the heap, stale; re-arming at the same deadline adds another.
    assert_eq!(q.heap.len(), 3);
    assert_eq!(q.arm(1, t(100)), Armed::New);
    assert_eq!(q.heap.len(), 4);
    assert_consistent(&q);
    let mut out = Vec::new();
    q.expire(t(150), &mut out);
    assert_eq!(out, vec![(2, t(10)), (1, t(100))]);
    // Both entries of key 1 are gone: the stale one was discarded when it reached the root.
    assert_eq!(q.heap.len(), 1);
    assert_eq!(q.next_deadline(), Some(t(300)));
    assert_consistent(&q);
}

#[test]
fn cancelling_right_after_arming_leaves_nothing_behind() {
    let mut q = TimerQueue::new();
    for key in 0..10u64 {
        q.arm(key, t(key));
    }
    // `now + timeout` deadlines stay at the end of the heap; cancelling pops them outright.
    for key in 100..200u64 {
        q.arm(key, t(1_000 + key));
        assert_eq!(q.cancel(key), Some(t(1_000 + key)));
        assert_eq!(q.heap.len(), 10);
    }
    // Cancelling the earliest timer discards the stale root at once.
    assert_eq!(q.cancel(0), Some(t(0)));
    assert_eq!(q.heap.len(), 9);
    assert_eq!(q.next_deadline(), Some(t(1)));
    assert_consistent(&q);
}

#[test]
fn stale_entries_are_compacted_once_they_outnumber_twice_the_live_ones_plus_slack() {
    let mut q = TimerQueue::new();
    for key in 0..50u64 {
        q.arm(key, t(1_000 + key));
    }
    // Moving deadlines later leaves one stale entry per move. Key 0 (t = 1000 s) stays the
    // root, so no stale entry reaches it.
    for round in 0..164u64 {
        q.replace(1 + round % 49, t(2_000 + round));
    }
    assert_eq!(q.len(), 50);
    assert_eq!(q.heap.len(), 50 + 164);
    assert_consistent(&q);
    // The 165th stale entry exceeds 2 × 50 live + 64 slack: one O(n) pass removes them all.
    q.replace(1, t(3_000));
    assert_eq!(q.heap.len(), 50);
    assert_consistent(&q);
    let mut out = Vec::new();
    q.expire(Instant::MAX, &mut out);
    assert_eq!(out.len(), 50);
    assert_eq!(out[0], (0, t(1_000)));
    assert_eq!(out[49], (1, t(3_000)));
}

#[test]
fn churn_within_reserved_capacity_never_allocates() {
    // Twice the live count keeps the map at most half full, so hashbrown cleans tombstones in
    // place instead of resizing; the heap gets its 3n + slack worst case up front.
    let mut q = TimerQueue::with_capacity(2_000);
    let map_bytes = q.live.allocation_size();
    let heap_capacity = q.heap.capacity();
    for key in 0..1_000u64 {
        q.arm(key, t(key));
    }
    let mut rng = Rng::new(5);
    for round in 0..50_000u64 {
        let victim = rng.below(1_000 + round);
        let key = if q.cancel(victim).is_some() {
            victim
        } else {
            q.pop_expired(Instant::MAX)
                .expect("queue holds 1000 keys")
                .0
        };
        assert!(!q.contains(key));
        q.arm(1_000 + round, t(rng.below(100_000)));
    }
    assert_eq!(q.len(), 1_000);
    assert_eq!(q.heap.capacity(), heap_capacity);
    assert_eq!(q.live.allocation_size(), map_bytes);
    assert_consistent(&q);
}

#[test]
fn clear_and_debug() {
    let mut q = TimerQueue::new();
    q.arm(4u64, t(2));
    q.arm(3, t(9));
    assert_eq!(
        format!("{q:?}"),
        "TimerQueue { len: 2, next: Some((4, Instant(2000000000))) }"
    );
    q.clear();
    assert!(q.is_empty());
    assert_eq!(q.next_deadline(), None);
    assert_eq!(q.arm(3, t(1)), Armed::New);
    assert_consistent(&q);
}

/// One step of the model-based test.
#[derive(Clone, Debug)]
enum Op {
    Arm(u8, Instant),
    Replace(u8, Instant),
    Cancel(u8),
    /// Moves `now` by a signed number of ns (0 = time stands still) then pops once.
    Pop(i64),
    /// Moves `now` then drains everything due.
    Expire(i64),
}

fn deadline() -> impl Strategy<Value = Instant> {
    prop_oneof![
        // Small range: many ties and deadlines near `now`.
        8 => (0u64..64).prop_map(Instant::from_nanos),
        1 => any::<u64>().prop_map(Instant::from_nanos),
        1 => Just(Instant::MAX),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..24;
    let step = prop_oneof![Just(0i64), -8i64..24, Just(i64::MAX)];
    prop_oneof![
        4 => (key.clone(), deadline()).prop_map(|(k, d)| Op::Arm(k, d)),
        2 => (key.clone(), deadline()).prop_map(|(k, d)| Op::Replace(k, d)),
        2 => key.prop_map(Op::Cancel),
        3 => step.clone().prop_map(Op::Pop),
        1 => step.prop_map(Op::Expire),
    ]
}

fn advance(now: Instant, step: i64) -> Instant {
    if step >= 0 {
        now + Duration::from_nanos(step.unsigned_abs())
    } else {
        now - Duration::from_nanos(step.unsigned_abs())
    }
}

/// The model's next due key: smallest `(deadline, key)` with `deadline <= now`.
fn model_pop(model: &mut BTreeMap<u8, Instant>, now: Instant) -> Option<(u8, Instant)> {
    let (key, deadline) = model
        .iter()
        .map(|(&k, &d)| (k, d))
        .filter(|&(_, d)| d <= now)
        .min_by_key(|&(k, d)| (d, k))?;
    model.remove(&key);
    Some((key, deadline))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "../proptest-regressions/timer.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn queue_matches_a_btreemap_model(
        ops in proptest::collection::vec(op(), 1..200),
        stale_slack in prop_oneof![Just(0usize), Just(3), Just(STALE_SLACK)],
    ) {
        let mut q = TimerQueue::new();
        // Small slacks make compaction frequent.
        q.stale_slack = stale_slack;
        let mut model: BTreeMap<u8, Instant> = BTreeMap::new();
        let mut now = Instant::ZERO;
        for op in ops {
            match op {
                Op::Arm(k, d) => {
                    let expected = match model.get(&k).copied() {
                        None => Armed::New,
                        Some(old) if d < old => Armed::MovedEarlier,
                        Some(_) => Armed::KeptEarlier,
                    };
                    if expected != Armed::KeptEarlier {
                        model.insert(k, d);
                    }
                    prop_assert_eq!(q.arm(k, d), expected);
                }
                Op::Replace(k, d) => prop_assert_eq!(q.replace(k, d), model.insert(k, d)),
                Op::Cancel(k) => prop_assert_eq!(q.cancel(k), model.remove(&k)),
                Op::Pop(step) => {
                    now = advance(now, step);
                    prop_assert_eq!(q.pop_expired(now), model_pop(&mut model, now));
                }
                Op::Expire(step) => {
                    now = advance(now, step);
                    let mut out = Vec::new();
                    q.expire(now, &mut out);
                    let mut expected = Vec::new();
                    while let Some(fired) = model_pop(&mut model, now) {
                        expected.push(fired);
                    }
                    prop_assert_eq!(out, expected);
                }
            }
            prop_assert_eq!(q.len(), model.len());
            prop_assert_eq!(q.next_deadline(), model.values().copied().min());
            for k in 0..24u8 {
                prop_assert_eq!(q.deadline(k), model.get(&k).copied());
            }
            assert_consistent(&q);
        }
        // Drain: the remaining order is the model's order.
        let mut out = Vec::new();
        q.expire(Instant::MAX, &mut out);
        let mut expected: Vec<(u8, Instant)> = model.into_iter().collect();
        expected.sort_unstable_by_key(|&(k, d)| (d, k));
        prop_assert_eq!(out, expected);
    }
}
