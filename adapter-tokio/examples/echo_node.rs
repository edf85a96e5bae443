//! An echoing node: every message it receives goes back to its sender, same type and payload.
//!
//! ```sh
//! cargo run -p switchboard-tokio --example echo_node -- [REGISTRY_ADDR] [SECONDS]
//! ```
//!
//! Without `REGISTRY_ADDR` it starts an embedded registry of its own on 127.0.0.1 and prints
//! its address (run the `client` example against it). It runs for `SECONDS` (default 30),
//! then shuts down gracefully: every message it echoed gets its outcome first.

use std::{net::SocketAddr, time::Duration};

use switchboard_tokio::{
    NodeBuilder, TargetSpec,
    registry::spawn_registry,
    switchboard_core::{ids::NodeId, registry::server::ServerConfig},
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (registry_addr, _own_registry) = match args.next() {
        Some(addr) => (addr.parse::<SocketAddr>()?, None),
        None => {
            let registry = spawn_registry(
                SocketAddr::from(([127, 0, 0, 1], 0)),
                ServerConfig::default(),
                1,
            )
            .await?;
            println!("registry on {}", registry.local_addr());
            (registry.local_addr(), Some(registry))
        }
    };
    let seconds: u64 = args.next().map_or(Ok(30), |s| s.parse())?;

    let (node, mut inbox) = NodeBuilder::new(NodeId(2), "echo")
        .registry(registry_addr)
        .config(|c| c.topology_policy.allow_direct_connection = true)
        .start()
        .await?;
    println!("echo node on {} (id 2, name `echo`)", node.local_addr());

    let echo = async {
        let mut echoed = 0_u64;
        while let Some(msg) = inbox.recv().await {
            // `post` queues the reply without waiting for the node; its outcome is not needed.
            if node
                .post(TargetSpec::Id(msg.from), msg.msg_type, msg.payload)
                .await
                .is_err()
            {
                break;
            }
            echoed += 1;
        }
        echoed
    };
    let echoed = tokio::time::timeout(Duration::from_secs(seconds), echo)
        .await
        .ok();
    node.shutdown().await?;
    if let Some(echoed) = echoed {
        println!("inbox closed after {echoed} echoes");
    } else {
        println!("stopped after {seconds} s");
    }
    Ok(())
}
