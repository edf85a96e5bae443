//! One live holder per id on the embedded registry (issue 22): a second copy of a node (same
//! id, name and default identity) is refused while the first runs — exactly one registered,
//! no takeover, the copy exits 1 naming the live holder. Real `switchboard` processes.

mod process_support;

use process_support::cluster::{ANY_PORT, NodeSpec, start_node, start_registry};

#[test]
fn a_second_copy_of_a_node_is_refused_and_the_first_stays_registered() {
    let registry = start_registry("registry", ANY_PORT);
    let spec = NodeSpec::new(501, "dup", registry.addr);
    let first = start_node(spec.clone());
    assert!(first.ready_registered(), "first: {}", first.ready);
    let first_incarnation = first.status().incarnation;

    let conflict = start_node(spec).expect_refused();
    assert!(
        conflict.contains(&first_incarnation.to_string()),
        "the conflict names the live holder's incarnation {first_incarnation}: {conflict}"
    );

    // The first copy was never displaced: same incarnation, registered, no takeover.
    let status = first.status();
    assert!(status.registered);
    assert_eq!(status.incarnation, first_incarnation);
    let ls = std::process::Command::new(process_support::switchboard_bin())
        .args(["ls", "--registry", &registry.addr.to_string(), "-o", "json"])
        .output()
        .expect("ls");
    let rows: serde_json::Value = serde_json::from_slice(&ls.stdout).expect("ls json");
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows}");
    assert_eq!(rows[0]["id"], 501);
    assert_eq!(
        first.counter("switchboard_registry_conflicts_total"),
        0,
        "the holder saw no conflict"
    );
}
