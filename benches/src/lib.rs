//! Side-by-side benchmark support for switchboard: the workloads, the peers and the libatapp
//! emulation that the `ring` criterion bench and the `ring-report` binary compare against.
//!
//! - [`workload`]: deterministic node sets, filters and lookup keys.
//! - [`libatapp_emu`]: libatapp's `etcd_discovery_set` ring recipe, repeated in Rust as the C++
//!   baseline (murmur3 per point, 32-byte entries with a shared pointer, comparator sort, whole
//!   lazy rebuild on every change).
//! - [`peers`]: the crates `hashring`, `conhash`, `anchorhash` and `jumphash` behind one shape.
//! - [`timers`]: timer arm/cancel at a steady 64k live timers.
//! - [`transport`]: switchboard-tokio nodes against a raw tokio length-delimited echo
//!   (throughput with a window in flight, paced latency percentiles, one proxy hop).

pub mod libatapp_emu;
pub mod peers;
pub mod timers;
pub mod transport;
pub mod workload;
