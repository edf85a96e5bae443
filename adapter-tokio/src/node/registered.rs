//! [`NodeHandle::wait_registered`] and why it can fail: [`NotRegistered`].

use std::time::Duration;

use super::NodeHandle;

/// Why a node is not registered ([`NodeHandle::wait_registered`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotRegistered {
    /// The registry refused the registration, with its reason: another live instance holds
    /// the node's id (`id held by incarnation N`) or another node its name
    /// (`name "x" taken by id N`), records too large, the cluster key not accepted.
    #[error("the registry refused the node: {reason}")]
    Refused {
        /// The registry's reason, naming the holder for a conflict.
        reason: String,
    },
    /// The registry backend reports the registry lost (a failed dial, etcd's error) and the
    /// node did not register within the timeout.
    #[error("the registry was not reached within {after:?}: {reason}")]
    Unavailable {
        /// The timeout waited.
        after: Duration,
        /// What the backend last said.
        reason: String,
    },
    /// The node did not register within the timeout, with no failure reported.
    #[error("the registry did not register the node within {after:?}")]
    Timeout {
        /// The timeout waited.
        after: Duration,
    },
    /// The node's driver stopped before it registered.
    #[error("the node stopped before it registered")]
    Stopped,
}

impl NodeHandle {
    /// Waits until the registry backend reports the node registered, at most `timeout`; a
    /// refusal by the registry ends the wait at once.
    ///
    /// **Cancellation:** safe; it only observes.
    ///
    /// # Errors
    ///
    /// [`NotRegistered`]: refused (the registry's reason), unavailable (the backend's last
    /// reason) or timed out, or the node stopped.
    pub async fn wait_registered(&self, timeout: Duration) -> Result<(), NotRegistered> {
        let mut known = self.known.clone();
        let settled = |k: &crate::Known| k.registered || k.conflict.is_some();
        let closed = async move { known.wait_for(settled).await.is_err() };
        let stopped = tokio::time::timeout(timeout, closed).await == Ok(true);
        let known = self.known();
        if known.registered {
            return Ok(());
        }
        Err(match (known.conflict, known.unavailable) {
            (Some(reason), _) => NotRegistered::Refused { reason },
            _ if stopped => NotRegistered::Stopped,
            (None, Some(reason)) => NotRegistered::Unavailable {
                after: timeout,
                reason,
            },
            (None, None) => NotRegistered::Timeout { after: timeout },
        })
    }
}
