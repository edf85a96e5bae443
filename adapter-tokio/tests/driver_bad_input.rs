//! Hostile bytes over real TCP: garbage and lying handshakes to a node's listen port close
//! that connection only; garbage to the registry closes that connection only.

mod support;

use std::net::SocketAddr;

use switchboard_core::{
    bus::handshake::PROTOCOL_VERSIONS,
    ids::NodeId,
    outcome::Outcome,
    wire::{self, ByeReason, Decoded, Frame, RefuseReason},
};
use switchboard_tokio::TargetSpec;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use support::{direct, init_logs, payload, recv_n, start, start_registry, wait_known, within};

/// Connects to `addr`, writes `bytes`, and reads until the other side closes; returns what
/// it sent back.
async fn poke(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    within("poke", async {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        stream.write_all(bytes).await.expect("writes");
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) => return got,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
                Err(e) => panic!("read failed: {e}"),
            }
        }
    })
    .await
}

/// The frames in `bytes`, by kind and the fields the tests check.
fn frames(mut bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        match wire::decode(bytes, wire::DEFAULT_MAX_FRAME) {
            Ok(Decoded::Frame(frame, used)) => {
                out.push(match frame {
                    Frame::HelloAck(ack) => {
                        format!("HelloAck node={} {:?}", ack.node.0, ack.result)
                    }
                    Frame::Bye(bye) => format!("Bye {:?}", bye.reason),
                    other => format!("{:?}", other.kind()),
                });
                bytes = &bytes[used..];
            }
            other => panic!("undecodable reply: {other:?}"),
        }
    }
    out
}

fn hello(node: u64, incarnation: u64) -> Vec<u8> {
    let mut bytes = Vec::new();
    let hello = wire::Hello {
        node: NodeId(node),
        incarnation,
        versions: PROTOCOL_VERSIONS,
        name: "liar",
        challenge: None,
    };
    wire::encode(&Frame::Hello(hello), &mut bytes).expect("encodes");
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_connections_are_closed_and_everyone_else_is_served() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (a, mut a_inbox) = start(direct(addr, 1, "alpha")).await;
    let (b, mut b_inbox) = start(direct(addr, 2, "beta")).await;
    wait_known(&a, &[1, 2]).await;
    let outcome = within(
        "a -> b",
        a.send(TargetSpec::Id(NodeId(2)), 1, payload(1, 0, 16)),
    )
    .await;
    assert_eq!(outcome, Ok(Outcome::Delivered));

    // Garbage: a length far over the frame limit. Closed without a word.
    let reply = poke(a.local_addr(), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert_eq!(frames(&reply), Vec::<String>::new());
    // A Hello claiming to be beta (live on another link, another incarnation): refused.
    let reply = poke(a.local_addr(), &hello(2, 0xdead_beef)).await;
    assert_eq!(frames(&reply), vec!["HelloAck node=1 Err(DuplicateId)"]);
    // A Hello claiming to be alpha itself: refused.
    let reply = poke(a.local_addr(), &hello(1, 7)).await;
    assert_eq!(
        frames(&reply),
        vec![format!(
            "HelloAck node=1 Err({:?})",
            RefuseReason::InvalidHello
        )]
    );
    // Garbage to the registry: a protocol-error goodbye, then the close.
    let reply = poke(
        addr,
        &[
            0x10, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7, 8,
        ],
    )
    .await;
    assert_eq!(
        frames(&reply),
        vec![format!("Bye {:?}", ByeReason::ProtocolError)]
    );

    // Everyone else is served: the existing link carries traffic both ways, and the registry
    // still registers and announces a new node.
    let outcome = within(
        "a -> b",
        a.send(TargetSpec::Id(NodeId(2)), 1, payload(1, 1, 16)),
    )
    .await;
    assert_eq!(outcome, Ok(Outcome::Delivered));
    let outcome = within(
        "b -> a",
        b.send(TargetSpec::Id(NodeId(1)), 1, payload(2, 0, 16)),
    )
    .await;
    assert_eq!(outcome, Ok(Outcome::Delivered));
    let got = recv_n(&mut b_inbox, 2).await;
    assert_eq!(
        got.iter().map(|r| r.payload.clone()).collect::<Vec<_>>(),
        vec![payload(1, 0, 16), payload(1, 1, 16)]
    );
    assert_eq!(recv_n(&mut a_inbox, 1).await[0].payload, payload(2, 0, 16));
    let (c, mut c_inbox) = start(direct(addr, 3, "gamma")).await;
    wait_known(&a, &[3]).await;
    let outcome = within(
        "a -> c",
        a.send(TargetSpec::Id(NodeId(3)), 1, payload(1, 2, 16)),
    )
    .await;
    assert_eq!(outcome, Ok(Outcome::Delivered));
    assert_eq!(recv_n(&mut c_inbox, 1).await[0].payload, payload(1, 2, 16));

    let m = within("metrics", a.metrics()).await.expect("running");
    assert_eq!(m.links_rejected, 3);
    assert_eq!(m.outcomes.get("delivered"), Some(&3));
    let status = within("status", a.status()).await.expect("running");
    let peers: Vec<Option<u64>> = status.links.iter().map(|l| l.peer).collect();
    assert_eq!(
        peers,
        vec![Some(2), Some(3)],
        "only the real peers' links remain"
    );
    let _ = c;
    registry.kill();
}
