//! The RPC workload of the seeded chaos run (`Faults::rpc`, on in `Faults::all`): calls,
//! serves, cancels and broadcasts among every fault kind, with the call ledger checked after
//! every op. A few seeds here; the seeds runner runs thousands.

use switchboard_core::sim::scenario::{Faults, Op, run_ops, run_seed};

#[test]
fn twenty_seeds_with_every_fault_and_calls_end_without_a_violation() {
    let (mut calls, mut replies, mut runs, mut broadcasts) = (0, 0, 0, 0);
    for seed in 0..20 {
        let report = run_seed(seed, Faults::all());
        assert!(
            report.violations.is_empty(),
            "seed {seed}: {:#?}",
            report.violations
        );
        calls += report.rpc.calls;
        replies += report.rpc.replies;
        runs += report.rpc.executed;
        broadcasts += report.rpc.broadcasts;
    }
    // The workload really calls: most calls reach a handler, and every reply is one run.
    assert!(
        calls > 100 && replies > 50 && broadcasts > 20,
        "{calls} {replies} {broadcasts}"
    );
    assert!(runs >= replies);
}

#[test]
fn the_mild_fault_set_makes_no_calls() {
    assert_eq!(run_seed(1, Faults::mild()).rpc.calls, 0);
}

/// The byte encoding of the `rpc_ops` fuzz target: opcodes `% 15`, 11 to 14 the RPC ops,
/// the others as `Op::decode_all` reads them.
#[test]
fn rpc_ops_decode_from_bytes_and_run_clean() {
    let bytes = [
        11, 3, 1, 1, 0, 50, 2, 0xf4, 0x01, 12, 0, 0x80, 13, 0, 1, 14, 3, 6, 4,
    ];
    let ops = Op::decode_with_rpc(&bytes);
    assert_eq!(
        ops,
        [
            Op::Call {
                from: 3,
                method: 1,
                select: 1,
                key: 0,
                timing: 50
            },
            Op::Advance { ms: 500 },
            Op::Serve {
                node: 0,
                method: 0x80,
                on: false
            },
            Op::Broadcast {
                from: 0,
                filter: 1,
                skip_self: true
            },
            Op::Cancel { from: 3 },
            Op::Kill { node: 4 },
        ]
    );
    let report = run_ops(&ops);
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert_eq!(report.rpc.calls, 1);
    assert_eq!(report.rpc.broadcasts, 1);
}
