//! The etcd backend at feed level against a real etcd: registration (exact keys, exact
//! libatapp JSON, one lease), watching (a second node sees the first exactly), libatapp
//! documents, garbage, upstream switches, graceful shutdown, idle streams.

#![cfg(feature = "etcd")]

mod etcd_support;

use std::time::Duration;

use etcd_support::{
    EtcdServer,
    feed::{Backend, registration},
};
use std::collections::BTreeMap;

use switchboard_core::{
    discovery::{Area, DiscoveryInfo, Gateway, Metadata, Runtime, TopologyData, TopologyInfo},
    ids::NodeId,
    registry::RegistryEvent,
    registry::etcd::KeyKind,
};
use switchboard_tokio::registry::FeedEvent;

const ALPHA_DISCOVERY: &str = concat!(
    r#"{"id":257,"name":"alpha","hostname":"test-host","pid":4242,"#,
    r#""listen":["atcp://127.0.0.1:7001"],"identity":"instance-257-1"}"#
);
const ALPHA_TOPOLOGY: &str =
    r#"{"id":257,"name":"alpha","hostname":"test-host","pid":4242,"identity":"instance-257-1"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_writes_three_keys_with_libatapp_json_on_one_lease() {
    let etcd = EtcdServer::start().await;
    let mut alpha = Backend::spawn(etcd.options("/sb/"), registration(257, "alpha", 0, 7001, 1));
    alpha.registered().await;

    // libatapp's three keys, and the name's claim key (`names/<name>`, outside libatapp's
    // families), which makes the name claim atomic (ARCHITECTURE §10).
    assert_eq!(
        etcd.keys("/sb/").await,
        vec![
            "/sb/by_id/alpha-257".to_owned(),
            "/sb/by_name/alpha-257".to_owned(),
            "/sb/names/alpha".to_owned(),
            "/sb/topology/alpha-257".to_owned(),
        ]
    );
    let claim = etcd.get("/sb/names/alpha").await.expect("claim key");
    assert_eq!(claim.value_str().expect("utf-8"), "257");
    let by_id = etcd.get("/sb/by_id/alpha-257").await.expect("by_id key");
    let by_name = etcd
        .get("/sb/by_name/alpha-257")
        .await
        .expect("by_name key");
    let topology = etcd
        .get("/sb/topology/alpha-257")
        .await
        .expect("topology key");
    assert_eq!(by_id.value_str().expect("utf-8"), ALPHA_DISCOVERY);
    assert_eq!(by_name.value_str().expect("utf-8"), ALPHA_DISCOVERY);
    assert_eq!(topology.value_str().expect("utf-8"), ALPHA_TOPOLOGY);

    // One txn: one revision, one lease, the backend's lease, alive with the asked TTL.
    let counters = alpha.stats.snapshot();
    assert!(counters.registered);
    assert_ne!(counters.lease_id, 0);
    for kv in [&by_id, &by_name, &topology, &claim] {
        assert_eq!(kv.lease(), counters.lease_id);
        assert_eq!(kv.create_revision(), by_id.create_revision());
        assert_eq!(kv.version(), 1);
    }
    let ttl = etcd.lease_ttl(counters.lease_id).await;
    assert!((1..=5).contains(&ttl), "lease ttl {ttl}");
    assert_eq!(
        (
            counters.lease.grants,
            counters.lease.registrations,
            counters.lease.conflicts
        ),
        (1, 1, 0)
    );

    // The backend reports its own records at the txn's revision.
    let revision = u64::try_from(by_id.mod_revision()).expect("positive revision");
    let mut own = registration(257, "alpha", 0, 7001, 1);
    own.discovery.revision = revision;
    own.topology.revision = revision;
    assert_eq!(alpha.view.discovery_of(257), Some(&own.discovery));
    assert_eq!(alpha.view.topology_of(257), Some(&own.topology));
    alpha.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_node_sees_the_first_exactly_and_each_change_once_per_watcher() {
    let etcd = EtcdServer::start().await;
    let mut alpha = Backend::spawn(etcd.options("/sb/"), registration(257, "alpha", 0, 7001, 1));
    alpha.registered().await;
    let mut beta = Backend::spawn(
        etcd.options("/sb/"),
        registration(258, "beta", 257, 7002, 1),
    );
    beta.registered().await;

    let revision = u64::try_from(
        etcd.get("/sb/by_id/alpha-257")
            .await
            .expect("alpha registered")
            .mod_revision(),
    )
    .expect("positive revision");
    let mut expected = registration(257, "alpha", 0, 7001, 1);
    expected.discovery.revision = revision;
    expected.topology.revision = revision;
    // The list of each watcher: by_id and by_name both carry alpha's discovery, topology once.
    let alpha_events: Vec<&RegistryEvent> = beta
        .seen
        .iter()
        .filter_map(|e| match e {
            FeedEvent::Registry(r) if registry_id(r) == 257 => Some(r),
            _ => None,
        })
        .collect();
    let puts = |want: &RegistryEvent| alpha_events.iter().filter(|e| **e == want).count();
    assert_eq!(
        puts(&RegistryEvent::DiscoveryPut(
            expected.discovery.clone().into()
        )),
        2
    );
    assert_eq!(
        puts(&RegistryEvent::TopologyPut(
            expected.topology.clone().into()
        )),
        1
    );
    assert_eq!(alpha_events.len(), 3);

    // And alpha sees beta through its watch, exactly.
    alpha
        .until_view("beta in alpha's view", |v| {
            v.discovery_of(258).is_some() && v.topology_of(258).is_some()
        })
        .await;
    let beta_revision = u64::try_from(
        etcd.get("/sb/topology/beta-258")
            .await
            .expect("beta registered")
            .mod_revision(),
    )
    .expect("positive revision");
    let mut beta_records = registration(258, "beta", 257, 7002, 1);
    beta_records.discovery.revision = beta_revision;
    beta_records.topology.revision = beta_revision;
    assert_eq!(alpha.view.discovery_of(258), Some(&beta_records.discovery));
    assert_eq!(alpha.view.topology_of(258), Some(&beta_records.topology));
    assert_eq!(beta.stats.snapshot().map_errors(), 0);
    beta.shutdown().await;
    alpha.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_revokes_the_lease_and_every_key_goes_in_one_revision() {
    let etcd = EtcdServer::start().await;
    let mut watcher = Backend::spawn(
        etcd.options("/sb/"),
        registration(300, "watcher", 0, 7300, 1),
    );
    watcher.registered().await;
    let mut alpha = Backend::spawn(etcd.options("/sb/"), registration(257, "alpha", 0, 7001, 1));
    alpha.registered().await;
    let lease = alpha.stats.snapshot().lease_id;
    watcher
        .until_view("alpha seen", |v| {
            v.discovery_of(257).is_some() && v.topology_of(257).is_some()
        })
        .await;

    alpha.shutdown().await;
    assert!(etcd.keys("/sb/").await.iter().all(|k| !k.contains("alpha")));
    assert_eq!(etcd.lease_ttl(lease).await, -1);

    // One delete per watcher: by_id, by_name (both discovery) and topology.
    let is_alpha_delete = |e: &FeedEvent| {
        matches!(
            e,
            FeedEvent::Registry(RegistryEvent::DiscoveryDelete {
                id: NodeId(257),
                ..
            }) | FeedEvent::Registry(RegistryEvent::TopologyDelete {
                id: NodeId(257),
                ..
            })
        )
    };
    let mut deletes = Vec::new();
    while deletes.len() < 3 {
        let event = watcher.until("alpha's deletes", is_alpha_delete).await;
        if let FeedEvent::Registry(r) = event {
            deletes.push(r);
        }
    }
    let _ = watcher.drain_for(Duration::from_millis(300)).await;
    assert_eq!(
        watcher.seen.iter().filter(|e| is_alpha_delete(e)).count(),
        3
    );
    let revision = match deletes.first() {
        Some(RegistryEvent::TopologyDelete { revision, .. }) => *revision,
        Some(RegistryEvent::DiscoveryDelete { revision, .. }) => *revision,
        _ => panic!("no delete seen: {deletes:?}"),
    };
    let mut got = deletes.clone();
    got.sort_by_key(|e| format!("{e:?}"));
    let mut want = vec![
        RegistryEvent::DiscoveryDelete {
            id: NodeId(257),
            name: "alpha".into(),
            revision,
        },
        RegistryEvent::DiscoveryDelete {
            id: NodeId(257),
            name: "alpha".into(),
            revision,
        },
        RegistryEvent::TopologyDelete {
            id: NodeId(257),
            revision,
        },
    ];
    want.sort_by_key(|e| format!("{e:?}"));
    assert_eq!(got, want);
    watcher.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_switch_rewrites_only_the_topology_key_on_the_same_lease() {
    let etcd = EtcdServer::start().await;
    let records = registration(258, "beta", 257, 7002, 1);
    let mut beta = Backend::spawn(etcd.options("/sb/"), records.clone());
    beta.registered().await;
    // Registered after listing: the watcher has beta's three records by then.
    let mut watcher = Backend::spawn(
        etcd.options("/sb/"),
        registration(300, "watcher", 0, 7300, 1),
    );
    watcher.registered().await;
    assert!(watcher.view.topology_of(258).is_some() && watcher.view.discovery_of(258).is_some());
    let by_id = etcd.get("/sb/by_id/beta-258").await.expect("by_id");
    let by_name = etcd.get("/sb/by_name/beta-258").await.expect("by_name");
    let before = etcd.get("/sb/topology/beta-258").await.expect("topology");
    let seen_before = watcher.seen.len();

    let mut switched = records.topology.clone();
    switched.upstream_id = NodeId(259);
    beta.update_topology(switched.clone()).await;
    watcher
        .until_view("the switch", |v| {
            v.topology_of(258)
                .is_some_and(|t| t.upstream_id == NodeId(259))
        })
        .await;

    let after = etcd.get("/sb/topology/beta-258").await.expect("topology");
    assert_eq!(after.value(), switched.to_json().as_slice());
    assert_eq!(
        after.value_str().expect("utf-8"),
        r#"{"id":258,"name":"beta","hostname":"test-host","pid":4242,"identity":"instance-258-1","upstream_id":259}"#
    );
    assert_eq!(after.lease(), before.lease());
    assert_eq!(after.version(), 2);
    assert!(after.mod_revision() > before.mod_revision());
    // The discovery keys are untouched: same revision, same bytes.
    for (key, was) in [
        ("/sb/by_id/beta-258", by_id),
        ("/sb/by_name/beta-258", by_name),
    ] {
        let now = etcd.get(key).await.expect("discovery key");
        assert_eq!(
            (now.mod_revision(), now.version(), now.value()),
            (was.mod_revision(), was.version(), was.value())
        );
    }
    // The watcher got exactly one topology put for the switch, and no discovery event.
    let mut expected = switched;
    expected.revision = u64::try_from(after.mod_revision()).expect("positive revision");
    let _ = watcher.drain_for(Duration::from_millis(500)).await;
    let since: Vec<&FeedEvent> = watcher.seen[seen_before..]
        .iter()
        .filter(|e| matches!(e, FeedEvent::Registry(r) if registry_id(r) == 258))
        .collect();
    assert_eq!(
        since,
        vec![&FeedEvent::Registry(RegistryEvent::TopologyPut(
            expected.into()
        ))]
    );
    assert_eq!(beta.stats.snapshot().topology_writes, 1);
    beta.shutdown().await;
    watcher.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_streams_stay_up_with_progress_requests_and_http2_keepalive() {
    let etcd = EtcdServer::start().await;
    let mut alpha = Backend::spawn(etcd.options("/sb/"), registration(257, "alpha", 0, 7001, 1));
    alpha.registered().await;
    // 3 s silence bound: progress is requested after 1 s of quiet. 8 s of nothing at all.
    let extra = alpha.drain_for(Duration::from_secs(8)).await;
    assert_eq!(extra, Vec::<FeedEvent>::new());
    let counters = alpha.stats.snapshot();
    for kind in KeyKind::ALL {
        let w = counters.watcher(kind);
        assert_eq!(
            (
                w.lists,
                w.watches,
                w.stream_errors,
                w.dead_streams,
                w.cancels
            ),
            (1, 1, 0, 0, 0),
            "{kind:?}: {w:?}"
        );
        assert!(w.progress_requests >= 3, "{kind:?}: {w:?}");
        assert!(w.progress_notifies >= 3, "{kind:?}: {w:?}");
    }
    assert!(counters.lease.keepalives >= 5, "{:?}", counters.lease);
    assert_eq!(counters.lease.grants, 1);
    alpha.shutdown().await;
}

fn registry_id(event: &RegistryEvent) -> u64 {
    match event {
        RegistryEvent::DiscoveryPut(info) => info.id.0,
        RegistryEvent::TopologyPut(info) => info.id.0,
        RegistryEvent::DiscoveryDelete { id, .. } | RegistryEvent::TopologyDelete { id, .. } => {
            id.0
        }
        _ => 0,
    }
}

/// etcd closes connections that ping more often than every 5 s (`GOAWAY too_many_pings`);
/// with the default 30 s silence bound, no progress request keeps the connection busy for
/// 10 s. The client's HTTP/2 keepalive must stay within etcd's policy: 20 quiet seconds
/// break nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_connection_is_not_closed_by_etcds_ping_policy() {
    let etcd = EtcdServer::start().await;
    let mut options = etcd.options("/sb/");
    options.watch_silence = Duration::from_secs(30);
    let mut alpha = Backend::spawn(options, registration(257, "alpha", 0, 7001, 1));
    alpha.registered().await;
    let extra = alpha.drain_for(Duration::from_secs(20)).await;
    assert_eq!(extra, Vec::<FeedEvent>::new());
    let counters = alpha.stats.snapshot();
    for kind in KeyKind::ALL {
        let w = counters.watcher(kind);
        assert_eq!(
            (
                w.lists,
                w.watches,
                w.stream_errors,
                w.dead_streams,
                w.cancels
            ),
            (1, 1, 0, 0, 0),
            "{kind:?}: {w:?}"
        );
        // A request after 10 s of quiet, maybe a second one at 20 s; each answered.
        assert!((1..=2).contains(&w.progress_requests), "{kind:?}: {w:?}");
    }
    assert_eq!((counters.lease.grants, counters.lease.lost), (1, 0));
    alpha.shutdown().await;
}

/// An `atapp_discovery` as libatapp writes it: protobuf JSON with the original field names,
/// declaration order, defaults omitted, int64 unquoted, compact.
const LIBATAPP_DISCOVERY: &str = concat!(
    r#"{"id":8193,"name":"lobby-svr-3","hostname":"game-07.sh2","pid":17733,"#,
    r#""listen":["atcp://10.2.0.7:21437","ipv4://10.2.0.7:21438"],"#,
    r#""hash_code":"6F1C0B0AD2E4A3F19C8B7A6E5D4C3B2A","type_id":3,"type_name":"lobby","#,
    r#""area":{"region":"cn-east","district":"sh","zone_id":2002},"#,
    r#""version":"1.14.0","custom_data":"{\"shard\":3}","#,
    r#""identity":"5e3b1c2a-0d4f-4e6a-8b7c-9d0e1f2a3b4c","#,
    r#""gateways":[{"address":"atcp://203.0.113.9:21437","match_hosts":["gw-1","gw-2"],"#,
    r#""match_namespaces":["prod"],"match_labels":{"isp":"ct"}}],"#,
    r#""runtime":{"stateful_pod_index":3},"#,
    r#""atbus_protocol_version":3,"atbus_protocol_min_version":3,"#,
    r#""metadata":{"api_version":"v2","kind":"lobby","group":"game","name":"lobby-svr","#,
    r#""namespace_name":"prod","uid":"f00d","service_subset":"blue","#,
    r#""labels":{"region":"cn-east","tier":"edge"}}}"#
);

/// An `atapp_topology_info` as libatapp writes it.
const LIBATAPP_TOPOLOGY: &str = concat!(
    r#"{"id":8193,"name":"lobby-svr-3","hostname":"game-07.sh2","pid":17733,"#,
    r#""identity":"5e3b1c2a-0d4f-4e6a-8b7c-9d0e1f2a3b4c","version":"1.14.0","#,
    r#""upstream_id":4097,"data":{"label":{"rack":"r12"}}}"#
);

fn text_map(items: &[(&str, &str)]) -> BTreeMap<String, String> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn lobby_discovery(revision: u64) -> DiscoveryInfo {
    DiscoveryInfo {
        id: NodeId(8193),
        name: "lobby-svr-3".into(),
        hostname: "game-07.sh2".into(),
        pid: 17733,
        listen: vec![
            "atcp://10.2.0.7:21437".into(),
            "ipv4://10.2.0.7:21438".into(),
        ],
        hash_code: "6F1C0B0AD2E4A3F19C8B7A6E5D4C3B2A".into(),
        type_id: 3,
        type_name: "lobby".into(),
        area: Area {
            region: "cn-east".into(),
            district: "sh".into(),
            zone_id: 2002,
        }
        .into(),
        version: "1.14.0".into(),
        custom_data: r#"{"shard":3}"#.into(),
        identity: "5e3b1c2a-0d4f-4e6a-8b7c-9d0e1f2a3b4c".into(),
        gateways: vec![Gateway {
            address: "atcp://203.0.113.9:21437".into(),
            match_hosts: vec!["gw-1".into(), "gw-2".into()],
            match_namespaces: vec!["prod".into()],
            match_labels: text_map(&[("isp", "ct")]).into(),
        }]
        .into(),
        runtime: Runtime {
            stateful_pod_index: 3,
        },
        atbus_protocol_version: 3,
        atbus_protocol_min_version: 3,
        incarnation: 0,
        metadata: Metadata {
            api_version: "v2".into(),
            kind: "lobby".into(),
            group: "game".into(),
            name: "lobby-svr".into(),
            namespace_name: "prod".into(),
            uid: "f00d".into(),
            service_subset: "blue".into(),
            labels: text_map(&[("region", "cn-east"), ("tier", "edge")]).into(),
        }
        .into(),
        revision,
    }
}

fn lobby_topology(revision: u64) -> TopologyInfo {
    TopologyInfo {
        id: NodeId(8193),
        name: "lobby-svr-3".into(),
        hostname: "game-07.sh2".into(),
        pid: 17733,
        identity: "5e3b1c2a-0d4f-4e6a-8b7c-9d0e1f2a3b4c".into(),
        version: "1.14.0".into(),
        upstream_id: NodeId(4097),
        data: TopologyData {
            label: text_map(&[("rack", "r12")]).into(),
        }
        .into(),
        revision,
    }
}

fn rev(revision: i64) -> u64 {
    u64::try_from(revision).expect("positive revision")
}

/// Documents written exactly as a libatapp node writes them (keys in its layout, values in
/// its JSON, topology first) decode into the expected records — from the list and from the
/// watch; libatapp's key-only records take their identity from the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libatapp_documents_decode_into_the_expected_records() {
    let etcd = EtcdServer::start().await;
    let base = "/atapp/services/";
    // Before the backend starts: seen by its lists.
    let listed_topology = etcd
        .put(
            "/atapp/services/topology/lobby-svr-3-8193",
            LIBATAPP_TOPOLOGY.as_bytes(),
            None,
        )
        .await;
    let listed_by_id = etcd
        .put(
            "/atapp/services/by_id/lobby-svr-3-8193",
            LIBATAPP_DISCOVERY.as_bytes(),
            None,
        )
        .await;
    let listed_by_name = etcd
        .put(
            "/atapp/services/by_name/lobby-svr-3-8193",
            LIBATAPP_DISCOVERY.as_bytes(),
            None,
        )
        .await;
    let key_only = etcd
        .put("/atapp/services/by_name/legacy-svr-77", b"", None)
        .await;
    let mut node = Backend::spawn(etcd.options(base), registration(300, "watcher", 0, 7300, 1));
    node.registered().await;
    let expected = vec![
        FeedEvent::Registry(RegistryEvent::DiscoveryPut(
            lobby_discovery(rev(listed_by_id)).into(),
        )),
        FeedEvent::Registry(RegistryEvent::DiscoveryPut(
            lobby_discovery(rev(listed_by_name)).into(),
        )),
        FeedEvent::Registry(RegistryEvent::TopologyPut(
            lobby_topology(rev(listed_topology)).into(),
        )),
        FeedEvent::Registry(RegistryEvent::DiscoveryPut(
            DiscoveryInfo {
                id: NodeId(77),
                name: "legacy-svr".into(),
                revision: rev(key_only),
                ..DiscoveryInfo::default()
            }
            .into(),
        )),
    ];
    for event in &expected {
        assert_eq!(
            node.seen.iter().filter(|e| *e == event).count(),
            1,
            "{event:?} in {:#?}",
            node.seen
        );
    }

    // While it watches: a libatapp node moving to another upstream, then going away.
    let moved = LIBATAPP_TOPOLOGY.replace(r#""upstream_id":4097"#, r#""upstream_id":4098"#);
    let moved_at = etcd
        .put(
            "/atapp/services/topology/lobby-svr-3-8193",
            moved.as_bytes(),
            None,
        )
        .await;
    let mut want = lobby_topology(rev(moved_at));
    want.upstream_id = NodeId(4098);
    node.until("the moved topology", |e| {
        *e == FeedEvent::Registry(RegistryEvent::TopologyPut(want.clone().into()))
    })
    .await;
    let gone_at = etcd.delete("/atapp/services/by_id/lobby-svr-3-8193").await;
    node.until("the delete", |e| {
        *e == FeedEvent::Registry(RegistryEvent::DiscoveryDelete {
            id: NodeId(8193),
            name: "lobby-svr-3".into(),
            revision: rev(gone_at),
        })
    })
    .await;
    assert_eq!(node.stats.snapshot().map_errors(), 0);
    node.shutdown().await;
}

/// Values that do not decode, and keys that do not parse, are skipped and counted — from the
/// list and from the watch — and the backend goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_in_etcd_is_skipped_and_counted() {
    let etcd = EtcdServer::start().await;
    etcd.put("/sb/by_id/bad-5", b"{not json", None).await;
    etcd.put("/sb/by_id/noid-x", ALPHA_DISCOVERY.as_bytes(), None)
        .await;
    etcd.put("/sb/topology/bad-6", b"[1,2]", None).await;
    let mut node = Backend::spawn(
        etcd.options("/sb/"),
        registration(300, "watcher", 0, 7300, 1),
    );
    node.registered().await;
    etcd.put("/sb/by_name/worse-8", &[0xff, 0xfe, 0x00], None)
        .await;
    let good_at = etcd
        .put("/sb/by_name/good-9", br#"{"id":9,"name":"good"}"#, None)
        .await;
    node.until("the good record", |e| {
        *e == FeedEvent::Registry(RegistryEvent::DiscoveryPut(
            DiscoveryInfo {
                id: NodeId(9),
                name: "good".into(),
                revision: rev(good_at),
                ..DiscoveryInfo::default()
            }
            .into(),
        ))
    })
    .await;
    let counters = node.stats.snapshot();
    assert_eq!(
        (
            counters.watcher(KeyKind::ById).map_errors,
            counters.watcher(KeyKind::ByName).map_errors,
            counters.watcher(KeyKind::Topology).map_errors,
        ),
        (2, 1, 1)
    );
    let others: Vec<&FeedEvent> = node
        .seen
        .iter()
        .filter(|e| matches!(e, FeedEvent::Registry(r) if ![9, 300].contains(&registry_id(r))))
        .collect();
    assert_eq!(others, Vec::<&FeedEvent>::new());
    node.shutdown().await;
}
