//! Two MioNodes embedded in one `mio::Poll` that the test owns, next to a UDP socket of the
//! test's own: the test's loop dispatches events by token, and the nodes see only theirs.

mod support;

use std::{
    io,
    net::UdpSocket as StdUdpSocket,
    time::{Duration, Instant},
};

use mio::{Events, Interest, Poll, Token, net::UdpSocket};
use switchboard_core::{config::Config, ids::NodeId, outcome::Outcome, select::Select};
use switchboard_mio::{BindError, MioNode, TokenRange};

use support::{Peer, STEP, TICK, World, any_port, direct, fast, payload, tune_client};

/// The test's own source.
const UDP: Token = Token(7);
const A_TOKENS: TokenRange = TokenRange::new(Token(1_000), 64);
const B_TOKENS: TokenRange = TokenRange::new(Token(2_000), 64);
const N: u64 = 200;

/// A node `id` embedded in `poll` under `tokens`, joined to the test registry.
fn embedded(poll: &Poll, registry: &World, id: u64, name: &str, tokens: TokenRange) -> Peer {
    let mut config = Config::new(NodeId(id), name);
    fast(&mut config);
    direct(&mut config);
    let node = MioNode::embed_with(
        config,
        any_port(),
        Some(registry.addr()),
        poll.registry(),
        tokens,
        tune_client,
    )
    .expect("binds");
    Peer::new(node)
}

/// What the test's loop saw.
#[derive(Default)]
struct Seen {
    /// Datagrams read from the test's own socket.
    datagrams: Vec<Vec<u8>>,
    /// Every token passed to each node.
    to_a: Vec<Token>,
    to_b: Vec<Token>,
}

/// One turn of an application loop: poll for at most the nodes' timeouts (and a tick),
/// dispatch by token, let both nodes process, take their events.
fn turn(
    poll: &mut Poll,
    events: &mut Events,
    udp: &UdpSocket,
    a: &mut Peer,
    b: &mut Peer,
    seen: &mut Seen,
) {
    let timeout = [a.node.poll_timeout(), b.node.poll_timeout()]
        .into_iter()
        .flatten()
        .fold(TICK, Duration::min);
    match poll.poll(events, Some(timeout)) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
        Err(e) => panic!("poll failed: {e}"),
    }
    for event in events.iter() {
        let token = event.token();
        if token == UDP {
            assert!(!a.node.owns(token) && !b.node.owns(token));
            let mut buf = [0; 64];
            loop {
                match udp.recv(&mut buf) {
                    Ok(n) => seen.datagrams.push(buf[..n].to_vec()),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("udp recv failed: {e}"),
                }
            }
        } else if a.node.owns(token) {
            seen.to_a.push(token);
            a.node.handle_event(event);
        } else if b.node.owns(token) {
            seen.to_b.push(token);
            b.node.handle_event(event);
        } else {
            panic!("an event of a token nobody registered: {token:?}");
        }
    }
    a.node.process();
    b.node.process();
    a.take_events();
    b.take_events();
}

#[test]
fn two_nodes_embedded_in_the_tests_poll_next_to_its_own_socket() {
    let world = World::start();
    let mut poll = Poll::new().expect("a poll");
    let mut events = Events::with_capacity(256);
    let mut udp = UdpSocket::bind(any_port()).expect("udp binds");
    poll.registry()
        .register(&mut udp, UDP, Interest::READABLE)
        .expect("udp registers");
    let udp_addr = udp.local_addr().expect("udp addr");
    let pinger = StdUdpSocket::bind(any_port()).expect("pinger binds");

    let mut a = embedded(&poll, &world, 1, "alpha", A_TOKENS);
    let mut b = embedded(&poll, &world, 2, "beta", B_TOKENS);
    assert_eq!(
        (a.node.token_range(), b.node.token_range()),
        (A_TOKENS, B_TOKENS)
    );
    assert!(a.node.owns(Token(1_000)) && a.node.owns(Token(1_063)));
    assert!(!a.node.owns(Token(1_064)) && !a.node.owns(UDP) && !b.node.owns(Token(1_000)));
    // An embedded node has no poll of its own to run.
    let err = a.node.run_once(Some(Duration::ZERO)).expect_err("embedded");
    assert_eq!(err.kind(), io::ErrorKind::Unsupported);

    let mut seen = Seen::default();
    let mut pings = 0u8;
    let mut sent = Vec::new();
    let deadline = Instant::now() + STEP;
    loop {
        assert!(
            Instant::now() < deadline,
            "timed out; a: {:?} b: {:?}",
            a.outcomes,
            b.received.len()
        );
        // The test's own traffic, interleaved with the nodes' all along.
        if pings < 20 {
            pinger.send_to(&[0xee, pings], udp_addr).expect("udp send");
            pings += 1;
        }
        turn(&mut poll, &mut events, &udp, &mut a, &mut b, &mut seen);
        let linked = a.knows(&[1, 2]) && b.knows(&[1, 2]);
        if linked && sent.is_empty() {
            sent = (0..N)
                .map(|seq| {
                    a.node
                        .send(
                            Select::Node(NodeId(2)),
                            5,
                            payload(1, seq, 40 + seq as usize),
                        )
                        .expect("accepted")
                })
                .collect();
        }
        if !sent.is_empty()
            && a.outcomes.len() == sent.len()
            && b.received.len() == sent.len()
            && seen.datagrams.len() == 20
        {
            break;
        }
    }

    let delivered: Vec<_> = sent.iter().map(|m| (*m, Outcome::Delivered)).collect();
    assert_eq!(a.outcomes, delivered);
    let expected: Vec<_> = (0..N)
        .map(|seq| (NodeId(1), NodeId(1), 5, payload(1, seq, 40 + seq as usize)))
        .collect();
    assert_eq!(b.received, expected);
    assert!(a.received.is_empty() && b.outcomes.is_empty());
    // The test's own events were all seen, in order, and none reached a node.
    let pinged: Vec<Vec<u8>> = (0..20).map(|i| vec![0xee, i]).collect();
    assert_eq!(seen.datagrams, pinged);
    assert!(!seen.to_a.is_empty() && !seen.to_b.is_empty());
    assert!(
        seen.to_a.iter().all(|t| A_TOKENS.contains(*t)),
        "{:?}",
        seen.to_a
    );
    assert!(
        seen.to_b.iter().all(|t| B_TOKENS.contains(*t)),
        "{:?}",
        seen.to_b
    );
    assert!(!seen.to_a.contains(&UDP) && !seen.to_b.contains(&UDP));

    // Graceful stop inside the test's loop: the closes finish as it keeps turning.
    a.node.shutdown().expect("shutdown");
    b.node.shutdown().expect("shutdown");
    for _ in 0..50 {
        turn(&mut poll, &mut events, &udp, &mut a, &mut b, &mut seen);
    }
}

#[test]
fn an_unusable_token_range_is_refused() {
    let poll = Poll::new().expect("a poll");
    for tokens in [
        TokenRange::new(Token(5), 1),
        TokenRange::new(Token(usize::MAX), 2),
    ] {
        let err = MioNode::embed(
            Config::new(NodeId(1), "alpha"),
            any_port(),
            None,
            poll.registry(),
            tokens,
        )
        .expect_err("refused");
        assert!(
            matches!(err, BindError::TokenRange(t) if t == tokens),
            "{err}"
        );
    }
}
