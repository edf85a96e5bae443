//! `Config` defaults, validation and its serde form.

use alloc::string::ToString;

use super::*;

fn valid() -> Config {
    Config::new(NodeId(0x101), "gate-1")
}

#[test]
fn process_facts_fill_only_what_the_operator_left_empty() {
    let bound: SocketAddr = "0.0.0.0:4100".parse().expect("a socket address");
    let mut c = valid();
    c.rng_seed = 7;
    c.fill_from_process(bound, 42, || "host-a".to_string(), 0x100);
    assert_eq!(c.listen, ["atcp://127.0.0.1:4100"]);
    assert_eq!(
        (c.pid, c.hostname.as_str(), c.rng_seed),
        (42, "host-a", 0x107)
    );
    let mut set = valid();
    set.listen = alloc::vec!["atcp://10.0.0.1:1".to_string()];
    set.pid = 9;
    set.hostname = "mine".to_string();
    set.fill_from_process(bound, 42, || unreachable!("the host name is set"), 0);
    assert_eq!(
        (set.listen[0].as_str(), set.pid, set.hostname.as_str()),
        ("atcp://10.0.0.1:1", 9, "mine")
    );
}

#[test]
fn an_advertised_address_is_published_with_the_bound_port_unless_it_has_one() {
    let bound: SocketAddr = "0.0.0.0:4100".parse().expect("a socket address");
    let host = Advertise::parse("10.0.0.5").expect("valid");
    let mut c = valid();
    c.fill_from_process_advertised(bound, Some(&host), 1, String::new, 0);
    assert_eq!(c.listen, ["atcp://10.0.0.5:4100"]);
    let with_port = Advertise::parse("node-a.example:7000").expect("valid");
    let mut c = valid();
    c.fill_from_process_advertised(bound, Some(&with_port), 1, String::new, 0);
    assert_eq!(c.listen, ["atcp://node-a.example:7000"]);
    // An operator's own `listen` wins.
    let mut set = valid();
    set.listen = alloc::vec!["atcp://10.0.0.1:1".to_string()];
    set.fill_from_process_advertised(bound, Some(&host), 1, String::new, 0);
    assert_eq!(set.listen, ["atcp://10.0.0.1:1"]);
}

#[test]
fn the_host_name_is_the_first_non_blank_source_trimmed() {
    assert_eq!(host_name([Some("box-1\n"), Some("env")]), "box-1");
    assert_eq!(host_name([Some("  \n"), Some("env")]), "env");
    assert_eq!(host_name([None, Some("")]), "localhost");
}

#[test]
fn the_published_records_carry_the_node_identity_labels_and_upstream() {
    let mut c = valid();
    c.hostname = "host-a".to_string();
    c.pid = 4242;
    c.listen = alloc::vec!["atcp://127.0.0.1:4100".to_string()];
    c.labels.insert("role".to_string(), "leaf".to_string());
    let d = c.discovery_info();
    assert_eq!(
        (d.id, d.name.as_str(), d.hostname.as_str(), d.pid),
        (NodeId(0x101), "gate-1", "host-a", 4242)
    );
    assert_eq!(d.listen, c.listen);
    assert_eq!(d.metadata.labels, c.labels);
    assert_eq!(d.revision, 0);
    let t = c.topology_info(NodeId(0x10));
    assert_eq!(
        (
            t.id,
            t.name.as_str(),
            t.hostname.as_str(),
            t.pid,
            t.upstream_id
        ),
        (NodeId(0x101), "gate-1", "host-a", 4242, NodeId(0x10))
    );
    assert_eq!(t.data.label, c.labels);
    assert_eq!((d.identity.as_str(), t.identity.as_str()), ("", ""));
    c.identity = "deploy-7".to_string();
    // The secret is never published: the records carry its one-way hash.
    let published = crate::discovery::published_identity("deploy-7");
    assert!(published.starts_with("sha256:") && !published.contains("deploy-7"));
    assert_eq!(c.discovery_info().identity, published);
    assert_eq!(c.topology_info(NodeId(0x10)).identity, published);
    c.pid = i64::from(i32::MAX) + 1;
    assert_eq!(
        c.discovery_info().pid,
        0,
        "a pid out of the record's range is left out"
    );
}

#[test]
fn labels_over_the_registry_limit_are_refused() {
    let mut c = valid();
    // 8 KiB exactly: accepted.
    c.labels.insert("k".repeat(96), "v".repeat(8 * 1024 - 96));
    assert_eq!(c.validate(), Ok(()));
    c.labels.insert("x".to_string(), String::new());
    assert_eq!(
        c.validate(),
        Err(ConfigError::LabelsTooLarge {
            len: 8 * 1024 + 1,
            max: 8 * 1024
        })
    );
}

#[test]
fn the_deployment_identity_is_stable_and_tells_every_part_apart() {
    let base = deployment_identity("host-a", NodeId(7), "leaf", Some("/etc/n.toml"));
    assert_eq!(base.len(), 32);
    assert!(
        base.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert_eq!(
        base,
        deployment_identity("host-a", NodeId(7), "leaf", Some("/etc/n.toml"))
    );
    let others = [
        deployment_identity("host-b", NodeId(7), "leaf", Some("/etc/n.toml")),
        deployment_identity("host-a", NodeId(8), "leaf", Some("/etc/n.toml")),
        deployment_identity("host-a", NodeId(7), "leaf2", Some("/etc/n.toml")),
        deployment_identity("host-a", NodeId(7), "leaf", None),
        // The same bytes split differently between the parts.
        deployment_identity("host-al", NodeId(7), "eaf", Some("/etc/n.toml")),
    ];
    for other in &others {
        assert_ne!(&base, other);
    }
}

#[test]
fn defaults_match_the_architecture_table() {
    let c = Config::default();
    assert_eq!(c.id, NodeId::NONE);
    assert_eq!(c.name, "");
    assert_eq!(c.reconnect_start, Duration::from_secs(1));
    assert_eq!(c.reconnect_max, Duration::from_secs(60));
    assert_eq!(c.reconnect_max_tries, 8);
    assert_eq!(c.reconnect_jitter_percent, 20);
    assert_eq!(c.lost_topology_timeout, Duration::from_secs(120));
    assert_eq!(c.message_timeout, Duration::from_secs(8));
    assert_eq!(c.send_buffer_number, 4096);
    assert_eq!(c.send_buffer_size, 8_388_608);
    assert_eq!(c.endpoint_gc_timeout, Duration::from_secs(60));
    assert_eq!(c.flush_batch, 1000);
    assert_eq!(c.ring_points_per_node, 80);
    assert_eq!(c.ring_hash_mode, crate::hash::HashMode::Fast);
    assert_eq!(c.heartbeat_interval, Duration::from_millis(1_500));
    assert_eq!(c.heartbeat_dead_after, 3);
    assert_eq!(c.suspicion_timeout, Duration::from_millis(1_500));
    assert_eq!(c.handshake_timeout, Duration::from_secs(10));
    assert_eq!(c.max_pending_handshakes, 256);
    assert_eq!(c.rng_seed, 0);
    assert_eq!(c.upstream, NodeId::NONE);
    assert_eq!(c.upstream_address, "");
    assert!(c.listen.is_empty() && c.labels.is_empty());
    assert_eq!((c.hostname.as_str(), c.pid), ("", 0));
    assert_eq!(c.topology_policy, TopologyPolicy::default());
}

#[test]
fn own_upstream_must_differ_from_own_id() {
    let mut c = valid();
    c.upstream = NodeId(0x101);
    assert_eq!(
        c.validate(),
        Err(ConfigError::SelfUpstream { id: NodeId(0x101) })
    );
    c.upstream = NodeId(0x102);
    assert_eq!(c.validate(), Ok(()));
}

#[test]
fn json_reads_identity_and_policy_fields() {
    let c: Config = serde_json::from_str(
        r#"{"id": 257, "upstream": 258, "upstream_address": "tcp://10.0.0.2:21902",
            "listen": ["tcp://0.0.0.0:21901"], "hostname": "h1", "pid": 42,
            "labels": {"zone": "a"},
            "topology_policy": {"allow_direct_connection": true}}"#,
    )
    .unwrap();
    assert_eq!(c.upstream, NodeId(258));
    assert_eq!(c.upstream_address, "tcp://10.0.0.2:21902");
    assert_eq!(c.listen, ["tcp://0.0.0.0:21901"]);
    assert_eq!((c.hostname.as_str(), c.pid), ("h1", 42));
    assert_eq!(c.labels.get("zone").map(String::as_str), Some("a"));
    assert!(c.topology_policy.allow_direct_connection);
    assert!(!c.topology_policy.require_same_host);
}

#[test]
fn defaults_with_an_id_are_valid() {
    assert_eq!(valid().validate(), Ok(()));
    assert_eq!(valid().id, NodeId(0x101));
    assert_eq!(valid().name, "gate-1");
}

#[test]
fn node_id_zero_is_rejected() {
    assert_eq!(
        Config::default().validate(),
        Err(ConfigError::ReservedNodeId)
    );
}

#[test]
fn every_zero_timeout_and_count_names_its_field() {
    type Setter = fn(&mut Config);
    let cases: [(&str, Setter); 11] = [
        ("reconnect_start_ms", |c| c.reconnect_start = Duration::ZERO),
        ("reconnect_max_ms", |c| c.reconnect_max = Duration::ZERO),
        ("lost_topology_timeout_ms", |c| {
            c.lost_topology_timeout = Duration::ZERO;
        }),
        ("message_timeout_ms", |c| c.message_timeout = Duration::ZERO),
        ("ring_points_per_node", |c| c.ring_points_per_node = 0),
        ("heartbeat_interval_ms", |c| {
            c.heartbeat_interval = Duration::ZERO;
        }),
        ("heartbeat_dead_after", |c| c.heartbeat_dead_after = 0),
        ("suspicion_timeout_ms", |c| {
            c.suspicion_timeout = Duration::ZERO;
        }),
        ("handshake_timeout_ms", |c| {
            c.handshake_timeout = Duration::ZERO
        }),
        ("max_pending_handshakes", |c| c.max_pending_handshakes = 0),
        ("send_grace_ms", |c| c.send_grace = Duration::ZERO),
    ];
    for (field, set) in cases {
        let mut c = valid();
        set(&mut c);
        assert_eq!(c.validate(), Err(ConfigError::Zero { field }), "{field}");
    }
}

#[test]
fn the_legacy_cluster_token_is_redacted_and_never_serialized() {
    let mut c = valid();
    c.cluster_token = "s3cret-token".into();
    let debug = alloc::format!("{c:?}");
    assert!(!debug.contains("s3cret"), "{debug}");
    assert!(
        debug.contains("cluster_token: Secret(<redacted>)"),
        "{debug}"
    );
    let json = serde_json::to_string(&c).unwrap();
    assert!(
        !json.contains("s3cret") && !json.contains("cluster_token"),
        "{json}"
    );
    // Old files still load it, and the key is derived from it.
    let read: Config = serde_json::from_str(r#"{"cluster_token":"s3cret-token"}"#).unwrap();
    assert_eq!(read.cluster_token.expose(), "s3cret-token");
    assert_eq!(
        read.auth_keys(),
        crate::auth::ClusterKeys::new(&[ClusterKey::from_token(b"s3cret-token")])
    );
}

#[test]
fn max_call_budget_is_5_minutes_by_default_read_in_ms_and_never_zero() {
    assert_eq!(Config::default().max_call_budget, Duration::from_secs(300));
    let read: Config = serde_json::from_str(r#"{"max_call_budget_ms":1500}"#).unwrap();
    assert_eq!(read.max_call_budget, Duration::from_millis(1_500));
    let mut c = valid();
    c.max_call_budget = Duration::ZERO;
    assert_eq!(
        c.validate(),
        Err(ConfigError::Zero {
            field: "max_call_budget_ms"
        })
    );
}

#[test]
fn one_heartbeat_interval_is_too_few_to_ping() {
    let mut c = valid();
    c.heartbeat_dead_after = 1;
    assert_eq!(
        c.validate(),
        Err(ConfigError::BelowMinimum {
            field: "heartbeat_dead_after",
            min: 2,
        })
    );
    assert_eq!(
        c.validate().unwrap_err().to_string(),
        "heartbeat_dead_after must be at least 2"
    );
    c.heartbeat_dead_after = 2;
    assert_eq!(c.validate(), Ok(()));
}

#[test]
fn zero_means_unlimited_or_immediate_where_documented() {
    let mut c = valid();
    c.reconnect_max_tries = 0;
    c.send_buffer_number = 0;
    c.send_buffer_size = 0;
    c.flush_batch = 0;
    c.endpoint_gc_timeout = Duration::ZERO;
    c.reconnect_jitter_percent = 0;
    assert_eq!(c.validate(), Ok(()));
    assert_eq!(c.flush_budget(), usize::MAX);
    assert_eq!(valid().flush_budget(), 1000);
}

#[test]
fn reconnect_max_below_start_is_rejected() {
    let mut c = valid();
    c.reconnect_start = Duration::from_secs(5);
    c.reconnect_max = Duration::from_millis(4_999);
    assert_eq!(
        c.validate(),
        Err(ConfigError::ReconnectMaxBelowStart {
            start: Duration::from_secs(5),
            max: Duration::from_millis(4_999),
        })
    );
    c.reconnect_max = Duration::from_secs(5);
    assert_eq!(c.validate(), Ok(()));
}

#[test]
fn jitter_above_one_hundred_percent_is_rejected() {
    let mut c = valid();
    c.reconnect_jitter_percent = 100;
    assert_eq!(c.validate(), Ok(()));
    c.reconnect_jitter_percent = 101;
    assert_eq!(
        c.validate(),
        Err(ConfigError::JitterOutOfRange { percent: 101 })
    );
}

#[test]
fn errors_name_the_serialized_key() {
    assert_eq!(
        ConfigError::Zero {
            field: "message_timeout_ms"
        }
        .to_string(),
        "message_timeout_ms must be greater than zero"
    );
    assert_eq!(
        ConfigError::ReconnectMaxBelowStart {
            start: Duration::from_secs(2),
            max: Duration::from_secs(1),
        }
        .to_string(),
        "reconnect_max_ms (1s) is below reconnect_start_ms (2s)"
    );
    assert_eq!(
        ConfigError::ReservedNodeId.to_string(),
        "id: node id 0 is reserved; give the node a non-zero id"
    );
}

#[test]
fn json_fills_missing_fields_with_defaults_and_reads_milliseconds() {
    let c: Config = serde_json::from_str(
        r#"{"id": 257, "name": "gate-1", "message_timeout_ms": 2500,
            "send_buffer_number": 0, "endpoint_gc_timeout_ms": 0}"#,
    )
    .unwrap();
    let expected = Config {
        message_timeout: Duration::from_millis(2_500),
        send_buffer_number: 0,
        endpoint_gc_timeout: Duration::ZERO,
        ..valid()
    };
    assert_eq!(c, expected);
    let empty: Config = serde_json::from_str("{}").unwrap();
    assert_eq!(empty, Config::default());
}

#[test]
fn json_round_trips_with_ms_keys() {
    let text = serde_json::to_string(&valid()).unwrap();
    assert!(text.contains(r#""message_timeout_ms":8000"#), "{text}");
    assert!(text.contains(r#""reconnect_max_ms":60000"#), "{text}");
    assert!(text.contains(r#""id":257"#), "{text}");
    assert!(text.contains(r#""ring_hash_mode":"fast""#), "{text}");
    let back: Config = serde_json::from_str(&text).unwrap();
    assert_eq!(back, valid());
}

#[test]
fn json_selects_the_ring_hash_mode_by_its_libatapp_version() {
    for (text, mode) in [
        ("libatapp-v0.12", crate::hash::HashMode::LibatappV012),
        ("libatapp-v0.11", crate::hash::HashMode::LibatappV012),
        ("libatapp-main", crate::hash::HashMode::LibatappMain),
        ("fast", crate::hash::HashMode::Fast),
    ] {
        let c: Config =
            serde_json::from_str(&alloc::format!(r#"{{"ring_hash_mode": "{text}"}}"#)).unwrap();
        assert_eq!(c.ring_hash_mode, mode);
    }
    let e = serde_json::from_str::<Config>(r#"{"ring_hash_mode": "compat"}"#).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(r#"invalid value: string "compat", expected "fast", "libatapp-main" or "libatapp-v0.12""#),
        "{e}"
    );
}

#[test]
fn json_rejects_unknown_keys_and_unitless_durations() {
    // `message_timeout` without `_ms` is a typo that must not silently keep the default.
    let err = serde_json::from_str::<Config>(r#"{"message_timeout": 8}"#).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("unknown field `message_timeout`"),
        "{err}"
    );
    let err = serde_json::from_str::<Config>(r#"{"message_timeout_ms": -1}"#).unwrap_err();
    assert!(err.to_string().starts_with("invalid value"), "{err}");
}

#[test]
fn the_selection_keys_default_to_a_65537_slot_maglev_table_and_a_125_percent_bound() {
    let c = Config::default();
    assert_eq!((c.maglev_table_size, c.bounded_load_percent), (65_537, 125));
    assert_eq!(c.select_config(), crate::select::SelectConfig::default());
    assert_eq!(c.maglev_fill, crate::select::MaglevFill::Balanced);
    let read: Config = serde_json::from_str(
        r#"{"maglev_table_size":101,"maglev_fill":"stable","bounded_load_percent":150}"#,
    )
    .unwrap();
    assert_eq!(
        (
            read.maglev_table_size,
            read.maglev_fill,
            read.bounded_load_percent
        ),
        (101, crate::select::MaglevFill::Stable, 150)
    );
    assert_eq!(
        read.select_config().maglev_fill,
        crate::select::MaglevFill::Stable
    );
    let err = serde_json::from_str::<Config>(r#"{"maglev_fill":"even"}"#).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("unknown variant `even`, expected `balanced` or `stable`"),
        "{err}"
    );
    for size in [0, 1, 100, 65_536, (1 << 24) + 43] {
        let c = Config {
            maglev_table_size: size,
            ..valid()
        };
        assert_eq!(
            c.validate(),
            Err(ConfigError::NotPrime {
                field: "maglev_table_size",
                value: size
            })
        );
    }
    let c = Config {
        bounded_load_percent: 99,
        ..valid()
    };
    assert_eq!(
        c.validate(),
        Err(ConfigError::BelowMinimum {
            field: "bounded_load_percent",
            min: 100
        })
    );
    let c = Config {
        bounded_load_percent: 100,
        maglev_table_size: 13,
        ..valid()
    };
    assert_eq!(c.validate(), Ok(()));
}

/// The `outlier_*` keys: Envoy's defaults, read from a file by key, and each invalid value
/// named by its key.
#[test]
fn outlier_keys_have_envoy_defaults_and_are_validated() {
    use super::OutlierConfig;
    let defaults = Config::new(NodeId(1), "a").outlier();
    assert_eq!(defaults, OutlierConfig::default());
    assert_eq!(
        (
            defaults.enabled,
            defaults.consecutive_failures,
            defaults.base_ejection_time,
            defaults.max_ejection_time,
            defaults.max_ejection_percent,
            defaults.interval,
            defaults.success_rate_percent,
            defaults.success_rate_min_requests,
        ),
        (
            true,
            5,
            Duration::from_secs(30),
            Duration::from_secs(300),
            10,
            Duration::from_secs(10),
            0,
            100
        )
    );
    let read: Config = serde_json::from_str(
        r#"{"id": 1, "outlier_ejection": false, "outlier_consecutive_failures": 3,
            "outlier_base_ejection_time_ms": 1500, "outlier_max_ejection_time_ms": 6000}"#,
    )
    .unwrap();
    let outlier = read.outlier();
    assert_eq!((outlier.enabled, outlier.consecutive_failures), (false, 3));
    assert_eq!(outlier.base_ejection_time, Duration::from_millis(1500));
    assert_eq!(outlier.max_ejection_time, Duration::from_secs(6));
    let invalid = |change: fn(&mut OutlierConfig)| {
        let mut config = Config::new(NodeId(1), "a");
        let mut outlier = config.outlier();
        change(&mut outlier);
        config.set_outlier(outlier);
        config.validate().unwrap_err().to_string()
    };
    assert_eq!(
        invalid(|o| o.consecutive_failures = 0),
        "outlier_consecutive_failures must be greater than zero"
    );
    assert_eq!(
        invalid(|o| o.max_ejection_time = Duration::from_secs(29)),
        "outlier_max_ejection_time_ms (29s) is below outlier_base_ejection_time_ms (30s)"
    );
    assert_eq!(
        invalid(|o| o.max_ejection_percent = 101),
        "outlier_max_ejection_percent is 101; it must be between 0 and 100"
    );
    assert_eq!(
        invalid(|o| o.interval = Duration::ZERO),
        "outlier_interval_ms must be greater than zero"
    );
}

#[test]
fn the_retry_block_defaults_to_finagles_budget_and_reads_its_keys() {
    let retry = Config::default().rpc_retry;
    assert_eq!(
        (
            retry.max_attempts,
            retry.budget_percent,
            retry.budget_min_per_sec,
            retry.budget_ttl_ms,
            retry.backoff_min_ms,
            retry.backoff_max_ms
        ),
        (5, 20, 10, 10_000, 25, 250)
    );
    let read: Config =
        serde_json::from_str(r#"{"rpc_retry":{"max_attempts":3,"budget_percent":50}}"#).unwrap();
    assert_eq!(
        (read.rpc_retry.max_attempts, read.rpc_retry.budget_percent),
        (3, 50)
    );
    assert_eq!(read.rpc_retry.backoff_max_ms, 250);
    assert!(serde_json::from_str::<Config>(r#"{"rpc_retry":{"tries":3}}"#).is_err());
    let mut c = valid();
    c.rpc_retry.max_attempts = 0;
    assert_eq!(
        c.validate(),
        Err(ConfigError::Zero {
            field: "rpc_retry.max_attempts"
        })
    );
}
