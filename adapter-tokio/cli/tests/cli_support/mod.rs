//! Helpers of the `cli_*` tests: run the `switchboard` binary as a child process, read its
//! one-line JSON ready announcement (bounded), speak a little HTTP, and make sure no child
//! outlives its test.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    process::{Child, Command, ExitStatus, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use serde_json::Value;

/// The binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_switchboard");
/// Upper bound of any single wait (generous: the machine may be loaded).
pub(crate) const STEP: Duration = Duration::from_secs(30);

/// A running `switchboard` process: its stdout lines arrive on a channel; it is killed when
/// dropped.
pub(crate) struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Running {
    /// Starts `switchboard args...` with stdout piped (stderr inherited, for the test log).
    pub(crate) fn start(args: &[&str]) -> Running {
        let mut child = Command::new(BIN)
            .args(args)
            .env_remove("SWITCHBOARD_REGISTRY")
            .env_remove("SWITCHBOARD_ETCD")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the switchboard binary");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Running { child, lines }
    }

    /// The next stdout line (bounded by [`STEP`]).
    pub(crate) fn next_line(&mut self, what: &str) -> String {
        self.lines
            .recv_timeout(STEP)
            .unwrap_or_else(|e| panic!("no {what} line within {STEP:?}: {e}"))
    }

    /// The next stdout line as JSON (bounded by [`STEP`]).
    pub(crate) fn next_json(&mut self, what: &str) -> Value {
        let line = self.next_line(what);
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {line}"))
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub(crate) fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends SIGTERM.
    pub(crate) fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed");
    }

    /// Waits for the exit (bounded by [`STEP`]).
    pub(crate) fn wait(&mut self, what: &str) -> ExitStatus {
        let deadline = Instant::now() + STEP;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the child") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{what} did not exit within {STEP:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Every remaining stdout line, once the process has exited.
    pub(crate) fn rest_of_stdout(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            out.push(line);
        }
        out
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `json[key]` as a string, panicking with the whole value if it is not one.
pub(crate) fn str_field<'a>(json: &'a Value, key: &str) -> &'a str {
    json[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string in {json}"))
}

/// `json[key]` as a u64, panicking with the whole value if it is not one.
pub(crate) fn u64_field(json: &Value, key: &str) -> u64 {
    json[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not a number in {json}"))
}

/// Failures a demo run may show: what its faults (a proxy and a leaf SIGKILLed, the
/// registry killed and restarted) catch in flight toward a dead process. Anything else — a
/// timeout, a refusal, a full queue, a message without an outcome — is a bug.
const DEMO_FAILURES: [&str; 4] = [
    "unknown_target_gone",
    "unknown_target_restarted",
    "target_gone",
    "target_restarted",
];

/// A `demo --json` summary accounts for every message exactly: `sent` is `expected_sent`,
/// each message is delivered or has one named outcome (`sent == delivered + Σ failed`), none
/// lost, none duplicated, and what failed is explained by the demo's faults and is at most
/// 1% of the run (measured: 1–2 of 6,000). Returns the failures by reason.
pub(crate) fn assert_demo_accounted(summary: &Value, expected_sent: u64) -> BTreeMap<String, u64> {
    let failed: BTreeMap<String, u64> =
        serde_json::from_value(summary["failed"].clone()).expect("failed is a map of counts");
    let sent = u64_field(summary, "sent");
    let delivered = u64_field(summary, "delivered");
    assert_eq!(sent, expected_sent, "{summary}");
    assert_eq!(u64_field(summary, "lost"), 0, "{summary}");
    assert_eq!(u64_field(summary, "duplicates"), 0, "{summary}");
    let failed_total: u64 = failed.values().sum();
    assert_eq!(sent, delivered + failed_total, "{summary}");
    for reason in failed.keys() {
        assert!(
            DEMO_FAILURES.contains(&reason.as_str()),
            "{reason} is not a failure the demo's faults explain: {summary}"
        );
    }
    assert!(
        failed_total * 100 <= sent,
        "{failed_total} of {sent} failed (at most 1%): {summary}"
    );
    failed
}

/// Starts a registry on a free port; returns it and its address.
pub(crate) fn start_registry() -> (Running, String) {
    let mut registry = Running::start(&["registry", "--listen", "127.0.0.1:0"]);
    let ready = registry.next_json("registry ready");
    assert_eq!(ready["ready"], "registry", "{ready}");
    let addr = str_field(&ready, "listen").to_owned();
    (registry, addr)
}

/// Starts `switchboard node ...` (`args` from `node` on); returns it and its ready line.
pub(crate) fn start_node(args: &[&str]) -> (Running, Value) {
    let mut node = Running::start(args);
    let ready = node.next_json("node ready");
    assert_eq!(ready["ready"], "node", "{ready}");
    (node, ready)
}

/// [`start_node`] for a node that must register; returns it and the ready line's `field`
/// (`listen`, `admin`).
pub(crate) fn start_registered_node(args: &[&str], field: &str) -> (Running, String) {
    let (node, ready) = start_node(args);
    assert_eq!(ready["registered"], true, "{ready}");
    let value = str_field(&ready, field).to_owned();
    (node, value)
}

/// (status code, headers lowercased, body) of `GET path` on `addr` (bounded).
pub(crate) fn http_get(addr: SocketAddr, path: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect_timeout(&addr, STEP).expect("connect to admin");
    stream.set_read_timeout(Some(STEP)).expect("read timeout");
    stream.set_write_timeout(Some(STEP)).expect("write timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    )
    .expect("write request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read answer");
    let (head, body) = answer.split_once("\r\n\r\n").expect("head and body");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status code");
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// Runs `switchboard args...` to its end (killed after `limit`), with stdout and stderr
/// captured; returns the output and how long it ran.
pub(crate) fn run_to_end(args: &[&str], limit: Duration) -> (std::process::Output, Duration) {
    run_with_input(args, None, limit)
}

/// [`run_to_end`] with `input` written to the child's stdin (then closed); no input: stdin is
/// `/dev/null`.
pub(crate) fn run_with_input(
    args: &[&str],
    input: Option<&[u8]>,
    limit: Duration,
) -> (std::process::Output, Duration) {
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(input.map_or_else(Stdio::null, |_| Stdio::piped()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the switchboard binary");
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        std::io::Write::write_all(&mut stdin, input).expect("write the child's stdin");
    }
    let (mut stdout, mut stderr) = (
        child.stdout.take().expect("piped stdout"),
        child.stderr.take().expect("piped stderr"),
    );
    let out = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stdout.read_to_end(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        text
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("switchboard {args:?} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = start.elapsed();
    let output = std::process::Output {
        status,
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    };
    (output, elapsed)
}

/// A loopback port nothing listens on (bound once, then released).
pub(crate) fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

/// The lines of captured output.
pub(crate) fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[allow(unreachable_pub, reason = "shared by path with process_support")]
#[path = "../common/secret_file.rs"]
mod secret_file;
#[allow(unused_imports, reason = "not every test binary writes a secret")]
pub(crate) use secret_file::write_secret;
