//! Hedging at the method's p95 ([`HedgeAfter::MethodP95`](super::HedgeAfter::MethodP95)) on
//! the RPC machine, with the scripted host of `machine_tests`: the exact instant of each
//! hedge on virtual time, from replies of known latencies.

use alloc::vec;

use bytes::Bytes;

use super::{
    CallId, CallOutcome, CallSpec, HedgeAfter, LATENCY_MIN_SAMPLES, Rpc, RpcInput,
    machine_tests::{INCARNATION, S1, S2, Script, at, done_by, machine, message, request_bytes},
};
use crate::{
    outcome::{FailReason, Outcome},
    time::{Duration, Instant},
    wire::{self, RpcMessage},
};

fn two_servers() -> Script {
    Script {
        servers: vec![S1, S2],
        ..Script::default()
    }
}

/// An idempotent call of `method` hedged at the method's p95.
fn at_p95(method: &str) -> CallSpec {
    CallSpec::new(method, Bytes::new())
        .idempotent(true)
        .hedge_at_method_p95()
}

/// The calls `spec` builds, one after the other from `start`, each answered by S1
/// `latency` ms after its request (every timer due before the reply fired first): the
/// instant the last one ended. Each call ends with its reply, from S1.
fn replied(
    rpc: &mut Rpc,
    host: &mut Script,
    spec: impl Fn() -> CallSpec,
    latencies: impl IntoIterator<Item = u64>,
    start: Instant,
) -> Instant {
    let mut now = start;
    for latency in latencies {
        let call = rpc.call(now, spec(), host).unwrap();
        now += Duration::from_millis(latency);
        rpc.handle_timeout(now, host);
        let reply = RpcMessage::Reply {
            call: call.0,
            caller_incarnation: INCARNATION,
            metadata: wire::MetadataRef::EMPTY,
            payload: b"ok",
        };
        host.inputs.push_back(message(S1, &reply));
        rpc.settle(now, host);
        let ok = CallOutcome::Reply(Bytes::from_static(b"ok"));
        assert_eq!(host.outputs.last(), Some(&done_by(call, ok, S1)));
    }
    now
}

/// Warm-up calls of `method`: the first asks for the p95 (which starts the method's
/// tracking), the others are plain calls (never hedged, still measured).
fn warm_up(
    rpc: &mut Rpc,
    host: &mut Script,
    method: &str,
    latencies: impl IntoIterator<Item = u64>,
    start: Instant,
) -> Instant {
    let mut first = true;
    let spec = || {
        let spec = CallSpec::new(method, Bytes::new());
        if core::mem::take(&mut first) {
            spec.idempotent(true).hedge_at_method_p95()
        } else {
            spec
        }
    };
    let first = core::cell::RefCell::new(spec);
    replied(rpc, host, || (first.borrow_mut())(), latencies, start)
}

/// A call of `method` hedged at its p95, made at `now` (no other call open), its request
/// delivered to S1 and never answered: how long after its request its hedge went to S2
/// (`None`: it ended `Unknown(Timeout)` at its deadline unhedged, having sent one request).
/// A hedged call is then cancelled (which adds no latency sample).
fn hedge_delay(rpc: &mut Rpc, host: &mut Script, method: &str, now: Instant) -> Option<Duration> {
    let call = rpc.call(now, at_p95(method), host).unwrap();
    let (sent, hedges) = (host.sent.len(), rpc.stats().hedges);
    assert_eq!(host.sent[sent - 1].to, S1);
    host.inputs.push_back(RpcInput::Outcome {
        msg: host.sent[sent - 1].msg,
        outcome: Outcome::Delivered,
    });
    rpc.settle(now, host);
    let outputs = host.outputs.len();
    let mut next = now;
    // Its timers in turn (the grace deadline re-arms the deadline), until it hedged or ended.
    while rpc.stats().hedges == hedges && host.outputs.len() == outputs {
        next = rpc.next_deadline().unwrap();
        rpc.handle_timeout(next, host);
    }
    if rpc.stats().hedges == hedges {
        assert_eq!(next, now + Duration::from_secs(5));
        assert_eq!(host.sent.len(), sent);
        let timeout = CallOutcome::Unknown(FailReason::Timeout);
        assert_eq!(host.outputs.last(), Some(&done_by(call, timeout, S1)));
        return None;
    }
    assert_eq!((host.sent.len(), host.sent[sent].to), (sent + 1, S2));
    assert!(rpc.cancel(next, call, host));
    Some(next - now)
}

#[test]
fn the_builders_set_the_hedge() {
    let spec = CallSpec::new("echo", Bytes::new());
    assert_eq!(spec.hedge_after, None);
    assert_eq!(
        spec.clone()
            .hedge_after(Duration::from_millis(7))
            .hedge_after,
        Some(HedgeAfter::Delay(Duration::from_millis(7)))
    );
    assert_eq!(
        spec.hedge_at_method_p95().hedge_after,
        Some(HedgeAfter::MethodP95)
    );
}

/// Hedging at the p95 needs an idempotent call, as a fixed delay does.
#[test]
fn hedging_at_the_p95_a_call_not_marked_idempotent_is_refused() {
    let mut rpc = machine(&[]);
    let mut host = two_servers();
    let spec = CallSpec::new("echo", Bytes::new()).hedge_at_method_p95();
    assert_eq!(
        rpc.call(at(0), spec, &mut host),
        Err(super::CallError::HedgeNotIdempotent)
    );
}

/// 19 replies (1..=19 ms) give no p95: calls asking for it run unhedged, the 19 replied
/// ones and one never answered, which ends at its deadline with its one request. The 20th
/// reply (20 ms) gives one: the next call hedges at the 19th smallest, 19 ms.
#[test]
fn fewer_than_twenty_replies_give_no_hedge() {
    assert_eq!(LATENCY_MIN_SAMPLES, 20);
    let mut rpc = machine(&[]);
    let mut host = two_servers();
    let now = replied(&mut rpc, &mut host, || at_p95("echo"), 1..=19, at(0));
    assert_eq!((rpc.stats().hedges, host.sent.len()), (0, 19));
    assert_eq!(hedge_delay(&mut rpc, &mut host, "echo", now), None);
    let now = now + Duration::from_secs(5);
    let now = replied(&mut rpc, &mut host, || at_p95("echo"), [20], now);
    assert_eq!(rpc.stats().hedges, 0);
    assert_eq!(
        hedge_delay(&mut rpc, &mut host, "echo", now),
        Some(Duration::from_millis(19))
    );
}

/// 100 replies of 1..=100 ms (in a shuffled order): a call that gets no reply is hedged
/// exactly 95 ms after its request (the 95th smallest), not a nanosecond before, to S2, with
/// its remaining budget.
#[test]
fn a_call_is_hedged_at_the_nearest_rank_p95_of_the_replies() {
    let mut rpc = machine(&[]);
    let mut host = two_servers();
    // k × 37 mod 100 runs over 0..100 once (37 and 100 are coprime).
    let shuffled = (0..100).map(|k| k * 37 % 100 + 1);
    let now = warm_up(&mut rpc, &mut host, "echo", shuffled, at(0));
    let call = rpc.call(now, at_p95("echo"), &mut host).unwrap();
    assert_eq!(call, CallId(101));
    let hedge_at = now + Duration::from_millis(95);
    assert_eq!(rpc.next_deadline(), Some(hedge_at));
    rpc.handle_timeout(hedge_at - Duration::from_nanos(1), &mut host);
    assert_eq!(host.sent.len(), 101);
    rpc.handle_timeout(hedge_at, &mut host);
    assert_eq!(host.sent.len(), 102);
    assert_eq!(host.sent[101].to, S2);
    assert_eq!(
        host.sent[101].bytes,
        request_bytes(102, Duration::from_millis(4_905), b"")
    );
    assert_eq!(host.sent[101].deadline, now + Duration::from_secs(5));
    assert_eq!(rpc.stats().hedges, 1);
}

/// The window holds the last 128 replies: 128 of 128 down to 1 ms hedge at 122 ms (the
/// ⌈0.95 × 128⌉ = 122nd smallest); 64 more of 1 ms push out 128..=65 ms, and the 122nd
/// smallest of 65 × 1 ms and 2..=64 ms is 58 ms.
#[test]
fn old_latencies_leave_the_window() {
    let mut rpc = machine(&[]);
    let mut host = two_servers();
    let now = warm_up(&mut rpc, &mut host, "echo", (1..=128).rev(), at(0));
    assert_eq!(
        hedge_delay(&mut rpc, &mut host, "echo", now),
        Some(Duration::from_millis(122))
    );
    let now = now + Duration::from_secs(1);
    let now = replied(
        &mut rpc,
        &mut host,
        || CallSpec::new("echo", Bytes::new()),
        [1; 64],
        now,
    );
    assert_eq!(
        hedge_delay(&mut rpc, &mut host, "echo", now),
        Some(Duration::from_millis(58))
    );
}

/// Each method has its own window: `a`'s 100 replies (1..=100 ms) give `b` no p95; `b`'s 20
/// replies of 500 ms give it 500 ms, and `a` still hedges at 95 ms.
#[test]
fn each_method_has_its_own_p95() {
    let mut rpc = machine(&[]);
    let mut host = two_servers();
    let now = warm_up(&mut rpc, &mut host, "a", 1..=100, at(0));
    let now = warm_up(&mut rpc, &mut host, "b", [500; 19], now);
    assert_eq!(hedge_delay(&mut rpc, &mut host, "b", now), None);
    let now = now + Duration::from_secs(5);
    let now = warm_up(&mut rpc, &mut host, "b", [500], now);
    assert_eq!(
        hedge_delay(&mut rpc, &mut host, "b", now),
        Some(Duration::from_millis(500))
    );
    let now = now + Duration::from_secs(1);
    assert_eq!(
        hedge_delay(&mut rpc, &mut host, "a", now),
        Some(Duration::from_millis(95))
    );
}

/// A hedge's reply is measured from the hedge's own request, and the attempt it beat adds
/// its time so far. 19 replies of 1 ms and one of 100 ms: p95 1 ms (the 19th smallest of
/// 20). A call hedged 1 ms after its request, its hedge answered 30 ms after the hedge's
/// request (31 ms after the call's), adds 30 ms, and its first attempt, cancelled then, adds
/// 31 ms: the p95 of the 22 (the ⌈20.9⌉ = 21st smallest) is 31 ms — 30 ms if the loser
/// added nothing.
#[test]
fn a_hedge_is_measured_from_its_own_request() {
    let mut rpc = machine(&[]);
    let mut host = two_servers();
    let latencies = [1; 19].into_iter().chain([100]);
    let now = warm_up(&mut rpc, &mut host, "echo", latencies, at(0));
    let call = rpc.call(now, at_p95("echo"), &mut host).unwrap();
    let hedge_at = now + Duration::from_millis(1);
    assert_eq!(rpc.next_deadline(), Some(hedge_at));
    rpc.handle_timeout(hedge_at, &mut host);
    assert_eq!(host.sent.last().map(|s| s.to), Some(S2));
    let reply = RpcMessage::Reply {
        call: call.0 + 1,
        caller_incarnation: INCARNATION,
        metadata: wire::MetadataRef::EMPTY,
        payload: b"h",
    };
    host.inputs.push_back(message(S2, &reply));
    let replied_at = hedge_at + Duration::from_millis(30);
    rpc.settle(replied_at, &mut host);
    let ok = CallOutcome::Reply(Bytes::from_static(b"h"));
    assert_eq!(host.outputs.last(), Some(&done_by(call, ok, S2)));
    assert_eq!(
        hedge_delay(&mut rpc, &mut host, "echo", replied_at),
        Some(Duration::from_millis(31))
    );
}
