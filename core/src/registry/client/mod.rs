//! The embedded registry client: one node's connection to the registry, as a sans-IO machine.
//!
//! The client dials the registry ([`ClientOutput::Connect`]), registers the node's records on
//! every connection, merges what the registry sends into its view of the peers, and hands the
//! node the [`RegistryEvent`](super::RegistryEvent)s that view's changes amount to — the same
//! events the etcd backend produces, so the node cannot tell them apart.
//!
//! # Rules
//!
//! * **Register on connect**: `Register{incarnation, discovery, topology}` (the latest
//!   records, including any [`update_topology`](RegistryClient::update_topology)) is the first
//!   frame of every connection — after the handshake when keys are configured: `Hello`
//!   (challenge), the registry's `HelloAck` (nonce, proof) checked, then `Auth` and
//!   `Register`. A registry that does not prove a key is left
//!   ([`ClientEvent::Unauthenticated`]); a registry refusing our proof is
//!   [`ClientEvent::AuthRefused`]. Both retry like a close. With keys, a refusal that arrives
//!   before the registry proved the key is not believed ([`ClientEvent::UnprovenRefusal`]):
//!   a failed attempt, retried on the backoff.
//! * **Refusals** are reported, then retried like a close: another incarnation holding the id
//!   is [`ClientEvent::Refused`], another node holding the name [`ClientEvent::NameTaken`],
//!   records over the registry's size limits [`ClientEvent::RecordTooLarge`] (with the
//!   registry's figures). Records over the client's own [`ClientConfig::limits`] are not sent
//!   at all (the same event, `local`).
//! * **Identity**: every `Register` carries [`ClientConfig::identity_proof`], which lets a
//!   restart take its id over from a connection of its previous incarnation; the records
//!   carry only the published hash.
//! * **Per-phase reading**: until the registry proved the key (keys configured), only a
//!   `HelloAck` or a `Bye` is read, each no larger than its largest valid encoding; then
//!   frames up to `max_frame`.
//! * **Snapshot parts**: a snapshot may come in parts (every part but the last flagged
//!   `more`); they are gathered and applied once, at the last part. A part of another epoch or
//!   revision, another frame between parts, or more than `max_snapshot_parts` parts is a
//!   protocol error.
//! * **Reconnect with backoff**: a failed dial, a close, a refusal, a protocol error or
//!   `silence_timeout` without a byte from the registry schedules the next dial after
//!   [`BackoffConfig::delay`](crate::backoff::BackoffConfig::delay) of the attempt count
//!   (reset by every snapshot; past `max_tries` it stays at the cap — the client never gives
//!   up). The view is kept meanwhile: no event is emitted for peers while disconnected.
//! * **Same-epoch snapshot** (the registry did not restart): diffed against the view
//!   directly — changed peers are put, peers absent from it are deleted (their `Delete` was
//!   missed). Suspect entries are listed, so they stay.
//! * **New-epoch snapshot** (the registry restarted): peers in it are put if changed; peers
//!   of the view absent from it are **kept for `grace`**, since they may not have registered
//!   with the new registry yet. A `Put` for one ends its grace; at the end of the grace the
//!   rest are deleted. A peer is never deleted from the node's view during the grace.
//! * **Revisions** are mapped so they keep increasing across epochs; see [`view`]'s docs
//!   ([`REVISION_BITS`]).
//! * **Events**: a put reports `TopologyPut` (if changed) before `DiscoveryPut` (if
//!   changed); a delete reports `DiscoveryDelete` then `TopologyDelete` (if it had one). A
//!   peer whose content did not change reports nothing. The node's own record is reported
//!   too, as from etcd.
//! * **Liveness**: a `Heartbeat{epoch, sequence}` every `heartbeat_interval` while connected.

mod grace;
mod peers;
mod types;
pub mod view;

#[cfg(test)]
mod tests;

use alloc::{boxed::Box, collections::VecDeque, vec::Vec};

pub use types::{
    ClientConfig, ClientError, ClientEvent, ClientOutput, DEFAULT_MAX_SNAPSHOT_PARTS,
    registry_backoff,
};
pub use view::{Peer, REVISION_BITS};

use self::view::View;
use crate::{
    auth::{AuthFailure, NonceSource, ROLE_ACCEPTOR, ROLE_DIALLER, Side, Transcript},
    bus::handshake::PROTOCOL_VERSIONS,
    discovery::{DiscoveryInfo, TopologyInfo},
    registry::{
        limits::{RecordField, RecordTooLarge},
        server::EntryKey,
    },
    rng::Rng,
    time::{Instant, earliest},
    wire::{
        self, BYE_LEN, Bye, ByeReason, Frame, FrameKind, FrameLimits, FrameReader, Heartbeat,
        MAX_HELLO_ACK_LEN, Proof, Put, RecordCache, RefuseReason, Register, Snapshot, Update,
    },
};

/// Output queue slots kept once the queue is drained; a larger queue (a snapshot's) is
/// given back.
const KEPT_OUTPUT_CAPACITY: usize = 64;

/// Where the connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting to dial at `until`.
    Waiting { until: Instant },
    /// `Connect` emitted, no answer yet.
    Connecting,
    /// Connected; `registered` once the snapshot arrived.
    Connected { registered: bool },
    /// [`RegistryClient::shutdown`] was called.
    Stopped,
}

/// A frame from the registry, owned.
enum Incoming {
    Snapshot(Box<Snapshot>),
    Put(Box<Put>),
    Delete {
        epoch: u64,
        revision: u64,
        key: EntryKey,
    },
    Heartbeat,
    Refused {
        holder: u64,
    },
    AuthRefused,
    Proven {
        node: crate::ids::NodeId,
        incarnation: u64,
        versions: wire::VersionRange,
        nonce: Option<wire::Nonce>,
        proof: Option<wire::Proof>,
    },
    NameTaken {
        name: alloc::string::String,
        holder: crate::ids::NodeId,
    },
    TooLarge(RecordTooLarge),
    Bye,
    Other(FrameKind),
}

impl Incoming {
    fn kind(&self) -> FrameKind {
        match self {
            Incoming::Snapshot(_) => FrameKind::Snapshot,
            Incoming::Put(_) => FrameKind::Put,
            Incoming::Delete { .. } => FrameKind::Delete,
            Incoming::Heartbeat => FrameKind::Heartbeat,
            Incoming::Bye => FrameKind::Bye,
            Incoming::Other(kind) => *kind,
            _ => FrameKind::HelloAck,
        }
    }
}

/// A snapshot arriving in parts: what the parts so far carried.
#[derive(Debug)]
struct Assembly {
    snapshot: Box<Snapshot>,
    parts: u32,
}

/// One node's registry client machine. See the [module docs](self) for its rules.
#[derive(Debug)]
pub struct RegistryClient {
    config: ClientConfig,
    rng: Rng,
    tries: u32,
    phase: Phase,
    reader: FrameReader,
    view: View,
    heartbeat_seq: u64,
    next_heartbeat: Option<Instant>,
    silence_deadline: Option<Instant>,
    out: VecDeque<ClientOutput>,
    /// Scratch buffer frames are encoded through ([`wire::encode_owned`]).
    wbuf: Vec<u8>,
    nonces: NonceSource,
    /// Keys configured and `Hello` sent: our nonce, until the registry's proof checks.
    awaiting_proof: Option<wire::Nonce>,
    /// The parts of a snapshot received so far, until its last part.
    assembly: Option<Assembly>,
}

impl RegistryClient {
    /// A client that dials at once (the first output is [`ClientOutput::Connect`]).
    #[must_use]
    pub fn new(config: ClientConfig, _now: Instant) -> RegistryClient {
        let mut out = VecDeque::new();
        out.push_back(ClientOutput::Connect);
        RegistryClient {
            nonces: NonceSource::new(&config.nonce_entropy, &mut Rng::new(config.nonce_seed)),
            awaiting_proof: None,
            assembly: None,
            wbuf: Vec::new(),
            rng: Rng::new(config.seed),
            reader: FrameReader::new(config.max_frame),
            config,
            tries: 0,
            phase: Phase::Connecting,
            view: View::default(),
            heartbeat_seq: 0,
            next_heartbeat: None,
            silence_deadline: None,
            out,
        }
    }

    /// The peers the node has been told about (own record included), with their keys, in key
    /// order (ids, then names).
    pub fn peers(&self) -> impl Iterator<Item = (EntryKey, &Peer)> + '_ {
        self.view.peers.iter()
    }

    /// Peers kept inside the grace of a new-epoch snapshot, with their deadlines.
    pub fn in_grace(&self) -> impl Iterator<Item = (&EntryKey, &Instant)> + '_ {
        self.view.in_grace.iter()
    }

    /// The epoch of the latest snapshot.
    #[must_use]
    pub fn epoch(&self) -> Option<u64> {
        self.view.epoch
    }

    /// Whether the current connection has received its snapshot.
    #[must_use]
    pub fn is_registered(&self) -> bool {
        self.phase == Phase::Connected { registered: true }
    }

    /// The dial succeeded: sends `Register`.
    pub fn handle_connected(&mut self, now: Instant) {
        if self.phase != Phase::Connecting {
            return;
        }
        self.phase = Phase::Connected { registered: false };
        self.assembly = None;
        // Until the registry proved the key, it may only answer the `Hello` or leave.
        self.reader = if self.config.keys.current_id().is_some() {
            FrameReader::with_limits(
                FrameLimits::none()
                    .allow(FrameKind::HelloAck, MAX_HELLO_ACK_LEN)
                    .allow(FrameKind::Bye, BYE_LEN),
            )
        } else {
            FrameReader::with_limits(FrameLimits::up_to(self.config.max_frame))
        };
        self.next_heartbeat = Some(now + self.config.heartbeat_interval);
        self.silence_deadline = Some(now + self.config.silence_timeout);
        self.awaiting_proof = None;
        if let Some(key_id) = self.config.keys.current_id() {
            let nonce = self.nonces.next_nonce();
            self.awaiting_proof = Some(nonce);
            let hello = wire::Hello {
                node: self.config.discovery.id,
                incarnation: self.config.incarnation,
                versions: PROTOCOL_VERSIONS,
                name: &self.config.discovery.name,
                challenge: Some(wire::Challenge { nonce, key_id }),
            };
            let mut bytes = Vec::new();
            if wire::encode(&hello.into(), &mut bytes).is_ok() {
                self.out.push_back(ClientOutput::Transmit { bytes });
            }
            return;
        }
        self.send_register(now);
    }

    /// Sends `Register` — unless the records break [`ClientConfig::limits`]: then reported,
    /// closed, and retried on the backoff like a refusal.
    fn send_register(&mut self, now: Instant) {
        if let Err(error) = self
            .config
            .limits
            .check(Some(&self.config.discovery), self.config.topology.as_ref())
        {
            self.event(ClientEvent::RecordTooLarge { error, local: true });
            self.out.push_back(ClientOutput::Close);
            return self.retry(now);
        }
        let register = Register {
            incarnation: self.config.incarnation,
            discovery: self.config.discovery.clone(),
            topology: self.config.topology.clone(),
            proof: self.config.identity_proof,
            watch: self.config.watch,
        };
        self.send(&register.into());
    }

    /// The registry's `HelloAck` while our `Hello` awaits it: its proof checked over both
    /// nonces, then our `Auth` and `Register`.
    fn on_proof(
        &mut self,
        now: Instant,
        own_nonce: wire::Nonce,
        registry: Side,
        proof: Option<Proof>,
    ) {
        let hint = self.config.keys.current_id().unwrap_or_default();
        let transcript = |role| Transcript {
            context: crate::auth::Context::Registry,
            role,
            hint,
            result: Ok(()),
            dialler: Side {
                node: self.config.discovery.id,
                incarnation: self.config.incarnation,
                versions: PROTOCOL_VERSIONS,
                nonce: own_nonce,
            },
            acceptor: registry,
        };
        if let Err(failure) = self
            .config
            .keys
            .check(&transcript(ROLE_ACCEPTOR), proof.as_ref())
        {
            self.event(ClientEvent::Unauthenticated(failure));
            self.out.push_back(ClientOutput::Close);
            return self.retry(now);
        }
        self.awaiting_proof = None;
        self.reader
            .set_limits(FrameLimits::up_to(self.config.max_frame));
        let ours = self
            .config
            .keys
            .prove_with(&transcript(ROLE_DIALLER), proof.map(|p| p.key_id));
        if let Some(proof) = ours {
            self.send(&wire::Auth { proof }.into());
        }
        self.send_register(now);
    }

    /// The dial failed: schedules the next one.
    pub fn handle_connect_failed(&mut self, now: Instant) {
        if self.phase == Phase::Connecting {
            self.retry(now);
        }
    }

    /// The connection closed: schedules the next dial. Ignored when not connected.
    pub fn handle_closed(&mut self, now: Instant) {
        if matches!(self.phase, Phase::Connected { .. }) {
            self.retry(now);
        }
    }

    /// Bytes arrived from the registry.
    pub fn handle_received(&mut self, now: Instant, bytes: &[u8]) {
        self.receive(now, bytes, None);
    }

    /// [`handle_received`](Self::handle_received), with the records of the registry's
    /// updates taken from `records` when it holds their bytes: a process running many
    /// clients of one registry hands them all the same cache and decodes each record once
    /// ([`RecordCache`]). What the client does is the same as without the cache.
    pub fn handle_received_cached(
        &mut self,
        now: Instant,
        bytes: &[u8],
        records: &mut RecordCache,
    ) {
        self.receive(now, bytes, Some(records));
    }

    fn receive(&mut self, now: Instant, bytes: &[u8], mut records: Option<&mut RecordCache>) {
        if !matches!(self.phase, Phase::Connected { .. }) {
            return;
        }
        self.silence_deadline = Some(now + self.config.silence_timeout);
        self.reader.push(bytes);
        while matches!(self.phase, Phase::Connected { .. }) {
            let incoming = match self.reader.next_frame_with(records.as_deref_mut()) {
                Ok(None) => return,
                Ok(Some(frame)) => match frame {
                    Frame::Snapshot(s) => Incoming::Snapshot(s),
                    Frame::Put(p) => Incoming::Put(p),
                    Frame::Delete(d) => Incoming::Delete {
                        epoch: d.epoch,
                        revision: d.revision,
                        key: View::key_of_delete(d.id, d.name),
                    },
                    Frame::Heartbeat(_) => Incoming::Heartbeat,
                    Frame::HelloAck(ack) => match ack.result {
                        Err(RefuseReason::WrongCluster) => Incoming::AuthRefused,
                        Err(RefuseReason::NameTaken) => Incoming::NameTaken {
                            name: ack.name.into(),
                            holder: ack.node,
                        },
                        Err(RefuseReason::RecordTooLarge) => Incoming::TooLarge(RecordTooLarge {
                            field: RecordField::from_name(ack.name).unwrap_or(RecordField::Record),
                            len: usize::try_from(ack.node.0).unwrap_or(usize::MAX),
                            max: usize::try_from(ack.incarnation).unwrap_or(usize::MAX),
                        }),
                        Err(_) => Incoming::Refused {
                            holder: ack.incarnation,
                        },
                        Ok(()) => Incoming::Proven {
                            node: ack.node,
                            incarnation: ack.incarnation,
                            versions: ack.versions,
                            nonce: ack.nonce,
                            proof: ack.proof,
                        },
                    },
                    Frame::Bye(_) => Incoming::Bye,
                    other => Incoming::Other(other.kind()),
                },
                Err(error) => return self.fail(now, ClientError::Decode(error)),
            };
            self.handle_frame(now, incoming);
        }
    }

    fn handle_frame(&mut self, now: Instant, incoming: Incoming) {
        let registered = self.phase == Phase::Connected { registered: true };
        if let Some(own_nonce) = self.awaiting_proof {
            match incoming {
                Incoming::Proven {
                    node,
                    incarnation,
                    versions,
                    nonce,
                    proof,
                } => {
                    let Some(nonce) = nonce else {
                        self.event(ClientEvent::Unauthenticated(AuthFailure::NoProof));
                        self.out.push_back(ClientOutput::Close);
                        return self.retry(now);
                    };
                    let registry = Side {
                        node,
                        incarnation,
                        versions,
                        nonce,
                    };
                    return self.on_proof(now, own_nonce, registry, proof);
                }
                // A refusal before the registry proved the key could come from anyone who
                // answered the dial (a squatter on the registry's address): not believed, a
                // failed attempt retried on the backoff.
                Incoming::AuthRefused | Incoming::Refused { .. } | Incoming::NameTaken { .. } => {
                    let reason = match incoming {
                        Incoming::AuthRefused => RefuseReason::WrongCluster,
                        Incoming::NameTaken { .. } => RefuseReason::NameTaken,
                        _ => RefuseReason::DuplicateId,
                    };
                    self.event(ClientEvent::UnprovenRefusal(reason));
                    self.out.push_back(ClientOutput::Close);
                    return self.retry(now);
                }
                Incoming::Bye | Incoming::Heartbeat => {}
                // Anything the registry says before it proved the key is not believed.
                _ => {
                    self.event(ClientEvent::Unauthenticated(AuthFailure::BeforeAuth));
                    self.out.push_back(ClientOutput::Close);
                    return self.retry(now);
                }
            }
        }
        if self.assembly.is_some() && !matches!(incoming, Incoming::Snapshot(_) | Incoming::Bye) {
            return self.fail(now, ClientError::SnapshotInterrupted(incoming.kind()));
        }
        match incoming {
            Incoming::AuthRefused => {
                self.event(ClientEvent::AuthRefused);
                self.out.push_back(ClientOutput::Close);
                self.retry(now);
            }
            Incoming::Proven { .. } => self.fail(now, ClientError::Unexpected(FrameKind::HelloAck)),
            Incoming::Snapshot(part) => {
                let snapshot = match self.assemble(part) {
                    Ok(Some(snapshot)) => snapshot,
                    Ok(None) => return,
                    Err(error) => return self.fail(now, error),
                };
                let epoch = snapshot.epoch;
                let (new_epoch, in_grace) =
                    self.view
                        .snapshot(now, self.config.grace, *snapshot, &mut self.out);
                self.phase = Phase::Connected { registered: true };
                self.tries = 0;
                self.event(ClientEvent::Registered {
                    epoch,
                    new_epoch,
                    in_grace,
                });
            }
            Incoming::Put(put) => {
                if let Err(error) = self.check(registered, FrameKind::Put, put.epoch) {
                    return self.fail(now, error);
                }
                self.view.put(put.revision, put.entry, &mut self.out);
            }
            Incoming::Delete {
                epoch,
                revision,
                key,
            } => {
                if let Err(error) = self.check(registered, FrameKind::Delete, epoch) {
                    return self.fail(now, error);
                }
                self.view.delete(revision, &key, &mut self.out);
            }
            Incoming::Heartbeat => {}
            Incoming::Refused { holder } => {
                self.event(ClientEvent::Refused { holder });
                self.out.push_back(ClientOutput::Close);
                self.retry(now);
            }
            Incoming::NameTaken { name, holder } => {
                self.event(ClientEvent::NameTaken { name, holder });
                self.out.push_back(ClientOutput::Close);
                self.retry(now);
            }
            Incoming::TooLarge(error) => {
                self.event(ClientEvent::RecordTooLarge {
                    error,
                    local: false,
                });
                self.out.push_back(ClientOutput::Close);
                self.retry(now);
            }
            Incoming::Bye => {
                self.out.push_back(ClientOutput::Close);
                self.retry(now);
            }
            Incoming::Other(kind) => self.fail(now, ClientError::Unexpected(kind)),
        }
    }

    /// Adds a snapshot part; the whole snapshot once its last part arrived.
    fn assemble(&mut self, part: Box<Snapshot>) -> Result<Option<Box<Snapshot>>, ClientError> {
        let assembly = match self.assembly.take() {
            None => Assembly {
                snapshot: part,
                parts: 1,
            },
            Some(mut assembly) => {
                let first = &assembly.snapshot;
                if (first.epoch, first.revision) != (part.epoch, part.revision) {
                    return Err(ClientError::SnapshotPartMismatch {
                        epoch: first.epoch,
                        revision: first.revision,
                        got_epoch: part.epoch,
                        got_revision: part.revision,
                    });
                }
                let Snapshot { entries, more, .. } = *part;
                assembly.snapshot.entries.extend(entries);
                assembly.snapshot.more = more;
                assembly.parts += 1;
                assembly
            }
        };
        if assembly.parts > self.config.max_snapshot_parts {
            return Err(ClientError::SnapshotTooManyParts {
                max: self.config.max_snapshot_parts,
            });
        }
        if assembly.snapshot.more {
            self.assembly = Some(assembly);
            return Ok(None);
        }
        Ok(Some(assembly.snapshot))
    }

    fn check(&self, registered: bool, kind: FrameKind, epoch: u64) -> Result<(), ClientError> {
        if !registered {
            return Err(ClientError::BeforeSnapshot(kind));
        }
        match self.view.epoch {
            Some(expected) if expected != epoch => Err(ClientError::WrongEpoch {
                expected,
                got: epoch,
            }),
            _ => Ok(()),
        }
    }

    /// Fires every deadline at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        match self.phase {
            Phase::Waiting { until } if until <= now => {
                self.phase = Phase::Connecting;
                self.out.push_back(ClientOutput::Connect);
            }
            Phase::Connected { .. } => {
                if self.silence_deadline.is_some_and(|d| d <= now) {
                    self.out.push_back(ClientOutput::Close);
                    self.retry(now);
                } else if let Some(at) = self.next_heartbeat.filter(|d| *d <= now) {
                    self.heartbeat_seq += 1;
                    let beat = Heartbeat {
                        epoch: self.view.epoch.unwrap_or(0),
                        sequence: self.heartbeat_seq,
                    };
                    self.send(&beat.into());
                    self.next_heartbeat = Some(at + self.config.heartbeat_interval);
                }
            }
            _ => {}
        }
        self.view.expire(now, &mut self.out);
    }

    /// The next deadline; call [`handle_timeout`](Self::handle_timeout) then.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let link = match self.phase {
            Phase::Waiting { until } => Some(until),
            Phase::Connected { .. } => earliest(self.next_heartbeat, self.silence_deadline),
            Phase::Connecting | Phase::Stopped => None,
        };
        earliest(link, self.view.grace_deadline())
    }

    /// The next thing to do; drain after every call.
    pub fn poll_output(&mut self) -> Option<ClientOutput> {
        let output = self.out.pop_front();
        if output.is_none() && self.out.capacity() > KEPT_OUTPUT_CAPACITY {
            // A snapshot queued two outputs per listed node (records inline): give that room
            // back once it is drained, so a thousand clients in one process do not each keep
            // a snapshot's worth of queue.
            self.out = VecDeque::new();
        }
        output
    }

    /// Publishes a new topology record (e.g. an upstream switch): sent as an `Update` now if
    /// connected, and part of every later `Register`.
    pub fn update_topology(&mut self, info: TopologyInfo) {
        self.config.topology = Some(info.clone());
        self.send_update(None, Some(info));
    }

    /// Publishes a new discovery record (same id, or same name for a name-only node): sent
    /// as an `Update` now if connected, and part of every later `Register`.
    pub fn update_discovery(&mut self, info: DiscoveryInfo) {
        self.config.discovery = info.clone();
        self.send_update(Some(info), None);
    }

    /// Leaves the registry: `Bye{Shutdown}` (the registry removes the node at once, without
    /// protection) and a close if connected; the client stops.
    pub fn shutdown(&mut self) {
        if matches!(self.phase, Phase::Connected { .. }) {
            self.send(
                &Bye {
                    reason: ByeReason::Shutdown,
                }
                .into(),
            );
            self.out.push_back(ClientOutput::Close);
        }
        self.phase = Phase::Stopped;
    }

    fn send_update(&mut self, discovery: Option<DiscoveryInfo>, topology: Option<TopologyInfo>) {
        if let Err(error) = self
            .config
            .limits
            .check(Some(&self.config.discovery), self.config.topology.as_ref())
        {
            // Not sent: the registry keeps the previous records; the next `Register` is
            // refused here the same way.
            return self.event(ClientEvent::RecordTooLarge { error, local: true });
        }
        if matches!(self.phase, Phase::Connected { .. }) {
            let update = Update {
                incarnation: self.config.incarnation,
                discovery,
                topology,
            };
            self.send(&update.into());
        }
    }

    fn event(&mut self, event: ClientEvent) {
        self.out.push_back(ClientOutput::Event(event));
    }

    fn send(&mut self, frame: &Frame<'_>) {
        if let Ok(bytes) = wire::encode_owned(frame, &mut self.wbuf) {
            self.out.push_back(ClientOutput::Transmit { bytes });
        }
    }

    fn fail(&mut self, now: Instant, error: ClientError) {
        self.out.push_back(ClientOutput::Close);
        self.event(ClientEvent::ProtocolError(error));
        self.retry(now);
    }

    /// Schedules the next dial after the backoff delay of the current attempt.
    fn retry(&mut self, now: Instant) {
        let delay = self.config.backoff.delay(self.tries, &mut self.rng);
        self.tries = self.tries.saturating_add(1);
        let retry_at = now + delay;
        self.phase = Phase::Waiting { until: retry_at };
        self.assembly = None;
        self.next_heartbeat = None;
        self.silence_deadline = None;
        self.event(ClientEvent::Disconnected { retry_at });
    }
}
