//! What both test harnesses (`cli_support`, `process_support`) need to write secrets.

/// Writes `text` to a new file at `path` readable by its owner only (mode 0600): the binary
/// refuses key, token and password files that group or others may read.
pub fn write_secret(path: &std::path::Path, text: &str) {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).expect("create a secret file");
    file.write_all(text.as_bytes())
        .expect("write a secret file");
}
