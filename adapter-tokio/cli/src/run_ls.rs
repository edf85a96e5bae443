//! `switchboard ls`: what the registry knows, read-only. On the embedded registry a client
//! of its own *watches* (a `Register` with the watch flag: the registry answers with the
//! snapshot of every node and lists nothing for it, so no node sees it come or go), takes the
//! snapshot, leaves at once and prints every node. On etcd it runs the backend's watchers
//! only (`watch_etcd`: no lease, no key written) until every family is listed.

use std::{
    collections::BTreeMap,
    time::{Duration, SystemTime},
};

use serde::Serialize;
use switchboard_core::{
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    registry::{RegistryEvent, client::ClientConfig},
    rpc::{METHOD_LABEL_PREFIX, served_methods},
};
use switchboard_tokio::{
    RegistrySpec,
    registry::{Feed, FeedCommand, FeedEvent, client::spawn_client_to},
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
            ..
        } = args.cluster.resolve()?;
        let timeout = crate::duration::timeout_or_ms(args.timeout, args.timeout_ms)?
            .unwrap_or(Duration::from_secs(5));
        // The watcher's id and name only name it in its handshake: nothing is listed.
        let mut core = core_config(None, client_identity("ls", None, None, random))?;
        core.cluster_keys = keys;
        Ok(LsOptions {
            core,
            registry,
            transport,
            format: args.output,
            timeout,
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
    /// `live`, `protected` (its registry session is lost and the registry keeps its record
    /// through disconnect protection) or `leaving` (it announced a graceful exit).
    pub(crate) state: &'static str,
    /// When its registry session was lost (RFC 3339, UTC, milliseconds), while it is
    /// protected; `None` otherwise.
    pub(crate) protected_since: Option<String>,
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
        RegistrySpec::Embedded(_) | RegistrySpec::EmbeddedHost(_) => {
            let mut info = discovery;
            info.incarnation = incarnation;
            let mut client = ClientConfig::new(info, Some(topology), incarnation);
            client.keys = options.core.auth_keys();
            client.nonce_seed = crate::keys::random_u64();
            client.watch = true;
            client.backoff = switchboard_core::registry::client::registry_backoff(
                options.core.registry_reconnect_max,
            );
            let host_port =
                crate::client::embedded_host_port(&options.registry).unwrap_or_default();
            spawn_client_to(host_port, client, options.transport.clone())
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
    let mut listing = match read_snapshot(&mut feed, &options).await {
        Ok(listing) => listing,
        Err(e) => {
            leave(feed).await;
            return Err(e);
        }
    };
    listing.discovery.retain(|(id, _), _| *id != own);
    let rows: Vec<NodeRow> = listing
        .discovery
        .values()
        .map(|info| listing.row(info))
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
        let watched =
            crate::ls_watch::watch(signals, &mut feed, &mut listing, options.format).await;
        leave(feed).await;
        return watched;
    }
    leave(feed).await;
    printed
}

/// What `ls` has read: discovery records by (id, name), topology records by id, and the
/// nodes whose registry session is lost (the embedded registry's `Session` events).
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// Discovery records by (id, name).
    pub(crate) discovery: BTreeMap<(NodeId, String), DiscoveryInfo>,
    /// Topology records by id.
    pub(crate) topology: BTreeMap<NodeId, TopologyInfo>,
    /// Nodes in disconnect protection (session lost, record kept), with when the session was
    /// lost: the registry says how long before its message; `ls` counts back from when it
    /// read that message.
    pub(crate) protected: BTreeMap<NodeId, SystemTime>,
}

impl Listing {
    /// Applies one registry change, read at `read_at`.
    pub(crate) fn apply(&mut self, event: RegistryEvent, read_at: SystemTime) {
        match event {
            RegistryEvent::DiscoveryPut(info) => {
                self.discovery
                    .insert((info.id, info.name.clone()), DiscoveryInfo::clone(&info));
            }
            RegistryEvent::DiscoveryDelete { id, name, .. } => {
                self.discovery
                    .retain(|(i, n), _| !(*i == id && (name.is_empty() || *n == name)));
                if !self.discovery.keys().any(|(i, _)| *i == id) {
                    self.protected.remove(&id);
                }
            }
            RegistryEvent::TopologyPut(info) => {
                self.topology.insert(info.id, (*info).clone());
            }
            RegistryEvent::TopologyDelete { id, .. } => {
                self.topology.remove(&id);
            }
            RegistryEvent::Session { id, lost_for, .. } => match lost_for {
                Some(age) => {
                    let since = read_at.checked_sub(age).unwrap_or(SystemTime::UNIX_EPOCH);
                    self.protected.insert(id, since);
                }
                None => {
                    self.protected.remove(&id);
                }
            },
            _ => {}
        }
    }

    /// The listed form of `info`, with its topology record's upstream and labels and its
    /// state.
    pub(crate) fn row(&self, info: &DiscoveryInfo) -> NodeRow {
        let topo = self.topology.get(&info.id);
        let mut labels = topo.map(|t| t.data.label.clone()).unwrap_or_default();
        labels.extend(info.metadata.labels.clone());
        let methods: Vec<String> = served_methods(&info.metadata).map(str::to_owned).collect();
        labels.retain(|key, _| {
            !key.strip_prefix(METHOD_LABEL_PREFIX)
                .is_some_and(|method| methods.iter().any(|m| m == method))
        });
        let since = self.protected.get(&info.id).filter(|_| !info.is_leaving());
        NodeRow {
            id: info.id.0,
            name: info.name.clone(),
            state: state(info, since.is_some()),
            protected_since: since.map(|t| humantime::format_rfc3339_millis(*t).to_string()),
            host: info.hostname.clone(),
            pid: info.pid,
            incarnation: info.incarnation.to_string(),
            addresses: info.listen.clone(),
            upstream: topo.map(|t| t.upstream_id.0),
            methods,
            labels: labels.into(),
        }
    }
}

/// A node's state column: `leaving` (its record carries the leaving label) before
/// `protected` (its registry session is lost) before `live`.
fn state(info: &DiscoveryInfo, session_lost: bool) -> &'static str {
    if info.is_leaving() {
        "leaving"
    } else if session_lost {
        "protected"
    } else {
        "live"
    }
}

/// Takes registry events until the registration (the snapshot is in by then).
async fn read_snapshot(feed: &mut Feed, options: &LsOptions) -> Result<Listing, CliError> {
    let deadline = Instant::now() + options.timeout;
    let mut listing = Listing::default();
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
            FeedEvent::Registry(event) => listing.apply(event, SystemTime::now()),
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
            listing.apply(event, SystemTime::now());
        }
    }
    Ok(listing)
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
        "STATE".to_owned(),
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
            match &row.protected_since {
                Some(since) => format!("{} since {since}", row.state),
                None => row.state.to_owned(),
            },
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
    let mut widths = [0usize; 9];
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

    /// HOST and PID were added at the end (issue 22: which process is node 101?), STATE after
    /// NAME (issue 22: a node in disconnect protection must not look live, and says since
    /// when).
    #[test]
    fn the_table_aligns_its_columns_under_a_header() {
        let rows = [
            NodeRow {
                id: 10,
                name: "proxy".to_owned(),
                state: "live",
                protected_since: None,
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
                state: "protected",
                protected_since: Some("2026-12-03T11:20:20.123Z".to_owned()),
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
            "ID   NAME   STATE                                     UPSTREAM  ADDRESSES              METHODS     LABELS     HOST  PID\n\
             10   proxy  live                                      0         atcp://127.0.0.1:4000  -           -          -     -\n\
             101  a      protected since 2026-12-03T11:20:20.123Z  10        atcp://127.0.0.1:4001  echo,sleep  role=leaf  h1    4242\n"
        );
    }

    /// The state column of each case, exact: `leaving` wins over a lost session (a draining
    /// node whose connection closed is still leaving), a lost session is `protected` since
    /// the registry's age of loss before the message was read, and it is `live` again once
    /// the session is back or the record is deleted and put anew.
    #[test]
    fn the_state_is_leaving_then_protected_since_then_live() {
        use switchboard_core::discovery::LEAVING_LABEL;
        let plain = DiscoveryInfo {
            id: NodeId(7),
            name: "n".to_owned(),
            ..DiscoveryInfo::default()
        };
        let mut leaving = plain.clone();
        leaving
            .metadata
            .labels
            .insert(LEAVING_LABEL.to_owned(), "1".to_owned());
        assert_eq!(state(&plain, false), "live");
        assert_eq!(state(&plain, true), "protected");
        assert_eq!(state(&leaving, false), "leaving");
        assert_eq!(state(&leaving, true), "leaving");
        // 2026-12-03T11:20:20.123Z.
        let read_at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_296_820_123);
        let mut listing = Listing::default();
        listing.apply(RegistryEvent::DiscoveryPut(plain.clone().into()), read_at);
        let session = |lost_ms: Option<u64>| RegistryEvent::Session {
            id: NodeId(7),
            incarnation: 3,
            lost_for: lost_ms.map(Duration::from_millis),
        };
        // Lost 2,500 ms before the registry's message.
        listing.apply(session(Some(2_500)), read_at);
        let row = listing.row(&plain);
        assert_eq!(
            (row.state, row.protected_since.as_deref()),
            ("protected", Some("2026-12-03T11:20:17.623Z"))
        );
        let draining = listing.row(&leaving);
        assert_eq!(
            (draining.state, draining.protected_since),
            ("leaving", None)
        );
        listing.apply(session(None), read_at);
        let row = listing.row(&plain);
        assert_eq!((row.state, row.protected_since), ("live", None));
        listing.apply(session(Some(0)), read_at);
        assert_eq!(
            listing.row(&plain).protected_since.as_deref(),
            Some("2026-12-03T11:20:20.123Z")
        );
        listing.apply(
            RegistryEvent::DiscoveryDelete {
                id: NodeId(7),
                name: String::new(),
                revision: 4,
            },
            read_at,
        );
        assert!(listing.protected.is_empty());
        listing.apply(RegistryEvent::DiscoveryPut(plain.clone().into()), read_at);
        assert_eq!(listing.row(&plain).state, "live");
    }
}
