//! The reconnect storm at happy's pacing, beside ours (`loaded.rs`'s 400 calls/s per caller):
//! happy's storm makes ≈190 calls, each caller one call then a 200 ms pause, and its faults
//! include a disconnect of a *live* server; at 400/s a ratio of replied calls says little (a
//! handful lost in flight at each kill is ≈1 − 25/32,000 by arithmetic). Here: one echo server
//! behind a [`Relay`] (it advertises the relay's address, so the callers' dials go through
//! it), five callers at 5 calls/s, one call at a time (`load --method echo --concurrency 1
//! --rate 5`: a call starts every 200 ms — a call itself takes under a millisecond here, so
//! this is happy's "call, then sleep 200 ms" within that), and six rounds of 2 s each
//! alternating a cut of every relayed connection (the server lives on) and a SIGKILL with a
//! restart 100 ms later on the same id, port and address.

use std::{
    net::{SocketAddr, TcpListener},
    path::Path,
    thread,
    time::Duration,
};

use super::{
    super::{
        cluster::start_registry, figures::ms_between, load::read_outcomes, relay::Relay,
        unix_micros_now,
    },
    MethodLoad, finish_method_load, line_class, server_spec, start_server, target,
};

/// Storm callers.
pub const PACED_CALLERS: u64 = 5;
/// Calls per second of each caller (one every 200 ms).
pub const PACED_RATE_PER_CALLER: u64 = 5;
/// Calls per caller: 16 s at its rate, past the storm's ~14 s.
pub const PACED_CALLS_PER_CALLER: u64 = 16 * PACED_RATE_PER_CALLER;
/// Rounds: even ones cut the relay (a live server disconnected), odd ones SIGKILL it.
pub const PACED_ROUNDS: usize = 6;

/// A fault of the paced storm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Every relayed connection dropped; the server process lives on.
    Disconnect,
    /// The server SIGKILLed, restarted 100 ms later.
    Kill,
}

/// Paced storm figures, counted before anything is asserted ([`PacedStorm::check`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PacedStorm {
    /// Calls made.
    pub calls: u64,
    /// Calls replied.
    pub replied: u64,
    /// Calls ended `failed` (none may: the server is always back within the grace).
    pub wrongly_failed: u64,
    /// Calls ended `unknown` within 200 ms of a SIGKILL (in flight at it).
    pub unknown_at_kill: u64,
    /// Calls ended `unknown` near a disconnect of the live server and no kill: a path
    /// failure taken for a death (none may).
    pub unknown_at_disconnect: u64,
    /// Calls without an outcome, or `unknown` far from any fault.
    pub unexplained: u64,
    /// `replied / calls`.
    pub replied_ratio: f64,
    /// Connections each disconnect dropped (each must have dropped at least one, else it
    /// tested nothing).
    pub cut_links: Vec<usize>,
    /// Each call counted in `wrongly_failed`, `unknown_at_disconnect` or `unexplained`.
    pub problems: Vec<String>,
}

impl PacedStorm {
    /// Nothing failed, no live server was taken for dead, every call is explained.
    ///
    /// # Errors
    ///
    /// The calls that break it.
    pub fn check(&self) -> Result<(), String> {
        if self.problems.is_empty() && self.cut_links.iter().all(|&n| n > 0) {
            Ok(())
        } else {
            Err(format!("{self:?}"))
        }
    }
}

/// Runs the paced storm (see the [module docs](self)), writing the callers' outcome logs in
/// `dir`.
///
/// # Panics
///
/// A process does not start, or a caller's log does not hold one line per call.
#[must_use]
pub fn paced_storm(dir: &Path) -> PacedStorm {
    let registry = start_registry("registry", "127.0.0.1:0");
    let listen = reserve_port();
    let relay = Relay::start(listen);
    let mut spec = server_spec(registry.addr, 1, "echo");
    spec.listen = listen.to_string();
    spec.flags
        .extend(["--advertise".to_owned(), relay.addr.to_string()]);
    let mut server = start_server(spec);
    let loads: Vec<_> = (0..PACED_CALLERS)
        .map(|i| {
            let load = MethodLoad {
                registry: registry.addr,
                id: 520 + i,
                method: "echo".to_owned(),
                payload: "paced".to_owned(),
                concurrency: 1,
                count: PACED_CALLS_PER_CALLER,
                rate: Some(PACED_RATE_PER_CALLER),
                outcomes_log: Some(dir.join(format!("paced-{i}.log"))),
            };
            let proc = load.spawn();
            (load, proc)
        })
        .collect();
    let mut faults: Vec<(u64, Fault)> = Vec::new();
    let mut cut_links = Vec::new();
    for round in 0..PACED_ROUNDS {
        thread::sleep(Duration::from_secs(2));
        if round % 2 == 0 {
            faults.push((unix_micros_now(), Fault::Disconnect));
            cut_links.push(relay.cut());
        } else {
            faults.push((unix_micros_now(), Fault::Kill));
            server.proc.sigkill();
            thread::sleep(Duration::from_millis(100));
            server = start_server(server.restart_spec());
        }
    }
    thread::sleep(Duration::from_secs(2));
    let mut storm = PacedStorm {
        calls: 0,
        replied: 0,
        wrongly_failed: 0,
        unknown_at_kill: 0,
        unknown_at_disconnect: 0,
        unexplained: 0,
        replied_ratio: 0.0,
        cut_links,
        problems: Vec::new(),
    };
    for (load, proc) in loads {
        let summary = finish_method_load(proc, Duration::from_secs(120));
        let path = load
            .outcomes_log
            .as_ref()
            .expect("paced loads log outcomes");
        let lines = read_outcomes(path);
        assert_eq!(
            lines.len() as u64,
            load.count,
            "one log line per call: {path:?} ({})",
            summary.line
        );
        storm.calls += load.count;
        for line in &lines {
            // The last fault at or before the outcome, if within the kill target of it.
            let near = faults
                .iter()
                .rev()
                .find(|(at, _)| *at <= line.outcome_us)
                .filter(|(at, _)| ms_between(*at, line.outcome_us) <= target::KILL_MID_CALL_MS)
                .map(|&(_, fault)| fault);
            match (line_class(line), near) {
                ("reply", _) => storm.replied += 1,
                ("unknown", Some(Fault::Kill)) => storm.unknown_at_kill += 1,
                ("unknown", Some(Fault::Disconnect)) => {
                    storm.unknown_at_disconnect += 1;
                    storm.problems.push(format!(
                        "a live server taken for dead at a disconnect: {line:?}"
                    ));
                }
                ("failed", _) => {
                    storm.wrongly_failed += 1;
                    storm.problems.push(format!("failed: {line:?}"));
                }
                (_, _) => {
                    storm.unexplained += 1;
                    storm.problems.push(format!(
                        "no outcome, or unknown far from any fault {faults:?}: {line:?}"
                    ));
                }
            }
        }
    }
    #[expect(clippy::cast_precision_loss, reason = "call counts are far below 2^52")]
    let ratio = storm.replied as f64 / storm.calls as f64;
    storm.replied_ratio = ratio;
    drop(server);
    storm
}

/// A free port of 127.0.0.1, for a process that must listen on a port known beforehand.
fn reserve_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("its address")
}
