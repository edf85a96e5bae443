//! Real nodes with etcd as their registry: registration and routing, and a proxy scale-out
//! under traffic that must leave every hash ring untouched and lose nothing.

#![cfg(feature = "etcd")]

mod etcd_support;

use std::{collections::BTreeMap, time::Duration};

use etcd_support::{
    EtcdServer,
    node::{
        STEP, direct_on_etcd, on_etcd, parse, payload, recv, start, wait_known, wait_links_up,
        within,
    },
};
use switchboard_core::{
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    outcome::Outcome,
};
use switchboard_tokio::{Inbox, NodeHandle, Received, TargetSpec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_register_in_etcd_and_route_by_what_they_read_there() {
    let etcd = EtcdServer::start().await;
    let (a, mut a_inbox) = start(direct_on_etcd(&etcd, "/sb/", 1, "alpha")).await;
    let (b, mut b_inbox) = start(direct_on_etcd(&etcd, "/sb/", 2, "beta")).await;
    wait_known(&a, &[1, 2]).await;
    wait_known(&b, &[1, 2]).await;

    // What each published, in libatapp's layout, is what the other one knows; besides, each
    // name's claim key (ARCHITECTURE §10).
    assert_eq!(
        etcd.keys("/sb/").await,
        [
            "/sb/by_id/alpha-1",
            "/sb/by_id/beta-2",
            "/sb/by_name/alpha-1",
            "/sb/by_name/beta-2",
            "/sb/names/alpha",
            "/sb/names/beta",
            "/sb/topology/alpha-1",
            "/sb/topology/beta-2",
        ]
    );
    for (node, name, id, other) in [(&a, "alpha", 1, &b), (&b, "beta", 2, &a)] {
        let by_id = etcd
            .get(&format!("/sb/by_id/{name}-{id}"))
            .await
            .expect("by_id");
        let by_name = etcd
            .get(&format!("/sb/by_name/{name}-{id}"))
            .await
            .expect("by_name");
        assert_eq!(by_id.value(), by_name.value());
        let info = DiscoveryInfo::from_json(by_id.value()).expect("libatapp JSON");
        assert_eq!((info.id, info.name.as_str()), (NodeId(id), name));
        let address = format!("atcp://127.0.0.1:{}", node.local_addr().port());
        assert_eq!(info.listen, vec![address.clone()]);
        assert_eq!(
            other.known().discovery.get(&NodeId(id)),
            Some(&vec![address])
        );
        let topology = etcd
            .get(&format!("/sb/topology/{name}-{id}"))
            .await
            .expect("topology");
        let topology = TopologyInfo::from_json(topology.value()).expect("libatapp JSON");
        assert_eq!(
            (topology.id, topology.upstream_id),
            (NodeId(id), NodeId::NONE)
        );
        assert_eq!(other.known().topology.get(&NodeId(id)), Some(&NodeId::NONE));
    }

    let hello = payload(1, 0);
    let outcome = within(
        "a -> b",
        a.send(TargetSpec::Id(NodeId(2)), 7, hello.clone()),
    )
    .await;
    assert_eq!(outcome, Ok(Outcome::Delivered));
    assert_eq!(
        recv(&mut b_inbox).await,
        Received::new(NodeId(1), NodeId(1), 7, hello)
    );
    let reply = payload(2, 0);
    let outcome = within(
        "b -> a by name",
        b.send(TargetSpec::Name("alpha".into()), 8, reply.clone()),
    )
    .await;
    assert_eq!(outcome, Ok(Outcome::Delivered));
    assert_eq!(
        recv(&mut a_inbox).await,
        Received::new(NodeId(2), NodeId(2), 8, reply)
    );

    // Graceful shutdown revokes each lease: nothing is left behind.
    for node in [&a, &b] {
        within("shutdown", node.shutdown()).await.expect("running");
    }
    assert_eq!(etcd.keys("/sb/").await, Vec::<String>::new());
}

const HUB: u64 = 0x100;
const P1: u64 = 0x110;
const P2: u64 = 0x140;
const SENDER: u64 = 0x120;
const RECEIVERS: [u64; 3] = [0x121, 0x122, 0x123];
const MESSAGES: u64 = 600;

async fn ring_updates(nodes: &[NodeHandle]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for node in nodes {
        let metrics = within("metrics", node.metrics()).await.expect("running");
        out.push((node.id().0, metrics.ring_updates));
    }
    out
}

/// Everything `inbox` delivers until it stays quiet for 500 ms: (sender, seq) pairs.
async fn drain(inbox: &mut Inbox) -> Vec<(u64, u64)> {
    let mut got = Vec::new();
    while let Ok(Some(message)) =
        tokio::time::timeout(Duration::from_millis(500), inbox.recv()).await
    {
        assert_eq!((message.from, message.msg_type), (NodeId(SENDER), 9));
        let (from, seq) = parse(&message.payload);
        assert_eq!(message.payload, payload(from, seq));
        got.push((from, seq));
    }
    got
}

/// The simulator's cluster shape on etcd: a hub, proxy 1 under it, a sender and three
/// receivers under proxy 1 (no direct links: traffic climbs the tree). Proxy 2 joins under
/// the hub; two receivers move to it while the sender keeps sending to all three.
///
/// The moves are topology-only: no hash ring anywhere changes. Nothing is lost: every send
/// gets exactly one outcome, a `Delivered` message arrived exactly once, a `Failed` one never
/// (a message in flight to a receiver that is just moving may fail when its new proxy has no
/// link to it yet — that is the core's decision, reported, not lost); no receiver sees a
/// duplicate; once the moves settled, every message is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_scale_out_under_traffic_leaves_rings_untouched_and_loses_nothing() {
    let etcd = EtcdServer::start().await;
    let (hub, _hub_inbox) = start(on_etcd(&etcd, "/sb/", HUB, "hub")).await;
    let (p1, _p1_inbox) = start(on_etcd(&etcd, "/sb/", P1, "proxy-1").upstream(NodeId(HUB))).await;
    let (sender, _s_inbox) =
        start(on_etcd(&etcd, "/sb/", SENDER, "sender").upstream(NodeId(P1))).await;
    let mut receivers = Vec::new();
    for id in RECEIVERS {
        let name = format!("receiver-{id}");
        receivers.push(start(on_etcd(&etcd, "/sb/", id, &name).upstream(NodeId(P1))).await);
    }
    // Scale out: the new proxy registers (a discovery change: rings are rebuilt here).
    let (p2, _p2_inbox) = start(on_etcd(&etcd, "/sb/", P2, "proxy-2").upstream(NodeId(HUB))).await;
    let everyone = [
        HUB,
        P1,
        P2,
        SENDER,
        RECEIVERS[0],
        RECEIVERS[1],
        RECEIVERS[2],
    ];
    let mut all: Vec<NodeHandle> = vec![hub.clone(), p1.clone(), p2.clone(), sender.clone()];
    all.extend(receivers.iter().map(|(node, _)| node.clone()));
    for node in &all {
        wait_known(node, &everyone).await;
    }
    wait_links_up(&hub, &[P1, P2]).await;
    wait_links_up(&p1, &[SENDER, RECEIVERS[0], RECEIVERS[1], RECEIVERS[2]]).await;
    let before = ring_updates(&all).await;

    // Traffic: the sender cycles over the receivers, many messages in flight.
    let target_of = |seq: u64| RECEIVERS[(seq % 3) as usize];
    let traffic = {
        let sender = sender.clone();
        tokio::spawn(async move {
            let mut pending = Vec::new();
            for seq in 0..MESSAGES {
                let accepted = sender
                    .submit(
                        TargetSpec::Id(NodeId(target_of(seq))),
                        9,
                        payload(SENDER, seq),
                    )
                    .await
                    .expect("accepted");
                pending.push((seq, accepted));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let mut outcomes = Vec::new();
            for (seq, accepted) in pending {
                let outcome = tokio::time::timeout(STEP, accepted)
                    .await
                    .expect("every send gets an outcome")
                    .expect("the sender is running");
                outcomes.push((seq, outcome));
            }
            outcomes
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    for (receiver, _) in &receivers[1..] {
        within("set upstream", receiver.set_upstream(NodeId(P2)))
            .await
            .expect("running");
    }
    for node in &all {
        let moved = node
            .wait_for(STEP, |k| {
                k.topology.get(&NodeId(RECEIVERS[1])) == Some(&NodeId(P2))
                    && k.topology.get(&NodeId(RECEIVERS[2])) == Some(&NodeId(P2))
            })
            .await;
        assert!(
            moved,
            "node {} did not see the moves: {:?}",
            node.id(),
            node.known()
        );
    }
    wait_links_up(&p2, &[RECEIVERS[1], RECEIVERS[2]]).await;
    let mut outcomes = within("traffic", traffic).await.expect("the traffic task");

    // Settled: every message is delivered.
    for seq in MESSAGES..MESSAGES + 30 {
        let outcome = within(
            "send after the moves",
            sender.send(
                TargetSpec::Id(NodeId(target_of(seq))),
                9,
                payload(SENDER, seq),
            ),
        )
        .await
        .expect("accepted");
        assert_eq!(outcome, Outcome::Delivered, "message {seq} after the moves");
        outcomes.push((seq, outcome));
    }

    let mut histogram: BTreeMap<String, u64> = BTreeMap::new();
    for (_, outcome) in &outcomes {
        *histogram.entry(format!("{outcome:?}")).or_default() += 1;
    }
    println!("outcomes of {} sends: {histogram:?}", outcomes.len());
    if histogram.len() != 1 {
        for node in &all {
            let status = within("status", node.status()).await.expect("running");
            let metrics = within("metrics", node.metrics()).await.expect("running");
            println!(
                "{:#x}: {metrics:?}\n  routes {:?}\n  links {:?}",
                node.id().0,
                status.routes,
                status.links
            );
        }
    }
    let mut received = BTreeMap::new();
    for (receiver, inbox) in &mut receivers {
        let got = drain(inbox).await;
        let mut seqs: Vec<u64> = got.iter().map(|(_, seq)| *seq).collect();
        seqs.sort_unstable();
        let count = seqs.len();
        seqs.dedup();
        assert_eq!(
            seqs.len(),
            count,
            "receiver {} got a duplicate",
            receiver.id()
        );
        for seq in seqs {
            assert_eq!(
                target_of(seq),
                receiver.id().0,
                "message {seq} at the wrong node"
            );
            received.insert(seq, receiver.id().0);
        }
    }
    for (seq, outcome) in &outcomes {
        match outcome {
            Outcome::Delivered => assert!(
                received.contains_key(seq),
                "{seq} delivered, never received"
            ),
            Outcome::Failed(reason) => {
                assert!(
                    !received.contains_key(seq),
                    "{seq} failed ({reason:?}) yet received"
                );
            }
            _ => {}
        }
    }
    // Topology-only changes: zero ring updates anywhere.
    assert_eq!(ring_updates(&all).await, before);
    for node in &all {
        within("shutdown", node.shutdown()).await.expect("running");
    }
}

/// A method served after start is republished in etcd: both discovery keys carry its label
/// (under the lease), and a node on the same etcd calls it and gets the exact reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_method_served_at_run_time_is_republished_in_etcd_and_called() {
    use bytes::Bytes;
    use switchboard_core::{CallOutcome, CallSpec, rpc::method_label};

    let etcd = EtcdServer::start().await;
    let (client, _) = start(direct_on_etcd(&etcd, "/rpc/", 11, "client")).await;
    let (server, _) = start(direct_on_etcd(&etcd, "/rpc/", 12, "server")).await;
    wait_known(&client, &[11, 12]).await;
    let mut requests = within("serve", server.serve("echo")).await.expect("served");
    tokio::spawn(async move {
        while let Some(request) = requests.recv().await {
            let answer = request.payload().clone();
            let _ = request.respond(answer).await;
        }
    });
    let label = method_label("echo");
    for key in ["/rpc/by_id/server-12", "/rpc/by_name/server-12"] {
        let mut served = false;
        for _ in 0..200 {
            let kv = etcd.get(key).await.expect("the server's key");
            let info = DiscoveryInfo::from_json(kv.value()).expect("libatapp JSON");
            assert_ne!(kv.lease(), 0, "{key} is written under the lease");
            if info.metadata.labels.get(&label).map(String::as_str) == Some("serve") {
                served = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(served, "{key} lists the method");
    }
    let spec =
        CallSpec::new("echo", Bytes::from_static(b"over etcd")).grace(Duration::from_secs(5));
    let outcome = within("call", client.call(spec)).await.expect("accepted");
    assert_eq!(
        outcome,
        CallOutcome::Reply(Bytes::from_static(b"over etcd"))
    );
}

/// The identity is a secret: every key a node writes (discovery by id and by name, topology)
/// carries only its published hash, never the secret itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_records_carry_the_identity_hash_never_the_secret() {
    let etcd = EtcdServer::start().await;
    let (node, _) = start(
        direct_on_etcd(&etcd, "/ident/", 21, "holder")
            .config(|c| c.identity = "etcd-identity-secret-21".to_owned()),
    )
    .await;
    let published = switchboard_core::discovery::published_identity("etcd-identity-secret-21");
    let mut keys = etcd.keys("/ident/").await;
    // Three record keys and the name's claim key, which holds only the id.
    assert_eq!(keys.len(), 4, "{keys:?}");
    keys.retain(|k| k != "/ident/names/holder");
    assert_eq!(
        keys.len(),
        3,
        "the claim key is /ident/names/holder: {keys:?}"
    );
    let claim = etcd
        .get("/ident/names/holder")
        .await
        .expect("the claim key");
    assert_eq!(claim.value(), b"21");
    for key in &keys {
        let kv = etcd.get(key).await.expect("the node's key");
        let text = String::from_utf8_lossy(kv.value()).into_owned();
        assert!(!text.contains("etcd-identity-secret-21"), "{key}: {text}");
        let identity = if key.contains("topology") {
            TopologyInfo::from_json(kv.value())
                .expect("libatapp JSON")
                .identity
        } else {
            DiscoveryInfo::from_json(kv.value())
                .expect("libatapp JSON")
                .identity
        };
        assert_eq!(identity, published, "{key}");
    }
    within("shutdown", node.shutdown()).await.expect("running");
}
