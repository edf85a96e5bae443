use std::collections::BTreeMap;

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    time::timeout,
};

use super::*;

const WAIT: Duration = Duration::from_secs(10);

/// Fixed views; `None` answers as a stopped node.
#[derive(Clone)]
struct Fixed {
    metrics: Option<Metrics>,
    status: Option<Status>,
    conflict: Option<String>,
    registered: bool,
    unavailable: Option<String>,
}

impl AdminSource for Fixed {
    fn metrics(&self) -> impl Future<Output = Result<Metrics, Stopped>> + Send {
        let metrics = self.metrics.clone();
        async move { metrics.ok_or(Stopped) }
    }

    fn status(&self) -> impl Future<Output = Result<Status, Stopped>> + Send {
        let status = self.status.clone();
        async move { status.ok_or(Stopped) }
    }

    fn conflict(&self) -> Option<String> {
        self.conflict.clone()
    }

    fn registered(&self) -> bool {
        self.registered
    }

    fn unavailable(&self) -> Option<String> {
        self.unavailable.clone()
    }
}

/// A status as `/status` serves it. `Status` is the core's (`#[non_exhaustive]`: no struct
/// literal here), so the sample is parsed from this JSON; the test below then checks that the
/// server answers with exactly these bytes — every field name and value round-trips.
const SAMPLE_STATUS: &str = "{\"id\":7,\"name\":\"leaf-7\",\"incarnation\":\"18446744073709551557\",\"listen\":\"127.0.0.1:7100\",\
     \"upstream\":3,\"registered\":true,\"known_nodes\":4,\
     \"endpoints\":[{\"id\":9,\"name\":\"leaf-9\",\"pending\":2,\"unacked\":1}],\
     \"routes\":[{\"target\":9,\"flags\":[\"ready\"],\"proxy\":3,\"retry_count\":0}],\
     \"links\":[{\"link\":1,\"peer\":3,\"state\":\"up\",\"outbound\":true}],\
     \"perimeter\":{\"acks_off_route\":1,\"notices_off_route\":2,\"forged_sources\":3,\"unproven_refusals\":4},\
     \"peer_tables\":{\"links\":1,\"up_peers\":1,\"peer_incarnations\":2,\"recv_streams\":3,\"endpoints\":1,\
     \"known_incarnations\":1,\"routes\":1,\"route_links\":1,\"news_while_dialing\":0,\"suspects\":0,\"dead\":1,\
     \"relayed_targets\":0,\"relayed_sources\":0,\"clients\":0,\"departures\":1,\"discovery\":4,\
     \"discovery_tombstones\":5,\"topology\":4,\"topology_revisions\":9,\"rpc_servers\":0}}";

fn sample_status() -> Status {
    serde_json::from_str(SAMPLE_STATUS).expect("the sample is a status")
}

fn sample_metrics() -> Metrics {
    Metrics {
        sent: 5,
        outcomes: BTreeMap::from([("delivered".to_owned(), 5)]),
        received: 2,
        ..Metrics::default()
    }
}

async fn serve(source: Fixed) -> AdminServer {
    AdminServer::bind(SocketAddr::from(([127, 0, 0, 1], 0)), source)
        .await
        .expect("bind 127.0.0.1:0")
}

/// Sends raw request bytes and reads the whole answer (the server closes after it).
async fn exchange(addr: SocketAddr, request: &[u8]) -> String {
    timeout(WAIT, async {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream.write_all(request).await.expect("write");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("read");
        String::from_utf8(answer).expect("utf-8 answer")
    })
    .await
    .expect("answered in time")
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").into_bytes()
}

/// (status line, content type, body).
fn split(answer: &str) -> (&str, Option<&str>, &str) {
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let mut lines = head.lines();
    let status = lines.next().expect("a status line");
    let content_type = lines.find_map(|l| l.strip_prefix("content-type: "));
    (status, content_type, body)
}

#[tokio::test]
async fn metrics_are_served_as_prometheus_text() {
    let server = serve(Fixed {
        metrics: Some(sample_metrics()),
        status: None,
        conflict: None,
        registered: false,
        unavailable: None,
    })
    .await;
    let answer = exchange(server.local_addr(), &get("/metrics")).await;
    let (status, content_type, body) = split(&answer);
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(
        content_type,
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    // The node's families, then this process's (their figures move between reads: only
    // their names are fixed).
    let process = body
        .strip_prefix(prometheus::render(&sample_metrics()).as_str())
        .expect("the node's families first");
    assert_process_families(process);
    assert!(body.contains("\nswitchboard_sent_total 5\n"));
    assert!(body.contains("\nswitchboard_messages_total{outcome=\"delivered\",reason=\"\"} 5\n"));
}

#[tokio::test]
async fn status_is_served_as_json() {
    let server = serve(Fixed {
        metrics: None,
        status: Some(sample_status()),
        conflict: None,
        registered: false,
        unavailable: None,
    })
    .await;
    let answer = exchange(server.local_addr(), &get("/status")).await;
    let (status, content_type, body) = split(&answer);
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(content_type, Some("application/json"));
    assert_eq!(
        body,
        format!(
            "{},\"conflict\":null}}",
            &SAMPLE_STATUS[..SAMPLE_STATUS.len() - 1]
        )
    );
}

#[tokio::test]
async fn status_carries_the_registration_conflict() {
    let server = serve(Fixed {
        metrics: None,
        status: Some(sample_status()),
        conflict: Some("name \"leaf-7\" taken by id 8".to_owned()),
        registered: false,
        unavailable: None,
    })
    .await;
    let answer = exchange(server.local_addr(), &get("/status")).await;
    let (status, _, body) = split(&answer);
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(
        body,
        format!(
            "{},\"conflict\":\"name \\\"leaf-7\\\" taken by id 8\"}}",
            &SAMPLE_STATUS[..SAMPLE_STATUS.len() - 1]
        )
    );
}

#[tokio::test]
async fn other_paths_are_not_found_and_other_methods_not_allowed() {
    let server = serve(Fixed {
        metrics: Some(Metrics::default()),
        status: Some(sample_status()),
        conflict: None,
        registered: false,
        unavailable: None,
    })
    .await;
    let answer = exchange(server.local_addr(), &get("/nothing")).await;
    assert_eq!(split(&answer).0, "HTTP/1.1 404 Not Found");
    let answer = exchange(
        server.local_addr(),
        b"POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(split(&answer).0, "HTTP/1.1 405 Method Not Allowed");
    assert!(answer.contains("\r\nallow: GET, HEAD\r\n"), "{answer}");
    let answer = exchange(server.local_addr(), &get("/metrics?debug=1")).await;
    assert_eq!(
        split(&answer).0,
        "HTTP/1.1 200 OK",
        "a query string is ignored"
    );
}

#[tokio::test]
async fn a_malformed_request_is_a_bad_request() {
    let server = serve(Fixed {
        metrics: Some(Metrics::default()),
        status: None,
        conflict: None,
        registered: false,
        unavailable: None,
    })
    .await;
    let answer = exchange(server.local_addr(), b"\x00\x01garbage\r\n\r\n").await;
    assert!(
        answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{answer:?}"
    );
    // The server is still serving.
    let answer = exchange(server.local_addr(), &get("/metrics")).await;
    assert_eq!(split(&answer).0, "HTTP/1.1 200 OK");
}

#[tokio::test]
async fn a_stopped_node_is_service_unavailable() {
    let server = serve(Fixed {
        metrics: None,
        status: None,
        conflict: None,
        registered: false,
        unavailable: None,
    })
    .await;
    for path in ["/metrics", "/status"] {
        let answer = exchange(server.local_addr(), &get(path)).await;
        let (status, _, body) = split(&answer);
        assert_eq!(status, "HTTP/1.1 503 Service Unavailable");
        assert_eq!(body, "node stopped\n");
    }
}

#[tokio::test]
async fn dropping_the_server_stops_listening() {
    let server = serve(Fixed {
        metrics: Some(Metrics::default()),
        status: None,
        conflict: None,
        registered: false,
        unavailable: None,
    })
    .await;
    let addr = server.local_addr();
    drop(server);
    // The accept task is aborted at its next poll; the listener closes with it.
    let refused = timeout(WAIT, async {
        loop {
            if TcpStream::connect(addr).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(
        refused.is_ok(),
        "the port was still accepting after {WAIT:?}"
    );
}

#[tokio::test]
async fn healthz_answers_ok_even_for_a_stopped_node() {
    let server = serve(Fixed {
        metrics: None,
        status: None,
        conflict: None,
        registered: false,
        unavailable: None,
    })
    .await;
    let answer = exchange(server.local_addr(), &get("/healthz")).await;
    let (status, _, body) = split(&answer);
    assert_eq!((status, body), ("HTTP/1.1 200 OK", "ok\n"));
}

#[tokio::test]
async fn readyz_is_ok_only_while_registered_and_tells_why_not() {
    let no_leader = "by_id watcher: watch: etcdserver: no leader";
    let cases = [
        (true, None, None, "HTTP/1.1 200 OK", "ready\n"),
        (
            false,
            None,
            None,
            "HTTP/1.1 503 Service Unavailable",
            "not registered: the registry is unreachable or has not answered yet\n",
        ),
        (
            false,
            Some("name \"leaf-7\" taken by id 8".to_owned()),
            None,
            "HTTP/1.1 503 Service Unavailable",
            "not registered: registration refused: name \"leaf-7\" taken by id 8\n",
        ),
        // The backend's last word on the loss, on one line.
        (
            false,
            None,
            Some(format!("{no_leader}\r\n(retrying)")),
            "HTTP/1.1 503 Service Unavailable",
            "not registered: registry unavailable: by_id watcher: watch: etcdserver: no leader  \
             (retrying)\n",
        ),
        // A refusal is the stronger reason.
        (
            false,
            Some("id 7 held by another instance".to_owned()),
            Some(no_leader.to_owned()),
            "HTTP/1.1 503 Service Unavailable",
            "not registered: registration refused: id 7 held by another instance\n",
        ),
    ];
    for (registered, conflict, unavailable, want_status, want_body) in cases {
        let server = serve(Fixed {
            metrics: Some(Metrics::default()),
            status: None,
            conflict,
            registered,
            unavailable,
        })
        .await;
        let answer = exchange(server.local_addr(), &get("/readyz")).await;
        let (status, _, body) = split(&answer);
        assert_eq!((status, body), (want_status, want_body));
    }
    // A stopped node is not ready, whatever it last reported.
    let server = serve(Fixed {
        metrics: None,
        status: None,
        conflict: None,
        registered: true,
        unavailable: None,
    })
    .await;
    let answer = exchange(server.local_addr(), &get("/readyz")).await;
    let (status, _, body) = split(&answer);
    assert_eq!(
        (status, body),
        ("HTTP/1.1 503 Service Unavailable", "node stopped\n")
    );
}

/// A registry's fixed metrics; `None` answers as a stopped registry.
#[derive(Clone)]
struct FixedRegistry(Option<RegistryMetrics>);

impl RegistrySource for FixedRegistry {
    fn metrics(&self) -> impl Future<Output = Result<RegistryMetrics, Stopped>> + Send {
        let metrics = self.0;
        async move { metrics.ok_or(Stopped) }
    }
}

#[tokio::test]
async fn a_registry_serves_metrics_and_healthz_only() {
    let metrics = RegistryMetrics {
        nodes_live: 2,
        connections: 3,
        ..RegistryMetrics::default()
    };
    let server = AdminServer::bind_registry(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        FixedRegistry(Some(metrics)),
    )
    .await
    .expect("bind 127.0.0.1:0");
    let answer = exchange(server.local_addr(), &get("/metrics")).await;
    let (status, content_type, body) = split(&answer);
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(content_type, Some(prometheus::CONTENT_TYPE));
    let process = body
        .strip_prefix(prometheus::render_registry(&metrics).as_str())
        .expect("the registry's families first");
    assert_process_families(process);
    let answer = exchange(server.local_addr(), &get("/healthz")).await;
    assert_eq!(split(&answer).0, "HTTP/1.1 200 OK");
    for path in ["/status", "/readyz"] {
        let answer = exchange(server.local_addr(), &get(path)).await;
        assert_eq!(split(&answer).0, "HTTP/1.1 404 Not Found", "{path}");
    }

    let stopped =
        AdminServer::bind_registry(SocketAddr::from(([127, 0, 0, 1], 0)), FixedRegistry(None))
            .await
            .expect("bind 127.0.0.1:0");
    let answer = exchange(stopped.local_addr(), &get("/metrics")).await;
    let (status, _, body) = split(&answer);
    assert_eq!(
        (status, body),
        ("HTTP/1.1 503 Service Unavailable", "registry stopped\n")
    );
}

fn metrics_source() -> Fixed {
    Fixed {
        metrics: Some(sample_metrics()),
        status: None,
        conflict: None,
        registered: true,
        unavailable: None,
    }
}

/// `GET path` with extra header lines (each ending in `\r\n`), closing after the answer.
fn get_with(path: &str, headers: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: admin\r\n{headers}Connection: close\r\n\r\n").into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_held_open_do_not_delay_a_request() {
    let server = serve(metrics_source()).await;
    let addr = server.local_addr();
    let mut idle = Vec::new();
    for _ in 0..200 {
        idle.push(
            TcpStream::connect(addr)
                .await
                .expect("connect an idle socket"),
        );
    }
    // Let the server accept them all.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = std::time::Instant::now();
    let answer = exchange(addr, &get("/metrics")).await;
    let took = started.elapsed();
    println!("/metrics with 200 idle connections held open: {took:?}");
    assert_eq!(split(&answer).0, "HTTP/1.1 200 OK");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    drop(idle);
}

#[tokio::test]
async fn with_a_token_every_request_needs_it() {
    let server = AdminServer::bind_with(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        metrics_source(),
        AdminOptions {
            token: Some("t0ken-secret".to_owned()),
        },
    )
    .await
    .expect("bind");
    let addr = server.local_addr();
    for headers in [
        "",
        "Authorization: Bearer wrong-token\r\n",
        "Authorization: Bearer t0ken-secreT\r\n",
        "Authorization: Basic dDBrZW4tc2VjcmV0\r\n",
        "Authorization: t0ken-secret\r\n",
    ] {
        for path in ["/metrics", "/healthz", "/nope"] {
            let answer = exchange(addr, &get_with(path, headers)).await;
            let (status, _, body) = split(&answer);
            assert_eq!(status, "HTTP/1.1 401 Unauthorized", "{path} {headers:?}");
            assert_eq!(body, "unauthorized\n");
            assert!(answer.contains("www-authenticate: Bearer"), "{answer}");
        }
    }
    let answer = exchange(
        addr,
        &get_with("/metrics", "Authorization: Bearer t0ken-secret\r\n"),
    )
    .await;
    assert_eq!(split(&answer).0, "HTTP/1.1 200 OK");
    assert!(
        !format!(
            "{:?}",
            AdminOptions {
                token: Some("t0ken-secret".to_owned())
            }
        )
        .contains("t0ken")
    );
}

#[tokio::test]
async fn oversized_requests_are_refused() {
    let server = serve(metrics_source()).await;
    let addr = server.local_addr();
    // A head larger than the limit: 431 (or the connection closed without an answer).
    let big = format!("X-Filler: {}\r\n", "a".repeat(MAX_HEAD_BYTES * 2));
    let answer = exchange(addr, &get_with("/metrics", &big)).await;
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431 "),
        "{}",
        answer.lines().next().unwrap_or_default()
    );
    // A body: 413.
    let request = format!(
        "POST /metrics HTTP/1.1\r\nHost: admin\r\nContent-Length: {}\r\n\r\n",
        MAX_BODY_BYTES + 1
    );
    let answer = exchange(addr, request.as_bytes()).await;
    assert_eq!(split(&answer).0, "HTTP/1.1 413 Payload Too Large");
    // Still serving.
    let answer = exchange(addr, &get("/metrics")).await;
    assert_eq!(split(&answer).0, "HTTP/1.1 200 OK");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_the_limit_of_talking_connections_a_new_one_is_closed_at_once() {
    let server = serve(metrics_source()).await;
    let addr = server.local_addr();
    let mut talking = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        // Half a request head: the connection has spoken and waits for the rest.
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\n")
            .await
            .expect("write");
        talking.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = std::time::Instant::now();
    // Closed without an answer: an end of stream, or a reset (the request was unread).
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let _ = stream.write_all(&get("/metrics")).await;
    let mut answer = Vec::new();
    let read = timeout(WAIT, stream.read_to_end(&mut answer))
        .await
        .expect("closed in time");
    assert!(read.is_err() || answer.is_empty(), "answered: {answer:?}");
    assert!(started.elapsed() < Duration::from_secs(1));
    drop(talking);
}

#[tokio::test]
async fn a_silent_connection_is_cut_after_the_header_read_timeout() {
    let server = serve(metrics_source()).await;
    let started = std::time::Instant::now();
    let mut stream = TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    let mut rest = Vec::new();
    let read = timeout(HEADER_READ_TIMEOUT * 3, stream.read_to_end(&mut rest)).await;
    assert!(
        read.is_ok(),
        "still open after {:?}",
        HEADER_READ_TIMEOUT * 3
    );
    let took = started.elapsed();
    assert!(
        took >= HEADER_READ_TIMEOUT - Duration::from_millis(100),
        "{took:?}"
    );
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_cut_after_the_header_read_timeout() {
    let server = serve(metrics_source()).await;
    let mut stream = TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: admin\r\n\r\n")
        .await
        .expect("write");
    let mut first = vec![0u8; 4096];
    let n = timeout(WAIT, stream.read(&mut first))
        .await
        .expect("answered in time")
        .expect("read");
    assert!(first[..n].starts_with(b"HTTP/1.1 200 OK"));
    // Kept alive, then silent: closed after the timeout.
    let idle_from = std::time::Instant::now();
    let mut rest = Vec::new();
    let read = timeout(HEADER_READ_TIMEOUT * 3, stream.read_to_end(&mut rest)).await;
    assert!(
        read.is_ok(),
        "still open after {:?}",
        HEADER_READ_TIMEOUT * 3
    );
    let took = idle_from.elapsed();
    assert!(
        took >= HEADER_READ_TIMEOUT - Duration::from_millis(100),
        "{took:?}"
    );
}

/// `text` is exactly the `process_*` families of this process: on Linux all six, each a
/// HELP, a TYPE and one sample line; elsewhere none.
fn assert_process_families(text: &str) {
    let names: Vec<&str> = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| line.split_once(' ').map_or(line, |(name, _)| name))
        .collect();
    let expected: &[&str] = if cfg!(target_os = "linux") {
        &process::FAMILIES
    } else {
        &[]
    };
    assert_eq!(names, expected, "{text}");
    assert_eq!(text.lines().count(), 3 * expected.len(), "{text}");
}
