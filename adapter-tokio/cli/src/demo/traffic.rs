//! The demo's traffic: each client runs two paced senders (one by consistent hash over the
//! leaves, one round robin over them) sharing the client's sequence numbers; every accepted
//! send's outcome is awaited on a task of its own and counted in the shared tally; receivers
//! record every arrival by (sender, sequence number) and check the payload bytes.

use std::{
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use switchboard_core::{
    discovery::{Filter, Metadata},
    outcome::Outcome,
};
use switchboard_tokio::{Inbox, NodeHandle, SendFailure, TargetSpec};
use tokio::{task::JoinHandle, time::Instant};

use crate::{
    payload,
    run_load::send_offset,
    stats::{DuplicateCounter, SharedTally},
};

/// Message type of demo traffic.
pub(crate) const DEMO_MSG_TYPE: u32 = 0xDE70;
/// Payload size of demo messages.
pub(crate) const PAYLOAD_BYTES: usize = 64;
/// Distinct hash keys the hash senders cycle through.
const HASH_KEYS: u64 = 997;

/// What the receivers saw.
#[derive(Debug, Default)]
pub(crate) struct Receipts {
    counter: Mutex<DuplicateCounter>,
    corrupt: AtomicU64,
}

impl Receipts {
    /// Records one received demo message.
    pub(crate) fn record(&self, sender: u64, payload: &[u8]) {
        let Some(seq) = payload::decode_seq(payload) else {
            self.corrupt.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if !payload::is_intact(payload) || payload.len() != PAYLOAD_BYTES {
            self.corrupt.fetch_add(1, Ordering::Relaxed);
        }
        self.counter
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(sender, seq);
    }

    /// (unique messages, duplicates, corrupted payloads) so far.
    pub(crate) fn counts(&self) -> (u64, u64, u64) {
        let counter = self.counter.lock().unwrap_or_else(PoisonError::into_inner);
        (
            counter.unique,
            counter.duplicates,
            self.corrupt.load(Ordering::Relaxed),
        )
    }
}

/// Reads a node's inbox until it stops, recording demo messages.
pub(crate) async fn receive(mut inbox: Inbox, receipts: Arc<Receipts>) {
    while let Some(message) = inbox.recv().await {
        if message.msg_type == DEMO_MSG_TYPE {
            receipts.record(message.from.0, &message.payload);
        }
    }
}

/// How a sender picks its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// Consistent hash of `user-<seq mod 997>` over the leaves.
    Hash,
    /// Round robin over the leaves.
    RoundRobin,
}

/// The filter selecting the leaves.
pub(crate) fn leaf_filter() -> Filter {
    Filter(Metadata {
        labels: [("role", "leaf")].into(),
        ..Metadata::default()
    })
}

/// The target of message `seq` sent with `pattern`.
pub(crate) fn target(pattern: Pattern, seq: u64) -> TargetSpec {
    match pattern {
        Pattern::Hash => TargetSpec::Hash {
            filter: Some(leaf_filter()),
            key: format!("user-{}", seq % HASH_KEYS).into_bytes(),
        },
        Pattern::RoundRobin => TargetSpec::RoundRobin {
            filter: Some(leaf_filter()),
        },
    }
}

/// When and how fast a sender sends: `rate` messages per second, the n-th due at
/// `start + n / rate`, every message due before `until` (so a run sends exactly
/// `rate × (until - start)` messages, however late the task gets to run).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schedule {
    /// First message.
    pub(crate) start: Instant,
    /// No message is due at or after this.
    pub(crate) until: Instant,
    /// Messages per second.
    pub(crate) rate: u64,
}

/// The slowest delivery of a run: its latency and when (since the start of traffic) it was
/// sent, so the report can name the phase of the script that made the tail.
#[derive(Debug, Default)]
pub(crate) struct Slowest(Mutex<Option<(Duration, Duration)>>);

impl Slowest {
    /// Notes a delivery sent `sent` after the start that took `latency`.
    pub(crate) fn note(&self, sent: Duration, latency: Duration) {
        let mut slowest = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if slowest.is_none_or(|(max, _)| latency > max) {
            *slowest = Some((latency, sent));
        }
    }

    /// `(latency, sent since the start)` of the slowest delivery, if any.
    pub(crate) fn get(&self) -> Option<(Duration, Duration)> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Starts a paced sender on `client` with `pattern`, sending on `schedule`; sequence numbers
/// come from `seqs` (shared by a client's senders).
pub(crate) fn spawn_sender(
    client: NodeHandle,
    pattern: Pattern,
    seqs: Arc<AtomicU64>,
    schedule: Schedule,
    tally: Arc<SharedTally>,
    slowest: Arc<Slowest>,
) -> JoinHandle<()> {
    let Schedule { start, until, rate } = schedule;
    tokio::spawn(async move {
        for n in 0.. {
            let due = start + send_offset(n, rate);
            if due >= until {
                return;
            }
            tokio::time::sleep_until(due).await;
            let seq = seqs.fetch_add(1, Ordering::Relaxed);
            let sent_at = Instant::now();
            let submitted = client
                .submit(
                    target(pattern, seq),
                    DEMO_MSG_TYPE,
                    payload::encode(seq, PAYLOAD_BYTES),
                )
                .await;
            match submitted {
                Ok(pending) => {
                    tally.lock().accepted();
                    let tally = Arc::clone(&tally);
                    let slowest = Arc::clone(&slowest);
                    tokio::spawn(async move {
                        let outcome = pending.await;
                        let latency = sent_at.elapsed();
                        if matches!(outcome, Ok(Outcome::Delivered)) {
                            slowest.note(sent_at.duration_since(start), latency);
                        }
                        tally.lock().outcome(outcome, latency);
                    });
                }
                Err(SendFailure::Refused(e)) => tally.lock().refused(&e),
                Err(e) => {
                    tracing::warn!(client = client.id().0, error = %e, "sender stopped");
                    return;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_delivery_is_kept() {
        let slowest = Slowest::default();
        assert_eq!(slowest.get(), None);
        let ms = Duration::from_millis;
        slowest.note(ms(100), ms(5));
        slowest.note(ms(200), ms(300));
        slowest.note(ms(300), ms(7));
        assert_eq!(slowest.get(), Some((ms(300), ms(200))));
    }

    #[test]
    fn receipts_count_duplicates_per_sender_and_corrupt_payloads() {
        let receipts = Receipts::default();
        receipts.record(301, &payload::encode(0, PAYLOAD_BYTES));
        receipts.record(301, &payload::encode(1, PAYLOAD_BYTES));
        receipts.record(302, &payload::encode(0, PAYLOAD_BYTES));
        receipts.record(301, &payload::encode(1, PAYLOAD_BYTES));
        let mut bad = payload::encode(2, PAYLOAD_BYTES).to_vec();
        bad[20] ^= 1;
        receipts.record(301, &bad);
        receipts.record(301, &[1, 2]);
        assert_eq!(receipts.counts(), (4, 1, 2));
    }

    #[test]
    fn hash_keys_cycle_and_both_patterns_select_the_leaves() {
        assert_eq!(
            target(Pattern::Hash, 1000),
            TargetSpec::Hash {
                filter: Some(leaf_filter()),
                key: b"user-3".to_vec()
            }
        );
        assert_eq!(
            target(Pattern::RoundRobin, 5),
            TargetSpec::RoundRobin {
                filter: Some(leaf_filter())
            }
        );
    }
}
