//! The loop body of a [`MioNode`]: [`run_once`](MioNode::run_once) and everything it does,
//! and the same body in pieces for an application's own poll
//! ([`handle_event`](MioNode::handle_event), [`process`](MioNode::process),
//! [`poll_timeout`](MioNode::poll_timeout)).
//!
//! One pass: write what the last commands queued; wait on the poll for at most the caller's
//! timeout or the nearest deadline (the core's, the registry client's, a dial's, a closing
//! connection's linger); turn each readiness event into one `handle_*` call — an accepted
//! connection, a finished or failed dial, a chunk of bytes, an end of stream — draining the
//! core's and the registry client's outputs after each; fire what is due; write again. No
//! routing, retry or queueing decision is taken here: outputs become socket operations
//! (`Connect` → a non-blocking dial, `Transmit` → the link's buffer, `Close` → flush, FIN,
//! drop) or [`AppEvent`]s, and the registry client's outputs go through
//! `Node::handle_client_output`, which applies registry changes to the node.

use std::{io, time::Duration};

use mio::{Token, event::Event as Readiness, net::TcpStream};
use switchboard_core::{
    discovery::address::tcp_socket_addr,
    ids::LinkId,
    node::Output,
    registry::client::ClientOutput,
    time::{Instant, earliest},
};

use crate::{
    conn::{Chunk, Conn, DialCheck, State},
    node::{AppEvent, Closing, MioNode},
    tokens::{Key, TokenRange},
};

/// Bytes read from a socket at once.
pub(crate) const READ_CHUNK: usize = 64 * 1024;
/// Bytes read from one connection per readiness event before the others get their turn
/// (the rest is read at the next `run_once`).
const READ_BUDGET: usize = 1024 * 1024;
/// How long a dial may take before it counts as failed.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a closed connection may take to flush and see the peer's end of stream.
const CLOSE_LINGER: Duration = Duration::from_secs(2);
/// While this many [`AppEvent`]s wait to be taken, links are not read.
pub const EVENT_CAPACITY: usize = 65_536;

/// A readiness event as (token, readable, writable); an error or a closed half counts as
/// both (the read or write then finds out).
fn readiness(e: &Readiness) -> (Token, bool, bool) {
    let gone = e.is_error() || e.is_read_closed() || e.is_write_closed();
    (e.token(), e.is_readable() || gone, e.is_writable() || gone)
}

impl MioNode {
    /// One turn of the loop of a node that owns its poll ([`bind`](Self::bind)): waits for
    /// socket readiness for at most `timeout` (`None`: no limit of its own) and at most
    /// until the node's next deadline, handles every ready socket and every due deadline,
    /// and writes what the core produced. Received messages, outcomes and notices then wait
    /// in [`poll_event`](Self::poll_event).
    ///
    /// Call it in a loop (a game server calls it once per frame with a short or zero
    /// timeout). It never blocks longer than asked and never blocks on a socket. It is the
    /// embedded mode's loop body run on the node's own poll: `poll` for at most
    /// [`poll_timeout`](Self::poll_timeout), [`handle_event`](Self::handle_event) for each
    /// event, then [`process`](Self::process).
    ///
    /// # Errors
    ///
    /// The poll itself failed (not a socket: socket errors close their link), or the node is
    /// embedded in the application's poll ([`embed`](Self::embed)) and has none to wait on
    /// (`ErrorKind::Unsupported`).
    pub fn run_once(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.flush_dirty(self.clock.now());
        let wait = match (timeout, self.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Some(owned) = &mut self.owned else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "an embedded MioNode is driven by the application's poll",
            ));
        };
        match owned.poll.poll(&mut owned.events, wait) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        let ready: Vec<(Token, bool, bool)> = owned.events.iter().map(readiness).collect();
        for (token, readable, writable) in ready {
            self.dispatch(token, readable, writable);
        }
        self.process();
        Ok(())
    }

    /// Whether `token` is one of this node's (in its [`TokenRange`]): the events an
    /// application passes to [`handle_event`](Self::handle_event).
    #[must_use]
    pub fn owns(&self, token: Token) -> bool {
        self.tokens.range().contains(token)
    }

    /// The tokens this node registers its sockets with.
    #[must_use]
    pub fn token_range(&self) -> TokenRange {
        self.tokens.range()
    }

    /// One readiness event of the application's poll for one of this node's tokens
    /// ([`owns`](Self::owns)): the ready socket is accepted from, read or written, and the
    /// core's outputs are performed. Events of other tokens are ignored, as are stale events
    /// of sockets already closed. Call [`process`](Self::process) after the batch.
    pub fn handle_event(&mut self, event: &Readiness) {
        if !self.owns(event.token()) {
            return;
        }
        let (token, readable, writable) = readiness(event);
        self.dispatch(token, readable, writable);
    }

    /// What is due after a batch of events (or a poll that timed out): reads that stopped
    /// early are resumed, due timers fire (the core's, the registry client's, dial and close
    /// deadlines), and every buffer with bytes queued is written. Call it after every `poll`
    /// of the application's loop, even one that returned no event of this node — and
    /// calling it more often is harmless.
    pub fn process(&mut self) {
        if self.app.len() < EVENT_CAPACITY {
            for token in std::mem::take(&mut self.resume) {
                self.dispatch(token, true, false);
            }
        }
        self.fire_timers(self.clock.now());
        self.flush_dirty(self.clock.now());
    }

    /// When the application's loop must call [`process`](Self::process) at the latest,
    /// whether or not an event came: the node's nearest deadline, or now if it has work
    /// waiting (bytes queued by [`send`](Self::send), a read to resume). `None`: only
    /// readiness events wake it.
    #[must_use]
    pub fn next_timeout(&self) -> Option<std::time::Instant> {
        let now = std::time::Instant::now();
        if self.has_work() {
            return Some(now);
        }
        let until = self.clock.until(self.next_deadline()?);
        Some(now.checked_add(until).unwrap_or(now))
    }

    /// [`next_timeout`](Self::next_timeout) as the timeout of the application's
    /// `Poll::poll`: how long it may block for this node (combine it with its own, and with
    /// other nodes', by taking the minimum).
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Duration> {
        if self.has_work() {
            return Some(Duration::ZERO);
        }
        self.next_deadline().map(|d| self.clock.until(d))
    }

    /// Whether `process` has something to do now, without waiting for an event.
    fn has_work(&self) -> bool {
        !self.dirty.is_empty()
            || self.registry_dirty
            || (!self.resume.is_empty() && self.app.len() < EVENT_CAPACITY)
    }

    /// One readiness event: one `handle_*` call (or a few, one per chunk read), each
    /// followed by a drain.
    fn dispatch(&mut self, token: Token, readable: bool, writable: bool) {
        let now = self.clock.now();
        if self.closing.contains_key(&token) {
            self.on_closing_ready(now, token);
            return;
        }
        match self.tokens.key(token) {
            Some(Key::Listener) => self.accept_all(now),
            Some(Key::Link(link)) => self.on_link_ready(now, link, readable, writable),
            Some(Key::Registry(generation))
                if self
                    .registry
                    .as_ref()
                    .is_some_and(|r| r.generation == generation && r.conn.is_some()) =>
            {
                self.on_registry_ready(now, readable, writable);
            }
            // A free token (a stale event of a closed socket), or not this node's.
            _ => {}
        }
    }

    /// Accepts every waiting connection: each becomes a link (`handle_accepted`).
    fn accept_all(&mut self, now: Instant) {
        loop {
            let Some(listener) = &self.listener else {
                return;
            };
            match listener.accept() {
                Ok((stream, _peer)) => {
                    let link = self.node.handle_accepted(now);
                    let opened = self.tokens.take(Key::Link(link)).map(|token| {
                        Conn::open(&self.mio, stream, token).inspect_err(|_| {
                            self.tokens.give_back(token);
                        })
                    });
                    match opened {
                        Some(Ok(conn)) => {
                            self.links.insert(link, conn);
                        }
                        // No free token, or the stream could not be registered.
                        _ => self.node.handle_closed(now, link),
                    }
                    self.drain(now);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Out of descriptors or a connection reset before it was taken: the next
                // connection wakes the listener again.
                Err(_) => return,
            }
        }
    }

    fn on_link_ready(&mut self, now: Instant, link: LinkId, readable: bool, writable: bool) {
        let Some(conn) = self.links.get_mut(&link) else {
            return;
        };
        if let State::Dialing { .. } = conn.state {
            match conn.check_dial() {
                DialCheck::Pending => return,
                DialCheck::Failed => {
                    self.drop_link(link);
                    self.node.handle_connect_failed(now, link);
                    self.drain(now);
                    return;
                }
                DialCheck::Connected => {
                    self.node.handle_connected(now, link);
                    self.dirty.insert(link);
                    self.drain(now);
                }
            }
        } else if writable {
            self.dirty.insert(link);
        }
        if readable {
            self.read_link(now, link);
        }
    }

    /// Reads `link` chunk by chunk (one `handle_received` each) until it would block, the
    /// budget runs out or the event queue is full (then it is read again later).
    fn read_link(&mut self, now: Instant, link: LinkId) {
        let mut total = 0;
        loop {
            let Some(conn) = self.links.get_mut(&link) else {
                return;
            };
            if self.app.len() >= EVENT_CAPACITY || total >= READ_BUDGET {
                self.resume.insert(conn.token());
                return;
            }
            match conn.read_chunk(&mut self.scratch) {
                Chunk::Data(n) => {
                    total += n;
                    self.node.handle_received(
                        now,
                        link,
                        bytes::Bytes::copy_from_slice(&self.scratch[..n]),
                    );
                    self.drain(now);
                }
                Chunk::Drained => return,
                Chunk::Lost => {
                    self.lose_link(now, link);
                    return;
                }
            }
        }
    }

    fn on_registry_ready(&mut self, now: Instant, readable: bool, writable: bool) {
        let Some(registry) = &mut self.registry else {
            return;
        };
        let Some(conn) = &mut registry.conn else {
            return;
        };
        if let State::Dialing { .. } = conn.state {
            match conn.check_dial() {
                DialCheck::Pending => return,
                DialCheck::Failed => {
                    self.stop_registry_dial_with(|client| client.handle_connect_failed(now));
                    self.drain(now);
                    return;
                }
                DialCheck::Connected => {
                    registry.client.handle_connected(now);
                    self.drain(now);
                }
            }
        } else if !writable && !readable {
            return;
        }
        if readable {
            self.read_registry(now);
        }
    }

    fn read_registry(&mut self, now: Instant) {
        let mut total = 0;
        loop {
            let Some(registry) = &mut self.registry else {
                return;
            };
            let Some(conn) = &mut registry.conn else {
                return;
            };
            if total >= READ_BUDGET {
                self.resume.insert(conn.token());
                return;
            }
            match conn.read_chunk(&mut self.scratch) {
                Chunk::Data(n) => {
                    total += n;
                    registry.client.handle_received(now, &self.scratch[..n]);
                    self.drain(now);
                }
                Chunk::Drained => return,
                Chunk::Lost => {
                    self.stop_registry_dial_with(|client| client.handle_closed(now));
                    self.drain(now);
                    return;
                }
            }
        }
    }

    /// A closed connection is ready: finish writing, send the FIN, read (and discard) until
    /// the peer's end of stream, then drop it.
    fn on_closing_ready(&mut self, now: Instant, token: Token) {
        let Some(closing) = self.closing.get_mut(&token) else {
            return;
        };
        let mut done = closing.conn.flush(&self.mio).is_err();
        if !done && !closing.fin_sent && closing.conn.queued() == 0 {
            closing.conn.shutdown_write();
            closing.fin_sent = true;
        }
        while !done {
            match closing.conn.read_chunk(&mut self.scratch) {
                Chunk::Data(_) => {}
                Chunk::Drained => break,
                Chunk::Lost => done = true,
            }
        }
        if done || closing.deadline <= now {
            self.finish_closing(token);
        }
    }

    fn finish_closing(&mut self, token: Token) {
        if let Some(mut closing) = self.closing.remove(&token) {
            closing.conn.deregister(&self.mio);
            self.tokens.give_back(token);
        }
        self.resume.remove(&token);
    }

    /// Performs every pending output of the core and the registry client (each may cause
    /// more of the other's), until both are empty.
    pub(crate) fn drain(&mut self, now: Instant) {
        loop {
            let mut progressed = false;
            while let Some(output) = self.node.poll_output() {
                progressed = true;
                self.on_output(now, output);
            }
            while let Some(output) = self.registry.as_mut().and_then(|r| r.client.poll_output()) {
                progressed = true;
                self.on_client_output(now, output);
            }
            if !progressed {
                return;
            }
        }
    }

    fn on_output(&mut self, now: Instant, output: Output) {
        match output {
            Output::Connect { link, addr, .. } => self.dial_link(now, link, &addr),
            Output::Transmit { link, bytes } => {
                if let Some(conn) = self.links.get_mut(&link) {
                    if conn.queue(&bytes) {
                        self.dirty.insert(link);
                    } else {
                        // The peer does not read: close the link; the core re-routes.
                        self.lose_link(now, link);
                    }
                }
            }
            Output::Close { link } => {
                if let Some(conn) = self.links.remove(&link) {
                    self.dirty.remove(&link);
                    self.resume.remove(&conn.token());
                    self.linger(now, conn);
                }
            }
            Output::Received {
                from,
                via,
                msg_type,
                payload,
            } => self.app.push_back(AppEvent::Received {
                from,
                via,
                msg_type,
                payload,
            }),
            Output::Outcome { msg, outcome } => {
                self.app.push_back(AppEvent::Outcome { msg, outcome });
            }
            Output::Event(event) => self.app.push_back(AppEvent::Node(event)),
            Output::Rpc(switchboard_core::RpcOutput::Republish) => self.republish(now),
            Output::Rpc(output) => self.app.push_back(AppEvent::Rpc(output)),
            _ => {}
        }
    }

    /// One output of the registry client: the core applies registry changes to the node
    /// (`Node::handle_client_output`); what is left is socket work or a report.
    fn on_client_output(&mut self, now: Instant, output: ClientOutput) {
        match self.node.handle_client_output(now, output) {
            // Registry changes were applied to the node.
            None | Some(ClientOutput::Registry(_)) => {}
            Some(ClientOutput::Connect) => self.dial_registry(now),
            Some(ClientOutput::Transmit { bytes }) => {
                let Some(registry) = &mut self.registry else {
                    return;
                };
                if let Some(conn) = &mut registry.conn {
                    if conn.queue(&bytes) {
                        self.registry_dirty = true;
                    } else {
                        self.stop_registry_dial_with(|client| client.handle_closed(now));
                    }
                }
            }
            Some(ClientOutput::Close) => {
                if let Some(conn) = self.registry.as_mut().and_then(|r| r.conn.take()) {
                    self.linger(now, conn);
                }
            }
            Some(ClientOutput::Event(event)) => self.app.push_back(AppEvent::Registry(event)),
        }
    }

    /// Starts a non-blocking dial of `addr` for `link`; a dial that cannot even start is
    /// reported failed at once.
    fn dial_link(&mut self, now: Instant, link: LinkId, addr: &str) {
        let deadline = now.saturating_add(CONNECT_TIMEOUT);
        let Some(token) = self.tokens.take(Key::Link(link)) else {
            self.node.handle_connect_failed(now, link);
            return;
        };
        let started = tcp_socket_addr(addr)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))
            .and_then(TcpStream::connect)
            .and_then(|s| Conn::dialing(&self.mio, s, token, deadline));
        match started {
            Ok(conn) => {
                self.links.insert(link, conn);
            }
            Err(_) => {
                self.tokens.give_back(token);
                self.node.handle_connect_failed(now, link);
            }
        }
    }

    fn dial_registry(&mut self, now: Instant) {
        self.stop_registry_dial();
        let Some(registry) = &mut self.registry else {
            return;
        };
        registry.generation += 1;
        let Some(token) = self.tokens.take(Key::Registry(registry.generation)) else {
            registry.client.handle_connect_failed(now);
            return;
        };
        let deadline = now.saturating_add(CONNECT_TIMEOUT);
        match TcpStream::connect(registry.addr)
            .and_then(|s| Conn::dialing(&self.mio, s, token, deadline))
        {
            Ok(conn) => registry.conn = Some(conn),
            Err(_) => {
                self.tokens.give_back(token);
                registry.client.handle_connect_failed(now);
            }
        }
    }

    /// Drops the registry connection (if any) without telling the client.
    pub(crate) fn stop_registry_dial(&mut self) {
        self.stop_registry_dial_with(|_| {});
    }

    /// Drops the registry connection (if any), then tells the client with `report`.
    fn stop_registry_dial_with(
        &mut self,
        report: impl FnOnce(&mut switchboard_core::registry::client::RegistryClient),
    ) {
        let Some(registry) = &mut self.registry else {
            return;
        };
        if let Some(mut conn) = registry.conn.take() {
            conn.deregister(&self.mio);
            self.resume.remove(&conn.token());
            self.tokens.give_back(conn.token());
        }
        report(&mut registry.client);
    }

    /// A connection the core or client closed: flushed, FIN, kept until the peer's end of
    /// stream or [`CLOSE_LINGER`]. A dial in progress is dropped at once.
    fn linger(&mut self, now: Instant, mut conn: Conn) {
        let token = conn.token();
        if conn.state != State::Open || conn.flush(&self.mio).is_err() {
            conn.deregister(&self.mio);
            self.tokens.give_back(token);
            return;
        }
        let fin_sent = conn.queued() == 0;
        if fin_sent {
            conn.shutdown_write();
        }
        self.closing.insert(
            token,
            Closing {
                conn,
                deadline: now.saturating_add(CLOSE_LINGER),
                fin_sent,
            },
        );
    }

    fn drop_link(&mut self, link: LinkId) {
        if let Some(mut conn) = self.links.remove(&link) {
            conn.deregister(&self.mio);
            self.resume.remove(&conn.token());
            self.tokens.give_back(conn.token());
        }
        self.dirty.remove(&link);
    }

    /// The transport lost `link` (end of stream, error, overflow): the core is told.
    fn lose_link(&mut self, now: Instant, link: LinkId) {
        self.drop_link(link);
        self.node.handle_closed(now, link);
        self.drain(now);
    }

    /// Writes every buffer with bytes queued (and the registry connection's); a write error
    /// loses the link.
    pub(crate) fn flush_dirty(&mut self, now: Instant) {
        self.registry_dirty = false;
        while let Some(link) = self.dirty.pop_first() {
            let Some(conn) = self.links.get_mut(&link) else {
                continue;
            };
            if conn.flush(&self.mio).is_err() {
                self.lose_link(now, link);
            }
        }
        let failed = self
            .registry
            .as_mut()
            .and_then(|r| r.conn.as_mut())
            .is_some_and(|conn| conn.flush(&self.mio).is_err());
        if failed {
            self.stop_registry_dial_with(|client| client.handle_closed(now));
            self.drain(now);
            self.flush_dirty(now);
        }
    }

    /// Everything due at `now`: the core's and the client's timers, dials past their
    /// deadline, lingering closes past theirs.
    fn fire_timers(&mut self, now: Instant) {
        if self.node.poll_timeout().is_some_and(|d| d <= now) {
            self.node.handle_timeout(now);
            self.drain(now);
        }
        if let Some(registry) = &mut self.registry
            && registry.client.poll_timeout().is_some_and(|d| d <= now)
        {
            registry.client.handle_timeout(now);
            self.drain(now);
        }
        let late: Vec<LinkId> = self
            .links
            .iter()
            .filter(|(_, c)| matches!(c.state, State::Dialing { deadline } if deadline <= now))
            .map(|(link, _)| *link)
            .collect();
        for link in late {
            self.drop_link(link);
            self.node.handle_connect_failed(now, link);
            self.drain(now);
        }
        let registry_late = self.registry.as_ref().is_some_and(|r| {
            r.conn
                .as_ref()
                .is_some_and(|c| matches!(c.state, State::Dialing { deadline } if deadline <= now))
        });
        if registry_late {
            self.stop_registry_dial_with(|client| client.handle_connect_failed(now));
            self.drain(now);
        }
        let expired: Vec<Token> = self
            .closing
            .iter()
            .filter(|(_, c)| c.deadline <= now)
            .map(|(token, _)| *token)
            .collect();
        for token in expired {
            self.finish_closing(token);
        }
    }

    /// The nearest deadline of anything this node waits for.
    fn next_deadline(&self) -> Option<Instant> {
        let dial = |c: &Conn| match c.state {
            State::Dialing { deadline } => Some(deadline),
            State::Open => None,
        };
        let mut next = self.node.poll_timeout();
        if let Some(registry) = &self.registry {
            next = earliest(next, registry.client.poll_timeout());
            next = earliest(next, registry.conn.as_ref().and_then(dial));
        }
        next = earliest(next, self.links.values().filter_map(dial).min());
        earliest(next, self.closing.values().map(|c| c.deadline).min())
    }
}
