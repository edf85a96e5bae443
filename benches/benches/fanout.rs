//! The core's broadcast fan-out against unicasting the same frames, full cycle.
//!
//! - `fanout/broadcast_16`: a hub (0x200) with 16 leaves below it (each linked by hand, the
//!   hub knowing their discovery records) broadcasts one 64-byte message to all of them
//!   (`Node::broadcast`, no filter); each leaf's `Data` frame is handed to that leaf, which
//!   delivers it and acknowledges it, and the acks go back to the hub, which reports the
//!   broadcast done. Per recipient frame.
//! - `fanout/unicast_16`: the same 16 frames sent with one `Node::send` per leaf, same cycle.
//!
//! Setup checks one cycle of each: every leaf receives the exact payload once and the hub
//! reports all 16 delivered (`BroadcastDone` / 16 `Delivered` outcomes).
//!
//! Run: `cargo bench -p switchboard-benches --bench fanout`.

use std::{hint::black_box, time::Duration as StdDuration};

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use switchboard_benches::linked::{drain, linked_child};
use switchboard_core::{
    BroadcastSpec, RpcOutput, Select,
    config::Config,
    ids::{LinkId, NodeId},
    node::{Node, Output},
    outcome::Outcome,
    registry::RegistryEvent,
    time::Instant,
};

const PAYLOAD: &[u8; 64] = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const LEAVES: usize = 16;
const HUB: NodeId = NodeId(0x200);
const MSG_TYPE: u32 = 7;

/// The hub, its leaves, and each leaf's link at the hub and at the leaf.
struct Star {
    hub: Node,
    leaves: Vec<(Node, LinkId, LinkId)>,
}

impl Star {
    fn new() -> Star {
        let t0 = Instant::ZERO;
        let mut hub = Node::new(Config::new(HUB, "hub"), t0).expect("valid config");
        let mut leaves = Vec::new();
        for i in 0..LEAVES {
            let id = NodeId(0x201 + i as u64);
            let (leaf, at_leaf, at_hub) = linked_child(&mut hub, id, &format!("leaf-{i}"));
            let info = leaf.discovery_info();
            let topology = leaf.inspect().config().topology_info(HUB);
            hub.handle_registry(t0, RegistryEvent::DiscoveryPut(info.into()));
            hub.handle_registry(t0, RegistryEvent::TopologyPut(topology.into()));
            leaves.push((leaf, at_leaf, at_hub));
        }
        drain(&mut hub);
        Star { hub, leaves }
    }

    /// Hands the hub's transmits to their leaves, each leaf's outputs (its delivery and its
    /// ack) back to the hub; returns the payloads the leaves delivered and the hub's outputs.
    fn cycle(&mut self, now: Instant, hub_out: &mut Vec<Output>, delivered: &mut Vec<Bytes>) {
        let Star { hub, leaves } = self;
        while let Some(out) = hub.poll_output() {
            hub_out.push(out);
        }
        for out in hub_out.drain(..) {
            let Output::Transmit { link, bytes } = out else {
                continue;
            };
            let Some((leaf, at_leaf, at_hub)) = leaves.iter_mut().find(|l| l.2 == link) else {
                continue;
            };
            leaf.handle_received(now, *at_leaf, bytes);
            while let Some(out) = leaf.poll_output() {
                match out {
                    Output::Received { payload, .. } => delivered.push(payload),
                    Output::Transmit { bytes, .. } => hub.handle_received(now, *at_hub, bytes),
                    _ => {}
                }
            }
        }
        while let Some(out) = hub.poll_output() {
            hub_out.push(out);
        }
    }

    fn broadcast(&mut self, now: Instant) {
        let spec = BroadcastSpec::new(None, MSG_TYPE, Bytes::from_static(PAYLOAD));
        self.hub.broadcast(now, spec).expect("accepted");
    }

    fn unicast(&mut self, now: Instant) {
        for (leaf, _, _) in &self.leaves {
            let to = Select::Node(leaf.id());
            self.hub
                .send(now, to, MSG_TYPE, Bytes::from_static(PAYLOAD))
                .expect("accepted");
        }
    }
}

fn fanout(c: &mut Criterion) {
    let now = Instant::from_secs(1);
    let mut star = Star::new();
    let mut hub_out = Vec::new();
    let mut delivered = Vec::new();

    // Checked once each: every leaf gets the payload once, the hub hears of all 16.
    star.broadcast(now);
    star.cycle(now, &mut hub_out, &mut delivered);
    assert_eq!(delivered, vec![Bytes::from_static(PAYLOAD); LEAVES]);
    let done = hub_out.iter().find_map(|o| match o {
        Output::Rpc(RpcOutput::BroadcastDone(done)) => Some(done),
        _ => None,
    });
    assert_eq!(done.map(|d| d.delivered.len()), Some(LEAVES), "{hub_out:?}");
    delivered.clear();
    hub_out.clear();
    star.unicast(now);
    star.cycle(now, &mut hub_out, &mut delivered);
    assert_eq!(delivered, vec![Bytes::from_static(PAYLOAD); LEAVES]);
    let acked = hub_out
        .iter()
        .filter(|o| {
            matches!(
                o,
                Output::Outcome {
                    outcome: Outcome::Delivered,
                    ..
                }
            )
        })
        .count();
    assert_eq!(acked, LEAVES, "{hub_out:?}");

    let mut group = c.benchmark_group("fanout");
    group
        .warm_up_time(StdDuration::from_secs(1))
        .measurement_time(StdDuration::from_secs(3))
        .throughput(Throughput::Elements(LEAVES as u64));
    group.bench_function("broadcast_16", |b| {
        b.iter(|| {
            delivered.clear();
            hub_out.clear();
            star.broadcast(now);
            star.cycle(now, &mut hub_out, &mut delivered);
            black_box(delivered.len())
        });
    });
    group.bench_function("unicast_16", |b| {
        b.iter(|| {
            delivered.clear();
            hub_out.clear();
            star.unicast(now);
            star.cycle(now, &mut hub_out, &mut delivered);
            black_box(delivered.len())
        });
    });
    group.finish();
}

criterion_group!(benches, fanout);
criterion_main!(benches);
