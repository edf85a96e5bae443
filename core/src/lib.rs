//! Sans-IO core of switchboard: the connection and routing layer of a distributed service
//! framework as pure state machines.
//!
//! Nothing in this crate performs I/O, reads a clock, spawns a thread or takes a lock. Time is
//! an argument ([`time::Instant`]), randomness comes from a seeded [`rng::Rng`], and every
//! effect is a value the driver acts on. Adapters (`switchboard-tokio`, `switchboard-mio`) bind
//! it to sockets and registries.
//!
//! # Module tour
//!
//! - [`time`], [`ids`], [`rng`]: the vocabulary — virtual time, typed ids, seeded randomness.
//! - [`backoff`]: reconnect delays (exponential, capped, jittered) as plain numbers.
//! - [`timer`]: a keyed deadline queue where arming keeps the earlier deadline.
//! - [`topology`]: who proxies for whom; relations and next hops between nodes.
//! - [`discovery`]: what nodes publish (libatapp-compatible JSON) and the revision-gated set
//!   of known nodes, which keeps the hash rings up to date incrementally.
//! - [`hash`], [`ring`], [`select`]: consistent-hash rings (fast and libatapp-compatible
//!   modes) and target selection (hash, round robin, random, by id, by name).
//! - [`config`]: the node's plain-data configuration, its defaults and `validate()`.
//! - [`outcome`]: how every accepted message ends — `Delivered`, `Failed(reason)` (provably
//!   not delivered) or `Unknown(reason)` (transmitted, never acknowledged).
//! - [`endpoint`]: one endpoint per remote target, holding its pending queue (count and byte
//!   limits, per-message deadlines), flushed in order when a route is ready, collected when
//!   unused — failing, never dropping, what is still queued.
//! - [`connector`]: route records (`ACTIVE`, `WAIT_DISCOVERY`, `LOST_TOPOLOGY`, `READY`),
//!   the routing decision, reactions to topology, discovery and link events, reconnect
//!   timers and the ready/unready/removal cascade through proxies — pure logic returning
//!   effects.
//! - [`node`]: the `Node` facade — links, the handshake by id, v1 framing, forwarding,
//!   sends and their outcomes — behind `handle_*` / `poll_output` / `poll_timeout`.
//! - [`wire`]: the frame codec of links and the registry protocol — encode into reused
//!   buffers, a total decoder, and stream reassembly.
//!
//! The bus (acks, heartbeats) and registry clients build on these in later modules.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod backoff;
pub mod bus;
pub mod config;
pub mod connector;
pub mod discovery;
pub mod endpoint;
pub mod hash;
pub mod ids;
pub mod node;
pub mod outcome;
pub mod registry;
pub mod ring;
pub mod rng;
pub mod select;
#[cfg(feature = "sim")]
pub mod sim;
pub mod time;
pub mod timer;
pub mod topology;
pub mod wire;
