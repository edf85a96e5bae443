//! Sim v2 commands: tagged sends for the [delivery ledger](super::ledger), partitions, and the
//! counters the seeds runner reports.
//!
//! What the link emulator models, and what it does not:
//!
//! - **Latency and jitter**: per pair ([`Sim::set_latency`]) plus a uniform random extra in
//!   `[0, SimSettings::jitter)` per transmission. One link never reorders its own bytes (it is
//!   a TCP stream): a later transmission arrives no earlier than an earlier one.
//! - **Loss** is a link break ([`Sim::cut`]): a reliable stream does not lose bytes in the
//!   middle, it dies. Bytes in flight on the link are dropped and both ends get
//!   `handle_closed` at once; dials between the pair work again immediately.
//! - **Duplication and reordering** do not exist inside one stream; they are real *across*
//!   streams, and that is what the simulator produces: after a break the sender retransmits
//!   on a new link what the receiver may already have delivered (duplicates across
//!   reconnects), and after a proxy switch frames still travelling the old, slow path arrive
//!   after retransmissions over the new path (reordering and duplication across paths).
//! - **Partitions** ([`Sim::partition`]): every pair across the cut is down — links drop,
//!   dials fail — until [`Sim::heal`].
//! - **Kill / restart** ([`Sim::kill`], [`Sim::restart`]): a restart is a new incarnation.
//! - **Registry** delays and reordering: [`Fanout::spread`](super::Fanout::spread) delays
//!   each node's copy of an event independently.

use alloc::vec::Vec;

use bytes::Bytes;

use super::{
    SimNode,
    cluster::Sim,
    ledger::{Ledger, LedgerTotals, TAG_LEN, TAG_MAGIC},
};
use crate::{
    ids::{MsgId, NodeId},
    node::SendError,
    select::Select,
};

impl<N: SimNode> Sim<N> {
    /// Starts the delivery ledger: from now on every tagged message ([`Sim::send_tagged`])
    /// is tracked and its invariants checked as outputs appear. No-op if already on.
    pub fn enable_ledger(&mut self) {
        if self.ledger.is_none() {
            self.ledger = Some(Ledger::default());
        }
    }

    /// Sends a message whose payload carries a fresh unique tag (then `filler` bytes), so the
    /// ledger can follow it exactly. Enables the ledger. Returns the tag and the send result.
    ///
    /// # Panics
    ///
    /// If `from` is unknown or dead (like [`Sim::send`]).
    pub fn send_tagged(
        &mut self,
        from: NodeId,
        target: Select,
        msg_type: u32,
        filler: usize,
    ) -> (u64, Result<MsgId, SendError>) {
        self.send_tagged_body(from, target, msg_type, &alloc::vec![0x5a; filler])
    }

    /// [`Sim::send_tagged`] with `body` after the tag instead of filler (scenario tests tag
    /// their text payloads this way, so the ledger checks every message they send; strip the
    /// first [`TAG_LEN`] bytes of a received payload to read the text back).
    ///
    /// # Panics
    ///
    /// If `from` is unknown or dead (like [`Sim::send`]).
    pub fn send_tagged_body(
        &mut self,
        from: NodeId,
        target: Select,
        msg_type: u32,
        body: &[u8],
    ) -> (u64, Result<MsgId, SendError>) {
        self.enable_ledger();
        let tag = self.next_tag;
        self.next_tag += 1;
        let mut payload = Vec::with_capacity(TAG_LEN + body.len());
        payload.extend_from_slice(&tag.to_le_bytes());
        payload.extend_from_slice(&TAG_MAGIC);
        payload.extend_from_slice(body);
        (tag, self.send(from, target, msg_type, Bytes::from(payload)))
    }

    /// Totals of the ledger (all zero before it is enabled).
    #[must_use]
    pub fn ledger_totals(&self) -> LedgerTotals {
        self.ledger
            .as_ref()
            .map(|l| l.totals().clone())
            .unwrap_or_default()
    }

    /// The outcome reported for tagged message `tag`, if any.
    #[must_use]
    pub fn tag_outcome(&self, tag: u64) -> Option<crate::outcome::Outcome> {
        self.ledger.as_ref().and_then(|l| l.outcome(tag))
    }

    /// Deliveries and timer firings processed so far (the runner's "events").
    #[must_use]
    pub fn steps_taken(&self) -> u64 {
        self.steps
    }

    /// Cuts `side` off from every other node: each pair across the cut goes down like
    /// [`Sim::link_down`] (links drop now, dials fail) until [`Sim::heal`].
    pub fn partition(&mut self, side: &[NodeId]) {
        let all = self.node_ids();
        for &a in side {
            for &b in &all {
                if !side.contains(&b) && !self.pairs.is_down(a, b) {
                    self.link_down(a, b);
                }
            }
        }
    }

    /// Brings every down pair back up (dials succeed again).
    pub fn heal(&mut self) {
        for (a, b) in self.pairs.down_pairs() {
            self.link_up(a, b);
        }
    }

    /// Records a violation found by a check outside the simulator (a scenario's own check):
    /// kept in [`Sim::violations`]; panics in strict mode.
    pub fn record_violation(&mut self, text: &str) {
        self.violation(text);
    }

    /// Moves the ledger's violations found so far into [`Sim::violations`] (panicking in
    /// strict mode) and returns how many there were.
    pub(super) fn collect_ledger_violations(&mut self) -> usize {
        let found = self
            .ledger
            .as_mut()
            .map(Ledger::take_violations)
            .unwrap_or_default();
        let n = found.len();
        for v in found {
            self.violation(&v);
        }
        n
    }
}
