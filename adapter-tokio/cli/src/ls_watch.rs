//! `switchboard ls --watch`: after the listing, every change as it happens — one JSON object
//! (`-o json`) or one line (table) each, like `etcdctl watch` — until SIGINT or SIGTERM.

use std::collections::BTreeMap;

use serde::Serialize;
use switchboard_core::{
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    registry::RegistryEvent,
};
use switchboard_tokio::registry::{Feed, FeedEvent};

use crate::{
    cli::LsFormat,
    error::CliError,
    lifecycle::{StopSignals, print_json_line},
    run_ls::{NodeRow, apply, row},
};

/// One change as `--watch` prints it.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum Change {
    /// A node was added or changed (its record or its topology): its row now.
    Put {
        /// The row.
        node: NodeRow,
    },
    /// A node left the registry.
    Delete {
        /// Its id.
        id: u64,
        /// Its name.
        name: String,
    },
}

impl Change {
    /// The table form: `put ID NAME ADDRESSES upstream=U` or `delete ID NAME`.
    fn line(&self) -> String {
        let or_dash = |s: &str| {
            if s.is_empty() {
                "-".to_owned()
            } else {
                s.to_owned()
            }
        };
        match self {
            Change::Put { node } => format!(
                "put {} {} {} upstream={}",
                node.id,
                or_dash(&node.name),
                or_dash(&node.addresses.join(",")),
                node.upstream.map_or("-".to_owned(), |u| u.to_string())
            ),
            Change::Delete { id, name } => format!("delete {id} {}", or_dash(name)),
        }
    }
}

/// What one registry event changes in the listing (applied to it).
pub(crate) fn changes(
    discovery: &mut BTreeMap<(NodeId, String), DiscoveryInfo>,
    topology: &mut BTreeMap<NodeId, TopologyInfo>,
    event: RegistryEvent,
) -> Vec<Change> {
    let touched = match &event {
        RegistryEvent::DiscoveryPut(info) => Some(info.id),
        RegistryEvent::TopologyPut(info) => Some(info.id),
        RegistryEvent::TopologyDelete { id, .. } => Some(*id),
        _ => None,
    };
    let deleted = match &event {
        RegistryEvent::DiscoveryDelete { id, name, .. } => discovery
            .keys()
            .filter(|(i, n)| i == id && (name.is_empty() || n == name))
            .map(|(i, n)| Change::Delete {
                id: i.0,
                name: n.clone(),
            })
            .collect(),
        _ => Vec::new(),
    };
    apply(discovery, topology, event);
    let puts = touched.into_iter().flat_map(|id| {
        discovery
            .values()
            .filter(move |info| info.id == id)
            .map(|info| Change::Put {
                node: row(info.clone(), topology),
            })
            .collect::<Vec<_>>()
    });
    deleted.into_iter().chain(puts).collect()
}

/// Prints every change until a stop signal (exit 0) or the registry client stops. `signals`
/// were installed before the listing was printed, so a signal right after it is caught.
///
/// # Errors
///
/// Stdout closed, or the client stopped.
pub(crate) async fn watch(
    mut signals: StopSignals,
    feed: &mut Feed,
    discovery: &mut BTreeMap<(NodeId, String), DiscoveryInfo>,
    topology: &mut BTreeMap<NodeId, TopologyInfo>,
    format: LsFormat,
) -> Result<(), CliError> {
    loop {
        let event = tokio::select! {
            event = feed.events.recv() => event,
            _ = signals.wait() => return Ok(()),
        };
        match event {
            None => return Err(CliError::failed("ls: the registry client stopped")),
            Some(FeedEvent::Registry(event)) => {
                for change in changes(discovery, topology, event) {
                    match format {
                        LsFormat::Json => print_json_line(&change)?,
                        LsFormat::Table => println!("{}", change.line()),
                    }
                }
            }
            Some(FeedEvent::Disconnected { reason }) => {
                eprintln!("ls: the registry connection dropped ({reason}); watching on");
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use switchboard_core::discovery::TopologyInfo;

    use super::*;

    #[test]
    fn each_change_is_one_object_with_the_nodes_row_or_its_id() {
        let mut discovery = BTreeMap::new();
        let mut topology = BTreeMap::new();
        let info = DiscoveryInfo {
            id: NodeId(101),
            name: "a".to_owned(),
            hostname: "h1".to_owned(),
            pid: 42,
            incarnation: u64::MAX,
            listen: vec!["atcp://127.0.0.1:4001".to_owned()],
            ..DiscoveryInfo::default()
        };
        let put = changes(
            &mut discovery,
            &mut topology,
            RegistryEvent::DiscoveryPut(info),
        );
        assert_eq!(
            serde_json::to_string(&put).expect("json"),
            r#"[{"event":"put","node":{"id":101,"name":"a","host":"h1","pid":42,"incarnation":"18446744073709551615","addresses":["atcp://127.0.0.1:4001"],"upstream":null,"methods":[],"labels":{}}}]"#
        );
        assert_eq!(put[0].line(), "put 101 a atcp://127.0.0.1:4001 upstream=-");
        let topo = TopologyInfo {
            id: NodeId(101),
            upstream_id: NodeId(10),
            ..TopologyInfo::default()
        };
        let moved = changes(
            &mut discovery,
            &mut topology,
            RegistryEvent::TopologyPut(topo),
        );
        assert_eq!(
            moved[0].line(),
            "put 101 a atcp://127.0.0.1:4001 upstream=10"
        );
        let gone = changes(
            &mut discovery,
            &mut topology,
            RegistryEvent::DiscoveryDelete {
                id: NodeId(101),
                name: "a".to_owned(),
                revision: 9,
            },
        );
        assert_eq!(
            gone,
            [Change::Delete {
                id: 101,
                name: "a".to_owned()
            }]
        );
        assert_eq!(
            serde_json::to_string(&gone[0]).expect("json"),
            r#"{"event":"delete","id":101,"name":"a"}"#
        );
        assert!(discovery.is_empty());
    }
}
