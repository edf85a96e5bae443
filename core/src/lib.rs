//! Sans-IO core of switchboard: the connection and routing layer of a distributed service
//! framework as pure state machines.
//!
//! Nothing in this crate performs I/O, reads a clock, spawns a thread or takes a lock. Time is
//! an argument ([`Instant`]), randomness comes from a seeded [`rng::Rng`], and every effect is
//! a value the driver acts on. Adapters (`switchboard-tokio`, `switchboard-mio`) bind it to
//! sockets and registries.
//!
//! The crate root re-exports what a driver needs: [`Node`] and its inputs and outputs
//! ([`Output`], [`Event`], [`Select`], [`SendError`], [`LinkError`], [`RegistryEvent`],
//! [`Status`]), the configuration ([`Config`], [`ConfigError`]), ids and time ([`NodeId`],
//! [`LinkId`], [`MsgId`], [`Instant`], [`Duration`]), outcomes ([`Outcome`], [`FailReason`])
//! the records nodes publish ([`DiscoveryInfo`], [`TopologyInfo`], [`Filter`]) and the call
//! vocabulary ([`CallSpec`], [`CallOutcome`], [`RpcOutput`], ...), and what configuring a
//! node takes besides plain data: cluster keys and nonce entropy ([`ClusterKey`],
//! [`NonceEntropy`], with [`AuthFailure`] / [`AuthRefusals`] for what refused proofs count)
//! and the ring's [`HashMode`].
//!
//! # Driving a node
//!
//! One way in — `handle_*` calls and the `send` / `shutdown` commands, each with `now` — and
//! one way out: after every call, drain [`Node::poll_output`] until `None` and act on each
//! [`Output`] (dial, write bytes, close, hand a message to the application, report an
//! outcome), then arm one timer at [`Node::poll_timeout`] and call `handle_timeout(now)` when
//! it fires. Every due deadline is handled by that one call;
//! spurious calls are no-ops; time going backwards is clamped.
//!
//! Below, two nodes run in one hand-written loop: "links" are in-memory byte hand-offs and
//! the registry is two events. A real driver replaces the hand-offs with sockets.
//!
//! ```
//! use std::collections::VecDeque;
//!
//! use bytes::Bytes;
//! use switchboard_core::{
//!     Config, DiscoveryInfo, Instant, LinkId, Node, NodeId, Outcome, Output, RegistryEvent,
//!     Select, TopologyInfo,
//! };
//!
//! let (a, b) = (NodeId(0x201), NodeId(0x202));
//! let make = |id: NodeId, name: &str| {
//!     let mut config = Config::new(id, name);
//!     config.listen = vec![format!("mem://{name}")];
//!     config.topology_policy.allow_direct_connection = true;
//!     Node::new(config, Instant::ZERO).expect("a valid config")
//! };
//! let mut nodes = [make(a, "a"), make(b, "b")];
//!
//! // The registry tells both nodes about both nodes (what a registry client or etcd does).
//! for (revision, (id, name)) in [(a, "a"), (b, "b")].into_iter().enumerate() {
//!     let revision = revision as u64 + 1;
//!     let info = DiscoveryInfo {
//!         id, name: name.into(), listen: vec![format!("mem://{name}")], revision,
//!         ..DiscoveryInfo::default()
//!     };
//!     let topo = TopologyInfo { id, name: name.into(), revision, ..TopologyInfo::default() };
//!     for node in &mut nodes {
//!         node.handle_registry(Instant::ZERO, RegistryEvent::TopologyPut(topo.clone().into()));
//!         node.handle_registry(Instant::ZERO, RegistryEvent::DiscoveryPut(info.clone().into()));
//!     }
//! }
//!
//! // The driver: drain outputs into actions until nothing moves. Each entry of `links` is
//! // one connection: (dialler, its link id, acceptor, its link id).
//! let mut links: Vec<(usize, LinkId, usize, LinkId)> = Vec::new();
//! let mut delivered = Vec::new();
//! let mut outcomes = Vec::new();
//! let mut drive = |nodes: &mut [Node; 2], now: Instant| loop {
//!     let mut moved = false;
//!     for i in 0..2 {
//!         while let Some(output) = nodes[i].poll_output() {
//!             moved = true;
//!             match output {
//!                 Output::Connect { link, addr, .. } => {
//!                     let j = if addr == "mem://a" { 0 } else { 1 };
//!                     let accepted = nodes[j].handle_accepted(now);
//!                     links.push((i, link, j, accepted));
//!                     nodes[i].handle_connected(now, link);
//!                 }
//!                 Output::Transmit { link, bytes } => {
//!                     let (to, to_link) = links.iter().find_map(|&(x, lx, y, ly)| {
//!                         if (x, lx) == (i, link) { Some((y, ly)) }
//!                         else if (y, ly) == (i, link) { Some((x, lx)) }
//!                         else { None }
//!                     }).expect("bytes only go out on links the driver opened");
//!                     nodes[to].handle_received(now, to_link, bytes);
//!                 }
//!                 Output::Received { from, payload, .. } => delivered.push((from, payload)),
//!                 Output::Outcome { msg, outcome } => outcomes.push((msg, outcome)),
//!                 _ => {} // Close, Event: a real driver closes sockets and logs.
//!             }
//!         }
//!     }
//!     if !moved {
//!         break;
//!     }
//! };
//!
//! let now = Instant::from_millis(1);
//! let msg = nodes[0].send(now, Select::Name("b".into()), 7, Bytes::from_static(b"hello b"))?;
//! drive(&mut nodes, now);
//! assert_eq!(delivered, [(a, Bytes::from_static(b"hello b"))]);
//! assert_eq!(outcomes, [(msg, Outcome::Delivered)]); // acknowledged by b
//!
//! // Nothing is due but the links' heartbeats, 1.5 s after their last traffic.
//! assert_eq!(nodes[0].poll_timeout(), Some(Instant::from_millis(1_501)));
//! # Ok::<(), switchboard_core::SendError>(())
//! ```
//!
//! ## One node, frame by frame
//!
//! The same contract seen from the wire: one node dials its upstream, the test plays the
//! peer's frames by hand (a `HelloAck` split in two, then the cumulative `Ack`), and
//! [`Node::inspect`] shows the message move from the queue to in flight to `Delivered`.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use bytes::Bytes;
//! use switchboard_core::{
//!     bus::handshake::PROTOCOL_VERSIONS,
//!     config::Config,
//!     ids::NodeId,
//!     node::{Node, Output},
//!     outcome::Outcome,
//!     select::Select,
//!     time::Instant,
//!     wire::{self, Decoded, Frame},
//! };
//!
//! let mut config = Config::new(NodeId(0x101), "gate-1");
//! config.upstream = NodeId(0x102);
//! config.upstream_address = "tcp://10.0.0.2:21902".into();
//! let mut node = Node::new(config, Instant::ZERO)?;
//!
//! // The node wants its upstream link at once; the driver dials and reports back.
//! let Some(Output::Connect { link, peer, addr }) = node.poll_output() else { panic!() };
//! assert_eq!((peer, addr.as_str()), (NodeId(0x102), "tcp://10.0.0.2:21902"));
//! node.handle_connected(Instant::from_millis(3), link);
//! let Some(Output::Transmit { bytes: hello, .. }) = node.poll_output() else { panic!() };
//! let Ok(Decoded::Frame(Frame::Hello(h), _)) = wire::decode(&hello, wire::DEFAULT_MAX_FRAME) else { panic!() };
//! assert_eq!((h.node, h.name, h.incarnation), (NodeId(0x101), "gate-1", node.incarnation()));
//!
//! // Until the upstream accepts the handshake, a message to it waits in its queue.
//! let msg = node.send(Instant::from_millis(4), Select::Node(NodeId(0x102)), 1, Bytes::from_static(b"hi"))?;
//! assert_eq!(node.inspect().pending(NodeId(0x102)), 1);
//! assert_eq!(node.poll_timeout(), Some(Instant::from_millis(8_004))); // its deadline
//!
//! // The peer's HelloAck arrives (in two pieces): the route is ready and the queue flushes;
//! // the message is in flight until the target acknowledges it.
//! let mut ack = Vec::new();
//! wire::encode(&Frame::HelloAck(wire::HelloAck {
//!     node: NodeId(0x102), incarnation: 42, versions: PROTOCOL_VERSIONS,
//!     name: "upstream", nonce: None, proof: None, result: Ok(()),
//! }), &mut ack)?;
//! node.handle_received(Instant::from_millis(5), link, Bytes::copy_from_slice(&ack[..6]));
//! node.handle_received(Instant::from_millis(5), link, Bytes::copy_from_slice(&ack[6..]));
//! let outputs: Vec<Output> = std::iter::from_fn(|| node.poll_output()).collect();
//! let seq = outputs.iter().find_map(|o| match o {
//!     Output::Transmit { bytes, .. } => match wire::decode(bytes, wire::DEFAULT_MAX_FRAME) {
//!         Ok(Decoded::Frame(Frame::Data(d), _)) => Some(d.seq),
//!         _ => None,
//!     },
//!     _ => None,
//! }).unwrap();
//! assert_eq!((node.inspect().pending(NodeId(0x102)), node.inspect().unacked(NodeId(0x102))), (0, 1));
//!
//! // The target's cumulative ack makes it `Delivered`.
//! let mut bytes = Vec::new();
//! let ack = wire::Ack {
//!     src: NodeId(0x101), dst: NodeId(0x102), seq, dst_incarnation: 42, reset: None,
//! };
//! wire::encode(&Frame::Ack(ack), &mut bytes)?;
//! node.handle_received(Instant::from_millis(6), link, Bytes::copy_from_slice(&bytes));
//! assert_eq!(node.poll_output(), Some(Output::Outcome { msg, outcome: Outcome::Delivered }));
//! // Next: a heartbeat if the link stays silent for `heartbeat_interval` (1.5 s).
//! assert_eq!(node.poll_timeout(), Some(Instant::from_millis(1_506)));
//! # Ok(())
//! # }
//! ```
//!
//! # Module tour
//!
//! - [`node`]: the [`Node`] facade — it composes the building blocks below behind
//!   `handle_*` / `poll_*`: transport input, sends and their honest outcomes, registry input,
//!   the registry client's wiring and the [`Status`] snapshot.
//! - [`config`]: the node's plain-data configuration, its defaults, `validate()`, and the
//!   process facts a driver fills in at start.
//! - [`time`], [`ids`], [`rng`]: the vocabulary — virtual time, typed ids, seeded randomness
//!   (and the mixing of a driver's entropy into a seed).
//! - [`outcome`]: how every accepted message ends — `Delivered`, `Failed(reason)` (provably
//!   not delivered) or `Unknown(reason)` (transmitted, never acknowledged) — and the labels
//!   metrics and reports use for them.
//! - [`discovery`]: what nodes publish (libatapp-compatible JSON), the address syntax, and the
//!   revision-gated set of known nodes, which keeps the hash rings up to date incrementally.
//! - [`topology`]: who proxies for whom; relations and next hops between nodes; the policy.
//! - [`select`]: which node a message or a call goes to — one [`Select`] (a node by id or
//!   name, hash of a key, round robin, random, least outstanding) and one pick for both, with
//!   the per-ring selection state.
//! - [`rpc`]: calls by method and broadcast — [`CallSpec`], [`CallOutcome`],
//!   [`IncomingRequest`], [`RpcOutput`] — with the grace, fast-fail, deadline, exactly-once,
//!   self-call and cancellation rules the node's `call` / `serve` / `reply` / `cancel` /
//!   `broadcast` commands follow.
//! - [`registry`]: [`RegistryEvent`], the embedded registry's server and client machines and
//!   the pure parts of the etcd backend, all producing the same events.
//! - [`wire`]: the frame codec of links and the registry protocol — encode into reused
//!   buffers, a total decoder, and stream reassembly.
//! - [`backoff`]: reconnect delays (exponential, capped, jittered) as plain numbers.
//! - [`auth`]: cluster-key authentication — [`ClusterKey`] / [`ClusterKeys`] (configured in
//!   [`Config::cluster_keys`] and the registry's configuration), the [`NonceEntropy`] a driver
//!   hands in, the [`AuthFailure`] kinds and the [`AuthRefusals`] counts it reports, and the
//!   proof itself (transcript, prove, check) for peer implementations and tests.
//! - [`ring`] and [`hash`]: the consistent-hash rings messages and calls are placed on
//!   ([`ring::Ring`], one ring per filter in [`ring::RingSet`]) and the key and point hashes,
//!   with the [`HashMode`] that picks this crate's fast hash or a libatapp-compatible one.
//! - [`timer`]: [`timer::TimerQueue`], the keyed deadline queue every deadline of the crate
//!   lives in (arm, replace, cancel by key; pop what is due).
//! - `sim` (feature `sim`): the deterministic multi-node simulator the scenario tests, fuzz
//!   targets and seed runner drive.
//!
//! # Building blocks
//!
//! The sans-IO machines the node composes are public too, documented for whoever drives or
//! measures one directly (the benches time them one by one, the fuzz targets feed them):
//! [`bus`] (the link table: handshake, heartbeats, inbound delivery with coalesced acks,
//! relaying), [`endpoint`] (one outbox per target: queued → in flight → acknowledged or given
//! up), [`connector`] (route records and the routing decision, also for relayed frames) and
//! [`perimeter`] (which routes and relays are allowed). A driver needs none of them: [`Node`]
//! and the root re-exports are the API a driver relies on, and the building blocks change as
//! the node's composition does.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

/// The evidence book of peers' deaths: a machine the node composes, not part of the API.
pub(crate) mod evidence;

/// The README's Rust blocks, compiled and run as doctests so the embedding example stays true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

pub mod auth;
pub mod backoff;
pub mod bus;
pub mod config;
pub mod connector;
pub mod discovery;
pub mod endpoint;
pub mod event;
pub mod hash;
pub mod ids;
pub mod inspect;
pub mod node;
pub mod outcome;
pub mod output;
pub mod perimeter;
pub(crate) mod records;
pub mod registry;
pub mod ring;
pub mod rng;
pub mod rpc;
pub mod secret;
pub mod select;
#[cfg(feature = "sim")]
pub mod sim;
pub mod status;
pub mod time;
pub mod timer;
pub mod topology;
pub mod wire;

pub use auth::{AuthFailure, AuthRefusals, ClusterKey, ClusterKeys, NonceEntropy};
pub use config::{Config, ConfigError};
pub use connector::{RouteEvent, RouteFlags, RouteView};
pub use discovery::{DiscoveryInfo, Filter, TopologyInfo};
pub use hash::HashMode;
pub use ids::{LinkId, MsgId, NodeId};
pub use inspect::Inspect;
pub use node::{
    EndpointStatus, Event, Evidence, LinkError, LinkStatus, Node, Output, RegistryIgnored,
    RouteStatus, SendError, Status,
};
pub use outcome::{FailReason, Outcome};
pub use registry::RegistryEvent;
pub use rpc::{
    BroadcastDone, BroadcastId, BroadcastSpec, CallError, CallId, CallMetadata, CallOutcome,
    CallSpec, HedgeAfter, IncomingRequest, MetadataError, ReplyError, RequestId, RpcOutput,
};
pub use select::Select;
pub use time::{Duration, Instant};
