//! The switchboard side: echo servers answering with `serve_inline`, a client with the
//! server as its upstream (one link: `direct`), and a client and server below one proxy
//! (`proxied`: request and reply both relayed).

use std::time::{Duration, Instant};

use bytes::Bytes;
use switchboard_core::{CallOutcome, CallSpec, ids::NodeId};
use switchboard_tokio::{InlineServing, NodeBuilder, NodeHandle, Transport};

use crate::transport::{BenchError, nodes::BenchNodes};

const REGISTRY_SEED: u64 = 0x7c_7c;
/// The method of the direct route's server.
pub const ECHO: &str = "bench.echo";
/// The method of the proxied route's server (another name, so no call picks the other
/// route's server).
pub const ECHO_FAR: &str = "bench.echo-far";
/// Every measured call's budget (a call that takes longer is a failure of the run).
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

const SERVER: NodeId = NodeId(0x7c01);
const CLIENT: NodeId = NodeId(0x7c02);
const PROXY: NodeId = NodeId(0x7c10);
const FAR_SERVER: NodeId = NodeId(0x7c11);
const FAR_CLIENT: NodeId = NodeId(0x7c12);

/// One calling node and the method it calls.
#[derive(Clone, Debug)]
pub struct CallRoute {
    name: &'static str,
    client: NodeHandle,
    method: &'static str,
}

impl CallRoute {
    /// The route's name in reports.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// One echo call; `Err(label)` unless it returns `payload` byte for byte.
    pub async fn echo(&self, payload: Bytes) -> Result<(), String> {
        let spec = CallSpec::new(self.method, payload.clone()).timeout(CALL_TIMEOUT);
        match self.client.call(spec).await {
            Ok(CallOutcome::Reply(reply)) if reply == payload => Ok(()),
            Ok(CallOutcome::Reply(_)) => Err("ours: wrong reply bytes".to_owned()),
            Ok(other) => Err(format!("ours: {} {:?}", other.class(), other.reason())),
            Err(e) => Err(format!("ours: {e}")),
        }
    }

    /// Calls until one call returns its payload (discovery and links come up meanwhile), at
    /// most for `timeout`.
    ///
    /// # Errors
    ///
    /// [`BenchError::RouteNotReady`] with the last call's result.
    pub async fn wait_ready(&self, timeout: Duration) -> Result<(), BenchError> {
        let started = Instant::now();
        let mut last = String::from("no call made");
        while started.elapsed() < timeout {
            match self.echo(Bytes::from_static(b"ready?")).await {
                Ok(()) => return Ok(()),
                Err(label) => last = label,
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err(BenchError::RouteNotReady {
            route: self.name,
            waited_ms: timeout.as_millis(),
            last,
        })
    }
}

/// The registry, the two echo servers and their clients.
#[derive(Debug)]
pub struct CallCluster {
    nodes: BenchNodes,
    /// Kept: dropping one stops serving its method.
    _serving: Vec<InlineServing>,
    /// Client → server over one link.
    pub direct: CallRoute,
    /// Client → proxy → server, the reply back the same way.
    pub proxied: CallRoute,
}

impl CallCluster {
    /// Starts everything and waits until each route answered a call (each within
    /// `ready_timeout`).
    ///
    /// # Errors
    ///
    /// A start failed, or a route never answered.
    pub async fn start(ready_timeout: Duration) -> Result<CallCluster, BenchError> {
        let mut nodes = BenchNodes::start(REGISTRY_SEED, Transport::plain(), &[]).await?;
        let server = NodeBuilder::new(SERVER, "echo-server").serve(ECHO);
        let (server, _) = nodes.node_from(server, "echo-server", None).await?;
        let (client, _) = nodes.node(CLIENT, "client", Some(SERVER)).await?;
        nodes.node(PROXY, "proxy", None).await?;
        let far = NodeBuilder::new(FAR_SERVER, "far-server").serve(ECHO_FAR);
        let (far, _) = nodes.node_from(far, "far-server", Some(PROXY)).await?;
        let (far_client, _) = nodes.node(FAR_CLIENT, "far-client", Some(PROXY)).await?;
        let serving = vec![
            echo_inline(&server, ECHO).await?,
            echo_inline(&far, ECHO_FAR).await?,
        ];
        let direct = CallRoute {
            name: "direct",
            client,
            method: ECHO,
        };
        let proxied = CallRoute {
            name: "proxied",
            client: far_client,
            method: ECHO_FAR,
        };
        direct.wait_ready(ready_timeout).await?;
        proxied.wait_ready(ready_timeout).await?;
        Ok(CallCluster {
            nodes,
            _serving: serving,
            direct,
            proxied,
        })
    }

    /// Shuts every node down, then the registry (each bounded by `timeout`).
    pub async fn shutdown(self, timeout: Duration) {
        self.nodes.shutdown(timeout).await;
    }
}

/// Serves `method` on `node` with an inline handler that returns the request's payload.
async fn echo_inline(node: &NodeHandle, method: &str) -> Result<InlineServing, BenchError> {
    node.serve_inline(method, |request| request.payload.clone())
        .await
        .map_err(|e| BenchError::Task(format!("serve_inline {method}: {e}")))
}
