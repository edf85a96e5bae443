//! The RPC machine: calls, served methods and broadcasts as a sibling of the link machine and
//! the connector. It owns its state and its rules; what it needs of the rest of the node it
//! asks of an [`RpcHost`] — send these bytes to this node by this deadline, withdraw that
//! message, hand this output to the application, and the few answers it reads (a server
//! pick over the discovery rings, whether a request is on its way, a peer's incarnation).
//!
//! Its inputs are the commands ([`Rpc::call`], [`Rpc::serve`], [`Rpc::reply`], ...) and the
//! [`RpcInput`]s the node routes to it where they arise (`input.rs`): an RPC message from a
//! peer (the link layer hands it over, it never enters the driver's queue), the outcome of a
//! message the machine sent (its ids carry [`MsgId::RPC_BIT`]), a peer's death or restart;
//! plus a discovery record that brings servers and its deadlines.

use alloc::{collections::BTreeMap, string::String, vec::Vec};

use bytes::{Bytes, BytesMut};

use super::{
    BroadcastId, BroadcastSpec, Broadcasts, Call, CallError, CallId, CallMetadata, CallOutcome,
    CallSpec, CallState, Calls, ReplyError, RequestId, RpcOutput, RpcStats, Select, Serving,
};
use crate::{
    config::Config,
    discovery::{DiscoveryInfo, Filter},
    event::Evidence,
    ids::{MsgId, NodeId},
    outcome::{FailReason, Outcome},
    ring::FilterId,
    time::{Duration, Instant},
    wire::{self, RefuseCall, RpcMessage},
};

/// Largest RPC message (or broadcast payload) a `Data` frame can carry.
pub(crate) const MAX_PAYLOAD_LEN: usize = wire::MAX_DATA_PAYLOAD;

/// The least the encoder grows by: messages are encoded one after the other into one buffer
/// and split off it (no allocation per message, and a message's copies in the outbox are
/// reference counts).
const ENCODER_CHUNK: usize = 16 * 1024;

/// `message`, encoded into `encoder` and split off it.
fn encode(encoder: &mut BytesMut, message: &RpcMessage<'_>) -> Bytes {
    let len = wire::rpc_len(message);
    if encoder.capacity() < len {
        encoder.reserve(len.max(ENCODER_CHUNK));
    }
    wire::encode_rpc(message, encoder);
    encoder.split().freeze()
}

/// What the machine asks of the node it runs in.
pub(crate) trait RpcHost {
    /// Hands `payload` as a message of `msg_type` for `to` to its outbox with `deadline`:
    /// its id (the machine's: its outcome comes back as an [`RpcInput::Outcome`]), or why the
    /// node refused it at once (it provably never left).
    fn send(
        &mut self,
        now: Instant,
        to: NodeId,
        msg_type: u32,
        payload: Bytes,
        deadline: Instant,
    ) -> Result<MsgId, FailReason>;
    /// Takes `msg` back from `to`'s queue if it was never transmitted (no outcome follows);
    /// whether it was.
    fn withdraw(&mut self, to: NodeId, msg: MsgId) -> bool;
    /// Whether `msg` was transmitted to `to` and is not yet acknowledged.
    fn in_flight(&self, to: NodeId, msg: MsgId) -> bool;
    /// The incarnation of `peer` this node knows (0: none).
    fn incarnation(&self, peer: NodeId) -> u64;
    /// The filter ring of `filter`, registered on first use.
    fn filter(&mut self, filter: Filter) -> FilterId;
    /// One server among `filter`'s members by `select`, never one in `excluded`.
    fn pick(
        &mut self,
        select: &Select,
        filter: FilterId,
        outstanding: &dyn Fn(NodeId) -> u32,
        excluded: &[NodeId],
    ) -> Option<NodeId>;
    /// Every node of `filter`'s ring (`None`: every node), in ring order.
    fn members(&mut self, filter: Option<FilterId>) -> Vec<NodeId>;
    /// Hands `output` to the application.
    fn output(&mut self, output: RpcOutput);
    /// The machine's next input, in the order they arose (see [`Rpc::settle`]).
    fn next_input(&mut self) -> Option<RpcInput>;
    /// A call's attempt at `server` ended at `now`, a success (`ok`) or a failure, for
    /// outlier ejection (which outcomes count: `server_outcome.rs`).
    fn server_outcome(&mut self, now: Instant, server: NodeId, ok: bool);
}

/// What reaches the machine from the node as it happens, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RpcInput {
    /// An RPC message from `from` (a `Data` payload of type [`wire::RPC_MSG_TYPE`]).
    Message {
        /// The sender.
        from: NodeId,
        /// The message's bytes.
        payload: Bytes,
    },
    /// One of the machine's messages ended.
    Outcome {
        /// The message.
        msg: MsgId,
        /// How.
        outcome: Outcome,
    },
    /// `peer`'s incarnation `incarnation` (0: not known) is dead, as `evidence` showed.
    PeerDead {
        /// The peer.
        peer: NodeId,
        /// Its dead incarnation.
        incarnation: u64,
        /// What showed it.
        evidence: Evidence,
    },
    /// `peer`'s route failed (a dial or its link failed; a reconnect is scheduled): requests
    /// still queued for it move to a server whose route is not failing.
    RouteFailing {
        /// The peer.
        peer: NodeId,
    },
    /// `peer` came back as `incarnation`.
    PeerRestarted {
        /// The peer.
        peer: NodeId,
        /// Its new incarnation.
        incarnation: u64,
    },
}

/// The settings the machine runs with (from the node's [`Config`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RpcSettings {
    /// This node.
    pub(crate) own: NodeId,
    /// This node's incarnation (the caller incarnation its requests carry).
    pub(crate) incarnation: u64,
    /// `Config::rpc_call_timeout`.
    pub(crate) call_timeout: Duration,
    /// `Config::rpc_grace`.
    pub(crate) grace: Duration,
    /// `Config::message_timeout`: refusals, cancels and broadcasts.
    pub(crate) message_timeout: Duration,
    /// `Config::max_call_budget`.
    pub(crate) max_call_budget: Duration,
    /// `Config::rpc_allow_self_calls`.
    pub(crate) allow_self_calls: bool,
    /// The secret seed of the server's duplicate memory (whose keys peers choose).
    pub(crate) dedup_seed: u64,
    /// `Config::rpc_retry`.
    pub(crate) retry: super::retry::RetryConfig,
}

impl RpcSettings {
    /// The settings of node incarnation `incarnation` configured by `config`, its duplicate
    /// memory seeded with `dedup_seed`.
    pub(crate) fn from_config(config: &Config, incarnation: u64, dedup_seed: u64) -> RpcSettings {
        RpcSettings {
            own: config.id,
            incarnation,
            call_timeout: config.rpc_call_timeout,
            grace: config.rpc_grace,
            message_timeout: config.message_timeout,
            max_call_budget: config.max_call_budget,
            allow_self_calls: config.rpc_allow_self_calls,
            dedup_seed,
            retry: config.rpc_retry,
        }
    }
}

/// The RPC machine: its open calls, what it serves, its broadcasts, its counters.
#[derive(Debug, Default)]
pub(crate) struct Rpc {
    pub(super) settings: RpcSettings,
    /// Open calls (caller side).
    pub(super) calls: Calls,
    /// Served methods and held requests (server side).
    pub(super) serving: Serving,
    /// Broadcasts in progress.
    pub(super) broadcasts: Broadcasts,
    /// Counters.
    pub(super) stats: RpcStats,
    /// The filter ring of each method called so far (a ring, once registered, stays).
    filters: BTreeMap<String, FilterId>,
    /// Whether the node was shut down.
    pub(super) shut_down: bool,
    /// Where its messages are encoded ([`encode`]).
    encoder: BytesMut,
    /// Attempts ended since the host last heard (`server_outcome.rs`).
    pub(super) ended_attempts: Vec<(NodeId, bool)>,
    /// Retries and hedges ([`super::hedge`]).
    pub(super) retrying: super::hedge::Retrying,
}

impl Rpc {
    /// A machine with `settings`, serving `methods` from the start (no republication).
    pub(crate) fn new<'a>(settings: RpcSettings, methods: impl Iterator<Item = &'a str>) -> Rpc {
        let mut rpc = Rpc {
            settings,
            serving: Serving::with_seed(settings.dedup_seed),
            retrying: super::hedge::Retrying::new(settings.retry, settings.dedup_seed),
            ..Rpc::default()
        };
        for method in methods {
            rpc.serving.serve(method);
        }
        rpc
    }

    /// A node's machine, boxed (the node takes it out to run it with itself as the host):
    /// the settings of `config` with the node's `incarnation` and `dedup_seed`, serving the
    /// configured methods from the start (in the node's first record already: no
    /// republication asked for).
    pub(crate) fn for_node(
        config: &Config,
        incarnation: u64,
        dedup_seed: u64,
    ) -> alloc::boxed::Box<Rpc> {
        let settings = RpcSettings::from_config(config, incarnation, dedup_seed);
        alloc::boxed::Box::new(Rpc::new(settings, config.serve.iter().map(String::as_str)))
    }

    /// Starts serving `method`; whether the set changed (then [`RpcOutput::Republish`]).
    ///
    /// # Errors
    ///
    /// [`ReplyError::InvalidMethod`] for a name [`super::is_valid_method`] refuses.
    pub(crate) fn serve(
        &mut self,
        method: &str,
        host: &mut impl RpcHost,
    ) -> Result<bool, ReplyError> {
        if !super::is_valid_method(method) {
            return Err(ReplyError::InvalidMethod);
        }
        let changed = self.serving.serve(method);
        if changed {
            host.output(RpcOutput::Republish);
        }
        Ok(changed)
    }

    /// Stops serving `method`; whether the set changed (then [`RpcOutput::Republish`]).
    pub(crate) fn unserve(&mut self, method: &str, host: &mut impl RpcHost) -> bool {
        let changed = self.serving.unserve(method);
        if changed {
            host.output(RpcOutput::Republish);
        }
        changed
    }

    /// The methods served, in order.
    pub(crate) fn served_methods(&self) -> impl Iterator<Item = &str> + '_ {
        self.serving.methods()
    }

    /// Publishes the methods served in `metadata`: one label per method
    /// ([`method_label`](super::method_label)).
    pub(crate) fn label_served(&self, metadata: &mut crate::discovery::Metadata) {
        for method in self.served_methods() {
            (metadata.labels).insert(
                super::method_label(method),
                super::METHOD_LABEL_VALUE.into(),
            );
        }
    }

    /// The counters, in-flight calls counted now.
    /// Servers with calls of this node outstanding.
    pub(crate) fn server_count(&self) -> usize {
        self.calls.server_count()
    }

    pub(crate) fn stats(&self) -> RpcStats {
        RpcStats {
            in_flight: (self.calls.len() as u64).saturating_sub(self.retrying.hedges_open),
            ..self.stats
        }
    }

    /// Opens a call and dispatches it (see `Node::call`).
    ///
    /// # Errors
    ///
    /// [`CallError`]; nothing is accepted.
    pub(crate) fn call(
        &mut self,
        now: Instant,
        spec: CallSpec,
        host: &mut impl RpcHost,
    ) -> Result<CallId, CallError> {
        if self.shut_down {
            return Err(CallError::Shutdown);
        }
        if !super::is_valid_method(&spec.method) {
            return Err(CallError::InvalidMethod);
        }
        if spec.hedge_after.is_some() && !spec.idempotent {
            return Err(CallError::HedgeNotIdempotent);
        }
        let len = wire::request_len(
            spec.method.len(),
            spec.metadata.encoded_len(),
            spec.payload.len(),
        );
        if len > MAX_PAYLOAD_LEN {
            return Err(CallError::PayloadTooLarge {
                len,
                max: MAX_PAYLOAD_LEN,
            });
        }
        let mut deadline = now + spec.timeout.unwrap_or(self.settings.call_timeout);
        if let Some(parent) = spec.parent.and_then(|p| self.serving.get(p)) {
            deadline = deadline.min(parent.deadline);
        }
        let grace_deadline = (now + spec.grace.unwrap_or(self.settings.grace)).min(deadline);
        let filter = match self.filters.get(spec.method.as_str()) {
            Some(&filter) => filter,
            None => {
                let filter = host.filter(super::servers_of(&spec.method));
                self.filters.insert(spec.method.clone(), filter);
                filter
            }
        };
        self.hedge_asked(&spec.method, spec.hedge_after);
        let id = self.calls.next_id();
        self.calls.open(
            id,
            Call {
                method: spec.method,
                select: spec.select,
                payload: spec.payload,
                metadata: spec.metadata,
                filter,
                deadline,
                grace_deadline,
                state: CallState::Waiting,
                tried: Vec::new(),
                failure: None,
                attempts: super::hedge::Attempts {
                    idempotent: spec.idempotent,
                    hedge_after: spec.hedge_after,
                    max: spec
                        .max_attempts
                        .unwrap_or(self.settings.retry.max_attempts),
                    made: 1,
                    ..super::hedge::Attempts::default()
                },
            },
        );
        self.call_opened(now);
        self.dispatch(now, id, true, host);
        Ok(id)
    }

    /// Answers the held request `request` (see `Node::reply`).
    ///
    /// # Errors
    ///
    /// [`ReplyError::UnknownRequest`] (counted), [`ReplyError::PayloadTooLarge`].
    pub(crate) fn reply(
        &mut self,
        now: Instant,
        request: RequestId,
        payload: &[u8],
        metadata: &CallMetadata,
        host: &mut impl RpcHost,
    ) -> Result<(), ReplyError> {
        let len = wire::reply_len(metadata.encoded_len(), payload.len());
        if len > MAX_PAYLOAD_LEN {
            return Err(ReplyError::PayloadTooLarge {
                len,
                max: MAX_PAYLOAD_LEN,
            });
        }
        let open = self
            .serving
            .get(request)
            .is_some_and(|inbound| inbound.deadline > now && !self.shut_down);
        let Some(inbound) = self.serving.take(request).filter(|_| open) else {
            self.stats.dropped_replies += 1;
            return Err(ReplyError::UnknownRequest);
        };
        let (caller, caller_incarnation, call) = inbound.key;
        let message = RpcMessage::Reply {
            call,
            caller_incarnation,
            metadata: metadata.view(),
            payload,
        };
        self.send(now, caller, &message, inbound.deadline, host);
        Ok(())
    }

    /// Refuses the held request `request` for `reason` (`NotServed`: see `Node::decline`;
    /// `Overloaded`: see `Node::shed`), its handler never run, and forgets it was handed on;
    /// whether it was held.
    pub(crate) fn refuse(
        &mut self,
        now: Instant,
        request: RequestId,
        reason: RefuseCall,
        host: &mut impl RpcHost,
    ) -> bool {
        let Some(inbound) = self.serving.take(request) else {
            return false;
        };
        self.serving.forget(&inbound.key);
        match reason {
            RefuseCall::Overloaded => self.stats.overloaded += 1,
            RefuseCall::Expired => self.stats.expired_requests += 1,
            RefuseCall::NotServed => self.stats.not_served += 1,
        }
        let (caller, caller_incarnation, call) = inbound.key;
        let refuse = RpcMessage::Refuse {
            call,
            caller_incarnation,
            reason,
        };
        let deadline = now + self.settings.message_timeout;
        self.send(now, caller, &refuse, deadline, host);
        true
    }

    /// Cancels the open call `call` (see `Node::cancel`); whether it was open.
    pub(crate) fn cancel(&mut self, now: Instant, call: CallId, host: &mut impl RpcHost) -> bool {
        // A hedge's own entry is no call of the application's.
        let open = self.calls.get(call).filter(|c| c.attempts.head.is_none());
        let Some(state) = open.map(|c| c.state) else {
            return false;
        };
        match state {
            CallState::Waiting | CallState::Idle => {
                self.finish(now, call, CallOutcome::Failed(FailReason::Cancelled), host);
            }
            CallState::Sent { server, .. } => {
                let message = RpcMessage::Cancel {
                    call: call.0,
                    caller_incarnation: self.settings.incarnation,
                };
                let deadline = now + self.settings.message_timeout;
                self.send(now, server, &message, deadline, host);
                self.finish(now, call, CallOutcome::Unknown(FailReason::Cancelled), host);
            }
        }
        true
    }

    /// Sends one copy of `spec` to every member of its filter now (see `Node::broadcast`,
    /// which checks the spec first).
    pub(crate) fn broadcast(
        &mut self,
        now: Instant,
        spec: BroadcastSpec,
        host: &mut impl RpcHost,
    ) -> BroadcastId {
        let filter = spec.filter.map(|filter| host.filter(filter));
        let own = self.settings.own;
        let mut recipients = host.members(filter);
        recipients.retain(|&id| !(spec.skip_self && id == own));
        self.stats.broadcasts += 1;
        let broadcast = self.broadcasts.start();
        let deadline = now + spec.timeout.unwrap_or(self.settings.message_timeout);
        for node in recipients {
            match host.send(now, node, spec.msg_type, spec.payload.clone(), deadline) {
                Ok(msg) => self.broadcasts.expect(broadcast, node, msg),
                Err(reason) => self.broadcasts.record(broadcast, node, reason),
            }
        }
        if let Some(done) = self.broadcasts.seal(broadcast) {
            host.output(RpcOutput::BroadcastDone(done));
        }
        broadcast
    }

    /// Picks a server for the open call `id` and sends its request, or lets it wait for one
    /// (`first`: the call's first pick, which counts a grace wait), or ends it.
    pub(super) fn dispatch(
        &mut self,
        now: Instant,
        id: CallId,
        first: bool,
        host: &mut impl RpcHost,
    ) {
        if self.shut_down {
            self.finish(now, id, CallOutcome::Failed(FailReason::Shutdown), host);
            return;
        }
        loop {
            let Some(server) = self.pick_for(id, None, host) else {
                let Some(call) = self.calls.get(id) else {
                    return;
                };
                let waits = match call.failure {
                    None => true,
                    // Refused by a node not (yet) serving the method: within the grace it
                    // may start (a restarted server publishes its methods after it links).
                    Some(FailReason::NotServed) => now < call.grace_deadline,
                    Some(_) => false,
                };
                match call.failure {
                    Some(reason) if !waits => {
                        self.finish(now, id, CallOutcome::Failed(reason), host);
                    }
                    _ => {
                        if first {
                            self.stats.grace_waits += 1;
                        }
                        self.calls.wait(id);
                    }
                }
                return;
            };
            if server == self.settings.own && !self.settings.allow_self_calls {
                self.finish(now, id, CallOutcome::Failed(FailReason::SelfCall), host);
                return;
            }
            if self.send_request(now, id, server, host) {
                return;
            }
        }
    }

    /// One lookup: a server for the open call `id` by its selection, never one it tried nor
    /// `also_excluded`.
    pub(super) fn pick_for(
        &mut self,
        id: CallId,
        also_excluded: Option<NodeId>,
        host: &mut impl RpcHost,
    ) -> Option<NodeId> {
        self.stats.lookups += 1;
        let calls = &self.calls;
        let call = calls.get(id)?;
        let mut excluded = call.tried.clone();
        excluded.extend(also_excluded);
        host.pick(
            &call.select,
            call.filter,
            &|server| calls.outstanding(server),
            &excluded,
        )
    }

    /// Sends the open call `id`'s request to `server`; `false` (and `server` tried) when the
    /// node refused the message at once.
    pub(super) fn send_request(
        &mut self,
        now: Instant,
        id: CallId,
        server: NodeId,
        host: &mut impl RpcHost,
    ) -> bool {
        let Some(call) = self.calls.get(id) else {
            return false;
        };
        let request = RpcMessage::Request {
            call: id.0,
            caller_incarnation: self.settings.incarnation,
            remaining_ns: crate::time::duration_nanos(call.deadline.saturating_duration_since(now)),
            method: &call.method,
            metadata: call.metadata.view(),
            payload: &call.payload,
        };
        let bytes = encode(&mut self.encoder, &request);
        if let Ok(msg) = host.send(now, server, wire::RPC_MSG_TYPE, bytes, call.deadline) {
            self.calls.sent(id, server, msg, now);
            self.request_sent(now, id);
            true
        } else {
            // Provably not sent: the caller tries another server.
            self.note_server(server, super::server_outcome::failure(FailReason::NoRoute));
            self.calls.tried(id, server, FailReason::NoRoute);
            false
        }
    }

    /// Sends the RPC message `message` to `to` by `deadline` (best effort: a reply, refusal
    /// or cancel that cannot leave is dropped; its outcome is the machine's and ends nothing).
    pub(super) fn send(
        &mut self,
        now: Instant,
        to: NodeId,
        message: &RpcMessage<'_>,
        deadline: Instant,
        host: &mut impl RpcHost,
    ) {
        let bytes = encode(&mut self.encoder, message);
        // Refused at once: nothing was sent, nothing is owed (the caller times out or picks
        // again, the server's held request expires).
        let _refused = host.send(now, to, wire::RPC_MSG_TYPE, bytes, deadline);
    }

    /// Ends the open call `id`'s attempt with `outcome` (see [`finish_with`](Self::finish_with)).
    pub(super) fn finish(
        &mut self,
        now: Instant,
        id: CallId,
        outcome: CallOutcome,
        host: &mut impl RpcHost,
    ) {
        self.finish_with(now, id, outcome, CallMetadata::new(), host);
    }

    /// Ends the open call `id`'s attempt with `outcome` and the reply's `metadata`: the call
    /// reports it, or is retried, or waits for its hedge ([`super::hedge`]).
    pub(super) fn finish_with(
        &mut self,
        now: Instant,
        id: CallId,
        outcome: CallOutcome,
        metadata: CallMetadata,
        host: &mut impl RpcHost,
    ) {
        if let Some(CallState::Sent { server, .. }) = self.calls.get(id).map(|c| c.state) {
            self.note_server(server, super::server_outcome::verdict(&outcome));
        }
        self.attempt_ended(now, id, outcome, metadata, host);
    }

    /// The earliest RPC deadline.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        let calls = crate::time::earliest(self.calls.next_deadline(), self.serving.next_deadline());
        crate::time::earliest(calls, self.retrying.next_deadline())
    }

    /// Takes every pending input ([`RpcHost::next_input`]), including the ones taking them
    /// gives rise to.
    pub(crate) fn settle(&mut self, now: Instant, host: &mut impl RpcHost) {
        self.report_attempts(now, host);
        while let Some(input) = host.next_input() {
            self.handle(now, input, host);
            self.report_attempts(now, host);
        }
    }

    /// At shutdown: the outcomes of its messages given up are taken, then calls still open
    /// end (`Failed(Shutdown)` if their request never left, `Unknown(Shutdown)` otherwise);
    /// later commands are refused.
    pub(crate) fn shutdown(&mut self, now: Instant, host: &mut impl RpcHost) {
        self.shut_down = true;
        self.settle(now, host);
        for id in self.calls.ids() {
            let outcome = match self.calls.get(id).map(|c| c.state) {
                Some(CallState::Waiting) => CallOutcome::Failed(FailReason::Shutdown),
                _ => CallOutcome::Unknown(FailReason::Shutdown),
            };
            self.finish(now, id, outcome, host);
        }
    }

    /// A discovery record for `id` serving `methods` was applied: calls waiting for one of
    /// them look again, now.
    pub(crate) fn servers_appeared(
        &mut self,
        now: Instant,
        id: NodeId,
        methods: &[String],
        host: &mut impl RpcHost,
    ) {
        for method in methods {
            for call in self.calls.waiting_for(method) {
                // A fresh record that serves the method: a node that refused it may serve
                // it now.
                self.calls.untry(call, id);
                self.dispatch(now, call, false, host);
            }
        }
    }

    /// The methods a discovery record just applied (`info`) serves, for
    /// [`servers_appeared`](Self::servers_appeared): `None` when no call waits for a server
    /// (the record is not worth reading) or there is no record.
    pub(crate) fn waited_methods(&self, info: Option<&DiscoveryInfo>) -> Option<Vec<String>> {
        if !self.calls.any_waiting() {
            return None;
        }
        Some(
            super::served_methods(&info?.metadata)
                .map(Into::into)
                .collect(),
        )
    }
}
