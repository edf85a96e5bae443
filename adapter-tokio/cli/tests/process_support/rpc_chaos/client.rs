//! The callers of the chaos matrix: `switchboard call` (one call, one JSON line),
//! `switchboard load --method` (a summary and an outcomes log) and `switchboard broadcast`,
//! and server nodes started with `--serve`.

use std::{
    collections::{BTreeMap, BTreeSet},
    net::SocketAddr,
    time::Duration,
};

use super::super::{
    Proc,
    cluster::{Node, NodeSpec, Registry, args, start_node, start_registry},
    figures::ms_between,
    http::counter_sum,
    load::OutcomeLine,
    unix_micros_now,
};

/// Bound on a `call` process printing its outcome beyond its own timeout and grace.
const CALL_SLACK: Duration = Duration::from_secs(20);

/// One `switchboard call`.
#[derive(Clone, Debug)]
pub struct CallArgs {
    /// `--method`.
    pub method: String,
    /// `--payload`, if any.
    pub payload: Option<String>,
    /// `--timeout` (CLI duration text).
    pub timeout: String,
    /// `--grace` (CLI duration text).
    pub grace: String,
}

impl CallArgs {
    /// `method` with `payload`, a 10 s timeout and a 15 s grace (happy's call shape).
    #[must_use]
    pub fn new(method: &str, payload: &str) -> CallArgs {
        CallArgs {
            method: method.to_owned(),
            payload: Some(payload.to_owned()),
            timeout: "10s".to_owned(),
            grace: "15s".to_owned(),
        }
    }

    /// Sets `--timeout`.
    #[must_use]
    pub fn timeout(mut self, timeout: &str) -> CallArgs {
        timeout.clone_into(&mut self.timeout);
        self
    }

    /// Sets `--grace`.
    #[must_use]
    pub fn grace(mut self, grace: &str) -> CallArgs {
        grace.clone_into(&mut self.grace);
        self
    }
}

/// Starts `switchboard call --registry ADDR ...`.
#[must_use]
pub fn spawn_call(label: &str, registry: SocketAddr, call: &CallArgs) -> Proc {
    let mut command = args(["call", "--registry", &registry.to_string()]);
    command.extend(args(["--method", &call.method]));
    if let Some(payload) = &call.payload {
        command.extend(args(["--payload", payload]));
    }
    command.extend(args(["--timeout", &call.timeout, "--grace", &call.grace]));
    Proc::spawn(label, &command)
}

/// What one `switchboard call` printed, and when the test read it.
#[derive(Clone, Debug)]
pub struct CallOutcome {
    /// `reply`, `failed` or `unknown`.
    pub outcome: String,
    /// The reason of a `failed`/`unknown` outcome.
    pub reason: Option<String>,
    /// The reply's payload.
    pub payload: Option<String>,
    /// The call's own latency (µs), as it printed it.
    pub latency_us: u64,
    /// When the test read the line (µs since the Unix epoch).
    pub at_us: u64,
    /// The whole line.
    pub line: serde_json::Value,
}

impl CallOutcome {
    /// `outcome/reason` (or `reply`), for messages and assertions.
    #[must_use]
    pub fn class(&self) -> String {
        match &self.reason {
            Some(reason) => format!("{}/{reason}", self.outcome),
            None => self.outcome.clone(),
        }
    }
}

/// Waits (up to `bound`) for a call's outcome line, then for its exit: 0 on a reply, 1
/// otherwise.
///
/// # Panics
///
/// No line in time, a malformed line, or an exit code that contradicts the outcome.
#[must_use]
pub fn finish_call(mut proc: Proc, bound: Duration) -> CallOutcome {
    let line = proc.next_json_line(bound);
    let at_us = unix_micros_now();
    let status = proc.wait_exit(Duration::from_secs(10));
    let label = proc.label().to_owned();
    let field = |name: &str| line[name].as_str().map(str::to_owned);
    let outcome = field("outcome").unwrap_or_else(|| panic!("{label}: no outcome in {line}"));
    let latency_us = line["latency_us"]
        .as_u64()
        .unwrap_or_else(|| panic!("{label}: no latency_us in {line}"));
    let expected_code = if outcome == "reply" { 0 } else { 1 };
    assert_eq!(
        status.code(),
        Some(expected_code),
        "{label}: exit {status} after {line}"
    );
    CallOutcome {
        reason: field("reason"),
        payload: field("payload"),
        outcome,
        latency_us,
        at_us,
        line,
    }
}

/// Runs one call to its outcome.
#[must_use]
pub fn run_call(label: &str, registry: SocketAddr, call: &CallArgs) -> CallOutcome {
    finish_call(spawn_call(label, registry, call), call_bound(call))
}

pub(crate) fn call_bound(call: &CallArgs) -> Duration {
    parse_duration(&call.timeout) + parse_duration(&call.grace) + CALL_SLACK
}

/// `5s`, `250ms` as the CLI reads them.
fn parse_duration(text: &str) -> Duration {
    if let Some(ms) = text.strip_suffix("ms") {
        Duration::from_millis(ms.parse().expect("a duration in ms"))
    } else if let Some(s) = text.strip_suffix('s') {
        Duration::from_secs(s.parse().expect("a duration in s"))
    } else {
        panic!("duration {text:?} is neither Ns nor Nms")
    }
}

/// Why a call did not reply with exactly `payload`, or `None` when it did.
#[must_use]
pub fn reply_problem(call: &CallOutcome, payload: &str) -> Option<String> {
    if call.outcome != "reply" {
        return Some(format!("expected a reply: {}", call.line));
    }
    (call.payload.as_deref() != Some(payload))
        .then(|| format!("reply payload, expected {payload:?}: {}", call.line))
}

/// Asserts a call replied with exactly `payload`.
///
/// # Panics
///
/// Not so.
pub fn assert_reply(call: &CallOutcome, payload: &str) {
    if let Some(problem) = reply_problem(call, payload) {
        panic!("{problem}");
    }
}

/// Asserts a call ended `outcome/reason`.
///
/// # Panics
///
/// Not so.
pub fn assert_class(call: &CallOutcome, outcome: &str, reason: &str) {
    assert_eq!(
        call.class(),
        format!("{outcome}/{reason}"),
        "outcome line {}",
        call.line
    );
}

/// The spec of a server node serving `serves` (`echo`, `sleep,silent`, ...).
#[must_use]
pub fn server_spec(registry: SocketAddr, id: u64, serves: &str) -> NodeSpec {
    NodeSpec::new(id, &format!("server-{id}"), registry).flags(&["--serve", serves])
}

/// Starts a server node and checks its ready line lists every method of `serves`.
///
/// # Panics
///
/// No ready line, or one whose `serves` differs.
#[must_use]
pub fn start_server(spec: NodeSpec) -> Node {
    let serves: Vec<String> = spec
        .flags
        .windows(2)
        .find(|w| w[0] == "--serve")
        .map(|w| w[1].split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let node = start_node(spec);
    let mut listed: Vec<String> = node.ready["serves"]
        .as_array()
        .unwrap_or_else(|| panic!("no \"serves\" in ready line {}", node.ready))
        .iter()
        .map(|m| m.as_str().unwrap_or_default().to_owned())
        .collect();
    listed.sort();
    let mut expected = serves;
    expected.sort();
    assert_eq!(listed, expected, "ready line {}", node.ready);
    node
}

/// `switchboard_rpc_served_total` of a node, every method: requests handed to its handlers.
///
/// # Panics
///
/// The node does not answer on its admin port.
#[must_use]
pub fn served(node: &Node) -> u64 {
    counter_sum(&node.metrics(), "switchboard_rpc_served_total")
}

/// A registry and one server serving `serves`.
#[must_use]
pub fn registry_and_server(serves: &str) -> (Registry, Node) {
    let registry = start_registry("registry", "127.0.0.1:0");
    let server = start_server(server_spec(registry.addr, 1, serves));
    (registry, server)
}

/// One `switchboard load --method` run.
#[derive(Clone, Debug)]
pub struct MethodLoad {
    /// `--registry`.
    pub registry: SocketAddr,
    /// `--id` and `--name load-<id>` of the load's node.
    pub id: u64,
    /// `--method`.
    pub method: String,
    /// `--payload`.
    pub payload: String,
    /// `--concurrency`.
    pub concurrency: u64,
    /// `--count`.
    pub count: u64,
    /// `--rate` (calls per second), if paced.
    pub rate: Option<u64>,
    /// `--outcomes-log`, if any.
    pub outcomes_log: Option<std::path::PathBuf>,
}

impl MethodLoad {
    /// Its command line after the binary.
    #[must_use]
    pub fn to_args(&self) -> Vec<String> {
        let mut out = args(["load", "--registry", &self.registry.to_string()]);
        out.extend(args([
            "--id",
            &self.id.to_string(),
            "--name",
            &format!("load-{}", self.id),
            "--method",
            &self.method,
            "--payload",
            &self.payload,
            "--concurrency",
            &self.concurrency.to_string(),
            "--count",
            &self.count.to_string(),
        ]));
        if let Some(rate) = self.rate {
            out.extend(args(["--rate", &rate.to_string()]));
        }
        if let Some(path) = &self.outcomes_log {
            out.extend(args(["--outcomes-log", &path.display().to_string()]));
        }
        out
    }

    /// Starts it.
    #[must_use]
    pub fn spawn(&self) -> Proc {
        Proc::spawn(&format!("load-{}", self.id), &self.to_args())
    }
}

/// The summary of a `load --method` run: replies, and failed / unknown counts by reason.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallSummary {
    /// Calls replied.
    pub replies: u64,
    /// `failed` calls by reason.
    pub failed: BTreeMap<String, u64>,
    /// `unknown` calls by reason.
    pub unknown: BTreeMap<String, u64>,
    /// The whole line.
    pub line: String,
}

impl CallSummary {
    /// Every call of the run.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.replies + self.failed.values().sum::<u64>() + self.unknown.values().sum::<u64>()
    }
}

/// Waits for a load run (at most `bound`) and parses its summary; the exit code must be 0
/// exactly when every call replied.
///
/// # Panics
///
/// It runs longer, prints no summary, or exits otherwise.
#[must_use]
pub fn finish_method_load(mut proc: Proc, bound: Duration) -> CallSummary {
    let status = proc.wait_exit(bound);
    let line = proc.last_json_line();
    let counts = |name: &str| -> BTreeMap<String, u64> {
        match &line[name] {
            serde_json::Value::Null => BTreeMap::new(),
            serde_json::Value::Object(map) => map
                .iter()
                .map(|(k, v)| {
                    let n = v
                        .as_u64()
                        .unwrap_or_else(|| panic!("{name}.{k} is not a count in {line}"));
                    (k.clone(), n)
                })
                .collect(),
            other => panic!("{name} is {other} in {line}"),
        }
    };
    let summary = CallSummary {
        replies: line["replies"]
            .as_u64()
            .unwrap_or_else(|| panic!("no replies count in {line}")),
        failed: counts("failed"),
        unknown: counts("unknown"),
        line: line.to_string(),
    };
    assert_eq!(
        line["calls"].as_u64(),
        Some(summary.total()),
        "calls == replies + failed + unknown in {line}"
    );
    let clean = summary.replies == summary.total();
    assert_eq!(
        status.code(),
        Some(if clean { 0 } else { 1 }),
        "{}: exit {status} after {line}",
        proc.label()
    );
    summary
}

/// How an outcomes-log line of a call run is classed: `reply`, `failed`, `unknown`, or
/// `no_outcome` (a call the load saw no outcome for: lost).
#[must_use]
pub fn line_class(line: &OutcomeLine) -> &'static str {
    if line.outcome == "reply" {
        "reply"
    } else if line.outcome == "no_outcome" {
        "no_outcome"
    } else if line.outcome.starts_with("unknown_") {
        "unknown"
    } else {
        "failed"
    }
}

/// Broadcast recipients (happy: 20 sockets).
pub const BROADCAST_NODES: u64 = 20;

/// What `switchboard broadcast` printed.
#[derive(Clone, Debug, PartialEq)]
pub struct BroadcastOutcome {
    /// `delivered`, in the order printed.
    pub delivered: Vec<u64>,
    /// Node ids under `failed`.
    pub failed: BTreeSet<u64>,
    /// Node ids under `unknown`.
    pub unknown: BTreeSet<u64>,
    /// From the spawn of `switchboard broadcast` to its line (ms).
    pub elapsed_ms: f64,
    /// The whole line.
    pub line: String,
}

/// Runs `switchboard broadcast --registry ADDR --label k=v --payload TEXT [--timeout D]`.
///
/// # Panics
///
/// No line within 30 s, a malformed one, or an exit code other than 0 exactly when every
/// recipient got it.
#[must_use]
pub fn run_broadcast(
    registry: SocketAddr,
    label: (&str, &str),
    payload: &str,
    timeout: Option<&str>,
) -> BroadcastOutcome {
    let mut command = args([
        "broadcast",
        "--registry",
        &registry.to_string(),
        "--label",
        &format!("{}={}", label.0, label.1),
        "--payload",
        payload,
    ]);
    if let Some(timeout) = timeout {
        command.extend(["--timeout".to_owned(), timeout.to_owned()]);
    }
    let spawned_us = unix_micros_now();
    let mut proc = Proc::spawn("broadcast", &command);
    let line = proc.next_json_line(Duration::from_secs(30));
    let elapsed_ms = ms_between(spawned_us, unix_micros_now());
    let status = proc.wait_exit(Duration::from_secs(10));
    let ids = |name: &str| -> BTreeSet<u64> {
        match &line[name] {
            serde_json::Value::Null => BTreeSet::new(),
            serde_json::Value::Object(map) => map
                .keys()
                .map(|k| {
                    k.parse()
                        .unwrap_or_else(|_| panic!("{name} key {k} in {line}"))
                })
                .collect(),
            other => panic!("{name} is {other} in {line}"),
        }
    };
    let outcome = BroadcastOutcome {
        delivered: line["delivered"]
            .as_array()
            .unwrap_or_else(|| panic!("no delivered list in {line}"))
            .iter()
            .map(|v| {
                v.as_u64()
                    .unwrap_or_else(|| panic!("delivered id {v} in {line}"))
            })
            .collect(),
        failed: ids("failed"),
        unknown: ids("unknown"),
        elapsed_ms,
        line: line.to_string(),
    };
    let every = outcome.failed.is_empty() && outcome.unknown.is_empty();
    assert_eq!(
        status.code(),
        Some(if every { 0 } else { 1 }),
        "broadcast: exit {status} after {line}"
    );
    outcome
}
