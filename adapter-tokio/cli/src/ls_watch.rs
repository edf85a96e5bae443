//! `switchboard ls --watch`: after the listing, every change as it happens — one JSON object
//! (`-o json`) or one line (table) each, like `etcdctl watch` — until SIGINT or SIGTERM.

use std::time::SystemTime;

use serde::Serialize;
use switchboard_core::registry::RegistryEvent;
use switchboard_tokio::registry::{Feed, FeedEvent};

use crate::{
    cli::LsFormat,
    error::CliError,
    lifecycle::{StopSignals, print_json_line},
    run_ls::{Listing, NodeRow},
};

/// One change as `--watch` prints it.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum Change {
    /// A node was added or changed (its record, its topology or its state): its row now.
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
    /// The table form: `put ID NAME STATE ADDRESSES upstream=U` (STATE `protected since T`
    /// while protected) or `delete ID NAME`.
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
                "put {} {} {}{} {} upstream={}",
                node.id,
                or_dash(&node.name),
                node.state,
                node.protected_since
                    .as_ref()
                    .map_or(String::new(), |t| format!(" since {t}")),
                or_dash(&node.addresses.join(",")),
                node.upstream.map_or("-".to_owned(), |u| u.to_string())
            ),
            Change::Delete { id, name } => format!("delete {id} {}", or_dash(name)),
        }
    }
}

/// What one registry event, read at `read_at`, changes in the listing (applied to it).
pub(crate) fn changes(
    listing: &mut Listing,
    event: RegistryEvent,
    read_at: SystemTime,
) -> Vec<Change> {
    let touched = match &event {
        RegistryEvent::DiscoveryPut(info) => Some(info.id),
        RegistryEvent::TopologyPut(info) => Some(info.id),
        RegistryEvent::TopologyDelete { id, .. } | RegistryEvent::Session { id, .. } => Some(*id),
        _ => None,
    };
    let deleted = match &event {
        RegistryEvent::DiscoveryDelete { id, name, .. } => listing
            .discovery
            .keys()
            .filter(|(i, n)| i == id && (name.is_empty() || n == name))
            .map(|(i, n)| Change::Delete {
                id: i.0,
                name: n.clone(),
            })
            .collect(),
        _ => Vec::new(),
    };
    listing.apply(event, read_at);
    let listing = &*listing;
    let puts = touched.into_iter().flat_map(|id| {
        listing
            .discovery
            .values()
            .filter(move |info| info.id == id)
            .map(|info| Change::Put {
                node: listing.row(info),
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
    listing: &mut Listing,
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
                for change in changes(listing, event, SystemTime::now()) {
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
    use std::time::Duration;

    use switchboard_core::{
        discovery::{DiscoveryInfo, TopologyInfo},
        ids::NodeId,
    };

    use super::*;

    /// The row carries `state` after `name` (issue 22: a node in disconnect protection must
    /// not look live, and says since when); a `Session` event re-prints the node's row with
    /// its new state.
    #[test]
    fn each_change_is_one_object_with_the_nodes_row_or_its_id() {
        // 2026-12-03T11:20:20.123Z.
        let read_at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_296_820_123);
        let mut listing = Listing::default();
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
            &mut listing,
            RegistryEvent::DiscoveryPut(info.into()),
            read_at,
        );
        assert_eq!(
            serde_json::to_string(&put).expect("json"),
            r#"[{"event":"put","node":{"id":101,"name":"a","state":"live","protected_since":null,"host":"h1","pid":42,"incarnation":"18446744073709551615","addresses":["atcp://127.0.0.1:4001"],"upstream":null,"methods":[],"labels":{}}}]"#
        );
        assert_eq!(
            put[0].line(),
            "put 101 a live atcp://127.0.0.1:4001 upstream=-"
        );
        let topo = TopologyInfo {
            id: NodeId(101),
            upstream_id: NodeId(10),
            ..TopologyInfo::default()
        };
        let moved = changes(
            &mut listing,
            RegistryEvent::TopologyPut(topo.into()),
            read_at,
        );
        assert_eq!(
            moved[0].line(),
            "put 101 a live atcp://127.0.0.1:4001 upstream=10"
        );
        let mut session = |lost_ms: Option<u64>| {
            let event = RegistryEvent::Session {
                id: NodeId(101),
                incarnation: u64::MAX,
                lost_for: lost_ms.map(Duration::from_millis),
            };
            changes(&mut listing, event, read_at)
                .iter()
                .map(Change::line)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            session(Some(1_000)),
            [
                "put 101 a protected since 2026-12-03T11:20:19.123Z atcp://127.0.0.1:4001 upstream=10"
            ]
        );
        assert_eq!(
            session(None),
            ["put 101 a live atcp://127.0.0.1:4001 upstream=10"]
        );
        let gone = changes(
            &mut listing,
            RegistryEvent::DiscoveryDelete {
                id: NodeId(101),
                name: "a".to_owned(),
                revision: 9,
            },
            read_at,
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
        assert!(listing.discovery.is_empty());
    }
}
