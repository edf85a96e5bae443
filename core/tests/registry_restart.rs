//! The registry restarts under a running cluster (ARCHITECTURE §10), with the simulator
//! running the real registry machines: one registry server and one registry client per node,
//! each node registering its own records.
//!
//! Layout: 0x201 and 0x202 under 0x203, group B settings (direct links allowed). No latency;
//! the registry clients reconnect after 1 s, 2 s, 4 s, … (no jitter); the server's disconnect
//! protection and the clients' new-epoch grace are the defaults, 30 s. Every assertion is at
//! an exact instant.

mod common;

use common::{GROUP_B, at, config, got, name, send};
use switchboard_core::{
    backoff::BackoffConfig,
    ids::NodeId,
    registry::server::RegistryServer,
    sim::{RegistryMachines, Sim, discovery_info, topology_info},
    time::{Duration, Instant},
};

const LAYOUT: [(u64, u64); 3] = [(0x203, 0), (0x201, 0x203), (0x202, 0x203)];

/// The registry machines with exact reconnect delays.
fn machines() -> RegistryMachines {
    let mut m = RegistryMachines::default();
    m.client.backoff =
        BackoffConfig::without_jitter(Duration::from_secs(1), Duration::from_secs(8), 0);
    m
}

/// The layout started with the machines on, every node registered, settled at 0 s.
fn registered_cluster() -> Sim {
    let mut sim = Sim::new();
    sim.start_registry(machines());
    for &(id, up) in &LAYOUT {
        sim.add_node(config(GROUP_B, id, up))
            .unwrap_or_else(|e| panic!("node {id:#x}: {e}"));
        sim.register(
            NodeId(id),
            discovery_info(NodeId(id), &name(id)),
            Some(topology_info(NodeId(id), &name(id), NodeId(up))),
        );
    }
    sim.run_until_idle();
    sim
}

/// The ids in `id`'s discovery set, ascending.
fn known(sim: &Sim, id: u64) -> Vec<u64> {
    let mut ids: Vec<u64> = sim
        .node(NodeId(id))
        .inspect()
        .discovery()
        .iter()
        .map(|i| i.id.0)
        .collect();
    ids.sort_unstable();
    ids
}

/// Trace lines of registry deletes handed to nodes: `(time, node line)`.
fn deletes(sim: &Sim) -> Vec<String> {
    sim.trace()
        .iter()
        .filter(|l| l.contains("<- registry discovery delete"))
        .cloned()
        .collect()
}

fn epoch(sim: &Sim) -> u64 {
    sim.registry_server()
        .map(RegistryServer::epoch)
        .expect("the registry runs")
}

/// Every node learns every node through its own registry client; the registry's epoch then
/// changes under them (killed at 10 s, a new server at 13 s, the clients back at 17 s after
/// backoffs of 1, 2 and 4 s) and no node ever loses a peer, while messages keep flowing over
/// the links that exist and a new one.
#[test]
fn registry_restart_keeps_every_node_and_the_traffic() {
    let mut sim = registered_cluster();
    for &(id, _) in &LAYOUT {
        assert_eq!(
            known(&sim, id),
            [0x201, 0x202, 0x203],
            "node {id:#x} at 0 s"
        );
    }
    let first = epoch(&sim);
    send(&mut sim, 0x201, 0x203, 1, "before");
    sim.run_until_idle();
    assert_eq!(
        got(&sim, 0x203),
        [(at(0), 0x201, 0x201, 1, "before".to_owned())]
    );

    sim.advance_to(at(10));
    sim.kill_registry();
    sim.advance_to(at(12));
    send(&mut sim, 0x202, 0x203, 2, "during");
    sim.advance_to(at(13));
    sim.start_registry_server();
    let second = epoch(&sim);
    assert_ne!(first, second);
    for &(id, _) in &LAYOUT {
        let client = sim.registry_client(NodeId(id)).expect("client runs");
        assert_eq!(client.epoch(), Some(first), "node {id:#x} at 13 s");
        assert!(!client.is_registered(), "node {id:#x} at 13 s");
    }

    sim.advance_to(at(17));
    for &(id, _) in &LAYOUT {
        let client = sim.registry_client(NodeId(id)).expect("client runs");
        assert_eq!(client.epoch(), Some(second), "node {id:#x} at 17 s");
        assert!(client.is_registered(), "node {id:#x} at 17 s");
        assert_eq!(client.in_grace().count(), 0, "node {id:#x} at 17 s");
        assert_eq!(
            known(&sim, id),
            [0x201, 0x202, 0x203],
            "node {id:#x} at 17 s"
        );
    }
    send(&mut sim, 0x201, 0x202, 3, "after");
    sim.advance_to(at(60));
    assert_eq!(
        got(&sim, 0x203),
        [
            (at(0), 0x201, 0x201, 1, "before".to_owned()),
            (at(12), 0x202, 0x202, 2, "during".to_owned()),
        ]
    );
    assert_eq!(
        got(&sim, 0x202),
        [(at(17), 0x201, 0x201, 3, "after".to_owned())]
    );
    assert_eq!(deletes(&sim), Vec::<String>::new());
    assert_eq!(sim.violations(), Vec::<String>::new());
}

/// A node that dies while the registry is down never registers with the new one: the others
/// keep it through the grace of the new epoch (from their re-registration at 17 s to 47 s) and
/// drop it exactly then; when it restarts at 50 s it registers again, is known again, and
/// takes messages.
#[test]
fn node_dead_during_the_outage_is_removed_at_the_end_of_the_grace() {
    let mut sim = registered_cluster();
    sim.advance_to(at(10));
    sim.kill(NodeId(0x202));
    sim.kill_registry();
    sim.advance_to(at(13));
    sim.start_registry_server();
    sim.advance_to(at(47) - Duration::from_nanos(1));
    for id in [0x201, 0x203] {
        assert_eq!(
            known(&sim, id),
            [0x201, 0x202, 0x203],
            "node {id:#x} before 47 s"
        );
        let grace: Vec<Instant> = sim
            .registry_client(NodeId(id))
            .expect("client runs")
            .in_grace()
            .map(|(_, &d)| d)
            .collect();
        assert_eq!(grace, [at(47)], "node {id:#x}");
    }
    sim.advance_to(at(47));
    for id in [0x201, 0x203] {
        assert_eq!(known(&sim, id), [0x201, 0x203], "node {id:#x} at 47 s");
    }
    assert_eq!(deletes(&sim).len(), 2);

    sim.advance_to(at(50));
    sim.restart(NodeId(0x202));
    sim.run_until_idle();
    for &(id, _) in &LAYOUT {
        assert_eq!(
            known(&sim, id),
            [0x201, 0x202, 0x203],
            "node {id:#x} at 50 s"
        );
    }
    send(&mut sim, 0x203, 0x202, 4, "welcome back");
    sim.advance_to(at(60));
    assert_eq!(
        got(&sim, 0x202),
        [(at(50), 0x203, 0x203, 4, "welcome back".to_owned())]
    );
    assert_eq!(sim.violations(), Vec::<String>::new());
}
