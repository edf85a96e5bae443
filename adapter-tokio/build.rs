//! The git commit for `switchboard_build_info` (`SWITCHBOARD_COMMIT`, `unknown` outside a git
//! checkout); a value set in the environment at build time wins. Never fails the build.

include!("build_support/git_commit.rs");

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build_support/git_commit.rs");
    println!("cargo:rerun-if-env-changed=SWITCHBOARD_COMMIT");
    let commit = std::env::var("SWITCHBOARD_COMMIT").unwrap_or_else(|_| git_commit());
    println!("cargo:rustc-env=SWITCHBOARD_COMMIT={commit}");
}
