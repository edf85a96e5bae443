//! The binary's security flags end to end: `--admin PORT` on loopback with
//! `--admin-token-file` (401 without the token, 200 with it), and the etcd TLS and user flags
//! checked at start (a bad file is exit 2 naming the flag; the password never reaches the
//! logs).

mod cli_support;

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
};

use cli_support::{Running, STEP, lines, run_to_end, str_field};

/// Status code of `GET path` on `addr` with extra header lines.
fn status_of(addr: SocketAddr, path: &str, headers: &str) -> u16 {
    let mut stream = TcpStream::connect_timeout(&addr, STEP).expect("connect to admin");
    stream.set_read_timeout(Some(STEP)).expect("read timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: test\r\n{headers}Connection: close\r\n\r\n"
    )
    .expect("write request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read answer");
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("a status code in {answer:?}"))
}

#[test]
fn a_registry_admin_on_a_bare_port_is_on_loopback_and_needs_the_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token_file = dir.path().join("token");
    cli_support::write_secret(&token_file, "adm1n-t0ken\n");
    let mut registry = Running::start(&[
        "registry",
        "--listen",
        "127.0.0.1:0",
        "--admin",
        "0",
        "--admin-token-file",
        token_file.to_str().expect("utf-8 path"),
    ]);
    let ready = registry.next_json("registry ready");
    let admin: SocketAddr = str_field(&ready, "admin").parse().expect("an address");
    assert!(admin.ip().is_loopback(), "{admin}");
    assert_eq!(status_of(admin, "/metrics", ""), 401);
    assert_eq!(
        status_of(admin, "/metrics", "Authorization: Bearer wrong\r\n"),
        401
    );
    assert_eq!(
        status_of(admin, "/metrics", "Authorization: Bearer adm1n-t0ken\r\n"),
        200
    );
    assert_eq!(
        status_of(admin, "/healthz", "Authorization: Bearer adm1n-t0ken\r\n"),
        200
    );
}

#[test]
fn a_missing_admin_token_file_is_exit_2_naming_the_flag() {
    let (output, _) = run_to_end(
        &[
            "registry",
            "--listen",
            "127.0.0.1:0",
            "--admin",
            "0",
            "--admin-token-file",
            "/nonexistent/token",
        ],
        STEP,
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = lines(&output.stderr);
    assert!(
        stderr
            .iter()
            .any(|l| l.starts_with("error: admin_token_file: cannot read /nonexistent/token")),
        "{stderr:?}"
    );
}

#[test]
fn a_missing_etcd_ca_file_is_exit_2_naming_the_flag() {
    for sub in [&["ls"][..], &["send", "--to", "x", "--payload", "p"]] {
        let mut args = sub.to_vec();
        args.extend([
            "--etcd",
            "https://127.0.0.1:2379",
            "--etcd-ca",
            "/nonexistent/ca.pem",
        ]);
        let (output, _) = run_to_end(&args, STEP);
        assert_eq!(output.status.code(), Some(2), "{sub:?}");
        let stderr = lines(&output.stderr);
        assert!(
            stderr
                .iter()
                .any(|l| l.starts_with("error: etcd_ca: cannot read /nonexistent/ca.pem")),
            "{sub:?}: {stderr:?}"
        );
    }
}

#[cfg(feature = "etcd")]
#[test]
fn the_etcd_password_never_reaches_the_logs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let password_file = dir.path().join("password");
    cli_support::write_secret(&password_file, "pa55-w0rd-xyz\n");
    let url = format!("http://127.0.0.1:{}", cli_support::closed_port());
    let mut command = std::process::Command::new(cli_support::BIN);
    command
        .args([
            "ls",
            "--etcd",
            &url,
            "--etcd-user",
            "root",
            "--etcd-password-file",
            password_file.to_str().expect("utf-8 path"),
            "--etcd-insecure-password",
            "--timeout",
            "2500ms",
        ])
        .env("RUST_LOG", "trace");
    let output = command.output().expect("run switchboard ls");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(!text.contains("pa55-w0rd-xyz"), "{text}");
}

#[cfg(unix)]
#[test]
fn key_token_and_password_files_others_may_read_exit_2_naming_the_file_and_the_fix() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("cluster.key");
    cli_support::write_secret(&key, &format!("{}\n", "ab".repeat(32)));
    let token = dir.path().join("token");
    cli_support::write_secret(&token, "t0ken\n");
    let password = dir.path().join("password");
    cli_support::write_secret(&password, "pw\n");
    let (k, t, p) = (
        key.display().to_string(),
        token.display().to_string(),
        password.display().to_string(),
    );
    let cases: Vec<(Vec<&str>, &str, &std::path::Path, u32)> = vec![
        (
            vec![
                "registry",
                "--listen",
                "127.0.0.1:0",
                "--cluster-key-file",
                &k,
            ],
            "cluster_key_file",
            &key,
            0o644,
        ),
        (
            vec![
                "registry",
                "--listen",
                "127.0.0.1:0",
                "--admin",
                "0",
                "--admin-token-file",
                &t,
            ],
            "admin_token_file",
            &token,
            0o640,
        ),
        (
            vec![
                "ls",
                "--etcd",
                "https://127.0.0.1:2379",
                "--etcd-ca",
                &k,
                "--etcd-user",
                "root",
                "--etcd-password-file",
                &p,
            ],
            "etcd_password_file",
            &password,
            0o604,
        ),
    ];
    for (args, field, file, mode) in cases {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let (out, _) = run_to_end(&args, STEP);
        let stderr = lines(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr:?}");
        let f = file.display();
        assert_eq!(
            stderr.first().map(String::as_str),
            Some(
                format!(
                    "error: {field}: {f} is accessible by group or others (mode {mode:04o}); it \
                     holds a secret: run `chmod 600 {f}`"
                )
                .as_str()
            ),
            "{args:?}"
        );
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
}

#[cfg(feature = "etcd")]
#[test]
fn an_etcd_password_over_http_needs_etcd_insecure_password() {
    let dir = tempfile::tempdir().expect("tempdir");
    let password_file = dir.path().join("password");
    cli_support::write_secret(&password_file, "pa55-w0rd-xyz\n");
    let (out, _) = run_to_end(
        &[
            "ls",
            "--etcd",
            "http://127.0.0.1:2379",
            "--etcd-user",
            "root",
            "--etcd-password-file",
            password_file.to_str().expect("utf-8 path"),
        ],
        STEP,
    );
    let stderr = lines(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr:?}");
    assert_eq!(
        stderr.first().map(String::as_str),
        Some(
            "error: etcd_password_file: the password would cross the network in clear over \
             http:// etcd URLs: use https:// (with --etcd-ca), or accept the risk with \
             --etcd-insecure-password"
        )
    );
}

#[cfg(not(feature = "tls"))]
#[test]
fn cert_in_a_build_without_tls_exits_2() {
    let (out, _) = run_to_end(&["cert", "ca", "--out", "/nonexistent/pki"], STEP);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        lines(&out.stderr),
        vec!["error: cert: this build has no TLS (build switchboard with the `tls` feature)"]
    );
}
