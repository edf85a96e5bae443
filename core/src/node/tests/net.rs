//! Test harness for node-level tests: a few `Node`s wired by a tiny pump that moves
//! `Transmit` bytes between them on one virtual clock (the full simulator is `core::sim`).

use alloc::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    vec::Vec,
};

use bytes::Bytes;

use super::*;
use crate::sim::sim_addr;

/// What the pump saw a node output, other than transport actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Seen {
    Received {
        from: NodeId,
        via: NodeId,
        msg_type: u32,
        payload: Bytes,
    },
    Outcome(MsgId, Outcome),
}

/// A few nodes and the links between them, on one virtual clock.
pub(super) struct Net {
    pub(super) now: Instant,
    pub(super) nodes: BTreeMap<NodeId, Node>,
    /// (node, link) ↔ (peer node, peer link).
    pairs: BTreeMap<(NodeId, LinkId), (NodeId, LinkId)>,
    /// Nodes whose dials fail / who refuse connections.
    pub(super) down: BTreeSet<NodeId>,
    pub(super) seen: BTreeMap<NodeId, Vec<Seen>>,
    pub(super) events: BTreeMap<NodeId, Vec<Event>>,
    pub(super) dials: Vec<(NodeId, NodeId, Instant)>,
}

enum Action {
    Deliver(NodeId, LinkId, Bytes),
    Closed(NodeId, LinkId),
}

impl Net {
    pub(super) fn new(configs: Vec<Config>) -> Net {
        let now = Instant::ZERO;
        let nodes = configs
            .into_iter()
            .map(|c| (c.id, Node::new(c, now).unwrap()))
            .collect();
        Net {
            now,
            nodes,
            pairs: BTreeMap::new(),
            down: BTreeSet::new(),
            seen: BTreeMap::new(),
            events: BTreeMap::new(),
            dials: Vec::new(),
        }
    }

    pub(super) fn node(&mut self, id: u64) -> &mut Node {
        self.nodes.get_mut(&NodeId(id)).unwrap()
    }

    /// Delivers every registry event to every node (a shared registry).
    pub(super) fn registry_all(&mut self, events: &[RegistryEvent]) {
        let now = self.now;
        for node in self.nodes.values_mut() {
            for e in events {
                node.handle_registry(now, e.clone());
            }
        }
        self.pump();
    }

    /// Full discovery and the given topology, on every node.
    pub(super) fn publish(&mut self, topology: &[(u64, u64)]) {
        let mut events = Vec::new();
        let ids: Vec<u64> = self.nodes.keys().map(|id| id.0).collect();
        for (rev, &id) in ids.iter().enumerate() {
            events.push(RegistryEvent::DiscoveryPut(disc(id, 100 + rev as u64)));
        }
        for (rev, &(id, up)) in topology.iter().enumerate() {
            events.push(RegistryEvent::TopologyPut(topo(id, up, 200 + rev as u64)));
        }
        self.registry_all(&events);
    }

    /// Moves outputs between nodes until nothing moves.
    pub(super) fn pump(&mut self) {
        let mut actions: VecDeque<Action> = VecDeque::new();
        loop {
            let mut moved = false;
            let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
            for id in ids {
                while let Some(out) = self.nodes.get_mut(&id).unwrap().poll_output() {
                    moved = true;
                    self.handle_output(id, out, &mut actions);
                }
            }
            while let Some(action) = actions.pop_front() {
                moved = true;
                let now = self.now;
                match action {
                    Action::Deliver(node, link, bytes) => {
                        self.nodes.get_mut(&node).unwrap().handle_received(
                            now,
                            link,
                            Bytes::copy_from_slice(&bytes),
                        );
                    }
                    Action::Closed(node, link) => {
                        self.nodes.get_mut(&node).unwrap().handle_closed(now, link);
                    }
                }
            }
            if !moved {
                return;
            }
        }
    }

    fn handle_output(&mut self, id: NodeId, out: Output, actions: &mut VecDeque<Action>) {
        let now = self.now;
        match out {
            Output::Connect { link, addr: a, .. } => {
                let target = self
                    .nodes
                    .keys()
                    .copied()
                    .find(|&n| sim_addr(n) == a)
                    .filter(|n| !self.down.contains(n) && !self.down.contains(&id));
                self.dials.push((id, target.unwrap_or(NodeId::NONE), now));
                match target {
                    Some(t) => {
                        let accepted = self.nodes.get_mut(&t).unwrap().handle_accepted(now);
                        self.pairs.insert((id, link), (t, accepted));
                        self.pairs.insert((t, accepted), (id, link));
                        self.nodes.get_mut(&id).unwrap().handle_connected(now, link);
                    }
                    None => self
                        .nodes
                        .get_mut(&id)
                        .unwrap()
                        .handle_connect_failed(now, link),
                }
            }
            Output::Transmit { link, bytes } => {
                if let Some(&(peer, peer_link)) = self.pairs.get(&(id, link)) {
                    actions.push_back(Action::Deliver(peer, peer_link, bytes));
                }
            }
            Output::Close { link } => {
                if let Some((peer, peer_link)) = self.pairs.remove(&(id, link)) {
                    self.pairs.remove(&(peer, peer_link));
                    actions.push_back(Action::Closed(peer, peer_link));
                }
            }
            Output::Received {
                from,
                via,
                msg_type,
                payload,
            } => self.seen.entry(id).or_default().push(Seen::Received {
                from,
                via,
                msg_type,
                payload,
            }),
            Output::Outcome { msg, outcome } => self
                .seen
                .entry(id)
                .or_default()
                .push(Seen::Outcome(msg, outcome)),
            Output::Event(e) => self.events.entry(id).or_default().push(e),
        }
    }

    /// Drops every link of `node` (both ends see `handle_closed`) and marks it down.
    #[allow(dead_code, reason = "used by later scenario tests")]
    pub(super) fn kill(&mut self, node: u64) {
        let node = NodeId(node);
        self.down.insert(node);
        let keys: Vec<(NodeId, LinkId)> = self
            .pairs
            .keys()
            .copied()
            .filter(|&(n, _)| n == node)
            .collect();
        let now = self.now;
        for key in keys {
            if let Some((peer, peer_link)) = self.pairs.remove(&key) {
                self.pairs.remove(&(peer, peer_link));
                self.nodes
                    .get_mut(&peer)
                    .unwrap()
                    .handle_closed(now, peer_link);
                self.nodes.get_mut(&node).unwrap().handle_closed(now, key.1);
            }
        }
        self.pump();
    }

    /// Advances to `t`, firing every node's due timers on the way, deadline by deadline.
    pub(super) fn run_until(&mut self, t: Instant) {
        loop {
            let next = self
                .nodes
                .values()
                .filter_map(Node::poll_timeout)
                .min()
                .filter(|&d| d <= t);
            let Some(at) = next else {
                break;
            };
            self.now = self.now.max(at);
            let now = self.now;
            for node in self.nodes.values_mut() {
                if node.poll_timeout().is_some_and(|d| d <= now) {
                    node.handle_timeout(now);
                }
            }
            self.pump();
        }
        self.now = self.now.max(t);
    }

    pub(super) fn take_seen(&mut self, node: u64) -> Vec<Seen> {
        self.seen.remove(&NodeId(node)).unwrap_or_default()
    }
}

pub(super) fn received(from: u64, via: u64, payload: &'static [u8]) -> Seen {
    Seen::Received {
        from: NodeId(from),
        via: NodeId(via),
        msg_type: 100,
        payload: Bytes::from_static(payload),
    }
}
