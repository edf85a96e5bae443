//! Per-phase frame limits: which kinds a link may send at this point of its life, and how
//! large each may be.
//!
//! A link is not trusted until its handshake proved who is on the other side, so before that
//! a reader accepts only the handshake kinds, each with its own small maximum (a `Hello` is
//! well under 1 KiB), and refuses anything else from its header — a peer that announces a
//! 16 MiB `Hello` is refused after 6 bytes, not buffered. After the handshake the configured
//! `max_frame` applies to every kind. The registry's access phase allows a `Register` up to
//! the registry's record limit. [`FrameReader::set_limits`](super::FrameReader::set_limits)
//! switches a reader between phases between two frames.

use super::{FrameKind, HEADER_LEN, MAC_LEN, NONCE_LEN, PROOF_LEN};

/// Longest node name a handshake frame carries (bytes of UTF-8). Longer names are refused by
/// [`Config::validate`](crate::Config::validate).
pub const MAX_NAME_LEN: usize = 255;

/// Largest `Hello`: header, node, incarnation, versions, challenge (nonce and key id), a name
/// of [`MAX_NAME_LEN`] bytes.
pub const MAX_HELLO_LEN: usize = HEADER_LEN + 8 + 8 + 4 + NONCE_LEN + 1 + 4 + MAX_NAME_LEN;

/// Largest `HelloAck`: as a `Hello` plus the status byte and a proof.
pub const MAX_HELLO_ACK_LEN: usize =
    HEADER_LEN + 8 + 8 + 4 + 1 + NONCE_LEN + PROOF_LEN + 4 + MAX_NAME_LEN;

/// An `Auth` frame's length (it has no variable part).
pub const AUTH_LEN: usize = HEADER_LEN + 1 + MAC_LEN;

/// A `Bye` frame's length.
pub const BYE_LEN: usize = HEADER_LEN + 1;

/// A `Heartbeat` frame's length.
pub const HEARTBEAT_LEN: usize = HEADER_LEN + 16;

/// Kind codes are below this (the table is indexed by code).
const KIND_SLOTS: usize = 32;

/// Which frame kinds a reader accepts now, and the largest frame of each.
///
/// ```
/// use switchboard_core::wire::{FrameKind, FrameLimits, MAX_HELLO_LEN};
///
/// let before = FrameLimits::handshake();
/// assert_eq!(before.max_for(FrameKind::Hello), Some(MAX_HELLO_LEN));
/// assert_eq!(before.max_for(FrameKind::Data), None); // not before the handshake
/// assert!(before.max_len() < 1024);
///
/// let after = FrameLimits::up_to(1 << 20);
/// assert_eq!(after.max_for(FrameKind::Data), Some(1 << 20));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLimits {
    /// Largest frame per kind code; 0 = the kind is not accepted.
    max: [u32; KIND_SLOTS],
    /// The largest entry of `max` (what the length field is checked against before the kind
    /// byte arrives).
    largest: u32,
}

impl FrameLimits {
    /// Nothing accepted.
    #[must_use]
    pub const fn none() -> FrameLimits {
        FrameLimits {
            max: [0; KIND_SLOTS],
            largest: 0,
        }
    }

    /// Every kind, each up to `max_frame` bytes (a link after its handshake).
    #[must_use]
    pub const fn up_to(max_frame: usize) -> FrameLimits {
        let mut limits = FrameLimits::none();
        let mut i = 0;
        while i < FrameKind::ALL.len() {
            limits = limits.allow(FrameKind::ALL[i], max_frame);
            i += 1;
        }
        limits
    }

    /// A bus link before its handshake finished: `Hello`, `HelloAck`, `Auth` and `Bye`, each
    /// no larger than its largest valid encoding.
    #[must_use]
    pub const fn handshake() -> FrameLimits {
        FrameLimits::none()
            .allow(FrameKind::Hello, MAX_HELLO_LEN)
            .allow(FrameKind::HelloAck, MAX_HELLO_ACK_LEN)
            .allow(FrameKind::Auth, AUTH_LEN)
            .allow(FrameKind::Bye, BYE_LEN)
    }

    /// These limits, with `kind` accepted up to `max` bytes (replacing its previous limit).
    /// `max` is clamped to `u32::MAX`, the largest length a header can announce.
    #[must_use]
    pub const fn allow(mut self, kind: FrameKind, max: usize) -> FrameLimits {
        let max = if max > u32::MAX as usize {
            u32::MAX
        } else {
            max as u32
        };
        self.max[kind.code() as usize] = max;
        let mut largest = 0;
        let mut i = 0;
        while i < KIND_SLOTS {
            if self.max[i] > largest {
                largest = self.max[i];
            }
            i += 1;
        }
        self.largest = largest;
        self
    }

    /// The largest frame of `kind` accepted, `None` when the kind is not accepted now.
    #[must_use]
    pub const fn max_for(&self, kind: FrameKind) -> Option<usize> {
        match self.max[kind.code() as usize] {
            0 => None,
            max => Some(max as usize),
        }
    }

    /// The largest frame of any accepted kind.
    #[must_use]
    pub const fn max_len(&self) -> usize {
        self.largest as usize
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use super::*;
    use crate::{
        ids::NodeId,
        wire::{
            Auth, Bye, ByeReason, Challenge, Frame, Hello, HelloAck, Proof, VersionRange, encode,
        },
    };

    fn longest_name() -> alloc::string::String {
        "n".repeat(MAX_NAME_LEN)
    }

    #[test]
    fn the_handshake_maxima_are_the_largest_valid_encodings() {
        let name = longest_name();
        let hello = Frame::Hello(Hello {
            node: NodeId(u64::MAX),
            incarnation: u64::MAX,
            versions: VersionRange { min: 1, max: 1 },
            name: &name,
            challenge: Some(Challenge {
                nonce: [7; NONCE_LEN],
                key_id: 9,
            }),
        });
        let ack = Frame::HelloAck(HelloAck {
            node: NodeId(1),
            incarnation: 2,
            versions: VersionRange { min: 1, max: 1 },
            name: &name,
            nonce: Some([1; NONCE_LEN]),
            proof: Some(Proof {
                key_id: 1,
                mac: [2; MAC_LEN],
            }),
            result: Ok(()),
        });
        let auth = Frame::Auth(Auth {
            proof: Proof {
                key_id: 1,
                mac: [3; MAC_LEN],
            },
        });
        let bye = Frame::Bye(Bye {
            reason: ByeReason::Shutdown,
        });
        let mut out = Vec::new();
        assert_eq!(encode(&hello, &mut out), Ok(MAX_HELLO_LEN));
        out.clear();
        assert_eq!(encode(&ack, &mut out), Ok(MAX_HELLO_ACK_LEN));
        out.clear();
        assert_eq!(encode(&auth, &mut out), Ok(AUTH_LEN));
        out.clear();
        assert_eq!(encode(&bye, &mut out), Ok(BYE_LEN));
        assert_eq!(MAX_HELLO_LEN, 320);
        assert_eq!(MAX_HELLO_ACK_LEN, 353);
        assert_eq!(FrameLimits::handshake().max_len(), MAX_HELLO_ACK_LEN);
    }

    #[test]
    fn allow_replaces_and_the_largest_follows() {
        let limits = FrameLimits::none()
            .allow(FrameKind::Register, 1000)
            .allow(FrameKind::Bye, 9);
        assert_eq!(limits.max_len(), 1000);
        let limits = limits.allow(FrameKind::Register, 5);
        assert_eq!(limits.max_len(), 9);
        assert_eq!(limits.max_for(FrameKind::Register), Some(5));
        assert_eq!(limits.max_for(FrameKind::Data), None);
        assert_eq!(FrameLimits::none().max_len(), 0);
        assert_eq!(
            FrameLimits::up_to(usize::MAX).max_for(FrameKind::Data),
            Some(u32::MAX as usize)
        );
    }

    #[test]
    fn a_reader_in_the_handshake_phase_refuses_from_the_header() {
        use crate::wire::{DecodeError, FrameReader};
        // A 16 MiB `Hello` announced: refused from its 4 length bytes, nothing buffered.
        let mut reader = FrameReader::with_limits(FrameLimits::handshake());
        reader.push(&(16u32 << 20).to_le_bytes());
        assert_eq!(
            reader.next_frame_bytes(),
            Err(DecodeError::FrameTooLarge {
                len: 16 << 20,
                max: MAX_HELLO_ACK_LEN
            })
        );
        // A `Hello` of 340 bytes (under the phase's largest, over a `Hello`'s): refused once
        // the kind byte is there.
        let mut reader = FrameReader::with_limits(FrameLimits::handshake());
        reader.push(&[84, 1, 0, 0, 1, FrameKind::Hello.code()]);
        assert_eq!(
            reader.next_frame_bytes(),
            Err(DecodeError::FrameTooLarge {
                len: 340,
                max: MAX_HELLO_LEN
            })
        );
        // A small `Data` frame before the handshake: refused by kind.
        let mut reader = FrameReader::with_limits(FrameLimits::handshake());
        reader.push(&[45, 0, 0, 0, 1, FrameKind::Data.code()]);
        assert_eq!(
            reader.next_frame_bytes(),
            Err(DecodeError::KindNotAllowed {
                kind: FrameKind::Data
            })
        );
        // Switched to the up phase between frames: the same bytes are a frame again.
        let mut reader = FrameReader::with_limits(FrameLimits::handshake());
        let bye = Frame::Bye(Bye {
            reason: ByeReason::Shutdown,
        });
        let mut out = Vec::new();
        encode(&bye, &mut out).unwrap();
        reader.push(&out);
        reader.push(&[9, 0, 0, 0, 1, FrameKind::Bye.code(), 0, 0, 1]);
        assert_eq!(reader.next_frame(), Ok(Some(bye.clone())));
        reader.set_limits(FrameLimits::none().allow(FrameKind::Ping, 16));
        assert_eq!(
            reader.next_frame(),
            Err(DecodeError::KindNotAllowed {
                kind: FrameKind::Bye
            })
        );
    }
}
