//! A path failure is not a death, with real processes on loopback (docs/ARCHITECTURE.md §9.3):
//! a caller's and a message sender's links to a server go through our own TCP relay, which
//! ten times cuts every connection it carries and refuses new ones for 110–200 ms while
//! both processes live on (same incarnations, registry sessions intact). Eight `sleep` calls
//! run across all ten cuts: every one is replied, each handler ran once, and the messages
//! sent on the same path meanwhile are all delivered — none failed, none unknown.

mod process_support;

use std::{thread, time::Duration};

use process_support::{
    load::{LoadSpec, finish_load, spawn_load},
    relay::Relay,
    rpc_chaos::{MethodLoad, finish_method_load, served, server_spec, start_server},
};

/// Cuts, one every 2 s: the caller's first redial (1 s ± 20 %) is past the refusal.
const CUTS: u64 = 10;
const CUT_EVERY: Duration = Duration::from_secs(2);
/// Concurrent `sleep` calls, each sleeping past the last cut.
const CALLS: u64 = 8;
const SLEEP_MS: u64 = 23_000;

#[test]
fn ten_cuts_with_refused_redials_lose_no_call_and_no_message() {
    let registry = process_support::cluster::start_registry("registry", "127.0.0.1:0");
    let listen = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let relay = Relay::start(listen);
    let mut spec = server_spec(registry.addr, 1, "sleep");
    spec.listen = listen.to_string();
    spec.flags
        .extend(["--advertise".to_owned(), relay.addr.to_string()]);
    let server = start_server(spec);
    let calls = MethodLoad {
        registry: registry.addr,
        id: 700,
        method: "sleep".to_owned(),
        payload: SLEEP_MS.to_string(),
        concurrency: CALLS,
        count: CALLS,
        rate: None,
        outcomes_log: None,
    };
    let caller = calls.spawn();
    let messages = LoadSpec::to_name(registry.addr, "server-1", 701, 400, 20);
    let sender = spawn_load(&messages);
    // Let every call reach the handler before the first cut.
    thread::sleep(Duration::from_secs(1));
    let mut dropped = Vec::new();
    for i in 0..CUTS {
        let refuse = Duration::from_millis(110 + 10 * i);
        dropped.push(relay.cut_and_refuse(refuse));
        thread::sleep(CUT_EVERY);
    }
    let summary = finish_method_load(caller, Duration::from_secs(60));
    let sent = finish_load(sender, &messages);
    eprintln!(
        "figures: cuts {CUTS}, connections dropped per cut {dropped:?}; calls {} replied of \
         {CALLS}, handler runs {}; messages sent {} delivered {} failed {:?}",
        summary.replies,
        served(&server),
        sent.sent,
        sent.delivered,
        sent.failed
    );
    assert!(
        dropped.iter().all(|&n| n > 0),
        "every cut dropped a live connection (else it tested nothing): {dropped:?}"
    );
    assert_eq!(summary.replies, CALLS, "{}", summary.line);
    assert_eq!(summary.total(), CALLS, "{}", summary.line);
    assert_eq!(served(&server), CALLS, "each handler ran once");
    assert_eq!(sent.sent, 400);
    assert_eq!(sent.delivered, 400, "failed {:?}", sent.failed);
    assert!(
        sent.failed.is_empty(),
        "none failed, none unknown: {:?}",
        sent.failed
    );
}
