//! A client that keeps many messages in flight and awaits every outcome.
//!
//! ```sh
//! cargo run -p switchboard-tokio --example client -- [REGISTRY_ADDR TARGET_NAME] [COUNT]
//! ```
//!
//! With a registry and a target name it sends to that node (e.g. the `echo_node` example).
//! Without, it starts an embedded registry and an echoing node `echo` in this process, so it
//! runs on its own. It [`submit`](switchboard_tokio::NodeHandle::submit)s `COUNT` messages
//! (default 1000) without waiting for their outcomes, then awaits each outcome and counts them
//! by kind, and counts the echoes that came back.

use std::{collections::BTreeMap, net::SocketAddr, time::Duration};

use bytes::Bytes;
use switchboard_tokio::{
    NodeBuilder, NodeHandle, TargetSpec,
    registry::{RegistryHandle, spawn_registry},
    switchboard_core::{ids::NodeId, outcome::Outcome, registry::server::ServerConfig},
};

/// A root node that links its peers directly.
fn root(id: u64, name: &str, registry: SocketAddr) -> NodeBuilder {
    NodeBuilder::new(NodeId(id), name)
        .registry(registry)
        .config(|c| c.topology_policy.allow_direct_connection = true)
}

/// A registry and an echoing node `echo` (id 2) in this process.
async fn local_echo() -> Result<(RegistryHandle, NodeHandle), Box<dyn std::error::Error>> {
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let registry = spawn_registry(loopback, ServerConfig::default(), 1).await?;
    let (echo, mut inbox) = root(2, "echo", registry.local_addr()).start().await?;
    let replies = echo.clone();
    tokio::spawn(async move {
        while let Some(msg) = inbox.recv().await {
            if replies
                .post(TargetSpec::Id(msg.from), msg.msg_type, msg.payload)
                .await
                .is_err()
            {
                break;
            }
        }
    });
    Ok((registry, echo))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (registry_addr, target, count, local) = match args.as_slice() {
        [registry, target, rest @ ..] if registry.contains(':') => (
            registry.parse::<SocketAddr>()?,
            target.clone(),
            rest.first().map_or(Ok(1000), |c| c.parse())?,
            None,
        ),
        rest => {
            let (registry, echo) = local_echo().await?;
            let count = rest.first().map_or(Ok(1000), |c| c.parse())?;
            (
                registry.local_addr(),
                "echo".to_owned(),
                count,
                Some((registry, echo)),
            )
        }
    };

    let (client, mut inbox) = root(1, "client", registry_addr).start().await?;
    // Names are resolved at send time: wait until the registry view is complete.
    client.wait_registered(Duration::from_secs(10)).await?;

    let mut pending = Vec::with_capacity(count);
    for seq in 0..count as u64 {
        let payload = Bytes::copy_from_slice(&seq.to_be_bytes());
        // Accepted (or refused) now; the outcome comes later.
        pending.push(
            client
                .submit(TargetSpec::Name(target.clone()), 1, payload)
                .await,
        );
    }
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    for p in pending {
        let kind = match p {
            Ok(outcome) => match outcome.await {
                Ok(Outcome::Delivered) => "delivered".to_owned(),
                Ok(other) => format!("{other:?}"),
                Err(stopped) => format!("{stopped}"),
            },
            Err(refused) => format!("refused: {refused}"),
        };
        *outcomes.entry(kind).or_default() += 1;
    }
    // Echoes (if the target echoes) arrive shortly after their deliveries.
    let mut echoes = 0_u64;
    while echoes < count as u64 {
        match tokio::time::timeout(Duration::from_secs(2), inbox.recv()).await {
            Ok(Some(_)) => echoes += 1,
            _ => break,
        }
    }
    println!("sent {count} to `{target}`: {outcomes:?}, {echoes} echoes");

    client.shutdown().await?;
    if let Some((registry, echo)) = local {
        echo.shutdown().await?;
        registry.shutdown().await;
    }
    Ok(())
}
