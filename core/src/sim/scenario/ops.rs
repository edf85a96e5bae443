//! The operations a chaos run applies, how the seeded generator picks them, and how the
//! `node_ops` fuzz target decodes them from raw bytes.

use alloc::vec::Vec;

use super::Faults;
use crate::{rng::Rng, select::Mode};

/// How many selection modes a workload chooses from.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a handful of modes, far below 256"
)]
const MODES: u8 = Mode::ALL.len() as u8;

/// One step of a chaos run. Node operands are indices into the run's current member lists,
/// taken modulo their length, so every value is valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A tagged send from member `from`: `kind` indexes [`Mode::ALL`] (by id or name of member
    /// `to`, by hash key `to`, round robin, random, least outstanding; see
    /// `scenario::select_of`); `filler` payload bytes after the tag.
    Send {
        /// Sender (index into every node).
        from: u8,
        /// Selection mode: an index into [`Mode::ALL`].
        kind: u8,
        /// Target member or hash key.
        to: u8,
        /// Filler bytes.
        filler: u8,
    },
    /// Let virtual time pass.
    Advance {
        /// Milliseconds.
        ms: u16,
    },
    /// Break every link between two members (a lost stream).
    Cut {
        /// One end.
        a: u8,
        /// Other end.
        b: u8,
    },
    /// Cut the members whose bit is set in `mask` off from the rest, until `Heal`.
    Partition {
        /// Member bit set.
        mask: u16,
    },
    /// End every partition.
    Heal,
    /// Refuse dials from one member to another for `ms` (their links drop now): a path
    /// failure while both live ([`Sim::fail_path`](crate::sim::Sim::fail_path)).
    PathFailure {
        /// The member whose dials are refused.
        from: u8,
        /// The member it cannot reach.
        to: u8,
        /// Milliseconds.
        ms: u16,
    },
    /// Kill a member (it is restarted by `Restart` or at the end).
    Kill {
        /// Member.
        node: u8,
    },
    /// Restart a member (a new incarnation; it re-registers).
    Restart {
        /// Member.
        node: u8,
    },
    /// Set the latency between two members.
    Latency {
        /// One end.
        a: u8,
        /// Other end.
        b: u8,
        /// Milliseconds.
        ms: u8,
    },
    /// A new proxy joins; the leaves whose bit is set in `mask` move under it.
    ScaleOut {
        /// Leaf bit set.
        mask: u8,
    },
    /// A proxy leaves: its leaves move to another proxy; it is removed gracefully (records
    /// deleted, then killed) or dies first (`die`).
    ScaleIn {
        /// Proxy.
        proxy: u8,
        /// Dies before its leaves move.
        die: bool,
    },
    /// Move one leaf under a proxy.
    MoveLeaf {
        /// Leaf.
        leaf: u8,
        /// Proxy.
        proxy: u8,
    },
    /// The registry server dies and a new one (a new epoch) starts `down_ms` later (registry
    /// machines only).
    RegistryRestart {
        /// Milliseconds without a registry.
        down_ms: u16,
    },
    /// A member's registry link drops (registry machines only).
    RegistryCut {
        /// Member.
        node: u8,
    },
    /// A call from member `from` of method `m{method % 3}` (leaves serve `m0` or `m1` at
    /// start; nobody serves `m2` until a `Serve`); `select` indexes [`Mode::ALL`] (the node
    /// or name of member `key`, hash by `key`, round robin, random, least outstanding); `timing` picks the timeout
    /// (500 ms + 20 ms × (timing % 200)) and the grace (a quarter, half or all of it).
    Call {
        /// Caller (index into every node).
        from: u8,
        /// Method index.
        method: u8,
        /// Selection mode.
        select: u8,
        /// Hash key or member index.
        key: u8,
        /// Timeout and grace.
        timing: u8,
    },
    /// Leaf `node` starts (`on`) or stops serving `m{method % 3}`, and publishes its record.
    Serve {
        /// Leaf index.
        node: u8,
        /// Method index.
        method: u8,
        /// Serve or unserve.
        on: bool,
    },
    /// Member `from` broadcasts to every node (`filter` even) or to the servers of
    /// `m{filter / 2 % 3}`, skipping itself when `skip_self`.
    Broadcast {
        /// Sender.
        from: u8,
        /// Recipients.
        filter: u8,
        /// Leave the sender out.
        skip_self: bool,
    },
    /// Member `from` cancels its oldest open call, if any.
    Cancel {
        /// Caller.
        from: u8,
    },
}

impl Op {
    /// Decodes a sequence of ops from bytes: one opcode byte then its operands; a truncated
    /// tail is ignored. Every byte string decodes.
    #[must_use]
    pub fn decode_all(data: &[u8]) -> Vec<Op> {
        let mut ops = Vec::new();
        let mut i = 0;
        let byte = |i: &mut usize| -> Option<u8> {
            let b = data.get(*i).copied();
            *i += 1;
            b
        };
        while let Some(code) = byte(&mut i) {
            let op = match code % 11 {
                0 | 1 => {
                    let (Some(from), Some(kind), Some(to), Some(filler)) =
                        (byte(&mut i), byte(&mut i), byte(&mut i), byte(&mut i))
                    else {
                        break;
                    };
                    Op::Send {
                        from,
                        kind: kind % MODES,
                        to,
                        filler: filler % 64,
                    }
                }
                2 => {
                    let (Some(a), Some(b)) = (byte(&mut i), byte(&mut i)) else {
                        break;
                    };
                    Op::Advance {
                        ms: u16::from_le_bytes([a, b]) % 4000,
                    }
                }
                3 => {
                    let (Some(a), Some(b)) = (byte(&mut i), byte(&mut i)) else {
                        break;
                    };
                    Op::Cut { a, b }
                }
                4 => {
                    let (Some(a), Some(b)) = (byte(&mut i), byte(&mut i)) else {
                        break;
                    };
                    Op::Partition {
                        mask: u16::from_le_bytes([a, b]),
                    }
                }
                5 => Op::Heal,
                6 => {
                    let Some(node) = byte(&mut i) else { break };
                    Op::Kill { node }
                }
                7 => {
                    let Some(node) = byte(&mut i) else { break };
                    Op::Restart { node }
                }
                8 => {
                    let (Some(a), Some(b), Some(ms)) = (byte(&mut i), byte(&mut i), byte(&mut i))
                    else {
                        break;
                    };
                    Op::Latency { a, b, ms: ms % 60 }
                }
                9 => {
                    let Some(mask) = byte(&mut i) else { break };
                    Op::ScaleOut { mask }
                }
                _ => {
                    let (Some(p), Some(x)) = (byte(&mut i), byte(&mut i)) else {
                        break;
                    };
                    if x & 0x80 == 0 {
                        Op::ScaleIn {
                            proxy: p,
                            die: x & 1 == 1,
                        }
                    } else {
                        Op::MoveLeaf { leaf: x, proxy: p }
                    }
                }
            };
            ops.push(op);
        }
        ops
    }

    /// [`decode_all`](Self::decode_all) with the RPC workload's ops as well (the `rpc_ops`
    /// fuzz target): opcodes `% 15`, 11 to 14 being `Call`, `Serve`, `Broadcast`, `Cancel`.
    #[must_use]
    pub fn decode_with_rpc(data: &[u8]) -> Vec<Op> {
        let mut ops = Vec::new();
        let mut i = 0;
        while i < data.len() {
            let code = data[i] % 15;
            let rest = &data[i + 1..];
            let take = |n: usize| rest.get(..n);
            let (op, used) = match code {
                11 => {
                    let Some(&[from, method, select, key, timing]) = take(5) else {
                        break;
                    };
                    let op = Op::Call {
                        from,
                        method,
                        select,
                        key,
                        timing,
                    };
                    (op, 5)
                }
                12 => {
                    let Some(&[node, method]) = take(2) else {
                        break;
                    };
                    let op = Op::Serve {
                        node,
                        method,
                        on: method & 0x80 == 0,
                    };
                    (op, 2)
                }
                13 => {
                    let Some(&[from, filter]) = take(2) else {
                        break;
                    };
                    let op = Op::Broadcast {
                        from,
                        filter,
                        skip_self: filter & 0x80 == 0,
                    };
                    (op, 2)
                }
                14 => {
                    let Some(&[from]) = take(1) else { break };
                    (Op::Cancel { from }, 1)
                }
                _ => {
                    // One of the other ops: decode it alone from its own bytes.
                    let mut one = Op::decode_all(&data[i..]);
                    if one.is_empty() {
                        break;
                    }
                    let op = one.swap_remove(0);
                    (op, op.encoded_operands())
                }
            };
            ops.push(op);
            i += 1 + used;
        }
        ops
    }

    /// How many operand bytes [`decode_all`](Self::decode_all) reads after this op's opcode.
    const fn encoded_operands(self) -> usize {
        match self {
            Op::Send { .. } => 4,
            Op::Advance { .. } | Op::Cut { .. } | Op::Partition { .. } => 2,
            // Never decoded from bytes.
            Op::Heal
            | Op::RegistryRestart { .. }
            | Op::RegistryCut { .. }
            | Op::PathFailure { .. } => 0,
            Op::Kill { .. } | Op::Restart { .. } | Op::ScaleOut { .. } => 1,
            Op::Latency { .. } => 3,
            Op::ScaleIn { .. } | Op::MoveLeaf { .. } => 2,
            Op::Call { .. } => 5,
            Op::Serve { .. } | Op::Broadcast { .. } => 2,
            Op::Cancel { .. } => 1,
        }
    }

    /// The next op of a seeded run with `faults` enabled: mostly sends and short waits, a
    /// fault now and then.
    pub(super) fn generate(rng: &mut Rng, faults: &Faults) -> Op {
        let b = |rng: &mut Rng| rng.below(256) as u8;
        loop {
            let roll = rng.below(1000);
            let op = match roll {
                450..=504 if faults.rpc => Op::Call {
                    from: b(rng),
                    method: b(rng),
                    select: b(rng),
                    key: b(rng),
                    timing: b(rng),
                },
                505..=519 if faults.rpc => Op::Serve {
                    node: b(rng),
                    method: b(rng),
                    on: rng.below(3) != 0,
                },
                520..=534 if faults.rpc => Op::Broadcast {
                    from: b(rng),
                    filter: b(rng),
                    skip_self: rng.below(2) == 0,
                },
                535..=549 if faults.rpc => Op::Cancel { from: b(rng) },
                0..=549 => Op::Send {
                    from: b(rng),
                    kind: rng.below(u64::from(MODES)) as u8,
                    to: b(rng),
                    filler: rng.below(48) as u8,
                },
                880..=892 if faults.path_failures => Op::PathFailure {
                    from: b(rng),
                    to: b(rng),
                    ms: rng.in_range(50, 3_000) as u16,
                },
                550..=892 => Op::Advance {
                    ms: rng.in_range(1, 300) as u16,
                },
                893..=896 if faults.registry_restarts => Op::RegistryCut { node: b(rng) },
                897..=899 if faults.registry_restarts => Op::RegistryRestart {
                    down_ms: rng.below(3000) as u16,
                },
                900..=929 if faults.link_breaks => Op::Cut {
                    a: b(rng),
                    b: b(rng),
                },
                930..=939 if faults.partitions => Op::Partition {
                    mask: rng.below(1 << 16) as u16,
                },
                940..=954 if faults.partitions => Op::Heal,
                955..=962 if faults.kills => Op::Kill { node: b(rng) },
                963..=974 if faults.kills => Op::Restart { node: b(rng) },
                975..=984 if faults.slow_paths => Op::Latency {
                    a: b(rng),
                    b: b(rng),
                    ms: rng.below(60) as u8,
                },
                985..=989 if faults.scale => Op::ScaleOut { mask: b(rng) },
                990..=994 if faults.scale => Op::ScaleIn {
                    proxy: b(rng),
                    die: rng.below(2) == 1,
                },
                995..=999 if faults.scale => Op::MoveLeaf {
                    leaf: b(rng),
                    proxy: b(rng),
                },
                _ => continue,
            };
            return op;
        }
    }
}
