//! Socket plumbing shared by the node driver and the embedded registry: binding a listener
//! that a restarted process can take over at once, dialling with a timeout, the writer tasks
//! of links and registry connections and the reader tasks of registry connections, and the
//! process facts a node's config is completed with (entropy, host name).
//!
//! A reader task reads into a reusable buffer and hands each chunk to its owner over a bounded
//! channel (a full channel stops the reads: that is the backpressure on the socket). A writer
//! task takes the byte strings its owner queues, gathers whatever is queued into one buffer,
//! writes it, and when its owner drops the queue it writes what is left and closes its half of
//! the connection (a FIN: the peer reads everything, then end of stream).

use std::{
    collections::hash_map::RandomState,
    hash::BuildHasher,
    io,
    net::SocketAddr,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use bytes::{Bytes, BytesMut};
use switchboard_core::{
    NonceEntropy, config::host_name, discovery::address::tcp_host_port, rng::entropy_seed,
};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::{TcpListener, TcpSocket, TcpStream, tcp::OwnedWriteHalf},
    sync::mpsc,
};

/// Bytes a reader asks the socket for at once.
pub(crate) const READ_CHUNK: usize = 64 * 1024;
/// A writer stops gathering queued chunks into one write past this many bytes.
pub(crate) const WRITE_BATCH: usize = 256 * 1024;
/// Buffers of one registry connection: its reader asks for this much at once and its writer
/// keeps at most this much gathering room between bursts. A registry holds a connection per
/// node, each mostly idle: with a link's buffers a thousand of them held over 100 MiB.
pub(crate) const REGISTRY_BUFFER: usize = 8 * 1024;
/// How long a dial may take before it counts as failed.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Pending connections a listener keeps.
const BACKLOG: u32 = 1024;
/// How long [`bind_listener`] keeps retrying an address still held by a listener that is
/// being torn down (a registry or node killed in the same process a moment ago).
const REBIND_WINDOW: Duration = Duration::from_secs(2);

/// Binds a listener with `SO_REUSEADDR`, so an address left in `TIME_WAIT` by a previous
/// process (or a registry killed in this one) can be bound again at once. `AddrInUse` is
/// retried for up to two seconds: a listener dropped by an aborted task is released only when
/// the runtime drops that task.
///
/// # Errors
///
/// The socket could not be created or bound, or the address stayed in use.
pub(crate) async fn bind_listener(addr: SocketAddr) -> io::Result<TcpListener> {
    let deadline = tokio::time::Instant::now() + REBIND_WINDOW;
    loop {
        match try_bind(addr) {
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                if tokio::time::Instant::now() >= deadline {
                    return Err(e);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => return other,
        }
    }
}

fn try_bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Dials `addr` (`host:port`, optionally behind a scheme, see
/// [`tcp_host_port`]) within
/// [`CONNECT_TIMEOUT`], with `TCP_NODELAY` set.
///
/// # Errors
///
/// An unparsable address, a refused or unreachable peer, or the timeout.
pub(crate) async fn dial(addr: &str) -> io::Result<TcpStream> {
    let target = tcp_host_port(addr).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a TCP address: {addr:?}"),
        )
    })?;
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(target))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Sleeps until `deadline`, or forever when there is none (a `select!` branch for a driver's
/// next timer).
pub(crate) async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Fresh entropy — the process's randomly keyed hasher, the wall clock, the pid — mixed by
/// the core ([`entropy_seed`]).
#[must_use]
pub(crate) fn entropy() -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH);
    let nanos = nanos.map_or(0, |d| d.as_nanos());
    entropy_seed(RandomState::new().hash_one(()), nanos, std::process::id())
}

/// 32 bytes from the operating system's random source for the handshake nonces
/// ([`NonceEntropy`]). Should the OS refuse (it does not on Linux after boot), the process's
/// randomly keyed hashers stand in, and a warning says so.
#[must_use]
pub(crate) fn nonce_entropy() -> NonceEntropy {
    let mut bytes = [0u8; 32];
    if let Err(error) = getrandom::getrandom(&mut bytes) {
        tracing::warn!(%error, "no OS randomness for handshake nonces; using the keyed hasher");
        for (i, chunk) in bytes.chunks_exact_mut(8).enumerate() {
            chunk.copy_from_slice(&RandomState::new().hash_one(i).to_le_bytes());
        }
    }
    NonceEntropy(bytes)
}

/// This host's name from `/proc/sys/kernel/hostname`, then `$HOSTNAME` ([`host_name`]).
pub(crate) fn hostname() -> String {
    let proc = std::fs::read_to_string("/proc/sys/kernel/hostname").ok();
    let env = std::env::var("HOSTNAME").ok();
    host_name([proc.as_deref(), env.as_deref()])
}

/// Reads `read` until end of stream or an error, asking the socket for `chunk` bytes at once
/// (an idle reader holds at most that much buffer); each chunk read goes out as
/// `bytes(chunk)`, the end as `closed(reason)`. Returns early when the owner dropped the
/// channel.
pub(crate) async fn read_loop<E>(
    mut read: impl AsyncRead + Unpin,
    events: mpsc::Sender<E>,
    bytes: impl Fn(Bytes) -> E,
    closed: impl FnOnce(String) -> E,
    chunk: usize,
) {
    let mut buf = BytesMut::with_capacity(chunk);
    let reason = loop {
        if buf.capacity() < chunk / 4 {
            buf.reserve(chunk);
        }
        match read.read_buf(&mut buf).await {
            Ok(0) => break String::from("end of stream"),
            Ok(_) => {
                if events.send(bytes(buf.split().freeze())).await.is_err() {
                    return;
                }
            }
            Err(e) => break e.to_string(),
        }
    };
    let _ = events.send(closed(reason)).await;
}

/// Writes what the owner queues on `queue` (a link's writer: see `write_loop_keeping`).
///
/// # Errors
///
/// The first write error (the owner learns of it from the returned value).
#[cfg(feature = "tls")]
pub(crate) async fn write_loop(
    write: impl AsyncWrite + Unpin,
    queue: mpsc::UnboundedReceiver<Bytes>,
) -> io::Result<()> {
    write_loop_keeping(write, queue, 4 * WRITE_BATCH).await
}

/// Writes what the owner queues on `queue`, gathering every chunk already queued into one
/// write; when the owner drops the queue, writes the rest and shuts the write half down.
/// Keeps at most `keep` bytes of gathering room after a write (a larger batch buffer is
/// given back).
///
/// # Errors
///
/// The first write error (the owner learns of it from the returned value).
pub(crate) async fn write_loop_keeping(
    mut write: impl AsyncWrite + Unpin,
    mut queue: mpsc::UnboundedReceiver<Bytes>,
    keep: usize,
) -> io::Result<()> {
    let mut batch: Vec<u8> = Vec::new();
    while let Some(first) = queue.recv().await {
        match queue.try_recv() {
            Ok(second) => {
                batch.clear();
                batch.extend_from_slice(&first);
                batch.extend_from_slice(&second);
                while batch.len() < WRITE_BATCH {
                    match queue.try_recv() {
                        Ok(more) => batch.extend_from_slice(&more),
                        Err(_) => break,
                    }
                }
                write.write_all(&batch).await?;
                if batch.capacity() > keep {
                    batch = Vec::new();
                }
            }
            Err(_) => write.write_all(&first).await?,
        }
    }
    write.shutdown().await
}

/// Bytes a link writer has written, shared with the one who queues for it: everything queued
/// is written when this equals what was queued, and the owner may then write to the socket
/// itself without reordering anything.
pub(crate) type WrittenCounter = std::sync::Arc<std::sync::atomic::AtomicU64>;

/// Like `write_loop_keeping`, for a write half its owner may also write to directly (see
/// [`WrittenCounter`]): waits for readiness and uses `try_write` (which takes `&self`), and
/// adds what it wrote to `written` after each chunk. When the owner drops the queue the loop
/// ends; the write half shuts down when its last holder drops it.
///
/// # Errors
///
/// The first write error.
pub(crate) async fn write_shared_loop(
    write: std::sync::Arc<OwnedWriteHalf>,
    mut queue: mpsc::UnboundedReceiver<Bytes>,
    written: WrittenCounter,
) -> io::Result<()> {
    let mut batch: Vec<u8> = Vec::new();
    while let Some(first) = queue.recv().await {
        match queue.try_recv() {
            Ok(second) => {
                batch.clear();
                batch.extend_from_slice(&first);
                batch.extend_from_slice(&second);
                while batch.len() < WRITE_BATCH {
                    match queue.try_recv() {
                        Ok(more) => batch.extend_from_slice(&more),
                        Err(_) => break,
                    }
                }
                write_all_shared(&write, &batch).await?;
                written.fetch_add(batch.len() as u64, std::sync::atomic::Ordering::Release);
                if batch.capacity() > 4 * WRITE_BATCH {
                    batch = Vec::new();
                }
            }
            Err(_) => {
                write_all_shared(&write, &first).await?;
                written.fetch_add(first.len() as u64, std::sync::atomic::Ordering::Release);
            }
        }
    }
    Ok(())
}

async fn write_all_shared(write: &OwnedWriteHalf, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        write.writable().await?;
        match write.try_write(buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_differs_between_calls() {
        assert_ne!(entropy(), entropy());
    }
}
