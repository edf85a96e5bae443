//! Is the holder of this node's id a live copy of it on this very host?
//!
//! A registration that finds its id held under this deployment's own identity is either a
//! restart (the previous life crashed and its lease has not expired yet: take the id over)
//! or a second copy started by mistake while the first runs (refuse: one live holder per id).
//! etcd cannot tell them apart — a dead holder's lease lives on for its TTL. The holder's
//! record can: it names its host and pid. On the same host, a holder whose process still runs
//! (and is not a zombie) under another pid is a live copy. Anything this cannot check (another
//! host, no pid, this very pid — a restarted container's PID 1 —, no `/proc`) is not called
//! live: the takeover then stands, and the displaced copy yields (see `lease_task`).

use switchboard_core::discovery::DiscoveryInfo;

/// True when `holder` is a live process on `own`'s host other than this one.
pub(super) fn is_live_copy(holder: &DiscoveryInfo, own: &DiscoveryInfo) -> bool {
    !holder.hostname.is_empty()
        && holder.hostname == own.hostname
        && holder.pid > 0
        && holder.pid != own.pid
        && process_runs(holder.pid)
}

/// `/proc/<pid>/stat` exists and its state is not zombie (`Z`) or dead (`X`).
#[cfg(target_os = "linux")]
fn process_runs(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "pid (comm) S ...": the state follows the last ')' (comm may hold one).
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next())
        .is_some_and(|state| state != 'Z' && state != 'X')
}

/// Without `/proc` the holder's process cannot be checked: never called live.
#[cfg(not(target_os = "linux"))]
fn process_runs(_pid: i32) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(hostname: &str, pid: i32) -> DiscoveryInfo {
        DiscoveryInfo {
            hostname: hostname.to_owned(),
            pid,
            ..DiscoveryInfo::default()
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_running_process_on_this_host_is_a_live_copy_and_nothing_else_is() {
        let me = i32::try_from(std::process::id()).expect("pid fits");
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let other = i32::try_from(child.id()).expect("pid fits");
        let own = info("h1", me);
        assert!(is_live_copy(&info("h1", other), &own));
        assert!(!is_live_copy(&info("h2", other), &own), "another host");
        assert!(!is_live_copy(&info("", other), &own), "no host");
        assert!(!is_live_copy(&info("h1", me), &own), "this very process");
        assert!(!is_live_copy(&info("h1", 0), &own), "no pid");
        child.kill().expect("kill sleep");
        // Killed but not yet reaped: a zombie, not live (bounded wait for the kill to land).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while is_live_copy(&info("h1", other), &own) {
            assert!(
                std::time::Instant::now() < deadline,
                "the killed child still runs"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            std::fs::read_to_string(format!("/proc/{other}/stat")).is_ok(),
            "still unreaped: a zombie, which is not live"
        );
        child.wait().expect("reap sleep");
        assert!(!is_live_copy(&info("h1", other), &own), "a reaped process");
    }
}
