//! A cluster across hosts: the registry and two nodes each in a network namespace of their own
//! (a host each, no loopback shared), joined by veth pairs to a bridge in a fourth namespace,
//! with private addresses 10.77.0.1-3/24. The nodes listen on `0.0.0.0:0` and publish
//! `--advertise <their address>`; a load in node B's namespace sends to node C by name and
//! every message must be delivered (and echoed back across the bridge).
//!
//! Needs root and iproute2 (`ip netns`). Without them the test FAILS saying so, unless
//! `SWITCHBOARD_SKIP_NETNS=1` is set: then it says it skipped and passes. The namespaces are
//! named with this process's id (parallel runs do not clash) and removed by a guard when the
//! test ends, passing or failing.

mod process_support;

use std::{process::Command, time::Duration};

use process_support::{Proc, cluster::READY_TIMEOUT, load::LoadSummary};

/// Messages the load sends.
const COUNT: u64 = 500;
/// Bound on the load run (waiting for the target, sending, the last deadline, slack).
const LOAD_BOUND: Duration = Duration::from_secs(60);

/// The network namespaces of one run, removed on drop.
struct Netns {
    /// `sb<pid>-hub`, holding the bridge.
    hub: String,
    /// The hosts' namespaces, in the order of their addresses (10.77.0.1, .2, .3).
    hosts: Vec<String>,
}

/// Runs `ip <args>`, returning its stderr on failure.
fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

impl Netns {
    /// Creates the hub with its bridge and `hosts` namespaces, host `i` at `10.77.0.{i+1}/24`
    /// on its `eth0`, its veth peer on the bridge.
    fn create(hosts: usize) -> Result<Netns, String> {
        let pid = std::process::id();
        let mut netns = Netns {
            hub: format!("sb{pid}-hub"),
            hosts: Vec::new(),
        };
        ip(&["netns", "add", &netns.hub])?;
        let hub = netns.hub.clone();
        ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &hub, "link", "set", "br0", "up"])?;
        for i in 0..hosts {
            let ns = format!("sb{pid}-h{i}");
            ip(&["netns", "add", &ns])?;
            netns.hosts.push(ns.clone());
            let port = format!("v{i}");
            ip(&[
                "-n", &hub, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &ns,
            ])?;
            ip(&["-n", &hub, "link", "set", &port, "master", "br0"])?;
            ip(&["-n", &hub, "link", "set", &port, "up"])?;
            let addr = format!("{}/24", Netns::address(i));
            ip(&["-n", &ns, "addr", "add", &addr, "dev", "eth0"])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(netns)
    }

    /// Host `i`'s address.
    fn address(i: usize) -> String {
        format!("10.77.0.{}", i + 1)
    }

    /// Starts `switchboard <args>` in host `i`'s namespace.
    fn spawn(&self, i: usize, label: &str, args: &[&str]) -> Proc {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        Proc::spawn_wrapped(label, &["ip", "netns", "exec", &self.hosts[i]], &args)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting a namespace deletes its veth ends, and with them their peers.
        for ns in self.hosts.iter().chain([&self.hub]) {
            if let Err(e) = ip(&["netns", "del", ns]) {
                eprintln!("process_netns: cleanup: {e}");
            }
        }
    }
}

/// Whether `ip netns` can be used here; the reason if not.
fn netns_unavailable() -> Option<String> {
    match Command::new("ip").args(["netns", "list"]).output() {
        Err(e) => Some(format!("iproute2's `ip` cannot be run: {e}")),
        Ok(o) if !o.status.success() => Some(format!(
            "`ip netns list` failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Ok(_) => None,
    }
}

#[test]
fn a_load_on_one_host_delivers_everything_to_a_node_on_another() {
    let skip = std::env::var("SWITCHBOARD_SKIP_NETNS").is_ok_and(|v| v == "1");
    if skip {
        eprintln!("process_netns: skipped (SWITCHBOARD_SKIP_NETNS=1)");
        return;
    }
    if let Some(why) = netns_unavailable() {
        panic!(
            "process_netns: network namespaces are unavailable ({why}); this test needs root \
             and iproute2; set SWITCHBOARD_SKIP_NETNS=1 to skip it"
        );
    }
    let netns = Netns::create(3).unwrap_or_else(|e| {
        panic!(
            "process_netns: cannot build the namespaces ({e}); this test needs root and \
             iproute2 with veth and bridge support; set SWITCHBOARD_SKIP_NETNS=1 to skip it"
        )
    });

    let registry_listen = format!("{}:0", Netns::address(0));
    let mut registry = netns.spawn(0, "registry", &["registry", "--listen", &registry_listen]);
    let ready = registry.next_json_line(READY_TIMEOUT);
    let registry_addr = ready["listen"]
        .as_str()
        .unwrap_or_else(|| panic!("registry ready line {ready}"))
        .to_owned();
    assert!(
        registry_addr.starts_with("10.77.0.1:"),
        "registry ready line {ready}"
    );

    let node = |i: usize, id: &str, name: &str| {
        let advertise = Netns::address(i);
        let mut proc = netns.spawn(
            i,
            name,
            &[
                "node",
                "--id",
                id,
                "--name",
                name,
                "--listen",
                "0.0.0.0:0",
                "--advertise",
                &advertise,
                "--registry",
                &registry_addr,
                "--echo",
            ],
        );
        let ready = proc.next_json_line(READY_TIMEOUT);
        assert_eq!(ready["registered"], true, "{name}: ready line {ready}");
        proc
    };
    let _node_b = node(1, "2", "node-b");
    let _node_c = node(2, "3", "node-c");

    // The load runs on host B and sends to node C by name: it links to C's published address
    // (10.77.0.3, advertised; C listens on 0.0.0.0) and C echoes back to the load's own
    // advertised address.
    let count = COUNT.to_string();
    let mut load = netns.spawn(
        1,
        "load",
        &[
            "load",
            "--registry",
            &registry_addr,
            "--to",
            "node-c",
            "--count",
            &count,
            "--rate",
            "0",
            "--size",
            "32",
            "--id",
            "100",
            "--name",
            "load-b",
            "--advertise",
            &Netns::address(1),
            "--wait-known",
            "20s",
        ],
    );
    let status = load.wait_exit(LOAD_BOUND);
    assert!(status.success(), "load: {status}\n{}", load.diagnostics());
    let line = load.last_json_line();
    let summary: LoadSummary = serde_json::from_value(line.clone())
        .unwrap_or_else(|e| panic!("load summary {line} does not parse: {e}"));
    assert_eq!(
        (summary.sent, summary.delivered, summary.failed_total()),
        (COUNT, COUNT, 0),
        "{line}\n{}",
        load.diagnostics()
    );
    assert_eq!(
        (summary.echoed, summary.duplicates),
        (COUNT, 0),
        "every message echoed back across the bridge once: {line}"
    );
    drop(load);
    drop(registry);
}
