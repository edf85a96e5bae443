//! MioNodes driven in turn by the test thread, through the embedded registry: a direct pair,
//! and two leaves talking through a proxy MioNode.

mod support;

use switchboard_core::{ids::NodeId, outcome::Outcome, select::Select};

use support::{World, direct, mio_node, payload, pump_until};

#[test]
fn two_mio_nodes_exchange_exact_payloads_through_the_registry() {
    let world = World::start();
    let mut a = mio_node(Some(world.addr()), 1, "alpha", direct);
    let mut b = mio_node(Some(world.addr()), 2, "beta", direct);
    pump_until("both nodes know each other", &mut [&mut a, &mut b], |p| {
        p[0].knows(&[1, 2]) && p[1].knows(&[1, 2])
    });
    assert!(a.node.is_registered() && b.node.is_registered());

    let big = bytes::Bytes::from(vec![0xa5; 100_000]);
    let m1 = a
        .node
        .send(Select::Node(NodeId(2)), 3, big.clone())
        .expect("accepted");
    let m2 = b
        .node
        .send(Select::Name("alpha".into()), 4, payload(2, 0, 32))
        .expect("accepted");
    pump_until("both delivered", &mut [&mut a, &mut b], |p| {
        p[0].outcomes.len() == 1 && p[1].outcomes.len() == 1
    });
    assert_eq!(a.outcomes, vec![(m1, Outcome::Delivered)]);
    assert_eq!(b.outcomes, vec![(m2, Outcome::Delivered)]);
    assert_eq!(b.received, vec![(NodeId(1), NodeId(1), 3, big)]);
    assert_eq!(
        a.received,
        vec![(NodeId(2), NodeId(2), 4, payload(2, 0, 32))]
    );
    let status = a.node.status();
    assert_eq!(
        (status.id, status.registered, status.known_nodes),
        (1, true, 2)
    );
    assert!(
        status
            .links
            .iter()
            .any(|l| l.peer == Some(2) && l.state == "up"),
        "{status:?}"
    );
}

#[test]
fn leaves_talk_through_a_proxy_mio_node() {
    let world = World::start();
    let leaf_of_proxy = |c: &mut switchboard_core::config::Config| c.upstream = NodeId(10);
    let mut proxy = mio_node(Some(world.addr()), 10, "proxy", |_| {});
    let mut x = mio_node(Some(world.addr()), 11, "leaf-x", leaf_of_proxy);
    let mut y = mio_node(Some(world.addr()), 12, "leaf-y", leaf_of_proxy);
    pump_until(
        "every node knows the others and the leaves are linked to the proxy",
        &mut [&mut proxy, &mut x, &mut y],
        |p| {
            p.iter().all(|n| n.knows(&[10, 11, 12]))
                && p[1].node.node().inspect().link_to(NodeId(10)).is_some()
                && p[2].node.node().inspect().link_to(NodeId(10)).is_some()
        },
    );

    let sent: Vec<_> = (0..50)
        .map(|seq| {
            x.node
                .send(Select::Node(NodeId(12)), 9, payload(11, seq, 40))
                .expect("accepted")
        })
        .collect();
    pump_until(
        "all relayed and acknowledged",
        &mut [&mut proxy, &mut x, &mut y],
        |p| p[1].outcomes.len() == sent.len() && p[2].received.len() == sent.len(),
    );
    let delivered: Vec<_> = sent.iter().map(|m| (*m, Outcome::Delivered)).collect();
    assert_eq!(x.outcomes, delivered);
    let expected: Vec<_> = (0..50)
        .map(|seq| (NodeId(11), NodeId(10), 9, payload(11, seq, 40)))
        .collect();
    assert_eq!(y.received, expected);
    assert!(proxy.received.is_empty());
    // No direct link between the leaves: the default policy forbids it.
    assert_eq!(x.node.node().inspect().link_to(NodeId(12)), None);
}
