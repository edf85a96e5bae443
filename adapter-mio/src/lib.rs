//! Single-threaded mio driver for [`switchboard_core`], for applications that own their event
//! loop.
//!
//! The driver will expose `run_once(timeout)`: poll the sockets for at most `timeout` (or until
//! the core's next deadline), feed each readiness event to the core as one `handle_*` call,
//! drain `poll_output` into socket writes, connects and closes, and return — so a game server's
//! own frame loop can call it between its other work. It speaks the same TCP framing and
//! registry-client protocol as `switchboard-tokio`, so both kinds of node join one cluster.
//!
//! It arrives after the tokio adapter has fixed the transport and registry protocols; until then
//! this crate only pins the dependency set (`mio` with `os-poll` and `net`) and the rule it will
//! follow: no routing, retry or queueing decision lives here — those are the core's.

pub use switchboard_core;
