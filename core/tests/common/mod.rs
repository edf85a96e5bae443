//! Shared arrangement for the libatapp scenario matrix (libatapp-spec §9): the group configs,
//! cluster builders that publish the registry the way libatapp nodes do (topology first, then
//! discovery), and readers that turn the simulator's logs into exact, comparable values.
#![allow(
    dead_code,
    unreachable_pub,
    reason = "each scenario file uses a different subset of these helpers"
)]

pub mod group_d;
pub mod rpc;

use switchboard_core::{
    config::Config,
    ids::{MsgId, NodeId},
    node::Event,
    outcome::Outcome,
    select::Select,
    sim::{Sim, discovery_info, sim_addr, topology_info},
    time::{Duration, Instant},
};

/// Reconnect and topology settings of one scenario group (libatapp's test YAMLs): start 2 s,
/// max 16 s, lost 32 s unless noted, 1 MiB send buffer, jitter 0 (libatapp has none).
#[derive(Clone, Copy, Debug)]
pub struct Group {
    /// `reconnect_start`.
    pub start: Duration,
    /// `reconnect_max`.
    pub max: Duration,
    /// `reconnect_max_tries`.
    pub tries: u32,
    /// `lost_topology_timeout`.
    pub lost: Duration,
    /// `topology_policy.allow_direct_connection`.
    pub direct: bool,
}

const fn group(tries: u32, direct: bool) -> Group {
    Group {
        start: Duration::from_secs(2),
        max: Duration::from_secs(16),
        tries,
        lost: Duration::from_secs(32),
        direct,
    }
}

/// A: 0x101 → relay 0x102 ← 0x103; spare relay 0x104. Tries 2, no direct links.
pub const GROUP_A: Group = group(2, false);
/// B: 0x201, 0x202 under 0x203. Tries 3, direct links allowed.
pub const GROUP_B: Group = group(3, true);
/// C: 0x301 ← child 0x302. Tries 2, no direct links.
pub const GROUP_C: Group = group(2, false);
/// D: 0x401 under old 0x402; new 0x403; target 0x404. Tries 2, no direct links.
pub const GROUP_D: Group = group(2, false);
/// E: 0x501, 0x502 under 0x503. Tries 3, direct links allowed.
pub const GROUP_E: Group = group(3, true);
/// F: 0x601 → proxy 0x602 ← 0x603. Tries 3, no direct links.
pub const GROUP_F: Group = group(3, false);

/// The name node `id` publishes: `node-101` for 0x101.
pub fn name(id: u64) -> String {
    format!("node-{id:x}")
}

/// The suspicion bound of the scenario groups: past every scenario's horizon. libatapp's
/// nodes never probe, so its scenarios' dial schedules hold only when the last probe of a
/// doubt (§9.3, at the first failed redial + the bound) never runs; the bound's own rule is
/// tested with the default (1.5 s) in `death_evidence.rs`.
pub const GROUP_SUSPICION: Duration = Duration::from_secs(600);

/// A node config for `group`: identity, upstream (0 = root, dialled at its simulator address
/// like libatapp's `bus.proxy`), listen address, reconnect and topology settings, and the
/// groups' suspicion bound ([`GROUP_SUSPICION`]).
pub fn config(group: Group, id: u64, upstream: u64) -> Config {
    let mut c = node_config(id, upstream);
    c.suspicion_timeout = GROUP_SUSPICION;
    c.reconnect_start = group.start;
    c.reconnect_max = group.max;
    c.reconnect_max_tries = group.tries;
    c.lost_topology_timeout = group.lost;
    c.send_buffer_size = 1 << 20;
    c.topology_policy.allow_direct_connection = group.direct;
    c
}

/// A node config with the defaults but no jitter: identity, upstream (0 = root, dialled at
/// its simulator address), listen address.
pub fn node_config(id: u64, upstream: u64) -> Config {
    let mut c = Config::new(NodeId(id), name(id));
    c.reconnect_jitter_percent = 0;
    c.upstream = NodeId(upstream);
    if upstream != 0 {
        c.upstream_address = sim_addr(NodeId(upstream));
    }
    c.listen = vec![sim_addr(NodeId(id))];
    c
}

/// Starts the nodes of `layout` (`(id, upstream)` pairs, parents before children) without
/// publishing anything, and settles: children are linked to their configured upstreams.
pub fn start(group: Group, layout: &[(u64, u64)]) -> Sim {
    let mut sim = Sim::new();
    for &(id, up) in layout {
        sim.add_node(config(group, id, up))
            .unwrap_or_else(|e| panic!("node {id:#x}: {e}"));
    }
    sim.run_until_idle();
    sim
}

/// Publishes `id`'s topology record (under `upstream`) to every node.
pub fn publish_topology(sim: &mut Sim, id: u64, upstream: u64) {
    sim.registry_put_topology(topology_info(NodeId(id), &name(id), NodeId(upstream)));
}

/// Publishes `id`'s discovery record (its simulator address) to every node.
pub fn publish_discovery(sim: &mut Sim, id: u64) {
    sim.registry_put_discovery(discovery_info(NodeId(id), &name(id)));
}

/// Publishes every node of `layout`: all topology records, then all discovery records
/// (libatapp's write order), and settles.
pub fn publish(sim: &mut Sim, layout: &[(u64, u64)]) {
    for &(id, up) in layout {
        publish_topology(sim, id, up);
    }
    for &(id, _) in layout {
        publish_discovery(sim, id);
    }
    sim.run_until_idle();
}

/// [`start`] + [`publish`]: the fully arranged group.
pub fn cluster(group: Group, layout: &[(u64, u64)]) -> Sim {
    let mut sim = start(group, layout);
    publish(&mut sim, layout);
    sim
}

/// [`cluster`] whose simulator then records node-contract and ledger violations in
/// [`Sim::violations`] instead of panicking at the first, so a test can assert the exact list
/// (which is empty when nothing broke — an assertion that can fail, unlike one after a strict
/// run, which never returns with a violation).
pub fn cluster_recording(group: Group, layout: &[(u64, u64)]) -> Sim {
    let mut sim = cluster(group, layout);
    sim.settings_mut().strict = false;
    sim
}

/// Instant `s` seconds after the origin.
/// Drops the links between `a` and `b` and keeps the path down just long enough for the dial
/// each end sends at once (its probe) to fail: reconnecting then waits for the backoff, as in
/// libatapp's scenarios, whose nodes never probe.
pub fn cut_past_the_probes(sim: &mut Sim, a: u64, b: u64) {
    sim.link_down(NodeId(a), NodeId(b));
    sim.deliver_until_idle();
    sim.link_up(NodeId(a), NodeId(b));
}

pub fn at(s: u64) -> Instant {
    Instant::from_secs(s)
}

/// Instant `ms` milliseconds after the origin.
pub fn at_ms(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

/// One delivered message, comparable as a whole: (time, from, via, type, payload text).
pub type Got = (Instant, u64, u64, u32, String);

/// The messages `id` delivered to its application.
pub fn got(sim: &Sim, id: u64) -> Vec<Got> {
    sim.received(NodeId(id))
        .iter()
        .map(|r| {
            (
                r.at,
                r.from.0,
                r.via.0,
                r.msg_type,
                String::from_utf8(untagged(&r.payload).to_vec()).expect("test payloads are UTF-8"),
            )
        })
        .collect()
}

/// Sends `payload` from `from` to node `to`, tagged so the simulator's ledger checks it
/// (exactly one outcome, no duplicate or misdirected delivery, in order); the node must
/// accept it. [`got`] reads the text back without the tag.
pub fn send(sim: &mut Sim, from: u64, to: u64, msg_type: u32, payload: &'static str) -> MsgId {
    sim.send_tagged_body(
        NodeId(from),
        Select::Node(NodeId(to)),
        msg_type,
        payload.as_bytes(),
    )
    .1
    .unwrap_or_else(|e| panic!("send {from:#x} -> {to:#x} refused: {e}"))
}

/// A received payload without its ledger tag (as sent by [`send`]); untagged payloads as is.
pub fn untagged(payload: &[u8]) -> &[u8] {
    if switchboard_core::sim::payload_tag(payload).is_some() {
        &payload[switchboard_core::sim::TAG_LEN..]
    } else {
        payload
    }
}

/// The outcome `node` reported for `msg`: (time, outcome).
pub fn outcome(sim: &Sim, node: u64, msg: MsgId) -> Option<(Instant, Outcome)> {
    sim.outcome_of(NodeId(node), msg).map(|o| (o.at, o.outcome))
}

/// Events of `node` matching `pred`, with their time.
pub fn events_where(sim: &Sim, node: u64, pred: impl Fn(&Event) -> bool) -> Vec<(Instant, Event)> {
    sim.events(NodeId(node))
        .iter()
        .filter(|(_, e)| pred(e))
        .cloned()
        .collect()
}

/// Times at which `node` was told a dial failed (from the trace).
pub fn connect_failures(sim: &Sim, node: u64) -> Vec<String> {
    let who = format!(" {} <- connect failed", NodeId(node));
    sim.trace()
        .iter()
        .filter(|l| l.contains(&who))
        .map(|l| l.split(' ').next().unwrap_or_default().to_owned())
        .collect()
}
