//! The config helpers' unit tests: TOML reading, merges, checks.

use std::{net::SocketAddr, time::Duration};

use serde::Deserialize;

use super::*;

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Sample {
    listen: Option<SocketAddr>,
    inner: Option<Inner>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Inner {
    count: Option<u32>,
}

fn field_problem(text: &str) -> (String, String) {
    match parse_toml::<Sample>(text) {
        Err(TomlProblem::Field { field, message }) => (field, message),
        other => panic!("expected a field problem, got {other:?}"),
    }
}

#[test]
fn an_unknown_top_level_key_is_named() {
    assert_eq!(
        field_problem("listen = \"127.0.0.1:1\"\nbogus = 1\n"),
        (
            "bogus".to_owned(),
            "unknown key, expected `listen` or `inner`".to_owned()
        )
    );
}

#[test]
fn an_unknown_nested_key_is_named_with_its_table() {
    assert_eq!(
        field_problem("[inner]\ncout = 3\n"),
        (
            "inner.cout".to_owned(),
            "unknown key, expected `count`".to_owned()
        )
    );
}

#[test]
fn a_bad_value_is_named_with_its_path() {
    let (field, message) = field_problem("listen = \"nowhere\"\n");
    assert_eq!(field, "listen");
    assert_eq!(message, "invalid socket address syntax");
    let (field, message) = field_problem("[inner]\ncount = \"three\"\n");
    assert_eq!(field, "inner.count");
    assert_eq!(message, "invalid type: string \"three\", expected u32");
}

#[test]
fn a_syntax_error_reports_its_line() {
    match parse_toml::<Sample>("listen = \"127.0.0.1:1\"\n[inner\n") {
        Err(TomlProblem::Syntax { line, .. }) => assert_eq!(line, 2),
        other => panic!("expected a syntax problem, got {other:?}"),
    }
}

#[test]
fn a_valid_file_deserializes() {
    assert_eq!(
        parse_toml::<Sample>("listen = \"127.0.0.1:1\"\n[inner]\ncount = 3\n"),
        Ok(Sample {
            listen: Some(SocketAddr::from(([127, 0, 0, 1], 1))),
            inner: Some(Inner { count: Some(3) }),
        })
    );
}

#[test]
fn paths_in_a_config_file_are_relative_to_it() {
    let config = Path::new("/etc/sb/registry.toml");
    assert_eq!(
        relative_to(Some(config), PathBuf::from("concern.toml")),
        PathBuf::from("/etc/sb/concern.toml")
    );
    assert_eq!(
        relative_to(Some(config), PathBuf::from("/abs/c.toml")),
        PathBuf::from("/abs/c.toml")
    );
    assert_eq!(
        relative_to(None, PathBuf::from("c.toml")),
        PathBuf::from("c.toml")
    );
}

fn field_of(e: CliError) -> String {
    match e {
        CliError::Invalid { field, .. } => field,
        CliError::Failed(m) => panic!("expected an invalid value, got failure {m}"),
        other @ CliError::Interrupted { .. } => panic!("expected an invalid value, got {other}"),
    }
}

#[test]
fn the_registry_is_embedded_or_etcd_never_both_nor_neither() {
    let addr = SocketAddr::from(([127, 0, 0, 1], 7000));
    assert_eq!(
        registry_spec(Some(addr.into()), None, None, EtcdSecurity::default()).expect("embedded"),
        RegistrySpec::Embedded(addr)
    );
    let urls = vec!["http://127.0.0.1:2379".to_owned()];
    let mut expected = EtcdOptions::new(urls.clone());
    expected.prefix = "/demo/".to_owned();
    assert_eq!(
        registry_spec(
            None,
            Some(urls.clone()),
            Some("/demo/".to_owned()),
            EtcdSecurity::default()
        )
        .expect("etcd"),
        RegistrySpec::Etcd(expected)
    );
    let both = registry_spec(
        Some(addr.into()),
        Some(urls.clone()),
        None,
        EtcdSecurity::default(),
    )
    .expect_err("both");
    assert_eq!(
        both.to_string(),
        "registry: give either registry or etcd, not both"
    );
    assert_eq!(
        field_of(registry_spec(None, None, None, EtcdSecurity::default()).expect_err("neither")),
        "registry"
    );
    assert_eq!(
        field_of(
            registry_spec(None, Some(vec![]), None, EtcdSecurity::default()).expect_err("empty")
        ),
        "etcd"
    );
    assert_eq!(
        field_of(
            registry_spec(
                None,
                Some(urls),
                Some("/x".to_owned()),
                EtcdSecurity::default()
            )
            .expect_err("slash")
        ),
        "etcd_prefix"
    );
    assert_eq!(
        field_of(
            registry_spec(
                Some(addr.into()),
                None,
                Some("/x/".to_owned()),
                EtcdSecurity::default()
            )
            .expect_err("prefix")
        ),
        "etcd_prefix"
    );
}

fn identity(id: u64, upstream: Option<u64>) -> Identity {
    Identity {
        id,
        name: "leaf-1".to_owned(),
        upstream,
        labels: BTreeMap::from([("role".to_owned(), "leaf".to_owned())]),
    }
}

#[test]
fn the_core_table_is_merged_with_the_identity_from_flags() {
    let core: Config =
        parse_toml("message_timeout_ms = 1500\nheartbeat_interval_ms = 250\n").expect("core");
    let config = core_config(Some(core), identity(7, Some(3))).expect("valid");
    assert_eq!(config.id.0, 7);
    assert_eq!(config.name, "leaf-1");
    assert_eq!(config.upstream.0, 3);
    assert_eq!(config.labels.get("role").map(String::as_str), Some("leaf"));
    assert_eq!(config.message_timeout, Duration::from_millis(1500));
    assert_eq!(config.heartbeat_interval, Duration::from_millis(250));
    assert_eq!(
        config.reconnect_max_tries, 8,
        "untouched keys keep their defaults"
    );
    assert_eq!(config.send_grace, Duration::from_secs(15));
}

/// Zero is refused like every other duration (`Config::validate`, tested in the core).
#[test]
fn the_send_grace_is_a_core_key_in_milliseconds() {
    let core: Config = parse_toml("send_grace_ms = 2500\n").expect("core");
    let config = core_config(Some(core), identity(7, None)).expect("valid");
    assert_eq!(config.send_grace, Duration::from_millis(2500));
}

/// Outlier ejection (issue 26) is switched and tuned by its `outlier_*` keys in the `[core]`
/// table of `node` and `load` files; an invalid value names its key.
#[test]
fn outlier_ejection_is_set_in_the_core_table() {
    let core: Config = parse_toml(
        "outlier_ejection = false\noutlier_consecutive_failures = 3\n\
         outlier_base_ejection_time_ms = 1000\noutlier_max_ejection_percent = 50\n",
    )
    .expect("core");
    let outlier = core_config(Some(core), identity(7, None))
        .expect("valid")
        .outlier();
    assert_eq!(
        (
            outlier.enabled,
            outlier.consecutive_failures,
            outlier.base_ejection_time,
            outlier.max_ejection_percent,
        ),
        (false, 3, Duration::from_secs(1), 50)
    );
    let bad: Config = parse_toml("outlier_max_ejection_percent = 101\n").expect("core");
    assert_eq!(
        core_config(Some(bad), identity(7, None))
            .expect_err("over 100")
            .to_string(),
        "core: outlier_max_ejection_percent is 101; it must be between 0 and 100"
    );
}

#[test]
fn core_errors_name_the_key() {
    let zero: Config = parse_toml("message_timeout_ms = 0\n").expect("core");
    assert_eq!(
        core_config(Some(zero), identity(7, None))
            .expect_err("zero")
            .to_string(),
        "core.message_timeout_ms: must be greater than zero"
    );
    let own_id: Config = parse_toml("id = 9\n").expect("core");
    assert_eq!(
        field_of(core_config(Some(own_id), identity(7, None)).expect_err("id in core")),
        "core.id"
    );
    assert_eq!(
        field_of(core_config(None, identity(0, None)).expect_err("id 0")),
        "id"
    );
    assert_eq!(
        field_of(core_config(None, identity(7, Some(7))).expect_err("self upstream")),
        "upstream"
    );
    match parse_toml::<Config>("message_timeout = 5\n") {
        Err(TomlProblem::Field { field, .. }) => assert_eq!(field, "message_timeout"),
        other => panic!("expected an unknown key, got {other:?}"),
    }
}

/// `registry_spec` for `urls` with `security`: the options, or the field and problem.
fn etcd_with(urls: &[&str], security: EtcdSecurity) -> Result<EtcdOptions, (String, String)> {
    let urls = urls.iter().map(|u| (*u).to_owned()).collect();
    match registry_spec(None, Some(urls), None, security) {
        Ok(RegistrySpec::Etcd(options)) => Ok(options),
        Ok(other) => panic!("expected etcd, got {other:?}"),
        Err(CliError::Invalid { field, problem }) => Err((field, problem)),
        Err(e) => panic!("expected an invalid value, got {e}"),
    }
}

#[test]
fn etcd_tls_and_user_files_are_checked_and_passed_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        crate::secret_file::create_private("test", &path, text.as_bytes()).expect("write");
        path
    };
    let pem = file("ca.pem", "-----BEGIN CERTIFICATE-----\n");
    let password = file("password", "pw\n");
    let empty = file("empty", "\n");
    let missing = dir.path().join("missing.pem");
    let https = ["https://127.0.0.1:2379"];
    let http = ["http://127.0.0.1:2379"];
    let full = EtcdSecurity {
        ca: Some(pem.clone()),
        cert: Some(pem.clone()),
        key: Some(pem.clone()),
        user: Some("root".to_owned()),
        password_file: Some(password.clone()),
        insecure_password: false,
    };
    let options = etcd_with(&https, full.clone()).expect("valid");
    assert_eq!(options.ca.as_ref(), Some(&pem));
    assert_eq!(
        (options.cert.as_ref(), options.key.as_ref()),
        (Some(&pem), Some(&pem))
    );
    assert_eq!(options.user.as_deref(), Some("root"));
    assert_eq!(options.password_file.as_ref(), Some(&password));
    assert!(
        !format!("{options:?}").contains("pw\n"),
        "the password is not kept"
    );

    let bad = |security: EtcdSecurity, urls: &[&str]| {
        let (field, problem) = etcd_with(urls, security).expect_err("invalid");
        format!("{field}: {problem}")
    };
    let e = bad(
        EtcdSecurity {
            ca: Some(missing.clone()),
            ..full.clone()
        },
        &https,
    );
    assert!(
        e.starts_with("etcd_ca: cannot read ") && e.contains("missing.pem"),
        "{e}"
    );
    let e = bad(
        EtcdSecurity {
            key: Some(missing.clone()),
            ..full.clone()
        },
        &https,
    );
    assert!(e.starts_with("etcd_key: cannot read "), "{e}");
    let e = bad(
        EtcdSecurity {
            password_file: Some(empty),
            ..full.clone()
        },
        &https,
    );
    assert!(
        e.starts_with("etcd_password_file: ") && e.ends_with("is empty"),
        "{e}"
    );
    let e = bad(
        EtcdSecurity {
            password_file: Some(missing),
            ..full.clone()
        },
        &https,
    );
    assert!(e.starts_with("etcd_password_file: cannot read "), "{e}");
    let e = bad(
        EtcdSecurity {
            ca: None,
            ..full.clone()
        },
        &https,
    );
    assert!(e.starts_with("etcd_ca: required with https://"), "{e}");
    let e = bad(full.clone(), &http);
    assert_eq!(e, "etcd_ca: only used with https:// etcd URLs");
    let e = bad(
        EtcdSecurity {
            key: None,
            ..full.clone()
        },
        &https,
    );
    assert_eq!(e, "etcd_cert: needs --etcd-key as well");
    let e = bad(
        EtcdSecurity {
            user: None,
            ..full.clone()
        },
        &https,
    );
    assert_eq!(e, "etcd_password_file: needs --etcd-user as well");
    let e = bad(full.clone(), &["https://a:1", "http://b:1"]);
    assert_eq!(e, "etcd: mixes https:// and http:// URLs (use one scheme)");
    // A user and password on plain http is refused unless the risk is accepted.
    let plain = EtcdSecurity {
        user: Some("root".to_owned()),
        password_file: Some(password.clone()),
        ..EtcdSecurity::default()
    };
    assert_eq!(
        bad(plain.clone(), &http),
        "etcd_password_file: the password would cross the network in clear over http:// etcd \
         URLs: use https:// (with --etcd-ca), or accept the risk with --etcd-insecure-password"
    );
    let plain = EtcdSecurity {
        insecure_password: true,
        ..plain
    };
    assert!(etcd_with(&http, plain.clone()).is_ok());
    assert_eq!(
        bad(
            EtcdSecurity {
                user: None,
                password_file: None,
                ..plain.clone()
            },
            &http
        ),
        "etcd_insecure_password: only used with --etcd-password-file"
    );
    // A password or key file others may read is refused, naming the file and the fix.
    #[cfg(unix)]
    for (field, security) in [
        ("etcd_password_file", full.clone()),
        (
            "etcd_key",
            EtcdSecurity {
                key: Some(password.clone()),
                ..full.clone()
            },
        ),
    ] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&password, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let p = password.display();
        assert_eq!(
            bad(security, &https),
            format!(
                "{field}: {p} is accessible by group or others (mode 0644); it holds a secret: \
                 run `chmod 600 {p}`"
            )
        );
        std::fs::set_permissions(&password, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 7000));
    assert_eq!(
        field_of(registry_spec(Some(addr.into()), None, None, plain).expect_err("not etcd")),
        "etcd_user"
    );
}

#[test]
fn the_admin_token_is_the_files_first_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let admin = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 9100)));
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        let _ = std::fs::remove_file(&path);
        crate::secret_file::create_private("test", &path, text.as_bytes()).expect("write");
        path
    };
    let good = file("token", "s3cret-token\n");
    assert_eq!(
        admin_token(admin, Some(&good)).expect("valid").as_deref(),
        Some("s3cret-token")
    );
    assert_eq!(admin_token(admin, None).expect("none"), None);
    let e = admin_token(None, Some(&good)).expect_err("without --admin");
    assert_eq!(e.to_string(), "admin_token_file: only used with --admin");
    assert_eq!(e.exit_code(), 2);
    for (name, text) in [("empty", "\n"), ("space", "a b\n")] {
        let e = admin_token(admin, Some(&file(name, text))).expect_err(name);
        assert_eq!(field_of(e), "admin_token_file");
    }
    let e = admin_token(admin, Some(&dir.path().join("missing"))).expect_err("missing");
    assert!(
        e.to_string().starts_with("admin_token_file: cannot read "),
        "{e}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&good, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let e = admin_token(admin, Some(&good)).expect_err("group-readable");
        assert_eq!(e.exit_code(), 2);
        let p = good.display();
        assert_eq!(
            e.to_string(),
            format!(
                "admin_token_file: {p} is accessible by group or others (mode 0640); it holds \
                 a secret: run `chmod 600 {p}`"
            )
        );
    }
}
