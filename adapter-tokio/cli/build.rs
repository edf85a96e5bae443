//! Build facts for `switchboard --version`: the git commit (`git rev-parse --short HEAD`,
//! `unknown` when git or the repository is missing, as in a source tarball) and the enabled
//! cargo features. Never fails the build.

use std::{path::PathBuf, process::Command};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let git = |args: &[&str]| -> Option<String> {
        let output = Command::new("git").args(args).output().ok()?;
        if !output.status.success() {
            return None;
        }
        let text = String::from_utf8(output.stdout).ok()?.trim().to_owned();
        (!text.is_empty()).then_some(text)
    };
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        // A new commit moves HEAD's log (in a worktree too); a checkout rewrites HEAD.
        let dir = PathBuf::from(dir);
        for file in ["HEAD", "logs/HEAD"] {
            let path = dir.join(file);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    let mut features = Vec::new();
    if std::env::var_os("CARGO_FEATURE_ETCD").is_some() {
        features.push("etcd");
    }
    if std::env::var_os("CARGO_FEATURE_TLS").is_some() {
        features.push("tls");
    }
    let features = if features.is_empty() {
        "none".to_owned()
    } else {
        features.join(",")
    };
    println!("cargo:rustc-env=SWITCHBOARD_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=SWITCHBOARD_FEATURES={features}");
}
