//! Core nodes linked by hand for the node and relay benches: the dial and the `Hello`
//! exchange are played between two real [`Node`]s, the bytes shuttled by the caller; and the
//! cycles the benches time on them (a batch of plain messages, one RPC call).

use bytes::Bytes;
use switchboard_core::{
    CallOutcome, CallSpec, RegistryEvent, RpcOutput, Select,
    config::Config,
    ids::{LinkId, NodeId},
    node::{Node, Output},
    outcome::Outcome,
    time::Instant,
};

/// Everything `node` output, drained.
pub fn drain(node: &mut Node) -> Vec<Output> {
    std::iter::from_fn(|| node.poll_output()).collect()
}

/// The bytes of every `Transmit` in `outputs`, concatenated — what a driver does with them
/// (appending each to the link's socket buffer).
#[must_use]
pub fn transmitted(outputs: &[Output]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for output in outputs {
        if let Output::Transmit { bytes: frame, .. } = output {
            bytes.extend_from_slice(frame);
        }
    }
    bytes
}

/// A new node `id` named `name` whose upstream is `parent`, linked to it at time zero.
/// Returns the child, its side of the link and the parent's side.
///
/// # Panics
///
/// If the handshake does not complete (a bug in the core).
pub fn linked_child(parent: &mut Node, id: NodeId, name: &str) -> (Node, LinkId, LinkId) {
    let t0 = Instant::ZERO;
    let mut config = Config::new(id, name);
    config.upstream = parent.id();
    config.upstream_address = format!("bench://{:#x}", parent.id().0);
    let mut child = Node::new(config, t0).expect("valid config");
    let link_child = drain(&mut child)
        .into_iter()
        .find_map(|o| match o {
            Output::Connect { link, .. } => Some(link),
            _ => None,
        })
        .expect("the upstream is dialled at start");
    let link_parent = parent.handle_accepted(t0);
    child.handle_connected(t0, link_child);
    let hello = transmitted(&drain(&mut child));
    parent.handle_received(t0, link_parent, Bytes::copy_from_slice(&hello));
    let hello_ack = transmitted(&drain(parent));
    child.handle_received(t0, link_child, Bytes::copy_from_slice(&hello_ack));
    drain(&mut child);
    assert_eq!(
        child.inspect().link_to(parent.id()),
        Some(link_child),
        "handshake done"
    );
    assert_eq!(
        parent.inspect().link_to(id),
        Some(link_parent),
        "handshake done"
    );
    (child, link_child, link_parent)
}

/// Node 0x101 with a ready direct route to its upstream 0x102, and 0x102 itself: the pair
/// the node and RPC benches drive (`(child, child's link, parent, parent's link)`).
#[must_use]
pub fn ready_pair() -> (Node, LinkId, Node, LinkId) {
    let mut parent =
        Node::new(Config::new(NodeId(0x102), "parent"), Instant::ZERO).expect("valid config");
    let (child, link_child, link_parent) = linked_child(&mut parent, NodeId(0x101), "child");
    (child, link_child, parent, link_parent)
}

/// One batch of plain messages: `count` sends from the child to the parent on the ready
/// route, their bytes handed to the parent in one read, its (coalesced) ack handed back.
/// Returns how many ended `Delivered`.
pub fn message_round_trip(
    pair: &mut (Node, LinkId, Node, LinkId),
    now: Instant,
    payload: &Bytes,
    count: usize,
) -> usize {
    let (a, link_a, b, link_b) = pair;
    for _ in 0..count {
        a.send(now, Select::Node(b.id()), 7, payload.clone())
            .expect("accepted");
    }
    let data = transmitted(&drain(a));
    b.handle_received(now, *link_b, Bytes::copy_from_slice(&data));
    let ack = transmitted(&drain(b));
    a.handle_received(now, *link_a, Bytes::copy_from_slice(&ack));
    drain(a)
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
        .count()
}

/// The sender's share of a batch: `count` sends from the child of a [`ready_pair`] to its
/// parent, and their frames drained into `data` (what a driver appends to its socket
/// buffer).
pub fn send_batch(
    child: &mut Node,
    now: Instant,
    payload: &Bytes,
    count: usize,
    data: &mut Vec<u8>,
) {
    let parent = child.inspect().config().upstream;
    for _ in 0..count {
        child
            .send(now, Select::Node(parent), 7, payload.clone())
            .expect("accepted");
    }
    while let Some(out) = child.poll_output() {
        if let Output::Transmit { bytes, .. } = out {
            data.extend_from_slice(&bytes);
        }
    }
}

/// The method the RPC pair's parent serves.
pub const ECHO: &str = "echo";

/// [`ready_pair`] where the parent serves [`ECHO`] and the child knows it from the parent's
/// discovery record (as a registry would have told it).
#[must_use]
pub fn rpc_pair() -> (Node, LinkId, Node, LinkId) {
    let (mut child, link_child, mut parent, link_parent) = ready_pair();
    let t0 = Instant::ZERO;
    parent.serve(t0, ECHO).expect("a valid method name");
    drain(&mut parent);
    let mut info = parent.discovery_info();
    info.revision = 1;
    child.handle_registry(t0, RegistryEvent::DiscoveryPut(info.into()));
    drain(&mut child);
    (child, link_child, parent, link_parent)
}

/// One call cycle on an [`rpc_pair`]: the child calls [`ECHO`] with `payload`, the request
/// reaches the parent, its handler answers with the request's own bytes, the reply reaches
/// the child and ends the call, and the acks of request and reply go back. Returns the
/// call's outcome.
///
/// # Panics
///
/// If the cycle does not complete on this very instant (a bug in the core).
pub fn call_cycle(
    pair: &mut (Node, LinkId, Node, LinkId),
    now: Instant,
    payload: &Bytes,
) -> CallOutcome {
    let (a, link_a, b, link_b) = pair;
    let call = a
        .call(now, CallSpec::new(ECHO, payload.clone()))
        .expect("a valid call");
    let request = transmitted(&drain(a));
    b.handle_received(now, *link_b, Bytes::from(request));
    let mut to_a = Vec::new();
    let mut incoming = None;
    while let Some(output) = b.poll_output() {
        match output {
            Output::Transmit { bytes, .. } => to_a.extend_from_slice(&bytes),
            Output::Rpc(RpcOutput::Request(request)) => incoming = Some(request),
            _ => {}
        }
    }
    let incoming = incoming.expect("the request reached the parent's handler");
    b.reply(now, incoming.request, incoming.payload)
        .expect("the request is open");
    to_a.extend_from_slice(&transmitted(&drain(b)));
    a.handle_received(now, *link_a, Bytes::from(to_a));
    let mut to_b = Vec::new();
    let mut done = None;
    while let Some(output) = a.poll_output() {
        match output {
            Output::Transmit { bytes, .. } => to_b.extend_from_slice(&bytes),
            Output::Rpc(RpcOutput::CallDone {
                call: ended,
                outcome,
                ..
            }) if ended == call => {
                done = Some(outcome);
            }
            _ => {}
        }
    }
    b.handle_received(now, *link_b, Bytes::from(to_b));
    drain(b);
    done.expect("the call ended on this instant")
}
