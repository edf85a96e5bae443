//! Outlier ejection through real nodes on virtual time (ARCHITECTURE §11, "Outlier
//! ejection"): of three servers one never answers; round-robin calls time out on it five
//! times in a row, then it gets no request for exactly 30 s, its probe times out and it
//! gets none for 60 s; the other two answer every call meanwhile.

mod common;

use common::{
    GROUP_B,
    rpc::{CALLER, SERVER, SERVER_2, answer, call, done, echo, requests, rpc_cluster_with},
};
use switchboard_core::{
    ids::NodeId,
    outcome::FailReason,
    rpc::CallOutcome,
    select::OutlierStats,
    time::{Duration, Instant},
};

/// A third server.
const SERVER_3: u64 = 0x705;

/// Calls `echo` from the caller once a second for `calls` seconds, each with a 1 s budget;
/// `SERVER` and `SERVER_3` answer at once, `SERVER_2` never does. Returns the instants of
/// the requests `SERVER_2` got (relative to the first call) and how many calls ended
/// `Unknown(Timeout)`.
fn one_silent_server(calls: u64, ejection: bool) -> (Vec<u64>, usize, OutlierStats) {
    let servers: [(u64, &[&str]); 4] = [
        (CALLER, &[]),
        (SERVER, &["echo"]),
        (SERVER_2, &["echo"]),
        (SERVER_3, &["echo"]),
    ];
    let mut sim = rpc_cluster_with(GROUP_B, &servers, |c| c.outlier_ejection = ejection);
    sim.advance(Duration::from_millis(100));
    let start = sim.now();
    let mut answered = [0, 0];
    let mut ids = Vec::new();
    for _ in 0..calls {
        ids.push(call(
            &mut sim,
            CALLER,
            echo("x").timeout(Duration::from_secs(1)),
        ));
        sim.deliver_until_idle();
        for (i, server) in [SERVER, SERVER_3].into_iter().enumerate() {
            let got = requests(&sim, server);
            for (_, request) in &got[answered[i]..] {
                assert!(answer(&mut sim, server, request.request, "x"));
            }
            answered[i] = got.len();
        }
        sim.advance(Duration::from_secs(1));
    }
    let at = |t: Instant| (t.as_nanos() - start.as_nanos()) / 1_000_000;
    let silent = requests(&sim, SERVER_2)
        .iter()
        .map(|(t, _)| at(*t))
        .collect();
    let timeouts = ids
        .iter()
        .filter(|&&id| {
            done(&sim, CALLER, id)
                .iter()
                .map(|(_, o)| o)
                .collect::<Vec<_>>()
                == [&CallOutcome::Unknown(FailReason::Timeout)]
        })
        .count();
    let stats = sim.node(NodeId(CALLER)).inspect().outlier_stats();
    (silent, timeouts, stats)
}

/// The silent server gets exactly 5 requests (every third call, round robin), each timing
/// out 1 s later; ejected by the 5th timeout at 14 s, it gets no request until 44 s (exactly
/// 30 s later): the probe, which times out at 45 s and ejects it again at once for 60 s, to
/// 105 s — then the next probe. Every call the others got was answered: 7 timeouts in 110
/// calls.
#[test]
fn a_server_failing_every_call_is_ejected_after_five_and_probed_after_thirty_seconds() {
    let (silent, timeouts, stats) = one_silent_server(110, true);
    assert_eq!(
        silent,
        [1_000, 4_000, 7_000, 10_000, 13_000, 44_000, 105_000]
    );
    assert_eq!(timeouts, 7);
    assert_eq!(
        (stats.ejections, stats.probes_failed, stats.restored),
        (3, 2, 0)
    );
    assert_eq!(stats.ejected, 1);
}

/// Switched off (`outlier_ejection = false`), the silent server keeps its share: every third
/// call of 110, each timing out, and nothing is counted.
#[test]
fn switched_off_the_silent_server_keeps_getting_every_third_call() {
    let (silent, timeouts, stats) = one_silent_server(110, false);
    let every_third: Vec<u64> = (0..37).map(|i| 1_000 + i * 3_000).collect();
    assert_eq!(silent, every_third);
    assert_eq!(timeouts, 37);
    assert_eq!(stats, OutlierStats::default());
}
