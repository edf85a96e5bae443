//! Harness for the process-level tests: runs the real `switchboard` binary on 127.0.0.1.
//!
//! [`Proc`] owns one child process: its stdout is read line by line on a thread (so the first
//! line, the JSON ready line, can be awaited with a bound), its stderr is drained into a
//! bounded tail on another thread (so the child never blocks on a full pipe and a failing test
//! can show what it logged). Every process is killed with SIGKILL when its `Proc` drops, so no
//! process outlives its test, and every wait here is bounded.
//!
//! [`cluster`] starts registries and nodes with the CLI's flags and parses their ready lines;
//! [`load`] runs `switchboard load` and checks its summary; [`rpc_chaos`] is happy-server's
//! chaos matrix (calls, loads by method, broadcasts); [`http`] reads `/metrics` and
//! `/status` from a node's admin port; [`scenario`] is the proxy-and-two-leaves cluster every
//! test starts from (and the kill tests' repeat rule); [`figures`] measures outcome times from a load's outcomes log against
//! the test's own instants; [`etcd`] runs a private etcd (one member, or a cluster whose
//! members a test kills and restarts); [`relay`] is a TCP relay whose connections a test can
//! cut while the processes on both sides live on.
//!
//! Each test file includes this module with `mod process_support;` and uses a part of it.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test binary includes the whole harness and uses a part of it"
)]

pub mod cluster;
pub mod etcd;
pub mod figures;
pub mod http;
pub mod load;
pub mod relay;
pub mod rolling;
pub mod rpc_chaos;
pub mod scenario;

use std::{
    collections::VecDeque,
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio},
    sync::{
        Arc, Mutex,
        mpsc::{self, Receiver, RecvTimeoutError},
    },
    thread::{self, JoinHandle},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

/// Stderr lines kept per process for failure messages.
const STDERR_TAIL_LINES: usize = 60;
/// How often bounded waits re-check their condition.
pub const POLL_INTERVAL: Duration = Duration::from_millis(25);

/// The `switchboard` binary, once chosen (see [`switchboard_bin`]).
static SWITCHBOARD_BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The `switchboard` binary: the one cargo built for these tests; where this harness is
/// compiled outside the CLI's tests (the `rpc-chaos-report` bin includes it by path), the
/// one given to [`set_switchboard_bin`].
///
/// # Panics
///
/// Outside the CLI's tests, with none given.
#[must_use]
pub fn switchboard_bin() -> &'static str {
    SWITCHBOARD_BIN.get_or_init(|| match option_env!("CARGO_BIN_EXE_switchboard") {
        Some(path) => path.to_owned(),
        None => panic!("outside the CLI's tests, set_switchboard_bin names the binary first"),
    })
}

/// Names the `switchboard` binary to run, before the first process starts (for a bin that
/// includes this harness; the CLI's tests use the one cargo built).
///
/// # Panics
///
/// A binary was already chosen.
pub fn set_switchboard_bin(path: String) {
    SWITCHBOARD_BIN
        .set(path)
        .expect("the switchboard binary is chosen once, before any process starts");
}

/// One running `switchboard` process.
pub struct Proc {
    /// A short name for messages (`registry`, `proxy-1`, `leaf-a`, ...).
    label: String,
    child: Child,
    /// Stdout lines in order, as the reader thread reads them.
    lines: Receiver<String>,
    /// Every stdout line read so far (`lines` hands each out once; this keeps them all).
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    readers: Vec<JoinHandle<()>>,
    exit: Option<ExitStatus>,
}

impl Proc {
    /// Starts `switchboard <args>` with stdout and stderr piped and stdin closed.
    ///
    /// # Panics
    ///
    /// The binary cannot be started.
    pub fn spawn(label: &str, args: &[String]) -> Proc {
        Proc::spawn_wrapped(label, &[], args)
    }

    /// Starts `<wrapper...> switchboard <args>` (e.g. `ip netns exec NS switchboard ...`; the
    /// wrapper must exec the binary, so the process id is switchboard's), as [`Proc::spawn`].
    ///
    /// # Panics
    ///
    /// The wrapper or the binary cannot be started.
    pub fn spawn_wrapped(label: &str, wrapper: &[&str], args: &[String]) -> Proc {
        let mut command = match wrapper.split_first() {
            None => Command::new(switchboard_bin()),
            Some((program, rest)) => {
                let mut command = Command::new(program);
                command.args(rest).arg(switchboard_bin());
                command
            }
        };
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if std::env::var_os("RUST_LOG").is_none() {
            command.env("RUST_LOG", "info");
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{label}: cannot start {}: {e}", switchboard_bin()));
        let stdout_pipe = child.stdout.take().expect("stdout was piped");
        let stderr_pipe = child.stderr.take().expect("stderr was piped");
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let (line_tx, lines) = mpsc::channel();
        let readers = vec![
            spawn_stdout_reader(label, stdout_pipe, line_tx, Arc::clone(&stdout)),
            spawn_stderr_reader(label, stderr_pipe, Arc::clone(&stderr)),
        ];
        Proc {
            label: label.to_owned(),
            child,
            lines,
            stdout,
            stderr,
            readers,
            exit: None,
        }
    }

    /// The label given at spawn.
    #[must_use]
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The process id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `timeout` for the next stdout line and parses it as JSON.
    ///
    /// # Panics
    ///
    /// No line within `timeout`, the process ended first, or the line is not JSON; the
    /// message carries the stderr tail.
    pub fn next_json_line(&mut self, timeout: Duration) -> serde_json::Value {
        let line = match self.lines.recv_timeout(timeout) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "{}: no stdout line within {timeout:?}\n{}",
                    self.label,
                    self.diagnostics()
                )
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.wait_exit_quietly(Duration::from_secs(5));
                panic!(
                    "{}: stdout closed before a line was printed (exit: {status:?})\n{}",
                    self.label,
                    self.diagnostics()
                )
            }
        };
        serde_json::from_str(&line).unwrap_or_else(|e| {
            panic!(
                "{}: stdout line is not JSON ({e}): {line:?}\n{}",
                self.label,
                self.diagnostics()
            )
        })
    }

    /// Sends SIGKILL and reaps the process (std's `Child::kill` is SIGKILL on Unix).
    ///
    /// # Panics
    ///
    /// The process cannot be reaped.
    pub fn sigkill(&mut self) {
        if self.exit.is_some() {
            return;
        }
        // An error here means it already exited; `wait` below reaps it either way.
        let _ = self.child.kill();
        let status = self
            .child
            .wait()
            .unwrap_or_else(|e| panic!("{}: wait after SIGKILL failed: {e}", self.label));
        self.exit = Some(status);
    }

    /// Sends SIGTERM (through the shell's `kill` builtin: no unsafe code, no extra crate).
    ///
    /// # Panics
    ///
    /// The signal could not be sent.
    pub fn sigterm(&self) {
        self.signal("TERM");
    }

    /// Sends SIGINT (Ctrl-C).
    ///
    /// # Panics
    ///
    /// The signal could not be sent.
    pub fn sigint(&self) {
        self.signal("INT");
    }

    /// Sends SIGSTOP: the process freezes, its sockets stay open (a half-open peer).
    ///
    /// # Panics
    ///
    /// The signal could not be sent.
    pub fn sigstop(&self) {
        self.signal("STOP");
    }

    /// Sends SIGCONT: a stopped process runs again.
    ///
    /// # Panics
    ///
    /// The signal could not be sent.
    pub fn sigcont(&self) {
        self.signal("CONT");
    }

    /// Sends `SIG<name>` through the shell's `kill` builtin.
    fn signal(&self, name: &str) {
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!("kill -{name} {}", self.pid()))
            .status()
            .unwrap_or_else(|e| panic!("{}: cannot run sh to send SIG{name}: {e}", self.label));
        assert!(
            status.success(),
            "{}: kill -{name} failed: {status}",
            self.label
        );
    }

    /// Waits up to `timeout` for the process to exit and returns its status.
    ///
    /// # Panics
    ///
    /// Still running after `timeout` (the message carries the stderr tail).
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        match self.wait_exit_quietly(timeout) {
            Some(status) => status,
            None => panic!(
                "{}: still running after {timeout:?}\n{}",
                self.label,
                self.diagnostics()
            ),
        }
    }

    fn wait_exit_quietly(&mut self, timeout: Duration) -> Option<ExitStatus> {
        if let Some(status) = self.exit {
            return Some(status);
        }
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.exit = Some(status);
                    return Some(status);
                }
                Ok(None) if Instant::now() < deadline => thread::sleep(POLL_INTERVAL),
                Ok(None) => return None,
                Err(e) => panic!("{}: try_wait failed: {e}", self.label),
            }
        }
    }

    /// The last stdout line that parses as a JSON object, once the process has exited and its
    /// stdout is fully read.
    ///
    /// # Panics
    ///
    /// The process is still running after 30 s, or it printed no JSON object.
    pub fn last_json_line(&mut self) -> serde_json::Value {
        self.wait_exit(Duration::from_secs(30));
        self.join_readers();
        let lines = self.stdout.lock().expect("stdout lock poisoned").clone();
        lines
            .iter()
            .rev()
            .find_map(|line| {
                serde_json::from_str::<serde_json::Value>(line)
                    .ok()
                    .filter(serde_json::Value::is_object)
            })
            .unwrap_or_else(|| {
                panic!(
                    "{}: no JSON object on stdout; stdout was {lines:?}\n{}",
                    self.label,
                    self.diagnostics()
                )
            })
    }

    /// The last stderr lines, oldest first.
    #[must_use]
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().expect("stderr lock poisoned");
        tail.iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Label, exit status if known, stdout so far and stderr tail, for failure messages.
    #[must_use]
    pub fn diagnostics(&self) -> String {
        let stdout = self.stdout.lock().expect("stdout lock poisoned").join("\n");
        format!(
            "--- {} (pid {}, exit {:?}) stdout:\n{stdout}\n--- {} stderr (last {STDERR_TAIL_LINES} lines):\n{}\n---",
            self.label,
            self.pid(),
            self.exit,
            self.label,
            self.stderr_tail()
        )
    }

    /// The reader threads end at EOF, which comes once the process (the only writer) exited.
    fn join_readers(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        for reader in self.readers.drain(..) {
            while !reader.is_finished() && Instant::now() < deadline {
                thread::sleep(POLL_INTERVAL);
            }
            if reader.is_finished() {
                // A reader that panicked already printed why; the lines it kept are enough.
                let _ = reader.join();
            }
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.sigkill();
        if thread::panicking() {
            eprintln!("{}", self.diagnostics());
        }
    }
}

fn spawn_stdout_reader(
    label: &str,
    pipe: ChildStdout,
    lines: mpsc::Sender<String>,
    all: Arc<Mutex<Vec<String>>>,
) -> JoinHandle<()> {
    thread::Builder::new()
        .name(format!("{label}-stdout"))
        .spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                all.lock().expect("stdout lock poisoned").push(line.clone());
                // The receiver may be gone (the Proc dropped); keep draining regardless.
                let _ = lines.send(line);
            }
        })
        .expect("spawning a stdout reader thread")
}

/// With `SWITCHBOARD_TEST_LOG_DIR` set, every process's whole stderr is also appended to
/// `<dir>/<label>.log` (the failure message shows only the last lines): run a flaky test in
/// a loop with `RUST_LOG=debug` and read the logs of the failing run.
fn stderr_copy(label: &str) -> Option<std::fs::File> {
    let dir = std::env::var_os("SWITCHBOARD_TEST_LOG_DIR")?;
    let path = std::path::Path::new(&dir).join(format!("{label}.log"));
    match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        Ok(file) => Some(file),
        Err(e) => {
            eprintln!("{label}: cannot write {}: {e}", path.display());
            None
        }
    }
}

fn spawn_stderr_reader(
    label: &str,
    pipe: ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
) -> JoinHandle<()> {
    let mut copy = stderr_copy(label);
    thread::Builder::new()
        .name(format!("{label}-stderr"))
        .spawn(move || {
            let mut reader = BufReader::new(pipe);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                // Read raw bytes: a log line need not be UTF-8 to be worth showing.
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if let Some(file) = copy.as_mut() {
                            // A debugging aid: a failed write only loses the copy.
                            let _ = file.write_all(&buf);
                        }
                        let line = String::from_utf8_lossy(&buf).trim_end().to_owned();
                        let mut tail = tail.lock().expect("stderr lock poisoned");
                        if tail.len() == STDERR_TAIL_LINES {
                            tail.pop_front();
                        }
                        tail.push_back(line);
                    }
                }
            }
        })
        .expect("spawning a stderr reader thread")
}

/// Microseconds since the Unix epoch now: the clock `load --outcomes-log` writes, so a test's
/// instants (a kill, a ready line read) line up with a load run's.
#[must_use]
pub fn unix_micros_now() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the system clock is after 1970");
    u64::try_from(since.as_micros()).expect("µs since 1970 fit in u64")
}

/// Polls `probe` every [`POLL_INTERVAL`] until it returns `Some`, for at most `timeout`.
///
/// # Panics
///
/// `probe` still returns `None` after `timeout`; the message names `what` and the last
/// observation `describe` gives.
pub fn wait_until<T>(
    timeout: Duration,
    what: &str,
    mut probe: impl FnMut() -> Option<T>,
    describe: impl Fn() -> String,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        if Instant::now() >= deadline {
            panic!(
                "timed out after {timeout:?} waiting for {what}; last seen: {}",
                describe()
            );
        }
        thread::sleep(POLL_INTERVAL);
    }
}

#[path = "../common/secret_file.rs"]
mod secret_file;
#[allow(unused_imports, reason = "not every test binary writes a secret")]
pub use secret_file::write_secret;
