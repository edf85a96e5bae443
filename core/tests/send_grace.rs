//! Deploys fail nothing (docs/ARCHITECTURE.md §7, "Send grace"), on virtual time: a sender
//! holds a message for a name whose record was deleted within `send_grace` instead of
//! refusing it, and sends it the moment the next life's record arrives; with nothing back it
//! ends `Failed(TargetGone)` exactly at the delete plus the grace. A record marked leaving
//! holds new messages (what is in flight is still acknowledged) until its next record — for
//! the node itself, and for the nodes routed through it when it is a proxy.
//!
//! The layout: sender 0x825 and target 0x800 under proxy 0x811, no direct links, no latency.

mod common;

use bytes::Bytes;
use common::node_config;

use switchboard_core::{
    discovery::LEAVING_LABEL,
    ids::NodeId,
    node::SendError,
    outcome::{FailReason, Outcome},
    select::Select,
    sim::{Sim, discovery_info, topology_info},
    time::{Duration, Instant},
};

const PROXY: NodeId = NodeId(0x811);
const SENDER: NodeId = NodeId(0x825);
const TARGET: NodeId = NodeId(0x800);
const GRACE: Duration = Duration::from_secs(2);

fn name(id: NodeId) -> String {
    format!("node-{:x}", id.0)
}

/// Recording (not strict), so the `violations()` assertions below can fail.
fn cluster() -> Sim {
    let layout = [(PROXY, NodeId::NONE), (SENDER, PROXY), (TARGET, PROXY)];
    let mut sim = Sim::recording();
    for (id, up) in layout {
        let mut config = node_config(id.0, up.0);
        config.send_grace = GRACE;
        sim.add_node(config).expect("a valid node config");
    }
    sim.run_until_idle();
    for (id, up) in layout {
        sim.registry_put_topology(topology_info(id, &name(id), up));
        sim.registry_put_discovery(discovery_info(id, &name(id)));
    }
    sim.run_until_idle();
    sim.advance(Duration::from_millis(100));
    sim
}

fn to_target(
    sim: &mut Sim,
    payload: &'static [u8],
) -> Result<switchboard_core::ids::MsgId, SendError> {
    sim.send(
        SENDER,
        Select::Name(name(TARGET)),
        1,
        Bytes::from_static(payload),
    )
}

/// The registry serves `id`'s record marked leaving (it drains before a graceful exit).
fn publish_leaving(sim: &mut Sim, id: NodeId) {
    let mut leaving = discovery_info(id, &name(id));
    leaving
        .metadata
        .labels
        .insert(LEAVING_LABEL.into(), "restarting".into());
    sim.registry_put_discovery(leaving);
    sim.run_until_idle();
}

/// `(at, payload)` of everything the target received, in order.
fn received(sim: &Sim) -> Vec<(Instant, Bytes)> {
    sim.received(TARGET)
        .iter()
        .map(|r| (r.at, r.payload.clone()))
        .collect()
}

#[test]
fn a_message_sent_in_the_restart_gap_is_delivered_once_when_the_next_life_registers() {
    let mut sim = cluster();
    let before = to_target(&mut sim, b"before").expect("a known name");
    sim.advance(Duration::from_millis(10));
    // A graceful exit: the record goes, the process stops, the next life starts at once.
    let deleted = sim.now();
    sim.registry_delete_discovery(TARGET);
    sim.run_until_idle();
    sim.restart(TARGET);
    sim.run_until_idle();
    let gap = to_target(&mut sim, b"gap").expect("a name deleted within the grace is held");
    sim.advance(Duration::from_millis(300));
    assert_eq!(received(&sim).len(), 1, "held until a record is back");
    assert_eq!(sim.outcome_of(SENDER, gap), None, "{}", sim.trace_tail(30));
    let back = sim.now();
    assert_eq!(back, deleted + Duration::from_millis(300));
    sim.registry_put_discovery(discovery_info(TARGET, &name(TARGET)));
    sim.advance(Duration::from_secs(1));
    assert_eq!(
        received(&sim),
        [
            (
                deleted - Duration::from_millis(10),
                Bytes::from_static(b"before")
            ),
            (back, Bytes::from_static(b"gap")),
        ],
        "{}",
        sim.trace_tail(40)
    );
    for msg in [before, gap] {
        let record = sim.outcome_of(SENDER, msg).expect("an outcome");
        assert_eq!(record.outcome, Outcome::Delivered);
    }
    assert_eq!(sim.outcome_of(SENDER, gap).unwrap().at, back);
    assert_eq!(sim.violations(), &[] as &[String]);
}

#[test]
fn with_no_record_back_a_held_message_ends_failed_target_gone_at_delete_plus_grace() {
    let mut sim = cluster();
    sim.advance(Duration::from_millis(10));
    let deleted = sim.now();
    sim.registry_delete_discovery(TARGET);
    sim.run_until_idle();
    sim.kill(TARGET);
    sim.advance(Duration::from_millis(500));
    let held = to_target(&mut sim, b"held").expect("a name deleted within the grace is held");
    sim.advance(Duration::from_secs(5));
    let record = sim.outcome_of(SENDER, held).expect("an outcome");
    assert_eq!(record.outcome, Outcome::Failed(FailReason::TargetGone));
    assert_eq!(record.at, deleted + GRACE);
    assert!(received(&sim).is_empty());
    // Past the grace the name is unknown again: refused at submission, as before.
    assert_eq!(to_target(&mut sim, b"late"), Err(SendError::UnknownTarget));
    assert_eq!(sim.violations(), &[] as &[String]);
}

#[test]
fn a_name_never_known_is_still_refused_at_submission() {
    let mut sim = cluster();
    assert_eq!(
        sim.send(
            SENDER,
            Select::Name("nobody".into()),
            1,
            Bytes::from_static(b"x")
        ),
        Err(SendError::UnknownTarget)
    );
}

#[test]
fn a_leaving_record_holds_new_messages_until_the_next_lifes_record() {
    let mut sim = cluster();
    let t0 = sim.now();
    let first = to_target(&mut sim, b"first").expect("known");
    sim.advance(Duration::from_millis(10));
    publish_leaving(&mut sim, TARGET);
    let held = to_target(&mut sim, b"held").expect("a leaving node's name still resolves");
    sim.advance(Duration::from_millis(200));
    assert_eq!(
        received(&sim).len(),
        1,
        "nothing new goes to a leaving node"
    );
    assert_eq!(sim.outcome_of(SENDER, held), None);
    assert_eq!(
        sim.outcome_of(SENDER, first).unwrap().outcome,
        Outcome::Delivered
    );
    // The drained node leaves and its next life registers.
    sim.registry_delete_discovery(TARGET);
    sim.run_until_idle();
    sim.restart(TARGET);
    sim.advance(Duration::from_millis(50));
    assert_eq!(received(&sim).len(), 1, "held through the gap");
    let back = sim.now();
    sim.registry_put_discovery(discovery_info(TARGET, &name(TARGET)));
    sim.advance(Duration::from_secs(1));
    // The log is the id's across its lives: the first life's message, then the held one,
    // delivered to the next life the instant its record arrived.
    assert_eq!(
        received(&sim),
        [
            (t0, Bytes::from_static(b"first")),
            (back, Bytes::from_static(b"held")),
        ]
    );
    let record = sim.outcome_of(SENDER, held).unwrap();
    assert_eq!((record.at, record.outcome), (back, Outcome::Delivered));
    assert_eq!(sim.violations(), &[] as &[String]);
}

#[test]
fn a_leaving_proxy_holds_new_messages_for_the_nodes_behind_it_until_its_next_record() {
    let mut sim = cluster();
    publish_leaving(&mut sim, PROXY);
    let held = to_target(&mut sim, b"held").expect("the target itself is not leaving");
    sim.advance(Duration::from_millis(200));
    assert!(received(&sim).is_empty(), "held while its proxy drains");
    assert_eq!(sim.outcome_of(SENDER, held), None);
    // The proxy's record without the mark (here: it stayed) releases what waited behind it.
    let back = sim.now();
    sim.registry_put_discovery(discovery_info(PROXY, &name(PROXY)));
    sim.advance(Duration::from_secs(1));
    assert_eq!(received(&sim), [(back, Bytes::from_static(b"held"))]);
    let record = sim.outcome_of(SENDER, held).unwrap();
    assert_eq!((record.at, record.outcome), (back, Outcome::Delivered));
    assert_eq!(sim.violations(), &[] as &[String]);
}
