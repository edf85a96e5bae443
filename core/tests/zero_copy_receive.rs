//! Zero-copy receive: a payload reaches `Output::Received` as a slice of the bytes the driver
//! handed to `handle_received`, never copied. Proved two ways: every delivered payload points
//! into the received buffer, and this test binary's counting allocator shows the node
//! allocating far less than one payload's worth per delivered message.

use std::{
    alloc::{GlobalAlloc, Layout, System},
    cell::Cell,
};

use bytes::Bytes;
use switchboard_core::{
    bus::{handshake::PROTOCOL_VERSIONS, stream::make_seq},
    config::Config,
    ids::NodeId,
    node::{Node, Output},
    time::Instant,
    wire::{self, Data, Frame, Hello},
};

thread_local! {
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

/// Forwards to the system allocator, adding each request's size to the calling thread's
/// counter (tests run on separate threads, so they do not see each other's allocations).
struct Counting;

#[expect(
    unsafe_code,
    reason = "a global allocator is an unsafe trait; this one only forwards to System"
)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.with(|a| a.set(a.get() + layout.size()));
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.with(|a| a.set(a.get() + new_size));
        // SAFETY: the caller's contract for `realloc` is passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocated() -> usize {
    ALLOCATED.with(Cell::get)
}

const OWN: NodeId = NodeId(0x301);
const PEER: NodeId = NodeId(0x302);
const MESSAGES: u32 = 200;
const PAYLOAD_LEN: usize = 4096;

fn encode(frame: &Frame<'_>, into: &mut Vec<u8>) {
    wire::encode(frame, into).expect("test frames fit");
}

/// A node with one accepted, handshaken link from `PEER`.
fn node_with_link() -> (Node, switchboard_core::ids::LinkId) {
    let mut node = Node::new(Config::new(OWN, "receiver"), Instant::ZERO).expect("valid config");
    let link = node.handle_accepted(Instant::ZERO);
    let mut hello = Vec::new();
    encode(
        &Frame::Hello(Hello {
            node: PEER,
            incarnation: 7,
            versions: PROTOCOL_VERSIONS,
            name: "sender",
            challenge: None,
        }),
        &mut hello,
    );
    node.handle_received(Instant::ZERO, link, Bytes::from(hello));
    while node.poll_output().is_some() {}
    assert_eq!(node.inspect().link_peer(link), Some(PEER));
    (node, link)
}

/// `MESSAGES` Data frames of one stream from counter `first`, payload `i` filled with byte `i`.
fn data_frames(first: u32) -> Vec<u8> {
    let mut bytes = Vec::new();
    let payloads: Vec<Vec<u8>> = (0..MESSAGES).map(|i| vec![i as u8; PAYLOAD_LEN]).collect();
    for (i, payload) in payloads.iter().enumerate() {
        encode(
            &Frame::Data(Data {
                src: PEER,
                dst: OWN,
                seq: make_seq(9, first + i as u32),
                dst_incarnation: 0,
                retransmit: false,
                msg_type: 5,
                hop_count: 0,
                payload,
            }),
            &mut bytes,
        );
    }
    bytes
}

#[test]
fn delivered_payloads_are_slices_of_the_received_bytes_and_nothing_copies_them() {
    let (mut node, link) = node_with_link();
    // A first batch grows the node's output queue to its working size.
    node.handle_received(Instant::from_millis(1), link, Bytes::from(data_frames(1)));
    while node.poll_output().is_some() {}
    let chunk = Bytes::from(data_frames(MESSAGES + 1));
    let range = chunk.as_ptr_range();
    let mut delivered = Vec::with_capacity(MESSAGES as usize);
    let before = allocated();
    node.handle_received(Instant::from_millis(2), link, chunk);
    let mut acks = 0;
    while let Some(output) = node.poll_output() {
        match output {
            Output::Received {
                from,
                via,
                msg_type,
                payload,
            } => delivered.push((from, via, msg_type, payload)),
            Output::Transmit { .. } => acks += 1,
            other => panic!("unexpected output {other:?}"),
        }
    }
    let used = allocated() - before;
    eprintln!("allocated during the measured batch: {used} bytes");

    assert_eq!(delivered.len(), MESSAGES as usize);
    assert_eq!(acks, 1, "one coalesced ack for the whole batch");
    for (i, (from, via, msg_type, payload)) in delivered.iter().enumerate() {
        assert_eq!((*from, *via, *msg_type), (PEER, PEER, 5));
        assert_eq!(payload.as_ref(), vec![i as u8; PAYLOAD_LEN].as_slice());
        let slice = payload.as_ptr_range();
        assert!(
            range.start <= slice.start && slice.end <= range.end,
            "payload {i} is not a slice of the received bytes"
        );
    }
    // 200 payloads of 4 KiB = 800 KiB delivered; in steady state the node allocates only
    // the one ack frame it sends back (< 1 KiB), nothing per message.
    assert!(
        used < 1024,
        "allocated {used} bytes while receiving {} payload bytes",
        MESSAGES as usize * PAYLOAD_LEN
    );
}

#[test]
fn a_frame_split_across_reads_is_copied_once_and_still_delivered_exactly() {
    let (mut node, link) = node_with_link();
    let frames = data_frames(1);
    // Cut inside the third frame: the first two are slices of the first chunk, the rest of
    // the stream is reassembled in the reader's spill buffer.
    let cut = 2 * (wire::HEADER_LEN + 37 + PAYLOAD_LEN) + 100;
    let (first, second) = frames.split_at(cut);
    let first = Bytes::copy_from_slice(first);
    let first_range = first.as_ptr_range();
    node.handle_received(Instant::from_millis(1), link, first);
    node.handle_received(
        Instant::from_millis(2),
        link,
        Bytes::copy_from_slice(second),
    );
    let delivered: Vec<Bytes> = std::iter::from_fn(|| node.poll_output())
        .filter_map(|o| match o {
            Output::Received { payload, .. } => Some(payload),
            _ => None,
        })
        .collect();
    assert_eq!(delivered.len(), MESSAGES as usize);
    for (i, payload) in delivered.iter().enumerate() {
        assert_eq!(payload.as_ref(), vec![i as u8; PAYLOAD_LEN].as_slice());
    }
    for payload in &delivered[..2] {
        let slice = payload.as_ptr_range();
        assert!(first_range.start <= slice.start && slice.end <= first_range.end);
    }
}
