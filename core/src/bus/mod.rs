//! Bus: the protocol state machines that run on top of links — the handshake, heartbeats and
//! acknowledged, deduplicated, ordered delivery per stream.
//!
//! [`links`] is the link table: every connection from dial or accept through the handshake to
//! close, its frame reader, heartbeat, inbound delivery with coalesced acks, and relaying (the
//! hop comes from the connector). [`handshake`] judges a peer's `Hello`/`HelloAck` (id,
//! protocol versions; the cluster-key proof they carry is [`crate::auth`]); [`heartbeat`]
//! decides when a silent link gets a `Ping` and when it is dead; [`stream`] defines how
//! messages are numbered per `src → dst` stream and filters duplicates and gaps on the
//! receiving side (the sender keeps its messages until acknowledged in each target's outbox,
//! [`crate::endpoint`]). See ARCHITECTURE §9 for the contract: `Delivered` means acknowledged
//! by the target; a message given up after it was transmitted ends `Unknown(reason)`; one
//! never transmitted ends `Failed(reason)`.

pub mod handshake;
pub mod heartbeat;
pub mod links;
pub mod stream;
