//! Calls by method, replies, grace, fast-fail and broadcast (ARCHITECTURE §11): a machine of
//! its own (`Rpc`, `machine.rs`), a sibling of the link machine and the connector. The
//! [`Node`](crate::node::Node) composes it: it routes the machine's inputs to it where they
//! arise (RPC frames from the link layer, outcomes of its messages, evidence of death) and
//! applies its effects through an `RpcHost` (send these bytes to this node by this
//! deadline, withdraw, hand this output to the application).
//!
//! A node *serves* methods by name; the set is published in its discovery record as one
//! metadata label per method ([`method_label`]: `rpc.switchboard/<method>` = `serve`), which a
//! libatapp node decodes like any other label, so every registry backend carries it and the
//! servers of a method form a [`Filter`] with its own incremental
//! ring. A *call* ([`CallSpec`]) picks one server of its method ([`Select`], [`crate::select`]); its request,
//! reply, refusal and cancel are [`wire::RpcMessage`](crate::wire::RpcMessage)s riding the
//! acknowledged bus stream as `Data` of the reserved type [`RPC_MSG_TYPE`](crate::wire::RPC_MSG_TYPE).
//! Every call ends in exactly one [`CallOutcome`]:
//!
//! - `Reply(bytes)` — the handler answered (application errors travel inside, as data);
//! - `Failed(reason)` — provably never executed: `NotAvailable` (no server within the
//!   grace), `SelfCall`, `QueueFull`, `Timeout` before transmission, `Shutdown`, `Expired`
//!   (the server refused it, its budget spent), `NotServed` (the server refused it: it does
//!   not serve the method, and no other server was left), `Cancelled` before transmission;
//! - `Unknown(reason)` — may have executed: `TargetGone`, `TargetRestarted`, `Timeout`
//!   after transmission, `Cancelled` after transmission.
//!
//! The rules, each tested on virtual time in `core/tests/rpc_*.rs`:
//!
//! 1. **Grace without polling.** A call with no server waits, registered under its method;
//!    only a discovery record that serves the method looks again (on the tick it arrives),
//!    and the grace deadline is one keyed timer: `NotAvailable` exactly then, no lookups in
//!    between ([`RpcStats::lookups`]). A request still queued at the caller at the grace
//!    deadline (its server known but never reachable) is taken back and ends
//!    `NotAvailable` too.
//! 2. **Fast-fail.** Evidence of the server incarnation's death (registry delete, new
//!    incarnation, a relay's notice, a refused redial, stopped heartbeats) ends its calls on
//!    the same tick: a request that may have reached it `Unknown(TargetGone)`
//!    (`TargetRestarted` when a new incarnation is known); one still queued here (provably
//!    not delivered) moves to another server at once if there is one ([`RpcStats::moved`]),
//!    else waits for a live incarnation of its server until the grace; one refused by every
//!    copy ends `Failed` or tries another server.
//! 3. **Continuity.** A link blip with the same incarnation ends nothing: the acked stream
//!    resumes and the reply arrives.
//! 4. **Deadlines travel.** The request carries its remaining budget; the server drops (and
//!    refuses with `Expired`) a request whose budget is spent on arrival, and hands its
//!    handler the local deadline ([`IncomingRequest::deadline`]); a nested call
//!    ([`CallSpec::within`]) inherits the smaller deadline. A request still queued at the
//!    caller when its deadline passes is never transmitted.
//! 5. **Exactly-once execution per incarnation.** The bus stream delivers a request once;
//!    the server also remembers the last [`DEDUP_CAPACITY`] (caller, caller incarnation, call)
//!    it handed on and drops a repeat. Replies are matched by call id; a late or duplicate one
//!    is dropped and counted ([`RpcStats::late_replies`]).
//! 6. **Self-calls** end `Failed(SelfCall)` unless `Config::rpc_allow_self_calls`.
//! 7. **Cancellation.** [`Node::cancel`](crate::node::Node::cancel) ends the call at once; the
//!    server is told (best effort, [`RpcOutput::RequestCancelled`]) and the handler's late
//!    reply is dropped.
//!
//! **Broadcast** ([`BroadcastSpec`]) sends one message per node matching the filter at the
//! moment of the call (this node skipped when asked), each on its own acknowledged stream so
//! each live incarnation gets it once, and reports one [`BroadcastDone`] when every recipient
//! has an outcome.
//!
//! # Example
//!
//! Node `b` serves `echo`, node `a` calls it; the driver is a hand-written loop whose links
//! are in-memory hand-offs (a real driver uses sockets), as in the crate docs.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use bytes::Bytes;
//! use switchboard_core::{
//!     CallOutcome, CallSpec, Config, IncomingRequest, Instant, LinkId, Node, NodeId, Output,
//!     RegistryEvent, RpcOutput, TopologyInfo,
//! };
//!
//! #[derive(Default)]
//! struct Net {
//!     links: Vec<(usize, LinkId, usize, LinkId)>,
//!     requests: Vec<IncomingRequest>,
//!     done: Vec<(switchboard_core::CallId, CallOutcome)>,
//! }
//! impl Net {
//!     fn drive(&mut self, nodes: &mut [Node; 2], now: Instant) {
//!         let mut moved = true;
//!         while moved {
//!             moved = false;
//!             for i in 0..2 {
//!                 while let Some(output) = nodes[i].poll_output() {
//!                     moved = true;
//!                     match output {
//!                         Output::Connect { link, addr, .. } => {
//!                             let j = if addr == "mem://a" { 0 } else { 1 };
//!                             let accepted = nodes[j].handle_accepted(now);
//!                             self.links.push((i, link, j, accepted));
//!                             nodes[i].handle_connected(now, link);
//!                         }
//!                         Output::Transmit { link, bytes } => {
//!                             let (to, to_link) = self.links.iter().find_map(|&(x, lx, y, ly)| {
//!                                 if (x, lx) == (i, link) { Some((y, ly)) }
//!                                 else if (y, ly) == (i, link) { Some((x, lx)) }
//!                                 else { None }
//!                             }).expect("bytes only go out on links the driver opened");
//!                             nodes[to].handle_received(now, to_link, bytes);
//!                         }
//!                         // The handler's work: here, the test answers by hand below.
//!                         Output::Rpc(RpcOutput::Request(request)) => self.requests.push(request),
//!                         Output::Rpc(RpcOutput::CallDone { call, outcome, .. }) => {
//!                             self.done.push((call, outcome));
//!                         }
//!                         _ => {} // Republish, events: publish the record again, log.
//!                     }
//!                 }
//!             }
//!         }
//!     }
//! }
//!
//! let (a, b) = (NodeId(0x201), NodeId(0x202));
//! let make = |id: NodeId, name: &str| {
//!     let mut config = Config::new(id, name);
//!     config.listen = vec![format!("mem://{name}")];
//!     config.topology_policy.allow_direct_connection = true;
//!     Node::new(config, Instant::ZERO).expect("a valid config")
//! };
//! let mut nodes = [make(a, "a"), make(b, "b")];
//! let now = Instant::from_millis(1);
//! nodes[1].serve(now, "echo")?; // b's published record now lists `echo`
//!
//! // The registry tells both nodes about both (each node's own record, as it publishes it).
//! for i in 0..2 {
//!     let mut info = nodes[i].discovery_info();
//!     info.revision = i as u64 + 1;
//!     let topo = TopologyInfo {
//!         id: info.id, name: info.name.clone(), revision: info.revision,
//!         ..TopologyInfo::default()
//!     };
//!     for node in &mut nodes {
//!         node.handle_registry(now, RegistryEvent::TopologyPut(topo.clone().into()));
//!         node.handle_registry(now, RegistryEvent::DiscoveryPut(info.clone().into()));
//!     }
//! }
//! let mut net = Net::default();
//! net.drive(&mut nodes, now);
//!
//! let call = nodes[0].call(now, CallSpec::new("echo", Bytes::from_static(b"ping")))?;
//! net.drive(&mut nodes, now);
//! let request = net.requests.pop().expect("the request reached b's handler");
//! assert_eq!((request.from, &request.payload[..]), (a, &b"ping"[..]));
//! nodes[1].reply(now, request.request, Bytes::from_static(b"pong"))?;
//! net.drive(&mut nodes, now);
//! assert_eq!(net.done, [(call, CallOutcome::Reply(Bytes::from_static(b"pong")))]);
//! # Ok(())
//! # }
//! ```

mod broadcast;
mod calls;
mod hedge;
mod input;
mod latency;
mod machine;
mod metadata;
pub mod retry;
mod server_outcome;
mod serving;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod machine_tests;

#[cfg(test)]
mod retry_tests;

#[cfg(test)]
mod hedge_tests;

#[cfg(test)]
mod metadata_tests;

use alloc::{string::String, vec::Vec};

use bytes::Bytes;

pub(crate) use broadcast::Broadcasts;
pub(crate) use calls::{Call, CallState, Calls};
pub use latency::{LATENCY_METHODS, LATENCY_MIN_SAMPLES, LATENCY_WINDOW};
#[cfg(test)]
pub(crate) use machine::RpcSettings;
pub(crate) use machine::{Rpc, RpcHost, RpcInput};
pub use metadata::{CallMetadata, MetadataError};
pub(crate) use serving::Serving;

use crate::{
    discovery::{Filter, Metadata},
    ids::NodeId,
    outcome::FailReason,
    select::Select,
    time::{Duration, Instant},
};

/// Requests remembered per server for duplicate detection, oldest forgotten first.
pub const DEDUP_CAPACITY: usize = 65_536;

/// Longest method name, in bytes.
pub const MAX_METHOD_LEN: usize = 128;

/// Prefix of the metadata label that says a node serves a method.
pub const METHOD_LABEL_PREFIX: &str = "rpc.switchboard/";

/// Value of a method label.
pub const METHOD_LABEL_VALUE: &str = "serve";

/// The metadata label key that says a node serves `method`.
#[must_use]
pub fn method_label(method: &str) -> String {
    let mut key = String::with_capacity(METHOD_LABEL_PREFIX.len() + method.len());
    key.push_str(METHOD_LABEL_PREFIX);
    key.push_str(method);
    key
}

/// The filter matching the servers of `method`.
#[must_use]
pub fn servers_of(method: &str) -> Filter {
    let mut metadata = Metadata::default();
    metadata
        .labels
        .insert(method_label(method), METHOD_LABEL_VALUE.into());
    Filter(metadata)
}

/// The methods a discovery record's metadata says its node serves.
pub fn served_methods(metadata: &Metadata) -> impl Iterator<Item = &str> + '_ {
    metadata.labels.iter().filter_map(|(key, value)| {
        key.strip_prefix(METHOD_LABEL_PREFIX)
            .filter(|_| value == METHOD_LABEL_VALUE)
    })
}

/// Whether `method` is a valid method name: 1 to [`MAX_METHOD_LEN`] bytes of ASCII letters,
/// digits and `._-:`.
#[must_use]
pub fn is_valid_method(method: &str) -> bool {
    !method.is_empty()
        && method.len() <= MAX_METHOD_LEN
        && method
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b':'))
}

/// A call's id, unique in its caller's incarnation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallId(pub u64);

/// An incoming request's id at its server: what `reply` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// A broadcast's id at its sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BroadcastId(pub u64);

/// What a call asks for. Build it with [`CallSpec::new`] and the setters.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallSpec {
    /// The method.
    pub method: String,
    /// How the server is chosen among the method's servers.
    pub select: Select,
    /// The arguments, handed to the handler byte for byte.
    pub payload: Bytes,
    /// The call's budget from the call; `None` = `Config::rpc_call_timeout`.
    pub timeout: Option<Duration>,
    /// How long to wait for a server to appear; `None` = `Config::rpc_grace`. Never beyond
    /// the deadline.
    pub grace: Option<Duration>,
    /// The request this call is made on behalf of: the call's deadline is never later than
    /// that request's.
    pub parent: Option<RequestId>,
    /// What the handler reads in [`IncomingRequest::metadata`] (trace context, ...).
    pub metadata: CallMetadata,
    /// Whether the call may run more than once: retried after any failed attempt (not
    /// only one proven unexecuted), and allowed to hedge ([`retry`]).
    pub idempotent: bool,
    /// When to send a second request to another server if no reply came by then
    /// (idempotent calls only): a fixed delay or the method's p95; `None`: no hedge.
    pub hedge_after: Option<HedgeAfter>,
    /// Most attempts, the first included; `None` = `Config::rpc_retry.max_attempts`.
    pub max_attempts: Option<u32>,
}

impl CallSpec {
    /// A call of `method` with `payload`, round robin, the configured timeout and grace.
    #[must_use]
    pub fn new(method: impl Into<String>, payload: Bytes) -> CallSpec {
        CallSpec {
            method: method.into(),
            select: Select::RoundRobin,
            payload,
            timeout: None,
            grace: None,
            parent: None,
            metadata: CallMetadata::new(),
            idempotent: false,
            hedge_after: None,
            max_attempts: None,
        }
    }

    /// Chooses the server with `select`.
    #[must_use]
    pub fn select(mut self, select: Select) -> CallSpec {
        self.select = select;
        self
    }

    /// Sets the call's budget.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> CallSpec {
        self.timeout = Some(timeout);
        self
    }

    /// Sets how long the call waits for a server to appear.
    #[must_use]
    pub fn grace(mut self, grace: Duration) -> CallSpec {
        self.grace = Some(grace);
        self
    }

    /// Makes the call on behalf of `request` (it inherits the smaller deadline).
    #[must_use]
    pub fn within(mut self, request: RequestId) -> CallSpec {
        self.parent = Some(request);
        self
    }

    /// Sends `metadata` with the request, for the handler.
    #[must_use]
    pub fn metadata(mut self, metadata: CallMetadata) -> CallSpec {
        self.metadata = metadata;
        self
    }

    /// Marks the call idempotent (it may run more than once): see [`retry`].
    #[must_use]
    pub fn idempotent(mut self, idempotent: bool) -> CallSpec {
        self.idempotent = idempotent;
        self
    }

    /// Hedges the call after `delay` without a reply (idempotent calls only):
    /// [`HedgeAfter::Delay`].
    #[must_use]
    pub fn hedge_after(mut self, delay: Duration) -> CallSpec {
        self.hedge_after = Some(HedgeAfter::Delay(delay));
        self
    }

    /// Hedges the call after the p95 of its method's recent latency without a reply
    /// (idempotent calls only): [`HedgeAfter::MethodP95`].
    #[must_use]
    pub fn hedge_at_method_p95(mut self) -> CallSpec {
        self.hedge_after = Some(HedgeAfter::MethodP95);
        self
    }

    /// At most `attempts` attempts (1: no retry).
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> CallSpec {
        self.max_attempts = Some(attempts);
        self
    }
}

/// When a hedged call sends its second request, to another server, if no reply came by
/// then: that long after the call's request (after each retry's, while the call was not
/// hedged yet). See [`CallSpec::hedge_after`], [`CallSpec::hedge_at_method_p95`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HedgeAfter {
    /// A fixed delay.
    Delay(Duration),
    /// The p95 of the method's recent latency as this node measures it (tower's `Hedge`,
    /// Finagle's backup requests): the nearest-rank 95th percentile of the last
    /// [`LATENCY_WINDOW`] replies of the method's calls, each attempt from its own request
    /// to its reply. While fewer than [`LATENCY_MIN_SAMPLES`] replies are in, the call does
    /// not hedge (it runs as without hedging). A node tracks the first
    /// [`LATENCY_METHODS`] methods called with this option; a later method is never
    /// tracked, so its calls never hedge. About 1 KiB per tracked method.
    MethodP95,
}

/// How a call ended. Exactly one per [`CallId`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallOutcome {
    /// The handler answered with these bytes.
    Reply(Bytes),
    /// The call was provably never executed.
    Failed(FailReason),
    /// The call may or may not have been executed.
    Unknown(FailReason),
}

impl CallOutcome {
    /// The outcome class in metrics and reports: `reply`, `failed` or `unknown`.
    #[must_use]
    pub const fn class(&self) -> &'static str {
        match self {
            CallOutcome::Reply(_) => "reply",
            CallOutcome::Failed(_) => "failed",
            CallOutcome::Unknown(_) => "unknown",
        }
    }

    /// Why the call did not get a reply (`None` for a reply).
    #[must_use]
    pub const fn reason(&self) -> Option<FailReason> {
        match self {
            CallOutcome::Reply(_) => None,
            CallOutcome::Failed(reason) | CallOutcome::Unknown(reason) => Some(*reason),
        }
    }
}

/// A request for one of this node's methods: hand it to the method's handler and answer
/// with [`Node::reply`](crate::node::Node::reply).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct IncomingRequest {
    /// What `reply` answers.
    pub request: RequestId,
    /// The calling node.
    pub from: NodeId,
    /// The method.
    pub method: String,
    /// The arguments, byte for byte as the caller gave them.
    pub payload: Bytes,
    /// The caller's metadata, byte for byte as it sent it (empty when none).
    pub metadata: CallMetadata,
    /// When the caller stops waiting (arrival + the budget the request carried): a reply
    /// after it is dropped here, and a nested call made `within` this request ends by then.
    pub deadline: Instant,
}

/// What a broadcast asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BroadcastSpec {
    /// The recipients: every node of the discovery set matching it (`None` = every node).
    pub filter: Option<Filter>,
    /// The application message type each recipient receives.
    pub msg_type: u32,
    /// The payload each recipient receives.
    pub payload: Bytes,
    /// Whether this node leaves itself out.
    pub skip_self: bool,
    /// The broadcast's budget: a recipient that has not acknowledged it by then is given up
    /// (failed if its copy provably never left, unknown if it may have arrived) and the
    /// report comes at that instant at the latest. `None` = `Config::message_timeout`.
    pub timeout: Option<Duration>,
}

impl BroadcastSpec {
    /// A broadcast of `payload` as `msg_type` to every node matching `filter`, this node
    /// skipped.
    #[must_use]
    pub fn new(filter: Option<Filter>, msg_type: u32, payload: Bytes) -> BroadcastSpec {
        BroadcastSpec {
            filter,
            msg_type,
            payload,
            skip_self: true,
            timeout: None,
        }
    }

    /// Sets the broadcast's budget.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> BroadcastSpec {
        self.timeout = Some(timeout);
        self
    }
}

/// How a broadcast ended: every recipient once, in one of three lists.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BroadcastDone {
    /// The broadcast.
    pub broadcast: BroadcastId,
    /// Recipients that acknowledged it, by id.
    pub delivered: Vec<NodeId>,
    /// Recipients it provably never reached, with why.
    pub failed: Vec<(NodeId, FailReason)>,
    /// Recipients it may have reached, with why it was given up.
    pub unknown: Vec<(NodeId, FailReason)>,
}

/// What the RPC layer asks of the driver or reports to it ([`Output::Rpc`](crate::node::Output::Rpc)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RpcOutput {
    /// A request for a method this node serves: run the handler, answer with `reply`.
    Request(IncomingRequest),
    /// The caller cancelled (or its budget ran out for) a request handed out before: its
    /// reply is no longer wanted (`reply` will return an error); stop the handler if you can.
    RequestCancelled {
        /// The request.
        request: RequestId,
    },
    /// How a call ended.
    CallDone {
        /// The call.
        call: CallId,
        /// How it ended.
        outcome: CallOutcome,
        /// The server its request went to last (the one that answered, for a reply);
        /// `None` when no request was out when it ended (no server found, refused at once,
        /// cancelled or timed out before one was picked).
        server: Option<NodeId>,
        /// The metadata the handler answered with (empty unless the outcome is a reply that
        /// carried some).
        metadata: CallMetadata,
    },
    /// How a broadcast ended.
    BroadcastDone(BroadcastDone),
    /// The set of served methods changed: publish [`Node::discovery_info`](crate::node::Node::discovery_info)
    /// again on the registry (embedded: `RegistryClient::update_discovery`; etcd: rewrite the
    /// node's keys under its lease).
    Republish,
}

/// Why `call` refused a call. Nothing was accepted: no [`CallId`], no outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The method name is empty, too long or has characters outside `[A-Za-z0-9._:-]`.
    #[error("invalid method name")]
    InvalidMethod,
    /// The request would not fit a frame.
    #[error("payload of {len} bytes exceeds the limit of {max}")]
    PayloadTooLarge {
        /// The payload length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The node was shut down.
    #[error("the node is shut down")]
    Shutdown,
    /// `hedge_after` on a call not marked idempotent: a hedge runs the call twice.
    #[error("only an idempotent call may be hedged")]
    HedgeNotIdempotent,
}

/// Why `reply` (or `serve`) refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// No such request is waiting: answered already, cancelled, past its deadline, or never
    /// handed out. The reply was dropped (and counted).
    #[error("no such request is waiting for a reply")]
    UnknownRequest,
    /// The reply would not fit a frame.
    #[error("payload of {len} bytes exceeds the limit of {max}")]
    PayloadTooLarge {
        /// The payload length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The method name is invalid (`serve`).
    #[error("invalid method name")]
    InvalidMethod,
}

/// Counters of the RPC layer, for metrics and for tests that prove what did *not* happen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RpcStats {
    /// Server selections made (each pick over a method's servers).
    pub lookups: u64,
    /// Calls that had to wait for a server (entered the grace).
    pub grace_waits: u64,
    /// Calls ended on evidence of their server's death before their deadline.
    pub fast_fails: u64,
    /// Calls whose request, still queued for a server found dead, moved to another server.
    pub moved: u64,
    /// Calls currently waiting for a server or for a reply.
    pub in_flight: u64,
    /// Requests handed to a handler ([`RpcOutput::Request`]).
    pub served: u64,
    /// Requests this server dropped as a repeat of one already handed on.
    pub duplicate_requests: u64,
    /// Requests this server refused because their budget was spent on arrival.
    pub expired_requests: u64,
    /// Requests whose budget from the wire exceeded `Config::max_call_budget` and was cut
    /// to it.
    pub budgets_capped: u64,
    /// Requests refused because the method is not served here.
    pub not_served: u64,
    /// Requests shed unexecuted because the method's handler was at its concurrency limit
    /// (`Node::shed`; the caller's call ends `Failed(Overloaded)`).
    pub overloaded: u64,
    /// Replies (or refusals) that arrived for no waiting call: late or duplicate.
    pub late_replies: u64,
    /// Handler replies dropped here because the request was cancelled or past its deadline.
    pub dropped_replies: u64,
    /// RPC messages that did not decode.
    pub bad_messages: u64,
    /// Broadcasts started.
    pub broadcasts: u64,
    /// Retries made (after a backoff; [`retry`]).
    pub retries: u64,
    /// Hedge requests sent.
    pub hedges: u64,
    /// Retries and hedges not made for want of retry budget.
    pub budget_exhausted: u64,
    /// Losing attempts of hedged calls withdrawn or cancelled when the other won.
    pub hedge_cancels: u64,
}
