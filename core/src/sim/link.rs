//! Emulated links: the table of links between simulated nodes (each end known by the owning
//! node's [`LinkId`]) and the per-pair controls tests use (down, scripted dial failures,
//! latencies).
//!
//! A link is created when a node asks to dial, resolves into an open link or a failure, and
//! ends when either side closes it or the simulator drops it. Each end has its own state, so a
//! graceful close is half-visible until the close notification reaches the other side.

use alloc::{
    collections::{BTreeMap, BTreeSet},
    string::String,
    vec::Vec,
};
use core::fmt;

use foldhash::fast::FixedState;
use hashbrown::HashMap;

use crate::{
    ids::{LinkId, NodeId},
    time::{Duration, Instant},
};

/// The simulator's own id for a link (both ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct SimLinkId(pub(super) u64);

impl fmt::Display for SimLinkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sim-link#{}", self.0)
    }
}

/// Which end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    /// The node that dialed.
    Dialer,
    /// The node that accepted.
    Acceptor,
}

impl Side {
    pub(super) const fn other(self) -> Side {
        match self {
            Side::Dialer => Side::Acceptor,
            Side::Acceptor => Side::Dialer,
        }
    }

    pub(super) const fn index(self) -> usize {
        match self {
            Side::Dialer => 0,
            Side::Acceptor => 1,
        }
    }
}

/// State of one end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EndState {
    /// The dial has not resolved yet (dialer end only).
    Dialing,
    /// Usable: bytes flow both ways.
    Open,
    /// The owning node closed it (`Output::Close`); it gets no callback.
    ClosedBySelf,
    /// Dropped by the simulator; its node is about to get `handle_closed`.
    Reset,
    /// Finished: the node was told, or the dial failed.
    Gone,
}

/// One end of a link.
#[derive(Clone, Debug)]
pub(super) struct End {
    pub(super) node: NodeId,
    pub(super) incarnation: u32,
    pub(super) link: LinkId,
    pub(super) state: EndState,
}

/// A link between two nodes (or a dial that has not resolved yet).
#[derive(Clone, Debug)]
pub(super) struct SimLink {
    /// The address dialed.
    pub(super) addr: String,
    /// The node owning `addr` when the dial started, if any.
    pub(super) target: Option<NodeId>,
    /// `[dialer, acceptor]`; the acceptor end exists once the link is established.
    pub(super) ends: [Option<End>; 2],
    /// Latest arrival time scheduled towards each side, so later sends never overtake.
    pub(super) last_arrival: [Instant; 2],
    /// Set at dial time when the dial is already known to fail (scripted failure, unknown
    /// address, pair down, target dead): why.
    pub(super) doomed: Option<&'static str>,
}

impl SimLink {
    pub(super) fn end(&self, side: Side) -> Option<&End> {
        self.ends[side.index()].as_ref()
    }

    pub(super) fn end_mut(&mut self, side: Side) -> Option<&mut End> {
        self.ends[side.index()].as_mut()
    }

    /// The node at each end, as far as known: `(dialer, acceptor or dial target)`.
    pub(super) fn nodes(&self) -> (Option<NodeId>, Option<NodeId>) {
        let dialer = self.end(Side::Dialer).map(|e| e.node);
        let acceptor = self.end(Side::Acceptor).map(|e| e.node).or(self.target);
        (dialer, acceptor)
    }

    /// Whether this link joins `a` and `b` (either direction).
    pub(super) fn joins(&self, a: NodeId, b: NodeId) -> bool {
        match self.nodes() {
            (Some(x), Some(y)) => (x == a && y == b) || (x == b && y == a),
            _ => false,
        }
    }

    /// Whether any end is still usable or pending.
    pub(super) fn is_live(&self) -> bool {
        self.ends.iter().flatten().any(|e| {
            matches!(
                e.state,
                EndState::Dialing | EndState::Open | EndState::Reset
            )
        })
    }
}

/// Every link the simulation has seen, and the index from a node's [`LinkId`] to it.
#[derive(Debug, Default)]
pub(super) struct LinkTable {
    /// By id: link `SimLinkId(n)` is at `n - 1` (ids count from 1 and no link is ever
    /// removed), so a lookup is an index, and the order is creation order.
    links: Vec<SimLink>,
    by_end: HashMap<(NodeId, LinkId), (SimLinkId, Side), FixedState>,
    next: u64,
}

impl LinkTable {
    /// Records a new dial from `dialer`'s `link` to `addr` (owned by `target`, if anyone).
    pub(super) fn dial(
        &mut self,
        dialer: End,
        addr: String,
        target: Option<NodeId>,
        doomed: Option<&'static str>,
        now: Instant,
    ) -> SimLinkId {
        self.next += 1;
        let id = SimLinkId(self.next);
        self.by_end
            .insert((dialer.node, dialer.link), (id, Side::Dialer));
        self.links.push(SimLink {
            addr,
            target,
            ends: [Some(dialer), None],
            last_arrival: [now, now],
            doomed,
        });
        debug_assert_eq!(Self::slot(id), Some(self.links.len() - 1));
        id
    }

    /// Attaches the acceptor's end to an established link.
    pub(super) fn attach_acceptor(&mut self, id: SimLinkId, end: End) {
        self.by_end
            .insert((end.node, end.link), (id, Side::Acceptor));
        if let Some(link) = self.get_mut(id) {
            link.ends[Side::Acceptor.index()] = Some(end);
        }
    }

    /// The link and side a node's `LinkId` refers to.
    pub(super) fn lookup(&self, node: NodeId, link: LinkId) -> Option<(SimLinkId, Side)> {
        self.by_end.get(&(node, link)).copied()
    }

    /// Whether `node` currently uses `link` for an end that is not finished.
    pub(super) fn in_use(&self, node: NodeId, link: LinkId) -> bool {
        self.lookup(node, link)
            .and_then(|(id, side)| self.get(id)?.end(side).map(|e| e.state))
            .is_some_and(|s| s != EndState::Gone)
    }

    pub(super) fn get(&self, id: SimLinkId) -> Option<&SimLink> {
        self.links.get(Self::slot(id)?)
    }

    pub(super) fn get_mut(&mut self, id: SimLinkId) -> Option<&mut SimLink> {
        self.links.get_mut(Self::slot(id)?)
    }

    /// Where link `id` is in `links`.
    fn slot(id: SimLinkId) -> Option<usize> {
        usize::try_from(id.0.checked_sub(1)?).ok()
    }

    /// Ids of links that join `a` and `b` and are still live, in creation order.
    pub(super) fn live_between(&self, a: NodeId, b: NodeId) -> Vec<SimLinkId> {
        self.with_ids()
            .filter(|(_, l)| l.is_live() && l.joins(a, b))
            .map(|(id, _)| id)
            .collect()
    }

    /// Ids of links with an end owned by `node`, or dialing towards it, in creation order.
    pub(super) fn touching(&self, node: NodeId) -> Vec<SimLinkId> {
        self.with_ids()
            .filter(|(_, l)| {
                l.is_live() && {
                    let (d, a) = l.nodes();
                    d == Some(node) || a == Some(node)
                }
            })
            .map(|(id, _)| id)
            .collect()
    }

    /// Every link with its id, in creation order.
    fn with_ids(&self) -> impl Iterator<Item = (SimLinkId, &SimLink)> {
        (1..).map(SimLinkId).zip(&self.links)
    }

    /// Forgets every `LinkId` of `node` (it died; a new incarnation may reuse the ids).
    pub(super) fn forget_node(&mut self, node: NodeId) {
        self.by_end.retain(|&(n, _), _| n != node);
    }

    /// Open links between `a` and `b` (both ends open).
    pub(super) fn open_between(&self, a: NodeId, b: NodeId) -> usize {
        self.links
            .iter()
            .filter(|l| {
                l.joins(a, b)
                    && l.ends
                        .iter()
                        .all(|e| e.as_ref().is_some_and(|e| e.state == EndState::Open))
            })
            .count()
    }
}

/// Per-pair controls: which pairs are down, scripted dial failures and latency overrides.
#[derive(Debug, Default)]
pub(super) struct PairControls {
    down: BTreeSet<(NodeId, NodeId)>,
    fail_next: BTreeMap<(NodeId, NodeId), u32>,
    latency: HashMap<(NodeId, NodeId), Duration, FixedState>,
    connect_latency: HashMap<(NodeId, NodeId), Duration, FixedState>,
}

const fn pair(a: NodeId, b: NodeId) -> (NodeId, NodeId) {
    if a.0 <= b.0 { (a, b) } else { (b, a) }
}

impl PairControls {
    pub(super) fn set_down(&mut self, a: NodeId, b: NodeId, down: bool) {
        if down {
            self.down.insert(pair(a, b));
        } else {
            self.down.remove(&pair(a, b));
        }
    }

    /// Every pair that is down, ascending.
    pub(super) fn down_pairs(&self) -> Vec<(NodeId, NodeId)> {
        self.down.iter().copied().collect()
    }

    pub(super) fn is_down(&self, a: NodeId, b: NodeId) -> bool {
        self.down.contains(&pair(a, b))
    }

    /// One more dial from `from` to `to` is to fail.
    pub(super) fn add_fail_next(&mut self, from: NodeId, to: NodeId) {
        *self.fail_next.entry((from, to)).or_insert(0) += 1;
    }

    /// Consumes one scripted failure for a dial from `from` to `to`, if any is left.
    pub(super) fn take_fail_next(&mut self, from: NodeId, to: NodeId) -> bool {
        match self.fail_next.get_mut(&(from, to)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    pub(super) fn set_latency(&mut self, a: NodeId, b: NodeId, d: Duration) {
        self.latency.insert(pair(a, b), d);
    }

    pub(super) fn latency(&self, a: NodeId, b: NodeId) -> Option<Duration> {
        self.latency.get(&pair(a, b)).copied()
    }

    pub(super) fn set_connect_latency(&mut self, a: NodeId, b: NodeId, d: Duration) {
        self.connect_latency.insert(pair(a, b), d);
    }

    pub(super) fn connect_latency(&self, a: NodeId, b: NodeId) -> Option<Duration> {
        self.connect_latency.get(&pair(a, b)).copied()
    }
}
