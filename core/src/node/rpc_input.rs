//! What reaches the RPC layer from the node: discovery records that bring servers, the
//! deliveries and outcomes of its bus messages (taken from the output queue as they leave),
//! evidence of a server's death or restart, and its deadlines.

use bytes::Bytes;

use super::{Event, Evidence, Node, Output};
use crate::{
    ids::{MsgId, NodeId},
    outcome::{FailReason, Outcome},
    rpc::{self, CallId, CallOutcome, CallState, IncomingRequest, RpcOutput},
    time::{Duration, Instant},
    wire::{self, RPC_MSG_TYPE, RefuseCall, RpcMessage},
};

impl Node {
    /// A discovery record for `id` was applied: calls waiting for a method it serves look
    /// again, now.
    pub(super) fn rpc_servers_appeared(&mut self, now: Instant, id: NodeId) {
        if !self.rpc.calls.any_waiting() {
            return;
        }
        let Some(info) = self.discovery.get_by_id(id) else {
            return;
        };
        let methods: alloc::vec::Vec<alloc::string::String> = rpc::served_methods(&info.metadata)
            .map(Into::into)
            .collect();
        for method in methods {
            for call in self.rpc.calls.waiting_for(&method) {
                // A fresh record that serves the method: a node that refused it may serve
                // it now.
                self.rpc.calls.untry(call, id);
                self.dispatch(now, call, false);
            }
        }
    }

    /// `msg` is the RPC layer's: its outcome (maybe queued already) is taken from the queue.
    pub(super) fn own_rpc_message(&mut self, msg: MsgId) {
        self.rpc.messages.insert(msg);
        self.out.rpc_outcomes = true;
        self.out.rpc_pending = true;
    }

    /// `msg` ended or was withdrawn: its outcome is no longer awaited.
    fn disown_rpc_message(&mut self, msg: MsgId) {
        self.rpc.messages.remove(&msg);
        self.out.rpc_outcomes = !self.rpc.messages.is_empty();
    }

    /// Takes the RPC layer's outputs out of the queue (deliveries of RPC messages, outcomes
    /// of its messages) and reads the evidence of death, from where it stopped last time.
    pub(super) fn absorb_rpc(&mut self) {
        loop {
            // Skip to the next output the RPC layer takes (one tight pass over the rest).
            let messages = &self.rpc.messages;
            let next = self
                .out
                .range(self.rpc.absorbed..)
                .position(|output| match output {
                    Output::Received { msg_type, .. } => *msg_type == RPC_MSG_TYPE,
                    Output::Outcome { msg, .. } => !messages.is_empty() && messages.contains(msg),
                    Output::Event(Event::PeerDead { .. } | Event::PeerRestarted { .. }) => true,
                    _ => false,
                });
            let Some(offset) = next else {
                self.rpc.absorbed = self.out.len();
                self.out.rpc_pending = false;
                return;
            };
            let at = self.rpc.absorbed + offset;
            self.rpc.absorbed = at;
            match &self.out[at] {
                Output::Event(Event::PeerDead {
                    peer,
                    incarnation,
                    evidence,
                }) => {
                    let (peer, incarnation, evidence) = (*peer, *incarnation, *evidence);
                    self.rpc.absorbed += 1;
                    self.server_dead(peer, incarnation, evidence);
                }
                Output::Event(Event::PeerRestarted { peer, incarnation }) => {
                    let (peer, incarnation) = (*peer, *incarnation);
                    self.rpc.absorbed += 1;
                    self.server_restarted(peer, incarnation);
                }
                _ => match self.out.remove(at) {
                    Some(Output::Received { from, payload, .. }) => {
                        self.rpc_received(from, &payload);
                    }
                    Some(Output::Outcome { msg, outcome }) => self.rpc_message_ended(msg, outcome),
                    _ => {}
                },
            }
        }
    }

    /// An RPC message arrived from `from`.
    fn rpc_received(&mut self, from: NodeId, payload: &Bytes) {
        let now = self.now;
        let message = match wire::decode_rpc(payload) {
            Ok(message) => message,
            Err(_) => {
                self.rpc.stats.bad_messages += 1;
                return;
            }
        };
        match message {
            RpcMessage::Request {
                call,
                caller_incarnation,
                remaining_ns,
                method,
                payload: args,
            } => {
                let key = (from, caller_incarnation, call);
                // Only a request handed on is remembered: a refused one was not executed, and
                // the caller may send it again (to a node that serves the method by then).
                if self.rpc.serving.seen(&key) {
                    self.rpc.stats.duplicate_requests += 1;
                    return;
                }
                let refusal = if remaining_ns == 0 {
                    self.rpc.stats.expired_requests += 1;
                    Some(RefuseCall::Expired)
                } else if !self.rpc.serving.serves(method) {
                    self.rpc.stats.not_served += 1;
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
                    let deadline = now + self.config.message_timeout;
                    self.send_rpc(now, from, &refuse, deadline);
                    return;
                }
                self.rpc.serving.first_time(key);
                let mut budget = Duration::from_nanos(remaining_ns);
                if budget > self.config.max_call_budget {
                    budget = self.config.max_call_budget;
                    self.rpc.stats.budgets_capped += 1;
                }
                let deadline = now + budget;
                let request = self.rpc.serving.open(key, deadline);
                self.rpc.stats.served += 1;
                let incoming = IncomingRequest {
                    request,
                    from,
                    method: method.into(),
                    payload: payload.slice_ref(args),
                    deadline,
                };
                self.out
                    .push_back(Output::Rpc(RpcOutput::Request(incoming)));
            }
            RpcMessage::Reply {
                call,
                caller_incarnation,
                payload: answer,
            } => match self.awaiting(from, caller_incarnation, call) {
                Some(id) => self.finish(id, CallOutcome::Reply(payload.slice_ref(answer))),
                None => self.rpc.stats.late_replies += 1,
            },
            RpcMessage::Refuse {
                call,
                caller_incarnation,
                reason,
            } => match self.awaiting(from, caller_incarnation, call) {
                Some(id) => match reason {
                    RefuseCall::Expired => {
                        self.finish(id, CallOutcome::Failed(FailReason::Expired))
                    }
                    _ => {
                        // Not served there (any more): another server, within the deadline.
                        self.rpc.calls.tried(id, from, FailReason::NotServed);
                        self.dispatch(now, id, false);
                    }
                },
                None => self.rpc.stats.late_replies += 1,
            },
            RpcMessage::Cancel {
                call,
                caller_incarnation,
            } => {
                if let Some(request) = self.rpc.serving.find((from, caller_incarnation, call)) {
                    self.rpc.serving.take(request);
                    self.out
                        .push_back(Output::Rpc(RpcOutput::RequestCancelled { request }));
                }
            }
        }
    }

    /// The open call `call` of this incarnation whose request went to `from`, if any.
    fn awaiting(&self, from: NodeId, caller_incarnation: u64, call: u64) -> Option<CallId> {
        if caller_incarnation != self.incarnation {
            return None;
        }
        let id = CallId(call);
        match self.rpc.calls.get(id)?.state {
            CallState::Sent { server, .. } if server == from => Some(id),
            _ => None,
        }
    }

    /// One of the RPC layer's bus messages ended.
    fn rpc_message_ended(&mut self, msg: MsgId, outcome: Outcome) {
        self.disown_rpc_message(msg);
        if self.rpc.broadcasts.owns(msg) {
            if let Some(done) = self.rpc.broadcasts.on_outcome(msg, outcome) {
                self.out
                    .push_back(Output::Rpc(RpcOutput::BroadcastDone(done)));
            }
            return;
        }
        let Some(id) = self.rpc.calls.of_msg(msg) else {
            return; // a reply, refusal or cancel; or a call already ended
        };
        let Some(CallState::Sent { server, .. }) = self.rpc.calls.get(id).map(|c| c.state) else {
            return;
        };
        match outcome {
            Outcome::Delivered => {
                let incarnation = match self.endpoints.known_incarnation(server) {
                    0 => self.links.peer_incarnation(server),
                    known => known,
                };
                self.rpc.calls.delivered(msg, incarnation);
            }
            Outcome::Unknown(reason) => {
                if matches!(reason, FailReason::TargetGone | FailReason::TargetRestarted) {
                    self.rpc.stats.fast_fails += 1;
                }
                self.finish(id, CallOutcome::Unknown(reason));
            }
            Outcome::Failed(
                reason @ (FailReason::QueueFull | FailReason::Shutdown | FailReason::Timeout),
            ) => self.finish(id, CallOutcome::Failed(reason)),
            Outcome::Failed(reason) => {
                // Provably never reached the server: another one, within the deadline.
                self.rpc.calls.tried(id, server, reason);
                let now = self.now;
                self.dispatch(now, id, false);
            }
        }
    }

    /// Evidence that `peer`'s incarnation `incarnation` is dead: the calls whose request it
    /// acknowledged end now (their requests still in flight ended by their own outcomes,
    /// just before).
    fn server_dead(&mut self, peer: NodeId, incarnation: u64, evidence: Evidence) {
        let reason = match evidence {
            Evidence::NewIncarnation => FailReason::TargetRestarted,
            _ => FailReason::TargetGone,
        };
        for id in self.rpc.calls.sent_to(peer) {
            let Some(CallState::Sent {
                delivered: true,
                server_incarnation,
                ..
            }) = self.rpc.calls.get(id).map(|c| c.state)
            else {
                continue;
            };
            if incarnation == 0 || server_incarnation == 0 || server_incarnation == incarnation {
                self.rpc.stats.fast_fails += 1;
                self.finish(id, CallOutcome::Unknown(reason));
            }
        }
        // Requests still queued for it never left this node: one with another server to go
        // to moves there now; the others wait for a live incarnation (until the grace).
        let now = self.now;
        for id in self.rpc.calls.sent_to(peer) {
            let Some(CallState::Sent {
                delivered: false,
                msg,
                ..
            }) = self.rpc.calls.get(id).map(|c| c.state)
            else {
                continue;
            };
            let Some(other) = self.pick_for(id, Some(peer)) else {
                continue;
            };
            if other == self.id && !self.config.rpc_allow_self_calls {
                continue;
            }
            if !self.endpoints.withdraw(peer, msg) {
                continue;
            }
            self.disown_rpc_message(msg);
            self.rpc.stats.moved += 1;
            self.rpc.calls.tried(id, peer, FailReason::TargetGone);
            if !self.send_request(now, id, other) {
                self.dispatch(now, id, false);
            }
        }
    }

    /// `peer` came back as `incarnation`: calls an older incarnation acknowledged end.
    fn server_restarted(&mut self, peer: NodeId, incarnation: u64) {
        for id in self.rpc.calls.sent_to(peer) {
            let Some(CallState::Sent {
                delivered: true,
                server_incarnation,
                ..
            }) = self.rpc.calls.get(id).map(|c| c.state)
            else {
                continue;
            };
            if server_incarnation != incarnation {
                self.rpc.stats.fast_fails += 1;
                self.finish(id, CallOutcome::Unknown(FailReason::TargetRestarted));
            }
        }
    }

    /// The RPC deadlines due at `now`: at its grace deadline a call still waiting for a
    /// server, or whose request is still queued here (never transmitted), ends
    /// `NotAvailable`; at its deadline a call whose request is at the server or in flight ends
    /// `Unknown(Timeout)`; held requests past their deadline are released
    /// ([`RpcOutput::RequestCancelled`]).
    pub(super) fn rpc_timeouts(&mut self, now: Instant) {
        self.absorb_rpc();
        while let Some(id) = self.rpc.calls.pop_due(now) {
            let Some(state) = self.rpc.calls.get(id).map(|c| c.state) else {
                continue;
            };
            match state {
                CallState::Waiting => {
                    let reason = match self.rpc.calls.get(id).and_then(|c| c.failure) {
                        Some(FailReason::NotServed) => FailReason::NotServed,
                        _ => FailReason::NotAvailable,
                    };
                    self.finish(id, CallOutcome::Failed(reason));
                }
                CallState::Sent {
                    server,
                    msg,
                    delivered,
                    ..
                } if self.rpc.calls.get(id).is_some_and(|c| now < c.deadline) => {
                    // The grace deadline: a request still queued never left this node, and no
                    // server took it within the grace.
                    if !delivered && self.endpoints.withdraw(server, msg) {
                        self.disown_rpc_message(msg);
                        self.finish(id, CallOutcome::Failed(FailReason::NotAvailable));
                    } else if let Some(deadline) = self.rpc.calls.get(id).map(|c| c.deadline) {
                        self.rpc.calls.rearm(id, deadline);
                    }
                }
                CallState::Sent {
                    server,
                    msg,
                    delivered,
                    ..
                } => {
                    let in_flight = delivered
                        || self
                            .endpoints
                            .unacked(server)
                            .any(|message| message.msg == msg);
                    if in_flight {
                        self.finish(id, CallOutcome::Unknown(FailReason::Timeout));
                    }
                    // Otherwise its queued request ended `Failed(Timeout)` at this instant
                    // (the same deadline), and that outcome ends the call.
                }
            }
        }
        while let Some(request) = self.rpc.serving.pop_due(now) {
            self.out
                .push_back(Output::Rpc(RpcOutput::RequestCancelled { request }));
        }
    }

    /// The earliest RPC deadline.
    pub(super) fn rpc_deadline(&self) -> Option<Instant> {
        crate::time::earliest(
            self.rpc.calls.next_deadline(),
            self.rpc.serving.next_deadline(),
        )
    }

    /// At shutdown: calls still open end (`Failed(Shutdown)` if their request never left,
    /// `Unknown(Shutdown)` otherwise), held requests are forgotten.
    pub(super) fn rpc_shutdown(&mut self) {
        self.absorb_rpc();
        for id in self.rpc.calls.ids() {
            let outcome = match self.rpc.calls.get(id).map(|c| c.state) {
                Some(CallState::Waiting) => CallOutcome::Failed(FailReason::Shutdown),
                _ => CallOutcome::Unknown(FailReason::Shutdown),
            };
            self.finish(id, outcome);
        }
    }
}
