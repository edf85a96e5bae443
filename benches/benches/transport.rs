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
//! - `.../ours_direct_acked_post_auth`: the direct route of a second cluster whose bus and
//!   registry links authenticate with a cluster key (HMAC-SHA256 challenge-response); the
//!   bench then prints one line `transport auth/plain: ...` with both throughputs and their
//!   ratio.
//! - `.../ours_direct_acked_post_tls` (feature `tls`): the direct route of a second cluster
//!   whose links and registry connections run mutual TLS (throwaway CA made here); the bench
//!   then prints one line `transport tls/plain: ...` with both throughputs and their ratio.
//!
//! Run: `cargo bench -p switchboard-benches --bench transport` (about 20 s; `-- --test` runs
//! each once); with TLS: `cargo bench -p switchboard-benches --features tls --bench transport`.

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
use switchboard_core::ClusterKey;
use switchboard_tokio::Transport;
use tokio::runtime::Runtime;

#[cfg(feature = "tls")]
#[path = "../../adapter-tokio/tests/tls_certs/mod.rs"]
#[allow(unreachable_pub, reason = "shared by path with other crates")]
mod tls_certs;

/// Messages and time summed over a bench function's measured runs.
#[derive(Default)]
struct Tally(std::cell::Cell<(u64, Duration)>);

impl Tally {
    fn add(&self, iters: u64, elapsed: Duration) -> Duration {
        let (n, t) = self.0.get();
        self.0.set((n + iters, t + elapsed));
        elapsed
    }

    fn per_sec(&self) -> f64 {
        let (n, t) = self.0.get();
        n as f64 / t.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

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
    let keyed = run_on_workers(&rt, async {
        let key = ClusterKey::from_hex(&"a7".repeat(32)).expect("a 64-hex-digit key");
        OursCluster::start_with(Duration::from_secs(15), Transport::plain(), &[key]).await
    })
    .expect("authenticated node cluster starts");
    #[cfg(feature = "tls")]
    let (_pki, tls_cluster) = {
        let dir = tempfile::tempdir().expect("temp dir");
        let leaf = tls_certs::Ca::new("bench").leaf(dir.path(), "node");
        let config = switchboard_tokio::transport::tls::TlsConfig::from_files(
            &leaf.cert, &leaf.key, &leaf.ca,
        )
        .expect("TLS config");
        let transport = switchboard_tokio::Transport::tls(config);
        let cluster = run_on_workers(&rt, async move {
            OursCluster::start_with(Duration::from_secs(15), transport, &[]).await
        })
        .expect("TLS node cluster starts");
        (dir, cluster)
    };
    let plain = Tally::default();
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
        b.iter_custom(|iters| {
            plain.add(
                iters,
                ours_elapsed(&rt, &cluster.direct, SendApi::Post, iters),
            )
        });
    });
    let auth = Tally::default();
    group.bench_function("ours_direct_acked_post_auth", |b| {
        b.iter_custom(|iters| {
            auth.add(
                iters,
                ours_elapsed(&rt, &keyed.direct, SendApi::Post, iters),
            )
        });
    });
    #[cfg(feature = "tls")]
    let tls = Tally::default();
    #[cfg(feature = "tls")]
    group.bench_function("ours_direct_acked_post_tls", |b| {
        b.iter_custom(|iters| {
            tls.add(
                iters,
                ours_elapsed(&rt, &tls_cluster.direct, SendApi::Post, iters),
            )
        });
    });
    group.bench_function("ours_direct_acked_submit", |b| {
        b.iter_custom(|iters| ours_elapsed(&rt, &cluster.direct, SendApi::Submit, iters));
    });
    group.bench_function("ours_proxied_acked_post", |b| {
        b.iter_custom(|iters| ours_elapsed(&rt, &cluster.proxied, SendApi::Post, iters));
    });
    group.finish();
    println!(
        "transport auth/plain (64 B, direct acked post, window {WINDOW}): plain {:.0} msg/s, \
         auth {:.0} msg/s, ratio {:.1} %",
        plain.per_sec(),
        auth.per_sec(),
        100.0 * auth.per_sec() / plain.per_sec()
    );
    rt.block_on(keyed.shutdown(Duration::from_secs(2)));
    #[cfg(feature = "tls")]
    {
        let (plain, tls) = (plain.per_sec(), tls.per_sec());
        println!(
            "transport tls/plain (64 B, direct acked post, window {WINDOW}): plain {plain:.0} msg/s, \
             tls {tls:.0} msg/s, ratio {:.1} %",
            100.0 * tls / plain
        );
        rt.block_on(tls_cluster.shutdown(Duration::from_secs(2)));
    }

    rt.block_on(cluster.shutdown(Duration::from_secs(2)));
    drop(echo);
}

criterion_group!(benches, transport);
criterion_main!(benches);
