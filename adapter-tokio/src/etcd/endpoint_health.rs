//! Endpoint health: keeps the client's balancer to the etcd members that accept connections.
//!
//! `etcd-client` balances every RPC and stream over all the endpoints it was given (tower's
//! power-of-two-choices over lazily reconnecting channels) and never drops one: a SIGKILLed
//! member stays a candidate, and each RPC that lands on it fails at once with "connection
//! refused" — about one in three with three members — to be retried only after the
//! backend's retry delay (a lease grant 3 s later, a watch after its backoff). This task
//! takes a member that refuses connections out of the balancer and puts it back when it
//! accepts again, so retries land on members that answer.
//!
//! A probe is a TCP connect to the endpoint's host and port (bounded by [`PROBE_TIMEOUT`]),
//! closed at once. Probes run once before the backend's first RPC (a node started while a
//! member is down never tries it), whenever a task saw an RPC or a stream fail
//! ([`HealthCheck::request`]), and every [`RECHECK_INTERVAL`] while a member is out; never
//! otherwise (a healthy cluster costs nothing). A member is taken out only while another one
//! accepts (the balancer is never left empty), and with one endpoint nothing is probed. A
//! member that accepts connections but does not answer (hung, leaderless) stays: HTTP/2
//! keepalive and `require_leader` break its streams.

use std::{sync::Arc, time::Duration};

use etcd_client::Client;
use tokio::{net::TcpStream, sync::Notify, task::JoinSet};

/// Bound on one probe's TCP connect.
pub(super) const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Probe period while a member is out of the balancer (to put it back).
pub(super) const RECHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Asks the health task for a probe round (cheap; requests coalesce).
#[derive(Clone, Debug, Default)]
pub(super) struct HealthCheck(Arc<Notify>);

impl HealthCheck {
    /// An RPC or a stream failed: probe the members now.
    pub(super) fn request(&self) {
        self.0.notify_one();
    }
}

/// The host and port of an endpoint URL (`http://HOST:PORT/...` or `https://...`), `None`
/// for anything else (such an endpoint is never taken out).
fn authority(endpoint: &str) -> Option<&str> {
    let rest = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    // A port is required: after the last ':' (past an IPv6 literal's brackets).
    let port = authority.rsplit_once(':')?.1;
    (!port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())).then_some(authority)
}

/// Which members to take out of (`false`) and put back into (`true`) the balancer, given
/// which are in it now and which accepted a connection in this round (`None`: not probed).
/// Nothing changes when no probed member accepted: the balancer is never left empty.
fn plan(in_balancer: &[bool], accepted: &[Option<bool>]) -> Vec<(usize, bool)> {
    if !accepted.contains(&Some(true)) {
        return Vec::new();
    }
    in_balancer
        .iter()
        .zip(accepted)
        .enumerate()
        .filter_map(|(at, (&is_in, &accepted))| match accepted {
            Some(accepted) if accepted != is_in => Some((at, accepted)),
            _ => None,
        })
        .collect()
}

/// One probe round: whether each endpoint's TCP port accepted a connection.
async fn probe_all(endpoints: &[String]) -> Vec<Option<bool>> {
    let mut probes = JoinSet::new();
    for (at, endpoint) in endpoints.iter().enumerate() {
        if let Some(authority) = authority(endpoint) {
            let authority = authority.to_owned();
            probes.spawn(async move {
                let connect = TcpStream::connect(authority);
                let accepted = matches!(
                    tokio::time::timeout(PROBE_TIMEOUT, connect).await,
                    Ok(Ok(_))
                );
                (at, accepted)
            });
        }
    }
    let mut accepted = vec![None; endpoints.len()];
    while let Some(done) = probes.join_next().await {
        if let Ok((at, ok)) = done {
            accepted[at] = Some(ok);
        }
    }
    accepted
}

/// The members in the client's balancer, kept to those that accept connections.
pub(super) struct EndpointHealth {
    client: Client,
    endpoints: Vec<String>,
    in_balancer: Vec<bool>,
}

impl EndpointHealth {
    /// For `client`, built from `endpoints` (every one in its balancer).
    pub(super) fn new(client: Client, endpoints: Vec<String>) -> EndpointHealth {
        let in_balancer = vec![true; endpoints.len()];
        EndpointHealth {
            client,
            endpoints,
            in_balancer,
        }
    }

    /// One probe round and the changes it calls for (none with a single endpoint).
    pub(super) async fn check(&mut self) {
        if self.endpoints.len() < 2 {
            return;
        }
        let accepted = probe_all(&self.endpoints).await;
        for (at, put_back) in plan(&self.in_balancer, &accepted) {
            let endpoint = &self.endpoints[at];
            let changed = if put_back {
                self.client.add_endpoint(endpoint).await
            } else {
                self.client.remove_endpoint(endpoint).await
            };
            match changed {
                Ok(()) if put_back => {
                    tracing::warn!(%endpoint, "etcd member accepts connections again: back in the client's balancer");
                }
                Ok(()) => {
                    tracing::warn!(%endpoint, "etcd member refuses connections: out of the client's balancer until it accepts again");
                }
                Err(e) => {
                    tracing::warn!(%endpoint, error = %e, "cannot change the etcd client's endpoints");
                    continue;
                }
            }
            self.in_balancer[at] = put_back;
        }
    }

    /// Probes on request and, while a member is out, every [`RECHECK_INTERVAL`]; runs until
    /// aborted.
    pub(super) async fn run(mut self, requests: HealthCheck) {
        if self.endpoints.len() < 2 {
            return;
        }
        loop {
            let all_in = self.in_balancer.iter().all(|&is_in| is_in);
            if all_in {
                requests.0.notified().await;
            } else {
                tokio::select! {
                    () = requests.0.notified() => {}
                    () = tokio::time::sleep(RECHECK_INTERVAL) => {}
                }
            }
            self.check().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authority_is_host_and_port_of_http_and_https_urls_only() {
        assert_eq!(authority("http://127.0.0.1:2379"), Some("127.0.0.1:2379"));
        assert_eq!(
            authority("https://etcd-0.example.org:2379/"),
            Some("etcd-0.example.org:2379")
        );
        assert_eq!(authority("http://[::1]:2379"), Some("[::1]:2379"));
        assert_eq!(authority("http://[::1]"), None);
        assert_eq!(authority("http://etcd:"), None);
        assert_eq!(authority("127.0.0.1:2379"), None);
        assert_eq!(authority("unix:///run/etcd.sock"), None);
    }

    #[test]
    fn plan_takes_refusing_members_out_and_puts_accepting_ones_back() {
        // The leader refuses: out.
        assert_eq!(
            plan(&[true, true, true], &[Some(false), Some(true), Some(true)]),
            [(0, false)]
        );
        // Back once it accepts; another one refusing goes out in the same round.
        assert_eq!(
            plan(&[false, true, true], &[Some(true), Some(true), Some(false)]),
            [(0, true), (2, false)]
        );
        // Nothing changes without a change.
        assert_eq!(
            plan(&[false, true, true], &[Some(false), Some(true), Some(true)]),
            []
        );
        // An unprobed endpoint stays as it is.
        assert_eq!(plan(&[true, true], &[None, Some(false)]), []);
        assert_eq!(
            plan(&[true, true, true], &[None, Some(false), Some(true)]),
            [(1, false)]
        );
    }

    #[test]
    fn plan_never_empties_the_balancer() {
        assert_eq!(plan(&[true, true, true], &[Some(false); 3]), []);
        assert_eq!(plan(&[false, true, false], &[Some(false); 3]), []);
        assert_eq!(plan(&[true, true], &[None, None]), []);
    }
}
