//! A link's deadlines on the simulator, end to end through two real nodes: a half-open link
//! (bytes stop arriving, no close is ever seen) is closed on both sides at exactly
//! last heard + `heartbeat_interval` × `heartbeat_dead_after` (defaults 1.5 s × 3); the redial
//! that follows, whose handshake cannot get through either, is closed on both sides at exactly
//! `handshake_timeout` (default 10 s) after its connect and accept, and the dialler treats it as
//! a failed dial: it redials after its backoff.

mod common;

use common::node_config;
use switchboard_core::{
    ids::NodeId,
    node::{Event, LinkError},
    sim::Sim,
    time::{Duration, Instant},
};

const ROOT: NodeId = NodeId(0x801);
const CHILD: NodeId = NodeId(0x802);

/// Where the link machine's verdicts show: (instant, event) of every heartbeat or handshake
/// verdict on `id`.
fn verdicts(sim: &Sim, id: NodeId) -> Vec<(Instant, Event)> {
    sim.events(id)
        .iter()
        .filter(|(_, e)| {
            matches!(
                e,
                Event::HandshakeTimedOut { .. }
                    | Event::LinkRejected {
                        reason: LinkError::HeartbeatTimeout(_),
                        ..
                    }
            )
        })
        .cloned()
        .collect()
}

#[test]
fn a_half_open_link_and_the_stalled_redial_close_at_their_exact_deadlines() {
    let mut sim = Sim::new();
    sim.add_node(node_config(ROOT.0, 0)).unwrap();
    sim.add_node(node_config(CHILD.0, ROOT.0)).unwrap();
    sim.run_until_idle();
    assert_eq!(sim.open_links(ROOT, CHILD), 1);
    let up = sim.now();
    // From now on nothing sent between them arrives within the test (a half-open path).
    sim.set_latency(ROOT, CHILD, Duration::from_secs(3_600));
    sim.advance(Duration::from_secs(30));
    let secs = |ms: u64| up + Duration::from_millis(ms);
    let dead = |link| Event::LinkRejected {
        link,
        reason: LinkError::HeartbeatTimeout(3),
    };
    let timed_out = |link, dialed| Event::HandshakeTimedOut { link, dialed };
    // Dials: the first at 0; after the heartbeat verdict at 4.5 s the reconnect backoff
    // (start 1 s) redials at 5.5 s; that handshake times out at 15.5 s, which counts as a
    // failed dial: the next waits the doubled backoff, 2 s, and times out at 27.5 s.
    let dials: Vec<(Instant, Option<bool>)> = sim
        .dials(CHILD)
        .iter()
        .map(|d| (d.at, d.connected))
        .collect();
    assert_eq!(
        dials,
        [
            (secs(0), Some(true)),
            (secs(5_500), Some(true)),
            (secs(17_500), Some(true)),
        ]
    );
    let links: Vec<_> = sim.dials(CHILD).iter().map(|d| d.link).collect();
    assert_eq!(
        verdicts(&sim, CHILD),
        [
            (secs(4_500), dead(links[0])),
            (secs(15_500), timed_out(links[1], Some(ROOT))),
            (secs(27_500), timed_out(links[2], Some(ROOT))),
        ]
    );
    // The root accepted each dial at its instant (no connect latency) and gave up on the
    // same deadlines.
    let root = verdicts(&sim, ROOT);
    let at: Vec<Instant> = root.iter().map(|(at, _)| *at).collect();
    assert_eq!(at, [secs(4_500), secs(15_500), secs(27_500)]);
    assert!(matches!(
        root[0].1,
        Event::LinkRejected {
            reason: LinkError::HeartbeatTimeout(3),
            ..
        }
    ));
    for (_, event) in &root[1..] {
        assert!(
            matches!(event, Event::HandshakeTimedOut { dialed: None, .. }),
            "{event:?}"
        );
    }
    assert_eq!(sim.open_links(ROOT, CHILD), 0);
}
