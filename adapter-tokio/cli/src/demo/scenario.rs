//! The demo's cast and script: which nodes start where, and what happens to them at which
//! fraction of the traffic phase.

use std::{collections::BTreeMap, net::SocketAddr, time::Duration};

use switchboard_core::ids::NodeId;
use tokio::time::Instant;

use super::cluster::{Cluster, Role};
use crate::error::CliError;

/// The root of the tree: every proxy's upstream, the relay between proxies.
pub(crate) const HUB: NodeId = NodeId(100);
/// The first proxy (killed by the script).
pub(crate) const PROXY_A: NodeId = NodeId(101);
/// The second proxy.
pub(crate) const PROXY_B: NodeId = NodeId(102);
/// The proxy added by the scale-out.
pub(crate) const PROXY_C: NodeId = NodeId(103);
/// The senders, one behind each initial proxy.
pub(crate) const CLIENTS: [(NodeId, NodeId); 2] = [(NodeId(301), PROXY_A), (NodeId(302), PROXY_B)];
/// The leaves and their initial proxies.
pub(crate) const LEAVES: [(NodeId, NodeId); 6] = [
    (NodeId(201), PROXY_A),
    (NodeId(202), PROXY_A),
    (NodeId(203), PROXY_A),
    (NodeId(204), PROXY_B),
    (NodeId(205), PROXY_B),
    (NodeId(206), PROXY_B),
];
/// Bound on the wait for the new proxy to be known before leaves move to it.
const SCALE_OUT_WAIT: Duration = Duration::from_secs(3);
/// The leaf the script restarts (behind [`PROXY_B`], which survives).
const RESTARTED_LEAF: NodeId = NodeId(204);

/// Every node started before traffic: (id, role, upstream).
pub(crate) fn initial_nodes() -> Vec<(NodeId, Role, Option<NodeId>)> {
    let hub = (HUB, Role::Proxy, None);
    let proxies = [PROXY_A, PROXY_B].map(|id| (id, Role::Proxy, Some(HUB)));
    let leaves = LEAVES.map(|(id, up)| (id, Role::Leaf, Some(up)));
    let clients = CLIENTS.map(|(id, up)| (id, Role::Client, Some(up)));
    std::iter::once(hub)
        .chain(proxies)
        .chain(leaves)
        .chain(clients)
        .collect()
}

/// One scripted action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Start [`PROXY_C`] and move one leaf of each proxy to it.
    ScaleOut,
    /// Kill [`PROXY_A`] abruptly.
    KillProxy,
    /// Move what was behind [`PROXY_A`] to [`PROXY_B`].
    MoveOrphans,
    /// Kill the restarted leaf.
    KillLeaf,
    /// Start it again: same id, same address, new incarnation.
    RestartLeaf,
    /// Kill the embedded registry.
    KillRegistry,
    /// Start it again on the same address (a new epoch).
    RestartRegistry,
}

/// The script: each step at a permille of the traffic phase.
pub(crate) const SCRIPT: [(u32, Step); 7] = [
    (150, Step::ScaleOut),
    (350, Step::KillProxy),
    (400, Step::MoveOrphans),
    (550, Step::KillLeaf),
    (600, Step::RestartLeaf),
    (700, Step::KillRegistry),
    (780, Step::RestartRegistry),
];

/// Something that happened, `at` after traffic started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    /// When, from the start of traffic.
    pub(crate) at: Duration,
    /// What.
    pub(crate) text: String,
}

/// When a step at `permille` is due in a traffic phase of `traffic`.
pub(crate) fn due_after(traffic: Duration, permille: u32) -> Duration {
    traffic * permille / 1000
}

/// Runs the script from `start` over a traffic phase of `traffic`, recording each step in
/// `events`.
///
/// # Errors
///
/// A step failed (a node or the registry did not start again).
pub(crate) async fn run_script(
    cluster: &mut Cluster,
    start: Instant,
    traffic: Duration,
    events: &mut Vec<Event>,
) -> Result<(), CliError> {
    let mut killed: BTreeMap<NodeId, SocketAddr> = BTreeMap::new();
    for (permille, step) in SCRIPT {
        tokio::time::sleep_until(start + due_after(traffic, permille)).await;
        let at = start.elapsed();
        let text = run_step(cluster, step, &mut killed).await?;
        events.push(Event { at, text });
    }
    Ok(())
}

async fn run_step(
    cluster: &mut Cluster,
    step: Step,
    killed: &mut BTreeMap<NodeId, SocketAddr>,
) -> Result<String, CliError> {
    let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
    match step {
        Step::ScaleOut => {
            cluster
                .start_node(PROXY_C, Role::Proxy, Some(HUB), any_port)
                .await?;
            // As an operator would: move leaves only once the new proxy is registered and
            // every node has learned it (bounded; moving earlier only costs failed sends).
            if !cluster.wait_known_by_all(PROXY_C, SCALE_OUT_WAIT).await {
                tracing::warn!(
                    "proxy {} was not known everywhere within {SCALE_OUT_WAIT:?}",
                    PROXY_C.0
                );
            }
            cluster.set_upstream(NodeId(203), PROXY_C).await?;
            cluster.set_upstream(NodeId(206), PROXY_C).await?;
            Ok(format!(
                "scale-out: proxy {c} started; leaf 203 moved {a} -> {c}, leaf 206 moved {b} -> {c}",
                a = PROXY_A.0,
                b = PROXY_B.0,
                c = PROXY_C.0
            ))
        }
        Step::KillProxy => {
            cluster.kill_node(PROXY_A);
            Ok(format!("proxy {} killed abruptly", PROXY_A.0))
        }
        Step::MoveOrphans => {
            for id in [NodeId(201), NodeId(202), CLIENTS[0].0] {
                cluster.set_upstream(id, PROXY_B).await?;
            }
            Ok(format!(
                "leaf 201, leaf 202, client {} moved {} -> {}",
                CLIENTS[0].0.0, PROXY_A.0, PROXY_B.0
            ))
        }
        Step::KillLeaf => {
            if let Some((_, listen)) = cluster.kill_node(RESTARTED_LEAF) {
                killed.insert(RESTARTED_LEAF, listen);
            }
            Ok(format!("leaf {} killed abruptly", RESTARTED_LEAF.0))
        }
        Step::RestartLeaf => {
            let listen = killed.remove(&RESTARTED_LEAF).unwrap_or(any_port);
            cluster
                .start_node(RESTARTED_LEAF, Role::Leaf, Some(PROXY_B), listen)
                .await?;
            Ok(format!(
                "leaf {} restarted on {listen} (new incarnation)",
                RESTARTED_LEAF.0
            ))
        }
        Step::KillRegistry => Ok(if cluster.kill_registry() {
            "registry killed abruptly".to_owned()
        } else {
            "registry kill skipped (etcd)".to_owned()
        }),
        Step::RestartRegistry => match cluster.registry_addr() {
            Some(addr) => {
                cluster.restart_registry().await?;
                Ok(format!("registry restarted on {addr} (new epoch)"))
            }
            None => Ok("registry restart skipped (etcd)".to_owned()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cast_is_a_hub_two_proxies_six_leaves_and_two_clients() {
        let nodes = initial_nodes();
        let count = |role| nodes.iter().filter(|(_, r, _)| *r == role).count();
        assert_eq!(
            (count(Role::Proxy), count(Role::Leaf), count(Role::Client)),
            (3, 6, 2)
        );
        assert_eq!(nodes[0], (HUB, Role::Proxy, None));
        let under_hub = nodes.iter().filter(|(_, _, up)| *up == Some(HUB)).count();
        assert_eq!(under_hub, 2);
        let behind = |proxy| {
            nodes
                .iter()
                .filter(|(_, r, up)| *r == Role::Leaf && *up == Some(proxy))
                .count()
        };
        assert_eq!((behind(PROXY_A), behind(PROXY_B)), (3, 3));
    }

    #[test]
    fn steps_are_due_at_their_fraction_in_order() {
        let traffic = Duration::from_secs(20);
        let times: Vec<Duration> = SCRIPT
            .iter()
            .map(|(permille, _)| due_after(traffic, *permille))
            .collect();
        assert_eq!(
            times,
            vec![
                Duration::from_secs(3),
                Duration::from_secs(7),
                Duration::from_secs(8),
                Duration::from_secs(11),
                Duration::from_secs(12),
                Duration::from_secs(14),
                Duration::from_millis(15_600),
            ]
        );
        assert!(SCRIPT.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(SCRIPT.iter().all(|(permille, _)| *permille < 1000));
    }
}
