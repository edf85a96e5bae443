//! The etcd registry backend (feature `etcd`): registers a node in etcd and follows the
//! registry, speaking the [`feed`](crate::registry::feed) contract to the node driver.
//!
//! Everything this backend *decides* lives in the core's sans-IO machines
//! ([`switchboard_core::registry::etcd`]): the key layout, the registration txn, the libatapp
//! JSON mapping, each watcher's revision bookkeeping ([`WatchState`]) and the lease machine
//! ([`LeaseState`]). This module only performs the RPCs they plan, with `etcd-client`:
//!
//! - a **lease task** (`lease_task`): grant → one registration txn guarded on `by_id` not
//!   existing (a conflict is reported, never overwritten, retried on the lease schedule) →
//!   a keepalive every `keepalive_interval` whose every answer is checked for TTL ≤ 0 →
//!   `lease_time_to_live` when the stream stayed broken past the TTL → a new lease and a
//!   replayed registration when the lease is lost → topology-only rewrites on the same lease
//!   → revoke on graceful shutdown;
//! - three **watcher tasks** (`watch_task`: `topology`, `by_id`, `by_name`): linearizable
//!   list → watch from revision + 1 with `prev_kv` and progress notify → re-watch from the
//!   last seen revision after an error or end (a first break is no registry loss) → re-list
//!   and diff after a compaction → a progress watchdog that replaces a silent stream;
//! - an **endpoint health** task (`endpoint_health`): with several endpoints, members that
//!   refuse connections are kept out of the client's balancer until they accept again
//!   (probed before the first RPC, after a failed RPC or stream, every 1 s while one is out);
//! - a **coordinator** (`coordinator`): forwards registry events, announces
//!   [`FeedEvent::Registered`](crate::registry::FeedEvent::Registered) once the keys are
//!   written and every watcher has listed, [`Disconnected`](crate::registry::FeedEvent) when
//!   etcd is lost, [`Conflict`](crate::registry::FeedEvent) when another instance owns the
//!   id, and obeys the driver's commands.
//!
//! [`watch_etcd`] runs the watchers and the coordinator without a lease task: a read-only
//! follower that writes nothing (`switchboard ls --etcd`).
//!
//! The client uses HTTP/2 keepalive and `require_leader`, so a hung or leaderless member
//! breaks the streams instead of leaving them silent. With `https://` endpoints it speaks TLS
//! (rustls) trusting [`EtcdOptions::ca`] and presenting [`EtcdOptions::cert`] when given, and
//! it authenticates as [`EtcdOptions::user`] with the password read from its file; the files
//! are read at every connection attempt, and a refusal is reported as a
//! [`Disconnected`](crate::registry::FeedEvent) reason. Values in etcd that do not decode are
//! skipped with a warning and counted ([`EtcdCounters::map_errors`]), never a panic.
//!
//! [`WatchState`]: switchboard_core::registry::etcd::WatchState
//! [`LeaseState`]: switchboard_core::registry::etcd::LeaseState

mod convert;
mod coordinator;
mod endpoint_health;
pub mod fault;
mod lease_task;
mod live_copy;
mod security;
mod stats;
mod watch_task;

use std::time::Duration;

pub use stats::{EtcdCounters, EtcdStats};

use crate::registry::{
    EtcdOptions,
    feed::{Feed, Registration, feed_channel},
};

/// HTTP/2 keepalive ping interval on the etcd connection (a ping after this long without a
/// frame from etcd).
///
/// etcd's server refuses pings more frequent than `--grpc-keepalive-min-time` (default 5 s):
/// after three it closes the connection with `GOAWAY too_many_pings`, which breaks every
/// stream of an idle client — with 2 s pings, every ~8 s. 6 s stays above that default.
pub const HTTP2_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(6);
/// Time an HTTP/2 keepalive ping may take before the connection is declared dead (a hung
/// or partitioned etcd is detected within interval + timeout = 9 s).
pub const HTTP2_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(3);
/// Time a connection attempt to an etcd endpoint may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Time one unary RPC (range, txn, put, lease grant / time-to-live / revoke) or the opening
/// of a stream may take.
pub const RPC_TIMEOUT: Duration = Duration::from_secs(5);
/// Keys fetched per page of a list (later pages are read at the first page's revision).
pub const LIST_PAGE: i64 = 1000;

/// Starts the etcd backend for `registration` and returns the driver's end of its feed.
///
/// The backend connects to `options.endpoints`, registers the node's three keys under
/// `options.prefix` on one lease and watches the three key families; see the module docs.
/// It runs until the driver sends [`FeedCommand::Shutdown`](crate::registry::FeedCommand)
/// (the lease is revoked, every key goes in one revision) or drops either end of the feed
/// (nothing is revoked: the keys expire with the lease, as when a process is killed).
///
/// Must be called inside a tokio runtime.
#[must_use]
pub fn spawn_etcd(options: EtcdOptions, registration: Registration) -> Feed {
    spawn_etcd_with_stats(options, registration).0
}

/// [`spawn_etcd`], also returning live counters of the backend (lease, registrations,
/// watchers, skipped records) for tests, metrics and logs.
///
/// Must be called inside a tokio runtime.
#[must_use]
pub fn spawn_etcd_with_stats(
    options: EtcdOptions,
    registration: Registration,
) -> (Feed, EtcdStats) {
    let (feed, port) = feed_channel();
    let stats = EtcdStats::default();
    tokio::spawn(coordinator::run(
        options,
        Some(registration),
        port,
        stats.clone(),
    ));
    (feed, stats)
}

/// Follows the registry under `options.prefix` without joining it: the three watchers only,
/// no lease and no key written (what `switchboard ls --etcd` reads).
/// [`FeedEvent::Registered`](crate::registry::FeedEvent::Registered) is announced once every
/// watcher has listed and is watching, so every record is in the feed by then;
/// [`FeedCommand::Shutdown`](crate::registry::FeedCommand) ends it (there is nothing to
/// revoke), and the update commands are ignored.
///
/// Must be called inside a tokio runtime.
#[must_use]
pub fn watch_etcd(options: EtcdOptions) -> Feed {
    let (feed, port) = feed_channel();
    tokio::spawn(coordinator::run(options, None, port, EtcdStats::default()));
    feed
}
