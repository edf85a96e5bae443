//! A [`tower::Service`] serving a method ([`NodeHandle::serve_service`]): each request is
//! offered to the service only when its `poll_ready` says it is ready; a request that finds
//! it not ready (a `ConcurrencyLimit` at its limit, a rate limit, ...) is shed at once — its
//! caller's call ends `Failed(Overloaded)` — so requests never queue without bound.

use std::{future::poll_fn, task::Poll, time::Duration};

use bytes::Bytes;
use switchboard_core::{ids::NodeId, wire::RefuseCall};
use tokio::task::JoinHandle;
use tower::Service;
use tracing::{debug, warn};

use super::{
    NodeHandle,
    rpc::{Request, Requests, RespondFailure},
};

/// One request as a served [`tower::Service`] sees it; the service's response is the reply.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServiceRequest {
    /// The calling node.
    pub from: NodeId,
    /// The method called.
    pub method: String,
    /// The request's payload.
    pub payload: Bytes,
    /// The time the caller still waited when the request reached this node.
    pub remaining: Duration,
}

impl ServiceRequest {
    /// A request with these parts (for tests of services).
    #[must_use]
    pub fn new(from: NodeId, method: impl Into<String>, payload: Bytes) -> ServiceRequest {
        ServiceRequest {
            from,
            method: method.into(),
            payload,
            remaining: Duration::ZERO,
        }
    }
}

/// A method served by a [`tower::Service`]; dropping it (or [`stop`](Self::stop)) stops
/// serving the method, as dropping [`Requests`] does. Requests being handled finish.
#[derive(Debug)]
pub struct ServiceServing {
    method: String,
    task: JoinHandle<()>,
}

impl ServiceServing {
    /// The method served.
    #[must_use]
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Stops serving the method.
    pub fn stop(self) {}
}

impl Drop for ServiceServing {
    fn drop(&mut self) {
        // Aborting the task drops its `Requests`, which unserves the method.
        self.task.abort();
    }
}

impl NodeHandle {
    /// Serves `method` with a [`tower::Service`] (a tower stack: `ConcurrencyLimit`,
    /// `LoadShed`, timeouts, your own layers). Each request is offered only when
    /// `poll_ready` returns ready at once; otherwise — the stack is at its limit — it is shed:
    /// refused unexecuted, its caller's call ends `Failed(Overloaded)` at once, counted in
    /// [`Metrics::rpc_overloaded`](crate::Metrics::rpc_overloaded). The response is the reply;
    /// a service error leaves the request unanswered (its caller's call ends
    /// `Unknown(Timeout)` at its deadline) and is logged. A `poll_ready` error ends serving:
    /// the request in hand is declined (`NotServed`, its caller tries another server).
    ///
    /// Runs on a task of its own, each response awaited on a task of its own.
    ///
    /// # Errors
    ///
    /// The method name is invalid, or the node stopped.
    pub async fn serve_service<S>(
        &self,
        method: &str,
        service: S,
    ) -> Result<ServiceServing, RespondFailure>
    where
        S: Service<ServiceRequest, Response = Bytes> + Send + 'static,
        S::Future: Send + 'static,
        S::Error: std::fmt::Display + Send,
    {
        let requests = self.serve(method).await?;
        Ok(ServiceServing {
            method: method.to_owned(),
            task: tokio::spawn(drive(requests, service)),
        })
    }
}

/// Offers each request of `requests` to `service` while it is ready, sheds the others.
async fn drive<S>(mut requests: Requests, mut service: S)
where
    S: Service<ServiceRequest, Response = Bytes> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display + Send,
{
    while let Some(request) = requests.recv().await {
        // Ready now, or shed: never wait for readiness with a request in hand.
        match poll_fn(|cx| Poll::Ready(service.poll_ready(cx))).await {
            Poll::Pending => {
                debug!(
                    method = requests.method(),
                    "service not ready: request shed"
                );
                let _ = request.shed().await;
            }
            Poll::Ready(Err(error)) => {
                warn!(method = requests.method(), %error, "service failed: no longer served");
                let _ = request.refuse(RefuseCall::NotServed).await;
                return;
            }
            Poll::Ready(Ok(())) => {
                let (call, responder) = split(request);
                let response = service.call(call);
                tokio::spawn(async move {
                    match response.await {
                        Ok(reply) => {
                            let _ = responder.respond(reply).await;
                        }
                        Err(error) => {
                            warn!(method = %responder.method(), %error, "service error: request left unanswered");
                        }
                    }
                });
            }
        }
    }
}

/// The service's view of `request`, and the request itself kept to answer it.
fn split(request: Request) -> (ServiceRequest, Request) {
    let call = ServiceRequest {
        from: request.from(),
        method: request.method().to_owned(),
        payload: request.payload().clone(),
        remaining: request.remaining(),
    };
    (call, request)
}
