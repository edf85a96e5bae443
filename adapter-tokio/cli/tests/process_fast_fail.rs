//! Issue 11, "know fast": a dead or frozen target ends what was in flight to it at once, and
//! a restarted one gets traffic at once — real `switchboard` processes on 127.0.0.1.
//!
//! Each test runs `switchboard load` with `--outcomes-log` (every message's send and outcome
//! instants on the system clock), takes its own instant just before it signals a process,
//! prints its figures as `figure: NAME=VALUE` lines and asserts the targets:
//!
//! - a leaf SIGKILLed mid-run, on a direct link and behind a proxy: every message in flight
//!   at the kill has its outcome ≤ 200 ms after it (and one transmitted toward the dead leaf
//!   after the kill that ends `unknown_*`, ≤ 200 ms after its send) — except one that
//!   provably never reached the dead life (still queued, or every copy refused by the
//!   proxy), which waits for the next life and is delivered to it — such *held* messages are
//!   a handful at most ([`HELD_MAX`]), behind a proxy no more than the forwards it refused,
//!   each delivered ≤ 100 ms after the restarted leaf's ready line, and never the whole
//!   in-flight set (a run where what is checked was empty is repeated on a fresh cluster,
//!   and the test fails if all `KILL_ATTEMPTS` runs were); the leaf restarted (same id, port and
//!   name, 500 ms after the kill, so the restart cannot be what ended them): the first
//!   delivery to it ≤ 100 ms after its ready line;
//! - a leaf SIGSTOPped (a half-open peer): its link is declared dead — what was transmitted
//!   to it ends `unknown_target_gone` — ≤ 5 s after the stop (heartbeats 1.5 s × 3); after
//!   SIGCONT it answers again, having received every delivered message and at most the
//!   unknown ones besides;
//! - a leaf behind a proxy SIGKILLed and left dead: the proxy sees at most 2 forward attempts
//!   (`switchboard_forward_dropped_total`) per message not delivered.
//!
//! Every run is accounted exactly: one named outcome per message, none lost, no duplicate,
//! and the outcomes log agrees with the summary.

mod process_support;

use std::{path::Path, thread, time::Duration};

use process_support::{
    cluster::{ANY_PORT, Node, NodeSpec, Registry, start_node, start_registry},
    figures::{first_delivery_ms, in_flight_at, ms_between, report, timeline, unknown_sent_after},
    load::{
        LoadSpec, LoadSummary, OutcomeLine, finish_load, outcome_counts, read_outcomes, spawn_load,
    },
    scenario::{PROXY_ID, ProxyCluster, RUN_START_TIMEOUT, until_checked},
    unix_micros_now,
};

/// Target: every in-flight message's outcome this soon after the target died.
const IN_FLIGHT_OUTCOME_TARGET_MS: f64 = 200.0;
/// Target: the first delivery to a restarted target this soon after its ready line.
const FIRST_DELIVERY_TARGET_MS: f64 = 100.0;
/// Target: a half-open link declared dead this soon after the peer froze.
const HALF_OPEN_DEAD_TARGET_MS: f64 = 5000.0;
/// Bound: messages in flight at the kill that waited for the next life and were delivered to
/// it. Only a message that provably never reached the dead life may wait (one still queued
/// at the sender, or every copy refused by the proxy); a regression that re-sent
/// may-have-arrived messages to the new life would show as many more.
const HELD_MAX: usize = 8;
/// Target: forward attempts per undelivered message while the target is dead.
const FORWARDS_PER_UNDELIVERED_TARGET: f64 = 2.0;

/// Messages per run and their rate: 3 s of sending, the fault at about 0.5 s.
const COUNT: u64 = 6000;
const RATE: u64 = 2000;
const RECEIVED_AT_FAULT: u64 = 1000;
/// How long the target stays dead before its restart: longer than the in-flight target, so
/// the restart's news cannot be what ended the in-flight messages.
const DEAD_FOR: Duration = Duration::from_millis(500);

/// The direct leaf: no upstream, so the load's node links to it directly.
const DIRECT_ID: u64 = 201;
const DIRECT: &str = "direct-leaf";

fn direct_leaf(registry: &Registry) -> Node {
    start_node(NodeSpec::new(DIRECT_ID, DIRECT, registry.addr).echo())
}

/// The log agrees with the summary: one line per message, the same counts per outcome.
fn assert_log_matches(lines: &[OutcomeLine], summary: &LoadSummary) {
    assert_eq!(lines.len() as u64, summary.sent, "one line per message");
    let mut expected = summary.failed.clone();
    if summary.delivered > 0 {
        expected.insert("delivered".to_owned(), summary.delivered);
    }
    assert_eq!(
        outcome_counts(lines),
        expected,
        "log vs summary {summary:?}"
    );
}

/// A load run across a target's kill and restart.
struct KillRun {
    summary: LoadSummary,
    lines: Vec<OutcomeLine>,
    /// Taken just before the SIGKILL.
    kill_us: u64,
    /// Taken just before the restarted process was spawned: nothing delivered before it
    /// reached the new life.
    restart_us: u64,
    restarted: Node,
    /// Behind a proxy: the forwards the proxy refused during the run
    /// (`switchboard_forward_dropped_total`), an upper bound of the held messages.
    refused_forwards: Option<u64>,
}

/// Runs `spec` (with an outcomes log in `dir`), SIGKILLs `target` once it received
/// [`RECEIVED_AT_FAULT`] and restarts it after [`DEAD_FOR`].
fn kill_and_restart_mid_run(spec: LoadSpec, dir: &Path, target: Node) -> KillRun {
    let log_path = dir.join("outcomes.log");
    let spec = spec.outcomes_log(&log_path);
    let run = spawn_load(&spec);
    let mut target = target;
    target.wait_received_at_least(RECEIVED_AT_FAULT, RUN_START_TIMEOUT);
    let kill_us = unix_micros_now();
    target.proc.sigkill();
    thread::sleep(DEAD_FOR);
    let restart_us = unix_micros_now();
    let restarted = start_node(target.restart_spec());
    drop(target);
    let summary = finish_load(run, &spec);
    eprintln!("run across the kill and restart: {summary:?}");
    let lines = read_outcomes(&log_path);
    assert_log_matches(&lines, &summary);
    KillRun {
        summary,
        lines,
        kill_us,
        restart_us,
        restarted,
        refused_forwards: None,
    }
}

/// Which of the kill test's targets a test asserts (it prints every figure either way).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Assert {
    /// Messages in flight at the kill: their outcomes ≤ 200 ms after it.
    in_flight: bool,
    /// Messages transmitted after the kill that ended `unknown_*`: ≤ 200 ms after their send.
    sent_after: bool,
    /// The first delivery to the restarted leaf ≤ 100 ms after its ready line.
    first_delivery: bool,
}

/// The figures and checks shared by the direct and the proxied kill: `what` names them.
/// Returns whether the asserted in-flight checks had anything to check (always true when
/// `asserted.in_flight` is off); every other check has passed either way.
#[must_use]
fn assert_kill_figures(what: &str, run: &KillRun, asserted: Assert) -> bool {
    let KillRun {
        summary,
        lines,
        kill_us,
        restart_us,
        restarted,
        refused_forwards,
    } = run;
    let (kill_us, restart_us) = (*kill_us, *restart_us);
    summary.assert_accounted(COUNT);
    for reason in ["no_outcome", "timeout", "unknown_timeout"] {
        assert_eq!(summary.failed.get(reason), None, "{what}: {summary:?}");
    }
    assert!(restarted.ready_registered(), "{what}: {}", restarted.ready);

    eprintln!(
        "{what}: outcomes ending after the kill (ms after it): {}",
        timeline(lines, kill_us)
    );
    // A message in flight at the kill and delivered after the restart began provably never
    // reached the dead life (one it may have reached ends `unknown_*`, also when the new life
    // refuses its retransmission): it waited for the next life, by design.
    let (held, ended): (Vec<OutcomeLine>, Vec<OutcomeLine>) = in_flight_at(lines, kill_us)
        .messages
        .into_iter()
        .partition(|l| l.delivered() && l.outcome_us >= restart_us);
    let in_flight = in_flight_at(&ended, kill_us);
    let in_flight_ms = in_flight.last_outcome_ms.unwrap_or(0.0);
    eprintln!(
        "{what}: {} message(s) in flight at the kill ended by it: {:?}; {} waited for the \
         next life and were delivered to it",
        in_flight.messages.len(),
        outcome_counts(&in_flight.messages),
        held.len()
    );
    #[expect(
        clippy::cast_precision_loss,
        reason = "counts of one run are far below 2^52"
    )]
    report(
        &format!("inflight_held_for_restart_{what}"),
        held.len() as f64,
    );
    report(
        &format!("inflight_outcome_after_kill_{what}_ms"),
        in_flight_ms,
    );
    let sent_after = unknown_sent_after(lines, kill_us);
    let sent_after_ms = sent_after.last_outcome_ms.unwrap_or(0.0);
    eprintln!(
        "{what}: {} message(s) transmitted after the kill ended unknown",
        sent_after.messages.len()
    );
    report(&format!("unknown_wait_after_kill_{what}_ms"), sent_after_ms);
    let first_ms = first_delivery_ms(lines, kill_us, restarted.ready_at_us)
        .unwrap_or_else(|| panic!("{what}: nothing sent after the kill was delivered"));
    report(&format!("first_delivery_after_restart_{what}_ms"), first_ms);

    let checked =
        !asserted.in_flight || !in_flight.messages.is_empty() || !sent_after.messages.is_empty();
    if asserted.in_flight {
        assert_held(what, &held, restarted, *refused_forwards);
        for message in &in_flight.messages {
            assert!(
                message.delivered()
                    || ["unknown_target_gone", "unknown_target_restarted"]
                        .contains(&message.outcome.as_str()),
                "{what}: in flight at the kill and ended {message:?}"
            );
        }
        assert!(
            in_flight_ms <= IN_FLIGHT_OUTCOME_TARGET_MS,
            "{what}: a message in flight at the kill got its outcome {in_flight_ms} ms after \
             it (target {IN_FLIGHT_OUTCOME_TARGET_MS} ms): {:?}",
            in_flight.messages
        );
    }
    if asserted.sent_after {
        assert!(
            sent_after_ms <= IN_FLIGHT_OUTCOME_TARGET_MS,
            "{what}: a message transmitted after the kill ended unknown {sent_after_ms} ms \
             after its send (target {IN_FLIGHT_OUTCOME_TARGET_MS} ms)"
        );
    }
    if asserted.first_delivery {
        assert!(
            first_ms <= FIRST_DELIVERY_TARGET_MS,
            "{what}: first delivery {first_ms} ms after the restarted leaf's ready line \
             (target {FIRST_DELIVERY_TARGET_MS} ms)"
        );
    }
    checked
}

/// The messages set apart as *held* (in flight at the kill, delivered to the next life) are
/// few, explained by the evidence and delivered at once.
///
/// What the kill ended (in flight at the kill, and transmitted after it before the sender
/// learnt of the death; both checked against the in-flight target) may be empty in one run:
/// at 2,000 msg/s on loopback a message is in flight about half the time, so a kill between
/// two messages leaves the first empty while the next sends, transmitted into the dead link,
/// end `unknown` (a CI run on a loaded machine had 0 in flight and 4 sent after), and a
/// run once had neither (0 ended, 1 held). Such a run checked nothing of the in-flight rules:
/// [`assert_kill_figures`] says so and [`until_checked`] runs the test again.
fn assert_held(what: &str, held: &[OutcomeLine], restarted: &Node, refused_forwards: Option<u64>) {
    assert!(
        held.len() <= HELD_MAX,
        "{what}: {} messages in flight at the kill waited for the next life (at most \
         {HELD_MAX} can have provably never reached the dead one): {held:?}",
        held.len()
    );
    if let Some(refused) = refused_forwards {
        assert!(
            held.len() as u64 <= refused,
            "{what}: {} held messages but the proxy refused only {refused} forwards: a held \
             message must have had every copy refused",
            held.len()
        );
    }
    for message in held {
        let after_ready_ms = ms_between(restarted.ready_at_us, message.outcome_us);
        assert!(
            after_ready_ms <= FIRST_DELIVERY_TARGET_MS,
            "{what}: a held message was delivered {after_ready_ms} ms after the restarted \
             leaf's ready line (target {FIRST_DELIVERY_TARGET_MS} ms): {message:?}"
        );
    }
}

#[test]
fn leaf_killed_on_a_direct_link() {
    until_checked("direct", || {
        let dir = tempfile::tempdir().expect("tempdir");
        let registry = start_registry("registry", ANY_PORT);
        let leaf = direct_leaf(&registry);
        leaf.wait_known(1);
        let spec = LoadSpec::to_name(registry.addr, DIRECT, 920, COUNT, RATE);
        let run = kill_and_restart_mid_run(spec, dir.path(), leaf);
        assert_kill_figures(
            "direct",
            &run,
            Assert {
                in_flight: true,
                sent_after: true,
                first_delivery: true,
            },
        )
    });
}

/// Leaf A behind the proxy killed mid-run and restarted; the targets asserted by `asserted`
/// (a run whose in-flight checks had nothing to check is repeated: [`until_checked`]).
fn leaf_killed_behind_a_proxy(load_id: u64, asserted: Assert) {
    until_checked("proxied", || {
        leaf_killed_behind_a_proxy_once(load_id, asserted)
    });
}

/// One run of [`leaf_killed_behind_a_proxy`]: whether its in-flight checks checked anything.
fn leaf_killed_behind_a_proxy_once(load_id: u64, asserted: Assert) -> bool {
    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = ProxyCluster::start();
    let spec = cluster.load_to_a(load_id, COUNT, RATE);
    let ProxyCluster {
        registry: _registry,
        proxy,
        leaf_a,
        leaf_b: _leaf_b,
    } = cluster;
    let dropped_before = proxy.counter("switchboard_forward_dropped_total");
    let mut run = kill_and_restart_mid_run(spec, dir.path(), leaf_a);
    let refused = proxy.counter("switchboard_forward_dropped_total") - dropped_before;
    eprintln!("the proxy could not forward {refused} message(s) of the run");
    run.refused_forwards = Some(refused);
    let checked = assert_kill_figures("proxied", &run, asserted);
    run.restarted.wait_link_up(PROXY_ID);
    checked
}

#[test]
fn leaf_killed_behind_a_proxy_ends_what_was_in_flight_at_once() {
    leaf_killed_behind_a_proxy(
        921,
        Assert {
            in_flight: true,
            sent_after: false,
            first_delivery: false,
        },
    );
}

#[test]
fn leaf_restarted_behind_a_proxy_gets_traffic_at_once() {
    leaf_killed_behind_a_proxy(
        924,
        Assert {
            in_flight: false,
            sent_after: true,
            first_delivery: true,
        },
    );
}

#[test]
fn leaf_stopped_is_declared_dead_by_heartbeats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("outcomes.log");
    let registry = start_registry("registry", ANY_PORT);
    let leaf = direct_leaf(&registry);
    leaf.wait_known(1);
    // 2 s of sending: the stop comes at about 0.5 s, the heartbeat verdict after the last
    // send, so every message after the stop is transmitted into the frozen link.
    let count = 2000;
    let spec = LoadSpec::to_name(registry.addr, DIRECT, 922, count, 1000).outcomes_log(&log_path);
    let run = spawn_load(&spec);
    leaf.wait_received_at_least(count / 4, RUN_START_TIMEOUT);
    // The stop took effect between these two instants (the signal goes through `sh`): the
    // figure counts from the first, the checks of what was frozen start at the second.
    let stop_us = unix_micros_now();
    leaf.proc.sigstop();
    let stopped_us = unix_micros_now();
    let summary = finish_load(run, &spec);
    leaf.proc.sigcont();
    eprintln!("run across the stop: {summary:?}");
    let lines = read_outcomes(&log_path);
    assert_log_matches(&lines, &summary);
    summary.assert_accounted(count);

    // The verdict: the transmitted messages end unknown_target_gone together; the figure
    // is the last of them.
    let gone: Vec<u64> = lines
        .iter()
        .filter(|l| l.outcome == "unknown_target_gone")
        .map(|l| l.outcome_us)
        .collect();
    let verdict_us = *gone
        .iter()
        .min()
        .expect("the frozen leaf's link was declared dead");
    let dead_ms = ms_between(stop_us, *gone.iter().max().expect("not empty"));
    eprintln!(
        "{} message(s) ended unknown_target_gone, {:.1}..{dead_ms:.1} ms after the stop",
        gone.len(),
        ms_between(stop_us, verdict_us)
    );
    report("half_open_declared_dead_after_stop_ms", dead_ms);
    let in_flight = in_flight_at(&lines, stop_us);
    // Everything in flight at the stop, and everything sent after it until the verdict, was
    // transmitted to the frozen leaf and never acknowledged (a delivered one was acknowledged
    // before the stop): it ends unknown_target_gone with the verdict. What was sent after the
    // verdict (the in-flight window was full until then) was never transmitted: it waits for
    // a new life of the leaf until its deadline and fails target_gone (why it waited),
    // provably undelivered.
    for message in &in_flight.messages {
        assert!(
            message.outcome == "unknown_target_gone"
                || (message.delivered() && message.sent_us <= stopped_us),
            "in flight to the frozen leaf and ended {message:?}"
        );
    }
    for message in lines.iter().filter(|l| l.sent_us > stopped_us) {
        let expected = if message.sent_us < verdict_us {
            "unknown_target_gone"
        } else {
            "target_gone"
        };
        assert_eq!(
            message.outcome,
            expected,
            "sent {} ms after the stop, {} ms after the verdict: {message:?}",
            ms_between(stopped_us, message.sent_us),
            ms_between(verdict_us, message.sent_us)
        );
    }
    assert!(
        dead_ms <= HALF_OPEN_DEAD_TARGET_MS,
        "the frozen leaf's link was declared dead {dead_ms} ms after the stop (target \
         {HALF_OPEN_DEAD_TARGET_MS} ms)"
    );
    // The leaf runs again after SIGCONT (and is SIGKILLed when the test ends): it answers,
    // and has received every delivered message, and besides at most the ones that ended
    // unknown (bytes left in its socket while it was stopped).
    let received = leaf.received_total();
    let unknown: u64 = summary
        .failed
        .iter()
        .filter(|(reason, _)| reason.starts_with("unknown_"))
        .map(|(_, n)| n)
        .sum();
    assert!(
        (summary.delivered..=summary.delivered + unknown).contains(&received),
        "the leaf received {received} after SIGCONT; delivered {}, unknown {unknown}",
        summary.delivered
    );
}

#[test]
fn forwards_per_undelivered_message_while_the_target_is_dead() {
    let mut cluster = ProxyCluster::start();
    let count = 2000;
    let spec = cluster.load_to_a(923, count, 1000);
    let dropped_before = cluster.proxy.counter("switchboard_forward_dropped_total");
    let run = spawn_load(&spec);
    cluster
        .leaf_a
        .wait_received_at_least(count / 4, RUN_START_TIMEOUT);
    cluster.leaf_a.proc.sigkill();
    let summary = finish_load(run, &spec);
    eprintln!("run with the target dead from a quarter on: {summary:?}");
    summary.assert_accounted(count);
    let forwards = cluster.proxy.counter("switchboard_forward_dropped_total") - dropped_before;
    let undelivered = summary.sent - summary.delivered;
    assert!(
        undelivered > 0,
        "the kill left messages undelivered: {summary:?}"
    );
    #[expect(
        clippy::cast_precision_loss,
        reason = "counts of one run are far below 2^52"
    )]
    let per_message = forwards as f64 / undelivered as f64;
    eprintln!("{forwards} forward attempts dropped by the proxy for {undelivered} undelivered");
    report("forwards_per_undelivered_message", per_message);
    assert!(
        per_message <= FORWARDS_PER_UNDELIVERED_TARGET,
        "{forwards} forward attempts for {undelivered} undelivered messages: {per_message} per \
         message (target {FORWARDS_PER_UNDELIVERED_TARGET})"
    );
}
