//! Atomic name claims on etcd: two `switchboard node --etcd` processes with different ids
//! started at the same instant for one free name — exactly one registers; the other's ready
//! line says `"registered":false` with a conflict naming the name and the winner's id, and it
//! exits 1. Before the claim key, the name check (a list) and the registration txn were two
//! round trips and both racers could register. Real processes on 127.0.0.1 and a private
//! etcd; several rounds, each a fresh name.
//!
//! Needs the `etcd` feature (`cargo test -p switchboard --features etcd`) and the `etcd`
//! binary on `PATH`.

#![cfg(feature = "etcd")]

mod process_support;

use std::{sync::Barrier, thread, time::Duration};

use process_support::{
    cluster::{Node, NodeSpec, RegistryAddr, start_node},
    etcd::EtcdProc,
};

/// Rounds of the race, each for a fresh name.
const ROUNDS: u64 = 6;

#[test]
fn two_nodes_racing_for_one_free_name_register_exactly_one() {
    let etcd = EtcdProc::start();
    let registry = RegistryAddr::Etcd(etcd.endpoint());
    for round in 0..ROUNDS {
        let name = format!("contested-{round}");
        let ids = [600 + 2 * round, 601 + 2 * round];
        let barrier = Barrier::new(2);
        let nodes: Vec<Node> = thread::scope(|scope| {
            let handles: Vec<_> = ids
                .iter()
                .map(|&id| {
                    let (registry, name, barrier) = (registry.clone(), name.clone(), &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        start_node(NodeSpec::new(id, &name, registry).echo())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a racer's thread"))
                .collect()
        });
        let ready: Vec<String> = nodes.iter().map(|n| n.ready.to_string()).collect();
        let (winners, mut losers): (Vec<Node>, Vec<Node>) =
            nodes.into_iter().partition(Node::ready_registered);
        assert_eq!(
            winners.len(),
            1,
            "round {round}: exactly one of two racers for {name:?} registers: {ready:?}"
        );
        let winner = &winners[0];
        let winner_id = winner.ready["id"].as_u64().expect("the ready line's id");
        let mut loser = losers.pop().expect("the other racer");
        let conflict = loser
            .ready_conflict()
            .unwrap_or_else(|| panic!("round {round}: no conflict in {}", loser.ready));
        assert!(
            conflict.contains(&format!("name \"{name}\" taken by id {winner_id}")),
            "round {round}: the refusal names the name and the winner: {conflict}"
        );
        let exit = loser.proc.wait_exit(Duration::from_secs(10));
        assert_eq!(
            exit.code(),
            Some(1),
            "round {round}: the refused node's exit"
        );
        assert!(
            winner.status().registered,
            "round {round}: the winner stays registered"
        );
    }
}
