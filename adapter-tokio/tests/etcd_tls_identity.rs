//! Node identity on bus links with TLS (features `etcd` and `tls`): etcd does not check
//! certificates, so a node holding the certificate of node 7 can publish itself as node 8
//! there; every bus link it makes or takes under id 8 is still refused — by the acceptor
//! (its `Hello`) and by the dialler (its `HelloAck`) — with the exact error logged and
//! counted, and nothing is delivered.

#![cfg(all(feature = "etcd", feature = "tls"))]

mod etcd_support;
#[allow(unreachable_pub, reason = "shared by path with other crates")]
mod tls_certs;
#[allow(unreachable_pub, dead_code, reason = "shared with driver_tls_identity")]
mod tls_identity_support;

use std::time::Duration;

use bytes::Bytes;
use etcd_support::{
    EtcdServer,
    node::{STEP, direct_on_etcd, start, wait_known, within},
};
use switchboard_core::ids::NodeId;
use switchboard_tokio::{NodeHandle, TargetSpec};
use tls_certs::Ca;
use tls_identity_support::{Logs, tls, wait_refusals};

/// Node 1 (certificate for 1) and node 8 (certificate for 7), both published in etcd.
async fn pair(
    etcd: &EtcdServer,
    dir: &std::path::Path,
) -> (
    (NodeHandle, switchboard_tokio::Inbox),
    (NodeHandle, switchboard_tokio::Inbox),
) {
    let ca = Ca::new("cluster");
    let a = start(
        direct_on_etcd(etcd, "/sb/", 1, "alpha").transport(tls(&ca.node_leaf(dir, "a", &[1]))),
    )
    .await;
    // Node 8 holds a valid certificate of the cluster CA, issued for node 7.
    let b = start(
        direct_on_etcd(etcd, "/sb/", 8, "mallory").transport(tls(&ca.node_leaf(dir, "b", &[7]))),
    )
    .await;
    wait_known(&a.0, &[1, 8]).await;
    wait_known(&b.0, &[1, 8]).await;
    (a, b)
}

/// Nothing is up between 1 and 8, nothing was delivered, and 1 logged the exact refusal.
async fn refused(
    logs: &Logs,
    (a, a_inbox): &mut (NodeHandle, switchboard_tokio::Inbox),
    (b, b_inbox): &mut (NodeHandle, switchboard_tokio::Inbox),
) {
    let text = logs.text();
    let exact = "reason=the peer says it is 0x8 but its certificate names [0x7]";
    assert!(
        text.lines()
            .any(|l| l.contains("link rejected") && l.contains(exact)),
        "the exact refusal is logged:\n{text}"
    );
    let a_status = a.status().await.expect("running");
    let b_status = b.status().await.expect("running");
    assert!(
        a_status
            .links
            .iter()
            .all(|l| l.state != "up" || l.peer != Some(8)),
        "{a_status:?}"
    );
    assert!(
        b_status
            .links
            .iter()
            .all(|l| l.state != "up" || l.peer != Some(1)),
        "{b_status:?}"
    );
    assert_eq!(b.metrics().await.expect("running").links_rejected, 0);
    let quiet = tokio::time::timeout(Duration::from_millis(300), async {
        tokio::select! { _ = a_inbox.recv() => {}, _ = b_inbox.recv() => {} }
    });
    assert!(quiet.await.is_err(), "nothing delivered");
}

/// 8 dials 1: 1 refuses its `Hello` (the acceptor's check).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_id_7_cannot_dial_as_id_8() {
    let logs = Logs::capture();
    let etcd = EtcdServer::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut a, mut b) = pair(&etcd, dir.path()).await;
    let _sent = within(
        "submit",
        b.0.submit(TargetSpec::Id(NodeId(1)), 5, Bytes::from_static(b"b->a")),
    )
    .await
    .expect("accepted");
    wait_refusals(&a.0, "not_certified", 1, STEP).await;
    refused(&logs, &mut a, &mut b).await;
}

/// 1 dials 8: 1 refuses its `HelloAck` (the dialler's check); 8 never dials (it sends
/// nothing), so every refusal 1 counts is of its own dial.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_id_7_cannot_answer_as_id_8() {
    let logs = Logs::capture();
    let etcd = EtcdServer::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut a, mut b) = pair(&etcd, dir.path()).await;
    let _sent = within(
        "submit",
        a.0.submit(TargetSpec::Id(NodeId(8)), 5, Bytes::from_static(b"a->b")),
    )
    .await
    .expect("accepted");
    wait_refusals(&a.0, "not_certified", 1, STEP).await;
    refused(&logs, &mut a, &mut b).await;
    assert!(a.0.metrics().await.expect("running").links_rejected >= 1);
}
