//! What `switchboard swarm` reads of processes: its own resident memory, and the registry's
//! when the registry (or etcd) is a local process — found by the TCP port it listens on
//! (`/proc/net/tcp*` names the socket's inode, `/proc/PID/fd` the process holding it).

use std::{collections::BTreeSet, fs, net::SocketAddr};

/// This process's resident set, in KiB (`VmRSS`); `None` where `/proc` does not say.
pub(crate) fn own_rss_kib() -> Option<u64> {
    rss_kib("self")
}

/// The summed resident set, in KiB, of the local processes listening on `addrs` (each
/// process counted once); `None` when none is found (a remote registry, or no `/proc`).
pub(crate) fn listeners_rss_kib(addrs: &[SocketAddr]) -> Option<u64> {
    let inodes: BTreeSet<u64> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|path| fs::read_to_string(path).ok())
        .flat_map(|table| listening_inodes(&table, addrs))
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let pids = holders(&inodes);
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|pid| rss_kib(&pid.to_string())).sum()
}

/// `VmRSS` of `/proc/<pid>/status`, in KiB.
fn rss_kib(pid: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The inodes of the sockets in a `/proc/net/tcp` table that listen on one of `addrs`' ports
/// (on that address or on every address).
fn listening_inodes(table: &str, addrs: &[SocketAddr]) -> Vec<u64> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
            let (_, port) = local.rsplit_once(':')?;
            let port = u16::from_str_radix(port, 16).ok()?;
            let wanted = *state == LISTEN && addrs.iter().any(|a| a.port() == port);
            wanted.then(|| inode.parse().ok()).flatten()
        })
        .collect()
}

/// The pids holding one of the socket `inodes` open.
fn holders(inodes: &BTreeSet<u64>) -> BTreeSet<u32> {
    let Ok(procs) = fs::read_dir("/proc") else {
        return BTreeSet::new();
    };
    procs
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
                fds.filter_map(Result::ok).any(|fd| {
                    fs::read_link(fd.path()).is_ok_and(|target| {
                        socket_inode(&target.to_string_lossy()).is_some_and(|i| inodes.contains(&i))
                    })
                })
            })
        })
        .collect()
}

/// The inode of a `socket:[N]` link target.
fn socket_inode(target: &str) -> Option<u64> {
    target
        .strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two rows of a real `/proc/net/tcp`: a listener on 127.0.0.1:7000 (port 0x1B58) and an
    /// established connection from that port; only the listener's inode is taken.
    #[test]
    fn only_listeners_on_the_port_are_taken() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
            0: 0100007F:1B58 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 41234 1 0000000000000000 100 0 0 10 0\n   \
            1: 0100007F:1B58 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 41299 1 0000000000000000 20 4 30 10 -1\n";
        let addr: SocketAddr = "127.0.0.1:7000".parse().expect("addr");
        let other: SocketAddr = "127.0.0.1:7001".parse().expect("addr");
        assert_eq!(listening_inodes(table, &[addr]), [41234]);
        assert_eq!(listening_inodes(table, &[other]), Vec::<u64>::new());
        assert_eq!(socket_inode("socket:[41234]"), Some(41234));
        assert_eq!(socket_inode("pipe:[41234]"), None);
    }

    /// This process listens on a fresh port: it is found, and its resident set is its own.
    #[test]
    fn a_local_listener_is_found_and_measured() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let found = listeners_rss_kib(&[addr]).expect("found");
        let own = own_rss_kib().expect("own");
        // Both read the same process moments apart: within a MiB of each other.
        assert!(
            found.abs_diff(own) < 1024,
            "found {found} KiB, own {own} KiB"
        );
    }
}
