//! Single-threaded mio driver for [`switchboard_core`], for applications that own their event
//! loop.
//!
//! A [`MioNode`] is one switchboard node — the core `Node`, its TCP listener and links, and
//! optionally its embedded-registry client — on one `mio::Poll`: its own
//! ([`MioNode::bind`]), or the application's ([`MioNode::embed`], see
//! [Embedding](#embedding-in-the-applications-poll)). A node that owns its poll is driven
//! by the application calling
//! [`MioNode::run_once`] from its own loop (a game server once per frame): it waits for socket
//! readiness for at most the given timeout and at most until the core's next deadline, feeds
//! each readiness event to the core as one `handle_*` call (an accepted connection, a finished
//! dial, a chunk of bytes, an end of stream), drains `poll_output` into socket operations
//! (non-blocking dials, buffered writes, closes) and returns. Received messages, outcomes and
//! notices wait in [`MioNode::poll_event`]. It speaks the same TCP framing and registry-client
//! protocol as `switchboard-tokio`, so both kinds of node join one cluster.
//!
//! No routing, retry or queueing decision lives here — those are the core's. Time enters in
//! one place, [`clock::Clock`]. Memory is bounded: each connection's unwritten bytes are
//! capped at [`MAX_OUT_BUFFER`] (past it the peer is not reading; the link is closed and the
//! core re-routes or fails its messages as for any lost link), and while
//! [`EVENT_CAPACITY`] events wait untaken the node stops reading its links. Addresses are
//! IP literals (`atcp://127.0.0.1:4100`): the driver never blocks on a name lookup.
//!
//! # Example: a node on its own poll
//!
//! Two nodes without a registry: the leaf knows its upstream's address from its config and
//! sends it one message; one thread drives both loops in turn.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use bytes::Bytes;
//! use switchboard_core::{config::Config, ids::NodeId, select::Select, outcome::Outcome};
//! use switchboard_mio::{AppEvent, MioNode};
//!
//! let any_port = "127.0.0.1:0".parse()?;
//! let mut proxy = MioNode::bind(Config::new(NodeId(1), "proxy"), any_port, None)?;
//! let mut config = Config::new(NodeId(2), "leaf");
//! config.upstream = NodeId(1);
//! config.upstream_address = format!("atcp://{}", proxy.local_addr());
//! let mut leaf = MioNode::bind(config, any_port, None)?;
//!
//! let msg = leaf.send(Select::Node(NodeId(1)), 7, Bytes::from_static(b"hello"))?;
//! let (mut received, mut outcome) = (None, None);
//! for _ in 0..1_000 {
//!     leaf.run_once(Some(Duration::from_millis(5)))?;
//!     proxy.run_once(Some(Duration::from_millis(5)))?;
//!     while let Some(event) = proxy.poll_event() {
//!         if let AppEvent::Received { from, payload, .. } = event {
//!             received = Some((from, payload));
//!         }
//!     }
//!     while let Some(event) = leaf.poll_event() {
//!         if let AppEvent::Outcome { msg: m, outcome: o } = event {
//!             assert_eq!(m, msg);
//!             outcome = Some(o);
//!         }
//!     }
//!     if received.is_some() && outcome.is_some() {
//!         break;
//!     }
//! }
//! assert_eq!(received, Some((NodeId(2), Bytes::from_static(b"hello"))));
//! assert_eq!(outcome, Some(Outcome::Delivered));
//! leaf.shutdown()?;
//! proxy.shutdown()?;
//! # Ok(())
//! # }
//! ```
//!
//! # Embedding in the application's poll
//!
//! An application with its own `mio::Poll` gives each node the poll's
//! [`Registry`](mio::Registry) and a [`TokenRange`] of its own — tokens the application
//! itself does not use. Its loop then waits for at most the nodes'
//! [`poll_timeout`](MioNode::poll_timeout) (or until their
//! [`next_timeout`](MioNode::next_timeout)), passes every event whose token a node
//! [`owns`](MioNode::owns) to that node's [`handle_event`](MioNode::handle_event), handles
//! the others itself, and calls every node's [`process`](MioNode::process) after every
//! poll (it fires timers and writes what was queued). [`MioNode::run_once`] is exactly this
//! loop body on a node's own poll. An embedded node's sockets and timers are all the
//! application's loop needs to know: the routing stays in the core.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::{sync::Arc, time::Duration};
//! use bytes::Bytes;
//! use mio::{Events, Poll, Token, Waker};
//! use switchboard_core::{config::Config, ids::NodeId, select::Select};
//! use switchboard_mio::{AppEvent, MioNode, TokenRange};
//!
//! const WAKER: Token = Token(0); // the application's own source
//! let mut poll = Poll::new()?;
//! let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
//! let any_port = "127.0.0.1:0".parse()?;
//! let proxy_tokens = TokenRange::new(Token(100), 100); // tokens 100..200
//! let mut proxy = MioNode::embed(
//!     Config::new(NodeId(1), "proxy"), any_port, None, poll.registry(), proxy_tokens,
//! )?;
//! let mut config = Config::new(NodeId(2), "leaf");
//! config.upstream = NodeId(1);
//! config.upstream_address = format!("atcp://{}", proxy.local_addr());
//! let leaf_tokens = TokenRange::new(Token(200), 100); // tokens 200..300
//! let mut leaf = MioNode::embed(config, any_port, None, poll.registry(), leaf_tokens)?;
//!
//! leaf.send(Select::Node(NodeId(1)), 7, Bytes::from_static(b"hello"))?;
//! waker.wake()?; // say another thread of the application woke the loop
//! let mut events = Events::with_capacity(256);
//! let (mut woken, mut received) = (false, None);
//! for _ in 0..1_000 {
//!     let timeout = [leaf.poll_timeout(), proxy.poll_timeout()]
//!         .into_iter()
//!         .flatten()
//!         .fold(Duration::from_millis(5), Duration::min);
//!     poll.poll(&mut events, Some(timeout))?;
//!     for event in &events {
//!         match event.token() {
//!             WAKER => woken = true,
//!             token if leaf.owns(token) => leaf.handle_event(event),
//!             token if proxy.owns(token) => proxy.handle_event(event),
//!             _ => {}
//!         }
//!     }
//!     leaf.process();
//!     proxy.process();
//!     while let Some(event) = proxy.poll_event() {
//!         if let AppEvent::Received { from, payload, .. } = event {
//!             received = Some((from, payload));
//!         }
//!     }
//!     while leaf.poll_event().is_some() {}
//!     if received.is_some() {
//!         break;
//!     }
//! }
//! assert!(woken);
//! assert_eq!(received, Some((NodeId(2), Bytes::from_static(b"hello"))));
//! # Ok(())
//! # }
//! ```

pub mod clock;
mod conn;
mod driver;
mod node;
mod rpc;
mod tokens;

pub use conn::MAX_OUT_BUFFER;
pub use driver::{CONNECT_TIMEOUT, EVENT_CAPACITY};
pub use node::{AppEvent, BindError, MioNode, SHUTDOWN_FLUSH};
pub use switchboard_core;
pub use tokens::TokenRange;
