//! The embedded registry's perimeter on real loopback TCP: connection caps (the connection
//! over a cap is closed at once and counted; a freed slot is taken by the next client at
//! once) and a frame announced larger than a registration may be, refused from its header
//! with the figures; a goodbye followed by a reset removes its node (never protects it).

mod support;

use std::{net::SocketAddr, time::Duration};

use switchboard_core::{
    ids::NodeId,
    registry::server::ServerConfig,
    wire::{self, Decoded, Frame, RefuseReason},
};
use switchboard_tokio::{
    Transport,
    observe::RegistryMetrics,
    registry::{ConnectionCaps, RegistryHandle, spawn_registry_capped},
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use support::{STEP, init_logs, register_frame, within};

async fn registry(caps: ConnectionCaps) -> RegistryHandle {
    let config = ServerConfig {
        // Long enough that no idle connection is closed by the registry during a test.
        access_timeout: Duration::from_secs(60),
        heartbeat_timeout: None,
        ..ServerConfig::default()
    };
    let addr = SocketAddr::from(([127, 0, 0, 1], 0));
    within(
        "registry bind",
        spawn_registry_capped(addr, config, 7, Transport::plain(), caps),
    )
    .await
    .expect("the registry binds")
}

/// Polls the registry's metrics until `done` holds (bounded).
async fn wait_metrics(
    registry: &RegistryHandle,
    what: &str,
    done: impl Fn(&RegistryMetrics) -> bool,
) -> RegistryMetrics {
    within(what, async {
        loop {
            let metrics = registry.metrics().await.expect("the registry runs");
            if done(&metrics) {
                return metrics;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

/// Reads one whole frame from `stream` (bounded); `None` at a close before any byte.
async fn read_frame(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    within("a frame", async {
        loop {
            if let Ok(Decoded::Frame(_, len)) = wire::decode(&buf, wire::DEFAULT_MAX_FRAME) {
                buf.truncate(len);
                return Some(buf);
            }
            let mut chunk = [0u8; 64 << 10];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await
}

/// Registers node `id` on a fresh connection; returns the connection and the time from the
/// connect to the snapshot.
async fn register(addr: SocketAddr, id: u64) -> (TcpStream, Duration) {
    let started = tokio::time::Instant::now();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(&register_frame(id)).await.expect("write");
    let answer = read_frame(&mut stream).await.expect("an answer");
    match wire::decode(&answer, wire::DEFAULT_MAX_FRAME) {
        Ok(Decoded::Frame(Frame::Snapshot(s), _)) => {
            assert!(s.entries.iter().any(|e| e.discovery.id == NodeId(id)));
        }
        other => panic!("expected a snapshot, got {other:?}"),
    }
    (stream, started.elapsed())
}

/// Whether the registry closed `stream` (EOF) within a step, without a byte.
async fn closed_at_once(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(STEP, stream.read(&mut byte)).await,
        Ok(Ok(0) | Err(_))
    )
}

/// Whether `stream` is still open 200 ms from now (no EOF, no byte).
async fn still_open(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    tokio::time::timeout(Duration::from_millis(200), stream.read(&mut byte))
        .await
        .is_err()
}

#[tokio::test]
async fn at_the_unregistered_cap_the_oldest_makes_room_and_a_real_node_registers_at_once() {
    init_logs();
    let caps = ConnectionCaps::new(64, 4);
    let registry = registry(caps).await;
    let addr = registry.local_addr();
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(TcpStream::connect(addr).await.expect("connect"));
        // One at a time, so "oldest" is the order of this loop.
        let n = idle.len() as u64;
        wait_metrics(&registry, "one more unregistered", |m| m.unregistered == n).await;
    }
    // The fifth closes the oldest, the first, and stays.
    let mut extra = TcpStream::connect(addr).await.expect("connect");
    assert!(
        closed_at_once(&mut idle[0]).await,
        "the oldest unregistered connection is closed"
    );
    let metrics = wait_metrics(&registry, "one refusal", |m| {
        m.refused_at_max_unregistered == 1
    })
    .await;
    assert_eq!(
        (
            metrics.connections,
            metrics.unregistered,
            metrics.refused_at_max_connections
        ),
        (4, 4, 0)
    );
    assert!(still_open(&mut extra).await, "the newcomer is still open");
    // At the cap, a real node registers at once: the oldest silent one (idle[1]) makes room.
    let (_node, took) = register(addr, 1).await;
    assert!(took < Duration::from_secs(1), "registered in {took:?}");
    assert!(closed_at_once(&mut idle[1]).await);
    let metrics = registry.metrics().await.expect("the registry runs");
    assert_eq!(
        (
            metrics.nodes_live,
            metrics.connections,
            metrics.unregistered,
            metrics.refused_at_max_unregistered
        ),
        (1, 4, 3, 2)
    );
    // A registered node frees its unregistered place: one more idle connection fits.
    let _again = TcpStream::connect(addr).await.expect("connect");
    wait_metrics(&registry, "4 unregistered again", |m| m.unregistered == 4).await;
    assert_eq!(
        registry
            .metrics()
            .await
            .expect("the registry runs")
            .refused_at_max_unregistered,
        2
    );
    assert!(still_open(&mut idle[2]).await, "nothing else was closed");
    registry.kill();
}

#[tokio::test]
async fn the_total_cap_counts_registered_connections() {
    init_logs();
    let caps = ConnectionCaps::new(2, 2);
    let registry = registry(caps).await;
    let addr = registry.local_addr();
    let (_a, _) = register(addr, 1).await;
    let (_b, _) = register(addr, 2).await;
    let mut extra = TcpStream::connect(addr).await.expect("connect");
    assert!(closed_at_once(&mut extra).await);
    let metrics = wait_metrics(&registry, "one refusal", |m| {
        m.refused_at_max_connections == 1
    })
    .await;
    assert_eq!(
        (metrics.nodes_live, metrics.refused_at_max_unregistered),
        (2, 0)
    );
    registry.kill();
}

#[tokio::test]
async fn a_16_mib_frame_announced_before_registration_is_refused_from_its_header() {
    init_logs();
    let registry = registry(ConnectionCaps::default()).await;
    let mut stream = TcpStream::connect(registry.local_addr())
        .await
        .expect("connect");
    // The header of a 16 MiB `Register`, and nothing more.
    let mut header = (16u32 << 20).to_le_bytes().to_vec();
    header.extend_from_slice(&[wire::WIRE_VERSION, 16, 0, 0]);
    stream.write_all(&header).await.expect("write");
    let answer = read_frame(&mut stream).await.expect("a refusal");
    let Ok(Decoded::Frame(Frame::HelloAck(ack), _)) =
        wire::decode(&answer, wire::DEFAULT_MAX_FRAME)
    else {
        panic!("expected a HelloAck refusal: {answer:?}")
    };
    assert_eq!(ack.result, Err(RefuseReason::RecordTooLarge));
    assert_eq!(
        (ack.name, ack.node, ack.incarnation),
        (
            "frame",
            NodeId(16 << 20),
            (64 << 10) + wire::REGISTER_OVERHEAD as u64
        )
    );
    assert!(closed_at_once(&mut stream).await);
    let metrics = wait_metrics(&registry, "counted", |m| m.records_too_large == 1).await;
    assert_eq!(metrics.connections, 0);
    registry.kill();
}

/// The process's resident set, in bytes (Linux; `None` elsewhere).
fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[tokio::test]
async fn a_thousand_hostile_connections_leave_room_for_a_real_node() {
    init_logs();
    let registry = registry(ConnectionCaps::default()).await;
    let addr = registry.local_addr();
    // 1,000 hostile connections: idle ones, ones trickling half a header, and ones announcing
    // a 16 MiB `Register` and sending its first 64 KiB.
    let mut hostile = Vec::new();
    let mut announce = (16u32 << 20).to_le_bytes().to_vec();
    announce.extend_from_slice(&[wire::WIRE_VERSION, 16, 0, 0]);
    announce.resize(64 << 10, 0x61);
    for i in 0..1_000 {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        match i % 3 {
            0 => {}
            1 => stream.write_all(&[200, 0, 0, 0, 1]).await.expect("trickle"),
            _ => {
                // The registry may close it before all of it is written.
                let _ = stream.write_all(&announce).await;
            }
        }
        hostile.push(stream);
    }
    let metrics = wait_metrics(&registry, "the hostile connections seen", |m| {
        m.records_too_large == 333 && m.unregistered == 667
    })
    .await;
    assert_eq!(
        (
            metrics.connections,
            metrics.refused_at_max_unregistered,
            metrics.refused_at_max_connections
        ),
        (667, 0, 0)
    );
    // A real node registers at once.
    let (_node, took) = register(addr, 1).await;
    assert!(took < Duration::from_secs(1), "registered in {took:?}");
    let rss = rss_bytes();
    eprintln!(
        "under 1,000 hostile connections: registered in {took:?}, resident set {rss:?} bytes"
    );
    if let Some(rss) = rss {
        assert!(rss < 100 << 20, "resident set {rss} bytes");
    }
    // Filling the unregistered cap (1,024): a real node still registers at once, the oldest
    // unregistered connection making room for it.
    for _ in 0..(1_024 - 667) {
        hostile.push(TcpStream::connect(addr).await.expect("connect"));
    }
    wait_metrics(&registry, "the cap reached", |m| m.unregistered == 1_024).await;
    let (_second, took) = register(addr, 2).await;
    assert!(
        took < Duration::from_secs(1),
        "registered at the cap in {took:?}"
    );
    assert!(
        closed_at_once(&mut hostile[0]).await,
        "the oldest hostile connection made room"
    );
    let metrics = wait_metrics(&registry, "one refusal", |m| {
        m.refused_at_max_unregistered == 1
    })
    .await;
    assert_eq!(
        (
            metrics.nodes_live,
            metrics.connections,
            metrics.unregistered
        ),
        (2, 1_025, 1_023)
    );
    registry.kill();
}

/// Bytes written on the loopback connection from local port `local` to remote port `remote`
/// that its peer has not acknowledged yet (`tx_queue` of `/proc/net/tcp`); `None` if it is not
/// listed. Both ports are matched: Linux gives one ephemeral port to connections to different
/// destinations, so another test's connection may share the local port.
fn unacked(local: u16, remote: u16) -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("read /proc/net/tcp");
    let port_of = |field: &str| {
        let hex = field.rsplit_once(':')?.1;
        u16::from_str_radix(hex, 16).ok()
    };
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if port_of(fields.get(1)?)? != local || port_of(fields.get(2)?)? != remote {
            return None;
        }
        let tx_queue = fields.get(4)?.split_once(':')?.0;
        u64::from_str_radix(tx_queue, 16).ok()
    })
}

/// A node that says `Bye{Shutdown}` behind five megabytes of heartbeats, and resets its
/// connection (it drops it with changes the registry pushed still unread) once every byte
/// reached the registry's host, is removed, never protected: the registry reads on to the
/// goodbye although its answers to the heartbeats fail to write once the reset arrived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goodbye_followed_by_a_reset_removes_the_node_without_protection() {
    init_logs();
    let registry = registry(ConnectionCaps::default()).await;
    let addr = registry.local_addr();
    let (leaving, _) = register(addr, 1).await;
    let mut others = Vec::new();
    for id in 2..=41 {
        others.push(register(addr, id).await.0);
    }
    let mut bytes = Vec::new();
    for sequence in 0..200_000 {
        let beat = wire::Heartbeat { epoch: 0, sequence };
        wire::encode(&beat.into(), &mut bytes).expect("encodable");
    }
    let bye = wire::Bye {
        reason: wire::ByeReason::Shutdown,
    };
    wire::encode(&bye.into(), &mut bytes).expect("encodable");
    let mut leaving = leaving.into_std().expect("a std stream");
    leaving.set_nonblocking(false).expect("blocking");
    let port = leaving.local_addr().expect("local address").port();
    let registry_port = addr.port();
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        leaving.write_all(&bytes).expect("write the goodbye");
        // Every byte acknowledged by the registry's host before the reset: nothing of the
        // goodbye is discarded with the send queue.
        for _ in 0..500 {
            if unacked(port, registry_port) == Some(0) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            unacked(port, registry_port),
            Some(0),
            "the registry's host took every byte"
        );
        // The 40 `Put`s of the others are unread: this drop resets the connection.
        drop(leaving);
    })
    .await
    .expect("the writer");
    let metrics = wait_metrics(&registry, "the goodbye handled", |m| {
        m.removals + m.nodes_protected == 1
    })
    .await;
    assert_eq!(
        (
            metrics.nodes_live,
            metrics.nodes_protected,
            metrics.removals
        ),
        (40, 0, 1)
    );
    let listed: Vec<u64> = (registry.entries().await.iter())
        .map(|e| e.discovery.id.0)
        .collect();
    assert_eq!(listed, (2..=41).collect::<Vec<u64>>());
    drop(others);
}
