//! A recorded handshake replayed against a real node is refused and counted.
//!
//! A registry and a node run with one cluster key. The node advertises the address of a
//! recording TCP relay started by this test, so `switchboard send` (with the key) dials it
//! through the relay: the relay writes down every byte the sender sent — its `Hello` with
//! the challenge nonce, its `Auth` proof and its `Data` frame — and the message is
//! delivered. Then a raw TCP client connects to the node's own port and sends exactly those
//! bytes again. The node must answer with one `HelloAck` refusing it as `WrongCluster` and
//! close; `/metrics` counts one `replay` refusal and nothing else, and the replayed `Data`
//! frame never reaches the application (`switchboard_received_total` stays 1).

mod process_support;

use std::{
    io::{ErrorKind, Read, Write},
    net::{Shutdown, SocketAddr, TcpListener, TcpStream},
    sync::{Arc, Mutex},
    thread,
    time::{Duration, Instant},
};

use process_support::{
    Proc,
    cluster::{ANY_PORT, NodeSpec, start_node, start_registry_with},
    http::counter,
};
use switchboard_core::wire::{DEFAULT_MAX_FRAME, Frame, FrameReader, RefuseReason};

const TARGET_ID: u64 = 0x5e1;
const PAYLOAD: &str = "recorded once";
/// Bound on every wait of this test: the relay's copies, the sender's run, the node's answer.
const LIMIT: Duration = Duration::from_secs(20);

/// A relay in front of `upstream` that keeps what its one client sent.
struct Recorder {
    sent: Arc<Mutex<Vec<u8>>>,
    worker: thread::JoinHandle<()>,
}

/// Copies `from` into `to` until either side ends or [`LIMIT`] passes, appending the bytes to
/// `record` when one is given.
fn pipe(mut from: TcpStream, mut to: TcpStream, record: Option<&Mutex<Vec<u8>>>) {
    from.set_read_timeout(Some(Duration::from_millis(100)))
        .expect("read timeout");
    let end = Instant::now() + LIMIT;
    let mut buf = [0u8; 4096];
    while Instant::now() < end {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if let Some(record) = record {
                    record.lock().expect("record").extend_from_slice(&buf[..n]);
                }
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

impl Recorder {
    /// Relays the first connection `listener` accepts to `upstream`.
    fn start(listener: TcpListener, upstream: SocketAddr) -> Recorder {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&sent);
        let worker = thread::spawn(move || {
            let (client, _) = listener.accept().expect("the sender dials the relay");
            let server = TcpStream::connect(upstream).expect("the relay reaches the node");
            let (client_read, server_write) = (
                client.try_clone().expect("clone"),
                server.try_clone().expect("clone"),
            );
            let back = thread::spawn(move || pipe(server, client, None));
            pipe(client_read, server_write, Some(&record));
            back.join().expect("the backward copy ends");
        });
        Recorder { sent, worker }
    }
}

/// The frames in `bytes`, decoded into (kind name, detail) for assertions and messages.
fn frames(bytes: &[u8]) -> Vec<String> {
    let mut reader = FrameReader::new(DEFAULT_MAX_FRAME);
    reader.push(bytes);
    let mut out = Vec::new();
    while let Some(frame) = reader.next_frame().expect("well-formed frames") {
        out.push(match frame {
            Frame::Hello(h) => format!("hello challenge={}", h.challenge.is_some()),
            Frame::Auth(_) => "auth".to_owned(),
            Frame::Data(d) => format!("data {}", String::from_utf8_lossy(d.payload).into_owned()),
            Frame::HelloAck(a) => format!("hello_ack {:?}", a.result),
            other => format!("{:?}", other.kind()),
        });
    }
    assert_eq!(reader.buffered(), 0, "no partial frame left");
    out
}

/// Reads from `stream` until the peer closes it or [`LIMIT`] passes; `true` when it closed.
fn read_to_close(stream: &mut TcpStream, into: &mut Vec<u8>) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("read timeout");
    let end = Instant::now() + LIMIT;
    let mut buf = [0u8; 4096];
    while Instant::now() < end {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(n) => into.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn a_replayed_handshake_is_refused_and_counted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("cluster.key");
    process_support::write_secret(&key, &format!("{}\n", "5c".repeat(32)));
    let key = key.to_str().expect("a UTF-8 path");

    let registry = start_registry_with("registry", ANY_PORT, &["--cluster-key-file", key]);
    let relay = TcpListener::bind(ANY_PORT).expect("relay port");
    let relay_addr = relay.local_addr().expect("relay address").to_string();
    let node = start_node(
        NodeSpec::new(TARGET_ID, "target", registry.addr)
            .echo()
            .flags(&["--cluster-key-file", key, "--advertise", &relay_addr]),
    );
    assert!(node.ready_registered(), "{}", node.ready);
    let recorder = Recorder::start(relay, node.listen);

    // The genuine exchange, through the relay.
    let registry_addr = registry.addr.to_string();
    let mut send = Proc::spawn(
        "send",
        &[
            "send",
            "--registry",
            &registry_addr,
            "--to",
            "target",
            "--payload",
            PAYLOAD,
            "--cluster-key-file",
            key,
        ]
        .map(str::to_owned),
    );
    let outcome = send.next_json_line(LIMIT);
    assert_eq!(outcome["outcome"], "delivered", "{outcome}");
    assert!(send.wait_exit(LIMIT).success());
    recorder
        .worker
        .join()
        .expect("the relay ends with the sender");
    let recorded = recorder.sent.lock().expect("record").clone();
    let seen = frames(&recorded);
    assert_eq!(
        seen[..3],
        [
            "hello challenge=true".to_owned(),
            "auth".to_owned(),
            format!("data {PAYLOAD}"),
        ],
        "the sender's side of a genuine handshake: {seen:?}"
    );
    assert_eq!(node.received_total(), 1);

    // The same bytes, replayed by a stranger straight to the node's port.
    let mut stranger = TcpStream::connect(node.listen).expect("connect to the node");
    stranger.write_all(&recorded).expect("replay");
    let mut answer = Vec::new();
    assert!(
        read_to_close(&mut stranger, &mut answer),
        "the node closes the replayed connection"
    );
    assert_eq!(
        frames(&answer),
        [format!(
            "hello_ack {:?}",
            Err::<(), _>(RefuseReason::WrongCluster)
        )],
        "one refusal, then the close"
    );

    let metrics = node.metrics();
    let refusals = |kind| {
        counter(
            &metrics,
            "switchboard_auth_refusals_total",
            &[("kind", kind)],
        )
    };
    assert_eq!(refusals("replay"), Some(1), "counted as a replay");
    for kind in ["no_proof", "bad_proof", "unknown_key", "before_auth"] {
        assert_eq!(refusals(kind), Some(0), "{kind}");
    }
    assert_eq!(
        node.received_total(),
        1,
        "the replayed Data frame never reached the application"
    );
}
