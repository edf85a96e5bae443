//! Calls by method, serving and broadcast on a [`MioNode`]: thin calls into the core with
//! the node's clock; requests, call outcomes and broadcast reports come back as
//! [`AppEvent::Rpc`](crate::AppEvent::Rpc) events.

use bytes::Bytes;
use switchboard_core::{
    BroadcastId, BroadcastSpec, CallError, CallId, CallSpec, ReplyError, RequestId,
    node::SendError, registry::RegistryEvent, time::Instant,
};

use crate::MioNode;

impl MioNode {
    /// Serves `method`: the node's record lists it (published again on the registry) and
    /// its requests arrive as `AppEvent::Rpc(RpcOutput::Request(..))`. Returns whether the
    /// set of served methods changed.
    ///
    /// # Errors
    ///
    /// An invalid method name.
    pub fn serve(&mut self, method: &str) -> Result<bool, ReplyError> {
        let now = self.clock.now();
        let changed = self.node.serve(now, method)?;
        self.drain(now);
        Ok(changed)
    }

    /// Stops serving `method`; returns whether it was served.
    pub fn unserve(&mut self, method: &str) -> bool {
        let now = self.clock.now();
        let changed = self.node.unserve(now, method);
        self.drain(now);
        changed
    }

    /// Calls a method on one of its servers; the outcome follows as
    /// `AppEvent::Rpc(RpcOutput::CallDone { call, .. })`.
    ///
    /// # Errors
    ///
    /// The core refused the call; nothing was sent and no outcome follows.
    pub fn call(&mut self, spec: CallSpec) -> Result<CallId, CallError> {
        let now = self.clock.now();
        let call = self.node.call(now, spec)?;
        self.drain(now);
        Ok(call)
    }

    /// Answers a request handed out as `RpcOutput::Request`.
    ///
    /// # Errors
    ///
    /// The core no longer takes an answer (cancelled, expired, answered).
    pub fn reply(&mut self, request: RequestId, payload: Bytes) -> Result<(), ReplyError> {
        let now = self.clock.now();
        let result = self.node.reply(now, request, payload);
        self.drain(now);
        result
    }

    /// Cancels a call; returns whether it was still running (its `CallDone` follows).
    pub fn cancel(&mut self, call: CallId) -> bool {
        let now = self.clock.now();
        let running = self.node.cancel(now, call);
        self.drain(now);
        running
    }

    /// Sends one message to every node matching the spec's filter; the report follows as
    /// `AppEvent::Rpc(RpcOutput::BroadcastDone(..))`.
    ///
    /// # Errors
    ///
    /// The core refused the broadcast; nothing was sent.
    pub fn broadcast(&mut self, spec: BroadcastSpec) -> Result<BroadcastId, SendError> {
        let now = self.clock.now();
        let id = self.node.broadcast(now, spec)?;
        self.drain(now);
        Ok(id)
    }

    /// Publishes the node's discovery record again (its served methods changed): on the
    /// registry when there is one, else straight into its own view.
    pub(crate) fn republish(&mut self, now: Instant) {
        let info = self.node.discovery_info();
        match &mut self.registry {
            Some(registry) => registry.client.update_discovery(info),
            None => self
                .node
                .handle_registry(now, RegistryEvent::DiscoveryPut(info.into())),
        }
    }
}
