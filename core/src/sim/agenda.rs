//! The simulator's agenda: everything scheduled to reach a node at a future (or the current)
//! instant — link establishment, bytes, close notifications, delayed registry events.
//!
//! Items are ordered by (time, scheduling order), so two items due at the same instant come out
//! in the order they were scheduled; that FIFO rule is what keeps each link's byte stream
//! ordered.

use alloc::{boxed::Box, collections::BTreeMap, vec::Vec};

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

/// Scheduled deliveries ordered by (time, scheduling sequence): the simulator's own
/// ([`Due`]) and the registry network's.
#[derive(Debug)]
pub(super) struct Agenda<T = Due> {
    items: BTreeMap<(Instant, u64), T>,
    next_seq: u64,
}

impl<T> Default for Agenda<T> {
    fn default() -> Agenda<T> {
        Agenda {
            items: BTreeMap::new(),
            next_seq: 0,
        }
    }
}

impl<T> Agenda<T> {
    /// Schedules `due` at `at`, after everything already scheduled for `at`.
    pub(super) fn push(&mut self, at: Instant, due: T) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.items.insert((at, seq), due);
    }

    /// Time of the earliest item.
    pub(super) fn next_time(&self) -> Option<Instant> {
        self.items.keys().next().map(|&(at, _)| at)
    }

    /// Removes and returns the earliest item if it is due at or before `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<(Instant, T)> {
        let first = self.items.first_entry()?;
        if first.key().0 > now {
            return None;
        }
        let ((at, _), due) = first.remove_entry();
        Some((at, due))
    }

    /// Removes every item `take` picks and returns them in delivery order.
    pub(super) fn take_where(&mut self, mut take: impl FnMut(&T) -> bool) -> Vec<(Instant, T)> {
        let keys: Vec<(Instant, u64)> = self
            .items
            .iter()
            .filter(|(_, due)| take(due))
            .map(|(&key, _)| key)
            .collect();
        keys.into_iter()
            .filter_map(|key| self.items.remove(&key).map(|due| (key.0, due)))
            .collect()
    }

    /// Number of scheduled items.
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    /// The scheduled items in delivery order (for diagnostics).
    pub(super) fn iter(&self) -> impl Iterator<Item = (Instant, &T)> {
        self.items.iter().map(|(&(at, _), due)| (at, due))
    }
}
