//! A broadcast by label: node 1 sends one message to the `role=worker` nodes (2 and 3, not 4),
//! gets the report and each worker reads it: `cargo run -p switchboard-tokio --example broadcast`.

use switchboard_tokio::{
    BroadcastSpec, Error, Filter, NodeBuilder, NodeId, ServerConfig, registry::spawn_registry,
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let registry = spawn_registry(([127, 0, 0, 1], 0).into(), ServerConfig::default(), 1).await?;
    let node = |id, role: &str| {
        NodeBuilder::new(NodeId(id), format!("node-{id}"))
            .registry(registry.local_addr())
            .label("role", role)
            .allow_direct_connection(true)
            .start()
    };
    let (boss, _) = node(1, "boss").await?;
    let (w2, mut inbox2) = node(2, "worker").await?;
    let (w3, mut inbox3) = node(3, "worker").await?;
    let (idle, _) = node(4, "idle").await?;
    let ten = std::time::Duration::from_secs(10);
    assert!(boss.wait_known(&[1, 2, 3, 4].map(NodeId), ten).await);
    let spec = BroadcastSpec::new(Some(Filter::label("role", "worker")), 7, "reload".into());
    let mut delivered = boss.broadcast(spec).await?.delivered; // in the order acknowledged
    delivered.sort_unstable();
    assert_eq!(delivered, [NodeId(2), NodeId(3)]);
    for inbox in [&mut inbox2, &mut inbox3] {
        let got = inbox.recv().await.expect("the worker runs");
        assert_eq!(
            (got.from, got.msg_type, &got.payload[..]),
            (NodeId(1), 7, &b"reload"[..])
        );
    }
    for node in [boss, w2, w3, idle] {
        node.shutdown().await?;
    }
    registry.shutdown().await;
    Ok(())
}
