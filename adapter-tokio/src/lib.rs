//! tokio driver for [`switchboard_core`].
//!
//! This crate binds the sans-IO core to tokio: one task drives a core `Node`, per-link reader
//! and writer tasks move bytes over TCP, and the embedded registry server and client (and, with
//! the `etcd` feature, the etcd backend) feed the core's registry input. It also ships the
//! `switchboard` binary.
//!
//! What is here today is the edge where wall-clock time enters the core: [`clock::Clock`]
//! turns tokio instants into the core's virtual [`switchboard_core::time::Instant`] and back,
//! so the driver can read `now` once per loop turn and sleep until the core's next deadline.
//!
//! What comes next (each with its own issue): the `Node` driver loop and TCP transport, the
//! embedded registry (Nexus semantics), the `switchboard` binary with its `demo`, and the etcd
//! backend. No routing decision will ever live here: the adapter waits, calls one `handle_*`,
//! drains `poll_output` into I/O and re-arms its timer.

pub mod clock;
