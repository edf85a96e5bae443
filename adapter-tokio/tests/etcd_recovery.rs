//! The etcd backend recovering against a real etcd: a forced compaction (re-list and diff),
//! etcd SIGKILLed and restarted, the lease revoked from outside, a duplicate id.

#![cfg(feature = "etcd")]

mod etcd_support;

use std::time::Duration;

use etcd_support::{
    EtcdServer,
    feed::{Backend, registration},
};
use switchboard_core::{ids::NodeId, registry::etcd::KeyKind};
use switchboard_tokio::{etcd::fault, registry::FeedEvent};

fn rev(revision: i64) -> u64 {
    u64::try_from(revision).expect("positive revision")
}

/// A watcher whose history was compacted away re-lists and diffs: the node deleted in the
/// gap is removed, the node added is added, the changed record is replaced — no stale and no
/// missing node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_relist_leaves_no_stale_and_no_missing_node() {
    let etcd = EtcdServer::start().await;
    let mut alpha = Backend::spawn(etcd.options("/sb/"), registration(257, "alpha", 0, 7001, 1));
    alpha.registered().await;
    let mut beta = Backend::spawn(etcd.options("/sb/"), registration(258, "beta", 0, 7002, 1));
    beta.registered().await;

    // The watcher lists, then stops before opening its watches.
    let holds: Vec<fault::WatcherDelay> = KeyKind::ALL
        .iter()
        .map(|&kind| fault::delay_watcher("/sb/", NodeId(300), kind))
        .collect();
    let mut watcher = Backend::spawn(
        etcd.options("/sb/"),
        registration(300, "watcher", 0, 7300, 1),
    );
    for hold in &holds {
        tokio::time::timeout(Duration::from_secs(30), hold.until_stopped())
            .await
            .expect("the watcher listed");
    }

    // Meanwhile: beta leaves, gamma arrives, alpha switches upstream; then the history goes.
    beta.shutdown().await;
    let mut gamma = Backend::spawn(etcd.options("/sb/"), registration(259, "gamma", 0, 7003, 1));
    gamma.registered().await;
    let mut switched = registration(257, "alpha", 0, 7001, 1).topology;
    switched.upstream_id = NodeId(259);
    alpha.update_topology(switched.clone()).await;
    let topology_key = "/sb/topology/alpha-257";
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while etcd.get(topology_key).await.map(|kv| kv.value().to_vec()) != Some(switched.to_json()) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "alpha's switch not written"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let compacted_at = etcd.revision().await;
    etcd.compact(compacted_at, true).await;
    drop(holds);

    watcher.registered().await;
    watcher
        .until_view("the re-listed view", |v| {
            v.discovered() == [257, 259, 300] && v.in_topology() == [257, 259, 300]
        })
        .await;
    let moved = etcd.get(topology_key).await.expect("alpha's topology");
    switched.revision = rev(moved.mod_revision());
    assert_eq!(watcher.view.topology_of(257), Some(&switched));
    let gamma_at = rev(etcd
        .get("/sb/by_id/gamma-259")
        .await
        .expect("gamma")
        .mod_revision());
    let mut gamma_records = registration(259, "gamma", 0, 7003, 1);
    gamma_records.discovery.revision = gamma_at;
    assert_eq!(
        watcher.view.discovery_of(259),
        Some(&gamma_records.discovery)
    );

    let counters = watcher.stats.snapshot();
    for kind in KeyKind::ALL {
        let w = counters.watcher(kind);
        assert_eq!(
            (w.lists, w.compactions, w.synthetic_deletes, w.map_errors),
            (2, 1, 1, 0),
            "{kind:?}: {w:?}"
        );
    }
    for node in [watcher, alpha, gamma] {
        node.shutdown().await;
    }
}

/// etcd SIGKILLed and restarted on the same data dir: the backends report the loss, then
/// recover their watches and their lease; a node registered after the restart is seen, and
/// the keys of the nodes registered before exist on their current lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_killed_and_restarted_watches_and_lease_recover() {
    let mut etcd = EtcdServer::start().await;
    let mut alpha = Backend::spawn(etcd.options("/sb/"), registration(257, "alpha", 0, 7001, 1));
    alpha.registered().await;
    let mut watcher = Backend::spawn(
        etcd.options("/sb/"),
        registration(300, "watcher", 0, 7300, 1),
    );
    watcher.registered().await;

    etcd.kill();
    for node in [&mut alpha, &mut watcher] {
        node.until("Disconnected", |e| {
            matches!(e, FeedEvent::Disconnected { .. })
        })
        .await;
    }
    etcd.restart().await;
    for node in [&mut alpha, &mut watcher] {
        node.registered().await;
    }

    let mut gamma = Backend::spawn(etcd.options("/sb/"), registration(259, "gamma", 0, 7003, 1));
    gamma.registered().await;
    watcher
        .until_view("gamma", |v| {
            v.discovery_of(259).is_some() && v.topology_of(259).is_some()
        })
        .await;
    let gamma_at = rev(etcd
        .get("/sb/by_id/gamma-259")
        .await
        .expect("gamma")
        .mod_revision());
    let mut expected = registration(259, "gamma", 0, 7003, 1);
    expected.discovery.revision = gamma_at;
    expected.topology.revision = gamma_at;
    assert_eq!(watcher.view.discovery_of(259), Some(&expected.discovery));
    assert_eq!(watcher.view.topology_of(259), Some(&expected.topology));

    for (node, name, id) in [(&alpha, "alpha", 257), (&watcher, "watcher", 300)] {
        let lease = node.stats.snapshot().lease_id;
        assert_ne!(lease, 0);
        for family in ["by_id", "by_name", "topology"] {
            let kv = etcd
                .get(&format!("/sb/{family}/{name}-{id}"))
                .await
                .unwrap_or_else(|| panic!("{family} key of {name} after the restart"));
            assert_eq!(kv.lease(), lease, "{family} key of {name}");
        }
        assert!(etcd.lease_ttl(lease).await > 0);
        let w = node.stats.snapshot();
        for kind in KeyKind::ALL {
            assert!(w.watcher(kind).stream_errors >= 1, "{name} {kind:?}: {w:?}");
        }
    }
    // Both keep exactly one view of alpha and watcher: nothing vanished in the restart.
    assert_eq!(watcher.view.discovered(), [257, 259, 300]);
    for node in [gamma, watcher, alpha] {
        node.shutdown().await;
    }
}

/// A lease revoked from outside (its keys deleted at once) is noticed at the next keepalive;
/// the backend grants a new lease and registers again within a bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_revoked_from_outside_registers_again() {
    let etcd = EtcdServer::start().await;
    let mut alpha = Backend::spawn(etcd.options("/sb/"), registration(257, "alpha", 0, 7001, 1));
    alpha.registered().await;
    let mut watcher = Backend::spawn(
        etcd.options("/sb/"),
        registration(300, "watcher", 0, 7300, 1),
    );
    watcher.registered().await;
    let first = alpha.stats.snapshot().lease_id;

    let revoked_at = tokio::time::Instant::now();
    etcd.revoke(first).await;
    watcher
        .until_view("alpha deleted", |v| {
            v.discovery_of(257).is_none() && v.topology_of(257).is_none()
        })
        .await;
    // Whichever sees it first says why: the node's watcher (its own key deleted, usually
    // within milliseconds) or the keepalive (the lease gone).
    alpha
        .until("Disconnected", |e| {
            matches!(e, FeedEvent::Disconnected { reason }
                if reason == "etcd lease lost: registering again"
                    || reason == "etcd: this node's keys were deleted; registering again")
        })
        .await;
    alpha.registered().await;
    watcher
        .until_view("alpha back", |v| {
            v.discovery_of(257).is_some() && v.topology_of(257).is_some()
        })
        .await;
    // Keepalive every 1 s: noticed within about a second, registered again right after.
    let took = revoked_at.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "re-registered after {took:?}"
    );

    let counters = alpha.stats.snapshot();
    let second = counters.lease_id;
    assert_ne!(second, first);
    assert_eq!(
        (
            counters.lease.grants,
            counters.lease.lost,
            counters.lease.registrations
        ),
        (2, 1, 2)
    );
    for family in ["by_id", "by_name", "topology"] {
        let kv = etcd
            .get(&format!("/sb/{family}/alpha-257"))
            .await
            .expect("key back");
        assert_eq!((kv.lease(), kv.version()), (second, 1), "{family}");
    }
    let back_at = rev(etcd
        .get("/sb/by_id/alpha-257")
        .await
        .expect("key back")
        .mod_revision());
    let mut expected = registration(257, "alpha", 0, 7001, 1);
    expected.discovery.revision = back_at;
    assert_eq!(watcher.view.discovery_of(257), Some(&expected.discovery));
    println!("re-registered {took:?} after the revoke");
    watcher.shutdown().await;
    alpha.shutdown().await;
}

/// A second instance with the same id is refused: it reports the owner, retries on the lease
/// schedule, never touches the owner's keys, and takes over once the owner is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_id_is_a_conflict_and_the_owners_keys_stay_untouched() {
    let etcd = EtcdServer::start().await;
    let mut owner = Backend::spawn(etcd.options("/sb/"), registration(257, "alpha", 0, 7001, 1));
    owner.registered().await;
    let owner_lease = owner.stats.snapshot().lease_id;
    let before: Vec<_> = snapshot_keys(&etcd).await;

    let mut imposter = Backend::spawn(etcd.options("/sb/"), registration(257, "alpha", 0, 7999, 2));
    let conflict = imposter
        .until("Conflict", |e| matches!(e, FeedEvent::Conflict { .. }))
        .await;
    let created = etcd
        .get("/sb/by_id/alpha-257")
        .await
        .expect("owner key")
        .create_revision();
    assert_eq!(
        conflict,
        FeedEvent::Conflict {
            holder: format!(
                "/sb/by_id/alpha-257 is held by lease {owner_lease:#x} (created at revision \
                 {created}; identity \"instance-257-1\", listen [\"atcp://127.0.0.1:7001\"], \
                 pid 4242)"
            ),
        }
    );
    // Retried every keepalive interval (1 s) without writing anything.
    let quiet = imposter.drain_for(Duration::from_secs(3)).await;
    assert!(
        quiet
            .iter()
            .all(|e| !matches!(e, FeedEvent::Registered | FeedEvent::Conflict { .. })),
        "{quiet:?}"
    );
    assert!(imposter.stats.snapshot().lease.conflicts >= 3);
    assert_eq!(imposter.stats.snapshot().lease.registrations, 0);
    assert_eq!(snapshot_keys(&etcd).await, before);

    // The owner leaves: the next retry registers the second instance.
    owner.shutdown().await;
    imposter.registered().await;
    let kv = etcd.get("/sb/by_id/alpha-257").await.expect("taken over");
    assert_eq!(
        kv.value(),
        registration(257, "alpha", 0, 7999, 2)
            .discovery
            .to_json()
            .as_slice()
    );
    assert_eq!(kv.lease(), imposter.stats.snapshot().lease_id);
    imposter.shutdown().await;
}

/// Every key with its value, mod revision, version and lease.
async fn snapshot_keys(etcd: &EtcdServer) -> Vec<(String, Vec<u8>, i64, i64, i64)> {
    let mut out = Vec::new();
    for key in etcd.keys("/sb/").await {
        let kv = etcd.get(&key).await.expect("listed key");
        out.push((
            key,
            kv.value().to_vec(),
            kv.mod_revision(),
            kv.version(),
            kv.lease(),
        ));
    }
    out
}

/// A backend started while etcd is down reports it, keeps trying, and registers once etcd
/// answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_started_before_etcd_registers_once_etcd_is_up() {
    let mut etcd = EtcdServer::start().await;
    etcd.kill();
    let mut alpha = Backend::spawn(etcd.options("/sb/"), registration(257, "alpha", 0, 7001, 1));
    let down = alpha
        .until("Disconnected", |e| {
            matches!(e, FeedEvent::Disconnected { .. })
        })
        .await;
    assert!(
        matches!(&down, FeedEvent::Disconnected { reason } if reason.contains("list")),
        "{down:?}"
    );
    etcd.restart().await;
    alpha.registered().await;
    let kv = etcd.get("/sb/by_id/alpha-257").await.expect("registered");
    assert_eq!(kv.lease(), alpha.stats.snapshot().lease_id);
    alpha.shutdown().await;
    assert_eq!(etcd.keys("/sb/").await, Vec::<String>::new());
}

/// Endpoints the client cannot use are reported (never a panic); a shutdown is still
/// answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusable_endpoints_are_reported_and_shutdown_is_answered() {
    let mut options = switchboard_tokio::registry::EtcdOptions::new(vec!["http://[::1".into()]);
    options.prefix = "/sb/".into();
    let mut alpha = Backend::spawn(options, registration(257, "alpha", 0, 7001, 1));
    let down = alpha.next().await;
    assert!(
        matches!(&down, FeedEvent::Disconnected { reason }
            if reason.starts_with("cannot use etcd endpoints [\"http://[::1\"]: ")),
        "{down:?}"
    );
    alpha.shutdown().await;
}
