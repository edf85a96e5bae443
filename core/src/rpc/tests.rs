//! Unit tests of the RPC pieces: the message codec (exact bytes, total decoding), the
//! server's bounded duplicate memory, method names and labels.

use alloc::{boxed::Box, vec, vec::Vec};

use proptest::{prelude::*, test_runner::FileFailurePersistence};

use super::{DEDUP_CAPACITY, Serving, is_valid_method, method_label, served_methods, servers_of};
use crate::{
    discovery::Metadata,
    ids::NodeId,
    time::Instant,
    wire::{DecodeError, RefuseCall, RpcMessage, decode_rpc, encode_rpc, request_len},
};

fn encoded(message: &RpcMessage<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_rpc(message, &mut out);
    out
}

#[test]
fn a_request_has_its_documented_bytes_and_decodes_back() {
    let request = RpcMessage::Request {
        call: 7,
        caller_incarnation: 0x0102,
        remaining_ns: 5_000_000_000,
        method: "echo",
        metadata: crate::wire::MetadataRef::EMPTY,
        payload: b"hi",
    };
    let bytes = encoded(&request);
    let mut want = vec![1u8];
    want.extend_from_slice(&7u64.to_le_bytes());
    want.extend_from_slice(&0x0102u64.to_le_bytes());
    want.extend_from_slice(&5_000_000_000u64.to_le_bytes());
    want.extend_from_slice(&4u32.to_le_bytes());
    want.extend_from_slice(b"echohi");
    assert_eq!(bytes, want);
    assert_eq!(bytes.len(), request_len(4, 0, 2));
    assert_eq!(decode_rpc(&bytes), Ok(request));
}

/// The `Overloaded` refusal is wire-visible: kind 3, call, caller incarnation, reason 3.
#[test]
fn an_overloaded_refusal_has_its_documented_bytes() {
    let refuse = RpcMessage::Refuse {
        call: 7,
        caller_incarnation: 0x0102,
        reason: RefuseCall::Overloaded,
    };
    let bytes = encoded(&refuse);
    let mut want = vec![3u8];
    want.extend_from_slice(&7u64.to_le_bytes());
    want.extend_from_slice(&0x0102u64.to_le_bytes());
    want.push(3);
    assert_eq!(bytes, want);
    assert_eq!(decode_rpc(&bytes), Ok(refuse));
    let mut unknown = bytes;
    *unknown.last_mut().expect("a reason byte") = 4;
    assert_eq!(
        decode_rpc(&unknown),
        Err(DecodeError::UnknownCode {
            field: "refuse_reason",
            code: 4
        })
    );
}

#[test]
fn replies_refusals_and_cancels_round_trip() {
    for message in [
        RpcMessage::Reply {
            call: 1,
            caller_incarnation: 2,
            metadata: crate::wire::MetadataRef::EMPTY,
            payload: b"answer",
        },
        RpcMessage::Refuse {
            call: 3,
            caller_incarnation: 4,
            reason: RefuseCall::Expired,
        },
        RpcMessage::Refuse {
            call: 3,
            caller_incarnation: 4,
            reason: RefuseCall::NotServed,
        },
        RpcMessage::Cancel {
            call: 5,
            caller_incarnation: 6,
        },
    ] {
        assert_eq!(decode_rpc(&encoded(&message)), Ok(message));
    }
}

#[test]
fn bad_messages_are_typed_errors() {
    assert_eq!(
        decode_rpc(&[]),
        Err(DecodeError::Truncated { field: "rpc_kind" })
    );
    let mut unknown = vec![9u8];
    unknown.extend_from_slice(&[0; 16]);
    assert_eq!(
        decode_rpc(&unknown),
        Err(DecodeError::UnknownCode {
            field: "rpc_kind",
            code: 9
        })
    );
    let mut refuse = encoded(&RpcMessage::Refuse {
        call: 1,
        caller_incarnation: 1,
        reason: RefuseCall::Expired,
    });
    *refuse.last_mut().expect("a reason byte") = 0;
    assert_eq!(
        decode_rpc(&refuse),
        Err(DecodeError::UnknownCode {
            field: "refuse_reason",
            code: 0
        })
    );
    let mut cancel = encoded(&RpcMessage::Cancel {
        call: 1,
        caller_incarnation: 1,
    });
    cancel.push(0);
    assert!(matches!(
        decode_rpc(&cancel),
        Err(DecodeError::LengthMismatch { .. })
    ));
    // A method length past the end.
    let mut request = encoded(&RpcMessage::Request {
        call: 1,
        caller_incarnation: 1,
        remaining_ns: 1,
        method: "m",
        metadata: crate::wire::MetadataRef::EMPTY,
        payload: b"",
    });
    request[25] = 200;
    assert_eq!(
        decode_rpc(&request),
        Err(DecodeError::Truncated { field: "method" })
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "../proptest-regressions/rpc_messages.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_bytes_decode_or_fail_without_panicking_and_decoded_messages_are_canonical(
        bytes in proptest::collection::vec(any::<u8>(), 0..64)
    ) {
        if let Ok(message) = decode_rpc(&bytes) {
            prop_assert_eq!(encoded(&message), bytes);
        }
    }
}

#[test]
fn the_duplicate_memory_is_bounded_and_forgets_the_oldest_first() {
    let mut serving = Serving::default();
    let key = |call: u64| (NodeId(1), 9, call);
    assert!(serving.first_time(key(0)));
    assert!(!serving.first_time(key(0)));
    for call in 1..=DEDUP_CAPACITY as u64 {
        assert!(serving.first_time(key(call)));
    }
    // Call 0 was the oldest of DEDUP_CAPACITY + 1: forgotten; call 1 still remembered.
    assert!(!serving.first_time(key(1)));
    assert!(serving.first_time(key(0)));
    // Another incarnation of the caller is another call.
    assert!(serving.first_time((NodeId(1), 10, 5)));
}

#[test]
fn held_requests_are_found_by_call_and_released_at_their_deadline() {
    let mut serving = Serving::default();
    let key = (NodeId(2), 3, 4);
    let id = serving.open(key, Instant::from_secs(5));
    assert_eq!(serving.find(key), Some(id));
    assert_eq!(serving.next_deadline(), Some(Instant::from_secs(5)));
    assert_eq!(serving.pop_due(Instant::from_millis(4_999)), None);
    assert_eq!(serving.pop_due(Instant::from_secs(5)), Some(id));
    assert_eq!(serving.find(key), None);
    assert_eq!(serving.take(id), None);
}

#[test]
fn method_names_and_labels() {
    assert!(is_valid_method("svc.echo:v1-a_b"));
    assert!(!is_valid_method(""));
    assert!(!is_valid_method("a b"));
    assert!(!is_valid_method(&"x".repeat(129)));
    assert_eq!(method_label("echo"), "rpc.switchboard/echo");
    let filter = servers_of("echo");
    let mut metadata = Metadata::default();
    metadata
        .labels
        .insert("rpc.switchboard/echo".into(), "serve".into());
    metadata
        .labels
        .insert("rpc.switchboard/off".into(), "other".into());
    metadata.labels.insert("role".into(), "game".into());
    assert!(filter.matches(&metadata));
    assert_eq!(served_methods(&metadata).collect::<Vec<_>>(), ["echo"]);
}
