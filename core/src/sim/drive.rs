//! Driving a [`Sim`]: processing what is due (deliveries, then timers), moving the clock, and
//! handling every node output under the drain contract.

use alloc::format;

use super::{
    RegistryEvent, SimNode,
    agenda::Due,
    cluster::Sim,
    fmt_instant,
    link::{End, EndState, Side, SimLinkId},
    log::{Dial, OutcomeRecord, Received, RpcRecord},
    registry,
};
use crate::{
    ids::{LinkId, NodeId},
    node::Output,
    time::Instant,
};

/// `handle_timeout` calls at one instant after which a node whose deadline stays due is
/// declared stuck.
const STUCK_TIMER_CALLS: u32 = 1_000;

impl<N: SimNode> Sim<N> {
    // ---- clock ---------------------------------------------------------------------------

    /// Processes one thing due at the current instant: the earliest scheduled delivery, or a
    /// node timer at or before now (deliveries first at equal times; timers in node order).
    /// Returns `false` when nothing is due.
    pub fn step(&mut self) -> bool {
        let now = self.now;
        // (time, rank): deliveries before the registry machines before node timers.
        let delivery = self
            .agenda
            .next_time()
            .filter(|&t| t <= now)
            .map(|t| (t, 0));
        let machines = self
            .machines_next_due()
            .filter(|&t| t <= now)
            .map(|t| (t, 1));
        debug_assert_eq!(
            self.earliest_timer,
            self.scan_timers(),
            "sim: stale timer cache"
        );
        let timer = self.earliest_timer.filter(|&(d, _)| d <= now);
        let first = [delivery, machines, timer.map(|(t, _)| (t, 2))]
            .into_iter()
            .flatten()
            .min();
        match first {
            Some((_, 0)) => {
                if let Some((_, due)) = self.agenda.pop_due(now) {
                    self.deliver(due);
                }
            }
            Some((_, 1)) => self.machines_step(),
            Some(_) => {
                if let Some((_, idx)) = timer {
                    self.fire_timer(idx);
                }
            }
            None => return false,
        }
        self.steps += 1;
        true
    }

    /// Processes everything due at the current instant, without moving the clock.
    ///
    /// # Panics
    ///
    /// If it does not settle within `settings.step_limit` steps (a livelock between nodes),
    /// with the trace tail in the message.
    pub fn run_until_idle(&mut self) {
        for _ in 0..self.settings.step_limit {
            if !self.step() {
                return;
            }
        }
        let mut upcoming = alloc::string::String::new();
        for (at, due) in self.agenda.iter().take(10) {
            upcoming.push_str(&format!("\n  {} {due:?}", fmt_instant(at)));
        }
        panic!(
            "sim: not idle after {} steps at {}; {} deliveries scheduled, first:{upcoming}\n\
             --- trace tail ---\n{}",
            self.settings.step_limit,
            fmt_instant(self.now),
            self.agenda.len(),
            self.trace_tail(40)
        );
    }

    /// Processes every delivery due at the current instant — dial resolutions, bytes, closes,
    /// scripted registry events — and the deliveries they cause, without firing any timer
    /// (the nodes' or the registry machines'), and without moving the clock. For a test that
    /// looks at the state between an input and the timer it arms for the same instant;
    /// [`Sim::run_until_idle`] then fires those timers.
    ///
    /// # Panics
    ///
    /// If it does not settle within `settings.step_limit` deliveries, like
    /// [`Sim::run_until_idle`].
    pub fn deliver_until_idle(&mut self) {
        for _ in 0..self.settings.step_limit {
            let Some((_, due)) = self.agenda.pop_due(self.now) else {
                return;
            };
            self.deliver(due);
            self.steps += 1;
        }
        panic!(
            "sim: deliveries not settled after {} steps at {}\n--- trace tail ---\n{}",
            self.settings.step_limit,
            fmt_instant(self.now),
            self.trace_tail(40)
        );
    }

    /// The earliest instant something is scheduled: a delivery or a node timer.
    #[must_use]
    pub fn next_event_time(&self) -> Option<Instant> {
        let timers = self.earliest_timer.map(|(d, _)| d);
        let next = crate::time::earliest(self.agenda.next_time(), timers);
        crate::time::earliest(next, self.machines_next_due())
    }

    /// Settles the current instant, then jumps the clock to the next scheduled delivery or
    /// timer and settles that instant. Returns the new time, or `None` (clock unmoved) when
    /// nothing is scheduled.
    pub fn advance_to_next_deadline(&mut self) -> Option<Instant> {
        self.run_until_idle();
        let next = self.next_event_time()?;
        self.now = self.now.max(next);
        self.run_until_idle();
        Some(self.now)
    }

    /// Moves time forward by `d`, processing every delivery and timer due on the way at its
    /// exact time, in order; ends settled at `now + d`.
    pub fn advance(&mut self, d: crate::time::Duration) {
        let target = self.now + d;
        self.advance_to(target);
    }

    /// Moves time forward to `target` (never backwards), processing everything due on the
    /// way at its exact time; ends settled at `max(now, target)`.
    pub fn advance_to(&mut self, target: Instant) {
        loop {
            self.run_until_idle();
            match self.next_event_time() {
                Some(next) if next <= target => self.now = self.now.max(next),
                _ => break,
            }
        }
        self.now = self.now.max(target);
        self.run_until_idle();
    }

    // ---- deliveries ------------------------------------------------------------------------

    fn fire_timer(&mut self, idx: usize) {
        let now = self.now;
        let id = self.slots[idx].id;
        let slot = &mut self.slots[idx];
        if slot.timeouts_at.0 == now {
            slot.timeouts_at.1 += 1;
        } else {
            slot.timeouts_at = (now, 1);
        }
        assert!(
            slot.timeouts_at.1 <= STUCK_TIMER_CALLS,
            "sim: node {id} still reports a deadline at or before {} after {STUCK_TIMER_CALLS} \
             handle_timeout calls at that instant (handle_timeout must drain every due \
             timer)\n--- trace tail ---\n{}",
            fmt_instant(now),
            self.trace_tail(40)
        );
        self.note(Some(id), "<- timeout");
        if let Some(node) = self.slots[idx].node.as_mut() {
            node.swap_shared_maglev(&mut self.shared_maglev);
            node.handle_timeout(now);
            node.swap_shared_maglev(&mut self.shared_maglev);
        }
        self.drain(idx);
    }

    fn deliver(&mut self, due: Due) {
        match due {
            Due::Establish { link } => self.establish(link),
            Due::Bytes { link, to, bytes } => {
                let Some(end) = self.open_end(link, to) else {
                    self.dropped_bytes += bytes.len() as u64;
                    self.note_with(None, || format!("dropped {} bytes on {link}", bytes.len()));
                    return;
                };
                self.note_with(Some(end.node), || {
                    format!("<- received {} on {} {:?}", bytes.len(), end.link, bytes)
                });
                self.invoke(end.node, |n, now| n.handle_received(now, end.link, bytes));
            }
            Due::PeerClosed { link, to } => self.notify_closed(link, to, EndState::Open),
            Due::Registry {
                node,
                incarnation,
                event,
            } => {
                let idx = self.slot_index(node);
                if self.slots[idx].incarnation == incarnation && self.slots[idx].node.is_some() {
                    self.deliver_registry(idx, *event);
                } else {
                    self.note(
                        Some(node),
                        "registry event dropped (node restarted or dead)",
                    );
                }
            }
        }
    }

    /// Tells `to`'s end of `link` that the link is gone, if that end is still in state
    /// `expected` (open for a graceful close, reset for a drop): an end its node closed in the
    /// meantime hears nothing.
    pub(super) fn notify_closed(&mut self, link: SimLinkId, to: Side, expected: EndState) {
        let Some(end) = self.links.get_mut(link).and_then(|l| l.end_mut(to)) else {
            return;
        };
        if end.state != expected {
            return;
        }
        end.state = EndState::Gone;
        let (node, id, incarnation) = (end.node, end.link, end.incarnation);
        if !self.incarnation_matches(node, incarnation) {
            return;
        }
        self.note_with(Some(node), || format!("<- closed {id}"));
        self.invoke(node, |n, now| n.handle_closed(now, id));
    }

    /// Resolves a dial: establishes the link, or fails it.
    fn establish(&mut self, id: SimLinkId) {
        let Some(link) = self.links.get(id) else {
            return;
        };
        let Some(dialer) = link.end(Side::Dialer).cloned() else {
            return;
        };
        if dialer.state != EndState::Dialing {
            return; // cancelled by the dialer, or the dialer died
        }
        let target = link.target;
        let addr = link.addr.clone();
        let reason = link.doomed.or(match target {
            None => Some("unknown address"),
            Some(t) if !self.is_alive(t) => Some("target is down"),
            Some(t) if self.pairs.is_down(dialer.node, t) => Some("path is down"),
            Some(t) if self.path_faults.refuses(dialer.node, t, self.now) => Some("path refused"),
            Some(_) => None,
        });
        let (Some(target), None) = (target, reason) else {
            if let Some(end) = self.links.get_mut(id).and_then(|l| l.end_mut(Side::Dialer)) {
                end.state = EndState::Gone;
            }
            let why = reason.unwrap_or("unknown address");
            self.note_with(Some(dialer.node), || {
                format!("<- connect failed {} to {addr} ({why})", dialer.link)
            });
            self.log_dial_resolved(dialer.node, dialer.link, false);
            self.invoke(dialer.node, |n, now| {
                n.handle_connect_failed(now, dialer.link)
            });
            return;
        };
        // Acceptor first: its link must exist before the dialer can transmit on it.
        let idx = self.slot_index(target);
        let now = self.now;
        let incarnation = self.slots[idx].incarnation;
        let Some(node) = self.slots[idx].node.as_mut() else {
            return;
        };
        let accepted = node.handle_accepted(now);
        if self.links.in_use(target, accepted) {
            self.violation(&format!(
                "{target} handle_accepted returned {accepted}, which is still in use"
            ));
        }
        self.links.attach_acceptor(
            id,
            End {
                node: target,
                incarnation,
                link: accepted,
                state: EndState::Open,
            },
        );
        if let Some(end) = self.links.get_mut(id).and_then(|l| l.end_mut(Side::Dialer)) {
            end.state = EndState::Open;
        }
        self.note_with(Some(target), || {
            format!("<- accepted {accepted} (from {})", dialer.node)
        });
        self.drain(idx);
        self.note_with(Some(dialer.node), || {
            format!("<- connected {}", dialer.link)
        });
        self.log_dial_resolved(dialer.node, dialer.link, true);
        self.invoke(dialer.node, |n, now| n.handle_connected(now, dialer.link));
    }

    /// Notes in `node`'s log how its dial on `link` resolved.
    fn log_dial_resolved(&mut self, node: NodeId, link: LinkId, connected: bool) {
        let idx = self.slot_index(node);
        self.slots[idx].log.dial_resolved(link, connected);
    }

    /// Hands a registry event to a live node now and drains it.
    pub(super) fn deliver_registry(&mut self, idx: usize, event: RegistryEvent) {
        let id = self.slots[idx].id;
        self.note_with(Some(id), || {
            format!("<- registry {}", registry::describe(&event))
        });
        self.invoke(id, |n, now| n.handle_registry(now, event));
    }

    // ---- calling nodes ---------------------------------------------------------------------

    /// Calls `f` on live node `id` at the current time and drains it; no-op if it is dead.
    fn invoke(&mut self, id: NodeId, f: impl FnOnce(&mut N, Instant)) {
        let idx = self.slot_index(id);
        let now = self.now;
        if let Some(node) = self.slots[idx].node.as_mut() {
            node.swap_shared_maglev(&mut self.shared_maglev);
            f(node, now);
            node.swap_shared_maglev(&mut self.shared_maglev);
            self.drain(idx);
        }
    }

    /// The drain contract: poll every output, act on it, then re-read the timer.
    pub(super) fn drain(&mut self, idx: usize) {
        loop {
            let Some(output) = self.slots[idx].node.as_mut().and_then(N::poll_output) else {
                break;
            };
            self.handle_output(idx, output);
        }
        let deadline = self.slots[idx].node.as_ref().and_then(N::poll_timeout);
        self.set_deadline(idx, deadline);
        self.dirty[idx] = true;
    }

    /// Sets slot `idx`'s timer deadline and keeps `earliest_timer` equal to what
    /// [`Sim::scan_timers`] finds: one comparison, unless the slot holding the earliest timer
    /// moves it later or clears it (then every slot is scanned once).
    pub(super) fn set_deadline(&mut self, idx: usize, deadline: Option<Instant>) {
        let old = core::mem::replace(&mut self.slots[idx].deadline, deadline);
        match (self.earliest_timer, deadline) {
            // The holder moved its own timer: still the earliest if not later than before
            // (it was not later than any other slot's).
            (Some((_, holder)), _) if holder == idx => {
                self.earliest_timer = match (deadline, old) {
                    (Some(d), Some(o)) if d <= o => Some((d, idx)),
                    _ => self.scan_timers(),
                };
            }
            (Some(first), Some(d)) => self.earliest_timer = Some(first.min((d, idx))),
            (None, Some(d)) => self.earliest_timer = Some((d, idx)),
            // Another slot cleared its timer, which was not the earliest.
            (_, None) => {}
        }
    }

    /// The earliest timer over every slot, ties to the lowest index.
    pub(super) fn scan_timers(&self) -> Option<(Instant, usize)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.deadline.map(|d| (d, i)))
            .min()
    }

    fn handle_output(&mut self, idx: usize, output: Output) {
        let id = self.slots[idx].id;
        let now = self.now;
        match output {
            Output::Connect { link, peer, addr } => {
                self.note_with(Some(id), || {
                    format!("-> connect {link} to {peer} at {addr}")
                });
                self.slots[idx].log.dials.push(Dial {
                    at: now,
                    link,
                    peer,
                    addr: addr.clone(),
                    connected: None,
                });
                self.dial(idx, link, addr);
            }
            Output::Transmit { link, bytes } => {
                self.note_with(Some(id), || {
                    format!("-> transmit {} on {link} {:?}", bytes.len(), bytes)
                });
                self.transmit(id, link, bytes);
            }
            Output::Close { link } => {
                self.note_with(Some(id), || format!("-> close {link}"));
                self.close(id, link);
            }
            Output::Received {
                from,
                via,
                msg_type,
                payload,
            } => {
                self.note_with(Some(id), || {
                    format!("-> app received from {from} via {via} type {msg_type} {payload:?}")
                });
                if let Some(ledger) = self.ledger.as_mut() {
                    let inc = self.slots[idx].incarnation;
                    ledger.on_received(id, inc, from, &payload);
                    // Surface a ledger breach at the output that caused it (strict: panic).
                    self.collect_ledger_violations();
                }
                self.slots[idx].log.received.push(Received {
                    at: now,
                    from,
                    via,
                    msg_type,
                    payload,
                });
            }
            Output::Outcome { msg, outcome } => {
                self.note_with(Some(id), || format!("-> outcome msg#{} {outcome}", msg.0));
                let slot = &mut self.slots[idx];
                if slot.done_msgs.contains(&msg) {
                    self.violation(&format!("{id} reported a second outcome for msg#{}", msg.0));
                } else if !slot.open_msgs.remove(&msg) {
                    self.violation(&format!(
                        "{id} reported an outcome for msg#{}, which send never returned",
                        msg.0
                    ));
                } else {
                    slot.done_msgs.insert(msg);
                }
                if let Some(ledger) = self.ledger.as_mut() {
                    let inc = self.slots[idx].incarnation;
                    ledger.on_outcome(id, inc, msg, outcome, now);
                    self.collect_ledger_violations();
                }
                self.slots[idx].log.outcomes.push(OutcomeRecord {
                    at: now,
                    msg,
                    outcome,
                });
            }
            Output::Event(event) => {
                self.note_with(Some(id), || format!("-> event {event:?}"));
                if let (
                    Some(ledger),
                    crate::node::Event::PeerDead {
                        peer, incarnation, ..
                    },
                ) = (self.ledger.as_mut(), &event)
                {
                    let inc = self.slots[idx].incarnation;
                    let dead = self.lives.get(&(*peer, *incarnation)).copied();
                    ledger.on_death_evidence(id, inc, *peer, dead, now);
                    self.collect_ledger_violations();
                }
                if let crate::node::Event::PeerDead {
                    peer,
                    incarnation,
                    evidence: crate::node::Evidence::RedialFailed,
                } = event
                {
                    self.check_path_death(idx, peer, incarnation);
                }
                self.slots[idx].log.events.push((now, event));
            }
            Output::Rpc(rpc) => {
                self.note_with(Some(id), || format!("-> rpc {rpc:?}"));
                let life = self.slots[idx].incarnation;
                self.slots[idx].log.rpc.push(RpcRecord {
                    at: now,
                    life,
                    output: rpc,
                });
            }
        }
    }

    fn dial(&mut self, idx: usize, link: LinkId, addr: alloc::string::String) {
        let id = self.slots[idx].id;
        let now = self.now;
        if self.links.in_use(id, link) {
            self.violation(&format!("{id} dialed with {link}, which is still in use"));
        }
        let target = self.addrs.get(&addr).copied();
        let doomed = match target {
            None => Some("unknown address"),
            Some(t) if !self.is_alive(t) => Some("target is down"),
            Some(t) if self.pairs.is_down(id, t) => Some("path is down"),
            Some(t) if self.path_faults.refuses(id, t, now) => Some("path refused"),
            Some(t) if self.pairs.take_fail_next(id, t) => Some("scripted failure"),
            Some(_) => None,
        };
        let latency = target
            .and_then(|t| self.pairs.connect_latency(id, t))
            .unwrap_or(self.settings.connect_latency);
        let end = End {
            node: id,
            incarnation: self.slots[idx].incarnation,
            link,
            state: EndState::Dialing,
        };
        let sim_link = self.links.dial(end, addr, target, doomed, now);
        self.agenda
            .push(now + latency, Due::Establish { link: sim_link });
    }

    fn transmit(&mut self, id: NodeId, link: LinkId, bytes: bytes::Bytes) {
        let Some((sim_link, side)) = self.links.lookup(id, link) else {
            self.violation(&format!(
                "{id} transmitted on {link}, which it never opened"
            ));
            return;
        };
        let state = self
            .links
            .get(sim_link)
            .and_then(|l| l.end(side))
            .map_or(EndState::Gone, |e| e.state);
        match state {
            EndState::Open => {}
            EndState::Reset => {
                // Written into a dropped connection the node has not heard about yet.
                self.dropped_bytes += bytes.len() as u64;
                self.note_with(None, || {
                    format!("dropped {} bytes on {sim_link}", bytes.len())
                });
                return;
            }
            EndState::Dialing => {
                self.violation(&format!("{id} transmitted on {link} before it connected"));
                return;
            }
            EndState::ClosedBySelf | EndState::Gone => {
                self.violation(&format!("{id} transmitted on {link} after it closed"));
                return;
            }
        }
        let to = side.other();
        let at = self.arrival(sim_link, to);
        self.agenda.push(
            at,
            Due::Bytes {
                link: sim_link,
                to,
                bytes,
            },
        );
    }

    fn close(&mut self, id: NodeId, link: LinkId) {
        let Some((sim_link, side)) = self.links.lookup(id, link) else {
            self.violation(&format!("{id} closed {link}, which it never opened"));
            return;
        };
        let Some(end) = self.links.get_mut(sim_link).and_then(|l| l.end_mut(side)) else {
            return;
        };
        let before = end.state;
        match before {
            EndState::Dialing | EndState::Reset => end.state = EndState::ClosedBySelf,
            EndState::Open => {
                end.state = EndState::ClosedBySelf;
                let to = side.other();
                let at = self.arrival(sim_link, to);
                self.agenda.push(at, Due::PeerClosed { link: sim_link, to });
            }
            EndState::ClosedBySelf | EndState::Gone => {
                self.note_with(Some(id), || {
                    format!("   close of {link} ignored (already closed)")
                });
            }
        }
    }

    /// Arrival time of the next bytes (or close) travelling towards `to` on `link`: after the
    /// latency, and never before what was sent earlier.
    fn arrival(&mut self, id: SimLinkId, to: Side) -> Instant {
        let now = self.now;
        let Some(link) = self.links.get(id) else {
            return now;
        };
        let (a, b) = link.nodes();
        let latency = match (a, b) {
            (Some(a), Some(b)) => self.pairs.latency(a, b),
            _ => None,
        }
        .unwrap_or(self.settings.link_latency);
        let jitter = u64::try_from(self.settings.jitter.as_nanos()).unwrap_or(u64::MAX);
        let latency = if jitter == 0 {
            latency
        } else {
            latency + crate::time::Duration::from_nanos(self.rng.below(jitter))
        };
        let Some(link) = self.links.get_mut(id) else {
            return now;
        };
        let at = (now + latency).max(link.last_arrival[to.index()]);
        link.last_arrival[to.index()] = at;
        at
    }

    /// `to`'s end of `link` if it is open and belongs to the running incarnation.
    fn open_end(&self, link: SimLinkId, to: Side) -> Option<End> {
        let end = self.links.get(link)?.end(to)?;
        (end.state == EndState::Open && self.incarnation_matches(end.node, end.incarnation))
            .then(|| end.clone())
    }

    fn incarnation_matches(&self, node: NodeId, incarnation: u32) -> bool {
        self.index.get(&node).is_some_and(|&i| {
            self.slots[i].node.is_some() && self.slots[i].incarnation == incarnation
        })
    }
}
