//! Fault injection: make one watcher of one node late.
//!
//! libatapp's discovery and topology watchers run independently, so a node may see a
//! record's topology long before its discovery or the other way round (a watcher re-listing
//! after a leader change, a slow long poll). Tests and demos reproduce that on a real etcd by
//! holding back one watcher: [`delay_watcher`] returns a guard; while it lives, the watcher of
//! that family in the backend of that node (under that prefix) keeps what it reads and
//! delivers nothing; [`WatcherDelay::release`] (or dropping the guard) lets it go on, in
//! order. Nothing is lost: the watcher is simply late.
//!
//! Backends consult the holds only while at least one exists (one atomic load otherwise).

use std::sync::{
    Arc, Mutex, PoisonError,
    atomic::{AtomicUsize, Ordering},
};

use switchboard_core::{
    ids::NodeId,
    registry::etcd::{KeyKind, KeyLayout},
};
use tokio::sync::watch;

struct Hold {
    prefix: String,
    node: NodeId,
    kind: KeyKind,
    released: watch::Sender<bool>,
    /// How many times a watcher has stopped at this hold.
    stopped: watch::Sender<u64>,
}

static HOLDS: Mutex<Vec<Arc<Hold>>> = Mutex::new(Vec::new());
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// A held watcher; releasing or dropping it lets the watcher deliver again.
#[must_use = "the watcher is released when the guard is dropped"]
pub struct WatcherDelay {
    hold: Arc<Hold>,
}

impl std::fmt::Debug for WatcherDelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatcherDelay")
            .field("prefix", &self.hold.prefix)
            .field("node", &self.hold.node)
            .field("kind", &self.hold.kind)
            .finish()
    }
}

/// Holds back the `kind` watcher of node `node`'s etcd backend under `prefix` (normalised
/// like the backend's, a trailing `/` added) until the guard is released. A backend started
/// later is held too.
pub fn delay_watcher(prefix: &str, node: NodeId, kind: KeyKind) -> WatcherDelay {
    let (released, _) = watch::channel(false);
    let (stopped, _) = watch::channel(0);
    let hold = Arc::new(Hold {
        prefix: KeyLayout::new(prefix).prefix().to_owned(),
        node,
        kind,
        released,
        stopped,
    });
    HOLDS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Arc::clone(&hold));
    ACTIVE.fetch_add(1, Ordering::SeqCst);
    WatcherDelay { hold }
}

impl WatcherDelay {
    /// Waits until the watcher has stopped at this hold with something to deliver (its
    /// first list, or an event).
    ///
    /// **Cancellation:** safe; it only observes.
    pub async fn until_stopped(&self) {
        let mut stopped = self.hold.stopped.subscribe();
        // The sender lives in `self.hold`, so the channel cannot close while we wait.
        let _ = stopped.wait_for(|count| *count > 0).await;
    }

    /// Lets the watcher deliver what it kept, in order, and go on.
    pub fn release(self) {
        drop(self);
    }
}

impl Drop for WatcherDelay {
    fn drop(&mut self) {
        let mut holds = HOLDS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = holds.iter().position(|h| Arc::ptr_eq(h, &self.hold)) {
            holds.swap_remove(at);
            ACTIVE.fetch_sub(1, Ordering::SeqCst);
        }
        drop(holds);
        self.hold.released.send_replace(true);
    }
}

/// Waits while a hold on this watcher exists. Called by a watcher before it delivers.
pub(super) async fn until_released(prefix: &str, node: NodeId, kind: KeyKind) {
    loop {
        if ACTIVE.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut waiting = {
            let holds = HOLDS.lock().unwrap_or_else(PoisonError::into_inner);
            match holds
                .iter()
                .find(|h| h.node == node && h.kind == kind && h.prefix == prefix)
            {
                Some(hold) => {
                    hold.stopped.send_modify(|count| *count += 1);
                    hold.released.subscribe()
                }
                None => return,
            }
        };
        // An error means the hold is gone, which is a release too.
        let _ = waiting.wait_for(|released| *released).await;
    }
}
