//! N cycles of one hot path, for counting instructions under callgrind (criterion's own
//! iteration counts vary with timing; this runs exactly N):
//!
//! ```text
//! cargo build --release -p switchboard-benches --example cycles
//! valgrind --tool=callgrind --callgrind-out-file=cg.out target/release/examples/cycles call 10000
//! callgrind_annotate --inclusive=yes cg.out | grep -E 'cycles::(calls|rounds|sender_share)'
//! ```
//!
//! Modes: `call` — N RPC call cycles (`rpc/call_cycle`); `round` — N batches of 256 plain
//! messages (`node/send_deliver_ack_ready_route`); `send` — the same batches, with the
//! sender's share (`node/send_to_transmit_ready_route`: the sends, draining their frames,
//! handling the ack) in its own function. The setup runs outside the named functions, so
//! their inclusive cost divided by N (or N × 256) is the per-call (per-message) figure.

use std::hint::black_box;

use bytes::Bytes;
use switchboard_benches::linked::{
    call_cycle, drain, message_round_trip, ready_pair, rpc_pair, send_batch, transmitted,
};
use switchboard_core::{ids::LinkId, node::Node, time::Instant};

const PAYLOAD: &[u8; 64] = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const BATCH: usize = 256;

#[inline(never)]
fn calls(pair: &mut (Node, LinkId, Node, LinkId), now: Instant, payload: &Bytes, n: usize) {
    for _ in 0..n {
        black_box(call_cycle(pair, now, payload));
    }
}

#[inline(never)]
fn rounds(pair: &mut (Node, LinkId, Node, LinkId), now: Instant, payload: &Bytes, n: usize) {
    for _ in 0..n {
        assert_eq!(message_round_trip(pair, now, payload, BATCH), BATCH);
    }
}

/// The sender's share of one batch: the sends and draining their frames into `data`.
#[inline(never)]
fn sender_share(a: &mut Node, now: Instant, payload: &Bytes, data: &mut Vec<u8>) {
    send_batch(a, now, payload, BATCH, data);
}

/// The sender's share of one batch's end: handling the ack and draining the outcomes.
#[inline(never)]
fn sender_share_ack(a: &mut Node, now: Instant, link: LinkId, ack: &[u8]) {
    a.handle_received(now, link, Bytes::copy_from_slice(ack));
    black_box(drain(a));
}

fn sends(pair: &mut (Node, LinkId, Node, LinkId), now: Instant, payload: &Bytes, n: usize) {
    let mut data = Vec::with_capacity(BATCH * 128);
    for _ in 0..n {
        let (a, link_a, rx, link_b) = pair;
        data.clear();
        sender_share(a, now, payload, &mut data);
        rx.handle_received(now, *link_b, Bytes::copy_from_slice(&data));
        let ack = transmitted(&drain(rx));
        sender_share_ack(a, now, *link_a, &ack);
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "call".into());
    let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let payload = Bytes::from_static(PAYLOAD);
    let now = Instant::from_secs(1);
    match mode.as_str() {
        "call" => {
            let mut pair = rpc_pair();
            calls(&mut pair, now, &payload, n);
        }
        "round" => {
            let mut pair = ready_pair();
            rounds(&mut pair, now, &payload, n);
        }
        "send" => {
            let mut pair = ready_pair();
            sends(&mut pair, now, &payload, n);
        }
        other => {
            eprintln!("unknown mode {other}: call, round or send");
            std::process::exit(2);
        }
    }
}
