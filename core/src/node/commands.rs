//! Commands: `send` (picking the target, opening its route, handing the message to the
//! target's outbox) and `shutdown`.

use bytes::Bytes;

#[cfg(doc)]
use super::Output;
use super::{Node, SendError};
use crate::{
    discovery::Filter,
    ids::{MsgId, NodeId},
    outcome::{FailReason, Outcome},
    select::{Among, Select},
    time::Instant,
};

impl Node {
    /// Accepts a message for the node `to` selects among every node ([`crate::select`]; the
    /// message stays with that node) and returns its id; its [`Output::Outcome`] follows (at
    /// once if the route is ready, else when it is flushed, times out, or its route is
    /// removed). A message to this node itself is delivered at once ([`Output::Received`]).
    ///
    /// A message the target's queue cannot take (count or byte limit) is accepted and ends
    /// at once with `Failed(QueueFull)`.
    ///
    /// # Errors
    ///
    /// [`SendError`]: an invalid selection (id 0, empty name), a name or filter no discovery
    /// record matches, no route at all (no direct path allowed, not in the tree, no
    /// upstream), an oversized payload, or a node that was shut down. Nothing is accepted.
    pub fn send(
        &mut self,
        now: Instant,
        to: Select,
        msg_type: u32,
        payload: Bytes,
    ) -> Result<MsgId, SendError> {
        self.send_selected(now, None, &to, msg_type, payload)
    }

    /// [`send`](Self::send) to the node `to` selects among the nodes whose discovery records
    /// match `among` (the filter's ring is registered on first use — one filter pass over the
    /// default ring — and kept up to date incrementally after that).
    ///
    /// # Errors
    ///
    /// As [`send`](Self::send).
    pub fn send_among(
        &mut self,
        now: Instant,
        among: &Filter,
        to: Select,
        msg_type: u32,
        payload: Bytes,
    ) -> Result<MsgId, SendError> {
        self.send_selected(now, Some(among), &to, msg_type, payload)
    }

    /// `send` and `send_among`: the checks, the pick, the hand-off.
    #[inline(always)]
    fn send_selected(
        &mut self,
        now: Instant,
        among: Option<&Filter>,
        to: &Select,
        msg_type: u32,
        payload: Bytes,
    ) -> Result<MsgId, SendError> {
        let now = self.advance(now);
        SendError::check(self.shut_down, msg_type, payload.len())?;
        // The hot path, a node named by id, needs no pick.
        let id = match (among, to) {
            (None, &Select::Node(id)) if id.is_valid() => id,
            _ => self.pick_target(among, to)?,
        };
        let deadline = now + self.config.message_timeout;
        let sent = self.send_resolved(now, id, msg_type, payload, deadline, false);
        // Opening a route may have removed another, ending some of the RPC machine's messages.
        self.settle_rpc();
        sent
    }

    /// `send` past its checks (`rpc`: the message and its outcome are the RPC machine's).
    /// Always inlined (a plain `#[inline]` left the payload passed down three calls): the
    /// endpoint and the route record are looked up once, the link only when it may go now.
    #[inline(always)]
    pub(super) fn send_resolved(
        &mut self,
        now: Instant,
        id: NodeId,
        msg_type: u32,
        payload: Bytes,
        deadline: Instant,
        rpc: bool,
    ) -> Result<MsgId, SendError> {
        if id == self.id {
            let msg = self.msg_ids.next_for(rpc);
            self.out.deliver(self.id, self.id, msg_type, payload);
            self.out.outcome(msg, Outcome::Delivered);
            return Ok(msg);
        }
        if self.records.client_left(id) {
            let msg = self.msg_ids.next_for(rpc);
            self.out
                .outcome(msg, Outcome::Failed(FailReason::TargetGone));
            return Ok(msg);
        }
        let records = &self.records;
        let (key, existed) = (self.endpoints.open(id, || records.name_of(id), now))
            .map_err(|_| SendError::InvalidTarget)?;
        let hop = if let Some(hop) = self.connector.endpoint_hop(id) {
            hop
        } else {
            let world = self.records.world();
            match self.connector.open_route(now, &world, id) {
                Ok(()) => {
                    self.endpoints.attach_handle(key);
                }
                Err(e) => {
                    if !existed {
                        (self.endpoints).remove(key, FailReason::NoRoute, &mut self.out);
                    }
                    self.apply_effects();
                    return Err(e.into());
                }
            }
            self.apply_effects();
            self.connector.ready_hop(id)
        };
        let msg = self.msg_ids.next_for(rpc);
        let Node {
            endpoints,
            links,
            out,
            records,
            ..
        } = self;
        // Asked only when the message may go straight out (nothing queued, within limits);
        // held for a departed or leaving node's next life (`Records::holds`).
        let ready_link = || {
            hop.filter(|&hop| !records.holds(id, hop))
                .and_then(|hop| links.link_to(hop))
        };
        endpoints.send_until(key, msg, msg_type, payload, now, deadline, ready_link, out);
        Ok(msg)
    }

    /// The node `to` selects among `among` (every node when `None`), by the one
    /// [`Selector::pick`](crate::select::Selector::pick); least outstanding compares the
    /// messages queued or unacknowledged to each candidate. An unfiltered name no record
    /// holds is the member that held it if its record was deleted within the send grace.
    pub(super) fn pick_target(
        &mut self,
        among: Option<&Filter>,
        to: &Select,
    ) -> Result<NodeId, SendError> {
        if !to.is_valid() {
            return Err(SendError::InvalidTarget);
        }
        let filter = among.map(|filter| self.records.discovery.filter_handle(filter));
        let rings = (self.records.discovery).rings_for(to.reads_ring_points());
        let rings = Among::of(rings, filter);
        let endpoints = &self.endpoints;
        let load = |id: NodeId| endpoints.outstanding(id);
        (self.selector)
            .pick(to, rings, &mut self.rng, load, &[])
            .or_else(|| self.records.departed_pick(to, among.is_none()))
            .ok_or(SendError::UnknownTarget)
    }

    /// Shuts the node down: every queued message ends `Failed(Shutdown)` and every
    /// unacknowledged one `Unknown(Shutdown)` (`Failed` if it provably never arrived), every
    /// link is closed ([`Output::Close`]), every record and timer is dropped. Later calls are
    /// no-ops and `send` returns [`SendError::Shutdown`]. Leaving the registry is the
    /// driver's part: it shuts its registry client down (`RegistryClient::shutdown` says
    /// `Bye`) or revokes its etcd lease.
    pub fn shutdown(&mut self, now: Instant) {
        let now = self.advance(now);
        if self.shut_down {
            return;
        }
        self.shut_down = true;
        (self.endpoints).give_up_all(FailReason::Shutdown, &mut self.out);
        self.with_rpc(|rpc, host| rpc.shutdown(now, host));
        self.links.close_all(&mut self.out);
        self.connector.clear();
    }
}
