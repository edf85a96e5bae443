//! Copies `etcd-client` values into the core's plain etcd structs, classifies errors, and
//! bounds every RPC with a timeout.

use std::{fmt, future::Future};

use etcd_client::{Error, EventType, ResponseHeader};
use switchboard_core::registry::etcd::{EventKind, KeyValue, WatchEvent, WatchResponse};

use super::RPC_TIMEOUT;

/// An RPC that failed or took longer than [`RPC_TIMEOUT`].
#[derive(Debug)]
pub(super) enum RpcError {
    /// etcd or the transport answered with an error.
    Etcd(Error),
    /// No answer within the timeout.
    Timeout,
}

/// One line: a gRPC status as its code and message (not tonic's dump with details and
/// metadata), any other error as its `Display` chain (`error: source: source ...`).
impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RpcError::Etcd(Error::GRpcStatus(status)) => {
                let mut line = format!("etcd answered {:?}: {}", status.code(), status.message());
                let mut source = std::error::Error::source(status);
                while let Some(cause) = source {
                    let text = cause.to_string();
                    if !line.contains(&text) {
                        line.push_str(": ");
                        line.push_str(&text);
                    }
                    source = cause.source();
                }
                f.write_str(&line.replace('\n', " "))
            }
            RpcError::Etcd(e) => f.write_str(&error_chain(e)),
            RpcError::Timeout => write!(f, "no answer within {RPC_TIMEOUT:?}"),
        }
    }
}

/// `error` and its sources on one line, joined by `: `; a source whose text the previous
/// one already contains is skipped (wrappers often repeat their cause).
pub(super) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line.replace('\n', " ")
}

impl RpcError {
    /// Whether etcd says the lease does not exist (expired or revoked): a keepalive stream
    /// that would not open, or a put / txn naming it.
    pub(super) fn is_lease_not_found(&self) -> bool {
        match self {
            RpcError::Etcd(Error::LeaseKeepAliveError(message)) => message == "lease not found",
            // etcd's ErrGRPCLeaseNotFound: "etcdserver: requested lease not found".
            RpcError::Etcd(Error::GRpcStatus(status)) => {
                status.message().contains("lease not found")
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod chain_tests {
    use super::*;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn the_chain_is_one_line_without_repeats() {
        let error = Layer(
            "transport error",
            Some(Box::new(Layer(
                "tcp connect error",
                Some(Box::new(Layer("Connection refused (os error 111)", None))),
            ))),
        );
        assert_eq!(
            error_chain(&error),
            "transport error: tcp connect error: Connection refused (os error 111)"
        );
        let repeated = Layer("a: b", Some(Box::new(Layer("b", None))));
        assert_eq!(error_chain(&repeated), "a: b");
    }
}

/// When to warn about a failure that keeps repeating (an etcd that stays unreachable): the
/// first failure at once, then after gaps that double from `first_gap` up to `max_gap`;
/// a success starts over.
#[derive(Debug)]
pub(super) struct WarnBackoff {
    first_gap: std::time::Duration,
    max_gap: std::time::Duration,
    gap: std::time::Duration,
    next: Option<tokio::time::Instant>,
    failures: u64,
}

impl WarnBackoff {
    /// Warns at once, then after `first_gap`, twice that, ... at most `max_gap` apart.
    pub(super) fn new(first_gap: std::time::Duration, max_gap: std::time::Duration) -> Self {
        WarnBackoff {
            first_gap,
            max_gap,
            gap: first_gap,
            next: None,
            failures: 0,
        }
    }

    /// Counts a failure at `now`; `Some(failures so far)` when it is to be warned about.
    pub(super) fn failed(&mut self, now: tokio::time::Instant) -> Option<u64> {
        self.failures += 1;
        if self.next.is_some_and(|next| now < next) {
            return None;
        }
        self.next = Some(now + self.gap);
        self.gap = (self.gap * 2).min(self.max_gap);
        Some(self.failures)
    }

    /// A success: `Some(failures before it)` when there were any; the next failure warns
    /// at once.
    pub(super) fn succeeded(&mut self) -> Option<u64> {
        let failures = std::mem::take(&mut self.failures);
        self.gap = self.first_gap;
        self.next = None;
        (failures > 0).then_some(failures)
    }
}

#[cfg(test)]
mod backoff_tests {
    use std::time::Duration;

    use super::WarnBackoff;

    #[test]
    fn warnings_come_first_then_at_doubling_gaps_up_to_the_cap() {
        let start = tokio::time::Instant::now();
        let mut gate = WarnBackoff::new(Duration::from_secs(3), Duration::from_secs(60));
        // A failure every 3 s for 5 minutes.
        let warned: Vec<u64> = (0..100)
            .filter(|i| gate.failed(start + Duration::from_secs(3 * i)).is_some())
            .collect();
        // At 0, 3, 9, 21, 45, 93 s, then every 60 s (153, 213, 273).
        assert_eq!(warned, vec![0, 1, 3, 7, 15, 31, 51, 71, 91]);
        assert_eq!(gate.succeeded(), Some(100));
        assert_eq!(gate.succeeded(), None);
        assert_eq!(gate.failed(start + Duration::from_secs(400)), Some(1));
    }
}

/// Runs one RPC with the [`RPC_TIMEOUT`] bound.
pub(super) async fn bounded<T>(rpc: impl Future<Output = Result<T, Error>>) -> Result<T, RpcError> {
    match tokio::time::timeout(RPC_TIMEOUT, rpc).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(RpcError::Etcd(e)),
        Err(_) => Err(RpcError::Timeout),
    }
}

/// The revision in a response header (0 when the header is missing).
pub(super) fn header_revision(header: Option<&ResponseHeader>) -> i64 {
    header.map_or(0, ResponseHeader::revision)
}

/// One key-value, copied.
pub(super) fn key_value(kv: &etcd_client::KeyValue) -> KeyValue {
    KeyValue {
        key: kv.key().to_vec(),
        value: kv.value().to_vec(),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
        version: kv.version(),
        lease: kv.lease(),
    }
}

/// One watch response, copied. The watch is created without the fragment option, so
/// `fragment` is always false.
pub(super) fn watch_response(response: &etcd_client::WatchResponse) -> WatchResponse {
    WatchResponse {
        header_revision: header_revision(response.header()),
        watch_id: response.watch_id(),
        created: response.created(),
        canceled: response.canceled(),
        compact_revision: response.compact_revision(),
        fragment: false,
        events: response
            .events()
            .iter()
            .map(|event| WatchEvent {
                kind: match event.event_type() {
                    EventType::Put => EventKind::Put,
                    EventType::Delete => EventKind::Delete,
                },
                kv: event.kv().map(key_value).unwrap_or_default(),
                prev_kv: event.prev_kv().map(key_value),
            })
            .collect(),
    }
}
