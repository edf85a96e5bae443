//! Calls by method, serving and broadcast on tokio: [`NodeHandle::call`],
//! [`NodeHandle::serve`] (a [`Requests`] stream, each [`Request`] answered with
//! [`Request::respond`]) and [`NodeHandle::broadcast`]. The core decides everything (which
//! server, grace, fast-fail, deadlines, exactly-once); the driver only routes its
//! `Output::Rpc` to the futures and streams here (ARCHITECTURE §11).

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
};

use bytes::Bytes;
use switchboard_core::{
    BroadcastDone, BroadcastSpec, CallError, CallId, CallMetadata, CallOutcome, CallSpec,
    ReplyError, RequestId, ids::NodeId, node::SendError, wire::RefuseCall,
};
use tokio::sync::{mpsc, oneshot};
use tracing::{Instrument, Span};

use super::{Command, NodeHandle, Stopped, trace};

/// RPC commands from handles to the driver.
#[derive(Debug)]
pub(crate) enum RpcCommand {
    Call {
        spec: CallSpec,
        accepted: oneshot::Sender<Result<CallId, CallError>>,
        done: oneshot::Sender<CallReport>,
    },
    Cancel(CallId),
    Serve {
        method: String,
        requests: mpsc::UnboundedSender<Request>,
        /// The concurrency limit ([`NodeHandle::serve_bounded`]); `None`: unbounded.
        limit: Option<Limit>,
        done: oneshot::Sender<Result<(), ReplyError>>,
    },
    Unserve {
        method: String,
        /// Only this stream's registration is removed (a newer `serve` of the same method
        /// replaced it otherwise).
        requests: mpsc::UnboundedSender<Request>,
        /// Requests handed to the stream and never read: declined (their handler never ran).
        unread: Vec<RequestId>,
    },
    Reply {
        request: RequestId,
        payload: Bytes,
        metadata: CallMetadata,
        done: oneshot::Sender<Result<(), ReplyError>>,
    },
    /// Refuse a request unexecuted: `Overloaded` ([`Request::shed`]) or `NotServed` (a
    /// served service failed: [`NodeHandle::serve_service`]); `done` says whether it was
    /// waiting.
    Refuse {
        request: RequestId,
        reason: RefuseCall,
        done: oneshot::Sender<bool>,
    },
    Broadcast {
        spec: BroadcastSpec,
        done: oneshot::Sender<Result<BroadcastDone, SendError>>,
    },
    ServeInline {
        method: String,
        serving: u64,
        handler: Handler,
        done: oneshot::Sender<Result<(), ReplyError>>,
    },
    UnserveInline {
        method: String,
        serving: u64,
    },
}

/// A handler run on the driver task ([`NodeHandle::serve_inline`]).
pub type InlineHandler = dyn FnMut(&InlineRequest<'_>) -> Bytes + Send + 'static;

/// An inline handler as it crosses the command queue.
pub(crate) struct Handler(pub(crate) Box<InlineHandler>);

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Handler(..)")
    }
}

/// One request as an inline handler sees it.
#[derive(Debug)]
#[non_exhaustive]
pub struct InlineRequest<'a> {
    /// The calling node.
    pub from: NodeId,
    /// The method called.
    pub method: &'a str,
    /// The request's payload.
    pub payload: &'a Bytes,
    /// The caller's metadata (trace context, ...), byte for byte.
    pub metadata: &'a CallMetadata,
    /// The time the caller still waits.
    pub remaining: std::time::Duration,
}

/// How a call ended, with what the caller may want to print or trace
/// ([`NodeHandle::call_report`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallReport {
    /// How the call ended.
    pub outcome: CallOutcome,
    /// The server its request went to last: the one that answered, for a reply; `None`
    /// when no request was out when it ended.
    pub server: Option<NodeId>,
    /// That server's name in this node's discovery set when the call ended (`None` when
    /// there is no server or its record is gone).
    pub server_name: Option<String>,
    /// The metadata the handler answered with (empty unless it set some).
    pub metadata: CallMetadata,
    /// From the node accepting the call to its outcome, on the node's clock.
    pub latency: std::time::Duration,
}

/// Numbers inline registrations (an older one's drop must not unserve a newer one).
static NEXT_INLINE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A method served by an inline handler; dropping it stops serving the method (as dropping
/// [`Requests`] does).
#[derive(Debug)]
pub struct InlineServing {
    method: String,
    serving: u64,
    commands: mpsc::Sender<Command>,
}

impl InlineServing {
    /// The method served.
    #[must_use]
    pub fn method(&self) -> &str {
        &self.method
    }
}

impl Drop for InlineServing {
    fn drop(&mut self) {
        // Best effort, as for `Requests`.
        let _ = self
            .commands
            .try_send(Command::Rpc(RpcCommand::UnserveInline {
                method: std::mem::take(&mut self.method),
                serving: self.serving,
            }));
    }
}

/// The concurrency limit of a method served with [`NodeHandle::serve_bounded`]: how many of
/// its requests may be handed to its stream and not yet answered or dropped.
#[derive(Clone, Debug)]
pub(crate) struct Limit {
    max: usize,
    in_flight: Arc<AtomicUsize>,
}

impl Limit {
    fn new(max: usize) -> Limit {
        Limit {
            max,
            in_flight: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A place for one more request, or `None` at the limit. Only the driver takes places
    /// (requests only give them back), so the check and the take cannot race past `max`.
    pub(crate) fn take(&self) -> Option<InFlight> {
        if self.in_flight.load(Ordering::Acquire) >= self.max {
            return None;
        }
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        Some(InFlight(Arc::clone(&self.in_flight)))
    }
}

/// One request's place under its method's [`Limit`], given back when the request is answered,
/// shed or dropped.
#[derive(Debug)]
pub(crate) struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Why a call has no outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallFailure {
    /// The core refused the call (bad method name, ...); nothing was sent.
    #[error(transparent)]
    Refused(#[from] CallError),
    /// The node's driver stopped before the call ended.
    #[error("the node is stopped")]
    Stopped,
}

/// Why a broadcast has no report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BroadcastFailure {
    /// The core refused the broadcast; nothing was sent.
    #[error(transparent)]
    Refused(#[from] SendError),
    /// The node's driver stopped before every recipient had an outcome.
    #[error("the node is stopped")]
    Stopped,
}

/// Why an answer was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RespondFailure {
    /// The core no longer waits for it (the caller cancelled, its deadline passed, or the
    /// request was answered already).
    #[error(transparent)]
    Refused(#[from] ReplyError),
    /// The node's driver has stopped.
    #[error("the node is stopped")]
    Stopped,
}

/// One request for a method this node serves. Answer it with [`respond`](Self::respond); a
/// request dropped unanswered gets no reply (its caller's call ends at its deadline,
/// `Unknown(Timeout)`).
#[derive(Debug)]
pub struct Request {
    id: RequestId,
    from: NodeId,
    method: String,
    payload: Bytes,
    metadata: CallMetadata,
    remaining: std::time::Duration,
    span: Span,
    arrived: std::time::Instant,
    commands: mpsc::Sender<Command>,
    /// Its place under the method's concurrency limit, if it has one.
    in_flight: Option<InFlight>,
}

impl Request {
    pub(crate) fn new(
        request: switchboard_core::IncomingRequest,
        remaining: std::time::Duration,
        span: Span,
        commands: mpsc::Sender<Command>,
        in_flight: Option<InFlight>,
    ) -> Request {
        Request {
            id: request.request,
            from: request.from,
            method: request.method,
            payload: request.payload,
            metadata: request.metadata,
            remaining,
            span,
            arrived: std::time::Instant::now(),
            commands,
            in_flight,
        }
    }

    /// The caller's metadata (trace context, ...), byte for byte as it sent it.
    #[must_use]
    pub fn metadata(&self) -> &CallMetadata {
        &self.metadata
    }

    /// The request's `rpc.serve` span: run the handler in it
    /// (`handler.instrument(request.span().clone())`) so its own spans and events nest
    /// under the request. It closes when the request is answered or dropped.
    #[must_use]
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// Puts a request held since the start under the limit of the stream that takes it.
    pub(crate) fn set_in_flight(&mut self, in_flight: InFlight) {
        self.in_flight = Some(in_flight);
    }

    /// The core's id of this request.
    #[must_use]
    pub fn id(&self) -> RequestId {
        self.id
    }

    /// The calling node.
    #[must_use]
    pub fn from(&self) -> NodeId {
        self.from
    }

    /// The method called.
    #[must_use]
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The request's payload.
    #[must_use]
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// The time the caller still waits, as it was when the request reached this node: an
    /// answer later than this is dropped.
    #[must_use]
    pub fn remaining(&self) -> std::time::Duration {
        self.remaining
    }

    /// Answers the request (application errors travel inside `payload`).
    ///
    /// # Errors
    ///
    /// The core no longer takes an answer (cancelled, expired, answered), or the node
    /// stopped.
    pub async fn respond(self, payload: Bytes) -> Result<(), RespondFailure> {
        self.respond_with(payload, CallMetadata::new()).await
    }

    /// Answers the request with `metadata` for the caller
    /// ([`CallReport::metadata`]).
    ///
    /// # Errors
    ///
    /// As [`respond`](Self::respond); metadata counts toward the reply's size.
    pub async fn respond_with(
        self,
        payload: Bytes,
        metadata: CallMetadata,
    ) -> Result<(), RespondFailure> {
        let (done, rx) = oneshot::channel();
        let command = Command::Rpc(RpcCommand::Reply {
            request: self.id,
            payload,
            metadata,
            done,
        });
        let result = match self.commands.send(command).await {
            Ok(()) => match rx.await {
                Ok(taken) => taken.map_err(RespondFailure::Refused),
                Err(_) => Err(RespondFailure::Stopped),
            },
            Err(_) => Err(RespondFailure::Stopped),
        };
        let outcome = match &result {
            Ok(()) => "replied",
            Err(RespondFailure::Refused(_)) => "refused",
            Err(RespondFailure::Stopped) => "stopped",
        };
        trace::log_served(
            &self.span,
            &self.method,
            self.id.0,
            self.from,
            outcome,
            self.arrived.elapsed(),
        );
        result
    }

    /// Refuses the request unexecuted because this server is overloaded (load shedding of
    /// the application's own): its caller's call ends `Failed(Overloaded)` at once — never
    /// executed, safe to retry after a back-off. Counted in the core's `RpcStats::overloaded`
    /// ([`Metrics::rpc_overloaded`](crate::Metrics::rpc_overloaded)).
    ///
    /// # Errors
    ///
    /// The core no longer waits for the request (cancelled, expired), or the node stopped.
    pub async fn shed(self) -> Result<(), RespondFailure> {
        self.refuse(RefuseCall::Overloaded).await
    }

    /// Refuses the request unexecuted for `reason`.
    pub(crate) async fn refuse(self, reason: RefuseCall) -> Result<(), RespondFailure> {
        let (done, rx) = oneshot::channel();
        let command = Command::Rpc(RpcCommand::Refuse {
            request: self.id,
            reason,
            done,
        });
        self.commands
            .send(command)
            .await
            .map_err(|_| RespondFailure::Stopped)?;
        match rx.await {
            Ok(true) => Ok(()),
            Ok(false) => Err(RespondFailure::Refused(ReplyError::UnknownRequest)),
            Err(_) => Err(RespondFailure::Stopped),
        }
    }
}

/// The requests for one served method, in arrival order (a [`futures_core::Stream`], or
/// [`recv`](Self::recv)). Dropping it stops serving the method: the node's record is
/// published without it, and callers pick other servers.
#[derive(Debug)]
pub struct Requests {
    method: String,
    rx: mpsc::UnboundedReceiver<Request>,
    /// The sending half the driver holds, to name this registration when unserving.
    tx: mpsc::UnboundedSender<Request>,
    commands: mpsc::Sender<Command>,
}

impl Requests {
    /// The method served.
    #[must_use]
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The next request; `None` once the node stopped.
    pub async fn recv(&mut self) -> Option<Request> {
        self.rx.recv().await
    }
}

impl futures_core::Stream for Requests {
    type Item = Request;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Request>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for Requests {
    fn drop(&mut self) {
        // Best effort: with the command queue full or the node stopped, the driver still
        // unserves (and declines) on the first request it cannot hand over.
        self.rx.close();
        let mut unread = Vec::new();
        while let Ok(request) = self.rx.try_recv() {
            unread.push(request.id());
        }
        let _ = self.commands.try_send(Command::Rpc(RpcCommand::Unserve {
            method: std::mem::take(&mut self.method),
            requests: self.tx.clone(),
            unread,
        }));
    }
}

/// Cancels an accepted call whose future is dropped before its outcome.
struct CancelOnDrop<'a> {
    call: Option<CallId>,
    commands: &'a mpsc::Sender<Command>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(call) = self.call {
            let _ = self
                .commands
                .try_send(Command::Rpc(RpcCommand::Cancel(call)));
        }
    }
}

impl NodeHandle {
    /// Calls `spec.method` on one of the nodes serving it (picked by `spec.select`) and
    /// waits for the outcome: `Reply(bytes)`, `Failed(reason)` (never executed: e.g.
    /// `NotAvailable` when no server appeared within the grace) or `Unknown(reason)` (may
    /// have executed: e.g. `TargetGone` when the server died with the request).
    ///
    /// **Cancellation:** dropping the future cancels the call (`Node::cancel`): a request
    /// not yet sent never is, one already sent is answered into the void.
    ///
    /// # Errors
    ///
    /// The core refused the call (nothing was sent), or the node stopped.
    pub async fn call(&self, spec: CallSpec) -> Result<CallOutcome, CallFailure> {
        self.call_report(spec).await.map(|report| report.outcome)
    }

    /// [`call`](Self::call), reporting which server answered, the reply's metadata and the
    /// call's latency as well. The call runs in an `rpc.call` span (method, selection, call
    /// id, server, outcome); with a [`TraceContext`](trace::TraceContext) installed its
    /// context travels in the request's metadata.
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call).
    pub async fn call_report(&self, mut spec: CallSpec) -> Result<CallReport, CallFailure> {
        let span = trace::call_span(&mut spec, self.trace.as_ref());
        let recorded = span.clone();
        async move {
            let (accepted, accepted_rx) = oneshot::channel();
            let (done, done_rx) = oneshot::channel();
            self.commands
                .send(Command::Rpc(RpcCommand::Call {
                    spec,
                    accepted,
                    done,
                }))
                .await
                .map_err(|_| CallFailure::Stopped)?;
            let mut guard = CancelOnDrop {
                call: None,
                commands: &self.commands,
            };
            let call = accepted_rx
                .await
                .map_err(|_| CallFailure::Stopped)?
                .map_err(CallFailure::Refused)?;
            recorded.record("rpc.call_id", call.0);
            guard.call = Some(call);
            let report = done_rx.await.map_err(|_| CallFailure::Stopped)?;
            guard.call = None;
            trace::record_call_end(&recorded, report.server, &report.outcome);
            Ok(report)
        }
        .instrument(span)
        .await
    }

    /// Serves `method`: the node's discovery record lists it from now on (republished on
    /// the registry), and its requests arrive on the returned stream. Serving a method again
    /// replaces the earlier stream (which then ends). For a method served from the start
    /// ([`NodeBuilder::serve`](super::NodeBuilder::serve)) the first call returns the stream of the requests that came
    /// since, in arrival order, and publishes nothing.
    ///
    /// # Errors
    ///
    /// The method name is invalid ([`ReplyError::InvalidMethod`]), or the node stopped.
    pub async fn serve(&self, method: &str) -> Result<Requests, RespondFailure> {
        self.serve_with(method, None).await
    }

    /// Serves `method` as [`serve`](Self::serve) does, with at most `max_in_flight` of its
    /// requests handed to the stream and not yet answered (or dropped) at any time: a
    /// request beyond that is shed at once — refused unexecuted, its caller's call ends
    /// `Failed(Overloaded)` — and counted ([`Metrics::rpc_overloaded`](crate::Metrics::rpc_overloaded)).
    /// So the stream never holds more than `max_in_flight` requests, however fast they come.
    ///
    /// # Errors
    ///
    /// The method name is invalid ([`ReplyError::InvalidMethod`]), or the node stopped.
    pub async fn serve_bounded(
        &self,
        method: &str,
        max_in_flight: usize,
    ) -> Result<Requests, RespondFailure> {
        self.serve_with(method, Some(Limit::new(max_in_flight)))
            .await
    }

    async fn serve_with(
        &self,
        method: &str,
        limit: Option<Limit>,
    ) -> Result<Requests, RespondFailure> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.serving_command(|done| RpcCommand::Serve {
            method: method.to_owned(),
            requests: tx.clone(),
            limit,
            done,
        })
        .await?;
        Ok(Requests {
            method: method.to_owned(),
            rx,
            tx,
            commands: self.commands.clone(),
        })
    }

    /// Serves `method` with `handler`, run on the node's driver task for each request: its
    /// return value is the reply, sent in the same step — no task hop, no channel, for
    /// servers that answer from what they hold. Replaces an earlier `serve` or
    /// `serve_inline` of the method (an earlier stream then ends); requests of a method
    /// served from the start that wait for a stream are answered by it at once.
    ///
    /// **The handler must not block and should return in microseconds**: while it runs the
    /// node reads, writes and times nothing. Use [`serve`](Self::serve) for handlers that
    /// wait for anything. A panic in it stops the node.
    ///
    /// # Errors
    ///
    /// The method name is invalid ([`ReplyError::InvalidMethod`]), or the node stopped.
    pub async fn serve_inline(
        &self,
        method: &str,
        handler: impl FnMut(&InlineRequest<'_>) -> Bytes + Send + 'static,
    ) -> Result<InlineServing, RespondFailure> {
        let serving = NEXT_INLINE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.serving_command(|done| RpcCommand::ServeInline {
            method: method.to_owned(),
            serving,
            handler: Handler(Box::new(handler)),
            done,
        })
        .await?;
        Ok(InlineServing {
            method: method.to_owned(),
            serving,
            commands: self.commands.clone(),
        })
    }

    /// Sends a `serve` or `serve_inline` command and waits for the node to take it.
    async fn serving_command(
        &self,
        command: impl FnOnce(oneshot::Sender<Result<(), ReplyError>>) -> RpcCommand,
    ) -> Result<(), RespondFailure> {
        let (done, done_rx) = oneshot::channel();
        self.commands
            .send(Command::Rpc(command(done)))
            .await
            .map_err(|_| RespondFailure::Stopped)?;
        done_rx
            .await
            .map_err(|_| RespondFailure::Stopped)?
            .map_err(RespondFailure::Refused)
    }

    /// Sends one message to every node matching `spec.filter` (every known node without
    /// one) at this moment, each on its own acknowledged stream, and waits until each
    /// recipient has an outcome: the report lists who got it, who provably did not, and
    /// whose outcome is unknown.
    ///
    /// # Errors
    ///
    /// The core refused the broadcast, or the node stopped.
    pub async fn broadcast(&self, spec: BroadcastSpec) -> Result<BroadcastDone, BroadcastFailure> {
        let (done, rx) = oneshot::channel();
        self.commands
            .send(Command::Rpc(RpcCommand::Broadcast { spec, done }))
            .await
            .map_err(|_| BroadcastFailure::Stopped)?;
        rx.await
            .map_err(|_| BroadcastFailure::Stopped)?
            .map_err(BroadcastFailure::Refused)
    }
}

impl From<Stopped> for CallFailure {
    fn from(_: Stopped) -> CallFailure {
        CallFailure::Stopped
    }
}
