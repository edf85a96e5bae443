//! The scenarios under load: reconnect storm, high concurrency, broadcast while a recipient
//! is killed, rolling restart of the proxies.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
    thread,
    time::{Duration, Instant},
};

use super::{
    super::{
        Proc,
        cluster::{Node, NodeSpec, args, start_node, start_registry},
        figures::ms_between,
        load::read_outcomes,
        unix_micros_now,
    },
    BROADCAST_NODES, BroadcastOutcome, MethodLoad, finish_method_load, line_class,
    registry_and_server, run_broadcast, served, server_spec, start_server, target,
};

/// Reconnect storm figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Storm {
    /// Calls made by the five callers.
    pub calls: u64,
    /// Calls replied.
    pub replied: u64,
    /// Calls ended `failed` (none may: the server is back well within the grace).
    pub wrongly_failed: u64,
    /// Those calls' outcomes (`failed_<reason>`) with, for each, its send and outcome in ms
    /// after the kill before it.
    pub failed_lines: Vec<String>,
    /// Calls ended `unknown`, every one within 200 ms of a kill.
    pub unknown: u64,
    /// Of those, the ones sent after the kill signal (before the caller could know).
    pub unknown_sent_after_kill: u64,
    /// `replied / calls`.
    pub replied_ratio: f64,
}

/// Calls per second of each storm caller (one call at a time, paced).
pub const STORM_RATE_PER_CALLER: u64 = 400;
/// Calls per storm caller: 16 s at its rate, past the storm's ~13 s.
pub const STORM_CALLS_PER_CALLER: u64 = 16 * STORM_RATE_PER_CALLER;
/// Server restarts in the storm.
pub const STORM_ROUNDS: usize = 5;

/// Reconnect storm (happy's reconnect-storm): one echo server, five callers (`load --method
/// echo --concurrency 1 --rate 400`: one call at a time, paced) running through five rounds of {2 s,
/// SIGKILL, 100 ms, restart on the same id and port}, then a 2 s tail. Every call has one
/// outcome; none may end `failed` (the server is always back within the grace); every
/// `unknown` must have ended ≤ 200 ms after a kill (in flight at it, or sent in the instant
/// before the caller could know of it); each caller must still be calling after the
/// last restart (else the storm missed it).
///
/// # Panics
///
/// Any of these does not hold.
#[must_use]
pub fn reconnect_storm(dir: &Path) -> Storm {
    let (registry, server) = registry_and_server("echo");
    let loads: Vec<(MethodLoad, Proc)> = (0..5)
        .map(|i| {
            let load = MethodLoad {
                registry: registry.addr,
                id: 500 + i,
                method: "echo".to_owned(),
                payload: "storm".to_owned(),
                concurrency: 1,
                count: STORM_CALLS_PER_CALLER,
                rate: Some(STORM_RATE_PER_CALLER),
                outcomes_log: Some(dir.join(format!("storm-{i}.log"))),
            };
            let proc = load.spawn();
            (load, proc)
        })
        .collect();
    let mut server = server;
    let mut kills = Vec::new();
    for _ in 0..STORM_ROUNDS {
        thread::sleep(Duration::from_secs(2));
        kills.push(unix_micros_now());
        server.proc.sigkill();
        thread::sleep(Duration::from_millis(100));
        let back = start_server(server.restart_spec());
        server = back;
    }
    let last_back_us = server.ready_at_us;
    thread::sleep(Duration::from_secs(2));
    let mut storm = Storm {
        calls: 0,
        replied: 0,
        wrongly_failed: 0,
        failed_lines: Vec::new(),
        unknown: 0,
        unknown_sent_after_kill: 0,
        replied_ratio: 0.0,
    };
    for (load, proc) in loads {
        let summary = finish_method_load(proc, Duration::from_secs(120));
        let path = load
            .outcomes_log
            .as_ref()
            .expect("storm loads log outcomes");
        let lines = read_outcomes(path);
        assert_eq!(
            lines.len() as u64,
            load.count,
            "one log line per call: {path:?}"
        );
        assert_eq!(
            summary.total(),
            load.count,
            "one outcome per call: {}",
            summary.line
        );
        let last_outcome = lines.iter().map(|l| l.outcome_us).max().unwrap_or(0);
        assert!(
            last_outcome > last_back_us,
            "load-{} ended before the last restart: raise STORM_CALLS_PER_CALLER ({})",
            load.id,
            summary.line
        );
        for line in &lines {
            match line_class(line) {
                "reply" => storm.replied += 1,
                "unknown" => {
                    storm.unknown += 1;
                    // In flight at a kill, or sent in the moment before the caller could
                    // know of it (the kernel tears the dead process's sockets down after
                    // the signal): either way it ended within the kill target after it.
                    let kill = kills
                        .iter()
                        .rev()
                        .find(|&&k| k <= line.outcome_us)
                        .copied()
                        .filter(|&k| ms_between(k, line.outcome_us) <= target::KILL_MID_CALL_MS)
                        .unwrap_or_else(|| {
                            panic!(
                                "unknown call that did not end within {} ms of a kill \
                                 {kills:?}: {line:?}",
                                target::KILL_MID_CALL_MS
                            )
                        });
                    if line.sent_us > kill {
                        storm.unknown_sent_after_kill += 1;
                    }
                }
                "no_outcome" => panic!("a call without an outcome: {line:?}"),
                _ => {
                    storm.wrongly_failed += 1;
                    let kill = kills
                        .iter()
                        .rev()
                        .find(|&&k| k <= line.sent_us)
                        .copied()
                        .unwrap_or(line.sent_us);
                    storm.failed_lines.push(format!(
                        "{} sent {:.1} ms, ended {:.1} ms after a kill",
                        line.outcome,
                        ms_between(kill, line.sent_us),
                        ms_between(kill, line.outcome_us)
                    ));
                }
            }
        }
        storm.calls += load.count;
    }
    #[expect(clippy::cast_precision_loss, reason = "call counts are far below 2^52")]
    let ratio = storm.replied as f64 / storm.calls as f64;
    storm.replied_ratio = ratio;
    storm
}

/// Servers in the high-concurrency scenario.
pub const HIGH_SERVERS: u64 = 50;
/// Callers and calls each (5 × 50 = 250 at once).
pub const HIGH_CALLERS: u64 = 5;
/// Calls per caller, all at once.
pub const HIGH_CALLS_PER_CALLER: u64 = 50;

/// High concurrency (happy's high-concurrency): 50 server processes (no admin port, to keep
/// them light), then 5 callers × 50 concurrent calls = 250. Returns the replies (of 250) and
/// the scenario's wall time (s).
///
/// # Panics
///
/// A caller's summary does not account for its calls.
#[must_use]
pub fn high_concurrency() -> (u64, f64) {
    let started = Instant::now();
    let registry = start_registry("registry", "127.0.0.1:0");
    let servers: Vec<Node> = thread::scope(|scope| {
        let handles: Vec<_> = (0..5)
            .map(|lane| {
                let registry = registry.addr;
                scope.spawn(move || {
                    (0..HIGH_SERVERS / 5)
                        .map(|i| {
                            let mut spec = server_spec(registry, 1000 + lane * 100 + i, "echo");
                            spec.admin = None;
                            start_server(spec)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a server lane panicked"))
            .collect()
    });
    assert_eq!(servers.len() as u64, HIGH_SERVERS);
    let loads: Vec<Proc> = (0..HIGH_CALLERS)
        .map(|i| {
            MethodLoad {
                registry: registry.addr,
                id: 600 + i,
                method: "echo".to_owned(),
                payload: "high".to_owned(),
                concurrency: HIGH_CALLS_PER_CALLER,
                count: HIGH_CALLS_PER_CALLER,
                rate: None,
                outcomes_log: None,
            }
            .spawn()
        })
        .collect();
    let mut replied = 0;
    for proc in loads {
        let summary = finish_method_load(proc, Duration::from_secs(60));
        assert_eq!(
            summary.total(),
            HIGH_CALLS_PER_CALLER,
            "one outcome per call: {}",
            summary.line
        );
        replied += summary.replies;
    }
    drop(servers);
    (replied, started.elapsed().as_secs_f64())
}

/// The second broadcast's `--timeout`, in ms.
pub const AGAIN_BUDGET_MS: u64 = 2000;

/// A broadcast scenario's two outcomes and whom they should have reached.
#[derive(Clone, Debug)]
pub struct BroadcastRun {
    /// The broadcast fired right after the kill.
    pub while_killed: BroadcastOutcome,
    /// The broadcast fired 1 s after the first one ended, with a budget of
    /// [`AGAIN_BUDGET_MS`] (`--timeout`).
    pub again: BroadcastOutcome,
    /// The live nodes' ids.
    pub live: BTreeSet<u64>,
    /// The killed node's id.
    pub dead: u64,
    /// Each live node's `switchboard_received_total` after the first broadcast, then after
    /// the second (a node receives nothing else).
    pub received: [BTreeMap<u64, u64>; 2],
}

impl BroadcastRun {
    /// Whether both broadcasts reached every live node exactly once and the dead one never
    /// (it may be `failed`/`unknown`, or gone from discovery: the embedded registry keeps a
    /// dead node's record through its disconnect protection), and every live node received
    /// exactly one message per broadcast; `Err` says what was wrong.
    ///
    /// # Errors
    ///
    /// The first broadcast that was not exact, and how.
    pub fn exact(&self) -> Result<(), String> {
        exact(&self.while_killed, &self.live, self.dead)?;
        exact(&self.again, &self.live, self.dead)?;
        // The dead node is still listed ~10 s after its kill (the registry's 30 s disconnect
        // protection), so the second broadcast names it, and its budget ends that wait: the
        // line comes before the 8 s message timeout the first one waited.
        let missed: BTreeSet<u64> = self
            .again
            .failed
            .union(&self.again.unknown)
            .copied()
            .collect();
        if missed != BTreeSet::from([self.dead]) {
            return Err(format!(
                "the budgeted broadcast must give up exactly the dead node {}: {}",
                self.dead, self.again.line
            ));
        }
        if self.again.elapsed_ms >= 8000.0 {
            return Err(format!(
                "the budgeted broadcast ({AGAIN_BUDGET_MS} ms) took {} ms: {}",
                self.again.elapsed_ms, self.again.line
            ));
        }
        for (after, received) in (1..).zip(&self.received) {
            let expected: BTreeMap<u64, u64> = self.live.iter().map(|&id| (id, after)).collect();
            if received != &expected {
                return Err(format!(
                    "after broadcast {after}, received per node {received:?}"
                ));
            }
        }
        Ok(())
    }
}

/// Broadcast while one recipient is killed (happy's test-multiprocess): 20 nodes labelled
/// `group=fanout`; one is SIGKILLed and a broadcast fired at once; 1 s later a second one;
/// each live node's received count read after each.
/// [`BroadcastRun::exact`] judges them.
///
/// # Panics
///
/// A node does not start or a broadcast prints no line.
#[must_use]
pub fn broadcast_while_killed() -> BroadcastRun {
    let registry = start_registry("registry", "127.0.0.1:0");
    let mut nodes: Vec<Node> = (0..BROADCAST_NODES)
        .map(|i| {
            let mut spec = NodeSpec::new(300 + i, &format!("fanout-{i}"), registry.addr);
            spec.labels.push(("group".to_owned(), "fanout".to_owned()));
            start_node(spec)
        })
        .collect();
    let mut victim = nodes.remove(7);
    let live: BTreeSet<u64> = nodes.iter().map(|n| n.spec.id).collect();
    let dead = victim.spec.id;
    victim.proc.sigkill();
    // A delivered broadcast was acknowledged by its recipient: counted there already.
    let received = || -> BTreeMap<u64, u64> {
        nodes
            .iter()
            .map(|n| (n.spec.id, n.received_total()))
            .collect()
    };
    let while_killed = run_broadcast(registry.addr, ("group", "fanout"), "while-killed", None);
    let after_first = received();
    thread::sleep(Duration::from_secs(1));
    let budget = format!("{AGAIN_BUDGET_MS}ms");
    let again = run_broadcast(registry.addr, ("group", "fanout"), "again", Some(&budget));
    BroadcastRun {
        while_killed,
        again,
        live,
        dead,
        received: [after_first, received()],
    }
}

fn exact(out: &BroadcastOutcome, live: &BTreeSet<u64>, dead: u64) -> Result<(), String> {
    let delivered: BTreeSet<u64> = out.delivered.iter().copied().collect();
    if delivered.len() != out.delivered.len() {
        return Err(format!("a node delivered twice: {}", out.line));
    }
    if &delivered != live {
        return Err(format!(
            "delivered must be exactly the live nodes {live:?}: {}",
            out.line
        ));
    }
    let not_delivered: BTreeSet<u64> = out.failed.union(&out.unknown).copied().collect();
    if !not_delivered.is_subset(&BTreeSet::from([dead])) {
        return Err(format!(
            "failed/unknown may only name the dead node {dead}: {}",
            out.line
        ));
    }
    Ok(())
}

/// Rolling restart figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Rolling {
    /// Calls made.
    pub calls: u64,
    /// Calls replied.
    pub replied: u64,
    /// Calls ended `unknown`, each in flight while a proxy was down.
    pub unknown: u64,
}

/// The rolling-restart caller's node id.
const ROLLING_CALLER_ID: u64 = 700;
/// Calls per second of the rolling-restart load.
pub const ROLLING_RATE: u64 = 1000;
/// Calls of the rolling-restart load: 12 s at its rate, past the two restarts.
pub const ROLLING_CALLS: u64 = 12 * ROLLING_RATE;

/// Rolling restart of the proxies under call load (happy's server-rolling-restart): two
/// proxies (ids 10 and 11, `role=proxy`), one echo server behind each; a caller (`load
/// --method echo --concurrency 4`, its node allowed direct links to proxies only, so every
/// call crosses one) runs while each proxy in turn gets SIGTERM, exits and is restarted on
/// its port, its server linked to it again. Every call has one outcome; none ends `failed`
/// (a server is always reachable within the grace); every `unknown` was in flight while a
/// proxy was down; the caller is still calling after the last restart.
///
/// # Panics
///
/// Any of these does not hold.
#[must_use]
pub fn rolling_proxy_restart(dir: &Path) -> Rolling {
    use super::super::scenario::{PROXY_LABEL, load_through_proxy_config};
    let registry = start_registry("registry", "127.0.0.1:0");
    let proxy_spec = |id: u64| {
        let mut spec = NodeSpec::new(id, &format!("proxy-{id}"), registry.addr);
        spec.labels
            .push((PROXY_LABEL.0.to_owned(), PROXY_LABEL.1.to_owned()));
        spec
    };
    let mut proxies = [start_node(proxy_spec(10)), start_node(proxy_spec(11))];
    let servers: Vec<Node> = [(21, 10), (22, 11)]
        .into_iter()
        .map(|(id, proxy)| start_server(server_spec(registry.addr, id, "echo").upstream(proxy)))
        .collect();
    for (server, proxy) in servers.iter().zip([10, 11]) {
        server.wait_link_up(proxy);
    }
    let log = dir.join("rolling.log");
    let config = load_through_proxy_config();
    let mut command = MethodLoad {
        registry: registry.addr,
        id: ROLLING_CALLER_ID,
        method: "echo".to_owned(),
        payload: "rolling".to_owned(),
        concurrency: 4,
        count: ROLLING_CALLS,
        rate: Some(ROLLING_RATE),
        outcomes_log: Some(log.clone()),
    }
    .to_args();
    command.extend(args(["--config", &config.display().to_string()]));
    let load = Proc::spawn(&format!("load-{ROLLING_CALLER_ID}"), &command);
    let mut windows = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        thread::sleep(Duration::from_secs(2));
        // The calls cross the proxies: no server has a link of its own to the caller.
        for server in &servers {
            let links = server.status().links;
            assert!(
                links.iter().all(|l| l.peer != Some(ROLLING_CALLER_ID)),
                "{} links to the caller directly: {links:?}",
                server.proc.label()
            );
        }
        let spec = proxies[i].restart_spec();
        let down_us = unix_micros_now();
        proxies[i].proc.sigterm();
        proxies[i].proc.wait_exit(Duration::from_secs(10));
        let back = start_node(spec);
        server.wait_link_up(back.spec.id);
        windows.push((down_us, unix_micros_now()));
        proxies[i] = back;
    }
    let last_back_us = windows.last().map_or(0, |w| w.1);
    let summary = finish_method_load(load, Duration::from_secs(120));
    let lines = read_outcomes(&log);
    assert_eq!(lines.len() as u64, ROLLING_CALLS, "one log line per call");
    assert_eq!(
        summary.total(),
        ROLLING_CALLS,
        "one outcome per call: {}",
        summary.line
    );
    let last_outcome = lines.iter().map(|l| l.outcome_us).max().unwrap_or(0);
    assert!(
        last_outcome > last_back_us,
        "the load ended before the last restart: raise ROLLING_CALLS ({})",
        summary.line
    );
    // Each call handled at most once: a reply was handled, an unknown may have been.
    let handled: Vec<u64> = servers.iter().map(served).collect();
    let mut rolling = Rolling {
        calls: ROLLING_CALLS,
        replied: 0,
        unknown: 0,
    };
    for line in &lines {
        match line_class(line) {
            "reply" => rolling.replied += 1,
            "unknown" => {
                rolling.unknown += 1;
                assert!(
                    windows
                        .iter()
                        .any(|&(down, back)| line.sent_us <= back && line.outcome_us >= down),
                    "unknown call outside every proxy's down window {windows:?}: {line:?}"
                );
            }
            "no_outcome" => panic!("a call without an outcome: {line:?}"),
            _ => panic!(
                "a call failed during the rolling restart: {line:?} ({})",
                summary.line
            ),
        }
    }
    let total: u64 = handled.iter().sum();
    assert!(
        handled.iter().all(|&n| n > 0)
            && rolling.replied <= total
            && total <= rolling.replied + rolling.unknown,
        "calls handled per server {handled:?} vs {rolling:?}"
    );
    rolling
}
