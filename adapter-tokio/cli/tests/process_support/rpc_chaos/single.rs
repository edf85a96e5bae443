//! The scenarios of one call at a time: steady state, kill / stop / clean exit mid-call,
//! brief and long disconnects, the registration race.

use std::{
    collections::BTreeMap,
    thread,
    time::{Duration, Instant},
};

use super::{
    super::{
        Proc,
        cluster::{Node, NodeSpec, start_node, start_registry},
        figures::ms_between,
        unix_micros_now, wait_until,
    },
    CallArgs, CallOutcome, assert_class, assert_reply, call_bound, finish_call,
    registry_and_server, reply_problem, run_call, served, spawn_call, start_server,
};

/// Steady state: 50 calls at once, then 20 one after another, every one replied with its
/// own payload. The counts are taken before anything is asserted ([`Steady::check`]), so a
/// report shows what happened, not only that it passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Steady {
    /// Parallel calls replied with their payload (of 50).
    pub parallel_replied: u64,
    /// Sequential calls replied with their payload (of 20).
    pub sequential_replied: u64,
    /// Requests the server handed to its handler (`switchboard_rpc_served_total`).
    pub served: u64,
    /// Each call that did not reply with its own payload.
    pub problems: Vec<String>,
}

impl Steady {
    /// Every call replied with its payload (50 + 20) and each was handled exactly once.
    ///
    /// # Errors
    ///
    /// What did not hold.
    pub fn check(&self) -> Result<(), String> {
        let replied = self.parallel_replied + self.sequential_replied;
        if !self.problems.is_empty() {
            return Err(self.problems.join("\n"));
        }
        if (self.parallel_replied, self.sequential_replied) != (50, 20) {
            return Err(format!("replied {self:?}, expected 50 + 20"));
        }
        if self.served != replied {
            return Err(format!(
                "the server handled {} requests for {replied} replied calls: each call \
                 handled exactly once",
                self.served
            ));
        }
        Ok(())
    }
}

/// Steady state (happy's test-rpc-cross-replica): one echo server; 50 `call` processes at
/// once, then 20 one after another; counts the calls that replied with their own payload.
#[must_use]
pub fn steady_state() -> Steady {
    let (registry, server) = registry_and_server("echo");
    let parallel: Vec<(String, Proc)> = (0..50)
        .map(|i| {
            let payload = format!("parallel-{i}");
            let call = CallArgs::new("echo", &payload);
            let proc = spawn_call(&format!("call-p{i}"), registry.addr, &call);
            (payload, proc)
        })
        .collect();
    let mut problems = Vec::new();
    let mut parallel_replied = 0;
    for (payload, proc) in parallel {
        let outcome = finish_call(proc, Duration::from_secs(40));
        match reply_problem(&outcome, &payload) {
            None => parallel_replied += 1,
            Some(problem) => problems.push(problem),
        }
    }
    let mut sequential_replied = 0;
    for i in 0..20 {
        let payload = format!("sequential-{i}");
        let outcome = run_call(
            &format!("call-s{i}"),
            registry.addr,
            &CallArgs::new("echo", &payload),
        );
        match reply_problem(&outcome, &payload) {
            None => sequential_replied += 1,
            Some(problem) => problems.push(problem),
        }
    }
    Steady {
        parallel_replied,
        sequential_replied,
        served: served(&server),
        problems,
    }
}

/// How long the call runs before the fault in the mid-call scenarios (happy: 1 s).
pub const MID_CALL_FAULT_AFTER: Duration = Duration::from_secs(1);

/// Waits (at most 10 s) until `server`'s handler has the request (`served_total` 1), then
/// sleeps what is left of [`MID_CALL_FAULT_AFTER`] since the call process was spawned
/// (`spawned`): the fault then comes mid-call, with the handler running.
fn wait_mid_call(server: &Node, spawned: Instant) {
    wait_until(
        Duration::from_secs(10),
        "the server's handler to have the call",
        || (served(server) == 1).then_some(()),
        || format!("served_total {}", served(server)),
    );
    let elapsed = spawned.elapsed();
    if elapsed < MID_CALL_FAULT_AFTER {
        thread::sleep(MID_CALL_FAULT_AFTER - elapsed);
    }
}

/// Kill mid-call (happy's hammer): the server's `sleep` handler holds the call 5 s; the
/// server is SIGKILLed 1 s after the call started. Returns how long after the kill the call
/// ended `unknown/target_gone` (ms).
///
/// # Panics
///
/// Another outcome.
#[must_use]
pub fn kill_mid_call() -> f64 {
    let (registry, mut server) = registry_and_server("sleep");
    let call = CallArgs::new("sleep", "5000").timeout("30s").grace("5s");
    let spawned = Instant::now();
    let proc = spawn_call("call", registry.addr, &call);
    wait_mid_call(&server, spawned);
    let kill_us = unix_micros_now();
    server.proc.sigkill();
    let outcome = finish_call(proc, call_bound(&call));
    assert_class(&outcome, "unknown", "target_gone");
    ms_between(kill_us, outcome.at_us)
}

/// Half-open server: the server is SIGSTOPped 1 s into a 30 s `sleep` call (its sockets stay
/// open, no FIN); returns how long after the stop the call ended `unknown/target_gone` (ms),
/// with the default heartbeats.
///
/// # Panics
///
/// Another outcome.
#[must_use]
pub fn half_open() -> f64 {
    let (registry, server) = registry_and_server("sleep");
    let call = CallArgs::new("sleep", "30000").timeout("30s").grace("5s");
    let spawned = Instant::now();
    let proc = spawn_call("call", registry.addr, &call);
    wait_mid_call(&server, spawned);
    let stop_us = unix_micros_now();
    server.proc.sigstop();
    let outcome = finish_call(proc, call_bound(&call));
    server.proc.sigcont();
    assert_class(&outcome, "unknown", "target_gone");
    ms_between(stop_us, outcome.at_us)
}

/// Clean exit mid-call (happy's test-rpc-dead-daemon b): the `silent` handler never answers;
/// the server gets SIGTERM 1 s in and exits; returns how long after the SIGTERM the call
/// ended `unknown/target_gone` (ms).
///
/// # Panics
///
/// Another outcome, or the server does not exit within 10 s.
#[must_use]
pub fn clean_exit() -> f64 {
    let (registry, mut server) = registry_and_server("silent");
    let call = CallArgs::new("silent", "x").timeout("35s").grace("5s");
    let spawned = Instant::now();
    let proc = spawn_call("call", registry.addr, &call);
    wait_mid_call(&server, spawned);
    let term_us = unix_micros_now();
    server.proc.sigterm();
    let outcome = finish_call(proc, call_bound(&call));
    server.proc.wait_exit(Duration::from_secs(10));
    assert_class(&outcome, "unknown", "target_gone");
    ms_between(term_us, outcome.at_us)
}

/// How long the server stays away in the brief disconnect (happy: 1.5 s).
pub const BRIEF_GAP: Duration = Duration::from_millis(1500);

/// Brief disconnect (happy's brief-disconnect): the server is SIGKILLed, a call is fired at
/// once, the server is back (same id and port) 1.5 s later; the call and a follow-up 0.5 s
/// later must reply. Returns how long after the server's ready line the gap's call replied
/// (ms).
///
/// # Panics
///
/// A call that does not reply with its payload.
#[must_use]
pub fn brief_disconnect() -> f64 {
    let (registry, mut server) = registry_and_server("echo");
    let warm = run_call("warm-up", registry.addr, &CallArgs::new("echo", "warm-up"));
    assert_reply(&warm, "warm-up");
    server.proc.sigkill();
    let gap_call = CallArgs::new("echo", "in-the-gap");
    let proc = spawn_call("gap-call", registry.addr, &gap_call);
    thread::sleep(BRIEF_GAP);
    let back = start_server(server.restart_spec());
    drop(server);
    let outcome = finish_call(proc, call_bound(&gap_call));
    assert_reply(&outcome, "in-the-gap");
    // The call was made in the gap and waited for the server (its own latency spans most of
    // the gap), rather than starting after the server was back.
    assert!(
        outcome.latency_us >= 1_000_000,
        "the gap's call did not wait for the server: {}",
        outcome.line
    );
    thread::sleep(Duration::from_millis(500));
    let follow_up = run_call(
        "follow-up",
        registry.addr,
        &CallArgs::new("echo", "follow-up"),
    );
    assert_reply(&follow_up, "follow-up");
    assert_eq!(
        served(&back),
        2,
        "the server's second life handled both calls once"
    );
    ms_between(back.ready_at_us, outcome.at_us)
}

/// The grace of the long-disconnect call: shorter than the 15 s default, to keep the run
/// short; the figure is the distance from it.
pub const LONG_DISCONNECT_GRACE_MS: u64 = 2000;

/// How the long-disconnect server goes for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gone {
    /// SIGTERM: it says goodbye to the registry, which drops it at once (a bystander sees
    /// it leave before the call).
    Exited,
    /// SIGKILL: the registry keeps its record through its disconnect protection (30 s,
    /// listed `suspect`); the call starts 200 ms after the kill.
    Killed,
}

/// Long disconnect (happy's long-disconnect): the server is gone for good; a call with a
/// 2 s grace ends `failed/not_available`. Returns the signed distance of its latency from
/// the grace (ms).
///
/// # Panics
///
/// Another outcome, or the call ended earlier than its grace by the test's own clock.
#[must_use]
pub fn long_disconnect(gone: Gone) -> f64 {
    let (registry, mut server) = registry_and_server("echo");
    let bystander = start_node(NodeSpec::new(2, "bystander", registry.addr));
    bystander.wait_known(2);
    match gone {
        Gone::Exited => {
            server.proc.sigterm();
            server.proc.wait_exit(Duration::from_secs(10));
            bystander.wait_known(1);
        }
        Gone::Killed => {
            server.proc.sigkill();
            thread::sleep(Duration::from_millis(200));
        }
    }
    let call = CallArgs::new("echo", "nobody-home")
        .timeout("30s")
        .grace(&format!("{LONG_DISCONNECT_GRACE_MS}ms"));
    let spawned_us = unix_micros_now();
    let outcome = run_call("call", registry.addr, &call);
    assert_class(&outcome, "failed", "not_available");
    #[expect(
        clippy::cast_precision_loss,
        reason = "a grace in ms is far below 2^52"
    )]
    let grace_ms = LONG_DISCONNECT_GRACE_MS as f64;
    assert!(
        ms_between(spawned_us, outcome.at_us) >= grace_ms,
        "ended before its grace by the test's clock: {}",
        outcome.line
    );
    #[expect(
        clippy::cast_precision_loss,
        reason = "µs of a call are far below 2^52"
    )]
    let latency_ms = outcome.latency_us as f64 / 1000.0;
    latency_ms - grace_ms
}

/// The delays of happy's register-race-timing (ms after the caller's first call).
pub const RACE_DELAYS_MS: [u64; 7] = [0, 50, 100, 200, 500, 1000, 2000];
/// Trials per delay (happy: 10).
pub const RACE_TRIALS: usize = 10;

/// Registration race figures, counted before anything is asserted ([`Race::check`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Race {
    /// Calls replied with their payload and handled exactly once (of 70).
    pub replied: u64,
    /// Per delay, the slowest call latency (ms).
    pub slowest: BTreeMap<u64, f64>,
    /// Each trial that did not reply with its payload or was not handled exactly once.
    pub problems: Vec<String>,
}

impl Race {
    /// Every trial replied (70 of 70), each handled exactly once.
    ///
    /// # Errors
    ///
    /// What did not hold.
    pub fn check(&self) -> Result<(), String> {
        let trials = (RACE_TRIALS * RACE_DELAYS_MS.len()) as u64;
        if !self.problems.is_empty() || self.replied != trials {
            return Err(format!(
                "{} of {trials} replied: {}",
                self.replied,
                self.problems.join("\n")
            ));
        }
        Ok(())
    }
}

/// Registration race (happy's register-race-timing): 10 lanes, each a registry of its own,
/// run side by side; a lane runs the 7 delays one after another: a `call` (12 s timeout,
/// 15 s grace) is spawned, the server starts `delay` ms later, the call must reply; the
/// server then exits cleanly (SIGTERM) before the next trial. Counts the replies (of 70)
/// and, per delay, the slowest call latency (ms).
#[must_use]
pub fn registration_race() -> Race {
    let lanes: Vec<Vec<Trial>> = thread::scope(|scope| {
        let handles: Vec<_> = (0..RACE_TRIALS)
            .map(|lane| scope.spawn(move || race_lane(lane)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a race lane panicked"))
            .collect()
    });
    let mut race = Race {
        replied: 0,
        slowest: BTreeMap::new(),
        problems: Vec::new(),
    };
    for trial in lanes.iter().flatten() {
        match &trial.problem {
            None => race.replied += 1,
            Some(problem) => race.problems.push(problem.clone()),
        }
        #[expect(
            clippy::cast_precision_loss,
            reason = "µs of a call are far below 2^52"
        )]
        let ms = trial.outcome.latency_us as f64 / 1000.0;
        let entry = race.slowest.entry(trial.delay).or_insert(0.0);
        *entry = entry.max(ms);
    }
    race
}

/// One trial of a registration-race lane.
struct Trial {
    delay: u64,
    outcome: CallOutcome,
    /// Why it did not reply with its payload, handled once; `None` when it did.
    problem: Option<String>,
}

fn race_lane(lane: usize) -> Vec<Trial> {
    let registry = start_registry(&format!("registry-{lane}"), "127.0.0.1:0");
    let mut out = Vec::new();
    for (trial, delay) in RACE_DELAYS_MS.into_iter().enumerate() {
        let payload = format!("lane-{lane}-delay-{delay}");
        let call = CallArgs::new("echo", &payload).timeout("12s");
        let proc = spawn_call(&format!("call-{lane}-{delay}"), registry.addr, &call);
        thread::sleep(Duration::from_millis(delay));
        let id = 100 + trial as u64;
        let mut server = start_server(
            NodeSpec::new(id, &format!("server-{lane}-{id}"), registry.addr)
                .flags(&["--serve", "echo"]),
        );
        let outcome = finish_call(proc, call_bound(&call));
        let handled = served(&server);
        let problem = reply_problem(&outcome, &payload).or_else(|| {
            (handled != 1)
                .then(|| format!("lane {lane}, delay {delay} ms: handled {handled} times"))
        });
        server.proc.sigterm();
        server.proc.wait_exit(Duration::from_secs(10));
        out.push(Trial {
            delay,
            outcome,
            problem,
        });
    }
    out
}
