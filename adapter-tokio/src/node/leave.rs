//! A graceful exit that fails nothing (docs/ARCHITECTURE.md §7, "Send grace"):
//! [`NodeHandle::leave`] drains the node before its [`shutdown`](NodeHandle::shutdown).
//!
//! The node publishes its record marked leaving (`LEAVING_LABEL`, the value saying why);
//! once the registry serves it back, every sender holds its new messages for this node — and
//! for the nodes routed through it — until a record without the mark (the next life)
//! arrives, while what is already in flight is still acknowledged here. The drain ends when
//! the node has received nothing for [`QUIET`] and has no message of its own queued or
//! unacknowledged, or at the bound; the shutdown that follows deletes the record, and the
//! senders hold on through the gap within their send grace.

use std::time::Duration;

use tokio::time::Instant;

use super::{Command, NodeHandle, Stopped};

/// How long the node must have received nothing (and owe nothing) to count as drained.
pub(crate) const QUIET: Duration = Duration::from_millis(200);
/// How often the drain looks at the node's counters.
const LOOK_EVERY: Duration = Duration::from_millis(20);

/// How a drain ended ([`NodeHandle::leave`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Drained {
    /// Whether the registry served the leaving record back within the bound.
    pub announced: bool,
    /// Whether the node went quiet within the bound (`false`: the bound cut the drain).
    pub quiet: bool,
    /// Messages received while draining.
    pub received: u64,
}

impl NodeHandle {
    /// Drains the node before a graceful exit, at most `bound`: publishes its record marked
    /// leaving (label [`LEAVING_LABEL`]`=why`, e.g. `restarting`), waits for the registry to
    /// serve it back, then until nothing arrives for 200 ms and nothing of its own is
    /// queued or unacknowledged. Call [`shutdown`](Self::shutdown) afterwards; the node keeps
    /// working meanwhile (it receives, acknowledges, relays and sends as before).
    ///
    /// **Cancellation:** safe; the record stays marked leaving until the node stops.
    ///
    /// [`LEAVING_LABEL`]: switchboard_core::discovery::LEAVING_LABEL
    ///
    /// # Errors
    ///
    /// The node stopped.
    pub async fn leave(&self, why: &str, bound: Duration) -> Result<Drained, Stopped> {
        let end = Instant::now() + bound;
        self.command(Command::Leave(why.to_owned())).await?;
        let announced = self
            .wait_for(bound, |known| known.leaving || !known.registered)
            .await;
        let first = self.metrics().await?.received;
        let (mut last, mut since) = (first, Instant::now());
        loop {
            let now = Instant::now();
            if now >= end {
                return Ok(Drained {
                    announced,
                    quiet: false,
                    received: last - first,
                });
            }
            tokio::time::sleep(LOOK_EVERY.min(end - now)).await;
            let received = self.metrics().await?.received;
            let owed = self
                .status()
                .await?
                .endpoints
                .iter()
                .any(|e| e.pending + e.unacked > 0);
            if received != last || owed {
                (last, since) = (received, Instant::now());
            } else if since.elapsed() >= QUIET {
                return Ok(Drained {
                    announced,
                    quiet: true,
                    received: last - first,
                });
            }
        }
    }
}
