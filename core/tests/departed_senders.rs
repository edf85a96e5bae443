//! Bounded state for departed peers (issue 23 item 4, docs/ARCHITECTURE.md §9.4): short-lived
//! light clients, each a new id and incarnation, send one message through a proxy to a leaf
//! and leave. Once every one has left and the grace has passed, every per-peer table of the
//! proxy and the leaf counts exactly the live set again.

mod common;

use bytes::Bytes;
use common::node_config;
use switchboard_core::node::Event;

use switchboard_core::{
    discovery::{CLIENT_ROLE, ROLE_LABEL},
    ids::NodeId,
    inspect::PeerTables,
    outcome::{FailReason, Outcome},
    select::Select,
    sim::{Sim, discovery_info, topology_info},
    time::Duration,
};

const PROXY: NodeId = NodeId(0x711);
const LEAF: NodeId = NodeId(0x700);
const FIRST_CLIENT: u64 = 0x10_0000;

fn name(id: NodeId) -> String {
    format!("node-{:x}", id.0)
}

/// The proxy and the leaf under it, published and linked. No trace: a thousand clients'
/// lines would only slow the run.
fn cluster() -> Sim {
    let mut sim = Sim::recording();
    sim.settings_mut().trace = false;
    for (id, up) in [(PROXY, NodeId::NONE), (LEAF, PROXY)] {
        sim.add_node(node_config(id.0, up.0))
            .expect("a valid node config");
        sim.registry_put_topology(topology_info(id, &name(id), up));
        sim.registry_put_discovery(discovery_info(id, &name(id)));
    }
    sim.run_until_idle();
    sim.advance(Duration::from_millis(100));
    sim
}

/// One light client under the proxy: started, published (labelled `role=client`), sends one
/// message to the leaf, which is delivered; then it shuts down and its records are deleted.
fn one_client(sim: &mut Sim, id: NodeId) {
    sim.add_node(node_config(id.0, PROXY.0))
        .expect("a valid node config");
    sim.registry_put_topology(topology_info(id, &name(id), PROXY));
    let mut info = discovery_info(id, &name(id));
    info.metadata
        .labels
        .insert(ROLE_LABEL.to_owned(), CLIENT_ROLE.to_owned());
    sim.registry_put_discovery(info);
    sim.run_until_idle();
    let msg = sim
        .send(
            id,
            switchboard_core::select::Select::Node(LEAF),
            1,
            Bytes::from_static(b"hi"),
        )
        .expect("accepted");
    sim.advance(Duration::from_millis(20));
    assert_eq!(
        sim.outcome_of(id, msg).map(|r| r.outcome),
        Some(Outcome::Delivered),
        "client {id}"
    );
    sim.shutdown(id);
    sim.registry_delete_discovery(id);
    sim.registry_delete_topology(id);
    sim.advance(Duration::from_millis(10));
}

/// Virtual time one client takes ([`one_client`]).
const CLIENT_TIME: Duration = Duration::from_millis(30);

/// The per-peer entries of `t` that name departed peers until a grace passes: the rest
/// count peers with a link, an endpoint or a record, which departed ones have none of.
fn graced(t: &PeerTables) -> [usize; 6] {
    [
        t.peer_incarnations,
        t.recv_streams,
        t.suspects,
        t.dead,
        t.relayed_sources,
        t.known_incarnations,
    ]
}

#[test]
fn a_thousand_departed_senders_leave_every_table_at_the_live_set() {
    let mut sim = cluster();
    let before = [PROXY, LEAF].map(|id| sim.node(id).inspect().peer_tables());
    // Clients departed within one grace (12.5 s with the defaults), the last one's included.
    let window = (12_500 / CLIENT_TIME.as_millis() + 1) as usize;
    for i in 0..1_000 {
        one_client(&mut sim, NodeId(FIRST_CLIENT + i));
        // While they churn, what departed peers leave is bounded by one grace of them.
        for id in [PROXY, LEAF] {
            let now = sim.node(id).inspect().peer_tables();
            for entries in graced(&now) {
                assert!(entries <= 1 + window, "{id} at client {i}: {now:?}");
            }
            assert_eq!(now.endpoints, 0, "{id} at client {i}");
            assert_eq!(now.routes, 0, "{id} at client {i}");
        }
    }
    // One grace after the last departure (and the registry's deletions with it).
    sim.advance(Duration::from_millis(12_500));
    let after = [PROXY, LEAF].map(|id| sim.node(id).inspect().peer_tables());
    // Every per-peer table counts the live set again. The deletes' tombstones (discovery and
    // topology) stay, bounded by `DEFAULT_TOMBSTONE_LIMIT` (4,096; the oldest quarter goes
    // past it, unit-tested in `discovery::set` and `topology::revisions`): one per client.
    for (b, a) in before.iter().zip(&after) {
        let mut tombstoned = *b;
        tombstoned.discovery_tombstones += 1_000;
        tombstoned.topology_revisions += 1_000;
        assert_eq!(*a, tombstoned);
    }
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// The simulator's quiescence check names a node that is dead and deleted from the registry
/// yet still remembered: it fires before the grace has passed, and not after.
#[test]
fn the_quiescence_check_fires_on_a_departed_peer_remembered_and_not_after_its_grace() {
    let mut sim = cluster();
    let client = NodeId(FIRST_CLIENT);
    one_client(&mut sim, client);
    sim.kill(client);
    assert_eq!(sim.check_quiescent(), 2, "{:?}", sim.violations());
    let violations = sim.violations().to_vec();
    for (node, text) in [PROXY, LEAF].iter().zip(&violations) {
        assert!(
            text.starts_with(&format!(
                "{node} still remembers {client}, dead and deleted"
            )),
            "{text}"
        );
    }
    sim.advance(Duration::from_millis(12_500));
    assert_eq!(sim.check_quiescent(), 0, "{:?}", sim.violations());
    assert_eq!(sim.violations(), violations);
}

/// The old proxy of [`a_proxy_closed_as_unneeded_is_forgotten_one_grace_after_the_close`]:
/// it never has a record in the registry.
const OLD_PROXY: NodeId = NodeId(0x712);
/// The node that leaves [`OLD_PROXY`] for [`PROXY`].
const MOVER: NodeId = NodeId(0x720);

/// The simulator's seeds 3824, 5081 and 9405 (`--faults all`): a restarted node links to its
/// configured proxy, which lost its registry session across a registry restart, so the node
/// never holds the proxy's record and never hears its deletion. The node's own topology record
/// moves it under another proxy 18 ms later and the connector closes the old link as unneeded
/// (`Bye`, closed by this node: no link loss reported). The old proxy then dies. Its handshake
/// incarnation (links) and sending-side incarnation (endpoints) must be forgotten one grace
/// after that close, its last trace — the close of a peer's last link schedules the peer
/// (docs/ARCHITECTURE.md §9.4) whoever closes it.
#[test]
fn a_proxy_closed_as_unneeded_is_forgotten_one_grace_after_the_close() {
    let mut sim = cluster();
    sim.add_node(node_config(OLD_PROXY.0, 0))
        .expect("a valid node config");
    sim.add_node(node_config(MOVER.0, OLD_PROXY.0))
        .expect("a valid node config");
    sim.run_until_idle();
    assert_eq!(sim.open_links(MOVER, OLD_PROXY), 1);
    assert!(sim.node(MOVER).inspect().remembers(OLD_PROXY));
    sim.registry_put_discovery(discovery_info(MOVER, &name(MOVER)));
    sim.registry_put_topology(topology_info(MOVER, &name(MOVER), PROXY));
    sim.run_until_idle();
    assert_eq!(
        (
            sim.open_links(MOVER, OLD_PROXY),
            sim.open_links(MOVER, PROXY)
        ),
        (0, 1)
    );
    let closed_at = sim
        .events(MOVER)
        .iter()
        .find_map(|(at, e)| match e {
            Event::LinkClosed {
                peer: Some(OLD_PROXY),
                ..
            } => Some(*at),
            _ => None,
        })
        .expect("the old proxy's link closed");
    sim.kill(OLD_PROXY);
    // 8 s + 1.5 s × 3 (`departed_grace` with the defaults).
    let forgotten_at = closed_at + Duration::from_millis(12_500);
    sim.advance_to(forgotten_at - Duration::from_nanos(1));
    let kept = sim.node(MOVER).inspect().peer_tables();
    assert!(sim.node(MOVER).inspect().remembers(OLD_PROXY), "{kept:?}");
    assert_eq!(sim.check_quiescent(), 1, "{:?}", sim.violations());
    sim.advance_to(forgotten_at);
    let tables = sim.node(MOVER).inspect().peer_tables();
    assert!(
        !sim.node(MOVER).inspect().remembers(OLD_PROXY),
        "{tables:?}"
    );
    // The handshake and sending-side incarnations of the old proxy, and nothing else.
    assert_eq!(
        (tables.peer_incarnations, tables.known_incarnations),
        (kept.peer_incarnations - 1, kept.known_incarnations - 1)
    );
    assert_eq!(tables.departures, 0);
    assert_eq!(
        sim.check_quiescent(),
        0,
        "{:?}",
        sim.violations()[1..].to_vec()
    );
}

/// What the leaf sends to a light client after its record was deleted (echoes of its last
/// messages, replies to its last calls) ends `Failed(TargetGone)` at once and leaves no
/// endpoint or route: a client never comes back under its id, so nothing waits for it. The
/// send grace bounds the memory of it; a record put under the id again ends it at once.
#[test]
fn a_send_to_a_client_that_left_ends_target_gone_at_once_and_leaves_nothing() {
    let mut sim = cluster();
    let client = NodeId(FIRST_CLIENT);
    one_client(&mut sim, client);
    let late = |sim: &mut Sim| {
        let msg = (sim.send(LEAF, Select::Node(client), 1, Bytes::from_static(b"echo")))
            .expect("a send by id is accepted");
        (msg, sim.now())
    };
    let (msg, at) = late(&mut sim);
    assert_eq!(
        sim.outcome_of(LEAF, msg).map(|r| (r.at, r.outcome)),
        Some((at, Outcome::Failed(FailReason::TargetGone)))
    );
    sim.advance(Duration::from_millis(1));
    let tables = sim.node(LEAF).inspect().peer_tables();
    assert_eq!((tables.endpoints, tables.routes), (0, 0), "{tables:?}");
    // Just before the send grace (15 s after the delete) ends, still at once.
    sim.advance(Duration::from_millis(14_900));
    let (msg, at) = late(&mut sim);
    assert_eq!(
        sim.outcome_of(LEAF, msg).map(|r| (r.at, r.outcome)),
        Some((at, Outcome::Failed(FailReason::TargetGone)))
    );
    // The id registered again (a new client reusing it): delivered.
    sim.restart(client);
    sim.registry_put_topology(topology_info(client, &name(client), PROXY));
    let mut info = discovery_info(client, &name(client));
    (info.metadata.labels).insert(ROLE_LABEL.to_owned(), CLIENT_ROLE.to_owned());
    sim.registry_put_discovery(info);
    sim.run_until_idle();
    let (msg, _) = late(&mut sim);
    sim.advance(Duration::from_millis(20));
    assert_eq!(
        sim.outcome_of(LEAF, msg).map(|r| r.outcome),
        Some(Outcome::Delivered)
    );
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}
