//! Cluster keys on the command line: `--cluster-key-file`, `--next-cluster-key-file` and
//! `switchboard keygen`. A key file holds the 32-byte key as 64 hex characters (one trailing
//! newline allowed). Keys are never taken on the command line and never logged (the core's
//! `ClusterKey` prints as `ClusterKey(..)`).

use std::path::Path;

use switchboard_core::ClusterKey;

use crate::{cli::KeyArgs, error::CliError};

/// The keys the flags name: the current key, then the next one; empty without
/// `--cluster-key-file` (no authentication).
///
/// # Errors
///
/// A key file that is missing, unreadable or not 64 hex characters: exit 2, naming the flag
/// and the file.
pub(crate) fn load(args: &KeyArgs) -> Result<Vec<ClusterKey>, CliError> {
    let mut keys = Vec::new();
    if let Some(path) = &args.cluster_key_file {
        keys.push(read_key_file("cluster_key_file", path)?);
    }
    if let Some(path) = &args.next_cluster_key_file {
        if keys.is_empty() {
            return Err(CliError::invalid(
                "next_cluster_key_file",
                "needs --cluster-key-file (the current key)",
            ));
        }
        keys.push(read_key_file("next_cluster_key_file", path)?);
    }
    Ok(keys)
}

/// Reads one key file.
///
/// # Errors
///
/// `field`: the file is accessible by group or others
/// ([`check_private`](crate::secret_file::check_private)), cannot be read, or does not hold
/// exactly 64 hex characters (and at most one trailing newline).
pub(crate) fn read_key_file(field: &str, path: &Path) -> Result<ClusterKey, CliError> {
    crate::secret_file::check_private(field, path)?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::invalid(field, format!("cannot read {}: {e}", path.display())))?;
    let body = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(&text);
    ClusterKey::from_hex(body).ok_or_else(|| {
        CliError::invalid(
            field,
            format!(
                "{} does not hold a key: expected 64 hex characters (see `switchboard keygen`)",
                path.display()
            ),
        )
    })
}

/// `switchboard keygen PATH`: a fresh key from the operating system's randomness, written as
/// 64 hex characters and a newline to a new file readable by its owner only (mode 0600).
///
/// # Errors
///
/// The file exists (never overwritten) or cannot be created (exit 2, naming it), or the OS
/// has no randomness to give (exit 1).
pub(crate) fn keygen(path: &Path) -> Result<(), CliError> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| CliError::failed(format!("no randomness from the OS: {e}")))?;
    let mut text = String::with_capacity(65);
    for b in bytes {
        text.push_str(&format!("{b:02x}"));
    }
    text.push('\n');
    crate::secret_file::create_private("path", path, text.as_bytes()).map_err(|e| match e {
        CliError::Invalid { problem, .. } if problem.ends_with("it is never overwritten") => {
            CliError::invalid(
                "path",
                format!("{} exists; keygen never overwrites a key", path.display()),
            )
        }
        other => other,
    })
}

/// 64 random bits from the operating system (secret seeds), or the run seed if it has none.
pub(crate) fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    match getrandom::getrandom(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => crate::lifecycle::run_seed(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    const HEX: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let path = dir.path().join(name);
        let _ = std::fs::remove_file(&path);
        crate::secret_file::create_private("test", &path, text.as_bytes()).expect("test file");
        path
    }

    #[test]
    fn a_key_file_holds_64_hex_characters_and_at_most_one_newline() {
        let dir = tempfile::tempdir().expect("temp dir");
        for ok in [HEX.to_owned(), format!("{HEX}\n"), format!("{HEX}\r\n")] {
            let path = file(&dir, "k", &ok);
            assert!(read_key_file("cluster_key_file", &path).is_ok(), "{ok:?}");
        }
        for bad in [
            format!("{HEX}\n\n"),
            format!(" {HEX}"),
            HEX[1..].to_owned(),
            format!("{HEX}0"),
            HEX.replace('a', "g"),
            String::new(),
        ] {
            let path = file(&dir, "k", &bad);
            let e = read_key_file("cluster_key_file", &path).expect_err(&bad);
            assert_eq!(e.exit_code(), 2);
            let text = e.to_string();
            assert!(text.starts_with("cluster_key_file: "), "{text}");
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert!(!text.contains(&HEX[..16]), "the key never appears: {text}");
        }
    }

    #[test]
    fn a_missing_key_file_names_the_flag_and_the_file() {
        let args = KeyArgs {
            cluster_key_file: Some(PathBuf::from("/nonexistent/key")),
            next_cluster_key_file: None,
        };
        let e = load(&args).expect_err("missing");
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .starts_with("cluster_key_file: cannot read /nonexistent/key"),
            "{e}"
        );
    }

    #[test]
    fn keygen_writes_a_fresh_private_key_and_never_overwrites() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cluster.key");
        keygen(&path).expect("keygen");
        let text = std::fs::read_to_string(&path).expect("key file");
        assert_eq!(text.len(), 65);
        assert!(text.ends_with('\n'));
        assert!(read_key_file("cluster_key_file", &path).is_ok());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let e = keygen(&path).expect_err("exists");
        assert_eq!(e.exit_code(), 2);
        assert_eq!(std::fs::read_to_string(&path).expect("key file"), text);
        let other = dir.path().join("other.key");
        keygen(&other).expect("keygen");
        assert_ne!(std::fs::read_to_string(&other).expect("key file"), text);
    }
}
