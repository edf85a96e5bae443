//! The RPC workload of a chaos run (when [`Faults::rpc`](super::Faults::rpc)): leaves serve
//! methods, members call them with every selection mode, cancel calls, broadcast, and serve
//! or unserve at run time; handlers answer at once, after a delay, or never. After every op
//! the workload feeds what the members' logs say to the
//! [call ledger](super::call_ledger), which checks each call, handler run and broadcast
//! report. Every call carries trace metadata derived from its tag and every handler answers
//! with metadata of its own: the handler and the caller each must read exactly what the
//! other sent (the core passes metadata through untouched).

use alloc::{
    collections::{BTreeMap, BTreeSet},
    format,
    string::String,
    vec::Vec,
};

use bytes::Bytes;

use super::{
    Chaos, RegistryMode,
    call_ledger::{BROADCAST_MAGIC, CALL_MAGIC, CallLedger, tag_of, tagged},
    discovery_info, name,
};
use crate::{
    discovery::DiscoveryInfo,
    ids::NodeId,
    rpc::{
        BroadcastSpec, CallId, CallMetadata, CallOutcome, CallSpec, METHOD_LABEL_VALUE, RequestId,
        RpcOutput, method_label, servers_of,
    },
    time::{Duration, Instant},
    wire::{TRACEPARENT, TRACESTATE},
};

/// A handler's answer, due at an instant.
#[derive(Clone, Debug)]
struct PendingReply {
    due: Instant,
    node: NodeId,
    life: u32,
    request: RequestId,
    payload: Bytes,
    metadata: CallMetadata,
}

/// The metadata the call tagged `tag` sends: a W3C `traceparent` naming the tag.
fn request_metadata(tag: u64) -> CallMetadata {
    let traceparent = format!("00-{tag:032x}-{tag:016x}-01");
    CallMetadata::new()
        .with(TRACEPARENT, traceparent.as_bytes())
        .expect("a traceparent is within the metadata bounds")
}

/// The metadata the handler of the call tagged `tag` answers with.
fn reply_metadata(tag: u64) -> CallMetadata {
    CallMetadata::new()
        .with(TRACESTATE, format!("sim={tag}").as_bytes())
        .expect("a short tracestate is within the metadata bounds")
}

/// The workload's state and the call ledger.
#[derive(Debug, Default)]
pub(super) struct RpcWorkload {
    /// Methods each node serves (re-served after a restart, published in its record).
    served: BTreeMap<NodeId, BTreeSet<String>>,
    ledger: CallLedger,
    /// How far each member's RPC log was read, by position in `Chaos::members`.
    cursors: Vec<usize>,
    replies: Vec<PendingReply>,
    next_tag: u64,
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
                    self.rpc
                        .ledger
                        .on_broadcast((from, life, id), payload, from, skip_self);
                }
            }
            Op::Cancel { from } => {
                let from = self.member(from);
                if !self.sim.is_alive(from) {
                    return;
                }
                let life = self.sim.life(from);
                if let Some(id) = self.rpc.ledger.oldest_open(from, life) {
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
        let mut spec = CallSpec::new(method(m), payload.clone())
            .select(select)
            .timeout(timeout)
            .grace(grace)
            .metadata(request_metadata(tag));
        // Every call may be retried (when provably unexecuted); a third are idempotent
        // (retried after any failure), half of those hedged: half after a fixed delay, half
        // after the method's p95 (once the caller's replies of the method give one).
        let idempotent = key.is_multiple_of(3);
        if idempotent {
            spec = spec.idempotent(true);
            if key.is_multiple_of(12) {
                spec = spec.hedge_at_method_p95();
            } else if key.is_multiple_of(2) {
                spec = spec.hedge_after(Duration::from_millis(20 + u64::from(timing % 8) * 40));
            }
        }
        let max_runs = if idempotent {
            // The simulated nodes run the default retry settings.
            crate::rpc::retry::RetryConfig::default().max_attempts as usize
        } else {
            1
        };
        let now = self.sim.now();
        let life = self.sim.life(from);
        if let Ok(id) = self.sim.act(from, |node, now| node.call(now, spec)) {
            self.rpc.ledger.on_call(
                (from, life, id),
                tag,
                payload,
                now + timeout,
                now + grace,
                max_runs,
            );
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
                    node.reply_with_metadata(now, reply.request, reply.payload, &reply.metadata)
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
                    RpcOutput::CallDone {
                        call,
                        outcome,
                        server,
                        metadata,
                    } => {
                        self.rpc_reply_metadata(id, call, &outcome, server, &metadata);
                        self.rpc_done(id, record.life, record.at, call, outcome);
                    }
                    RpcOutput::BroadcastDone(done) => {
                        let sim = &self.sim;
                        self.rpc.ledger.on_broadcast_done(
                            id,
                            record.life,
                            &done,
                            |node, payload| received_count(sim, node, payload),
                        );
                    }
                    _ => {}
                }
            }
        }
        let now = self.sim.now();
        let sim = &self.sim;
        self.rpc
            .ledger
            .check_deadlines(now, |node, life| is_life(sim, node, life));
        self.rpc_report();
    }

    /// Moves the call ledger's findings into the simulator's violations.
    fn rpc_report(&mut self) {
        for v in self.rpc.ledger.take_violations() {
            self.sim.record_violation(&v);
        }
    }

    fn rpc_request(
        &mut self,
        server: NodeId,
        life: u32,
        at: Instant,
        request: crate::rpc::IncomingRequest,
    ) {
        let Some(tag) = self
            .rpc
            .ledger
            .on_request(server, life, at, &request.payload)
        else {
            return;
        };
        if request.metadata != request_metadata(tag) {
            self.sim.record_violation(&format!(
                "handler at {server:?} read metadata {:?} for call tag {tag}",
                request.metadata
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
                metadata: reply_metadata(tag),
            });
        }
    }

    /// A reply carries exactly the metadata its handler answered with, and names the
    /// server that answered; any other outcome carries no metadata.
    fn rpc_reply_metadata(
        &mut self,
        caller: NodeId,
        call: CallId,
        outcome: &CallOutcome,
        server: Option<NodeId>,
        metadata: &CallMetadata,
    ) {
        if matches!(outcome, CallOutcome::Reply(_)) && server.is_none() {
            self.sim
                .record_violation(&format!("call {call:?} of {caller:?} replied by no server"));
        }
        let want = match outcome {
            CallOutcome::Reply(payload) => tag_of(payload, CALL_MAGIC).map(reply_metadata),
            _ => Some(CallMetadata::new()),
        };
        if want.as_ref().is_some_and(|want| want != metadata) {
            self.sim.record_violation(&format!(
                "call {call:?} of {caller:?} ended {} with metadata {metadata:?}",
                outcome.class()
            ));
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
        self.rpc.ledger.on_done(caller, life, at, call, outcome);
    }

    /// At the end of a run: every call and broadcast of a live incarnation has its outcome,
    /// and every broadcast report still matches what its recipients received.
    pub(super) fn rpc_final_check(&mut self) {
        if !self.faults.rpc {
            return;
        }
        self.rpc_check();
        let sim = &self.sim;
        self.rpc.ledger.final_check(
            |node, life| is_life(sim, node, life),
            |node, payload| received_count(sim, node, payload),
        );
        self.rpc_report();
    }

    /// The run's call and broadcast counts.
    #[must_use]
    pub fn rpc_totals(&self) -> super::RpcTotals {
        self.rpc.ledger.totals().clone()
    }
}

/// Whether `life` is `node`'s running life.
fn is_life(sim: &super::Sim, node: NodeId, life: u32) -> bool {
    sim.is_alive(node) && sim.life(node) == life
}

/// How many times `node` delivered `payload` so far.
fn received_count(sim: &super::Sim, node: NodeId, payload: &Bytes) -> usize {
    sim.received(node)
        .iter()
        .filter(|r| r.payload == *payload)
        .count()
}
