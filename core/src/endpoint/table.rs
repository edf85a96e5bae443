//! The endpoint table: every endpoint behind a generational key, looked up by id then name,
//! with the deadlines of all their outboxes in keyed timer queues.

use alloc::{string::String, vec::Vec};
use core::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};

use super::{
    Endpoint, EndpointSettings, FlushProgress, PendingMessage, Rejected, TransmitResult,
    delivery::{Sender, set_timer},
};
use crate::{
    ids::{Key, MsgId, NodeId},
    outcome::{FailReason, OutcomeSink},
    rng::Rng,
    time::{Duration, Instant, earliest},
    timer::TimerQueue,
};

/// Why the table could not produce an endpoint.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// Neither a valid id nor a name was given, so there is nothing to address.
    #[error("an endpoint needs a non-zero node id or a non-empty name")]
    Anonymous,
    /// The table already holds 2^32 slots.
    #[error("endpoint table is full")]
    TableFull,
}

/// What one [`EndpointTable::handle_timeout`] call did. Outcomes went to the sink.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TimeoutReport {
    /// Messages failed with `Timeout`.
    pub timed_out: usize,
    /// Endpoints collected (their remaining messages failed with `TargetGone`).
    pub collected: usize,
}

#[derive(Clone, Debug)]
pub(super) struct Slot {
    pub(super) generation: u32,
    pub(super) endpoint: Option<Endpoint>,
}

/// All endpoints of a node.
///
/// Endpoints are addressed by [`Key`]s; a key whose endpoint was removed or collected returns
/// `None` (or a `TargetGone` rejection) everywhere, even after its slot is reused. The table
/// indexes endpoints by id and by name. Mutations go through table methods so the deadlines
/// stay exact: [`next_deadline`](Self::next_deadline) is always the earliest deadline of any
/// endpoint.
///
/// Every deadline of every endpoint lives in a [`TimerQueue`] keyed by endpoint: one for
/// the earliest queued-message or GC deadline, one each for the oldest in-flight message's
/// deadline, its retransmission and an unfinished flush. Re-arming happens only when a
/// deadline actually changes; [`next_deadline`](Self::next_deadline) is O(1); ties fire by
/// key.
///
/// Hash maps serve lookups only; nothing iterates them, so their hasher's seed never orders
/// output. [`iter`](Self::iter) and [`remove_all`](Self::remove_all) go by slot order.
#[derive(Clone, Debug)]
pub struct EndpointTable {
    pub(super) settings: EndpointSettings,
    pub(super) slots: Vec<Slot>,
    free: Vec<u32>,
    len: usize,
    pub(super) by_id: HashMap<NodeId, Key>,
    /// Keys hashed by their endpoint's name; at most one entry per name.
    by_name: HashTable<Key>,
    hasher: DefaultHashBuilder,
    /// Earliest queued-message or GC deadline per endpoint.
    deadlines: TimerQueue<Key>,
    /// Deadline of the oldest in-flight message per endpoint.
    pub(super) unacked_deadlines: TimerQueue<Key>,
    /// When the in-flight messages go out again unless acknowledged, per endpoint.
    pub(super) retransmits: TimerQueue<Key>,
    /// Endpoints whose flush stopped on its budget (armed at the instant it stopped).
    pub(super) unfinished_flushes: TimerQueue<Key>,
    /// Our identity on the wire, the tag generator, the incarnations learned per target.
    pub(super) sender: Sender,
}

impl EndpointTable {
    /// An empty table applying `settings` to its endpoints, for queues only: its `Data`
    /// frames (if any) would carry source [`NodeId::NONE`]. A node uses
    /// [`for_node`](Self::for_node).
    #[must_use]
    pub fn new(settings: EndpointSettings) -> EndpointTable {
        EndpointTable::for_node(settings, NodeId::NONE, Rng::new(0), Duration::from_secs(2))
    }

    /// An empty table for the node `config` describes ([`EndpointTable::for_node`] with its
    /// id, settings and heartbeat interval as the retransmit delay).
    #[must_use]
    pub fn for_config(config: &crate::config::Config, rng: Rng) -> EndpointTable {
        let settings = EndpointSettings::from_config(config);
        EndpointTable::for_node(settings, config.id, rng, config.heartbeat_interval)
    }

    /// An empty table for the node `src`: stream tags are drawn from `rng`, and in-flight
    /// messages go out again once the oldest waited `retransmit_after` for its ack.
    #[must_use]
    pub fn for_node(
        settings: EndpointSettings,
        src: NodeId,
        rng: Rng,
        retransmit_after: Duration,
    ) -> EndpointTable {
        EndpointTable {
            settings,
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
            by_id: HashMap::default(),
            by_name: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            deadlines: TimerQueue::new(),
            unacked_deadlines: TimerQueue::new(),
            retransmits: TimerQueue::new(),
            unfinished_flushes: TimerQueue::new(),
            sender: Sender::new(src, rng, retransmit_after),
        }
    }

    /// The settings in force.
    #[must_use]
    pub const fn settings(&self) -> EndpointSettings {
        self.settings
    }

    /// Replaces the settings (config reload). New limits apply to every endpoint's future
    /// pushes (queued messages are kept even above a lowered limit); the new message timeout
    /// applies to messages pushed from now on (earlier deadlines stand, and expiry stays exact
    /// when deadlines end up out of FIFO order); the new GC timeout applies to GC deadlines
    /// armed from now on.
    pub fn set_settings(&mut self, settings: EndpointSettings) {
        self.settings = settings;
        for endpoint in self.slots.iter_mut().filter_map(|s| s.endpoint.as_mut()) {
            endpoint.set_limits(settings.limits);
        }
    }

    /// Number of live endpoints.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether the table holds no endpoint.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets the incarnation learned for `target`, which departed a grace ago and has no
    /// endpoint (docs/ARCHITECTURE.md §9.4).
    pub(crate) fn forget_known(&mut self, target: NodeId) {
        self.sender.known.remove(&target);
    }

    /// Whether the sending side remembers `target`'s incarnation.
    pub(crate) fn remembers(&self, target: NodeId) -> bool {
        self.sender.known.contains_key(&target)
    }

    /// Target incarnations the sending side remembers (they outlive endpoints).
    pub(crate) fn known_incarnations(&self) -> usize {
        self.sender.known.len()
    }

    /// The endpoint behind `key`; `None` if the key is stale.
    #[must_use]
    pub fn get(&self, key: Key) -> Option<&Endpoint> {
        endpoint_at(&self.slots, key)
    }

    /// Live endpoints in slot order (deterministic, independent of hashing).
    pub fn iter(&self) -> impl Iterator<Item = (Key, &Endpoint)> + '_ {
        self.slots.iter().enumerate().filter_map(|(index, slot)| {
            let endpoint = slot.endpoint.as_ref()?;
            let index = u32::try_from(index).expect("slot indices fit in u32 (checked on insert)");
            Some((Key::new(index, slot.generation), endpoint))
        })
    }

    /// Messages queued (not yet transmitted) for `id` (0 if it has no endpoint).
    #[must_use]
    pub fn queued(&self, id: NodeId) -> usize {
        self.find_by_id(id)
            .and_then(|key| self.get(key))
            .map_or(0, |e| e.queue().len())
    }

    /// [`open`](Self::open)'s cold half: the endpoint created.
    #[inline(never)]
    fn create_for(
        &mut self,
        id: NodeId,
        name: &str,
        now: Instant,
    ) -> Result<(Key, bool), EndpointError> {
        self.get_or_create(id, name, now).map(|key| (key, false))
    }

    /// Messages outstanding to `id`: queued or unacknowledged (what least-outstanding
    /// selection compares), saturating.
    #[must_use]
    pub fn outstanding(&self, id: NodeId) -> u32 {
        u32::try_from(self.queued(id) + self.unacked(id).len()).unwrap_or(u32::MAX)
    }

    /// The endpoint with this id, if any.
    #[must_use]
    pub fn find_by_id(&self, id: NodeId) -> Option<Key> {
        self.by_id.get(&id).copied()
    }

    /// The endpoint indexed under this name, if any.
    #[must_use]
    pub fn find_by_name(&self, name: &str) -> Option<Key> {
        let hash = self.hasher.hash_one(name);
        let slots = &self.slots;
        self.by_name
            .find(hash, |&k| {
                endpoint_at(slots, k).is_some_and(|e| e.name == name)
            })
            .copied()
    }

    /// Looks a target up the way [`get_or_create`](Self::get_or_create) does, without
    /// creating: by `id` first (if valid), then by `name` (if non-empty) — a name match counts
    /// only if that endpoint's id is unknown or `id` is [`NodeId::NONE`].
    #[must_use]
    pub fn find(&self, id: NodeId, name: &str) -> Option<Key> {
        if id.is_valid()
            && let Some(key) = self.find_by_id(id)
        {
            return Some(key);
        }
        if name.is_empty() {
            return None;
        }
        let key = self.find_by_name(name)?;
        let found = self.get(key)?;
        (!id.is_valid() || !found.id.is_valid()).then_some(key)
    }

    /// The endpoint for a target, created if it does not exist yet.
    ///
    /// Lookup as in [`find`](Self::find). When found, the endpoint learns what it did not
    /// know: an endpoint created by name adopts `id`, and a non-empty `name` that differs from
    /// the endpoint's renames it (the caller passes what discovery says now). When not found,
    /// a new endpoint with no handles is created, so its GC deadline is
    /// `now + gc_timeout` until the connector attaches a handle. A name already indexed for a
    /// different node moves to the newest endpoint claiming it (endpoints are never merged).
    ///
    /// # Errors
    ///
    /// [`EndpointError::Anonymous`] if `id` is [`NodeId::NONE`] and `name` is empty;
    /// [`EndpointError::TableFull`] after 2^32 slots.
    pub fn get_or_create(
        &mut self,
        id: NodeId,
        name: &str,
        now: Instant,
    ) -> Result<Key, EndpointError> {
        if !id.is_valid() && name.is_empty() {
            return Err(EndpointError::Anonymous);
        }
        if let Some(key) = self.find(id, name) {
            self.learn_identity(key, id, name);
            return Ok(key);
        }
        let endpoint = Endpoint::new(
            id,
            String::from(name),
            self.settings.limits,
            now,
            self.settings.gc_timeout,
        );
        let key = self.insert(endpoint)?;
        if id.is_valid() {
            self.by_id.insert(id, key);
        }
        if !name.is_empty() {
            self.index_name(key);
        }
        self.reindex(key);
        Ok(key)
    }

    /// The endpoint of `id` for a message, and whether it existed: found by id, else created
    /// ([`get_or_create`](Self::get_or_create)) with the `name` discovery says (`""`: none
    /// known).
    ///
    /// # Errors
    ///
    /// As [`get_or_create`](Self::get_or_create).
    #[inline(always)]
    pub fn open<'n>(
        &mut self,
        id: NodeId,
        name: impl FnOnce() -> &'n str,
        now: Instant,
    ) -> Result<(Key, bool), EndpointError> {
        match self.find_by_id(id) {
            Some(key) => Ok((key, true)),
            None => self.create_for(id, name(), now),
        }
    }

    /// Queues a message for the endpoint `key` with deadline `now + message_timeout`.
    ///
    /// # Errors
    ///
    /// [`Rejected`] with the message: `QueueFull` when a limit would be exceeded,
    /// `TargetGone` when `key` is stale. Report `Failed(reason)` for it.
    pub fn push(
        &mut self,
        key: Key,
        id: MsgId,
        msg_type: u32,
        payload: bytes::Bytes,
        now: Instant,
    ) -> Result<(), Rejected> {
        let timeout = self.settings.message_timeout;
        let Some(endpoint) = endpoint_at_mut(&mut self.slots, key) else {
            return Err(Rejected {
                reason: FailReason::TargetGone,
                message: PendingMessage {
                    id,
                    msg_type,
                    payload,
                    deadline: now + timeout,
                },
            });
        };
        endpoint.push(id, msg_type, payload, now, timeout)?;
        self.reindex(key);
        Ok(())
    }

    /// Takes the queued message `msg` for `target` out of its queue (it was never
    /// transmitted), with no outcome: its sender owns what that means — a call's request
    /// moving to another server, or given up unsent at the call's grace. `false` when it is
    /// not queued (transmitted, ended, or no such endpoint).
    pub fn withdraw(&mut self, target: NodeId, msg: MsgId) -> bool {
        let Some(key) = self.find_by_id(target) else {
            return false;
        };
        let Some(endpoint) = endpoint_at_mut(&mut self.slots, key) else {
            return false;
        };
        let withdrawn = endpoint.outbox.queue.withdraw(msg).is_some();
        if withdrawn {
            self.reindex(key);
        }
        withdrawn
    }

    /// [`Endpoint::flush`] on the endpoint `key`; `None` (nothing called) if `key` is stale.
    pub fn flush<T, S>(
        &mut self,
        key: Key,
        now: Instant,
        budget: usize,
        transmit: T,
        sink: &mut S,
    ) -> Option<FlushProgress>
    where
        T: FnMut(&PendingMessage) -> TransmitResult,
        S: OutcomeSink + ?Sized,
    {
        let endpoint = endpoint_at_mut(&mut self.slots, key)?;
        let progress = endpoint.flush(now, budget, transmit, sink);
        self.reindex(key);
        Some(progress)
    }

    /// [`Endpoint::attach_handle`] (cancels GC); `false` if `key` is stale.
    pub fn attach_handle(&mut self, key: Key) -> bool {
        let Some(endpoint) = endpoint_at_mut(&mut self.slots, key) else {
            return false;
        };
        endpoint.attach_handle();
        self.reindex(key);
        true
    }

    /// [`Endpoint::detach_handle`] with the table's GC timeout (the last detach arms GC at
    /// `now + gc_timeout`); `false` if `key` is stale.
    pub fn detach_handle(&mut self, key: Key, now: Instant) -> bool {
        let gc_timeout = self.settings.gc_timeout;
        let Some(endpoint) = endpoint_at_mut(&mut self.slots, key) else {
            return false;
        };
        endpoint.detach_handle(now, gc_timeout);
        self.reindex(key);
        true
    }

    /// Removes the endpoint `key` at once, failing its queue with `Failed(reason)` (FIFO order) and
    /// giving up whatever it still has in flight for `reason` (`Unknown(reason)` for what may have
    /// arrived, `Failed(reason)` for the rest), and returns it (empty). `None` if `key` is stale.
    /// The key and every copy of it are stale afterwards.
    ///
    /// Call when the target's route record is removed (`TargetGone`, `NoRoute`) or at
    /// shutdown (`Shutdown`).
    pub fn remove<S: OutcomeSink + ?Sized>(
        &mut self,
        key: Key,
        reason: FailReason,
        sink: &mut S,
    ) -> Option<Endpoint> {
        let slot = self.slots.get_mut(key.index() as usize)?;
        if slot.generation != key.generation() {
            return None;
        }
        let mut endpoint = slot.endpoint.take()?;
        self.deadlines.cancel(key);
        self.unacked_deadlines.cancel(key);
        self.retransmits.cancel(key);
        self.unfinished_flushes.cancel(key);
        if slot.generation == u32::MAX {
            // Retire the slot rather than let the generation wrap onto old keys.
        } else {
            slot.generation += 1;
            self.free.push(key.index());
        }
        self.len -= 1;
        if endpoint.id.is_valid() && self.by_id.get(&endpoint.id) == Some(&key) {
            self.by_id.remove(&endpoint.id);
        }
        self.unindex_name(key, &endpoint.name);
        endpoint.collect(reason, sink);
        endpoint.outbox.stream.give_up(reason, sink);
        Some(endpoint)
    }

    /// Fails everything queued on the endpoint `key` with `Failed(reason)` (FIFO order) and
    /// keeps the endpoint (its handles and GC state are untouched); returns how many messages
    /// were failed, `None` if `key` is stale.
    ///
    /// Call when the route record serving the endpoint is removed: its queue cannot go out
    /// any more, and failing it at once (rather than at each message's deadline) is the
    /// node's no-silent-loss rule. The endpoint itself stays until GC, so a new send within
    /// `endpoint_gc_timeout` reuses it. (Added by the connection manager.)
    pub fn fail_pending<S: OutcomeSink + ?Sized>(
        &mut self,
        key: Key,
        reason: FailReason,
        sink: &mut S,
    ) -> Option<usize> {
        let endpoint = endpoint_at_mut(&mut self.slots, key)?;
        let failed = endpoint.collect(reason, sink);
        self.reindex(key);
        Some(failed)
    }

    /// Removes every endpoint in slot order, failing all queued messages with
    /// `Failed(reason)`; returns how many endpoints were removed. Used at shutdown.
    pub fn remove_all<S: OutcomeSink + ?Sized>(
        &mut self,
        reason: FailReason,
        sink: &mut S,
    ) -> usize {
        let keys: Vec<Key> = self.iter().map(|(key, _)| key).collect();
        for &key in &keys {
            self.remove(key, reason, sink);
        }
        keys.len()
    }

    /// The earliest deadline over all endpoints — a queued message's, a GC, the oldest
    /// in-flight message's or a retransmission — in O(1); `None` if nothing is pending.
    /// Unfinished flushes are reported apart ([`has_unfinished_flush`]). Feed both into the
    /// node's `poll_timeout`.
    ///
    /// [`has_unfinished_flush`]: Self::has_unfinished_flush
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        earliest(
            self.deadlines.next_deadline(),
            earliest(
                self.unacked_deadlines.next_deadline(),
                self.retransmits.next_deadline(),
            ),
        )
    }

    /// Handles every queued-message and GC deadline due at `now` in one call: in deadline
    /// order (ties by key), each due endpoint first fails its expired queued messages with
    /// `Failed(Timeout)`, then, if its GC is due, is removed with its remaining messages failed
    /// as `Failed(TargetGone)` (anything still in flight, which a node never has without a
    /// handle, is given up for `TargetGone`). In-flight deadlines and retransmissions are
    /// [`expire_unacked`](Self::expire_unacked) and [`due_retransmits`](Self::due_retransmits).
    ///
    /// Spurious calls (nothing due) do nothing. Afterwards no queued-message or GC deadline is
    /// `<= now`.
    pub fn handle_timeout<S: OutcomeSink + ?Sized>(
        &mut self,
        now: Instant,
        sink: &mut S,
    ) -> TimeoutReport {
        let mut report = TimeoutReport::default();
        while let Some((key, _)) = self.deadlines.pop_expired(now) {
            let Some(endpoint) = endpoint_at_mut(&mut self.slots, key) else {
                continue;
            };
            report.timed_out += endpoint.expire(now, sink);
            if endpoint.gc_due(now) {
                self.remove(key, FailReason::TargetGone, sink);
                report.collected += 1;
            } else {
                self.reindex(key);
            }
        }
        report
    }

    fn insert(&mut self, endpoint: Endpoint) -> Result<Key, EndpointError> {
        let key = if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.endpoint = Some(endpoint);
            Key::new(index, slot.generation)
        } else {
            let index = u32::try_from(self.slots.len()).map_err(|_| EndpointError::TableFull)?;
            self.slots.push(Slot {
                generation: 0,
                endpoint: Some(endpoint),
            });
            Key::new(index, 0)
        };
        self.len += 1;
        Ok(key)
    }

    /// Adopts `id` if the endpoint's is unknown; takes `name` if non-empty and different.
    fn learn_identity(&mut self, key: Key, id: NodeId, name: &str) {
        let Some(endpoint) = endpoint_at_mut(&mut self.slots, key) else {
            return;
        };
        if id.is_valid() && !endpoint.id.is_valid() {
            endpoint.id = id;
            self.by_id.insert(id, key);
        }
        if !name.is_empty() && endpoint.name != name {
            let old = core::mem::replace(&mut endpoint.name, String::from(name));
            self.unindex_name(key, &old);
            self.index_name(key);
        }
    }

    /// Files `key` under its endpoint's name, taking the name over from any other endpoint.
    fn index_name(&mut self, key: Key) {
        let Some(endpoint) = endpoint_at(&self.slots, key) else {
            return;
        };
        let hash = self.hasher.hash_one(endpoint.name.as_str());
        let slots = &self.slots;
        let name = endpoint.name.as_str();
        if let Some(entry) = self.by_name.find_mut(hash, |&k| {
            endpoint_at(slots, k).is_some_and(|e| e.name == name)
        }) {
            *entry = key;
            return;
        }
        let hasher = &self.hasher;
        self.by_name.insert_unique(hash, key, |&k| {
            hasher.hash_one(endpoint_at(slots, k).map_or("", |e| e.name.as_str()))
        });
    }

    /// Drops the name entry `name -> key`, if `key` still holds it.
    fn unindex_name(&mut self, key: Key, name: &str) {
        if name.is_empty() {
            return;
        }
        let hash = self.hasher.hash_one(name);
        if let Ok(entry) = self.by_name.find_entry(hash, |&k| k == key) {
            entry.remove();
        }
    }

    /// Re-files the endpoint under its current earliest queued-message or GC deadline, if
    /// that changed.
    pub(super) fn reindex(&mut self, key: Key) {
        let next = endpoint_at(&self.slots, key).and_then(Endpoint::next_deadline);
        set_timer(&mut self.deadlines, key, next);
    }
}

pub(super) fn endpoint_at(slots: &[Slot], key: Key) -> Option<&Endpoint> {
    let slot = slots.get(key.index() as usize)?;
    if slot.generation == key.generation() {
        slot.endpoint.as_ref()
    } else {
        None
    }
}

pub(super) fn endpoint_at_mut(slots: &mut [Slot], key: Key) -> Option<&mut Endpoint> {
    let slot = slots.get_mut(key.index() as usize)?;
    if slot.generation == key.generation() {
        slot.endpoint.as_mut()
    } else {
        None
    }
}

/// Bytes of one table slot (endpoint inline, plus generation).
#[cfg(test)]
pub(super) const fn slot_size() -> usize {
    core::mem::size_of::<Slot>()
}
