//! Node identity bound to TLS certificates (feature `tls`): a certificate naming node ids
//! (`urn:switchboard:node:<id>`) registers only under one of them at the embedded registry;
//! certificates naming their ids link and deliver; `require_node_id` refuses certificates
//! that name none, both ways; at most `max_pending_handshakes` TLS handshakes run at once.
//! (The bus-level refusal of a link claiming another id, both ways, needs a registry that
//! lists such a node: `etcd_tls_identity.rs`.)

#![cfg(feature = "tls")]

mod support;
#[allow(unreachable_pub, reason = "shared by path with other crates")]
mod tls_certs;
#[allow(unreachable_pub, dead_code, reason = "shared with etcd_tls_identity")]
mod tls_identity_support;

use std::{net::SocketAddr, time::Duration};

use bytes::Bytes;
use rustls::pki_types::{CertificateDer, pem::PemObject};
use switchboard_core::{ids::NodeId, outcome::Outcome};
use switchboard_tokio::{
    TargetSpec, Transport,
    registry::{RegistryHandle, spawn_registry_with},
    transport::tls::cert_node_ids,
};

use support::{direct, server_config, start, wait_known, within};
use tls_certs::{Ca, Leaf};
use tls_identity_support::{Logs, auth_refusals, config, tls, wait_refusals};

async fn tls_registry(leaf: &Leaf) -> RegistryHandle {
    let addr = SocketAddr::from(([127, 0, 0, 1], 0));
    within(
        "registry bind",
        spawn_registry_with(addr, server_config(), 7, tls(leaf)),
    )
    .await
    .expect("the registry binds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_lists_a_node_only_under_an_id_its_certificate_names() {
    let logs = Logs::capture();
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::new("cluster");
    let registry = tls_registry(&ca.leaf(dir.path(), "registry")).await;
    let addr = registry.local_addr();
    let (a, _a_inbox) =
        start(direct(addr, 1, "alpha").transport(tls(&ca.node_leaf(dir.path(), "a", &[1])))).await;
    assert!(
        a.wait_registered(support::STEP).await.is_ok(),
        "1 registers"
    );
    // Node 8 holds a valid certificate of the cluster CA, issued for node 7.
    let seven = ca.node_leaf(dir.path(), "seven", &[7]);
    let (b, _b_inbox) = start(direct(addr, 8, "mallory").transport(tls(&seven))).await;
    assert!(
        b.wait_registered(Duration::from_secs(2)).await.is_err(),
        "8 never registers with 7's certificate"
    );
    let ids = |entries: Vec<switchboard_core::wire::RegistryEntry>| -> Vec<u64> {
        entries.iter().map(|e| e.discovery.id.0).collect()
    };
    assert_eq!(ids(registry.entries().await), vec![1]);
    let text = logs.text();
    let exact = "register of node NodeId(8), but the certificate names [NodeId(7)]";
    assert!(
        text.lines()
            .any(|l| l.contains("registry protocol error") && l.contains(exact)),
        "the exact refusal is logged:\n{text}"
    );
    b.kill();
    // The same certificate as node 7 registers.
    let (c, _c_inbox) = start(direct(addr, 7, "seven").transport(tls(&seven))).await;
    assert!(
        c.wait_registered(support::STEP).await.is_ok(),
        "7 registers"
    );
    assert_eq!(ids(registry.entries().await), vec![1, 7]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_naming_their_ids_link_and_deliver_exact_bytes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::new("cluster");
    let registry = tls_registry(&ca.leaf(dir.path(), "registry")).await;
    let addr = registry.local_addr();
    // Node 2's certificate names two ids (a spare one too); the node requires ids.
    let (a, mut a_inbox) = start(direct(addr, 1, "alpha").transport(Transport::tls(
        config(&ca.node_leaf(dir.path(), "a", &[1])).require_node_id(true),
    )))
    .await;
    let (b, mut b_inbox) = start(direct(addr, 2, "beta").transport(Transport::tls(
        config(&ca.node_leaf(dir.path(), "b", &[9, 2])).require_node_id(true),
    )))
    .await;
    wait_known(&a, &[1, 2]).await;
    wait_known(&b, &[1, 2]).await;

    let to_b: Vec<u8> = (0..=255u8).cycle().take(4099).collect();
    let outcome = within(
        "a -> b",
        a.send(TargetSpec::Id(NodeId(2)), 11, Bytes::from(to_b.clone())),
    )
    .await;
    assert_eq!(outcome, Ok(Outcome::Delivered));
    let got = within("b receives", b_inbox.recv())
        .await
        .expect("a message");
    assert_eq!((got.from, got.msg_type), (NodeId(1), 11));
    assert_eq!(&got.payload[..], &to_b[..]);

    let outcome = within(
        "b -> a",
        b.send(
            TargetSpec::Id(NodeId(1)),
            12,
            Bytes::from_static(b"exact bytes back"),
        ),
    )
    .await;
    assert_eq!(outcome, Ok(Outcome::Delivered));
    let got = within("a receives", a_inbox.recv())
        .await
        .expect("a message");
    assert_eq!((got.from, got.msg_type), (NodeId(2), 12));
    assert_eq!(&got.payload[..], b"exact bytes back");
    for node in [&a, &b] {
        let metrics = node.metrics().await.expect("running");
        assert_eq!(metrics.links_rejected, 0, "{metrics:?}");
        assert!(
            metrics.auth_refusals.values().all(|&n| n == 0),
            "{metrics:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_requiring_ids_refuses_a_certificate_without_one_both_ways() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::new("cluster");
    let registry = tls_registry(&ca.leaf(dir.path(), "registry")).await;
    let addr = registry.local_addr();
    let (a, mut a_inbox) = start(direct(addr, 1, "strict").transport(Transport::tls(
        config(&ca.node_leaf(dir.path(), "a", &[1])).require_node_id(true),
    )))
    .await;
    // Node 2's certificate names no id: enough for a node that does not require one.
    let (b, mut b_inbox) =
        start(direct(addr, 2, "anonymous").transport(tls(&ca.leaf(dir.path(), "b")))).await;
    wait_known(&a, &[1, 2]).await;
    wait_known(&b, &[1, 2]).await;
    let _from_b = within(
        "submit",
        b.submit(TargetSpec::Id(NodeId(1)), 5, Bytes::from_static(b"x")),
    )
    .await
    .expect("accepted");
    wait_refusals(&a, "no_node_id", 1, support::STEP).await;
    let before = auth_refusals(&a, "no_node_id").await;
    let _from_a = within(
        "submit",
        a.submit(TargetSpec::Id(NodeId(2)), 5, Bytes::from_static(b"y")),
    )
    .await
    .expect("accepted");
    wait_refusals(&a, "no_node_id", before + 1, support::STEP).await;
    let quiet = tokio::time::timeout(Duration::from_millis(300), async {
        tokio::select! { _ = a_inbox.recv() => {}, _ = b_inbox.recv() => {} }
    });
    assert!(quiet.await.is_err(), "nothing delivered");
    let status = a.status().await.expect("running");
    assert!(
        status
            .links
            .iter()
            .all(|l| l.state != "up" || l.peer != Some(2)),
        "{status:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_handshakes_beyond_max_pending_handshakes_are_closed_at_once() {
    use tokio::io::AsyncReadExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::new("cluster");
    let registry = tls_registry(&ca.leaf(dir.path(), "registry")).await;
    let (node, _inbox) = start(
        direct(registry.local_addr(), 1, "capped")
            .transport(tls(&ca.node_leaf(dir.path(), "n", &[1])))
            .config(|c| c.max_pending_handshakes = 2),
    )
    .await;
    // Two silent connections hold both TLS handshake slots (until the 10 s TLS timeout).
    let mut silent = Vec::new();
    for _ in 0..2 {
        silent.push(
            tokio::net::TcpStream::connect(node.local_addr())
                .await
                .expect("connects"),
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A third is closed at once, before any TLS byte.
    let mut third = tokio::net::TcpStream::connect(node.local_addr())
        .await
        .expect("connects");
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(2), third.read_to_end(&mut got)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "closed at once: {read:?} {got:?}"
    );
    let metrics = node.metrics().await.expect("running");
    assert_eq!(metrics.handshakes_refused, 1);
    // The silent ones are still open (not refused).
    for stream in &silent {
        let mut byte = [0u8; 1];
        assert!(stream.try_read(&mut byte).is_err(), "still pending");
    }
}

fn der(leaf: &Leaf) -> CertificateDer<'static> {
    CertificateDer::from_pem_file(&leaf.cert).expect("a PEM certificate")
}

#[test]
fn cert_node_ids_reads_the_switchboard_uris_and_refuses_bad_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::new("cluster");
    let none = der(&ca.leaf(dir.path(), "none"));
    assert_eq!(cert_node_ids(&none), Ok(vec![]));
    let two = der(&ca.leaf_with_uris(
        dir.path(),
        "two",
        &[
            "urn:switchboard:node:7",
            "https://example.invalid/x",
            "urn:switchboard:node:18446744073709551615",
        ],
    ));
    assert_eq!(cert_node_ids(&two), Ok(vec![NodeId(7), NodeId(u64::MAX)]));
    for bad in [
        "urn:switchboard:node:0",
        "urn:switchboard:node:+7",
        "urn:switchboard:node:",
        "urn:switchboard:node:0x7",
        "urn:switchboard:node:18446744073709551616",
        "urn:switchboard:node:7 ",
    ] {
        let cert = der(&ca.leaf_with_uris(dir.path(), "bad", &[bad]));
        assert_eq!(
            cert_node_ids(&cert),
            Err(format!("invalid node id in SAN URI {bad:?}")),
            "{bad}"
        );
    }
    assert!(cert_node_ids(b"not DER").is_err());
}
