//! Timer queue costs with 64 Ki live timers: `switchboard_core::timer::TimerQueue` (group
//! `timer/`: 4-ary heap with lazy, generation-tagged cancellation + hashbrown key map) against
//! the obvious baseline (group `timer_baseline_btreemap/`): a `BTreeMap<(Instant, key), ()>`
//! ordered set plus a `HashMap<key, Instant>` index with the same earliest-wins `arm`.
//!
//! The baseline (`switchboard_benches::timers::BTreeQueue`, also timed by `ring-report`) hashes
//! with the core's `mix64` rather than SipHash, so both sides have a fast `u64` hash and the
//! comparison is of the data structures.
//!
//! Each measured operation touches a random live key: the bench keeps 65 536 keys armed with
//! random deadlines in a 60 s window, walks a shuffled permutation of them in batches of 1024,
//! and times only the operation under test (the inverse operation that restores 64 Ki live
//! timers runs untimed between batches; amortised costs such as `TimerQueue`'s heap
//! compaction land in whichever operation triggers them). Reported times are per operation.
//!
//! - `arm_64k_live`: arm a key that is not armed.
//! - `cancel_64k_live`: cancel an armed key.
//! - `arm_kept_earlier_64k_live`: arm an armed key with a later deadline (a no-op).
//! - `arm_cancel_64k_live`: arm a fresh key and cancel it at once.
//! - `pop_expired_64k_live`: pop the earliest timer.
//!
//! Run: `cargo bench -p switchboard-benches --bench timer`.

use std::{
    hint::black_box,
    time::{Duration as StdDuration, Instant as StdInstant},
};

use criterion::{Criterion, criterion_group, criterion_main};
use switchboard_benches::timers::{BTreeQueue, Queue};
use switchboard_core::{rng::Rng, time::Instant, timer::TimerQueue};

const LIVE: u64 = 65_536;
const BATCH: usize = 1024;
const WINDOW_NS: u64 = 60_000_000_000;
const NOW_NS: u64 = 1_000_000_000_000;

/// Pre-generated inputs shared by every bench: a shuffled permutation of the live keys and a
/// stream of random deadlines.
struct Inputs {
    order: Vec<u64>,
    deadlines: Vec<Instant>,
}

impl Inputs {
    fn new() -> Self {
        let mut rng = Rng::new(0x7153_u64);
        let mut order: Vec<u64> = (0..LIVE).collect();
        for i in (1..order.len()).rev() {
            let j = usize::try_from(rng.below(i as u64 + 1)).expect("j <= i");
            order.swap(i, j);
        }
        let deadlines = (0..LIVE * 4)
            .map(|_| Instant::from_nanos(NOW_NS + rng.below(WINDOW_NS)))
            .collect();
        Inputs { order, deadlines }
    }
}

/// A queue with every live key armed, and a cursor into the inputs.
struct Fixture<Q> {
    queue: Q,
    next_key: usize,
    next_deadline: usize,
}

impl<Q: Queue> Fixture<Q> {
    fn new(inputs: &Inputs) -> Self {
        let mut queue = Q::with_capacity(usize::try_from(LIVE).expect("fits") + BATCH);
        for key in 0..LIVE {
            queue.arm(key, inputs.deadlines[usize::try_from(key).expect("fits")]);
        }
        Fixture {
            queue,
            next_key: 0,
            next_deadline: 0,
        }
    }

    /// The next batch of distinct live keys (a window of the shuffled permutation).
    fn keys<'a>(&mut self, inputs: &'a Inputs) -> &'a [u64] {
        if self.next_key + BATCH > inputs.order.len() {
            self.next_key = 0;
        }
        let keys = &inputs.order[self.next_key..self.next_key + BATCH];
        self.next_key += BATCH;
        keys
    }

    fn deadlines<'a>(&mut self, inputs: &'a Inputs) -> &'a [Instant] {
        if self.next_deadline + BATCH > inputs.deadlines.len() {
            self.next_deadline = 0;
        }
        let d = &inputs.deadlines[self.next_deadline..self.next_deadline + BATCH];
        self.next_deadline += BATCH;
        d
    }
}

/// Runs `iters` operations in batches of distinct random live keys: `before` prepares a batch,
/// `timed` is measured, `after` restores the 64 Ki live set.
fn batched<Q: Queue>(
    fixture: &mut Fixture<Q>,
    inputs: &Inputs,
    iters: u64,
    mut before: impl FnMut(&mut Q, &[u64], &[Instant]),
    mut timed: impl FnMut(&mut Q, &[u64], &[Instant]),
    mut after: impl FnMut(&mut Q, &[u64], &[Instant]),
) -> StdDuration {
    let mut total = StdDuration::ZERO;
    let mut done = 0u64;
    while done < iters {
        let keys = fixture.keys(inputs);
        let deadlines = fixture.deadlines(inputs);
        let n = usize::try_from((iters - done).min(BATCH as u64)).expect("<= BATCH");
        before(&mut fixture.queue, &keys[..n], &deadlines[..n]);
        let start = StdInstant::now();
        timed(&mut fixture.queue, &keys[..n], &deadlines[..n]);
        total += start.elapsed();
        after(&mut fixture.queue, &keys[..n], &deadlines[..n]);
        done += n as u64;
    }
    total
}

fn arm_all<Q: Queue>(q: &mut Q, keys: &[u64], deadlines: &[Instant]) {
    for (&k, &d) in keys.iter().zip(deadlines) {
        q.arm(k, d);
    }
}

fn cancel_all<Q: Queue>(q: &mut Q, keys: &[u64], _: &[Instant]) {
    for &k in keys {
        black_box(q.cancel(k));
    }
}

fn nothing<Q: Queue>(_: &mut Q, _: &[u64], _: &[Instant]) {}

fn bench_queue<Q: Queue>(c: &mut Criterion, group_name: &str, inputs: &Inputs) {
    let mut group = c.benchmark_group(group_name);
    group
        .warm_up_time(StdDuration::from_secs(1))
        .measurement_time(StdDuration::from_secs(2))
        .sample_size(20);

    // Arm a key that is not armed (it was cancelled, untimed, just before).
    let mut fixture = Fixture::<Q>::new(inputs);
    group.bench_function("arm_64k_live", |b| {
        b.iter_custom(|iters| batched(&mut fixture, inputs, iters, cancel_all, arm_all, nothing));
    });
    drop(fixture);

    // Cancel a random armed key (re-armed, untimed, just after).
    let mut fixture = Fixture::<Q>::new(inputs);
    group.bench_function("cancel_64k_live", |b| {
        b.iter_custom(|iters| batched(&mut fixture, inputs, iters, nothing, cancel_all, arm_all));
    });
    drop(fixture);

    // Arm an already armed key with a later deadline: the earliest-wins no-op.
    let mut fixture = Fixture::<Q>::new(inputs);
    let later = Instant::from_nanos(NOW_NS + 2 * WINDOW_NS);
    group.bench_function("arm_kept_earlier_64k_live", |b| {
        b.iter_custom(|iters| {
            batched(
                &mut fixture,
                inputs,
                iters,
                nothing,
                |q, keys, _| {
                    for &k in keys {
                        q.arm(k, later);
                    }
                },
                nothing,
            )
        });
    });
    drop(fixture);

    // Arm a fresh key and cancel it again at once: the message-timeout round trip.
    let mut fixture = Fixture::<Q>::new(inputs);
    let mut fresh = LIVE;
    group.bench_function("arm_cancel_64k_live", |b| {
        b.iter_custom(|iters| {
            batched(
                &mut fixture,
                inputs,
                iters,
                nothing,
                |q, _, deadlines| {
                    for &d in deadlines {
                        fresh += 1;
                        q.arm(fresh, d);
                        black_box(q.cancel(fresh));
                    }
                },
                nothing,
            )
        });
    });
    drop(fixture);

    // Pop the earliest timer (re-armed later, untimed).
    let mut fixture = Fixture::<Q>::new(inputs);
    let mut popped: Vec<u64> = Vec::with_capacity(BATCH);
    group.bench_function("pop_expired_64k_live", |b| {
        b.iter_custom(|iters| {
            let mut total = StdDuration::ZERO;
            let mut done = 0u64;
            while done < iters {
                let n = usize::try_from((iters - done).min(BATCH as u64)).expect("<= BATCH");
                popped.clear();
                let start = StdInstant::now();
                for _ in 0..n {
                    let (k, _) = black_box(fixture.queue.pop_min().expect("64 Ki live timers"));
                    popped.push(k);
                }
                total += start.elapsed();
                let deadlines = fixture.deadlines(inputs);
                for (&k, &d) in popped.iter().zip(deadlines) {
                    fixture.queue.arm(k, d);
                }
                done += n as u64;
            }
            total
        });
    });
    drop(fixture);

    group.finish();
}

fn timers(c: &mut Criterion) {
    let inputs = Inputs::new();
    bench_queue::<TimerQueue<u64>>(c, "timer", &inputs);
    bench_queue::<BTreeQueue>(c, "timer_baseline_btreemap", &inputs);
}

criterion_group!(benches, timers);
criterion_main!(benches);
