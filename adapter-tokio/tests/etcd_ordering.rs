//! The seed's four discovery-vs-topology ordering cases with real nodes on a real etcd.
//!
//! libatapp's discovery (`by_id`, `by_name`) and topology watchers are independent, so a
//! node may get a peer's records in either order, or one of them late. Here one watcher of
//! node 0x201 is held back ([`fault::delay_watcher`]) while the other delivers; the routes
//! must end up right either way. Group B of the seed: 0x201 and 0x202 under proxy 0x203.

#![cfg(feature = "etcd")]

mod etcd_support;

use std::time::Duration;

use bytes::Bytes;
use etcd_support::{
    EtcdServer,
    node::{
        STEP, direct_on_etcd, on_etcd, payload, recv, route_flags, start, wait_known,
        wait_links_up, within,
    },
};
use switchboard_core::{
    ids::NodeId,
    outcome::{FailReason, Outcome},
    registry::etcd::KeyKind,
};
use switchboard_tokio::{Inbox, NodeBuilder, NodeHandle, Received, TargetSpec, etcd::fault};

const A: u64 = 0x201;
const B: u64 = 0x202;
const PROXY: u64 = 0x203;

/// The families whose arrival is held back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    Discovery,
    Topology,
}

fn hold(prefix: &str, held: Held) -> Vec<fault::WatcherDelay> {
    let kinds: &[KeyKind] = match held {
        Held::Discovery => &[KeyKind::ById, KeyKind::ByName],
        Held::Topology => &[KeyKind::Topology],
    };
    kinds
        .iter()
        .map(|&kind| fault::delay_watcher(prefix, NodeId(A), kind))
        .collect()
}

fn builder(etcd: &EtcdServer, prefix: &str, id: u64, direct: bool) -> NodeBuilder {
    let name = format!("node-{id:x}");
    let builder = if direct {
        direct_on_etcd(etcd, prefix, id, &name)
    } else {
        on_etcd(etcd, prefix, id, &name)
    };
    if id == PROXY {
        builder
    } else {
        builder.upstream(NodeId(PROXY))
    }
}

/// The proxy and 0x201, knowing each other.
async fn partial(
    etcd: &EtcdServer,
    prefix: &str,
    direct: bool,
) -> ((NodeHandle, Inbox), (NodeHandle, Inbox)) {
    let proxy = start(builder(etcd, prefix, PROXY, direct)).await;
    let a = start(builder(etcd, prefix, A, direct)).await;
    wait_known(&a.0, &[A, PROXY]).await;
    wait_known(&proxy.0, &[A, PROXY]).await;
    wait_links_up(&proxy.0, &[A]).await;
    (proxy, a)
}

/// Starts 0x202 and waits until the proxy knows it and 0x201 has the record that is not
/// held (and not the held one).
async fn start_b(
    etcd: &EtcdServer,
    prefix: &str,
    direct: bool,
    proxy: &NodeHandle,
    a: &NodeHandle,
    held: Held,
) -> (NodeHandle, Inbox) {
    let b = start(builder(etcd, prefix, B, direct)).await;
    wait_known(proxy, &[A, B, PROXY]).await;
    // 0x202 is online: linked to its proxy.
    wait_links_up(proxy, &[A, B]).await;
    let got_it = a
        .wait_for(STEP, |k| match held {
            Held::Discovery => k.topology.contains_key(&NodeId(B)),
            Held::Topology => k.discovery.contains_key(&NodeId(B)),
        })
        .await;
    assert!(got_it, "0x201 never got the free record: {:?}", a.known());
    let known = a.known();
    assert_eq!(
        (
            known.discovery.contains_key(&NodeId(B)),
            known.topology.contains_key(&NodeId(B))
        ),
        (held == Held::Topology, held == Held::Discovery),
        "held {held:?}: {known:?}"
    );
    b
}

fn got(from: u64, via: u64, msg_type: u32, payload: Bytes) -> Received {
    Received::new(NodeId(from), NodeId(via), msg_type, payload)
}

/// Whether `inbox` stays empty for `window`.
async fn stays_empty(inbox: &mut Inbox, window: Duration) -> bool {
    tokio::time::timeout(window, inbox.recv()).await.is_err()
}

/// Case 1 (topology first, the common path) and case 2 (discovery first), direct links
/// allowed: the message queued before both records goes out once, over a direct link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordering_case1_2_either_record_first_direct() {
    let etcd = EtcdServer::start().await;
    for held in [Held::Discovery, Held::Topology] {
        let prefix = format!("/case12-{held:?}/");
        let (proxy, a) = partial(&etcd, &prefix, true).await;
        let holds = hold(&prefix, held);
        let (b, mut b_inbox) = start_b(&etcd, &prefix, true, &proxy.0, &a.0, held).await;

        let message = payload(A, 1);
        let pending = within(
            "submit",
            a.0.submit(TargetSpec::Id(NodeId(B)), 1, message.clone()),
        )
        .await
        .expect("accepted");
        if held == Held::Discovery {
            // Topology alone: no address yet, the message waits.
            assert_eq!(
                route_flags(&a.0, B).await,
                Some(vec!["active".to_owned(), "waiting_discovery".to_owned()])
            );
            assert!(stays_empty(&mut b_inbox, Duration::from_millis(500)).await);
        }
        drop(holds);
        assert_eq!(
            within("outcome", pending).await,
            Ok(Outcome::Delivered),
            "held {held:?}"
        );
        assert_eq!(recv(&mut b_inbox).await, got(A, A, 1, message));
        wait_known(&a.0, &[A, B, PROXY]).await;
        assert_eq!(
            route_flags(&a.0, B).await,
            Some(vec!["active".to_owned(), "ready".to_owned()]),
            "held {held:?}"
        );
        assert!(
            stays_empty(&mut b_inbox, Duration::from_millis(300)).await,
            "one copy only"
        );
        for node in [&b, &a.0, &proxy.0] {
            within("shutdown", node.shutdown()).await.expect("running");
        }
    }
}

/// Case 2 without direct links: with the topology incomplete, 0x201 relays through its
/// upstream ("走代理转发兜底"); the late record keeps the relay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordering_case2_incomplete_topology_relays_through_the_upstream() {
    let etcd = EtcdServer::start().await;
    for held in [Held::Discovery, Held::Topology] {
        let prefix = format!("/case2-{held:?}/");
        let (proxy, a) = partial(&etcd, &prefix, false).await;
        let holds = hold(&prefix, held);
        let (b, mut b_inbox) = start_b(&etcd, &prefix, false, &proxy.0, &a.0, held).await;

        let first = payload(A, 1);
        let outcome = within(
            "send",
            a.0.send(TargetSpec::Id(NodeId(B)), 2, first.clone()),
        )
        .await;
        assert_eq!(outcome, Ok(Outcome::Delivered), "held {held:?}");
        assert_eq!(recv(&mut b_inbox).await, got(A, PROXY, 2, first));

        drop(holds);
        wait_known(&a.0, &[A, B, PROXY]).await;
        let second = payload(A, 2);
        let outcome = within(
            "send",
            a.0.send(TargetSpec::Id(NodeId(B)), 2, second.clone()),
        )
        .await;
        assert_eq!(outcome, Ok(Outcome::Delivered));
        assert_eq!(recv(&mut b_inbox).await, got(A, PROXY, 2, second));
        let status = within("status", a.0.status()).await.expect("running");
        let route = status
            .routes
            .iter()
            .find(|r| r.target == B)
            .expect("a route to 0x202");
        assert_eq!(
            (route.flags.clone(), route.proxy),
            (vec!["active".to_owned(), "ready".to_owned()], Some(PROXY)),
            "held {held:?}"
        );
        for node in [&b, &a.0, &proxy.0] {
            within("shutdown", node.shutdown()).await.expect("running");
        }
    }
}

/// Case 3: one watcher is 5 s late (a re-list after a leader change). The message waits
/// for the late record when it needs it, and is delivered once, before its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordering_case3_a_late_watcher_delays_but_loses_nothing() {
    let etcd = EtcdServer::start().await;
    for held in [Held::Discovery, Held::Topology] {
        let prefix = format!("/case3-{held:?}/");
        let (proxy, a) = partial(&etcd, &prefix, true).await;
        let holds = hold(&prefix, held);
        let (b, mut b_inbox) = start_b(&etcd, &prefix, true, &proxy.0, &a.0, held).await;

        let message = payload(A, 3);
        let pending = within(
            "submit",
            a.0.submit(TargetSpec::Id(NodeId(B)), 3, message.clone()),
        )
        .await
        .expect("accepted");
        let late = tokio::time::Instant::now() + Duration::from_secs(5);
        if held == Held::Discovery {
            assert!(
                stays_empty(&mut b_inbox, Duration::from_secs(5)).await,
                "no address yet"
            );
        } else {
            // Discovery on time: the direct link needs nothing else.
            assert_eq!(recv(&mut b_inbox).await, got(A, A, 3, message.clone()));
        }
        tokio::time::sleep_until(late).await;
        drop(holds);
        assert_eq!(
            within("outcome", pending).await,
            Ok(Outcome::Delivered),
            "held {held:?}"
        );
        if held == Held::Discovery {
            assert_eq!(recv(&mut b_inbox).await, got(A, A, 3, message));
        }
        wait_known(&a.0, &[A, B, PROXY]).await;
        assert_eq!(
            route_flags(&a.0, B).await,
            Some(vec!["active".to_owned(), "ready".to_owned()])
        );
        assert!(
            stays_empty(&mut b_inbox, Duration::from_millis(300)).await,
            "one copy only"
        );
        for node in [&b, &a.0, &proxy.0] {
            within("shutdown", node.shutdown()).await.expect("running");
        }
    }
}

/// Case 4: 0x202 goes offline; its lease goes and the discovery and topology deletes reach
/// 0x201 in either order. Both end the same: both flags set, then — reconnect tries being
/// unlimited here — the lost-topology timeout (4 s) removes the record ("由 kLostTopology 的
/// 超时兜底清理") and the message queued for it fails with `TargetGone`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordering_case4_offline_deletes_in_either_order_end_the_same() {
    let etcd = EtcdServer::start().await;
    let mut endings = Vec::new();
    for second in [Held::Topology, Held::Discovery] {
        let prefix = format!("/case4-{second:?}/");
        let proxy = start(builder(&etcd, &prefix, PROXY, true)).await;
        let a = start(builder(&etcd, &prefix, A, true).config(|c| {
            c.lost_topology_timeout = Duration::from_secs(4);
        }))
        .await;
        let (b, mut b_inbox) = start(builder(&etcd, &prefix, B, true)).await;
        wait_known(&a.0, &[A, B, PROXY]).await;
        wait_links_up(&proxy.0, &[A, B]).await;
        let before = payload(A, 4);
        let outcome = within(
            "send",
            a.0.send(TargetSpec::Id(NodeId(B)), 4, before.clone()),
        )
        .await;
        assert_eq!(outcome, Ok(Outcome::Delivered));
        assert_eq!(recv(&mut b_inbox).await, got(A, A, 4, before));

        // 0x202 dies; its lease is revoked; 0x201 gets the deletes one family after the other.
        b.kill();
        let lease = etcd
            .get(&format!("{prefix}by_id/node-202-{B}"))
            .await
            .expect("0x202's key")
            .lease();
        let holds = hold(&prefix, second);
        etcd.revoke(lease).await;
        let first_gone =
            a.0.wait_for(STEP, |k| match second {
                Held::Topology => !k.discovery.contains_key(&NodeId(B)),
                Held::Discovery => !k.topology.contains_key(&NodeId(B)),
            })
            .await;
        assert!(first_gone, "{:?}", a.0.known());
        drop(holds);
        let both_gone =
            a.0.wait_for(STEP, |k| {
                !k.discovery.contains_key(&NodeId(B)) && !k.topology.contains_key(&NodeId(B))
            })
            .await;
        assert!(both_gone, "{:?}", a.0.known());
        let flags = route_flags(&a.0, B).await;
        assert_eq!(
            flags,
            Some(vec![
                "active".to_owned(),
                "waiting_discovery".to_owned(),
                "lost_topology".to_owned()
            ]),
            "second {second:?}"
        );
        let after = within(
            "send after",
            a.0.send(TargetSpec::Id(NodeId(B)), 4, payload(A, 5)),
        )
        .await;
        let gone = route_flags(&a.0, B).await;
        endings.push((after, gone));
        for node in [&a.0, &proxy.0] {
            within("shutdown", node.shutdown()).await.expect("running");
        }
    }
    assert_eq!(endings[0], endings[1], "both orders end the same");
    assert_eq!(
        endings[0],
        (Ok(Outcome::Failed(FailReason::TargetGone)), None)
    );
}
