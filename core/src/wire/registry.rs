//! Bodies of the registry-protocol frames (`Register`, `Update`, `Snapshot`, `Put`).
//!
//! Records travel as libatapp JSON ([`DiscoveryInfo::to_json`], [`TopologyInfo::to_json`]),
//! each behind a `u32` length; a zero length means "no record" where a record is optional.
//! `Delete` and `Heartbeat` have only fixed fields and live with the link-level frames.

use alloc::vec::Vec;

use super::{
    RecordCache,
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
        discovery: discovery(cursor, 0, None)?,
        topology: topology(cursor, 0, None)?,
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
        topology: topology(cursor, 0, None)?,
    })
}

pub(super) fn decode_snapshot(
    cursor: &mut Cursor<'_>,
    flags: u16,
    mut records: Option<&mut RecordCache>,
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
        entries.push(entry(cursor, records.as_deref_mut())?);
    }
    Ok(Snapshot {
        epoch,
        revision,
        entries,
        more: flags & FLAG_MORE != 0,
    })
}

pub(super) fn decode_put(
    cursor: &mut Cursor<'_>,
    records: Option<&mut RecordCache>,
) -> Result<Put, DecodeError> {
    Ok(Put {
        epoch: cursor.u64("epoch")?,
        revision: cursor.u64("revision")?,
        entry: entry(cursor, records)?,
    })
}

fn entry(
    cursor: &mut Cursor<'_>,
    mut records: Option<&mut RecordCache>,
) -> Result<RegistryEntry, DecodeError> {
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
    let discovery = discovery(cursor, discovery_revision, records.as_deref_mut())?;
    let topology = topology(cursor, topology_revision, records)?;
    Ok(RegistryEntry {
        incarnation,
        discovery,
        topology,
        lost_for,
    })
}

/// A required discovery record, stamped with `revision` (from `records` when it holds these
/// bytes).
fn discovery(
    cursor: &mut Cursor<'_>,
    revision: u64,
    records: Option<&mut RecordCache>,
) -> Result<DiscoveryInfo, DecodeError> {
    let json = cursor.bytes("discovery")?;
    match records {
        Some(records) => records.discovery(json, revision),
        None => DiscoveryInfo::from_json_at(json, revision),
    }
    .map_err(|error| DecodeError::Json {
        field: "discovery",
        error,
    })
}

/// An optional topology record (length 0 = none), stamped with `revision` (from `records`
/// when it holds these bytes).
fn topology(
    cursor: &mut Cursor<'_>,
    revision: u64,
    records: Option<&mut RecordCache>,
) -> Result<Option<TopologyInfo>, DecodeError> {
    let json = match cursor.bytes("topology")? {
        [] => return Ok(None),
        json => json,
    };
    match records {
        Some(records) => records.topology(json, revision),
        None => TopologyInfo::from_json_at(json, revision),
    }
    .map(Some)
    .map_err(|error| DecodeError::Json {
        field: "topology",
        error,
    })
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
    let writers = entries
        .iter()
        .map(|entry| move |out: &mut Vec<u8>| encode_entry(entry, out));
    snapshot_parts(epoch, revision, max_part, writers)
}

/// [`encode_snapshot_parts`] of entries whose records were serialized once
/// ([`EncodedRecords`]): each `(incarnation, lost_for, records)` is copied, not serialized.
///
/// # Errors
/// [`EncodeError::FrameTooLarge`] for a record longer than a length field holds.
pub fn encode_snapshot_parts_of<'a>(
    epoch: u64,
    revision: u64,
    entries: impl IntoIterator<Item = (u64, Option<Duration>, &'a EncodedRecords)>,
    max_part: usize,
) -> Result<Vec<Vec<u8>>, EncodeError> {
    let writers = entries.into_iter().map(|(incarnation, lost_for, records)| {
        move |out: &mut Vec<u8>| records.write_entry(incarnation, lost_for, out)
    });
    snapshot_parts(epoch, revision, max_part, writers)
}

/// The parts of a snapshot whose entries the `writers` append, one each (see
/// [`encode_snapshot_parts`]).
fn snapshot_parts<W: FnOnce(&mut Vec<u8>) -> Result<(), EncodeError>>(
    epoch: u64,
    revision: u64,
    max_part: usize,
    writers: impl Iterator<Item = W>,
) -> Result<Vec<Vec<u8>>, EncodeError> {
    let mut parts = Vec::new();
    let mut body = Vec::new();
    let mut count: u32 = 0;
    let mut scratch = Vec::new();
    for write in writers {
        scratch.clear();
        write(&mut scratch)?;
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
    EncodedRecords::of(&entry.discovery, entry.topology.as_ref())?.write_entry(
        entry.incarnation,
        entry.lost_for,
        out,
    )
}

/// A listed node's records serialized once, for a registry that sends them in many
/// snapshots and puts: each record's JSON and revision. The entry around them
/// (incarnation, session-loss age) is written per send ([`EncodedRecords::write_entry`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodedRecords {
    discovery: Vec<u8>,
    discovery_revision: u64,
    /// Empty: no topology record.
    topology: Vec<u8>,
    topology_revision: u64,
}

impl EncodedRecords {
    /// Serializes `discovery` and `topology`.
    ///
    /// # Errors
    /// [`EncodeError::NoIdentity`] for a discovery record with neither id nor name, or a
    /// topology record without an id.
    pub fn of(
        discovery: &DiscoveryInfo,
        topology: Option<&TopologyInfo>,
    ) -> Result<EncodedRecords, EncodeError> {
        Ok(EncodedRecords {
            discovery: discovery_json(Some(discovery))?,
            discovery_revision: discovery.revision,
            topology: topology_json(topology)?,
            topology_revision: topology.map_or(0, |t| t.revision),
        })
    }

    /// The encoded length of an entry of these records (`lost`: with a session-loss age).
    #[must_use]
    pub fn entry_len(&self, lost: bool) -> usize {
        ENTRY_MIN_LEN
            + if lost { LOST_FOR_LEN } else { 0 }
            + self.discovery.len()
            + self.topology.len()
    }

    /// Appends the entry of these records for a node of `incarnation` (`lost_for`: its
    /// session-loss age, if it is protected).
    ///
    /// # Errors
    /// [`EncodeError::FrameTooLarge`] for a record longer than a length field holds.
    pub fn write_entry(
        &self,
        incarnation: u64,
        lost_for: Option<Duration>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        put_u64(out, incarnation);
        put_u64(out, self.discovery_revision);
        put_u64(out, self.topology_revision);
        match lost_for {
            None => out.push(0),
            Some(age) => {
                out.push(ENTRY_SUSPECT);
                put_u64(out, u64::try_from(age.as_millis()).unwrap_or(u64::MAX));
            }
        }
        put_bytes(out, &self.discovery)?;
        put_bytes(out, &self.topology)
    }

    /// The whole `Put` frame of this entry at `epoch` and `revision`: what
    /// [`encode`](super::encode) writes for the `Put` of the same entry.
    ///
    /// # Errors
    /// [`EncodeError::FrameTooLarge`] for a frame longer than its length field holds.
    pub fn put_frame(
        &self,
        epoch: u64,
        revision: u64,
        incarnation: u64,
        lost_for: Option<Duration>,
    ) -> Result<Vec<u8>, EncodeError> {
        let len = PUT_OVERHEAD + self.entry_len(lost_for.is_some());
        let len32 = u32::try_from(len).map_err(|_| EncodeError::FrameTooLarge {
            len,
            max: super::encode::MAX_ENCODABLE,
        })?;
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&super::encode::header(len32, super::FrameKind::Put, 0));
        put_u64(&mut out, epoch);
        put_u64(&mut out, revision);
        self.write_entry(incarnation, lost_for, &mut out)?;
        Ok(out)
    }
}

/// A discovery record's JSON (`None` → empty).
fn discovery_json(info: Option<&DiscoveryInfo>) -> Result<Vec<u8>, EncodeError> {
    match info {
        None => Ok(Vec::new()),
        Some(info) if !info.has_identity() => Err(EncodeError::NoIdentity { field: "discovery" }),
        Some(info) => Ok(info.to_json()),
    }
}

/// A topology record's JSON (`None` → empty).
fn topology_json(info: Option<&TopologyInfo>) -> Result<Vec<u8>, EncodeError> {
    match info {
        None => Ok(Vec::new()),
        Some(info) if !info.id.is_valid() => Err(EncodeError::NoIdentity { field: "topology" }),
        Some(info) => Ok(info.to_json()),
    }
}

/// A discovery record as JSON behind its length (`None` → length 0).
fn put_discovery(out: &mut Vec<u8>, info: Option<&DiscoveryInfo>) -> Result<(), EncodeError> {
    put_bytes(out, &discovery_json(info)?)
}

/// A topology record as JSON behind its length (`None` → length 0).
fn put_topology(out: &mut Vec<u8>, info: Option<&TopologyInfo>) -> Result<(), EncodeError> {
    put_bytes(out, &topology_json(info)?)
}
