//! Tests of the simulator itself, driven through [`Puppet`] nodes: link establishment, ordered
//! delivery with exact arrival times, closes and drops, scripted dial failures, timers,
//! registry fan-out, kills and restarts, contract checks and determinism.

use alloc::{string::String, vec, vec::Vec};

use bytes::Bytes;

use super::{
    Fanout, Sim, SimSettings, discovery_info,
    puppet::{Input, Puppet, PuppetConfig},
    topology_info,
};
use crate::{
    ids::{LinkId, MsgId, NodeId},
    node::Output,
    outcome::Outcome,
    registry::RegistryEvent,
    select::Select,
    time::{Duration, Instant},
};

const A: NodeId = NodeId(1);
const B: NodeId = NodeId(2);
const C: NodeId = NodeId(3);

fn ms(n: u64) -> Instant {
    Instant::from_millis(n)
}

fn sim(settings: SimSettings, ids: &[u64]) -> Sim<Puppet> {
    let mut sim = Sim::with_settings(settings);
    for &id in ids {
        sim.add_node(PuppetConfig::new(id)).unwrap();
    }
    sim
}

type Inputs = Vec<(Instant, Input)>;

fn inputs(sim: &Sim<Puppet>, id: NodeId) -> Inputs {
    sim.node(id).inputs.clone()
}

fn dial(sim: &mut Sim<Puppet>, from: NodeId, link: u64, to: NodeId, addr: &str) {
    sim.act(from, |p, _| {
        p.push(Output::Connect {
            link: LinkId(link),
            peer: to,
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

fn close(sim: &mut Sim<Puppet>, from: NodeId, link: u64) {
    sim.act(from, |p, _| p.push(Output::Close { link: LinkId(link) }));
}

/// A and B with one established link: A's `LinkId(1)`, B's `LinkId(100)`, at time 0.
fn connected_pair(link_latency: Duration) -> Sim<Puppet> {
    let mut sim = sim(
        SimSettings {
            link_latency,
            ..SimSettings::default()
        },
        &[1, 2],
    );
    dial(&mut sim, A, 1, B, "sim://0x2");
    sim.run_until_idle();
    assert_eq!(sim.open_links(A, B), 1);
    sim
}

#[test]
fn a_dial_resolves_after_the_connect_latency_acceptor_first() {
    let mut sim = sim(
        SimSettings {
            connect_latency: Duration::from_millis(5),
            ..SimSettings::default()
        },
        &[1, 2],
    );
    dial(&mut sim, A, 1, B, "sim://0x2");
    sim.run_until_idle();
    assert_eq!(inputs(&sim, A), vec![]);
    assert_eq!(inputs(&sim, B), vec![]);
    assert_eq!(sim.open_links(A, B), 0);

    assert_eq!(sim.advance_to_next_deadline(), Some(ms(5)));
    assert_eq!(inputs(&sim, B), vec![(ms(5), Input::Accepted(LinkId(100)))]);
    assert_eq!(inputs(&sim, A), vec![(ms(5), Input::Connected(LinkId(1)))]);
    assert_eq!(sim.open_links(A, B), 1);
    assert_eq!(sim.open_links(B, A), 1);
    let tail: Vec<&str> = sim.trace()[sim.trace().len() - 2..]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(
        tail,
        [
            "0.005000000s 0x2 <- accepted link#100 (from 0x1)",
            "0.005000000s 0x1 <- connected link#1",
        ]
    );
    assert_eq!(sim.advance_to_next_deadline(), None);
    assert_eq!(sim.now(), ms(5));
}

#[test]
fn bytes_arrive_in_order_after_the_latency_and_never_overtake() {
    let mut sim = connected_pair(Duration::from_millis(10));
    transmit(&mut sim, A, 1, b"ab");
    transmit(&mut sim, A, 1, b"cd");
    sim.advance(Duration::from_millis(3));
    transmit(&mut sim, A, 1, b"ef");
    // A shorter latency for later bytes must not let them overtake.
    sim.set_latency(A, B, Duration::from_millis(1));
    transmit(&mut sim, A, 1, b"gh");
    sim.advance(Duration::from_millis(9));
    assert_eq!(sim.now(), ms(12));
    let rx = |s: &[u8]| Input::Received(LinkId(100), s.to_vec());
    assert_eq!(
        inputs(&sim, B),
        vec![
            (ms(0), Input::Accepted(LinkId(100))),
            (ms(10), rx(b"ab")),
            (ms(10), rx(b"cd")),
        ]
    );
    sim.advance(Duration::from_millis(1));
    assert_eq!(
        inputs(&sim, B)[3..],
        [(ms(13), rx(b"ef")), (ms(13), rx(b"gh"))]
    );
    // The other direction has its own queue and the new latency.
    transmit(&mut sim, B, 100, b"back");
    sim.advance(Duration::from_millis(1));
    assert_eq!(
        inputs(&sim, A),
        vec![
            (ms(0), Input::Connected(LinkId(1))),
            (ms(14), Input::Received(LinkId(1), b"back".to_vec())),
        ]
    );
}

#[test]
fn a_close_reaches_the_peer_after_the_bytes_in_flight_and_not_the_closer() {
    let mut sim = connected_pair(Duration::from_millis(10));
    transmit(&mut sim, A, 1, b"last");
    close(&mut sim, A, 1);
    // B writes before it hears about the close: A has closed its end, the bytes are lost.
    transmit(&mut sim, B, 100, b"late");
    sim.advance(Duration::from_millis(20));
    assert_eq!(
        inputs(&sim, B),
        vec![
            (ms(0), Input::Accepted(LinkId(100))),
            (ms(10), Input::Received(LinkId(100), b"last".to_vec())),
            (ms(10), Input::Closed(LinkId(100))),
        ]
    );
    assert_eq!(inputs(&sim, A), vec![(ms(0), Input::Connected(LinkId(1)))]);
    assert_eq!(sim.dropped_bytes(), 4);
    assert_eq!(sim.open_links(A, B), 0);
    assert_eq!(sim.violations(), [] as [String; 0]);
}

#[test]
fn link_down_closes_both_sides_at_once_and_fails_dials_until_link_up() {
    let mut sim = connected_pair(Duration::from_millis(10));
    transmit(&mut sim, A, 1, b"zz");
    sim.advance(Duration::from_millis(1));
    sim.link_down(A, B);
    assert_eq!(
        inputs(&sim, A),
        vec![
            (ms(0), Input::Connected(LinkId(1))),
            (ms(1), Input::Closed(LinkId(1))),
        ]
    );
    assert_eq!(
        inputs(&sim, B),
        vec![
            (ms(0), Input::Accepted(LinkId(100))),
            (ms(1), Input::Closed(LinkId(100))),
        ]
    );
    sim.advance(Duration::from_millis(20));
    assert_eq!(sim.dropped_bytes(), 2, "bytes in flight are lost");
    assert_eq!(inputs(&sim, B).len(), 2);

    dial(&mut sim, A, 2, B, "sim://0x2");
    sim.run_until_idle();
    assert_eq!(
        inputs(&sim, A).last(),
        Some(&(ms(21), Input::ConnectFailed(LinkId(2))))
    );
    sim.link_up(A, B);
    dial(&mut sim, B, 7, A, "sim://0x1");
    sim.run_until_idle();
    assert_eq!(
        inputs(&sim, A).last(),
        Some(&(ms(21), Input::Accepted(LinkId(100))))
    );
    assert_eq!(
        inputs(&sim, B).last(),
        Some(&(ms(21), Input::Connected(LinkId(7))))
    );
    assert_eq!(sim.open_links(A, B), 1);
}

#[test]
fn cut_drops_the_links_but_not_later_dials() {
    let mut sim = connected_pair(Duration::ZERO);
    dial(&mut sim, B, 8, A, "sim://0x1");
    sim.run_until_idle();
    assert_eq!(sim.open_links(A, B), 2);
    sim.cut(A, B);
    // Both sides hear it during the call: dialer side first, links in creation order.
    let tail: Vec<&str> = sim.trace()[sim.trace().len() - 5..]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(
        tail,
        [
            "0.000000000s sim cut 0x1 <-> 0x2",
            "0.000000000s 0x1 <- closed link#1",
            "0.000000000s 0x2 <- closed link#100",
            "0.000000000s 0x2 <- closed link#8",
            "0.000000000s 0x1 <- closed link#100",
        ]
    );
    dial(&mut sim, A, 2, B, "sim://0x2");
    sim.run_until_idle();
    assert_eq!(
        inputs(&sim, A).last(),
        Some(&(ms(0), Input::Connected(LinkId(2))))
    );
    assert_eq!(sim.open_links(A, B), 1);
}

#[test]
fn fail_next_connect_fails_exactly_one_dial_in_that_direction() {
    let mut sim = sim(SimSettings::default(), &[1, 2]);
    sim.fail_next_connect(A, B);
    dial(&mut sim, B, 1, A, "sim://0x1");
    dial(&mut sim, A, 1, B, "sim://0x2");
    dial(&mut sim, A, 2, B, "sim://0x2");
    sim.run_until_idle();
    assert_eq!(
        inputs(&sim, A),
        vec![
            (ms(0), Input::Accepted(LinkId(100))),
            (ms(0), Input::ConnectFailed(LinkId(1))),
            (ms(0), Input::Connected(LinkId(2))),
        ]
    );
    assert_eq!(
        inputs(&sim, B),
        vec![
            (ms(0), Input::Connected(LinkId(1))),
            (ms(0), Input::Accepted(LinkId(100))),
        ]
    );
    assert_eq!(sim.open_links(A, B), 2);
}

#[test]
fn dialing_an_unknown_address_fails_after_the_connect_latency() {
    let mut sim = sim(
        SimSettings {
            connect_latency: Duration::from_millis(2),
            ..SimSettings::default()
        },
        &[1],
    );
    dial(&mut sim, A, 1, NodeId(9), "sim://0x9");
    sim.advance(Duration::from_millis(5));
    assert_eq!(
        inputs(&sim, A),
        vec![(ms(2), Input::ConnectFailed(LinkId(1)))]
    );
    assert!(
        sim.trace().iter().any(
            |l| l == "0.002000000s 0x1 <- connect failed link#1 to sim://0x9 (unknown address)"
        ),
        "{}",
        sim.trace_tail(5)
    );
}

#[test]
fn a_dial_cancelled_by_the_dialer_never_reaches_the_target() {
    let mut sim = sim(
        SimSettings {
            connect_latency: Duration::from_millis(2),
            ..SimSettings::default()
        },
        &[1, 2],
    );
    dial(&mut sim, A, 1, B, "sim://0x2");
    close(&mut sim, A, 1);
    sim.advance(Duration::from_millis(5));
    assert_eq!(inputs(&sim, A), vec![]);
    assert_eq!(inputs(&sim, B), vec![]);
}

#[test]
fn per_pair_connect_latency_overrides_the_default() {
    let mut sim = sim(
        SimSettings {
            connect_latency: Duration::from_millis(2),
            ..SimSettings::default()
        },
        &[1, 2, 3],
    );
    sim.set_connect_latency(B, A, Duration::from_millis(7));
    dial(&mut sim, A, 1, B, "sim://0x2");
    dial(&mut sim, A, 2, C, "sim://0x3");
    sim.advance(Duration::from_millis(10));
    assert_eq!(
        inputs(&sim, A),
        vec![
            (ms(2), Input::Connected(LinkId(2))),
            (ms(7), Input::Connected(LinkId(1))),
        ]
    );
}

#[test]
fn timers_fire_at_their_exact_deadlines_in_order() {
    let mut sim = sim(SimSettings::default(), &[1, 2]);
    sim.act(A, |p, _| {
        p.deadline = Some(Instant::from_secs(3));
        p.timer_plan.push_back(Instant::from_secs(5));
    });
    sim.act(B, |p, _| p.deadline = Some(Instant::from_secs(1)));
    assert_eq!(sim.deadline(A), Some(Instant::from_secs(3)));
    assert_eq!(sim.next_event_time(), Some(Instant::from_secs(1)));
    sim.advance(Duration::from_secs(10));
    assert_eq!(sim.now(), Instant::from_secs(10));
    assert_eq!(
        inputs(&sim, A),
        vec![
            (Instant::from_secs(3), Input::Timeout),
            (Instant::from_secs(5), Input::Timeout),
        ]
    );
    assert_eq!(
        inputs(&sim, B),
        vec![(Instant::from_secs(1), Input::Timeout)]
    );
    assert_eq!(sim.deadline(A), None);
    assert_eq!(sim.advance_to_next_deadline(), None);
}

#[test]
fn advance_to_next_deadline_visits_each_deadline() {
    let mut sim = sim(SimSettings::default(), &[1, 2]);
    sim.act(A, |p, _| {
        p.deadline = Some(Instant::from_secs(3));
        p.timer_plan.push_back(Instant::from_secs(5));
    });
    sim.act(B, |p, _| p.deadline = Some(Instant::from_secs(1)));
    let visited: Vec<Option<Instant>> = (0..4).map(|_| sim.advance_to_next_deadline()).collect();
    assert_eq!(
        visited,
        [
            Some(Instant::from_secs(1)),
            Some(Instant::from_secs(3)),
            Some(Instant::from_secs(5)),
            None
        ]
    );
}

#[test]
fn deliveries_come_before_timers_at_the_same_instant() {
    let mut sim = connected_pair(Duration::from_millis(10));
    sim.act(A, |p, _| p.deadline = Some(ms(10)));
    transmit(&mut sim, B, 100, b"io");
    sim.advance(Duration::from_millis(10));
    assert_eq!(
        inputs(&sim, A)[1..],
        [
            (ms(10), Input::Received(LinkId(1), b"io".to_vec())),
            (ms(10), Input::Timeout),
        ]
    );
}

#[test]
fn the_registry_assigns_monotonic_revisions_and_fans_out_as_told() {
    let mut sim = sim(SimSettings::default(), &[1, 2]);
    let rev1 = sim.registry_put_discovery(discovery_info(A, "a"));
    let rev2 = sim.registry_put_topology_with(
        topology_info(A, "a", B),
        Fanout::only([B]).after(Duration::from_secs(2)),
    );
    let rev3 = sim.registry_delete_discovery(A);
    let rev4 = sim.registry_delete_topology_with(A, Fanout::only([A]));
    assert_eq!((rev1, rev2, rev3, rev4), (1, 2, 3, 4));
    assert_eq!(sim.registry().revision(), 4);
    assert_eq!(sim.registry().discovery(A), None);

    let put = {
        let mut info = discovery_info(A, "a");
        info.revision = 1;
        RegistryEvent::DiscoveryPut(info.into())
    };
    let delete = RegistryEvent::DiscoveryDelete {
        id: A,
        name: String::from("a"),
        revision: 3,
    };
    let mut topo = topology_info(A, "a", B);
    topo.revision = 2;
    assert_eq!(
        inputs(&sim, A),
        vec![
            (ms(0), Input::Registry(put.clone())),
            (ms(0), Input::Registry(delete.clone())),
            (
                ms(0),
                Input::Registry(RegistryEvent::TopologyDelete { id: A, revision: 4 })
            ),
        ]
    );
    assert_eq!(
        inputs(&sim, B),
        vec![
            (ms(0), Input::Registry(put)),
            (ms(0), Input::Registry(delete)),
        ]
    );
    sim.advance(Duration::from_secs(2));
    assert_eq!(
        inputs(&sim, B).last(),
        Some(&(
            Instant::from_secs(2),
            Input::Registry(RegistryEvent::TopologyPut(topo.into()))
        ))
    );
    assert_eq!(inputs(&sim, A).len(), 3);
}

#[test]
fn a_new_node_gets_the_registry_snapshot_topology_first() {
    let mut sim = sim(SimSettings::default(), &[1]);
    sim.registry_put_discovery(discovery_info(B, "b"));
    sim.registry_put_topology(topology_info(B, "b", A));
    sim.registry_put_discovery(discovery_info(A, "a"));
    sim.add_node(PuppetConfig::new(3)).unwrap();
    let got: Vec<(String, u64)> = inputs(&sim, C)
        .into_iter()
        .map(|(_, input)| match input {
            Input::Registry(RegistryEvent::TopologyPut(t)) => {
                (alloc::format!("topo {}", t.id), t.revision)
            }
            Input::Registry(RegistryEvent::DiscoveryPut(d)) => {
                (alloc::format!("disc {}", d.id), d.revision)
            }
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        [
            (String::from("topo 0x2"), 2),
            (String::from("disc 0x1"), 3),
            (String::from("disc 0x2"), 1),
        ]
    );
}

#[test]
fn kill_drops_links_and_restart_starts_a_new_incarnation() {
    let mut sim = connected_pair(Duration::from_millis(10));
    transmit(&mut sim, A, 1, b"lost");
    sim.registry_put_discovery_with(
        discovery_info(A, "a"),
        Fanout::only([B]).after(Duration::from_secs(1)),
    );
    sim.kill(B);
    assert!(!sim.is_alive(B));
    sim.run_until_idle();
    assert_eq!(
        inputs(&sim, A),
        vec![
            (ms(0), Input::Connected(LinkId(1))),
            (ms(0), Input::Closed(LinkId(1))),
        ]
    );
    dial(&mut sim, A, 2, B, "sim://0x2");
    sim.run_until_idle();
    assert_eq!(
        inputs(&sim, A).last(),
        Some(&(ms(0), Input::ConnectFailed(LinkId(2))))
    );

    sim.advance(Duration::from_millis(500));
    sim.restart(B);
    assert!(sim.is_alive(B));
    // The new incarnation got the snapshot; the event addressed to the old one is dropped.
    let mut snap = discovery_info(A, "a");
    snap.revision = 1;
    assert_eq!(
        inputs(&sim, B),
        vec![(
            ms(500),
            Input::Registry(RegistryEvent::DiscoveryPut(snap.into()))
        )]
    );
    sim.advance(Duration::from_secs(2));
    assert_eq!(inputs(&sim, B).len(), 1);
    assert_eq!(sim.dropped_bytes(), 4);
    // The restarted node reuses link ids; the simulator keeps them apart.
    dial(&mut sim, A, 3, B, "sim://0x2");
    sim.run_until_idle();
    assert_eq!(
        inputs(&sim, B).last(),
        Some(&(ms(2500), Input::Accepted(LinkId(100))))
    );
    transmit(&mut sim, A, 3, b"new");
    sim.advance(Duration::from_millis(10));
    assert_eq!(
        inputs(&sim, B).last(),
        Some(&(ms(2510), Input::Received(LinkId(100), b"new".to_vec())))
    );
}

#[test]
fn sends_received_messages_and_outcomes_are_logged_with_their_time() {
    let mut sim = sim(SimSettings::default(), &[1, 2]);
    sim.advance(Duration::from_secs(1));
    let msg = sim.send_to(A, B, 7, &b"payload"[..]).unwrap();
    assert_eq!(msg, MsgId(1));
    assert_eq!(
        inputs(&sim, A),
        vec![(
            Instant::from_secs(1),
            Input::Send(7, Bytes::from_static(b"payload"))
        )]
    );
    assert_eq!(sim.log(A).unresolved(), [MsgId(1)]);
    sim.advance(Duration::from_secs(1));
    sim.act(A, |p, _| {
        p.push(Output::Outcome {
            msg: MsgId(1),
            outcome: Outcome::Delivered,
        });
    });
    sim.act(B, |p, _| {
        p.push(Output::Received {
            from: A,
            via: C,
            msg_type: 7,
            payload: Bytes::from_static(b"payload"),
        });
    });
    assert_eq!(sim.sent(A).len(), 1);
    assert_eq!(sim.sent(A)[0].at, Instant::from_secs(1));
    assert_eq!(
        sim.outcome_of(A, MsgId(1)).map(|o| (o.at, o.outcome)),
        Some((Instant::from_secs(2), Outcome::Delivered))
    );
    assert_eq!(sim.log(A).unresolved(), [] as [MsgId; 0]);
    let rx = &sim.received(B)[0];
    assert_eq!(
        (rx.at, rx.from, rx.via, rx.msg_type, &rx.payload[..]),
        (Instant::from_secs(2), A, C, 7, &b"payload"[..])
    );
    let by_name = sim
        .send(A, Select::Name("b".into()), 8, Bytes::new())
        .unwrap();
    assert_eq!(by_name, MsgId(2));
}

#[test]
fn outcome_contract_breaches_are_recorded_when_not_strict() {
    let mut sim = sim(
        SimSettings {
            strict: false,
            ..SimSettings::default()
        },
        &[1],
    );
    let msg = sim.send_to(A, B, 1, Bytes::new()).unwrap();
    sim.act(A, |p, _| {
        for m in [msg, msg, MsgId(9)] {
            p.push(Output::Outcome {
                msg: m,
                outcome: Outcome::Delivered,
            });
        }
        p.push(Output::Transmit {
            link: LinkId(4),
            bytes: Bytes::from_static(b"?"),
        });
    });
    assert_eq!(
        sim.violations(),
        [
            "0x1 reported a second outcome for msg#1",
            "0x1 reported an outcome for msg#9, which send never returned",
            "0x1 transmitted on link#4, which it never opened",
        ]
    );
    assert_eq!(sim.outcomes(A).len(), 3);
}

#[test]
#[should_panic(expected = "node contract violated: 0x1 transmitted on link#1 before it connected")]
fn strict_mode_panics_at_the_first_violation() {
    let mut sim = sim(
        SimSettings {
            connect_latency: Duration::from_millis(1),
            ..SimSettings::default()
        },
        &[1, 2],
    );
    dial(&mut sim, A, 1, B, "sim://0x2");
    transmit(&mut sim, A, 1, b"early");
}

#[test]
#[should_panic(expected = "still reports a deadline at or before 2.000000000s")]
fn a_timer_that_never_clears_is_reported() {
    let mut sim = sim(SimSettings::default(), &[1]);
    sim.act(A, |p, _| {
        p.deadline = Some(Instant::from_secs(2));
        p.stuck = true;
    });
    sim.advance(Duration::from_secs(3));
}

#[test]
#[should_panic(expected = "sim: not idle after 500 steps at 0.000000000s")]
fn a_livelock_between_nodes_is_reported() {
    let mut sim: Sim<Puppet> = Sim::with_settings(SimSettings {
        step_limit: 500,
        ..SimSettings::default()
    });
    for id in [1, 2] {
        sim.add_node(PuppetConfig {
            echo: true,
            ..PuppetConfig::new(id)
        })
        .unwrap();
    }
    dial(&mut sim, A, 1, B, "sim://0x2");
    sim.run_until_idle();
    transmit(&mut sim, A, 1, b"ping");
    sim.run_until_idle();
}

/// A script touching every feature; run twice it must give the same trace and logs.
fn scripted_run() -> (Vec<String>, Inputs, Inputs) {
    let mut sim = sim(
        SimSettings {
            connect_latency: Duration::from_millis(3),
            link_latency: Duration::from_millis(2),
            ..SimSettings::default()
        },
        &[1, 2, 3],
    );
    sim.registry_put_discovery(discovery_info(A, "a"));
    sim.registry_put_topology_with(
        topology_info(C, "c", A),
        Fanout::only([C, B]).after(Duration::from_millis(4)),
    );
    dial(&mut sim, A, 1, B, "sim://0x2");
    dial(&mut sim, C, 1, A, "sim://0x1");
    sim.fail_next_connect(B, C);
    dial(&mut sim, B, 5, C, "sim://0x3");
    sim.act(C, |p, _| p.deadline = Some(ms(6)));
    sim.advance(Duration::from_millis(3));
    transmit(&mut sim, A, 1, b"one");
    transmit(&mut sim, C, 1, b"two");
    sim.advance_to_next_deadline();
    sim.cut(A, C);
    sim.advance(Duration::from_millis(10));
    sim.kill(B);
    sim.restart(B);
    sim.advance(Duration::from_millis(10));
    (sim.trace().to_vec(), inputs(&sim, A), inputs(&sim, C))
}

#[test]
fn the_same_script_gives_the_same_trace() {
    let first = scripted_run();
    let second = scripted_run();
    assert_eq!(first, second);
    assert!(first.0.len() > 30, "{}", first.0.join("\n"));
}
