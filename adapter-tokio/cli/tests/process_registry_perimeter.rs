//! A real `switchboard registry` (no cluster key: anyone who reaches the port may speak)
//! against two attacks a single client could make on e6251a5:
//!
//! - **the oversized record**: a raw client registers a record padded to just under 16 MiB.
//!   On e6251a5 the registry accepted it and every later snapshot exceeded the clients' frame
//!   limit, so real nodes looped without discovery. Now the registration is refused and two
//!   real nodes started afterwards register and know each other;
//! - **the identity hijack**: a raw client reads a victim's published record from its own
//!   snapshot and registers the victim's id with what was published and a new incarnation.
//!   On e6251a5 that took the id over at once. Now it is refused and the victim stays listed
//!   with its own incarnation.

mod process_support;

use std::{
    io::{ErrorKind, Read, Write},
    net::{SocketAddr, TcpStream},
    time::{Duration, Instant},
};

use process_support::cluster::{ANY_PORT, NodeSpec, start_node, start_registry};
use switchboard_core::wire::{
    self, DEFAULT_MAX_FRAME, Frame, FrameKind, FrameReader, WIRE_VERSION,
};

const READ_LIMIT: Duration = Duration::from_secs(5);

/// A `Register` frame, encoded by hand (incarnation, discovery JSON, no topology), so any
/// size can be sent.
fn register_frame(incarnation: u64, discovery_json: &[u8]) -> Vec<u8> {
    let len = 8 + 8 + 4 + discovery_json.len() + 4;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&u32::try_from(len).expect("fits a frame").to_le_bytes());
    out.extend_from_slice(&[WIRE_VERSION, FrameKind::Register.code(), 0, 0]);
    out.extend_from_slice(&incarnation.to_le_bytes());
    out.extend_from_slice(
        &u32::try_from(discovery_json.len())
            .expect("fits")
            .to_le_bytes(),
    );
    out.extend_from_slice(discovery_json);
    out.extend_from_slice(&0u32.to_le_bytes());
    out
}

/// What the registry answered on one connection: the frames it sent (as owned bytes) until it
/// closed the connection or [`READ_LIMIT`] passed, and whether it closed.
struct Answer {
    frames: Vec<bytes::Bytes>,
    closed: bool,
    /// A frame a client with the default limit refuses (the connection is unusable after it).
    unreadable: Option<wire::DecodeError>,
}

/// Sends `bytes` (ignoring a write the registry cut short) and reads frames with the
/// clients' default limit until the registry closes, a frame is unreadable, or `until` says
/// enough.
fn exchange(
    addr: SocketAddr,
    bytes: &[u8],
    mut until: impl FnMut(&[bytes::Bytes]) -> bool,
) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect to the registry");
    let _ = stream.write_all(bytes);
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .expect("read timeout");
    let mut reader = FrameReader::new(DEFAULT_MAX_FRAME);
    let mut answer = Answer {
        frames: Vec::new(),
        closed: false,
        unreadable: None,
    };
    let mut buf = vec![0u8; 64 * 1024];
    let end = Instant::now() + READ_LIMIT;
    while Instant::now() < end {
        match stream.read(&mut buf) {
            Ok(0) => {
                answer.closed = true;
                return answer;
            }
            Ok(n) => {
                reader.push(&buf[..n]);
                loop {
                    match reader.next_frame_bytes() {
                        Ok(Some(frame)) => answer.frames.push(frame),
                        Ok(None) => break,
                        Err(e) => {
                            answer.unreadable = Some(e);
                            return answer;
                        }
                    }
                }
                if until(&answer.frames) {
                    return answer;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => {
                answer.closed = true;
                return answer;
            }
        }
    }
    answer
}

fn decode(frame: &bytes::Bytes) -> Frame<'_> {
    match wire::decode(frame, DEFAULT_MAX_FRAME) {
        Ok(wire::Decoded::Frame(frame, _)) => frame,
        other => panic!("a frame the registry sent does not decode: {other:?}"),
    }
}

fn has_snapshot(frames: &[bytes::Bytes]) -> bool {
    frames
        .iter()
        .any(|f| matches!(decode(f), Frame::Snapshot(_)))
}

#[test]
fn an_oversized_record_is_refused_and_discovery_keeps_working() {
    let registry = start_registry("registry", ANY_PORT);
    // The probe's size: a `Register` 8 bytes under the 16 MiB frame limit.
    let json = |padding: &str| format!(r#"{{"id":"900","name":"bomb","custom_data":"{padding}"}}"#);
    let fixed = register_frame(7, json("").as_bytes()).len();
    let padding = "x".repeat(DEFAULT_MAX_FRAME - 8 - fixed);
    let bomb = register_frame(7, json(&padding).as_bytes());
    assert_eq!(bomb.len(), 16_777_208);
    let answer = exchange(registry.addr, &bomb, has_snapshot);
    assert_eq!(
        answer.unreadable, None,
        "the registry sent a frame no client reads"
    );
    assert!(
        answer.closed,
        "the registry kept the bomb's connection open"
    );
    // Refused from its length field, with the figures: which limit, the size, the limit.
    let refusal = answer
        .frames
        .iter()
        .find_map(|f| match decode(f) {
            Frame::HelloAck(ack) => {
                Some((ack.result, ack.name.to_owned(), ack.node.0, ack.incarnation))
            }
            _ => None,
        })
        .expect("the registry answers the bomb with a refusal");
    assert_eq!(
        refusal,
        (
            Err(wire::RefuseReason::RecordTooLarge),
            "frame".to_owned(),
            16_777_208,
            65_592
        )
    );
    assert!(
        !has_snapshot(&answer.frames),
        "the registry accepted a {}-byte registration",
        bomb.len()
    );

    // Two real nodes register afterwards and see each other (and nothing else).
    let a = start_node(NodeSpec::new(0x901, "a", registry.addr));
    let b = start_node(NodeSpec::new(0x902, "b", registry.addr));
    assert!(a.ready_registered() && b.ready_registered());
    a.wait_known(2);
    b.wait_known(2);
}

#[test]
fn a_published_identity_does_not_take_an_id_over() {
    let registry = start_registry("registry", ANY_PORT);
    let victim = start_node(NodeSpec::new(0x911, "victim", registry.addr).identity("ident-victim"));
    assert!(victim.ready_registered());

    // The attacker registers as a node of its own and reads the victim's published record.
    let own = register_frame(1, br#"{"id":"2322","name":"spy"}"#);
    let answer = exchange(registry.addr, &own, has_snapshot);
    let snapshot = answer
        .frames
        .iter()
        .find_map(|f| match decode(f) {
            Frame::Snapshot(s) => Some(s),
            _ => None,
        })
        .expect("the spy's snapshot");
    let published = snapshot
        .entries
        .iter()
        .find(|e| e.discovery.id.0 == 0x911)
        .expect("the victim is listed");
    let victim_incarnation = published.incarnation;
    assert_ne!(
        published.discovery.identity, "ident-victim",
        "the registry publishes the victim's identity"
    );

    // It claims the victim's id with what was published, in a new incarnation.
    let json = format!(
        r#"{{"id":"{}","name":"victim","identity":"{}"}}"#,
        0x911, published.discovery.identity
    );
    let answer = exchange(
        registry.addr,
        &register_frame(999, json.as_bytes()),
        has_snapshot,
    );
    assert!(!has_snapshot(&answer.frames), "the hijack was accepted");
    let refusal = answer
        .frames
        .iter()
        .find_map(|f| match decode(f) {
            Frame::HelloAck(ack) => Some(ack.result),
            _ => None,
        })
        .expect("the registry answers the hijack with a refusal");
    assert_eq!(refusal, Err(wire::RefuseReason::DuplicateId));
    assert!(answer.closed);

    // The victim is still listed with its own incarnation, and still registered.
    let check = register_frame(1, br#"{"id":"2323","name":"check"}"#);
    let answer = exchange(registry.addr, &check, has_snapshot);
    let listed = answer
        .frames
        .iter()
        .find_map(|f| match decode(f) {
            Frame::Snapshot(s) => s
                .entries
                .iter()
                .find(|e| e.discovery.id.0 == 0x911)
                .map(|e| e.incarnation),
            _ => None,
        })
        .expect("the victim is still listed");
    assert_eq!(listed, victim_incarnation);
    assert!(victim.status().registered);
}
