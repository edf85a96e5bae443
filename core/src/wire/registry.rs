//! Bodies of the registry-protocol frames (`Register`, `Update`, `Snapshot`, `Put`).
//!
//! Records travel as libatapp JSON ([`DiscoveryInfo::to_json`], [`TopologyInfo::to_json`]),
//! each behind a `u32` length; a zero length means "no record" where a record is optional.
//! `Delete` and `Heartbeat` have only fixed fields and live with the link-level frames.

use alloc::vec::Vec;

use super::{
    decode::{Cursor, DecodeError, FLAG_IDENTITY_PROOF, FLAG_MORE, FLAG_WATCH},
    encode::{EncodeError, put_bytes, put_u64},
    frame::{Put, Register, RegistryEntry, Snapshot, Update},
};
use crate::{
    discovery::{DiscoveryInfo, IDENTITY_PROOF_LEN, IdentityProof, TopologyInfo},
    time::Duration,
};

/// Smallest encoded entry: incarnation, two revisions, flags and two record lengths.
pub(super) const ENTRY_MIN_LEN: usize = 8 + 8 + 8 + 1 + 4 + 4;

/// What an entry adds to its records' JSON at most: incarnation, two revisions, flags, the
/// session-loss age (only when lost) and two record lengths (41 bytes).
pub const ENTRY_OVERHEAD: usize = ENTRY_MIN_LEN + LOST_FOR_LEN;

/// The session-loss age of a suspect entry: whole milliseconds, `u64`.
const LOST_FOR_LEN: usize = 8;

/// What a `Register` adds to its records' JSON: header, incarnation, two record lengths and
/// an identity proof.
pub const REGISTER_OVERHEAD: usize = super::HEADER_LEN + 8 + 4 + 4 + IDENTITY_PROOF_LEN;

/// What an `Update` adds to its records' JSON: header, incarnation, two record lengths.
pub const UPDATE_OVERHEAD: usize = super::HEADER_LEN + 8 + 4 + 4;

/// What a `Put` adds to its entry: header, epoch, revision.
pub const PUT_OVERHEAD: usize = super::HEADER_LEN + 8 + 8;

/// What a `Snapshot` part adds to its entries: header, epoch, revision, count.
pub const SNAPSHOT_OVERHEAD: usize = super::HEADER_LEN + 8 + 8 + 4;

/// Entry flag: the node is inside disconnect protection; its session-loss age follows.
const ENTRY_SUSPECT: u8 = 1;

/// Entries reserved up front in a snapshot; larger snapshots grow as entries decode, so the
/// memory taken is always proportional to entries actually present.
const SNAPSHOT_PREALLOC: usize = 16;

pub(super) fn decode_register(
    cursor: &mut Cursor<'_>,
    flags: u16,
) -> Result<Register, DecodeError> {
    Ok(Register {
        incarnation: cursor.u64("incarnation")?,
        discovery: discovery(cursor, 0)?,
        topology: topology(cursor, 0)?,
        proof: if flags & FLAG_IDENTITY_PROOF == 0 {
            None
        } else {
            Some(IdentityProof(cursor.array::<IDENTITY_PROOF_LEN>("proof")?))
        },
        watch: flags & FLAG_WATCH != 0,
    })
}

pub(super) fn decode_update(cursor: &mut Cursor<'_>) -> Result<Update, DecodeError> {
    let incarnation = cursor.u64("incarnation")?;
    let discovery = match cursor.bytes("discovery")? {
        [] => None,
        json => Some(
            DiscoveryInfo::from_json(json).map_err(|error| DecodeError::Json {
                field: "discovery",
                error,
            })?,
        ),
    };
    Ok(Update {
        incarnation,
        discovery,
        topology: topology(cursor, 0)?,
    })
}

pub(super) fn decode_snapshot(
    cursor: &mut Cursor<'_>,
    flags: u16,
) -> Result<Snapshot, DecodeError> {
    let epoch = cursor.u64("epoch")?;
    let revision = cursor.u64("revision")?;
    let count = cursor.u32("entries")?;
    let remaining = cursor.remaining();
    let fits = usize::try_from(count).is_ok_and(|n| n <= remaining / ENTRY_MIN_LEN);
    if !fits {
        return Err(DecodeError::CountTooLarge {
            field: "entries",
            count,
            remaining,
        });
    }
    let count = count as usize; // checked above: fits in usize and in the bytes left
    let mut entries = Vec::with_capacity(count.min(SNAPSHOT_PREALLOC));
    for _ in 0..count {
        entries.push(entry(cursor)?);
    }
    Ok(Snapshot {
        epoch,
        revision,
        entries,
        more: flags & FLAG_MORE != 0,
    })
}

pub(super) fn decode_put(cursor: &mut Cursor<'_>) -> Result<Put, DecodeError> {
    Ok(Put {
        epoch: cursor.u64("epoch")?,
        revision: cursor.u64("revision")?,
        entry: entry(cursor)?,
    })
}

fn entry(cursor: &mut Cursor<'_>) -> Result<RegistryEntry, DecodeError> {
    let incarnation = cursor.u64("incarnation")?;
    let discovery_revision = cursor.u64("discovery_revision")?;
    let topology_revision = cursor.u64("topology_revision")?;
    let lost_for = match cursor.u8("entry_flags")? {
        0 => None,
        ENTRY_SUSPECT => Some(Duration::from_millis(cursor.u64("lost_for_ms")?)),
        code => {
            return Err(DecodeError::UnknownCode {
                field: "entry_flags",
                code,
            });
        }
    };
    Ok(RegistryEntry {
        incarnation,
        discovery: discovery(cursor, discovery_revision)?,
        topology: topology(cursor, topology_revision)?,
        lost_for,
    })
}

/// A required discovery record, stamped with `revision`.
fn discovery(cursor: &mut Cursor<'_>, revision: u64) -> Result<DiscoveryInfo, DecodeError> {
    DiscoveryInfo::from_json_at(cursor.bytes("discovery")?, revision).map_err(|error| {
        DecodeError::Json {
            field: "discovery",
            error,
        }
    })
}

/// An optional topology record (length 0 = none), stamped with `revision`.
fn topology(cursor: &mut Cursor<'_>, revision: u64) -> Result<Option<TopologyInfo>, DecodeError> {
    match cursor.bytes("topology")? {
        [] => Ok(None),
        json => TopologyInfo::from_json_at(json, revision)
            .map(Some)
            .map_err(|error| DecodeError::Json {
                field: "topology",
                error,
            }),
    }
}

/// Writes a `Register` body; returns its header flags.
pub(super) fn encode_register(register: &Register, out: &mut Vec<u8>) -> Result<u16, EncodeError> {
    put_u64(out, register.incarnation);
    put_discovery(out, Some(&register.discovery))?;
    put_topology(out, register.topology.as_ref())?;
    let watch = if register.watch { FLAG_WATCH } else { 0 };
    Ok(watch
        | match &register.proof {
            Some(proof) => {
                out.extend_from_slice(&proof.0);
                FLAG_IDENTITY_PROOF
            }
            None => 0,
        })
}

pub(super) fn encode_update(update: &Update, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    put_u64(out, update.incarnation);
    put_discovery(out, update.discovery.as_ref())?;
    put_topology(out, update.topology.as_ref())
}

/// Writes a `Snapshot` body; returns its header flags.
pub(super) fn encode_snapshot(snapshot: &Snapshot, out: &mut Vec<u8>) -> Result<u16, EncodeError> {
    put_u64(out, snapshot.epoch);
    put_u64(out, snapshot.revision);
    let count = u32::try_from(snapshot.entries.len()).map_err(|_| EncodeError::FrameTooLarge {
        len: snapshot.entries.len().saturating_mul(ENTRY_MIN_LEN),
        max: super::encode::MAX_ENCODABLE,
    })?;
    out.extend_from_slice(&count.to_le_bytes());
    for entry in &snapshot.entries {
        encode_entry(entry, out)?;
    }
    Ok(if snapshot.more { FLAG_MORE } else { 0 })
}

/// Encodes the snapshot of `entries` at `epoch` and `revision` as bounded parts: each part
/// holds the entries that fit in `max_part` bytes (at least one, so a part holding a single
/// entry larger than `max_part` is as large as that entry needs), every part but the last
/// with the "more parts follow" flag. No entries: one empty part. Each entry is serialized
/// once.
///
/// # Errors
/// [`EncodeError`] when an entry is not encodable (no identity).
pub fn encode_snapshot_parts(
    epoch: u64,
    revision: u64,
    entries: &[RegistryEntry],
    max_part: usize,
) -> Result<Vec<Vec<u8>>, EncodeError> {
    let mut parts = Vec::new();
    let mut body = Vec::new();
    let mut count: u32 = 0;
    let mut scratch = Vec::new();
    for entry in entries {
        scratch.clear();
        encode_entry(entry, &mut scratch)?;
        let full = SNAPSHOT_OVERHEAD + body.len() + scratch.len() > max_part;
        if count > 0 && (full || count == u32::MAX) {
            parts.push(snapshot_part(epoch, revision, count, &body, true)?);
            body.clear();
            count = 0;
        }
        body.extend_from_slice(&scratch);
        count += 1;
    }
    parts.push(snapshot_part(epoch, revision, count, &body, false)?);
    Ok(parts)
}

/// One encoded `Snapshot` part: header, epoch, revision, count, the encoded entries.
fn snapshot_part(
    epoch: u64,
    revision: u64,
    count: u32,
    entries: &[u8],
    more: bool,
) -> Result<Vec<u8>, EncodeError> {
    let len = SNAPSHOT_OVERHEAD + entries.len();
    let len32 = u32::try_from(len).map_err(|_| EncodeError::FrameTooLarge {
        len,
        max: super::encode::MAX_ENCODABLE,
    })?;
    let flags = if more { FLAG_MORE } else { 0 };
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&super::encode::header(
        len32,
        super::FrameKind::Snapshot,
        flags,
    ));
    put_u64(&mut out, epoch);
    put_u64(&mut out, revision);
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(entries);
    Ok(out)
}

/// The encoded length of `entry` in a `Snapshot` or `Put` (its records serialized to
/// measure them).
#[must_use]
pub fn entry_len(entry: &RegistryEntry) -> usize {
    ENTRY_MIN_LEN
        + entry.lost_for.map_or(0, |_| LOST_FOR_LEN)
        + entry.discovery.to_json().len()
        + entry.topology.as_ref().map_or(0, |t| t.to_json().len())
}

pub(super) fn encode_put(put: &Put, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    put_u64(out, put.epoch);
    put_u64(out, put.revision);
    encode_entry(&put.entry, out)
}

fn encode_entry(entry: &RegistryEntry, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    put_u64(out, entry.incarnation);
    put_u64(out, entry.discovery.revision);
    put_u64(out, entry.topology.as_ref().map_or(0, |t| t.revision));
    match entry.lost_for {
        None => out.push(0),
        Some(age) => {
            out.push(ENTRY_SUSPECT);
            put_u64(out, u64::try_from(age.as_millis()).unwrap_or(u64::MAX));
        }
    }
    put_discovery(out, Some(&entry.discovery))?;
    put_topology(out, entry.topology.as_ref())
}

/// A discovery record as JSON behind its length (`None` → length 0).
fn put_discovery(out: &mut Vec<u8>, info: Option<&DiscoveryInfo>) -> Result<(), EncodeError> {
    match info {
        None => put_bytes(out, &[]),
        Some(info) if !info.has_identity() => Err(EncodeError::NoIdentity { field: "discovery" }),
        Some(info) => put_bytes(out, &info.to_json()),
    }
}

/// A topology record as JSON behind its length (`None` → length 0).
fn put_topology(out: &mut Vec<u8>, info: Option<&TopologyInfo>) -> Result<(), EncodeError> {
    match info {
        None => put_bytes(out, &[]),
        Some(info) if !info.id.is_valid() => Err(EncodeError::NoIdentity { field: "topology" }),
        Some(info) => put_bytes(out, &info.to_json()),
    }
}
