//! The RPC machine ([`crate::rpc`]) composed with the node: the commands delegate to it,
//! [`NodeHost`] applies its effects with the node's parts (its messages go through the
//! outboxes, its picks over the discovery rings), and every way in hands it the inputs of
//! `output::Outlets` before it returns ([`Node::settle_rpc`]).

use alloc::vec::Vec;

use bytes::Bytes;

use super::{Node, Output, SendError};
use crate::{
    discovery::Filter,
    ids::{MsgId, NodeId},
    outcome::FailReason,
    ring::FilterId,
    rpc::{
        BroadcastId, BroadcastSpec, CallError, CallId, CallMetadata, CallSpec, ReplyError,
        RequestId, Rpc, RpcHost, RpcInput, RpcOutput,
    },
    select::{Among, Select},
    time::Instant,
    wire::RefuseCall,
};

impl Node {
    /// Starts serving `method`: it is published in this node's discovery record
    /// ([`discovery_info`](Self::discovery_info)) and requests for it are handed out as
    /// [`RpcOutput::Request`]. When the set changed, an [`RpcOutput::Republish`] asks the
    /// driver to publish the record again. Returns whether the set changed.
    ///
    /// # Errors
    ///
    /// [`ReplyError::InvalidMethod`] for a name [`is_valid_method`](crate::rpc::is_valid_method) refuses.
    pub fn serve(&mut self, now: Instant, method: &str) -> Result<bool, ReplyError> {
        self.advance(now);
        self.with_rpc(|rpc, host| rpc.serve(method, host))
    }

    /// Stops serving `method` (requests already handed out may still be answered or
    /// [declined](Self::decline); new ones are refused and their callers pick another server). Returns whether the set changed;
    /// when it did, an [`RpcOutput::Republish`] follows.
    pub fn unserve(&mut self, now: Instant, method: &str) -> bool {
        self.advance(now);
        self.with_rpc(|rpc, host| rpc.unserve(method, host))
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
        self.with_rpc(|rpc, host| rpc.call(now, spec, host))
    }

    /// Answers the request `request` with `payload` (an application error travels inside,
    /// as data); the reply rides the bus back to the caller.
    ///
    /// # Errors
    ///
    /// [`ReplyError::UnknownRequest`] when the request is not waiting (answered, cancelled,
    /// past its deadline): the reply is dropped and counted (`RpcStats::dropped_replies`).
    /// [`ReplyError::PayloadTooLarge`] for a reply too large for a frame (the request stays).
    pub fn reply(
        &mut self,
        now: Instant,
        request: RequestId,
        payload: Bytes,
    ) -> Result<(), ReplyError> {
        self.reply_with_metadata(now, request, payload, &CallMetadata::new())
    }

    /// [`Node::reply`] with `metadata` for the caller (its
    /// [`RpcOutput::CallDone`]'s `metadata`).
    ///
    /// # Errors
    ///
    /// As [`Node::reply`]; the metadata counts toward the frame's size.
    pub fn reply_with_metadata(
        &mut self,
        now: Instant,
        request: RequestId,
        payload: Bytes,
        metadata: &CallMetadata,
    ) -> Result<(), ReplyError> {
        let now = self.advance(now);
        self.with_rpc(|rpc, host| rpc.reply(now, request, &payload, metadata, host))
    }

    /// Refuses the request `request` unanswered, as a server that does not serve its method
    /// would: for a driver with no handler to give it to (its method was unserved after the
    /// node handed it out). Its caller tries another server; a repeat may run here later.
    /// Returns whether it was waiting.
    pub fn decline(&mut self, now: Instant, request: RequestId) -> bool {
        let now = self.advance(now);
        self.with_rpc(|rpc, host| rpc.refuse(now, request, RefuseCall::NotServed, host))
    }

    /// Refuses the request `request` unexecuted because its method's handler is at its
    /// concurrency limit (load shedding by the driver): its caller's call ends
    /// `Failed(Overloaded)` at once, counted in [`RpcStats::overloaded`]. Returns whether it
    /// was waiting.
    ///
    /// [`RpcStats::overloaded`]: crate::rpc::RpcStats::overloaded
    pub fn shed(&mut self, now: Instant, request: RequestId) -> bool {
        let now = self.advance(now);
        self.with_rpc(|rpc, host| rpc.refuse(now, request, RefuseCall::Overloaded, host))
    }

    /// Cancels the call `call`: it ends at once — `Failed(Cancelled)` if no request left
    /// this node, `Unknown(Cancelled)` once one did (its server is told, best effort, and
    /// drops the handler's reply). Returns whether the call was open.
    pub fn cancel(&mut self, now: Instant, call: CallId) -> bool {
        let now = self.advance(now);
        self.with_rpc(|rpc, host| rpc.cancel(now, call, host))
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
        SendError::check(self.shut_down, spec.msg_type, spec.payload.len())?;
        Ok(self.with_rpc(|rpc, host| rpc.broadcast(now, spec, host)))
    }

    /// Hands the RPC machine the inputs that arose since it last ran, if any (the check
    /// inlined into every way in, `send` among them; the work out of line).
    #[inline(always)]
    pub(super) fn settle_rpc(&mut self) {
        if !self.out.rpc.is_empty() {
            self.settle_rpc_inputs();
        }
    }

    #[inline(never)]
    fn settle_rpc_inputs(&mut self) {
        self.with_rpc(|_, _| ());
    }

    /// Runs `f` on the RPC machine with this node as its host, then hands it the inputs that
    /// arose meanwhile.
    pub(super) fn with_rpc<T>(&mut self, f: impl FnOnce(&mut Rpc, &mut NodeHost<'_>) -> T) -> T {
        let Some(mut rpc) = self.rpc.take() else {
            unreachable!("the RPC machine never runs inside itself: its host calls no way in");
        };
        let now = self.now;
        let mut host = NodeHost(self);
        let result = f(&mut rpc, &mut host);
        rpc.settle(now, &mut host);
        self.rpc = Some(rpc);
        result
    }
}

/// The node as the RPC machine's host (the machine itself is taken out meanwhile).
pub(super) struct NodeHost<'a>(&'a mut Node);

impl RpcHost for NodeHost<'_> {
    fn send(
        &mut self,
        now: Instant,
        to: NodeId,
        msg_type: u32,
        payload: Bytes,
        deadline: Instant,
    ) -> Result<MsgId, FailReason> {
        self.0
            .send_resolved(now, to, msg_type, payload, deadline, true)
            .map_err(|e| match e {
                SendError::Shutdown => FailReason::Shutdown,
                _ => FailReason::NoRoute,
            })
    }

    fn withdraw(&mut self, to: NodeId, msg: MsgId) -> bool {
        self.0.endpoints.withdraw(to, msg)
    }

    fn in_flight(&self, to: NodeId, msg: MsgId) -> bool {
        self.0.endpoints.unacked(to).any(|sent| sent.msg == msg)
    }

    fn incarnation(&self, peer: NodeId) -> u64 {
        self.0.seen_incarnation(peer)
    }

    fn filter(&mut self, filter: Filter) -> FilterId {
        // Registering a filter already known returns its handle.
        self.0.records.discovery.add_filter(filter)
    }

    fn pick(
        &mut self,
        select: &Select,
        filter: FilterId,
        outstanding: &dyn Fn(NodeId) -> u32,
        excluded: &[NodeId],
    ) -> Option<NodeId> {
        let node = &mut *self.0;
        let rings = (node.records.discovery).rings_for(select.reads_ring_points());
        let among = Among::of(rings, Some(filter));
        // A server whose route is failing, or that is ejected as an outlier, is picked only
        // when every other one is too (ARCHITECTURE §11 rule 9, "Outlier ejection"). The
        // outlier state is taken out of the selector for the pick (a move, no allocation).
        let (connector, now) = (&node.connector, node.now);
        let outliers = core::mem::take(&mut node.selector.outliers);
        let picked = (node.selector).pick_usable(
            select,
            among,
            &mut node.rng,
            outstanding,
            excluded,
            |id| !connector.is_failing(id) && !outliers.is_ejected(now, id),
        );
        node.selector.outliers = outliers;
        picked
    }

    fn server_outcome(&mut self, now: Instant, server: NodeId, ok: bool) {
        let node = &mut *self.0;
        (node.selector).server_outcome(now, server, ok, node.records.discovery.rings());
    }

    fn members(&mut self, filter: Option<FilterId>) -> Vec<NodeId> {
        Among::of(self.0.records.discovery.rings(), filter).members()
    }

    fn output(&mut self, output: RpcOutput) {
        self.0.out.queue.push_back(Output::Rpc(output));
    }

    fn next_input(&mut self) -> Option<RpcInput> {
        self.0.out.rpc.pop_front()
    }
}
