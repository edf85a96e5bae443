//! Departed records: the discovery records deleted less than the *send grace* ago
//! (`Config::send_grace`, docs/ARCHITECTURE.md §7), so a send to a name or id this node knew
//! a moment ago is held for the node's next life instead of refused at submission — the gap
//! between a graceful exit's delete and the restarted node's record is a few milliseconds.
//!
//! Each departure keeps the name the record held and its grace end, one keyed timer per id.
//! A new record for the id or the name ends the departure (the node is back, or the name is
//! someone else's now); the grace end with nothing back hands the id to the node, which ends
//! what still waits for it (`Failed(TargetGone)`: none of it was ever sent to a live node).

use alloc::{collections::BTreeMap, string::String, vec::Vec};

use crate::{
    ids::NodeId,
    time::{Duration, Instant},
    timer::TimerQueue,
};

/// The records deleted within the grace; see the [module docs](self).
#[derive(Debug)]
pub(crate) struct Departed {
    /// How long a departure is remembered.
    grace: Duration,
    /// The name each departed id held (`""`: none).
    names: BTreeMap<NodeId, String>,
    /// Each departed name's id.
    by_name: BTreeMap<String, NodeId>,
    /// Each departure's grace end.
    ends: TimerQueue<NodeId>,
}

impl Departed {
    /// An empty book remembering departures for `grace`.
    pub(crate) fn new(grace: Duration) -> Departed {
        Departed {
            grace,
            names: BTreeMap::new(),
            by_name: BTreeMap::new(),
            ends: TimerQueue::new(),
        }
    }

    /// `id`'s record, holding `name`, was deleted at `now`: remembered until `now + grace`
    /// (a later departure of the same id starts its grace again).
    pub(crate) fn note(&mut self, id: NodeId, name: &str, now: Instant) {
        if !id.is_valid() {
            return;
        }
        self.forget_id(id);
        if !name.is_empty() {
            self.by_name.insert(name.into(), id);
        }
        self.names.insert(id, name.into());
        self.ends.replace(id, now + self.grace);
    }

    /// A record for `id` holding `name` arrived: neither is departed any more.
    pub(crate) fn arrived(&mut self, id: NodeId, name: &str) {
        self.forget_id(id);
        if let Some(holder) = self.by_name.remove(name) {
            self.forget_id(holder);
        }
    }

    /// The id that held `name` when its record was deleted, within the grace.
    pub(crate) fn by_name(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    /// Whether `id`'s record was deleted within the grace (and nothing came back since).
    #[inline]
    pub(crate) fn contains(&self, id: NodeId) -> bool {
        self.names.contains_key(&id)
    }

    /// The earliest grace end; feed into the node's `poll_timeout`.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.ends.next_deadline()
    }

    /// The departures whose grace ends at or before `now`, forgotten, in deadline order.
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<NodeId> {
        let mut due = Vec::new();
        while let Some((id, _)) = self.ends.pop_expired(now) {
            self.forget_id(id);
            due.push(id);
        }
        due
    }

    /// Forgets `id`'s departure, if any.
    fn forget_id(&mut self, id: NodeId) {
        if let Some(name) = self.names.remove(&id)
            && self.by_name.get(&name) == Some(&id)
        {
            self.by_name.remove(&name);
        }
        self.ends.cancel(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_millis(500);

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn a_departure_is_known_by_name_and_id_until_its_grace_ends() {
        let mut book = Departed::new(GRACE);
        book.note(NodeId(7), "a", at(100));
        assert_eq!(book.by_name("a"), Some(NodeId(7)));
        assert!(book.contains(NodeId(7)));
        assert_eq!(book.next_deadline(), Some(at(600)));
        assert_eq!(book.expire(at(599)), Vec::<NodeId>::new());
        assert_eq!(book.expire(at(600)), [NodeId(7)]);
        assert_eq!(book.by_name("a"), None);
        assert!(!book.contains(NodeId(7)));
        assert_eq!(book.next_deadline(), None);
    }

    #[test]
    fn a_record_back_for_the_id_or_the_name_ends_the_departure() {
        let mut book = Departed::new(GRACE);
        book.note(NodeId(7), "a", at(0));
        book.note(NodeId(8), "b", at(10));
        book.arrived(NodeId(7), "a");
        // Another node took "b": 8 is no longer what "b" means.
        book.arrived(NodeId(9), "b");
        assert_eq!((book.by_name("a"), book.by_name("b")), (None, None));
        assert!(!book.contains(NodeId(7)) && !book.contains(NodeId(8)));
        assert_eq!(book.next_deadline(), None);
        assert_eq!(book.expire(at(10_000)), Vec::<NodeId>::new());
    }

    #[test]
    fn a_second_departure_restarts_the_grace_and_a_new_name_replaces_the_old() {
        let mut book = Departed::new(GRACE);
        book.note(NodeId(7), "a", at(0));
        book.note(NodeId(7), "a2", at(300));
        assert_eq!(
            (book.by_name("a"), book.by_name("a2")),
            (None, Some(NodeId(7)))
        );
        assert_eq!(book.next_deadline(), Some(at(800)));
        // An id-less record departs by nothing; a nameless one by id only.
        book.note(NodeId::NONE, "x", at(300));
        book.note(NodeId(9), "", at(300));
        assert_eq!(book.by_name("x"), None);
        assert!(book.contains(NodeId(9)));
        assert_eq!(book.expire(at(800)), [NodeId(7), NodeId(9)]);
    }
}
