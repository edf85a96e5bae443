//! The embedded registry's counters on its `/metrics`, on real loopback TCP: registrations,
//! removals, expiries (access and heartbeat timers), protocol errors and sessions (open now,
//! and opened), read as the exact sample lines a scraper gets.

#![cfg(feature = "admin")]

mod support;

use std::{net::SocketAddr, time::Duration};

use switchboard_core::{
    registry::server::ServerConfig,
    wire::{self, Decoded, Frame},
};
use switchboard_tokio::{
    Transport,
    admin::AdminServer,
    observe::RegistryMetrics,
    registry::{ConnectionCaps, RegistryHandle, spawn_registry_capped},
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use support::{init_logs, register_frame, scrape, within};

/// Registers node `id` on a fresh connection and reads its snapshot; returns the connection.
async fn register(addr: SocketAddr, id: u64) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(&register_frame(id)).await.expect("write");
    let mut buf = Vec::new();
    within("a snapshot", async {
        loop {
            if let Ok(Decoded::Frame(frame, _)) = wire::decode(&buf, wire::DEFAULT_MAX_FRAME) {
                assert!(matches!(frame, Frame::Snapshot(_)), "{frame:?}");
                return;
            }
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.expect("read");
            assert_ne!(n, 0, "closed before the snapshot");
            buf.extend_from_slice(&chunk[..n]);
        }
    })
    .await;
    stream
}

/// The sample lines of the registry families this test drives, in their order on the page.
fn driven_lines(text: &str) -> Vec<&str> {
    const DRIVEN: [&str; 6] = [
        "switchboard_registry_registrations_total",
        "switchboard_registry_removals_total",
        "switchboard_registry_expiries_total",
        "switchboard_registry_protocol_errors_total",
        "switchboard_registry_sessions",
        "switchboard_registry_sessions_opened_total",
    ];
    text.lines()
        .filter(|line| {
            let name = line.split(['{', ' ']).next().unwrap_or_default();
            DRIVEN.contains(&name)
        })
        .collect()
}

async fn wait_metrics(registry: &RegistryHandle, done: impl Fn(&RegistryMetrics) -> bool) {
    within("registry metrics", async {
        while !done(&registry.metrics().await.expect("the registry runs")) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn registrations_removals_expiries_protocol_errors_and_sessions_are_counted() {
    init_logs();
    let config = ServerConfig {
        access_timeout: Duration::from_millis(300),
        disconnect_protection: Duration::from_millis(300),
        heartbeat_timeout: Some(Duration::from_millis(600)),
        ..ServerConfig::default()
    };
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let caps = ConnectionCaps::default();
    let registry = within(
        "registry bind",
        spawn_registry_capped(loopback, config, 7, Transport::plain(), caps),
    )
    .await
    .expect("the registry binds");
    let addr = registry.local_addr();
    let admin = AdminServer::bind_registry(loopback, registry.stats())
        .await
        .expect("admin bind");

    // Two sessions open: node 1 (then silent: its heartbeat timer expires) and node 2.
    let _silent = register(addr, 1).await;
    let dropped = register(addr, 2).await;
    assert_eq!(
        driven_lines(&scrape(admin.local_addr()).await),
        [
            "switchboard_registry_registrations_total 2",
            "switchboard_registry_removals_total 0",
            "switchboard_registry_expiries_total{timer=\"access\"} 0",
            "switchboard_registry_expiries_total{timer=\"heartbeat\"} 0",
            "switchboard_registry_protocol_errors_total 0",
            "switchboard_registry_sessions 2",
            "switchboard_registry_sessions_opened_total 2",
        ]
    );
    // Node 2 goes: protected, then removed. A connection that never registers: its access
    // timer expires. Node 5 registers twice on one connection: a protocol error.
    drop(dropped);
    let _mute = TcpStream::connect(addr).await.expect("connect");
    let mut twice = register(addr, 5).await;
    twice.write_all(&register_frame(5)).await.expect("write");
    wait_metrics(&registry, |m| {
        (
            m.removals,
            m.access_timeouts,
            m.heartbeat_timeouts,
            m.protocol_errors,
        ) == (3, 1, 1, 1)
    })
    .await;
    assert_eq!(
        driven_lines(&scrape(admin.local_addr()).await),
        [
            "switchboard_registry_registrations_total 3",
            "switchboard_registry_removals_total 3",
            "switchboard_registry_expiries_total{timer=\"access\"} 1",
            "switchboard_registry_expiries_total{timer=\"heartbeat\"} 1",
            "switchboard_registry_protocol_errors_total 1",
            "switchboard_registry_sessions 0",
            "switchboard_registry_sessions_opened_total 3",
        ]
    );
}
