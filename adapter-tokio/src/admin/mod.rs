//! The admin endpoint of a node or a registry: a small HTTP/1.1 server.
//!
//! For a node ([`AdminServer::bind`], `switchboard node --admin ADDR`): `GET /metrics` with
//! Prometheus text ([`prometheus::render`] of the node's [`Metrics`]), `GET /status` with the
//! JSON of its [`Status`], `GET /healthz` (200 `ok` while the process serves) and
//! `GET /readyz` (200 `ready` while the node is registered and its registry feed is live,
//! else 503 with a one-line reason).
//!
//! For an embedded registry ([`AdminServer::bind_registry`],
//! `switchboard registry --admin ADDR`): `GET /metrics` ([`prometheus::render_registry`] of
//! its [`RegistryMetrics`]) and `GET /healthz`.
//!
//! Every request asks the node or registry afresh; nothing is cached. Other paths answer 404,
//! other methods 405, malformed requests 400 (from hyper), and a stopped or unresponsive node
//! or registry 503. Input from the socket never panics the server. Dropping the
//! [`AdminServer`] stops it and every open connection.

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
    observe::{Metrics, RegistryMetrics, Status},
    registry::server::RegistryStats,
};

/// Connections served at once; more wait in the accept backlog.
pub const MAX_CONNECTIONS: usize = 64;
/// A client must send its request head within this.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Bound on asking the node (or registry) for its metrics or status; past it the answer is
/// 503.
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
    /// Whether the node is registered and its registry feed live now
    /// ([`crate::observe::Known::registered`]).
    fn registered(&self) -> bool;
}

/// Where a registry's admin server gets its metrics: a running registry
/// ([`RegistryStats`]), or fixed values in tests.
pub trait RegistrySource: Clone + Send + Sync + 'static {
    /// The registry's counters and gauges now.
    fn metrics(&self) -> impl Future<Output = Result<RegistryMetrics, Stopped>> + Send;
}

impl RegistrySource for RegistryStats {
    async fn metrics(&self) -> Result<RegistryMetrics, Stopped> {
        RegistryStats::metrics(self).await.ok_or(Stopped)
    }
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

    fn registered(&self) -> bool {
        self.known().registered
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
        AdminServer::serve(addr, NodeRoutes(source)).await
    }

    /// Binds `addr` and serves a registry's `source` (`/metrics`, `/healthz`) on it until the
    /// returned server is dropped.
    ///
    /// # Errors
    ///
    /// The bind failed.
    pub async fn bind_registry<S: RegistrySource>(
        addr: SocketAddr,
        source: S,
    ) -> io::Result<AdminServer> {
        AdminServer::serve(addr, RegistryRoutes(source)).await
    }

    async fn serve<R: Routes>(addr: SocketAddr, routes: R) -> io::Result<AdminServer> {
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let task = tokio::spawn(accept_loop(listener, routes));
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
async fn accept_loop<R: Routes>(listener: TcpListener, source: R) {
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
async fn respond<R: Routes>(routes: &R, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let route = match request.uri().path() {
        "/metrics" => Route::Metrics,
        "/status" => Route::Status,
        "/healthz" => Route::Healthz,
        "/readyz" => Route::Readyz,
        _ => return not_found(),
    };
    if !routes.serves(route) {
        return not_found();
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        response
            .headers_mut()
            .insert(ALLOW, hyper::header::HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    if route == Route::Healthz {
        // The process serves requests: that is all liveness asks.
        return plain(StatusCode::OK, "ok\n");
    }
    routes.answer(route).await
}

/// The served paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Metrics,
    Status,
    Healthz,
    Readyz,
}

/// What one kind of source serves: which [`Route`]s, and their answers (`/healthz` is
/// answered by [`respond`] for every kind).
trait Routes: Clone + Send + Sync + 'static {
    fn serves(&self, route: Route) -> bool;
    fn answer(&self, route: Route) -> impl Future<Output = Response<Full<Bytes>>> + Send;
}

/// A node's routes: every [`Route`].
#[derive(Clone)]
struct NodeRoutes<S>(S);

impl<S: AdminSource> Routes for NodeRoutes<S> {
    fn serves(&self, _route: Route) -> bool {
        true
    }

    async fn answer(&self, route: Route) -> Response<Full<Bytes>> {
        let source = &self.0;
        match route {
            Route::Metrics => {
                match tokio::time::timeout(NODE_QUERY_TIMEOUT, source.metrics()).await {
                    Ok(Ok(metrics)) => with_body(
                        StatusCode::OK,
                        prometheus::CONTENT_TYPE,
                        prometheus::render(&metrics).into(),
                    ),
                    Ok(Err(Stopped)) => plain(StatusCode::SERVICE_UNAVAILABLE, "node stopped\n"),
                    Err(_) => plain(StatusCode::SERVICE_UNAVAILABLE, "node did not answer\n"),
                }
            }
            Route::Status => {
                match tokio::time::timeout(NODE_QUERY_TIMEOUT, source.status()).await {
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
                }
            }
            // Ready: the node's loop answers, and it is registered with a live feed.
            Route::Readyz => match tokio::time::timeout(NODE_QUERY_TIMEOUT, source.metrics()).await
            {
                Ok(Ok(_)) => match not_ready(source) {
                    None => plain(StatusCode::OK, "ready\n"),
                    Some(reason) => plain(StatusCode::SERVICE_UNAVAILABLE, &format!("{reason}\n")),
                },
                Ok(Err(Stopped)) => plain(StatusCode::SERVICE_UNAVAILABLE, "node stopped\n"),
                Err(_) => plain(StatusCode::SERVICE_UNAVAILABLE, "node did not answer\n"),
            },
            Route::Healthz => plain(StatusCode::OK, "ok\n"),
        }
    }
}

/// Why a running node is not ready (one line), or `None` when it is.
fn not_ready<S: AdminSource>(source: &S) -> Option<String> {
    if source.registered() {
        return None;
    }
    Some(match source.conflict() {
        Some(conflict) => format!("not registered: registration refused: {conflict}"),
        None => "not registered: the registry is unreachable or has not answered yet".to_owned(),
    })
}

/// A registry's routes: `/metrics` and `/healthz`.
#[derive(Clone)]
struct RegistryRoutes<S>(S);

impl<S: RegistrySource> Routes for RegistryRoutes<S> {
    fn serves(&self, route: Route) -> bool {
        matches!(route, Route::Metrics | Route::Healthz)
    }

    async fn answer(&self, route: Route) -> Response<Full<Bytes>> {
        match route {
            Route::Metrics => {
                match tokio::time::timeout(NODE_QUERY_TIMEOUT, self.0.metrics()).await {
                    Ok(Ok(metrics)) => with_body(
                        StatusCode::OK,
                        prometheus::CONTENT_TYPE,
                        prometheus::render_registry(&metrics).into(),
                    ),
                    Ok(Err(Stopped)) => {
                        plain(StatusCode::SERVICE_UNAVAILABLE, "registry stopped\n")
                    }
                    Err(_) => plain(StatusCode::SERVICE_UNAVAILABLE, "registry did not answer\n"),
                }
            }
            Route::Healthz => plain(StatusCode::OK, "ok\n"),
            Route::Status | Route::Readyz => not_found(),
        }
    }
}

fn not_found() -> Response<Full<Bytes>> {
    plain(StatusCode::NOT_FOUND, "not found\n")
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
