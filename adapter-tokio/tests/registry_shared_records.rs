//! Nodes of one process given one [`SharedRecords`] over a real embedded registry on loopback
//! TCP: every node's view is exact (each peer's own listen address), and each distinct record
//! the registry sent was decoded once, every other delivery of it copied from the cache.

mod support;

use switchboard_tokio::registry::client::SharedRecords;

use support::{direct, init_logs, start, start_registry, wait_known};

/// On one thread a client never finds the cache held by another, so every delivery goes
/// through it and the counts are exact.
#[tokio::test(flavor = "current_thread")]
async fn nodes_of_one_process_decode_each_record_once() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let records = SharedRecords::with_slots(1024);
    let mut nodes = Vec::new();
    for (id, name) in [(1, "alpha"), (2, "beta"), (3, "gamma")] {
        let (node, inbox) = start(direct(addr, id, name).shared_records(records.clone())).await;
        nodes.push((node, inbox));
        let ids: Vec<u64> = (1..=id).collect();
        for (node, _) in &nodes {
            wait_known(node, &ids).await;
        }
    }
    for (node, _) in &nodes {
        let known = node.known();
        for (peer, _) in &nodes {
            assert_eq!(
                known.discovery.get(&peer.id()),
                Some(&vec![format!("atcp://{}", peer.local_addr())]),
                "node {} on node {}",
                peer.id(),
                node.id()
            );
        }
        assert_eq!(known.discovery.len(), 3);
    }
    // Each node received its own and the earlier nodes' records in its snapshot and each
    // later node's in a put: 3 discovery and 3 topology records per node, 18 deliveries. The
    // 6 distinct records were decoded once each, the other 12 deliveries copied.
    assert_eq!(records.counts(), (12, 6));
    registry.kill();
}
