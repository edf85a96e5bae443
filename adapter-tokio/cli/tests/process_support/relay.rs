//! A TCP relay on 127.0.0.1 in front of one address: every accepted connection is joined to a
//! fresh connection to the upstream, bytes copied both ways on two threads. [`Relay::cut`]
//! drops every connection it carries at once (both ends see the link close) while the
//! processes on either side live on — a path failure, not a death — and new connections go
//! through again at once; [`Relay::cut_and_refuse`] also refuses new connections for a while
//! (accepted and closed at once, as a restarting proxy or a firewall reload would). A node
//! advertises the relay's address (`--advertise`) so its peers dial through it.

use std::{
    io::{Read, Write},
    net::{Shutdown, SocketAddr, TcpListener, TcpStream},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread::{self, JoinHandle},
    time::{Duration, Instant},
};

/// One relayed connection: both sockets, and whether both pumps still run.
struct Carried {
    inbound: TcpStream,
    outbound: TcpStream,
    alive: Arc<AtomicBool>,
}

/// A running relay; stops (and drops what it carries) when dropped.
pub struct Relay {
    /// Where it listens.
    pub addr: SocketAddr,
    open: Arc<Mutex<Vec<Carried>>>,
    stop: Arc<AtomicBool>,
    /// New connections are refused until then.
    refuse_until: Arc<Mutex<Option<Instant>>>,
    cuts: AtomicU64,
    acceptor: Option<JoinHandle<()>>,
}

impl Relay {
    /// Listens on a free port of 127.0.0.1 and relays to `upstream`.
    ///
    /// # Panics
    ///
    /// No port to listen on.
    #[must_use]
    pub fn start(upstream: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a relay port");
        let addr = listener.local_addr().expect("the relay's address");
        let open = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let refuse_until: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
        let acceptor = {
            let (open, stop) = (Arc::clone(&open), Arc::clone(&stop));
            let refuse = Arc::clone(&refuse_until);
            thread::spawn(move || {
                for inbound in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(inbound) = inbound else { continue };
                    let refused = refuse
                        .lock()
                        .expect("relay lock")
                        .is_some_and(|until| Instant::now() < until);
                    if refused {
                        let _ = inbound.shutdown(Shutdown::Both);
                        continue;
                    }
                    // Upstream down (its process restarting): refuse by closing at once.
                    let Ok(outbound) =
                        TcpStream::connect_timeout(&upstream, Duration::from_secs(1))
                    else {
                        continue;
                    };
                    join(inbound, outbound, &open);
                }
            })
        };
        Relay {
            addr,
            open,
            stop,
            refuse_until,
            cuts: AtomicU64::new(0),
            acceptor: Some(acceptor),
        }
    }

    /// Drops every connection the relay carries now (both halves of each shut down); returns
    /// how many were still open, so a test can tell a cut that dropped something from one
    /// that found nothing to drop.
    pub fn cut(&self) -> usize {
        let carried = std::mem::take(&mut *self.open.lock().expect("relay lock"));
        let mut live = 0;
        for c in &carried {
            if c.alive.load(Ordering::SeqCst) {
                live += 1;
            }
            let _ = c.inbound.shutdown(Shutdown::Both);
            let _ = c.outbound.shutdown(Shutdown::Both);
        }
        self.cuts.fetch_add(1, Ordering::SeqCst);
        live
    }

    /// [`cut`](Self::cut), and every connection accepted in the next `refuse` is closed at
    /// once (a refused redial while both processes live); returns what the cut dropped.
    pub fn cut_and_refuse(&self, refuse: Duration) -> usize {
        *self.refuse_until.lock().expect("relay lock") = Some(Instant::now() + refuse);
        self.cut()
    }

    /// Cuts made so far.
    #[must_use]
    pub fn cuts(&self) -> u64 {
        self.cuts.load(Ordering::SeqCst)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the acceptor so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        let _ = self.cut();
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Copies both ways between `a` and `b` on two threads; both are kept in `open` for a cut.
fn join(a: TcpStream, b: TcpStream, open: &Mutex<Vec<Carried>>) {
    let _ = a.set_nodelay(true);
    let _ = b.set_nodelay(true);
    let (Ok(a2), Ok(b2), Ok(a3), Ok(b3)) =
        (a.try_clone(), b.try_clone(), a.try_clone(), b.try_clone())
    else {
        return;
    };
    let alive = Arc::new(AtomicBool::new(true));
    open.lock().expect("relay lock").push(Carried {
        inbound: a3,
        outbound: b3,
        alive: Arc::clone(&alive),
    });
    let alive2 = Arc::clone(&alive);
    thread::spawn(move || pump(a, b, &alive));
    thread::spawn(move || pump(b2, a2, &alive2));
}

/// Copies `from` into `to` until either side closes, then shuts both down and marks the
/// connection closed.
fn pump(mut from: TcpStream, mut to: TcpStream, alive: &AtomicBool) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    alive.store(false, Ordering::SeqCst);
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
