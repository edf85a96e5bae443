//! Invariant checks of a simulated cluster of [`Node`]s, run by the seeds runner after every
//! step and by tests.
//!
//! Per step ([`Sim::check_invariants`]): the [ledger](super::ledger)'s message invariants
//! (exactly one outcome per accepted send and none before acceptance, nothing delivered
//! twice, nothing out of order within one sender→receiver incarnation pair, nothing delivered
//! that was reported `Failed`, `Delivered` only after a delivery, no message of a running
//! sender without its outcome once the clock is past its deadline), plus for every node touched
//! since the last check: queues within limits (for each endpoint, pending + unacknowledged ≤
//! `send_buffer_number`) and at most one timer per route record.
//!
//! After quiescence ([`Sim::check_quiescent`]): the above for every node, every accepted
//! message of a running incarnation has its outcome, every live node's discovery set and
//! ring hold exactly the registry's discovery records ([`Sim::registered_ids`]), every
//! route record to a live node is `READY`, and no live node remembers a node that is dead and
//! deleted from the registry, endpoints aside (bounded state for departed peers,
//! docs/ARCHITECTURE.md §9.4). With the registry machines on, also: every live
//! node that registered has a registered client whose view holds exactly those records.

use alloc::{format, vec::Vec};

use super::cluster::Sim;
use crate::{connector::RouteFlags, ids::NodeId, node::Node};

impl Sim<Node> {
    /// Checks the per-step invariants (see the [module docs](self)); each breach is recorded
    /// in [`Sim::violations`] (a panic in strict mode). Returns how many were found now.
    pub fn check_invariants(&mut self) -> usize {
        let now = self.now;
        if let Some(ledger) = self.ledger.as_mut() {
            ledger.check_deadlines(now);
        }
        let mut found = self.collect_ledger_violations();
        for idx in 0..self.slots.len() {
            if !core::mem::replace(&mut self.dirty[idx], false) {
                continue;
            }
            found += self.check_node(idx);
        }
        found
    }

    fn check_node(&mut self, idx: usize) -> usize {
        let Some(node) = self.slots[idx].node.as_ref() else {
            return 0;
        };
        let id = node.id();
        let inspect = node.inspect();
        let mut problems = Vec::new();
        let limit = inspect.config().send_buffer_number;
        if limit > 0 {
            for (_, endpoint) in inspect.endpoints().iter() {
                let target = endpoint.id();
                let (pending, unacked) =
                    (endpoint.queue().len(), endpoint.outbox().unacked().len());
                if pending + unacked > limit {
                    problems.push(format!(
                        "{id} holds {} messages for {target} (pending {pending} + unacked \
                         {unacked}), over send_buffer_number {limit}",
                        pending + unacked
                    ));
                }
            }
        }
        let connector = inspect.connector();
        if connector.timer_count() > connector.len() {
            problems.push(format!(
                "{id} has {} route timers for {} records",
                connector.timer_count(),
                connector.len()
            ));
        }
        let n = problems.len();
        for p in problems {
            self.violation(&p);
        }
        n
    }

    /// Checks the end-of-run invariants (see the [module docs](self)): call after every fault
    /// was healed, the registry settled and the cluster ran long enough for reconnects and
    /// message deadlines. Returns how many breaches were found.
    pub fn check_quiescent(&mut self) -> usize {
        for d in &mut self.dirty {
            *d = true;
        }
        let mut found = self.check_invariants();
        let mut problems = self
            .ledger
            .as_ref()
            .map(super::ledger::Ledger::final_violations)
            .unwrap_or_default();
        let registered = self.registered_ids();
        for (idx, slot) in self.slots.iter().enumerate() {
            let Some(node) = slot.node.as_ref() else {
                continue;
            };
            let id = slot.id;
            if let (Some(machines), Some(_)) = (self.machines.as_ref(), slot.records.as_ref()) {
                match machines.net.client(idx) {
                    Some(client) if client.is_registered() => {
                        let mut view: Vec<NodeId> =
                            client.peers().map(|(_, p)| p.discovery.id).collect();
                        view.sort_unstable();
                        if view != registered {
                            problems.push(format!(
                                "{id}'s registry client reports {view:?}, the registry holds \
                                 {registered:?}"
                            ));
                        }
                    }
                    _ => problems.push(format!(
                        "{id}'s registry client is not registered after quiescence"
                    )),
                }
            }
            let known: Vec<NodeId> = node.inspect().discovery().iter().map(|i| i.id).collect();
            let mut known_sorted = known.clone();
            known_sorted.sort_unstable();
            if known_sorted != registered {
                problems.push(format!(
                    "{id} knows discovery records {known_sorted:?}, the registry holds {registered:?}"
                ));
            }
            let rings = node.inspect().discovery().rings();
            if rings.len() != registered.len() || registered.iter().any(|&r| !rings.contains(r)) {
                problems.push(format!(
                    "{id}'s ring holds {} members, the registry {registered:?}",
                    rings.len()
                ));
            }
            // Bounded state for departed peers (docs/ARCHITECTURE.md §9.4): a node dead and
            // deleted from the registry (retired) is forgotten by every live node once a
            // grace passed — the settle before this check is longer than the runs' grace —
            // unless an endpoint for it is left (its GC bounds that, and the rest with it).
            for gone in self.slots.iter().filter(|s| s.node.is_none()).map(|s| s.id) {
                if !registered.contains(&gone)
                    && node.inspect().endpoints().find_by_id(gone).is_none()
                    && node.inspect().remembers(gone)
                {
                    problems.push(format!(
                        "{id} still remembers {gone}, dead and deleted: {:?}",
                        node.inspect().peer_tables()
                    ));
                }
            }
            for target in node.inspect().connector().targets() {
                let live = self
                    .index
                    .get(&target)
                    .is_some_and(|&i| self.slots[i].node.is_some());
                let Some(view) = node.inspect().route(target) else {
                    continue;
                };
                if live && !view.flags.contains(RouteFlags::READY) {
                    problems.push(format!(
                        "{id}'s route to live {target} is not READY after quiescence: {view:?}"
                    ));
                }
            }
        }
        found += problems.len();
        for p in problems {
            self.violation(&p);
        }
        found
    }
}
