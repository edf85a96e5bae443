//! Connector unit tests: the routing decision and the reactions, with exact flags, proxies,
//! retry counts, deadlines and effects. libatapp's matrix settings: reconnect start 2 s, max
//! 16 s, lost 32 s, no jitter.

use alloc::{format, string::String, vec, vec::Vec};

use super::*;
use crate::{discovery::DiscoveryInfo, topology::PeerData};

pub(super) const A: RouteFlags = RouteFlags::ACTIVE;
pub(super) const W: RouteFlags = RouteFlags::WAIT_DISCOVERY;
pub(super) const L: RouteFlags = RouteFlags::LOST_TOPOLOGY;
pub(super) const R: RouteFlags = RouteFlags::READY;
pub(super) const E: RouteFlags = RouteFlags::EMPTY;

pub(super) fn t(s: u64) -> Instant {
    Instant::from_secs(s)
}

pub(super) fn n(id: u64) -> NodeId {
    NodeId(id)
}

pub(super) fn addr(id: u64) -> String {
    format!("tcp://node-{id:x}")
}

/// A connector with a topology registry and discovery set the test controls.
pub(super) struct H {
    pub(super) c: Connector,
    pub(super) topo: TopologyRegistry,
    pub(super) disc: DiscoverySet,
    pub(super) now: Instant,
    revision: u64,
}

macro_rules! world {
    ($h:expr) => {
        World {
            topology: &$h.topo,
            discovery: &$h.disc,
        }
    };
}

impl H {
    /// Node `own` with upstream `upstream` (0 = root), `tries` reconnect tries, direct links
    /// allowed or not; its own topology applied.
    pub(super) fn new(own: u64, upstream: u64, tries: u32, direct: bool) -> H {
        Self::with_backoff(own, upstream, tries, direct, 2, 16, 32)
    }

    pub(super) fn with_backoff(
        own: u64,
        upstream: u64,
        tries: u32,
        direct: bool,
        start: u64,
        max: u64,
        lost: u64,
    ) -> H {
        let config = ConnectorConfig {
            own_id: n(own),
            local: PeerData::default(),
            policy: TopologyPolicy {
                allow_direct_connection: direct,
                ..TopologyPolicy::default()
            },
            backoff: BackoffConfig::without_jitter(
                Duration::from_secs(start),
                Duration::from_secs(max),
                tries,
            ),
            lost_topology_timeout: Duration::from_secs(lost),
            upstream: n(upstream),
            upstream_address: String::new(),
        };
        let mut topo = TopologyRegistry::new();
        topo.update_peer(n(own), n(upstream), PeerData::default())
            .unwrap();
        let mut h = H {
            c: Connector::new(config, Rng::new(7)),
            topo,
            disc: DiscoverySet::new(),
            now: Instant::ZERO,
            revision: 0,
        };
        let w = world!(h);
        h.c.start(h.now, &w);
        h
    }

    pub(super) fn effects(&mut self) -> Vec<Effect> {
        let mut out = Vec::new();
        while let Some(e) = self.c.pop_effect() {
            out.push(e);
        }
        out
    }

    /// Only the dials among the pending effects (the rest is dropped).
    pub(super) fn dials(&mut self) -> Vec<NodeId> {
        self.effects()
            .into_iter()
            .filter_map(|e| match e {
                Effect::Dial { peer, .. } => Some(peer),
                Effect::Route(_) | Effect::Disconnect { .. } => None,
            })
            .collect()
    }

    pub(super) fn open(&mut self, target: u64) -> Result<(), RouteError> {
        let w = world!(self);
        self.c.open_route(self.now, &w, n(target))
    }

    pub(super) fn topo_put(&mut self, id: u64, up: u64) {
        self.topo_put_data(id, up, PeerData::default());
    }

    pub(super) fn topo_put_data(&mut self, id: u64, up: u64, data: PeerData) {
        let change = self.topo.update_peer(n(id), n(up), data).unwrap();
        let w = world!(self);
        self.c.on_topology_put(self.now, &w, n(id), &change);
    }

    pub(super) fn topo_del(&mut self, id: u64) {
        self.topo.remove_peer(n(id)).unwrap();
        let w = world!(self);
        self.c.on_topology_delete(self.now, &w, n(id));
    }

    pub(super) fn disc_put(&mut self, id: u64) {
        self.revision += 1;
        let info = DiscoveryInfo {
            id: n(id),
            name: format!("node-{id:x}"),
            listen: vec![addr(id)],
            revision: self.revision,
            ..DiscoveryInfo::default()
        };
        self.disc.put(info);
        let w = world!(self);
        self.c.on_discovery_put(self.now, &w, n(id));
    }

    pub(super) fn disc_del(&mut self, id: u64) {
        self.revision += 1;
        self.disc
            .remove(n(id), &format!("node-{id:x}"), self.revision);
        let w = world!(self);
        self.c.on_discovery_delete(self.now, &w, n(id));
    }

    pub(super) fn link(&mut self, peer: u64, state: Option<LinkState>) {
        let w = world!(self);
        self.c.set_link_state(self.now, &w, n(peer), state);
    }

    pub(super) fn up(&mut self, peer: u64) {
        self.link(peer, Some(LinkState::Up));
    }

    pub(super) fn down(&mut self, peer: u64) {
        self.link(peer, None);
    }

    /// Moves to `at` and handles everything due.
    pub(super) fn at(&mut self, at: Instant) {
        self.now = at;
        let w = world!(self);
        self.c.handle_timeout(at, &w);
    }

    pub(super) fn send_failed(&mut self, target: u64) {
        let w = world!(self);
        self.c.on_send_failed(self.now, &w, n(target));
    }

    pub(super) fn view(&self, target: u64) -> RouteView {
        self.c
            .view(n(target))
            .unwrap_or_else(|| panic!("no record for {target:#x}"))
    }

    pub(super) fn flags(&self, target: u64) -> RouteFlags {
        self.view(target).flags
    }

    pub(super) fn has(&self, target: u64) -> bool {
        self.c.view(n(target)).is_some()
    }
}

pub(super) fn ready(target: u64, via: Option<u64>) -> Effect {
    Effect::Route(RouteEvent::Ready {
        target: n(target),
        via: via.map(n),
    })
}

pub(super) fn unready(target: u64) -> Effect {
    Effect::Route(RouteEvent::Unready { target: n(target) })
}

pub(super) fn removed(target: u64, reason: FailReason, endpoint: bool) -> Effect {
    Effect::Route(RouteEvent::Removed {
        target: n(target),
        reason,
        endpoint,
    })
}

pub(super) fn scheduled(target: u64, attempt: u32, at: Instant) -> Effect {
    Effect::Route(RouteEvent::ReconnectScheduled {
        target: n(target),
        attempt,
        at,
    })
}

pub(super) fn dial(peer: u64) -> Effect {
    Effect::Dial {
        peer: n(peer),
        addr: addr(peer),
    }
}

// ----- the decision -----

#[test]
fn flags_have_libatapp_values_and_print_by_name() {
    assert_eq!(
        (A.bits(), W.bits(), L.bits(), R.bits()),
        (0x01, 0x02, 0x04, 0x08)
    );
    assert_eq!(format!("{:?}", A | R), "ACTIVE|READY");
    assert_eq!(format!("{E:?}"), "EMPTY");
    assert_eq!(RouteFlags::from_bits_truncate(0xff), A | W | L | R);
    assert!((A | R).contains(R) && !(A | R).contains(W));
}

#[test]
fn upstream_keeper_dials_configured_upstream_once_its_address_is_known() {
    let mut h = H::new(0x101, 0x102, 2, false);
    assert_eq!(h.effects(), vec![]);
    assert_eq!(h.c.next_deadline(), None);
    h.disc_put(0x102);
    assert_eq!(h.effects(), vec![dial(0x102)]);
    assert_eq!(h.c.link_state(n(0x102)), Some(LinkState::Connecting));
    // A second discovery event does not dial twice.
    h.disc_put(0x102);
    assert_eq!(h.effects(), vec![]);
}

#[test]
fn upstream_keeper_redials_with_backoff_and_no_try_limit() {
    let mut h = H::new(0x101, 0x102, 2, false);
    h.disc_put(0x102);
    h.effects();
    let mut expected_at = Vec::new();
    for (k, delay) in [2u64, 4, 8, 16, 16].into_iter().enumerate() {
        h.down(0x102);
        let at = h.now + Duration::from_secs(delay);
        assert_eq!(h.c.next_deadline(), Some(at), "attempt {k}");
        h.at(at);
        assert_eq!(h.effects(), vec![dial(0x102)]);
        expected_at.push(at);
    }
    assert_eq!(expected_at, vec![t(2), t(6), t(14), t(30), t(46)]);
    h.up(0x102);
    h.down(0x102);
    assert_eq!(
        h.c.next_deadline(),
        Some(t(48)),
        "backoff reset by the link coming up"
    );
}

#[test]
fn route_to_own_upstream_is_direct_and_ready_iff_its_link_is_up() {
    let mut h = H::new(0x201, 0x203, 3, false);
    h.open(0x203).unwrap();
    let v = h.view(0x203);
    assert_eq!(
        (v.flags, v.proxy, v.timer, v.endpoint),
        (A, None, None, true)
    );
    h.up(0x203);
    assert_eq!(h.effects(), vec![ready(0x203, None)]);
    assert_eq!(h.flags(0x203), A | R);
}

#[test]
fn peer_with_discovery_is_dialled_and_its_first_attempt_scheduled() {
    let mut h = H::new(0x201, 0x203, 3, true);
    h.topo_put(0x202, 0x203);
    h.disc_put(0x202);
    h.effects();
    h.open(0x202).unwrap();
    assert_eq!(h.effects(), vec![scheduled(0x202, 1, t(2)), dial(0x202)]);
    let v = h.view(0x202);
    assert_eq!(v.flags, A);
    assert_eq!(v.proxy, None);
    assert_eq!(
        (v.retry_count, v.next_reconnect, v.timer),
        (1, Some(t(2)), Some(t(2)))
    );
    h.now = t(1);
    h.up(0x202);
    assert_eq!(h.effects(), vec![ready(0x202, None)]);
    let v = h.view(0x202);
    assert_eq!(v.flags, A | R);
    assert_eq!((v.retry_count, v.next_reconnect, v.timer), (0, None, None));
}

#[test]
fn peer_without_discovery_waits_and_is_dialled_when_it_arrives() {
    let mut h = H::new(0x201, 0x203, 3, true);
    h.topo_put(0x202, 0x203);
    h.open(0x202).unwrap();
    assert_eq!(
        h.effects(),
        vec![
            scheduled(0x202, 1, t(2)),
            Effect::Route(RouteEvent::WaitingDiscovery { target: n(0x202) }),
        ]
    );
    assert_eq!(h.flags(0x202), A | W);
    h.now = t(1);
    h.disc_put(0x202);
    // A discovery event resets the retry count and the backoff window, then dials.
    assert_eq!(h.effects(), vec![scheduled(0x202, 1, t(3)), dial(0x202)]);
    let v = h.view(0x202);
    assert_eq!((v.flags, v.retry_count, v.timer), (A, 1, Some(t(2))));
}

#[test]
fn peer_is_relayed_through_own_upstream_when_direct_links_are_off() {
    let mut h = H::new(0x101, 0x102, 2, false);
    h.topo_put(0x103, 0x102);
    h.disc_put(0x103);
    h.effects();
    h.open(0x103).unwrap();
    assert_eq!(h.effects(), vec![]);
    let v = h.view(0x103);
    assert_eq!((v.flags, v.proxy, v.timer), (A, Some(n(0x102)), None));
    let relay = h.view(0x102);
    assert_eq!((relay.flags, relay.proxy_for.clone()), (E, vec![n(0x103)]));
    // The relay's link coming up readies both.
    h.up(0x102);
    assert_eq!(
        h.effects(),
        vec![ready(0x102, None), ready(0x103, Some(0x102))]
    );
    assert_eq!(h.c.ready_hop(n(0x103)), Some(n(0x102)));
}

#[test]
fn downstream_targets_go_through_the_child_without_a_timer() {
    // 0x301 <- 0x302 <- 0x305: 0x302 is an immediate, 0x305 a transitive downstream.
    let mut h = H::new(0x301, 0, 2, false);
    h.topo_put(0x302, 0x301);
    h.topo_put(0x305, 0x302);
    h.open(0x302).unwrap();
    h.open(0x305).unwrap();
    assert_eq!(h.effects(), vec![]);
    assert_eq!(h.view(0x302).proxy, None);
    assert_eq!(h.view(0x305).proxy, Some(n(0x302)));
    assert_eq!((h.view(0x302).timer, h.view(0x305).timer), (None, None));
    h.up(0x302);
    assert_eq!(
        h.effects(),
        vec![ready(0x302, None), ready(0x305, Some(0x302))]
    );
}

#[test]
fn no_upstream_and_no_direct_path_is_no_route_and_leaves_nothing() {
    let mut h = H::new(0x101, 0, 2, false);
    h.topo_put(0x103, 0x102);
    assert_eq!(h.open(0x103), Err(RouteError::NoRoute));
    assert!(h.c.is_empty());
    assert_eq!(h.c.timer_count(), 0);
    assert_eq!(h.open(0), Err(RouteError::InvalidTarget));
    assert_eq!(h.open(0x101), Err(RouteError::InvalidTarget));
}

#[test]
fn unknown_topology_target_is_direct_when_allowed_else_relayed() {
    let mut direct = H::new(0x201, 0x203, 3, true);
    direct.disc_put(0x2ff);
    direct.effects();
    direct.open(0x2ff).unwrap();
    assert_eq!(
        direct.effects(),
        vec![scheduled(0x2ff, 1, t(2)), dial(0x2ff)]
    );
    // No topology: the record does not start out LOST_TOPOLOGY (libatapp's does).
    assert_eq!(direct.flags(0x2ff), A);

    // Direct links off and only discovery knows it: relayed through our upstream.
    let mut relayed = H::new(0x201, 0x203, 3, false);
    relayed.disc_put(0x2ff);
    relayed.open(0x2ff).unwrap();
    assert_eq!(relayed.view(0x2ff).proxy, Some(n(0x203)));
    assert_eq!(relayed.flags(0x2ff), A);

    // Neither registry knows it: it waits (bounded by its retries) instead of being relayed
    // blindly; its discovery record then routes it through the upstream.
    let mut unknown = H::new(0x201, 0x203, 3, false);
    unknown.open(0x2fe).unwrap();
    let v = unknown.view(0x2fe);
    assert_eq!((v.flags, v.proxy, v.timer), (A | W, None, Some(t(2))));
    unknown.effects();
    unknown.disc_put(0x2fe);
    let v = unknown.view(0x2fe);
    assert_eq!((v.flags, v.proxy), (A, Some(n(0x203))));
    // Or its topology record does.
    let mut unknown = H::new(0x201, 0x203, 3, false);
    unknown.open(0x2fe).unwrap();
    unknown.topo_put(0x2fe, 0x203);
    let v = unknown.view(0x2fe);
    assert_eq!((v.flags, v.proxy, v.retry_count), (A, Some(n(0x203)), 1));
}

#[test]
fn policy_denied_target_falls_back_to_an_allowed_node_up_its_chain() {
    let mut h = H::new(0x201, 0x209, 3, true);
    h.c.policy
        .match_label
        .insert("zone".into(), vec!["a".into()]);
    let zone = |z: &str| PeerData {
        labels: [(String::from("zone"), String::from(z))].into(),
        ..PeerData::default()
    };
    h.topo_put_data(0x203, 0, zone("a"));
    h.topo_put_data(0x202, 0x203, zone("b"));
    h.disc_put(0x202);
    h.disc_put(0x203);
    h.effects();
    h.open(0x202).unwrap();
    assert_eq!(h.effects(), vec![scheduled(0x203, 1, t(2)), dial(0x203)]);
    assert_eq!(h.view(0x202).proxy, Some(n(0x203)));
    assert_eq!(h.view(0x203).proxy_for, vec![n(0x202)]);
    assert_eq!(h.flags(0x203), E, "the hop is passive");
}

#[test]
fn candidate_with_a_dial_in_flight_is_bound_without_a_second_dial() {
    let mut h = H::new(0x201, 0x203, 3, true);
    h.topo_put(0x202, 0x203);
    h.disc_put(0x202);
    h.link(0x202, Some(LinkState::Connecting));
    h.effects();
    h.open(0x202).unwrap();
    assert_eq!(h.effects(), vec![]);
    assert_eq!(h.flags(0x202), A);
}

// ----- reactions -----

/// Node 0x201 (upstream 0x203, direct links on, `tries` tries) with an open route to its
/// peer 0x202 whose link is up, effects drained.
pub(super) fn linked_peer(tries: u32) -> H {
    let mut h = H::new(0x201, 0x203, tries, true);
    h.topo_put(0x202, 0x203);
    h.disc_put(0x202);
    h.open(0x202).unwrap();
    h.up(0x202);
    h.effects();
    h
}

#[test]
fn dropped_link_clears_ready_at_once_and_arms_the_reconnect_timer() {
    let mut h = linked_peer(3);
    h.now = t(10);
    h.down(0x202);
    assert_eq!(
        h.effects(),
        vec![unready(0x202), scheduled(0x202, 1, t(12))]
    );
    let v = h.view(0x202);
    assert_eq!((v.flags, v.retry_count, v.timer), (A, 1, Some(t(12))));
    // The timer really re-dials (libatapp's timer path never does).
    h.at(t(12));
    assert_eq!(h.effects(), vec![scheduled(0x202, 2, t(16)), dial(0x202)]);
}

#[test]
fn reconnect_backoff_doubles_to_the_cap_and_gives_up_after_max_tries() {
    // E.3's settings: start 2 s, max 8 s; unlimited tries for the doubling, then 3 tries.
    let mut h = H::with_backoff(0x501, 0x503, 0, true, 2, 8, 32);
    h.topo_put(0x502, 0x503);
    h.disc_put(0x502);
    h.open(0x502).unwrap();
    let mut at = Vec::new();
    at.push(h.view(0x502).timer.unwrap());
    for _ in 0..4 {
        let due = h.view(0x502).timer.unwrap();
        h.down(0x502);
        h.at(due);
        at.push(h.view(0x502).timer.unwrap());
    }
    let gaps: Vec<u64> = at.windows(2).map(|w| (w[1] - w[0]).as_secs()).collect();
    assert_eq!(at[0], t(2));
    assert_eq!(gaps, vec![4, 8, 8, 8]);

    let mut h = H::new(0x201, 0x203, 3, true);
    h.topo_put(0x202, 0x203);
    h.disc_put(0x202);
    h.open(0x202).unwrap();
    h.down(0x202); // the dial failed
    h.effects();
    h.at(t(2));
    assert_eq!(h.effects(), vec![scheduled(0x202, 2, t(6)), dial(0x202)]);
    h.down(0x202);
    h.at(t(6));
    assert_eq!(h.effects(), vec![scheduled(0x202, 3, t(14)), dial(0x202)]);
    h.down(0x202);
    h.at(t(14));
    assert_eq!(h.effects(), vec![removed(0x202, FailReason::NoRoute, true)]);
    assert!(!h.has(0x202));
    assert_eq!(h.c.timer_count(), 0);
}

#[test]
fn waiting_record_counts_attempts_per_timer_and_is_removed_at_max() {
    // E.2: no discovery ever arrives.
    let mut h = H::new(0x501, 0x503, 3, true);
    h.topo_put(0x502, 0x503);
    h.open(0x502).unwrap();
    h.effects();
    h.at(t(2));
    assert_eq!(h.effects(), vec![scheduled(0x502, 2, t(6))]);
    assert_eq!((h.flags(0x502), h.view(0x502).retry_count), (A | W, 2));
    h.at(t(6));
    assert_eq!(h.effects(), vec![scheduled(0x502, 3, t(14))]);
    h.at(t(14));
    assert_eq!(h.effects(), vec![removed(0x502, FailReason::NoRoute, true)]);
}

#[test]
fn topology_delete_marks_lost_and_the_earlier_deadline_wins() {
    // E.4: a 30 s reconnect timer is replaced by the 8 s lost deadline.
    let mut h = H::with_backoff(0x501, 0x503, 3, true, 30, 60, 8);
    h.topo_put(0x502, 0x503);
    h.disc_put(0x502);
    h.open(0x502).unwrap();
    assert_eq!(h.view(0x502).timer, Some(t(30)));
    h.topo_del(0x502);
    let v = h.view(0x502);
    assert_eq!(
        (v.flags, v.lost_deadline, v.timer),
        (A | L, Some(t(8)), Some(t(8)))
    );
    // E.5: a later deadline does not replace the nearer one.
    h.down(0x502);
    assert_eq!(h.view(0x502).timer, Some(t(8)));
    h.at(t(8));
    assert_eq!(
        h.effects().last(),
        Some(&removed(0x502, FailReason::TargetGone, true))
    );
}

#[test]
fn topology_put_before_the_lost_deadline_restores_the_record() {
    // D.5
    let mut h = H::new(0x401, 0x402, 2, false);
    h.topo_put(0x404, 0x402);
    h.open(0x404).unwrap();
    h.up(0x402);
    h.topo_del(0x404);
    assert_eq!(h.view(0x404).timer, Some(t(32)));
    h.now = t(20);
    h.topo_put(0x404, 0x402);
    let v = h.view(0x404);
    assert_eq!((v.flags, v.lost_deadline, v.timer), (A | R, None, None));
    h.at(t(40));
    assert!(h.has(0x404));
}

#[test]
fn ready_direct_link_survives_its_lost_deadline_until_it_drops() {
    // Correction of D.7: libatapp removes the working link at the deadline.
    let mut h = H::new(0x201, 0x203, 3, true);
    h.topo_put(0x202, 0x203);
    h.disc_put(0x202);
    h.open(0x202).unwrap();
    h.up(0x202);
    h.topo_del(0x202);
    h.effects();
    h.at(t(32));
    assert_eq!(h.effects(), vec![]);
    let v = h.view(0x202);
    assert_eq!(
        (v.flags, v.lost_deadline, v.timer),
        (A | L | R, Some(t(32)), None)
    );
    // Once the link is down the passed deadline applies at once.
    h.now = t(50);
    h.down(0x202);
    assert_eq!(
        h.effects(),
        vec![unready(0x202), removed(0x202, FailReason::TargetGone, true)]
    );
}

#[test]
fn lost_record_routed_through_a_proxy_is_removed_at_its_deadline() {
    // D.6 / A.7: via a ready relay, the deadline removes it.
    let mut h = H::new(0x401, 0x402, 2, false);
    h.topo_put(0x404, 0x402);
    h.open(0x404).unwrap();
    h.up(0x402);
    h.topo_del(0x404);
    h.effects();
    h.at(t(32) - Duration::from_nanos(1));
    assert!(h.has(0x404));
    h.at(t(32));
    assert_eq!(
        h.effects(),
        vec![
            unready(0x404),
            removed(0x404, FailReason::TargetGone, true),
            // The relay's record is passive and nothing routes through it any more.
            unready(0x402),
            removed(0x402, FailReason::NoRoute, false),
        ]
    );
    assert!(!h.has(0x402));
    assert_eq!(
        h.c.link_state(n(0x402)),
        Some(LinkState::Up),
        "its link stays"
    );
}

#[test]
fn discovery_delete_waits_only_for_unlinked_direct_peers() {
    let mut h = H::new(0x501, 0x503, 3, true);
    h.topo_put(0x502, 0x503);
    h.topo_put(0x504, 0x501);
    h.disc_put(0x502);
    h.open(0x502).unwrap();
    h.open(0x503).unwrap();
    h.open(0x504).unwrap();
    h.effects();
    // E.1: the peer (dial in flight, not up) starts waiting; PUT resumes it.
    h.disc_del(0x502);
    assert_eq!(h.flags(0x502), A | W);
    // Never for the upstream or a downstream.
    h.disc_del(0x503);
    h.disc_del(0x504);
    assert_eq!((h.flags(0x503), h.flags(0x504)), (A, A));
    h.down(0x502);
    h.effects();
    h.disc_put(0x502);
    assert_eq!(h.flags(0x502), A);
    assert_eq!(h.effects(), vec![scheduled(0x502, 1, t(2)), dial(0x502)]);
    // Not while its link is up.
    h.up(0x502);
    h.disc_del(0x502);
    assert_eq!(h.flags(0x502), A | R);
}

#[test]
fn discovery_put_resets_the_retry_count() {
    let mut h = H::new(0x201, 0x203, 3, true);
    h.topo_put(0x202, 0x203);
    h.disc_put(0x202);
    h.open(0x202).unwrap();
    h.down(0x202);
    h.at(t(2));
    assert_eq!(h.view(0x202).retry_count, 2);
    h.disc_put(0x202);
    let v = h.view(0x202);
    assert_eq!((v.retry_count, v.next_reconnect), (0, None));
}

#[test]
fn send_failure_clears_ready_and_arms_the_timer() {
    // F.1: libatapp clears READY but arms nothing.
    let mut h = H::new(0x601, 0x602, 3, false);
    h.topo_put(0x603, 0x602);
    h.open(0x603).unwrap();
    h.up(0x602);
    h.effects();
    h.now = t(5);
    h.send_failed(0x603);
    assert_eq!(h.effects(), vec![unready(0x603), scheduled(0x603, 1, t(7))]);
    assert_eq!(h.view(0x603).timer, Some(t(7)));
}

#[test]
fn every_due_timer_is_handled_in_one_call() {
    let mut h = H::new(0x201, 0x203, 3, true);
    for id in [0x202, 0x204, 0x205] {
        h.topo_put(id, 0x203);
        h.disc_put(id);
        h.open(id).unwrap();
        h.down(id);
    }
    h.effects();
    assert_eq!(h.c.timer_count(), 3);
    h.at(t(100));
    let dials = h.dials();
    assert_eq!(dials, vec![n(0x202), n(0x204), n(0x205)]);
    assert_eq!(h.c.next_deadline(), Some(t(104)));
}

#[test]
fn a_route_record_stays_within_its_memory_budget() {
    // The goal is ≤ 256 bytes per record. Inline size plus the record map's
    // per-entry share (key + value in a B-tree leaf, ~11 entries per node) stays well below.
    let inline = core::mem::size_of::<record::RouteRecord>();
    assert_eq!(inline, 72);
    assert_eq!(super::ROUTE_RECORD_SIZE, inline);
    let per_entry = inline + core::mem::size_of::<NodeId>();
    assert!(per_entry * 3 / 2 <= 256, "{per_entry}");
}

#[test]
fn jitter_spreads_reconnects_within_bounds_and_replays_from_the_seed() {
    let run = |seed: u64| -> Vec<Instant> {
        let config = ConnectorConfig {
            own_id: n(0x201),
            local: PeerData::default(),
            policy: TopologyPolicy {
                allow_direct_connection: true,
                ..TopologyPolicy::default()
            },
            backoff: BackoffConfig {
                start: Duration::from_secs(2),
                max: Duration::from_secs(16),
                max_tries: 0,
                jitter: Jitter::Proportional { percent: 20 },
            },
            lost_topology_timeout: Duration::from_secs(32),
            upstream: n(0x203),
            upstream_address: String::new(),
        };
        let mut h = H::new(0x201, 0x203, 0, true);
        h.c = Connector::new(config, Rng::new(seed));
        let mut at = Vec::new();
        for peer in 0x210..0x220 {
            h.topo_put(peer, 0x203);
            h.disc_put(peer);
            h.open(peer).unwrap();
            at.push(h.view(peer).timer.unwrap());
        }
        at
    };
    let a = run(1);
    assert_eq!(a, run(1), "same seed, same schedule");
    assert_ne!(a, run(2));
    for &deadline in &a {
        assert!(deadline >= Instant::from_millis(1_600) && deadline <= Instant::from_millis(2_400));
    }
    assert!(a.iter().any(|&d| d != a[0]), "not all in lockstep");
}

#[test]
fn config_jitter_percent_zero_means_no_jitter() {
    let mut c = Config::new(n(1), "n");
    c.reconnect_jitter_percent = 0;
    assert_eq!(
        ConnectorConfig::from_config(&c).backoff.jitter,
        Jitter::None
    );
    c.reconnect_jitter_percent = 20;
    assert_eq!(
        ConnectorConfig::from_config(&c).backoff.jitter,
        Jitter::Proportional { percent: 20 }
    );
}

/// Found by the node proptest: a send to a node that is only a hop record (here the child
/// 0x5 that carried the route to 0x3, then moved to another tree) is refused with `NoRoute`;
/// the hop record must not keep claiming an endpoint nobody bound.
#[test]
fn refused_send_to_a_hop_record_leaves_it_a_hop() {
    let mut h = H::new(0x1, 0, 2, false);
    h.topo_put(0x3, 0x5);
    h.topo_put(0x5, 0x1);
    assert_eq!(h.open(0x3), Ok(()));
    assert_eq!(h.c.view(n(0x3)).map(|v| v.proxy), Some(Some(n(0x5))));
    h.topo_put(0x5, 0x2);
    assert_eq!(h.open(0x5), Err(RouteError::NoRoute));
    let hop = h.c.view(n(0x5)).expect("still the hop of 0x3's record");
    assert!(!hop.endpoint);
    assert!(!hop.flags.contains(A));
    assert!(!h.c.has_endpoint(n(0x5)));
}
