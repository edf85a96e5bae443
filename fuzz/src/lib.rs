//! cargo-fuzz targets for switchboard.
//!
//! This crate is an ordinary workspace member so it builds and its corpus-replay test runs on
//! stable (`cargo test -p switchboard-fuzz`); the fuzz binaries in `fuzz_targets/` are built by
//! `cargo +nightly fuzz run <target>`, which sets `--cfg fuzzing` and links libFuzzer.
//!
//! Each target is a few lines calling one function of this library, so the same checks run
//! under libFuzzer and in the stable replay of the committed corpus in `fuzz/corpus/<target>/`.
//! Frame, registry-protocol, node-operation and simulation targets arrive with the bus issue.

use switchboard_core::discovery::{Applied, DiscoveryInfo, DiscoverySet, TopologyInfo};

/// Target `discovery_json`: registry values as they come from etcd or a peer.
///
/// Checks that decoding never panics, that a decoded record survives an encode/decode round
/// trip unchanged, and that a document the set refuses leaves the set exactly as it was.
///
/// # Panics
/// Panics (which the fuzzer reports) when one of those properties is violated.
pub fn discovery_json(data: &[u8]) {
    if let Ok(info) = DiscoveryInfo::from_json(data) {
        let again =
            DiscoveryInfo::from_json(&info.to_json()).expect("a record we encoded must decode");
        assert!(
            again.same_content(&info),
            "discovery round trip changed the record"
        );
    }
    if let Ok(topo) = TopologyInfo::from_json(data) {
        let again =
            TopologyInfo::from_json(&topo.to_json()).expect("a record we encoded must decode");
        assert_eq!(again, topo, "topology round trip changed the record");
    }

    let mut set = DiscoverySet::new();
    let seeded = DiscoveryInfo::from_json_at(br#"{"id":1,"name":"seed"}"#, 5)
        .expect("the seed record is valid");
    assert!(matches!(set.put(seeded), Applied::Added { .. }));
    let before: Vec<DiscoveryInfo> = set.iter().cloned().collect();
    match set.put_json(data, 7) {
        Err(_) | Ok(Applied::Rejected | Applied::Stale { .. }) => {
            let after: Vec<DiscoveryInfo> = set.iter().cloned().collect();
            assert_eq!(before, after, "a refused document changed the set");
        }
        Ok(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_truncated_documents_are_refused_without_change() {
        discovery_json(b"");
        discovery_json(b"{\"id\":");
        discovery_json(b"\xff\xfe{}");
        discovery_json(b"[1,2,3]");
        discovery_json(br#"{"id":{"nested":true}}"#);
        discovery_json(br#"{"id":18446744073709551616}"#);
    }
}
