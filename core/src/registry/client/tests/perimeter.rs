//! The client's side of the perimeter: size refusals reported with the registry's figures
//! and retried on the backoff, records over the limits never sent, a snapshot in parts
//! applied once and a malformed part sequence refused, and nothing large read before the
//! registry proved the key.

use alloc::{vec, vec::Vec};

use super::{ClientError, ClientEvent, ClientOutput, RegistryClient, add, net};
use crate::{
    auth::{ClusterKey, ClusterKeys},
    discovery::DiscoveryInfo,
    registry::{
        fixtures::{client_config, disc, secs},
        limits::{DEFAULT_MAX_CUSTOM_DATA, RecordField, RecordTooLarge},
        server::ServerEvent,
    },
    wire::{self, DecodeError, FrameKind, MAX_HELLO_ACK_LEN, Put, RegistryEntry, Snapshot},
};

fn bytes(frame: wire::Frame<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    wire::encode(&frame, &mut out).expect("test: encodable");
    out
}

fn outputs(c: &mut RegistryClient) -> Vec<ClientOutput> {
    core::iter::from_fn(|| c.poll_output()).collect()
}

/// A connected client (no keys) whose `Register` went out.
fn connected() -> RegistryClient {
    let mut c = RegistryClient::new(client_config(disc(1, "x"), 101), secs(0));
    c.handle_connected(secs(0));
    outputs(&mut c);
    c
}

fn listed(id: u64) -> RegistryEntry {
    RegistryEntry {
        incarnation: 100 + id,
        discovery: disc(id, "x"),
        topology: None,
        lost_for: None,
    }
}

fn part(revision: u64, ids: &[u64], more: bool) -> Vec<u8> {
    bytes(
        Snapshot {
            epoch: 5,
            revision,
            entries: ids.iter().map(|id| listed(*id)).collect(),
            more,
        }
        .into(),
    )
}

#[test]
fn a_size_refusal_is_reported_with_the_registrys_figures_and_retried_on_the_backoff() {
    let mut net = net(true);
    let big = DiscoveryInfo {
        custom_data: "c".repeat(40_000).into(),
        ..disc(1, "x")
    };
    let mut config = client_config(big, 101);
    // This client does not check locally: the registry's refusal is what it reports.
    config.limits.max_custom_data = usize::MAX;
    add(&mut net, config);
    let error = RecordTooLarge {
        field: RecordField::CustomData,
        len: 40_000,
        max: DEFAULT_MAX_CUSTOM_DATA,
    };
    assert_eq!(
        net.take_client_events(0),
        vec![
            (
                secs(0),
                ClientEvent::RecordTooLarge {
                    error,
                    local: false
                }
            ),
            (secs(0), ClientEvent::Disconnected { retry_at: secs(1) }),
        ]
    );
    assert!(
        net.take_server_events()
            .iter()
            .any(|(_, e)| matches!(e, ServerEvent::TooLarge { error: e, .. } if *e == error))
    );
    net.advance_to(secs(1));
    assert_eq!(
        net.take_client_events(0),
        vec![
            (
                secs(1),
                ClientEvent::RecordTooLarge {
                    error,
                    local: false
                }
            ),
            (secs(1), ClientEvent::Disconnected { retry_at: secs(3) }),
        ]
    );
}

#[test]
fn a_record_over_the_clients_limits_is_never_sent() {
    let big = DiscoveryInfo {
        custom_data: "c".repeat(DEFAULT_MAX_CUSTOM_DATA + 1).into(),
        ..disc(1, "x")
    };
    let mut c = RegistryClient::new(client_config(big, 101), secs(0));
    assert_eq!(outputs(&mut c), vec![ClientOutput::Connect]);
    c.handle_connected(secs(0));
    let error = RecordTooLarge {
        field: RecordField::CustomData,
        len: DEFAULT_MAX_CUSTOM_DATA + 1,
        max: DEFAULT_MAX_CUSTOM_DATA,
    };
    assert_eq!(
        outputs(&mut c),
        vec![
            ClientOutput::Event(ClientEvent::RecordTooLarge { error, local: true }),
            ClientOutput::Close,
            ClientOutput::Event(ClientEvent::Disconnected { retry_at: secs(1) }),
        ]
    );
    // An update over the limits is not sent either.
    let mut c = connected();
    c.handle_received(secs(0), &part(1, &[1], false));
    outputs(&mut c);
    c.update_discovery(DiscoveryInfo {
        custom_data: "c".repeat(DEFAULT_MAX_CUSTOM_DATA + 1).into(),
        ..disc(1, "x")
    });
    assert_eq!(
        outputs(&mut c),
        vec![ClientOutput::Event(ClientEvent::RecordTooLarge {
            error,
            local: true
        })]
    );
}

#[test]
fn snapshot_parts_are_applied_once_at_the_last() {
    let mut c = connected();
    c.handle_received(secs(0), &part(3, &[1, 2], true));
    assert_eq!(outputs(&mut c), vec![]);
    assert!(!c.is_registered());
    c.handle_received(secs(0), &part(3, &[3], false));
    let out = outputs(&mut c);
    assert_eq!(
        out.last(),
        Some(&ClientOutput::Event(ClientEvent::Registered {
            epoch: 5,
            new_epoch: true,
            in_grace: 0
        }))
    );
    let ids: Vec<u64> = c.peers().map(|(_, p)| p.discovery.id.0).collect();
    assert_eq!(ids, [1, 2, 3]);
}

/// Feeds `first` then `second` to a fresh connected client; returns its protocol error.
fn refused(first: &[u8], second: &[u8]) -> Vec<ClientOutput> {
    let mut c = connected();
    c.handle_received(secs(0), first);
    assert_eq!(outputs(&mut c), vec![]);
    c.handle_received(secs(0), second);
    let out = outputs(&mut c);
    assert_eq!(c.peers().count(), 0, "nothing applied");
    out
}

fn protocol_error(error: ClientError) -> Vec<ClientOutput> {
    vec![
        ClientOutput::Close,
        ClientOutput::Event(ClientEvent::ProtocolError(error)),
        ClientOutput::Event(ClientEvent::Disconnected { retry_at: secs(1) }),
    ]
}

#[test]
fn a_malformed_part_sequence_is_a_protocol_error() {
    assert_eq!(
        refused(&part(3, &[1], true), &part(4, &[2], false)),
        protocol_error(ClientError::SnapshotPartMismatch {
            epoch: 5,
            revision: 3,
            got_epoch: 5,
            got_revision: 4
        })
    );
    let put = bytes(
        Put {
            epoch: 5,
            revision: 3,
            entry: listed(2),
        }
        .into(),
    );
    assert_eq!(
        refused(&part(3, &[1], true), &put),
        protocol_error(ClientError::SnapshotInterrupted(FrameKind::Put))
    );
    // Too many parts: the limit lowered to 2, a third part with more to come.
    let mut limited = client_config(disc(1, "x"), 101);
    limited.max_snapshot_parts = 2;
    let mut c = RegistryClient::new(limited, secs(0));
    c.handle_connected(secs(0));
    outputs(&mut c);
    c.handle_received(secs(0), &part(3, &[1], true));
    c.handle_received(secs(0), &part(3, &[2], true));
    assert_eq!(outputs(&mut c), vec![]);
    c.handle_received(secs(0), &part(3, &[3], true));
    assert_eq!(
        outputs(&mut c),
        protocol_error(ClientError::SnapshotTooManyParts { max: 2 })
    );
}

#[test]
fn before_the_registry_proved_the_key_only_a_small_answer_is_read() {
    let keyed = || {
        let mut config = client_config(disc(1, "x"), 101);
        config.keys = ClusterKeys::new(&[ClusterKey::new([1; 32])]);
        let mut c = RegistryClient::new(config, secs(0));
        c.handle_connected(secs(0));
        outputs(&mut c);
        c
    };
    // A 16 MiB frame announced: refused from its 4 length bytes.
    let mut c = keyed();
    c.handle_received(secs(0), &(16u32 << 20).to_le_bytes());
    assert_eq!(
        outputs(&mut c),
        protocol_error(ClientError::Decode(DecodeError::FrameTooLarge {
            len: 16 << 20,
            max: MAX_HELLO_ACK_LEN
        }))
    );
    // A snapshot before the proof: refused by its kind.
    let mut c = keyed();
    c.handle_received(secs(0), &part(1, &[1], false));
    assert_eq!(
        outputs(&mut c),
        protocol_error(ClientError::Decode(DecodeError::KindNotAllowed {
            kind: FrameKind::Snapshot
        }))
    );
}
