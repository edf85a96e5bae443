//! The perimeter after the handshake: what a peer has standing to send once its link is up.
//! The handshake proves who the peer is, not who wrote the frames it carries. This machine
//! answers from the topology and the routes (`Standing`); the node composes it.
//!
//! - **Sources.** A `Data` frame whose `src` is not the link's proven peer is taken only when
//!   that peer may relay for the source (`Standing`): this node's upstream, a node
//!   with downstream nodes in the topology (a proxy), a node on the source's upstream chain,
//!   or the hop this node's own route to the source goes through (replies come back the way
//!   requests went). A leaf has no one to relay for, so a leaf claiming another source is
//!   dropped and counted
//!   ([`LinkEvent::ForgedSource`](crate::bus::links::LinkEvent::ForgedSource) →
//!   [`Event::ForgedSource`]). The link stays up: the peer is a proven key holder, and the
//!   topology record that makes it a proxy may simply not have reached this node yet — a
//!   legitimate sender's message is then retransmitted (never acknowledged here) and taken
//!   once the record arrived, where closing the link would cut its other traffic.
//! - **Acks and refusals.** An `Ack` (or reset) or `Unreachable` for one of this node's
//!   streams counts only when it arrives from the stream's route (`Standing::on_route`): the
//!   target itself, the hop its route goes through (its ready hop, or its record's proxy), or
//!   a node on the tree path between the target and this node (the upstream chains of both:
//!   the only nodes a relayed ack or notice can come back through). Anything else is dropped
//!   before it touches an outcome, a stream or a route, and counted ([`Event::OffRoute`],
//!   [`PerimeterCounts`] in [`Node::status`](crate::Node::status)).

use serde::{Deserialize, Serialize};

use crate::{
    bus::links::{Inbound, Relays},
    connector::Connector,
    event::Event,
    ids::NodeId,
    output::Outlets,
    topology::TopologyRegistry,
};

/// A frame for one of this node's streams that did not come from the stream's route
/// ([`Event::OffRoute`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OffRouteFrame {
    /// An `Ack` (or reset).
    Ack,
    /// An `Unreachable` notice.
    Unreachable,
}

/// Frames dropped at the perimeter so far ([`Inspect::perimeter`](crate::Inspect::perimeter),
/// [`Status::perimeter`](crate::node::Status::perimeter)).
///
/// A link's handshake proves who its peer is, not who wrote the frames it carries. After it:
/// an `Ack` (or reset) or `Unreachable` about one of this node's streams counts only from the
/// stream's route — the target itself, the hop or proxy its route goes through, or a node on
/// the upstream chains between the target and this node ([`Event::OffRoute`] otherwise). A
/// `Data` frame whose source is not the link's peer is taken only when the peer may relay for
/// it — this node's upstream, a node with downstream nodes in the topology, a node on the
/// source's upstream chain, or the hop of this node's own route to the source
/// ([`Event::ForgedSource`] otherwise; the link stays up, and a sender whose relay's topology
/// record has not arrived yet is retransmitted to). With cluster keys, a `HelloAck` refusal
/// is believed only when proven.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PerimeterCounts {
    /// `Ack`s (and resets) of this node's streams from a peer off the stream's route.
    pub acks_off_route: u64,
    /// `Unreachable` notices about this node's messages from a peer off their route.
    pub notices_off_route: u64,
    /// `Data` frames claiming a source their link's peer may not relay for.
    pub forged_sources: u64,
    /// `HelloAck` refusals (with cluster keys) that carried no valid proof: not believed,
    /// the dial counted as failed ([`LinkError::UnprovenRefusal`](crate::bus::links::LinkError::UnprovenRefusal)).
    pub unproven_refusals: u64,
}

/// What the topology and the routes say a peer may send — for [`Relays`]: this node's upstream, every node with downstream nodes
/// in the topology (a proxy), a node on the source's upstream chain, and the hop of this
/// node's route to the source may relay for it; anyone else speaks only for itself.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Standing<'a> {
    pub(crate) topology: &'a TopologyRegistry,
    pub(crate) connector: &'a Connector,
}

impl Relays for Standing<'_> {
    fn may_relay(&self, via: NodeId, src: NodeId) -> bool {
        let upstream = self.connector.upstream();
        (upstream.is_valid() && via == upstream)
            || self
                .topology
                .get(via)
                .is_some_and(|peer| peer.downstream_len() > 0)
            || self.connector.ready_hop(src) == Some(via)
            || self.connector.proxy_of(src) == Some(via)
            || self.topology.upstream_chain(src).any(|n| n == via)
    }
}

impl Standing<'_> {
    /// Whether a frame about node `own`'s stream to `dst` (an ack or a relay's notice) may
    /// come from `via`: `dst` itself, the hop `dst`'s route goes through (its ready hop, or
    /// its record's proxy), or a node on the tree path between `dst` and `own` (the upstream
    /// chains of both).
    pub(crate) fn on_route(&self, own: NodeId, dst: NodeId, via: NodeId) -> bool {
        if via == dst
            || self.connector.ready_hop(dst) == Some(via)
            || self.connector.proxy_of(dst) == Some(via)
        {
            return true;
        }
        let upstream = self.connector.upstream();
        (upstream.is_valid() && via == upstream)
            || self.topology.upstream_chain(dst).any(|n| n == via)
            || self.topology.upstream_chain(own).any(|n| n == via)
    }
}

impl PerimeterCounts {
    /// Whether node `own` may act on `inbound`: an `Ack` or `Unreachable` about one of its
    /// streams only from the stream's route ([`Standing::on_route`]); one from elsewhere is
    /// counted and reported ([`Event::OffRoute`]) and nothing else happens to it. Every other
    /// frame passes (its source was screened by the link machine, [`Relays`]).
    #[inline]
    pub(crate) fn admits(
        &mut self,
        standing: &Standing<'_>,
        own: NodeId,
        inbound: &Inbound,
        out: &mut Outlets,
    ) -> bool {
        let (frame, dst, via) = match inbound {
            Inbound::Ack { ack, via } => (OffRouteFrame::Ack, ack.dst, *via),
            Inbound::Unreachable { notice, via } => (OffRouteFrame::Unreachable, notice.dst, *via),
            _ => return true,
        };
        if standing.on_route(own, dst, via) {
            return true;
        }
        self.count_off_route(frame);
        out.event(Event::OffRoute { frame, dst, via });
        false
    }

    /// Counts one `frame` dropped for arriving off its stream's route.
    pub(crate) fn count_off_route(&mut self, frame: OffRouteFrame) {
        match frame {
            OffRouteFrame::Ack => self.acks_off_route += 1,
            OffRouteFrame::Unreachable => self.notices_off_route += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::String;

    use super::{OffRouteFrame, PerimeterCounts, Standing};
    use crate::{
        backoff::BackoffConfig,
        bus::links::Inbound,
        connector::{Connector, ConnectorConfig},
        event::Event,
        ids::NodeId,
        output::{Outlets, Output},
        rng::Rng,
        time::Duration,
        topology::{PeerData, TopologyPolicy, TopologyRegistry},
        wire::{self, UnreachableReason},
    };

    const OWN: NodeId = NodeId(1);
    const UPSTREAM: NodeId = NodeId(2);
    const TARGET: NodeId = NodeId(5);
    const STRANGER: NodeId = NodeId(9);

    /// This node under `UPSTREAM`, and `TARGET` under `UPSTREAM` too (no routes opened).
    fn parts() -> (TopologyRegistry, Connector) {
        let config = ConnectorConfig {
            own_id: OWN,
            local: PeerData::default(),
            policy: TopologyPolicy::default(),
            backoff: BackoffConfig::without_jitter(
                Duration::from_secs(1),
                Duration::from_secs(8),
                3,
            ),
            lost_topology_timeout: Duration::from_secs(30),
            upstream: UPSTREAM,
            upstream_address: String::new(),
        };
        let mut topology = TopologyRegistry::new();
        for id in [OWN, TARGET] {
            topology
                .update_peer(id, UPSTREAM, PeerData::default())
                .unwrap();
        }
        (topology, Connector::new(config, Rng::new(7)))
    }

    fn ack(via: NodeId) -> Inbound {
        let ack = wire::Ack {
            src: OWN,
            dst: TARGET,
            seq: 3,
            dst_incarnation: 11,
            reset: None,
        };
        Inbound::Ack { ack, via }
    }

    fn notice(via: NodeId) -> Inbound {
        let notice = wire::Unreachable {
            src: OWN,
            dst: TARGET,
            seq: 3,
            reason: UnreachableReason::NoRoute,
            dst_incarnation: 11,
        };
        Inbound::Unreachable { notice, via }
    }

    /// An ack or notice from the target itself or from the tree path (the upstream both hang
    /// under) is admitted untouched; one from a stranger is dropped, counted by kind and
    /// reported with its stream's target and the peer it came from.
    #[test]
    fn only_the_route_may_ack_or_refuse() {
        let (topology, connector) = parts();
        let standing = Standing {
            topology: &topology,
            connector: &connector,
        };
        let (mut counts, mut out) = (PerimeterCounts::default(), Outlets::default());
        for via in [TARGET, UPSTREAM] {
            assert!(counts.admits(&standing, OWN, &ack(via), &mut out));
            assert!(counts.admits(&standing, OWN, &notice(via), &mut out));
        }
        assert_eq!(counts, PerimeterCounts::default());
        assert_eq!(out.queue.pop_front(), None);
        assert!(!counts.admits(&standing, OWN, &ack(STRANGER), &mut out));
        assert!(!counts.admits(&standing, OWN, &notice(STRANGER), &mut out));
        assert!(!counts.admits(&standing, OWN, &notice(STRANGER), &mut out));
        let expected = PerimeterCounts {
            acks_off_route: 1,
            notices_off_route: 2,
            ..PerimeterCounts::default()
        };
        assert_eq!(counts, expected);
        for frame in [
            OffRouteFrame::Ack,
            OffRouteFrame::Unreachable,
            OffRouteFrame::Unreachable,
        ] {
            let event = Event::OffRoute {
                frame,
                dst: TARGET,
                via: STRANGER,
            };
            assert_eq!(out.queue.pop_front(), Some(Output::Event(event)));
        }
        assert_eq!(out.queue.pop_front(), None);
    }
}
