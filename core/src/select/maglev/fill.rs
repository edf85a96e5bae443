//! The two fills of a Maglev table, resumable: a fill can stop as soon as one given slot has
//! been claimed and continue later exactly where it stopped. Slots are never reassigned
//! during a fill, so a slot claimed early already holds its final owner, and a fill stopped
//! and resumed any number of times gives the table a fill run in one go gives.
//!
//! The selector uses this to answer a lookup right after a rebuild without filling the whole
//! table: the balanced fill's cost is concentrated in its last rounds (a node hunts through
//! ever more claimed slots), so filling until a random slot is claimed costs about `M`
//! probes against `M × ln(M/N)` for the whole table.

use alloc::vec::Vec;

use super::{EMPTY, Permutation};

/// Where a fill stands between two of its turns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Progress {
    /// Slots claimed so far.
    filled: u32,
    /// The next turn: the balanced fill's node index, the stable fill's position in the list
    /// of nodes still under the cap.
    turn: usize,
    /// Stable fill: how many entries of that list this round has kept so far.
    kept: usize,
}

/// A fill's buffers: the table, each node's next slot, and (stable fill only) the slots each
/// node owns and the nodes still under the cap.
pub(super) struct Buffers<'a> {
    pub(super) table: &'a mut Vec<u32>,
    pub(super) cursors: &'a mut Vec<u32>,
    pub(super) counts: &'a mut Vec<u32>,
    pub(super) active: &'a mut Vec<u32>,
}

/// Empties the table (resized to `size`) and sets up the buffers of a fill over `nodes`;
/// `None` when there are no nodes (the table is then left empty, and complete).
pub(super) fn start(size: u32, nodes: &[Permutation], buf: &mut Buffers<'_>) -> Option<Progress> {
    buf.table.clear();
    if nodes.is_empty() {
        return None;
    }
    buf.table.resize(size as usize, EMPTY);
    buf.cursors.clear();
    buf.cursors.extend(nodes.iter().map(|p| p.offset));
    buf.counts.clear();
    buf.counts.resize(nodes.len(), 0);
    buf.active.clear();
    buf.active
        .extend(0..u32::try_from(nodes.len()).expect("a node count fits u32"));
    Some(Progress::default())
}

/// The balanced fill from `at`, the nodes taking turns in order, each claiming the next
/// empty slot of its permutation; stops once `target` (a slot index) is claimed or the table
/// is full. Returns where it stopped, `None` when the table is full.
pub(super) fn balanced(
    size: u32,
    nodes: &[Permutation],
    buf: &mut Buffers<'_>,
    mut at: Progress,
    target: Option<usize>,
) -> Option<Progress> {
    let (table, cursors) = (&mut *buf.table, &mut *buf.cursors);
    let n = u32::try_from(nodes.len()).expect("a node count fits u32");
    loop {
        // Whole rounds while one cannot fill the table (so every hunt ends), the target
        // checked once per round: claims past the target's in its round are claims the fill
        // makes anyway, so stopping at the round's end leaves a valid fill in progress.
        while at.turn == 0 && at.filled + n <= size {
            for ((p, cursor), owner) in nodes.iter().zip(cursors.iter_mut()).zip(0u32..) {
                claim(table, cursor, p.skip, size, owner);
            }
            at.filled += n;
            if at.filled == size {
                return None;
            }
            if target.is_some_and(|t| table[t] != EMPTY) {
                return Some(at);
            }
        }
        for i in at.turn..nodes.len() {
            let owner = u32::try_from(i).expect("a node index fits u32");
            let c = claim(table, &mut cursors[i], nodes[i].skip, size, owner);
            at.filled += 1;
            if at.filled == size {
                return None;
            }
            if target == Some(c as usize) {
                at.turn = i + 1;
                return Some(at);
            }
        }
        at.turn = 0;
    }
}

/// The stable fill from `at`: in each round every node under the cap `⌈size / n⌉ + 1`
/// offers the next slot of its permutation and takes it if empty (nodes in order), until the
/// table is full; stops early once `target` is claimed. Returns where it stopped, `None` when
/// the table is full. Ends: while a slot is empty some node is under the cap (`n` capped
/// nodes would own more than `size` slots), and that node's permutation reaches the slot
/// within `size` rounds.
pub(super) fn stable(
    size: u32,
    nodes: &[Permutation],
    buf: &mut Buffers<'_>,
    mut at: Progress,
    target: Option<usize>,
) -> Option<Progress> {
    let n = u32::try_from(nodes.len()).expect("a node count fits u32");
    let cap = size.div_ceil(n) + 1;
    let (table, cursors, counts, active) = (
        &mut *buf.table,
        &mut *buf.cursors,
        &mut *buf.counts,
        &mut *buf.active,
    );
    loop {
        // One round over the nodes under the cap, compacting the list in place: entries
        // before `kept` are this round's keepers, those from `turn` on still to offer.
        while at.turn < active.len() {
            let i = active[at.turn] as usize;
            at.turn += 1;
            let c = cursors[i];
            let claimed = table[c as usize] == EMPTY;
            if claimed {
                table[c as usize] = u32::try_from(i).expect("a node index fits u32");
                counts[i] += 1;
                at.filled += 1;
            }
            cursors[i] = step(c, nodes[i].skip, size);
            if counts[i] < cap {
                active[at.kept] = active[at.turn - 1];
                at.kept += 1;
            }
            if at.filled == size {
                return None;
            }
            if claimed && target == Some(c as usize) {
                return Some(at);
            }
        }
        active.truncate(at.kept);
        at.turn = 0;
        at.kept = 0;
    }
}

/// The balanced fill's turn of `owner`: from its `cursor`, the first empty slot of its
/// permutation becomes its own, and the cursor moves past it. Returns the slot. Terminates
/// while the table is not full: the permutation visits every slot.
#[inline]
fn claim(table: &mut [u32], cursor: &mut u32, skip: u32, size: u32, owner: u32) -> u32 {
    let mut c = *cursor;
    while table[c as usize] != EMPTY {
        c = step(c, skip, size);
    }
    table[c as usize] = owner;
    *cursor = step(c, skip, size);
    c
}

/// `(c + skip) mod size` for `c < size`, `skip < size`, without a division.
#[inline]
fn step(c: u32, skip: u32, size: u32) -> u32 {
    // No overflow: sizes are at most 2^24.
    let next = c + skip;
    if next >= size { next - size } else { next }
}
