//! Calls `greet` with `world` through the registry where `rpc_server` runs, and checks the
//! reply is `hello, world` (exit 1 otherwise):
//! `cargo run -p switchboard-tokio --example rpc_client -- REGISTRY_ADDR`.

use std::{net::SocketAddr, time::Duration};

use bytes::Bytes;
use switchboard_tokio::{CallOutcome, CallSpec, Error, NodeBuilder, NodeId};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let registry: SocketAddr = (std::env::args().nth(1))
        .and_then(|addr| addr.parse().ok())
        .expect("usage: rpc_client REGISTRY_ADDR");
    let (node, _inbox) = NodeBuilder::new(NodeId(1), "caller")
        .registry(registry)
        .allow_direct_connection(true)
        .start()
        .await?;
    node.wait_registered(Duration::from_secs(10)).await?;
    let call = CallSpec::new("greet", Bytes::from_static(b"world"));
    let outcome = node.call(call.timeout(Duration::from_secs(10))).await?;
    node.shutdown().await?;
    match outcome {
        CallOutcome::Reply(reply) if reply == "hello, world" => {
            println!("reply: hello, world");
            Ok(())
        }
        other => {
            eprintln!("rpc_client: expected the reply `hello, world`, got {other:?}");
            std::process::exit(1)
        }
    }
}
