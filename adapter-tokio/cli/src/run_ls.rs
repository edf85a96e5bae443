//! `switchboard ls`: what the registry knows, read-only. On the embedded registry a client
//! of its own *watches* (a `Register` with the watch flag: the registry answers with the
//! snapshot of every node and lists nothing for it, so no node sees it come or go), takes the
//! snapshot, leaves at once and prints every node. On etcd it runs the backend's watchers
//! only (`watch_etcd`: no lease, no key written) until every family is listed.

use std::{collections::BTreeMap, time::Duration};

use serde::Serialize;
use switchboard_core::{
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    registry::{RegistryEvent, client::ClientConfig},
    rpc::{METHOD_LABEL_PREFIX, served_methods},
};
use switchboard_tokio::{
    RegistrySpec,
    registry::{Feed, FeedCommand, FeedEvent, client::spawn_client_with},
};
use tokio::{sync::oneshot, time::Instant};

use crate::{
    cli::{LsArgs, LsFormat},
    client::{client_identity, registry_name, seconds},
    config::core_config,
    error::CliError,
    lifecycle::{print_json_line, run_seed},
};

/// Bound on the goodbye after the snapshot.
const LEAVE_WAIT: Duration = Duration::from_secs(2);

/// Everything `switchboard ls` runs with.
#[derive(Debug)]
pub(crate) struct LsOptions {
    core: switchboard_core::config::Config,
    registry: RegistrySpec,
    transport: switchboard_tokio::Transport,
    format: LsFormat,
    timeout: Duration,
    watch: bool,
}

impl LsOptions {
    /// Checks the flags; `random` draws the watcher's id (it names it in its handshake).
    ///
    /// # Errors
    ///
    /// No registry or two, a zero timeout.
    pub(crate) fn resolve(args: LsArgs, random: u64) -> Result<LsOptions, CliError> {
        let crate::config::Joined {
            registry,
            transport,
            keys,
        } = args.cluster.resolve()?;
        if args.timeout_ms == 0 {
            return Err(CliError::invalid("timeout_ms", "must be greater than zero"));
        }
        // The watcher's id and name only name it in its handshake: nothing is listed.
        let mut core = core_config(None, client_identity("ls", None, None, random))?;
        core.cluster_keys = keys;
        Ok(LsOptions {
            core,
            registry,
            transport,
            format: args.output,
            timeout: Duration::from_millis(args.timeout_ms),
            watch: args.watch,
        })
    }
}

/// One listed node.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct NodeRow {
    /// Node id (0 for a node published by name only).
    pub(crate) id: u64,
    /// Node name.
    pub(crate) name: String,
    /// Host it runs on (empty when it does not say).
    pub(crate) host: String,
    /// Its process id (0 when it does not say).
    pub(crate) pid: i32,
    /// Its incarnation, as a string (it exceeds 2^53); `0` when it does not say.
    pub(crate) incarnation: String,
    /// Published listen addresses.
    pub(crate) addresses: Vec<String>,
    /// Its upstream (0 = a root); `None` without a topology record.
    pub(crate) upstream: Option<u64>,
    /// The RPC methods it serves (its `rpc.switchboard/<method>` labels), in name order.
    pub(crate) methods: Vec<String>,
    /// Its other labels.
    pub(crate) labels: BTreeMap<String, String>,
}

/// Reads the registry and prints the nodes.
///
/// # Errors
///
/// The registry did not answer within the timeout, or refused the client's record.
pub(crate) async fn run(options: LsOptions) -> Result<(), CliError> {
    let own = options.core.id;
    let discovery = options.core.discovery_info();
    let topology = options.core.topology_info(NodeId::NONE);
    let incarnation = run_seed();
    let feed = match &options.registry {
        RegistrySpec::Embedded(addr) => {
            let mut info = discovery;
            info.incarnation = incarnation;
            let mut client = ClientConfig::new(info, Some(topology), incarnation);
            client.keys = options.core.auth_keys();
            client.nonce_seed = crate::keys::random_u64();
            client.watch = true;
            client.backoff = switchboard_core::registry::client::registry_backoff(
                options.core.registry_reconnect_max,
            );
            spawn_client_with(*addr, client, options.transport.clone())
        }
        // Read-only: the watchers list and follow the prefix; no lease, no key written.
        #[cfg(feature = "etcd")]
        RegistrySpec::Etcd(etcd) => switchboard_tokio::etcd::watch_etcd(etcd.clone()),
        _ => {
            return Err(crate::lifecycle::start_error(
                switchboard_tokio::node::StartError::EtcdDisabled,
            ));
        }
    };
    let mut feed = feed;
    let (mut discovery, mut topology) = match read_snapshot(&mut feed, &options).await {
        Ok(view) => view,
        Err(e) => {
            leave(feed).await;
            return Err(e);
        }
    };
    discovery.retain(|(id, _), _| *id != own);
    let rows: Vec<NodeRow> = discovery
        .values()
        .map(|info| row(info.clone(), &topology))
        .collect();
    // Before the listing: a signal the moment it is out is the watch's stop, not a kill.
    let signals = if options.watch {
        match crate::lifecycle::StopSignals::install() {
            Ok(signals) => Some(signals),
            Err(e) => {
                leave(feed).await;
                return Err(e);
            }
        }
    } else {
        None
    };
    let printed = match options.format {
        LsFormat::Json => print_json_line(&rows),
        LsFormat::Table => {
            print!("{}", table(&rows));
            Ok(())
        }
    };
    if let (Ok(()), Some(signals)) = (&printed, signals) {
        let watched = crate::ls_watch::watch(
            signals,
            &mut feed,
            &mut discovery,
            &mut topology,
            options.format,
        )
        .await;
        leave(feed).await;
        return watched;
    }
    leave(feed).await;
    printed
}

/// The listed form of `info`, with its topology record's upstream and labels.
pub(crate) fn row(info: DiscoveryInfo, topology: &BTreeMap<NodeId, TopologyInfo>) -> NodeRow {
    let topo = topology.get(&info.id);
    let mut labels = topo.map(|t| t.data.label.clone()).unwrap_or_default();
    labels.extend(info.metadata.labels.clone());
    let methods: Vec<String> = served_methods(&info.metadata).map(str::to_owned).collect();
    labels.retain(|key, _| {
        !key.strip_prefix(METHOD_LABEL_PREFIX)
            .is_some_and(|method| methods.iter().any(|m| m == method))
    });
    NodeRow {
        id: info.id.0,
        name: info.name,
        host: info.hostname,
        pid: info.pid,
        incarnation: info.incarnation.to_string(),
        addresses: info.listen,
        upstream: topo.map(|t| t.upstream_id.0),
        methods,
        labels,
    }
}

/// What `ls` has read: discovery records by (id, name), topology records by id.
pub(crate) type View = (
    BTreeMap<(NodeId, String), DiscoveryInfo>,
    BTreeMap<NodeId, TopologyInfo>,
);

/// Takes registry events until the registration (the snapshot is in by then).
async fn read_snapshot(feed: &mut Feed, options: &LsOptions) -> Result<View, CliError> {
    let deadline = Instant::now() + options.timeout;
    let mut discovery: BTreeMap<(NodeId, String), DiscoveryInfo> = BTreeMap::new();
    let mut topology: BTreeMap<NodeId, TopologyInfo> = BTreeMap::new();
    let mut last_problem = None;
    let registry = registry_name(&options.registry);
    loop {
        let event = match tokio::time::timeout_at(deadline, feed.events.recv()).await {
            Ok(Some(event)) => event,
            Ok(None) => {
                return Err(CliError::failed(format!(
                    "ls: {registry}: the client stopped"
                )));
            }
            Err(_) => {
                // A refused connection is said as such (not the client's retry schedule).
                let refused = crate::client::refused_now(&options.registry).await;
                let why = match last_problem {
                    Some(p) if refused.is_empty() => format!(" ({p})"),
                    _ => refused.to_owned(),
                };
                return Err(CliError::failed(format!(
                    "ls: {registry} did not answer within {}{why}",
                    seconds(options.timeout)
                )));
            }
        };
        match event {
            FeedEvent::Registry(event) => apply(&mut discovery, &mut topology, event),
            FeedEvent::Registered => break,
            FeedEvent::Disconnected { reason } => last_problem = Some(reason),
            FeedEvent::Conflict { holder } => {
                return Err(CliError::failed(format!(
                    "ls: {registry} refused the ls client: {holder}"
                )));
            }
            _ => {}
        }
    }
    while let Ok(event) = feed.events.try_recv() {
        if let FeedEvent::Registry(event) = event {
            apply(&mut discovery, &mut topology, event);
        }
    }
    Ok((discovery, topology))
}

/// Applies one registry change to the snapshot being read.
pub(crate) fn apply(
    discovery: &mut BTreeMap<(NodeId, String), DiscoveryInfo>,
    topology: &mut BTreeMap<NodeId, TopologyInfo>,
    event: RegistryEvent,
) {
    match event {
        RegistryEvent::DiscoveryPut(info) => {
            discovery.insert((info.id, info.name.clone()), info);
        }
        RegistryEvent::DiscoveryDelete { id, name, .. } => {
            discovery.retain(|(i, n), _| !(*i == id && (name.is_empty() || *n == name)));
        }
        RegistryEvent::TopologyPut(info) => {
            topology.insert(info.id, info);
        }
        RegistryEvent::TopologyDelete { id, .. } => {
            topology.remove(&id);
        }
        _ => {}
    }
}

/// Leaves (bounded), still taking events so the backend is never blocked on the feed.
async fn leave(mut feed: Feed) {
    let (tx, mut rx) = oneshot::channel();
    if feed.commands.send(FeedCommand::Shutdown(tx)).await.is_err() {
        return;
    }
    let wait = async {
        loop {
            tokio::select! {
                _ = &mut rx => return,
                event = feed.events.recv() => if event.is_none() { return },
            }
        }
    };
    let _ = tokio::time::timeout(LEAVE_WAIT, wait).await;
}

/// The rows as aligned columns under a header.
fn table(rows: &[NodeRow]) -> String {
    let mut lines = vec![[
        "ID".to_owned(),
        "NAME".to_owned(),
        "UPSTREAM".to_owned(),
        "ADDRESSES".to_owned(),
        "METHODS".to_owned(),
        "LABELS".to_owned(),
        "HOST".to_owned(),
        "PID".to_owned(),
    ]];
    let or_dash = |s: String| if s.is_empty() { "-".to_owned() } else { s };
    for row in rows {
        lines.push([
            row.id.to_string(),
            or_dash(row.name.clone()),
            row.upstream.map_or("-".to_owned(), |u| u.to_string()),
            or_dash(row.addresses.join(",")),
            or_dash(row.methods.join(",")),
            or_dash(
                row.labels
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            or_dash(row.host.clone()),
            if row.pid == 0 {
                "-".to_owned()
            } else {
                row.pid.to_string()
            },
        ]);
    }
    let mut widths = [0usize; 8];
    for line in &lines {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for line in &lines {
        let mut text = String::new();
        for (i, (cell, width)) in line.iter().zip(widths).enumerate() {
            if i + 1 == line.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<width$}  "));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HOST and PID were added at the end (issue 22: which process is node 101?).
    #[test]
    fn the_table_aligns_its_columns_under_a_header() {
        let rows = [
            NodeRow {
                id: 10,
                name: "proxy".to_owned(),
                host: String::new(),
                pid: 0,
                incarnation: "0".to_owned(),
                addresses: vec!["atcp://127.0.0.1:4000".to_owned()],
                upstream: Some(0),
                methods: Vec::new(),
                labels: BTreeMap::new(),
            },
            NodeRow {
                id: 101,
                name: "a".to_owned(),
                host: "h1".to_owned(),
                pid: 4242,
                incarnation: "7".to_owned(),
                addresses: vec!["atcp://127.0.0.1:4001".to_owned()],
                upstream: Some(10),
                methods: vec!["echo".to_owned(), "sleep".to_owned()],
                labels: BTreeMap::from([("role".to_owned(), "leaf".to_owned())]),
            },
        ];
        assert_eq!(
            table(&rows),
            "ID   NAME   UPSTREAM  ADDRESSES              METHODS     LABELS     HOST  PID\n\
             10   proxy  0         atcp://127.0.0.1:4000  -           -          -     -\n\
             101  a      10        atcp://127.0.0.1:4001  echo,sleep  role=leaf  h1    4242\n"
        );
    }
}
