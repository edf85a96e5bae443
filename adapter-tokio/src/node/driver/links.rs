//! The driver's link table: for each core `LinkId`, the tasks that carry it.
//!
//! A dialled link starts with a dial task; once connected (and every accepted link at once) it
//! has a writer task, and the driver writes a drain's `Transmit`s itself, as the core's own
//! buffers in one vectored `try_write` ([`Links::flush`]); only what the socket does not take
//! (or everything, while the writer task still holds bytes, so nothing is reordered) goes
//! through the writer task, which waits for room and writes it in order. The driver reads its socket
//! itself: the read half waits for readiness in [`Links::next_readable`] (one future per link
//! in a `FuturesUnordered`), then the driver's burst reads it with `try_read_buf` into one shared buffer, each read
//! split off and handed to the core as owned bytes (no copy)
//! ([`Links::read_ready`]) until it would block, and re-arms it — no reader task and no
//! channel hop per chunk. The tasks report on one bounded channel of [`LinkEvent`]s, each
//! tagged with its `LinkId`; the core never reuses a link id, so an event of a link the table
//! no longer holds is stale and ignored. Every task lives in one `JoinSet` and every readiness
//! wait in the table: dropping the table aborts them all, which is how a killed node drops its
//! sockets.
//!
//! A TLS link ([`Transport`] with TLS) cannot be read by readiness: its "readiness wait" is a
//! `read_buf` on the TLS read half into the link's own buffer, and [`Links::read_ready`]
//! splits what it read off that buffer (still no copy) and arms the next read. Its writes all
//! go through the writer task (no direct `try_write`).

use std::{
    collections::{HashMap, VecDeque},
    future::Future,
    io,
    net::SocketAddr,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use bytes::{Bytes, BytesMut};
use futures_util::{
    StreamExt,
    future::{AbortHandle, Abortable, Aborted},
    stream::FuturesUnordered,
};
use switchboard_core::ids::{LinkId, NodeId};
use tokio::{
    net::{
        TcpListener,
        tcp::{OwnedReadHalf, OwnedWriteHalf},
    },
    sync::mpsc,
    task::{self, JoinSet},
};
use tracing::{debug, warn};

use crate::{
    net,
    transport::{Stream, Transport},
};

/// Capacity of the link event channel (readers wait when it is full).
pub(super) const LINK_EVENT_CAPACITY: usize = 1024;

/// Most chunks one vectored write hands the socket.
const MAX_IOV: usize = 16;

/// What the link tasks report to the driver.
#[derive(Debug)]
pub(super) enum LinkEvent {
    /// The listener accepted a connection; with the node ids its certificate names, if it
    /// names any (the link is bound to them before its first bytes).
    Accepted(Stream, SocketAddr, Option<Vec<NodeId>>),
    /// The dial of `LinkId` succeeded; with the node ids the peer's certificate names.
    Connected(LinkId, Stream, Option<Vec<NodeId>>),
    /// The dial of `LinkId` failed.
    ConnectFailed(LinkId, String),
    /// `LinkId` is gone: a write error.
    Closed(LinkId, String),
}

/// Where a link is, as the driver sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// Dialling.
    Connecting,
    /// Connected or accepted; the handshake is under way.
    Handshaking,
    /// The core reported the handshake done.
    Up,
}

impl State {
    pub(super) fn label(self) -> &'static str {
        match self {
            State::Connecting => "connecting",
            State::Handshaking => "handshaking",
            State::Up => "up",
        }
    }
}

struct Entry {
    state: State,
    peer: Option<NodeId>,
    /// The writer's queue; exists from the start so nothing the core transmits is lost.
    writer: mpsc::UnboundedSender<Bytes>,
    /// The writer's end of the queue until the socket exists.
    queue: Option<mpsc::UnboundedReceiver<Bytes>>,
    /// What the core transmitted since the last [`Links::flush`], as the core handed it
    /// over (each `Transmit` already gathers a drain's frames for the link): written with
    /// one vectored write, never copied.
    out: Vec<Bytes>,
    /// The socket's write half once connected: written to directly while the writer task has
    /// nothing left to write (saves a task hop per burst).
    socket: Option<Arc<OwnedWriteHalf>>,
    /// Bytes handed to the writer task so far.
    handed: u64,
    /// Bytes the writer task has written so far.
    written: net::WrittenCounter,
    /// The socket's read half while the driver may read it (it was readable and has not
    /// yet returned `WouldBlock`); `None` while it waits for readiness or before connecting.
    read: Option<ReadSide>,
    /// Cancels the readiness wait holding the read half.
    read_wait: Option<AbortHandle>,
    dial: Option<task::AbortHandle>,
}

/// A read half waiting for readiness; gives it back with its link.
type ReadWait = Abortable<Pin<Box<dyn Future<Output = (LinkId, ReadSide)> + Send>>>;

/// A link's read half.
pub(super) enum ReadSide {
    /// TCP: read by readiness and `try_read_buf`.
    Tcp(OwnedReadHalf),
    /// TLS: the wait itself reads.
    #[cfg(feature = "tls")]
    Tls(Box<TlsRead>),
}

/// A TLS link's read half, its buffer and the result of its last read.
#[cfg(feature = "tls")]
pub(super) struct TlsRead {
    half: tokio::io::ReadHalf<tokio_rustls::TlsStream<tokio::net::TcpStream>>,
    buf: BytesMut,
    last: Option<io::Result<usize>>,
}

/// What [`Links::read_ready`] read.
pub(super) enum Read {
    /// Bytes arrived on the link (a slice of the shared read buffer: the core keeps it as it
    /// is and hands payloads on as slices of it).
    Bytes(LinkId, Bytes),
    /// The link is gone: end of stream or a read error (the reason).
    Closed(LinkId, String),
}

/// What the accept and dial tasks refuse before a connection reaches the core, counted.
#[derive(Debug, Default)]
pub(super) struct Refusals {
    /// Accepted connections dropped at once: `max_pending_handshakes` TLS handshakes were
    /// under way.
    pub(super) tls_pending: AtomicU64,
    /// Connections dropped after the TLS handshake: the peer's certificate names no node id
    /// though one is required, or an invalid one.
    pub(super) no_node_id: AtomicU64,
}

/// The links of one node and their tasks.
pub(super) struct Links {
    /// Link ids are small sequential integers the core hands out: a fast non-keyed hash is
    /// enough (SipHash showed in profiles, one lookup per `Transmit`).
    entries: HashMap<LinkId, Entry, foldhash::fast::FixedState>,
    /// Links whose `out` holds bytes, in the order they first got some.
    dirty: Vec<LinkId>,
    events: mpsc::Sender<LinkEvent>,
    tasks: JoinSet<()>,
    accept: Option<task::AbortHandle>,
    transport: Transport,
    /// Refusals of the accept and dial tasks.
    refusals: Arc<Refusals>,
    /// Read halves waiting for readiness.
    waits: FuturesUnordered<ReadWait>,
    /// Links whose read half is readable, in the order they are read (round robin).
    ready: VecDeque<LinkId>,
    /// The buffer every link is read into; each read is split off it and handed to the core
    /// as it is (no copy), and the buffer grows again when what is left runs low.
    scratch: BytesMut,
}

impl Links {
    pub(super) fn new(events: mpsc::Sender<LinkEvent>, transport: Transport) -> Links {
        Links {
            entries: HashMap::default(),
            dirty: Vec::new(),
            events,
            tasks: JoinSet::new(),
            accept: None,
            transport,
            refusals: Arc::default(),
            waits: FuturesUnordered::new(),
            ready: VecDeque::new(),
            scratch: BytesMut::with_capacity(net::READ_CHUNK),
        }
    }

    /// Starts accepting on `listener`; each connection becomes a [`LinkEvent::Accepted`]
    /// (with TLS once its TLS handshake succeeded, each handshake in a task of its own so a
    /// slow peer holds up no one; a failed one is dropped and never becomes a link). At most
    /// `max_pending` TLS handshakes run at once (each within [`net::CONNECT_TIMEOUT`]): a
    /// connection accepted while that many are under way is closed at once and counted
    /// (`handshakes_refused`), as the core does for its own pending handshakes.
    pub(super) fn spawn_accept(&mut self, listener: TcpListener, max_pending: usize) {
        let events = self.events.clone();
        let transport = self.transport.clone();
        let refusals = Arc::clone(&self.refusals);
        self.accept = Some(self.tasks.spawn(async move {
            // Aborted with the accept task.
            let mut handshakes = JoinSet::new();
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    Some(_) = handshakes.join_next() => continue,
                };
                match accepted {
                    Ok((stream, peer)) if transport.is_tls() => {
                        // Finished handshakes not reaped yet hold no slot.
                        while handshakes.try_join_next().is_some() {}
                        if handshakes.len() >= max_pending {
                            refusals.tls_pending.fetch_add(1, Ordering::Relaxed);
                            warn!(%peer, "refused a connection: too many pending TLS handshakes");
                            drop(stream);
                            continue;
                        }
                        let transport = transport.clone();
                        let events = events.clone();
                        let refusals = Arc::clone(&refusals);
                        handshakes.spawn(async move {
                            let stream = match transport.accept(stream).await {
                                Ok(stream) => stream,
                                Err(e) => {
                                    warn!(%peer, error = %e, "refused a connection: TLS handshake failed");
                                    return;
                                }
                            };
                            match transport.node_identity(&stream) {
                                Ok(ids) => {
                                    let _ = events.send(LinkEvent::Accepted(stream, peer, ids)).await;
                                }
                                Err(e) => {
                                    refusals.no_node_id.fetch_add(1, Ordering::Relaxed);
                                    warn!(%peer, error = %e, "refused a connection: certificate");
                                }
                            }
                        });
                    }
                    Ok((stream, peer)) => {
                        if events
                            .send(LinkEvent::Accepted(Stream::Tcp(stream), peer, None))
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                    Err(e) => {
                        warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        }));
    }

    /// Connections refused before they reached the core: (too many pending TLS handshakes,
    /// certificate without a required or with an invalid node id).
    pub(super) fn refused(&self) -> (u64, u64) {
        (
            self.refusals.tls_pending.load(Ordering::Relaxed),
            self.refusals.no_node_id.load(Ordering::Relaxed),
        )
    }

    /// Stops accepting and releases the listener.
    pub(super) fn stop_accepting(&mut self) {
        if let Some(accept) = self.accept.take() {
            accept.abort();
        }
    }

    /// Starts dialling `addr` for `link` (the core's `Connect`).
    pub(super) fn dial(&mut self, link: LinkId, peer: NodeId, addr: String) {
        debug!(%link, peer = peer.0, %addr, "dialling");
        let events = self.events.clone();
        let transport = self.transport.clone();
        let refusals = Arc::clone(&self.refusals);
        let dial = self.tasks.spawn(async move {
            let event = match transport.dial(&addr).await {
                Ok(stream) => match transport.node_identity(&stream) {
                    Ok(ids) => LinkEvent::Connected(link, stream, ids),
                    Err(e) => {
                        refusals.no_node_id.fetch_add(1, Ordering::Relaxed);
                        LinkEvent::ConnectFailed(link, format!("{addr}: {e}"))
                    }
                },
                Err(e) => LinkEvent::ConnectFailed(link, format!("{addr}: {e}")),
            };
            let _ = events.send(event).await;
        });
        let (writer, queue) = mpsc::unbounded_channel();
        self.entries.insert(
            link,
            Entry {
                state: State::Connecting,
                peer: Some(peer),
                writer,
                queue: Some(queue),
                out: Vec::new(),
                socket: None,
                handed: 0,
                written: net::WrittenCounter::default(),
                read: None,
                read_wait: None,
                dial: Some(dial),
            },
        );
    }

    /// The dial of `link` succeeded: starts its reader and writer. `false` (the stream is
    /// dropped) when the link is no longer wanted.
    pub(super) fn connected(&mut self, link: LinkId, stream: Stream) -> bool {
        let Some(entry) = self.entries.get_mut(&link) else {
            return false;
        };
        if entry.state != State::Connecting {
            return false;
        }
        entry.state = State::Handshaking;
        entry.dial = None;
        let queue = entry.queue.take();
        self.attach(link, stream, queue);
        true
    }

    /// An accepted connection became `link`: starts its reader and writer.
    pub(super) fn accepted(&mut self, link: LinkId, stream: Stream) {
        let (writer, queue) = mpsc::unbounded_channel();
        self.entries.insert(
            link,
            Entry {
                state: State::Handshaking,
                peer: None,
                writer,
                queue: None,
                out: Vec::new(),
                socket: None,
                handed: 0,
                written: net::WrittenCounter::default(),
                read: None,
                read_wait: None,
                dial: None,
            },
        );
        self.attach(link, stream, Some(queue));
    }

    fn attach(
        &mut self,
        link: LinkId,
        stream: Stream,
        queue: Option<mpsc::UnboundedReceiver<Bytes>>,
    ) {
        #[cfg_attr(
            not(feature = "tls"),
            expect(
                clippy::infallible_destructuring_match,
                reason = "one variant without the tls feature"
            )
        )]
        let stream = match stream {
            Stream::Tcp(stream) => stream,
            #[cfg(feature = "tls")]
            Stream::Tls(stream) => return self.attach_tls(link, *stream, queue),
        };
        let _ = stream.set_nodelay(true);
        let (read, write) = stream.into_split();
        let write = Arc::new(write);
        if let Some(queue) = queue {
            let events = self.events.clone();
            let written = self.entries.get(&link).map(|e| Arc::clone(&e.written));
            let socket = Arc::clone(&write);
            self.tasks.spawn(async move {
                let written = written.unwrap_or_default();
                if let Err(e) = net::write_shared_loop(socket, queue, written).await {
                    let _ = events.send(LinkEvent::Closed(link, e.to_string())).await;
                }
            });
        }
        if let Some(entry) = self.entries.get_mut(&link) {
            entry.socket = Some(write);
            arm(&self.waits, entry, link, ReadSide::Tcp(read));
        }
    }

    /// [`Links::attach`] for TLS: the writer task writes everything (`socket` stays `None`).
    #[cfg(feature = "tls")]
    fn attach_tls(
        &mut self,
        link: LinkId,
        stream: tokio_rustls::TlsStream<tokio::net::TcpStream>,
        queue: Option<mpsc::UnboundedReceiver<Bytes>>,
    ) {
        let (read, write) = tokio::io::split(stream);
        if let Some(queue) = queue {
            let events = self.events.clone();
            self.tasks.spawn(async move {
                if let Err(e) = net::write_loop(write, queue).await {
                    let _ = events.send(LinkEvent::Closed(link, e.to_string())).await;
                }
            });
        }
        if let Some(entry) = self.entries.get_mut(&link) {
            let read = TlsRead {
                half: read,
                buf: BytesMut::with_capacity(net::READ_CHUNK),
                last: None,
            };
            arm(&self.waits, entry, link, ReadSide::Tls(Box::new(read)));
        }
    }

    /// Waits until a link's read half is readable (pending forever while none waits; the
    /// caller then re-polls after its next wake-up). Pass what it returns to
    /// [`Links::readable`].
    pub(super) async fn next_readable(&mut self) -> Result<(LinkId, ReadSide), Aborted> {
        match self.waits.next().await {
            Some(woken) => woken,
            None => std::future::pending().await,
        }
    }

    /// A read half became readable: [`Links::read_ready`] reads it from now on (dropped when
    /// the link is gone).
    pub(super) fn readable(&mut self, woken: Result<(LinkId, ReadSide), Aborted>) {
        let Ok((link, read)) = woken else { return };
        if let Some(entry) = self.entries.get_mut(&link) {
            entry.read_wait = None;
            entry.read = Some(read);
            self.ready.push_back(link);
        }
    }

    /// Whether a readable link waits for [`Links::read_ready`].
    pub(super) fn reads_pending(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Reads one chunk from the next readable link (round robin). A link that would block goes
    /// back to waiting for readiness; `None` once no link is readable. After a
    /// [`Read::Closed`] the caller reports the link gone ([`Links::gone`]).
    pub(super) fn read_ready(&mut self) -> Option<Read> {
        while let Some(link) = self.ready.pop_front() {
            let Some(entry) = self.entries.get_mut(&link) else {
                continue;
            };
            let read = match entry.read.as_mut() {
                None => continue,
                Some(ReadSide::Tcp(read)) => read,
                #[cfg(feature = "tls")]
                Some(ReadSide::Tls(tls)) => {
                    let read = match tls.last.take() {
                        Some(Ok(0)) => Read::Closed(link, String::from("end of stream")),
                        Some(Ok(_)) => Read::Bytes(link, tls.buf.split().freeze()),
                        Some(Err(e)) => Read::Closed(link, e.to_string()),
                        None => continue,
                    };
                    if matches!(read, Read::Bytes(..))
                        && let Some(side) = entry.read.take()
                    {
                        arm(&self.waits, entry, link, side);
                    }
                    return Some(read);
                }
            };
            if self.scratch.capacity() < net::READ_CHUNK / 4 {
                self.scratch.reserve(net::READ_CHUNK);
            }
            match read.try_read_buf(&mut self.scratch) {
                Ok(0) => return Some(Read::Closed(link, String::from("end of stream"))),
                Ok(_) => {
                    self.ready.push_back(link);
                    return Some(Read::Bytes(link, self.scratch.split().freeze()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if let Some(read) = entry.read.take() {
                        arm(&self.waits, entry, link, read);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => self.ready.push_front(link),
                Err(e) => return Some(Read::Closed(link, e.to_string())),
            }
        }
        None
    }

    /// Adds `bytes` to what `link` writes at the next [`Links::flush`] (dropped for an
    /// unknown link).
    pub(super) fn transmit(&mut self, link: LinkId, bytes: Bytes) {
        if bytes.is_empty() {
            return;
        }
        if let Some(entry) = self.entries.get_mut(&link) {
            if entry.out.is_empty() {
                self.dirty.push(link);
            }
            entry.out.push(bytes);
        }
    }

    /// Hands each link's gathered transmits to its writer, one chunk per link.
    pub(super) fn flush(&mut self) {
        for link in self.dirty.drain(..) {
            if let Some(entry) = self.entries.get_mut(&link) {
                push_out(entry);
            }
        }
    }

    /// The core finished `link`'s handshake with `peer`.
    pub(super) fn mark_up(&mut self, link: LinkId, peer: NodeId) {
        if let Some(entry) = self.entries.get_mut(&link) {
            entry.state = State::Up;
            entry.peer = Some(peer);
        }
    }

    /// The core closed `link`: the writer flushes what is queued, then closes; reading and
    /// any dial stop.
    pub(super) fn close(&mut self, link: LinkId) {
        if let Some(mut entry) = self.entries.remove(&link) {
            debug!(%link, peer = entry.peer.map(|p| p.0), "closing link");
            push_out(&mut entry);
            stop(entry);
        }
        self.reap();
    }

    /// The transport lost `link` (or its dial failed). Returns whether the table held it (the
    /// core must then be told).
    pub(super) fn gone(&mut self, link: LinkId) -> bool {
        let held = self.entries.remove(&link).map(stop).is_some();
        self.reap();
        held
    }

    /// Closes every link and waits up to `flush` for the writers to write what they hold.
    pub(super) async fn close_all(&mut self, flush: Duration) {
        self.stop_accepting();
        self.flush();
        for (_, entry) in self.entries.drain() {
            stop(entry);
        }
        let tasks = &mut self.tasks;
        let _ =
            tokio::time::timeout(flush, async { while tasks.join_next().await.is_some() {} }).await;
        self.tasks.abort_all();
    }

    /// Links by state label.
    pub(super) fn count_by_state(&self) -> impl Iterator<Item = State> + '_ {
        self.entries.values().map(|e| e.state)
    }

    fn reap(&mut self) {
        while self.tasks.try_join_next().is_some() {}
    }
}

/// Writes what `entry` gathered: straight to the socket (one vectored write per
/// [`MAX_IOV`] chunks) when the writer task has written everything it was handed (no
/// reordering possible), the rest (or all of it) through the writer task, which also reports
/// a write error. No byte is copied on either path.
fn push_out(entry: &mut Entry) {
    if entry.out.is_empty() {
        return;
    }
    let mut done = 0;
    if let Some(socket) = &entry.socket
        && entry.written.load(Ordering::Acquire) == entry.handed
    {
        done = write_direct(socket, &mut entry.out);
    }
    for chunk in entry.out.drain(..).skip(done) {
        entry.handed += chunk.len() as u64;
        let _ = entry.writer.send(chunk);
    }
}

/// Writes the front of `out` to `socket` until it would block; returns how many chunks were
/// written whole (the first chunk after them is advanced past what was written of it).
fn write_direct(socket: &OwnedWriteHalf, out: &mut [Bytes]) -> usize {
    let mut done = 0;
    while done < out.len() {
        let batch = &out[done..out.len().min(done + MAX_IOV)];
        let mut iov = [io::IoSlice::new(&[]); MAX_IOV];
        for (slot, chunk) in iov.iter_mut().zip(batch) {
            *slot = io::IoSlice::new(chunk);
        }
        let result = if batch.len() == 1 {
            socket.try_write(&batch[0])
        } else {
            socket.try_write_vectored(&iov[..batch.len()])
        };
        let mut written = match result {
            Ok(n) => n,
            // Would block: the writer task waits for room. Any other error: the writer task
            // meets it too and reports the link closed.
            Err(_) => return done,
        };
        for chunk in &mut out[done..] {
            if written < chunk.len() {
                bytes::Buf::advance(chunk, written);
                return done;
            }
            written -= chunk.len();
            done += 1;
            if written == 0 {
                break;
            }
        }
    }
    done
}

/// Puts `read` to wait for readiness (TLS: reads into its buffer); `entry` keeps the handle
/// that cancels the wait.
fn arm(waits: &FuturesUnordered<ReadWait>, entry: &mut Entry, link: LinkId, read: ReadSide) {
    let (handle, registration) = AbortHandle::new_pair();
    let wait: Pin<Box<dyn Future<Output = (LinkId, ReadSide)> + Send>> = match read {
        ReadSide::Tcp(read) => Box::pin(async move {
            // A readiness error shows again on the read, which reports it.
            let _ = read.readable().await;
            (link, ReadSide::Tcp(read))
        }),
        #[cfg(feature = "tls")]
        ReadSide::Tls(mut tls) => Box::pin(async move {
            use tokio::io::AsyncReadExt;
            if tls.buf.capacity() < net::READ_CHUNK / 4 {
                tls.buf.reserve(net::READ_CHUNK);
            }
            let TlsRead { half, buf, last } = &mut *tls;
            *last = Some(half.read_buf(buf).await);
            (link, ReadSide::Tls(tls))
        }),
    };
    waits.push(Abortable::new(wait, registration));
    entry.read_wait = Some(handle);
}

/// Stops a link's reading and dial (dropping its read half); dropping the entry drops the
/// writer's queue, so the writer ends after writing what it holds.
fn stop(entry: Entry) {
    if let Some(wait) = entry.read_wait {
        wait.abort();
    }
    if let Some(dial) = entry.dial {
        dial.abort();
    }
}
