//! Cluster-key authentication on one node fed a hand-built peer's frames (wrong key, a
//! replayed handshake, a tampered proof, data before the proof, no challenge), and between
//! nodes on the simulator (key rotation).

use alloc::{vec, vec::Vec};

use bytes::Bytes;

use super::{frames::bytes, *};
use crate::{
    auth::{
        AuthFailure, AuthRefusals, ClusterKey, ClusterKeys, Context, NonceEntropy, ROLE_ACCEPTOR,
        ROLE_DIALLER, Side, Transcript,
    },
    bus::handshake::PROTOCOL_VERSIONS,
    outcome::FailReason,
    wire::{self, Challenge, Decoded, Frame, RefuseReason},
};

const PEER: u64 = 0x101;
const PEER_INCARNATION: u64 = 9;

fn key(byte: u8) -> ClusterKey {
    ClusterKey::new([byte; 32])
}

fn drain(node: &mut Node) -> Vec<Output> {
    core::iter::from_fn(|| node.poll_output()).collect()
}

/// A node 0x102 with these keys.
fn node_with(keys: &[ClusterKey]) -> Node {
    let mut c = config(0x102, 0, 2, false);
    c.cluster_keys = keys.to_vec();
    c.nonce_entropy = NonceEntropy::deterministic_for_tests();
    Node::new(c, secs(0)).unwrap()
}

/// The peer's `Hello` with challenge `nonce` naming `keys`' current key.
fn hello(keys: &ClusterKeys, nonce: [u8; 32]) -> Bytes {
    bytes(&Frame::Hello(wire::Hello {
        node: NodeId(PEER),
        incarnation: PEER_INCARNATION,
        versions: PROTOCOL_VERSIONS,
        name: "peer",
        challenge: keys.current_id().map(|key_id| Challenge { nonce, key_id }),
    }))
}

/// The node's answer on `link` among `out`, decoded: (result, nonce, proof).
fn answer(
    out: &[Output],
    link: LinkId,
) -> (
    Result<(), RefuseReason>,
    Option<wire::Nonce>,
    Option<wire::Proof>,
) {
    for o in out {
        if let Output::Transmit { link: l, bytes } = o
            && *l == link
            && let Ok(Decoded::Frame(Frame::HelloAck(ack), _)) =
                wire::decode(bytes, wire::DEFAULT_MAX_FRAME)
        {
            return (ack.result, ack.nonce, ack.proof);
        }
    }
    panic!("no HelloAck on {link}: {out:?}");
}

/// The transcript of a handshake the peer (with `keys`) dialled with `peer_nonce`, the node
/// answering with `node_nonce`.
fn transcript(
    node: &Node,
    keys: &ClusterKeys,
    role: u8,
    peer_nonce: [u8; 32],
    node_nonce: [u8; 32],
) -> Transcript {
    Transcript {
        context: Context::Bus,
        role,
        hint: keys.current_id().expect("keys"),
        result: Ok(()),
        dialler: Side {
            node: NodeId(PEER),
            incarnation: PEER_INCARNATION,
            versions: PROTOCOL_VERSIONS,
            nonce: peer_nonce,
        },
        acceptor: Side {
            node: node.id(),
            incarnation: node.incarnation(),
            versions: PROTOCOL_VERSIONS,
            nonce: node_nonce,
        },
    }
}

fn auth(proof: wire::Proof) -> Bytes {
    bytes(&Frame::Auth(wire::Auth { proof }))
}

/// The peer (with `keys`) dials the node: `Hello`, the node's `HelloAck` checked, then the
/// `Auth` that `tamper` may spoil. Returns the link, the `Hello` and `Auth` bytes sent, and
/// what the node output after the `Auth`.
fn dial_in(
    node: &mut Node,
    keys: &ClusterKeys,
    nonce: [u8; 32],
    tamper: impl Fn(&mut wire::Proof),
) -> (LinkId, Bytes, Bytes, Vec<Output>) {
    let link = node.handle_accepted(secs(0));
    let hello = hello(keys, nonce);
    node.handle_received(secs(0), link, hello.clone());
    let out = drain(node);
    let (result, node_nonce, node_proof) = answer(&out, link);
    assert_eq!(result, Ok(()));
    let node_nonce = node_nonce.expect("a nonce");
    // The node proved with the key the peer named when it holds it.
    let ours = transcript(node, keys, ROLE_DIALLER, nonce, node_nonce);
    let mut proof = keys
        .prove_with(&ours, node_proof.map(|p| p.key_id))
        .expect("keys");
    tamper(&mut proof);
    let auth = auth(proof);
    node.handle_received(secs(0), link, auth.clone());
    (link, hello, auth, drain(node))
}

fn up(out: &[Output], link: LinkId) -> bool {
    out.contains(&Output::Event(Event::LinkUp {
        link,
        peer: NodeId(PEER),
    }))
}

fn rejected(out: &[Output], link: LinkId, failure: AuthFailure) -> bool {
    out.contains(&Output::Event(Event::LinkRejected {
        link,
        reason: LinkError::Unauthenticated(failure),
    })) && out.contains(&Output::Close { link })
}

#[test]
fn the_right_key_links_and_nothing_is_up_before_the_proof() {
    let mut node = node_with(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let link = node.handle_accepted(secs(0));
    node.handle_received(secs(0), link, hello(&keys, [7; 32]));
    let out = drain(&mut node);
    assert!(!up(&out, link), "up before the dialler's proof: {out:?}");
    let (link, _, _, out) = dial_in(&mut node, &keys, [8; 32], |_| {});
    assert!(up(&out, link), "{out:?}");
    // The node's own proof (in its HelloAck) checks with the peer's key.
    let link = node.handle_accepted(secs(0));
    node.handle_received(secs(0), link, hello(&keys, [9; 32]));
    let (_, nonce, proof) = answer(&drain(&mut node), link);
    let theirs = transcript(
        &node,
        &keys,
        ROLE_ACCEPTOR,
        [9; 32],
        nonce.expect("a nonce"),
    );
    assert_eq!(keys.check(&theirs, proof.as_ref()), Ok(()));
    assert_eq!(node.inspect().auth_refusals(), AuthRefusals::default());
}

#[test]
fn a_wrong_key_is_refused_and_counted() {
    let mut node = node_with(&[key(1)]);
    let (link, _, _, out) = dial_in(&mut node, &ClusterKeys::new(&[key(2)]), [7; 32], |_| {});
    assert!(rejected(&out, link, AuthFailure::UnknownKey), "{out:?}");
    assert!(!up(&out, link));
    assert_eq!(node.inspect().auth_refusals().unknown_key, 1);
    assert_eq!(node.inspect().link_count(), 0);
}

#[test]
fn a_tampered_proof_is_refused_and_counted() {
    let mut node = node_with(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let (link, _, _, out) = dial_in(&mut node, &keys, [7; 32], |p| p.mac[0] ^= 1);
    assert!(rejected(&out, link, AuthFailure::BadProof), "{out:?}");
    assert_eq!(node.inspect().auth_refusals().bad_proof, 1);
}

#[test]
fn a_recorded_handshake_replayed_is_refused_and_counted() {
    let mut node = node_with(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let (first, hello, auth, out) = dial_in(&mut node, &keys, [7; 32], |_| {});
    assert!(up(&out, first));
    // The recording, byte for byte, on a new connection (the first link closed meanwhile).
    node.handle_closed(secs(1), first);
    drain(&mut node);
    let link = node.handle_accepted(secs(1));
    let mut recording = hello.to_vec();
    recording.extend_from_slice(&auth);
    node.handle_received(secs(1), link, Bytes::from(recording));
    let out = drain(&mut node);
    assert_eq!(answer(&out, link).0, Err(RefuseReason::WrongCluster));
    assert!(rejected(&out, link, AuthFailure::Replay), "{out:?}");
    assert!(!up(&out, link));
    assert_eq!(node.inspect().auth_refusals().replay, 1);
}

#[test]
fn a_replayed_proof_under_a_fresh_nonce_does_not_check() {
    let mut node = node_with(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let (first, _, auth, _) = dial_in(&mut node, &keys, [7; 32], |_| {});
    node.handle_closed(secs(1), first);
    drain(&mut node);
    // A new dialler nonce passes the replay guard, but the old proof covers another exchange.
    let link = node.handle_accepted(secs(1));
    node.handle_received(secs(1), link, hello(&keys, [8; 32]));
    node.handle_received(secs(1), link, auth);
    let out = drain(&mut node);
    assert!(rejected(&out, link, AuthFailure::BadProof), "{out:?}");
}

#[test]
fn data_before_the_proof_closes_the_link_and_is_counted() {
    let mut node = node_with(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let link = node.handle_accepted(secs(0));
    node.handle_received(secs(0), link, hello(&keys, [7; 32]));
    drain(&mut node);
    let data = bytes(&Frame::Data(wire::Data {
        src: NodeId(PEER),
        dst: node.id(),
        seq: 1,
        dst_incarnation: 0,
        retransmit: false,
        msg_type: 100,
        hop_count: 0,
        payload: b"early",
    }));
    node.handle_received(secs(0), link, data);
    let out = drain(&mut node);
    assert!(rejected(&out, link, AuthFailure::BeforeAuth), "{out:?}");
    assert!(!out.iter().any(|o| matches!(o, Output::Received { .. })));
    assert_eq!(node.inspect().auth_refusals().before_auth, 1);
}

#[test]
fn a_hello_without_a_challenge_is_refused_and_counted() {
    let mut node = node_with(&[key(1)]);
    let link = node.handle_accepted(secs(0));
    node.handle_received(secs(0), link, hello(&ClusterKeys::default(), [0; 32]));
    let out = drain(&mut node);
    assert_eq!(answer(&out, link).0, Err(RefuseReason::WrongCluster));
    assert!(rejected(&out, link, AuthFailure::NoProof), "{out:?}");
    assert_eq!(node.inspect().auth_refusals().no_proof, 1);
}

#[test]
fn a_node_without_keys_links_as_before() {
    let mut node = node_with(&[]);
    let link = node.handle_accepted(secs(0));
    node.handle_received(secs(0), link, hello(&ClusterKeys::default(), [0; 32]));
    let out = drain(&mut node);
    assert_eq!(answer(&out, link), (Ok(()), None, None));
    assert!(up(&out, link));
}

/// A child 0x201 under upstream 0x203, with these keys: a message from the child to the
/// upstream is delivered (the link authenticated), and nothing is refused.
fn child_reaches_upstream(child: &[ClusterKey], upstream: &[ClusterKey]) -> bool {
    let mut c = config(0x201, 0x203, 8, false);
    c.cluster_keys = child.to_vec();
    let mut u = config(0x203, 0, 8, false);
    u.cluster_keys = upstream.to_vec();
    let mut sim = sim(vec![c, u]);
    publish(&mut sim, &[(0x203, 0), (0x201, 0x203)]);
    send(&mut sim, 0x201, 0x203, b"hi");
    sim.advance_to(secs(1));
    let delivered = seen(&sim, 0x203) == vec![received(secs(0), 0x201, 0x201, b"hi")];
    let refused = sim.node(NodeId(0x201)).inspect().auth_refusals().total()
        + sim.node(NodeId(0x203)).inspect().auth_refusals().total();
    delivered && refused == 0
}

#[test]
fn rotation_a_node_with_new_and_old_keys_links_with_old_and_with_new() {
    let (old, new) = (key(1), key(2));
    let both = [new.clone(), old.clone()];
    // Either side dialling.
    assert!(child_reaches_upstream(&both, core::slice::from_ref(&old)));
    assert!(child_reaches_upstream(core::slice::from_ref(&old), &both));
    assert!(child_reaches_upstream(&both, core::slice::from_ref(&new)));
    assert!(child_reaches_upstream(core::slice::from_ref(&new), &both));
    assert!(child_reaches_upstream(&both, &both));
    // Old and new alone do not link.
    assert!(!child_reaches_upstream(&[old], &[new]));
}

/// A keyed node fed the first bytes of an announced 16 MiB `Hello` on an accepted link: the
/// handshake limits refuse it from its length field (4 bytes), the link is closed with the
/// exact error, and the rest of the frame finds no link to buffer into.
#[test]
fn an_announced_16_mib_hello_is_refused_from_its_header_and_nothing_is_buffered() {
    let mut node = node_with(&[key(1)]);
    let link = node.handle_accepted(secs(0));
    drain(&mut node);
    let announced: u32 = 16 << 20;
    let mut header = announced.to_le_bytes().to_vec();
    header.extend_from_slice(&[wire::WIRE_VERSION, 1]); // version, kind `Hello`
    // Three bytes of the length: nothing to judge yet.
    node.handle_received(secs(0), link, Bytes::copy_from_slice(&header[..3]));
    assert_eq!(drain(&mut node), vec![]);
    assert_eq!(node.inspect().link_count(), 1);
    // The fourth completes the length: refused there (the version and kind that follow
    // find no link).
    node.handle_received(secs(0), link, Bytes::copy_from_slice(&header[3..4]));
    let out = drain(&mut node);
    node.handle_received(secs(0), link, Bytes::copy_from_slice(&header[4..]));
    assert_eq!(drain(&mut node), vec![]);
    let error = LinkError::Frame(wire::DecodeError::FrameTooLarge {
        len: 16 << 20,
        max: wire::MAX_HELLO_ACK_LEN,
    });
    assert!(
        out.contains(&Output::Event(Event::LinkRejected {
            link,
            reason: error
        })),
        "{out:?}"
    );
    assert!(out.contains(&Output::Close { link }), "{out:?}");
    assert_eq!(node.inspect().link_count(), 0);
    // The next megabyte of the announced frame: no link holds it, nothing goes out.
    node.handle_received(secs(0), link, Bytes::from(vec![0u8; 1 << 20]));
    assert_eq!(drain(&mut node), vec![]);
    assert_eq!(node.inspect().link_count(), 0);
    // A size refusal is not an authentication failure.
    assert_eq!(node.inspect().auth_refusals(), AuthRefusals::default());
}

/// Before the proof a bus frame is refused from its header by kind (the reader's handshake
/// limits), with today's error: counted as [`AuthFailure::BeforeAuth`].
#[test]
fn a_ping_header_before_the_proof_is_refused_by_kind_and_counted() {
    let mut node = node_with(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let link = node.handle_accepted(secs(0));
    node.handle_received(secs(0), link, hello(&keys, [7; 32]));
    drain(&mut node);
    let ping = bytes(&Frame::Ping(wire::Ping { nonce: 5 }));
    node.handle_received(secs(0), link, ping.slice(..6));
    let out = drain(&mut node);
    assert!(rejected(&out, link, AuthFailure::BeforeAuth), "{out:?}");
    assert_eq!(node.inspect().auth_refusals().before_auth, 1);
    assert_eq!(node.inspect().link_count(), 0);
}

#[test]
fn keys_without_nonce_entropy_are_refused_at_start() {
    let mut c = config(0x102, 0, 2, false);
    c.cluster_keys = vec![key(1)];
    assert_eq!(
        Node::new(c.clone(), secs(0)).err(),
        Some(ConfigError::NoNonceEntropy)
    );
    // The legacy token is a key too.
    let mut token = config(0x102, 0, 2, false);
    token.cluster_token = "secret".into();
    assert_eq!(
        Node::new(token, secs(0)).err(),
        Some(ConfigError::NoNonceEntropy)
    );
    // OS bytes, or the explicit opt-in of tests: accepted. No keys: nothing to protect.
    c.nonce_entropy = NonceEntropy([7; 32]);
    assert!(Node::new(c.clone(), secs(0)).is_ok());
    c.nonce_entropy = NonceEntropy::deterministic_for_tests();
    assert!(Node::new(c, secs(0)).is_ok());
    assert!(Node::new(config(0x102, 0, 2, false), secs(0)).is_ok());
}

const TARGET: u64 = 0x202;

/// A node 0x201 with `keys` (the test entropy) sends a message to 0x202 at 0 s; the dial is
/// reported connected. Returns the node, the message, the link and the node's `Hello`
/// challenge.
fn dialling(keys: &[ClusterKey]) -> (Node, MsgId, LinkId, Challenge) {
    let mut c = config(0x201, 0, 3, true);
    c.cluster_keys = keys.to_vec();
    c.nonce_entropy = NonceEntropy::deterministic_for_tests();
    let mut node = Node::new(c, secs(0)).unwrap();
    let (msg, link) = super::send_on_a_dialled_link(&mut node, TARGET);
    let challenge = drain(&mut node)
        .into_iter()
        .find_map(|o| match o {
            Output::Transmit { bytes, .. } => match wire::decode(&bytes, wire::DEFAULT_MAX_FRAME) {
                Ok(Decoded::Frame(Frame::Hello(h), _)) => h.challenge,
                _ => None,
            },
            _ => None,
        })
        .expect("a challenge");
    (node, msg, link, challenge)
}

/// The target's `HelloAck` with `result`, its nonce [5; 32] and a proof by `keys` over a
/// transcript naming `hint` as the dialler's key (`None`: no proof).
fn target_ack(
    node: &Node,
    challenge: Challenge,
    result: Result<(), RefuseReason>,
    keys: Option<(&ClusterKeys, u8)>,
) -> Bytes {
    let proof = keys.and_then(|(keys, hint)| {
        let t = Transcript {
            context: Context::Bus,
            role: ROLE_ACCEPTOR,
            hint,
            result,
            dialler: Side {
                node: node.id(),
                incarnation: node.incarnation(),
                versions: PROTOCOL_VERSIONS,
                nonce: challenge.nonce,
            },
            acceptor: Side {
                node: NodeId(TARGET),
                incarnation: 77,
                versions: PROTOCOL_VERSIONS,
                nonce: [5; 32],
            },
        };
        keys.prove_with(&t, Some(hint))
    });
    bytes(&Frame::HelloAck(wire::HelloAck {
        node: NodeId(TARGET),
        incarnation: 77,
        versions: PROTOCOL_VERSIONS,
        name: "target",
        nonce: Some([5; 32]),
        proof,
        result,
    }))
}

/// Runs `node` to `until`, firing every deadline at its instant; its outcomes, with when.
fn run_outcomes(node: &mut Node, until: Instant) -> Vec<(Instant, MsgId, Outcome)> {
    let mut outcomes = Vec::new();
    while let Some(at) = node.poll_timeout().filter(|&at| at <= until) {
        node.handle_timeout(at);
        for o in drain(node) {
            if let Output::Outcome { msg, outcome } = o {
                outcomes.push((at, msg, outcome));
            }
        }
    }
    outcomes
}

/// A squatter on the target's address answers our keyed dial with `WrongCluster` and no
/// proof: not believed. The link closes as an unproven refusal (counted), the dial counts
/// as failed (retried at 2 s by the backoff), and the message ends as for a silent peer —
/// never `Failed(WrongCluster)`.
#[test]
fn an_unproven_refusal_is_a_failed_dial_not_a_fact() {
    let (mut node, msg, link, challenge) = dialling(&[key(1)]);
    let refusal = target_ack(&node, challenge, Err(RefuseReason::WrongCluster), None);
    node.handle_received(secs(0), link, refusal);
    let out = drain(&mut node);
    assert!(
        out.contains(&Output::Event(Event::LinkRejected {
            link,
            reason: LinkError::UnprovenRefusal(RefuseReason::WrongCluster),
        })),
        "{out:?}"
    );
    assert_eq!(node.inspect().perimeter().unproven_refusals, 1);
    let v = node.inspect().route(NodeId(TARGET)).unwrap();
    assert_eq!((v.retry_count, v.timer), (1, Some(secs(2))));
    // A refusal signed by a key this node does not hold is no better.
    let (mut other, _, link, challenge) = dialling(&[key(1)]);
    let wrong = ClusterKeys::new(&[key(2)]);
    let hint = wrong.current_id().expect("a key");
    let forged = target_ack(
        &other,
        challenge,
        Err(RefuseReason::WrongCluster),
        Some((&wrong, hint)),
    );
    other.handle_received(secs(0), link, forged);
    assert_eq!(other.inspect().perimeter().unproven_refusals, 1);
    // The message ends at its deadline as after any failed dial: the redials at 2 s and 6 s
    // fail (nothing answers in this test), then the message's 8 s deadline.
    assert_eq!(
        run_outcomes(&mut node, secs(30)),
        vec![(secs(8), msg, Outcome::Failed(FailReason::Timeout))]
    );
}

/// The same refusal proven by the target (its nonce, a proof over the exchange with that
/// result, with our key) is the peer's word: `RefusedByPeer`, and the message ends with
/// its reason.
#[test]
fn a_proven_refusal_is_believed() {
    let (mut node, msg, link, challenge) = dialling(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let hint = challenge.key_id;
    let refusal = target_ack(
        &node,
        challenge,
        Err(RefuseReason::DuplicateId),
        Some((&keys, hint)),
    );
    node.handle_received(secs(0), link, refusal);
    let out = drain(&mut node);
    assert!(
        out.contains(&Output::Event(Event::LinkRejected {
            link,
            reason: LinkError::RefusedByPeer(RefuseReason::DuplicateId),
        })),
        "{out:?}"
    );
    assert_eq!(node.inspect().perimeter().unproven_refusals, 0);
    assert_eq!(
        run_outcomes(&mut node, secs(30)),
        vec![(secs(8), msg, Outcome::Failed(FailReason::DuplicateId))]
    );
}

/// An acceptor refusing a keyed `Hello` (here: a duplicate id) proves its refusal, so the
/// dialler can tell it from a squatter's.
#[test]
fn a_keyed_acceptor_proves_its_refusals() {
    let mut node = node_with(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let (first, _, _, out) = dial_in(&mut node, &keys, [7; 32], |_| {});
    assert!(up(&out, first));
    // Another incarnation of the same id while the first link is up: DuplicateId.
    let link = node.handle_accepted(secs(0));
    let other_life = bytes(&Frame::Hello(wire::Hello {
        node: NodeId(PEER),
        incarnation: PEER_INCARNATION + 1,
        versions: PROTOCOL_VERSIONS,
        name: "peer",
        challenge: Some(Challenge {
            nonce: [8; 32],
            key_id: keys.current_id().expect("a key"),
        }),
    }));
    node.handle_received(secs(0), link, other_life);
    let (result, nonce, proof) = answer(&drain(&mut node), link);
    assert_eq!(result, Err(RefuseReason::DuplicateId));
    let t = Transcript {
        context: Context::Bus,
        role: ROLE_ACCEPTOR,
        hint: keys.current_id().expect("a key"),
        result,
        dialler: Side {
            node: NodeId(PEER),
            incarnation: PEER_INCARNATION + 1,
            versions: PROTOCOL_VERSIONS,
            nonce: [8; 32],
        },
        acceptor: Side {
            node: node.id(),
            incarnation: node.incarnation(),
            versions: PROTOCOL_VERSIONS,
            nonce: nonce.expect("a nonce"),
        },
    };
    assert_eq!(keys.check(&t, proof.as_ref()), Ok(()));
}

/// During a rotation a man in the middle rewrites our `Hello`'s key id from the new key to
/// the old one; the acceptor (holding both) proves with the old key over what it saw. The
/// named key is in the transcript, so that proof fails here: no link on the forced key.
#[test]
fn a_rewritten_key_hint_fails_the_acceptors_proof() {
    let (old, new) = (key(1), key(2));
    let (mut node, _, link, challenge) = dialling(&[new.clone(), old.clone()]);
    let acceptor = ClusterKeys::new(&[new, old.clone()]);
    assert_eq!(Some(challenge.key_id), acceptor.current_id());
    let forced = old.id();
    let answer = target_ack(&node, challenge, Ok(()), Some((&acceptor, forced)));
    node.handle_received(secs(0), link, answer);
    let out = drain(&mut node);
    assert!(
        out.contains(&Output::Event(Event::LinkRejected {
            link,
            reason: LinkError::Unauthenticated(AuthFailure::BadProof),
        })),
        "{out:?}"
    );
    assert_eq!(node.inspect().auth_refusals().bad_proof, 1);
    // Unmodified, the same exchange links.
    let (mut node, _, link, challenge) = dialling(&[key(2), key(1)]);
    let hint = challenge.key_id;
    let answer = target_ack(&node, challenge, Ok(()), Some((&acceptor, hint)));
    node.handle_received(secs(0), link, answer);
    let out = drain(&mut node);
    assert!(
        out.contains(&Output::Event(Event::LinkUp {
            link,
            peer: NodeId(TARGET)
        })),
        "{out:?}"
    );
}
