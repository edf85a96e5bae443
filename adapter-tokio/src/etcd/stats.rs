//! Live counters of one etcd backend: the core machines' own counters, published by the
//! tasks after every step, plus what only the adapter sees (topology rewrites, the lease id).

use std::sync::{Arc, Mutex, PoisonError};

use switchboard_core::registry::etcd::{KeyKind, LeaseStats, WatchStats};

/// A point-in-time copy of a backend's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EtcdCounters {
    /// The lease machine's counters (grants, leases lost, keepalives, registrations,
    /// conflicts).
    pub lease: LeaseStats,
    /// The lease the node's keys are on now (0 = none).
    pub lease_id: i64,
    /// Whether the node's keys are registered on a live lease now.
    pub registered: bool,
    /// When the last successful registration txn answered (`None`: never registered).
    pub registered_at: Option<tokio::time::Instant>,
    /// Topology-only rewrites committed (upstream switches).
    pub topology_writes: u64,
    /// Each watcher's counters, in [`KeyKind::ALL`] order (topology, by_id, by_name).
    pub watchers: [WatchStats; 3],
}

impl EtcdCounters {
    /// The counters of the watcher of `kind`.
    #[must_use]
    pub fn watcher(&self, kind: KeyKind) -> WatchStats {
        self.watchers[slot(kind)]
    }

    /// Records skipped because their key or value did not decode, over all watchers.
    #[must_use]
    pub fn map_errors(&self) -> u64 {
        self.watchers.iter().map(|w| w.map_errors).sum()
    }

    /// Watch streams opened, over all watchers.
    #[must_use]
    pub fn watches(&self) -> u64 {
        self.watchers.iter().map(|w| w.watches).sum()
    }

    /// Lists performed, over all watchers (the first one each, plus re-lists).
    #[must_use]
    pub fn lists(&self) -> u64 {
        self.watchers.iter().map(|w| w.lists).sum()
    }

    /// Compaction cancels seen, over all watchers (each caused a re-list).
    #[must_use]
    pub fn compactions(&self) -> u64 {
        self.watchers.iter().map(|w| w.compactions).sum()
    }
}

/// Index of a family in [`EtcdCounters::watchers`].
pub(super) fn slot(kind: KeyKind) -> usize {
    match kind {
        KeyKind::Topology => 0,
        KeyKind::ById => 1,
        KeyKind::ByName => 2,
    }
}

/// A shared, cheaply cloned view of one backend's counters.
#[derive(Clone, Debug, Default)]
pub struct EtcdStats {
    inner: Arc<Mutex<EtcdCounters>>,
}

impl EtcdStats {
    /// The counters now.
    #[must_use]
    pub fn snapshot(&self) -> EtcdCounters {
        *self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn update(&self, f: impl FnOnce(&mut EtcdCounters)) {
        f(&mut self.inner.lock().unwrap_or_else(PoisonError::into_inner));
    }
}
