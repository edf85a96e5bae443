//! The simulator's agenda: everything scheduled to reach a node at a future (or the current)
//! instant — link establishment, bytes, close notifications, delayed registry events.
//!
//! Items are ordered by (time, scheduling order), so two items due at the same instant come out
//! in the order they were scheduled; that FIFO rule is what keeps each link's byte stream
//! ordered.

use alloc::{boxed::Box, collections::BTreeMap};

use bytes::Bytes;

use super::link::{Side, SimLinkId};
use crate::{ids::NodeId, registry::RegistryEvent, time::Instant};

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

/// Scheduled deliveries ordered by (time, scheduling sequence).
#[derive(Debug, Default)]
pub(super) struct Agenda {
    items: BTreeMap<(Instant, u64), Due>,
    next_seq: u64,
}

impl Agenda {
    /// Schedules `due` at `at`, after everything already scheduled for `at`.
    pub(super) fn push(&mut self, at: Instant, due: Due) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.items.insert((at, seq), due);
    }

    /// Time of the earliest item.
    pub(super) fn next_time(&self) -> Option<Instant> {
        self.items.keys().next().map(|&(at, _)| at)
    }

    /// Removes and returns the earliest item if it is due at or before `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<(Instant, Due)> {
        let (&(at, seq), _) = self.items.iter().next()?;
        if at > now {
            return None;
        }
        self.items.remove(&(at, seq)).map(|due| (at, due))
    }

    /// Number of scheduled items.
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    /// The scheduled items in delivery order (for diagnostics).
    pub(super) fn iter(&self) -> impl Iterator<Item = (Instant, &Due)> {
        self.items.iter().map(|(&(at, _), due)| (at, due))
    }
}
