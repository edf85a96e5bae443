//! The coordinator: the backend's main task, the one that owns the feed port.
//!
//! It connects the client, starts the endpoint health task (`endpoint_health`: members that
//! refuse connections are kept out of the client's balancer), the lease task and the three
//! watcher tasks, and then
//! waits for either a report from them or a command from the node driver. Registry events
//! are forwarded as they come. The coordinator keeps a small view of the backend's health —
//! is the node registered, has every watcher listed, is every watch stream up — and turns its
//! edges into [`FeedEvent::Registered`] (registered, every watcher listed and watching, and
//! past the registration's revision, so the node has already seen its own records)
//! and [`FeedEvent::Disconnected`] (etcd unreachable, or the lease lost while re-registering).
//! A registration conflict is forwarded as [`FeedEvent::Conflict`].
//!
//! [`FeedCommand::UpdateTopology`] goes to the lease task. [`FeedCommand::Shutdown`] makes the
//! lease task revoke the lease (bounded in time), then every task ends and the command is
//! answered. If the driver drops either end of the feed, every task ends at once without a
//! revoke. Dropping the coordinator aborts the tasks it started.

use switchboard_core::{
    ids::NodeId,
    registry::RegistryEvent,
    registry::etcd::{KeyKind, KeyLayout, LeaseState, WatchConfig, WatchState},
    rng::Rng,
    time::Duration,
};
use tokio::{sync::mpsc, task::JoinHandle};

use super::{
    CONNECT_TIMEOUT, HTTP2_KEEPALIVE_INTERVAL, HTTP2_KEEPALIVE_TIMEOUT, RPC_TIMEOUT,
    convert::{WarnBackoff, bounded},
    endpoint_health::{EndpointHealth, HealthCheck},
    lease_task::{LeaseCommand, LeaseTask, lease_config},
    security,
    stats::{EtcdStats, slot},
    watch_task::WatchTask,
};
use crate::{
    clock::Clock,
    registry::{
        EtcdOptions,
        feed::{FeedCommand, FeedEvent, FeedPort, Registration},
    },
};

/// What a sub-task tells the coordinator.
#[derive(Debug)]
pub(super) enum Report {
    /// From the watcher of `kind`.
    Watch {
        /// The watcher's family.
        kind: KeyKind,
        /// What happened.
        update: WatchUpdate,
    },
    /// From the lease task.
    Lease(LeaseUpdate),
}

/// A watcher's news.
#[derive(Debug)]
pub(super) enum WatchUpdate {
    /// Registry events to forward, in order, and the newest revision the watcher has seen
    /// after them.
    Events(Vec<RegistryEvent>, u64),
    /// A list finished (the watcher's view is complete) at this revision.
    Listed(u64),
    /// A watch stream was created.
    Up,
    /// The list or the stream failed; the watcher retries.
    Down(String),
    /// The `by_id` watcher saw this node's own key deleted, or written under `lease`: for
    /// the lease task, which re-registers or yields.
    OwnKey {
        /// A delete (else a put).
        deleted: bool,
        /// The lease of the put (0 for a delete).
        lease: i64,
    },
}

/// The lease task's news.
#[derive(Debug)]
pub(super) enum LeaseUpdate {
    /// The node's keys are written on a live lease, at this revision.
    Registered(u64),
    /// The lease was lost; a new one is being granted and the registration replayed.
    Unregistered,
    /// The node's own key vanished (it registers again) or another live process holding
    /// this deployment's identity took it over (it waits for that one's key to go): why.
    KeyLost(String),
    /// The id is owned by another instance (described).
    Conflict(String),
}

/// Delay between attempts to build a client from the endpoints.
const CONNECT_RETRY: Duration = Duration::from_secs(3);
/// Longest gap between two warnings that the etcd endpoints are still unusable (the first
/// failure is reported at once, then after 3 s, 6 s, 12 s ... up to this).
const CONNECT_REPORT_MAX_GAP: Duration = Duration::from_secs(60);
/// Capacity of the report channel from the sub-tasks.
const REPORT_CAPACITY: usize = 256;

/// Aborts a task when dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Announced {
    Nothing,
    Registered,
    Disconnected,
}

/// The coordinator's view of the backend's health.
struct View {
    registered: Option<u64>,
    listed: [bool; 3],
    seen: [u64; 3],
    up: [bool; 3],
    announced: Announced,
    trouble: Option<String>,
}

impl View {
    /// Registered, every watcher listed and watching, and every watcher past the
    /// registration's revision (so the node has seen its own records).
    fn complete(&self) -> bool {
        self.registered
            .is_some_and(|revision| self.seen.iter().all(|seen| *seen >= revision))
            && self.listed.iter().all(|l| *l)
            && self.up.iter().all(|u| *u)
    }
}

/// The coordinator task. See the module docs. Without a registration it only watches:
/// nothing is written to etcd, and [`FeedEvent::Registered`] means every watcher has listed
/// and is watching.
pub(super) async fn run(
    options: EtcdOptions,
    registration: Option<Registration>,
    port: FeedPort,
    stats: EtcdStats,
) {
    let FeedPort {
        events,
        mut commands,
    } = port;
    let Some(client) = connect(&options, &events, &mut commands).await else {
        return;
    };
    // A member that refuses connections now is out of the balancer before the first RPC.
    let mut endpoints = EndpointHealth::new(client.clone(), options.endpoints.clone());
    endpoints.check().await;
    let health = HealthCheck::default();
    let _endpoints = AbortOnDrop(tokio::spawn(endpoints.run(health.clone())));
    let clock = Clock::start();
    let layout = KeyLayout::new(&options.prefix);
    let (node, incarnation) = registration
        .as_ref()
        .map_or((NodeId::NONE, 0), |r| (r.discovery.id, r.incarnation));
    let (report_tx, mut reports) = mpsc::channel(REPORT_CAPACITY);
    let (lease_tx, lease_rx) = mpsc::channel(16);
    let config = lease_config(options.lease_ttl, options.keepalive_interval);
    let mut lease_task = registration.map(|registration| {
        AbortOnDrop(tokio::spawn(
            LeaseTask {
                client: client.clone(),
                layout: layout.clone(),
                registration,
                state: LeaseState::new(config),
                config,
                clock,
                reports: report_tx.clone(),
                commands: lease_rx,
                stats: stats.clone(),
                health: health.clone(),
            }
            .run(),
        ))
    });
    let mut rng = Rng::new(incarnation ^ node.0.rotate_left(32));
    let watch_config = watch_config(options.watch_silence);
    let _watchers: Vec<AbortOnDrop> = KeyKind::ALL
        .iter()
        .map(|&kind| {
            AbortOnDrop(tokio::spawn(
                WatchTask {
                    client: client.clone(),
                    state: WatchState::new(kind, layout.clone(), watch_config, rng.fork()),
                    clock,
                    prefix: layout.prefix().to_owned(),
                    node,
                    reports: report_tx.clone(),
                    stats: stats.clone(),
                    broken: None,
                    health: health.clone(),
                }
                .run(),
            ))
        })
        .collect();
    drop(report_tx);
    let mut view = View {
        // A watcher has nothing to register: its view is complete once every watcher is.
        registered: if lease_task.is_some() { None } else { Some(0) },
        listed: [false; 3],
        seen: [0; 3],
        up: [false; 3],
        announced: Announced::Nothing,
        trouble: None,
    };
    loop {
        tokio::select! {
            report = reports.recv() => {
                let Some(report) = report else { return };
                if let Report::Watch { update: WatchUpdate::OwnKey { deleted, lease }, .. } = report {
                    if !to_lease(&lease_tx, lease_task.is_some(), LeaseCommand::OwnKey { deleted, lease }).await {
                        return;
                    }
                    continue;
                }
                if !apply(&mut view, report, &events).await {
                    return;
                }
            }
            command = commands.recv() => match command {
                Some(FeedCommand::UpdateTopology(topology)) => {
                    if !to_lease(&lease_tx, lease_task.is_some(), LeaseCommand::UpdateTopology(topology)).await {
                        return;
                    }
                }
                Some(FeedCommand::UpdateDiscovery(info)) => {
                    if !to_lease(&lease_tx, lease_task.is_some(), LeaseCommand::UpdateDiscovery(info)).await {
                        return;
                    }
                }
                Some(FeedCommand::Shutdown(done)) => {
                    // The lease task may be gone already; then there is nothing to revoke.
                    let _ = lease_tx.send(LeaseCommand::Shutdown).await;
                    let Some(lease) = lease_task.as_mut() else {
                        let _ = done.send(());
                        return;
                    };
                    let deadline = tokio::time::Instant::now() + RPC_TIMEOUT * 2;
                    loop {
                        tokio::select! {
                            _ = &mut lease.0 => break,
                            report = reports.recv() => if report.is_none() { break },
                            () = tokio::time::sleep_until(deadline) => {
                                tracing::warn!("etcd lease revoke did not finish in time");
                                break;
                            }
                        }
                    }
                    let _ = done.send(());
                    return;
                }
                None => return,
            },
        }
    }
}

/// Hands `command` to the lease task; false when it is gone. A watcher (no lease task)
/// has nothing to do with it.
async fn to_lease(
    lease_tx: &mpsc::Sender<LeaseCommand>,
    leased: bool,
    command: LeaseCommand,
) -> bool {
    !leased || lease_tx.send(command).await.is_ok()
}

/// Watch timing from the silence bound: progress is requested after a third of it, and the
/// stream is declared dead when the rest passes without an answer.
fn watch_config(silence: Duration) -> WatchConfig {
    let silence = silence.max(Duration::from_millis(300));
    let idle = silence / 3;
    WatchConfig {
        idle,
        progress_timeout: silence - idle,
        ..WatchConfig::default()
    }
}

/// Builds the client (HTTP/2 keepalive, require-leader, connect timeout), retrying while the
/// endpoints are unusable. `None` when the driver went away or asked to shut down meanwhile
/// (which is then answered: nothing was registered).
async fn connect(
    options: &EtcdOptions,
    events: &mpsc::Sender<FeedEvent>,
    commands: &mut mpsc::Receiver<FeedCommand>,
) -> Option<etcd_client::Client> {
    let base = etcd_client::ConnectOptions::new()
        .with_keep_alive(HTTP2_KEEPALIVE_INTERVAL, HTTP2_KEEPALIVE_TIMEOUT)
        .with_connect_timeout(CONNECT_TIMEOUT)
        .with_require_leader(true);
    let mut reported = false;
    let mut warnings = WarnBackoff::new(CONNECT_RETRY, CONNECT_REPORT_MAX_GAP);
    let endpoints = options.endpoints.join(",");
    loop {
        // The TLS and password files are read afresh at every attempt (a fixed file is
        // picked up by the next one).
        let error = match security::connect_options(options, base.clone()) {
            Ok(connect_options) => {
                let attempt =
                    etcd_client::Client::connect(&options.endpoints, Some(connect_options));
                match bounded(attempt).await {
                    Ok(client) => {
                        if let Some(failures) = warnings.succeeded() {
                            tracing::warn!(%endpoints, failures, "etcd endpoints usable again");
                        }
                        return Some(client);
                    }
                    Err(e) => e.to_string(),
                }
            }
            Err(e) => e,
        };
        match warnings.failed(tokio::time::Instant::now()) {
            Some(failures) => tracing::warn!(
                %endpoints,
                failures,
                "cannot use the etcd endpoints: {error}; retrying every {CONNECT_RETRY:?}"
            ),
            None => tracing::debug!(%endpoints, %error, "etcd endpoints still unusable"),
        }
        if !reported {
            reported = true;
            let reason = format!("cannot use etcd endpoints {:?}: {error}", options.endpoints);
            events.send(FeedEvent::Disconnected { reason }).await.ok()?;
        }
        tokio::select! {
            () = tokio::time::sleep(CONNECT_RETRY) => {}
            command = commands.recv() => match command {
                Some(FeedCommand::Shutdown(done)) => {
                    let _ = done.send(());
                    return None;
                }
                // Nothing is registered yet: the first registration will carry the update.
                Some(FeedCommand::UpdateTopology(_) | FeedCommand::UpdateDiscovery(_)) => {}
                None => return None,
            },
        }
    }
}

/// Applies one report: forwards events, updates the view, announces its edges. Returns
/// false when the driver dropped its end of the feed.
async fn apply(view: &mut View, report: Report, events: &mpsc::Sender<FeedEvent>) -> bool {
    match report {
        Report::Watch { kind, update } => match update {
            WatchUpdate::Events(batch, seen) => {
                for event in batch {
                    if events.send(FeedEvent::Registry(event)).await.is_err() {
                        return false;
                    }
                }
                view.seen[slot(kind)] = view.seen[slot(kind)].max(seen);
            }
            WatchUpdate::Listed(seen) => {
                view.listed[slot(kind)] = true;
                view.seen[slot(kind)] = view.seen[slot(kind)].max(seen);
            }
            WatchUpdate::Up => view.up[slot(kind)] = true,
            WatchUpdate::Down(reason) => {
                view.up[slot(kind)] = false;
                view.trouble = Some(format!("{} watcher: {reason}", kind.segment()));
            }
            // Forwarded to the lease task before `apply`.
            WatchUpdate::OwnKey { .. } => {}
        },
        Report::Lease(LeaseUpdate::Registered(revision)) => view.registered = Some(revision),
        Report::Lease(LeaseUpdate::Unregistered) => {
            view.registered = None;
            view.trouble = Some(String::from("etcd lease lost: registering again"));
        }
        Report::Lease(LeaseUpdate::KeyLost(why)) => {
            view.registered = None;
            view.trouble = Some(why);
        }
        Report::Lease(LeaseUpdate::Conflict(holder)) => {
            if events.send(FeedEvent::Conflict { holder }).await.is_err() {
                return false;
            }
        }
    }
    let announce = if view.complete() {
        view.trouble = None;
        (view.announced != Announced::Registered).then_some(FeedEvent::Registered)
    } else {
        match view.trouble.take() {
            Some(reason) if view.announced != Announced::Disconnected => {
                Some(FeedEvent::Disconnected { reason })
            }
            _ => None,
        }
    };
    let Some(event) = announce else { return true };
    view.announced = match event {
        FeedEvent::Registered => Announced::Registered,
        _ => Announced::Disconnected,
    };
    events.send(event).await.is_ok()
}
