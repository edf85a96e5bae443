//! What reaches the RPC machine as it happens ([`RpcInput`]): messages from peers, the
//! outcomes of its own messages, evidence of a server's death or restart; and its deadlines.

use bytes::Bytes;

use super::{
    CallId, CallMetadata, CallOutcome, CallState, IncomingRequest, Rpc, RpcHost, RpcInput,
    RpcOutput,
};
use crate::{
    event::Evidence,
    ids::{MsgId, NodeId},
    outcome::{FailReason, Outcome},
    time::{Duration, Instant},
    wire::{self, RefuseCall, RpcMessage},
};

impl Rpc {
    /// Takes one input, at `now`.
    pub(crate) fn handle(&mut self, now: Instant, input: RpcInput, host: &mut impl RpcHost) {
        match input {
            RpcInput::Message { from, payload } => self.message(now, from, &payload, host),
            RpcInput::Outcome { msg, outcome } => self.message_ended(now, msg, outcome, host),
            RpcInput::PeerDead {
                peer,
                incarnation,
                evidence,
            } => self.server_dead(now, peer, incarnation, evidence, host),
            RpcInput::PeerRestarted { peer, incarnation } => {
                self.server_restarted(now, peer, incarnation, host);
            }
            RpcInput::RouteFailing { peer } => {
                self.move_queued(now, peer, FailReason::NoRoute, host);
            }
        }
    }

    /// An RPC message arrived from `from`.
    fn message(&mut self, now: Instant, from: NodeId, payload: &Bytes, host: &mut impl RpcHost) {
        let Ok(message) = wire::decode_rpc(payload) else {
            self.stats.bad_messages += 1;
            return;
        };
        match message {
            RpcMessage::Request {
                call,
                caller_incarnation,
                remaining_ns,
                method,
                metadata,
                payload: args,
            } => {
                let key = (from, caller_incarnation, call);
                // Only a request handed on is remembered: a refused one was not executed, and
                // the caller may send it again (to a node that serves the method by then).
                if self.serving.seen(&key) {
                    self.stats.duplicate_requests += 1;
                    return;
                }
                let refusal = if remaining_ns == 0 {
                    self.stats.expired_requests += 1;
                    Some(RefuseCall::Expired)
                } else if !self.serving.serves(method) {
                    self.stats.not_served += 1;
                    Some(RefuseCall::NotServed)
                } else {
                    None
                };
                if let Some(reason) = refusal {
                    let refuse = RpcMessage::Refuse {
                        call,
                        caller_incarnation,
                        reason,
                    };
                    let deadline = now + self.settings.message_timeout;
                    self.send(now, from, &refuse, deadline, host);
                    return;
                }
                self.serving.first_time(key);
                let mut budget = Duration::from_nanos(remaining_ns);
                if budget > self.settings.max_call_budget {
                    budget = self.settings.max_call_budget;
                    self.stats.budgets_capped += 1;
                }
                let deadline = now + budget;
                let request = self.serving.open(key, deadline);
                self.stats.served += 1;
                host.output(RpcOutput::Request(IncomingRequest {
                    request,
                    from,
                    method: method.into(),
                    payload: payload.slice_ref(args),
                    metadata: CallMetadata::from_wire(payload, metadata),
                    deadline,
                }));
            }
            RpcMessage::Reply {
                call,
                caller_incarnation,
                metadata,
                payload: answer,
            } => match self.awaiting(from, caller_incarnation, call) {
                Some(id) => {
                    self.reply_arrived(now, id);
                    let outcome = CallOutcome::Reply(payload.slice_ref(answer));
                    let metadata = CallMetadata::from_wire(payload, metadata);
                    self.finish_with(now, id, outcome, metadata, host);
                }
                None => self.stats.late_replies += 1,
            },
            RpcMessage::Refuse {
                call,
                caller_incarnation,
                reason,
            } => match self.awaiting(from, caller_incarnation, call) {
                Some(id) if reason == RefuseCall::Expired => {
                    self.finish(now, id, CallOutcome::Failed(FailReason::Expired), host);
                }
                Some(id) if reason == RefuseCall::Overloaded => {
                    // Shed unexecuted: retried after a backoff, another server first, if its
                    // attempts and the retry budget allow (retry.rs).
                    self.finish(now, id, CallOutcome::Failed(FailReason::Overloaded), host);
                }
                Some(id) => {
                    // Not served there (any more): another server, within the deadline.
                    self.calls.tried(id, from, FailReason::NotServed);
                    self.dispatch(now, id, false, host);
                }
                None => self.stats.late_replies += 1,
            },
            RpcMessage::Cancel {
                call,
                caller_incarnation,
            } => {
                if let Some(request) = self.serving.find((from, caller_incarnation, call)) {
                    self.serving.take(request);
                    host.output(RpcOutput::RequestCancelled { request });
                }
            }
        }
    }

    /// The open call `call` of this incarnation whose request went to `from`, if any.
    fn awaiting(&self, from: NodeId, caller_incarnation: u64, call: u64) -> Option<CallId> {
        if caller_incarnation != self.settings.incarnation {
            return None;
        }
        let id = CallId(call);
        match self.calls.get(id)?.state {
            CallState::Sent { server, .. } if server == from => Some(id),
            _ => None,
        }
    }

    /// One of the machine's bus messages ended.
    fn message_ended(
        &mut self,
        now: Instant,
        msg: MsgId,
        outcome: Outcome,
        host: &mut impl RpcHost,
    ) {
        if self.broadcasts.owns(msg) {
            if let Some(done) = self.broadcasts.on_outcome(msg, outcome) {
                host.output(RpcOutput::BroadcastDone(done));
            }
            return;
        }
        let Some(id) = self.calls.of_msg(msg) else {
            return; // a reply, refusal or cancel; or a call already ended
        };
        let Some(CallState::Sent { server, .. }) = self.calls.get(id).map(|c| c.state) else {
            return;
        };
        match outcome {
            Outcome::Delivered => {
                self.calls.delivered(msg, host.incarnation(server));
            }
            Outcome::Unknown(reason) => {
                if matches!(reason, FailReason::TargetGone | FailReason::TargetRestarted) {
                    self.stats.fast_fails += 1;
                }
                self.finish(now, id, CallOutcome::Unknown(reason), host);
            }
            Outcome::Failed(
                reason @ (FailReason::QueueFull | FailReason::Shutdown | FailReason::Timeout),
            ) => self.finish(now, id, CallOutcome::Failed(reason), host),
            Outcome::Failed(reason) => {
                // Provably never reached the server: another one, within the deadline.
                self.note_server(server, super::server_outcome::failure(reason));
                self.calls.tried(id, server, reason);
                self.dispatch(now, id, false, host);
            }
        }
    }

    /// Evidence that `peer`'s incarnation `incarnation` is dead: the calls whose request it
    /// acknowledged end now (their requests still in flight ended by their own outcomes,
    /// just before); requests still queued for it move to another server.
    fn server_dead(
        &mut self,
        now: Instant,
        peer: NodeId,
        incarnation: u64,
        evidence: Evidence,
        host: &mut impl RpcHost,
    ) {
        let reason = match evidence {
            Evidence::NewIncarnation => FailReason::TargetRestarted,
            _ => FailReason::TargetGone,
        };
        let dead = |taken_by: u64| incarnation == 0 || taken_by == 0 || taken_by == incarnation;
        self.end_taken(now, peer, reason, dead, host);
        self.move_queued(now, peer, FailReason::TargetGone, host);
    }

    /// Requests still queued for `peer` never left this node: one with another server to go
    /// to moves there now (`peer` tried, for `reason`); the others wait for `peer` (until
    /// the grace).
    fn move_queued(
        &mut self,
        now: Instant,
        peer: NodeId,
        reason: FailReason,
        host: &mut impl RpcHost,
    ) {
        for id in self.calls.sent_to(peer) {
            let Some(CallState::Sent {
                delivered: false,
                msg,
                ..
            }) = self.calls.get(id).map(|c| c.state)
            else {
                continue;
            };
            let Some(other) = self.pick_for(id, Some(peer), host) else {
                continue;
            };
            if other == self.settings.own && !self.settings.allow_self_calls {
                continue;
            }
            if !host.withdraw(peer, msg) {
                continue;
            }
            self.stats.moved += 1;
            self.note_server(peer, super::server_outcome::failure(reason));
            self.calls.tried(id, peer, reason);
            if !self.send_request(now, id, other, host) {
                self.dispatch(now, id, false, host);
            }
        }
    }

    /// `peer` came back as `incarnation`: calls an older incarnation acknowledged end.
    fn server_restarted(
        &mut self,
        now: Instant,
        peer: NodeId,
        incarnation: u64,
        host: &mut impl RpcHost,
    ) {
        let older = |taken_by: u64| taken_by != incarnation;
        self.end_taken(now, peer, FailReason::TargetRestarted, older, host);
    }

    /// The calls whose request `peer` acknowledged as an incarnation `gone` says is no more
    /// end now, `Unknown(reason)` (fast-fail).
    fn end_taken(
        &mut self,
        now: Instant,
        peer: NodeId,
        reason: FailReason,
        gone: impl Fn(u64) -> bool,
        host: &mut impl RpcHost,
    ) {
        for id in self.calls.sent_to(peer) {
            let Some(CallState::Sent {
                delivered: true,
                server_incarnation,
                ..
            }) = self.calls.get(id).map(|c| c.state)
            else {
                continue;
            };
            if gone(server_incarnation) {
                self.stats.fast_fails += 1;
                self.finish(now, id, CallOutcome::Unknown(reason), host);
            }
        }
    }

    /// The deadlines due at `now`: at its grace deadline a call still waiting for a server,
    /// or whose request is still queued here (never transmitted), ends `NotAvailable`; at its
    /// deadline a call whose request is at the server or in flight ends `Unknown(Timeout)`;
    /// held requests past their deadline are released ([`RpcOutput::RequestCancelled`]).
    pub(crate) fn handle_timeout(&mut self, now: Instant, host: &mut impl RpcHost) {
        // The outcomes due at this instant first: a request acknowledged or given up now.
        self.settle(now, host);
        self.wake_due(now, host);
        while let Some(id) = self.calls.pop_due(now) {
            let Some(call) = self.calls.get(id) else {
                continue;
            };
            let (deadline, failure) = (call.deadline, call.failure);
            match call.state {
                // Its hedge is still out: that attempt's own deadline (the same) ends it.
                CallState::Idle if call.attempts.hedge.is_some() => {}
                CallState::Idle => {
                    let last = call.attempts.last.clone();
                    let outcome = last.unwrap_or(CallOutcome::Unknown(FailReason::Timeout));
                    self.finish(now, id, outcome, host);
                }
                CallState::Waiting => {
                    let reason = match failure {
                        Some(FailReason::NotServed) => FailReason::NotServed,
                        _ => FailReason::NotAvailable,
                    };
                    self.finish(now, id, CallOutcome::Failed(reason), host);
                }
                CallState::Sent {
                    server,
                    msg,
                    delivered,
                    ..
                } if now < deadline => {
                    // The grace deadline: a request still queued never left this node, and no
                    // server took it within the grace.
                    if !delivered && host.withdraw(server, msg) {
                        self.finish(now, id, CallOutcome::Failed(FailReason::NotAvailable), host);
                    } else {
                        self.calls.rearm(id, deadline);
                    }
                }
                CallState::Sent {
                    server,
                    msg,
                    delivered,
                    ..
                } => {
                    if delivered || host.in_flight(server, msg) {
                        self.finish(now, id, CallOutcome::Unknown(FailReason::Timeout), host);
                    }
                    // Otherwise its queued request ended `Failed(Timeout)` at this instant
                    // (the same deadline), and that outcome ends the call.
                }
            }
        }
        while let Some(request) = self.serving.pop_due(now) {
            host.output(RpcOutput::RequestCancelled { request });
        }
    }
}
