//! Connector unit tests: the ready/unready/removal cascade through proxies, topology switches
//! and the corrections that concern them.

use alloc::{vec, vec::Vec};

use super::{routing::*, *};
use crate::topology::PeerData;

/// 0x601 → proxy 0x602 ← 0x603 (group F), 0x601's record for 0x603 routed through 0x602.
fn group_f() -> H {
    let mut h = H::new(0x601, 0x602, 3, false);
    h.topo_put(0x603, 0x602);
    h.open(0x603).unwrap();
    h.effects();
    h
}

#[test]
fn proxy_ready_cascades_to_dependents() {
    // F.2
    let mut h = group_f();
    assert_eq!(h.flags(0x603), A);
    h.up(0x602);
    assert_eq!(
        h.effects(),
        vec![ready(0x602, None), ready(0x603, Some(0x602))]
    );
    assert_eq!((h.flags(0x602), h.flags(0x603)), (R, A | R));
}

#[test]
fn proxy_unready_cascades_to_dependents() {
    // F.3: the dependent loses READY with its proxy; only the proxy's own record arms a
    // timer.
    let mut h = group_f();
    h.c.records.get_mut(&n(0x602)).unwrap().flags.set(A, true);
    h.up(0x602);
    h.effects();
    h.now = t(3);
    h.down(0x602);
    assert_eq!(
        h.effects(),
        vec![unready(0x602), unready(0x603), scheduled(0x602, 1, t(5))]
    );
    assert_eq!((h.flags(0x602), h.flags(0x603)), (A, A));
    assert_eq!(
        (h.view(0x602).timer, h.view(0x603).timer),
        (Some(t(5)), None)
    );
}

#[test]
fn removing_the_proxy_removes_its_dependents_with_no_route() {
    // F.4 / A.6: the upstream record runs out of tries; everything routed through it goes,
    // each dependent's queue failing at once.
    let mut h = group_f();
    h.open(0x602).unwrap();
    h.up(0x602);
    h.down(0x602);
    h.effects();
    h.at(t(2));
    h.at(t(6));
    h.at(t(14));
    assert_eq!(
        h.effects(),
        vec![
            scheduled(0x602, 2, t(6)),
            scheduled(0x602, 3, t(14)),
            removed(0x602, FailReason::NoRoute, true),
            removed(0x603, FailReason::NoRoute, true),
        ]
    );
    assert!(h.c.is_empty());
    assert_eq!(h.c.timer_count(), 0);
}

#[test]
fn dependent_removed_first_then_proxy_is_safe() {
    // F.5: the dependent goes first (lost deadline), then the proxy; the proxy's set no
    // longer names it and nothing dangles.
    let mut h = group_f();
    h.open(0x602).unwrap();
    h.topo_del(0x603);
    h.at(t(32));
    assert!(!h.has(0x603));
    assert_eq!(h.view(0x602).proxy_for, Vec::<NodeId>::new());
    h.effects();
    h.topo_put(0x602, 0);
    h.topo_del(0x602);
    h.at(t(64));
    assert_eq!(
        h.effects(),
        vec![
            // The upstream's own record arrives: it is re-evaluated, unready, timer armed.
            scheduled(0x602, 1, t(34)),
            Effect::Route(RouteEvent::TopologyLost {
                target: n(0x602),
                deadline: t(64)
            }),
            removed(0x602, FailReason::TargetGone, true)
        ]
    );
    assert!(h.c.is_empty());
}

#[test]
fn cascades_skip_dependents_that_moved_to_another_proxy() {
    let mut h = group_f();
    // A stale entry: 0x603 is re-bound elsewhere but 0x602 still lists it.
    h.c.records.get_mut(&n(0x603)).unwrap().proxy = n(0x6ff);
    h.up(0x602);
    assert_eq!(h.effects(), vec![ready(0x602, None)]);
    assert_eq!(h.view(0x602).proxy_for, Vec::<NodeId>::new(), "pruned");
    assert_eq!(h.flags(0x603), A);
}

#[test]
fn seamless_switch_when_the_new_upstream_is_already_ready() {
    // D.2: target 0x404 is reached through its upstream 0x405 (the policy refuses 0x404
    // itself); it moves under 0x403, whose record is ready: re-bound with no gap.
    let mut h = H::new(0x401, 0x402, 2, true);
    h.c.policy
        .match_label
        .insert("zone".into(), vec!["a".into()]);
    let zone = |z: &str| PeerData {
        labels: [(
            alloc::string::String::from("zone"),
            alloc::string::String::from(z),
        )]
        .into(),
        ..PeerData::default()
    };
    h.topo_put_data(0x405, 0, zone("a"));
    h.topo_put_data(0x403, 0, zone("a"));
    h.topo_put_data(0x404, 0x405, zone("b"));
    h.disc_put(0x405);
    h.disc_put(0x403);
    h.open(0x404).unwrap();
    h.open(0x403).unwrap();
    h.up(0x405);
    h.up(0x403);
    assert_eq!(h.view(0x404).proxy, Some(n(0x405)));
    h.effects();
    h.topo_put_data(0x404, 0x403, zone("b"));
    // Still ready all along: only the passive old hop's record goes.
    assert_eq!(
        h.effects(),
        vec![unready(0x405), removed(0x405, FailReason::NoRoute, false)]
    );
    let v = h.view(0x404);
    assert_eq!(
        (v.flags, v.proxy, v.retry_count),
        (A | R, Some(n(0x403)), 0)
    );
    assert_eq!(h.view(0x403).proxy_for, vec![n(0x404)]);
}

#[test]
fn proxy_still_on_the_new_path_is_kept_and_same_upstream_is_a_noop() {
    // D.9: 0x404 moves from 0x405 to 0x406; both sit under our upstream 0x402, which we
    // relay through, so the proxy stays.
    let mut h = H::new(0x401, 0x402, 2, false);
    h.topo_put(0x405, 0x402);
    h.topo_put(0x406, 0x402);
    h.topo_put(0x404, 0x405);
    h.open(0x404).unwrap();
    h.up(0x402);
    h.effects();
    h.topo_put(0x404, 0x406);
    assert_eq!(h.effects(), vec![]);
    assert_eq!(
        (h.flags(0x404), h.view(0x404).proxy),
        (A | R, Some(n(0x402)))
    );
    // D.8: the same record again changes nothing.
    h.topo_put(0x404, 0x406);
    assert_eq!(h.effects(), vec![]);
    assert_eq!(
        (h.flags(0x404), h.view(0x404).proxy),
        (A | R, Some(n(0x402)))
    );
}

#[test]
fn upstream_switch_resets_the_retry_count() {
    let mut h = H::new(0x201, 0x203, 3, true);
    h.topo_put(0x202, 0x203);
    h.disc_put(0x202);
    h.open(0x202).unwrap();
    h.down(0x202);
    h.at(t(2));
    assert_eq!(h.view(0x202).retry_count, 2);
    h.effects();
    h.topo_put(0x202, 0x209);
    let v = h.view(0x202);
    // Re-routed from scratch: a fresh first attempt (dial) instead of the third.
    assert_eq!((v.retry_count, v.next_reconnect), (1, Some(t(4))));
}

#[test]
fn switch_without_discovery_waits_then_reconnects_when_it_arrives() {
    // D.3: the target moves; we have no address for it and no record for its new upstream.
    let mut h = H::new(0x401, 0x402, 2, true);
    h.topo_put(0x404, 0x402);
    h.open(0x404).unwrap();
    h.effects();
    h.topo_put(0x404, 0x403);
    assert_eq!(h.flags(0x404), A | W);
    h.now = t(1);
    h.disc_put(0x404);
    assert_eq!(h.effects(), vec![scheduled(0x404, 1, t(3)), dial(0x404)]);
    h.up(0x404);
    assert_eq!(h.flags(0x404), A | R);
}

#[test]
fn own_upstream_switch_reroutes_dependents_instead_of_removing_them() {
    // libatapp removes every record routed through the old upstream; we re-route them.
    let mut h = H::new(0x101, 0x102, 2, false);
    h.topo_put(0x103, 0x102);
    h.disc_put(0x104);
    h.open(0x103).unwrap();
    h.up(0x102);
    h.effects();
    h.topo_put(0x101, 0x104);
    assert_eq!(h.c.upstream(), n(0x104));
    assert_eq!(
        h.effects(),
        vec![
            unready(0x102),
            removed(0x102, FailReason::NoRoute, false),
            unready(0x103),
            // Unready after the recompute: its timer bounds the wait (libatapp's step 8).
            scheduled(0x103, 1, t(2)),
            // Nothing needs the old upstream any more: its link is closed.
            Effect::Disconnect { peer: n(0x102) },
            dial(0x104),
        ]
    );
    let v = h.view(0x103);
    assert_eq!((v.flags, v.proxy), (A, Some(n(0x104))));
    assert_eq!(h.c.link_state(n(0x102)), None);
    h.up(0x104);
    assert_eq!(
        h.effects(),
        vec![ready(0x104, None), ready(0x103, Some(0x104))]
    );
}

#[test]
fn a_link_to_the_target_replaces_its_proxy() {
    // Direct before proxied (B.7): 0x202 dials us while we relay to it.
    let mut h = H::new(0x201, 0x203, 3, false);
    h.topo_put(0x202, 0x203);
    h.open(0x202).unwrap();
    h.up(0x203);
    assert_eq!(h.view(0x202).proxy, Some(n(0x203)));
    h.effects();
    h.up(0x202);
    assert_eq!(
        h.effects(),
        vec![unready(0x203), removed(0x203, FailReason::NoRoute, false),]
    );
    let v = h.view(0x202);
    assert_eq!((v.flags, v.proxy), (A | R, None));
    assert_eq!(h.c.ready_hop(n(0x202)), Some(n(0x202)));
}

#[test]
fn removal_leaves_no_timer_and_stale_timer_keys_are_ignored() {
    let mut h = H::new(0x201, 0x203, 1, true);
    h.topo_put(0x202, 0x203);
    h.disc_put(0x202);
    h.open(0x202).unwrap();
    h.down(0x202);
    h.at(t(2));
    assert!(!h.has(0x202));
    assert_eq!(h.c.timer_count(), 0);
    assert_eq!(h.c.next_deadline(), None);
    // Events for unknown ids change nothing.
    h.effects();
    h.down(0x2ee);
    h.send_failed(0x2ee);
    h.disc_del(0x2ee);
    h.at(t(100));
    assert_eq!(h.effects(), vec![]);
    assert!(h.c.is_empty());
}

#[test]
fn duplicate_link_reports_are_no_ops() {
    let mut h = group_f();
    h.up(0x602);
    let first = h.effects();
    h.up(0x602);
    assert_eq!(h.effects(), vec![]);
    assert_eq!(first.len(), 2);
    h.down(0x602);
    let drop = h.effects();
    h.down(0x602);
    assert_eq!(h.effects(), vec![]);
    assert_eq!(drop.len(), 3);
}

#[test]
fn becoming_a_root_unreadies_what_was_relayed_through_the_old_upstream() {
    // Found by the node proptest: the re-route finds no path (root, no direct links); the
    // record must not keep the READY it had through the old upstream.
    let mut h = H::new(0x101, 0x102, 2, false);
    h.topo_put(0x103, 0);
    h.up(0x102);
    h.open(0x103).unwrap();
    assert_eq!(h.flags(0x103), A | R);
    h.effects();
    h.topo_put(0x101, 0);
    assert_eq!(h.c.upstream(), NodeId::NONE);
    let v = h.view(0x103);
    assert_eq!((v.flags, v.proxy, v.timer), (A, None, Some(t(2))));
    assert_eq!(h.c.ready_hop(n(0x103)), None);
}

#[test]
fn a_target_made_direct_takes_readiness_from_its_own_link() {
    // Found by the node proptest: 0x105 was reached up the tree through 0x102 (ready); once
    // we move under 0x103 it is a peer we may dial, with no link of its own yet.
    let mut h = H::new(0x101, 0x102, 2, true);
    h.topo_put(0x102, 0x105);
    h.open(0x105).unwrap();
    h.up(0x102);
    assert_eq!(
        (h.flags(0x105), h.view(0x105).proxy),
        (A | R, Some(n(0x102)))
    );
    h.topo_put(0x101, 0x103);
    let v = h.view(0x105);
    assert_eq!((v.flags, v.proxy), (A | W, None));
    assert_eq!(h.c.ready_hop(n(0x105)), None);
}

#[test]
fn old_upstream_is_kept_while_something_still_needs_it() {
    // We also send to 0x102 itself: after the switch it is just a peer, relayed through the
    // new upstream — but its direct link stays (step 0: an existing link is used).
    let mut h = H::new(0x101, 0x102, 2, false);
    h.disc_put(0x104);
    h.open(0x102).unwrap();
    h.up(0x102);
    h.effects();
    h.topo_put(0x101, 0x104);
    let effects = h.effects();
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::Disconnect { .. })),
        "{effects:?}"
    );
    assert_eq!(h.c.link_state(n(0x102)), Some(LinkState::Up));
    assert_eq!((h.flags(0x102), h.view(0x102).proxy), (A | R, None));
}

#[test]
fn a_failed_hand_off_through_a_ready_proxy_is_retried_after_the_backoff() {
    // The proxy answered `Unreachable` (the target restarted behind it) while its own link
    // stayed up: the record follows the proxy again when its backoff window ends.
    let mut h = group_f();
    h.up(0x602);
    h.effects();
    h.now = t(5);
    h.send_failed(0x603);
    assert_eq!(h.effects(), vec![unready(0x603), scheduled(0x603, 1, t(7))]);
    h.at(t(6));
    assert_eq!(h.effects(), vec![]);
    h.at(t(7));
    assert_eq!(h.effects(), vec![ready(0x603, Some(0x602))]);
    // Following the proxy proves nothing yet: the attempt stays counted, so another failed
    // hand-off waits a longer backoff (attempt 2: 4 s), until a delivery proves the path.
    let v = h.view(0x603);
    assert_eq!(
        (v.flags, v.proxy, v.retry_count, v.timer),
        (A | R, Some(n(0x602)), 1, None)
    );
    assert_eq!(h.c.ready_hop(n(0x603)), Some(n(0x602)));
    h.send_failed(0x603);
    assert_eq!(
        h.effects(),
        vec![unready(0x603), scheduled(0x603, 2, t(11))]
    );
    h.at(t(11));
    assert_eq!(h.effects(), vec![ready(0x603, Some(0x602))]);
    h.c.path_proven(n(0x603));
    assert_eq!(h.view(0x603).retry_count, 0);
}

#[test]
fn a_failed_hand_off_waits_for_a_proxy_that_went_down() {
    let mut h = group_f();
    h.up(0x602);
    h.effects();
    h.now = t(5);
    h.send_failed(0x603);
    h.down(0x602);
    h.effects();
    // The proxy is down at the end of the window: the record keeps counting attempts and
    // becomes ready with the proxy's link.
    h.at(t(7));
    assert!(!h.flags(0x603).contains(R));
    h.effects();
    h.up(0x602);
    assert_eq!(
        h.effects(),
        vec![ready(0x602, None), ready(0x603, Some(0x602))]
    );
}
