//! The scale scenarios on a [`ScaleRun`]: a mass join, one change, a registry restart, 10 % of
//! the nodes killed at once, a rolling restart of all of them. Each reports the virtual time
//! from its trigger until converged, what the registry sent, and its bandwidth bound.

use super::ScaleRun;
use crate::{
    sim::ServerTraffic,
    time::{Duration, Instant},
};

/// What one scenario cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScenarioFigures {
    /// From the trigger until converged (`None`: not within the scenario's limit).
    pub converge: Option<Duration>,
    /// What the registry sent meanwhile.
    pub sent: ServerTraffic,
    /// Membership changes the scenario made (joins, deaths, restarts).
    pub changes: u64,
    /// Registry events the full members' records were handed meanwhile.
    pub node_events: u64,
    /// Full members that saw them.
    pub full_members: u64,
    /// The bytes every node must receive at least once ÷ the egress bandwidth: N × N ×
    /// the entry size for a join or a restart; zero where the scenario sends no records in
    /// bulk.
    pub bound: Duration,
}

impl ScenarioFigures {
    /// Registry events per membership change at one full member.
    #[must_use]
    pub fn events_per_change(&self) -> f64 {
        let per = self.changes * self.full_members;
        if per == 0 {
            return 0.0;
        }
        self.node_events as f64 / per as f64
    }
}

/// What one change (one node's new record) cost the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChangeCost {
    /// What the registry sent for it.
    pub sent: ServerTraffic,
    /// Its connections (every one is pushed the change).
    pub watchers: u64,
    /// The encoded entry size.
    pub entry_len: u64,
}

impl ChangeCost {
    /// Bytes sent ÷ (entry size × watchers): 1 is the floor of one bare entry per watcher.
    #[must_use]
    pub fn over_floor(&self) -> f64 {
        self.sent.bytes as f64 / (self.entry_len * self.watchers).max(1) as f64
    }
}

/// How long a scenario may take before it is reported as not converged.
const LIMIT: Duration = Duration::from_secs(3600);

impl ScaleRun {
    /// Every member starts at once; converged when every view holds all N.
    pub fn mass_join(&mut self) -> ScenarioFigures {
        let n = self.len();
        self.scenario(n as u64, self.bulk_bound(), |run| {
            for i in 0..n {
                run.start(i);
            }
        })
    }

    /// Member `i` publishes a new record (its version changed); what the registry sent until
    /// every copy arrived.
    pub fn one_change(&mut self, i: usize) -> ChangeCost {
        let before = self.net().server_sent();
        let mut info = self.discovery_record(i);
        info.version = alloc::string::String::from("1.4.3");
        let revision = self.net().server().map(|s| s.revision());
        self.update(i, info);
        let limit = self.now() + LIMIT;
        // The update travels to the registry first; then its puts.
        while self.net().server().map(|s| s.revision()) == revision {
            let Some(next) = self.net().next_due().filter(|&t| t <= limit) else {
                break;
            };
            self.run_until(next);
        }
        self.run_until_records_settle(limit);
        ChangeCost {
            sent: diff(self.net().server_sent(), before),
            watchers: self
                .net()
                .server()
                .map_or(0, |s| s.connection_count() as u64),
            entry_len: self.entry_len() as u64,
        }
    }

    /// The registry is killed and a new one (a new epoch) starts `down` later; every node
    /// re-registers. Converged when every view holds all N again.
    pub fn registry_restart(&mut self, down: Duration) -> ScenarioFigures {
        let n = self.len() as u64;
        self.scenario(n, self.bulk_bound(), |run| run.restart_registry_after(down))
    }

    /// Every tenth member (from the second) dies at once; converged when the registry's
    /// disconnect protection has ended and every view has lost them.
    pub fn kill_tenth(&mut self) -> ScenarioFigures {
        let victims: alloc::vec::Vec<usize> = (1..self.len()).step_by(10).collect();
        self.scenario(victims.len() as u64, Duration::ZERO, |run| {
            for &i in &victims {
                run.kill(i);
            }
        })
    }

    /// Every member (dead ones start again) is restarted with a new incarnation, one after
    /// another `interval` apart; converged when every view holds every new incarnation.
    /// Timed from the first restart.
    pub fn rolling_restart(&mut self, interval: Duration) -> ScenarioFigures {
        let n = self.len();
        self.scenario(n as u64, Duration::ZERO, |run| {
            for i in 0..n {
                if i > 0 {
                    let at = run.now() + interval;
                    run.run_until(at);
                }
                run.start(i);
            }
        })
    }

    /// N × N × the entry size ÷ the egress bandwidth.
    fn bulk_bound(&self) -> Duration {
        let n = self.len() as u128;
        let bytes = n * n * self.entry_len() as u128;
        let nanos = bytes * 1_000_000_000 / u128::from(self.config.egress_bandwidth.max(1));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// Triggers a scenario, runs it to convergence and counts what it cost.
    fn scenario(
        &mut self,
        changes: u64,
        bound: Duration,
        trigger: impl FnOnce(&mut ScaleRun),
    ) -> ScenarioFigures {
        let start = self.now();
        let sent = self.net().server_sent();
        let events = self.node_events();
        trigger(self);
        let converged: Option<Instant> = self.run_to_convergence(start + LIMIT);
        if let Some(at) = converged {
            // The next scenario starts once the last frame landed.
            self.run_until(at);
        }
        let full_members = self
            .full_members()
            .into_iter()
            .filter(|&i| self.members[i].alive)
            .count() as u64;
        ScenarioFigures {
            converge: converged.map(|at| at - start),
            sent: diff(self.net().server_sent(), sent),
            changes,
            node_events: self.node_events() - events,
            full_members,
            bound,
        }
    }
}

/// `after - before`, counter by counter.
fn diff(after: ServerTraffic, before: ServerTraffic) -> ServerTraffic {
    ServerTraffic {
        frames: after.frames - before.frames,
        bytes: after.bytes - before.bytes,
        record_frames: after.record_frames - before.record_frames,
    }
}
