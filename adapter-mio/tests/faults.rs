//! Faults: a peer dropped mid-stream (every accepted message still gets exactly one
//! outcome), and garbage on a node's listen port (that link closes, the node keeps serving).

mod support;

use std::{
    collections::BTreeSet,
    io::{Read, Write},
    net::TcpStream,
    time::{Duration, Instant},
};

use switchboard_core::{
    ids::NodeId,
    node::{Event, LinkError},
    outcome::Outcome,
    select::Select,
};

use support::{STEP, mio_node, payload, pump_until};

#[test]
fn a_peer_dropped_mid_stream_leaves_exactly_one_outcome_per_accepted_message() {
    let mut upstream = mio_node(None, 1, "upstream", |c| {
        c.message_timeout = Duration::from_secs(3);
    });
    let address = format!("atcp://{}", upstream.node.local_addr());
    let mut leaf = mio_node(None, 2, "leaf", |c| {
        c.upstream = NodeId(1);
        c.upstream_address = address;
        c.message_timeout = Duration::from_secs(3);
    });

    const TOTAL: u64 = 400;
    let mut accepted = Vec::new();
    let mut seq = 0;
    // Stream until the upstream has received some, then drop it with the rest in flight.
    let deadline = Instant::now() + STEP;
    while seq < TOTAL {
        let msg = leaf
            .node
            .send(Select::Node(NodeId(1)), 2, payload(2, seq, 256))
            .expect("accepted");
        accepted.push(msg);
        seq += 1;
        if seq % 20 == 0 {
            leaf.pump();
            upstream.pump();
        }
        if upstream.received.len() >= 100 {
            break;
        }
        assert!(Instant::now() < deadline, "the stream stalled");
    }
    let received_before_drop = upstream.received.clone();
    drop(upstream);
    while seq < TOTAL {
        accepted.push(
            leaf.node
                .send(Select::Node(NodeId(1)), 2, payload(2, seq, 256))
                .expect("accepted"),
        );
        seq += 1;
    }

    pump_until("every accepted message ends", &mut [&mut leaf], |p| {
        p[0].outcomes.len() >= accepted.len()
    });
    leaf.pump();
    assert_eq!(
        leaf.outcomes.len(),
        accepted.len(),
        "exactly one outcome each"
    );
    let ended: BTreeSet<_> = leaf.outcomes.iter().map(|(m, _)| *m).collect();
    let expected: BTreeSet<_> = accepted.iter().copied().collect();
    assert_eq!(ended, expected);
    // What the upstream got is the stream's prefix, exactly; nothing it never got is Delivered.
    let prefix: Vec<_> = (0..received_before_drop.len() as u64)
        .map(|s| (NodeId(2), NodeId(2), 2, payload(2, s, 256)))
        .collect();
    assert_eq!(received_before_drop, prefix);
    let delivered = leaf
        .outcomes
        .iter()
        .filter(|(_, o)| *o == Outcome::Delivered)
        .count();
    assert!(delivered <= received_before_drop.len());
    assert!(delivered >= 1);
}

#[test]
fn garbage_on_the_listen_port_closes_that_link_and_the_node_keeps_serving() {
    let mut server = mio_node(None, 1, "server", |_| {});
    let mut garbage = TcpStream::connect(server.node.local_addr()).expect("connects");
    garbage
        .write_all(&[0xff; 64])
        .expect("the garbage is written");
    garbage
        .set_read_timeout(Some(Duration::from_millis(1)))
        .expect("a read timeout");
    let mut closed = false;
    pump_until("the garbage link is closed", &mut [&mut server], |_| {
        let mut buf = [0u8; 256];
        loop {
            match garbage.read(&mut buf) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    closed = true;
                    break;
                }
                Err(_) => break,
            }
        }
        closed
    });
    let rejected: Vec<_> = server
        .node_events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::LinkRejected {
                    reason: LinkError::Frame(_),
                    ..
                }
            )
        })
        .collect();
    assert_eq!(rejected.len(), 1, "events: {:?}", server.node_events);
    assert_eq!(server.node.node().inspect().link_count(), 0);

    let address = format!("atcp://{}", server.node.local_addr());
    let mut leaf = mio_node(None, 2, "leaf", |c| {
        c.upstream = NodeId(1);
        c.upstream_address = address;
    });
    let msg = leaf
        .node
        .send(Select::Node(NodeId(1)), 8, payload(2, 0, 20))
        .expect("accepted");
    pump_until(
        "the message is delivered",
        &mut [&mut leaf, &mut server],
        |p| p[0].outcomes.len() == 1 && p[1].received.len() == 1,
    );
    assert_eq!(leaf.outcomes, vec![(msg, Outcome::Delivered)]);
    assert_eq!(
        server.received,
        vec![(NodeId(2), NodeId(2), 8, payload(2, 0, 20))]
    );
}
