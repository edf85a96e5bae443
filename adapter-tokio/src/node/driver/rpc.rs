//! The driver's side of RPC: it hands `RpcCommand`s to the core and routes the core's
//! `Output::Rpc` to the waiting futures and the served methods' streams. No decision is
//! made here (the core picks servers, keeps the grace, fast-fails and dedups).

use std::collections::HashMap;

use switchboard_core::{
    BroadcastDone, BroadcastId, CallId, CallMetadata, IncomingRequest, RpcOutput, node::SendError,
    registry::RegistryEvent, time::Instant,
};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

use super::Driver;
use crate::{
    node::{
        rpc::{CallReport, Handler, InlineRequest, Limit, Request, RpcCommand},
        trace::{self, TraceHook},
    },
    registry::FeedCommand,
};

/// A call the node accepted: who waits for its outcome, and what the metrics label it with.
#[derive(Debug)]
struct CallWaiter {
    done: oneshot::Sender<CallReport>,
    method: String,
    accepted_at: Instant,
}

/// The stream a served method's requests go to, and its concurrency limit if it has one.
#[derive(Debug)]
struct Served {
    requests: mpsc::UnboundedSender<Request>,
    limit: Option<Limit>,
}

/// Who waits for what.
#[derive(Debug, Default)]
pub(super) struct RpcWaiters {
    calls: HashMap<CallId, CallWaiter>,
    broadcasts: HashMap<BroadcastId, oneshot::Sender<Result<BroadcastDone, SendError>>>,
    /// The stream of each served method.
    served: HashMap<String, Served>,
    /// Methods served from the start (`NodeBuilder::serve`) whose stream nobody took yet:
    /// their requests wait here for the first `NodeHandle::serve` of the method.
    held: HashMap<String, mpsc::UnboundedReceiver<Request>>,
    /// Methods served by a handler on this task (`NodeHandle::serve_inline`), with the
    /// registration's number.
    inline: HashMap<String, (u64, Handler)>,
    /// The installed trace context hook (`NodeBuilder::trace_context`).
    trace: Option<TraceHook>,
}

impl RpcWaiters {
    /// No waiters yet; served requests' spans use `trace`.
    pub(super) fn traced(trace: Option<TraceHook>) -> RpcWaiters {
        RpcWaiters {
            trace,
            ..RpcWaiters::default()
        }
    }

    /// Holds the requests of `methods` (served from the start) until a stream takes them.
    pub(super) fn hold<'a>(&mut self, methods: impl Iterator<Item = &'a str>) {
        for method in methods {
            let (tx, rx) = mpsc::unbounded_channel();
            let served = Served {
                requests: tx,
                limit: None,
            };
            self.served.insert(method.to_owned(), served);
            self.held.insert(method.to_owned(), rx);
        }
    }
}

impl Driver {
    pub(super) fn on_rpc_command(&mut self, now: Instant, command: RpcCommand) {
        match command {
            RpcCommand::Call {
                spec,
                accepted,
                done,
            } => {
                // Withdrawn before the node looked at it: nothing is sent.
                if accepted.is_closed() {
                    return;
                }
                let method = spec.method.clone();
                match self.node.call(now, spec) {
                    Ok(call) => {
                        self.rpc.calls.insert(
                            call,
                            CallWaiter {
                                done,
                                method,
                                accepted_at: now,
                            },
                        );
                        if accepted.send(Ok(call)).is_err() {
                            self.node.cancel(now, call);
                        }
                    }
                    Err(refused) => {
                        let _ = accepted.send(Err(refused));
                    }
                }
            }
            RpcCommand::Cancel(call) => {
                self.node.cancel(now, call);
            }
            RpcCommand::Serve {
                method,
                requests,
                limit,
                done,
            } => match self.node.serve(now, &method) {
                Ok(_) => {
                    // The requests held since the start go first, in arrival order (beyond
                    // the stream's limit, shed).
                    if let Some(mut held) = self.rpc.held.remove(&method) {
                        while let Ok(mut request) = held.try_recv() {
                            match limit.as_ref().map(Limit::take) {
                                Some(None) => {
                                    self.node.shed(now, request.id());
                                }
                                Some(Some(place)) => {
                                    request.set_in_flight(place);
                                    let _ = requests.send(request);
                                }
                                None => {
                                    let _ = requests.send(request);
                                }
                            }
                        }
                    }
                    // A newer stream replaces an older one (which then ends) or an inline
                    // handler.
                    self.rpc.inline.remove(&method);
                    self.rpc.served.insert(method, Served { requests, limit });
                    let _ = done.send(Ok(()));
                }
                Err(refused) => {
                    let _ = done.send(Err(refused));
                }
            },
            RpcCommand::Unserve {
                method,
                requests,
                unread,
            } => {
                let current = self
                    .rpc
                    .served
                    .get(&method)
                    .is_some_and(|served| served.requests.same_channel(&requests));
                if current {
                    self.rpc.served.remove(&method);
                    self.node.unserve(now, &method);
                }
                // Handed to the stream, never read: their handler never ran.
                for request in unread {
                    self.node.decline(now, request);
                }
            }
            RpcCommand::Reply {
                request,
                payload,
                metadata,
                done,
            } => {
                let taken = self
                    .node
                    .reply_with_metadata(now, request, payload, &metadata);
                let _ = done.send(taken);
            }
            RpcCommand::Refuse {
                request,
                reason,
                done,
            } => {
                let waiting = match reason {
                    switchboard_core::wire::RefuseCall::Overloaded => self.node.shed(now, request),
                    _ => self.node.decline(now, request),
                };
                let _ = done.send(waiting);
            }
            RpcCommand::ServeInline {
                method,
                serving,
                mut handler,
                done,
            } => match self.node.serve(now, &method) {
                Ok(_) => {
                    // Requests held since the start are answered first, in arrival order.
                    if let Some(mut held) = self.rpc.held.remove(&method) {
                        while let Ok(request) = held.try_recv() {
                            let started = std::time::Instant::now();
                            let reply = request.span().in_scope(|| {
                                (handler.0)(&InlineRequest {
                                    from: request.from(),
                                    method: &method,
                                    payload: request.payload(),
                                    metadata: request.metadata(),
                                    remaining: request.remaining(),
                                })
                            });
                            let id = request.id();
                            let outcome = self.answer_inline(now, id, reply);
                            let (span, from) = (request.span(), request.from());
                            trace::log_served(
                                span,
                                &method,
                                id.0,
                                from,
                                outcome,
                                started.elapsed(),
                            );
                        }
                    }
                    self.rpc.served.remove(&method);
                    self.rpc.inline.insert(method, (serving, handler));
                    let _ = done.send(Ok(()));
                }
                Err(refused) => {
                    let _ = done.send(Err(refused));
                }
            },
            RpcCommand::UnserveInline { method, serving } => {
                if self
                    .rpc
                    .inline
                    .get(&method)
                    .is_some_and(|(current, _)| *current == serving)
                {
                    self.rpc.inline.remove(&method);
                    self.node.unserve(now, &method);
                }
            }
            RpcCommand::Broadcast { spec, done } => match self.node.broadcast(now, spec) {
                Ok(id) => {
                    self.rpc.broadcasts.insert(id, done);
                }
                Err(refused) => {
                    let _ = done.send(Err(refused));
                }
            },
        }
    }

    pub(super) fn on_rpc_output(&mut self, output: RpcOutput) {
        match output {
            RpcOutput::Request(request) => {
                self.counters.served(&request.method);
                let now = self.clock.now();
                let remaining = request.deadline.saturating_duration_since(now);
                let span = trace::serve_span(&request, self.rpc.trace.as_ref());
                if let Some((_, handler)) = self.rpc.inline.get_mut(&request.method) {
                    let started = std::time::Instant::now();
                    let reply = span.in_scope(|| {
                        (handler.0)(&InlineRequest {
                            from: request.from,
                            method: &request.method,
                            payload: &request.payload,
                            metadata: &request.metadata,
                            remaining,
                        })
                    });
                    let outcome = self.answer_inline(now, request.request, reply);
                    let IncomingRequest {
                        method,
                        request: id,
                        from,
                        ..
                    } = request;
                    trace::log_served(&span, &method, id.0, from, outcome, started.elapsed());
                    return;
                }
                let (method, id) = (request.method.clone(), request.request);
                // At its stream's concurrency limit: shed at once, never queued.
                let place = match self.rpc.served.get(&method).and_then(|s| s.limit.as_ref()) {
                    Some(limit) => match limit.take() {
                        Some(place) => Some(place),
                        None => {
                            debug!(%method, "request shed at the concurrency limit");
                            self.node.shed(now, id);
                            return;
                        }
                    },
                    None => None,
                };
                // Every handle gone means the node is stopping: nobody could answer.
                let commands = self.commands.upgrade();
                let handed = self.rpc.served.get(&method).is_some_and(|served| {
                    commands.is_some_and(|commands| {
                        let request = Request::new(request, remaining, span, commands, place);
                        served.requests.send(request).is_ok()
                    })
                });
                if !handed {
                    // Unserved after the core handed it out (the unserve came in the same
                    // burst, or its command was lost): declined, so its caller tries another
                    // server at once instead of waiting out its deadline.
                    debug!(%method, "request for a method no longer served: declined");
                    self.node.decline(now, id);
                    if self.rpc.served.remove(&method).is_some() {
                        self.node.unserve(now, &method);
                    }
                }
            }
            RpcOutput::RequestCancelled { request } => {
                debug!(request = request.0, "the caller gave up a request");
            }
            RpcOutput::CallDone {
                call,
                outcome,
                server,
                metadata,
            } => {
                if let Some(waiter) = self.rpc.calls.remove(&call) {
                    let took = self
                        .clock
                        .now()
                        .saturating_duration_since(waiter.accepted_at);
                    self.counters.call_done(&waiter.method, &outcome, took);
                    trace::log_call_done(&waiter.method, call, server, &outcome, took);
                    let discovery = self.node.inspect().discovery();
                    let server_name = server
                        .and_then(|id| discovery.get_by_id(id))
                        .map(|info| info.name.clone());
                    let _ = waiter.done.send(CallReport {
                        outcome,
                        server,
                        server_name,
                        metadata,
                        latency: took,
                    });
                }
            }
            RpcOutput::BroadcastDone(report) => {
                if let Some(done) = self.rpc.broadcasts.remove(&report.broadcast) {
                    let _ = done.send(Ok(report));
                }
            }
            RpcOutput::Republish => self.republish(),
            _ => debug!("unhandled RPC output"),
        }
    }

    /// Sends an inline handler's reply (one the core no longer waits for is dropped: its
    /// caller gave up or its deadline passed): `replied` or `refused`.
    fn answer_inline(
        &mut self,
        now: Instant,
        request: switchboard_core::RequestId,
        reply: bytes::Bytes,
    ) -> &'static str {
        match self
            .node
            .reply_with_metadata(now, request, reply, &CallMetadata::new())
        {
            Ok(()) => "replied",
            Err(refused) => {
                debug!(request = request.0, %refused, "an inline reply was not taken");
                "refused"
            }
        }
    }

    /// Publishes the node's discovery record again (its served methods changed, or it
    /// leaves: then marked [`LEAVING_LABEL`] with the reason).
    ///
    /// [`LEAVING_LABEL`]: switchboard_core::discovery::LEAVING_LABEL
    pub(super) fn republish(&mut self) {
        let mut info = self.node.discovery_info();
        if let Some(why) = &self.leaving {
            let label = switchboard_core::discovery::LEAVING_LABEL.to_owned();
            info.metadata.labels.insert(label, why.clone());
        }
        match &self.feed {
            Some(feed) => {
                if let Err(e) = feed
                    .commands
                    .try_send(FeedCommand::UpdateDiscovery(Box::new(info)))
                {
                    warn!(error = %e, "registry backend did not take the discovery update");
                }
            }
            None => {
                let now = self.clock.now();
                self.node
                    .handle_registry(now, RegistryEvent::DiscoveryPut(info.into()));
            }
        }
    }
}

/// After a graceful stop: RPC commands still queued are answered as refused or dropped, so
/// no caller waits on a dropped driver.
pub(super) fn answer_after_stop(command: RpcCommand) {
    match command {
        RpcCommand::Call { accepted, .. } => {
            let _ = accepted.send(Err(switchboard_core::CallError::Shutdown));
        }
        RpcCommand::Serve { done, .. }
        | RpcCommand::Reply { done, .. }
        | RpcCommand::ServeInline { done, .. } => {
            drop(done);
        }
        RpcCommand::Refuse { done, .. } => {
            drop(done);
        }
        RpcCommand::Broadcast { done, .. } => {
            let _ = done.send(Err(SendError::Shutdown));
        }
        RpcCommand::Cancel(_) | RpcCommand::Unserve { .. } | RpcCommand::UnserveInline { .. } => {}
    }
}
