//! The simulator's agenda: everything scheduled to reach a node at a future (or the current)
//! instant — link establishment, bytes, close notifications, delayed registry events.
//!
//! Items are ordered by (time, scheduling order), so two items due at the same instant come out
//! in the order they were scheduled; that FIFO rule is what keeps each link's byte stream
//! ordered.

use alloc::{boxed::Box, collections::BinaryHeap, vec::Vec};
use core::cmp::Ordering;

use bytes::Bytes;

use super::RegistryEvent;
use super::link::{Side, SimLinkId};
use crate::{ids::NodeId, time::Instant};

/// One scheduled delivery.
#[derive(Clone, Debug)]
pub(super) enum Due {
    /// A dial resolves: the link is established, or the dialer hears that it failed.
    Establish { link: SimLinkId },
    /// Bytes arrive at `to`'s end of `link`.
    Bytes {
        link: SimLinkId,
        to: Side,
        bytes: Bytes,
    },
    /// The other side closed gracefully; `to` learns it after the bytes sent before the close.
    PeerClosed { link: SimLinkId, to: Side },
    /// A registry event reaches a node.
    Registry {
        node: NodeId,
        incarnation: u32,
        event: Box<RegistryEvent>,
    },
}

/// One scheduled item: ordered by (time, scheduling sequence) alone, earliest first out of
/// the max-heap (so the comparison is reversed).
#[derive(Debug)]
struct Item<T> {
    at: Instant,
    seq: u64,
    due: T,
}

impl<T> PartialEq for Item<T> {
    fn eq(&self, other: &Item<T>) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl<T> Eq for Item<T> {}

impl<T> PartialOrd for Item<T> {
    fn partial_cmp(&self, other: &Item<T>) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Item<T> {
    fn cmp(&self, other: &Item<T>) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// Scheduled deliveries ordered by (time, scheduling sequence): the simulator's own
/// ([`Due`]) and the registry network's. A binary heap: the sequence numbers are unique, so
/// the order is total and the same as a sorted map's, without a map node per item.
#[derive(Debug)]
pub(super) struct Agenda<T = Due> {
    items: BinaryHeap<Item<T>>,
    next_seq: u64,
}

impl<T> Default for Agenda<T> {
    fn default() -> Agenda<T> {
        Agenda {
            items: BinaryHeap::new(),
            next_seq: 0,
        }
    }
}

impl<T> Agenda<T> {
    /// Schedules `due` at `at`, after everything already scheduled for `at`.
    pub(super) fn push(&mut self, at: Instant, due: T) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.items.push(Item { at, seq, due });
    }

    /// Time of the earliest item.
    pub(super) fn next_time(&self) -> Option<Instant> {
        self.items.peek().map(|item| item.at)
    }

    /// Removes and returns the earliest item if it is due at or before `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<(Instant, T)> {
        if self.items.peek()?.at > now {
            return None;
        }
        self.items.pop().map(|item| (item.at, item.due))
    }

    /// Removes every item `take` picks and returns them in delivery order.
    pub(super) fn take_where(&mut self, mut take: impl FnMut(&T) -> bool) -> Vec<(Instant, T)> {
        let (mut taken, kept): (Vec<Item<T>>, Vec<Item<T>>) = core::mem::take(&mut self.items)
            .into_vec()
            .into_iter()
            .partition(|item| take(&item.due));
        self.items = BinaryHeap::from(kept);
        taken.sort_unstable_by_key(|item| (item.at, item.seq));
        taken.into_iter().map(|item| (item.at, item.due)).collect()
    }

    /// Number of scheduled items.
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    /// The scheduled items in delivery order (for diagnostics).
    pub(super) fn iter(&self) -> impl Iterator<Item = (Instant, &T)> {
        let mut items: Vec<&Item<T>> = self.items.iter().collect();
        items.sort_unstable_by_key(|item| (item.at, item.seq));
        items.into_iter().map(|item| (item.at, &item.due))
    }
}
