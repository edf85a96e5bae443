//! Mutual TLS (feature `tls`): a registry and two nodes with certificates of one CA deliver
//! every message exactly once; a node without TLS, or with a certificate of another CA, is
//! refused by the TLS layer (never registered, no link up, nothing delivered).

#![cfg(feature = "tls")]

mod support;
#[allow(unreachable_pub, reason = "shared by path with other crates")]
mod tls_certs;

use std::{net::SocketAddr, time::Duration};

use switchboard_core::{ids::NodeId, outcome::Outcome};
use switchboard_tokio::{
    TargetSpec, Transport,
    registry::{RegistryHandle, spawn_registry_with},
    transport::tls::{TlsConfig, TlsFile},
};

use support::{
    direct, init_logs, outcomes, parse, payload, recv_n, server_config, start, wait_known,
    wait_links_up, within,
};
use tls_certs::{Ca, Leaf};

fn tls(leaf: &Leaf) -> Transport {
    Transport::tls(TlsConfig::from_files(&leaf.cert, &leaf.key, &leaf.ca).expect("TLS config"))
}

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
async fn two_nodes_over_mutual_tls_deliver_every_message_once() {
    init_logs();
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::new("cluster");
    let registry = tls_registry(&ca.leaf(dir.path(), "registry")).await;
    let addr = registry.local_addr();
    let (a, _a_inbox) =
        start(direct(addr, 1, "alpha").transport(tls(&ca.leaf(dir.path(), "a")))).await;
    let (b, mut b_inbox) =
        start(direct(addr, 2, "beta").transport(tls(&ca.leaf(dir.path(), "b")))).await;
    wait_known(&a, &[1, 2]).await;
    wait_known(&b, &[1, 2]).await;

    const N: u64 = 2000;
    let mut pending = Vec::new();
    for seq in 0..N {
        let p = within(
            "submit",
            a.submit(TargetSpec::Id(NodeId(2)), 9, payload(1, seq, 64)),
        )
        .await
        .expect("accepted");
        pending.push((seq, p));
    }
    let results = outcomes(pending).await;
    assert_eq!(results.len(), N as usize);
    assert!(
        results.iter().all(|(_, o)| *o == Ok(Outcome::Delivered)),
        "every message delivered"
    );
    wait_links_up(&a, &[2]).await;
    let got = recv_n(&mut b_inbox, N as usize).await;
    let seqs: Vec<u64> = got.iter().map(|m| parse(&m.payload).1).collect();
    assert_eq!(seqs, (0..N).collect::<Vec<_>>(), "each once, in order");
    // Nothing more arrives.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), b_inbox.recv())
            .await
            .is_err(),
        "no duplicate"
    );
    assert_eq!(registry.entries().await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_without_tls_or_with_another_ca_are_refused() {
    init_logs();
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::new("cluster");
    let rogue_ca = Ca::new("rogue");
    let registry = tls_registry(&ca.leaf(dir.path(), "registry")).await;
    let addr = registry.local_addr();
    let (good, mut good_inbox) =
        start(direct(addr, 1, "good").transport(tls(&ca.leaf(dir.path(), "good")))).await;
    assert!(
        good.wait_registered(support::STEP).await.is_ok(),
        "the good node registers"
    );

    // No TLS at all, and a certificate of another CA: the registry's TLS layer refuses both.
    let (plain, _plain_inbox) = start(direct(addr, 2, "plain")).await;
    let (rogue, _rogue_inbox) =
        start(direct(addr, 3, "rogue").transport(tls(&rogue_ca.leaf(dir.path(), "rogue")))).await;
    assert!(
        plain.wait_registered(Duration::from_secs(2)).await.is_err(),
        "plain never registers"
    );
    assert!(
        rogue
            .wait_registered(Duration::from_millis(100))
            .await
            .is_err(),
        "rogue never registers"
    );
    let ids: Vec<u64> = registry
        .entries()
        .await
        .iter()
        .map(|e| e.discovery.id.0)
        .collect();
    assert_eq!(ids, vec![1], "only the good node is registered");

    // A plain connection straight to the good node's listen port is dropped by its TLS layer;
    // no link to a refused node ever comes up and nothing is delivered.
    let good_addr = format!("atcp://{}", good.local_addr());
    let mut stream = tokio::net::TcpStream::connect(good.local_addr())
        .await
        .expect("TCP connects");
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // Plain bytes where a TLS ClientHello is expected: the connection is dropped.
        let _ = stream
            .write_all(b"not a TLS hello, a switchboard hello")
            .await;
        let mut got = Vec::new();
        let read = within("the good node drops it", stream.read_to_end(&mut got)).await;
        // At most a TLS alert record (content type 21), then the end of the connection.
        assert!(
            got.is_empty() || got[0] == 21,
            "dropped with at most a TLS alert, got {read:?} {got:?} ({good_addr})"
        );
    }
    let status = good.status().await.expect("running");
    assert!(
        status
            .links
            .iter()
            .all(|l| l.peer != Some(3) && l.peer != Some(2)),
        "no link to a refused node"
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(300), good_inbox.recv())
            .await
            .is_err(),
        "nothing delivered"
    );
}

#[test]
fn bad_pem_names_the_input() {
    let dir = tempfile::tempdir().expect("temp dir");
    let leaf = Ca::new("cluster").leaf(dir.path(), "n");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not PEM").expect("write");
    let missing = dir.path().join("missing.pem");
    let e = TlsConfig::from_files(&garbage, &leaf.key, &leaf.ca).expect_err("bad cert");
    assert_eq!(e.file, TlsFile::Cert);
    let e = TlsConfig::from_files(&leaf.cert, &garbage, &leaf.ca).expect_err("bad key");
    assert_eq!(e.file, TlsFile::Key);
    let e = TlsConfig::from_files(&leaf.cert, &leaf.key, &missing).expect_err("missing CA");
    assert_eq!(e.file, TlsFile::Ca);
    assert!(e.to_string().contains("missing.pem"), "{e}");
    let other = Ca::new("other").leaf(dir.path(), "o");
    let e =
        TlsConfig::from_files(&leaf.cert, &other.key, &leaf.ca).expect_err("key of another cert");
    assert_eq!(e.file, TlsFile::Key);
}
