//! One watcher task: performs what the core's [`WatchState`] plans for one key family.
//!
//! The loop asks the state for its next action at the current time and performs it: a list
//! (a linearizable range read, paged at the first page's revision), a watch (the previous
//! stream of this watcher is dropped first, which resets its HTTP/2 stream), or a progress
//! request on the current stream. While the state waits, the task waits for the next stream
//! message or the state's deadline. Every result goes back into the state; the registry
//! events it returns go to the coordinator, records that do not decode are logged and
//! counted. A stream that ends (`Ok(None)`) is an error like any other.
//!
//! A stream that breaks once is not reported down: the watcher watches again after its
//! backoff from the last revision it saw (nothing is missed), and the client's balancer opens
//! the new stream on a member that answers — with several etcd endpoints, a member's death
//! (the leader's, say) is no registry loss. Only a second break before a new stream came up,
//! a watch that cannot be opened, a failed list or a silent stream are reported down.

use etcd_client::{Client, GetOptions, WatchOptions, WatchStream};
use switchboard_core::{
    ids::NodeId,
    registry::etcd::{
        Delivered, EventKind, KeyKind, KeyLayout, KeyValue, WatchAction, WatchEvent, WatchState,
    },
    time::Instant,
};
use tokio::sync::mpsc;

use super::{
    LIST_PAGE,
    convert::{RpcError, bounded, header_revision, key_value, watch_response},
    coordinator::{Report, WatchUpdate},
    endpoint_health::HealthCheck,
    fault,
    stats::{EtcdStats, slot},
};
use crate::clock::Clock;

/// Pause after an action this adapter does not know (a newer core), instead of spinning.
const UNKNOWN_ACTION_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

/// Everything one watcher task owns.
pub(super) struct WatchTask {
    pub(super) client: Client,
    pub(super) state: WatchState,
    pub(super) clock: Clock,
    pub(super) prefix: String,
    pub(super) node: NodeId,
    pub(super) reports: mpsc::Sender<Report>,
    pub(super) stats: EtcdStats,
    /// Why the stream last broke, while its re-watch has not come up yet (see the module
    /// docs).
    pub(super) broken: Option<String>,
    /// Asked for a probe round of the members after a failed RPC or stream.
    pub(super) health: HealthCheck,
}

impl WatchTask {
    /// Runs until the coordinator goes away (its report channel closes) or the task is
    /// aborted.
    pub(super) async fn run(mut self) {
        let kind = self.state.kind();
        let mut stream: Option<WatchStream> = None;
        loop {
            let now = self.clock.now();
            let dead_before = self.state.stats().dead_streams;
            let action = self.state.poll(now);
            if self.state.stats().dead_streams != dead_before {
                tracing::warn!(
                    ?kind,
                    "etcd watch stream silent past the watchdog: replaced"
                );
                if !self
                    .report(WatchUpdate::Down(String::from("watch stream silent")))
                    .await
                {
                    return;
                }
            }
            let alive = match action {
                WatchAction::List { key, range_end } => self.list(now, key, range_end).await,
                WatchAction::Watch {
                    key,
                    range_end,
                    from_revision,
                    ..
                } => {
                    stream = None;
                    match self.open(key, range_end, from_revision).await {
                        Ok(opened) => {
                            stream = Some(opened);
                            true
                        }
                        Err(e) => {
                            self.broken = None;
                            self.health.request();
                            self.state.on_stream_error(self.clock.now());
                            self.report(WatchUpdate::Down(format!("watch: {e}"))).await
                        }
                    }
                }
                WatchAction::RequestProgress => match stream.as_mut() {
                    Some(open) => match open.request_progress().await {
                        Ok(()) => true,
                        Err(e) => {
                            stream = None;
                            self.stream_broke(format!("progress request: {e}")).await
                        }
                    },
                    None => true,
                },
                WatchAction::Wait { until } => self.wait(&mut stream, until).await,
                other => {
                    // A newer core's action this adapter does not know: never spin on it.
                    tracing::error!(
                        ?kind,
                        ?other,
                        "unknown etcd watch action; waiting before the next poll"
                    );
                    tokio::time::sleep(UNKNOWN_ACTION_PAUSE).await;
                    true
                }
            };
            self.publish();
            if !alive {
                return;
            }
        }
    }

    /// Waits for the next message of the stream or the state's deadline and feeds it.
    /// Returns false when the coordinator is gone.
    async fn wait(&mut self, stream: &mut Option<WatchStream>, until: Option<Instant>) -> bool {
        let deadline = until.map(|at| self.clock.to_tokio(at));
        let sleep = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let message = async {
            match stream.as_mut() {
                Some(open) => open.message().await,
                None => std::future::pending().await,
            }
        };
        let received = tokio::select! {
            () = sleep => return true,
            received = message => received,
        };
        let now = self.clock.now();
        match received {
            Ok(Some(response)) => {
                let response = watch_response(&response);
                if response.canceled {
                    *stream = None;
                }
                let created = response.created && !response.canceled;
                if created {
                    self.broken = None;
                }
                let own = self.own_key_changes(&response.events);
                let delivered = self.state.on_response(now, &response);
                if created && !self.report(WatchUpdate::Up).await {
                    return false;
                }
                if !self.deliver(delivered).await {
                    return false;
                }
                for (deleted, lease) in own {
                    if !self.report(WatchUpdate::OwnKey { deleted, lease }).await {
                        return false;
                    }
                }
                true
            }
            Ok(None) => {
                *stream = None;
                self.stream_broke(String::from("watch stream ended")).await
            }
            Err(e) => {
                *stream = None;
                self.stream_broke(format!("watch stream: {e}")).await
            }
        }
    }

    /// The open stream broke (`why`); the state watches again after its backoff. The first
    /// break since a stream last came up is only logged, a second one is reported down (see
    /// the module docs). Returns false when the coordinator is gone.
    async fn stream_broke(&mut self, why: String) -> bool {
        self.health.request();
        self.state.on_stream_error(self.clock.now());
        if self.broken.take().is_some() {
            return self.report(WatchUpdate::Down(why)).await;
        }
        let kind = self.state.kind();
        tracing::info!(?kind, %why, "etcd watch stream broke; watching again from the last revision");
        self.broken = Some(why);
        true
    }

    /// The `by_id` watcher's events on this node's own key: (deleted, the lease it was
    /// written under). Other watchers and other keys: none.
    fn own_key_changes(&self, events: &[WatchEvent]) -> Vec<(bool, i64)> {
        if self.state.kind() != KeyKind::ById {
            return Vec::new();
        }
        let layout = KeyLayout::new(&self.prefix);
        events
            .iter()
            .filter(|e| {
                layout
                    .parse(&e.kv.key)
                    .is_ok_and(|k| k.kind == KeyKind::ById && k.id == self.node)
            })
            .map(|e| (e.kind == EventKind::Delete, e.kv.lease))
            .collect()
    }

    /// Lists the family and feeds the result. Returns false when the coordinator is gone.
    async fn list(&mut self, now: Instant, key: Vec<u8>, range_end: Vec<u8>) -> bool {
        match list_range(&mut self.client, key, range_end).await {
            Ok((revision, kvs)) => {
                let delivered = self.state.on_list(self.clock.now(), revision, &kvs);
                self.deliver(delivered).await
                    && self
                        .report(WatchUpdate::Listed(self.state.last_seen()))
                        .await
            }
            Err(e) => {
                self.health.request();
                self.state.on_list_failed(now);
                self.report(WatchUpdate::Down(format!("list: {e}"))).await
            }
        }
    }

    async fn open(
        &mut self,
        key: Vec<u8>,
        range_end: Vec<u8>,
        from_revision: u64,
    ) -> Result<WatchStream, RpcError> {
        let options = WatchOptions::new()
            .with_range(range_end)
            .with_start_revision(i64::try_from(from_revision).unwrap_or(i64::MAX))
            .with_prev_key()
            .with_progress_notify();
        bounded(self.client.watch(key, Some(options))).await
    }

    /// Hands the events to the coordinator (after any fault-injection hold), logs and counts
    /// the records that did not decode. Returns false when the coordinator is gone.
    async fn deliver(&mut self, delivered: Delivered) -> bool {
        let kind = self.state.kind();
        for (key, error) in &delivered.errors {
            tracing::warn!(
                ?kind,
                key = %String::from_utf8_lossy(key),
                %error,
                "skipping an etcd record that does not decode"
            );
        }
        if delivered.events.is_empty() {
            return true;
        }
        fault::until_released(&self.prefix, self.node, kind).await;
        let seen = self.state.last_seen();
        self.report(WatchUpdate::Events(delivered.events, seen))
            .await
    }

    /// Sends one report, publishing the counters first so that they are never behind what
    /// the feed has shown.
    async fn report(&self, update: WatchUpdate) -> bool {
        self.publish();
        let kind = self.state.kind();
        self.reports
            .send(Report::Watch { kind, update })
            .await
            .is_ok()
    }

    fn publish(&self) {
        let stats = self.state.stats();
        let at = slot(self.state.kind());
        self.stats.update(|c| c.watchers[at] = stats);
    }
}

/// A linearizable read of `[key, range_end)`: the header revision of the first page and
/// every key-value, later pages read at that revision so the whole list is one cut.
async fn list_range(
    client: &mut Client,
    key: Vec<u8>,
    range_end: Vec<u8>,
) -> Result<(i64, Vec<KeyValue>), RpcError> {
    let mut kvs = Vec::new();
    let mut revision = 0;
    let mut start = key;
    loop {
        let mut options = GetOptions::new()
            .with_range(range_end.clone())
            .with_limit(LIST_PAGE);
        if revision > 0 {
            options = options.with_revision(revision);
        }
        let response = bounded(client.get(start.clone(), Some(options))).await?;
        if revision == 0 {
            revision = header_revision(response.header());
        }
        kvs.extend(response.kvs().iter().map(key_value));
        match response.kvs().last() {
            Some(last) if response.more() => {
                start = last.key().to_vec();
                start.push(0);
            }
            _ => return Ok((revision, kvs)),
        }
    }
}
