//! Call metadata: its block's exact bytes in a request and a reply, every bound refused by a
//! typed error (never a panic), the owned map's rules, and round trips of any map.

use alloc::{boxed::Box, format, string::String, vec, vec::Vec};

use proptest::{prelude::*, test_runner::FileFailurePersistence};

use super::{CallMetadata, MetadataError};
use crate::wire::{
    DecodeError, MAX_METADATA_ENTRIES, MAX_METADATA_LEN, MetadataRef, RpcMessage, TRACEPARENT,
    TRACESTATE, decode_rpc, encode_rpc, reply_len, request_len,
};

const TRACE: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn encoded(message: &RpcMessage<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_rpc(message, &mut out);
    out
}

fn trace() -> CallMetadata {
    CallMetadata::new()
        .with(TRACEPARENT, TRACE.as_bytes())
        .unwrap()
        .with(TRACESTATE, b"k=v")
        .unwrap()
}

/// The block as `wire::metadata` documents it: count, then key length `u8`, key, value
/// length `u16` LE, value.
fn trace_block() -> Vec<u8> {
    let mut block = vec![2u8, 11];
    block.extend_from_slice(b"traceparent");
    block.extend_from_slice(&55u16.to_le_bytes());
    block.extend_from_slice(TRACE.as_bytes());
    block.push(10);
    block.extend_from_slice(b"tracestate");
    block.extend_from_slice(&3u16.to_le_bytes());
    block.extend_from_slice(b"k=v");
    block
}

#[test]
fn a_request_with_metadata_has_its_documented_bytes_and_decodes_back() {
    let metadata = trace();
    let request = RpcMessage::Request {
        call: 7,
        caller_incarnation: 0x0102,
        remaining_ns: 5_000_000_000,
        method: "echo",
        metadata: metadata.view(),
        payload: b"hi",
    };
    let bytes = encoded(&request);
    let mut want = vec![0x81u8];
    want.extend_from_slice(&7u64.to_le_bytes());
    want.extend_from_slice(&0x0102u64.to_le_bytes());
    want.extend_from_slice(&5_000_000_000u64.to_le_bytes());
    want.extend_from_slice(&4u32.to_le_bytes());
    want.extend_from_slice(b"echo");
    want.extend_from_slice(&trace_block());
    want.extend_from_slice(b"hi");
    assert_eq!(bytes, want);
    assert_eq!(metadata.encoded_len(), 86);
    assert_eq!(bytes.len(), request_len(4, 86, 2));
    assert_eq!(decode_rpc(&bytes), Ok(request));
}

#[test]
fn a_reply_with_metadata_has_its_documented_bytes_and_decodes_back() {
    let metadata = trace();
    let reply = RpcMessage::Reply {
        call: 1,
        caller_incarnation: 2,
        metadata: metadata.view(),
        payload: b"answer",
    };
    let bytes = encoded(&reply);
    let mut want = vec![0x82u8];
    want.extend_from_slice(&1u64.to_le_bytes());
    want.extend_from_slice(&2u64.to_le_bytes());
    want.extend_from_slice(&trace_block());
    want.extend_from_slice(b"answer");
    assert_eq!(bytes, want);
    assert_eq!(bytes.len(), reply_len(86, 6));
    let Ok(RpcMessage::Reply { metadata: got, .. }) = decode_rpc(&bytes) else {
        panic!("the reply decodes");
    };
    assert_eq!(got.get(TRACEPARENT), Some(TRACE.as_bytes()));
    assert_eq!(
        got.iter().collect::<Vec<_>>(),
        [(TRACEPARENT, TRACE.as_bytes()), (TRACESTATE, &b"k=v"[..])]
    );
}

/// A reply of call 1, incarnation 2, kind `0x82`, with `block` as its metadata and no
/// payload.
fn reply_with_block(block: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0x82u8];
    bytes.extend_from_slice(&1u64.to_le_bytes());
    bytes.extend_from_slice(&2u64.to_le_bytes());
    bytes.extend_from_slice(block);
    bytes
}

fn entry(key: &[u8], value_len: usize) -> Vec<u8> {
    let mut out = vec![u8::try_from(key.len()).unwrap()];
    out.extend_from_slice(key);
    out.extend_from_slice(&u16::try_from(value_len).unwrap().to_le_bytes());
    out.resize(out.len() + value_len, b'v');
    out
}

fn bounds(field: &'static str, len: usize, min: usize, max: usize) -> DecodeError {
    DecodeError::MetadataBounds {
        field,
        len,
        min,
        max,
    }
}

#[test]
fn metadata_beyond_its_bounds_is_a_typed_error() {
    // The flag with no entry: there is one encoding of "no metadata", without the flag.
    assert_eq!(
        decode_rpc(&reply_with_block(&[0])),
        Err(bounds("metadata_count", 0, 1, 16))
    );
    let mut seventeen = vec![17u8];
    for i in 0..17u8 {
        seventeen.extend(entry(&[b'a' + i], 0));
    }
    assert_eq!(
        decode_rpc(&reply_with_block(&seventeen)),
        Err(bounds("metadata_count", 17, 1, 16))
    );
    let mut empty_key = vec![1u8];
    empty_key.extend(entry(b"", 1));
    assert_eq!(
        decode_rpc(&reply_with_block(&empty_key)),
        Err(bounds("metadata_key", 0, 1, 64))
    );
    let mut long_key = vec![1u8];
    long_key.extend(entry(&[b'k'; 65], 1));
    assert_eq!(
        decode_rpc(&reply_with_block(&long_key)),
        Err(bounds("metadata_key", 65, 1, 64))
    );
    let mut long_value = vec![1u8];
    long_value.extend(entry(b"k", 513));
    assert_eq!(
        decode_rpc(&reply_with_block(&long_value)),
        Err(bounds("metadata_value", 513, 0, 512))
    );
    // Sixteen entries within their own bounds but 4,273 bytes together: refused at the
    // entry that crosses 4 KiB (1 + 15 × 267 = 4,006 bytes before it).
    let mut large = vec![16u8];
    for i in 0..16u8 {
        large.extend(entry(&[b'a' + i; 64], 200));
    }
    assert_eq!(large.len(), 1 + 16 * 267);
    assert_eq!(
        decode_rpc(&reply_with_block(&large)),
        Err(bounds("metadata", 4_273, 0, MAX_METADATA_LEN))
    );
    let mut bad_key = vec![1u8];
    bad_key.extend(entry(&[0xff], 0));
    assert_eq!(
        decode_rpc(&reply_with_block(&bad_key)),
        Err(DecodeError::InvalidUtf8 {
            field: "metadata_key"
        })
    );
    let mut cut = vec![1u8];
    cut.extend(entry(b"k", 9));
    cut.truncate(cut.len() - 1);
    assert_eq!(
        decode_rpc(&reply_with_block(&cut)),
        Err(DecodeError::Truncated {
            field: "metadata_value"
        })
    );
    // Only a request or a reply may carry metadata.
    for kind in [0x83u8, 0x84] {
        let mut bytes = vec![kind];
        bytes.extend_from_slice(&[0; 17]);
        assert_eq!(
            decode_rpc(&bytes),
            Err(DecodeError::UnknownCode {
                field: "rpc_kind",
                code: kind
            })
        );
    }
}

#[test]
fn the_owned_map_keeps_order_replaces_in_place_and_refuses_what_the_wire_would() {
    let mut metadata = trace();
    metadata.insert(TRACEPARENT, b"other").unwrap();
    metadata.insert("x-tenant", b"blue").unwrap();
    assert_eq!(
        metadata.iter().collect::<Vec<_>>(),
        [
            (TRACEPARENT, &b"other"[..]),
            (TRACESTATE, &b"k=v"[..]),
            ("x-tenant", &b"blue"[..])
        ]
    );
    assert_eq!(metadata.traceparent(), Some("other"));
    assert_eq!(metadata.get("absent"), None);
    assert_eq!(
        CallMetadata::new().insert("", b""),
        Err(MetadataError::KeyLength { len: 0, max: 64 })
    );
    assert_eq!(
        CallMetadata::new().insert(&"k".repeat(65), b""),
        Err(MetadataError::KeyLength { len: 65, max: 64 })
    );
    assert_eq!(
        CallMetadata::new().insert("k", &[0; 513]),
        Err(MetadataError::ValueTooLong { len: 513, max: 512 })
    );
    let mut full = CallMetadata::new();
    for i in 0..MAX_METADATA_ENTRIES {
        full.insert(&format!("k{i}"), b"").unwrap();
    }
    let before = full.clone();
    assert_eq!(
        full.insert("one-more", b""),
        Err(MetadataError::TooManyEntries { max: 16 })
    );
    // Replacing an entry of a full map is fine.
    full.insert("k3", b"new").unwrap();
    assert_eq!((full.len(), full.get("k3")), (16, Some(&b"new"[..])));
    assert_ne!(full, before);
    let mut large = CallMetadata::new();
    for i in 0..7u8 {
        large.insert(&format!("{i}"), &[i; 512]).unwrap();
    }
    // 1 + 7 × 516 = 3,613 bytes; an eighth 516-byte entry would make 4,129.
    assert_eq!(large.encoded_len(), 3_613);
    assert_eq!(
        large.insert("7", &[7; 512]),
        Err(MetadataError::TooLarge {
            len: 4_129,
            max: 4_096
        })
    );
    assert_eq!(large.len(), 7);
    assert_eq!(
        format!("{:?}", trace().with("b", &[0xff]).unwrap()),
        format!("{{\"traceparent\": \"{TRACE}\", \"tracestate\": \"k=v\", \"b\": [255]}}")
    );
}

/// Any map within the bounds: keys of 1 to 64 bytes of UTF-8, values up to 512 bytes.
fn any_metadata() -> impl Strategy<Value = CallMetadata> {
    let entry = (
        "[a-z0-9-]{1,20}|\\PC{1,16}",
        proptest::collection::vec(any::<u8>(), 0..80),
    );
    proptest::collection::vec(entry, 0..20).prop_map(|entries| {
        let mut metadata = CallMetadata::new();
        for (key, value) in entries {
            let key: String = key.chars().take(16).collect();
            // Beyond a bound is refused and leaves the map as it was; what is kept is valid.
            let _ = metadata.insert(&key, &value);
        }
        metadata
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "../proptest-regressions/rpc_metadata.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn requests_and_replies_with_any_metadata_round_trip(
        metadata in any_metadata(),
        payload in proptest::collection::vec(any::<u8>(), 0..32),
        call in any::<u64>(),
    ) {
        let request = RpcMessage::Request {
            call,
            caller_incarnation: 3,
            remaining_ns: 1,
            method: "m.x",
            metadata: metadata.view(),
            payload: &payload,
        };
        let reply = RpcMessage::Reply {
            call,
            caller_incarnation: 3,
            metadata: metadata.view(),
            payload: &payload,
        };
        for message in [request, reply] {
            let bytes = encoded(&message);
            prop_assert_eq!(bytes.len(), crate::wire::rpc_len(&message));
            prop_assert_eq!(decode_rpc(&bytes), Ok(message));
        }
        prop_assert_eq!(MetadataRef::parse(metadata.view().as_bytes()), Ok(metadata.view()));
    }

    #[test]
    fn any_flagged_bytes_decode_or_fail_without_panicking_and_decode_canonically(
        reply in any::<bool>(),
        rest in proptest::collection::vec(any::<u8>(), 0..160)
    ) {
        // A request or reply header with the metadata flag, then anything.
        let mut bytes = vec![if reply { 0x82 } else { 0x81 }];
        bytes.extend_from_slice(&rest);
        if let Ok(message) = decode_rpc(&bytes) {
            prop_assert_eq!(encoded(&message), bytes);
        }
    }
}
