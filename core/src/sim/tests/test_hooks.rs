//! What the simulator offers tests that look between its steps: delivering without firing
//! timers, taking a frame off a link to answer it by hand, and the dial log.

use alloc::{string::String, vec, vec::Vec};

use bytes::Bytes;

use super::{
    Dial, Sim, SimSettings,
    puppet::{Input, Puppet, PuppetConfig},
};
use crate::{
    ids::{LinkId, NodeId},
    node::Output,
    time::Instant,
};

const A: NodeId = NodeId(1);
const B: NodeId = NodeId(2);

fn pair() -> Sim<Puppet> {
    let mut sim = Sim::with_settings(SimSettings::default());
    for id in [1, 2] {
        sim.add_node(PuppetConfig::new(id)).unwrap();
    }
    sim
}

fn dial(sim: &mut Sim<Puppet>, link: u64, addr: &str) {
    sim.act(A, |p, _| {
        p.push(Output::Connect {
            link: LinkId(link),
            peer: B,
            addr: String::from(addr),
        });
    });
}

fn transmit(sim: &mut Sim<Puppet>, from: NodeId, link: u64, bytes: &'static [u8]) {
    sim.act(from, |p, _| {
        p.push(Output::Transmit {
            link: LinkId(link),
            bytes: Bytes::from_static(bytes),
        });
    });
}

#[test]
fn deliver_until_idle_delivers_but_fires_no_timer() {
    let mut sim = pair();
    sim.act(B, |p, _| p.deadline = Some(Instant::ZERO));
    dial(&mut sim, 1, "sim://0x2");
    sim.deliver_until_idle();
    assert_eq!(sim.open_links(A, B), 1);
    assert_eq!(
        sim.node(B).inputs,
        [(Instant::ZERO, Input::Accepted(LinkId(100)))]
    );
    assert_eq!(sim.deadline(B), Some(Instant::ZERO));
    sim.run_until_idle();
    assert_eq!(sim.node(B).inputs[1..], [(Instant::ZERO, Input::Timeout)]);
}

#[test]
fn bytes_taken_in_flight_never_arrive_and_the_link_stays_up() {
    let mut sim = pair();
    dial(&mut sim, 1, "sim://0x2");
    sim.run_until_idle();
    transmit(&mut sim, A, 1, b"one");
    transmit(&mut sim, A, 1, b"two");
    transmit(&mut sim, B, 100, b"back");
    assert_eq!(
        sim.take_in_flight(A, B),
        [Bytes::from_static(b"one"), Bytes::from_static(b"two")]
    );
    transmit(&mut sim, A, 1, b"three");
    sim.run_until_idle();
    assert_eq!(sim.open_links(A, B), 1);
    assert_eq!(
        sim.node(B).inputs[1..],
        [(
            Instant::ZERO,
            Input::Received(LinkId(100), b"three".to_vec())
        )]
    );
    assert_eq!(
        sim.node(A).inputs[1..],
        [(Instant::ZERO, Input::Received(LinkId(1), b"back".to_vec()))]
    );
    assert_eq!(sim.dropped_bytes(), 0);
}

#[test]
fn every_dial_is_logged_with_how_it_resolved() {
    let mut sim = pair();
    dial(&mut sim, 1, "sim://0x2");
    dial(&mut sim, 2, "sim://nobody");
    let pending: Vec<Option<bool>> = sim.dials(A).iter().map(|d| d.connected).collect();
    assert_eq!(pending, [None, None]);
    sim.run_until_idle();
    let dial = |link, addr: &str, connected| Dial {
        at: Instant::ZERO,
        link: LinkId(link),
        peer: B,
        addr: String::from(addr),
        connected: Some(connected),
    };
    assert_eq!(
        sim.dials(A),
        vec![dial(1, "sim://0x2", true), dial(2, "sim://nobody", false)]
    );
    assert_eq!(sim.dials(B), []);
}
