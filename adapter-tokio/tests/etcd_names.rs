//! Unique names and same-identity takeover on a real etcd: a name held by another id is a
//! conflict (nothing written), and a restart of the same deployment (same identity) takes its
//! keys over at once from the old lease, which expiring later deletes nothing.

#![cfg(feature = "etcd")]

mod etcd_support;

use std::time::{Duration, Instant};

use etcd_support::{
    EtcdServer,
    feed::{Backend, registration},
};
use switchboard_tokio::registry::FeedEvent;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_held_by_another_id_is_a_conflict_and_nothing_is_written() {
    let etcd = EtcdServer::start().await;
    let owner = {
        let mut owner =
            Backend::spawn(etcd.options("/sb/"), registration(257, "alpha", 0, 7001, 1));
        owner.registered().await;
        owner
    };
    let before = etcd.keys("/sb/").await;

    let mut rival = Backend::spawn(etcd.options("/sb/"), registration(258, "alpha", 0, 7002, 2));
    let conflict = rival
        .until("Conflict", |e| matches!(e, FeedEvent::Conflict { .. }))
        .await;
    assert_eq!(
        conflict,
        FeedEvent::Conflict {
            holder: "name \"alpha\" taken by id 257 (/sb/by_name/alpha-257)".to_owned(),
        }
    );
    assert!(
        !rival.seen.contains(&FeedEvent::Registered),
        "{:?}",
        rival.seen
    );
    assert_eq!(etcd.keys("/sb/").await, before, "the rival wrote nothing");
    assert_eq!(rival.stats.snapshot().lease.registrations, 0);

    // A name whose holder is gone is free: the rival's next retry registers it.
    owner.shutdown().await;
    rival.registered().await;
    let kv = etcd.get("/sb/by_name/alpha-258").await.expect("registered");
    assert_eq!(kv.lease(), rival.stats.snapshot().lease_id);
    assert!(etcd.get("/sb/by_name/alpha-257").await.is_none());
    rival.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_identity_takes_the_keys_over_at_once_and_keeps_them_past_the_old_lease() {
    let etcd = EtcdServer::start().await;
    let first_life = registration(257, "alpha", 0, 7001, 1);
    let old_lease = {
        let mut first = Backend::spawn(etcd.options("/sb/"), first_life.clone());
        first.registered().await;
        let lease = first.stats.snapshot().lease_id;
        // A crash: the backend is dropped, no revoke; the keys stay on the old lease.
        drop(first);
        lease
    };
    assert_eq!(
        etcd.get("/sb/by_id/alpha-257")
            .await
            .expect("still there")
            .lease(),
        old_lease
    );

    // The restart: a new incarnation and port, the same deployment identity.
    let mut second_life = registration(257, "alpha", 0, 7999, 2);
    second_life.discovery.identity = first_life.discovery.identity.clone();
    second_life.topology.identity = first_life.topology.identity.clone();
    let started = Instant::now();
    let mut second = Backend::spawn(etcd.options("/sb/"), second_life.clone());
    second.registered().await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "taken over at once, not after the old lease's 5 s TTL: {took:?}"
    );
    assert!(
        !second
            .seen
            .iter()
            .any(|e| matches!(e, FeedEvent::Conflict { .. })),
        "{:?}",
        second.seen
    );
    let new_lease = second.stats.snapshot().lease_id;
    assert_ne!(new_lease, old_lease);
    let keys = [
        "/sb/topology/alpha-257",
        "/sb/by_id/alpha-257",
        "/sb/by_name/alpha-257",
    ];
    for key in keys {
        assert_eq!(etcd.get(key).await.expect(key).lease(), new_lease, "{key}");
    }
    assert_eq!(
        etcd.get("/sb/by_id/alpha-257")
            .await
            .expect("by_id")
            .value(),
        second_life.discovery.to_json().as_slice()
    );

    // The old lease ending (here: revoked, as its expiry would) deletes none of our keys.
    etcd.revoke(old_lease).await;
    for key in keys {
        assert_eq!(etcd.get(key).await.expect(key).lease(), new_lease, "{key}");
    }
    second.shutdown().await;
}
