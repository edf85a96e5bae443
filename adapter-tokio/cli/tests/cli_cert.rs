//! `switchboard cert` (feature `tls`): a cluster CA and per-node certificates written with
//! exact modes and never overwritten, bad flags exit 2; and real processes using them with
//! `--tls-require-node-id`: a load node started as id 8 with the certificate of node 7 is
//! refused by the registry (never listed, sends nothing), the same certificate as id 7
//! registers and delivers everything.

#![cfg(feature = "tls")]

mod cli_support;

use std::{path::Path, time::Duration};

use cli_support::{Running, http_get, run_to_end, str_field, u64_field};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let (out, _) = run_to_end(args, LIMIT);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).expect("meta").permissions().mode() & 0o777
}

/// `cert ca` then `cert node` for each of `nodes` (id, or a name for a certificate naming
/// no id) into `dir`.
fn pki(dir: &Path, nodes: &[&str]) {
    let (code, _, err) = run(&["cert", "ca", "--out", &s(dir)]);
    assert_eq!(code, Some(0), "{err}");
    for node in nodes {
        let flag = if node.bytes().all(|b| b.is_ascii_digit()) {
            "--id"
        } else {
            "--name"
        };
        let (code, _, err) = run(&[
            "cert",
            "node",
            flag,
            node,
            "--ca-dir",
            &s(dir),
            "--out",
            &s(dir),
        ]);
        assert_eq!(code, Some(0), "{err}");
    }
}

#[test]
fn cert_ca_and_node_write_exact_files_and_never_overwrite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pki_dir = dir.path().join("pki");
    let d = s(&pki_dir);
    let (code, out, err) = run(&["cert", "ca", "--out", &d]);
    assert_eq!(code, Some(0), "{err}");
    let line: Value = serde_json::from_str(out.trim_end()).expect("one JSON line");
    assert_eq!(
        line,
        serde_json::json!({"ca": format!("{d}/ca.pem"), "ca_key": format!("{d}/ca.key")})
    );
    let (code, out, err) = run(&["cert", "node", "--id", "7", "--ca-dir", &d, "--out", &d]);
    assert_eq!(code, Some(0), "{err}");
    let line: Value = serde_json::from_str(out.trim_end()).expect("one JSON line");
    assert_eq!(
        line,
        serde_json::json!({
            "cert": format!("{d}/node-7.pem"),
            "key": format!("{d}/node-7.key"),
            "ca": format!("{d}/ca.pem"),
            "node_id": 7,
        })
    );
    let (code, out, err) = run(&[
        "cert",
        "node",
        "--name",
        "registry",
        "--ca-dir",
        &d,
        "--out",
        &d,
        "--dns",
        "registry.internal",
        "--ip",
        "127.0.0.1",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(r#""node_id":null"#), "{out}");
    #[cfg(unix)]
    {
        for (file, expected) in [
            ("ca.key", 0o600),
            ("ca.pem", 0o644),
            ("node-7.key", 0o600),
            ("node-7.pem", 0o644),
            ("registry.key", 0o600),
            ("registry.pem", 0o644),
        ] {
            assert_eq!(mode(&pki_dir.join(file)), expected, "{file}");
        }
    }
    // The node certificate names its id; the registry's names none.
    use switchboard_core::ids::NodeId;
    use switchboard_tokio::transport::tls::pem_node_ids;
    let ids = |name: &str| pem_node_ids(&std::fs::read(pki_dir.join(name)).expect("PEM"));
    assert_eq!(ids("node-7.pem"), Ok(vec![NodeId(7)]));
    assert_eq!(ids("registry.pem"), Ok(vec![]));
    assert_eq!(ids("ca.pem"), Ok(vec![]));

    // Nothing is overwritten; bad values exit 2 naming the flag.
    let before = std::fs::read(pki_dir.join("node-7.key")).expect("key");
    let missing = s(&dir.path().join("none"));
    for (args, expected) in [
        (
            vec!["cert", "ca", "--out", &d],
            format!("error: out: {d}/ca.pem exists; it is never overwritten"),
        ),
        (
            vec!["cert", "node", "--id", "7", "--ca-dir", &d, "--out", &d],
            format!("error: out: {d}/node-7.pem exists; it is never overwritten"),
        ),
        (
            vec!["cert", "node", "--id", "0", "--ca-dir", &d, "--out", &d],
            String::from("error: id: node id 0 is reserved"),
        ),
        (
            vec![
                "cert", "node", "--name", "../x", "--ca-dir", &d, "--out", &d,
            ],
            String::from(
                "error: name: \"../x\": use letters, digits, `-`, `_` and `.` (it names the files)",
            ),
        ),
        (
            vec![
                "cert", "node", "--id", "9", "--ca-dir", &missing, "--out", &d,
            ],
            format!(
                "error: ca_dir: cannot read {missing}/ca.pem: No such file or directory (os error 2)"
            ),
        ),
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.lines().next(), Some(expected.as_str()), "{args:?}");
    }
    let (code, _, err) = run(&["cert", "node", "--ca-dir", &d, "--out", &d]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--id"), "{err}");
    assert_eq!(
        std::fs::read(pki_dir.join("node-7.key")).expect("key"),
        before
    );
    // A CA key others may read is refused, naming the file and the fix.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let key = pki_dir.join("ca.key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let (code, _, err) = run(&["cert", "node", "--id", "9", "--ca-dir", &d, "--out", &d]);
        assert_eq!(code, Some(2), "{err}");
        let k = s(&key);
        assert_eq!(
            err.lines().next(),
            Some(
                format!(
                    "error: ca_dir: {k} is accessible by group or others (mode 0644); it holds \
                     a secret: run `chmod 600 {k}`"
                )
                .as_str()
            )
        );
    }
}

fn tls_flags(dir: &Path, name: &str) -> Vec<String> {
    vec![
        "--tls-cert".into(),
        s(&dir.join(format!("{name}.pem"))),
        "--tls-key".into(),
        s(&dir.join(format!("{name}.key"))),
        "--tls-ca".into(),
        s(&dir.join("ca.pem")),
    ]
}

fn with(args: &[&str], extra: &[String]) -> Vec<String> {
    args.iter()
        .map(|a| (*a).to_owned())
        .chain(extra.iter().cloned())
        .collect()
}

fn refusals(admin: &str, kind: &str) -> u64 {
    let (status, _, body) = http_get(admin.parse().expect("admin address"), "/metrics");
    assert_eq!(status, 200);
    let prefix = format!("switchboard_auth_refusals_total{{kind=\"{kind}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |n| n.trim().parse().expect("a count"))
}

#[test]
fn a_certificate_for_node_7_registers_and_links_as_7_and_is_refused_as_8() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pki_dir = dir.path();
    pki(pki_dir, &["registry", "1", "7"]);
    let args = with(
        &["registry", "--listen", "127.0.0.1:0"],
        &tls_flags(pki_dir, "registry"),
    );
    let mut registry = Running::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let ready = registry.next_json("registry ready");
    let addr = str_field(&ready, "listen").to_owned();
    let mut node_flags = tls_flags(pki_dir, "node-1");
    node_flags.push("--tls-require-node-id".into());
    let args = with(
        &[
            "node",
            "--id",
            "1",
            "--name",
            "target",
            "--listen",
            "127.0.0.1:0",
            "--registry",
            &addr,
            "--admin",
            "127.0.0.1:0",
        ],
        &node_flags,
    );
    let mut node = Running::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let ready = node.next_json("node ready");
    assert_eq!(ready["registered"], true, "{ready}");
    let admin = str_field(&ready, "admin").to_owned();

    let config = pki_dir.join("load.toml");
    std::fs::write(&config, "[core]\nmessage_timeout_ms = 3000\n").expect("config");
    let load = |id: &str, count: &str| {
        let args = with(
            &[
                "load",
                "--registry",
                &addr,
                "--to",
                "target",
                "--count",
                count,
                "--rate",
                "0",
                "--size",
                "16",
                "--id",
                id,
                "--config",
                &s(&config),
            ],
            &tls_flags(pki_dir, "node-7"),
        );
        run(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    // As node 8 with node 7's certificate: the registry refuses the registration, so the load
    // node never learns the target and sends nothing.
    let (code, out, err) = load("8", "3");
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.lines()
            .any(|l| l == format!("error: load: the registry at {addr} did not answer within 10 s")),
        "{err}"
    );
    let listed = |addr: &str| {
        let args = with(
            &["ls", "--registry", addr, "-o", "json"],
            &tls_flags(pki_dir, "registry"),
        );
        let (code, out, err) = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(code, Some(0), "{err}");
        let nodes: Vec<Value> = serde_json::from_str(out.trim_end()).expect("a JSON array");
        nodes
            .iter()
            .map(|n| u64_field(n, "id"))
            .collect::<Vec<u64>>()
    };
    assert_eq!(listed(&addr), vec![1]);
    let refused = refusals(&admin, "not_certified");
    // As node 7 with its own certificate: everything is delivered.
    let (code, out, err) = load("7", "200");
    assert_eq!(code, Some(0), "{out}\n{err}");
    let summary: Value =
        serde_json::from_str(out.lines().last().expect("the load summary")).expect("JSON");
    assert_eq!(u64_field(&summary, "delivered"), 200, "{summary}");
    assert_eq!(refusals(&admin, "not_certified"), refused, "no new refusal");
}

#[test]
fn require_node_id_without_tls_exits_2() {
    let (code, _, err) = run(&[
        "registry",
        "--listen",
        "127.0.0.1:0",
        "--tls-require-node-id",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err.lines().next(),
        Some(
            "error: tls_require_node_id: only used with TLS: give --tls-cert, --tls-key and --tls-ca"
        )
    );
}
