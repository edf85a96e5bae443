//! The real registry machines on emulated links: one [`RegistryServer`] and one
//! [`RegistryClient`] per member, wired over links with the simulator's latency and jitter, on
//! the simulator's virtual clock.
//!
//! [`Sim`](super::Sim) runs one of these when the registry machines are on
//! ([`Sim::start_registry`](super::Sim::start_registry)): member `i` is the client of the
//! simulator's `i`-th node, and every [`NetOutput::Registry`] is handed to that node — the
//! part an adapter plays between a node and its registry client. It also runs on its own, with
//! its own clock ([`RegistryNet::advance_to`]), for the registry machines' tests.
//!
//! The model (links, abrupt ends, restarts, order, outputs) is in [`RegistryNet`]'s docs.

use alloc::{
    collections::{BinaryHeap, VecDeque},
    vec::Vec,
};
use core::cmp::Reverse;

use foldhash::fast::FixedState;
use hashbrown::HashMap;

use super::{RegistryEvent, agenda::Agenda};
use crate::{
    registry::{
        client::{ClientConfig, ClientEvent, ClientOutput, RegistryClient},
        server::{ConnId, RegistryServer, ServerConfig, ServerEvent, ServerOutput},
    },
    rng::Rng,
    time::{Duration, Instant, earliest},
    wire::{FrameKind, RecordCache},
};

/// Link parameters of a [`RegistryNet`].
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct NetSettings {
    /// Time from a client's `Connect` to its resolution.
    pub connect_latency: Duration,
    /// Time from a `Transmit` (or graceful `Close`) to its arrival, unless a member overrides
    /// it ([`RegistryNet::set_latency`]).
    pub link_latency: Duration,
    /// Extra latency per transmission, uniform in `[0, jitter)`; bytes of one direction never
    /// overtake each other.
    pub jitter: Duration,
    /// Seed of the net's generator (jitter, and the seeds of successive servers).
    pub seed: u64,
    /// The registry's egress bandwidth in bytes per second, shared by all its connections
    /// in send order (one FIFO serializer): a frame leaves once the frames sent before it
    /// have, `len / bandwidth` after it starts, and arrives the link latency later. `None`:
    /// bytes cost nothing, only latency.
    pub egress_bandwidth: Option<u64>,
}

/// What a [`RegistryNet`] reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetOutput {
    /// Member `member`'s client produced a registry event for its node.
    Registry {
        /// The member.
        member: usize,
        /// The event.
        event: RegistryEvent,
    },
    /// Member `member`'s client reported something.
    Client {
        /// The member.
        member: usize,
        /// The event.
        event: ClientEvent,
    },
    /// The server reported something.
    Server(ServerEvent),
}

/// One scheduled delivery of the net.
#[derive(Clone, Debug)]
pub(super) enum NetDue {
    /// A client's dial resolves.
    Establish(u64),
    /// Bytes reach the server end of a link.
    ToServer(u64, Vec<u8>),
    /// Bytes reach the client end of a link.
    ToClient(u64, Vec<u8>),
    /// The client closed gracefully; the server hears it.
    ServerHearsClose(u64),
    /// The server closed gracefully; the client hears it.
    ClientHearsClose(u64),
    /// A server killed by [`RegistryNet::restart_server_after`] starts again.
    StartServer,
}

/// The client end of a registry link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientEnd {
    Dialing,
    Open,
    Closed,
}

/// One registry connection (or a dial that has not resolved).
#[derive(Clone, Debug)]
struct NetLink {
    member: usize,
    /// The member's client generation that dialed.
    generation: u32,
    client: ClientEnd,
    /// The server connection and the server generation that accepted it, while open.
    server: Option<(ConnId, u32)>,
    /// Latest arrival scheduled towards `[client, server]`.
    last_arrival: [Instant; 2],
}

/// One member: a node's registry client, if it runs one.
#[derive(Debug, Default)]
struct Member {
    client: Option<RegistryClient>,
    /// Bumped by every client start; links of older generations are dead for it.
    generation: u32,
    /// The client's current link.
    link: Option<u64>,
    /// The client's `poll_timeout` after its last drain.
    deadline: Option<Instant>,
    /// Link latency override.
    latency: Option<Duration>,
    /// Light member ([`RegistryNet::set_light`]): record frames are charged, not delivered.
    light: bool,
}

/// What the registry server sent ([`RegistryNet::server_sent`]): every `Transmit` output,
/// whether or not its link was still up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerTraffic {
    /// Frames (one per `Transmit`).
    pub frames: u64,
    /// Bytes, headers included.
    pub bytes: u64,
    /// Of these, `Snapshot`, `Put` and `Delete` frames.
    pub record_frames: u64,
}

/// The registry server and the members' clients on emulated links.
///
/// # Model
///
/// - **Links.** A client's `Connect` resolves after the connect latency: the server accepts
///   (then the client hears `handle_connected`), or the client hears
///   `handle_connect_failed` when no server runs. Bytes arrive after the link latency plus a
///   jitter draw, in order per direction. A graceful `Close` reaches the other side after the
///   bytes sent before it. Each link is one connection: bytes and closes of an old connection
///   never reach a client's newer one (the client itself cannot tell them apart).
/// - **Abrupt ends.** [`RegistryNet::kill_client`], [`RegistryNet::drop_link`] and
///   [`RegistryNet::kill_server`] drop links at once: bytes in flight are lost and the
///   surviving side hears the close during the call.
/// - **Server restarts.** Every start draws a new seed, so a restarted server has a new epoch
///   and numbers its revisions from 1 again.
/// - **Order.** At one instant: scheduled deliveries first (in scheduling order), then the
///   server's timer, then clients' timers (the earliest first, ties in member order).
/// - **Outputs.** What a driver must act on or may log — registry events for a member's node,
///   client and server events — queue up as [`NetOutput`]s until drained with
///   [`RegistryNet::poll_output`] (or picked per member with [`RegistryNet::take_registry`] and
///   friends when the net runs alone).
#[derive(Debug)]
pub struct RegistryNet {
    now: Instant,
    settings: NetSettings,
    rng: Rng,
    server_config: ServerConfig,
    server: Option<RegistryServer>,
    /// Bumped by every server start.
    server_generation: u32,
    server_deadline: Option<Instant>,
    /// Server connections of the running server → link.
    conns: HashMap<ConnId, u64, FixedState>,
    members: Vec<Member>,
    /// Members' deadlines, earliest first (ties in member order); an entry whose member's
    /// deadline has changed since is stale and dropped when it reaches the top.
    client_deadlines: BinaryHeap<Reverse<(Instant, usize)>>,
    /// By id (order never read: a server kill sorts what it collects).
    links: HashMap<u64, NetLink, FixedState>,
    next_link: u64,
    agenda: Agenda<NetDue>,
    out: VecDeque<(Instant, NetOutput)>,
    steps: u64,
    /// When the registry's egress is free again (with an egress bandwidth).
    egress_free: Instant,
    sent: ServerTraffic,
    /// Record frames scheduled towards full members and not yet popped.
    records_in_flight: u64,
    /// The members' clients decode each record the server sends once between them.
    records: RecordCache,
    /// When the last record frame sent to a light member arrives (frames lost with a killed
    /// server excepted).
    light_until: Instant,
}

impl RegistryNet {
    /// A net with no members and no server at `now`; [`RegistryNet::start_server`] starts one.
    #[must_use]
    pub fn new(settings: NetSettings, server: ServerConfig, now: Instant) -> RegistryNet {
        RegistryNet {
            now,
            rng: Rng::new(settings.seed ^ 0x7e61_5747_0000_0001),
            settings,
            server_config: server,
            server: None,
            server_generation: 0,
            server_deadline: None,
            conns: HashMap::default(),
            members: Vec::new(),
            client_deadlines: BinaryHeap::new(),
            links: HashMap::default(),
            next_link: 0,
            agenda: Agenda::default(),
            out: VecDeque::new(),
            steps: 0,
            egress_free: now,
            sent: ServerTraffic::default(),
            records_in_flight: 0,
            records: RecordCache::new(),
            light_until: now,
        }
    }

    // ---- members and server ------------------------------------------------------------

    /// Adds a member without a client; returns its index (members are numbered from 0).
    pub fn add_member(&mut self) -> usize {
        self.members.push(Member::default());
        self.members.len() - 1
    }

    /// Starts a client for `member` from `config` (killing a running one first): it dials at
    /// once.
    pub fn start_client(&mut self, member: usize, config: ClientConfig) {
        self.kill_client(member);
        let now = self.now;
        let m = &mut self.members[member];
        m.generation += 1;
        m.client = Some(RegistryClient::new(config, now));
        self.drain_client(member);
    }

    /// Kills `member`'s client abruptly: its link drops (the server hears the close now,
    /// bytes in flight are lost). No-op without a client.
    pub fn kill_client(&mut self, member: usize) {
        let m = &mut self.members[member];
        if m.client.take().is_none() {
            return;
        }
        m.deadline = None;
        let link = m.link.take();
        self.drop_stale_deadlines();
        if let Some(link) = link {
            self.reset_server_end(link);
        }
    }

    /// The transport drops `member`'s link: both ends hear the close now, bytes in flight
    /// are lost; a dial in progress fails now.
    pub fn drop_link(&mut self, member: usize) {
        let Some(link) = self.members[member].link.take() else {
            return;
        };
        let state = self.links.get(&link).map(|l| l.client);
        self.reset_server_end(link);
        match state {
            Some(ClientEnd::Open) => self.with_client(member, |c, now| c.handle_closed(now)),
            Some(ClientEnd::Dialing) => {
                self.with_client(member, |c, now| c.handle_connect_failed(now));
            }
            Some(ClientEnd::Closed) | None => {}
        }
    }

    /// Starts a server (a new epoch); no-op if one runs.
    pub fn start_server(&mut self) {
        if self.server.is_some() {
            return;
        }
        self.server_generation += 1;
        self.server = Some(RegistryServer::new(
            self.server_config.clone(),
            self.rng.next_u64(),
        ));
        self.drain_server();
    }

    /// Kills the server abruptly: every client with an open link hears the close now, in
    /// member order; dials fail until a server starts again. No-op if none runs.
    pub fn kill_server(&mut self) {
        if self.server.take().is_none() {
            return;
        }
        self.server_deadline = None;
        self.conns.clear();
        // What the registry had not sent yet dies with it.
        self.egress_free = self.now;
        self.light_until = self.light_until.min(self.now);
        let mut notify = Vec::new();
        // Every connection dies with the server, including one whose graceful close is
        // still travelling to its client.
        self.links.retain(|&id, l| {
            l.server = None;
            if l.client == ClientEnd::Open {
                l.client = ClientEnd::Closed;
                notify.push((l.member, id));
            }
            l.client == ClientEnd::Dialing
        });
        notify.sort_unstable();
        for (member, link) in notify {
            if self.members[member].link == Some(link) {
                self.members[member].link = None;
                self.with_client(member, |c, now| c.handle_closed(now));
            }
        }
    }

    /// Kills the server now and starts a new one `down` later.
    pub fn restart_server_after(&mut self, down: Duration) {
        self.kill_server();
        self.agenda.push(self.now + down, NetDue::StartServer);
    }

    /// Whether a server runs.
    #[must_use]
    pub fn server_running(&self) -> bool {
        self.server.is_some()
    }

    /// The running server.
    #[must_use]
    pub fn server(&self) -> Option<&RegistryServer> {
        self.server.as_ref()
    }

    /// `member`'s running client.
    #[must_use]
    pub fn client(&self, member: usize) -> Option<&RegistryClient> {
        self.members.get(member).and_then(|m| m.client.as_ref())
    }

    /// Calls `f` on `member`'s running client at the current instant, then drains it (the
    /// way to issue a client command: an update, a shutdown). Returns `None` without a client.
    pub fn act<R>(
        &mut self,
        member: usize,
        f: impl FnOnce(&mut RegistryClient, Instant) -> R,
    ) -> Option<R> {
        let client = self.members[member].client.as_mut()?;
        let r = f(client, self.now);
        self.drain_client(member);
        Some(r)
    }

    /// Link latency of `member`'s connections from now on (`None`: the default).
    pub fn set_latency(&mut self, member: usize, latency: Option<Duration>) {
        self.members[member].latency = latency;
    }

    /// Makes `member` light (or full again): the `Snapshot`, `Put` and `Delete` frames the
    /// server sends it are charged to the egress and timed, but not stored or delivered, so
    /// its client holds no view — how a scale run keeps N clients on the real machines
    /// without N views in memory. Its other frames (handshake, heartbeats, `Bye`) arrive.
    pub fn set_light(&mut self, member: usize, light: bool) {
        self.members[member].light = light;
    }

    /// What the server sent since the net was made.
    #[must_use]
    pub fn server_sent(&self) -> ServerTraffic {
        self.sent
    }

    /// When every record frame the server has sent so far will have arrived: `None` while
    /// one to a full member is still on its way (it changes a view when it lands), else the
    /// arrival of the last one to a light member, or now. A frame to a single killed client
    /// still counts; those a killed server had not sent do not.
    #[must_use]
    pub fn records_settle_at(&self) -> Option<Instant> {
        (self.records_in_flight == 0).then(|| self.light_until.max(self.now))
    }

    // ---- driving -----------------------------------------------------------------------

    /// The earliest instant something is due: a delivery or a machine's timer.
    #[must_use]
    pub fn next_due(&self) -> Option<Instant> {
        earliest(
            earliest(self.agenda.next_time(), self.server_deadline),
            self.client_deadlines.peek().map(|Reverse((at, _))| *at),
        )
    }

    /// Processes one thing due at or before `now` (see [`RegistryNet`] for the
    /// order). Returns `false` when nothing is due.
    pub fn step(&mut self, now: Instant) -> bool {
        self.now = self.now.max(now);
        let now = self.now;
        self.drop_stale_deadlines();
        if let Some((_, due)) = self.agenda.pop_due(now) {
            self.deliver(due);
        } else if self.server_deadline.is_some_and(|d| d <= now) {
            if let Some(server) = self.server.as_mut() {
                server.handle_timeout(now);
            }
            self.drain_server();
        } else if let Some(&Reverse((at, member))) = self.client_deadlines.peek()
            && at <= now
        {
            self.client_deadlines.pop();
            self.members[member].deadline = None;
            self.with_client(member, |c, now| c.handle_timeout(now));
        } else {
            return false;
        }
        self.steps += 1;
        true
    }

    /// Processes everything due at the current instant (the net running alone).
    pub fn settle(&mut self) {
        while self.step(self.now) {}
    }

    /// Moves the net's own clock to `to`, processing everything due on the way at its exact
    /// instant (the net running alone).
    pub fn advance_to(&mut self, to: Instant) {
        loop {
            self.settle();
            match self.next_due() {
                Some(next) if next <= to => self.now = self.now.max(next),
                _ => break,
            }
        }
        self.now = self.now.max(to);
        self.settle();
    }

    /// Moves the net's clock forward to `now` (never back) without processing anything: a
    /// driver that embeds the net calls it before issuing commands at `now`.
    pub fn set_now(&mut self, now: Instant) {
        self.now = self.now.max(now);
    }

    /// The net's clock: the latest instant it was called or moved at.
    #[must_use]
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Deliveries and timer firings processed so far.
    #[must_use]
    pub fn steps_taken(&self) -> u64 {
        self.steps
    }

    /// The next output, if any, with the instant it was produced.
    pub fn poll_output(&mut self) -> Option<(Instant, NetOutput)> {
        self.out.pop_front()
    }

    /// Removes and returns the registry events queued for `member`, each with the instant
    /// it was produced (the net running alone keeps its outputs until they are taken).
    pub fn take_registry(&mut self, member: usize) -> Vec<(Instant, RegistryEvent)> {
        self.take(|o| match o {
            NetOutput::Registry { member: m, event } if *m == member => Some(event.clone()),
            _ => None,
        })
    }

    /// Removes and returns the client events queued for `member`.
    pub fn take_client_events(&mut self, member: usize) -> Vec<(Instant, ClientEvent)> {
        self.take(|o| match o {
            NetOutput::Client { member: m, event } if *m == member => Some(event.clone()),
            _ => None,
        })
    }

    /// Removes and returns the queued server events.
    pub fn take_server_events(&mut self) -> Vec<(Instant, ServerEvent)> {
        self.take(|o| match o {
            NetOutput::Server(event) => Some(event.clone()),
            _ => None,
        })
    }

    fn take<T>(&mut self, mut pick: impl FnMut(&NetOutput) -> Option<T>) -> Vec<(Instant, T)> {
        let mut taken = Vec::new();
        self.out.retain(|(at, o)| match pick(o) {
            Some(t) => {
                taken.push((*at, t));
                false
            }
            None => true,
        });
        taken
    }

    // ---- deliveries --------------------------------------------------------------------

    fn deliver(&mut self, due: NetDue) {
        match due {
            NetDue::Establish(link) => self.establish(link),
            NetDue::ToServer(link, bytes) => {
                if let Some(conn) = self.live_conn(link) {
                    if let Some(server) = self.server.as_mut() {
                        server.handle_received(self.now, conn, &bytes);
                    }
                    self.drain_server();
                }
            }
            NetDue::ToClient(link, bytes) => {
                if is_record(&bytes) {
                    self.records_in_flight -= 1;
                }
                if let Some(member) = self.open_client(link)
                    && let Some(client) = self.members[member].client.as_mut()
                {
                    client.handle_received_cached(self.now, &bytes, &mut self.records);
                    self.drain_client(member);
                }
            }
            NetDue::ServerHearsClose(link) => {
                if let Some(conn) = self.live_conn(link) {
                    self.conns.remove(&conn);
                    if let Some(l) = self.links.get_mut(&link) {
                        l.server = None;
                    }
                    if let Some(server) = self.server.as_mut() {
                        server.handle_closed(self.now, conn);
                    }
                    self.forget_if_done(link);
                    self.drain_server();
                }
            }
            NetDue::ClientHearsClose(link) => {
                if let Some(member) = self.open_client(link) {
                    if let Some(l) = self.links.get_mut(&link) {
                        l.client = ClientEnd::Closed;
                    }
                    self.forget_if_done(link);
                    self.members[member].link = None;
                    self.with_client(member, |c, now| c.handle_closed(now));
                }
            }
            NetDue::StartServer => self.start_server(),
        }
    }

    /// Resolves a dial: the server accepts, or the client hears the failure.
    fn establish(&mut self, link: u64) {
        let Some(l) = self.links.get(&link) else {
            return;
        };
        let member = l.member;
        let current = self.members[member].link == Some(link)
            && self.members[member].generation == l.generation
            && l.client == ClientEnd::Dialing;
        if !current {
            self.links.remove(&link);
            return;
        }
        let now = self.now;
        let Some(server) = self.server.as_mut() else {
            self.links.remove(&link);
            self.members[member].link = None;
            self.with_client(member, |c, now| c.handle_connect_failed(now));
            return;
        };
        let conn = server.handle_accepted(now);
        self.conns.insert(conn, link);
        if let Some(l) = self.links.get_mut(&link) {
            l.client = ClientEnd::Open;
            l.server = Some((conn, self.server_generation));
        }
        self.drain_server();
        self.with_client(member, |c, now| c.handle_connected(now));
    }

    /// The server connection of `link` if its server end is open on the running server.
    fn live_conn(&self, link: u64) -> Option<ConnId> {
        let (conn, generation) = self.links.get(&link)?.server?;
        (self.server.is_some() && generation == self.server_generation).then_some(conn)
    }

    /// The member whose current, open link `link` is.
    fn open_client(&self, link: u64) -> Option<usize> {
        let l = self.links.get(&link)?;
        let m = &self.members[l.member];
        (l.client == ClientEnd::Open && m.link == Some(link) && m.generation == l.generation)
            .then_some(l.member)
    }

    /// Forgets `link` once neither end can use it.
    fn forget_if_done(&mut self, link: u64) {
        if self
            .links
            .get(&link)
            .is_some_and(|l| l.client == ClientEnd::Closed && l.server.is_none())
        {
            self.links.remove(&link);
        }
    }

    /// Drops the server end of `link` abruptly (the server hears the close now).
    fn reset_server_end(&mut self, link: u64) {
        let conn = self.live_conn(link);
        if let Some(l) = self.links.get_mut(&link) {
            l.server = None;
            l.client = ClientEnd::Closed;
        }
        if let Some(conn) = conn {
            self.conns.remove(&conn);
            if let Some(server) = self.server.as_mut() {
                server.handle_closed(self.now, conn);
            }
            self.drain_server();
        }
        self.links.remove(&link);
    }

    /// Arrival time of the next delivery on `link` towards the client (`to_server` false) or
    /// the server, `len` bytes long (charged to the registry's egress towards a client).
    fn arrival(&mut self, link: u64, to_server: bool, len: usize) -> Instant {
        let mut now = self.now;
        if let (false, Some(bandwidth)) = (to_server, self.settings.egress_bandwidth) {
            let nanos = (len as u128 * 1_000_000_000).div_ceil(u128::from(bandwidth.max(1)));
            let start = self.egress_free.max(now);
            self.egress_free =
                start + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
            now = self.egress_free;
        }
        // One lookup of the link: this runs for every frame the registry sends.
        let Some(l) = self.links.get_mut(&link) else {
            return now;
        };
        let mut latency = self.members[l.member]
            .latency
            .unwrap_or(self.settings.link_latency);
        let jitter = u64::try_from(self.settings.jitter.as_nanos()).unwrap_or(u64::MAX);
        if jitter > 0 {
            latency += Duration::from_nanos(self.rng.below(jitter));
        }
        let side = usize::from(to_server);
        let at = (now + latency).max(l.last_arrival[side]);
        l.last_arrival[side] = at;
        at
    }

    // ---- calling machines and draining them --------------------------------------------

    /// Calls `f` on `member`'s client at the net's current instant and drains it.
    fn with_client(&mut self, member: usize, f: impl FnOnce(&mut RegistryClient, Instant)) {
        let now = self.now;
        if let Some(client) = self.members[member].client.as_mut() {
            f(client, now);
            self.drain_client(member);
        }
    }

    /// Acts on every output of `member`'s client, then re-reads its timer.
    fn drain_client(&mut self, member: usize) {
        let now = self.now;
        while let Some(output) = self.members[member]
            .client
            .as_mut()
            .and_then(RegistryClient::poll_output)
        {
            match output {
                ClientOutput::Connect => {
                    if let Some(old) = self.members[member].link.take() {
                        self.reset_server_end(old);
                    }
                    self.next_link += 1;
                    let link = self.next_link;
                    self.links.insert(
                        link,
                        NetLink {
                            member,
                            generation: self.members[member].generation,
                            client: ClientEnd::Dialing,
                            server: None,
                            last_arrival: [now, now],
                        },
                    );
                    self.members[member].link = Some(link);
                    self.agenda
                        .push(now + self.settings.connect_latency, NetDue::Establish(link));
                }
                ClientOutput::Transmit { bytes } => {
                    let Some(link) = self.members[member].link else {
                        continue;
                    };
                    if self
                        .links
                        .get(&link)
                        .is_some_and(|l| l.client == ClientEnd::Open)
                    {
                        let at = self.arrival(link, true, bytes.len());
                        self.agenda.push(at, NetDue::ToServer(link, bytes));
                    }
                }
                ClientOutput::Close => {
                    let Some(link) = self.members[member].link.take() else {
                        continue;
                    };
                    let was_open = self.links.get_mut(&link).is_some_and(|l| {
                        core::mem::replace(&mut l.client, ClientEnd::Closed) == ClientEnd::Open
                    });
                    if was_open && self.live_conn(link).is_some() {
                        let at = self.arrival(link, true, 0);
                        self.agenda.push(at, NetDue::ServerHearsClose(link));
                    } else {
                        self.forget_if_done(link);
                    }
                }
                ClientOutput::Registry(event) => {
                    self.out
                        .push_back((now, NetOutput::Registry { member, event }));
                }
                ClientOutput::Event(event) => {
                    self.out
                        .push_back((now, NetOutput::Client { member, event }));
                }
            }
        }
        let deadline = self.members[member]
            .client
            .as_ref()
            .and_then(RegistryClient::poll_timeout);
        let old = core::mem::replace(&mut self.members[member].deadline, deadline);
        if old != deadline {
            if let Some(at) = deadline {
                self.client_deadlines.push(Reverse((at, member)));
            }
            self.drop_stale_deadlines();
        }
    }

    /// Pops stale entries off the top of the deadline heap, so its top is a member's
    /// current deadline.
    fn drop_stale_deadlines(&mut self) {
        while let Some(&Reverse((at, member))) = self.client_deadlines.peek() {
            if self.members[member].deadline == Some(at) {
                return;
            }
            self.client_deadlines.pop();
        }
    }

    /// Acts on every output of the server, then re-reads its timer.
    fn drain_server(&mut self) {
        while let Some(output) = self.server.as_mut().and_then(RegistryServer::poll_output) {
            match output {
                ServerOutput::Transmit { conn, bytes } => {
                    let record = is_record(&bytes);
                    self.sent.frames += 1;
                    self.sent.bytes += bytes.len() as u64;
                    self.sent.record_frames += u64::from(record);
                    if let Some(&link) = self.conns.get(&conn) {
                        let at = self.arrival(link, false, bytes.len());
                        let member = self.links.get(&link).map(|l| l.member);
                        match member.map(|m| &mut self.members[m]) {
                            Some(m) if record && m.light => {
                                self.light_until = self.light_until.max(at)
                            }
                            _ => {
                                self.records_in_flight += u64::from(record);
                                self.agenda.push(at, NetDue::ToClient(link, bytes));
                            }
                        }
                    }
                }
                ServerOutput::Close { conn } => {
                    if let Some(link) = self.conns.remove(&conn) {
                        let at = self.arrival(link, false, 0);
                        if let Some(l) = self.links.get_mut(&link) {
                            l.server = None;
                        }
                        if self.open_client(link).is_some() {
                            self.agenda.push(at, NetDue::ClientHearsClose(link));
                        } else {
                            self.forget_if_done(link);
                        }
                    }
                }
                ServerOutput::Event(event) => {
                    self.out.push_back((self.now, NetOutput::Server(event)))
                }
            }
        }
        self.server_deadline = self.server.as_ref().and_then(RegistryServer::poll_timeout);
    }
}

/// Whether `frame` is a `Snapshot`, `Put` or `Delete` (its kind byte, [`wire`](crate::wire)'s
/// header layout).
fn is_record(frame: &[u8]) -> bool {
    frame
        .get(5)
        .and_then(|&code| FrameKind::from_code(code))
        .is_some_and(|kind| {
            matches!(
                kind,
                FrameKind::Snapshot | FrameKind::Put | FrameKind::Delete
            )
        })
}
