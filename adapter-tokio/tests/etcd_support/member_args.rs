//! The flags of one member of a private test etcd: shared by this harness and the CLI's
//! process harness (`adapter-tokio/cli/tests/process_support/etcd.rs`, which includes this
//! file by path), so both start etcd alike.

use std::path::Path;

/// `etcd`'s flags for member `name` keeping its data in `data_dir`, serving clients on the
/// URL `client` and peers on the URL `peer`, one of `initial_cluster` (`name=peer,...`),
/// started as a new cluster (ignored once the data dir holds one), logging warnings only.
#[must_use]
pub fn member_args(
    name: &str,
    data_dir: &Path,
    client: &str,
    peer: &str,
    initial_cluster: &str,
) -> Vec<String> {
    vec![
        format!("--name={name}"),
        format!("--data-dir={}", data_dir.display()),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster={initial_cluster}"),
        "--initial-cluster-state=new".to_owned(),
        "--logger=zap".to_owned(),
        "--log-level=warn".to_owned(),
    ]
}
