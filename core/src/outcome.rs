//! Outcomes: how every accepted message ends.
//!
//! The core promises that each message it accepts (each [`MsgId`] handed out by `send`) ends
//! in exactly one [`Outcome`], reported as a value — a [`MessageOutcome`] pushed into an
//! [`OutcomeSink`] the caller passes in. Nothing is dropped silently (libatapp drops a GC'd
//! endpoint's queue without a callback unless a ready handle exists, spec §10 item 5), and no
//! outcome is ever a guess: a message that may or may not have arrived is reported as
//! [`Outcome::Unknown`], never as [`Outcome::Failed`].
//!
//! Producers in this crate: the endpoints end queued messages with `Failed(Timeout)`,
//! `Failed(TargetGone)` or whatever reason their owner removes them with, and hand a refused
//! message back (`QueueFull`) for the caller to report; the node ends transmitted messages
//! with `Delivered` (acknowledged) or `Unknown` ([`crate::node`]).

use alloc::{collections::VecDeque, format, string::String, vec::Vec};
use core::fmt;

use crate::ids::MsgId;

/// How one accepted message ended. Exactly one per [`MsgId`].
///
/// The three variants separate what the sender can *know*:
///
/// - [`Delivered`](Outcome::Delivered): the target acknowledged the message (a message to the
///   node itself: handed over at once). The caller may stop worrying about it.
/// - [`Failed`](Outcome::Failed): provably **not** delivered — the message was never
///   transmitted (still queued, rejected at the door, or dropped before any byte left). Safe to
///   retry without risking a duplicate.
/// - [`Unknown`](Outcome::Unknown): the message was transmitted but not acknowledged when we
///   gave up (the target restarted or vanished, or the deadline passed while waiting for the
///   ack). It may or may not have been processed; a retry may duplicate it. This is Jepsen's
///   *info* result (ARCHITECTURE §9, "honest outcomes"); we chose a separate variant over a
///   `maybe_delivered` flag so that a `match` cannot treat it as a plain failure by accident.
///
/// The reason in `Failed` and `Unknown` says why we gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// The target acknowledged the message.
    Delivered,
    /// The message was never transmitted; it was certainly not delivered.
    Failed(FailReason),
    /// The message was transmitted but never acknowledged; it may or may not have arrived.
    Unknown(FailReason),
}

impl Outcome {
    /// Whether the message is known to have been delivered.
    #[must_use]
    pub const fn is_delivered(self) -> bool {
        matches!(self, Outcome::Delivered)
    }

    /// Whether the message is known **not** to have been delivered (safe to retry).
    #[must_use]
    pub const fn is_failed(self) -> bool {
        matches!(self, Outcome::Failed(_))
    }

    /// Why the message was given up on, if it was (`None` for `Delivered`).
    #[must_use]
    pub const fn reason(self) -> Option<FailReason> {
        match self {
            Outcome::Delivered => None,
            Outcome::Failed(reason) | Outcome::Unknown(reason) => Some(reason),
        }
    }

    /// The outcome's label in metrics and reports: `delivered`, `failed_<reason>` or
    /// `unknown_<reason>`, the reason as [`FailReason::as_str`] names it (e.g.
    /// `failed_no_route`, `unknown_target_restarted`).
    #[must_use]
    pub fn label(self) -> String {
        match self {
            Outcome::Delivered => String::from("delivered"),
            Outcome::Failed(reason) => format!("failed_{}", reason.as_str()),
            Outcome::Unknown(reason) => format!("unknown_{}", reason.as_str()),
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Delivered => f.write_str("delivered"),
            Outcome::Failed(reason) => write!(f, "failed: {reason}"),
            Outcome::Unknown(reason) => write!(f, "unknown (maybe delivered): {reason}"),
        }
    }
}

/// Why a message was given up on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum FailReason {
    /// Its deadline (`message_timeout` after it was accepted) passed.
    Timeout,
    /// The target's pending queue was at its count or byte limit when it was sent.
    QueueFull,
    /// No route to the target exists (and none is being set up).
    NoRoute,
    /// The target's endpoint or route record was removed (GC, discovery delete, removal).
    TargetGone,
    /// The target restarted (a new incarnation) before acknowledging the message.
    TargetRestarted,
    /// This node is shutting down.
    Shutdown,
    /// An earlier message of its ordered stream was given up (at its own deadline, or for
    /// good by a relay): this one, behind it, can never be confirmed — the target delivers in
    /// order and will never deliver it after the missing one. Ends only messages whose own
    /// deadline has not passed (those get `Timeout`).
    StreamAbandoned,
    /// The target, or the proxy toward it, refused our link: it belongs to another cluster
    /// (a wrong or missing cluster key).
    WrongCluster,
    /// The target, or the proxy toward it, refused our link: no protocol version in common.
    VersionMismatch,
    /// The target, or the proxy toward it, refused our link: another live node holds our id.
    DuplicateId,
    /// A call found no server of its method within its grace ([`crate::rpc`]).
    NotAvailable,
    /// A call resolved to this node itself ([`crate::rpc`]).
    SelfCall,
    /// A call's budget was spent before any handler could see it ([`crate::rpc`]).
    Expired,
    /// The caller cancelled the call ([`crate::rpc`]).
    Cancelled,
    /// The chosen server refused the call unexecuted: it does not serve the method (any
    /// more), and no other server was left to try ([`crate::rpc`]).
    NotServed,
    /// The chosen server refused the call unexecuted: it was at its concurrency limit for
    /// the method and shed the request ([`crate::rpc`]). Not retried elsewhere: shedding
    /// is the server's signal to back off.
    Overloaded,
}

impl FailReason {
    /// Every reason, in declaration order: for label sets that list each one (at 0 until
    /// counted).
    pub const ALL: [FailReason; 16] = [
        FailReason::Timeout,
        FailReason::QueueFull,
        FailReason::NoRoute,
        FailReason::TargetGone,
        FailReason::TargetRestarted,
        FailReason::Shutdown,
        FailReason::StreamAbandoned,
        FailReason::WrongCluster,
        FailReason::VersionMismatch,
        FailReason::DuplicateId,
        FailReason::NotAvailable,
        FailReason::SelfCall,
        FailReason::Expired,
        FailReason::Cancelled,
        FailReason::NotServed,
        FailReason::Overloaded,
    ];

    /// The reasons a message's outcome can carry, in declaration order: every reason but the
    /// ones only calls end with (`NotAvailable`, `SelfCall`, `Expired`, `Cancelled`,
    /// `NotServed`, `Overloaded`). For the label sets of message metrics.
    pub const MESSAGE_REASONS: [FailReason; 10] = [
        FailReason::Timeout,
        FailReason::QueueFull,
        FailReason::NoRoute,
        FailReason::TargetGone,
        FailReason::TargetRestarted,
        FailReason::Shutdown,
        FailReason::StreamAbandoned,
        FailReason::WrongCluster,
        FailReason::VersionMismatch,
        FailReason::DuplicateId,
    ];

    /// The reason's label in metrics, JSON reports and command output, in snake case:
    /// `timeout`, `queue_full`, `no_route`, `target_gone`, `target_restarted`, `shutdown`,
    /// `stream_abandoned`, `wrong_cluster`, `version_mismatch`, `duplicate_id`,
    /// `not_available`, `self_call`, `expired`, `cancelled`, `not_served`, `overloaded`.
    /// The one place these names are written; [`Outcome::label`] builds on it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            FailReason::Timeout => "timeout",
            FailReason::QueueFull => "queue_full",
            FailReason::NoRoute => "no_route",
            FailReason::TargetGone => "target_gone",
            FailReason::TargetRestarted => "target_restarted",
            FailReason::Shutdown => "shutdown",
            FailReason::StreamAbandoned => "stream_abandoned",
            FailReason::WrongCluster => "wrong_cluster",
            FailReason::VersionMismatch => "version_mismatch",
            FailReason::DuplicateId => "duplicate_id",
            FailReason::NotAvailable => "not_available",
            FailReason::SelfCall => "self_call",
            FailReason::Expired => "expired",
            FailReason::Cancelled => "cancelled",
            FailReason::NotServed => "not_served",
            FailReason::Overloaded => "overloaded",
        }
    }

    /// The reason a link refusal gives the messages that could not go out because of it
    /// (`None` for refusals that say nothing about the target: an invalid hello, a peer
    /// shutting down, a name taken).
    #[must_use]
    pub const fn from_refusal(reason: crate::wire::RefuseReason) -> Option<FailReason> {
        use crate::wire::RefuseReason;
        match reason {
            RefuseReason::WrongCluster => Some(FailReason::WrongCluster),
            RefuseReason::VersionMismatch => Some(FailReason::VersionMismatch),
            RefuseReason::DuplicateId => Some(FailReason::DuplicateId),
            _ => None,
        }
    }
}

impl fmt::Display for FailReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FailReason::Timeout => "timed out",
            FailReason::QueueFull => "pending queue full",
            FailReason::NoRoute => "no route to target",
            FailReason::TargetGone => "target gone",
            FailReason::TargetRestarted => "target restarted",
            FailReason::Shutdown => "shutting down",
            FailReason::StreamAbandoned => "an earlier message of its stream was given up",
            FailReason::WrongCluster => "refused: another cluster",
            FailReason::VersionMismatch => "refused: no common protocol version",
            FailReason::DuplicateId => "refused: our id is held by another node",
            FailReason::NotAvailable => "no server of the method within the grace",
            FailReason::SelfCall => "the call resolved to this node itself",
            FailReason::Expired => "the call's budget was spent before a handler saw it",
            FailReason::Cancelled => "cancelled by the caller",
            FailReason::NotServed => "the server does not serve the method",
            FailReason::Overloaded => "the server is at its concurrency limit for the method",
        })
    }
}

/// One message's outcome, as the core reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct MessageOutcome {
    /// The message.
    pub msg: MsgId,
    /// How it ended.
    pub outcome: Outcome,
}

/// Where outcomes go: passed into every call that can end messages, never stored.
///
/// Implemented for `Vec<MessageOutcome>` and `VecDeque<MessageOutcome>`; the node implements it
/// for its output queue so outcomes land there without an intermediate buffer.
pub trait OutcomeSink {
    /// Records that `msg` ended with `outcome`. Called exactly once per message.
    fn emit(&mut self, msg: MsgId, outcome: Outcome);
}

impl OutcomeSink for Vec<MessageOutcome> {
    fn emit(&mut self, msg: MsgId, outcome: Outcome) {
        self.push(MessageOutcome { msg, outcome });
    }
}

impl OutcomeSink for VecDeque<MessageOutcome> {
    fn emit(&mut self, msg: MsgId, outcome: Outcome) {
        self.push_back(MessageOutcome { msg, outcome });
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;

    use super::*;

    #[test]
    fn outcomes_say_what_is_known() {
        assert!(Outcome::Delivered.is_delivered());
        assert_eq!(Outcome::Delivered.reason(), None);
        let failed = Outcome::Failed(FailReason::QueueFull);
        assert!(failed.is_failed() && !failed.is_delivered());
        assert_eq!(failed.reason(), Some(FailReason::QueueFull));
        let unknown = Outcome::Unknown(FailReason::TargetRestarted);
        assert!(!unknown.is_failed() && !unknown.is_delivered());
        assert_eq!(unknown.reason(), Some(FailReason::TargetRestarted));
    }

    #[test]
    fn display_names_the_reason() {
        assert_eq!(Outcome::Delivered.to_string(), "delivered");
        assert_eq!(
            Outcome::Failed(FailReason::Timeout).to_string(),
            "failed: timed out"
        );
        assert_eq!(
            Outcome::Unknown(FailReason::TargetGone).to_string(),
            "unknown (maybe delivered): target gone"
        );
        assert_eq!(FailReason::NoRoute.to_string(), "no route to target");
        assert_eq!(FailReason::Shutdown.to_string(), "shutting down");
        assert_eq!(FailReason::QueueFull.to_string(), "pending queue full");
        assert_eq!(FailReason::TargetRestarted.to_string(), "target restarted");
    }

    #[test]
    fn labels_are_snake_case() {
        let labels: Vec<&str> = FailReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            labels,
            [
                "timeout",
                "queue_full",
                "no_route",
                "target_gone",
                "target_restarted",
                "shutdown",
                "stream_abandoned",
                "wrong_cluster",
                "version_mismatch",
                "duplicate_id",
                "not_available",
                "self_call",
                "expired",
                "cancelled",
                "not_served",
                "overloaded"
            ]
        );
        assert_eq!(
            FailReason::from_refusal(crate::wire::RefuseReason::WrongCluster),
            Some(FailReason::WrongCluster)
        );
        assert_eq!(
            FailReason::from_refusal(crate::wire::RefuseReason::ShuttingDown),
            None
        );
        assert_eq!(Outcome::Delivered.label(), "delivered");
        assert_eq!(
            Outcome::Failed(FailReason::NoRoute).label(),
            "failed_no_route"
        );
        assert_eq!(
            Outcome::Unknown(FailReason::TargetRestarted).label(),
            "unknown_target_restarted"
        );
    }

    #[test]
    fn sinks_keep_emission_order() {
        let mut v: Vec<MessageOutcome> = Vec::new();
        let mut d: VecDeque<MessageOutcome> = VecDeque::new();
        for sink in [&mut v as &mut dyn OutcomeSink, &mut d] {
            sink.emit(MsgId(2), Outcome::Delivered);
            sink.emit(MsgId(1), Outcome::Failed(FailReason::Timeout));
        }
        let expected = [
            MessageOutcome {
                msg: MsgId(2),
                outcome: Outcome::Delivered,
            },
            MessageOutcome {
                msg: MsgId(1),
                outcome: Outcome::Failed(FailReason::Timeout),
            },
        ];
        assert_eq!(v, expected);
        assert_eq!(d.iter().copied().collect::<Vec<_>>(), expected);
    }
}
