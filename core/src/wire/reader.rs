//! Streaming reassembly: a link delivers arbitrary chunks, [`FrameReader`] turns them into
//! frames.

use bytes::{Buf, Bytes, BytesMut};

use super::{
    FrameLimits, RecordCache,
    decode::{DecodeError, Decoded, Limit, decode_checked, frame_len_checked},
};
use crate::wire::Frame;

/// Reassembles frames from a byte stream cut at arbitrary points.
///
/// One reader per link. Feed every chunk the transport delivers to
/// [`push_bytes`](Self::push_bytes) (owned) or [`push`](Self::push) (borrowed), then call
/// [`next_frame_bytes`](Self::next_frame_bytes) (each frame as an owned slice) or
/// [`next_frame`](Self::next_frame) (each frame decoded, borrowing from the reader) until it
/// returns `Ok(None)`. The reader buffers at most one incomplete frame (which is never larger
/// than `max_frame`) plus whatever the last chunk carried; a length field is never trusted to
/// reserve memory, bytes are stored only as they arrive.
///
/// **Copies.** An owned chunk is kept as it is while it is all the reader holds: the frames
/// cut from it are slices of it, so a payload reaches the application without a copy. Only a
/// frame that spans chunks is copied, once, into the reader's spill buffer (whose frames are
/// then slices of that buffer). A borrowed chunk is always copied into the spill buffer.
///
/// After an error the stream's frame boundaries are lost: the reader keeps returning the same
/// error and ignores further input; the link should be closed.
#[derive(Clone, Debug)]
pub struct FrameReader {
    /// The undecoded bytes of the last owned chunk, while they are all the reader holds.
    head: Bytes,
    /// The undecoded bytes once a frame spans chunks (or of borrowed chunks).
    spill: BytesMut,
    /// Bytes at the start of the held bytes already returned by [`next_frame`](Self::next_frame)
    /// (released at the next push or cut).
    returned: usize,
    limits: FrameLimits,
    failed: Option<DecodeError>,
    /// The most the spill buffer has held room for since it was last given back.
    spill_room: usize,
}

/// Spill room [`FrameReader::push`] keeps once the spill buffer is empty again; a larger
/// buffer (a registry snapshot's frames, up to a MiB) is given back, not held for the
/// connection's life.
const KEEP_SPILL: usize = 64 * 1024;

impl FrameReader {
    /// A reader refusing frames longer than `max_frame` bytes.
    #[must_use]
    pub fn new(max_frame: usize) -> FrameReader {
        FrameReader::with_limits(FrameLimits::up_to(max_frame))
    }

    /// A reader accepting only the kinds `limits` accepts, each up to its own maximum (a
    /// link before its handshake: [`FrameLimits::handshake`]).
    #[must_use]
    pub fn with_limits(limits: FrameLimits) -> FrameReader {
        FrameReader {
            head: Bytes::new(),
            spill: BytesMut::new(),
            returned: 0,
            limits,
            failed: None,
            spill_room: 0,
        }
    }

    /// Changes the limits for the frames not yet returned (a link whose handshake just
    /// finished: [`FrameLimits::up_to`] its `max_frame`). Bytes already buffered are checked
    /// against the new limits when their frame is cut.
    pub fn set_limits(&mut self, limits: FrameLimits) {
        self.limits = limits;
    }

    /// The limits in force.
    #[must_use]
    pub fn limits(&self) -> &FrameLimits {
        &self.limits
    }

    /// Appends a chunk received from the link, copying it.
    ///
    /// Call whenever bytes arrive, then drain [`next_frame`](Self::next_frame). Bytes of
    /// frames already returned are released here (the buffer's capacity is kept).
    pub fn push(&mut self, chunk: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        self.release();
        self.give_back_idle_spill();
        self.spill_head();
        self.spill_extend(chunk);
    }

    /// Appends to the spill buffer, noting its room.
    fn spill_extend(&mut self, bytes: &[u8]) {
        self.spill.extend_from_slice(bytes);
        self.spill_room = self.spill_room.max(self.spill.capacity());
    }

    /// Appends an owned chunk received from the link; while nothing else is held it is kept
    /// as it is, so the frames cut from it by [`next_frame_bytes`](Self::next_frame_bytes)
    /// are slices of it (no copy).
    pub fn push_bytes(&mut self, chunk: Bytes) {
        if self.failed.is_some() || chunk.is_empty() {
            return;
        }
        self.release();
        if self.head.is_empty() && self.spill.is_empty() {
            self.head = chunk;
        } else {
            self.spill_head();
            self.spill_extend(&chunk);
        }
    }

    /// The next complete frame as an owned slice of the received bytes (decode it with
    /// [`decode`](super::decode)), `Ok(None)` when more bytes are needed. Only the header is
    /// checked here; the caller's decode checks the body.
    ///
    /// # Errors
    /// The [`DecodeError`] of the first invalid header, again on every later call.
    pub fn next_frame_bytes(&mut self) -> Result<Option<Bytes>, DecodeError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        self.release();
        match frame_len_checked(self.pending(), Limit::Table(&self.limits)) {
            Ok(None) => Ok(None),
            Ok(Some(len)) if self.head.is_empty() => Ok(Some(self.spill.split_to(len).freeze())),
            Ok(Some(len)) => Ok(Some(self.head.split_to(len))),
            Err(error) => {
                self.failed = Some(error.clone());
                Err(error)
            }
        }
    }

    /// The next complete frame, `Ok(None)` when more bytes are needed.
    ///
    /// The frame borrows from the reader; handle it (or copy what you keep) before the next
    /// call.
    ///
    /// # Errors
    /// The [`DecodeError`] of the first invalid frame, again on every later call.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, DecodeError> {
        self.next_frame_with(None)
    }

    /// [`next_frame`](Self::next_frame), taking the registry records of `Put` and `Snapshot`
    /// frames from `records` when it holds their bytes (and keeping the new ones there): the
    /// registry clients of one process, handed the same cache, decode each record once
    /// between them. The frames are the same as [`next_frame`](Self::next_frame)'s.
    ///
    /// # Errors
    /// As [`next_frame`](Self::next_frame).
    pub fn next_frame_cached(
        &mut self,
        records: &mut RecordCache,
    ) -> Result<Option<Frame<'_>>, DecodeError> {
        self.next_frame_with(Some(records))
    }

    /// [`next_frame`](Self::next_frame) or
    /// [`next_frame_cached`](Self::next_frame_cached).
    pub(crate) fn next_frame_with(
        &mut self,
        records: Option<&mut RecordCache>,
    ) -> Result<Option<Frame<'_>>, DecodeError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let returned = self.returned;
        let held = if self.head.is_empty() {
            &self.spill[..]
        } else {
            &self.head[..]
        };
        match decode_checked(&held[returned..], Limit::Table(&self.limits), records) {
            Ok(Decoded::Frame(frame, consumed)) => {
                self.returned += consumed;
                Ok(Some(frame))
            }
            Ok(Decoded::NeedMore(_)) => Ok(None),
            Err(error) => {
                self.failed = Some(error.clone());
                Err(error)
            }
        }
    }

    /// The held bytes not yet returned as frames.
    fn pending(&self) -> &[u8] {
        let held = if self.head.is_empty() {
            &self.spill[..]
        } else {
            &self.head[..]
        };
        &held[self.returned..]
    }

    /// Drops the bytes of frames [`next_frame`](Self::next_frame) returned.
    #[inline]
    fn release(&mut self) {
        if self.returned == 0 {
            return;
        }
        if self.head.is_empty() {
            self.spill.advance(self.returned);
        } else {
            self.head.advance(self.returned);
        }
        self.returned = 0;
    }

    /// Gives back a spill buffer larger than [`KEEP_SPILL`] once it is empty: on the copying
    /// path ([`push`](Self::push): registry connections, mostly idle between bursts) only. A
    /// link pushing owned chunks ([`push_bytes`](Self::push_bytes)) spills a frame that spans
    /// reads again and again under load, and keeps its buffer.
    fn give_back_idle_spill(&mut self) {
        if self.spill.is_empty() && self.spill_room > KEEP_SPILL {
            self.spill = BytesMut::new();
            self.spill_room = 0;
        }
    }

    /// Moves the held owned chunk's undecoded bytes into the spill buffer (a frame spans
    /// chunks: its bytes must be contiguous).
    fn spill_head(&mut self) {
        if !self.head.is_empty() {
            let head = core::mem::take(&mut self.head);
            self.spill_extend(&head);
        }
    }

    /// Bytes of buffer the reader holds room for (received bytes included): memory
    /// accounting.
    #[must_use]
    pub fn held_capacity(&self) -> usize {
        self.spill.capacity() + self.head.len()
    }

    /// Bytes received but not yet returned as frames.
    #[must_use]
    pub fn buffered(&self) -> usize {
        self.pending().len()
    }

    /// The maximum frame length this reader accepts now (of any kind).
    #[must_use]
    pub fn max_frame(&self) -> usize {
        self.limits.max_len()
    }

    /// Whether the reader has failed (see [`next_frame`](Self::next_frame)).
    #[must_use]
    pub fn has_failed(&self) -> bool {
        self.failed.is_some()
    }
}
