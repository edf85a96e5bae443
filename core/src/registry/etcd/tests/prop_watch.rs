//! Property: a [`WatchState`] driven against a model etcd — random puts and deletes, random
//! compactions, stream breaks and silent streams — ends with a delivered view equal to the
//! model's current contents.

use alloc::{boxed::Box, collections::BTreeMap, format, string::String, vec::Vec};

use proptest::{prelude::*, test_runner::FileFailurePersistence};

use super::*;
use crate::{
    backoff::BackoffConfig,
    discovery::DiscoveryInfo,
    ids::NodeId,
    registry::RegistryEvent,
    rng::Rng,
    time::{Duration, Instant},
};

const NODES: u64 = 4;

#[derive(Clone, Debug)]
enum Op {
    Put { node: u64, version: u8 },
    Delete { node: u64 },
    Compact,
    Deliver { revisions: u8 },
    Break,
    Silence { secs: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..NODES, any::<u8>()).prop_map(|(node, version)| Op::Put { node, version }),
        2 => (0..NODES).prop_map(|node| Op::Delete { node }),
        1 => Just(Op::Compact),
        4 => (1u8..4).prop_map(|revisions| Op::Deliver { revisions }),
        1 => Just(Op::Break),
        1 => (1u8..30).prop_map(|secs| Op::Silence { secs }),
    ]
}

/// A model etcd holding one prefix, its history and a compaction point.
#[derive(Default)]
struct Etcd {
    kvs: BTreeMap<Vec<u8>, KeyValue>,
    revision: i64,
    history: Vec<(i64, WatchEvent)>,
    compacted: i64,
}

impl Etcd {
    fn key(node: u64) -> Vec<u8> {
        format!("/atapp/services/by_id/n{node}-{}", node + 1).into_bytes()
    }

    fn put(&mut self, node: u64, version: u8) {
        self.revision += 1;
        let key = Etcd::key(node);
        let value = if version.is_multiple_of(4) {
            Vec::new()
        } else {
            format!(
                "{{\"id\":{},\"name\":\"n{node}\",\"version\":\"v{version}\"}}",
                node + 1
            )
            .into_bytes()
        };
        let previous = self.kvs.get(&key).cloned();
        let kv = KeyValue {
            key: key.clone(),
            value,
            create_revision: previous
                .as_ref()
                .map_or(self.revision, |p| p.create_revision),
            mod_revision: self.revision,
            version: previous.as_ref().map_or(1, |p| p.version + 1),
            lease: 0,
        };
        self.kvs.insert(key, kv.clone());
        self.history.push((
            self.revision,
            WatchEvent {
                kind: EventKind::Put,
                kv,
                prev_kv: previous,
            },
        ));
    }

    fn delete(&mut self, node: u64) {
        let key = Etcd::key(node);
        if let Some(previous) = self.kvs.remove(&key) {
            self.revision += 1;
            self.history.push((
                self.revision,
                WatchEvent {
                    kind: EventKind::Delete,
                    kv: KeyValue {
                        key,
                        mod_revision: self.revision,
                        ..KeyValue::default()
                    },
                    prev_kv: Some(previous),
                },
            ));
        }
    }

    fn compact(&mut self) {
        self.compacted = self.revision;
        let compacted = self.compacted;
        self.history.retain(|(rev, _)| *rev >= compacted);
    }

    fn list(&self) -> Vec<KeyValue> {
        self.kvs.values().cloned().collect()
    }
}

/// The open watch stream: the next revision it delivers.
struct Harness {
    etcd: Etcd,
    watcher: WatchState,
    stream: Option<i64>,
    now: Instant,
    view: BTreeMap<(NodeId, String), DiscoveryInfo>,
}

impl Harness {
    fn apply(&mut self, out: Delivered) {
        assert_eq!(out.errors, Vec::new());
        for event in out.events {
            match event {
                RegistryEvent::DiscoveryPut(info) => {
                    self.view
                        .insert((info.id, info.name.clone()), DiscoveryInfo::clone(&info));
                }
                RegistryEvent::DiscoveryDelete { id, name, .. } => {
                    self.view.remove(&(id, name));
                }
                other => panic!("unexpected event {other:?}"),
            }
        }
    }

    /// Performs every action the watcher asks for now.
    fn drive(&mut self) {
        for _ in 0..16 {
            match self.watcher.poll(self.now) {
                WatchAction::List { .. } => {
                    let list = self.etcd.list();
                    let out = self.watcher.on_list(self.now, self.etcd.revision, &list);
                    self.apply(out);
                }
                WatchAction::Watch { from_revision, .. } => {
                    let from = i64::try_from(from_revision).expect("small revisions");
                    self.stream = Some(from);
                    self.check_compacted();
                }
                WatchAction::RequestProgress => {
                    // etcd answers only when the watcher is synced.
                    if self.stream == Some(self.etcd.revision + 1) {
                        let progress = WatchResponse {
                            header_revision: self.etcd.revision,
                            watch_id: -1,
                            ..WatchResponse::default()
                        };
                        let out = self.watcher.on_response(self.now, &progress);
                        self.apply(out);
                    }
                }
                WatchAction::Wait { .. } => return,
            }
        }
        panic!("watcher did not settle");
    }

    /// A stream behind the compaction point is cancelled (3.4 shape: header revision 0).
    fn check_compacted(&mut self) {
        if let Some(next) = self.stream
            && next < self.etcd.compacted
        {
            self.stream = None;
            let cancel = WatchResponse {
                canceled: true,
                compact_revision: self.etcd.compacted,
                watch_id: 3,
                ..WatchResponse::default()
            };
            let out = self.watcher.on_response(self.now, &cancel);
            self.apply(out);
        }
    }

    fn deliver(&mut self, revisions: usize) {
        self.check_compacted();
        let Some(mut next) = self.stream else { return };
        for _ in 0..revisions {
            let batch: Vec<WatchEvent> = self
                .etcd
                .history
                .iter()
                .filter(|(rev, _)| *rev == next)
                .map(|(_, e)| e.clone())
                .collect();
            if next > self.etcd.revision {
                break;
            }
            next += 1;
            if batch.is_empty() {
                continue;
            }
            let response = WatchResponse {
                header_revision: self.etcd.revision,
                watch_id: 3,
                events: batch,
                ..WatchResponse::default()
            };
            let out = self.watcher.on_response(self.now, &response);
            self.apply(out);
        }
        self.stream = Some(next);
    }
}

fn run(ops: Vec<Op>) {
    let config = WatchConfig {
        idle: Duration::from_secs(10),
        progress_timeout: Duration::from_secs(5),
        backoff: BackoffConfig::without_jitter(Duration::from_secs(1), Duration::from_secs(8), 0),
    };
    let mut h = Harness {
        etcd: Etcd::default(),
        watcher: WatchState::new(
            KeyKind::ById,
            KeyLayout::new("/atapp/services"),
            config,
            Rng::new(1),
        ),
        stream: None,
        now: Instant::from_secs(1),
        view: BTreeMap::new(),
    };
    h.drive();
    for op in ops {
        h.now += Duration::from_secs(1);
        match op {
            Op::Put { node, version } => h.etcd.put(node, version),
            Op::Delete { node } => h.etcd.delete(node),
            Op::Compact => h.etcd.compact(),
            Op::Deliver { revisions } => h.deliver(usize::from(revisions)),
            Op::Break => {
                if h.stream.take().is_some() {
                    h.watcher.on_stream_error(h.now);
                }
            }
            Op::Silence { secs } => h.now += Duration::from_secs(u64::from(secs)),
        }
        h.drive();
    }
    // Heal: keep delivering until the watcher has caught up with the model.
    for _ in 0..64 {
        if h.stream == Some(h.etcd.revision + 1) {
            break;
        }
        h.deliver(usize::MAX >> 1);
        h.now += Duration::from_secs(9);
        h.drive();
    }
    assert_eq!(
        h.stream,
        Some(h.etcd.revision + 1),
        "watcher never caught up"
    );

    let layout = KeyLayout::new("/atapp/services");
    let want: BTreeMap<(NodeId, String), DiscoveryInfo> = h
        .etcd
        .kvs
        .values()
        .map(|kv| match map_put(&layout, kv) {
            Ok(RegistryEvent::DiscoveryPut(info)) => {
                ((info.id, info.name.clone()), DiscoveryInfo::clone(&info))
            }
            other => panic!("model value maps: {other:?}"),
        })
        .collect();
    assert_eq!(h.view, want);
    let delivered: Vec<(Vec<u8>, u64)> = h
        .watcher
        .delivered()
        .iter()
        .map(|(k, r)| (k.to_vec(), r))
        .collect();
    let listed: Vec<(Vec<u8>, u64)> = h
        .etcd
        .kvs
        .values()
        .map(|kv| (kv.key.clone(), kv.revision()))
        .collect();
    assert_eq!(delivered, listed);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 192,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "../proptest-regressions/etcd_watch_model.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn watcher_view_converges_to_the_model(ops in proptest::collection::vec(op(), 0..60)) {
        run(ops);
    }
}
