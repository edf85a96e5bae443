//! Suspicion: a refused or timed-out redial makes a peer a *suspect in doubt*, not dead — a
//! refusal is a fact about the path (NAT, a load balancer, a restarting proxy, a firewall
//! reload), not about the process. The doubt becomes a death only when something else
//! corroborates it (docs/ARCHITECTURE.md §9.3):
//!
//! - the registry says the peer's session is gone ([`RegistryEvent::Session`], the embedded
//!   registry publishes it at once when the peer's connection closes), before the failed
//!   redial or after it, for the incarnation the suspect's link ran;
//! - an indirect probe: another linked node, asked (`Probe`), answers that it acted on that
//!   incarnation's death or knows a newer one (`ProbeAck` `Dead`);
//! - the doubt outlives the bound (`Config::suspicion_timeout`): at exactly the first failed
//!   redial + the bound the peer is dialled once more (the *last probe*), and its failure is
//!   the death (a peer the node cannot dial then is dead at the bound) — so a path failure
//!   shorter than the bound never kills: the path is back when the last probe runs.
//!
//! While in doubt the connector's own retries keep dialling the peer (the default bound,
//! 1.5 s, is above the first retry, 1 s + 20 % jitter, so a path back within the bound is
//! found before it), and an indirect probe that says the peer is alive (another path to it
//! is up) ends the doubt — the next failed redial doubts and asks again, so a peer is never
//! declared dead by this bound while another node holds a link to it. A link up ends the
//! suspicion. A new incarnation or a
//! delete from the registry is a death by itself (the book's other rules).
//!
//! [`RegistryEvent::Session`]: crate::registry::RegistryEvent::Session

use alloc::{collections::BTreeMap, vec::Vec};

use crate::{
    ids::NodeId,
    time::{Duration, Instant},
};

/// A suspect: the incarnation its last up link ran, and the doubt once a redial failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Suspect {
    incarnation: u64,
    doubt: Option<Doubt>,
}

/// A suspect's redial failed at `since`: probed a last time at `since + bound` (`last_probe`
/// once it is), dead when that fails, unless the doubt ends first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Doubt {
    since: Instant,
    last_probe: bool,
}

/// The suspects and the registry sessions known lost; see the [module docs](self).
#[derive(Clone, Debug)]
pub(crate) struct Suspicions {
    bound: Duration,
    suspects: BTreeMap<NodeId, Suspect>,
    /// Peers whose registry session is lost, with the incarnation it ran (cleared when the
    /// session is back, the record is deleted or the incarnation is found dead).
    sessions_lost: BTreeMap<NodeId, u64>,
}

impl Suspicions {
    /// Suspects held (bounded state for departed peers, docs/ARCHITECTURE.md §9.4).
    pub(crate) fn len(&self) -> usize {
        self.suspects.len()
    }

    /// Whether `peer` is a suspect or its registry session is remembered lost.
    pub(crate) fn holds(&self, peer: NodeId) -> bool {
        self.suspects.contains_key(&peer) || self.sessions_lost.contains_key(&peer)
    }

    /// No suspects; a doubt lasts at most `bound`.
    pub(crate) fn new(bound: Duration) -> Suspicions {
        Suspicions {
            bound,
            suspects: BTreeMap::new(),
            sessions_lost: BTreeMap::new(),
        }
    }

    /// `peer`'s last up link (incarnation `incarnation`) closed: a suspect, not yet in doubt
    /// (a doubt of the same incarnation stays).
    pub(crate) fn suspect(&mut self, peer: NodeId, incarnation: u64) {
        let fresh = Suspect {
            incarnation,
            doubt: None,
        };
        let held = self.suspects.entry(peer).or_insert(fresh);
        if held.incarnation != incarnation {
            *held = fresh;
        }
    }

    /// The suspicion of `peer` ends (a link up, a newer life, a death); whether it was one.
    pub(crate) fn clear(&mut self, peer: NodeId) -> bool {
        self.suspects.remove(&peer).is_some()
    }

    /// The incarnation suspected of `peer`, if it is a suspect.
    pub(crate) fn incarnation(&self, peer: NodeId) -> Option<u64> {
        self.suspects.get(&peer).map(|s| s.incarnation)
    }

    /// A dial of suspect `peer` failed at `now` (refused, timed out, or closed before its
    /// handshake): whether that is corroborated now (its session is lost for the suspected
    /// incarnation, or the doubt outlived the bound: this was the last probe or later). Else
    /// the doubt starts (a doubt already running keeps its start).
    pub(crate) fn dial_failed(&mut self, now: Instant, peer: NodeId) -> bool {
        let Some(suspect) = self.suspects.get_mut(&peer) else {
            return false;
        };
        if lost_matches(self.sessions_lost.get(&peer), suspect.incarnation)
            || suspect.doubt.is_some_and(|d| d.last_probe)
        {
            return true;
        }
        if suspect.doubt.is_none() {
            suspect.doubt = Some(Doubt {
                since: now,
                last_probe: false,
            });
        }
        false
    }

    /// The registry's session with `peer` (`incarnation`, 0 = not stated) is lost (`lost`) or
    /// back: whether that corroborates a doubt now (a suspect in doubt of that incarnation).
    pub(crate) fn session(&mut self, peer: NodeId, incarnation: u64, lost: bool) -> bool {
        if !lost {
            self.sessions_lost.remove(&peer);
            return false;
        }
        self.sessions_lost.insert(peer, incarnation);
        self.suspects
            .get(&peer)
            .is_some_and(|s| s.doubt.is_some() && lost_matches(Some(&incarnation), s.incarnation))
    }

    /// `peer`'s record is gone or its incarnation dead: its lost session is forgotten.
    pub(crate) fn forget_session(&mut self, peer: NodeId) {
        self.sessions_lost.remove(&peer);
    }

    /// Another path to suspect `peer` (`incarnation`) is up (an indirect probe said so): its
    /// doubt ends; it stays a suspect, so the next failed redial doubts (and asks) again.
    pub(crate) fn end_doubt(&mut self, peer: NodeId, incarnation: u64) {
        if let Some(suspect) = self.suspects.get_mut(&peer)
            && suspect.incarnation == incarnation
        {
            suspect.doubt = None;
        }
    }

    /// Whether `peer` is a suspect in doubt (a redial failed, nothing corroborated yet).
    pub(crate) fn in_doubt(&self, peer: NodeId) -> bool {
        self.suspects.get(&peer).is_some_and(|s| s.doubt.is_some())
    }

    /// The suspects whose doubt outlived the bound at `now`, in peer order: each is due its
    /// last probe (marked; the caller dials it, and its failure is the death).
    pub(crate) fn expired(&mut self, now: Instant) -> Vec<NodeId> {
        let bound = self.bound;
        let mut expired = Vec::new();
        for (&peer, suspect) in &mut self.suspects {
            if let Some(doubt) = suspect.doubt.as_mut()
                && !doubt.last_probe
                && doubt.since + bound <= now
            {
                doubt.last_probe = true;
                expired.push(peer);
            }
        }
        expired
    }

    /// The earliest end of a doubt not yet probed a last time.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        let bound = self.bound;
        self.suspects
            .values()
            .filter_map(|s| s.doubt.filter(|d| !d.last_probe))
            .map(|d| d.since + bound)
            .min()
    }
}

/// Whether a lost session (incarnation `lost`, 0 = not stated) is the suspected life's.
fn lost_matches(lost: Option<&u64>, suspected: u64) -> bool {
    lost.is_some_and(|&l| l == 0 || l == suspected)
}
