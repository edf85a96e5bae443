//! Broadcasts in progress: one message per recipient, each recipient's outcome sorted into
//! the report's three lists until none is missing.

use alloc::collections::BTreeMap;

use super::{BroadcastDone, BroadcastId};
use crate::{
    ids::{MsgId, NodeId},
    outcome::{FailReason, Outcome},
};

/// A broadcast still waiting for some recipient's outcome.
#[derive(Debug)]
struct Open {
    report: BroadcastDone,
    missing: usize,
}

/// Every broadcast in progress.
#[derive(Debug, Default)]
pub(crate) struct Broadcasts {
    open: BTreeMap<BroadcastId, Open>,
    by_msg: BTreeMap<MsgId, (BroadcastId, NodeId)>,
    next_id: u64,
}

impl Broadcasts {
    /// Starts a broadcast; recipients follow with [`expect`](Self::expect) and
    /// [`record`](Self::record), then [`seal`](Self::seal).
    pub(crate) fn start(&mut self) -> BroadcastId {
        self.next_id += 1;
        let id = BroadcastId(self.next_id);
        let report = BroadcastDone {
            broadcast: id,
            delivered: alloc::vec::Vec::new(),
            failed: alloc::vec::Vec::new(),
            unknown: alloc::vec::Vec::new(),
        };
        self.open.insert(id, Open { report, missing: 0 });
        id
    }

    /// `node` gets the broadcast as `msg`; its outcome is awaited.
    pub(crate) fn expect(&mut self, id: BroadcastId, node: NodeId, msg: MsgId) {
        if let Some(open) = self.open.get_mut(&id) {
            open.missing += 1;
            self.by_msg.insert(msg, (id, node));
        }
    }

    /// `node` ended at once (its message was refused at the door).
    pub(crate) fn record(&mut self, id: BroadcastId, node: NodeId, reason: FailReason) {
        if let Some(open) = self.open.get_mut(&id) {
            open.report.failed.push((node, reason));
        }
    }

    /// The broadcast's report if no recipient's outcome is missing (it is then closed).
    pub(crate) fn seal(&mut self, id: BroadcastId) -> Option<BroadcastDone> {
        if self.open.get(&id)?.missing > 0 {
            return None;
        }
        self.open.remove(&id).map(|open| open.report)
    }

    /// Whether `msg` is a broadcast's message.
    pub(crate) fn owns(&self, msg: MsgId) -> bool {
        self.by_msg.contains_key(&msg)
    }

    /// `msg` ended with `outcome`: the report, if that was the last one missing.
    pub(crate) fn on_outcome(&mut self, msg: MsgId, outcome: Outcome) -> Option<BroadcastDone> {
        let (id, node) = self.by_msg.remove(&msg)?;
        let open = self.open.get_mut(&id)?;
        match outcome {
            Outcome::Failed(reason) => open.report.failed.push((node, reason)),
            Outcome::Unknown(reason) => open.report.unknown.push((node, reason)),
            _ => open.report.delivered.push(node),
        }
        open.missing = open.missing.saturating_sub(1);
        self.seal(id)
    }
}
