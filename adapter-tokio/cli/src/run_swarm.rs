//! `switchboard swarm`: N cluster members in one process, each its own socket, registry
//! session and core, to load-test a registry — start N, converge, add joiners, converge, send
//! a message round, leave — and one JSON line of what it measured (`cli/swarm.rs` has the
//! flags and the line's fields).

use std::{
    net::SocketAddr,
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use futures_util::future::join_all;
use serde::Serialize;
use switchboard_core::{ClusterKey, config::Config, ids::NodeId};
use switchboard_tokio::{
    Inbox, NodeBuilder, NodeHandle, RegistrySpec, TargetSpec, Transport,
    registry::client::SharedRecords,
};
use tokio::{sync::Semaphore, task::JoinSet, time::Instant};

use crate::{
    cli::SwarmArgs,
    config::{Identity, core_config},
    error::CliError,
    lifecycle::{print_result, shutdown_bounded, start_error},
    swarm_probe,
};

/// The most nodes one swarm runs (each holds a few sockets; 20,000 descriptors is the usual
/// hard limit here).
const MAX_NODES: u32 = 4_000;

/// The swarm's message type.
const SWARM_MSG_TYPE: u32 = 0x5357;

/// What the swarm runs with, checked.
pub(crate) struct SwarmOptions {
    nodes: u32,
    joiners: u32,
    first_id: u64,
    messages: u32,
    start_concurrency: usize,
    timeout: Duration,
    registry: RegistrySpec,
    transport: Transport,
    keys: Vec<ClusterKey>,
    format: crate::cli::Format,
    upstream: Option<u64>,
    /// The nodes' embedded registry clients decode each record once between them.
    records: SharedRecords,
}

impl SwarmOptions {
    /// Checks the flags.
    ///
    /// # Errors
    ///
    /// Fewer than 2 nodes or more than [`MAX_NODES`] in all, id 0 or ids past `u64::MAX`,
    /// a zero concurrency or timeout, and the cluster flags' own errors.
    pub(crate) fn resolve(args: SwarmArgs) -> Result<SwarmOptions, CliError> {
        let crate::config::Joined {
            registry,
            transport,
            keys,
            upstream,
        } = args.cluster.resolve()?;
        if args.nodes < 2 {
            return Err(CliError::invalid("nodes", "must be at least 2"));
        }
        let joiners = args.joiners.unwrap_or((args.nodes / 10).max(1));
        if args.nodes.saturating_add(joiners) > MAX_NODES {
            return Err(CliError::invalid(
                "nodes",
                format!("nodes + joiners must be at most {MAX_NODES}"),
            ));
        }
        let total = u64::from(args.nodes + joiners);
        if args.first_id == 0 || args.first_id.checked_add(total).is_none() {
            return Err(CliError::invalid(
                "first_id",
                "must be at least 1, with room for every node's id below 2^64",
            ));
        }
        if args.start_concurrency == 0 {
            return Err(CliError::invalid("start_concurrency", "must be at least 1"));
        }
        if args.timeout.is_zero() {
            return Err(CliError::invalid("timeout", "must be greater than zero"));
        }
        Ok(SwarmOptions {
            format: args.out.output,
            upstream: args.join.upstream.or(upstream),
            nodes: args.nodes,
            joiners,
            first_id: args.first_id,
            messages: args.messages,
            start_concurrency: args.start_concurrency as usize,
            timeout: args.timeout,
            registry,
            transport,
            keys,
            // Two slots per node: a record stays cached while its change reaches every node.
            records: SharedRecords::with_slots(2 * (args.nodes + joiners) as usize),
        })
    }

    fn ids(&self, from: u32, count: u32) -> Vec<NodeId> {
        (u64::from(from)..u64::from(from + count))
            .map(|i| NodeId(self.first_id + i))
            .collect()
    }

    /// A member's core config: a root that may link every other member directly, or with
    /// `--upstream` a child of that proxy that sends through it.
    fn core(&self, id: NodeId) -> Result<Config, CliError> {
        let mut core = core_config(
            None,
            Identity {
                id: id.0,
                name: format!("swarm-{}", id.0),
                upstream: self.upstream,
                labels: [("swarm".to_owned(), self.first_id.to_string())].into(),
            },
        )?;
        core.topology_policy.allow_direct_connection = self.upstream.is_none();
        core.cluster_keys = self.keys.clone();
        Ok(core)
    }

    /// The local addresses the registry (or etcd) listens on, for its resident set.
    fn registry_addrs(&self) -> Vec<SocketAddr> {
        match &self.registry {
            RegistrySpec::Embedded(addr) => vec![*addr],
            RegistrySpec::EmbeddedHost(host_port) => {
                std::net::ToSocketAddrs::to_socket_addrs(host_port.as_str())
                    .map(Iterator::collect)
                    .unwrap_or_default()
            }
            RegistrySpec::Etcd(etcd) => (etcd.endpoints.iter())
                .filter_map(|url| url.rsplit("//").next()?.parse().ok())
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// The line `swarm` prints.
#[derive(Debug, Default, Serialize, PartialEq)]
pub(crate) struct SwarmReport {
    nodes: u32,
    joiners: u32,
    /// First start → the last of the first `nodes` registered, seconds (the start phase of
    /// `all_know_s`; the rest is the registry's pushes and the nodes applying them).
    all_registered_s: Option<f64>,
    /// First start → every node knows all `nodes`, seconds.
    all_know_s: Option<f64>,
    /// The last joiner's start → every node knows every joiner, seconds.
    joiners_known_s: Option<f64>,
    /// The registry's (or etcd's) resident set after the joiners converged, MB.
    registry_rss_mb: Option<f64>,
    /// This process's growth from before the first start to after the joiners converged,
    /// per node, KiB.
    swarm_rss_per_node_kb: Option<f64>,
    sent: u64,
    delivered: u64,
    received: u64,
    pass: bool,
}

/// One running member and what its inbox reader counted.
struct Member {
    handle: NodeHandle,
    /// Messages received whose payload named their sender.
    received: Arc<AtomicU64>,
}

/// Runs the swarm and prints its line.
///
/// # Errors
///
/// A node could not start or register, or stdout is closed. A phase that did not converge
/// or a message not delivered is not an error but exit 1 after the line.
pub(crate) async fn run(options: SwarmOptions) -> Result<ExitCode, CliError> {
    let mut report = SwarmReport {
        nodes: options.nodes,
        joiners: options.joiners,
        ..SwarmReport::default()
    };
    let rss_before = swarm_probe::own_rss_kib();
    let mut members = Vec::new();
    let first_start = Instant::now();
    let failure = phases(&options, &mut members, &mut report, first_start, rss_before).await;
    // Members leave in batches like they started: a thousand unregistrations at once only
    // queue at the registry past the leave's own bound.
    let permits = Semaphore::new(options.start_concurrency);
    let leaving = members.iter().map(|m| async {
        let _permit = permits.acquire().await;
        shutdown_bounded(&m.handle).await;
    });
    join_all(leaving).await;
    report.pass = failure.is_none();
    print_result(&report, options.format)?;
    match failure {
        None => Ok(ExitCode::SUCCESS),
        Some(why) => {
            eprintln!("swarm: {why}");
            Ok(ExitCode::from(1))
        }
    }
}

/// The phases in order; the first that fails says why.
async fn phases(
    options: &SwarmOptions,
    members: &mut Vec<Member>,
    report: &mut SwarmReport,
    first_start: Instant,
    rss_before: Option<u64>,
) -> Option<String> {
    let first = options.ids(0, options.nodes);
    if let Err(e) = start_all(options, &first, members).await {
        return Some(e.to_string());
    }
    report.all_registered_s = Some(first_start.elapsed().as_secs_f64());
    if !converge(members, &first, options.timeout).await {
        return Some(format!(
            "not every node knew all {} within {:?}",
            options.nodes, options.timeout
        ));
    }
    report.all_know_s = Some(first_start.elapsed().as_secs_f64());
    let joiners = options.ids(options.nodes, options.joiners);
    let last_start = match start_all(options, &joiners, members).await {
        Ok(last) => last,
        Err(e) => return Some(e.to_string()),
    };
    let everyone = options.ids(0, options.nodes + options.joiners);
    if !converge(members, &everyone, options.timeout).await {
        return Some(format!(
            "not every node knew the {} joiners within {:?}",
            options.joiners, options.timeout
        ));
    }
    report.joiners_known_s = Some(last_start.elapsed().as_secs_f64());
    report.registry_rss_mb =
        swarm_probe::listeners_rss_kib(&options.registry_addrs()).map(|kib| kib as f64 / 1024.0);
    report.swarm_rss_per_node_kb = rss_before
        .zip(swarm_probe::own_rss_kib())
        .map(|(before, after)| after.saturating_sub(before) as f64 / members.len() as f64);
    exchange(options, members, report).await
}

/// Starts `ids` (at most `start_concurrency` registering at once) and returns the instant the
/// last one was started.
///
/// # Errors
///
/// A node could not start, or did not register within the timeout (it is killed; those
/// started are in `members`).
async fn start_all(
    options: &SwarmOptions,
    ids: &[NodeId],
    members: &mut Vec<Member>,
) -> Result<Instant, CliError> {
    let permits = Arc::new(Semaphore::new(options.start_concurrency));
    let mut starting = JoinSet::new();
    for &id in ids {
        let core = options.core(id)?;
        let builder = NodeBuilder::new(id, core.name.clone())
            .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
            .transport(options.transport.clone())
            .registry_spec(options.registry.clone())
            .shared_records(options.records.clone())
            .config(move |config| *config = core);
        let permits = Arc::clone(&permits);
        let timeout = options.timeout;
        starting.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let started_at = Instant::now();
            let (handle, inbox) = builder.start().await.map_err(start_error)?;
            if let Err(why) = handle.wait_registered(timeout).await {
                handle.kill();
                return Err(CliError::failed(format!("node {id}: {why}")));
            }
            Ok((started_at, handle, inbox))
        });
    }
    let mut last = None;
    let mut failure = None;
    while let Some(joined) = starting.join_next().await {
        match joined {
            Ok(Ok((started_at, handle, inbox))) => {
                last = last.max(Some(started_at));
                let received = Arc::new(AtomicU64::new(0));
                tokio::spawn(count_received(inbox, Arc::clone(&received)));
                members.push(Member { handle, received });
            }
            Ok(Err(e)) => failure = failure.or(Some(e)),
            Err(e) => failure = failure.or(Some(CliError::failed(format!("a start task: {e}")))),
        }
    }
    match (failure, last) {
        (Some(e), _) => Err(e),
        (None, Some(last)) => Ok(last),
        (None, None) => Err(CliError::failed("no node to start")),
    }
}

/// Counts the swarm messages `inbox` receives whose payload is the 8-byte id of their sender.
async fn count_received(mut inbox: Inbox, received: Arc<AtomicU64>) {
    while let Some(message) = inbox.recv().await {
        let named = message
            .payload
            .get(..8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
        if message.msg_type == SWARM_MSG_TYPE && named == Some(message.from.0) {
            received.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Waits until every member knows the discovery and topology records of every id in `ids`.
async fn converge(members: &[Member], ids: &[NodeId], timeout: Duration) -> bool {
    let (Some(&low), Some(&high)) = (ids.first(), ids.last()) else {
        return true;
    };
    let waits: Vec<_> = members
        .iter()
        .map(|m| {
            m.handle.wait_for(timeout, move |k| {
                // Cheap first: the counts, then the range (other nodes may be listed too).
                k.discovery.len() >= ids.len()
                    && k.topology.len() >= ids.len()
                    && k.discovery.range(low..=high).count() == ids.len()
                    && k.topology.range(low..=high).count() == ids.len()
            })
        })
        .collect();
    join_all(waits).await.into_iter().all(|held| held)
}

/// Each member sends `messages` messages to the next member by id; every outcome is awaited
/// and every message must arrive once.
async fn exchange(
    options: &SwarmOptions,
    members: &[Member],
    report: &mut SwarmReport,
) -> Option<String> {
    let mut ids: Vec<NodeId> = members.iter().map(|m| m.handle.id()).collect();
    ids.sort_unstable();
    let next = |id: NodeId| {
        let at = ids.partition_point(|&i| i <= id);
        ids.get(at).copied().unwrap_or(ids[0])
    };
    let mut outcomes = JoinSet::new();
    for member in members {
        let handle = member.handle.clone();
        let to = next(handle.id());
        let messages = options.messages;
        outcomes.spawn(async move {
            let mut delivered = 0u64;
            for seq in 0..messages {
                let mut payload = handle.id().0.to_le_bytes().to_vec();
                payload.extend_from_slice(&u64::from(seq).to_le_bytes());
                let sent = handle
                    .send(TargetSpec::Id(to), SWARM_MSG_TYPE, Bytes::from(payload))
                    .await;
                delivered += u64::from(sent.is_ok_and(|o| o.is_delivered()));
            }
            delivered
        });
    }
    report.sent = u64::from(options.messages) * members.len() as u64;
    let bound = tokio::time::sleep(options.timeout);
    tokio::pin!(bound);
    loop {
        tokio::select! {
            joined = outcomes.join_next() => match joined {
                Some(Ok(delivered)) => report.delivered += delivered,
                Some(Err(e)) => return Some(format!("a sending task: {e}")),
                None => break,
            },
            () = &mut bound => return Some(format!("outcomes still missing after {:?}", options.timeout)),
        }
    }
    // Delivered means acknowledged by the receiver's core; its inbox reader counts a moment
    // later.
    let settle = Instant::now() + Duration::from_secs(2);
    loop {
        report.received = members
            .iter()
            .map(|m| m.received.load(Ordering::Relaxed))
            .sum();
        if report.received >= report.delivered || Instant::now() >= settle {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if report.delivered != report.sent {
        return Some(format!(
            "{} of {} messages not delivered",
            report.sent - report.delivered,
            report.sent
        ));
    }
    (report.received != report.delivered).then(|| {
        format!(
            "{} delivered, {} received",
            report.delivered, report.received
        )
    })
}
