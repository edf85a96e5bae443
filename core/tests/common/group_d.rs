//! The arrangement of libatapp scenario group D (libatapp-spec §9), shared by
//! `upstream_changes.rs` (D.1–D.4, D.8, D.9) and `lost_topology.rs` (D.5–D.7).
//!
//! Layout: 0x401 under the old upstream 0x402, the target 0x404 under 0x402 too, and a new
//! upstream 0x403 (a root, idle until a test moves nodes under it). Start 2 s, max 16 s,
//! lost 32 s, 2 tries, no direct links, jitter 0; message timeout 8 s. Every check is from
//! 0x401's side: its route to 0x404.

use switchboard_core::{
    connector::{RouteEvent, RouteFlags},
    ids::NodeId,
    node::Event,
    sim::Sim,
    time::Instant,
};

use super::events_where;

/// Target (0x404) before the sender (0x401), so registry fan-outs reach the target first.
pub const LAYOUT: [(u64, u64); 4] = [(0x402, 0), (0x403, 0), (0x404, 0x402), (0x401, 0x402)];

pub const TARGET: NodeId = NodeId(0x404);

pub fn view(sim: &Sim) -> Option<(RouteFlags, Option<NodeId>)> {
    sim.node(NodeId(0x401))
        .inspect()
        .route(TARGET)
        .map(|r| (r.flags, r.proxy))
}

/// 0x401's route events about the target, with their time.
pub fn target_events(sim: &Sim) -> Vec<(Instant, Event)> {
    events_where(sim, 0x401, |e| match e {
        Event::Route(route) => route.target() == TARGET,
        _ => false,
    })
}

pub fn ev(kind: RouteEvent) -> Event {
    Event::Route(kind)
}
