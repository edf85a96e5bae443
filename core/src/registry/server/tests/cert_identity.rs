//! Registrations bound to transport credentials ([`RegistryServer::bind_conn_identity`]): a
//! connection whose certificate names node ids registers only one of them.

use alloc::{string::ToString, vec, vec::Vec};

use super::*;
use crate::registry::fixtures::{disc, secs};

fn register(id: u64) -> Vec<u8> {
    let reg = Register {
        watch: false,
        incarnation: 101,
        discovery: disc(id, "x"),
        topology: None,
        proof: None,
    };
    let mut out = Vec::new();
    wire::encode(&reg.into(), &mut out).expect("test: encodable");
    out
}

#[test]
fn a_register_for_an_id_the_certificate_does_not_name_is_refused_and_nothing_is_listed() {
    let mut s = RegistryServer::new(ServerConfig::default(), 3);
    let conn = s.handle_accepted(secs(0));
    s.bind_conn_identity(conn, &[NodeId(7)]);
    s.handle_received(secs(0), conn, &register(8));
    let out: Vec<ServerOutput> = core::iter::from_fn(|| s.poll_output()).collect();
    assert_eq!(
        out,
        vec![
            ServerOutput::Transmit {
                conn,
                bytes: vec![9, 0, 0, 0, 1, 8, 0, 0, 2] // Bye{ProtocolError}
            },
            ServerOutput::Close { conn },
            ServerOutput::Event(ServerEvent::ProtocolError {
                conn,
                error: ProtocolError::NotCertified {
                    claimed: NodeId(8),
                    certified: vec![NodeId(7)],
                },
            }),
        ]
    );
    assert_eq!(s.entries(), vec![]);
    assert_eq!(s.connection_count(), 0);
    assert_eq!(
        ProtocolError::NotCertified {
            claimed: NodeId(8),
            certified: vec![NodeId(7)],
        }
        .to_string(),
        "register of node NodeId(8), but the certificate names [NodeId(7)]"
    );
}

#[test]
fn a_register_for_a_certified_id_is_listed_and_unbound_connections_take_any_id() {
    let mut s = RegistryServer::new(ServerConfig::default(), 3);
    let bound = s.handle_accepted(secs(0));
    s.bind_conn_identity(bound, &[NodeId(9), NodeId(7)]);
    s.handle_received(secs(0), bound, &register(7));
    let free = s.handle_accepted(secs(0));
    s.handle_received(secs(0), free, &register(8));
    while s.poll_output().is_some() {}
    let ids: Vec<u64> = s.entries().iter().map(|e| e.discovery.id.0).collect();
    assert_eq!(ids, vec![7, 8]);
    // Binding after the registration changes nothing; unknown connections are ignored.
    s.bind_conn_identity(free, &[NodeId(1)]);
    s.bind_conn_identity(ConnId(999), &[NodeId(1)]);
    assert_eq!(s.poll_output(), None);
    assert_eq!(s.connection_count(), 2);
}
