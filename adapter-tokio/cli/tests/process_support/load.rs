//! Running `switchboard load` and checking its one-line JSON summary.
//!
//! `load` starts a node of its own, waits until its target is known, sends `--count`
//! messages at `--rate` (the first 8 payload bytes are the sequence number), waits for every
//! outcome and for the echoes to settle, and prints
//! `{"sent","delivered","failed":{reason:count},"duplicates","echoed","p50_us","p99_us"}`.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

use serde::Deserialize;

use super::{
    Proc,
    cluster::{RegistryAddr, args},
};

/// Whom a load run sends to.
#[derive(Clone, Debug)]
pub enum LoadTarget {
    /// `--to NAME`.
    Name(String),
    /// `--hash-key K`.
    HashKey(String),
    /// `--select round-robin --filter K=V`: each message to the next node with the label.
    RoundRobin(String),
}

/// How to run one `switchboard load`.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// `--registry` or `--etcd`.
    pub registry: RegistryAddr,
    /// `--to` or `--hash-key`.
    pub target: LoadTarget,
    /// `--count`.
    pub count: u64,
    /// `--rate` (messages per second).
    pub rate: u64,
    /// `--size` (payload bytes, ≥ 8: the sequence number).
    pub size: u64,
    /// `--id` of the load's own node.
    pub id: u64,
    /// `--name` of the load's own node.
    pub name: String,
    /// `--wait-known` seconds.
    pub wait_known_secs: u64,
    /// `--outcomes-log`, if any (see [`read_outcomes`]).
    pub outcomes_log: Option<PathBuf>,
    /// Flags passed as they are (e.g. an upstream for the load's node).
    pub extra: Vec<String>,
}

impl LoadSpec {
    /// `count` messages of 64 bytes at `rate`/s to the node named `to`, from node `id`.
    #[must_use]
    pub fn to_name(
        registry: impl Into<RegistryAddr>,
        to: &str,
        id: u64,
        count: u64,
        rate: u64,
    ) -> LoadSpec {
        LoadSpec {
            registry: registry.into(),
            target: LoadTarget::Name(to.to_owned()),
            count,
            rate,
            size: 64,
            id,
            name: format!("load-{id}"),
            wait_known_secs: 15,
            outcomes_log: None,
            extra: Vec::new(),
        }
    }

    /// Sets `--outcomes-log`.
    #[must_use]
    pub fn outcomes_log(mut self, path: &Path) -> LoadSpec {
        self.outcomes_log = Some(path.to_owned());
        self
    }

    fn to_args(&self) -> Vec<String> {
        let mut out = args(["load"]);
        out.extend(self.registry.to_args());
        match &self.target {
            LoadTarget::Name(name) => out.extend(args(["--to", name])),
            LoadTarget::HashKey(key) => out.extend(args(["--hash-key", key])),
            LoadTarget::RoundRobin(label) => {
                out.extend(args(["--select", "round-robin", "--filter", label]));
            }
        }
        out.extend(args([
            "--count",
            &self.count.to_string(),
            "--rate",
            &self.rate.to_string(),
            "--size",
            &self.size.to_string(),
            "--id",
            &self.id.to_string(),
            "--name",
            &self.name,
            "--wait-known",
            &format!("{}s", self.wait_known_secs),
        ]));
        if let Some(path) = &self.outcomes_log {
            out.extend(args(["--outcomes-log", &path.display().to_string()]));
        }
        out.extend(self.extra.iter().cloned());
        out
    }

    /// A bound on the whole run: waiting for the target, sending at the rate, the last
    /// message's deadline (`message_timeout`, 8 s) and generous slack for a loaded machine.
    #[must_use]
    pub fn run_bound(&self) -> Duration {
        let sending = self.count.div_ceil(self.rate.max(1));
        Duration::from_secs(self.wait_known_secs + sending + 8 + 20)
    }
}

/// Starts a load run (it prints its summary when done; see [`finish_load`]).
#[must_use]
pub fn spawn_load(spec: &LoadSpec) -> Proc {
    Proc::spawn(&spec.name, &spec.to_args())
}

/// Waits for a load run to end and parses its final JSON line; the exit code must say
/// whether every message was delivered (0) or not (1).
///
/// # Panics
///
/// It runs longer than `spec.run_bound()`, exits otherwise, or prints no summary.
#[must_use]
pub fn finish_load(mut proc: Proc, spec: &LoadSpec) -> LoadSummary {
    let status = proc.wait_exit(spec.run_bound());
    let line = proc.last_json_line();
    let summary: LoadSummary = serde_json::from_value(line.clone())
        .unwrap_or_else(|e| panic!("{}: summary {line} does not parse: {e}", proc.label()));
    let expected = if summary.failed.values().sum::<u64>() == 0 {
        0
    } else {
        1
    };
    assert_eq!(
        status.code(),
        Some(expected),
        "{}: exited with {status} after {line}\n{}",
        proc.label(),
        proc.diagnostics()
    );
    summary
}

/// Runs a load to completion.
#[must_use]
pub fn run_load(spec: &LoadSpec) -> LoadSummary {
    finish_load(spawn_load(spec), spec)
}

/// The final line of `switchboard load`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct LoadSummary {
    /// Messages accepted for sending.
    pub sent: u64,
    /// Outcomes `Delivered`.
    pub delivered: u64,
    /// Other outcomes by reason.
    pub failed: BTreeMap<String, u64>,
    /// Echo replies whose sequence number was seen before.
    pub duplicates: u64,
    /// Distinct echo replies.
    pub echoed: u64,
    /// Median latency (µs).
    pub p50_us: serde_json::Value,
    /// 99th percentile latency (µs).
    pub p99_us: serde_json::Value,
}

/// Outcome reasons `switchboard load` reports (the core's `FailReason`s in snake case).
pub const OUTCOME_REASONS: [&str; 6] = [
    "timeout",
    "queue_full",
    "no_route",
    "target_gone",
    "target_restarted",
    "shutdown",
];

/// Whether `key` of the load summary's `failed` map is a named reason: an outcome reason, the
/// same prefixed `unknown_` (transmitted, not acknowledged), or `refused_<why>` (the node did
/// not accept the send). `no_outcome` (no outcome in time: a lost message) is not.
#[must_use]
pub fn is_named_reason(key: &str) -> bool {
    let outcome = key.strip_prefix("unknown_").unwrap_or(key);
    let refused = key.strip_prefix("refused_").is_some_and(|why| {
        !why.is_empty() && why.chars().all(|c| c.is_ascii_lowercase() || c == '_')
    });
    OUTCOME_REASONS.contains(&outcome) || refused
}

impl LoadSummary {
    /// The sum of every failure reason's count.
    #[must_use]
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }

    /// Messages transmitted but never acknowledged (`unknown_*`): each may or may not have
    /// reached the target.
    #[must_use]
    pub fn unknown_total(&self) -> u64 {
        self.failed
            .iter()
            .filter(|(reason, _)| reason.starts_with("unknown_"))
            .map(|(_, count)| count)
            .sum()
    }

    /// The run's accounting is exact: `sent` is `expected_sent`, every message has exactly
    /// one outcome (`delivered + failed == sent`), every failure names its reason (none is
    /// `no_outcome`), and no echo came back twice.
    ///
    /// # Panics
    ///
    /// Any of these does not hold.
    pub fn assert_accounted(&self, expected_sent: u64) {
        assert_eq!(self.sent, expected_sent, "sent: {self:?}");
        assert_eq!(
            self.delivered + self.failed_total(),
            self.sent,
            "delivered + failed != sent: {self:?}"
        );
        assert_eq!(self.duplicates, 0, "duplicates: {self:?}");
        for (reason, count) in &self.failed {
            assert!(
                is_named_reason(reason),
                "failure reason {reason:?} is not a named reason: {self:?}"
            );
            assert!(
                *count > 0,
                "reason {reason:?} listed with count 0: {self:?}"
            );
        }
        assert!(
            self.echoed <= self.sent,
            "more distinct echoes than sends: {self:?}"
        );
    }

    /// A clean run: every message delivered and echoed exactly once (`delivered == echoed ==
    /// sent == count`), no failure, no duplicate.
    ///
    /// # Panics
    ///
    /// Not so.
    pub fn assert_all_delivered(&self, count: u64) {
        self.assert_accounted(count);
        assert_eq!(self.delivered, count, "delivered: {self:?}");
        assert!(self.failed.is_empty(), "failures: {self:?}");
        assert_eq!(self.echoed, count, "echoed: {self:?}");
    }
}

/// One line of `load --outcomes-log`: a message, when it was handed to the load's node and
/// when its outcome came (µs since the Unix epoch; 0 = none came), and the outcome's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutcomeLine {
    /// Sequence number.
    pub seq: u64,
    /// Handed to the node at.
    pub sent_us: u64,
    /// Its outcome (or refusal) came at; 0 for `no_outcome`.
    pub outcome_us: u64,
    /// `delivered` or the summary's failure name.
    pub outcome: String,
}

impl OutcomeLine {
    /// Whether the outcome is `Delivered`.
    #[must_use]
    pub fn delivered(&self) -> bool {
        self.outcome == "delivered"
    }
}

/// Reads an outcomes log: one line per message, in sequence order.
///
/// # Panics
///
/// The file cannot be read or a line is malformed.
#[must_use]
pub fn read_outcomes(path: &Path) -> Vec<OutcomeLine> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let number = |i: usize| -> u64 {
                fields
                    .get(i)
                    .and_then(|f| f.parse().ok())
                    .unwrap_or_else(|| panic!("bad outcomes line {line:?}"))
            };
            assert_eq!(fields.len(), 4, "bad outcomes line {line:?}");
            OutcomeLine {
                seq: number(0),
                sent_us: number(1),
                outcome_us: number(2),
                outcome: fields[3].to_owned(),
            }
        })
        .collect()
}

/// Counts outcome names in `lines` (to check a log against its summary).
#[must_use]
pub fn outcome_counts(lines: &[OutcomeLine]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for line in lines {
        *counts.entry(line.outcome.clone()).or_default() += 1;
    }
    counts
}
