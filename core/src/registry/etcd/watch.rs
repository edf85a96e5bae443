//! [`WatchState`]: the revision bookkeeping of one etcd prefix watcher.
//!
//! The loop (etcd-nexus-peers §2, libatapp §6): a linearizable **list** of the prefix at
//! revision `R` → **watch** from `R + 1` with `prev_kv` and progress notify → apply events in
//! order, remembering the last seen revision → on a stream error or end, **back off and
//! re-watch** from `last_seen + 1` (the history is still there) → on a cancel carrying a
//! `compact_revision` past what was seen, **re-list** and diff against what this watcher has
//! delivered (synthetic deletes and puts, see [`super::diff`]) → a **watchdog**: after
//! `idle` without any response ask for progress, and if nothing arrives within
//! `progress_timeout` declare the stream dead and re-watch.
//!
//! The state reads no clock and performs no RPC: the adapter calls [`WatchState::poll`] with
//! `now` until it returns [`WatchAction::Wait`], performs what it is told, and feeds results
//! back through `on_list`, `on_list_failed`, `on_response`, `on_stream_error`. Each feed
//! returns the [`Delivered`] registry events (and the keys that could not be mapped: counted,
//! skipped, the watcher goes on).
//!
//! etcd 3.4 quirks: a cancel response has header revision 0, so a cancel never moves the
//! resume point; an on-demand progress response carries watch id -1, so the watch id of a
//! progress response is ignored. The header of a `created` response is not a bookmark (events
//! before it may still be on their way) and is ignored too. The watch is created without the
//! fragment option, so all events of one revision arrive in one response and resuming from
//! `last_seen + 1` loses nothing.

use alloc::vec::Vec;

use crate::{
    backoff::{Backoff, BackoffConfig, Jitter},
    registry::RegistryEvent,
    rng::Rng,
    time::{Duration, Instant},
};

use super::{
    EventKind, KeyValue, WatchResponse,
    diff::{DeliveredKeys, diff_snapshot},
    keys::{KeyKind, KeyLayout},
    mapping::{MapError, map_delete, map_event, map_put},
};

/// Timing of a watcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchConfig {
    /// Silence on a watch stream after which progress is requested.
    pub idle: Duration,
    /// Time a requested progress may take before the stream is declared dead.
    pub progress_timeout: Duration,
    /// Delays before re-watching after a stream error, and before re-listing after a failed
    /// list. `max_tries` 0 is the sensible value (a watcher never gives up); when the budget
    /// is used up the delay stays at `max`.
    pub backoff: BackoffConfig,
}

impl Default for WatchConfig {
    /// Idle 10 s, progress timeout 5 s, backoff 500 ms → 15 s (libatapp's retry interval),
    /// unlimited tries, ±20 % jitter.
    fn default() -> Self {
        WatchConfig {
            idle: Duration::from_secs(10),
            progress_timeout: Duration::from_secs(5),
            backoff: BackoffConfig {
                start: Duration::from_millis(500),
                max: Duration::from_secs(15),
                max_tries: 0,
                jitter: Jitter::Proportional { percent: 20 },
            },
        }
    }
}

/// What the adapter must do next for this watcher.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatchAction {
    /// Run a linearizable range get of `[key, range_end)` (all pages at the first page's
    /// revision) and report it with [`WatchState::on_list`] or [`WatchState::on_list_failed`].
    List {
        /// Start of the range (the family prefix).
        key: Vec<u8>,
        /// End of the range.
        range_end: Vec<u8>,
    },
    /// Drop any current watch stream of this watcher and open a new one; feed its responses
    /// to [`WatchState::on_response`], its failure or end to [`WatchState::on_stream_error`].
    Watch {
        /// Start of the range.
        key: Vec<u8>,
        /// End of the range.
        range_end: Vec<u8>,
        /// First revision to deliver.
        from_revision: u64,
        /// Ask for `prev_kv` (always true).
        prev_kv: bool,
        /// Ask for progress notifications (always true).
        progress_notify: bool,
    },
    /// Send a progress request on the current stream.
    RequestProgress,
    /// Nothing to do until `until` (`None`: until the pending RPC reports back).
    Wait {
        /// When to call [`WatchState::poll`] again.
        until: Option<Instant>,
    },
}

/// Registry events produced by one feed, in order, and the keys that could not be mapped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Delivered {
    /// Events to hand to the node, in order.
    pub events: Vec<RegistryEvent>,
    /// Keys skipped, with why (each counted in [`WatchStats::map_errors`]).
    pub errors: Vec<(Vec<u8>, MapError)>,
}

/// Counters of one watcher.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchStats {
    /// Lists requested.
    pub lists: u64,
    /// Watches opened.
    pub watches: u64,
    /// Stream errors or ends reported.
    pub stream_errors: u64,
    /// Lists that failed.
    pub list_errors: u64,
    /// Cancels carrying a compaction (each caused a re-list).
    pub compactions: u64,
    /// Cancels without compaction.
    pub cancels: u64,
    /// Streams declared dead by the watchdog.
    pub dead_streams: u64,
    /// Progress requests sent.
    pub progress_requests: u64,
    /// Progress notifications received.
    pub progress_notifies: u64,
    /// Keys that could not be mapped (bad key, bad JSON, wrong family).
    pub map_errors: u64,
    /// Registry events delivered (including synthetic ones).
    pub events: u64,
    /// Synthetic deletes from re-list diffs.
    pub synthetic_deletes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    NeedList,
    Listing,
    NeedWatch,
    Watching,
    Backoff { until: Instant, relist: bool },
}

/// One watcher's state (by_id, by_name or topology). See the module docs.
#[derive(Clone, Debug)]
pub struct WatchState {
    kind: KeyKind,
    layout: KeyLayout,
    key: Vec<u8>,
    range_end: Vec<u8>,
    config: WatchConfig,
    rng: Rng,
    backoff: Backoff,
    phase: Phase,
    delivered: DeliveredKeys,
    last_seen: u64,
    last_heard: Instant,
    progress_deadline: Option<Instant>,
    stats: WatchStats,
}

impl WatchState {
    /// A watcher of family `kind` under `layout`; it starts by asking for a list. `rng`
    /// jitters its backoff (fork one per watcher).
    #[must_use]
    pub fn new(kind: KeyKind, layout: KeyLayout, config: WatchConfig, rng: Rng) -> WatchState {
        let (key, range_end) = layout.watch_range(kind);
        WatchState {
            kind,
            layout,
            key,
            range_end,
            config,
            rng,
            backoff: Backoff::new(),
            phase: Phase::NeedList,
            delivered: DeliveredKeys::new(),
            last_seen: 0,
            last_heard: Instant::ZERO,
            progress_deadline: None,
            stats: WatchStats::default(),
        }
    }

    /// The family watched.
    #[must_use]
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// The newest revision this watcher has seen (events, list, progress); a re-watch starts
    /// after it.
    #[must_use]
    pub fn last_seen(&self) -> u64 {
        self.last_seen
    }

    /// The keys this watcher has delivered as live, with their revisions.
    #[must_use]
    pub fn delivered(&self) -> &DeliveredKeys {
        &self.delivered
    }

    /// The counters.
    #[must_use]
    pub fn stats(&self) -> WatchStats {
        self.stats
    }

    /// Whether a watch stream is open (or being opened).
    #[must_use]
    pub fn is_watching(&self) -> bool {
        self.phase == Phase::Watching
    }

    /// The next action at `now`. Call it until it returns [`WatchAction::Wait`], then again
    /// at the returned instant or after feeding a result.
    pub fn poll(&mut self, now: Instant) -> WatchAction {
        match self.phase {
            Phase::NeedList => {
                self.phase = Phase::Listing;
                self.stats.lists += 1;
                WatchAction::List {
                    key: self.key.clone(),
                    range_end: self.range_end.clone(),
                }
            }
            Phase::Listing => WatchAction::Wait { until: None },
            Phase::NeedWatch => {
                self.phase = Phase::Watching;
                self.last_heard = now;
                self.progress_deadline = None;
                self.stats.watches += 1;
                WatchAction::Watch {
                    key: self.key.clone(),
                    range_end: self.range_end.clone(),
                    from_revision: self.last_seen.saturating_add(1),
                    prev_kv: true,
                    progress_notify: true,
                }
            }
            Phase::Watching => match self.progress_deadline {
                Some(deadline) if now >= deadline => {
                    self.stats.dead_streams += 1;
                    self.phase = Phase::NeedWatch;
                    self.poll(now)
                }
                Some(deadline) => WatchAction::Wait {
                    until: Some(deadline),
                },
                None => {
                    let idle_at = self.last_heard.saturating_add(self.config.idle);
                    if now >= idle_at {
                        self.progress_deadline =
                            Some(now.saturating_add(self.config.progress_timeout));
                        self.stats.progress_requests += 1;
                        WatchAction::RequestProgress
                    } else {
                        WatchAction::Wait {
                            until: Some(idle_at),
                        }
                    }
                }
            },
            Phase::Backoff { until, relist } => {
                if now >= until {
                    self.phase = if relist {
                        Phase::NeedList
                    } else {
                        Phase::NeedWatch
                    };
                    self.poll(now)
                } else {
                    WatchAction::Wait { until: Some(until) }
                }
            }
        }
    }

    /// Feeds the result of a [`WatchAction::List`]: the header revision and every key-value.
    /// Returns the diff against what was delivered as registry events; the next poll opens
    /// the watch from `revision + 1`. Ignored (empty result) unless a list was pending.
    pub fn on_list(&mut self, _now: Instant, revision: i64, kvs: &[KeyValue]) -> Delivered {
        let mut out = Delivered::default();
        if self.phase != Phase::Listing {
            return out;
        }
        let revision = u64::try_from(revision).unwrap_or(0);
        let diff = diff_snapshot(&self.delivered, kvs, revision);
        for key in &diff.deletes {
            self.delivered.delete(key);
            match map_delete(&self.layout, key, diff.revision) {
                Ok(event) => {
                    self.stats.synthetic_deletes += 1;
                    self.push(&mut out, event);
                }
                Err(error) => self.skip(&mut out, key, error),
            }
        }
        for kv in diff.puts {
            match self
                .check_family(&kv.key)
                .and_then(|()| map_put(&self.layout, kv))
            {
                Ok(event) => {
                    self.delivered.put(&kv.key, kv.revision());
                    self.push(&mut out, event);
                }
                Err(error) => self.skip(&mut out, &kv.key, error),
            }
        }
        self.last_seen = revision;
        self.backoff.reset();
        self.phase = Phase::NeedWatch;
        out
    }

    /// The pending list failed: re-list after a backoff.
    pub fn on_list_failed(&mut self, now: Instant) {
        if self.phase == Phase::Listing {
            self.stats.list_errors += 1;
            self.back_off(now, true);
        }
    }

    /// Feeds one response of the current watch stream. Returns the registry events of its
    /// events; a compaction cancel schedules a re-list, another cancel a backed-off re-watch.
    /// Ignored (empty result) unless a watch is open.
    pub fn on_response(&mut self, now: Instant, response: &WatchResponse) -> Delivered {
        let mut out = Delivered::default();
        if self.phase != Phase::Watching {
            return out;
        }
        self.last_heard = now;
        self.progress_deadline = None;
        if response.canceled {
            // 3.4: the header revision of a cancel is 0; never resume from it.
            let compacted = u64::try_from(response.compact_revision).unwrap_or(0);
            if compacted > self.last_seen {
                self.stats.compactions += 1;
                self.phase = Phase::NeedList;
            } else {
                self.stats.cancels += 1;
                self.back_off(now, false);
            }
            return out;
        }
        if response.is_progress_notify() {
            // 3.4: watch id -1 on an on-demand progress response; it is ours anyway.
            self.stats.progress_notifies += 1;
            if let Ok(revision) = u64::try_from(response.header_revision) {
                self.last_seen = self.last_seen.max(revision);
            }
            return out;
        }
        if response.created || !response.events.is_empty() {
            self.backoff.reset();
        }
        for event in &response.events {
            let key = &event.kv.key;
            let mapped = self
                .check_family(key)
                .and_then(|()| map_event(&self.layout, event, response.header_revision));
            match mapped {
                Ok(mapped) => {
                    match event.kind {
                        EventKind::Put => self.delivered.put(key, event.kv.revision()),
                        EventKind::Delete => self.delivered.delete(key),
                    }
                    self.push(&mut out, mapped);
                }
                Err(error) => self.skip(&mut out, key, error),
            }
            self.last_seen = self.last_seen.max(event.kv.revision());
        }
        out
    }

    /// The watch stream failed or ended (`Ok(None)` counts as an end): re-watch from
    /// `last_seen + 1` after a backoff. Ignored unless a watch is open.
    pub fn on_stream_error(&mut self, now: Instant) {
        if self.phase == Phase::Watching {
            self.stats.stream_errors += 1;
            self.back_off(now, false);
        }
    }

    fn back_off(&mut self, now: Instant, relist: bool) {
        let delay = self
            .backoff
            .next_delay(&self.config.backoff, &mut self.rng)
            .unwrap_or(self.config.backoff.max);
        self.phase = Phase::Backoff {
            until: now.saturating_add(delay),
            relist,
        };
    }

    fn check_family(&self, key: &[u8]) -> Result<(), MapError> {
        if key.starts_with(&self.key) {
            return Ok(());
        }
        let found = self.layout.parse(key)?.kind;
        Err(MapError::WrongFamily {
            expected: self.kind,
            found,
        })
    }

    fn push(&mut self, out: &mut Delivered, event: RegistryEvent) {
        self.stats.events += 1;
        out.events.push(event);
    }

    fn skip(&mut self, out: &mut Delivered, key: &[u8], error: MapError) {
        self.stats.map_errors += 1;
        out.errors.push((Vec::from(key), error));
    }
}
