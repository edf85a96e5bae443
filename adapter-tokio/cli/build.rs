//! Build facts for `switchboard --version`: the git commit (`unknown` when git or the
//! repository is missing, as in a source tarball) and the enabled cargo features. Never fails
//! the build.

include!("../build_support/git_commit.rs");

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../build_support/git_commit.rs");
    let commit = git_commit();
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
