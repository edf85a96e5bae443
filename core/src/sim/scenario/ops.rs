//! The operations a chaos run applies, how the seeded generator picks them, and how the
//! `node_ops` fuzz target decodes them from raw bytes.

use alloc::vec::Vec;

use super::Faults;
use crate::rng::Rng;

/// One step of a chaos run. Node operands are indices into the run's current member lists,
/// taken modulo their length, so every value is valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A tagged send from member `from`: `kind` 0 by id (to member `to`), 1 by hash key `to`,
    /// 2 round robin, 3 by name (of member `to`); `filler` payload bytes after the tag.
    Send {
        /// Sender (index into every node).
        from: u8,
        /// Target kind.
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
                        kind: kind % 4,
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

    /// The next op of a seeded run with `faults` enabled: mostly sends and short waits, a
    /// fault now and then.
    pub(super) fn generate(rng: &mut Rng, faults: &Faults) -> Op {
        let b = |rng: &mut Rng| rng.below(256) as u8;
        loop {
            let roll = rng.below(1000);
            let op = match roll {
                0..=549 => Op::Send {
                    from: b(rng),
                    kind: rng.below(4) as u8,
                    to: b(rng),
                    filler: rng.below(48) as u8,
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
