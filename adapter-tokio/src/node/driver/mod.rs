//! The driver task: one loop over the core `Node`.
//!
//! [`start`] ([`lifecycle`]) binds the listener, builds the `Node` and the records the node
//! registers, starts the registry backend (`lifecycle::start_backend`, the one place a
//! backend is chosen) and spawns the loop. The loop waits for one of: a
//! command from a [`NodeHandle`], a link event ([`links`]), a registry feed event, room in a
//! full inbox, or the core's next deadline (one `Sleep`, reset only when the deadline moves).
//! It makes the matching `handle_*` call (or command), then drains `poll_output` into I/O:
//! `Connect` → a dial task, `Transmit` → the link's socket (one vectored write per link and
//! drain, the rest through the link's writer task), `Close` → the link's tasks stop
//! (the writer flushes first), `Received` → the inbox, `Outcome` → the sender's outcome
//! future, `Event` → counters and logs. No routing decision is taken here.
//!
//! The received messages of one drain go to the inbox as one batch (one lock, at most one
//! wake of the reader). Backpressure: what does not fit in the inbox waits in a local queue
//! and the loop stops reading sockets and taking link events, so the peers' TCP windows close.
//! Writers are unbounded queues; what a node transmits is bounded by the core (each sender's
//! pending and unacknowledged messages per target count against its queue limits), and a peer
//! that stops reading is closed by the core's heartbeat.
//!
//! Stops: a graceful shutdown ([`lifecycle`]) reports every outcome, unregisters and flushes;
//! a kill drops the driver, and with it every task (they live in the link table's `JoinSet`),
//! socket, outcome sender, and the registry feed (the backend then ends without a goodbye).

mod accounting;
mod event_log;
mod lifecycle;
mod links;
mod method_labels;
mod posters;
mod rpc;

pub(super) use lifecycle::start;

use std::{
    collections::{HashMap, VecDeque},
    sync::Arc,
    task::{Context, Poll, Waker},
    time::Duration,
};

use switchboard_core::{
    discovery::{Filter, TopologyInfo},
    ids::{MsgId, NodeId},
    node::{Event, Node, Output, SendError},
    outcome::Outcome,
    registry::RegistryEvent,
    select::Select,
    time::Instant,
};
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tracing::{debug, info, warn};

use self::{
    accounting::Counters,
    lifecycle::answer_after_stop,
    links::{LinkEvent, Links, Read},
};
use super::{Command, OutcomeReceiver, Received, inbox::InboxSender};
use crate::{
    clock::Clock,
    observe::Known,
    registry::feed::{Feed, FeedCommand, FeedEvent},
};

/// The pending-outcome map, each waiter with the instant its message was accepted (for the
/// delivery latency): message ids are small sequential integers from our own node, so a fast
/// non-keyed hash is enough.
type PendingMap = HashMap<MsgId, (Instant, Waiter), foldhash::fast::FixedState>;

/// Ready commands and link events handled per wake-up before the loop waits again.
const BURST: usize = 256;
/// Below this much room in the inbox, a burst hands what each socket read delivers to the
/// inbox at once instead of at the end of the burst (a read may hold thousands of messages).
const LOW_INBOX_ROOM: usize = 4096;
/// How long a graceful shutdown waits for the registry backend to unregister.
const UNREGISTER_TIMEOUT: Duration = Duration::from_secs(3);
/// How long an unregister the graceful shutdown stopped waiting for may go on in the
/// background.
const UNREGISTER_GRACE: Duration = Duration::from_secs(30);
/// How long a graceful shutdown waits for the link writers to flush.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// The loop's state: the core node and everything its outputs go to.
struct Driver {
    node: Node,
    clock: Clock,
    links: Links,
    /// Outcome futures of accepted messages.
    pending: PendingMap,
    inbox: InboxSender,
    /// Received messages of the current drain, handed to the inbox at its end; after it, those
    /// waiting for room in the inbox (link events pause meanwhile).
    overflow: VecDeque<Received>,
    feed: Option<Feed>,
    /// The topology record as last published.
    topology: TopologyInfo,
    counters: Counters,
    registered: bool,
    /// Why the backend's last registration attempt was refused; cleared when it registers.
    conflict: Option<String>,
    /// Why the backend last said the registry is lost; cleared when it registers.
    unavailable: Option<String>,
    known: watch::Sender<Known>,
    /// Commands taken from the queue at once; after a shutdown, those that came after it.
    batch: Vec<Command>,
    /// The futures and streams waiting on RPC outputs.
    rpc: rpc::RpcWaiters,
    /// The outcome streams of the node's posters.
    posters: posters::Posters,
    /// The command queue, for the requests handed to served methods (weak: the node stops
    /// when every handle is gone).
    commands: mpsc::WeakSender<Command>,
    /// Why the node leaves, once it drains ([`super::NodeHandle::leave`]): its record is
    /// published marked so.
    leaving: Option<String>,
}

/// Who waits for an accepted message's outcome.
#[derive(Debug)]
enum Waiter {
    /// A [`super::PendingOutcome`] (`submit`, `send`, `submit_batch`).
    Submitted(oneshot::Sender<Outcome>),
    /// A [`super::PostedOutcome`] (`post`).
    Posted(oneshot::Sender<Result<Outcome, SendError>>),
    /// A poster's outcome stream ([`super::stream::Poster`]), batched per drain.
    Streamed { poster: u64, ticket: u64 },
}

/// How the loop ended.
enum Exit {
    Killed,
    Shutdown(Option<oneshot::Sender<()>>),
}

impl Driver {
    async fn run(
        mut self,
        mut commands: mpsc::Receiver<Command>,
        mut link_events: mpsc::Receiver<LinkEvent>,
        kill_switch: Arc<Notify>,
    ) {
        let far = || tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600);
        let sleep = tokio::time::sleep_until(far());
        tokio::pin!(sleep);
        let mut armed: Option<Instant> = None;
        // One waiter for the whole loop: a fresh `notified()` per wake-up would take the
        // notifier's lock twice per wake-up (register, then deregister on drop).
        let killed = kill_switch.notified();
        tokio::pin!(killed);
        let exit = loop {
            let deadline = self.node.poll_timeout();
            if deadline != armed {
                armed = deadline;
                let at = deadline.map_or_else(far, |d| self.clock.to_tokio(d));
                sleep.as_mut().reset(at);
            }
            let inbox_blocked = !self.overflow.is_empty();
            tokio::select! {
                () = &mut killed => break Exit::Killed,
                taken = commands.recv_many(&mut self.batch, BURST) => {
                    if taken == 0 {
                        break Exit::Shutdown(None);
                    }
                    let now = self.clock.now();
                    if let Some(exit) = self.on_batch(now) {
                        self.drain();
                        break exit;
                    }
                }
                Some(event) = link_events.recv(), if !inbox_blocked => {
                    let now = self.clock.now();
                    self.on_link_event(now, event);
                }
                woken = self.links.next_readable(), if !inbox_blocked => self.links.readable(woken),
                // The last burst stopped with sockets still readable: read on after letting
                // other tasks run.
                () = tokio::task::yield_now(), if !inbox_blocked && self.links.reads_pending() => {}
                event = feed_recv(&mut self.feed) => self.on_feed_event(event),
                room = self.inbox.wait_room(), if inbox_blocked => {
                    if room {
                        self.push_overflow();
                    } else {
                        self.drop_overflow();
                    }
                }
                () = &mut sleep, if armed.is_some() => {
                    let now = self.clock.now();
                    self.node.handle_timeout(now);
                }
            }
            let exit = self.burst(&mut commands, &mut link_events);
            self.drain();
            if let Some(exit) = exit {
                break exit;
            }
        };
        match exit {
            Exit::Killed => {
                info!(id = self.node.id().0, "node killed");
                // Dropping the driver drops the link table (aborting every task and socket),
                // the feed (the backend ends without unregistering) and every outcome sender.
            }
            Exit::Shutdown(done) => {
                self.shutdown().await;
                answer_after_stop(&mut commands, &mut self);
                if let Some(done) = done {
                    let _ = done.send(());
                }
            }
        }
    }

    /// Handles commands and link events that are already waiting, up to [`BURST`] of them,
    /// without going back through `select!`; the caller drains the outputs of the whole burst
    /// at once (so each link's transmits go out as one write). Returns how the loop ends if a
    /// shutdown command came up.
    fn burst(
        &mut self,
        commands: &mut mpsc::Receiver<Command>,
        link_events: &mut mpsc::Receiver<LinkEvent>,
    ) -> Option<Exit> {
        // One clock read per burst: the burst takes microseconds.
        let now = self.clock.now();
        for _ in 0..BURST {
            let mut progressed = false;
            // Takes every waiting command at once (one permit release for all of them). The
            // no-op waker is fine: the loop polls `recv_many` again before it sleeps.
            let mut context = Context::from_waker(Waker::noop());
            if let Poll::Ready(taken) =
                commands.poll_recv_many(&mut context, &mut self.batch, BURST)
            {
                if taken == 0 {
                    return Some(Exit::Shutdown(None));
                }
                if let Some(exit) = self.on_batch(now) {
                    return Some(exit);
                }
                progressed = true;
            }
            if self.overflow.is_empty() {
                if let Ok(event) = link_events.try_recv() {
                    self.on_link_event(now, event);
                    progressed = true;
                }
                if self.read_one(now) {
                    progressed = true;
                }
            }
            if !progressed {
                break;
            }
        }
        None
    }

    /// Reads one chunk from a readable link into the core (or reports the link gone);
    /// `false` when no link is readable.
    fn read_one(&mut self, now: Instant) -> bool {
        match self.links.read_ready() {
            None => false,
            Some(Read::Bytes(link, bytes)) => {
                self.node.handle_received(now, link, bytes);
                if self.inbox.room() < LOW_INBOX_ROOM {
                    // What this read delivers may fill the inbox: deliver it now, so the
                    // burst stops reading as soon as messages have to wait.
                    self.drain();
                }
                true
            }
            Some(Read::Closed(link, reason)) => {
                self.on_link_event(now, LinkEvent::Closed(link, reason));
                true
            }
        }
    }

    /// Handles the commands in `self.batch` in order; a shutdown ends it, leaving the commands
    /// after it in the batch (answered once the node stopped).
    fn on_batch(&mut self, now: Instant) -> Option<Exit> {
        let mut batch = std::mem::take(&mut self.batch);
        let mut commands = batch.drain(..);
        let mut exit = None;
        for command in commands.by_ref() {
            if let Command::Shutdown(done) = command {
                exit = Some(Exit::Shutdown(Some(done)));
                break;
            }
            self.on_command(now, command);
        }
        let rest: Vec<Command> = commands.collect();
        self.batch = batch;
        self.batch.extend(rest);
        exit
    }

    fn on_command(&mut self, now: Instant, command: Command) {
        match command {
            Command::Send {
                target,
                msg_type,
                payload,
                accepted,
            } => {
                // The submitter gave up (its `submit` future was dropped) before the node
                // looked at the message: nothing is handed to the core, so nothing is sent
                // whose outcome no one could learn.
                if accepted.is_closed() {
                    debug!("a submitted message was withdrawn before it was accepted");
                    return;
                }
                let result = self
                    .send_one(now, target.to_select(), msg_type, payload)
                    .map(|msg| self.waiting_submit(now, msg));
                let _ = accepted.send(result);
            }
            Command::Post {
                target,
                msg_type,
                payload,
                outcome,
            } => match self.send_one(now, target.to_select(), msg_type, payload) {
                Ok(msg) => {
                    self.pending.insert(msg, (now, Waiter::Posted(outcome)));
                }
                Err(refused) => {
                    let _ = outcome.send(Err(refused));
                }
            },
            Command::SendBatch { messages, accepted } => {
                // As for `Send`: a withdrawn batch is not handed to the core.
                if accepted.is_closed() {
                    debug!("a submitted batch was withdrawn before it was accepted");
                    return;
                }
                let results = messages
                    .into_iter()
                    .map(|(target, msg_type, payload)| {
                        self.send_one(now, target.to_select(), msg_type, payload)
                            .map(|msg| self.waiting_submit(now, msg))
                    })
                    .collect();
                let _ = accepted.send(results);
            }
            Command::SetUpstream { upstream, done } => {
                self.set_upstream(now, upstream);
                let _ = done.send(());
            }
            Command::Status(tx) => {
                let _ = tx.send(accounting::status(&self.node, self.registered));
            }
            Command::Metrics(tx) => {
                let _ = tx.send(self.counters.snapshot(&self.node, &self.links));
            }
            Command::Shutdown(done) => {
                // Handled by the loop; unreachable here, answered anyway.
                let _ = done.send(());
            }
            Command::Leave(why) => {
                self.leaving = Some(why);
                self.republish();
            }
            Command::Rpc(command) => self.on_rpc_command(now, command),
            Command::OpenPoster { poster, reports } => self.posters.open(poster, reports),
            Command::Stream {
                poster,
                ticket,
                target,
                msg_type,
                payload,
            } => self.stream(now, poster, ticket, [(target, msg_type, payload)]),
            Command::StreamBatch {
                poster,
                first,
                messages,
            } => self.stream(now, poster, first, messages),
            Command::ClosePoster { poster } => self.posters.close(poster),
        }
    }

    /// Hands `poster`'s messages, tickets counted from `first`, to the core in order; each
    /// outcome (or refusal) goes to the poster's stream. The poster is looked up once per
    /// burst, not per message.
    fn stream(
        &mut self,
        now: Instant,
        poster: u64,
        first: u64,
        messages: impl IntoIterator<Item = (super::Dest, u32, bytes::Bytes)>,
    ) {
        // A poster whose reader is gone still sends; only its outcomes go unkept.
        let open = self.posters.is_open(poster);
        let mut accepted = 0;
        for (ticket, (target, msg_type, payload)) in (first..).zip(messages) {
            match self.send_one(now, target.to_select(), msg_type, payload) {
                Ok(msg) if open => {
                    accepted += 1;
                    self.pending
                        .insert(msg, (now, Waiter::Streamed { poster, ticket }));
                }
                Ok(_) => {}
                Err(refused) => self.posters.refused(poster, ticket, refused),
            }
        }
        self.posters.accepted(poster, accepted);
    }

    /// Hands one message to the core; its id, or why it was refused.
    fn send_one(
        &mut self,
        now: Instant,
        (among, to): (Option<&Filter>, Select),
        msg_type: u32,
        payload: bytes::Bytes,
    ) -> Result<MsgId, SendError> {
        let result = match among {
            None => self.node.send(now, to, msg_type, payload),
            Some(among) => self.node.send_among(now, among, to, msg_type, payload),
        };
        match &result {
            Ok(_) => self.counters.accepted(),
            Err(error) => self.counters.refused(error),
        }
        result
    }

    /// Registers a submitter waiting for `msg`'s outcome, accepted at `now`.
    fn waiting_submit(&mut self, now: Instant, msg: MsgId) -> OutcomeReceiver {
        let (tx, rx) = oneshot::channel();
        self.pending.insert(msg, (now, Waiter::Submitted(tx)));
        rx
    }

    /// Publishes a topology record naming `upstream`. With a registry the core applies it
    /// when the registry echoes the node's own record back (as for any node); without one it
    /// is applied at once.
    fn set_upstream(&mut self, now: Instant, upstream: NodeId) {
        self.topology.upstream_id = upstream;
        info!(
            id = self.node.id().0,
            upstream = upstream.0,
            "switching upstream"
        );
        match &self.feed {
            Some(feed) => {
                let update = FeedCommand::UpdateTopology(self.topology.clone());
                if let Err(e) = feed.commands.try_send(update) {
                    warn!(error = %e, "registry backend did not take the topology update");
                }
            }
            None => {
                let event = RegistryEvent::TopologyPut(self.topology.clone().into());
                self.node.handle_registry(now, event);
                self.publish_known();
            }
        }
    }

    fn on_link_event(&mut self, now: Instant, event: LinkEvent) {
        match event {
            LinkEvent::Accepted(stream, peer, ids) => {
                let link = self.node.handle_accepted(now);
                debug!(%link, %peer, certified = %crate::observe::DecimalIds(ids.as_deref()), "accepted");
                if let Some(ids) = ids {
                    self.node.bind_link_identity(link, &ids);
                }
                self.links.accepted(link, stream);
            }
            LinkEvent::Connected(link, stream, ids) => {
                if self.links.connected(link, stream) {
                    if let Some(ids) = ids {
                        self.node.bind_link_identity(link, &ids);
                    }
                    self.node.handle_connected(now, link);
                }
            }
            LinkEvent::ConnectFailed(link, reason) => {
                if self.links.gone(link) {
                    debug!(%link, %reason, "dial failed");
                    self.counters.dial_failed();
                    self.node.handle_connect_failed(now, link);
                }
            }
            LinkEvent::Closed(link, reason) => {
                if self.links.gone(link) {
                    debug!(%link, %reason, "link closed by the peer or the network");
                    self.node.handle_closed(now, link);
                }
            }
        }
    }

    fn on_feed_event(&mut self, event: Option<FeedEvent>) {
        let Some(event) = event else {
            debug!(id = self.node.id().0, "registry backend ended");
            self.feed = None;
            // Nothing keeps the registration alive any more (`/readyz` tells).
            self.registered = false;
            self.unavailable = Some("the registry backend ended".to_owned());
            self.publish_known();
            return;
        };
        match event {
            FeedEvent::Registry(event) => {
                self.counters.registry_event(&event);
                let now = self.clock.now();
                let about = registry_event_id(&event);
                self.node.handle_registry(now, event);
                if let Some(id) = about {
                    // One node's records changed: that node's entries only.
                    let (node, registered) = (&self.node, self.registered);
                    let conflict = self.conflict.as_deref();
                    let unavailable = self.unavailable.as_deref();
                    self.known.send_if_modified(|k| {
                        accounting::refresh_known(node, k, id, registered, conflict, unavailable)
                    });
                    return;
                }
            }
            FeedEvent::Registered => {
                self.counters.registered();
                self.registered = true;
                self.conflict = None;
                self.unavailable = None;
            }
            FeedEvent::Disconnected { reason } => {
                if self.registered {
                    info!(id = self.node.id().0, %reason, "registry lost");
                }
                self.counters.registry_disconnected();
                self.registered = false;
                self.unavailable = Some(reason);
            }
            FeedEvent::Conflict { holder } => {
                warn!(id = self.node.id().0, conflict = %holder, "registration refused");
                self.counters.registry_conflict();
                self.registered = false;
                self.conflict = Some(holder);
            }
        }
        self.publish_known();
    }

    /// Rebuilds the whole registry view (after a lifecycle change; a registry event about one
    /// node refreshes that node's entries only, `accounting::refresh_known`).
    fn publish_known(&mut self) {
        let known = accounting::known(
            &self.node,
            self.registered,
            self.conflict.as_deref(),
            self.unavailable.as_deref(),
        );
        self.known.send_if_modified(|k| {
            if *k == known {
                false
            } else {
                *k = known;
                true
            }
        });
    }

    /// Performs every pending output of the core.
    fn drain(&mut self) {
        // Read at the first delivery of this drain, once for all of them.
        let mut delivered_at: Option<Instant> = None;
        while let Some(output) = self.node.poll_output() {
            match output {
                Output::Connect { link, peer, addr } => {
                    self.counters.dial();
                    self.links.dial(link, peer, addr);
                }
                Output::Transmit { link, bytes } => self.links.transmit(link, bytes),
                Output::Close { link } => self.links.close(link),
                Output::Received {
                    from,
                    via,
                    msg_type,
                    payload,
                } => {
                    self.counters.received();
                    self.deliver(Received {
                        from,
                        via,
                        msg_type,
                        payload,
                    });
                }
                Output::Outcome { msg, outcome } => {
                    self.counters.outcome(outcome);
                    if let Some((accepted, waiter)) = self.pending.remove(&msg) {
                        if outcome == Outcome::Delivered {
                            let now = *delivered_at.get_or_insert_with(|| self.clock.now());
                            self.counters
                                .delivered_after(now.saturating_duration_since(accepted));
                        }
                        match waiter {
                            Waiter::Submitted(tx) => {
                                let _ = tx.send(outcome);
                            }
                            Waiter::Posted(tx) => {
                                let _ = tx.send(Ok(outcome));
                            }
                            Waiter::Streamed { poster, ticket } => {
                                self.posters.outcome(poster, ticket, outcome);
                            }
                        }
                    }
                }
                Output::Event(event) => self.on_event(&event),
                Output::Rpc(output) => self.on_rpc_output(output),
                _ => debug!("unhandled node output"),
            }
        }
        self.push_overflow();
        self.links.flush();
        self.posters.flush();
    }

    fn on_event(&mut self, event: &Event) {
        self.counters.event(event);
        match event {
            Event::LinkUp { link, peer } => {
                self.links.mark_up(*link, *peer);
                debug!(id = self.node.id().0, %link, peer = peer.0, "link up");
            }
            Event::LinkClosed { link, peer } => {
                debug!(id = self.node.id().0, %link, peer = peer.map(|p| p.0), "link down");
            }
            Event::LinkRejected { link, reason } => {
                warn!(id = self.node.id().0, %link, %reason, "link rejected");
            }
            Event::HandshakeTimedOut { link, dialed } => {
                warn!(id = self.node.id().0, %link, dialed = dialed.map(|d| d.0), "handshake timed out");
            }
            Event::HandshakeLimit { link } => {
                warn!(id = self.node.id().0, %link, "pending handshake closed to make room for a new connection");
            }
            Event::PeerRestarted { peer, incarnation } => {
                info!(
                    id = self.node.id().0,
                    peer = peer.0,
                    %incarnation,
                    "peer restarted"
                );
            }
            Event::PeerDead {
                peer,
                incarnation,
                evidence,
            } => {
                info!(
                    id = self.node.id().0,
                    peer = peer.0,
                    %incarnation,
                    evidence = evidence.as_str(),
                    "peer incarnation dead"
                );
            }
            Event::OffRoute { frame, dst, via } => {
                info!(
                    id = self.node.id().0,
                    frame = event_log::off_route_frame(*frame),
                    dst = dst.0,
                    via = via.0,
                    "dropped: not from the stream's route"
                );
            }
            Event::ForgedSource {
                link,
                via,
                src,
                dst,
            } => {
                warn!(id = self.node.id().0, %link, via = via.0, src = src.0, dst = dst.0, "dropped: the peer may not relay for this source");
            }
            other => event_log::log_event(self.node.id().0, other),
        }
    }

    /// Queues `msg` for the inbox (handed over at the end of the drain).
    fn deliver(&mut self, msg: Received) {
        self.overflow.push_back(msg);
    }

    /// Hands queued messages to the inbox, as many as it has room for, in one batch.
    fn push_overflow(&mut self) {
        if self.inbox.hand_over(&mut self.overflow).is_err() {
            self.drop_overflow();
        }
    }

    fn drop_overflow(&mut self) {
        for _ in self.overflow.drain(..) {
            self.counters.inbox_dropped();
        }
    }
}

async fn feed_recv(feed: &mut Option<Feed>) -> Option<FeedEvent> {
    match feed {
        Some(feed) => feed.events.recv().await,
        None => std::future::pending().await,
    }
}

/// The node a registry event is about, when it is about one node with an id (a name-only
/// delete names none).
fn registry_event_id(event: &RegistryEvent) -> Option<NodeId> {
    let id = match event {
        RegistryEvent::DiscoveryPut(info) => info.id,
        RegistryEvent::TopologyPut(info) => info.id,
        RegistryEvent::DiscoveryDelete { id, .. }
        | RegistryEvent::TopologyDelete { id, .. }
        | RegistryEvent::Session { id, .. } => *id,
        _ => NodeId::NONE,
    };
    id.is_valid().then_some(id)
}
