//! Validation at the door (issue 24 item 4): thirty-two bad inputs — flags, config files,
//! reserved labels, sizes beyond the queue, unwritable logs, open key files, names that do
//! not resolve, bad payloads and durations — each exits 2 before anything starts, with exactly
//! one line on stderr naming the field. Real processes; the slowest exit is printed as a
//! `figure:` line (the bound asserted is loose: speed is not what this test measures).

mod cli_support;

use std::time::Duration;

use cli_support::{lines, run_to_end};

/// A generous bound on one refused run (they take ~10 ms each on an idle machine).
const EXIT_BOUND: Duration = Duration::from_secs(5);

/// How a case's one line is matched.
enum Line {
    Exact(&'static str),
    /// A prefix (the rest is the platform's own words).
    Starts(&'static str),
    /// A line made at run time (it names a temporary path).
    Made(String),
}

#[test]
fn thirty_two_bad_inputs_exit_2_with_one_line_naming_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("open.key");
    std::fs::write(&key, [7u8; 32]).expect("write the key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    let bad_toml = dir.path().join("bad.toml");
    std::fs::write(&bad_toml, "listen = \"127.0.0.1:0\"\nbogus = 1\n").expect("write");
    let (key, bad_toml) = (key.display().to_string(), bad_toml.display().to_string());
    let node = |extra: &[&str]| -> Vec<String> {
        let mut args = [
            "node",
            "--id",
            "1",
            "--name",
            "a",
            "--listen",
            "127.0.0.1:0",
        ]
        .map(str::to_owned)
        .to_vec();
        args.extend(["--registry", "127.0.0.1:1"].map(str::to_owned));
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    };
    let load = |extra: &[&str]| -> Vec<String> {
        let mut args = ["load", "--registry", "127.0.0.1:1", "--to", "a"]
            .map(str::to_owned)
            .to_vec();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    };
    let words = |text: &str| -> Vec<String> { text.split(' ').map(str::to_owned).collect() };
    let key_line = format!(
        "error: cluster_key_file: {key} is accessible by group or others (mode 0644); it holds a \
         secret: run `chmod 600 {key}`"
    );
    let cases: Vec<(Vec<String>, Line)> = vec![
        (
            vec![
                "node",
                "--id",
                "1",
                "--name",
                "",
                "--listen",
                "127.0.0.1:0",
                "--registry",
                "127.0.0.1:1",
            ]
            .into_iter()
            .map(str::to_owned)
            .collect(),
            Line::Exact("error: name: must not be empty"),
        ),
        (
            node(&["--label", "rpc.switchboard/echo=serve"]),
            Line::Exact(
                "error: label: rpc.switchboard/echo=serve is reserved: methods are served with \
                 --serve (config key `serve`)",
            ),
        ),
        (
            node(&["--label", "leaving=x"]),
            Line::Exact(
                "error: label: leaving=x is reserved: the drain before a graceful exit sets it",
            ),
        ),
        (
            node(&["--label", "role=client"]),
            Line::Exact(
                "error: label: role=client is reserved: it marks light clients (send, call, load), \
                 not members",
            ),
        ),
        (
            words("node --id 1 --name a --listen nowhere --registry 127.0.0.1:1"),
            Line::Exact(
                "error: invalid value 'nowhere' for '--listen <ADDR>': invalid socket address syntax",
            ),
        ),
        (
            words("node --id 0 --name a --listen 127.0.0.1:0 --registry 127.0.0.1:1"),
            Line::Exact("error: id: node id 0 is reserved"),
        ),
        (node(&["--cluster-key-file", &key]), Line::Made(key_line)),
        (
            vec!["node".to_owned(), "--config".to_owned(), bad_toml.clone()],
            Line::Starts("error: bogus: unknown key, expected one of `id`, `name`, "),
        ),
        (
            vec![
                "registry".to_owned(),
                "--config".to_owned(),
                bad_toml.clone(),
            ],
            Line::Starts("error: bogus: unknown key, expected one of `listen`, `concern`, "),
        ),
        (
            vec!["ls".to_owned(), "--config".to_owned(), bad_toml.clone()],
            Line::Starts("error: bogus: unknown key, expected one of `registry`, `etcd`, "),
        ),
        (
            load(&["--count", "1", "--rate", "0", "--size", "9000000"]),
            Line::Exact(
                "error: size: 9000000 bytes exceeds the pending queue of a target (8388608 bytes, \
                 core.send_buffer_size): every message would fail queue_full",
            ),
        ),
        (
            load(&[
                "--count",
                "1",
                "--rate",
                "0",
                "--size",
                "8",
                "--outcomes-log",
                "/nonexistent/x",
            ]),
            Line::Exact(
                "error: outcomes_log: cannot write /nonexistent/x: No such file or directory (os \
                 error 2)",
            ),
        ),
        (
            load(&["--rate", "0", "--size", "8"]),
            Line::Exact("error: count: required: give --count N"),
        ),
        (
            load(&["--count", "1", "--size", "8"]),
            Line::Exact("error: rate: required: give --rate R (0 = unpaced)"),
        ),
        (
            load(&[
                "--count",
                "1",
                "--rate",
                "0",
                "--size",
                "8",
                "--wait-known",
                "2d",
            ]),
            Line::Exact(
                "error: invalid value '2d' for '--wait-known <D>': an unknown unit in \"2d\" (write \
                 e.g. 250ms, 5s, 1.5s, 1h30m)",
            ),
        ),
        (
            load(&[
                "--count", "1", "--rate", "0", "--size", "8", "--window", "0",
            ]),
            Line::Exact("error: window: must be greater than zero"),
        ),
        (
            words("send --registry x --to a --payload p"),
            Line::Exact(
                "error: invalid value 'x' for '--registry <ADDR>': expected HOST:PORT (e.g. \
                 127.0.0.1:7000 or registry:7000), got \"x\"",
            ),
        ),
        (
            words("send --registry no-such-host.invalid:1 --to a --payload p"),
            Line::Starts("error: registry: cannot resolve no-such-host.invalid:1: "),
        ),
        (
            words("send --etcd ftp://x:1 --to a --payload p"),
            Line::Exact(
                "error: invalid value 'ftp://x:1' for '--etcd <URL[,URL...]>': the scheme is not \
                 http or https in etcd URL \"ftp://x:1\" (expected http://HOST:PORT)",
            ),
        ),
        (
            words("send --registry 127.0.0.1:1 --to a"),
            Line::Exact(
                "error: payload: required: give --payload TEXT|@FILE|-, --payload-hex or \
                 --payload-base64",
            ),
        ),
        (
            words("send --registry 127.0.0.1:1 --to a --payload-hex 0"),
            Line::Exact("error: payload_hex: an odd number of hex digits (1)"),
        ),
        (
            words("send --registry 127.0.0.1:1 --to a --payload p --timeout 0ms"),
            Line::Exact("error: timeout: must be greater than zero"),
        ),
        (
            words("send --registry 127.0.0.1:1 --select bogus --payload p"),
            Line::Exact(
                "error: invalid value 'bogus' for '--select <MODE>': expected one of hash, \
                 round-robin, random, least-outstanding, maglev, bounded, p2c",
            ),
        ),
        (
            words("call --registry 127.0.0.1:1 --method m --server 0"),
            Line::Exact("error: server: must be a node id, not 0"),
        ),
        (
            vec!["call", "--registry", "127.0.0.1:1", "--method", "bad name"]
                .into_iter()
                .map(str::to_owned)
                .collect(),
            Line::Exact(
                "error: method: expected 1 to 128 ASCII letters, digits and `._-:`, got \"bad name\"",
            ),
        ),
        (
            words("call --registry 127.0.0.1:1 --method m --timeout 0s"),
            Line::Exact("error: timeout: must be greater than zero"),
        ),
        (
            words("call --registry 127.0.0.1:1 --method m --timeout 1d"),
            Line::Exact(
                "error: invalid value '1d' for '--timeout <D>': an unknown unit in \"1d\" (write \
                 e.g. 250ms, 5s, 1.5s, 1h30m)",
            ),
        ),
        (
            words("call --registry 127.0.0.1:1 --method m --timeout -1s"),
            Line::Exact(
                "error: invalid value '-1s' for '--timeout <D>': a negative duration in \"-1s\" \
                 (write e.g. 250ms, 5s, 1.5s, 1h30m)",
            ),
        ),
        (
            words("call --registry 127.0.0.1:1 --method m --payload-base64 !!"),
            Line::Exact("error: payload_base64: not base64: Invalid symbol 33, offset 0."),
        ),
        (
            words("broadcast --registry 127.0.0.1:1 --label noequals --payload p"),
            Line::Exact(
                "error: invalid value 'noequals' for '--label <K=V>': expected KEY=VALUE, got \
                 \"noequals\"",
            ),
        ),
        (
            words("swarm --nodes 1 --registry 127.0.0.1:1"),
            Line::Exact("error: nodes: must be at least 2"),
        ),
        (
            words("call --registry 127.0.0.1:1 --method m --grace 1h30m --timeout 25h"),
            Line::Exact(
                "error: invalid value '25h' for '--timeout <D>': more than a day in \"25h\" \
                 (write e.g. 250ms, 5s, 1.5s, 1h30m)",
            ),
        ),
    ];
    assert_eq!(cases.len(), 32);
    let mut slowest = Duration::ZERO;
    for (args, want) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (output, elapsed) = run_to_end(&args, EXIT_BOUND);
        slowest = slowest.max(elapsed);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = lines(&output.stderr);
        assert_eq!(stderr.len(), 1, "{args:?}: {stderr:?}");
        match want {
            Line::Exact(line) => assert_eq!(stderr[0], *line, "{args:?}"),
            Line::Made(line) => assert_eq!(&stderr[0], line, "{args:?}"),
            Line::Starts(head) => assert!(stderr[0].starts_with(head), "{args:?}: {stderr:?}"),
        }
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    println!("figure: door_slowest_refusal_ms {}", slowest.as_millis());
}
