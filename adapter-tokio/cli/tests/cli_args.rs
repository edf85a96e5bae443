//! The `switchboard` binary's handling of bad input, run as a real process: a bad flag, a bad
//! value, a config file with an unknown key or a wrong value each print exactly one line on
//! stderr naming the field and exit with code 2, before anything is started.

use std::{
    path::Path,
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");
/// Bound on one run of the binary (it exits at once on bad input).
const RUN_LIMIT: Duration = Duration::from_secs(30);

/// Runs the binary with `args`, killing it if it outlives [`RUN_LIMIT`].
fn run(args: &[&str]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the switchboard binary");
    let deadline = Instant::now() + RUN_LIMIT;
    loop {
        if child.try_wait().expect("poll the child").is_some() {
            return child.wait_with_output().expect("collect the output");
        }
        if Instant::now() >= deadline {
            child.kill().expect("kill the stuck child");
            panic!("switchboard {args:?} did not exit within {RUN_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
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
        "error: invalid value 'seven' for '--id <N>': invalid digit found in string",
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
        "error: to: required: give --to NAME or --hash-key K",
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
        "error: port: unknown key, expected one of `listen`, `concern`, `server`",
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

#[test]
fn every_subcommand_has_help() {
    for sub in ["registry", "node", "load", "demo"] {
        let output = run(&[sub, "--help"]);
        assert_eq!(output.status.code(), Some(0), "{sub} --help");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains(&format!("\nUsage: switchboard {sub} [OPTIONS]\n")),
            "{sub} --help:\n{stdout}"
        );
    }
    let output = run(&["demo", "--help"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("message_timeout 3 s"), "{stdout}");
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
