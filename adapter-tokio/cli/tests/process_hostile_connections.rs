//! A real `switchboard node` against connections that never finish a handshake: 200 that
//! stay idle and 50 that send the first 3 bytes of a valid `Hello` and stop. With
//! `handshake_timeout_ms = 500` (from `--config`), the node closes every one of them no
//! earlier than 500 ms after it was opened and within 1 s after that deadline, counts them in
//! `switchboard_handshake_timeouts_total`, and a well-behaved node still links to it
//! afterwards: a load run delivers every message.

mod process_support;

use std::{
    io::{ErrorKind, Read, Write},
    net::{SocketAddr, TcpStream},
    thread,
    time::{Duration, Instant},
};

use process_support::{
    cluster::{ANY_PORT, NodeSpec, SETTLE_TIMEOUT, start_node, start_registry},
    http::counter,
    load::{LoadSpec, run_load},
    wait_until,
};
use switchboard_core::{
    bus::handshake::PROTOCOL_VERSIONS,
    ids::NodeId,
    wire::{self, Frame, Hello},
};

const HANDSHAKE_TIMEOUT: Duration = Duration::from_millis(500);
const IDLE: usize = 200;
const TRUNCATED: usize = 50;
/// How early a close may be seen: the node's clock and ours are read at slightly different
/// points around the accept.
const EARLY_SLACK: Duration = Duration::from_millis(20);
/// How late a close may be seen after the deadline.
const LATE_SLACK: Duration = Duration::from_secs(1);
const TARGET_ID: u64 = 0x7a1;
const LOAD_ID: u64 = 0x7a2;
const MESSAGES: u64 = 200;

/// The first 3 bytes of a valid `Hello`: part of its length prefix, never a whole frame.
fn truncated_hello() -> Vec<u8> {
    let mut bytes = Vec::new();
    wire::encode(
        &Frame::Hello(Hello {
            node: NodeId(0x7ff),
            incarnation: 1,
            versions: PROTOCOL_VERSIONS,
            name: "stranger",
            challenge: None,
        }),
        &mut bytes,
    )
    .expect("a hello encodes");
    assert!(bytes.len() > 3);
    bytes.truncate(3);
    bytes
}

/// One stranger's connection: opened between `opening` and `opened`, closed by the node when
/// `closed` is set.
struct Stranger {
    stream: TcpStream,
    opening: Instant,
    opened: Instant,
    closed: Option<Instant>,
}

/// Whether the node closed `stream`: a read returns end of file or a reset. Nothing the node
/// sends before it closes is expected (it never answers a handshake it has not got).
fn closed_by_peer(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(n) => panic!("the node sent {n} bytes to a stranger: {:?}", &buf[..n]),
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(e) if e.kind() == ErrorKind::Interrupted => false,
        Err(_) => true,
    }
}

fn open(addr: SocketAddr, first_bytes: &[u8]) -> Stranger {
    let opening = Instant::now();
    let mut stream = TcpStream::connect(addr).expect("connect to the node's bus port");
    if !first_bytes.is_empty() {
        stream
            .write_all(first_bytes)
            .expect("write the truncated hello");
    }
    let opened = Instant::now();
    stream.set_nonblocking(true).expect("non-blocking");
    Stranger {
        stream,
        opening,
        opened,
        closed: None,
    }
}

#[test]
fn strangers_that_never_finish_a_handshake_are_closed_at_the_deadline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("node.toml");
    std::fs::write(
        &config,
        format!(
            "[core]\nhandshake_timeout_ms = {}\n",
            HANDSHAKE_TIMEOUT.as_millis()
        ),
    )
    .expect("write the config");
    let registry = start_registry("registry", ANY_PORT);
    let spec = NodeSpec::new(TARGET_ID, "target", registry.addr)
        .echo()
        .config(config.to_str().expect("a UTF-8 path"));
    let node = start_node(spec);

    let hello = truncated_hello();
    let mut strangers: Vec<Stranger> = (0..IDLE + TRUNCATED)
        .map(|i| open(node.listen, if i < IDLE { &[] } else { &hello }))
        .collect();

    // Watch every connection until the node closed them all, or the last deadline + slack.
    let last_opened = strangers.iter().map(|s| s.opened).max().expect("strangers");
    let give_up = last_opened + HANDSHAKE_TIMEOUT + LATE_SLACK + Duration::from_millis(500);
    while strangers.iter().any(|s| s.closed.is_none()) && Instant::now() < give_up {
        for s in strangers.iter_mut().filter(|s| s.closed.is_none()) {
            if closed_by_peer(&mut s.stream) {
                s.closed = Some(Instant::now());
            }
        }
        thread::sleep(Duration::from_millis(5));
    }

    let mut late = Vec::new();
    for (i, s) in strangers.iter().enumerate() {
        let kind = if i < IDLE { "idle" } else { "truncated" };
        let Some(closed) = s.closed else {
            late.push(format!("{kind} #{i}: still open"));
            continue;
        };
        assert!(
            closed + EARLY_SLACK >= s.opening + HANDSHAKE_TIMEOUT,
            "{kind} #{i} closed {:?} after it was opened, before the {HANDSHAKE_TIMEOUT:?} \
             handshake deadline",
            closed - s.opening
        );
        if closed > s.opened + HANDSHAKE_TIMEOUT + LATE_SLACK {
            late.push(format!(
                "{kind} #{i}: closed {:?} after opening",
                closed - s.opened
            ));
        }
    }
    assert!(late.is_empty(), "closed late or never: {late:?}");
    let spread: Vec<Duration> = strangers
        .iter()
        .filter_map(|s| s.closed.map(|c| c - s.opening))
        .collect();
    eprintln!(
        "handshake closes after opening: min {:?}, max {:?}",
        spread.iter().min(),
        spread.iter().max()
    );

    // Every one was counted as a handshake timeout, none refused (250 < 256 pending).
    let strangers_total = u64::try_from(IDLE + TRUNCATED).expect("small");
    wait_until(
        SETTLE_TIMEOUT,
        "the node to count every handshake timeout",
        || {
            let metrics = node.metrics();
            (counter(&metrics, "switchboard_handshake_timeouts_total", &[])
                == Some(strangers_total))
            .then_some(())
        },
        || format!("{:?}", node.metrics()),
    );
    assert_eq!(
        counter(&node.metrics(), "switchboard_handshakes_refused_total", &[]),
        Some(0)
    );

    // A well-behaved node still links up and gets every message through.
    let summary = run_load(&LoadSpec::to_name(
        registry.addr,
        "target",
        LOAD_ID,
        MESSAGES,
        1_000,
    ));
    summary.assert_all_delivered(MESSAGES);
}
