//! What a call's attempts say about their servers, for outlier ejection
//! ([`crate::select::Outliers`], docs/ARCHITECTURE.md §11): each attempt that ends at a known
//! server is reported once to the host ([`RpcHost::server_outcome`]) as a success or a
//! failure, or not at all when it says nothing about the server.
//!
//! - **Success:** a reply (an application error inside it included: the server answered).
//! - **Failure:** the server did not answer in time (`Timeout`), died or restarted with the
//!   request (`TargetGone`, `TargetRestarted`), was never reachable (`NoRoute`, a request
//!   still queued at the grace deadline: `NotAvailable`, a queue to it full: `QueueFull`, its
//!   stream abandoned, a link it refused), or shed the request (`Overloaded`). A request that
//!   moves to another server because its route failed or its server died counts as a failed
//!   attempt at the first one, once per request (as Envoy counts every request a connect
//!   failure ends).
//! - **Neither:** the caller's own doing — a cancel, its shutdown, its budget spent before
//!   the server could look (`Expired`) — and a `NotServed` refusal (the server does not
//!   serve the method *yet* or *any more*: discovery lag, not ill health).
//!
//! Outcomes are noted as the machine learns them and handed to the host, in order, when the
//! machine settles (before the next input, and before any way in returns): every way into
//! the machine runs at one `now`, so the instant reported is the instant the attempt ended.
//!
//! Messages (`Node::send`) are not reported: their acknowledgement comes from the peer's
//! link layer, not its application, so it proves what the connector's failing-route state
//! already tracks (a server would be ejected for the network), and a send's outcome does not
//! pass through this machine.

use super::{CallOutcome, Rpc, RpcHost};
use crate::{ids::NodeId, outcome::FailReason, time::Instant};

/// What an attempt that ended without a reply, for `reason`, says about its server:
/// `Some(false)` a failure, `None` nothing.
pub(super) const fn failure(reason: FailReason) -> Option<bool> {
    match reason {
        FailReason::Timeout
        | FailReason::QueueFull
        | FailReason::NoRoute
        | FailReason::TargetGone
        | FailReason::TargetRestarted
        | FailReason::StreamAbandoned
        | FailReason::WrongCluster
        | FailReason::VersionMismatch
        | FailReason::DuplicateId
        | FailReason::NotAvailable
        | FailReason::Overloaded => Some(false),
        FailReason::Shutdown
        | FailReason::SelfCall
        | FailReason::Expired
        | FailReason::Cancelled
        | FailReason::NotServed => None,
    }
}

/// What a call's outcome says about the server its last attempt went to.
pub(super) const fn verdict(outcome: &CallOutcome) -> Option<bool> {
    match outcome {
        CallOutcome::Reply(_) => Some(true),
        CallOutcome::Failed(reason) | CallOutcome::Unknown(reason) => failure(*reason),
    }
}

impl Rpc {
    /// An attempt at `server` ended: noted for the host (see the [module docs](self)) unless
    /// `verdict` is `None`.
    pub(super) fn note_server(&mut self, server: NodeId, verdict: Option<bool>) {
        if let Some(ok) = verdict {
            self.ended_attempts.push((server, ok));
        }
    }

    /// Hands the noted attempts to the host, oldest first.
    pub(super) fn report_attempts(&mut self, now: Instant, host: &mut impl RpcHost) {
        for (server, ok) in self.ended_attempts.drain(..) {
            host.server_outcome(now, server, ok);
        }
    }
}
