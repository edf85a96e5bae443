//! The lease task: performs what the core's [`LeaseState`] plans, and the topology rewrites.
//!
//! Grant → the registration txn ([`RegistrationTxn`]: guarded on the `by_id` key not
//! existing, then topology, `by_id`, `by_name`, all on the lease) → keepalives on one stream
//! (each sent when the machine asks; every answer's TTL goes back to the machine, which
//! treats TTL ≤ 0 as a lost lease) → `lease_time_to_live` when the machine suspects the lease
//! → revoke on shutdown. A keepalive stream that fails or ends is dropped and reopened by the
//! next keepalive; opening it on a lease etcd no longer knows reports the lease lost at once.
//!
//! The registration txn also claims the node's name atomically: it is conditioned on the
//! name's claim key (`<prefix>names/<name>`) and puts it, so of two nodes racing for one free
//! name exactly one registers; the other's failure branch reads the claim and reports the
//! name taken, naming the winner.
//!
//! A conflicting registration (the `by_id` key exists on another lease under another identity,
//! or another id holds the node's name under `by_name` or its claim key) is reported to the coordinator and
//! retried on the machine's schedule; nothing is overwritten. A conflict whose owner is this
//! very lease (an earlier txn that committed but whose answer was lost) counts as registered;
//! one whose owner carries this deployment's own non-empty identity (a restart before the old
//! lease expired) is taken over at once by a second txn guarded on the key's mod revision —
//! unless that owner is a live copy on this host (`live_copy`): then it is a conflict. An upstream switch rewrites only the topology key, on the same
//! lease, as soon as the node is registered; a failed rewrite is retried.

use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, GetOptions, LeaseKeepAliveStream, LeaseKeeper, PutOptions, Txn,
    TxnOp, TxnOpResponse,
};
use switchboard_core::{
    discovery::{DiscoveryInfo, TopologyInfo},
    registry::etcd::{
        KeyLayout, KeyValue, LeaseAction, LeaseConfig, LeaseState, RegisterConflict,
        RegisterOutcome, RegistrationTxn,
    },
    time::{Instant, earliest},
};
use tokio::sync::mpsc;

use super::{
    convert::{WarnBackoff, bounded, header_revision, key_value},
    coordinator::{LeaseUpdate, Report},
    endpoint_health::HealthCheck,
    live_copy,
    stats::EtcdStats,
};
use crate::{clock::Clock, registry::feed::Registration};

/// First gap between two warnings that lease grants keep failing.
const GRANT_WARN_FIRST_GAP: Duration = Duration::from_secs(3);
/// Longest gap between two such warnings.
const GRANT_WARN_MAX_GAP: Duration = Duration::from_secs(60);

/// What the coordinator tells the lease task.
#[derive(Debug)]
pub(super) enum LeaseCommand {
    /// Publish this topology record (rewrite only the topology key).
    UpdateTopology(TopologyInfo),
    /// Publish this discovery record (rewrite both discovery keys).
    UpdateDiscovery(Box<DiscoveryInfo>),
    /// The `by_id` watcher saw the node's own key deleted, or written under `lease`.
    OwnKey {
        /// A delete (else a put).
        deleted: bool,
        /// The lease of the put.
        lease: i64,
    },
    /// Revoke the lease and end.
    Shutdown,
}

/// The machine's timing from the backend options: the TTL (at least 1 s), the keepalive
/// interval, and a retry delay of 3 s or one keepalive interval, whichever is shorter.
pub(super) fn lease_config(ttl: Duration, keepalive_interval: Duration) -> LeaseConfig {
    LeaseConfig {
        ttl: ttl.max(Duration::from_secs(1)),
        keepalive_interval,
        retry: keepalive_interval.min(LeaseConfig::default().retry),
    }
}

/// Everything the lease task owns.
pub(super) struct LeaseTask {
    pub(super) client: Client,
    pub(super) layout: KeyLayout,
    pub(super) registration: Registration,
    pub(super) state: LeaseState,
    pub(super) config: LeaseConfig,
    pub(super) clock: Clock,
    pub(super) reports: mpsc::Sender<Report>,
    pub(super) commands: mpsc::Receiver<LeaseCommand>,
    pub(super) stats: EtcdStats,
    /// Asked for a probe round of the members after a failed RPC or stream.
    pub(super) health: HealthCheck,
}

/// The running task's mutable extras.
struct Run {
    keeper: Option<(LeaseKeeper, LeaseKeepAliveStream)>,
    topology_due: Option<Instant>,
    /// The discovery record changed since it was last written (with `topology_due`).
    discovery_dirty: bool,
    registered: bool,
    /// Revision of the last successful registration txn.
    revision: u64,
    last_conflict: Option<String>,
    /// Why the registration was lost to the node's own key changing, until reported.
    key_lost: Option<String>,
    /// Paces the warnings of lease grants that keep failing (etcd unreachable).
    grant_warnings: WarnBackoff,
}

impl LeaseTask {
    /// Runs until the lease is revoked after a shutdown, or the coordinator goes away.
    pub(super) async fn run(mut self) {
        let mut run = Run {
            keeper: None,
            topology_due: None,
            discovery_dirty: false,
            registered: false,
            revision: 0,
            last_conflict: None,
            key_lost: None,
            grant_warnings: WarnBackoff::new(GRANT_WARN_FIRST_GAP, GRANT_WARN_MAX_GAP),
        };
        loop {
            let now = self.clock.now();
            let alive = match self.state.poll(now) {
                LeaseAction::Grant { ttl_secs } => {
                    run.keeper = None;
                    self.grant(ttl_secs, &mut run.grant_warnings).await;
                    true
                }
                LeaseAction::Register { lease } => self.register(&mut run, lease).await,
                LeaseAction::KeepAlive { lease } => {
                    self.keep_alive(&mut run, lease).await;
                    true
                }
                LeaseAction::CheckTimeToLive { lease } => {
                    run.keeper = None;
                    self.check_time_to_live(lease).await;
                    true
                }
                LeaseAction::Revoke { lease } => {
                    run.keeper = None;
                    if let Err(e) = bounded(self.client.lease_revoke(lease)).await {
                        tracing::warn!(error = %e, lease, "etcd lease revoke failed; the keys expire with it");
                    }
                    self.state.on_revoked();
                    true
                }
                LeaseAction::Wait { until } => {
                    !self.state.is_closed() && self.wait(&mut run, until).await
                }
                other => {
                    // A newer core's action this adapter does not know: never spin on it.
                    tracing::error!(
                        ?other,
                        "unknown etcd lease action; waiting before the next poll"
                    );
                    tokio::time::sleep(self.config.retry).await;
                    true
                }
            };
            if !alive {
                self.publish();
                return;
            }
            self.rewrite_topology(&mut run).await;
            self.publish();
            if !self.report_status(&mut run).await {
                return;
            }
        }
    }

    async fn grant(&mut self, ttl_secs: i64, warnings: &mut WarnBackoff) {
        match bounded(self.client.lease_grant(ttl_secs, None)).await {
            Ok(granted) => {
                if let Some(failures) = warnings.succeeded() {
                    tracing::warn!(failures, "etcd lease granted after failures: etcd is back");
                }
                tracing::debug!(lease = granted.id(), "etcd lease granted");
                self.state.on_granted(self.clock.now(), granted.id());
            }
            Err(e) => {
                match warnings.failed(tokio::time::Instant::now()) {
                    Some(failures) => tracing::warn!(
                        failures,
                        "etcd lease grant failed: {e} (warned again at growing intervals, \
                         up to {GRANT_WARN_MAX_GAP:?}, while it keeps failing)"
                    ),
                    None => tracing::debug!(error = %e, "etcd lease grant failed again"),
                }
                self.health.request();
                self.state.on_grant_failed(self.clock.now());
            }
        }
    }

    async fn check_time_to_live(&mut self, lease: i64) {
        match bounded(self.client.lease_time_to_live(lease, None)).await {
            Ok(answer) => self.state.on_time_to_live(self.clock.now(), answer.ttl()),
            Err(e) => {
                tracing::warn!(error = %e, lease, "etcd lease time-to-live check failed");
                self.health.request();
                self.state.on_time_to_live_failed(self.clock.now());
            }
        }
    }

    /// Registers on `lease`: the name check, then the registration txn, then — when the
    /// `by_id` key holds this deployment's own identity — the takeover txn. Returns false
    /// when the coordinator is gone.
    async fn register(&mut self, run: &mut Run, lease: i64) -> bool {
        let plan = RegistrationTxn::plan(
            &self.layout,
            &self.registration.discovery,
            &self.registration.topology,
        );
        let outcome = match self.name_check().await {
            Err(()) => {
                self.state.on_register_failed(self.clock.now());
                return true;
            }
            Ok(Some(taken)) => taken,
            Ok(None) => {
                // The id's key and the name's claim key must both be absent.
                let mut guards = vec![Compare::create_revision(
                    plan.guard_key.clone(),
                    CompareOp::Equal,
                    0,
                )];
                guards.extend(claim_guard(&plan, None));
                let Some((mut outcome, claim)) = self.run_txn(&plan, lease, guards).await else {
                    return true;
                };
                if let RegisterOutcome::Conflict(conflict) = &outcome
                    && conflict.owner_lease == lease
                {
                    outcome = RegisterOutcome::Registered {
                        revision: u64::try_from(conflict.create_revision).unwrap_or(0),
                    };
                }
                // The name's claim is this id's already (a previous life's lease), with the
                // id's key gone: claim it again, guarded on the claim seen.
                let orphan_claim = matches!(&outcome, RegisterOutcome::Conflict(c) if c.owner.is_none() && c.owner_mod_revision == 0)
                    && claim.is_some();
                if let RegisterOutcome::Conflict(conflict) = &outcome
                    && (orphan_claim
                        || (conflict.is_own(lease, &self.registration.discovery.identity)
                            && !self.held_by_live_copy(conflict)))
                {
                    tracing::info!(
                        holder = %describe_holder(conflict),
                        "etcd: the id is held under this deployment's identity; taking it over"
                    );
                    let mut guards = vec![if orphan_claim {
                        Compare::create_revision(plan.guard_key.clone(), CompareOp::Equal, 0)
                    } else {
                        Compare::mod_revision(
                            plan.guard_key.clone(),
                            CompareOp::Equal,
                            RegistrationTxn::takeover_guard(conflict),
                        )
                    }];
                    guards.extend(claim_guard(&plan, claim.as_ref()));
                    let Some((taken, _)) = self.run_txn(&plan, lease, guards).await else {
                        return true;
                    };
                    outcome = taken;
                }
                outcome
            }
        };
        self.state.on_registered(self.clock.now(), &outcome);
        let holder = match outcome {
            RegisterOutcome::Registered { revision } => {
                tracing::info!(lease, revision, "registered in etcd");
                let at = tokio::time::Instant::now();
                self.stats.update(|c| c.registered_at = Some(at));
                // The txn wrote the current topology and discovery records.
                run.topology_due = None;
                run.discovery_dirty = false;
                run.revision = revision;
                run.last_conflict = None;
                return true;
            }
            RegisterOutcome::Conflict(conflict) => {
                let holder = if self.held_by_live_copy(&conflict) {
                    format!(
                        "a live copy of this node runs on this host: {}",
                        describe_holder(&conflict)
                    )
                } else {
                    describe_holder(&conflict)
                };
                tracing::warn!(%holder, "etcd registration refused: the id is owned by another instance");
                holder
            }
            RegisterOutcome::NameTaken { key, holder } => {
                let name = &self.registration.discovery.name;
                let key = String::from_utf8_lossy(&key);
                let holder = format!("name {name:?} taken by id {} ({key})", holder.0);
                tracing::warn!(%holder, "etcd registration refused: the name is held");
                holder
            }
            _ => return true,
        };
        if run.last_conflict.as_ref() == Some(&holder) {
            return true;
        }
        run.last_conflict = Some(holder.clone());
        self.publish();
        self.reports
            .send(Report::Lease(LeaseUpdate::Conflict(holder)))
            .await
            .is_ok()
    }

    /// The id's holder is a live copy of this node on this host (one live holder per id: a
    /// copy is refused, never taken over; see `live_copy`).
    fn held_by_live_copy(&self, conflict: &RegisterConflict) -> bool {
        conflict
            .owner
            .as_ref()
            .is_some_and(|owner| live_copy::is_live_copy(owner, &self.registration.discovery))
    }

    /// Lists `<prefix>by_name/<name>-` for another id holding this node's name:
    /// `Ok(Some(NameTaken))` if one does, `Ok(None)` if the name is free (or the node has
    /// none), `Err` if the list failed (the registration is retried).
    async fn name_check(&mut self) -> Result<Option<RegisterOutcome>, ()> {
        let info = &self.registration.discovery;
        let Some(prefix) = RegistrationTxn::name_prefix(&self.layout, info) else {
            return Ok(None);
        };
        let listed = match bounded(
            self.client
                .get(prefix, Some(GetOptions::new().with_prefix())),
        )
        .await
        {
            Ok(answer) => answer.kvs().iter().map(key_value).collect::<Vec<_>>(),
            Err(e) => {
                tracing::warn!(error = %e, "etcd name check failed");
                self.health.request();
                return Err(());
            }
        };
        Ok(RegistrationTxn::name_holder(&self.layout, info, &listed)
            .map(|(key, holder)| RegisterOutcome::NameTaken { key, holder }))
    }

    /// Runs `plan`'s puts and its name claim on `lease` when every guard holds, else gets
    /// the `by_id` key and the claim key; `None` when the RPC failed (already reported to the
    /// machine). Returns the outcome and the claim key as the failure branch read it.
    async fn run_txn(
        &mut self,
        plan: &RegistrationTxn,
        lease: i64,
        guards: Vec<Compare>,
    ) -> Option<(RegisterOutcome, Option<KeyValue>)> {
        let puts: Vec<TxnOp> = plan
            .puts
            .iter()
            .chain(plan.claim.iter())
            .map(|put| {
                let options = put.with_lease.then(|| PutOptions::new().with_lease(lease));
                TxnOp::put(put.key.clone(), put.value.clone(), options)
            })
            .collect();
        let mut gets = vec![TxnOp::get(plan.guard_key.clone(), None)];
        if let Some(claim) = &plan.claim {
            gets.push(TxnOp::get(claim.key.clone(), None));
        }
        let txn = Txn::new().when(guards).and_then(puts).or_else(gets);
        let answer = match bounded(self.client.txn(txn)).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(error = %e, lease, "etcd registration txn failed");
                let now = self.clock.now();
                self.health.request();
                self.state.on_register_failed(now);
                if e.is_lease_not_found() {
                    self.state.on_keepalive(now, 0);
                }
                return None;
            }
        };
        let mut got: Vec<Option<KeyValue>> = answer
            .op_responses()
            .into_iter()
            .filter_map(|op| match op {
                TxnOpResponse::Get(got) => Some(got.kvs().first().map(key_value)),
                _ => None,
            })
            .collect();
        let claim = if got.len() > 1 {
            got.pop().flatten()
        } else {
            None
        };
        let existing = got.pop().flatten();
        let outcome = plan.outcome_with_claim(
            answer.succeeded(),
            header_revision(answer.header()),
            existing.as_ref(),
            claim.as_ref(),
        );
        Some((outcome, claim))
    }

    /// Sends one keepalive, opening the stream when there is none for this lease.
    async fn keep_alive(&mut self, run: &mut Run, lease: i64) {
        if let Some((keeper, _)) = run.keeper.as_mut()
            && keeper.id() == lease
        {
            if let Err(e) = keeper.keep_alive().await {
                tracing::debug!(%e, lease, "etcd keepalive stream broke");
                run.keeper = None;
                self.health.request();
                self.state.on_keepalive_failed(self.clock.now());
            }
            return;
        }
        run.keeper = None;
        match bounded(self.client.lease_keep_alive(lease)).await {
            Ok(pair) => {
                // Opening sends a keepalive and checks that its answer has TTL > 0.
                run.keeper = Some(pair);
                let ttl = i64::try_from(self.config.ttl.as_secs()).unwrap_or(i64::MAX);
                self.state.on_keepalive(self.clock.now(), ttl.max(1));
            }
            Err(e) if e.is_lease_not_found() => {
                tracing::warn!(lease, "etcd lease gone: registering again on a new lease");
                self.state.on_keepalive(self.clock.now(), 0);
            }
            Err(e) => {
                tracing::debug!(%e, lease, "etcd keepalive stream did not open");
                self.health.request();
                self.state.on_keepalive_failed(self.clock.now());
            }
        }
    }

    /// Waits for a command, a keepalive answer or the next deadline. Returns false when the
    /// coordinator is gone.
    async fn wait(&mut self, run: &mut Run, until: Option<Instant>) -> bool {
        let topology_due = run.topology_due.filter(|_| self.state.is_registered());
        let deadline = earliest(until, topology_due).map(|at| self.clock.to_tokio(at));
        let sleep = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let answer = async {
            match run.keeper.as_mut() {
                Some((_, stream)) => stream.message().await,
                None => std::future::pending().await,
            }
        };
        enum Woke {
            Command(Option<LeaseCommand>),
            Answer(Result<Option<etcd_client::LeaseKeepAliveResponse>, etcd_client::Error>),
            Deadline,
        }
        let woke = tokio::select! {
            command = self.commands.recv() => Woke::Command(command),
            answer = answer => Woke::Answer(answer),
            () = sleep => Woke::Deadline,
        };
        let now = self.clock.now();
        match woke {
            Woke::Command(None) => return false,
            Woke::Command(Some(LeaseCommand::UpdateTopology(topology))) => {
                self.registration.topology = topology;
                run.topology_due = Some(now);
            }
            Woke::Command(Some(LeaseCommand::UpdateDiscovery(info))) => {
                self.registration.discovery = *info;
                run.discovery_dirty = true;
                run.topology_due = Some(now);
            }
            Woke::Command(Some(LeaseCommand::OwnKey { deleted, lease })) => {
                let was = self.state.is_registered();
                self.state.on_own_key(now, deleted, lease);
                if was && !self.state.is_registered() {
                    let why = if deleted {
                        "etcd: this node's keys were deleted; registering again"
                    } else {
                        "etcd: another live process with this deployment's identity took this \
                         id over; waiting for its keys to go"
                    };
                    tracing::warn!(own_lease = self.state.lease(), key_lease = lease, "{why}");
                    run.key_lost = Some(why.to_owned());
                }
            }
            Woke::Command(Some(LeaseCommand::Shutdown)) => self.state.shutdown(),
            Woke::Answer(Ok(Some(answer))) => {
                if answer.ttl() <= 0 {
                    tracing::warn!(lease = answer.id(), "etcd keepalive says the lease is gone");
                }
                self.state.on_keepalive(now, answer.ttl());
            }
            Woke::Answer(Ok(None)) => {
                run.keeper = None;
                self.health.request();
                self.state.on_keepalive_failed(now);
            }
            Woke::Answer(Err(e)) => {
                tracing::debug!(%e, "etcd keepalive stream failed");
                run.keeper = None;
                self.health.request();
                self.state.on_keepalive_failed(now);
            }
            Woke::Deadline => {}
        }
        true
    }

    /// Rewrites the topology key (and both discovery keys when the record changed) when an
    /// update is due and the node is registered.
    async fn rewrite_topology(&mut self, run: &mut Run) {
        let now = self.clock.now();
        let Some(due) = run.topology_due else { return };
        if now < due || !self.state.is_registered() {
            return;
        }
        let lease = self.state.lease();
        let mut puts = vec![RegistrationTxn::topology_update(
            &self.layout,
            &self.registration.discovery,
            &self.registration.topology,
        )];
        if run.discovery_dirty {
            puts.extend(RegistrationTxn::discovery_update(
                &self.layout,
                &self.registration.discovery,
            ));
        }
        let mut written = Ok(());
        for put in puts {
            let options = PutOptions::new().with_lease(lease);
            if let Err(e) = bounded(self.client.put(put.key, put.value, Some(options))).await {
                written = Err(e);
                break;
            }
        }
        match written {
            Ok(()) => {
                run.topology_due = None;
                run.discovery_dirty = false;
                self.stats.update(|c| c.topology_writes += 1);
            }
            Err(e) => {
                tracing::warn!(error = %e, lease, "etcd topology rewrite failed");
                self.health.request();
                let now = self.clock.now();
                if e.is_lease_not_found() {
                    // The replayed registration writes the current topology.
                    self.state.on_keepalive(now, 0);
                } else {
                    run.topology_due = Some(now.saturating_add(self.config.retry));
                }
            }
        }
    }

    /// Tells the coordinator when the registration appears or goes. Returns false when the
    /// coordinator is gone.
    async fn report_status(&mut self, run: &mut Run) -> bool {
        let registered = self.state.is_registered();
        if registered == run.registered {
            return true;
        }
        run.registered = registered;
        let update = if registered {
            run.key_lost = None;
            LeaseUpdate::Registered(run.revision)
        } else if let Some(why) = run.key_lost.take() {
            LeaseUpdate::KeyLost(why)
        } else {
            LeaseUpdate::Unregistered
        };
        self.reports.send(Report::Lease(update)).await.is_ok()
    }

    fn publish(&self) {
        let lease = self.state.stats();
        let lease_id = self.state.lease();
        let registered = self.state.is_registered();
        self.stats.update(|c| {
            c.lease = lease;
            c.lease_id = lease_id;
            c.registered = registered;
        });
    }
}

/// The condition on the name's claim key (none for a node without a name): absent when
/// `seen` is `None`, else unchanged since it was read (`seen` holds this id: a takeover).
fn claim_guard(plan: &RegistrationTxn, seen: Option<&KeyValue>) -> Option<Compare> {
    let key = plan.claim.as_ref()?.key.clone();
    Some(match seen {
        None => Compare::create_revision(key, CompareOp::Equal, 0),
        Some(kv) => Compare::mod_revision(key, CompareOp::Equal, kv.mod_revision),
    })
}

/// Names the owner of a contested id for the conflict report.
fn describe_holder(conflict: &RegisterConflict) -> String {
    let key = String::from_utf8_lossy(&conflict.key);
    let owner = match (&conflict.owner, &conflict.owner_error) {
        (Some(owner), _) => format!(
            "identity {:?}, listen {:?}, pid {}",
            owner.identity, owner.listen, owner.pid
        ),
        (None, Some(error)) => format!("undecodable value ({error})"),
        (None, None) => String::from("no value"),
    };
    format!(
        "{key} is held by lease {:#x} (created at revision {}; {owner})",
        conflict.owner_lease, conflict.create_revision
    )
}
