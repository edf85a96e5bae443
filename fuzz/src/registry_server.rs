//! Target `registry_server`: the registry server machine driven by many sessions at once,
//! authenticated and not — honest registrations and updates of every size around the limits,
//! raw bytes, announced frames of any length, heartbeats, closes and time — in any
//! interleaving.
//!
//! Input: one configuration byte (bit 0: cluster keys; bits 1–2: the record limits, small so
//! snapshots split into many parts), then operations until the input ends, each an opcode
//! byte and its arguments (see [`Op`]). Checked after every operation:
//!
//! * every frame the server sends decodes under the clients' default limit, is no larger than
//!   the server's `max_frame`, and a snapshot part no larger than `max_snapshot_part` (or one
//!   entry's frame, when a single entry is larger);
//! * every listed record keeps the record limits, and so does every `Put`;
//! * with keys, no connection registers before it proved the key;
//! * a live id changes incarnation (`TakenOver`) only for a `Register` proving the holder's
//!   identity secret — never for raw bytes, never for a register with a wrong proof.

use switchboard_core::{
    auth::{ClusterKey, ClusterKeys, Context, ROLE_DIALLER, Side, Transcript},
    bus::handshake::PROTOCOL_VERSIONS,
    discovery::{DiscoveryInfo, IdentityProof, published_identity},
    ids::NodeId,
    registry::server::{ConnId, RegistryServer, ServerConfig, ServerEvent, ServerOutput},
    time::{Duration, Instant},
    wire::{self, Decoded, ENTRY_OVERHEAD, Frame, FrameReader, SNAPSHOT_OVERHEAD},
};

/// The operations (opcode byte modulo 8).
#[derive(Clone, Copy, Debug)]
enum Op {
    /// Accept a connection (with keys: run the honest handshake when the argument is odd).
    Accept = 0,
    /// Register on a connection: id, incarnation, custom-data length, label bytes, proof kind.
    Register = 1,
    /// Raw bytes on a connection: a length byte, then that many bytes.
    Raw = 2,
    /// Close a connection.
    Close = 3,
    /// Advance the clock by the argument × 250 ms and fire the deadlines.
    Tick = 4,
    /// Update on a connection: custom-data length, label bytes.
    Update = 5,
    /// A heartbeat on a connection.
    Heartbeat = 6,
    /// A frame header announcing the little-endian `u32` that follows, and the kind byte.
    Announce = 7,
}

const OPS: [Op; 8] = [
    Op::Accept,
    Op::Register,
    Op::Raw,
    Op::Close,
    Op::Tick,
    Op::Update,
    Op::Heartbeat,
    Op::Announce,
];

/// The identity secret of node `id` (what an honest node proves).
fn secret(id: u64) -> String {
    format!("deployment-{id}")
}

struct Run<'a> {
    data: &'a [u8],
    server: RegistryServer,
    config: ServerConfig,
    keys: ClusterKeys,
    sessions: Vec<ConnId>,
    now: Instant,
    nonce: u8,
    /// A `Register` with the right identity proof is being handled (takeover allowed).
    proving: bool,
    /// Conns that proved the key (keys on), or every conn (keys off).
    may_register: Vec<ConnId>,
    tally: Tally,
}

/// What a run saw (for the tests of the seeds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tally {
    registered: u32,
    taken_over: u32,
    too_large: u32,
    /// Snapshot frames flagged "more parts follow".
    continued_parts: u32,
}

impl Run<'_> {
    fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    fn session(&mut self) -> Option<ConnId> {
        let pick = usize::from(self.byte());
        let n = self.sessions.len();
        (n > 0).then(|| self.sessions[pick % n])
    }

    fn encode(frame: &Frame<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        wire::encode(frame, &mut out).expect("frames of the fuzzer encode");
        out
    }

    fn record(&mut self, id: u64) -> DiscoveryInfo {
        let custom = usize::from(self.byte()) * 16;
        let labels = usize::from(self.byte()) * 4;
        let mut info = DiscoveryInfo {
            id: NodeId(id),
            name: format!("n{id}"),
            custom_data: "c".repeat(custom).into(),
            identity: published_identity(&secret(id)),
            ..DiscoveryInfo::default()
        };
        if labels > 0 {
            info.metadata.labels.insert("k".into(), "v".repeat(labels));
        }
        info
    }

    fn step(&mut self, op: Op) {
        match op {
            Op::Accept => {
                let honest = self.byte() & 1 == 1;
                let conn = self.server.handle_accepted(self.now);
                self.sessions.push(conn);
                if !self.keys.is_enabled() {
                    self.may_register.push(conn);
                } else if honest {
                    self.handshake(conn);
                }
            }
            Op::Register => {
                let Some(conn) = self.session() else { return };
                let id = u64::from(self.byte() % 6) + 1;
                let incarnation = u64::from(self.byte() % 4) + 1;
                let discovery = self.record(id);
                let proof = match self.byte() % 3 {
                    0 => None,
                    1 => IdentityProof::of(&secret(id)),
                    _ => IdentityProof::of(&published_identity(&secret(id))),
                };
                self.proving = proof == IdentityProof::of(&secret(id));
                let frame = wire::Register {
                    incarnation,
                    discovery,
                    topology: None,
                    proof,
                    watch: false,
                };
                let bytes = Self::encode(&frame.into());
                self.server.handle_received(self.now, conn, &bytes);
            }
            Op::Raw => {
                let Some(conn) = self.session() else { return };
                let n = usize::from(self.byte()).min(self.data.len());
                let (chunk, rest) = self.data.split_at(n);
                self.data = rest;
                self.server.handle_received(self.now, conn, chunk);
            }
            Op::Close => {
                let Some(conn) = self.session() else { return };
                self.server.handle_closed(self.now, conn);
            }
            Op::Tick => {
                let step = Duration::from_millis(u64::from(self.byte()) * 250);
                self.now += step;
                self.server.handle_timeout(self.now);
            }
            Op::Update => {
                let Some(conn) = self.session() else { return };
                let id = u64::from(self.byte() % 6) + 1;
                let incarnation = u64::from(self.byte() % 4) + 1;
                let discovery = Some(self.record(id));
                let frame = wire::Update {
                    incarnation,
                    discovery,
                    topology: None,
                };
                let bytes = Self::encode(&frame.into());
                self.server.handle_received(self.now, conn, &bytes);
            }
            Op::Heartbeat => {
                let Some(conn) = self.session() else { return };
                let beat = wire::Heartbeat {
                    epoch: 0,
                    sequence: u64::from(self.byte()),
                };
                self.server
                    .handle_received(self.now, conn, &Self::encode(&beat.into()));
            }
            Op::Announce => {
                let Some(conn) = self.session() else { return };
                let len = u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()]);
                let kind = self.byte() % 24;
                let mut header = len.to_le_bytes().to_vec();
                header.extend_from_slice(&[wire::WIRE_VERSION, kind, 0, 0]);
                self.server.handle_received(self.now, conn, &header);
            }
        }
        self.check();
        self.proving = false;
    }

    /// The honest keyed handshake on `conn`: `Hello` with a fresh nonce, the registry's
    /// `HelloAck`, our `Auth`.
    fn handshake(&mut self, conn: ConnId) {
        self.nonce = self.nonce.wrapping_add(1);
        let nonce = [self.nonce; 32];
        let Some(key_id) = self.keys.current_id() else {
            return;
        };
        let hello = wire::Hello {
            node: NodeId(0x101),
            incarnation: 1,
            versions: PROTOCOL_VERSIONS,
            name: "peer",
            challenge: Some(wire::Challenge { nonce, key_id }),
        };
        self.server
            .handle_received(self.now, conn, &Self::encode(&hello.into()));
        let mut acceptor = None;
        for out in self.drain() {
            if let ServerOutput::Transmit { bytes, .. } = out
                && let Ok(Decoded::Frame(Frame::HelloAck(ack), _)) =
                    wire::decode(&bytes, wire::DEFAULT_MAX_FRAME)
                && let Some(n) = ack.nonce
            {
                acceptor = Some(Side {
                    node: ack.node,
                    incarnation: ack.incarnation,
                    versions: ack.versions,
                    nonce: n,
                });
            }
        }
        let Some(acceptor) = acceptor else { return };
        let transcript = Transcript {
            context: Context::Registry,
            role: ROLE_DIALLER,
            hint: key_id,
            result: Ok(()),
            dialler: Side {
                node: NodeId(0x101),
                incarnation: 1,
                versions: PROTOCOL_VERSIONS,
                nonce,
            },
            acceptor,
        };
        let Some(proof) = self.keys.prove(&transcript) else {
            return;
        };
        self.server
            .handle_received(self.now, conn, &Self::encode(&wire::Auth { proof }.into()));
        self.drain();
        self.may_register.push(conn);
    }

    fn drain(&mut self) -> Vec<ServerOutput> {
        core::iter::from_fn(|| self.server.poll_output()).collect()
    }

    /// The invariants of the module docs, over everything the server output.
    fn check(&mut self) {
        let limits = self.config.record_limits();
        let largest_part = self
            .config
            .max_snapshot_part
            .max(SNAPSHOT_OVERHEAD + ENTRY_OVERHEAD + self.config.max_record);
        for out in self.drain() {
            match out {
                ServerOutput::Transmit { bytes, .. } => {
                    assert!(
                        bytes.len() <= self.config.max_frame,
                        "a frame over max_frame"
                    );
                    let mut reader = FrameReader::new(wire::DEFAULT_MAX_FRAME);
                    reader.push(&bytes);
                    loop {
                        match reader.next_frame() {
                            Ok(None) => break,
                            Ok(Some(Frame::Snapshot(snapshot))) => {
                                assert!(bytes.len() <= largest_part, "a snapshot part too large");
                                self.tally.continued_parts += u32::from(snapshot.more);
                            }
                            Ok(Some(Frame::Put(put))) => {
                                assert!(
                                    limits.check(Some(&put.entry.discovery), None).is_ok(),
                                    "a Put of a record over the limits"
                                );
                            }
                            Ok(Some(_)) => {}
                            Err(error) => panic!("the server sent an undecodable frame: {error}"),
                        }
                    }
                }
                ServerOutput::Event(ServerEvent::TooLarge { .. }) => self.tally.too_large += 1,
                ServerOutput::Event(ServerEvent::Registered { conn, .. }) => {
                    self.tally.registered += 1;
                    assert!(
                        self.may_register.contains(&conn),
                        "a connection registered without proving the key"
                    );
                }
                ServerOutput::Event(ServerEvent::TakenOver { .. }) => {
                    assert!(self.proving, "a takeover without the identity proof");
                    self.tally.taken_over += 1;
                }
                _ => {}
            }
        }
        for entry in self.server.entries() {
            assert!(
                limits
                    .check(Some(&entry.discovery), entry.topology.as_ref())
                    .is_ok(),
                "a listed record over the limits"
            );
        }
    }
}

/// Target `registry_server`: the registry server machine driven by sessions authenticated
/// and not (the operations and the invariants are described in this file's module docs).
///
/// # Panics
/// Panics (which the fuzzer reports) when an invariant breaks or anything panics.
pub fn registry_server(data: &[u8]) {
    drive(data);
}

fn drive(data: &[u8]) -> Tally {
    let Some((&mode, ops)) = data.split_first() else {
        return Tally::default();
    };
    let keys = if mode & 1 == 1 {
        ClusterKeys::new(&[ClusterKey::new([0x5B; 32])])
    } else {
        ClusterKeys::default()
    };
    let (max_record, max_snapshot_part) = match (mode >> 1) & 3 {
        0 => (1024, 2048),
        1 => (2048, 4096),
        2 => (4096, 16 << 10),
        _ => (64 << 10, 1 << 20),
    };
    let config = ServerConfig {
        keys: keys.clone(),
        max_record,
        max_labels: max_record / 4,
        max_custom_data: max_record / 2,
        max_snapshot_part,
        ..ServerConfig::default()
    };
    assert_eq!(config.validate(), Ok(()), "the fuzzer's configs are valid");
    let mut run = Run {
        data: ops,
        server: RegistryServer::new(config.clone(), u64::from(mode)),
        config,
        keys,
        sessions: Vec::new(),
        now: Instant::from_millis(1),
        nonce: 0,
        proving: false,
        may_register: Vec::new(),
        tally: Tally::default(),
    };
    // Bounded work per input: the fuzzer explores sequences, not their length.
    for _ in 0..512 {
        if run.data.is_empty() {
            break;
        }
        let op = OPS[usize::from(run.byte() % 8)];
        run.step(op);
    }
    run.tally
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("corpus/registry_server")
            .join(name);
        std::fs::read(path).expect("a committed seed")
    }

    #[test]
    fn the_seeds_reach_what_they_are_named_for() {
        let tally = |name| drive(&seed(name));
        // Three registrations of id 1 after the first has been silent for 7 s (the seed
        // ticks 28 × 250 ms: a holder heard from within `LIVE_HOLDER_SILENCE` is a live copy,
        // refused whatever the newcomer proves, so the seed waits that out since the
        // one-live-holder rule): no proof and the published value as a secret are refused,
        // the secret takes over.
        assert_eq!(
            tally("takeover_needs_the_secret"),
            Tally {
                registered: 2,
                taken_over: 1,
                ..Tally::default()
            }
        );
        // Custom data of 4080 bytes and labels of 1021 bytes over the smallest limits, and
        // an update over them: three refusals.
        assert_eq!(tally("oversized_record_refused").too_large, 3);
        assert_eq!(tally("oversized_record_refused").registered, 1);
        // Six nodes of ~500 bytes under 2 KiB parts: the later snapshots come in parts.
        assert!(tally("snapshot_in_parts").continued_parts >= 3);
        // With keys: the stranger neither registers nor gets its 16 MiB frames read.
        assert_eq!(
            tally("keyed_honest_and_stranger"),
            Tally {
                registered: 1,
                too_large: 2,
                ..Tally::default()
            }
        );
    }
}
