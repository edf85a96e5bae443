//! tokio driver for [`switchboard_core`].
//!
//! This crate binds the sans-IO core to tokio: one task drives a core `Node` ([`node`]) and
//! reads every link's socket itself (each read handed to the core as it is, without a copy),
//! per-link writer tasks take only what would block, and the embedded registry server and
//! client ([`registry`]) feed the core's registry input through one contract
//! ([`registry::feed`]) that the etcd backend (feature `etcd`) speaks too. The admin HTTP
//! endpoint (`admin`, feature `admin`) serves a node's metrics and its status, the core's
//! [`Status`]. The `switchboard` binary is its own package (`adapter-tokio/cli/`).
//!
//! [`clock::Clock`] is the one place wall-clock time enters the core. No routing decision
//! lives here: the adapter waits, calls one `handle_*`, drains `poll_output` into I/O and
//! re-arms its timer.
//!
//! Calls by method ([`node::rpc`]): [`NodeHandle::serve`] publishes a method and yields its
//! [`Requests`], each answered with [`Request::respond`] ([`NodeHandle::serve_bounded`] sheds
//! what is beyond a concurrency limit, [`NodeHandle::serve_service`] serves with a
//! `tower::Service`); [`NodeHandle::call`] waits for one server's reply, `Failed` (never
//! executed) or `Unknown` (may have executed), with the core's grace, fast-fail and
//! deadlines; [`NodeHandle::broadcast`] reports every recipient. The vocabulary
//! ([`CallSpec`], [`CallOutcome`], [`Select`], [`BroadcastSpec`], [`Filter`], ...) is
//! re-exported here, and every failure converts into one [`Error`].
//!
//! # Example
//!
//! An embedded registry and two nodes on loopback: `alpha` sends to `beta` by name and gets
//! the outcome; `beta` reads the message from its [`Inbox`]. More in `examples/` (an echoing
//! node, a client keeping many messages in flight, a registry of your own through
//! [`registry::feed`], `rpc_server` / `rpc_client`, a `broadcast` by label).
//!
//! ```
//! use std::{net::SocketAddr, time::Duration};
//!
//! use bytes::Bytes;
//! use switchboard_tokio::{
//!     NodeBuilder, NodeId, Outcome, ServerConfig, TargetSpec, registry::spawn_registry,
//! };
//!
//! # fn main() -> Result<(), switchboard_tokio::Error> {
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
//! let registry = spawn_registry(loopback, ServerConfig::default(), 1).await?;
//! // Root nodes (no upstream) link each other directly.
//! let node = |id, name| {
//!     NodeBuilder::new(NodeId(id), name)
//!         .registry(registry.local_addr())
//!         .allow_direct_connection(true)
//! };
//! let (alpha, _alpha_inbox) = node(1, "alpha").start().await?;
//! let (beta, mut beta_inbox) = node(2, "beta").start().await?;
//! assert!(alpha.wait_known(&[NodeId(1), NodeId(2)], Duration::from_secs(10)).await);
//!
//! let outcome = alpha
//!     .send(TargetSpec::Name("beta".into()), 7, Bytes::from_static(b"hello"))
//!     .await?;
//! assert_eq!(outcome, Outcome::Delivered);
//! let got = beta_inbox.recv().await.expect("beta is running");
//! assert_eq!((got.from, got.msg_type, &got.payload[..]), (NodeId(1), 7, &b"hello"[..]));
//!
//! alpha.shutdown().await?;
//! beta.shutdown().await?;
//! registry.shutdown().await;
//! # Ok::<(), switchboard_tokio::Error>(())
//! # })
//! # }
//! ```

#[cfg(feature = "admin")]
pub mod admin;
pub mod clock;
mod error;
#[cfg(feature = "etcd")]
pub mod etcd;
mod net;
pub mod node;
pub mod observe;
pub mod registry;
pub mod target;
pub mod transport;

pub use error::Error;
pub use node::rpc::{
    BroadcastFailure, CallFailure, CallReport, InlineRequest, InlineServing, Request, Requests,
    RespondFailure,
};
pub use node::stream::{PostOutcomes, PostReport, Poster, Ticket};
pub use node::trace::TraceContext;
pub use node::{
    CustomBackend, Drained, Inbox, NodeBuilder, NodeHandle, NotRegistered, PendingOutcome,
    PostedOutcome, Received, RegistrySpec, SendFailure, ServiceRequest, ServiceServing, StartError,
    Stopped,
};
pub use observe::{Known, Metrics, Status};
pub use switchboard_core;
/// The RPC and addressing vocabulary of [`switchboard_core`], at this crate's root: what a
/// call, a served method or a broadcast names (the core's modules stay reachable through
/// [`switchboard_core`]).
pub use switchboard_core::{
    BroadcastDone, BroadcastSpec, CallError, CallId, CallOutcome, CallSpec, FailReason, Filter,
    NodeId, Outcome, ReplyError, RequestId, Select, SendError, discovery::address::Advertise,
    registry::server::ServerConfig,
};
pub use target::TargetSpec;
pub use transport::Transport;
