//! A MioNode and a tokio node on one embedded registry (run by switchboard-tokio on a
//! background runtime): exact payloads both ways, in order, each with `Delivered`; and a
//! graceful shutdown seen from the tokio side; calls by method both ways (a mio server
//! answers a tokio caller, a tokio server answers a mio caller).

mod support;

use std::time::Duration;

use switchboard_core::{
    backoff::BackoffConfig,
    ids::NodeId,
    outcome::{FailReason, Outcome},
    select::Select,
};
use switchboard_tokio::{NodeBuilder, NodeHandle, TargetSpec, registry::client::ClientTuning};

use support::{STEP, World, direct, fast, mio_node, payload, pump_until};

const COUNT: u64 = 200;

/// A root tokio node that may link any node directly, with fast test settings.
fn start_tokio(world: &World, id: u64, name: &str) -> (NodeHandle, switchboard_tokio::Inbox) {
    let tuning = {
        let mut tuning = ClientTuning::default();
        tuning.backoff = Some(BackoffConfig::without_jitter(
            Duration::from_millis(100),
            Duration::from_millis(300),
            0,
        ));
        tuning.heartbeat_interval = Some(Duration::from_millis(500));
        tuning
    };
    let builder = NodeBuilder::new(NodeId(id), name)
        .registry(world.addr())
        .registry_tuning(tuning)
        .config(|c| {
            fast(c);
            direct(c);
        });
    world
        .rt
        .block_on(async { tokio::time::timeout(STEP, builder.start()).await })
        .expect("the tokio node starts in time")
        .expect("the tokio node starts")
}

#[test]
fn mio_and_tokio_nodes_exchange_exact_payloads_in_order() {
    let world = World::start();
    let (tokio_node, mut inbox) = start_tokio(&world, 1, "tokio-1");
    let mut mio = mio_node(Some(world.addr()), 2, "mio-2", direct);

    pump_until("the mio node learns both nodes", &mut [&mut mio], |p| {
        p[0].knows(&[1, 2])
    });
    let known = world
        .rt
        .block_on(tokio_node.wait_known(&[NodeId(1), NodeId(2)], STEP));
    assert!(known, "the tokio node learns the mio node");

    // tokio → mio: 200 messages submitted at once, outcomes awaited in the background.
    let sender = tokio_node.clone();
    let tokio_side = world.rt.spawn(async move {
        let mut pending = Vec::new();
        for seq in 0..COUNT {
            let p = sender
                .submit(TargetSpec::Id(NodeId(2)), 5, payload(1, seq, 48))
                .await
                .expect("accepted");
            pending.push(p);
        }
        let mut outcomes = Vec::new();
        for p in pending {
            outcomes.push(
                tokio::time::timeout(STEP, p)
                    .await
                    .expect("in time")
                    .expect("running"),
            );
        }
        let mut received = Vec::new();
        while received.len() < COUNT as usize {
            let msg = tokio::time::timeout(STEP, inbox.recv())
                .await
                .expect("in time")
                .expect("running");
            received.push(msg);
        }
        (outcomes, received)
    });

    // mio → tokio: 200 messages.
    let mut sent = Vec::new();
    for seq in 0..COUNT {
        let msg = mio
            .node
            .send(Select::Node(NodeId(1)), 6, payload(2, seq, 48))
            .expect("accepted");
        sent.push(msg);
    }
    pump_until("both directions complete", &mut [&mut mio], |p| {
        p[0].received.len() == COUNT as usize
            && p[0].outcomes.len() == COUNT as usize
            && tokio_side.is_finished()
    });

    let expected_at_mio: Vec<_> = (0..COUNT)
        .map(|seq| (NodeId(1), NodeId(1), 5, payload(1, seq, 48)))
        .collect();
    assert_eq!(mio.received, expected_at_mio);
    let expected_outcomes: Vec<_> = sent.iter().map(|m| (*m, Outcome::Delivered)).collect();
    assert_eq!(mio.outcomes, expected_outcomes);

    let (tokio_outcomes, tokio_received) = world
        .rt
        .block_on(tokio_side)
        .expect("the tokio side did not panic");
    assert_eq!(tokio_outcomes, vec![Outcome::Delivered; COUNT as usize]);
    let got: Vec<_> = tokio_received
        .into_iter()
        .map(|r| (r.from, r.via, r.msg_type, r.payload))
        .collect();
    let expected_at_tokio: Vec<_> = (0..COUNT)
        .map(|seq| (NodeId(2), NodeId(2), 6, payload(2, seq, 48)))
        .collect();
    assert_eq!(got, expected_at_tokio);
}

#[test]
fn graceful_shutdown_fails_queued_messages_and_the_tokio_peer_sees_the_node_leave() {
    let world = World::start();
    let (tokio_node, _inbox) = start_tokio(&world, 1, "tokio-1");
    let mut mio = mio_node(Some(world.addr()), 2, "mio-2", direct);
    pump_until("the mio node learns both nodes", &mut [&mut mio], |p| {
        p[0].knows(&[1, 2])
    });
    let known = world
        .rt
        .block_on(tokio_node.wait_known(&[NodeId(1), NodeId(2)], STEP));
    assert!(known, "the tokio node learns the mio node");
    assert_eq!(tokio_node.known().discovery.len(), 2);

    // Node 99 is not in the registry: its messages wait in its queue for its discovery.
    let queued: Vec<_> = (0..5)
        .map(|seq| {
            mio.node
                .send(Select::Node(NodeId(99)), 1, payload(2, seq, 16))
                .expect("accepted")
        })
        .collect();
    mio.pump();
    assert_eq!(mio.node.node().inspect().pending(NodeId(99)), 5);
    assert!(mio.outcomes.is_empty());

    mio.node.shutdown().expect("the poll works");
    mio.take_events();
    let expected: Vec<_> = queued
        .iter()
        .map(|m| (*m, Outcome::Failed(FailReason::Shutdown)))
        .collect();
    assert_eq!(mio.outcomes, expected);
    assert_eq!(
        mio.node.send(Select::Node(NodeId(1)), 1, payload(2, 9, 16)),
        Err(switchboard_core::node::SendError::Shutdown)
    );

    // The registry removes the node at once on its goodbye (no disconnect protection).
    let left = world
        .rt
        .block_on(tokio_node.wait_for(STEP, |k| !k.discovery.contains_key(&NodeId(2))));
    assert!(
        left,
        "the tokio node saw the mio node leave: {:?}",
        tokio_node.known()
    );
    assert_eq!(tokio_node.known().discovery.len(), 1);
}

#[test]
fn a_mio_server_answers_a_tokio_caller_and_a_tokio_server_a_mio_caller() {
    use bytes::Bytes;
    use switchboard_core::{CallOutcome, CallSpec, RpcOutput};

    let world = World::start();
    let (tokio_node, _inbox) = start_tokio(&world, 1, "tokio-1");
    let mut mio = mio_node(Some(world.addr()), 2, "mio-2", direct);
    assert_eq!(mio.node.serve("mio.echo"), Ok(true));
    let mut served = world
        .rt
        .block_on(tokio_node.serve("tokio.echo"))
        .expect("the tokio node serves");
    world.rt.spawn(async move {
        while let Some(request) = served.recv().await {
            let mut answer = b"tokio:".to_vec();
            answer.extend_from_slice(request.payload());
            let _ = request.respond(Bytes::from(answer)).await;
        }
    });
    pump_until("the mio node learns both nodes", &mut [&mut mio], |p| {
        p[0].knows(&[1, 2])
    });

    // tokio → mio: the mio application answers the request it polls.
    let caller = tokio_node.clone();
    let call = world.rt.spawn(async move {
        let spec =
            CallSpec::new("mio.echo", Bytes::from_static(b"ping")).grace(Duration::from_secs(5));
        tokio::time::timeout(STEP, caller.call(spec)).await
    });
    pump_until("the mio node gets the request", &mut [&mut mio], |p| {
        p[0].rpc.iter().any(|o| matches!(o, RpcOutput::Request(_)))
    });
    let Some(RpcOutput::Request(request)) = mio.rpc.pop() else {
        panic!("not a request: {:?}", mio.rpc);
    };
    assert_eq!(request.method, "mio.echo");
    assert_eq!(request.from, NodeId(1));
    assert_eq!(request.payload, Bytes::from_static(b"ping"));
    let mut answer = b"mio:".to_vec();
    answer.extend_from_slice(&request.payload);
    mio.node
        .reply(request.request, Bytes::from(answer))
        .expect("the answer is taken");
    pump_until("the tokio call ends", &mut [&mut mio], |_| {
        call.is_finished()
    });
    let outcome = world
        .rt
        .block_on(call)
        .expect("no panic")
        .expect("in time")
        .expect("accepted");
    assert_eq!(outcome, CallOutcome::Reply(Bytes::from_static(b"mio:ping")));

    // mio → tokio.
    let spec =
        CallSpec::new("tokio.echo", Bytes::from_static(b"pong")).grace(Duration::from_secs(5));
    let id = mio.node.call(spec).expect("accepted");
    pump_until("the mio call ends", &mut [&mut mio], |p| {
        p[0].rpc
            .iter()
            .any(|o| matches!(o, RpcOutput::CallDone { .. }))
    });
    assert_eq!(
        mio.rpc.pop(),
        Some(RpcOutput::CallDone {
            call: id,
            outcome: CallOutcome::Reply(Bytes::from_static(b"tokio:pong")),
            server: Some(tokio_node.id()),
            metadata: switchboard_core::CallMetadata::new(),
        })
    );
}
