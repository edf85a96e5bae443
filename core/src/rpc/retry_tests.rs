//! Retries, the retry budget and hedging on the RPC machine, with the scripted host of
//! `machine_tests`: exact outcomes, exact instants on virtual time, exact bytes.

use alloc::{vec, vec::Vec};

use bytes::Bytes;

use super::{
    CallError, CallId, CallOutcome, CallSpec, Rpc, RpcInput, RpcSettings,
    machine_tests::{
        INCARNATION, S1, S2, Script, at, done_by, machine, message, refused_by, request_bytes,
        settings,
    },
    retry::RetryConfig,
};
use crate::{
    event::Evidence,
    ids::NodeId,
    outcome::{FailReason, Outcome},
    time::{Duration, Instant},
    wire::{self, RefuseCall, RpcMessage},
};

fn two_servers() -> Script {
    Script {
        servers: vec![S1, S2],
        ..Script::default()
    }
}

fn machine_with(retry: RetryConfig) -> Rpc {
    Rpc::new(
        RpcSettings {
            retry,
            ..settings()
        },
        core::iter::empty(),
    )
}

fn destinations(host: &Script) -> Vec<NodeId> {
    host.sent.iter().map(|s| s.to).collect()
}

/// The backoffs of the machine's seeded generator (`settings().dedup_seed`), in order: each
/// within [ceiling / 2, ceiling] of 25, 50, 100, 200 ms.
const BACKOFFS_NS: [u64; 4] = [24_038_625, 36_402_534, 89_924_506, 182_864_951];

/// A shed request (`Overloaded`: provably unexecuted) is retried after the first backoff,
/// at the other server, with the same call id; the retry's reply ends the call.
#[test]
fn a_shed_request_is_retried_at_the_other_server_after_the_backoff() {
    let mut rpc = machine(&[]);
    let mut host = two_servers();
    let call = rpc
        .call(at(0), CallSpec::new("echo", Bytes::new()), &mut host)
        .unwrap();
    refused_by(&mut rpc, &mut host, S1, call, RefuseCall::Overloaded);
    assert!(host.outputs.is_empty());
    let retry_at = at(100) + Duration::from_nanos(BACKOFFS_NS[0]);
    assert_eq!(rpc.next_deadline(), Some(retry_at));
    rpc.handle_timeout(retry_at - Duration::from_nanos(1), &mut host);
    assert_eq!(destinations(&host), [S1]);
    rpc.handle_timeout(retry_at, &mut host);
    assert_eq!(destinations(&host), [S1, S2]);
    let remaining = Duration::from_secs(5) - (retry_at - Instant::ZERO);
    assert_eq!(host.sent[1].bytes, request_bytes(call.0, remaining, b""));
    let reply = RpcMessage::Reply {
        call: call.0,
        caller_incarnation: INCARNATION,
        metadata: wire::MetadataRef::EMPTY,
        payload: b"ok",
    };
    host.inputs.push_back(message(S2, &reply));
    rpc.settle(at(400), &mut host);
    let ok = CallOutcome::Reply(Bytes::from_static(b"ok"));
    assert_eq!(host.outputs, [done_by(call, ok, S2)]);
    let stats = rpc.stats();
    assert_eq!(
        (stats.retries, stats.budget_exhausted, stats.in_flight),
        (1, 0, 0)
    );
}

/// Refused every time, a call makes exactly 5 attempts, each after its backoff (the
/// schedule of the seeded generator), alternating servers, then ends with the last outcome.
#[test]
fn a_call_makes_at_most_five_attempts_on_the_backoff_schedule() {
    let mut rpc = machine(&[]);
    let mut host = two_servers();
    let call = rpc
        .call(at(0), CallSpec::new("echo", Bytes::new()), &mut host)
        .unwrap();
    let mut now = at(0);
    let mut instants = Vec::new();
    for (i, server) in [S1, S2, S1, S2, S1].into_iter().enumerate() {
        assert_eq!(host.sent.last().map(|s| s.to), Some(server));
        let refuse = RpcMessage::Refuse {
            call: call.0,
            caller_incarnation: INCARNATION,
            reason: RefuseCall::Overloaded,
        };
        host.inputs.push_back(message(server, &refuse));
        rpc.settle(now, &mut host);
        if i == 4 {
            break;
        }
        now = rpc.next_deadline().unwrap();
        instants.push(now);
        rpc.handle_timeout(now, &mut host);
    }
    let mut expected = Vec::new();
    let mut t = at(0);
    for backoff in BACKOFFS_NS {
        t += Duration::from_nanos(backoff);
        expected.push(t);
    }
    assert_eq!(instants, expected);
    assert_eq!(host.sent.len(), 5);
    let overloaded = CallOutcome::Failed(FailReason::Overloaded);
    assert_eq!(host.outputs, [done_by(call, overloaded, S1)]);
    assert_eq!(rpc.stats().retries, 4);
}

/// Without budget (no reserve, no deposits) a retryable end is final, and counted.
#[test]
fn a_retry_without_budget_ends_the_call_with_the_last_outcome() {
    let mut rpc = machine_with(RetryConfig {
        budget_percent: 0,
        budget_min_per_sec: 0,
        ..RetryConfig::default()
    });
    let mut host = two_servers();
    let call = rpc
        .call(at(0), CallSpec::new("echo", Bytes::new()), &mut host)
        .unwrap();
    refused_by(&mut rpc, &mut host, S1, call, RefuseCall::Overloaded);
    let overloaded = CallOutcome::Failed(FailReason::Overloaded);
    assert_eq!(host.outputs, [done_by(call, overloaded, S1)]);
    let stats = rpc.stats();
    assert_eq!((stats.retries, stats.budget_exhausted), (0, 1));
}

/// Deposits pay for retries: with no reserve, 5 calls (20 % each) pay for exactly one.
#[test]
fn five_calls_deposit_one_retry() {
    let mut rpc = machine_with(RetryConfig {
        budget_min_per_sec: 0,
        ..RetryConfig::default()
    });
    let mut host = two_servers();
    let calls: Vec<CallId> = (0..5)
        .map(|_| {
            rpc.call(at(0), CallSpec::new("echo", Bytes::new()), &mut host)
                .unwrap()
        })
        .collect();
    for &call in &calls[..2] {
        refused_by(&mut rpc, &mut host, S1, call, RefuseCall::Overloaded);
    }
    let stats = rpc.stats();
    assert_eq!((stats.retries, stats.budget_exhausted), (1, 1));
    let overloaded = CallOutcome::Failed(FailReason::Overloaded);
    assert_eq!(host.outputs, [done_by(calls[1], overloaded, S1)]);
}

/// The request acknowledged by S1, S1 dies: the call may have run. Not idempotent, it ends
/// `Unknown(TargetGone)` at once; idempotent, it is retried at S2 after the backoff.
#[test]
fn only_an_idempotent_call_is_retried_after_its_server_died() {
    for idempotent in [false, true] {
        let mut rpc = machine(&[]);
        let mut host = two_servers();
        let spec = CallSpec::new("echo", Bytes::new()).idempotent(idempotent);
        let call = rpc.call(at(0), spec, &mut host).unwrap();
        let msg = host.sent[0].msg;
        host.inputs.push_back(RpcInput::Outcome {
            msg,
            outcome: Outcome::Delivered,
        });
        host.inputs.push_back(RpcInput::PeerDead {
            peer: S1,
            incarnation: 7,
            evidence: Evidence::HeartbeatsStopped,
        });
        rpc.settle(at(10), &mut host);
        let gone = CallOutcome::Unknown(FailReason::TargetGone);
        if !idempotent {
            assert_eq!(host.outputs, [done_by(call, gone, S1)]);
            continue;
        }
        assert!(host.outputs.is_empty());
        let retry_at = at(10) + Duration::from_nanos(BACKOFFS_NS[0]);
        assert_eq!(rpc.next_deadline(), Some(retry_at));
        rpc.handle_timeout(retry_at, &mut host);
        assert_eq!(destinations(&host), [S1, S2]);
        // S2 is unreachable at the retry's end: the call never ends `Failed` (S1 may have run
        // it), it ends `Unknown` with the last reason once no attempt is left.
        let msg = host.sent[1].msg;
        host.inputs.push_back(RpcInput::Outcome {
            msg,
            outcome: Outcome::Failed(FailReason::Timeout),
        });
        rpc.settle(at(5_000), &mut host);
        let timeout = CallOutcome::Unknown(FailReason::Timeout);
        assert_eq!(host.outputs, [done_by(call, timeout, S2)]);
    }
}

/// The only server acknowledged the request, then its stream was abandoned: the call may
/// have run there, and the server remembers its id (a request with it again would be dropped
/// as a duplicate, unanswered). The idempotent call's retry finds no other server at its
/// backoff and ends at that instant with the last outcome, sending nothing more.
#[test]
fn a_retry_never_resends_the_request_to_a_server_it_may_have_run_at() {
    let mut rpc = machine(&[]);
    let mut host = Script {
        servers: vec![S1],
        ..Script::default()
    };
    let spec = CallSpec::new("echo", Bytes::new()).idempotent(true);
    let call = rpc.call(at(0), spec, &mut host).unwrap();
    let msg = host.sent[0].msg;
    host.inputs.push_back(RpcInput::Outcome {
        msg,
        outcome: Outcome::Unknown(FailReason::StreamAbandoned),
    });
    rpc.settle(at(10), &mut host);
    assert!(host.outputs.is_empty());
    let retry_at = at(10) + Duration::from_nanos(BACKOFFS_NS[0]);
    assert_eq!(rpc.next_deadline(), Some(retry_at));
    rpc.handle_timeout(retry_at, &mut host);
    assert_eq!(destinations(&host), [S1]);
    let abandoned = CallOutcome::Unknown(FailReason::StreamAbandoned);
    assert_eq!(host.outputs, [done_by(call, abandoned, S1)]);
}

/// A hedge needs an idempotent call.
#[test]
fn hedging_a_call_not_marked_idempotent_is_refused() {
    let mut rpc = machine(&[]);
    let mut host = two_servers();
    let spec = CallSpec::new("echo", Bytes::new()).hedge_after(Duration::from_millis(50));
    assert_eq!(
        rpc.call(at(0), spec, &mut host),
        Err(CallError::HedgeNotIdempotent)
    );
    assert!(host.sent.is_empty());
}

/// No reply 50 ms after the request to S1: a hedge (call id 2 on the wire) goes to S2. S2's
/// reply wins; S1's request, delivered, is cancelled with a `Cancel` of call 1; S1's late
/// reply is counted and ends nothing.
#[test]
fn a_hedge_wins_and_its_loser_is_cancelled() {
    let mut rpc = machine(&[]);
    let mut host = two_servers();
    let spec = CallSpec::new("echo", Bytes::from_static(b"q"))
        .idempotent(true)
        .hedge_after(Duration::from_millis(50));
    let call = rpc.call(at(0), spec, &mut host).unwrap();
    let first = host.sent[0].msg;
    host.inputs.push_back(RpcInput::Outcome {
        msg: first,
        outcome: Outcome::Delivered,
    });
    rpc.settle(at(1), &mut host);
    assert_eq!(rpc.next_deadline(), Some(at(50)));
    rpc.handle_timeout(at(50), &mut host);
    assert_eq!(destinations(&host), [S1, S2]);
    assert_eq!(
        host.sent[1].bytes,
        request_bytes(2, Duration::from_millis(4_950), b"q")
    );
    assert_eq!(host.sent[1].deadline, at(5_000));
    assert_eq!(rpc.stats().in_flight, 1);
    let reply = |call: u64| RpcMessage::Reply {
        call,
        caller_incarnation: INCARNATION,
        metadata: wire::MetadataRef::EMPTY,
        payload: b"a",
    };
    host.inputs.push_back(message(S2, &reply(2)));
    rpc.settle(at(70), &mut host);
    let ok = CallOutcome::Reply(Bytes::from_static(b"a"));
    assert_eq!(host.outputs, [done_by(call, ok, S2)]);
    let mut cancel = Vec::new();
    wire::encode_rpc(
        &RpcMessage::Cancel {
            call: 1,
            caller_incarnation: INCARNATION,
        },
        &mut cancel,
    );
    assert_eq!(destinations(&host), [S1, S2, S1]);
    assert_eq!(host.sent[2].bytes, cancel);
    assert_eq!(host.sent[2].deadline, at(70) + Duration::from_secs(8));
    host.inputs.push_back(message(S1, &reply(1)));
    rpc.settle(at(80), &mut host);
    assert_eq!(host.outputs.len(), 1);
    let stats = rpc.stats();
    assert_eq!(
        (
            stats.hedges,
            stats.hedge_cancels,
            stats.late_replies,
            stats.in_flight
        ),
        (1, 1, 1, 0)
    );
}

/// The first request replies before the hedge's: the hedge, still queued here, is withdrawn
/// (no `Cancel` needed), and the outcome is the first reply.
#[test]
fn a_first_reply_withdraws_a_queued_hedge() {
    let mut rpc = machine(&[]);
    let mut host = two_servers();
    let spec = CallSpec::new("echo", Bytes::new())
        .idempotent(true)
        .hedge_after(Duration::from_millis(50));
    let call = rpc.call(at(0), spec, &mut host).unwrap();
    rpc.handle_timeout(at(50), &mut host);
    let hedge = host.sent[1].msg;
    let reply = RpcMessage::Reply {
        call: 1,
        caller_incarnation: INCARNATION,
        metadata: wire::MetadataRef::EMPTY,
        payload: b"first",
    };
    host.inputs.push_back(message(S1, &reply));
    rpc.settle(at(60), &mut host);
    let ok = CallOutcome::Reply(Bytes::from_static(b"first"));
    assert_eq!(host.outputs, [done_by(call, ok, S1)]);
    assert_eq!(host.withdrawn, [hedge]);
    assert_eq!(host.sent.len(), 2);
    assert_eq!(rpc.stats().hedge_cancels, 1);
}

/// The first attempt fails while the hedge is out: the call waits for the hedge, whose
/// reply ends it.
#[test]
fn a_failed_first_attempt_waits_for_its_hedge() {
    let mut rpc = machine(&[]);
    let mut host = two_servers();
    let spec = CallSpec::new("echo", Bytes::new())
        .idempotent(true)
        .hedge_after(Duration::from_millis(50))
        .max_attempts(2);
    let call = rpc.call(at(0), spec, &mut host).unwrap();
    rpc.handle_timeout(at(50), &mut host);
    let first = host.sent[0].msg;
    host.inputs.push_back(RpcInput::Outcome {
        msg: first,
        outcome: Outcome::Unknown(FailReason::TargetGone),
    });
    rpc.settle(at(60), &mut host);
    assert!(host.outputs.is_empty());
    let reply = RpcMessage::Reply {
        call: 2,
        caller_incarnation: INCARNATION,
        metadata: wire::MetadataRef::EMPTY,
        payload: b"h",
    };
    host.inputs.push_back(message(S2, &reply));
    rpc.settle(at(90), &mut host);
    let ok = CallOutcome::Reply(Bytes::from_static(b"h"));
    assert_eq!(host.outputs, [done_by(call, ok, S2)]);
    assert_eq!(rpc.stats().in_flight, 0);
}
