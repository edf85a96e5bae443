//! One non-blocking TCP connection on the poll: its stream, its bounded outgoing buffer and
//! the interest it is registered with.
//!
//! mio readiness is edge-triggered, so a connection is read until `WouldBlock` (or until the
//! driver's budget, which then remembers to come back) and written until its buffer is empty
//! or the socket says `WouldBlock`. While bytes are left over the connection is registered
//! for `WRITABLE` as well as `READABLE`; once the buffer drains it goes back to `READABLE`.
//! A dial in progress is registered for both: `WRITABLE` is how mio reports its completion.

use std::{
    io::{self, Read, Write},
    net::Shutdown,
};

use mio::{Interest, Registry, Token, net::TcpStream};
use switchboard_core::time::Instant;

/// Largest number of bytes a connection may hold unwritten. The core bounds what it
/// transmits (pending and unacknowledged messages count against each target's limits, and a
/// peer that stops reading is closed by its heartbeat); a buffer past this cap means the peer
/// is not reading at all, and the driver closes the link — the core then re-routes or fails
/// its messages as for any lost link.
pub const MAX_OUT_BUFFER: usize = 32 * 1024 * 1024;

/// Where the connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// A dial in progress; it counts as failed at `deadline`.
    Dialing {
        /// When the dial is given up.
        deadline: Instant,
    },
    /// Connected (or accepted).
    Open,
}

/// What one read gave.
#[derive(Debug)]
pub(crate) enum Chunk {
    /// This many bytes, at the start of the scratch buffer.
    Data(usize),
    /// The socket has nothing more for now (`WouldBlock`).
    Drained,
    /// End of stream or a read error: the connection is gone.
    Lost,
}

/// The outcome of checking a dial on a readiness event.
#[derive(Debug)]
pub(crate) enum DialCheck {
    /// The connection is established.
    Connected,
    /// Not decided yet (a spurious wake-up).
    Pending,
    /// The dial failed.
    Failed,
}

/// A connection and its outgoing buffer.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) stream: TcpStream,
    pub(crate) state: State,
    token: Token,
    /// Bytes queued; `out[sent..]` is still to be written.
    out: Vec<u8>,
    sent: usize,
    /// Whether the registration includes `WRITABLE`.
    writable: bool,
}

impl Conn {
    /// Registers an accepted (or already connected) stream for reading.
    pub(crate) fn open(
        registry: &Registry,
        mut stream: TcpStream,
        token: Token,
    ) -> io::Result<Conn> {
        registry.register(&mut stream, token, Interest::READABLE)?;
        let _ = stream.set_nodelay(true);
        Ok(Conn {
            stream,
            state: State::Open,
            token,
            out: Vec::new(),
            sent: 0,
            writable: false,
        })
    }

    /// Registers a stream whose non-blocking connect is in progress.
    pub(crate) fn dialing(
        registry: &Registry,
        mut stream: TcpStream,
        token: Token,
        deadline: Instant,
    ) -> io::Result<Conn> {
        registry.register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)?;
        Ok(Conn {
            stream,
            state: State::Dialing { deadline },
            token,
            out: Vec::new(),
            sent: 0,
            writable: true,
        })
    }

    /// Whether the dial finished, on a readiness event of a dialling connection.
    pub(crate) fn check_dial(&mut self) -> DialCheck {
        match self.stream.take_error() {
            Ok(Some(_)) | Err(_) => return DialCheck::Failed,
            Ok(None) => {}
        }
        match self.stream.peer_addr() {
            Ok(_) => {
                self.state = State::Open;
                let _ = self.stream.set_nodelay(true);
                DialCheck::Connected
            }
            Err(e) if e.kind() == io::ErrorKind::NotConnected => DialCheck::Pending,
            Err(_) => DialCheck::Failed,
        }
    }

    /// The poll token the connection is registered with.
    pub(crate) fn token(&self) -> Token {
        self.token
    }

    /// Bytes queued and not yet written.
    pub(crate) fn queued(&self) -> usize {
        self.out.len() - self.sent
    }

    /// Appends `bytes` to the outgoing buffer. `false` (nothing queued) if that would pass
    /// [`MAX_OUT_BUFFER`].
    pub(crate) fn queue(&mut self, bytes: &[u8]) -> bool {
        if self.queued() + bytes.len() > MAX_OUT_BUFFER {
            return false;
        }
        if self.sent > 0 && self.sent >= self.out.len() / 2 {
            self.out.drain(..self.sent);
            self.sent = 0;
        }
        self.out.extend_from_slice(bytes);
        true
    }

    /// Writes the buffer until it is empty or the socket would block, then registers
    /// `WRITABLE` interest exactly while bytes are left. Nothing is written while dialling.
    pub(crate) fn flush(&mut self, registry: &Registry) -> io::Result<()> {
        if self.state != State::Open {
            return Ok(());
        }
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
            if self.out.capacity() > 4 * 1024 * 1024 {
                self.out = Vec::new();
            }
        }
        let want = self.queued() > 0;
        if want != self.writable {
            let interest = if want {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            registry.reregister(&mut self.stream, self.token, interest)?;
            self.writable = want;
        }
        Ok(())
    }

    /// Reads one chunk into `scratch`.
    pub(crate) fn read_chunk(&mut self, scratch: &mut [u8]) -> Chunk {
        loop {
            match self.stream.read(scratch) {
                Ok(0) => return Chunk::Lost,
                Ok(n) => return Chunk::Data(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Chunk::Drained,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Chunk::Lost,
            }
        }
    }

    /// Stops sending (a FIN after the written bytes) and keeps the read side open.
    pub(crate) fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    /// Takes the stream off the poll (it closes when dropped).
    pub(crate) fn deregister(&mut self, registry: &Registry) {
        let _ = registry.deregister(&mut self.stream);
    }
}
