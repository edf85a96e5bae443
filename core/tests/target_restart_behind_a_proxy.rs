//! Regression of chaos seed 972: a target behind a proxy delivers a message, dies before its
//! ack gets back and restarts. The sender cannot see the restart (no direct link), but the
//! proxy can: its link to the target closes, its probe of the dead incarnation is refused,
//! and it tells the sender at once. The message ends `Unknown(TargetGone)` that instant (the
//! old incarnation may have delivered it — it did) and is never delivered a second time, and
//! the next message reaches the new incarnation at once.

mod common;

use bytes::Bytes;
use common::node_config;

use switchboard_core::{
    ids::NodeId,
    outcome::{FailReason, Outcome},
    select::Select,
    sim::{Sim, discovery_info, topology_info},
    time::Duration,
};

const PROXY: NodeId = NodeId(0x711);
const SENDER: NodeId = NodeId(0x725);
const TARGET: NodeId = NodeId(0x700);

/// Recording (not strict), so the `violations()` assertions below can fail.
fn cluster() -> Sim {
    let layout = [(0x711, 0), (0x725, 0x711), (0x700, 0x711)];
    let mut sim = Sim::recording();
    for (id, up) in layout {
        sim.add_node(node_config(id, up))
            .expect("a valid node config");
    }
    sim.run_until_idle();
    for (id, up) in layout {
        let name = format!("node-{id:x}");
        sim.registry_put_topology(topology_info(NodeId(id), &name, NodeId(up)));
        sim.registry_put_discovery(discovery_info(NodeId(id), &name));
    }
    sim.run_until_idle();
    sim.advance(Duration::from_millis(100));
    sim
}

/// `(from, via, msg_type, payload)` of everything `id` received, in order.
fn received(sim: &Sim, id: NodeId) -> Vec<(NodeId, NodeId, u32, Bytes)> {
    sim.received(id)
        .iter()
        .map(|r| (r.from, r.via, r.msg_type, r.payload.clone()))
        .collect()
}

#[test]
fn a_target_restarting_behind_a_proxy_after_delivery_gets_nothing_twice() {
    let mut sim = cluster();
    // Frames between the proxy and the target take 10 ms each way.
    sim.set_latency(PROXY, TARGET, Duration::from_millis(10));
    let t0 = sim.now();
    let m1 = sim
        .send(SENDER, Select::Node(TARGET), 1, Bytes::from_static(b"one"))
        .unwrap();
    // Delivered at t0 + 10 ms; its ack is on the wire back to the proxy when the target dies.
    sim.advance(Duration::from_millis(15));
    let one = (SENDER, PROXY, 1, Bytes::from_static(b"one"));
    assert_eq!(received(&sim, TARGET), core::slice::from_ref(&one));
    assert_eq!(sim.node(SENDER).inspect().unacked(TARGET), 1);
    sim.restart(TARGET);
    let restarted = sim.now();
    sim.advance(Duration::from_secs(5));
    assert_eq!(
        received(&sim, TARGET),
        core::slice::from_ref(&one),
        "{}",
        sim.trace_tail(40)
    );
    let record = sim.outcome_of(SENDER, m1).unwrap();
    assert_eq!(record.outcome, Outcome::Unknown(FailReason::TargetGone));
    // Ended the instant the target died (the proxy's notice), not by a retransmission's reset
    // (1.52 s) nor by the 3 s deadline.
    assert_eq!(restarted, t0 + Duration::from_millis(15));
    assert_eq!(record.at, restarted);
    assert_eq!(sim.node(SENDER).inspect().unacked(TARGET), 0);
    // The next messages go to the new incarnation on a fresh stream, exactly once each.
    let m2 = sim
        .send(SENDER, Select::Node(TARGET), 2, Bytes::from_static(b"two"))
        .unwrap();
    let m3 = sim
        .send(
            SENDER,
            Select::Node(TARGET),
            3,
            Bytes::from_static(b"three"),
        )
        .unwrap();
    sim.advance(Duration::from_secs(1));
    assert_eq!(
        received(&sim, TARGET),
        [
            one,
            (SENDER, PROXY, 2, Bytes::from_static(b"two")),
            (SENDER, PROXY, 3, Bytes::from_static(b"three")),
        ]
    );
    for m in [m2, m3] {
        assert_eq!(
            sim.outcome_of(SENDER, m).unwrap().outcome,
            Outcome::Delivered
        );
    }
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn after_a_silent_restart_behind_a_proxy_the_next_message_is_delivered_at_the_first_try() {
    let mut sim = cluster();
    // A first message is delivered and acknowledged: the sender knows the incarnation.
    let m1 = sim
        .send(SENDER, Select::Node(TARGET), 1, Bytes::from_static(b"one"))
        .unwrap();
    sim.advance(Duration::from_millis(10));
    assert_eq!(
        sim.outcome_of(SENDER, m1).unwrap().outcome,
        Outcome::Delivered
    );
    sim.restart(TARGET);
    sim.advance(Duration::from_secs(2));
    // The next message is stamped with the old incarnation: refused with a reset, and
    // since that refused copy was its only one it moves to a fresh stream and is delivered.
    let t1 = sim.now();
    let m2 = sim
        .send(SENDER, Select::Node(TARGET), 2, Bytes::from_static(b"two"))
        .unwrap();
    sim.advance(Duration::from_millis(10));
    let record = sim.outcome_of(SENDER, m2).unwrap();
    assert_eq!((record.at, record.outcome), (t1, Outcome::Delivered));
    assert_eq!(
        received(&sim, TARGET),
        [
            (SENDER, PROXY, 1, Bytes::from_static(b"one")),
            (SENDER, PROXY, 2, Bytes::from_static(b"two")),
        ]
    );
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// Steady traffic through the proxy (one message every 5 ms, 1 ms per hop) while the target
/// is killed and, 500 ms later, restarted with its new record published: the message in
/// flight at the kill ends `Unknown(TargetGone)` 1 ms later (the proxy's probe is refused
/// and its notice is one hop away); the ones sent while the target is down wait behind one
/// probe (refused once, then the route backs off); the restarted target links to the proxy,
/// the proxy says it is reachable, and everything that waited is delivered within 10 ms of
/// the restart, each once, in order — not at the end of the sender's backoff.
#[test]
fn traffic_through_a_proxy_resumes_within_milliseconds_of_a_restart() {
    let mut sim = cluster();
    let hop = Duration::from_millis(1);
    sim.set_latency(SENDER, PROXY, hop);
    sim.set_latency(TARGET, PROXY, hop);
    let t0 = sim.now();
    let ms = |n: u64| t0 + Duration::from_millis(n);
    let mut sent = Vec::new();
    for i in 0..400u64 {
        if i == 150 {
            sim.kill(TARGET);
        }
        if i == 250 {
            sim.restart(TARGET);
            let incarnation = sim.node(TARGET).incarnation();
            let info = switchboard_core::discovery::DiscoveryInfo {
                incarnation,
                ..discovery_info(TARGET, "node-700")
            };
            sim.registry_put_discovery(info);
        }
        let payload = Bytes::from(format!("m{i:03}"));
        sent.push(sim.send(SENDER, Select::Node(TARGET), 1, payload).unwrap());
        sim.advance(Duration::from_millis(5));
    }
    sim.advance(Duration::from_secs(12));

    let kill = ms(750);
    let restart = ms(1_250);
    for (i, &msg) in sent.iter().enumerate() {
        let record = sim.outcome_of(SENDER, msg).unwrap();
        let want = match i {
            0..150 => (ms(5 * i as u64 + 4), Outcome::Delivered),
            150 => (kill + hop, Outcome::Unknown(FailReason::TargetGone)),
            // The probe: refused at kill + 7 ms, delivered when the proxy says the target is
            // back (restart + 1 ms), acked 2 hops later.
            151 => (restart + 6 * hop, Outcome::Delivered),
            // Waited behind the probe (the last one sent 1 ms before its ack came back): sent
            // when the ack arrives, acked 4 hops later.
            152..=251 => (restart + 10 * hop, Outcome::Delivered),
            // The rest go straight out.
            _ => (ms(5 * i as u64 + 4), Outcome::Delivered),
        };
        assert_eq!((record.at, record.outcome), want, "message {i}");
    }
    let got: Vec<Bytes> = sim
        .received(TARGET)
        .iter()
        .map(|r| r.payload.clone())
        .collect();
    let mut want: Vec<Bytes> = (0..150).map(|i| Bytes::from(format!("m{i:03}"))).collect();
    want.extend((151..400).map(|i| Bytes::from(format!("m{i:03}"))));
    assert_eq!(
        got, want,
        "each message once, in order; m150 lost with the old target"
    );
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}
