//! The bus on the simulator: a proxy dies with messages in flight; after the topology moves
//! both ends under a new proxy the sender retransmits from its first unacknowledged message
//! and each message is delivered exactly once, in order, through the new proxy (the target
//! refuses the retransmitted first message of a stream it does not hold; the sender sees from
//! the reset's age that the target was running before the stream began and re-sends on a
//! fresh stream).

mod common;

use bytes::Bytes;
use common::node_config;

use switchboard_core::{
    ids::NodeId,
    outcome::Outcome,
    select::Select,
    sim::{Sim, discovery_info, topology_info},
    time::Duration,
};

#[test]
fn a_proxy_dying_mid_stream_loses_nothing_and_duplicates_nothing() {
    let layout = [(0x602, 0), (0x605, 0), (0x601, 0x602), (0x603, 0x602)];
    let mut sim = Sim::recording();
    for (id, up) in layout {
        sim.add_node(node_config(id, up))
            .expect("a valid node config");
    }
    sim.run_until_idle();
    for (id, up) in layout {
        let name = format!("node-{id:x}");
        sim.registry_put_topology(topology_info(NodeId(id), &name, NodeId(up)));
    }
    for (id, _) in layout {
        sim.registry_put_discovery(discovery_info(NodeId(id), &format!("node-{id:x}")));
    }
    sim.run_until_idle();
    // The nodes have been up a while when traffic starts (a reset carries the refusing
    // incarnation's age; one that started before the first send cannot hide an earlier
    // delivery, so the sender may re-send on a fresh stream).
    sim.advance(Duration::from_millis(100));
    // The relay's hop to the target is slow: frames sit on it for 10 ms.
    sim.set_latency(NodeId(0x602), NodeId(0x603), Duration::from_millis(10));
    let t0 = sim.now();
    let msgs: Vec<_> = (0..3u32)
        .map(|i| {
            sim.send(
                NodeId(0x601),
                Select::Node(NodeId(0x603)),
                10 + i,
                Bytes::from(vec![b'a' + i as u8]),
            )
            .unwrap()
        })
        .collect();
    sim.advance(Duration::from_millis(5));
    assert_eq!(sim.received(NodeId(0x603)), []);
    // The proxy dies with the three frames on its outgoing link.
    sim.kill(NodeId(0x602));
    assert_eq!(sim.node(NodeId(0x601)).inspect().unacked(NodeId(0x603)), 3);
    // Both ends move under the other proxy.
    sim.registry_put_topology(topology_info(NodeId(0x601), "node-601", NodeId(0x605)));
    sim.registry_put_topology(topology_info(NodeId(0x603), "node-603", NodeId(0x605)));
    sim.advance(Duration::from_secs(5));
    let got: Vec<(NodeId, NodeId, u32, Bytes)> = sim
        .received(NodeId(0x603))
        .iter()
        .map(|r| (r.from, r.via, r.msg_type, r.payload.clone()))
        .collect();
    let want: Vec<(NodeId, NodeId, u32, Bytes)> = (0..3u32)
        .map(|i| {
            (
                NodeId(0x601),
                NodeId(0x605),
                10 + i,
                Bytes::from(vec![b'a' + i as u8]),
            )
        })
        .collect();
    assert_eq!(got, want, "{}", sim.trace_tail(60));
    for msg in msgs {
        let record = sim.outcome_of(NodeId(0x601), msg).unwrap();
        // Re-routed and acknowledged at the instant of the switch (zero latency elsewhere).
        assert_eq!(
            (record.at, record.outcome),
            (t0 + Duration::from_millis(5), Outcome::Delivered)
        );
    }
    assert_eq!(sim.node(NodeId(0x601)).inspect().unacked(NodeId(0x603)), 0);
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}
