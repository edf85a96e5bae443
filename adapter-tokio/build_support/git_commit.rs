// Shared by the build scripts of switchboard-tokio and the switchboard binary (`include!`d):
// the git commit the build comes from, for `switchboard_build_info` and `--version`.

/// `git rev-parse --short HEAD`, or `unknown` when git or the repository is missing (a source
/// tarball); asks cargo to rerun the script when HEAD moves. Never fails the build.
fn git_commit() -> String {
    use std::{path::PathBuf, process::Command};
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
    commit
}
