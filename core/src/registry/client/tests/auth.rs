//! Registry links with cluster keys, client and server on the simulator's net: the same key
//! registers and reads; another key, or keys on one side only, neither registers nor reads.

use alloc::vec::Vec;

use super::{ClientEvent, add, view};
use crate::{
    auth::{AuthFailure, ClusterKey, ClusterKeys},
    registry::{
        fixtures::{client_config, disc, secs},
        server::{ServerConfig, ServerEvent},
    },
    sim::{NetSettings, RegistryNet},
    time::Instant,
};

fn key(byte: u8) -> ClusterKey {
    ClusterKey::new([byte; 32])
}

/// A net with a server holding `keys`, and one client per entry of `clients` (its keys),
/// node ids 1, 2, …; settled, then run to 1 s.
fn run(server: &[ClusterKey], clients: &[&[ClusterKey]]) -> RegistryNet {
    let config = ServerConfig {
        keys: ClusterKeys::new(server),
        ..ServerConfig::default()
    };
    let mut net = RegistryNet::new(NetSettings::default(), config, Instant::ZERO);
    net.start_server();
    for (i, keys) in clients.iter().enumerate() {
        let id = i as u64 + 1;
        let mut c = client_config(disc(id, "x"), 100 + id);
        c.keys = ClusterKeys::new(keys);
        c.nonce_seed = 7 + id;
        add(&mut net, c);
    }
    net.advance_to(secs(1));
    net
}

fn events(net: &mut RegistryNet, member: usize) -> Vec<ClientEvent> {
    net.take_client_events(member)
        .into_iter()
        .map(|(_, e)| e)
        .collect()
}

#[test]
fn clients_with_the_key_register_and_see_each_other() {
    let mut net = run(&[key(1)], &[&[key(1)], &[key(2), key(1)]]);
    assert_eq!(view(&net, 0), [1, 2]);
    assert_eq!(view(&net, 1), [1, 2]);
    assert!(
        !net.take_server_events()
            .iter()
            .any(|(_, e)| matches!(e, ServerEvent::Unauthenticated { .. }))
    );
    assert!(events(&mut net, 0).iter().all(|e| !matches!(
        e,
        ClientEvent::AuthRefused | ClientEvent::Unauthenticated(_)
    )));
}

#[test]
fn a_stranger_with_another_key_neither_registers_nor_reads() {
    let mut net = run(&[key(1)], &[&[key(1)], &[key(2)]]);
    assert_eq!(view(&net, 0), [1], "the stranger is not listed");
    assert!(view(&net, 1).is_empty(), "the stranger reads nothing");
    // The registry proved key 1, which the stranger does not hold: it leaves first.
    assert!(events(&mut net, 1).contains(&ClientEvent::Unauthenticated(AuthFailure::UnknownKey)));
}

#[test]
fn a_client_without_keys_is_refused_by_a_registry_with_keys() {
    let mut net = run(&[key(1)], &[&[]]);
    assert!(view(&net, 0).is_empty());
    assert!(events(&mut net, 0).contains(&ClientEvent::AuthRefused));
    assert!(net.take_server_events().iter().any(|(_, e)| matches!(
        e,
        ServerEvent::Unauthenticated {
            failure: AuthFailure::NoProof,
            ..
        }
    )));
}

#[test]
fn a_client_with_keys_leaves_a_registry_without_keys() {
    let mut net = run(&[], &[&[key(1)]]);
    assert!(view(&net, 0).is_empty());
    assert!(events(&mut net, 0).contains(&ClientEvent::Unauthenticated(AuthFailure::NoProof)));
}

/// A squatter on the registry's address answers a keyed client's `Hello` with a refusal and
/// no proof: not believed. Each is a failed attempt (`UnprovenRefusal`, close), retried on
/// the backoff at exactly 1 s, 3 s, 7 s — never `AuthRefused`, `NameTaken` or `Refused`.
#[test]
fn a_refusal_before_the_registry_proved_the_key_is_not_believed() {
    use alloc::vec;

    use super::{ClientOutput, RegistryClient};
    use crate::{
        bus::handshake::PROTOCOL_VERSIONS,
        ids::NodeId,
        wire::{self, Frame, HelloAck, RefuseReason},
    };

    let mut config = client_config(disc(1, "x"), 101);
    config.keys = ClusterKeys::new(&[key(1)]);
    let mut c = RegistryClient::new(config, secs(0));
    let mut at = secs(0);
    for (reason, retry_at) in [
        (RefuseReason::WrongCluster, secs(1)),
        (RefuseReason::NameTaken, secs(3)),
        (RefuseReason::DuplicateId, secs(7)),
    ] {
        c.handle_timeout(at);
        while c.poll_output().is_some() {}
        c.handle_connected(at);
        while c.poll_output().is_some() {}
        let refusal = HelloAck {
            node: NodeId(9),
            incarnation: 5,
            versions: PROTOCOL_VERSIONS,
            name: "squatter",
            nonce: None,
            proof: None,
            result: Err(reason),
        };
        let mut bytes = vec![];
        wire::encode(&Frame::from(refusal), &mut bytes).expect("test: encodable");
        c.handle_received(at, &bytes);
        let out: Vec<ClientOutput> = core::iter::from_fn(|| c.poll_output()).collect();
        assert_eq!(
            out,
            vec![
                ClientOutput::Event(ClientEvent::UnprovenRefusal(reason)),
                ClientOutput::Close,
                ClientOutput::Event(ClientEvent::Disconnected { retry_at }),
            ],
            "{reason:?}"
        );
        at = retry_at;
    }
}
