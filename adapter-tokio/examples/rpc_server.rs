//! Serves `greet` (`hello, ` + the payload) on a node of its own embedded registry, prints the
//! registry's address for `rpc_client`, answers N requests (default: no end), then stops once
//! its last caller left: `cargo run -p switchboard-tokio --example rpc_server -- [N]`.

use std::time::Duration;

use switchboard_tokio::{Error, NodeBuilder, NodeId, ServerConfig, registry::spawn_registry};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(usize::MAX, |n| n.parse().expect("a count"));
    let registry = spawn_registry(([127, 0, 0, 1], 0).into(), ServerConfig::default(), 1).await?;
    let (node, _inbox) = NodeBuilder::new(NodeId(2), "greeter")
        .registry(registry.local_addr())
        .allow_direct_connection(true)
        .start()
        .await?;
    node.wait_registered(Duration::from_secs(10)).await?;
    let mut requests = node.serve("greet").await?;
    println!("{}", registry.local_addr());
    let mut caller = None;
    for _ in 0..n {
        let Some(request) = requests.recv().await else {
            break;
        };
        caller = Some(request.from());
        let reply = [&b"hello, "[..], request.payload()].concat();
        request.respond(reply.into()).await?;
    }
    // The caller leaves the registry view once its reply was acknowledged.
    let gone = |k: &switchboard_tokio::Known| caller.is_none_or(|c| !k.discovery.contains_key(&c));
    node.wait_for(Duration::from_secs(10), gone).await;
    node.shutdown().await?;
    registry.shutdown().await;
    Ok(())
}
