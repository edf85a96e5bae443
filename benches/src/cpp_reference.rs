//! Runs the C++ libatapp reference (`benches/cpp/libatapp_ring.cpp`, built by `build.rs`):
//! its `vectors` output (committed as `core/tests/vectors/libatapp_ring.txt`) and its timing
//! of upstream's rebuild + lookup recipe on one of our workloads, so `ring-report` compares
//! ours with C++ compiled from the same machine in the same run.

use std::{
    fmt::Write as _,
    io::Write as _,
    process::{Command, Stdio},
};

use crate::workload::Workload;

/// Path of the compiled reference.
pub const BINARY: &str = env!("LIBATAPP_RING_CPP");

/// Which upstream recipe the reference times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// libatapp v0.11.0–v0.12.5: 40 id points + 40 name points, `std::shared_ptr` (atomic
    /// refcount), plain `std::lower_bound` lookup.
    V012,
    /// libatapp main since `45f5fda`: 80 name points, non-atomic `strong_rc_ptr`, sorted
    /// round-robin list and reference set refilled per rebuild, compact ring built lazily,
    /// lookups through the search loop.
    Main,
}

impl Layout {
    fn arg(self) -> &'static str {
        match self {
            Layout::V012 => "v012",
            Layout::Main => "main",
        }
    }
}

/// Medians the reference measured (ns).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CppTimes {
    /// Ring points it built.
    pub points: u64,
    /// `clear_cache` + `rebuild_cache` (hash, copy the node pointer per point, `std::sort`).
    pub build_ns: f64,
    /// `get_node_by_consistent_hash(uint64_t)`: murmur3 of the key + `std::lower_bound`, after
    /// one untimed pass over the keys.
    pub lookup_ns: f64,
    /// `rebuild_compact_cache` on top of a built ring (paid by the first compact search).
    pub compact_build_ns: f64,
}

/// Error running the reference.
#[derive(Debug, thiserror::Error)]
pub enum CppError {
    /// Spawning or talking to the process failed.
    #[error("running {BINARY}: {0}")]
    Io(#[from] std::io::Error),
    /// It exited unsuccessfully or printed something else than expected.
    #[error("{BINARY} failed: {0}")]
    Output(String),
}

/// The reference's `vectors` output.
pub fn vectors() -> Result<String, CppError> {
    let out = Command::new(BINARY).arg("vectors").output()?;
    if !out.status.success() {
        return Err(CppError::Output(format!("exit {}", out.status)));
    }
    String::from_utf8(out.stdout).map_err(|e| CppError::Output(e.to_string()))
}

/// Times the reference's recipe for `layout` on the nodes of `w` (pod index 0) and `keys`
/// (at least 1000), sampling each metric for `budget_ms`.
pub fn bench(
    layout: Layout,
    w: &Workload,
    keys: &[u64],
    budget_ms: u32,
) -> Result<CppTimes, CppError> {
    let (v, text) = run("bench", layout, w, keys, budget_ms)?;
    let num = |k: &str| {
        v[k].as_f64()
            .ok_or_else(|| CppError::Output(format!("no {k} in {text}")))
    };
    Ok(CppTimes {
        points: points(&v, &text)?,
        build_ns: num("build_ns")?,
        lookup_ns: num("lookup_ns")?,
        compact_build_ns: num("compact_build_ns")?,
    })
}

/// One lookup round of the reference (its `lookup` command): builds the ring of `layout` on
/// `w` untimed, looks every key up once untimed, then samples batches of 1000 lookups of
/// `keys` for `budget_ms` — the same method `ring-report` applies to ours. Returns the ring's
/// point count and the median ns per lookup.
pub fn lookup_ns(
    layout: Layout,
    w: &Workload,
    keys: &[u64],
    budget_ms: u32,
) -> Result<(u64, f64), CppError> {
    let (v, text) = run("lookup", layout, w, keys, budget_ms)?;
    let ns = v["lookup_ns"]
        .as_f64()
        .ok_or_else(|| CppError::Output(format!("no lookup_ns in {text}")))?;
    Ok((points(&v, &text)?, ns))
}

fn points(v: &serde_json::Value, text: &str) -> Result<u64, CppError> {
    v["points"]
        .as_u64()
        .ok_or_else(|| CppError::Output(format!("no points in {text}")))
}

/// Runs the reference's `command` (`bench` or `lookup`) on the workload; its JSON line, checked
/// for the layout and node count, and the raw text for error messages.
fn run(
    command: &str,
    layout: Layout,
    w: &Workload,
    keys: &[u64],
    budget_ms: u32,
) -> Result<(serde_json::Value, String), CppError> {
    let mut input = format!("{} {}\n", w.len(), keys.len());
    for i in 0..w.len() {
        let _ = writeln!(input, "{} {}", w.ids[i].0, w.names[i]);
    }
    for k in keys {
        let _ = writeln!(input, "{k}");
    }
    let mut child = Command::new(BINARY)
        .args([command, layout.arg(), &budget_ms.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .ok_or_else(|| CppError::Output("no stdin".to_owned()))?
        .write_all(input.as_bytes())?;
    let out = child.wait_with_output()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(CppError::Output(format!("exit {}: {text}", out.status)));
    }
    let v: serde_json::Value =
        serde_json::from_str(text.trim()).map_err(|e| CppError::Output(format!("{e}: {text}")))?;
    if v["layout"] != layout.arg() || v["n"].as_u64() != Some(w.len() as u64) {
        return Err(CppError::Output(format!("unexpected header: {text}")));
    }
    Ok((v, text))
}
