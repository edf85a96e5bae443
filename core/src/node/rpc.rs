//! Calls by method and broadcast ([`crate::rpc`]) composed with the node: selection over the
//! discovery set's rings, requests and replies through the outboxes, outcomes of those
//! messages and evidence of death turned into call outcomes.
//!
//! RPC messages ride the bus as `Data` of the reserved type [`RPC_MSG_TYPE`]. Their
//! deliveries ([`Output::Received`]) and outcomes ([`Output::Outcome`]) never reach the
//! driver: as outputs leave the queue ([`Node::poll_output`], and before the RPC deadlines
//! in `handle_timeout`) the RPC layer takes them and answers with [`Output::Rpc`]. It also
//! reads, and passes on, [`Event::PeerDead`] and [`Event::PeerRestarted`]: evidence of a
//! server's death ends the calls it held on the same tick.

use bytes::Bytes;

use super::{Event, Evidence, Node, Output, SendError, commands::MAX_PAYLOAD_LEN};
use crate::{
    ids::{MsgId, NodeId},
    outcome::{FailReason, Outcome},
    rpc::{
        self, BroadcastId, BroadcastSpec, Call, CallError, CallId, CallOutcome, CallSpec,
        CallState, Candidates, IncomingRequest, ReplyError, RequestId, RpcOutput, RpcStats,
    },
    time::{Duration, Instant},
    wire::{self, RPC_MSG_TYPE, RefuseCall, RpcMessage},
};

impl Node {
    /// Starts serving `method`: it is published in this node's discovery record
    /// ([`discovery_info`](Self::discovery_info)) and requests for it are handed out as
    /// [`RpcOutput::Request`]. When the set changed, an [`RpcOutput::Republish`] asks the
    /// driver to publish the record again. Returns whether the set changed.
    ///
    /// # Errors
    ///
    /// [`ReplyError::InvalidMethod`] for a name [`rpc::is_valid_method`] refuses.
    pub fn serve(&mut self, now: Instant, method: &str) -> Result<bool, ReplyError> {
        self.advance(now);
        if !rpc::is_valid_method(method) {
            return Err(ReplyError::InvalidMethod);
        }
        let changed = self.rpc.serving.serve(method);
        if changed {
            self.out.push_back(Output::Rpc(RpcOutput::Republish));
        }
        Ok(changed)
    }

    /// Stops serving `method` (requests already handed out may still be answered; new ones
    /// are refused and their callers pick another server). Returns whether the set changed;
    /// when it did, an [`RpcOutput::Republish`] follows.
    pub fn unserve(&mut self, now: Instant, method: &str) -> bool {
        self.advance(now);
        let changed = self.rpc.serving.unserve(method);
        if changed {
            self.out.push_back(Output::Rpc(RpcOutput::Republish));
        }
        changed
    }

    /// The methods this node serves, in order.
    pub fn served_methods(&self) -> impl Iterator<Item = &str> + '_ {
        self.rpc.serving.methods()
    }

    /// The RPC layer's counters (in-flight calls counted now).
    #[must_use]
    pub fn rpc_stats(&self) -> RpcStats {
        let mut stats = self.rpc.stats;
        stats.in_flight = self.rpc.calls.len() as u64;
        stats
    }

    /// Calls `spec.method` on one of its servers, chosen by `spec.select`, and returns the
    /// call's id; its one [`RpcOutput::CallDone`] follows (possibly in this very drain: a
    /// self-call, a full queue). With no server known the call waits up to its grace for
    /// one, woken by the discovery record that brings it; see [`crate::rpc`] for the rules.
    ///
    /// # Errors
    ///
    /// [`CallError`]: an invalid method name, a request too large for a frame, a node that
    /// was shut down. Nothing is accepted.
    pub fn call(&mut self, now: Instant, spec: CallSpec) -> Result<CallId, CallError> {
        let now = self.advance(now);
        if self.shut_down {
            return Err(CallError::Shutdown);
        }
        if !rpc::is_valid_method(&spec.method) {
            return Err(CallError::InvalidMethod);
        }
        let len = wire::request_len(spec.method.len(), spec.payload.len());
        if len > MAX_PAYLOAD_LEN {
            return Err(CallError::PayloadTooLarge {
                len,
                max: MAX_PAYLOAD_LEN,
            });
        }
        let mut deadline = now + spec.timeout.unwrap_or(self.config.rpc_call_timeout);
        if let Some(parent) = spec.parent.and_then(|p| self.rpc.serving.get(p)) {
            deadline = deadline.min(parent.deadline);
        }
        let grace_deadline = (now + spec.grace.unwrap_or(self.config.rpc_grace)).min(deadline);
        let servers = rpc::servers_of(&spec.method);
        let filter = match self.discovery.rings().filter_id(&servers) {
            Some(id) => id,
            None => self.discovery.add_filter(servers),
        };
        let id = self.rpc.calls.next_id();
        self.rpc.calls.open(
            id,
            Call {
                method: spec.method,
                select: spec.select,
                payload: spec.payload,
                filter,
                deadline,
                grace_deadline,
                state: CallState::Waiting,
                tried: alloc::vec::Vec::new(),
                failure: None,
            },
        );
        self.dispatch(now, id, true);
        Ok(id)
    }

    /// Answers the request `request` with `payload` (an application error travels inside,
    /// as data); the reply rides the bus back to the caller.
    ///
    /// # Errors
    ///
    /// [`ReplyError::UnknownRequest`] when the request is not waiting (answered already,
    /// cancelled, past its deadline): the reply is dropped and counted
    /// ([`RpcStats::dropped_replies`]). [`ReplyError::PayloadTooLarge`] for a reply too
    /// large for a frame (the request stays open).
    pub fn reply(
        &mut self,
        now: Instant,
        request: RequestId,
        payload: Bytes,
    ) -> Result<(), ReplyError> {
        let now = self.advance(now);
        let len = payload.len() + 17;
        if len > MAX_PAYLOAD_LEN {
            return Err(ReplyError::PayloadTooLarge {
                len,
                max: MAX_PAYLOAD_LEN,
            });
        }
        let open = self
            .rpc
            .serving
            .get(request)
            .is_some_and(|inbound| inbound.deadline > now && !self.shut_down);
        let Some(inbound) = self.rpc.serving.take(request).filter(|_| open) else {
            self.rpc.stats.dropped_replies += 1;
            return Err(ReplyError::UnknownRequest);
        };
        let (caller, caller_incarnation, call) = inbound.key;
        let message = RpcMessage::Reply {
            call,
            caller_incarnation,
            payload: &payload,
        };
        self.send_rpc(now, caller, &message, inbound.deadline);
        Ok(())
    }

    /// Cancels the call `call`: it ends at once — `Failed(Cancelled)` if no request left
    /// this node, `Unknown(Cancelled)` once one did (its server is told, best effort, and
    /// drops the handler's reply). Returns whether the call was open.
    pub fn cancel(&mut self, now: Instant, call: CallId) -> bool {
        let now = self.advance(now);
        let Some(state) = self.rpc.calls.get(call).map(|c| c.state) else {
            return false;
        };
        match state {
            CallState::Waiting => self.finish(call, CallOutcome::Failed(FailReason::Cancelled)),
            CallState::Sent { server, .. } => {
                let message = RpcMessage::Cancel {
                    call: call.0,
                    caller_incarnation: self.incarnation,
                };
                let deadline = now + self.config.message_timeout;
                self.send_rpc(now, server, &message, deadline);
                self.finish(call, CallOutcome::Unknown(FailReason::Cancelled));
            }
        }
        true
    }

    /// Sends `spec.payload` as `spec.msg_type` to every node of the discovery set matching
    /// `spec.filter` now (this node skipped if `spec.skip_self`), one message per recipient
    /// on its acknowledged stream, and returns the broadcast's id; one
    /// [`RpcOutput::BroadcastDone`] follows when every recipient has an outcome (at once
    /// when there is none).
    ///
    /// # Errors
    ///
    /// [`SendError::Shutdown`], [`SendError::PayloadTooLarge`], [`SendError::ReservedType`].
    pub fn broadcast(
        &mut self,
        now: Instant,
        spec: BroadcastSpec,
    ) -> Result<BroadcastId, SendError> {
        let now = self.advance(now);
        if self.shut_down {
            return Err(SendError::Shutdown);
        }
        if spec.payload.len() > MAX_PAYLOAD_LEN {
            return Err(SendError::PayloadTooLarge {
                len: spec.payload.len(),
                max: MAX_PAYLOAD_LEN,
            });
        }
        if spec.msg_type == RPC_MSG_TYPE {
            return Err(SendError::ReservedType);
        }
        let filter = spec
            .filter
            .map(|filter| match self.discovery.rings().filter_id(&filter) {
                Some(id) => id,
                None => self.discovery.add_filter(filter),
            });
        let recipients: alloc::vec::Vec<NodeId> = self
            .discovery
            .rings()
            .round_robin_order(filter)
            .ids()
            .filter(|&id| !(spec.skip_self && id == self.id))
            .collect();
        self.rpc.stats.broadcasts += 1;
        let broadcast = self.rpc.broadcasts.start();
        let deadline = now + self.config.message_timeout;
        for node in recipients {
            match self.send_to_id(now, node, spec.msg_type, spec.payload.clone(), deadline) {
                Ok(msg) => {
                    self.rpc.messages.insert(msg);
                    self.rpc.broadcasts.expect(broadcast, node, msg);
                }
                Err(e) => {
                    let reason = match e {
                        SendError::Shutdown => FailReason::Shutdown,
                        _ => FailReason::NoRoute,
                    };
                    self.rpc.broadcasts.record(broadcast, node, reason);
                }
            }
        }
        if let Some(done) = self.rpc.broadcasts.seal(broadcast) {
            self.out
                .push_back(Output::Rpc(RpcOutput::BroadcastDone(done)));
        }
        Ok(broadcast)
    }

    /// Picks a server for the open call `id` and sends its request, or lets it wait for one
    /// (`first`: the call's first pick, which counts a grace wait), or ends it.
    fn dispatch(&mut self, now: Instant, id: CallId, first: bool) {
        loop {
            let Some(server) = self.pick_for(id, None) else {
                let Some(call) = self.rpc.calls.get(id) else {
                    return;
                };
                match call.failure {
                    Some(reason) => self.finish(id, CallOutcome::Failed(reason)),
                    None => {
                        if first {
                            self.rpc.stats.grace_waits += 1;
                        }
                        self.rpc.calls.wait(id);
                    }
                }
                return;
            };
            if server == self.id && !self.config.rpc_allow_self_calls {
                self.finish(id, CallOutcome::Failed(FailReason::SelfCall));
                return;
            }
            if self.send_request(now, id, server) {
                return;
            }
        }
    }

    /// One lookup: a server for the open call `id` by its selection, never one it tried nor
    /// `also_excluded`.
    fn pick_for(&mut self, id: CallId, also_excluded: Option<NodeId>) -> Option<NodeId> {
        self.rpc.stats.lookups += 1;
        let Node {
            rpc,
            discovery,
            selector,
            rng,
            ..
        } = self;
        let calls = &rpc.calls;
        let call = calls.get(id)?;
        let candidates = Candidates {
            rings: discovery.rings(),
            filter: call.filter,
        };
        let mut excluded = call.tried.clone();
        excluded.extend(also_excluded);
        rpc::pick(
            &call.select,
            candidates,
            selector,
            rng,
            |server| calls.outstanding(server),
            &excluded,
        )
    }

    /// Sends the open call `id`'s request to `server`; `false` (and `server` tried) when the
    /// node refused the message at once.
    fn send_request(&mut self, now: Instant, id: CallId, server: NodeId) -> bool {
        let Some(call) = self.rpc.calls.get(id) else {
            return false;
        };
        let remaining_ns =
            crate::time::duration_nanos(call.deadline.saturating_duration_since(now));
        let deadline = call.deadline;
        let mut bytes = alloc::vec::Vec::with_capacity(wire::request_len(
            call.method.len(),
            call.payload.len(),
        ));
        wire::encode_rpc(
            &RpcMessage::Request {
                call: id.0,
                caller_incarnation: self.incarnation,
                remaining_ns,
                method: &call.method,
                payload: &call.payload,
            },
            &mut bytes,
        );
        match self.send_to_id(now, server, RPC_MSG_TYPE, Bytes::from(bytes), deadline) {
            Ok(msg) => {
                self.rpc.messages.insert(msg);
                self.rpc.calls.sent(id, server, msg, now);
                true
            }
            Err(_) => {
                // Provably not sent: the caller tries another server.
                self.rpc.calls.tried(id, server, FailReason::NoRoute);
                false
            }
        }
    }

    /// Ends the open call `id` with `outcome` and reports it.
    fn finish(&mut self, id: CallId, outcome: CallOutcome) {
        if self.rpc.calls.close(id).is_some() {
            self.out
                .push_back(Output::Rpc(RpcOutput::CallDone { call: id, outcome }));
        }
    }

    /// Sends one RPC message to `to`; it and its outcome are the RPC layer's.
    fn send_rpc(&mut self, now: Instant, to: NodeId, message: &RpcMessage<'_>, deadline: Instant) {
        let mut bytes = alloc::vec::Vec::new();
        wire::encode_rpc(message, &mut bytes);
        if let Ok(msg) = self.send_to_id(now, to, RPC_MSG_TYPE, Bytes::from(bytes), deadline) {
            self.rpc.messages.insert(msg);
        }
    }

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
                self.dispatch(now, call, false);
            }
        }
    }

    /// Takes the RPC layer's outputs out of the queue (deliveries of RPC messages, outcomes
    /// of its messages) and reads the evidence of death, from where it stopped last time.
    pub(super) fn absorb_rpc(&mut self) {
        while self.rpc.absorbed < self.out.len() {
            let at = self.rpc.absorbed;
            let ours = match &self.out[at] {
                Output::Received { msg_type, .. } => *msg_type == RPC_MSG_TYPE,
                Output::Outcome { msg, .. } => self.rpc.messages.contains(msg),
                Output::Event(Event::PeerDead {
                    peer,
                    incarnation,
                    evidence,
                }) => {
                    let (peer, incarnation, evidence) = (*peer, *incarnation, *evidence);
                    self.rpc.absorbed += 1;
                    self.server_dead(peer, incarnation, evidence);
                    continue;
                }
                Output::Event(Event::PeerRestarted { peer, incarnation }) => {
                    let (peer, incarnation) = (*peer, *incarnation);
                    self.rpc.absorbed += 1;
                    self.server_restarted(peer, incarnation);
                    continue;
                }
                _ => false,
            };
            if !ours {
                self.rpc.absorbed += 1;
                continue;
            }
            match self.out.remove(at) {
                Some(Output::Received { from, payload, .. }) => self.rpc_received(from, &payload),
                Some(Output::Outcome { msg, outcome }) => self.rpc_message_ended(msg, outcome),
                _ => {}
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
                if !self.rpc.serving.first_time(key) {
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
                let deadline = now + Duration::from_nanos(remaining_ns);
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
        self.rpc.messages.remove(&msg);
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
            self.rpc.messages.remove(&msg);
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
                    self.finish(id, CallOutcome::Failed(FailReason::NotAvailable));
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
                        self.rpc.messages.remove(&msg);
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
