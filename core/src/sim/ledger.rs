//! The delivery ledger: exact bookkeeping of every *tagged* message, so the message invariants
//! are checked per message rather than by counting.
//!
//! A tagged message ([`Sim::send_tagged`](super::Sim::send_tagged)) carries a unique 64-bit
//! tag in its payload: bytes `0..8` the tag (little endian), bytes `8..12` the magic
//! [`TAG_MAGIC`], then filler. The ledger learns of it when the sending node accepts it, and
//! then sees every delivery of that payload (`Output::Received` at any node) and its outcome.
//! It reports, at the moment the offending output appears (the simulator moves each report
//! into [`Sim::violations`](super::Sim::violations) right away, so a strict simulation panics
//! at the output that broke the rule):
//!
//! - a delivery of a tag that was never accepted, or by another sender than the one that sent
//!   it, or to another node than its `Select::Node`;
//! - a second delivery of one tag (anywhere, any incarnation);
//! - a delivery of a tag whose outcome is `Failed` (or a `Failed` outcome for a delivered
//!   tag) — only `Unknown` may have been delivered;
//! - a `Delivered` outcome for a tag no node has delivered yet (the target acknowledges after
//!   it delivers, so the delivery always comes first);
//! - a second outcome for one tag;
//! - a delivery out of order: within one (sender incarnation, receiver incarnation) pair,
//!   tags must arrive increasing (tags grow with send order);
//! - an outcome for `Timeout` before the message's own deadline (accepted + the sender's
//!   message timeout);
//! - no outcome after the message's own deadline: once the clock is past it
//!   (checked with every per-step check, `Sim::check_invariants`), a message of a running
//!   sender that still has no outcome is reported, once;
//! - a message still open when its sender reports evidence of the death
//!   (`Event::PeerDead`) of the target incarnation that delivered it: what may have reached
//!   a dead incarnation must have ended by then.
//!
//! At the end of a run, the final check (`Sim::check_quiescent`) adds one violation per accepted message of
//! a still-running incarnation that has no outcome. Messages accepted by an incarnation that
//! was killed before reporting are *orphaned*: no outcome exists for them, by design of `kill`.

use alloc::{
    collections::{BTreeMap, BTreeSet},
    format,
    string::String,
    vec::Vec,
};

use foldhash::fast::FixedState;
use hashbrown::HashMap;

use crate::{
    ids::{MsgId, NodeId},
    outcome::{FailReason, Outcome},
    time::Instant,
};

/// Bytes 8..12 of a tagged payload.
pub const TAG_MAGIC: [u8; 4] = *b"SBT1";

/// Shortest tagged payload: tag + magic.
pub const TAG_LEN: usize = 12;

/// The tag of a tagged payload, or `None` for any other payload.
#[must_use]
pub fn payload_tag(payload: &[u8]) -> Option<u64> {
    if payload.len() < TAG_LEN || payload[8..TAG_LEN] != TAG_MAGIC {
        return None;
    }
    let mut tag = [0u8; 8];
    tag.copy_from_slice(&payload[..8]);
    Some(u64::from_le_bytes(tag))
}

/// One tagged message.
#[derive(Clone, Debug)]
struct Entry {
    sender: NodeId,
    incarnation: u32,
    msg: MsgId,
    /// `Some(id)` when sent with `Select::Node(id)`: only `id` may deliver it.
    target: Option<NodeId>,
    outcome: Option<Outcome>,
    deliveries: u32,
    /// Where it was first delivered: (node, incarnation).
    first: Option<(NodeId, u32)>,
    orphaned: bool,
    /// Its deadline (accepted + the sender's message timeout), if the sender has one.
    deadline: Option<Instant>,
}

/// Totals over every tagged message (see [`super::Sim::ledger_totals`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LedgerTotals {
    /// Messages the senders accepted.
    pub sent: u64,
    /// Messages the senders refused (`send` returned an error).
    pub refused: u64,
    /// Distinct messages delivered to an application (a duplicate is a violation, not counted).
    pub delivered: u64,
    /// `Delivered` outcomes.
    pub acknowledged: u64,
    /// Outcomes other than `Delivered`, by key: `Failed(r)` under the reason's snake-case name
    /// (`timeout`, `queue_full`, `no_route`, `target_gone`, `target_restarted`, `shutdown`),
    /// `Unknown(r)` under `unknown_<reason>`; accepted messages whose sending incarnation was
    /// killed before an outcome under `sender_killed`.
    pub failed: BTreeMap<String, u64>,
}

/// The delivery ledger; see the [module docs](self).
#[derive(Debug, Default)]
pub struct Ledger {
    /// By tag; the maps only looked up by key are hash maps (a fixed hasher: deterministic).
    entries: HashMap<u64, Entry, FixedState>,
    by_msg: HashMap<(NodeId, u32, MsgId), u64, FixedState>,
    open: BTreeMap<(NodeId, u32), BTreeSet<u64>>,
    /// Last tag delivered per (sender, sender incarnation, receiver, receiver incarnation).
    last: HashMap<(NodeId, u32, NodeId, u32), u64, FixedState>,
    /// Open messages by deadline: (deadline, tag), popped once the clock is past it.
    deadlines: BTreeSet<(Instant, u64)>,
    violations: Vec<String>,
    totals: LedgerTotals,
}

impl Ledger {
    /// A send of `tag` by `sender` (incarnation `incarnation`) was accepted as `msg`.
    pub(super) fn on_accepted(
        &mut self,
        sender: NodeId,
        incarnation: u32,
        msg: MsgId,
        tag: u64,
        target: Option<NodeId>,
        deadline: Option<Instant>,
    ) {
        self.totals.sent += 1;
        if self.entries.contains_key(&tag) {
            self.violations.push(format!(
                "tag {tag} was accepted twice (checker input error)"
            ));
            return;
        }
        self.entries.insert(
            tag,
            Entry {
                sender,
                incarnation,
                msg,
                target,
                outcome: None,
                deliveries: 0,
                first: None,
                orphaned: false,
                deadline,
            },
        );
        self.by_msg.insert((sender, incarnation, msg), tag);
        if let Some(deadline) = deadline {
            self.deadlines.insert((deadline, tag));
        }
        self.open
            .entry((sender, incarnation))
            .or_default()
            .insert(tag);
    }

    /// A tagged send was refused.
    pub(super) fn on_refused(&mut self) {
        self.totals.refused += 1;
    }

    /// `to` (incarnation `inc`) delivered a payload claiming to come from `from`.
    pub(super) fn on_received(&mut self, to: NodeId, inc: u32, from: NodeId, payload: &[u8]) {
        let Some(tag) = payload_tag(payload) else {
            return;
        };
        let Some(e) = self.entries.get_mut(&tag) else {
            self.violations.push(format!(
                "{to} delivered tag {tag} from {from}, which no node accepted"
            ));
            return;
        };
        e.deliveries += 1;
        let (sender, s_inc, msg) = (e.sender, e.incarnation, e.msg);
        if let Some((first, first_inc)) = e.first {
            let why = if first == to && first_inc != inc {
                " — the receiver restarted in between and its new incarnation took the \
                 retransmission as a new stream"
            } else {
                ""
            };
            self.violations.push(format!(
                "tag {tag} (msg#{} of {sender}) delivered {} times: first at {first} \
                 (incarnation {first_inc}), now at {to} (incarnation {inc}){why}",
                msg.0, e.deliveries
            ));
        } else {
            e.first = Some((to, inc));
            self.totals.delivered += 1;
        }
        if let Some(Outcome::Failed(r)) = e.outcome {
            self.violations.push(format!(
                "tag {tag} (msg#{} of {sender}) delivered at {to} after it was reported Failed({r:?})",
                msg.0
            ));
        }
        if from != sender {
            self.violations.push(format!(
                "tag {tag} sent by {sender} delivered at {to} as coming from {from}"
            ));
        }
        if let Some(t) = e.target.filter(|&t| t != to) {
            self.violations.push(format!(
                "tag {tag} sent by {sender} to {t} delivered at {to}"
            ));
        }
        let last = self.last.entry((sender, s_inc, to, inc)).or_insert(tag);
        if tag < *last {
            self.violations.push(format!(
                "out of order: {to} (incarnation {inc}) delivered tag {tag} from {sender} \
                 (incarnation {s_inc}) after tag {}",
                *last
            ));
        } else {
            *last = tag;
        }
    }

    /// `node` (incarnation `inc`) reported `outcome` for `msg`.
    pub(super) fn on_outcome(
        &mut self,
        node: NodeId,
        inc: u32,
        msg: MsgId,
        outcome: Outcome,
        at: Instant,
    ) {
        let Some(&tag) = self.by_msg.get(&(node, inc, msg)) else {
            return;
        };
        let Some(e) = self.entries.get_mut(&tag) else {
            return;
        };
        if let Some(first) = e.outcome {
            self.violations.push(format!(
                "tag {tag} (msg#{} of {node}) got a second outcome {outcome} after {first}",
                msg.0
            ));
            return;
        }
        e.outcome = Some(outcome);
        let delivered = e.deliveries;
        if outcome.reason() == Some(FailReason::Timeout) && e.deadline.is_some_and(|d| at < d) {
            self.violations.push(format!(
                "tag {tag} (msg#{} of {node}) ended {outcome} at {at:?}, before its deadline {:?}",
                msg.0, e.deadline
            ));
        }
        if let Some(open) = self.open.get_mut(&(node, inc)) {
            open.remove(&tag);
        }
        match outcome {
            Outcome::Delivered => {
                self.totals.acknowledged += 1;
                if delivered == 0 {
                    self.violations.push(format!(
                        "tag {tag} (msg#{} of {node}) reported Delivered but no node delivered it",
                        msg.0
                    ));
                }
            }
            Outcome::Failed(r) => {
                *self
                    .totals
                    .failed
                    .entry(String::from(r.as_str()))
                    .or_insert(0) += 1;
                if delivered > 0 {
                    self.violations.push(format!(
                        "tag {tag} (msg#{} of {node}) reported Failed({r:?}) but was delivered",
                        msg.0
                    ));
                }
            }
            Outcome::Unknown(r) => {
                *self
                    .totals
                    .failed
                    .entry(Outcome::Unknown(r).label())
                    .or_insert(0) += 1;
            }
        }
    }

    /// `node` (incarnation `inc`) reported evidence that `peer`'s life `dead` (the
    /// simulator's incarnation count, if known) is over: every message of `node` to `peer`
    /// that this life delivered must have its outcome by now — nothing that may have reached
    /// a dead incarnation outlives the evidence.
    pub(super) fn on_death_evidence(
        &mut self,
        node: NodeId,
        inc: u32,
        peer: NodeId,
        dead: Option<u32>,
        at: Instant,
    ) {
        let Some(dead) = dead else {
            return;
        };
        let Some(open) = self.open.get(&(node, inc)) else {
            return;
        };
        for &tag in open {
            let Some(e) = self.entries.get(&tag) else {
                continue;
            };
            if e.target == Some(peer) && e.first == Some((peer, dead)) {
                self.violations.push(format!(
                    "tag {tag} (msg#{} of {node}) was delivered by {peer} (incarnation {dead}) \
                     and is still open at {at:?}, after {node} saw evidence of that \
                     incarnation's death",
                    e.msg.0
                ));
            }
        }
    }

    /// The clock reads `now`: every message whose deadline is before `now` must have its
    /// outcome (or have been orphaned by its sender's death). Each late message is reported
    /// once; a message checked here is not checked again.
    pub(super) fn check_deadlines(&mut self, now: Instant) {
        while let Some(&(deadline, tag)) = self.deadlines.first() {
            if deadline >= now {
                break;
            }
            self.deadlines.pop_first();
            let Some(e) = self.entries.get(&tag) else {
                continue;
            };
            if e.outcome.is_none() && !e.orphaned {
                self.violations.push(format!(
                    "tag {tag} (msg#{} of {}, incarnation {}) has no outcome at {now:?}, \
                     after its deadline {deadline:?}",
                    e.msg.0, e.sender, e.incarnation
                ));
            }
        }
    }

    /// Incarnation `inc` of `node` died: its open messages are orphaned.
    pub(super) fn on_death(&mut self, node: NodeId, inc: u32) {
        let Some(open) = self.open.remove(&(node, inc)) else {
            return;
        };
        for tag in open {
            if let Some(e) = self.entries.get_mut(&tag) {
                e.orphaned = true;
                *self
                    .totals
                    .failed
                    .entry(String::from("sender_killed"))
                    .or_insert(0) += 1;
            }
        }
    }

    /// Violations found since the last call.
    pub(super) fn take_violations(&mut self) -> Vec<String> {
        core::mem::take(&mut self.violations)
    }

    /// One violation per accepted message of a running incarnation with no outcome.
    pub(super) fn final_violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (&(node, inc), tags) in &self.open {
            for tag in tags {
                let Some(e) = self.entries.get(tag) else {
                    continue;
                };
                if !e.orphaned {
                    out.push(format!(
                        "tag {tag} (msg#{} of {node}, incarnation {inc}) has no outcome after quiescence",
                        e.msg.0
                    ));
                }
            }
        }
        out
    }

    /// The totals so far.
    pub(super) fn totals(&self) -> &LedgerTotals {
        &self.totals
    }

    /// The outcome reported for `tag`, if any.
    pub(super) fn outcome(&self, tag: u64) -> Option<Outcome> {
        self.entries.get(&tag).and_then(|e| e.outcome)
    }
}
