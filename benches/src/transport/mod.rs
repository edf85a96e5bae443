//! Transport throughput and latency: switchboard-tokio nodes against a raw tokio
//! length-delimited echo, measured the same way in the same process.
//!
//! Both sides carry 64-byte messages over loopback TCP on a 2-worker multi-thread runtime
//! ([`runtime`]). A round trip is, for the baseline, a frame out and its echo back
//! ([`baseline`]); for ours, `NodeHandle::submit` until the message's `Outcome::Delivered`,
//! i.e. the data frame to the target and the core's acknowledgement back ([`ours`], over a
//! direct link or through one proxy). [`load`] drives both with the same sender loop (a window
//! of requests in flight, optionally paced at a fixed rate); [`stats`] keeps every round trip
//! and reads exact percentiles. The `transport-report` binary and the `transport` criterion
//! bench are built on this module.

pub mod baseline;
pub mod frame;
pub mod load;
pub mod nodes;
pub mod ours;
pub mod ours_stream;
pub mod stats;

use std::{future::Future, io};

use switchboard_tokio::{SendFailure, node::StartError};
use tokio::runtime::Runtime;

/// Payload size of every measured message.
pub const PAYLOAD_BYTES: usize = 64;
/// Worker threads of the measuring runtime (the CI machine has 2 cores).
pub const WORKER_THREADS: usize = 2;

/// Why a measurement could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// A socket operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The error.
        source: io::Error,
    },
    /// The echo server closed the connection before the run's last echo.
    #[error("the echo server closed the connection before the end of the run")]
    BaselineClosed,
    /// The echo server sent an invalid frame.
    #[error("baseline framing: {0}")]
    BaselineFrame(#[from] frame::FrameTooLong),
    /// The end-of-run echo came back before every frame's echo.
    #[error("the echo server returned {echoed} of {sent} frames")]
    BaselineShort {
        /// Frames sent.
        sent: u64,
        /// Echoes received.
        echoed: u64,
    },
    /// The send window's semaphore was closed (a bug in this module).
    #[error("the send window was closed")]
    WindowClosed,
    /// A measuring task panicked or was cancelled.
    #[error("a measuring task failed: {0}")]
    Task(String),
    /// A node of the measured cluster did not start.
    #[error("node {name} did not start: {source}")]
    Start {
        /// The node's name.
        name: &'static str,
        /// The error.
        source: StartError,
    },
    /// A send on a measured route was refused or the node stopped.
    #[error("send on route {route}: {source}")]
    Send {
        /// The route's name.
        route: &'static str,
        /// The error.
        source: SendFailure,
    },
    /// A route never delivered a warm-up message.
    #[error("route {route} delivered nothing within {waited_ms} ms: {last}")]
    RouteNotReady {
        /// The route's name.
        route: &'static str,
        /// How long it was tried.
        waited_ms: u128,
        /// Each attempt's result, then the sender's status.
        last: String,
    },
}

impl BenchError {
    /// An I/O error with what was being done.
    #[must_use]
    pub fn io(context: &'static str, source: io::Error) -> BenchError {
        BenchError::Io { context, source }
    }
}

/// The measuring runtime: multi-thread with [`WORKER_THREADS`] workers, timers and I/O on.
///
/// # Errors
///
/// The runtime could not be built (thread spawn failed).
pub fn runtime() -> io::Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .enable_all()
        .build()
}

/// Runs `fut` as a task on `rt`'s workers (not on the calling thread, so every measured task
/// shares the same two workers) and waits for it.
///
/// # Errors
///
/// `fut`'s error, or [`BenchError::Task`] if it panicked.
pub fn run_on_workers<T, F>(rt: &Runtime, fut: F) -> Result<T, BenchError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, BenchError>> + Send + 'static,
{
    rt.block_on(async move {
        tokio::spawn(fut)
            .await
            .map_err(|e| BenchError::Task(e.to_string()))?
    })
}
