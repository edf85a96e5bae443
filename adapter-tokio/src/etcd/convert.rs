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

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RpcError::Etcd(e) => write!(f, "{e}"),
            RpcError::Timeout => write!(f, "no answer within {RPC_TIMEOUT:?}"),
        }
    }
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
