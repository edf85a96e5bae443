//! The server's side: the methods this node serves, the requests handed to handlers and not
//! yet answered (each with its deadline in a keyed timer queue), and the bounded memory of
//! requests already handed on, so a repeat is never executed twice.

use alloc::{
    collections::{BTreeSet, VecDeque},
    string::String,
};

use foldhash::fast::FixedState;
use hashbrown::{HashMap, HashSet};

use super::{DEDUP_CAPACITY, RequestId};
use crate::{ids::NodeId, time::Instant, timer::TimerQueue};

/// A call's identity at its server: (caller, caller incarnation, call id).
pub(crate) type CallKey = (NodeId, u64, u64);

/// A request handed to a handler, waiting for its reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Inbound {
    /// The caller, its incarnation and its call id.
    pub(crate) key: CallKey,
    /// When the caller stops waiting.
    pub(crate) deadline: Instant,
}

/// What this node serves and the requests its handlers hold.
#[derive(Debug, Default)]
pub(crate) struct Serving {
    methods: BTreeSet<String>,
    /// Held requests (never iterated: hashed, keys are ours).
    inbound: HashMap<RequestId, Inbound, FixedState>,
    /// The held request of each call (keys a peer chooses: hashed with the secret seed).
    by_call: HashMap<CallKey, RequestId, FixedState>,
    timers: TimerQueue<RequestId>,
    /// The requests handed on (keys a peer chooses: hashed with this node's secret seed).
    seen: HashSet<CallKey, FixedState>,
    seen_order: VecDeque<CallKey>,
    next_id: u64,
}

impl Serving {
    /// Nothing served yet; the duplicate memory hashes with `seed` (secret to this node).
    pub(crate) fn with_seed(seed: u64) -> Serving {
        Serving {
            seen: HashSet::with_hasher(FixedState::with_seed(seed)),
            by_call: HashMap::with_hasher(FixedState::with_seed(seed)),
            ..Serving::default()
        }
    }

    /// Starts serving `method`; whether that changed the set.
    pub(crate) fn serve(&mut self, method: &str) -> bool {
        self.methods.insert(String::from(method))
    }

    /// Stops serving `method`; whether that changed the set.
    pub(crate) fn unserve(&mut self, method: &str) -> bool {
        self.methods.remove(method)
    }

    /// Whether `method` is served here.
    pub(crate) fn serves(&self, method: &str) -> bool {
        self.methods.contains(method)
    }

    /// The served methods, in order.
    pub(crate) fn methods(&self) -> impl Iterator<Item = &str> + '_ {
        self.methods.iter().map(String::as_str)
    }

    /// Whether `key` was handed on already (a repeat).
    pub(crate) fn seen(&self, key: &CallKey) -> bool {
        self.seen.contains(key)
    }

    /// Remembers `key` as handed on; `false` if it was already (a repeat). The oldest
    /// memory is dropped past [`DEDUP_CAPACITY`].
    pub(crate) fn first_time(&mut self, key: CallKey) -> bool {
        if !self.seen.insert(key) {
            return false;
        }
        self.seen_order.push_back(key);
        if self.seen_order.len() > DEDUP_CAPACITY
            && let Some(oldest) = self.seen_order.pop_front()
        {
            self.seen.remove(&oldest);
        }
        true
    }

    /// Holds a request for its handler until `deadline`; returns its id.
    pub(crate) fn open(&mut self, key: CallKey, deadline: Instant) -> RequestId {
        self.next_id += 1;
        let id = RequestId(self.next_id);
        self.inbound.insert(id, Inbound { key, deadline });
        self.by_call.insert(key, id);
        self.timers.replace(id, deadline);
        id
    }

    /// The held request `id`.
    pub(crate) fn get(&self, id: RequestId) -> Option<&Inbound> {
        self.inbound.get(&id)
    }

    /// The held request for `key`.
    pub(crate) fn find(&self, key: CallKey) -> Option<RequestId> {
        self.by_call.get(&key).copied()
    }

    /// Releases the held request `id` (answered, cancelled or past its deadline).
    pub(crate) fn take(&mut self, id: RequestId) -> Option<Inbound> {
        let inbound = self.inbound.remove(&id)?;
        self.by_call.remove(&inbound.key);
        self.timers.cancel(id);
        Some(inbound)
    }

    /// Forgets that `key` was handed on: it never ran (its request was declined), so the
    /// caller may send it again.
    pub(crate) fn forget(&mut self, key: &CallKey) {
        if self.seen.remove(key) {
            self.seen_order.retain(|seen| seen != key);
        }
    }

    /// The earliest deadline of a held request.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.timers.next_deadline()
    }

    /// A held request whose deadline is due at `now`, released.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<RequestId> {
        let (id, _) = self.timers.pop_expired(now)?;
        let inbound = self.inbound.remove(&id)?;
        self.by_call.remove(&inbound.key);
        Some(id)
    }
}
