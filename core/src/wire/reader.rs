//! Streaming reassembly: a link delivers arbitrary chunks, [`FrameReader`] turns them into
//! frames.

use alloc::vec::Vec;

use super::decode::{DecodeError, Decoded, decode};
use crate::wire::Frame;

/// Reassembles frames from a byte stream cut at arbitrary points.
///
/// One reader per link. Feed every chunk the transport delivers to [`push`](Self::push), then
/// call [`next_frame`](Self::next_frame) until it returns `Ok(None)`. The reader buffers at
/// most one incomplete frame (which is never larger than `max_frame`) plus whatever the last
/// chunk carried; a length field is never trusted to reserve memory, bytes are stored only as
/// they arrive.
///
/// After an error the stream's frame boundaries are lost: the reader keeps returning the same
/// error and ignores further input; the link should be closed.
#[derive(Clone, Debug)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// Start of the first undecoded byte in `buf`.
    start: usize,
    max_frame: usize,
    failed: Option<DecodeError>,
}

impl FrameReader {
    /// A reader refusing frames longer than `max_frame` bytes.
    #[must_use]
    pub fn new(max_frame: usize) -> FrameReader {
        FrameReader {
            buf: Vec::new(),
            start: 0,
            max_frame,
            failed: None,
        }
    }

    /// Appends a chunk received from the link.
    ///
    /// Call whenever bytes arrive, then drain [`next_frame`](Self::next_frame). Bytes of
    /// frames already returned are released here (the buffer's capacity is kept).
    pub fn push(&mut self, chunk: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete frame, `Ok(None)` when more bytes are needed.
    ///
    /// The frame borrows from the reader; handle it (or copy what you keep) before the next
    /// call.
    ///
    /// # Errors
    /// The [`DecodeError`] of the first invalid frame, again on every later call.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, DecodeError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let pending = &self.buf[self.start..];
        match decode(pending, self.max_frame) {
            Ok(Decoded::Frame(frame, consumed)) => {
                self.start += consumed;
                Ok(Some(frame))
            }
            Ok(Decoded::NeedMore(_)) => Ok(None),
            Err(error) => {
                self.failed = Some(error.clone());
                Err(error)
            }
        }
    }

    /// Bytes received but not yet returned as frames.
    #[must_use]
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The maximum frame length this reader accepts.
    #[must_use]
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// Whether the reader has failed (see [`next_frame`](Self::next_frame)).
    #[must_use]
    pub fn has_failed(&self) -> bool {
        self.failed.is_some()
    }
}
