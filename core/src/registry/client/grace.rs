//! The grace deadlines of peers missing from a new-epoch snapshot, on a [`TimerQueue`].
//!
//! A registry that restarted (a new epoch) sends a snapshot without the peers that have not
//! re-registered yet; the client keeps each of them for the grace instead of deleting it at
//! once, and deletes it when its deadline passes without the peer coming back (ARCHITECTURE
//! §10). The [`TimerQueue`] wants small `Copy` keys and a peer's [`EntryKey`] may be a name,
//! so each armed grace gets a ticket (a `u64` drawn from a counter) and the key ↔ ticket maps
//! live here. The rules the client relies on:
//!
//! - [`start`](GraceTimers::start) keeps a peer's first deadline: a peer still missing from a
//!   later snapshot is not given a longer grace;
//! - [`end`](GraceTimers::end) (the peer came back, or was deleted) disarms it, and a later
//!   `start` arms a fresh deadline under a fresh ticket — the old ticket never fires;
//! - [`pop_expired`](GraceTimers::pop_expired) hands out peers whose deadline is `<= now`,
//!   earliest first, peers of one deadline in the order they were started; never one before
//!   its deadline. [`next_deadline`](GraceTimers::next_deadline) is exact (O(1)).

use alloc::collections::BTreeMap;

use crate::{registry::server::EntryKey, time::Instant, timer::TimerQueue};

/// Peers inside their grace: each one's deadline, earliest first.
#[derive(Debug, Default)]
pub(super) struct GraceTimers {
    /// Missing peer → its ticket and deadline.
    by_key: BTreeMap<EntryKey, (u64, Instant)>,
    /// Ticket → the peer it was drawn for (while armed).
    by_ticket: BTreeMap<u64, EntryKey>,
    /// Tickets by deadline (ties: the lower ticket, i.e. the earlier start, first).
    deadlines: TimerQueue<u64>,
    /// The next ticket.
    next_ticket: u64,
}

impl GraceTimers {
    /// Arms `key`'s grace to end at `deadline`, unless it is already inside one (which keeps
    /// its first deadline).
    pub(super) fn start(&mut self, key: EntryKey, deadline: Instant) {
        if self.by_key.contains_key(&key) {
            return;
        }
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.deadlines.arm(ticket, deadline);
        self.by_ticket.insert(ticket, key.clone());
        self.by_key.insert(key, (ticket, deadline));
    }

    /// Ends `key`'s grace if it is inside one.
    pub(super) fn end(&mut self, key: &EntryKey) {
        if let Some((ticket, _)) = self.by_key.remove(key) {
            self.deadlines.cancel(ticket);
            self.by_ticket.remove(&ticket);
        }
    }

    /// Whether `key` is inside its grace.
    pub(super) fn contains(&self, key: &EntryKey) -> bool {
        self.by_key.contains_key(key)
    }

    /// Peers inside their grace.
    pub(super) fn len(&self) -> usize {
        self.by_key.len()
    }

    /// The earliest deadline, if any peer is inside its grace.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.next_deadline()
    }

    /// The next peer whose grace ended at or before `now` (its grace is over: it is no longer
    /// [`contains`](Self::contains)ed).
    pub(super) fn pop_expired(&mut self, now: Instant) -> Option<EntryKey> {
        let (ticket, _) = self.deadlines.pop_expired(now)?;
        let key = self
            .by_ticket
            .remove(&ticket)
            .expect("every armed ticket maps to its peer");
        self.by_key.remove(&key);
        Some(key)
    }

    /// The peers inside their grace with their deadlines, in key order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&EntryKey, &Instant)> + '_ {
        self.by_key
            .iter()
            .map(|(key, (_, deadline))| (key, deadline))
    }
}

#[cfg(test)]
mod tests {
    use alloc::{string::String, vec::Vec};

    use super::*;
    use crate::ids::NodeId;

    fn id(n: u64) -> EntryKey {
        EntryKey::Id(NodeId(n))
    }

    fn drain(grace: &mut GraceTimers, now: Instant) -> Vec<EntryKey> {
        core::iter::from_fn(|| grace.pop_expired(now)).collect()
    }

    #[test]
    fn peers_end_in_deadline_order_then_start_order_never_early() {
        let t = Instant::from_millis;
        let mut grace = GraceTimers::default();
        // One deadline for a batch started in this order (a name-only peer among them), an
        // earlier one started after it.
        grace.start(id(9), t(500));
        grace.start(EntryKey::Name(String::from("by-name")), t(500));
        grace.start(id(2), t(500));
        grace.start(id(5), t(300));
        assert_eq!(grace.len(), 4);
        assert_eq!(grace.next_deadline(), Some(t(300)));
        assert_eq!(drain(&mut grace, t(299)), []);
        assert_eq!(drain(&mut grace, t(300)), [id(5)]);
        assert!(!grace.contains(&id(5)));
        assert_eq!(grace.next_deadline(), Some(t(500)));
        assert_eq!(drain(&mut grace, t(499)), []);
        assert_eq!(
            drain(&mut grace, t(10_000)),
            [id(9), EntryKey::Name(String::from("by-name")), id(2)]
        );
        assert_eq!((grace.len(), grace.next_deadline()), (0, None));
    }

    #[test]
    fn a_second_start_keeps_the_first_deadline_and_an_ended_grace_never_fires() {
        let t = Instant::from_millis;
        let mut grace = GraceTimers::default();
        grace.start(id(1), t(100));
        // Still missing from a later snapshot: no longer grace, and no earlier one either.
        grace.start(id(1), t(900));
        grace.start(id(1), t(50));
        assert_eq!(grace.iter().collect::<Vec<_>>(), [(&id(1), &t(100))]);
        assert_eq!(grace.next_deadline(), Some(t(100)));

        // Back before its deadline: the grace ends, nothing fires at the old deadline.
        grace.end(&id(1));
        grace.end(&id(1)); // ending twice is harmless
        assert!(!grace.contains(&id(1)));
        assert_eq!(grace.next_deadline(), None);
        assert_eq!(drain(&mut grace, t(100)), []);

        // Missing again: a fresh deadline, which alone fires.
        grace.start(id(1), t(400));
        assert_eq!(grace.next_deadline(), Some(t(400)));
        assert_eq!(drain(&mut grace, t(399)), []);
        assert_eq!(drain(&mut grace, t(400)), [id(1)]);
        assert_eq!(grace.len(), 0);
    }
}
