//! Property test: random operation and event sequences driven through one `Node` (peers are
//! played by the test, including lying and garbage-sending ones). After every step: every
//! outcome names an accepted message and no message ends twice; no record timer outlives its
//! record; every endpoint-bound record has exactly one endpoint handle and a `READY` record
//! resolves to a live link; queues stay within their limits and exist only while a route
//! record may still deliver them; `poll_timeout` is never in the past. At the end (after shutdown) every accepted message ended exactly once.

use alloc::{boxed::Box, collections::BTreeMap, vec, vec::Vec};

use bytes::Bytes;
use proptest::{
    prelude::*,
    test_runner::{Config as ProptestConfig, FileFailurePersistence},
};

use super::{
    config, disc,
    frames::{bytes, encode_data, encode_hello, encode_hello_ack},
    topo, *,
};
use crate::{
    connector::{LinkState, RouteFlags},
    time::Duration,
};

const OWN: u64 = 1;
const LIMIT: usize = 3;

#[derive(Clone, Debug)]
enum Op {
    Send {
        to: u64,
        len: usize,
    },
    DiscoveryPut {
        id: u64,
        rev: u64,
    },
    DiscoveryDelete {
        id: u64,
        rev: u64,
    },
    TopologyPut {
        id: u64,
        up: u64,
        rev: u64,
    },
    TopologyDelete {
        id: u64,
        rev: u64,
    },
    /// Settle the `k`-th pending dial: connected (and the peer says hello as `claim`, or as
    /// itself when `claim` is 0) or failed.
    Dial {
        k: usize,
        ok: bool,
        claim: u64,
    },
    Accept {
        hello: u64,
    },
    Close {
        k: usize,
    },
    Garbage {
        k: usize,
        byte: u8,
    },
    DataIn {
        k: usize,
        dst: u64,
    },
    Advance {
        ms: u64,
    },
    /// The peer on link `k` acknowledges the `i`-th `Data` frame this node transmitted.
    AckIn {
        k: usize,
        i: usize,
    },
    /// A relay on link `k` reports the `i`-th transmitted `Data` frame unreachable.
    UnreachableIn {
        k: usize,
        i: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let id = 0u64..7;
    prop_oneof![
        4 => (id.clone(), 0usize..5).prop_map(|(to, len)| Op::Send { to, len }),
        2 => (id.clone(), 1u64..30).prop_map(|(id, rev)| Op::DiscoveryPut { id, rev }),
        1 => (id.clone(), 1u64..30).prop_map(|(id, rev)| Op::DiscoveryDelete { id, rev }),
        2 => (id.clone(), id.clone(), 1u64..30)
            .prop_map(|(id, up, rev)| Op::TopologyPut { id, up, rev }),
        1 => (id.clone(), 1u64..30).prop_map(|(id, rev)| Op::TopologyDelete { id, rev }),
        3 => (0usize..4, any::<bool>(), prop_oneof![4 => Just(0u64), 1 => 0u64..7])
            .prop_map(|(k, ok, claim)| Op::Dial { k, ok, claim }),
        1 => id.clone().prop_map(|hello| Op::Accept { hello }),
        1 => (0usize..4).prop_map(|k| Op::Close { k }),
        1 => (0usize..4, any::<u8>()).prop_map(|(k, byte)| Op::Garbage { k, byte }),
        1 => (0usize..4, id).prop_map(|(k, dst)| Op::DataIn { k, dst }),
        3 => (0u64..20_000).prop_map(|ms| Op::Advance { ms }),
        3 => (0usize..4, 0usize..64).prop_map(|(k, i)| Op::AckIn { k, i }),
        1 => (0usize..4, 0usize..64).prop_map(|(k, i)| Op::UnreachableIn { k, i }),
    ]
}

struct Driver {
    node: Node,
    now: Instant,
    /// Dials not yet settled: (link, dialled peer).
    dials: Vec<(LinkId, NodeId)>,
    /// Links the driver considers open.
    links: Vec<LinkId>,
    /// Outcomes seen per accepted message.
    outcomes: BTreeMap<MsgId, u32>,
    /// (dst, seq) of every `Data` frame this node originated.
    transmitted: Vec<(NodeId, u64)>,
}

impl Driver {
    fn drain(&mut self) -> Result<(), TestCaseError> {
        while let Some(out) = self.node.poll_output() {
            match out {
                Output::Connect { link, peer, .. } => self.dials.push((link, peer)),
                Output::Close { link } => {
                    self.links.retain(|&l| l != link);
                    self.dials.retain(|&(l, _)| l != link);
                }
                Output::Outcome { msg, .. } => {
                    let count = self.outcomes.get_mut(&msg);
                    prop_assert!(count.is_some(), "outcome for unknown {msg}");
                    let count = count.expect("checked");
                    *count += 1;
                    prop_assert_eq!(*count, 1, "{} ended twice", msg);
                }
                Output::Transmit { bytes, .. } => {
                    if let Ok(crate::wire::Decoded::Frame(crate::wire::Frame::Data(d), _)) =
                        crate::wire::decode(&bytes, crate::wire::DEFAULT_MAX_FRAME)
                        && d.src == NodeId(OWN)
                    {
                        self.transmitted.push((d.dst, d.seq));
                    }
                }
                Output::Received { .. } | Output::Event(_) | Output::Rpc(_) => {}
            }
        }
        Ok(())
    }

    fn step(&mut self, op: Op) -> Result<(), TestCaseError> {
        let now = self.now;
        match op {
            Op::Send { to, len } => {
                let payload = Bytes::from(vec![7u8; len]);
                if let Ok(msg) = self.node.send(now, Select::Node(NodeId(to)), 1, payload) {
                    self.outcomes.insert(msg, 0);
                }
            }
            Op::DiscoveryPut { id, rev } => {
                self.node
                    .handle_registry(now, RegistryEvent::DiscoveryPut(disc(id, rev).into()));
            }
            Op::DiscoveryDelete { id, rev } => self.node.handle_registry(
                now,
                RegistryEvent::DiscoveryDelete {
                    id: NodeId(id),
                    name: alloc::format!("node-{id:x}"),
                    revision: rev,
                },
            ),
            Op::TopologyPut { id, up, rev } => {
                self.node
                    .handle_registry(now, RegistryEvent::TopologyPut(topo(id, up, rev).into()));
            }
            Op::TopologyDelete { id, rev } => self.node.handle_registry(
                now,
                RegistryEvent::TopologyDelete {
                    id: NodeId(id),
                    revision: rev,
                },
            ),
            Op::Dial { k, ok, claim } => {
                if self.dials.is_empty() {
                    return Ok(());
                }
                let (link, peer) = self.dials.remove(k % self.dials.len());
                if ok {
                    self.node.handle_connected(now, link);
                    let id = if claim == 0 { peer } else { NodeId(claim) };
                    self.node.handle_received(
                        now,
                        link,
                        Bytes::copy_from_slice(&encode_hello_ack(id)),
                    );
                    self.links.push(link);
                } else {
                    self.node.handle_connect_failed(now, link);
                }
            }
            Op::Accept { hello } => {
                let link = self.node.handle_accepted(now);
                self.node.handle_received(
                    now,
                    link,
                    Bytes::copy_from_slice(&encode_hello(NodeId(hello))),
                );
                self.links.push(link);
            }
            Op::Close { k } => {
                if !self.links.is_empty() {
                    let link = self.links.remove(k % self.links.len());
                    self.node.handle_closed(now, link);
                }
            }
            Op::Garbage { k, byte } => {
                if !self.links.is_empty() {
                    let link = self.links[k % self.links.len()];
                    self.node.handle_received(
                        now,
                        link,
                        Bytes::copy_from_slice(&[0, 0, 0, 1, byte]),
                    );
                }
            }
            Op::DataIn { k, dst } => {
                if !self.links.is_empty() {
                    let link = self.links[k % self.links.len()];
                    let frame = encode_data(NodeId(5), NodeId(dst), 3, 0, b"in");
                    self.node
                        .handle_received(now, link, Bytes::copy_from_slice(&frame));
                }
            }
            Op::AckIn { k, i } | Op::UnreachableIn { k, i } => {
                if !self.links.is_empty() && !self.transmitted.is_empty() {
                    let link = self.links[k % self.links.len()];
                    let (dst, seq) = self.transmitted[i % self.transmitted.len()];
                    let frame = if matches!(op, Op::AckIn { .. }) {
                        crate::wire::Frame::Ack(crate::wire::Ack {
                            src: NodeId(OWN),
                            dst,
                            seq,
                            dst_incarnation: super::frames::peer_incarnation(dst),
                            reset: None,
                        })
                    } else {
                        crate::wire::Frame::Unreachable(crate::wire::Unreachable {
                            src: NodeId(OWN),
                            dst,
                            seq,
                            reason: crate::wire::UnreachableReason::NoRoute,
                            dst_incarnation: 0,
                        })
                    };
                    self.node
                        .handle_received(now, link, Bytes::copy_from_slice(&bytes(&frame)));
                }
            }
            Op::Advance { ms } => {
                self.now += Duration::from_millis(ms);
                let now = self.now;
                // Fire every deadline on the way, in order, like a real driver.
                let mut rounds = 0;
                while let Some(at) = self.node.poll_timeout().filter(|&at| at <= now) {
                    rounds += 1;
                    prop_assert!(
                        rounds < 1_000,
                        "handle_timeout makes no progress at {:?}",
                        at
                    );
                    self.node.handle_timeout(at);
                    self.drain()?;
                }
                self.node.handle_timeout(now);
            }
        }
        Ok(())
    }

    fn check(&self) -> Result<(), TestCaseError> {
        let node = &self.node;
        let connector = node.inspect().connector();
        let mut armed = 0;
        for target in connector.targets() {
            let view = connector.view(target).expect("listed");
            if view.timer.is_some() {
                armed += 1;
            }
            if view.endpoint {
                let key = node.inspect().endpoints().find_by_id(target);
                prop_assert!(key.is_some(), "record {} has no endpoint", target);
                let handles = key
                    .and_then(|k| node.inspect().endpoints().get(k))
                    .map(crate::endpoint::Endpoint::handles);
                prop_assert_eq!(handles, Some(1), "endpoint of {}", target);
            }
            if view.flags.contains(RouteFlags::READY) {
                let hop = connector.ready_hop(target);
                prop_assert!(hop.is_some(), "READY {} resolves to no hop", target);
                let hop = hop.expect("checked");
                prop_assert_eq!(
                    connector.link_state(hop),
                    Some(LinkState::Up),
                    "READY {} via {} without an up link",
                    target,
                    hop
                );
                prop_assert!(node.inspect().link_to(hop).is_some());
            }
        }
        prop_assert_eq!(
            armed,
            connector.timer_count(),
            "a timer outlived its record"
        );
        for (_, endpoint) in node.inspect().endpoints().iter() {
            prop_assert!(endpoint.queue().len() <= LIMIT);
            let bound = connector.has_endpoint(endpoint.id());
            prop_assert_eq!(endpoint.handles(), u32::from(bound));
            // No silent loss: a queue only exists while a record may still deliver it.
            prop_assert!(
                bound || endpoint.queue().is_empty(),
                "{} queued for {} with no route record",
                endpoint.queue().len(),
                endpoint.id()
            );
        }
        if let Some(at) = node.poll_timeout() {
            prop_assert!(
                at >= self.now,
                "poll_timeout {:?} before now {:?}",
                at,
                self.now
            );
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "../proptest-regressions/node_ops.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_operations_keep_the_node_invariants(
        direct in any::<bool>(),
        upstream in prop_oneof![Just(0u64), Just(2u64)],
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let mut c = config(OWN, upstream, 2, direct);
        c.send_buffer_number = LIMIT;
        c.message_timeout = Duration::from_secs(8);
        let node = Node::new(c, Instant::ZERO).unwrap();
        let mut d = Driver {
            node,
            now: Instant::ZERO,
            dials: Vec::new(),
            links: Vec::new(),
            outcomes: BTreeMap::new(),
            transmitted: Vec::new(),
        };
        d.drain()?;
        for op in ops {
            d.step(op)?;
            d.drain()?;
            d.check()?;
        }
        d.node.shutdown(d.now);
        d.drain()?;
        for (msg, count) in &d.outcomes {
            prop_assert_eq!(*count, 1, "{} ended {} times", msg, count);
        }
        prop_assert_eq!(d.node.inspect().connector().timer_count(), 0);
    }
}
