//! Client rules: register on connect, reconnect with backoff, refusal, topology updates.

use alloc::vec;

use super::{ClientEvent, ClientOutput, RegistryClient, add, net, view};
use crate::{
    ids::NodeId,
    registry::{
        RegistryEvent,
        fixtures::{client_config, disc, secs, topo},
        server::RegistryServer,
    },
    wire::{self, Frame, Register},
};

const G1: u64 = 1 << 40;

#[test]
fn first_output_is_connect_then_register() {
    let mut c = RegistryClient::new(client_config(disc(1, "x"), 101), secs(0));
    assert_eq!(c.poll_output(), Some(ClientOutput::Connect));
    assert_eq!(c.poll_output(), None);
    assert_eq!(c.poll_timeout(), None);
    c.handle_connected(secs(1));
    let mut bytes = vec![];
    wire::encode(
        &Frame::from(Register {
            watch: false,
            incarnation: 101,
            discovery: disc(1, "x"),
            topology: None,
            proof: None,
        }),
        &mut bytes,
    )
    .expect("test: encodable");
    assert_eq!(c.poll_output(), Some(ClientOutput::Transmit { bytes }));
    // Heartbeat at 6 s, silence cut-off at 16 s.
    assert_eq!(c.poll_timeout(), Some(secs(6)));
}

#[test]
fn reconnects_with_backoff_while_the_registry_is_down() {
    let mut net = net(false);
    add(&mut net, client_config(disc(1, "x"), 101));
    net.advance_to(secs(20));
    assert_eq!(
        net.take_client_events(0),
        vec![
            (secs(0), ClientEvent::Disconnected { retry_at: secs(1) }),
            (secs(1), ClientEvent::Disconnected { retry_at: secs(3) }),
            (secs(3), ClientEvent::Disconnected { retry_at: secs(7) }),
            (secs(7), ClientEvent::Disconnected { retry_at: secs(15) }),
            (secs(15), ClientEvent::Disconnected { retry_at: secs(23) }),
        ]
    );
    net.start_server();
    net.settle();
    net.advance_to(secs(23));
    let epoch = net
        .server()
        .map(RegistryServer::epoch)
        .expect("test: server");
    assert_eq!(
        net.take_client_events(0),
        vec![(
            secs(23),
            ClientEvent::Registered {
                epoch,
                new_epoch: true,
                in_grace: 0
            }
        )]
    );
    // The backoff was reset by the snapshot: a drop now retries after 1 s.
    net.drop_link(0);
    net.settle();
    assert_eq!(
        net.take_client_events(0),
        vec![(secs(23), ClientEvent::Disconnected { retry_at: secs(24) })]
    );
}

#[test]
fn refused_duplicate_retries_with_backoff() {
    let mut net = net(true);
    add(&mut net, client_config(disc(1, "x"), 101));
    add(&mut net, client_config(disc(1, "x"), 999));
    assert_eq!(
        net.take_client_events(1),
        vec![
            (secs(0), ClientEvent::Refused { holder: 101 }),
            (secs(0), ClientEvent::Disconnected { retry_at: secs(1) }),
        ]
    );
    assert_eq!(net.take_registry(1), vec![]);
}

#[test]
fn refused_name_is_reported_with_its_holder_and_retried_with_backoff() {
    let mut net = net(true);
    add(&mut net, client_config(disc(1, "x"), 101));
    let mut rival = disc(2, "x");
    rival.name = "n1".into();
    add(&mut net, client_config(rival, 102));
    assert_eq!(
        net.take_client_events(1),
        vec![
            (
                secs(0),
                ClientEvent::NameTaken {
                    name: "n1".into(),
                    holder: NodeId(1)
                }
            ),
            (secs(0), ClientEvent::Disconnected { retry_at: secs(1) }),
        ]
    );
    assert_eq!(net.take_registry(1), vec![]);
    // Still held at the retry: refused again, the backoff doubles.
    net.advance_to(secs(1));
    assert_eq!(
        net.take_client_events(1),
        vec![
            (
                secs(1),
                ClientEvent::NameTaken {
                    name: "n1".into(),
                    holder: NodeId(1)
                }
            ),
            (secs(1), ClientEvent::Disconnected { retry_at: secs(3) }),
        ]
    );
}

#[test]
fn topology_update_reaches_every_client_after_the_discovery_records() {
    let mut net = net(true);
    add(&mut net, client_config(disc(1, "x"), 101));
    add(&mut net, client_config(disc(2, "x"), 102));
    net.take_registry(0);
    net.take_registry(1);
    net.advance_to(secs(2));
    net.act(0, |c, _| c.update_topology(topo(1, 2)));
    net.settle();
    let mut t = topo(1, 2);
    t.revision = G1 | 3;
    for i in 0..2 {
        assert_eq!(
            net.take_registry(i),
            vec![(secs(2), RegistryEvent::TopologyPut(t.clone().into()))]
        );
    }
    // The next registration carries it: after a registry restart nothing changes for anyone.
    net.kill_server();
    net.start_server();
    net.settle();
    net.advance_to(secs(10));
    assert_eq!(net.take_registry(0), vec![]);
    assert_eq!(net.take_registry(1), vec![]);
    assert_eq!(view(&net, 1), vec![1, 2]);
    let _ = NodeId(0);
}

#[test]
fn heartbeats_keep_a_quiet_link_open() {
    let mut net = net(true);
    add(&mut net, client_config(disc(1, "x"), 101));
    net.take_client_events(0);
    net.advance_to(secs(120));
    assert_eq!(net.take_client_events(0), vec![]);
    assert_eq!(net.take_server_events().len(), 1); // the registration only
    assert!(net.client(0).is_some_and(RegistryClient::is_registered));
}

#[test]
fn bad_input_from_the_registry_drops_the_link_and_keeps_the_view() {
    use super::ClientError;
    use crate::wire::{Put, RegistryEntry};
    let mut c = RegistryClient::new(client_config(disc(1, "x"), 101), secs(0));
    c.handle_connected(secs(0));
    while c.poll_output().is_some() {}
    // A Put before any snapshot.
    let put = Put {
        epoch: 5,
        revision: 1,
        entry: RegistryEntry {
            incarnation: 2,
            discovery: disc(2, "x"),
            topology: None,
            lost_for: None,
        },
    };
    let mut bytes = vec![];
    wire::encode(&Frame::from(put), &mut bytes).expect("test: encodable");
    c.handle_received(secs(1), &bytes);
    let out: alloc::vec::Vec<ClientOutput> = core::iter::from_fn(|| c.poll_output()).collect();
    assert_eq!(
        out,
        vec![
            ClientOutput::Close,
            ClientOutput::Event(ClientEvent::ProtocolError(ClientError::BeforeSnapshot(
                crate::wire::FrameKind::Put
            ))),
            ClientOutput::Event(ClientEvent::Disconnected { retry_at: secs(2) }),
        ]
    );
    assert_eq!(c.peers().count(), 0);
    // Garbage on the next connection.
    c.handle_timeout(secs(2));
    assert_eq!(c.poll_output(), Some(ClientOutput::Connect));
    c.handle_connected(secs(2));
    while c.poll_output().is_some() {}
    c.handle_received(secs(2), &[1, 0, 0, 0, 0, 0, 0, 0]);
    let out: alloc::vec::Vec<ClientOutput> = core::iter::from_fn(|| c.poll_output()).collect();
    assert_eq!(
        out,
        vec![
            ClientOutput::Close,
            ClientOutput::Event(ClientEvent::ProtocolError(ClientError::Decode(
                crate::wire::DecodeError::BadLength { len: 1 }
            ))),
            ClientOutput::Event(ClientEvent::Disconnected { retry_at: secs(4) }),
        ]
    );
}
