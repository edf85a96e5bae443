//! Watch state transitions with exact instants, and the four discovery/topology orderings.

use alloc::{collections::BTreeMap, string::String, vec, vec::Vec};

use super::{
    records::{
        LIBATAPP_DISCOVERY, LIBATAPP_TOPOLOGY, expected_discovery, expected_topology, kv, layout,
    },
    *,
};
use crate::{
    backoff::BackoffConfig,
    discovery::{DiscoveryInfo, DiscoverySet, TopologyInfo},
    ids::NodeId,
    registry::RegistryEvent,
    rng::Rng,
    time::{Duration, Instant},
};

const ECHO_BY_ID: &str = "/atapp/services/by_id/echo-svr-1-4353";

fn config() -> WatchConfig {
    WatchConfig {
        idle: Duration::from_secs(10),
        progress_timeout: Duration::from_secs(5),
        backoff: BackoffConfig::without_jitter(Duration::from_secs(1), Duration::from_secs(8), 0),
    }
}

fn at(secs: u64) -> Instant {
    Instant::from_secs(secs)
}

fn watcher(kind: KeyKind) -> WatchState {
    WatchState::new(kind, layout(), config(), Rng::new(7))
}

fn watch_action(kind: KeyKind, from: u64) -> WatchAction {
    let (key, range_end) = layout().watch_range(kind);
    WatchAction::Watch {
        key,
        range_end,
        from_revision: from,
        prev_kv: true,
        progress_notify: true,
    }
}

fn put(key: &str, value: &str, create: i64, modr: i64) -> WatchEvent {
    WatchEvent {
        kind: EventKind::Put,
        kv: kv(key, value, create, modr),
        prev_kv: None,
    }
}

fn delete(key: &str, modr: i64) -> WatchEvent {
    WatchEvent {
        kind: EventKind::Delete,
        kv: KeyValue {
            key: key.as_bytes().to_vec(),
            mod_revision: modr,
            ..KeyValue::default()
        },
        prev_kv: None,
    }
}

fn events(header: i64, events: Vec<WatchEvent>) -> WatchResponse {
    WatchResponse {
        header_revision: header,
        watch_id: 1,
        events,
        ..WatchResponse::default()
    }
}

/// Lists at `revision` with `kvs` and opens the watch at `now`.
fn started(
    kind: KeyKind,
    now: Instant,
    revision: i64,
    kvs: &[KeyValue],
) -> (WatchState, Delivered) {
    let mut w = watcher(kind);
    let (key, range_end) = layout().watch_range(kind);
    assert_eq!(w.poll(now), WatchAction::List { key, range_end });
    assert_eq!(w.poll(now), WatchAction::Wait { until: None });
    let out = w.on_list(now, revision, kvs);
    assert_eq!(
        w.poll(now),
        watch_action(kind, u64::try_from(revision).expect("test revision") + 1)
    );
    (w, out)
}

fn echo_delete(revision: u64) -> RegistryEvent {
    RegistryEvent::DiscoveryDelete {
        id: NodeId(4353),
        name: String::from("echo-svr-1"),
        revision,
    }
}

#[test]
fn list_then_watch_from_the_next_revision() {
    let (mut w, out) = started(
        KeyKind::ById,
        at(100),
        10,
        &[kv(ECHO_BY_ID, LIBATAPP_DISCOVERY, 8, 8)],
    );
    assert_eq!(
        out,
        Delivered {
            events: vec![RegistryEvent::DiscoveryPut(expected_discovery(8).into())],
            errors: vec![],
        }
    );
    assert_eq!(w.last_seen(), 10);
    assert_eq!(
        w.poll(at(100)),
        WatchAction::Wait {
            until: Some(at(110))
        }
    );
    let created = WatchResponse {
        header_revision: 10,
        watch_id: 1,
        created: true,
        ..WatchResponse::default()
    };
    assert_eq!(w.on_response(at(101), &created), Delivered::default());
    assert_eq!(w.last_seen(), 10);
    let out = w.on_response(at(102), &events(12, vec![delete(ECHO_BY_ID, 12)]));
    assert_eq!(out.events, vec![echo_delete(12)]);
    assert_eq!((w.last_seen(), w.delivered().len()), (12, 0));
    assert_eq!(
        w.poll(at(102)),
        WatchAction::Wait {
            until: Some(at(112))
        }
    );
}

#[test]
fn stream_errors_back_off_and_rewatch_from_last_seen() {
    let (mut w, _) = started(KeyKind::ById, at(0), 10, &[]);
    w.on_response(
        at(1),
        &events(11, vec![put(ECHO_BY_ID, LIBATAPP_DISCOVERY, 11, 11)]),
    );
    w.on_stream_error(at(2));
    assert_eq!(w.poll(at(2)), WatchAction::Wait { until: Some(at(3)) });
    assert_eq!(w.poll(at(3)), watch_action(KeyKind::ById, 12));
    w.on_stream_error(at(3));
    assert_eq!(w.poll(at(4)), WatchAction::Wait { until: Some(at(5)) });
    assert_eq!(w.poll(at(5)), watch_action(KeyKind::ById, 12));
    w.on_stream_error(at(5));
    assert_eq!(w.poll(at(5)), WatchAction::Wait { until: Some(at(9)) });
    assert_eq!(w.poll(at(9)), watch_action(KeyKind::ById, 12));
    // Events reset the backoff.
    w.on_response(at(10), &events(13, vec![delete(ECHO_BY_ID, 13)]));
    w.on_stream_error(at(10));
    assert_eq!(
        w.poll(at(10)),
        WatchAction::Wait {
            until: Some(at(11))
        }
    );
    assert_eq!(w.poll(at(11)), watch_action(KeyKind::ById, 14));
    assert_eq!(
        (w.stats().stream_errors, w.stats().watches, w.stats().lists),
        (4, 5, 1)
    );
}

#[test]
fn compaction_cancel_relists_and_diffs_with_3_4_header_zero() {
    let a = "/atapp/services/by_id/a-1";
    let b = "/atapp/services/by_id/b-2";
    let c = "/atapp/services/by_id/c-3";
    let (mut w, _) = started(
        KeyKind::ById,
        at(0),
        10,
        &[kv(a, "", 5, 5), kv(b, "", 6, 6), kv(c, "", 7, 7)],
    );
    w.on_response(at(1), &events(11, vec![put(a, "", 5, 11)]));
    // etcd 3.4: created, then canceled with compact_revision and header revision 0.
    w.on_response(
        at(2),
        &WatchResponse {
            created: true,
            watch_id: 1,
            header_revision: 20,
            ..WatchResponse::default()
        },
    );
    let cancel = WatchResponse {
        header_revision: 0,
        watch_id: 1,
        canceled: true,
        compact_revision: 18,
        ..WatchResponse::default()
    };
    assert_eq!(w.on_response(at(2), &cancel), Delivered::default());
    assert_eq!(w.last_seen(), 11);
    let (key, range_end) = layout().watch_range(KeyKind::ById);
    assert_eq!(w.poll(at(2)), WatchAction::List { key, range_end });
    // In the gap: b deleted, c deleted and recreated, d created.
    let d = "/atapp/services/by_id/d-4";
    let list = [kv(a, "", 5, 11), kv(c, "", 15, 15), kv(d, "", 16, 16)];
    let out = w.on_list(at(3), 20, &list);
    let key_only = |id: u64, name: &str, revision: u64| {
        RegistryEvent::DiscoveryPut(
            DiscoveryInfo {
                id: NodeId(id),
                name: String::from(name),
                revision,
                ..DiscoveryInfo::default()
            }
            .into(),
        )
    };
    assert_eq!(
        out.events,
        vec![
            RegistryEvent::DiscoveryDelete {
                id: NodeId(2),
                name: String::from("b"),
                revision: 20
            },
            key_only(3, "c", 15),
            key_only(4, "d", 16),
        ]
    );
    assert_eq!(w.poll(at(3)), watch_action(KeyKind::ById, 21));
    assert_eq!(
        (
            w.stats().compactions,
            w.stats().synthetic_deletes,
            w.stats().lists
        ),
        (1, 1, 2)
    );
}

#[test]
fn cancel_without_compaction_rewatches_after_backoff() {
    let (mut w, _) = started(KeyKind::Topology, at(0), 10, &[]);
    let cancel = WatchResponse {
        canceled: true,
        ..WatchResponse::default()
    };
    w.on_response(at(4), &cancel);
    assert_eq!(w.poll(at(4)), WatchAction::Wait { until: Some(at(5)) });
    assert_eq!(w.poll(at(5)), watch_action(KeyKind::Topology, 11));
    assert_eq!((w.stats().cancels, w.stats().compactions), (1, 0));
}

#[test]
fn progress_notify_with_watch_id_minus_one_is_a_bookmark() {
    let (mut w, _) = started(KeyKind::ByName, at(0), 10, &[]);
    let progress = WatchResponse {
        header_revision: 50,
        watch_id: -1,
        ..WatchResponse::default()
    };
    assert!(progress.is_progress_notify());
    assert_eq!(w.on_response(at(8), &progress), Delivered::default());
    assert_eq!(w.last_seen(), 50);
    assert_eq!(
        w.poll(at(9)),
        WatchAction::Wait {
            until: Some(at(18))
        }
    );
    w.on_stream_error(at(9));
    assert_eq!(w.poll(at(10)), watch_action(KeyKind::ByName, 51));
    assert_eq!(w.stats().progress_notifies, 1);
}

#[test]
fn watchdog_requests_progress_then_declares_the_stream_dead() {
    let (mut w, _) = started(KeyKind::ById, at(100), 10, &[]);
    assert_eq!(
        w.poll(at(109)),
        WatchAction::Wait {
            until: Some(at(110))
        }
    );
    assert_eq!(w.poll(at(110)), WatchAction::RequestProgress);
    assert_eq!(
        w.poll(at(112)),
        WatchAction::Wait {
            until: Some(at(115))
        }
    );
    // A progress answer in time rearms the idle timer.
    w.on_response(
        at(113),
        &WatchResponse {
            header_revision: 10,
            watch_id: -1,
            ..WatchResponse::default()
        },
    );
    assert_eq!(
        w.poll(at(113)),
        WatchAction::Wait {
            until: Some(at(123))
        }
    );
    assert_eq!(w.poll(at(123)), WatchAction::RequestProgress);
    // Silence: dead at exactly 128, re-watched at once from last_seen + 1.
    assert_eq!(
        w.poll(at(127)),
        WatchAction::Wait {
            until: Some(at(128))
        }
    );
    assert_eq!(w.poll(at(128)), watch_action(KeyKind::ById, 11));
    assert_eq!(
        w.poll(at(128)),
        WatchAction::Wait {
            until: Some(at(138))
        }
    );
    assert_eq!(
        (w.stats().dead_streams, w.stats().progress_requests),
        (1, 2)
    );
}

#[test]
fn garbage_is_counted_and_the_watcher_continues() {
    let bad = "/atapp/services/by_id/bad-5";
    let (mut w, out) = started(KeyKind::ById, at(0), 10, &[kv(bad, "{\"id\":", 9, 9)]);
    assert_eq!(out.events, vec![]);
    assert_eq!(out.errors.len(), 1);
    assert_eq!(out.errors[0].0, bad.as_bytes().to_vec());
    let out = w.on_response(
        at(1),
        &events(
            12,
            vec![
                put("/atapp/services/by_id/x-y", "{}", 11, 11),
                put(
                    "/atapp/services/topology/echo-svr-1-4353",
                    LIBATAPP_TOPOLOGY,
                    12,
                    12,
                ),
                put(ECHO_BY_ID, LIBATAPP_DISCOVERY, 12, 12),
            ],
        ),
    );
    assert_eq!(
        out.events,
        vec![RegistryEvent::DiscoveryPut(expected_discovery(12).into())]
    );
    assert_eq!(
        out.errors,
        vec![
            (
                b"/atapp/services/by_id/x-y".to_vec(),
                MapError::Key(KeyError::BadId(String::from("y")))
            ),
            (
                b"/atapp/services/topology/echo-svr-1-4353".to_vec(),
                MapError::WrongFamily {
                    expected: KeyKind::ById,
                    found: KeyKind::Topology
                }
            ),
        ]
    );
    assert_eq!((w.last_seen(), w.stats().map_errors), (12, 3));
    assert_eq!(w.delivered().get(ECHO_BY_ID.as_bytes()), Some(12));
    assert_eq!(w.delivered().get(bad.as_bytes()), None);
}

#[test]
fn feeds_outside_their_phase_are_ignored() {
    let mut w = watcher(KeyKind::ById);
    let e = events(5, vec![put(ECHO_BY_ID, "", 5, 5)]);
    assert_eq!(w.on_response(at(0), &e), Delivered::default());
    assert_eq!(w.on_list(at(0), 5, &[]), Delivered::default());
    w.on_stream_error(at(0));
    w.on_list_failed(at(0));
    assert_eq!(w.stats(), WatchStats::default());
    let (key, range_end) = layout().watch_range(KeyKind::ById);
    assert_eq!(w.poll(at(0)), WatchAction::List { key, range_end });
    w.on_list_failed(at(3));
    assert_eq!(w.poll(at(3)), WatchAction::Wait { until: Some(at(4)) });
    assert!(matches!(w.poll(at(4)), WatchAction::List { .. }));
    assert_eq!(w.stats().list_errors, 1);
}

/// What the node holds after applying events: discovery set contents and topology records.
#[derive(Debug, Default, PartialEq, Eq)]
struct View {
    discovery: Vec<DiscoveryInfo>,
    topology: BTreeMap<u64, TopologyInfo>,
}

fn apply(set: &mut DiscoverySet, topo: &mut BTreeMap<u64, TopologyInfo>, out: Delivered) {
    assert_eq!(out.errors, vec![]);
    for event in out.events {
        match event {
            RegistryEvent::DiscoveryPut(info) => {
                set.put(info);
            }
            RegistryEvent::DiscoveryDelete { id, name, revision } => {
                set.remove(id, &name, revision);
            }
            RegistryEvent::TopologyPut(info) => {
                let newer = topo
                    .get(&info.id.0)
                    .is_none_or(|t| t.revision <= info.revision);
                if newer {
                    topo.insert(info.id.0, (*info).clone());
                }
            }
            RegistryEvent::TopologyDelete { id, revision } => {
                if topo.get(&id.0).is_some_and(|t| t.revision <= revision) {
                    topo.remove(&id.0);
                }
            }
            RegistryEvent::Session { .. } => panic!("etcd sees no session, only a lease"),
        }
    }
}

#[test]
fn the_four_discovery_topology_orderings_agree() {
    let echo_topo = "/atapp/services/topology/echo-svr-1-4353";
    let echo_name = "/atapp/services/by_name/echo-svr-1-4353";
    let gw = |family: &str| alloc::format!("/atapp/services/{family}/gw-4097");
    let list_rev = 5;
    let lists = |kind: KeyKind| -> Vec<KeyValue> {
        match kind {
            KeyKind::ById => vec![
                kv(&gw("by_id"), "", 3, 3),
                kv(ECHO_BY_ID, LIBATAPP_DISCOVERY, 5, 5),
            ],
            KeyKind::ByName => vec![
                kv(&gw("by_name"), "", 3, 3),
                kv(echo_name, LIBATAPP_DISCOVERY, 5, 5),
            ],
            KeyKind::Topology => vec![
                kv(&gw("topology"), "", 3, 3),
                kv(echo_topo, LIBATAPP_TOPOLOGY, 5, 5),
            ],
        }
    };
    let moved = LIBATAPP_TOPOLOGY.replace("4097", "4098");
    let stream = |kind: KeyKind| -> WatchResponse {
        match kind {
            KeyKind::Topology => events(
                9,
                vec![put(echo_topo, &moved, 5, 7), delete(&gw("topology"), 9)],
            ),
            KeyKind::ById => events(9, vec![delete(&gw("by_id"), 9)]),
            KeyKind::ByName => events(9, vec![delete(&gw("by_name"), 9)]),
        }
    };
    // (topology first?, topology events before discovery events?)
    let mut views = Vec::new();
    for (topology_list_first, topology_events_first) in
        [(true, true), (true, false), (false, true), (false, false)]
    {
        let mut set = DiscoverySet::new();
        let mut topo = BTreeMap::new();
        let mut watchers: Vec<WatchState> = KeyKind::ALL.iter().map(|&k| watcher(k)).collect();
        let order = |topology_first: bool| -> [usize; 3] {
            if topology_first { [0, 1, 2] } else { [1, 2, 0] }
        };
        for i in order(topology_list_first) {
            let w = &mut watchers[i];
            assert!(matches!(w.poll(at(0)), WatchAction::List { .. }));
            let out = w.on_list(at(0), list_rev, &lists(w.kind()));
            apply(&mut set, &mut topo, out);
            assert!(matches!(
                w.poll(at(0)),
                WatchAction::Watch {
                    from_revision: 6,
                    ..
                }
            ));
        }
        for i in order(topology_events_first) {
            let w = &mut watchers[i];
            let out = w.on_response(at(1), &stream(w.kind()));
            apply(&mut set, &mut topo, out);
        }
        let mut discovery: Vec<DiscoveryInfo> = set.iter().cloned().collect();
        discovery.sort_by_key(|d| d.id);
        views.push(View {
            discovery,
            topology: topo,
        });
    }
    let mut moved_topology = expected_topology(7);
    moved_topology.upstream_id = NodeId(4098);
    let want = View {
        discovery: vec![expected_discovery(5)],
        topology: BTreeMap::from([(4353, moved_topology)]),
    };
    for view in views {
        assert_eq!(view, want);
    }
}
