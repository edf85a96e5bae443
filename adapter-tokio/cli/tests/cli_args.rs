//! The `switchboard` binary's handling of bad input, run as a real process: a bad flag, a bad
//! value, a config file with an unknown key or a wrong value each print exactly one line on
//! stderr naming the field and exit with code 2, before anything is started.

use std::{
    io::Read,
    path::Path,
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");
/// Bound on one run of the binary (it exits at once on bad input).
const RUN_LIMIT: Duration = Duration::from_secs(30);

/// Runs the binary with `args`, killing it if it outlives [`RUN_LIMIT`]. Its stdout and
/// stderr are read while it runs (a completion script is larger than a pipe's buffer: left
/// unread, the child would block on its write and never exit).
fn run(args: &[&str]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        // The environment may name a registry; these cases are about the flags alone.
        .env_remove("SWITCHBOARD_REGISTRY")
        .env_remove("SWITCHBOARD_ETCD")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the switchboard binary");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes)
                .expect("read the child's output");
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + RUN_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            break status;
        }
        if Instant::now() >= deadline {
            child.kill().expect("kill the stuck child");
            panic!("switchboard {args:?} did not exit within {RUN_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: stdout.join().expect("the stdout reader"),
        stderr: stderr.join().expect("the stderr reader"),
    }
}

/// Asserts exit code 2, nothing on stdout, and exactly `line` (plus a newline) on stderr.
fn assert_usage_error(output: &Output, line: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr, format!("{line}\n"));
    assert!(output.stdout.is_empty(), "stdout: {:?}", output.stdout);
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the config file");
    path.to_str().expect("a UTF-8 temp path").to_owned()
}

#[test]
fn an_unknown_flag_is_one_line_and_exit_2() {
    let output = run(&["node", "--bogus"]);
    assert_usage_error(&output, "error: unexpected argument '--bogus' found");
}

#[test]
fn a_bad_flag_value_names_the_flag() {
    let output = run(&["registry", "--listen", "not-an-address"]);
    assert_usage_error(
        &output,
        "error: invalid value 'not-an-address' for '--listen <ADDR>': invalid socket address syntax",
    );
    let output = run(&["node", "--id", "seven"]);
    assert_usage_error(
        &output,
        "error: invalid value 'seven' for '--id <ID>': invalid digit found in string",
    );
}

/// `--select` on `send`, `load` and `call`: a value that is not a mode is a usage error
/// listing the modes; a mode that needs a key without one, or a key with a mode that takes
/// none, names the flag — each one line and exit 2, before anything starts. Issue 26 added
/// `maglev`, `bounded` and `p2c` to the list, and the keyed modes to the key's message.
#[test]
fn a_bad_select_mode_is_one_line_and_exit_2() {
    let modes = "expected one of hash, round-robin, random, least-outstanding, maglev, \
                 bounded, p2c";
    let registry = ["--registry", "127.0.0.1:1"];
    let message = ["--count", "1", "--rate", "1", "--size", "8"];
    for (command, rest) in [
        ("send", &["--payload", "x"][..]),
        ("load", &message[..]),
        ("call", &["--method", "echo"][..]),
    ] {
        for bad in ["roundrobin", "node"] {
            let mut args = vec![command, "--select", bad];
            args.extend(registry);
            args.extend(rest);
            assert_usage_error(
                &run(&args),
                &format!("error: invalid value '{bad}' for '--select <MODE>': {modes}"),
            );
        }
    }
    let send = |extra: &[&'static str]| {
        let mut args = vec!["send", "--payload", "x"];
        args.extend(registry);
        args.extend(extra);
        run(&args)
    };
    assert_usage_error(
        &send(&["--select", "hash"]),
        "error: select: hash needs a key: give --key K",
    );
    assert_usage_error(
        &send(&["--select", "random", "--key", "k"]),
        "error: key: only used with --select hash, maglev or bounded",
    );
    assert_usage_error(
        &send(&[]),
        "error: to: required: give --to NAME|ID, --select MODE or --key K",
    );
    let mut load = vec!["load", "--select", "hash"];
    load.extend(registry);
    load.extend(message);
    assert_usage_error(
        &run(&load),
        "error: select: hash needs a key: give --hash-key K",
    );
    let call = [
        "call",
        "--method",
        "echo",
        "--select",
        "least-outstanding",
        "--key",
        "k",
        "--registry",
        "127.0.0.1:1",
    ];
    assert_usage_error(
        &run(&call),
        "error: key: only used with --select hash, maglev or bounded",
    );
    assert_usage_error(
        &send(&["--select", "maglev"]),
        "error: select: maglev needs a key: give --key K",
    );
}

#[test]
fn a_missing_required_value_names_the_field() {
    let output = run(&["node", "--name", "a", "--listen", "127.0.0.1:0"]);
    assert_usage_error(&output, "error: id: required: give --id N");
    let output = run(&["registry"]);
    assert_usage_error(&output, "error: listen: required: give --listen ADDR");
    let output = run(&[
        "load",
        "--registry",
        "127.0.0.1:1",
        "--count",
        "1",
        "--rate",
        "1",
        "--size",
        "8",
    ]);
    assert_usage_error(
        &output,
        "error: to: required: give --to NAME or --hash-key K (or --method M for calls)",
    );
}

#[test]
fn a_value_out_of_range_names_the_field() {
    let output = run(&[
        "load",
        "--registry",
        "127.0.0.1:1",
        "--to",
        "a",
        "--count",
        "1",
        "--rate",
        "1",
        "--size",
        "4",
    ]);
    assert_usage_error(
        &output,
        "error: size: must be at least 8 bytes (the sequence number), got 4",
    );
    let output = run(&["demo", "--seconds", "0"]);
    assert_usage_error(
        &output,
        "error: seconds: must be between 1 and 86400, got 0",
    );
    let output = run(&[
        "node",
        "--id",
        "0",
        "--name",
        "a",
        "--listen",
        "127.0.0.1:0",
        "--registry",
        "127.0.0.1:1",
    ]);
    assert_usage_error(&output, "error: id: node id 0 is reserved");
}

/// Validation at the door (issue 24 item 4): an empty name, the labels switchboard sets
/// itself, a message larger than a target's pending queue and an outcomes log that cannot be
/// written are refused before anything starts (no registry is reached: port 1), one line
/// naming the field.
#[test]
fn empty_names_reserved_labels_oversized_loads_and_unwritable_logs_are_refused() {
    let node = |extra: &[&str]| {
        let mut args = vec![
            "node",
            "--id",
            "5",
            "--listen",
            "127.0.0.1:0",
            "--registry",
            "127.0.0.1:1",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    for (extra, line) in [
        (&["--name", ""][..], "error: name: must not be empty"),
        (&["--name", "  "][..], "error: name: must not be empty"),
        (
            &["--name", "a", "--label", "rpc.switchboard/echo=serve"][..],
            "error: label: rpc.switchboard/echo=serve is reserved: methods are served with --serve (config key `serve`)",
        ),
        (
            &["--name", "a", "--label", "leaving=x"][..],
            "error: label: leaving=x is reserved: the drain before a graceful exit sets it",
        ),
        (
            &["--name", "a", "--label", "role=client"][..],
            "error: label: role=client is reserved: it marks light clients (send, call, load), not members",
        ),
    ] {
        assert_usage_error(&node(extra), line);
    }
    let load = |extra: &[&str]| {
        let mut args = vec![
            "load",
            "--registry",
            "127.0.0.1:1",
            "--to",
            "a",
            "--rate",
            "0",
            "--count",
            "1",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    assert_usage_error(
        &load(&["--size", "8", "--name", ""]),
        "error: name: must not be empty",
    );
    assert_usage_error(
        &load(&["--size", "8388609"]),
        "error: size: 8388609 bytes exceeds the pending queue of a target (8388608 bytes, \
         core.send_buffer_size): every message would fail queue_full",
    );
    assert_usage_error(
        &load(&[
            "--size",
            "8",
            "--outcomes-log",
            "/nonexistent/dir/outcomes.log",
        ]),
        "error: outcomes_log: cannot write /nonexistent/dir/outcomes.log: No such file or \
         directory (os error 2)",
    );
}

#[test]
fn registry_and_etcd_together_are_refused() {
    let output = run(&[
        "node",
        "--registry",
        "127.0.0.1:1",
        "--etcd",
        "http://127.0.0.1:2379",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: the argument '--registry <ADDR>' cannot be used with"),
        "{stderr}"
    );
}

#[test]
fn an_unknown_key_in_a_config_file_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write(
        dir.path(),
        "node.toml",
        "id = 7\nname = \"a\"\nlisten = \"127.0.0.1:0\"\nregistry = \"127.0.0.1:1\"\n\
         [core]\nmesage_timeout_ms = 100\n",
    );
    let output = run(&["node", "--config", &config]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: core.mesage_timeout_ms: unknown key, expected one of"),
        "{stderr}"
    );
    let config = write(
        dir.path(),
        "registry.toml",
        "listen = \"127.0.0.1:0\"\nport = 1\n",
    );
    let output = run(&["registry", "--config", &config]);
    assert_usage_error(
        &output,
        "error: port: unknown key, expected one of `listen`, `concern`, `cluster_key_file`, `next_cluster_key_file`, `tls_cert`, `tls_key`, `tls_ca`, `tls_require_node_id`, `server`",
    );
}

#[test]
fn a_wrong_value_in_a_config_file_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write(
        dir.path(),
        "node.toml",
        "id = 7\nname = \"a\"\nlisten = \"127.0.0.1:0\"\nregistry = \"127.0.0.1:1\"\n\
         [core]\nmessage_timeout_ms = 0\n",
    );
    let output = run(&["node", "--config", &config]);
    assert_usage_error(
        &output,
        "error: core.message_timeout_ms: must be greater than zero",
    );
    let config = write(dir.path(), "bad-type.toml", "id = \"seven\"\n");
    let output = run(&["node", "--config", &config]);
    assert_usage_error(
        &output,
        "error: id: invalid type: string \"seven\", expected u64",
    );
    let config = write(dir.path(), "load.toml", "size = 4\n");
    let output = run(&[
        "load",
        "--config",
        &config,
        "--registry",
        "127.0.0.1:1",
        "--to",
        "a",
        "--count",
        "1",
        "--rate",
        "1",
    ]);
    assert_usage_error(
        &output,
        "error: size: must be at least 8 bytes (the sequence number), got 4",
    );
}

#[test]
fn a_bad_concern_file_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let concern = write(dir.path(), "concern.toml", "[concern]\ngame = \"gate\"\n");
    let output = run(&["registry", "--listen", "127.0.0.1:0", "--concern", &concern]);
    assert_usage_error(
        &output,
        "error: concern.game: invalid type: string \"gate\", expected a sequence",
    );
}

#[test]
fn a_missing_config_file_is_named() {
    let output = run(&["registry", "--config", "/nonexistent/registry.toml"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: config: cannot read /nonexistent/registry.toml: "),
        "{stderr}"
    );
}

/// Changed expectation: `load` (and now `send`, listed too) names `--select <MODE>` among
/// its targets, and `load --to` takes an id as well as a name.
#[test]
fn every_subcommand_has_help_with_examples() {
    for (sub, usage) in [
        ("registry", "switchboard registry --listen <ADDR> [OPTIONS]"),
        (
            "node",
            "switchboard node --id <ID> --name <NAME> --listen <ADDR> \
             <--registry <ADDR>|--etcd <URL[,URL...]>> [OPTIONS]",
        ),
        (
            "load",
            "switchboard load <--to <NAME|ID>|--select <MODE>|--hash-key <K>> --count <N> \
             --rate <R> --size <B> <--registry <ADDR>|--etcd <URL[,URL...]>> [OPTIONS]",
        ),
        (
            "send",
            "switchboard send <--to <NAME|ID>|--select <MODE>|--key <K>> <--payload \
             <TEXT|@FILE|->|--payload-hex <HEX>|--payload-base64 <B64>> <--registry \
             <ADDR>|--etcd <URL[,URL...]>> [OPTIONS]",
        ),
        ("demo", "switchboard demo [OPTIONS]"),
        (
            "swarm",
            "switchboard swarm --nodes <N> <--registry <ADDR>|--etcd <URL[,URL...]>> [OPTIONS]",
        ),
    ] {
        let output = run(&[sub, "--help"]);
        assert_eq!(output.status.code(), Some(0), "{sub} --help");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains(&format!("\nUsage: {usage}\n")),
            "{sub} --help:\n{stdout}"
        );
        assert!(
            stdout.contains("\nExamples:\n  switchboard "),
            "{sub} --help:\n{stdout}"
        );
    }
    let output = run(&["demo", "--help"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("message_timeout 3 s"), "{stdout}");
    assert!(stdout.contains("[default: 1000]"), "{stdout}");
    let output = run(&["node", "--help"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("[env: SWITCHBOARD_REGISTRY="), "{stdout}");
    assert!(stdout.contains("[env: SWITCHBOARD_ETCD="), "{stdout}");
    assert!(stdout.contains("[default: text]"), "{stdout}");
}

#[test]
fn a_usage_error_shows_the_required_flags_without_brackets() {
    let output = run(&["node", "--id"]);
    assert_eq!(output.status.code(), Some(2));
    let output = run(&["node", "--help"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let usage = stdout
        .lines()
        .find(|l| l.starts_with("Usage: "))
        .expect("a usage line");
    assert!(
        usage.contains(" --id <ID> --name <NAME> --listen <ADDR> "),
        "{usage}"
    );
    assert!(!usage.contains("[--id"), "{usage}");
}

#[test]
fn a_misspelt_flag_keeps_the_did_you_mean_tip() {
    let output = run(&["node", "--listn", "127.0.0.1:0"]);
    assert_usage_error(
        &output,
        "error: unexpected argument '--listn' found\ntip: a similar argument exists: '--listen'",
    );
}

#[test]
fn a_negative_number_is_a_range_error_naming_the_flag() {
    let output = run(&[
        "load",
        "--registry",
        "127.0.0.1:1",
        "--to",
        "a",
        "--count",
        "1",
        "--rate",
        "-5",
        "--size",
        "8",
    ]);
    assert_usage_error(
        &output,
        "error: invalid value '-5' for '--rate <R>': must be 0 or more, got -5",
    );
    let output = run(&["demo", "--seconds", "-1"]);
    assert_usage_error(
        &output,
        "error: invalid value '-1' for '--seconds <S>': must be 0 or more, got -1",
    );
}

#[test]
fn the_registry_address_may_come_from_the_environment() {
    // SWITCHBOARD_REGISTRY counts as --registry: with --etcd as well they conflict.
    let output = Command::new(BIN)
        .args(["node", "--etcd", "http://127.0.0.1:2379"])
        .env("SWITCHBOARD_REGISTRY", "127.0.0.1:1")
        .output()
        .expect("run the binary");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("' cannot be used with '--"), "{stderr}");
    let output = Command::new(BIN)
        .args(["node", "--registry", "x"])
        .env("SWITCHBOARD_REGISTRY", "127.0.0.1:1")
        .output()
        .expect("run the binary");
    // Host names are addresses too since issue 24, so the flag says what shape it wants
    // (it said "invalid socket address syntax").
    assert_usage_error(
        &output,
        "error: invalid value 'x' for '--registry <ADDR>': expected HOST:PORT (e.g. \
         127.0.0.1:7000 or registry:7000), got \"x\"",
    );
}

#[test]
fn version_names_the_commit_and_the_features() {
    let output = run(&["--version"]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.trim_end();
    assert!(
        line.starts_with(&format!(
            "switchboard {} (commit ",
            env!("CARGO_PKG_VERSION")
        )),
        "{line}"
    );
    let features: Vec<&str> = [
        ("etcd", cfg!(feature = "etcd")),
        ("tls", cfg!(feature = "tls")),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect();
    let features = if features.is_empty() {
        "none".to_owned()
    } else {
        features.join(",")
    };
    assert!(
        line.ends_with(&format!(", features: {features})")),
        "{line}"
    );
    let commit = line
        .split("(commit ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .expect("a commit");
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{line}"
    );
}

#[test]
fn completions_are_printed_for_bash() {
    let output = run(&["completions", "bash"]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("switchboard"), "{stdout}");
    assert!(stdout.contains("--listen"), "{stdout}");
    let output = run(&["completions", "tcsh"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn the_man_page_is_roff() {
    let output = run(&["man"]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let th = stdout
        .lines()
        .find(|l| !l.starts_with(".ie") && !l.starts_with(".el"));
    assert!(
        th.is_some_and(|l| l.starts_with(".TH switchboard 1")),
        "{stdout}"
    );
}

/// Every page the main page names under SUBCOMMANDS exists: `man --out-dir` writes
/// `switchboard.1` and one page per subcommand, each titled with its own name; `man SUB`
/// prints one; an unknown one exits 2 naming the pages there are.
#[test]
fn every_subcommand_has_its_man_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().display().to_string();
    let output = run(&["man", "--out-dir", &out]);
    assert_eq!(output.status.code(), Some(0));
    let main = std::fs::read_to_string(dir.path().join("switchboard.1")).expect("the main page");
    let named: Vec<String> = main
        .split("switchboard\\-")
        .skip(1)
        .filter_map(|rest| Some(rest.split_once("(1)")?.0.to_owned()))
        .filter(|name| name.chars().all(|c| c.is_ascii_lowercase()))
        .collect();
    for sub in [
        "registry",
        "node",
        "load",
        "demo",
        "send",
        "ls",
        "call",
        "broadcast",
        "swarm",
        "completions",
        "keygen",
        "cert",
        "man",
    ] {
        assert!(named.iter().any(|n| n == sub), "{sub} not named: {named:?}");
        let page = std::fs::read_to_string(dir.path().join(format!("switchboard-{sub}.1")))
            .unwrap_or_else(|e| panic!("switchboard-{sub}.1: {e}"));
        assert!(
            page.contains(&format!("\n.TH switchboard-{sub} 1 ")),
            "{sub}:\n{page}"
        );
    }
    let output = run(&["man", "call"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).contains("\n.TH switchboard-call 1 "));
    let output = run(&["man", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .starts_with("error: subcommand: no subcommand \"nope\" (one of registry, node, "),
    );
}

#[test]
fn a_malformed_etcd_url_is_refused_before_anything_starts() {
    // Checked with or without the `etcd` feature: the flag is parsed either way.
    let output = run(&[
        "node",
        "--id",
        "1",
        "--name",
        "a",
        "--listen",
        "127.0.0.1:0",
        "--etcd",
        "ht!tp://::nope",
    ]);
    assert_usage_error(
        &output,
        "error: invalid value 'ht!tp://::nope' for '--etcd <URL[,URL...]>': the scheme is not \
         http or https in etcd URL \"ht!tp://::nope\" (expected http://HOST:PORT)",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write(
        dir.path(),
        "node.toml",
        "id = 7\nname = \"a\"\nlisten = \"127.0.0.1:0\"\netcd = [\"http://127.0.0.1\"]\n",
    );
    let output = run(&["node", "--config", &config]);
    assert_usage_error(
        &output,
        "error: etcd: no port in etcd URL \"http://127.0.0.1\" (expected http://HOST:PORT)",
    );
}

#[test]
fn a_wildcard_listen_without_an_advertised_address_is_refused() {
    let node = |extra: &[&str]| {
        let mut args = vec![
            "node",
            "--id",
            "7",
            "--name",
            "a",
            "--registry",
            "127.0.0.1:1",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    assert_usage_error(
        &node(&["--listen", "0.0.0.0:0"]),
        "error: advertise: required when listening on 0.0.0.0:0 (a wildcard address): give \
         HOST[:PORT], the address other hosts reach this node at",
    );
    assert_usage_error(
        &node(&["--listen", "[::]:4100"]),
        "error: advertise: required when listening on [::]:4100 (a wildcard address): give \
         HOST[:PORT], the address other hosts reach this node at",
    );
    assert_usage_error(
        &node(&["--listen", "0.0.0.0:0", "--advertise", "10.0.0.5:99999"]),
        "error: advertise: port \"99999\" is not a number in 1..=65535",
    );
    assert_usage_error(
        &node(&["--listen", "0.0.0.0:0", "--advertise", "bad_host"]),
        "error: advertise: \"bad_host\" is not a host name or IP address",
    );
    assert_usage_error(
        &node(&["--listen", "127.0.0.1:0", "--advertise", "0.0.0.0"]),
        "error: advertise: 0.0.0.0 is a wildcard address; give the address other hosts reach \
         this node at",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write(
        dir.path(),
        "node.toml",
        "id = 7\nname = \"a\"\nlisten = \"0.0.0.0:0\"\nadvertise = \"\"\n\
         registry = \"127.0.0.1:1\"\n",
    );
    assert_usage_error(
        &run(&["node", "--config", &config]),
        "error: advertise: is empty; give HOST or HOST:PORT",
    );
}
