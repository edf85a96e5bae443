//! [`Departures`]: the peers whose per-peer state is looked at again once a grace has passed
//! since their incarnation died or their last link closed (docs/ARCHITECTURE.md §9.4).
//!
//! A death (or a link loss, or the close of a link this node no longer needs, that leaves a
//! peer with no link, a new relayed-map entry, the loss of its record to another node taking
//! its name) schedules the peer at `now + grace` ([`departed_grace`]); a later schedule
//! postpones an earlier one, so a peer is looked at a whole grace after the last thing that
//! scheduled it. When that instant comes the book ([`EvidenceBook::forget_departed`], which
//! the node calls with its links and outboxes) forgets every entry held for the peer —
//! receive stream, handshake incarnation, suspicion, death, relayed sources, sending-side
//! incarnation — if the peer has *departed*: no discovery record, no link (up or dialling), no
//! endpoint. A peer that has any of those is in the live set and keeps its entries (a later
//! death or link loss schedules it again); one that is only waiting on an endpoint or a link
//! is looked at again one grace later.

use alloc::collections::{BTreeMap, VecDeque};

use super::EvidenceBook;
use crate::{
    bus::links::Links,
    config::Config,
    endpoint::EndpointTable,
    ids::NodeId,
    time::{Duration, Instant},
};

/// How long a dead incarnation's entries are kept: `message_timeout` (a sender retransmits a
/// message until its deadline at most that long after it was sent, so no copy is sent later
/// even by a sender wrongly found dead) plus `heartbeat_interval × heartbeat_dead_after` (a
/// copy already written on a link arrives before that link's silence closes it; relays
/// forward at once or drop, they hold nothing). After it, no copy of anything the dead
/// incarnation sent can arrive: its receive stream can go without a duplicate ever being
/// delivered, and a second word of its death can no longer come from a frame in flight.
#[must_use]
pub(crate) fn departed_grace(config: &Config) -> Duration {
    let silence = config
        .heartbeat_interval
        .saturating_mul(config.heartbeat_dead_after);
    config.message_timeout.saturating_add(silence)
}

/// Peers to look at again, in due order; see the [module docs](self).
#[derive(Clone, Debug, Default)]
pub(crate) struct Departures {
    /// `(due, peer)`, due instants non-decreasing (one grace for the node; a reload that
    /// shortens it only delays entries behind a later one). An entry whose due is not its
    /// peer's latest is passed over.
    queue: VecDeque<(Instant, NodeId)>,
    /// Each scheduled peer's latest due instant.
    due: BTreeMap<NodeId, Instant>,
}

impl Departures {
    /// Looks at `peer` again at `due`, or later if it is due later already.
    pub(crate) fn schedule(&mut self, peer: NodeId, due: Instant) {
        if self.due.get(&peer).is_some_and(|&held| held >= due) {
            return;
        }
        self.due.insert(peer, due);
        self.queue.push_back((due, peer));
    }

    /// When the next entry is due (`None`: none; a passed-over entry may make it early).
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.queue.front().map(|&(due, _)| due)
    }

    /// The next peer due at `now`, no longer scheduled.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<NodeId> {
        while let Some(&(due, peer)) = self.queue.front().filter(|&&(due, _)| due <= now) {
            self.queue.pop_front();
            if self.due.get(&peer) == Some(&due) {
                self.due.remove(&peer);
                return Some(peer);
            }
        }
        None
    }

    /// Peers scheduled (for the tables' sizes).
    pub(crate) fn len(&self) -> usize {
        self.due.len()
    }
}

impl EvidenceBook {
    /// Forgets every peer due at `now` that departed (`has_record`: whether the discovery set
    /// holds its record): no discovery record, no link, no endpoint, nothing heard on its
    /// receive stream for a grace. One with a record is in the live set (its deletion
    /// schedules it again); one with a link, an endpoint or a frame heard lately is looked at
    /// again one grace later. Its entries go from the book, the links
    /// ([`Links::forget_peer`]) and the outboxes ([`EndpointTable::forget_known`]).
    pub(crate) fn forget_departed(
        &mut self,
        now: Instant,
        has_record: impl Fn(NodeId) -> bool,
        links: &mut Links,
        endpoints: &mut EndpointTable,
    ) {
        while let Some(peer) = self.departures.pop_due(now) {
            if has_record(peer) {
                continue;
            }
            if links.is_up(peer)
                || links.is_connecting(peer)
                || endpoints.find_by_id(peer).is_some()
                || !links.forget_peer(peer, now, self.grace)
            {
                self.depart(peer, now);
                continue;
            }
            self.forget(peer);
            endpoints.forget_known(peer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_grace_is_the_message_timeout_plus_the_heartbeat_silence() {
        let config = Config::new(NodeId(1), "a");
        // 8 s + 1.5 s × 3.
        assert_eq!(departed_grace(&config), Duration::from_millis(12_500));
    }

    #[test]
    fn peers_come_due_in_order_and_not_before() {
        let mut d = Departures::default();
        d.schedule(NodeId(7), Instant::from_secs(5));
        d.schedule(NodeId(8), Instant::from_secs(6));
        assert_eq!(d.next_deadline(), Some(Instant::from_secs(5)));
        assert_eq!(d.pop_due(Instant::from_millis(4_999)), None);
        assert_eq!(d.pop_due(Instant::from_secs(5)), Some(NodeId(7)));
        assert_eq!(d.pop_due(Instant::from_secs(5)), None);
        assert_eq!(d.len(), 1);
        assert_eq!(d.pop_due(Instant::from_secs(9)), Some(NodeId(8)));
        assert_eq!(d.next_deadline(), None);
    }

    #[test]
    fn a_later_schedule_postpones_the_earlier_one() {
        let mut d = Departures::default();
        d.schedule(NodeId(7), Instant::from_secs(5));
        d.schedule(NodeId(7), Instant::from_secs(8));
        // An earlier instant than the one held changes nothing.
        d.schedule(NodeId(7), Instant::from_secs(6));
        assert_eq!(d.len(), 1);
        assert_eq!(d.pop_due(Instant::from_secs(7)), None);
        assert_eq!(d.next_deadline(), Some(Instant::from_secs(8)));
        assert_eq!(d.pop_due(Instant::from_secs(8)), Some(NodeId(7)));
        assert_eq!((d.len(), d.next_deadline()), (0, None));
    }
}
