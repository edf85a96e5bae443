//! Side-by-side benchmark support for switchboard: the workloads, the peers and the libatapp
//! emulation that the `ring` criterion bench and the `ring-report` binary compare against.
//!
//! - [`workload`]: deterministic node sets, filters and lookup keys.
//! - [`cpp_reference`]: runs the C++ reproduction of libatapp's ring (`benches/cpp/`, built by
//!   `build.rs`): its key → owner vectors and its timing of upstream's rebuild + lookup recipe.
//! - [`libatapp_emu`]: libatapp's `etcd_discovery_set` ring recipe repeated in Rust (murmur3 per
//!   point, 32-byte entries with a non-atomic shared pointer, comparator sort, whole lazy
//!   rebuild on every change, per-filter rings) — it also covers the change and per-filter
//!   costs the C++ reference does not time.
//! - [`peers`]: the crates `hashring`, `conhash`, `anchorhash` and `jumphash` behind one shape.
//! - [`timers`]: timer arm/cancel at a steady 64k live timers.
//! - [`linked`]: core nodes linked by hand (the handshake played between them) for the node
//!   and relay benches.
//! - [`transport`]: switchboard-tokio nodes against a raw tokio length-delimited echo
//!   (throughput with a window in flight, paced latency percentiles, one proxy hop).
//! - [`select_report`]: the seeded experiments of selection beyond the peers (`select-report`).

pub mod cpp_reference;
pub mod libatapp_emu;
pub mod linked;
pub mod peers;
pub mod rpc;
pub mod select_report;
pub mod timers;
pub mod transport;
pub mod workload;
