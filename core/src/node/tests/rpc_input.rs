//! RPC messages from a peer, byte by byte: what a server does with a request whose budget
//! is spent, for a method it does not serve, or repeated in a new stream; what a caller
//! does with a reply it never asked for and with bytes that are no RPC message. Typed
//! refusals and counters; never a panic, never a handler run it must not have.

use alloc::{vec, vec::Vec};

use bytes::Bytes;

use super::{config, frames::encode_data_seq, frames::encode_hello, secs, *};
use crate::{
    bus::stream::make_seq,
    rpc::{IncomingRequest, RpcOutput},
    time::Duration,
    wire::{self, Decoded, Frame, RPC_MSG_TYPE, RefuseCall, RpcMessage},
};

const PEER: u64 = 0x101;
const OWN: u64 = 0x102;

fn drain(node: &mut Node) -> Vec<Output> {
    core::iter::from_fn(|| node.poll_output()).collect()
}

/// A root node serving `echo`, with an accepted link up from `PEER`; outputs drained.
fn server() -> (Node, LinkId) {
    let mut node = Node::new(config(OWN, 0, 2, false), secs(0)).unwrap();
    node.serve(secs(0), "echo").unwrap();
    let link = node.handle_accepted(secs(0));
    node.handle_received(
        secs(0),
        link,
        Bytes::copy_from_slice(&encode_hello(NodeId(PEER))),
    );
    drain(&mut node);
    (node, link)
}

fn rpc(message: &RpcMessage<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    wire::encode_rpc(message, &mut out);
    out
}

/// The RPC messages among `outputs`' transmitted `Data` frames, owned.
fn sent_rpc(outputs: &[Output]) -> Vec<Vec<u8>> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Transmit { bytes, .. } => match wire::decode(bytes, wire::DEFAULT_MAX_FRAME) {
                Ok(Decoded::Frame(Frame::Data(d), _)) if d.msg_type == RPC_MSG_TYPE => {
                    Some(d.payload.to_vec())
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn request(call: u64, remaining_ns: u64, method: &str) -> Vec<u8> {
    rpc(&RpcMessage::Request {
        call,
        caller_incarnation: 77,
        remaining_ns,
        method,
        metadata: crate::wire::MetadataRef::EMPTY,
        payload: b"args",
    })
}

fn deliver(node: &mut Node, link: LinkId, at: Instant, seq: u64, payload: &[u8]) -> Vec<Output> {
    let frame = encode_data_seq(NodeId(PEER), NodeId(OWN), seq, RPC_MSG_TYPE, 0, payload);
    node.handle_received(at, link, frame);
    drain(node)
}

fn requests(outputs: &[Output]) -> Vec<IncomingRequest> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Rpc(RpcOutput::Request(r)) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_request_is_handed_out_with_its_budget_as_a_local_deadline() {
    let (mut node, link) = server();
    let out = deliver(
        &mut node,
        link,
        secs(3),
        make_seq(1, 1),
        &request(5, 2_500_000_000, "echo"),
    );
    let got = requests(&out);
    assert_eq!(got.len(), 1);
    assert_eq!(
        (
            got[0].from,
            got[0].method.as_str(),
            &got[0].payload[..],
            got[0].deadline
        ),
        (
            NodeId(PEER),
            "echo",
            &b"args"[..],
            secs(3) + Duration::from_millis(2_500)
        )
    );
    // No `Received`: RPC messages never reach the application as plain messages.
    assert!(!out.iter().any(|o| matches!(o, Output::Received { .. })));
    assert_eq!(node.inspect().rpc_stats().served, 1);
}

#[test]
fn a_request_whose_budget_is_spent_never_reaches_a_handler_and_is_refused_expired() {
    let (mut node, link) = server();
    let out = deliver(
        &mut node,
        link,
        secs(1),
        make_seq(1, 1),
        &request(6, 0, "echo"),
    );
    assert_eq!(requests(&out), vec![]);
    assert_eq!(
        sent_rpc(&out),
        vec![rpc(&RpcMessage::Refuse {
            call: 6,
            caller_incarnation: 77,
            reason: RefuseCall::Expired
        })]
    );
    assert_eq!(node.inspect().rpc_stats().expired_requests, 1);
}

#[test]
fn a_request_for_a_method_not_served_is_refused_not_served() {
    let (mut node, link) = server();
    let out = deliver(
        &mut node,
        link,
        secs(1),
        make_seq(1, 1),
        &request(7, 1_000, "other"),
    );
    assert_eq!(requests(&out), vec![]);
    assert_eq!(
        sent_rpc(&out),
        vec![rpc(&RpcMessage::Refuse {
            call: 7,
            caller_incarnation: 77,
            reason: RefuseCall::NotServed
        })]
    );
    assert_eq!(node.inspect().rpc_stats().not_served, 1);
}

/// The same call arrives again on a fresh stream (the bus delivers it: another stream tag):
/// the server's own memory of (caller, incarnation, call) drops it — executed once.
#[test]
fn a_request_repeated_on_a_new_stream_is_not_executed_twice() {
    let (mut node, link) = server();
    let first = deliver(
        &mut node,
        link,
        secs(1),
        make_seq(1, 1),
        &request(8, 9_000_000_000, "echo"),
    );
    assert_eq!(requests(&first).len(), 1);
    let again = deliver(
        &mut node,
        link,
        secs(2),
        make_seq(2, 1),
        &request(8, 9_000_000_000, "echo"),
    );
    assert_eq!(requests(&again), vec![]);
    assert_eq!(node.inspect().rpc_stats().duplicate_requests, 1);
    assert_eq!(node.inspect().rpc_stats().served, 1);
}

#[test]
fn a_reply_for_no_call_and_bytes_that_are_no_rpc_message_are_counted_and_dropped() {
    let (mut node, link) = server();
    let reply = rpc(&RpcMessage::Reply {
        call: 1,
        caller_incarnation: node.incarnation(),
        metadata: crate::wire::MetadataRef::EMPTY,
        payload: b"who asked",
    });
    let out = deliver(&mut node, link, secs(1), make_seq(1, 1), &reply);
    assert!(
        !out.iter()
            .any(|o| matches!(o, Output::Rpc(_) | Output::Received { .. }))
    );
    let out = deliver(&mut node, link, secs(1), make_seq(1, 2), b"\x09garbage");
    assert!(
        !out.iter()
            .any(|o| matches!(o, Output::Rpc(_) | Output::Received { .. }))
    );
    let stats = node.inspect().rpc_stats();
    assert_eq!((stats.late_replies, stats.bad_messages), (1, 1));
}

#[test]
fn the_reserved_message_type_is_refused_to_send() {
    let (mut node, _) = server();
    assert_eq!(
        node.send(
            secs(1),
            Select::Node(NodeId(PEER)),
            RPC_MSG_TYPE,
            Bytes::new()
        ),
        Err(SendError::ReservedType)
    );
}

/// A request announcing a budget of 100 years is served with the server's own maximum
/// (`max_call_budget`, 5 minutes by default): its deadline is now + 5 min exactly, the cut is
/// counted, and a reply one nanosecond past it is dropped. A budget at the maximum is kept.
#[test]
fn a_budget_from_the_wire_is_capped_by_max_call_budget() {
    let (mut node, link) = server();
    assert_eq!(
        node.inspect().config().max_call_budget,
        Duration::from_secs(300)
    );
    let century_ns = 100 * 365 * 24 * 3_600 * 1_000_000_000_u64;
    let out = deliver(
        &mut node,
        link,
        secs(3),
        make_seq(1, 1),
        &request(5, century_ns, "echo"),
    );
    let got = requests(&out);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].deadline, secs(3) + Duration::from_secs(300));
    assert_eq!(node.inspect().rpc_stats().budgets_capped, 1);
    let late = secs(3) + Duration::from_secs(300) + Duration::from_nanos(1);
    assert!(
        node.reply(late, got[0].request, Bytes::from_static(b"late"))
            .is_err()
    );
    assert_eq!(node.inspect().rpc_stats().dropped_replies, 1);

    let out = deliver(
        &mut node,
        link,
        secs(400),
        make_seq(1, 2),
        &request(6, 300_000_000_000, "echo"),
    );
    let got = requests(&out);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].deadline, secs(400) + Duration::from_secs(300));
    assert_eq!(
        node.inspect().rpc_stats().budgets_capped,
        1,
        "the maximum itself is no cut"
    );
}

/// `u64::MAX` nanoseconds (about 584 years) and a smaller configured maximum: capped, no
/// overflow.
#[test]
fn the_largest_budget_is_capped_to_a_configured_maximum() {
    let mut c = config(OWN, 0, 2, false);
    c.max_call_budget = Duration::from_millis(1_500);
    let mut node = Node::new(c, secs(0)).unwrap();
    node.serve(secs(0), "echo").unwrap();
    let link = node.handle_accepted(secs(0));
    node.handle_received(
        secs(0),
        link,
        Bytes::copy_from_slice(&encode_hello(NodeId(PEER))),
    );
    drain(&mut node);
    let out = deliver(
        &mut node,
        link,
        secs(2),
        make_seq(1, 1),
        &request(5, u64::MAX, "echo"),
    );
    let got = requests(&out);
    assert_eq!(got[0].deadline, secs(2) + Duration::from_millis(1_500));
    assert_eq!(node.inspect().rpc_stats().budgets_capped, 1);
}
