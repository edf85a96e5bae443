//! Bounded state for departed peers (issue 23 item 4, docs/ARCHITECTURE.md §9.4), against real
//! processes on 127.0.0.1: a registry, a proxy and a leaf under it (`switchboard` processes),
//! and short-lived light clients (in this process, `switchboard_tokio` nodes labelled
//! `role=client` under the proxy, a new random id and incarnation each) that each register,
//! send one message to the leaf through the proxy, see it delivered and shut down. The
//! proxy's and the leaf's RSS (`/proc/PID/status` `VmRSS`) must not grow by 1 MB or more over
//! the second half of the senders, and one grace after the last one left (12.5 s) their
//! per-peer tables (`/status` `peer_tables`) count the live set again.
//!
//! The suite runs 1,000 senders (18 s here, plus the 20 s bound on the tables); the 10,000 of
//! the figure (92 s here) run by hand:
//! `cargo nextest run -p switchboard process_departed_senders --run-ignored only --no-capture`.

mod process_support;

use std::{net::SocketAddr, time::Duration};

use bytes::Bytes;
use process_support::{
    cluster::{ANY_PORT, Node, NodeSpec, start_node, start_registry},
    scenario::{LEAF_A, LEAF_A_ID, PROXY_ID, proxy_spec},
    wait_until,
};
use switchboard_tokio::{
    NodeBuilder, TargetSpec,
    switchboard_core::{ids::NodeId, inspect::PeerTables, outcome::Outcome},
};

/// Senders running at once.
const CONCURRENT: u64 = 8;
/// Bound on one sender: start, register, send, delivered, shut down.
const SENDER_TIMEOUT: Duration = Duration::from_secs(20);
/// Bound on the tables counting the live set again: one grace (12.5 s) and a margin.
const FORGET_TIMEOUT: Duration = Duration::from_secs(20);
/// RSS growth allowed over the second half of the senders.
const RSS_GROWTH_LIMIT_KIB: u64 = 1024;
/// The first sender's id (each run's ids are new).
const FIRST_SENDER: u64 = 0x5ea_0000;

/// `VmRSS` of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/status: {e}"));
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in /proc/{pid}/status"))
}

/// One light client: registers, sends one message to the leaf (through the proxy), and
/// shuts down once it is delivered.
async fn one_sender(registry: SocketAddr, id: u64) {
    let (handle, _inbox) = NodeBuilder::new(NodeId(id), format!("soak-{id}"))
        .registry(registry)
        .upstream(NodeId(PROXY_ID))
        .label("role", "client")
        .start()
        .await
        .unwrap_or_else(|e| panic!("sender {id}: {e}"));
    assert!(
        handle.wait_registered(SENDER_TIMEOUT).await.is_ok(),
        "sender {id} not registered"
    );
    let outcome = handle
        .send(
            TargetSpec::Id(NodeId(LEAF_A_ID)),
            1,
            Bytes::from_static(b"soak"),
        )
        .await
        .unwrap_or_else(|e| panic!("sender {id}: {e:?}"));
    assert_eq!(outcome, Outcome::Delivered, "sender {id}");
    handle.shutdown().await.expect("a running node");
}

/// `senders` in waves of [`CONCURRENT`], starting at id `first`.
fn run_senders(registry: SocketAddr, first: u64, senders: u64) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        for wave in (0..senders).step_by(CONCURRENT as usize) {
            let tasks: Vec<_> = (wave..senders.min(wave + CONCURRENT))
                .map(|i| tokio::spawn(one_sender(registry, first + i)))
                .collect();
            for task in tasks {
                tokio::time::timeout(SENDER_TIMEOUT, task)
                    .await
                    .expect("a sender within its bound")
                    .expect("a sender that did not panic");
            }
        }
    });
}

/// What one soak measured.
#[derive(Debug)]
struct Soak {
    /// (proxy, leaf) RSS at the half, KiB.
    half: (u64, u64),
    /// (proxy, leaf) RSS at the end, KiB.
    end: (u64, u64),
    /// (proxy, leaf) tables one grace after the last sender left.
    tables: (PeerTables, PeerTables),
    /// (proxy, leaf) tables before the first sender.
    before: (PeerTables, PeerTables),
}

/// Waits until `node`'s tables show no departed sender (no receive stream, suspect, death,
/// relayed source or handshake incarnation beyond the live set) and returns them.
fn settled_tables(node: &Node, live: &PeerTables) -> PeerTables {
    wait_until(
        FORGET_TIMEOUT,
        "the departed senders forgotten",
        || {
            let t = node.status().peer_tables;
            (t.recv_streams <= live.recv_streams
                && t.peer_incarnations <= live.peer_incarnations
                && t.suspects == 0
                && t.dead == 0
                && t.relayed_sources == 0
                && t.departures == 0)
                .then_some(t)
        },
        || format!("{}: {:?}", node.proc.label(), node.status().peer_tables),
    )
}

fn soak(senders: u64) -> Soak {
    let registry = start_registry("registry", ANY_PORT);
    let proxy = start_node(proxy_spec(&registry));
    // No echo: an echo to a sender that already left opens an endpoint that only its GC
    // (60 s) ends — bounded, but not within this test's wait.
    let leaf = start_node(NodeSpec::new(LEAF_A_ID, LEAF_A, registry.addr).upstream(PROXY_ID));
    for node in [&proxy, &leaf] {
        node.wait_known(2);
    }
    leaf.wait_link_up(PROXY_ID);
    let pids = (proxy.proc.pid(), leaf.proc.pid());
    let rss = || (rss_kib(pids.0), rss_kib(pids.1));
    let before = (proxy.status().peer_tables, leaf.status().peer_tables);
    run_senders(registry.addr, FIRST_SENDER, senders / 2);
    let half = rss();
    run_senders(
        registry.addr,
        FIRST_SENDER + senders / 2,
        senders - senders / 2,
    );
    let end = rss();
    eprintln!(
        "{senders} senders: RSS (proxy, leaf) at the half {half:?} KiB, at the end {end:?} KiB"
    );
    let tables = (
        settled_tables(&proxy, &before.0),
        settled_tables(&leaf, &before.1),
    );
    assert_eq!(
        leaf.received_total(),
        senders,
        "every sender delivered once"
    );
    let soak = Soak {
        half,
        end,
        tables,
        before,
    };
    eprintln!("{senders} senders: {soak:#?}");
    soak
}

fn assert_bounded(soak: &Soak) {
    for (what, half, end) in [
        ("proxy", soak.half.0, soak.end.0),
        ("leaf", soak.half.1, soak.end.1),
    ] {
        assert!(
            end < half + RSS_GROWTH_LIMIT_KIB,
            "{what}: RSS {half} KiB at the half, {end} KiB at the end"
        );
    }
    for (before, after) in [
        (soak.before.0, soak.tables.0),
        (soak.before.1, soak.tables.1),
    ] {
        assert_eq!(after.endpoints, before.endpoints);
        assert_eq!(after.routes, before.routes);
        assert_eq!(after.up_peers, before.up_peers);
        assert_eq!(after.discovery, before.discovery);
        assert_eq!(after.clients, 0);
    }
}

#[test]
fn a_thousand_departed_senders_leave_the_proxy_and_the_leaf_flat() {
    assert_bounded(&soak(1_000));
}

#[test]
#[ignore = "the issue's 10,000-sender figure: about a minute and a half, run by hand"]
fn ten_thousand_departed_senders_leave_the_proxy_and_the_leaf_flat() {
    assert_bounded(&soak(10_000));
}
