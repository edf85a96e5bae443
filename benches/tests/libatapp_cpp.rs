//! The C++ libatapp reference builds and runs here (test mode): its vectors are exactly the
//! committed file that `core/tests/libatapp_vectors.rs` checks our libatapp modes against,
//! and its bench and lookup commands time both recipes on a small workload.

use switchboard_benches::{
    cpp_reference::{self, Layout},
    workload::{Workload, keys},
};

#[test]
fn the_cpp_reference_prints_exactly_the_committed_vectors() {
    let committed = include_str!("../../core/tests/vectors/libatapp_ring.txt");
    let fresh = cpp_reference::vectors().expect("the C++ reference runs");
    assert_eq!(fresh.lines().count(), committed.lines().count());
    assert!(
        fresh == committed,
        "regenerate with: {} vectors > core/tests/vectors/libatapp_ring.txt",
        cpp_reference::BINARY
    );
}

#[test]
fn the_cpp_reference_times_both_recipes_on_our_workload() {
    let w = Workload::new(10, 1);
    let keys = keys(2000, 3);
    for (layout, points) in [(Layout::V012, 800), (Layout::Main, 800)] {
        let t = cpp_reference::bench(layout, &w, &keys, 1).expect("the C++ bench runs");
        assert_eq!(t.points, points, "{layout:?}");
        assert!(t.build_ns > 0.0 && t.lookup_ns > 0.0 && t.compact_build_ns > 0.0);
        // The lookup-only round ring-report interleaves with ours.
        let (lookup_points, ns) =
            cpp_reference::lookup_ns(layout, &w, &keys, 1).expect("the C++ lookup round runs");
        assert_eq!(lookup_points, points, "{layout:?}");
        assert!(ns > 0.0);
    }
}
