//! What the node calls on the table to move messages through the outboxes: accept a send,
//! flush on a ready route, retransmit, take acks, resets, relay refusals and incarnations,
//! give up, and handle the in-flight deadlines — each keeping the table's timers exact.
//!
//! Every call names its target by node id (the node's vocabulary) except [`send`], which
//! takes the key the node just looked up. After each change to an outbox its deadlines are
//! re-filed in the table's [`TimerQueue`]s, so [`EndpointTable::next_deadline`] stays exact
//! and O(1) and nothing here scans every target.
//!
//! [`send`]: EndpointTable::send

use alloc::{
    collections::{BTreeMap, VecDeque},
    vec::Vec,
};

use bytes::Bytes;

use super::{
    EndpointTable, FlushStop, InFlight, PendingMessage, Refusal, Reset,
    outbox::{DataRoute, Outbox, OutboxSink},
    table::{endpoint_at, endpoint_at_mut},
};
use crate::{
    ids::{Key, LinkId, MsgId, NodeId},
    outcome::{FailReason, Outcome, OutcomeSink},
    rng::Rng,
    time::{Duration, Instant},
    timer::TimerQueue,
};

/// The sending side shared by every outbox of a node.
#[derive(Clone, Debug)]
pub(super) struct Sender {
    /// This node: the `src` of our `Data` frames.
    src: NodeId,
    /// Draws the tag of every stream we start.
    rng: Rng,
    /// How long the oldest in-flight message waits for its ack before everything in flight
    /// goes out again.
    retransmit_after: Duration,
    /// The last incarnation learned per target (acks, resets, handshakes); outlives the
    /// target's endpoint.
    pub(super) known: BTreeMap<NodeId, u64>,
}

impl Sender {
    pub(super) const fn new(src: NodeId, rng: Rng, retransmit_after: Duration) -> Sender {
        Sender {
            src,
            rng,
            retransmit_after,
            known: BTreeMap::new(),
        }
    }

    fn known(&self, target: NodeId) -> u64 {
        self.known.get(&target).copied().unwrap_or(0)
    }
}

/// What [`EndpointTable::unacked`] lists for a target without an endpoint.
static NO_MESSAGES: VecDeque<InFlight> = VecDeque::new();

/// Sets `key`'s deadline in `timers` to `at` (disarmed for `None`), touching the queue only
/// when it changes.
pub(super) fn set_timer(timers: &mut TimerQueue<Key>, key: Key, at: Option<Instant>) {
    match at {
        Some(at) => {
            if timers.deadline(key) != Some(at) {
                timers.replace(key, at);
            }
        }
        None => {
            timers.cancel(key);
        }
    }
}

impl EndpointTable {
    /// Accepts message `msg` for the endpoint `key` at `now`, with deadline
    /// `now + message_timeout`. Over the count or byte limit (queued and in-flight messages
    /// together) it ends at once `Failed(QueueFull)`; a stale key ends it `Failed(TargetGone)`.
    /// With nothing queued it asks `ready_link` (only then) for the link of a ready route: if
    /// there is one the message is transmitted at once and stays in flight until
    /// acknowledged; otherwise it is queued until a flush.
    #[expect(
        clippy::too_many_arguments,
        reason = "the message's four parts plus where it may go and where outcomes go"
    )]
    pub fn send<S: OutboxSink + ?Sized>(
        &mut self,
        key: Key,
        msg: MsgId,
        msg_type: u32,
        payload: Bytes,
        now: Instant,
        ready_link: impl FnOnce() -> Option<LinkId>,
        sink: &mut S,
    ) {
        let deadline = now + self.settings.message_timeout;
        self.send_until(key, msg, msg_type, payload, now, deadline, ready_link, sink);
    }

    /// [`send`](Self::send) with the message's own `deadline` instead of
    /// `now + message_timeout` (a call's request ends with its call): queued, it fails at
    /// that instant exactly and is never transmitted after it.
    #[expect(
        clippy::too_many_arguments,
        reason = "the message's four parts, its deadline, where it may go and where outcomes go"
    )]
    #[inline(always)]
    pub fn send_until<S: OutboxSink + ?Sized>(
        &mut self,
        key: Key,
        msg: MsgId,
        msg_type: u32,
        payload: Bytes,
        now: Instant,
        deadline: Instant,
        ready_link: impl FnOnce() -> Option<LinkId>,
        sink: &mut S,
    ) {
        let EndpointTable { slots, sender, .. } = self;
        let Some(endpoint) = endpoint_at_mut(slots, key) else {
            sink.emit(msg, Outcome::Failed(FailReason::TargetGone));
            return;
        };
        let outbox = &mut endpoint.outbox;
        if !outbox.admits(payload.len()) {
            sink.emit(msg, Outcome::Failed(FailReason::QueueFull));
            return;
        }
        let message = PendingMessage {
            id: msg,
            msg_type,
            payload,
            deadline,
        };
        let probing = outbox.stream.probing && outbox.stream.len() > 0;
        let straight = if outbox.queue.is_empty() && !probing {
            ready_link()
        } else {
            None
        };
        if let Some(link) = straight {
            let dst = endpoint.id;
            let was_idle = outbox.stream.len() == 0;
            // The incarnation learned for the target matters only to a stream starting now.
            let known = if outbox.stream.needs_tag() {
                sender.known(dst)
            } else {
                0
            };
            let mut route = DataRoute {
                src: sender.src,
                dst,
                link,
            };
            outbox.transmit_new(&mut route, sink, &mut sender.rng, known, message, now);
            if was_idle {
                self.sync_unacked_timers(key);
            }
            return;
        }
        match outbox.queue.push(message) {
            Ok(()) => self.reindex(key),
            Err(rejected) => sink.emit(rejected.message.id, Outcome::Failed(rejected.reason)),
        }
    }

    /// Whether `target` has messages queued or in flight (a flush would do something).
    #[must_use]
    pub fn has_outgoing(&self, target: NodeId) -> bool {
        self.endpoint_of(target)
            .is_some_and(|key| endpoint_at(&self.slots, key).is_some_and(|e| !e.outbox.is_idle()))
    }

    /// On a ready route over `link`: retransmits `target`'s in-flight messages, then hands
    /// its queued messages to the link, in order, at most `budget` of them (each stays in
    /// flight until acknowledged; queued messages already due end `Failed(Timeout)`). If the
    /// budget stopped it, the flush is unfinished ([`has_unfinished_flush`]) and continues
    /// from [`due_flushes`].
    ///
    /// [`has_unfinished_flush`]: Self::has_unfinished_flush
    /// [`due_flushes`]: Self::due_flushes
    pub fn flush_outbox<S: OutboxSink + ?Sized>(
        &mut self,
        target: NodeId,
        link: LinkId,
        now: Instant,
        budget: usize,
        sink: &mut S,
    ) {
        let flushed = self.with_route(target, link, |outbox, route, rng, known| {
            outbox.retransmit(route, sink, now);
            outbox.flush_queue(route, sink, rng, known, now, budget)
        });
        let Some((key, stop)) = flushed else {
            return;
        };
        if stop == Some(FlushStop::Budget) {
            self.unfinished_flushes.arm(key, now);
        } else {
            self.unfinished_flushes.cancel(key);
        }
        if stop.is_some() {
            self.reindex(key);
        }
        self.sync_unacked_timers(key);
    }

    /// Runs `f` on `target`'s outbox with a route for its `Data` frames over `link`, the
    /// tag generator and the incarnation learned for the target; `None` (and `f` not run)
    /// when it has no endpoint.
    fn with_route<R>(
        &mut self,
        target: NodeId,
        link: LinkId,
        f: impl FnOnce(&mut Outbox, &mut DataRoute, &mut Rng, u64) -> R,
    ) -> Option<(Key, R)> {
        let key = self.endpoint_of(target)?;
        let EndpointTable { slots, sender, .. } = self;
        let endpoint = endpoint_at_mut(slots, key)?;
        let known = sender.known(target);
        let mut route = DataRoute {
            src: sender.src,
            dst: target,
            link,
        };
        let result = f(&mut endpoint.outbox, &mut route, &mut sender.rng, known);
        Some((key, result))
    }

    /// Forgets an unfinished flush of `target` (its route is not ready, or nothing is left).
    pub fn cancel_flush(&mut self, target: NodeId) {
        if let Some(key) = self.endpoint_of(target) {
            self.unfinished_flushes.cancel(key);
        }
    }

    /// Whether a flush stopped on its budget and waits for [`due_flushes`](Self::due_flushes)
    /// (the node's `poll_timeout` is then "now").
    #[must_use]
    pub fn has_unfinished_flush(&self) -> bool {
        !self.unfinished_flushes.is_empty()
    }

    /// The targets whose flush is unfinished at `now`, by id (each is forgotten: flush it
    /// again with [`flush_outbox`](Self::flush_outbox), which re-arms it if the budget stops
    /// it again).
    pub fn due_flushes(&mut self, now: Instant) -> Vec<NodeId> {
        let mut due = Vec::new();
        while let Some((key, _)) = self.unfinished_flushes.pop_expired(now) {
            if let Some(e) = endpoint_at(&self.slots, key) {
                due.push(e.id);
            }
        }
        due.sort_unstable();
        due
    }

    /// Writes every in-flight message to `target` out again on `link`, oldest first, with
    /// its original seq (the receiver drops what it already has), and restarts its
    /// retransmission timer.
    pub fn retransmit<S: OutboxSink + ?Sized>(
        &mut self,
        target: NodeId,
        link: LinkId,
        now: Instant,
        sink: &mut S,
    ) {
        let sent = self.with_route(target, link, |outbox, route, _, _| {
            outbox.retransmit(route, sink, now);
        });
        if let Some((key, ())) = sent {
            self.sync_unacked_timers(key);
        }
    }

    /// Pushes the retransmission of `target`'s in-flight messages to `now + retransmit_after`
    /// without counting a transmission (its route is not ready: nothing could be sent).
    pub fn touch(&mut self, target: NodeId, now: Instant) {
        self.with_stream(target, |stream, _| stream.touch(now));
    }

    /// The targets whose oldest in-flight message waited `retransmit_after` for its ack at
    /// `now`, by id. Each must be [`retransmit`](Self::retransmit)ted or
    /// [`touch`](Self::touch)ed.
    pub fn due_retransmits(&mut self, now: Instant) -> Vec<NodeId> {
        let mut due = Vec::new();
        while let Some((key, _)) = self.retransmits.pop_expired(now) {
            if let Some(e) = endpoint_at(&self.slots, key) {
                due.push(e.id);
            }
        }
        due.sort_unstable();
        due
    }

    /// Messages to `target` in flight (transmitted, not yet acknowledged), oldest first.
    pub fn unacked(&self, target: NodeId) -> impl ExactSizeIterator<Item = &InFlight> + '_ {
        self.endpoint_of(target)
            .and_then(|key| endpoint_at(&self.slots, key))
            .map_or(NO_MESSAGES.iter(), |e| e.outbox.stream.iter())
    }

    /// A cumulative ack of `seq` from `target` in `incarnation`: every in-flight message up
    /// to it ends `Delivered`, and a stream stamped 0 is stamped `incarnation` (the one that
    /// acknowledged it). Acks of another tag (an abandoned stream) or from another incarnation
    /// than the stream's stamp are ignored. Returns how many messages it acknowledged.
    pub fn on_ack<S: OutcomeSink + ?Sized>(
        &mut self,
        target: NodeId,
        seq: u64,
        incarnation: u64,
        sink: &mut S,
    ) -> usize {
        let acked = self.with_stream(target, |stream, _| stream.on_ack(seq, incarnation, sink));
        let Some(Some(acked)) = acked else {
            return 0;
        };
        if incarnation != 0 {
            self.sender.known.insert(target, incarnation);
        }
        acked
    }

    /// A reset from `target`: `refusal.incarnation` refused the frame `refusal.seq` and does
    /// not hold its stream. Ignored unless the seq belongs to the current stream. Otherwise
    /// the target's incarnation is now `refusal.incarnation`, the refused copy is counted as
    /// not arrived, and the in-flight messages split in two, in order:
    ///
    /// - the first one that provably never reached an *earlier* incarnation, and everything
    ///   after it (receivers deliver in order), move onto a fresh stream stamped with the
    ///   resetting incarnation (send them again, e.g. with
    ///   [`flush_outbox`](Self::flush_outbox), as first transmissions). A message provably
    ///   never reached an earlier incarnation when every copy of it was refused (its
    ///   transmissions are 0: by a relay with `Unreachable`, or this reset), or when the
    ///   resetting incarnation was already running when the oldest copy of it that may have
    ///   arrived was sent (`now - age`, less a margin for clock-rate differences of 0.1 % +
    ///   1 ms, is at or before [`InFlight::open_since`]: every copy sent before was refused);
    /// - the messages before it may have been delivered by an earlier incarnation: they end
    ///   `Unknown(TargetRestarted)`.
    ///
    /// The resetting incarnation holds nothing of the voided stream (a reset says so), so
    /// nothing that moves can be delivered twice. Returns [`Reset::Restarted`] when some
    /// messages moved, [`Reset::Abandoned`] when every one ended (the stream is forgotten).
    pub fn on_reset<S: OutcomeSink + ?Sized>(
        &mut self,
        target: NodeId,
        refusal: Refusal,
        now: Instant,
        sink: &mut S,
    ) -> Reset {
        let reset = self.with_stream(target, |stream, rng| {
            if !stream.is_current(refusal.seq) {
                return Reset::Ignored;
            }
            stream.on_reset(refusal, now, rng, sink)
        });
        match reset {
            None | Some(Reset::Ignored) => Reset::Ignored,
            Some(reset) => {
                self.sender.known.insert(target, refusal.incarnation);
                reset
            }
        }
    }

    /// `target` runs `incarnation` (its handshake says so, or the registry announced it).
    /// A stream stamped with another incarnation, or any stream when the incarnation known
    /// before differs (it restarted), is aimed at a dead incarnation: the messages that may
    /// have reached it end `Unknown(TargetRestarted)`, the ones that provably never arrived
    /// move to a fresh stream stamped `incarnation` ([`on_dead`](Self::on_dead)'s rule). A
    /// stream stamped 0 toward the same incarnation is kept (its frames carry the
    /// `retransmit` flag, which a new incarnation refuses). A stale stream with nothing in
    /// flight is closed: the next message starts a stream stamped `incarnation`. Returns how
    /// many messages ended.
    pub fn on_incarnation<S: OutcomeSink + ?Sized>(
        &mut self,
        target: NodeId,
        incarnation: u64,
        sink: &mut S,
    ) -> usize {
        let previous = self.sender.known.insert(target, incarnation);
        let restarted = previous.is_some_and(|p| p != incarnation);
        self.with_stream(target, |stream, rng| {
            let stale_stamp = stream.stamp() != 0 && stream.stamp() != incarnation;
            if !(stale_stamp || restarted) {
                0
            } else if stream.len() > 0 {
                stream
                    .die(FailReason::TargetRestarted, incarnation, rng, sink)
                    .0
            } else {
                // Nothing in flight: the next message starts a stream stamped `incarnation`.
                stream.close();
                0
            }
        })
        .unwrap_or(0)
    }

    /// What `target`'s messages end with at their deadlines: `Timeout` (`None`), or the
    /// reason its link (or its proxy's) was refused. Ignored without an endpoint.
    pub fn set_deadline_reason(&mut self, target: NodeId, reason: Option<FailReason>) {
        if let Some(key) = self.endpoint_of(target)
            && let Some(e) = endpoint_at_mut(&mut self.slots, key)
        {
            e.deadline_reason = reason.unwrap_or(FailReason::Timeout);
        }
    }

    /// Evidence that `target`'s incarnation `incarnation` is dead (its redial was refused,
    /// its heartbeats stopped, a relay or the registry said so). Ignored unless the current
    /// stream is aimed at it: stamped `incarnation`, or stamped 0 while the incarnation known
    /// is `incarnation` or none. Then, at once, the in-flight messages that may have reached
    /// it end `Unknown(reason)` and the ones that provably never arrived (every copy refused)
    /// move in order onto a fresh stream (stamped 0, first transmissions, deadlines kept) to
    /// wait for a live incarnation; the known incarnation is forgotten. An aimed stream with
    /// nothing in flight is closed, so the next message starts a fresh one rather than
    /// reaching a new life as a frame of the dead one's stream. Returns how many messages
    /// ended.
    pub fn on_dead<S: OutcomeSink + ?Sized>(
        &mut self,
        target: NodeId,
        incarnation: u64,
        reason: FailReason,
        sink: &mut S,
    ) -> usize {
        let known = self.sender.known(target);
        let ended = self.with_stream(target, |stream, rng| {
            let aimed = match stream.stamp() {
                0 => known == 0 || known == incarnation,
                stamp => stamp == incarnation,
            };
            if !aimed {
                return None;
            }
            if stream.len() == 0 {
                // Nothing in flight, but the open stream is stamped for the dead life: the
                // next message must start a fresh stream, not reach a new life as a frame of
                // the old one (refused, and unprovable as undelivered).
                stream.close();
                return None;
            }
            Some(stream.die(reason, 0, rng, sink).0)
        });
        match ended.flatten() {
            Some(ended) => {
                self.sender.known.remove(&target);
                ended
            }
            None => {
                if known == incarnation {
                    self.sender.known.remove(&target);
                }
                0
            }
        }
    }

    /// Whether `target`'s stream probes a doubtful path (one message out per retry until an
    /// ack: after a relay's refusal or a gone incarnation).
    #[must_use]
    pub fn probing(&self, target: NodeId) -> bool {
        self.endpoint_of(target)
            .and_then(|key| endpoint_at(&self.slots, key))
            .is_some_and(|e| e.outbox.stream.probing && e.outbox.stream.len() > 0)
    }

    /// The last incarnation of `target` learned from its acks, resets or handshake (0 = none).
    #[must_use]
    pub fn known_incarnation(&self, target: NodeId) -> u64 {
        self.sender.known(target)
    }

    /// The incarnation the current stream to `target` is stamped with: the `dst_incarnation`
    /// of its frames (0 = not known, or no stream).
    #[must_use]
    pub fn stamp(&self, target: NodeId) -> u64 {
        self.endpoint_of(target)
            .and_then(|key| endpoint_at(&self.slots, key))
            .map_or(0, |e| e.outbox.stamp())
    }

    /// Whether `seq` is in flight to `target` (on its current stream).
    #[must_use]
    pub fn holds(&self, target: NodeId, seq: u64) -> bool {
        self.endpoint_of(target)
            .and_then(|key| endpoint_at(&self.slots, key))
            .is_some_and(|e| e.outbox.stream.holds(seq))
    }

    /// Whether a relay refused a frame of `target`'s stream since its last (re)transmission.
    #[must_use]
    pub fn refused(&self, target: NodeId) -> bool {
        self.endpoint_of(target)
            .and_then(|key| endpoint_at(&self.slots, key))
            .is_some_and(|e| e.outbox.stream.refused())
    }

    /// A relay refused the frame `seq` to `target` (`Unreachable`); ignored unless `seq` is
    /// in flight on the current stream. The stream is marked refused until its next
    /// (re)transmission (given up meanwhile, its reason is `NoRoute`). That copy of `seq`
    /// provably did not arrive: its message's transmissions drop by one. A message whose every
    /// copy was refused (transmissions 0) provably never arrived, nor did anything after it in
    /// the stream (receivers deliver in order): its next copy goes out as a first transmission
    /// (no `retransmit` flag); given up, it ends `Failed` rather than `Unknown`, and a reset
    /// moves it to a fresh stream ([`on_reset`](Self::on_reset)).
    pub fn on_refused(&mut self, target: NodeId, seq: u64) {
        self.with_stream(target, |stream, _| stream.on_refused(seq));
    }

    /// The route serving `target` is gone: its in-flight messages are given up for `reason`
    /// (`Unknown(reason)` up to the first one that provably never arrived, `Failed(reason)`
    /// from it on), then its queued messages end `Failed(reason)` and an unfinished flush is
    /// forgotten. The endpoint stays (release its handle to start its GC).
    pub fn give_up<S: OutcomeSink + ?Sized>(
        &mut self,
        target: NodeId,
        reason: FailReason,
        sink: &mut S,
    ) {
        let Some(key) = self.endpoint_of(target) else {
            return;
        };
        self.unfinished_flushes.cancel(key);
        self.give_up_unacked(target, reason, sink);
        self.fail_pending(key, reason, sink);
    }

    /// Gives up `target`'s in-flight messages for `reason` (as in
    /// [`give_up`](Self::give_up)), keeping its queue. Returns how many ended.
    pub fn give_up_unacked<S: OutcomeSink + ?Sized>(
        &mut self,
        target: NodeId,
        reason: FailReason,
        sink: &mut S,
    ) -> usize {
        self.with_stream(target, |stream, _| stream.give_up(reason, sink))
            .unwrap_or(0)
    }

    /// Shutdown: every queued message ends `Failed(reason)` (endpoints in slot order), then
    /// every in-flight message is given up for `reason` (targets by id), and every endpoint
    /// is removed with its timers.
    pub fn give_up_all<S: OutcomeSink + ?Sized>(&mut self, reason: FailReason, sink: &mut S) {
        let keys: Vec<Key> = self.iter().map(|(key, _)| key).collect();
        let mut inflight: Vec<(NodeId, Key)> = Vec::new();
        for key in keys {
            let Some(endpoint) = endpoint_at_mut(&mut self.slots, key) else {
                continue;
            };
            endpoint.collect(reason, sink);
            if endpoint.outbox.stream.len() > 0 {
                inflight.push((endpoint.id, key));
            }
        }
        inflight.sort_unstable();
        for (_, key) in inflight {
            if let Some(endpoint) = endpoint_at_mut(&mut self.slots, key) {
                endpoint.outbox.stream.give_up(reason, sink);
            }
        }
        self.remove_all(reason, sink);
    }

    /// In-flight messages whose oldest one reached its deadline at `now`, by target id:
    /// each such stream is given up for `NoRoute` if a relay refused one of its frames since
    /// its last (re)transmission, else for `Timeout` — the messages before the first one
    /// that provably never arrived end `Unknown(reason)` (the receiver may hold some of them
    /// and waits for the due one for ever); from that one on, the due messages end
    /// `Failed(reason)` and the others move, in order, onto a fresh stream and keep their
    /// deadlines. Returns the targets.
    pub fn expire_unacked<S: OutcomeSink + ?Sized>(
        &mut self,
        now: Instant,
        sink: &mut S,
    ) -> Vec<NodeId> {
        let mut due: Vec<(NodeId, Key)> = Vec::new();
        while let Some((key, _)) = self.unacked_deadlines.pop_expired(now) {
            if let Some(e) = endpoint_at(&self.slots, key) {
                due.push((e.id, key));
            }
        }
        due.sort_unstable();
        let EndpointTable { slots, sender, .. } = self;
        for &(_, key) in &due {
            if let Some(endpoint) = endpoint_at_mut(slots, key) {
                let reason = endpoint.deadline_reason;
                endpoint
                    .outbox
                    .stream
                    .expire(now, reason, &mut sender.rng, sink);
            }
        }
        for &(_, key) in &due {
            self.sync_unacked_timers(key);
        }
        due.into_iter().map(|(id, _)| id).collect()
    }

    /// The endpoint of `target`, by id.
    fn endpoint_of(&self, target: NodeId) -> Option<Key> {
        self.by_id.get(&target).copied()
    }

    /// Runs `f` on `target`'s in-flight stream (with the tag generator), then re-files its
    /// deadlines. `None` if `target` has no endpoint.
    fn with_stream<R>(
        &mut self,
        target: NodeId,
        f: impl FnOnce(&mut super::inflight::SendStream, &mut Rng) -> R,
    ) -> Option<R> {
        let key = self.endpoint_of(target)?;
        let EndpointTable { slots, sender, .. } = self;
        let endpoint = endpoint_at_mut(slots, key)?;
        let result = f(&mut endpoint.outbox.stream, &mut sender.rng);
        self.sync_unacked_timers(key);
        Some(result)
    }

    /// Re-files the earliest deadline of `key`'s in-flight messages and its retransmission.
    fn sync_unacked_timers(&mut self, key: Key) {
        let retransmit_after = self.sender.retransmit_after;
        let (head, again) = endpoint_at(&self.slots, key).map_or((None, None), |e| {
            let stream = &e.outbox.stream;
            (
                stream.earliest_deadline(),
                stream.retransmit_at(retransmit_after),
            )
        });
        set_timer(&mut self.unacked_deadlines, key, head);
        set_timer(&mut self.retransmits, key, again);
    }
}
