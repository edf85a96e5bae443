//! The path-failure invariant shown to fire and not to fire: puppets report the deaths a
//! broken node would, the simulator judges them against the path failures it injected.

use alloc::{string::String, vec, vec::Vec};

use super::{
    Sim, SimSettings,
    puppet::{Puppet, PuppetConfig},
};
use crate::{
    ids::{LinkId, NodeId},
    node::{Event, Evidence, Output},
    time::Duration,
};

const A: NodeId = NodeId(1);
const B: NodeId = NodeId(2);
const C: NodeId = NodeId(3);
const BOUND: Duration = Duration::from_millis(1_500);
const MS: Duration = Duration::from_millis(1);

/// Puppets A (suspicion bound 1.5 s), B and C, recording violations.
fn trio() -> Sim<Puppet> {
    let mut sim = Sim::with_settings(SimSettings {
        strict: false,
        ..SimSettings::default()
    });
    for id in [1, 2, 3] {
        let mut config = PuppetConfig::new(id);
        config.suspicion_bound = BOUND;
        sim.add_node(config).unwrap();
    }
    sim
}

/// `from` dials `to` (its link `link`) and the link comes up.
fn link(sim: &mut Sim<Puppet>, from: NodeId, link: u64, to: &str) {
    sim.act(from, |p, _| {
        p.push(Output::Connect {
            link: LinkId(link),
            peer: NodeId::NONE,
            addr: String::from(to),
        });
    });
    sim.deliver_until_idle();
}

/// A reports B's life (incarnation 0, the puppet's) dead by `evidence`.
fn a_declares_b_dead(sim: &mut Sim<Puppet>, evidence: Evidence) {
    sim.act(A, |p, _| {
        p.push(Output::Event(Event::PeerDead {
            peer: B,
            incarnation: 0,
            evidence,
        }));
    });
    sim.deliver_until_idle();
}

#[test]
fn a_death_by_a_path_failure_shorter_than_the_bound_is_a_violation() {
    let mut sim = trio();
    sim.fail_path(A, B, Duration::from_millis(200));
    sim.advance(Duration::from_millis(100));
    a_declares_b_dead(&mut sim, Evidence::RedialFailed);
    assert_eq!(
        sim.violations(),
        [String::from(
            "0x1 declared live 0x2 (incarnation 0) dead at Instant(100000000) by a path \
             failure of 200ms, shorter than its suspicion bound 1.5s"
        )]
    );
}

#[test]
fn a_death_while_another_path_is_up_is_a_violation() {
    let mut sim = trio();
    link(&mut sim, A, 1, "sim://0x3");
    link(&mut sim, C, 1, "sim://0x2");
    sim.fail_path(A, B, BOUND * 2);
    sim.advance(BOUND + MS);
    a_declares_b_dead(&mut sim, Evidence::RedialFailed);
    assert_eq!(
        sim.violations(),
        [String::from(
            "0x1 declared live 0x2 (incarnation 0) dead at Instant(1501000000) while another \
             path to it was up (through 0x3)"
        )]
    );
}

#[test]
fn deaths_the_path_failure_does_not_explain_are_no_violation() {
    let no_violation: Vec<String> = vec![];
    // A path failure as long as the bound, no other path: a death at the bound is the rule.
    let mut sim = trio();
    sim.fail_path(A, B, BOUND);
    sim.advance(BOUND);
    a_declares_b_dead(&mut sim, Evidence::RedialFailed);
    assert_eq!(sim.violations(), no_violation);
    // Other evidence (stopped heartbeats) is not the redial's.
    let mut sim = trio();
    sim.fail_path(A, B, Duration::from_millis(200));
    a_declares_b_dead(&mut sim, Evidence::HeartbeatsStopped);
    assert_eq!(sim.violations(), no_violation);
    // B really died: the invariant is about live peers.
    let mut sim = trio();
    sim.fail_path(A, B, Duration::from_millis(200));
    sim.kill(B);
    a_declares_b_dead(&mut sim, Evidence::RedialFailed);
    assert_eq!(sim.violations(), no_violation);
    // The other direction failed, not A's: not A's path failure.
    let mut sim = trio();
    sim.fail_path(B, A, Duration::from_millis(200));
    a_declares_b_dead(&mut sim, Evidence::RedialFailed);
    assert_eq!(sim.violations(), no_violation);
    // Long after the path failure (past it + the bound): not checked against it.
    let mut sim = trio();
    sim.fail_path(A, B, Duration::from_millis(200));
    sim.advance(Duration::from_millis(200) + BOUND + MS);
    a_declares_b_dead(&mut sim, Evidence::RedialFailed);
    assert_eq!(sim.violations(), no_violation);
}
