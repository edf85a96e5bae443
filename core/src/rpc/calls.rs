//! The caller's side: every call this node made that has no outcome yet, the method it
//! waits on (grace), the request message carrying it, and its one deadline in a keyed timer
//! queue.

use alloc::{
    collections::{BTreeMap, BTreeSet},
    string::String,
    vec::Vec,
};

use bytes::Bytes;
use foldhash::fast::FixedState;
use hashbrown::HashMap;

use super::CallId;
use crate::select::Select;
use crate::{
    ids::{MsgId, NodeId},
    ring::FilterId,
    time::Instant,
    timer::TimerQueue,
};

/// Where a call stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallState {
    /// No server picked: waiting for one to appear (the grace).
    Waiting,
    /// The request went to `server` as the message `msg`.
    Sent {
        /// The server.
        server: NodeId,
        /// The request's message on the bus.
        msg: MsgId,
        /// Whether the server acknowledged the request (it reached the server's node).
        delivered: bool,
        /// The server incarnation that acknowledged it (0 before, or when not known).
        server_incarnation: u64,
        /// When the request was handed to the outbox (its latency runs from here:
        /// `latency.rs`).
        sent_at: Instant,
    },
    /// Between attempts: backing off before a retry, or its own attempt ended while its
    /// hedge is still out ([`super::retry`], [`super::hedge`]). Its timer is its deadline.
    Idle,
}

/// One call without an outcome.
#[derive(Clone, Debug)]
pub(crate) struct Call {
    /// The method.
    pub(crate) method: String,
    /// How its server is chosen.
    pub(crate) select: Select,
    /// The arguments.
    pub(crate) payload: Bytes,
    /// The metadata its request carries.
    pub(crate) metadata: super::CallMetadata,
    /// The method's filter ring.
    pub(crate) filter: FilterId,
    /// When the call ends whatever happens.
    pub(crate) deadline: Instant,
    /// When a call still waiting for a server ends `NotAvailable` (never after `deadline`).
    pub(crate) grace_deadline: Instant,
    /// Where it stands.
    pub(crate) state: CallState,
    /// Servers its request provably never reached, not to be picked again.
    pub(crate) tried: Vec<NodeId>,
    /// Why its last request provably never reached its server: what it ends with when no
    /// other server is left (`None`: it never had one, so it waits within the grace). A
    /// `NotServed` refusal waits within the grace too (the server may be starting to serve
    /// the method, and is tried again when its record changes) and is what the call ends
    /// with at the grace deadline.
    pub(crate) failure: Option<crate::outcome::FailReason>,
    /// Retries and hedging of this call ([`super::hedge`]).
    pub(crate) attempts: super::hedge::Attempts,
}

/// Every open call of this node.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    /// By id (hashed, keys are ours; the passes that need an order sort).
    calls: HashMap<CallId, Call, FixedState>,
    next_id: u64,
    /// Each open call's next deadline: the grace deadline while waiting, else its deadline.
    timers: TimerQueue<CallId>,
    /// Calls waiting for a server, by method.
    waiting: BTreeMap<String, BTreeSet<CallId>>,
    /// The call each request message carries (never iterated: hashed, keys are ours).
    by_msg: HashMap<MsgId, CallId, FixedState>,
    /// How many calls are sent to each server (the outstanding count of least-outstanding
    /// selection).
    by_server: BTreeMap<NodeId, u32>,
}

impl Calls {
    /// A fresh call id.
    pub(crate) fn next_id(&mut self) -> CallId {
        self.next_id += 1;
        CallId(self.next_id)
    }

    /// Opens `call` as `id`, in state [`CallState::Waiting`] (it is not yet registered as
    /// waiting: [`wait`](Self::wait) or [`sent`](Self::sent) says where it goes and arms its
    /// timer; or it is closed at once).
    pub(crate) fn open(&mut self, id: CallId, call: Call) {
        self.calls.insert(id, call);
    }

    /// The open call `id`.
    pub(crate) fn get(&self, id: CallId) -> Option<&Call> {
        self.calls.get(&id)
    }

    /// The open call `id`, to change its retry and hedging state.
    pub(crate) fn get_mut(&mut self, id: CallId) -> Option<&mut Call> {
        self.calls.get_mut(&id)
    }

    /// `id`'s attempt ended (its request, if one was out, is forgotten; its server, if
    /// `tried`, joins the call's `tried` list): the call is [`CallState::Idle`] until its
    /// retry or its hedge's end, its timer is its deadline.
    pub(crate) fn idle(&mut self, id: CallId, tried: bool) {
        let Some(mut call) = self.calls.remove(&id) else {
            return;
        };
        self.unlist(id, &call);
        if let CallState::Sent { server, .. } = call.state
            && tried
            && !call.tried.contains(&server)
        {
            call.tried.push(server);
        }
        call.state = CallState::Idle;
        self.timers.replace(id, call.deadline);
        self.calls.insert(id, call);
    }

    /// `call` (`id`) leaves the waiting list and the request indexes.
    fn unlist(&mut self, id: CallId, call: &Call) {
        if let Some(ids) = self.waiting.get_mut(&call.method) {
            ids.remove(&id);
            if ids.is_empty() {
                self.waiting.remove(&call.method);
            }
        }
        if let CallState::Sent { server, msg, .. } = call.state {
            self.by_msg.remove(&msg);
            forget(&mut self.by_server, server);
        }
    }

    /// Open calls.
    pub(crate) fn len(&self) -> usize {
        self.calls.len()
    }

    /// Every open call id, in order.
    pub(crate) fn ids(&self) -> Vec<CallId> {
        let mut ids: Vec<CallId> = self.calls.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// `id` waits for a server of its method until its grace deadline.
    pub(crate) fn wait(&mut self, id: CallId) {
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        call.state = CallState::Waiting;
        self.waiting
            .entry(call.method.clone())
            .or_default()
            .insert(id);
        self.timers
            .replace(id, call.grace_deadline.min(call.deadline));
    }

    /// The calls waiting for a server of `method`, oldest first.
    pub(crate) fn waiting_for(&self, method: &str) -> Vec<CallId> {
        self.waiting
            .get(method)
            .map(|ids| ids.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Whether any call waits for a server.
    pub(crate) fn any_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// `id`'s request went to `server` as `msg` at `now`: its timer is the grace deadline
    /// while that is ahead (a request still queued then is given up unsent), else the
    /// deadline.
    pub(crate) fn sent(&mut self, id: CallId, server: NodeId, msg: MsgId, now: Instant) {
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        if let Some(ids) = self.waiting.get_mut(&call.method) {
            ids.remove(&id);
            if ids.is_empty() {
                self.waiting.remove(&call.method);
            }
        }
        call.state = CallState::Sent {
            server,
            msg,
            delivered: false,
            server_incarnation: 0,
            sent_at: now,
        };
        self.by_msg.insert(msg, id);
        *self.by_server.entry(server).or_default() += 1;
        let timer = if now < call.grace_deadline {
            call.grace_deadline
        } else {
            call.deadline
        };
        self.timers.replace(id, timer);
    }

    /// Re-arms `id`'s timer for `at` (its deadline, after the grace timer found its request
    /// on its way).
    pub(crate) fn rearm(&mut self, id: CallId, at: Instant) {
        if self.calls.contains_key(&id) {
            self.timers.replace(id, at);
        }
    }

    /// The call whose request is `msg`.
    pub(crate) fn of_msg(&self, msg: MsgId) -> Option<CallId> {
        self.by_msg.get(&msg).copied()
    }

    /// `msg` (a request) was acknowledged by `server_incarnation`: the request is at the
    /// server; the message is done.
    pub(crate) fn delivered(&mut self, msg: MsgId, server_incarnation: u64) {
        let Some(id) = self.by_msg.remove(&msg) else {
            return;
        };
        if let Some(Call {
            state:
                CallState::Sent {
                    delivered,
                    server_incarnation: inc,
                    ..
                },
            ..
        }) = self.calls.get_mut(&id)
        {
            *delivered = true;
            *inc = server_incarnation;
        }
    }

    /// `id`'s request provably never reached `server` (or was refused there unexecuted),
    /// for `reason`: the server joins the call's `tried` list and the call is back to no
    /// server (the caller picks again or ends it with `reason`).
    pub(crate) fn tried(&mut self, id: CallId, server: NodeId, reason: crate::outcome::FailReason) {
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        if let CallState::Sent { msg, .. } = call.state {
            self.by_msg.remove(&msg);
            forget(&mut self.by_server, server);
        }
        call.tried.push(server);
        call.failure = Some(reason);
        call.state = CallState::Waiting;
    }

    /// `server` published a record serving the call's method again: it may be tried again.
    pub(crate) fn untry(&mut self, id: CallId, server: NodeId) {
        if let Some(call) = self.calls.get_mut(&id) {
            call.tried.retain(|&tried| tried != server);
        }
    }

    /// Calls sent to `server`, in id order (a pass over the open calls: this is asked on
    /// evidence of a server's death, not per call).
    pub(crate) fn sent_to(&self, server: NodeId) -> Vec<CallId> {
        if !self.by_server.contains_key(&server) {
            return Vec::new();
        }
        let mut ids: Vec<CallId> = self
            .calls
            .iter()
            .filter(
                |(_, call)| matches!(call.state, CallState::Sent { server: s, .. } if s == server),
            )
            .map(|(&id, _)| id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Servers with calls of this node outstanding.
    pub(crate) fn server_count(&self) -> usize {
        self.by_server.len()
    }

    /// Calls of this node outstanding at `server`.
    pub(crate) fn outstanding(&self, server: NodeId) -> u32 {
        self.by_server.get(&server).copied().unwrap_or(0)
    }

    /// Closes `id` (its outcome is being reported) and returns it.
    pub(crate) fn close(&mut self, id: CallId) -> Option<Call> {
        let call = self.calls.remove(&id)?;
        self.timers.cancel(id);
        self.unlist(id, &call);
        Some(call)
    }

    /// The earliest call deadline.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.timers.next_deadline()
    }

    /// A call whose timer is due at `now`, if any (its timer is disarmed).
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<CallId> {
        self.timers.pop_expired(now).map(|(id, _)| id)
    }
}

/// One call fewer sent to `server`.
fn forget(by_server: &mut BTreeMap<NodeId, u32>, server: NodeId) {
    if let Some(count) = by_server.get_mut(&server) {
        *count -= 1;
        if *count == 0 {
            by_server.remove(&server);
        }
    }
}
