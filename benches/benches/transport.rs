//! Transport throughput: switchboard-tokio against a raw tokio length-delimited echo, 64-byte
//! messages over loopback, a window of 256 in flight, on a 2-worker runtime.
//!
//! - `transport_64B_window256/baseline_tokio_echo`: frame → echo round trips over one TCP
//!   connection (hand-rolled u32-length framing, batched reads and writes on both ends).
//! - `.../ours_direct_acked_post`: `NodeHandle::post` → `Outcome::Delivered` from node A to
//!   its upstream B (data out, the core's ack back) over one link.
//! - `.../ours_direct_acked_submit`: the same with `NodeHandle::submit` (which waits for the
//!   driver to accept each message before the next).
//! - `.../ours_proxied_acked_post`: `post` from A to B through a proxy both are below.
//!
//! One iteration is one message; criterion's elements/s is round trips per second. Latency
//! percentiles at a paced rate are in the `transport-report` binary, not here.
//!
//! Run: `cargo bench -p switchboard-benches --bench transport` (about 20 s; `-- --test` runs
//! each once).

use std::{
    net::{Ipv4Addr, SocketAddr},
    time::Duration,
};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use switchboard_benches::transport::{
    baseline::{ClientWrites, EchoServer, run_baseline},
    load::{Load, Stop},
    ours::{OursCluster, OursRoute, SendApi, run_ours},
    run_on_workers, runtime,
};
use tokio::runtime::Runtime;

const WINDOW: usize = 256;
const LOOPBACK: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

fn counted(iters: u64) -> Load {
    Load {
        in_flight: WINDOW,
        rate_per_sec: None,
        stop: Stop::Count(iters),
    }
}

/// Time for `iters` acked messages on `route` (from the first send to the last outcome).
fn ours_elapsed(rt: &Runtime, route: &OursRoute, api: SendApi, iters: u64) -> Duration {
    let route = route.clone();
    let run = run_on_workers(
        rt,
        async move { run_ours(&route, &counted(iters), api).await },
    )
    .expect("ours run");
    assert_eq!(
        run.completed, iters,
        "every message delivered: {:?}",
        run.failures
    );
    run.elapsed
}

fn transport(c: &mut Criterion) {
    let rt = runtime().expect("a 2-worker runtime");
    let (echo, cluster) = run_on_workers(&rt, async {
        let echo = EchoServer::bind(LOOPBACK)
            .await
            .map_err(|e| switchboard_benches::transport::BenchError::io("bind echo", e))?;
        let cluster = OursCluster::start(Duration::from_secs(15)).await?;
        Ok((echo, cluster))
    })
    .expect("echo server and node cluster start");
    let echo_addr = echo.local_addr();

    let mut group = c.benchmark_group("transport_64B_window256");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(1));
    group.bench_function("baseline_tokio_echo", |b| {
        b.iter_custom(|iters| {
            let run = run_on_workers(&rt, async move {
                run_baseline(echo_addr, &counted(iters), ClientWrites::Batched).await
            })
            .expect("baseline run");
            assert_eq!(run.completed, iters, "every frame echoed");
            run.elapsed
        });
    });
    group.bench_function("ours_direct_acked_post", |b| {
        b.iter_custom(|iters| ours_elapsed(&rt, &cluster.direct, SendApi::Post, iters));
    });
    group.bench_function("ours_direct_acked_submit", |b| {
        b.iter_custom(|iters| ours_elapsed(&rt, &cluster.direct, SendApi::Submit, iters));
    });
    group.bench_function("ours_proxied_acked_post", |b| {
        b.iter_custom(|iters| ours_elapsed(&rt, &cluster.proxied, SendApi::Post, iters));
    });
    group.finish();

    rt.block_on(cluster.shutdown(Duration::from_secs(2)));
    drop(echo);
}

criterion_group!(benches, transport);
criterion_main!(benches);
