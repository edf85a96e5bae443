//! The link machine's deadlines on virtual time — the exact heartbeat verdict, the handshake
//! deadline of accepted and dialled links, the cap on accepted links still handshaking — and
//! its refusal of every non-handshake frame before the handshake. Effects are recorded with
//! the instant they were produced at.

use alloc::{string::ToString, vec, vec::Vec};

use bytes::Bytes;

use super::*;
use crate::wire::{ByeReason, UnreachableReason};

const OWN: NodeId = NodeId(0x102);
const PEER: NodeId = NodeId(0x101);

fn ms(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

/// Heartbeat 1.5 s × 3, handshake 10 s, at most `max_pending` accepted links handshaking.
/// A keyed acceptor and a link whose dialler sent its `Hello` at 1 ms: our `HelloAck` (with
/// our proof) went out, its `Auth` is due. At most `max_pending` links handshake at once.
fn keyed_awaiting_auth(max_pending: usize) -> (Harness, LinkId) {
    use crate::auth::{ClusterKey, ClusterKeys, NonceEntropy};
    let mut keyed = settings(max_pending);
    keyed.keys = ClusterKeys::new(&[ClusterKey::new([3; 32])]);
    keyed.nonce_entropy = NonceEntropy::deterministic_for_tests();
    let mut h = Harness {
        links: Links::new(keyed, Instant::ZERO, crate::rng::Rng::new(1)),
        out: Vec::new(),
        downs: Vec::new(),
    };
    let link = h.accept(ms(0));
    let challenge = frame(&Frame::Hello(wire::Hello {
        node: PEER,
        incarnation: 7,
        versions: PROTOCOL_VERSIONS,
        name: "peer",
        challenge: Some(wire::Challenge {
            nonce: [9; wire::NONCE_LEN],
            key_id: ClusterKey::new([3; 32]).id(),
        }),
    }));
    h.receive(ms(1), link, challenge);
    let answered = h.take();
    assert!(
        matches!(answered.as_slice(), [Effect::Transmit(l, _)] if *l == link),
        "{answered:?}"
    );
    (h, link)
}

/// A dialler that hangs up after our proof (it holds only a retired key and cannot check
/// it) is a refused handshake, counted `aborted`; one that never answers is counted
/// `timed_out` at the handshake deadline, once.
#[test]
fn a_dialler_leaving_after_our_proof_is_counted_aborted_or_timed_out() {
    let (mut h, link) = keyed_awaiting_auth(8);
    assert!(h.links.closed(link, &mut h.out).is_some());
    assert_eq!(h.links.auth_refusals().aborted, 1);
    assert_eq!(h.links.auth_refusals().total(), 1);

    let (mut h, link) = keyed_awaiting_auth(8);
    let fired = h.run_until(ms(1) + Duration::from_secs(10));
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert!(fired[0].1.contains(&Effect::Close(link)), "{fired:?}");
    assert_eq!(h.links.auth_refusals().timed_out, 1);
    assert_eq!(h.links.auth_refusals().total(), 1, "not also aborted");

    // A link closed before it sent anything is no handshake refused.
    let mut h = Harness::new(8);
    let silent = h.accept(ms(0));
    assert!(h.links.closed(silent, &mut h.out).is_some());
    assert_eq!(h.links.auth_refusals().total(), 0);
}

fn settings(max_pending: usize) -> LinkSettings {
    LinkSettings {
        own: OWN,
        name: "own".to_string(),
        incarnation: 9,
        keys: crate::auth::ClusterKeys::default(),
        heartbeat_interval: Duration::from_millis(1_500),
        heartbeat_dead_after: 3,
        handshake_timeout: Duration::from_secs(10),
        max_pending_handshakes: max_pending,
        max_frame: wire::DEFAULT_MAX_FRAME,
        nonce_entropy: crate::auth::NonceEntropy::default(),
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Effect {
    Connect(LinkId, NodeId),
    Transmit(LinkId, Bytes),
    Close(LinkId),
    Received(NodeId, Bytes),
    Event(LinkEvent),
}

impl LinkSink for Vec<Effect> {
    fn connect(&mut self, link: LinkId, peer: NodeId, _addr: String) {
        self.push(Effect::Connect(link, peer));
    }
    fn transmit(&mut self, link: LinkId, bytes: Bytes) {
        self.push(Effect::Transmit(link, bytes));
    }
    fn close(&mut self, link: LinkId) {
        self.push(Effect::Close(link));
    }
    fn received(&mut self, from: NodeId, _via: NodeId, _msg_type: u32, payload: Bytes) {
        self.push(Effect::Received(from, payload));
    }
    fn event(&mut self, event: LinkEvent) {
        self.push(Effect::Event(event));
    }
}

/// A link machine and the effects it produced since the last [`take`](Harness::take).
struct Harness {
    links: Links,
    out: Vec<Effect>,
    downs: Vec<(Instant, Down)>,
}

impl Harness {
    fn new(max_pending: usize) -> Harness {
        Harness {
            links: Links::new(
                settings(max_pending),
                Instant::ZERO,
                crate::rng::Rng::new(1),
            ),
            out: Vec::new(),
            downs: Vec::new(),
        }
    }

    fn take(&mut self) -> Vec<Effect> {
        core::mem::take(&mut self.out)
    }

    fn accept(&mut self, now: Instant) -> LinkId {
        self.links.accept(now, &mut self.out)
    }

    /// Bytes on `link` at `now`, handled like the node does; inbound values other than
    /// `Down` are dropped.
    fn receive(&mut self, now: Instant, link: LinkId, bytes: Bytes) {
        if let Some(down) = self.links.receive(link, bytes, &mut self.out) {
            self.downs.push((now, down));
            return;
        }
        while let Some(inbound) =
            self.links
                .next_inbound(now, link, &mut self.out, &super::AnyRelay)
        {
            if let Inbound::Down(down) = inbound {
                self.downs.push((now, down));
            }
        }
        self.links.finish_receive(&mut self.out);
    }

    /// Fires every deadline up to `until`, each at its exact instant; returns what each
    /// instant produced (instants that produced nothing are left out).
    fn run_until(&mut self, until: Instant) -> Vec<(Instant, Vec<Effect>)> {
        let mut fired = Vec::new();
        let mut steps = 0;
        while let Some(at) = self.links.next_deadline().filter(|&at| at <= until) {
            steps += 1;
            assert!(steps < 1_000, "deadlines do not advance");
            self.links.collect_due(at);
            while let Some(link) = self.links.next_due() {
                if let Some(down) = self.links.expire(at, link, &mut self.out) {
                    self.downs.push((at, down));
                }
            }
            let out = self.take();
            if !out.is_empty() {
                fired.push((at, out));
            }
        }
        fired
    }
}

fn frame(frame: &Frame<'_>) -> Bytes {
    let mut buf = Vec::new();
    wire::encode(frame, &mut buf).unwrap();
    Bytes::from(buf)
}

fn hello(node: NodeId) -> Bytes {
    frame(&Frame::Hello(wire::Hello {
        node,
        incarnation: 7,
        versions: PROTOCOL_VERSIONS,
        name: "peer",
        challenge: None,
    }))
}

fn hello_ack(node: NodeId) -> Bytes {
    frame(&Frame::HelloAck(wire::HelloAck {
        node,
        incarnation: 7,
        versions: PROTOCOL_VERSIONS,
        name: "peer",
        nonce: None,
        proof: None,
        result: Ok(()),
    }))
}

fn ping(nonce: u64) -> Bytes {
    frame(&Frame::Ping(wire::Ping { nonce }))
}

fn pong(nonce: u64) -> Bytes {
    frame(&Frame::Pong(wire::Pong { nonce }))
}

/// The `HelloAck` this machine sends.
fn own_hello_ack() -> Bytes {
    frame(&Frame::HelloAck(wire::HelloAck {
        node: OWN,
        incarnation: 9,
        versions: PROTOCOL_VERSIONS,
        name: "own",
        nonce: None,
        proof: None,
        result: Ok(()),
    }))
}

/// An accepted link whose peer said `Hello` at `at`; effects dropped.
fn accepted_up(h: &mut Harness, at: Instant) -> LinkId {
    let link = h.accept(at);
    h.receive(at, link, hello(PEER));
    assert_eq!(h.take(), [Effect::Transmit(link, own_hello_ack())]);
    assert_eq!(h.links.link_to(PEER), Some(link));
    link
}

fn closed_by_heartbeat(link: LinkId) -> Vec<Effect> {
    vec![
        Effect::Event(LinkEvent::Rejected {
            link,
            reason: LinkError::HeartbeatTimeout(3),
        }),
        Effect::Close(link),
        Effect::Event(LinkEvent::Closed {
            link,
            peer: Some(PEER),
        }),
    ]
}

fn timed_out(link: LinkId, dialed: Option<NodeId>) -> Vec<Effect> {
    vec![
        Effect::Event(LinkEvent::HandshakeTimeout { link, dialed }),
        Effect::Close(link),
        Effect::Event(LinkEvent::Closed { link, peer: dialed }),
    ]
}

#[test]
fn a_silent_peer_is_closed_at_last_heard_plus_interval_times_misses() {
    let mut h = Harness::new(8);
    let link = accepted_up(&mut h, ms(200));
    // Pings at 1.7 s and 3.2 s; the verdict at exactly 0.2 + 1.5 × 3 = 4.7 s, not before.
    let fired = h.run_until(ms(4_700) - Duration::from_nanos(1));
    assert_eq!(
        fired,
        [
            (ms(1_700), vec![Effect::Transmit(link, ping(1))]),
            (ms(3_200), vec![Effect::Transmit(link, ping(2))]),
        ]
    );
    assert_eq!(h.links.next_deadline(), Some(ms(4_700)));
    assert_eq!(
        h.run_until(ms(4_700)),
        [(ms(4_700), closed_by_heartbeat(link))]
    );
    assert_eq!(
        h.downs,
        [(
            ms(4_700),
            Down {
                peer: Some(PEER),
                dialed: None,
                incarnation: 7,
                refused: None,
                bye: None,
            }
        )]
    );
    assert_eq!((h.links.len(), h.links.next_deadline()), (0, None));
}

#[test]
fn a_peer_heard_resets_the_verdict() {
    let mut h = Harness::new(8);
    let link = accepted_up(&mut h, ms(0));
    assert_eq!(
        h.run_until(ms(1_500)),
        [(ms(1_500), vec![Effect::Transmit(link, ping(1))])]
    );
    // Heard at 2 s (any frame counts): dead at 2 + 4.5 = 6.5 s instead of 4.5 s.
    h.receive(ms(2_000), link, pong(1));
    assert_eq!(h.take(), []);
    assert_eq!(h.links.next_deadline(), Some(ms(3_500)));
    let fired = h.run_until(ms(6_500) - Duration::from_nanos(1));
    assert_eq!(
        fired,
        [
            (ms(3_500), vec![Effect::Transmit(link, ping(2))]),
            (ms(5_000), vec![Effect::Transmit(link, ping(3))]),
        ]
    );
    assert_eq!(
        h.run_until(ms(6_500)),
        [(ms(6_500), closed_by_heartbeat(link))]
    );
}

#[test]
fn an_idle_link_whose_peer_answers_is_pinged_every_interval_and_kept() {
    let mut h = Harness::new(8);
    let link = accepted_up(&mut h, ms(0));
    for k in 1..=10u64 {
        let at = ms(1_500 * k);
        assert_eq!(
            h.run_until(at),
            [(at, vec![Effect::Transmit(link, ping(k))])],
            "ping {k}"
        );
        h.receive(at, link, pong(k));
        assert_eq!(h.take(), []);
    }
    assert_eq!(h.links.next_deadline(), Some(ms(16_500)));
    assert_eq!(h.links.link_to(PEER), Some(link));
    assert!(h.downs.is_empty());
}

#[test]
fn an_accepted_link_without_a_hello_is_closed_at_its_handshake_deadline() {
    let mut h = Harness::new(8);
    let link = h.accept(ms(300));
    assert_eq!(h.take(), []);
    assert_eq!(h.links.next_deadline(), Some(ms(10_300)));
    assert_eq!(h.run_until(ms(10_300) - Duration::from_nanos(1)), []);
    assert_eq!(
        h.run_until(ms(10_300)),
        [(ms(10_300), timed_out(link, None))]
    );
    assert_eq!(
        h.downs,
        [(
            ms(10_300),
            Down {
                peer: None,
                dialed: None,
                incarnation: 0,
                refused: None,
                bye: None,
            }
        )]
    );
    assert_eq!((h.links.len(), h.links.pending_handshakes()), (0, 0));
}

#[test]
fn a_truncated_hello_never_completes_the_handshake() {
    let mut h = Harness::new(8);
    let link = h.accept(ms(0));
    let hello = hello(PEER);
    // The first 3 bytes at once, the rest of the header a second later: never a frame.
    h.receive(ms(0), link, hello.slice(..3));
    h.receive(ms(1_000), link, hello.slice(3..5));
    assert_eq!(h.take(), []);
    assert_eq!(h.links.peer(link), None);
    assert_eq!(
        h.run_until(ms(10_000)),
        [(ms(10_000), timed_out(link, None))]
    );
}

#[test]
fn a_finished_handshake_replaces_its_deadline_with_the_heartbeat() {
    let mut h = Harness::new(8);
    let link = h.accept(ms(0));
    h.receive(ms(9_000), link, hello(PEER));
    assert_eq!(h.take(), [Effect::Transmit(link, own_hello_ack())]);
    assert_eq!(h.links.pending_handshakes(), 0);
    // No handshake verdict at 10 s; the heartbeat's 9 + 1.5 s instead.
    assert_eq!(h.links.next_deadline(), Some(ms(10_500)));
    assert_eq!(h.run_until(ms(10_000)), []);
    assert_eq!(h.links.link_to(PEER), Some(link));
}

#[test]
fn a_dialled_link_without_a_hello_ack_times_out_like_a_failed_dial() {
    let mut h = Harness::new(8);
    h.links.dial(PEER, "tcp://peer".to_string(), &mut h.out);
    let [Effect::Connect(link, _)] = h.take()[..] else {
        panic!("one connect");
    };
    // Still dialling: no handshake deadline yet (the driver reports the dial's end).
    assert_eq!(h.links.next_deadline(), None);
    h.links.connected(ms(500), link, &mut h.out);
    let [Effect::Transmit(hello_link, _)] = h.take()[..] else {
        panic!("our hello");
    };
    assert_eq!(hello_link, link);
    // The peer answers half a frame; the dialled link does not count against the cap.
    h.receive(ms(600), link, hello_ack(PEER).slice(..4));
    assert_eq!(h.links.pending_handshakes(), 0);
    assert!(h.links.is_connecting(PEER));
    assert_eq!(h.run_until(ms(10_499)), []);
    assert_eq!(
        h.run_until(ms(10_500)),
        [(ms(10_500), timed_out(link, Some(PEER)))]
    );
    assert_eq!(
        h.downs,
        [(
            ms(10_500),
            Down {
                peer: None,
                dialed: Some(PEER),
                incarnation: 0,
                refused: None,
                bye: None,
            }
        )]
    );
    assert!(!h.links.is_connecting(PEER));
}

/// What closing a pending accepted link to make room produces.
fn made_room(victim: LinkId) -> Vec<Effect> {
    vec![
        Effect::Event(LinkEvent::HandshakeLimit { link: victim }),
        Effect::Close(victim),
        Effect::Event(LinkEvent::Closed {
            link: victim,
            peer: None,
        }),
    ]
}

/// At `max_pending_handshakes` a new connection takes the place of the oldest pending one
/// (this test refused the newcomer before: strangers holding every place then locked real
/// peers out until their deadlines). Places are freed by a finished handshake, a close of a
/// pending link and a timeout, never by closing an up link.
#[test]
fn a_connection_beyond_max_pending_handshakes_closes_the_oldest_silent_one() {
    let mut h = Harness::new(2);
    let a = h.accept(ms(0));
    let b = h.accept(ms(1));
    assert_eq!(h.take(), []);
    assert_eq!(h.links.pending_handshakes(), 2);
    // A dialled link is no accepted one: it neither counts nor is chosen.
    h.links
        .dial(NodeId(0x103), "tcp://x".to_string(), &mut h.out);
    h.take();
    // The third accepted connection takes the place of the oldest, a.
    let c = h.accept(ms(2));
    assert_eq!(h.take(), made_room(a));
    assert_eq!((h.links.len(), h.links.pending_handshakes()), (3, 2));
    // Bytes on the closed id are ignored.
    h.receive(ms(3), a, hello(PEER));
    assert_eq!(h.take(), []);
    // The newcomer's handshake runs: its `Hello` brings it up.
    h.receive(ms(3), c, hello(PEER));
    let answered = h.take();
    assert!(
        matches!(answered.as_slice(), [Effect::Transmit(link, _)] if *link == c),
        "{answered:?}"
    );
    assert_eq!(h.links.pending_handshakes(), 1);
    // One place is free: the next takes it, the one after that closes b (now the oldest).
    let d = h.accept(ms(5));
    assert_eq!(h.take(), []);
    let e = h.accept(ms(6));
    assert_eq!(h.take(), made_room(b));
    assert_eq!(h.links.pending_handshakes(), 2);
    // Closing the up link c frees no place; closing the pending d does.
    assert!(h.links.closed(c, &mut h.out).is_some());
    h.take();
    assert_eq!(h.links.pending_handshakes(), 2);
    assert!(h.links.closed(d, &mut h.out).is_some());
    h.take();
    assert_eq!(h.links.pending_handshakes(), 1);
    let f = h.accept(ms(7));
    assert_eq!(h.take(), [], "a free place: nobody is closed");
    assert_eq!(h.links.pending_handshakes(), 2);
    // Timeouts free their places too: e and f at 10.006 s and 10.007 s.
    let fired = h.run_until(ms(10_007));
    assert_eq!(
        fired,
        [
            (ms(10_006), timed_out(e, None)),
            (ms(10_007), timed_out(f, None)),
        ]
    );
    assert_eq!(h.links.pending_handshakes(), 0);
}

/// With keys, an acceptor whose dialler sent its `Hello` waits for its `Auth`: that link is
/// chosen last, after every older and newer one that sent no whole `Hello`.
#[test]
fn a_pending_handshake_that_sent_its_hello_is_closed_last() {
    use crate::auth::ClusterKey;
    let (mut h, a) = keyed_awaiting_auth(2);
    let b = h.accept(ms(2));
    // A trickled `Hello` (3 of its bytes) is not a whole one.
    h.receive(ms(3), b, hello(PEER).slice(..3));
    assert_eq!(h.take(), []);
    let c = h.accept(ms(4));
    assert_eq!(h.take(), made_room(b));
    let d = h.accept(ms(5));
    assert_eq!(h.take(), made_room(c));
    // a, awaiting its `Auth`, stays; the silent d goes.
    let e = h.accept(ms(6));
    assert_eq!(h.take(), made_room(d));
    // Once every pending link sent its `Hello`, the oldest of them goes: a.
    h.receive(
        ms(7),
        e,
        frame(&Frame::Hello(wire::Hello {
            node: NodeId(0x104),
            incarnation: 8,
            versions: PROTOCOL_VERSIONS,
            name: "other",
            challenge: Some(wire::Challenge {
                nonce: [10; wire::NONCE_LEN],
                key_id: ClusterKey::new([3; 32]).id(),
            }),
        })),
    );
    h.take();
    let f = h.accept(ms(8));
    assert_eq!(h.take(), made_room(a));
    assert_eq!(h.links.pending_handshakes(), 2);
    assert_eq!(h.links.len(), 2, "e (awaiting its Auth) and f");
    let _ = f;
}

#[test]
fn every_non_handshake_frame_before_the_handshake_closes_the_link() {
    let data = frame(&Frame::Data(wire::Data {
        src: PEER,
        dst: OWN,
        seq: 1,
        dst_incarnation: 0,
        retransmit: false,
        msg_type: 1,
        hop_count: 0,
        payload: b"x",
    }));
    let ack = frame(&Frame::Ack(wire::Ack {
        src: OWN,
        dst: PEER,
        seq: 1,
        dst_incarnation: 7,
        reset: None,
    }));
    let unreachable = frame(&Frame::Unreachable(wire::Unreachable {
        src: OWN,
        dst: PEER,
        seq: 1,
        reason: UnreachableReason::NoRoute,
        dst_incarnation: 0,
    }));
    let bye = frame(&Frame::Bye(wire::Bye {
        reason: ByeReason::Shutdown,
    }));
    let mut h = Harness::new(8);
    for (kind, bytes) in [
        ("data", data),
        ("ack", ack),
        ("unreachable", unreachable),
        ("ping", ping(1)),
        ("pong", pong(1)),
        ("bye", bye),
    ] {
        // On an accepted link, and on a dialled one whose dial connected.
        h.links.dial(PEER, "tcp://peer".to_string(), &mut h.out);
        let [Effect::Connect(dialled, _)] = h.take()[..] else {
            panic!("one connect");
        };
        h.links.connected(ms(0), dialled, &mut h.out);
        h.take();
        let accepted = h.accept(ms(0));
        for (link, dialed) in [(accepted, None), (dialled, Some(PEER))] {
            h.receive(ms(1), link, bytes.clone());
            assert_eq!(
                h.take(),
                [
                    Effect::Event(LinkEvent::Rejected {
                        link,
                        reason: LinkError::DataBeforeHello
                    }),
                    Effect::Close(link),
                    Effect::Event(LinkEvent::Closed { link, peer: dialed }),
                ],
                "{kind} on {link}"
            );
        }
        assert_eq!(h.links.len(), 0, "{kind}");
        assert_eq!(h.links.pending_handshakes(), 0, "{kind}");
        assert_eq!(h.links.next_deadline(), None, "{kind}");
    }
}
