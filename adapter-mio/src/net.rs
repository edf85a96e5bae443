//! Process facts a node's records and seed carry: entropy and the host name.
//!
//! (Address syntax lives in core, `switchboard_core::discovery::address`. The driver never
//! blocks, so it never resolves host names: a published address must carry an IP literal
//! (`atcp://127.0.0.1:4100`, `tcp://[::1]:4100`, `10.0.0.1:21902`); one it cannot dial fails
//! the dial at once (`handle_connect_failed`), and the core's backoff decides what follows.)

use std::hash::{BuildHasher, Hasher};

/// Fresh entropy (randomly keyed hasher, wall clock, pid), mixed into the node's seed so a
/// restarted node is a new incarnation.
pub(crate) fn entropy() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    h.finish()
}

/// This host's name (`/proc/sys/kernel/hostname`, then `$HOSTNAME`, then `localhost`).
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| String::from("localhost"))
}
