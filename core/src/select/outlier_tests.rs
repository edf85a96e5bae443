//! Outlier ejection on virtual time: exact ejection instants and lengths, probes, decay,
//! the cap, the success-rate rule, the switch.

use alloc::{format, vec::Vec};

use super::*;
use crate::{
    config::OutlierConfig,
    discovery::{Filter, Metadata},
    ring::{RingConfig, RingMember},
    time::{Duration, Instant},
};

const S: NodeId = NodeId(7);

fn secs(s: u64) -> Instant {
    Instant::from_secs(s)
}

/// `n` failures of `server` at `now`, always room; whether the last one ejected it.
fn fail(outliers: &mut Outliers, now: Instant, server: NodeId, n: u32) -> bool {
    (0..n).fold(false, |_, _| outliers.record(now, server, false, |_| true))
}

/// The instant `server` ejected at `from` is un-ejected: the first whole nanosecond it is not.
fn ejected_until(outliers: &Outliers, server: NodeId, from: Instant) -> Duration {
    let mut probe = Duration::from_secs(1);
    while outliers.is_ejected(from + probe, server) {
        probe += Duration::from_secs(1);
    }
    assert!(outliers.is_ejected(from + probe - Duration::from_nanos(1), server));
    probe
}

/// A server failing every attempt: ejected by the 5th failure exactly, for exactly 30 s;
/// its probe fails and it is ejected again at once for 60 s, then 90 s, ... capped at 300 s.
#[test]
fn a_server_failing_every_attempt_is_ejected_for_longer_each_time_up_to_the_cap() {
    let mut outliers = Outliers::new(OutlierConfig::default());
    let t = secs(100);
    assert!(!fail(&mut outliers, t, S, 4));
    assert!(!outliers.is_ejected(t, S));
    assert!(fail(&mut outliers, t, S, 1));
    assert!(outliers.is_ejected(t, S));
    assert_eq!(ejected_until(&outliers, S, t), Duration::from_secs(30));
    // Outcomes of attempts made before the ejection change nothing.
    assert!(!fail(&mut outliers, t + Duration::from_secs(29), S, 3));
    let mut at = t + Duration::from_secs(30);
    let mut lengths = Vec::new();
    for _ in 0..11 {
        assert!(!outliers.is_ejected(at, S)); // probing: picked again
        assert!(fail(&mut outliers, at, S, 1)); // its probe fails: ejected at once
        let length = ejected_until(&outliers, S, at);
        lengths.push(length.as_secs());
        at += length;
    }
    assert_eq!(
        lengths,
        [60, 90, 120, 150, 180, 210, 240, 270, 300, 300, 300]
    );
    let stats = outliers.stats(at - Duration::from_nanos(1));
    assert_eq!(
        (
            stats.ejections,
            stats.probes_failed,
            stats.restored,
            stats.ejected
        ),
        (12, 11, 0, 1)
    );
    assert_eq!(outliers.stats(at).ejected, 0);
}

/// A probe that succeeds restores the server: four failures do not eject it, the fifth
/// does — for 60 s while its count has not decayed, for 30 s once it stayed restored one
/// interval (10 s).
#[test]
fn a_probe_success_restores_the_server_and_its_count_decays_by_interval() {
    let mut outliers = Outliers::new(OutlierConfig::default());
    fail(&mut outliers, secs(0), S, 5);
    assert!(!outliers.record(secs(30), S, true, |_| true));
    assert_eq!(outliers.stats(secs(30)).restored, 1);
    assert!(!fail(&mut outliers, secs(39), S, 4));
    assert!(fail(&mut outliers, secs(39), S, 1));
    assert_eq!(
        ejected_until(&outliers, S, secs(39)),
        Duration::from_secs(60)
    );

    let mut outliers = Outliers::new(OutlierConfig::default());
    fail(&mut outliers, secs(0), S, 5);
    outliers.record(secs(30), S, true, |_| true);
    assert!(fail(&mut outliers, secs(40), S, 5));
    assert_eq!(
        ejected_until(&outliers, S, secs(40)),
        Duration::from_secs(30)
    );
}

/// A success between failures resets the count: 4 failures, a success, 4 failures eject
/// nothing; a server back to a clean record is forgotten.
#[test]
fn a_success_resets_the_consecutive_count() {
    let mut outliers = Outliers::new(OutlierConfig::default());
    fail(&mut outliers, secs(1), S, 4);
    outliers.record(secs(1), S, true, |_| true);
    assert!(!fail(&mut outliers, secs(1), S, 4));
    outliers.record(secs(1), S, true, |_| true);
    assert!(outliers.servers.is_empty());
    assert_eq!(outliers.stats(secs(1)), OutlierStats::default());
}

/// Switched off, nothing is recorded nor ejected.
#[test]
fn switched_off_nothing_is_ejected() {
    let mut outliers = Outliers::new(OutlierConfig::disabled());
    assert!(!fail(&mut outliers, secs(1), S, 50));
    assert!(!outliers.is_ejected(secs(1), S));
    assert!(outliers.servers.is_empty());
}

/// The success-rate rule (80 % over at least 10 attempts in 10 s): 7 successes and 3
/// failures eject at the 10th attempt; the same spread over two windows does not.
#[test]
fn the_success_rate_rule_judges_a_window_of_enough_attempts() {
    let config = OutlierConfig {
        success_rate_percent: 80,
        success_rate_min_requests: 10,
        ..OutlierConfig::default()
    };
    let pattern = [
        true, false, true, true, false, true, true, false, true, true,
    ];
    let mut outliers = Outliers::new(config);
    let ejections: Vec<bool> = (pattern.iter())
        .map(|&ok| outliers.record(secs(1), S, ok, |_| true))
        .collect();
    assert_eq!(ejections.iter().filter(|&&e| e).count(), 1);
    assert_eq!(ejections.last(), Some(&true));

    let mut outliers = Outliers::new(config);
    for (i, &ok) in pattern.iter().enumerate() {
        let at = if i < 5 { secs(1) } else { secs(11) };
        assert!(!outliers.record(at, S, ok, |_| true));
    }
}

/// A filter of `n` members 1..=n (all "game" nodes).
fn filter_of(n: u64) -> RingSet {
    let game = Metadata {
        kind: "game".into(),
        ..Metadata::default()
    };
    let mut set = RingSet::new(RingConfig::fast());
    set.add_filter(Filter(game.clone()));
    for id in 1..=n {
        let name = format!("n{id}");
        set.insert(RingMember::new(NodeId(id), &name), &game)
            .unwrap();
    }
    set
}

/// The cap: of 20 servers failing every attempt at most 2 (10 %) are ejected at once, of 5
/// at most 1 (at least one, as Envoy); a refused ejection is counted, and the server is
/// ejected by a failure once another's ejection ended.
#[test]
fn at_most_ten_percent_of_a_filter_is_ejected_but_always_one() {
    for (members, cap) in [(20, 2), (5, 1), (1, 1)] {
        let set = filter_of(members);
        let mut sel = Selector::new();
        let t = secs(1);
        let mut ejected = 0;
        for id in 1..=members {
            for _ in 0..5 {
                ejected += u64::from(sel.server_outcome(t, NodeId(id), false, &set));
            }
        }
        let stats = sel.outliers().stats(t);
        assert_eq!((ejected, stats.ejected), (cap, cap), "{members} members");
        assert_eq!(stats.ejections_refused, members - cap, "{members} members");
        // The first ejections end at 31 s: the refused servers' next failure ejects them.
        if members > 1 {
            let later = secs(31);
            assert!(sel.server_outcome(later, NodeId(members), false, &set));
        }
    }
}

/// Ejected servers are passed over by `pick_usable` while another one is usable; with every
/// candidate ejected, the first pick is still made.
#[test]
fn picks_pass_over_ejected_servers_unless_all_are() {
    let set = filter_of(3);
    let filter = set.filter_ids().next();
    let among = Among {
        rings: &set,
        filter,
    };
    let mut outliers = Outliers::new(OutlierConfig {
        max_ejection_percent: 100,
        ..OutlierConfig::default()
    });
    let (mut sel, mut rng, t) = (Selector::new(), Rng::new(1), secs(1));
    fail(&mut outliers, t, NodeId(1), 5);
    let mut picks = Vec::new();
    for _ in 0..4 {
        let usable = |id| !outliers.is_ejected(t, id);
        let pick = sel.pick_usable(&Select::RoundRobin, among, &mut rng, |_| 0, &[], usable);
        picks.push(pick.unwrap().0);
    }
    assert_eq!(picks, [2, 3, 2, 3]);
    fail(&mut outliers, t, NodeId(2), 5);
    fail(&mut outliers, t, NodeId(3), 5);
    let usable = |id| !outliers.is_ejected(t, id);
    let pick = sel.pick_usable(&Select::RoundRobin, among, &mut rng, |_| 0, &[], usable);
    assert!(pick.is_some());
}
