//! [`RecordCache`]: frames read through the cache are the frames read without it (records,
//! revisions, errors), each distinct record is decoded once while it stays cached, and the
//! two-way sets drop the least recently used record.

use alloc::{vec, vec::Vec};

use proptest::{collection::vec as pvec, prelude::*};

use super::{
    prop_frames::{config, frame, spec},
    registry_frames::{DISCOVERY_JSON, TOPOLOGY_JSON, golden_put, golden_snapshot, with_header},
    *,
};
use crate::discovery::{self, DiscoveryInfo, TopologyInfo};

/// Whether the frames of `bytes`, read through `cache`, are exactly `want`.
fn reads_as(bytes: &[u8], cache: &mut RecordCache, want: &[Frame<'_>]) -> bool {
    let mut reader = FrameReader::new(DEFAULT_MAX_FRAME);
    reader.push(bytes);
    let mut got = 0;
    while let Some(frame) = reader.next_frame_cached(cache).expect("valid frames") {
        if want.get(got) != Some(&frame) {
            return false;
        }
        got += 1;
    }
    got == want.len()
}

#[test]
fn a_snapshot_and_a_put_decode_each_distinct_record_once() {
    let (snapshot, snapshot_bytes) = golden_snapshot();
    let (put, put_bytes) = golden_put();
    let mut stream = snapshot_bytes;
    stream.extend_from_slice(&put_bytes);
    let mut cache = RecordCache::new();
    let want = [snapshot, put];
    assert!(reads_as(&stream, &mut cache, &want));
    // The snapshot's first entry decodes its discovery and topology records, its second
    // entry's discovery record (the same bytes) is a copy, and so are both of the put's.
    assert_eq!((cache.hits(), cache.misses()), (3, 2));
    // Another client given the same cache decodes nothing.
    assert!(reads_as(&stream, &mut cache, &want));
    assert_eq!((cache.hits(), cache.misses()), (8, 2));
}

#[test]
fn a_copy_carries_the_revision_of_its_own_entry() {
    let mut cache = RecordCache::new();
    let first = cache.discovery(DISCOVERY_JSON, 40).expect("good record");
    let second = cache.discovery(DISCOVERY_JSON, 77).expect("good record");
    let topology = cache.topology(TOPOLOGY_JSON, 41).expect("good record");
    let again = cache.topology(TOPOLOGY_JSON, 5).expect("good record");
    assert_eq!(
        first,
        DiscoveryInfo::from_json_at(DISCOVERY_JSON, 40).expect("good")
    );
    assert_eq!(
        second,
        DiscoveryInfo::from_json_at(DISCOVERY_JSON, 77).expect("good")
    );
    assert_eq!(
        topology,
        TopologyInfo::from_json_at(TOPOLOGY_JSON, 41).expect("good")
    );
    assert_eq!(
        again,
        TopologyInfo::from_json_at(TOPOLOGY_JSON, 5).expect("good")
    );
    assert_eq!((first.revision, second.revision), (40, 77));
    assert_eq!((topology.revision, again.revision), (41, 5));
    assert_eq!((cache.hits(), cache.misses()), (2, 2));
}

#[test]
fn bad_records_fail_with_the_same_error_every_time_and_are_not_kept() {
    let bad = br#"{"id":"x"}"#;
    let mut body = vec![2, 0, 0, 0, 0, 0, 0, 0, 51, 0, 0, 0, 0, 0, 0, 0];
    body.extend_from_slice(&[9, 0, 0, 0, 0, 0, 0, 0, 40, 0, 0, 0, 0, 0, 0, 0]);
    body.extend_from_slice(&[0; 9]);
    body.extend_from_slice(&u32::try_from(bad.len()).expect("short").to_le_bytes());
    body.extend_from_slice(bad);
    body.extend_from_slice(&[0; 4]);
    let bytes = with_header(19, &body);
    let expected = decode(&bytes, DEFAULT_MAX_FRAME);
    let Err(DecodeError::Json {
        field: "discovery",
        error: discovery::DecodeError::InvalidValue { .. },
    }) = &expected
    else {
        panic!("a string id is refused: {expected:?}");
    };
    let mut cache = RecordCache::new();
    for _ in 0..2 {
        let mut reader = FrameReader::new(DEFAULT_MAX_FRAME);
        reader.push(&bytes);
        let got = reader.next_frame_cached(&mut cache).map(|_| ());
        assert_eq!(got, expected.clone().map(|_| ()));
    }
    // Both reads decoded (and failed); nothing was kept for the bytes.
    assert_eq!((cache.hits(), cache.misses()), (0, 2));
}

#[test]
fn a_full_set_drops_its_least_recently_used_record() {
    let a = br#"{"id":1,"name":"a"}"#;
    let b = br#"{"id":2,"name":"b"}"#;
    let c = br#"{"id":3,"name":"c"}"#;
    // Two slots: one set, which every record shares.
    let mut cache = RecordCache::with_slots(2);
    let mut hits_after = Vec::new();
    for (json, revision) in [(a, 1), (b, 2), (a, 3), (c, 4), (a, 5), (b, 6), (c, 7)] {
        let got = cache.discovery(json, revision).expect("good record");
        assert_eq!(
            got,
            DiscoveryInfo::from_json_at(json, revision).expect("good")
        );
        hits_after.push(cache.hits());
    }
    // a, b decode; a is kept (used last); c replaces b; a is kept; b replaces c; c replaces a.
    assert_eq!(hits_after, [0, 0, 1, 1, 2, 2, 2]);
    assert_eq!(cache.misses(), 5);
}

#[test]
fn a_record_over_the_kept_size_is_decoded_every_time() {
    let name = "n".repeat(RecordCache::MAX_KEPT_JSON);
    let json = alloc::format!(r#"{{"id":7,"name":"{name}"}}"#);
    let mut cache = RecordCache::new();
    for revision in [1, 2] {
        let got = cache
            .discovery(json.as_bytes(), revision)
            .expect("good record");
        assert_eq!(
            got,
            DiscoveryInfo::from_json_at(json.as_bytes(), revision).expect("good")
        );
    }
    assert_eq!((cache.hits(), cache.misses()), (0, 2));
    // At the limit it is kept.
    let name = "n".repeat(RecordCache::MAX_KEPT_JSON - r#"{"id":7,"name":""}"#.len());
    let json = alloc::format!(r#"{{"id":7,"name":"{name}"}}"#);
    assert_eq!(json.len(), RecordCache::MAX_KEPT_JSON);
    for revision in [1, 2] {
        cache
            .discovery(json.as_bytes(), revision)
            .expect("good record");
    }
    assert_eq!((cache.hits(), cache.misses()), (1, 3));
}

proptest! {
    #![proptest_config(config("wire_record_cache", 256))]

    /// A stream of arbitrary frames, read twice through one small cache (records evicted,
    /// copied and decoded in turn), gives exactly the frames it was encoded from.
    #[test]
    fn cached_reads_give_the_encoded_frames(specs in pvec(spec(), 1..6)) {
        let frames: Vec<Frame<'_>> = specs.iter().map(frame).collect();
        let mut stream = Vec::new();
        for f in &frames {
            encode(f, &mut stream).expect("test frames are encodable");
        }
        let mut cache = RecordCache::with_slots(4);
        for _ in 0..2 {
            prop_assert!(reads_as(&stream, &mut cache, &frames));
        }
    }

    /// Arbitrary bytes read through a cache give what an uncached decode gives: the same
    /// frame, the same need for more, or the same error, at the first read and again.
    #[test]
    fn cached_reads_of_garbage_match_plain_decoding(bytes in pvec(any::<u8>(), 8..200), kind in any::<u8>()) {
        let mut bytes = bytes;
        let len = u32::try_from(bytes.len()).expect("short");
        bytes[..4].copy_from_slice(&len.to_le_bytes());
        bytes[4] = WIRE_VERSION;
        bytes[5] = [FrameKind::Put, FrameKind::Snapshot][usize::from(kind & 1)].code();
        bytes[6] &= 1;
        bytes[7] = 0;
        let expected = decode(&bytes, DEFAULT_MAX_FRAME);
        let mut cache = RecordCache::with_slots(2);
        for _ in 0..2 {
            let mut reader = FrameReader::new(DEFAULT_MAX_FRAME);
            reader.push(&bytes);
            let got = reader.next_frame_cached(&mut cache);
            match (&expected, got) {
                (Ok(Decoded::Frame(want, _)), Ok(Some(got))) => prop_assert_eq!(&got, want),
                (Ok(Decoded::NeedMore(_)), Ok(None)) => {}
                (Err(want), Err(got)) => prop_assert_eq!(&got, want),
                (want, got) => prop_assert!(false, "decode gave {:?}, the cached reader {:?}", want, got),
            }
        }
    }
}
