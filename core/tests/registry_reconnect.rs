//! A lost embedded registry is rejoined at once (issue 22): a node redials it with a low,
//! configurable cap (`registry_reconnect_max_ms`, default 500 ms) instead of the links'
//! 1 s → 60 s backoff.

use std::time::Duration;

use switchboard_core::{
    ConfigError, Node,
    backoff::{BackoffConfig, Jitter},
    config::Config,
    ids::NodeId,
    registry::client::registry_backoff,
    time::Instant,
};

#[test]
fn a_node_redials_its_registry_within_registry_reconnect_max() {
    let config = Config::new(NodeId(7), "n7");
    assert_eq!(config.registry_reconnect_max, Duration::from_millis(500));
    let node = Node::new(config, Instant::ZERO).expect("valid config");
    assert_eq!(
        node.registry_client_config().backoff,
        BackoffConfig {
            start: Duration::from_millis(100),
            max: Duration::from_millis(500),
            max_tries: 0,
            jitter: Jitter::Proportional { percent: 20 },
        }
    );
    // A cap below the 100 ms start starts at the cap.
    assert_eq!(
        registry_backoff(Duration::from_millis(40)).start,
        Duration::from_millis(40)
    );
}

#[test]
fn registry_reconnect_max_is_read_in_ms_and_zero_is_refused() {
    let c: Config =
        serde_json::from_str(r#"{"id": 7, "registry_reconnect_max_ms": 250}"#).expect("valid json");
    assert_eq!(c.registry_reconnect_max, Duration::from_millis(250));
    let mut zero = Config::new(NodeId(7), "n7");
    zero.registry_reconnect_max = Duration::ZERO;
    assert_eq!(
        Node::new(zero, Instant::ZERO).err(),
        Some(ConfigError::Zero {
            field: "registry_reconnect_max_ms"
        })
    );
}
