//! A proxy's relayed `Data` frames for one link go out as one `Transmit` — the same frames,
//! each one hop further, back to back — split only where a batch would pass 64 KiB.

use alloc::{vec, vec::Vec};

use bytes::Bytes;

use super::{
    config,
    frames::{encode_data_seq, encode_hello},
    secs, *,
};

fn drain(node: &mut Node) -> Vec<Output> {
    core::iter::from_fn(|| node.poll_output()).collect()
}

const SOURCE: NodeId = NodeId(0x101);
const TARGET: NodeId = NodeId(0x103);

/// A proxy (0x102) with accepted links up from the source and the target.
fn proxy() -> (Node, LinkId, LinkId) {
    let mut node = Node::new(config(0x102, 0, 2, false), secs(0)).unwrap();
    let from_source = node.handle_accepted(secs(0));
    node.handle_received(secs(0), from_source, encode_hello(SOURCE));
    let to_target = node.handle_accepted(secs(0));
    node.handle_received(secs(0), to_target, encode_hello(TARGET));
    drain(&mut node);
    assert_eq!(node.inspect().link_to(TARGET), Some(to_target));
    (node, from_source, to_target)
}

/// Frames `seqs` from the source to the target with `hop_count` hops so far, back to back.
fn frames(seqs: core::ops::RangeInclusive<u64>, hop_count: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for seq in seqs {
        out.extend_from_slice(&encode_data_seq(SOURCE, TARGET, seq, 7, hop_count, payload));
    }
    out
}

#[test]
fn relayed_frames_for_one_link_are_one_transmit_each_one_hop_further() {
    let (mut node, from_source, to_target) = proxy();
    let inbound = frames(1..=3, 0, b"relayed");
    node.handle_received(secs(1), from_source, Bytes::from(inbound));
    assert_eq!(
        drain(&mut node),
        vec![Output::Transmit {
            link: to_target,
            bytes: Bytes::from(frames(1..=3, 1, b"relayed")),
        }]
    );
}

#[test]
fn a_relayed_batch_is_split_where_it_would_pass_64_kib() {
    let (mut node, from_source, to_target) = proxy();
    // Three frames of 30,045 bytes: two fit in 64 KiB, the third starts the next batch.
    let payload = vec![0xA5; 30_000];
    node.handle_received(
        secs(1),
        from_source,
        Bytes::from(frames(1..=3, 0, &payload)),
    );
    assert_eq!(
        drain(&mut node),
        vec![
            Output::Transmit {
                link: to_target,
                bytes: Bytes::from(frames(1..=2, 1, &payload)),
            },
            Output::Transmit {
                link: to_target,
                bytes: Bytes::from(frames(3..=3, 1, &payload)),
            },
        ]
    );
}
