//! `switchboard demo`: a whole cluster in this process — the embedded registry, proxies,
//! leaves and two sending clients — run through a scripted series of failures while traffic
//! flows, ending with a table and (with `--json`) a summary line.
//!
//! [`scenario`] holds the cast and the script, [`cluster`] starts, kills and restarts the
//! pieces, [`traffic`] sends and receives, [`table`] and [`progress`] report. The run passes
//! (exit 0) only when every accepted message got exactly one outcome and no receiver saw a
//! message twice.

mod cluster;
mod progress;
mod scenario;
mod table;
mod traffic;

use std::{
    collections::BTreeMap,
    process::ExitCode,
    sync::{Arc, atomic::AtomicU64},
    time::Duration,
};

use switchboard_tokio::registry::EtcdOptions;
use tokio::time::Instant;

use self::{
    cluster::{Cluster, MESSAGE_TIMEOUT},
    progress::{ProgressStyle, finish_progress, spawn_progress},
    scenario::{CLIENTS, Event, initial_nodes, run_script},
    table::{DemoSummary, Report},
    traffic::{Pattern, Receipts, Schedule, Slowest, spawn_sender},
};
use crate::{
    cli::DemoArgs, config::registry_spec, error::CliError, lifecycle::print_json_line,
    stats::SharedTally,
};

/// The `demo --help` text after the flags.
pub(crate) const HELP: &str = "\
The cluster: the embedded registry on 127.0.0.1 (a free port), hub 100 (the root), proxies 101 \
and 102 under it, leaves 201-203 behind 101 and 204-206 behind 102, clients 301 (behind 101) \
and 302 (behind 102); traffic between proxies goes through the hub. Each \
client sends R/4 msg/s by consistent hash and R/4 msg/s round robin over the nodes labelled \
role=leaf; payloads are 64 bytes starting with the client's sequence number, checked byte for \
byte by the receivers.

Script, at fractions of S: 0.15 proxy 103 starts under the hub and leaves 203 and 206 move to it; 0.35 proxy \
101 is killed abruptly; 0.40 its leaves 201, 202 and client 301 move to proxy 102; 0.55 leaf \
204 is killed and at 0.60 restarted with the same id and address; 0.70 the registry is killed \
and at 0.78 restarted on the same address. Traffic stops at S; the demo then waits up to 5 s \
for the last outcomes.

Tuned settings (shorter than the defaults so it ends promptly): message_timeout 3 s, \
heartbeat 300 ms (dead after 3 missed), reconnect 100 ms -> 1 s, lost_topology_timeout 5 s; \
registry access_timeout 2 s, disconnect_protection 2 s, heartbeat timeout 3 s; registry \
client reconnect 100 ms -> 1 s, heartbeat 500 ms, grace after a registry restart 5 s.

With --etcd the cluster registers under a prefix of its own, \
/switchboard-demo-<pid>-<unix time>/, unless --etcd-prefix names one; a node the registry \
refuses (its id or name held, e.g. by another demo on the same prefix) is a registration \
conflict and fails the run.

Output: progress on stderr once per second (rewritten in place on a terminal, one line per \
second otherwise), then a table: the events with their times, sent / delivered / failed by \
reason / duplicates / lost / registration conflicts / p50 and p99 latency (send -> Delivered \
outcome, in ms) and the slowest delivery with the scripted event it followed. The table goes \
to stdout, or with --json to stderr, stdout then being exactly one line \
{\"sent\",\"delivered\",\"failed\":{reason:count},\"duplicates\",\"lost\",\"p50_us\",\"p99_us\",\
\"conflicts\"}; sent = delivered + the sum of failed + lost (refused sends count under failed \
as refused_<why>). Exit code 0 only if lost = 0, duplicates = 0 and conflicts = 0 (and no \
payload was corrupted), else 1.

Examples:
  switchboard demo
  switchboard demo --seconds 6 --rate 400 --json
  switchboard demo --etcd http://127.0.0.1:2379";

/// Bound on the wait for the initial cluster to know itself.
const STARTUP_WAIT: Duration = Duration::from_secs(15);
/// Extra time, past the message timeout, for the last outcomes.
const DRAIN_MARGIN: Duration = Duration::from_secs(2);
/// Time after the last outcome for late (duplicate) arrivals to show up.
const LATE_ARRIVALS: Duration = Duration::from_millis(300);

/// Everything `switchboard demo` runs with.
#[derive(Debug)]
pub(crate) struct DemoOptions {
    /// Length of the traffic phase.
    pub(crate) traffic: Duration,
    /// Messages per second over all senders.
    pub(crate) rate: u64,
    /// stdout is the JSON summary line only.
    pub(crate) json: bool,
    /// etcd instead of the embedded registry.
    pub(crate) etcd: Option<EtcdOptions>,
    /// Plain TCP or mutual TLS for every node and the registry (all with the one certificate).
    pub(crate) transport: switchboard_tokio::Transport,
    /// The cluster keys of every node and the registry.
    pub(crate) keys: Vec<switchboard_core::ClusterKey>,
}

impl DemoOptions {
    /// Checks the flags.
    ///
    /// # Errors
    ///
    /// `seconds` below 1 or above a day, `rate` below 4, or bad etcd flags.
    pub(crate) fn resolve(args: DemoArgs) -> Result<DemoOptions, CliError> {
        let keys = crate::keys::load(&args.keys)?;
        if !(1..=86_400).contains(&args.seconds) {
            return Err(CliError::invalid(
                "seconds",
                format!("must be between 1 and 86400, got {}", args.seconds),
            ));
        }
        if args.rate < 4 {
            return Err(CliError::invalid(
                "rate",
                format!("must be at least 4 (four senders), got {}", args.rate),
            ));
        }
        let security = args.etcd.security();
        let transport = crate::config::transport(args.tls)?;
        let etcd = match args.etcd.etcd {
            None if args.etcd.etcd_prefix.is_some() => {
                return Err(CliError::invalid("etcd_prefix", "only used with etcd"));
            }
            None if security.any() => {
                return Err(CliError::invalid(
                    "etcd_ca",
                    "the etcd TLS and user flags are only used with etcd",
                ));
            }
            None => None,
            Some(urls) => match registry_spec(
                None,
                Some(urls),
                Some(args.etcd.etcd_prefix.unwrap_or_else(run_prefix)),
                security,
            )? {
                switchboard_tokio::RegistrySpec::Etcd(options) => Some(options),
                _ => None,
            },
        };
        Ok(DemoOptions {
            traffic: Duration::from_secs(args.seconds),
            rate: args.rate,
            json: args.json,
            etcd,
            transport,
            keys,
        })
    }
}

/// The etcd prefix of one demo run, `/switchboard-demo-<pid>-<unix time>/`: two runs (or a
/// run and a production cluster) on one etcd never share keys.
fn run_prefix() -> String {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("/switchboard-demo-{}-{unix}/", std::process::id())
}

/// Runs the demo; the exit code says whether it passed.
///
/// # Errors
///
/// A piece of the cluster did not start.
pub(crate) async fn run(options: DemoOptions) -> Result<ExitCode, CliError> {
    let receipts = Arc::new(Receipts::default());
    let mut cluster = Cluster::new(
        options.etcd.clone(),
        options.transport.clone(),
        Arc::clone(&receipts),
        options.keys.clone(),
    )
    .await?;
    let any_port = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    for (id, role, upstream) in initial_nodes() {
        if let Err(e) = cluster.start_node(id, role, upstream, any_port).await {
            cluster.shutdown().await;
            return Err(e);
        }
    }
    if !cluster.wait_all_known(STARTUP_WAIT).await {
        tracing::warn!(
            "the cluster did not see every node within {STARTUP_WAIT:?}; starting anyway"
        );
    }
    let mut conflicts = BTreeMap::new();
    note_conflicts(&cluster, &mut conflicts);
    let tally = Arc::new(SharedTally::default());
    let slowest = Arc::new(Slowest::default());
    let start = Instant::now();
    let until = start + options.traffic;
    let mut senders = Vec::new();
    for (client, _) in CLIENTS {
        let Some(handle) = cluster.handle(client) else {
            continue;
        };
        let seqs = Arc::new(AtomicU64::new(0));
        for pattern in [Pattern::Hash, Pattern::RoundRobin] {
            senders.push(spawn_sender(
                handle.clone(),
                pattern,
                Arc::clone(&seqs),
                Schedule {
                    start,
                    until,
                    rate: options.rate / 4,
                },
                Arc::clone(&tally),
                Arc::clone(&slowest),
            ));
        }
    }
    let style = ProgressStyle::for_stderr();
    let progress = spawn_progress(Arc::clone(&tally), start, style);
    let mut events = vec![Event {
        at: Duration::ZERO,
        text: format!(
            "traffic started: {} msg/s from clients {} and {} (hash + round robin over role=leaf)",
            options.rate, CLIENTS[0].0.0, CLIENTS[1].0.0
        ),
    }];
    let scripted = run_script(&mut cluster, start, options.traffic, &mut events).await;
    if let Err(e) = scripted {
        senders.iter().for_each(|s| s.abort());
        finish_progress(progress, style);
        cluster.shutdown().await;
        return Err(e);
    }
    for sender in senders {
        // A sender ends by itself at `until`; a panicked one has nothing left to count.
        let _ = sender.await;
    }
    events.push(Event {
        at: start.elapsed(),
        text: "traffic stopped".to_owned(),
    });
    let drain_deadline = Instant::now() + MESSAGE_TIMEOUT + DRAIN_MARGIN;
    while tally.lock().in_flight() > 0 && Instant::now() < drain_deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let missing = tally.lock().in_flight();
    events.push(Event {
        at: start.elapsed(),
        text: if missing == 0 {
            "every accepted message has its outcome".to_owned()
        } else {
            format!("gave up waiting: {missing} accepted messages without an outcome")
        },
    });
    tokio::time::sleep(LATE_ARRIVALS).await;
    finish_progress(progress, style);
    note_conflicts(&cluster, &mut conflicts);
    for (id, why) in &conflicts {
        events.push(Event {
            at: start.elapsed(),
            text: format!("registration conflict: node {id} refused ({why})"),
        });
    }
    let (received, duplicates, corrupt) = receipts.counts();
    let report = Report {
        summary: DemoSummary::new(&tally.snapshot(), duplicates, conflicts.len() as u64),
        received,
        corrupt,
        events,
        setup: setup_line(&options, cluster.registry_addr()),
        slowest: slowest.get(),
    };
    cluster.shutdown().await;
    if options.json {
        eprint!("{}", table::render(&report));
        print_json_line(&report.summary)?;
    } else {
        print!("{}", table::render(&report));
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Adds the nodes the registry refuses now to `seen` (id in decimal -> why).
fn note_conflicts(cluster: &Cluster, seen: &mut BTreeMap<u64, String>) {
    for (id, why) in cluster.conflicts() {
        seen.entry(id.0).or_insert(why);
    }
}

fn setup_line(options: &DemoOptions, registry: Option<std::net::SocketAddr>) -> String {
    let registry = match (registry, &options.etcd) {
        (Some(addr), _) => format!("embedded registry on {addr}"),
        (None, Some(etcd)) => format!("etcd registry, prefix {}", etcd.prefix),
        (None, None) => "etcd registry".to_owned(),
    };
    format!(
        "switchboard demo: {} s of traffic at {} msg/s; {registry}; hub 100, proxies 101 102 \
         (+103), leaves 201-206, clients 301 302",
        options.traffic.as_secs(),
        options.rate
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::EtcdArgs;

    fn args(seconds: u64, rate: u64) -> DemoArgs {
        DemoArgs {
            seconds,
            rate,
            json: true,
            etcd: EtcdArgs::default(),
            tls: crate::cli::TlsArgs::default(),
            keys: crate::cli::KeyArgs::default(),
        }
    }

    #[test]
    fn seconds_and_rate_are_range_checked() {
        let options = DemoOptions::resolve(args(6, 400)).expect("valid");
        assert_eq!(options.traffic, Duration::from_secs(6));
        assert_eq!((options.rate, options.json), (400, true));
        assert_eq!(options.etcd, None);
        assert_eq!(
            DemoOptions::resolve(args(0, 400))
                .expect_err("zero seconds")
                .to_string(),
            "seconds: must be between 1 and 86400, got 0"
        );
        assert_eq!(
            DemoOptions::resolve(args(6, 3))
                .expect_err("rate too low")
                .to_string(),
            "rate: must be at least 4 (four senders), got 3"
        );
    }

    #[test]
    fn etcd_flags_select_etcd_under_a_prefix_of_the_run() {
        let mut a = args(6, 400);
        a.etcd.etcd = Some(vec!["http://127.0.0.1:2379".to_owned()]);
        let options = DemoOptions::resolve(a).expect("valid");
        let etcd = options.etcd.expect("etcd");
        assert_eq!(etcd.endpoints, vec!["http://127.0.0.1:2379".to_owned()]);
        let pid = format!("/switchboard-demo-{}-", std::process::id());
        assert!(etcd.prefix.starts_with(&pid), "{}", etcd.prefix);
        assert!(etcd.prefix.ends_with('/'), "{}", etcd.prefix);
        let mut a = args(6, 400);
        a.etcd.etcd = Some(vec!["http://127.0.0.1:2379".to_owned()]);
        a.etcd.etcd_prefix = Some("/mine/".to_owned());
        let options = DemoOptions::resolve(a).expect("valid");
        assert_eq!(options.etcd.expect("etcd").prefix, "/mine/");
    }
}
