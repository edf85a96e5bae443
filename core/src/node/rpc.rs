//! Calls by method and broadcast ([`crate::rpc`]) composed with the node — the commands:
//! serving, calling (selection over the discovery set's rings, requests through the
//! outboxes), replying, cancelling, broadcasting. What comes back is in `rpc_input.rs`.
//!
//! RPC messages ride the bus as `Data` of the reserved type [`RPC_MSG_TYPE`]. Their
//! deliveries ([`Output::Received`]) and outcomes ([`Output::Outcome`]) never reach the
//! driver: as outputs leave the queue ([`Node::poll_output`], and before the RPC deadlines
//! in `handle_timeout`) the RPC layer takes them and answers with [`Output::Rpc`]. It also
//! reads, and passes on, `Event::PeerDead` and `Event::PeerRestarted`: evidence of a
//! server's death ends the calls it held on the same tick.

use bytes::Bytes;

use super::{Node, Output, SendError, commands::MAX_PAYLOAD_LEN};
use crate::{
    ids::NodeId,
    outcome::FailReason,
    rpc::{
        self, BroadcastId, BroadcastSpec, Call, CallError, CallId, CallOutcome, CallSpec,
        CallState, ReplyError, RequestId, RpcOutput, RpcStats,
    },
    time::Instant,
    wire::{self, RPC_MSG_TYPE, RpcMessage},
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
        let len = wire::reply_len(payload.len());
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
        let deadline = now + spec.timeout.unwrap_or(self.config.message_timeout);
        for node in recipients {
            match self.send_to_id(now, node, spec.msg_type, spec.payload.clone(), deadline) {
                Ok(msg) => {
                    self.own_rpc_message(msg);
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
    pub(super) fn dispatch(&mut self, now: Instant, id: CallId, first: bool) {
        if self.shut_down {
            self.finish(id, CallOutcome::Failed(FailReason::Shutdown));
            return;
        }
        loop {
            let Some(server) = self.pick_for(id, None) else {
                let Some(call) = self.rpc.calls.get(id) else {
                    return;
                };
                let waits = match call.failure {
                    None => true,
                    // Refused by a node not (yet) serving the method: within the grace it
                    // may start (a restarted server publishes its methods after it links).
                    Some(FailReason::NotServed) => self.now < call.grace_deadline,
                    Some(_) => false,
                };
                match call.failure {
                    Some(reason) if !waits => self.finish(id, CallOutcome::Failed(reason)),
                    _ => {
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
    pub(super) fn pick_for(&mut self, id: CallId, also_excluded: Option<NodeId>) -> Option<NodeId> {
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
        let among = crate::select::Among {
            rings: discovery.rings(),
            filter: Some(call.filter),
        };
        let mut excluded = call.tried.clone();
        excluded.extend(also_excluded);
        let outstanding = |server| calls.outstanding(server);
        selector.pick(&call.select, among, rng, outstanding, &excluded)
    }

    /// Sends the open call `id`'s request to `server`; `false` (and `server` tried) when the
    /// node refused the message at once.
    pub(super) fn send_request(&mut self, now: Instant, id: CallId, server: NodeId) -> bool {
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
                self.own_rpc_message(msg);
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
    pub(super) fn finish(&mut self, id: CallId, outcome: CallOutcome) {
        if self.rpc.calls.close(id).is_some() {
            self.out
                .push_back(Output::Rpc(RpcOutput::CallDone { call: id, outcome }));
        }
    }

    /// Sends one RPC message to `to`; it and its outcome are the RPC layer's.
    pub(super) fn send_rpc(
        &mut self,
        now: Instant,
        to: NodeId,
        message: &RpcMessage<'_>,
        deadline: Instant,
    ) {
        let mut bytes = alloc::vec::Vec::new();
        wire::encode_rpc(message, &mut bytes);
        if let Ok(msg) = self.send_to_id(now, to, RPC_MSG_TYPE, Bytes::from(bytes), deadline) {
            self.own_rpc_message(msg);
        }
    }
}
