//! Unique names on the embedded registry: a second node asking for a name another id holds
//! is refused — its ready line says `"registered":false` with a conflict naming the holder, and it exits 1 —
//! and the holder keeps its traffic. Real `switchboard` processes on 127.0.0.1.

mod process_support;

use std::time::Duration;

use process_support::{
    cluster::{ANY_PORT, NodeSpec, start_node, start_registry},
    load::{LoadSpec, finish_load, spawn_load},
    scenario::RUN_START_TIMEOUT,
};

const NAME: &str = "unique";
const HOLDER_ID: u64 = 301;
const CHALLENGER_ID: u64 = 302;

#[test]
fn a_duplicate_name_is_refused_and_the_holder_keeps_its_traffic() {
    let registry = start_registry("registry", ANY_PORT);
    let holder = start_node(NodeSpec::new(HOLDER_ID, NAME, registry.addr).echo());
    assert!(holder.ready_registered(), "holder: {}", holder.ready);
    assert_eq!(holder.ready_conflict(), None, "holder: {}", holder.ready);

    let count = 2000;
    let spec = LoadSpec::to_name(registry.addr, NAME, 940, count, 1000);
    let run = spawn_load(&spec);
    holder.wait_received_at_least(count / 4, RUN_START_TIMEOUT);

    // Mid-run, another id asks for the same name.
    let challenger = start_node(NodeSpec::new(CHALLENGER_ID, NAME, registry.addr).echo());
    eprintln!("challenger's ready line: {}", challenger.ready);
    assert!(
        !challenger.ready_registered(),
        "a second holder of {NAME:?}: {}",
        challenger.ready
    );
    let conflict = challenger
        .ready_conflict()
        .unwrap_or_else(|| panic!("no conflict in {}", challenger.ready));
    assert_eq!(
        conflict,
        format!("name \"{NAME}\" taken by id {HOLDER_ID}"),
        "the conflict names the holder"
    );
    // A refused node cannot serve: it stops and exits 1 (the ready line said why).
    let mut challenger = challenger;
    let exit = challenger.proc.wait_exit(Duration::from_secs(10));
    assert_eq!(exit.code(), Some(1), "the refused node's exit");

    // The holder kept every message; the challenger got none.
    let summary = finish_load(run, &spec);
    eprintln!("run across the challenge: {summary:?}");
    summary.assert_all_delivered(count);
    assert_eq!(holder.received_total(), count);
    assert!(holder.status().registered);
}
