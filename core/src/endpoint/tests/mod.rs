//! Endpoint tests: the pending queue, flush and GC of one endpoint, the table, and property
//! tests of the queue and the table against simple models.

use alloc::{vec, vec::Vec};

use bytes::Bytes;

use super::{PendingMessage, QueueLimits};
use crate::{
    ids::MsgId,
    outcome::{FailReason, MessageOutcome, Outcome},
    time::{Duration, Instant},
};

mod flush;
mod inflight;
mod pending;
mod prop_pending;
mod prop_table;
mod table;

fn ms(millis: u64) -> Instant {
    Instant::from_millis(millis)
}

/// A message with id `id`, a payload of `len` bytes (all `id as u8`) and a deadline.
fn msg(id: u64, len: usize, deadline: Instant) -> PendingMessage {
    PendingMessage {
        id: MsgId(id),
        msg_type: 7,
        payload: payload(id, len),
        deadline,
    }
}

fn payload(id: u64, len: usize) -> Bytes {
    Bytes::from(vec![id as u8; len])
}

fn outcomes(ids: &[u64], outcome: Outcome) -> Vec<MessageOutcome> {
    ids.iter()
        .map(|&id| MessageOutcome {
            msg: MsgId(id),
            outcome,
        })
        .collect()
}

fn delivered(ids: &[u64]) -> Vec<MessageOutcome> {
    outcomes(ids, Outcome::Delivered)
}

fn failed(ids: &[u64], reason: FailReason) -> Vec<MessageOutcome> {
    outcomes(ids, Outcome::Failed(reason))
}

fn limits(max_messages: usize, max_bytes: usize) -> QueueLimits {
    QueueLimits {
        max_messages,
        max_bytes,
    }
}

const SECOND: Duration = Duration::from_secs(1);
const NANO: Duration = Duration::from_nanos(1);
