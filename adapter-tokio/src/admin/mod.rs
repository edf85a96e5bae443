//! The admin endpoint of a node or a registry: a small HTTP/1.1 server.
//!
//! For a node ([`AdminServer::bind`], `switchboard node --admin ADDR`): `GET /metrics` with
//! Prometheus text ([`prometheus::render`] of the node's [`Metrics`]), `GET /status` with the
//! JSON of its [`Status`], `GET /healthz` (200 `ok` while the process serves) and
//! `GET /readyz` (200 `ready` while the node is registered and its registry feed is live,
//! else 503 with a one-line reason: the registration refused and why, or the registry
//! unavailable and why — its backend's last word, e.g. etcd's "no leader" or a failed dial).
//!
//! For an embedded registry ([`AdminServer::bind_registry`],
//! `switchboard registry --admin ADDR`): `GET /metrics` ([`prometheus::render_registry`] of
//! its [`RegistryMetrics`]) and `GET /healthz`.
//!
//! Both `/metrics` end with the standard `process_*` families of the serving process
//! ([`process::ProcessMetrics`], read from `/proc/self` on Linux; absent elsewhere).
//!
//! Every request asks the node or registry afresh; nothing is cached. Other paths answer 404,
//! other methods 405, malformed requests 400 (from hyper), and a stopped or unresponsive node
//! or registry 503. Input from the socket never panics the server. Dropping the
//! [`AdminServer`] stops it and every open connection.
//!
//! Hardening ([`AdminOptions`]): with a token, every request must carry
//! `Authorization: Bearer <token>` or is answered 401 (the token is never logged). A request
//! head larger than [`MAX_HEAD_BYTES`] is answered 431 and a request with a body (more than
//! [`MAX_BODY_BYTES`], or chunked) 413, both closing the connection. At most
//! [`MAX_CONNECTIONS`] connections are open at once: when full, a new connection evicts the
//! oldest one that has not sent a byte yet, or is closed at once when every open one has
//! spoken — so idle sockets held open cannot delay a real request. A client must send each
//! request head (the first one, and the next one on a kept-alive connection) within
//! [`HEADER_READ_TIMEOUT`], else the connection is closed.

pub mod process;
pub mod prometheus;

use std::{
    collections::VecDeque,
    convert::Infallible,
    future::Future,
    io,
    net::SocketAddr,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{
    Method, Request, Response, StatusCode,
    body::Incoming,
    header::{
        ALLOW, AUTHORIZATION, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING,
        WWW_AUTHENTICATE,
    },
    server::conn::http1,
    service::service_fn,
};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
    task::{AbortHandle, JoinSet},
};

use crate::{
    node::{NodeHandle, Stopped},
    observe::{Metrics, RegistryMetrics, Status},
    registry::server::RegistryStats,
};

/// Connections open at once. When full, a new connection evicts the oldest one that has
/// not sent a byte yet; when every open one has spoken, the new one is closed at once.
pub const MAX_CONNECTIONS: usize = 64;
/// A client must send each request head within this (the first one after connecting, and
/// the next one on a kept-alive connection: it is also the idle keep-alive timeout).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(2);
/// Largest request head (request line and headers) read; a larger one is answered 431.
/// (hyper's smallest read buffer.)
pub const MAX_HEAD_BYTES: usize = 8192;
/// Largest request body accepted (the endpoint takes none); more, or a chunked body, is
/// answered 413.
pub const MAX_BODY_BYTES: u64 = 1024;
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
    /// Why the registry backend last said the registry is lost, while the node is not
    /// registered ([`crate::observe::Known::unavailable`]). `None` by default.
    fn unavailable(&self) -> Option<String> {
        None
    }
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

    fn unavailable(&self) -> Option<String> {
        self.known().unavailable
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

/// How an admin server guards itself beyond the fixed limits (see the module docs).
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct AdminOptions {
    /// When set, every request must carry `Authorization: Bearer <token>`, else 401.
    pub token: Option<String>,
}

impl AdminOptions {
    /// The options with this bearer token (`None`: no token required).
    #[must_use]
    pub fn with_token(token: Option<String>) -> AdminOptions {
        AdminOptions { token }
    }
}

impl std::fmt::Debug for AdminOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a secret: never printed.
        f.debug_struct("AdminOptions")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
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
        AdminServer::bind_with(addr, source, AdminOptions::default()).await
    }

    /// [`AdminServer::bind`] with `options` (a bearer token).
    ///
    /// # Errors
    ///
    /// The bind failed.
    pub async fn bind_with<S: AdminSource>(
        addr: SocketAddr,
        source: S,
        options: AdminOptions,
    ) -> io::Result<AdminServer> {
        AdminServer::serve(addr, NodeRoutes(source), options).await
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
        AdminServer::bind_registry_with(addr, source, AdminOptions::default()).await
    }

    /// [`AdminServer::bind_registry`] with `options` (a bearer token).
    ///
    /// # Errors
    ///
    /// The bind failed.
    pub async fn bind_registry_with<S: RegistrySource>(
        addr: SocketAddr,
        source: S,
        options: AdminOptions,
    ) -> io::Result<AdminServer> {
        AdminServer::serve(addr, RegistryRoutes(source), options).await
    }

    async fn serve<R: Routes>(
        addr: SocketAddr,
        routes: R,
        options: AdminOptions,
    ) -> io::Result<AdminServer> {
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let guard = Arc::new(Guard {
            token: options.token,
        });
        let task = tokio::spawn(accept_loop(listener, routes, guard));
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

/// What every request is checked against before it is routed.
struct Guard {
    token: Option<String>,
}

/// One open connection as the accept loop tracks it.
struct Open {
    id: tokio::task::Id,
    abort: AbortHandle,
    /// Set once the client has sent a byte.
    spoke: Arc<AtomicBool>,
}

/// Accepts connections and serves each on a task of its own, at most [`MAX_CONNECTIONS`]
/// at once (see the module docs for who is evicted); aborting this task drops the
/// `JoinSet`, which aborts every connection.
async fn accept_loop<R: Routes>(listener: TcpListener, source: R, guard: Arc<Guard>) {
    let mut connections = JoinSet::new();
    let mut open: VecDeque<Open> = VecDeque::new();
    loop {
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
        while let Some(done) = connections.try_join_next_with_id() {
            let id = match done {
                Ok((id, ())) => id,
                Err(e) => e.id(),
            };
            open.retain(|c| c.id != id);
        }
        if open.len() >= MAX_CONNECTIONS {
            match open.iter().position(|c| !c.spoke.load(Ordering::Relaxed)) {
                Some(silent) => {
                    if let Some(evicted) = open.remove(silent) {
                        evicted.abort.abort();
                    }
                }
                None => {
                    tracing::debug!("admin connection closed at once: {MAX_CONNECTIONS} open");
                    drop(stream);
                    continue;
                }
            }
        }
        let spoke = Arc::new(AtomicBool::new(false));
        let io = Watched {
            stream,
            spoke: Arc::clone(&spoke),
        };
        let source = source.clone();
        let guard = Arc::clone(&guard);
        let abort = connections.spawn(async move {
            let service = service_fn(move |request| {
                let source = source.clone();
                let guard = Arc::clone(&guard);
                async move { Ok::<_, Infallible>(guarded(&guard, &source, &request).await) }
            });
            let served = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .max_buf_size(MAX_HEAD_BYTES)
                .serve_connection(TokioIo::new(io), service)
                .await;
            if let Err(e) = served {
                tracing::debug!(error = %e, "admin connection ended with an error");
            }
        });
        open.push_back(Open {
            id: abort.id(),
            abort,
            spoke,
        });
    }
}

/// A connection's socket that notes when the client first sends a byte.
struct Watched {
    stream: TcpStream,
    spoke: Arc<AtomicBool>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.spoke.store(true, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The answer to one request after the guard's checks: 401 without the token, 413 with a
/// body (both close the connection).
async fn guarded<R: Routes>(
    guard: &Guard,
    routes: &R,
    request: &Request<Incoming>,
) -> Response<Full<Bytes>> {
    if let Some(token) = &guard.token
        && !bearer_matches(request, token)
    {
        let mut response = plain(StatusCode::UNAUTHORIZED, "unauthorized\n");
        response.headers_mut().insert(
            WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer"),
        );
        return response;
    }
    let headers = request.headers();
    let length = headers
        .get(CONTENT_LENGTH)
        .map(|v| v.to_str().ok().and_then(|t| t.trim().parse::<u64>().ok()));
    let too_large = match length {
        Some(Some(n)) => n > MAX_BODY_BYTES,
        Some(None) => true,
        None => headers.contains_key(TRANSFER_ENCODING),
    };
    if too_large {
        let mut response = plain(StatusCode::PAYLOAD_TOO_LARGE, "request body too large\n");
        response
            .headers_mut()
            .insert(CONNECTION, hyper::header::HeaderValue::from_static("close"));
        return response;
    }
    respond(routes, request).await
}

/// Whether the request carries `Authorization: Bearer <token>` (compared in constant time).
fn bearer_matches(request: &Request<Incoming>, token: &str) -> bool {
    let Some(given) = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
    else {
        return false;
    };
    let expected = token.as_bytes();
    if given.len() != expected.len() {
        return false;
    }
    given
        .iter()
        .zip(expected)
        .fold(0u8, |diff, (a, b)| diff | (a ^ b))
        == 0
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
                        with_process(prometheus::render(&metrics)),
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
    Some(match (source.conflict(), source.unavailable()) {
        (Some(conflict), _) => format!("not registered: registration refused: {conflict}"),
        (None, Some(why)) => format!(
            "not registered: registry unavailable: {}",
            why.replace(['\r', '\n'], " ")
        ),
        (None, None) => {
            "not registered: the registry is unreachable or has not answered yet".to_owned()
        }
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
                        with_process(prometheus::render_registry(&metrics)),
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

/// A `/metrics` body: `families`, then this process's `process_*` families (read now).
fn with_process(mut families: String) -> Bytes {
    let process = process::ProcessMetrics::read();
    families.push_str(&prometheus::render_process(&process));
    families.into()
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
