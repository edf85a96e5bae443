//! The RPC workload of a chaos run (when [`Faults::rpc`](super::Faults::rpc)): leaves serve
//! methods, members call them with every selection mode, cancel calls, broadcast, and serve
//! or unserve at run time; handlers answer at once, after a delay, or never. The *call
//! ledger* checks after every op, against what the handlers saw:
//!
//! - every call has at most one outcome, and (at the end) every call of a live incarnation
//!   has one;
//! - `Reply(bytes)` ⇒ the bytes are the handler's answer and the handler ran exactly once;
//! - `Failed` ⇒ the handler never ran (nor runs later);
//! - no handler runs twice for one call, in any incarnation;
//! - no outcome later than its deadline; `NotAvailable` exactly at the grace deadline (the
//!   grace timer is its only source: no pick ever found a server);
//! - a broadcast's report names every recipient once, each delivered recipient received it
//!   exactly once, a failed one never, an unknown one at most once, and the sender was
//!   skipped when asked.

use alloc::{
    collections::{BTreeMap, BTreeSet},
    format,
    string::String,
    vec::Vec,
};

use bytes::Bytes;

use super::{Chaos, RegistryMode, discovery_info, name};
use crate::{
    discovery::DiscoveryInfo,
    ids::NodeId,
    outcome::FailReason,
    rpc::{
        BroadcastId, BroadcastSpec, CallId, CallOutcome, CallSpec, METHOD_LABEL_VALUE, RequestId,
        RpcOutput, method_label, servers_of,
    },
    time::{Duration, Instant},
};

/// Bytes 8..12 of a call payload (so no other ledger mistakes it for its own).
const CALL_MAGIC: [u8; 4] = *b"RPC1";
/// Bytes 8..12 of a broadcast payload.
const BROADCAST_MAGIC: [u8; 4] = *b"BCS1";

/// One call the workload made.
#[derive(Clone, Debug)]
struct CallEntry {
    tag: u64,
    payload: Bytes,
    deadline: Instant,
    grace_deadline: Instant,
    outcome: Option<CallOutcome>,
}

/// One broadcast the workload made.
#[derive(Clone, Debug)]
struct BroadcastEntry {
    payload: Bytes,
    sender: NodeId,
    skip_self: bool,
    done: bool,
}

/// A handler's answer, due at an instant.
#[derive(Clone, Debug)]
struct PendingReply {
    due: Instant,
    node: NodeId,
    life: u32,
    request: RequestId,
    payload: Bytes,
}

/// Call and broadcast counts of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RpcTotals {
    /// Calls made.
    pub calls: u64,
    /// Calls ended `Reply`.
    pub replies: u64,
    /// Calls ended `Failed`.
    pub failed: u64,
    /// Calls ended `Unknown`.
    pub unknown: u64,
    /// Handler runs.
    pub executed: u64,
    /// Broadcasts made.
    pub broadcasts: u64,
    /// Call outcomes by label: `reply`, `failed_<reason>`, `unknown_<reason>`.
    pub outcomes: BTreeMap<String, u64>,
}

/// The workload's state and the call ledger.
#[derive(Debug, Default)]
pub(super) struct RpcWorkload {
    /// Methods each node serves (re-served after a restart, published in its record).
    served: BTreeMap<NodeId, BTreeSet<String>>,
    calls: BTreeMap<(NodeId, u32, CallId), CallEntry>,
    tags: BTreeMap<u64, (NodeId, u32, CallId)>,
    /// Handler runs per call tag: (server, life).
    executed: BTreeMap<u64, Vec<(NodeId, u32)>>,
    broadcasts: BTreeMap<(NodeId, u32, BroadcastId), BroadcastEntry>,
    /// How far each member's RPC log was read, by position in `Chaos::members`.
    cursors: Vec<usize>,
    replies: Vec<PendingReply>,
    next_tag: u64,
    totals: RpcTotals,
}

fn tagged(tag: u64, magic: [u8; 4], filler: usize) -> Bytes {
    let mut payload = Vec::with_capacity(12 + filler);
    payload.extend_from_slice(&tag.to_le_bytes());
    payload.extend_from_slice(&magic);
    payload.resize(12 + filler, 0xab);
    Bytes::from(payload)
}

fn tag_of(payload: &[u8], magic: [u8; 4]) -> Option<u64> {
    if payload.len() < 12 || payload[8..12] != magic {
        return None;
    }
    let mut tag = [0u8; 8];
    tag.copy_from_slice(&payload[..8]);
    Some(u64::from_le_bytes(tag))
}

fn method(i: u8) -> String {
    format!("m{}", i % 3)
}

impl Chaos {
    /// The leaves serve their methods at start (`m0` or `m1`, alternately).
    pub(super) fn rpc_start(&mut self) {
        if !self.faults.rpc {
            return;
        }
        for (i, leaf) in self.leaves.clone().into_iter().enumerate() {
            let m = method(u8::try_from(i % 2).expect("0 or 1"));
            self.rpc.served.entry(leaf).or_default().insert(m.clone());
            let _ = self.sim.act(leaf, |node, now| node.serve(now, &m));
        }
    }

    /// The discovery record `id` publishes: its address and the methods it serves.
    pub(super) fn record(&self, id: NodeId) -> DiscoveryInfo {
        let mut info = discovery_info(id, &name(id));
        for m in self.rpc.served.get(&id).into_iter().flatten() {
            info.metadata
                .labels
                .insert(method_label(m), METHOD_LABEL_VALUE.into());
        }
        info
    }

    /// A restarted node serves its methods again.
    pub(super) fn rpc_restarted(&mut self, id: NodeId) {
        for m in self.rpc.served.get(&id).cloned().into_iter().flatten() {
            let _ = self.sim.act(id, |node, now| node.serve(now, &m));
        }
    }

    /// Applies one RPC op.
    pub(super) fn rpc_apply(&mut self, op: super::Op) {
        use super::Op;
        match op {
            Op::Call {
                from,
                method: m,
                select,
                key,
                timing,
            } => self.rpc_call(from, m, select, key, timing),
            Op::Serve {
                node,
                method: m,
                on,
            } => {
                let id = self.leaves[usize::from(node) % self.leaves.len()];
                let m = method(m);
                let changed = if on {
                    self.rpc.served.entry(id).or_default().insert(m.clone())
                } else {
                    self.rpc.served.entry(id).or_default().remove(&m)
                };
                if !changed {
                    return;
                }
                if self.sim.is_alive(id) {
                    let _ = self.sim.act(id, |node, now| {
                        if on {
                            node.serve(now, &m).is_ok()
                        } else {
                            node.unserve(now, &m)
                        }
                    });
                }
                let info = self.record(id);
                match self.mode {
                    RegistryMode::Machines => self.sim.update_registered_discovery(id, info),
                    RegistryMode::Scripted => {
                        let f = self.fanout();
                        self.sim.registry_put_discovery_with(info, f);
                    }
                }
            }
            Op::Broadcast {
                from,
                filter,
                skip_self,
            } => {
                let from = self.member(from);
                if !self.sim.is_alive(from) {
                    return;
                }
                self.rpc.next_tag += 1;
                let payload = tagged(self.rpc.next_tag, BROADCAST_MAGIC, 4);
                let filter = (filter % 2 == 1).then(|| servers_of(&method(filter / 2)));
                let mut spec = BroadcastSpec::new(filter, 77, payload.clone());
                spec.skip_self = skip_self;
                let life = self.sim.life(from);
                if let Ok(id) = self.sim.act(from, |node, now| node.broadcast(now, spec)) {
                    self.rpc.totals.broadcasts += 1;
                    self.rpc.broadcasts.insert(
                        (from, life, id),
                        BroadcastEntry {
                            payload,
                            sender: from,
                            skip_self,
                            done: false,
                        },
                    );
                }
            }
            Op::Cancel { from } => {
                let from = self.member(from);
                if !self.sim.is_alive(from) {
                    return;
                }
                let life = self.sim.life(from);
                // The calls of this life are one key range (in the same order a full scan
                // meets them): the first open one is the oldest.
                let oldest = self
                    .rpc
                    .calls
                    .range((from, life, CallId(0))..=(from, life, CallId(u64::MAX)))
                    .find(|(_, e)| e.outcome.is_none())
                    .map(|((_, _, id), _)| *id);
                if let Some(id) = oldest {
                    self.sim.act(from, |node, now| node.cancel(now, id));
                }
            }
            _ => {}
        }
    }

    fn rpc_call(&mut self, from: u8, m: u8, select: u8, key: u8, timing: u8) {
        let from = self.member(from);
        if !self.sim.is_alive(from) {
            return;
        }
        let timeout = Duration::from_millis(500 + 20 * u64::from(timing % 200));
        let grace = match timing / 200 % 3 {
            0 => timeout / 4,
            1 => timeout / 2,
            _ => timeout,
        };
        let select = super::select_of(select, self.member(key), key);
        self.rpc.next_tag += 1;
        let tag = self.rpc.next_tag;
        let payload = tagged(tag, CALL_MAGIC, usize::from(key % 32));
        let spec = CallSpec::new(method(m), payload.clone())
            .select(select)
            .timeout(timeout)
            .grace(grace);
        let now = self.sim.now();
        let life = self.sim.life(from);
        if let Ok(id) = self.sim.act(from, |node, now| node.call(now, spec)) {
            self.rpc.totals.calls += 1;
            self.rpc.calls.insert(
                (from, life, id),
                CallEntry {
                    tag,
                    payload,
                    deadline: now + timeout,
                    grace_deadline: now + grace,
                    outcome: None,
                },
            );
            self.rpc.tags.insert(tag, (from, life, id));
        }
        // Outcomes reported inside `call` (a self-call) are read by the next check.
    }

    /// Handlers whose answer is due answer now.
    pub(super) fn rpc_answer_due(&mut self) {
        let now = self.sim.now();
        // Called before every op: most ops have nothing due, and then nothing is moved.
        if !self.rpc.replies.iter().any(|r| r.due <= now) {
            return;
        }
        let (due, later): (Vec<_>, Vec<_>) = self.rpc.replies.drain(..).partition(|r| r.due <= now);
        self.rpc.replies = later;
        for reply in due {
            if self.sim.is_alive(reply.node) && self.sim.life(reply.node) == reply.life {
                let _ = self.sim.act(reply.node, |node, now| {
                    node.reply(now, reply.request, reply.payload)
                });
            }
        }
    }

    /// Reads every node's new RPC outputs and checks them against the ledger.
    pub(super) fn rpc_check(&mut self) {
        if !self.faults.rpc {
            return;
        }
        // Every member's log is read to its end after every op, as before; a member whose
        // log did not grow since the last read costs one comparison (no copy, no allocation).
        self.rpc.cursors.resize(self.members.len(), 0);
        for i in 0..self.members.len() {
            let id = self.members[i];
            let start = self.rpc.cursors[i];
            let log = &self.sim.log(id).rpc;
            if log.len() <= start {
                continue;
            }
            let records: Vec<_> = log[start..].to_vec();
            self.rpc.cursors[i] = start + records.len();
            for record in records {
                match record.output {
                    RpcOutput::Request(request) => {
                        self.rpc_request(id, record.life, record.at, request);
                    }
                    RpcOutput::CallDone { call, outcome } => {
                        self.rpc_done(id, record.life, record.at, call, outcome);
                    }
                    RpcOutput::BroadcastDone(done) => {
                        self.rpc_broadcast_done(id, record.life, &done);
                    }
                    _ => {}
                }
            }
        }
    }

    fn rpc_request(
        &mut self,
        server: NodeId,
        life: u32,
        at: Instant,
        request: crate::rpc::IncomingRequest,
    ) {
        let Some(tag) = tag_of(&request.payload, CALL_MAGIC) else {
            self.sim
                .record_violation(&format!("{server} got a request no call made"));
            return;
        };
        self.rpc.totals.executed += 1;
        let runs = self.rpc.executed.entry(tag).or_default();
        runs.push((server, life));
        if runs.len() > 1 {
            let runs = format!("{runs:?}");
            self.sim.record_violation(&format!(
                "the handler of call tag {tag} ran more than once: {runs}"
            ));
        }
        if let Some(key) = self.rpc.tags.get(&tag)
            && let Some(CallOutcome::Failed(reason)) =
                self.rpc.calls.get(key).and_then(|e| e.outcome.clone())
        {
            self.sim.record_violation(&format!(
                "call tag {tag} ended Failed({reason:?}) but its handler ran at {server} at {at:?}"
            ));
        }
        // Handlers: most answer at once, some after a while, a few never.
        let roll = self.rng.below(10);
        if roll < 9 {
            let delay = if roll < 6 {
                Duration::ZERO
            } else {
                Duration::from_millis(self.rng.in_range(50, 2000))
            };
            self.rpc.replies.push(PendingReply {
                due: at + delay,
                node: server,
                life,
                request: request.request,
                payload: request.payload,
            });
        }
    }

    fn rpc_done(
        &mut self,
        caller: NodeId,
        life: u32,
        at: Instant,
        call: CallId,
        outcome: CallOutcome,
    ) {
        let Some(entry) = self.rpc.calls.get_mut(&(caller, life, call)) else {
            self.sim.record_violation(&format!(
                "{caller} ended call {call:?}, which it never made"
            ));
            return;
        };
        if let Some(first) = &entry.outcome {
            let msg = format!("{caller} ended call {call:?} twice: {first:?}, then {outcome:?}");
            self.sim.record_violation(&msg);
            return;
        }
        entry.outcome = Some(outcome.clone());
        let entry = entry.clone();
        let label = match outcome.reason() {
            Some(reason) => format!("{}_{}", outcome.class(), reason.as_str()),
            None => String::from(outcome.class()),
        };
        *self.rpc.totals.outcomes.entry(label).or_insert(0) += 1;
        let runs = self.rpc.executed.get(&entry.tag).map_or(0, Vec::len);
        let mut problems = Vec::new();
        if at > entry.deadline {
            problems.push(format!("ended after its deadline {:?}", entry.deadline));
        }
        match &outcome {
            CallOutcome::Reply(bytes) => {
                self.rpc.totals.replies += 1;
                if *bytes != entry.payload {
                    problems.push(String::from("replied with bytes its handler never sent"));
                }
                if runs != 1 {
                    problems.push(format!("replied but its handler ran {runs} times"));
                }
            }
            CallOutcome::Failed(reason) => {
                self.rpc.totals.failed += 1;
                if runs != 0 {
                    problems.push(format!("failed but its handler ran {runs} times"));
                }
                // Only the grace timer says `NotAvailable`: exactly at the grace deadline.
                if *reason == FailReason::NotAvailable && at != entry.grace_deadline {
                    problems.push(format!(
                        "not available at another instant than its grace deadline {:?}",
                        entry.grace_deadline
                    ));
                }
            }
            _ => self.rpc.totals.unknown += 1,
        }
        for problem in problems {
            self.sim.record_violation(&format!(
                "{caller} call {call:?} (tag {}) {outcome:?} at {at:?}: {problem}",
                entry.tag
            ));
        }
    }

    fn rpc_broadcast_done(&mut self, sender: NodeId, life: u32, done: &crate::rpc::BroadcastDone) {
        let Some(entry) = self.rpc.broadcasts.get_mut(&(sender, life, done.broadcast)) else {
            self.sim.record_violation(&format!(
                "{sender} reported broadcast {:?}, which it never made",
                done.broadcast
            ));
            return;
        };
        if entry.done {
            self.sim
                .record_violation(&format!("{sender} reported {:?} twice", done.broadcast));
            return;
        }
        entry.done = true;
        let entry = entry.clone();
        let mut seen = BTreeSet::new();
        let mut problems = Vec::new();
        let lists = done
            .delivered
            .iter()
            .map(|&n| (n, 1..=1))
            .chain(done.failed.iter().map(|&(n, _)| (n, 0..=0)))
            .chain(done.unknown.iter().map(|&(n, _)| (n, 0..=1)));
        for (node, allowed) in lists {
            if !seen.insert(node) {
                problems.push(format!("{node} named twice"));
            }
            if node == entry.sender && entry.skip_self {
                problems.push(String::from("the sender was not skipped"));
            }
            let got = self
                .sim
                .received(node)
                .iter()
                .filter(|r| r.payload == entry.payload)
                .count();
            if !allowed.contains(&got) {
                problems.push(format!("{node} received it {got} times"));
            }
        }
        for problem in problems {
            self.sim.record_violation(&format!(
                "broadcast {:?} of {sender}: {problem} ({done:?})",
                done.broadcast
            ));
        }
        let _ = tag_of(&entry.payload, BROADCAST_MAGIC);
    }

    /// At the end of a run: every call and broadcast of a live incarnation has its outcome.
    pub(super) fn rpc_final_check(&mut self) {
        if !self.faults.rpc {
            return;
        }
        self.rpc_check();
        let mut problems = Vec::new();
        for ((caller, life, call), entry) in &self.rpc.calls {
            let live = self.sim.is_alive(*caller) && self.sim.life(*caller) == *life;
            if live && entry.outcome.is_none() {
                problems.push(format!(
                    "{caller} call {call:?} (tag {}) has no outcome at the end",
                    entry.tag
                ));
            }
        }
        for ((sender, life, id), entry) in &self.rpc.broadcasts {
            let live = self.sim.is_alive(*sender) && self.sim.life(*sender) == *life;
            if live && !entry.done {
                problems.push(format!(
                    "{sender} broadcast {id:?} has no report at the end"
                ));
            }
        }
        for problem in problems {
            self.sim.record_violation(&problem);
        }
    }

    /// The run's call and broadcast counts.
    #[must_use]
    pub fn rpc_totals(&self) -> RpcTotals {
        self.rpc.totals.clone()
    }
}
