//! The baseline: a raw tokio length-delimited echo over loopback TCP.
//!
//! [`EchoServer`] accepts connections and, per connection, reads whatever the socket has,
//! splits it into frames ([`super::frame`]) and writes every echo of that read back in one
//! `write_all` — the batching a well-written framed server gets from `Framed` (feed, then
//! flush when the input runs dry). [`run_baseline`] is the client: one connection, a sender
//! task driven by the load module's `drive` loop and a reader task that matches each echo to its send
//! instant (carried in the payload) and returns the window permit. The sender either appends
//! frames to one buffer and writes it when it would otherwise wait
//! ([`ClientWrites::Batched`], the baseline proper) or writes every frame at once
//! ([`ClientWrites::PerMessage`], what `SinkExt::send` on a `Framed` does: one write per
//! message) — the second is reported for context only.

use std::{
    collections::BTreeMap,
    io,
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::BytesMut;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{
        TcpListener, TcpStream,
        tcp::{OwnedReadHalf, OwnedWriteHalf},
    },
    sync::Semaphore,
    task::JoinHandle,
};

use super::{
    BenchError,
    frame::{self, END_OF_RUN},
    load::{Load, RequestSink, RunOutcome, drive},
    stats::Latencies,
};

/// Socket read buffer size for both ends.
const READ_CHUNK: usize = 64 * 1024;
/// The sender writes once its buffer holds this much even if it could keep going.
const WRITE_CHUNK: usize = 64 * 1024;

/// A running echo server; stops accepting when dropped (open connections end when their
/// client closes).
#[derive(Debug)]
pub struct EchoServer {
    local_addr: SocketAddr,
    accept_task: JoinHandle<()>,
}

impl EchoServer {
    /// Binds `addr` (port 0 = any free port) and starts accepting.
    ///
    /// # Errors
    ///
    /// The bind failed.
    pub async fn bind(addr: SocketAddr) -> io::Result<EchoServer> {
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let accept_task = tokio::spawn(async move {
            // Accept errors (descriptor exhaustion, ...) end the server; the client then sees
            // a refused connection and reports it.
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    // A connection error only ends this connection; the client reports the
                    // missing echoes.
                    let _ = echo_connection(stream).await;
                });
            }
        });
        Ok(EchoServer {
            local_addr,
            accept_task,
        })
    }

    /// The address it listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

/// Echoes every frame of `stream` until the peer closes it.
async fn echo_connection(stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let (mut rd, mut wr) = stream.into_split();
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut output = BytesMut::with_capacity(READ_CHUNK);
    loop {
        if rd.read_buf(&mut input).await? == 0 {
            return Ok(());
        }
        while let Some(payload) = frame::split(&mut input).map_err(invalid_data)? {
            frame::encode(&mut output, &payload);
        }
        if !output.is_empty() {
            wr.write_all(&output).await?;
            output.clear();
        }
        input.reserve(READ_CHUNK / 2);
    }
}

fn invalid_data(e: frame::FrameTooLong) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// How the baseline client writes its frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientWrites {
    /// Appended to a buffer, written when the sender would wait or the buffer holds 64 KiB.
    Batched,
    /// One `write_all` per frame.
    PerMessage,
}

/// One measured baseline run against the echo server at `server`: connects (not timed),
/// sends 64-byte frames per `load`, and measures each echo's round trip.
///
/// # Errors
///
/// Connecting, writing or reading failed, or the server closed the connection early.
pub async fn run_baseline(
    server: SocketAddr,
    load: &Load,
    writes: ClientWrites,
) -> Result<RunOutcome, BenchError> {
    let stream = TcpStream::connect(server)
        .await
        .map_err(|e| BenchError::io("connect to the echo server", e))?;
    stream
        .set_nodelay(true)
        .map_err(|e| BenchError::io("set TCP_NODELAY", e))?;
    let (rd, wr) = stream.into_split();
    let window = Arc::new(Semaphore::new(load.in_flight));
    let epoch = Instant::now();
    let reader = tokio::spawn(read_echoes(
        rd,
        Arc::clone(&window),
        epoch,
        load.expected_requests(),
    ));
    let mut sink = EchoSink {
        wr,
        out: BytesMut::with_capacity(WRITE_CHUNK * 2),
        epoch,
        seq: 0,
        writes,
    };
    let (started, sent) = drive(&mut sink, load, &window).await?;
    sink.push(epoch.elapsed(), END_OF_RUN);
    sink.write_out().await?;
    let echoes = reader
        .await
        .map_err(|e| BenchError::Task(e.to_string()))??;
    if echoes.completed + echoes.corrupt != sent {
        return Err(BenchError::BaselineShort {
            sent,
            echoed: echoes.completed + echoes.corrupt,
        });
    }
    let mut failures = BTreeMap::new();
    if echoes.corrupt > 0 {
        failures.insert("corrupt_echo".to_owned(), echoes.corrupt);
    }
    Ok(RunOutcome {
        sent,
        completed: echoes.completed,
        failed: echoes.corrupt,
        failures,
        elapsed: echoes.last_at.saturating_duration_since(started),
        latencies: echoes.latencies,
    })
}

/// The baseline client's sending half.
struct EchoSink {
    wr: OwnedWriteHalf,
    out: BytesMut,
    epoch: Instant,
    seq: u64,
    writes: ClientWrites,
}

impl EchoSink {
    fn push(&mut self, sent_at: Duration, seq: u64) {
        let mut payload = [0u8; 64];
        let sent_at_ns = u64::try_from(sent_at.as_nanos()).unwrap_or(u64::MAX);
        frame::fill_payload(&mut payload, sent_at_ns, seq);
        frame::encode(&mut self.out, &payload);
    }

    async fn write_out(&mut self) -> Result<(), BenchError> {
        if !self.out.is_empty() {
            self.wr
                .write_all(&self.out)
                .await
                .map_err(|e| BenchError::io("write to the echo server", e))?;
            self.out.clear();
        }
        Ok(())
    }
}

impl RequestSink for EchoSink {
    async fn send(&mut self, sent_at: Instant) -> Result<(), BenchError> {
        let seq = self.seq;
        self.seq += 1;
        self.push(sent_at.duration_since(self.epoch), seq);
        if self.writes == ClientWrites::PerMessage || self.out.len() >= WRITE_CHUNK {
            self.write_out().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), BenchError> {
        self.write_out().await
    }
}

/// What the reader saw.
struct Echoes {
    completed: u64,
    corrupt: u64,
    last_at: Instant,
    latencies: Latencies,
}

/// Reads echoes until the end-of-run frame, recording each round trip and returning its
/// window permit.
async fn read_echoes(
    mut rd: OwnedReadHalf,
    window: Arc<Semaphore>,
    epoch: Instant,
    expected: usize,
) -> Result<Echoes, BenchError> {
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut echoes = Echoes {
        completed: 0,
        corrupt: 0,
        last_at: epoch,
        latencies: Latencies::with_capacity(expected),
    };
    loop {
        let n = rd
            .read_buf(&mut input)
            .await
            .map_err(|e| BenchError::io("read from the echo server", e))?;
        if n == 0 {
            return Err(BenchError::BaselineClosed);
        }
        while let Some(payload) = frame::split(&mut input).map_err(BenchError::BaselineFrame)? {
            let now = Instant::now();
            match frame::parse_payload(&payload) {
                Some((_, END_OF_RUN)) => return Ok(echoes),
                Some((sent_at_ns, _)) => {
                    let sent_at = epoch + Duration::from_nanos(sent_at_ns);
                    echoes
                        .latencies
                        .record(now.saturating_duration_since(sent_at));
                    echoes.completed += 1;
                    echoes.last_at = now;
                }
                None => echoes.corrupt += 1,
            }
            window.add_permits(1);
        }
        input.reserve(READ_CHUNK / 2);
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::transport::load::Stop;

    const LOOPBACK: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

    #[tokio::test]
    async fn echo_server_returns_each_frame_byte_for_byte() {
        let server = EchoServer::bind(LOOPBACK).await.expect("bind");
        let mut stream = TcpStream::connect(server.local_addr())
            .await
            .expect("connect");
        let mut out = BytesMut::new();
        frame::encode(&mut out, b"first");
        frame::encode(&mut out, &[7u8; 64]);
        stream.write_all(&out).await.expect("write");
        let mut back = vec![0u8; out.len()];
        tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut back))
            .await
            .expect("echo within 5 s")
            .expect("read");
        assert_eq!(back, out.to_vec());
    }

    #[tokio::test]
    async fn counted_windowed_run_completes_every_request() {
        let server = EchoServer::bind(LOOPBACK).await.expect("bind");
        let load = Load {
            in_flight: 16,
            rate_per_sec: None,
            stop: Stop::Count(1000),
        };
        for writes in [ClientWrites::Batched, ClientWrites::PerMessage] {
            let run = tokio::time::timeout(
                Duration::from_secs(20),
                run_baseline(server.local_addr(), &load, writes),
            )
            .await
            .expect("bounded")
            .expect("run");
            assert_eq!(run.sent, 1000, "{writes:?}");
            assert_eq!(run.completed, 1000, "{writes:?}");
            assert_eq!(run.failed, 0, "{writes:?}");
            assert_eq!(run.latencies.len(), 1000, "{writes:?}");
        }
    }

    #[tokio::test]
    async fn paced_run_sends_the_schedule() {
        let server = EchoServer::bind(LOOPBACK).await.expect("bind");
        let load = Load {
            in_flight: 64,
            rate_per_sec: Some(2000),
            stop: Stop::Count(100),
        };
        let run = tokio::time::timeout(
            Duration::from_secs(20),
            run_baseline(server.local_addr(), &load, ClientWrites::Batched),
        )
        .await
        .expect("bounded")
        .expect("run");
        assert_eq!(run.completed, 100);
        // 100 messages at 2000/s: the last is due 49.5 ms after the first.
        assert!(
            run.elapsed >= Duration::from_micros(49_500),
            "{:?}",
            run.elapsed
        );
    }

    #[tokio::test]
    async fn oversized_frame_closes_the_connection() {
        let server = EchoServer::bind(LOOPBACK).await.expect("bind");
        let mut stream = TcpStream::connect(server.local_addr())
            .await
            .expect("connect");
        stream
            .write_all(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3])
            .await
            .expect("write");
        let mut back = Vec::new();
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut back))
            .await
            .expect("closed within 5 s")
            .expect("clean close");
        assert_eq!(n, 0);
    }
}
