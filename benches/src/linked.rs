//! Core nodes linked by hand for the node and relay benches: the dial and the `Hello`
//! exchange are played between two real [`Node`]s, the bytes shuttled by the caller.

use bytes::Bytes;
use switchboard_core::{
    config::Config,
    ids::{LinkId, NodeId},
    node::{Node, Output},
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
        child.link_to(parent.id()),
        Some(link_child),
        "handshake done"
    );
    assert_eq!(parent.link_to(id), Some(link_parent), "handshake done");
    (child, link_child, link_parent)
}
