//! The admin endpoint of a node: a small HTTP/1.1 server answering `GET /metrics` with
//! Prometheus text ([`prometheus::render`] of the node's [`Metrics`]) and `GET /status` with
//! the JSON of its [`Status`].
//!
//! Start it with [`AdminServer::bind`] next to a running node (`switchboard node --admin ADDR`
//! does). Every request asks the node afresh; nothing is cached. Other paths answer 404, other
//! methods 405, malformed requests 400 (from hyper), and a stopped or unresponsive node 503.
//! Input from the socket never panics the server. Dropping the [`AdminServer`] stops it and
//! every open connection.

pub mod prometheus;

use std::{convert::Infallible, future::Future, io, net::SocketAddr, sync::Arc, time::Duration};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{
    Method, Request, Response, StatusCode,
    body::Incoming,
    header::{ALLOW, CONTENT_TYPE},
    server::conn::http1,
    service::service_fn,
};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::{net::TcpListener, sync::Semaphore, task::JoinSet};

use crate::{
    node::{NodeHandle, Stopped},
    observe::{Metrics, Status},
};

/// Connections served at once; more wait in the accept backlog.
pub const MAX_CONNECTIONS: usize = 64;
/// A client must send its request head within this.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Bound on asking the node for its metrics or status; past it the answer is 503.
pub const NODE_QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the admin server gets what it serves: a running node ([`NodeHandle`]), or anything
/// else that can produce the same views (tests use fixed values).
pub trait AdminSource: Clone + Send + Sync + 'static {
    /// The node's counters and gauges now.
    fn metrics(&self) -> impl Future<Output = Result<Metrics, Stopped>> + Send;
    /// The node's status now.
    fn status(&self) -> impl Future<Output = Result<Status, Stopped>> + Send;
    /// Why the registry refuses the node's registration now, if it does
    /// ([`crate::observe::Known::conflict`]).
    fn conflict(&self) -> Option<String>;
}

impl AdminSource for NodeHandle {
    fn metrics(&self) -> impl Future<Output = Result<Metrics, Stopped>> + Send {
        NodeHandle::metrics(self)
    }

    fn status(&self) -> impl Future<Output = Result<Status, Stopped>> + Send {
        NodeHandle::status(self)
    }

    fn conflict(&self) -> Option<String> {
        self.known().conflict
    }
}

/// The `/status` JSON: the node's [`Status`] with the registration conflict (`null` when
/// there is none) as a last key.
#[derive(serde::Serialize)]
struct StatusBody<'a> {
    #[serde(flatten)]
    status: &'a Status,
    conflict: Option<String>,
}

/// A running admin server. Dropping it stops the server and closes its connections.
#[derive(Debug)]
pub struct AdminServer {
    local_addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl AdminServer {
    /// Binds `addr` and serves `source` on it until the returned server is dropped.
    ///
    /// # Errors
    ///
    /// The bind failed.
    pub async fn bind<S: AdminSource>(addr: SocketAddr, source: S) -> io::Result<AdminServer> {
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let task = tokio::spawn(accept_loop(listener, source));
        Ok(AdminServer { local_addr, task })
    }

    /// The address it listens on (the real port when bound to port 0).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

impl Drop for AdminServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Accepts connections and serves each on a task of its own; aborting this task drops the
/// `JoinSet`, which aborts every connection.
async fn accept_loop<S: AdminSource>(listener: TcpListener, source: S) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _peer)) => stream,
            Err(e) => {
                // Per-connection errors (aborted handshakes) and fd exhaustion: back off a
                // little rather than spin.
                tracing::debug!(error = %e, "admin accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let source = source.clone();
        connections.spawn(async move {
            let service = service_fn(move |request| {
                let source = source.clone();
                async move { Ok::<_, Infallible>(respond(&source, &request).await) }
            });
            let served = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                tracing::debug!(error = %e, "admin connection ended with an error");
            }
            drop(permit);
        });
    }
}

/// The answer to one request.
async fn respond<S: AdminSource>(source: &S, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let route = match request.uri().path() {
        "/metrics" => Route::Metrics,
        "/status" => Route::Status,
        _ => return plain(StatusCode::NOT_FOUND, "not found\n"),
    };
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        response
            .headers_mut()
            .insert(ALLOW, hyper::header::HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    match route {
        Route::Metrics => match tokio::time::timeout(NODE_QUERY_TIMEOUT, source.metrics()).await {
            Ok(Ok(metrics)) => with_body(
                StatusCode::OK,
                prometheus::CONTENT_TYPE,
                prometheus::render(&metrics).into(),
            ),
            Ok(Err(Stopped)) => plain(StatusCode::SERVICE_UNAVAILABLE, "node stopped\n"),
            Err(_) => plain(StatusCode::SERVICE_UNAVAILABLE, "node did not answer\n"),
        },
        Route::Status => match tokio::time::timeout(NODE_QUERY_TIMEOUT, source.status()).await {
            Ok(Ok(status)) => match serde_json::to_vec(&StatusBody {
                status: &status,
                conflict: source.conflict(),
            }) {
                Ok(json) => with_body(StatusCode::OK, "application/json", json.into()),
                Err(e) => plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("cannot encode status: {e}\n"),
                ),
            },
            Ok(Err(Stopped)) => plain(StatusCode::SERVICE_UNAVAILABLE, "node stopped\n"),
            Err(_) => plain(StatusCode::SERVICE_UNAVAILABLE, "node did not answer\n"),
        },
    }
}

/// The served paths.
enum Route {
    Metrics,
    Status,
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    with_body(
        status,
        "text/plain; charset=utf-8",
        Bytes::copy_from_slice(text.as_bytes()),
    )
}

fn with_body(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}

#[cfg(test)]
mod tests;
