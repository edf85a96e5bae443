//! Tests of the registry network on its own: dials, drops and in-flight bytes reach the
//! right connection at exact instants (10 ms connect and link latency, no jitter).

use alloc::vec;

use super::{NetSettings, RegistryEvent, RegistryNet};
use crate::{
    registry::{
        client::ClientEvent,
        fixtures::{client_config, disc, secs},
        server::{RegistryServer, ServerConfig},
    },
    time::{Duration, Instant},
};

const G1: u64 = 1 << 40;

fn ms(n: u64) -> Instant {
    Instant::from_millis(n)
}

/// A net with a running server and 10 ms latencies.
fn net() -> RegistryNet {
    let settings = NetSettings {
        connect_latency: Duration::from_millis(10),
        link_latency: Duration::from_millis(10),
        ..NetSettings::default()
    };
    let mut net = RegistryNet::new(settings, ServerConfig::default(), Instant::ZERO);
    net.start_server();
    net
}

fn put(id: u64, revision: u64) -> RegistryEvent {
    let mut info = disc(id, "x");
    info.revision = revision;
    RegistryEvent::DiscoveryPut(info.into())
}

/// A dial the transport drops before it resolves fails at once; the client retries after its
/// backoff and registers (dial 10 ms, register 10 ms, snapshot 10 ms).
#[test]
fn a_dial_the_transport_drops_fails_at_once_and_the_client_retries() {
    let mut net = net();
    let epoch = net.server().map(RegistryServer::epoch);
    let m = net.add_member();
    net.start_client(m, client_config(disc(1, "x"), 101));
    net.advance_to(ms(5));
    net.drop_link(m);
    net.advance_to(secs(2));
    assert_eq!(
        net.take_client_events(m),
        vec![
            (ms(5), ClientEvent::Disconnected { retry_at: ms(1005) }),
            (
                ms(1035),
                ClientEvent::Registered {
                    epoch: epoch.expect("test: server"),
                    new_epoch: true,
                    in_grace: 0
                }
            ),
        ]
    );
    assert_eq!(net.take_registry(m), vec![(ms(1035), put(1, G1 | 1))]);
}

/// A `Put` in flight when its connection drops is lost with it; the client learns the peer
/// from the snapshot of its next connection, never from the old one.
#[test]
fn bytes_in_flight_on_a_dropped_connection_are_lost() {
    let mut net = net();
    let first = net.add_member();
    net.start_client(first, client_config(disc(1, "x"), 101));
    net.advance_to(secs(1));
    let second = net.add_member();
    net.start_client(second, client_config(disc(2, "x"), 102));
    // Node 2 registers at 1.020 s; its `Put` reaches node 1 at 1.030 s unless the link drops.
    net.advance_to(ms(1025));
    net.drop_link(first);
    net.advance_to(secs(3));
    assert_eq!(
        net.take_registry(first),
        vec![(ms(30), put(1, G1 | 1)), (ms(2055), put(2, G1 | 2))]
    );
}

/// A server that dies while its graceful close of a connection is still travelling resets
/// that connection too: the client hears the close when the server dies, not after its own
/// silence timeout.
#[test]
fn a_dying_server_resets_a_connection_it_was_closing() {
    let settings = NetSettings {
        connect_latency: Duration::from_millis(10),
        link_latency: Duration::from_millis(10),
        ..NetSettings::default()
    };
    let server = ServerConfig {
        heartbeat_timeout: Some(Duration::from_secs(1)),
        ..ServerConfig::default()
    };
    let mut net = RegistryNet::new(settings, server, Instant::ZERO);
    net.start_server();
    let epoch = net
        .server()
        .map(RegistryServer::epoch)
        .expect("test: server");
    let m = net.add_member();
    net.start_client(m, client_config(disc(1, "x"), 101));
    // Registered at 20 ms; silent until the server's cut-off at 1.020 s, whose `Bye` and
    // close would reach the client at 1.030 s.
    net.advance_to(ms(1025));
    net.kill_server();
    net.advance_to(ms(1500));
    assert_eq!(
        net.take_client_events(m),
        vec![
            (
                ms(30),
                ClientEvent::Registered {
                    epoch,
                    new_epoch: true,
                    in_grace: 0
                }
            ),
            (ms(1025), ClientEvent::Disconnected { retry_at: ms(2025) }),
        ]
    );
}
