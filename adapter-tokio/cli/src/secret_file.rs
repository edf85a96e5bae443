//! Files that hold secrets (cluster keys, the admin token, the etcd password, private keys):
//! refused when group or others may access them, as ssh refuses a private key, and written
//! readable by their owner only.

use std::{io::Write, path::Path};

use crate::error::CliError;

/// Refuses `path` when group or others have any access to it (Unix mode bits `0o077`): exit 2
/// naming `field`, the file, its mode and the fix (`chmod 600 FILE`). A file whose metadata
/// cannot be read passes (reading it reports the problem); on other systems every file passes.
///
/// # Errors
///
/// The file is group- or world-accessible.
pub(crate) fn check_private(field: &str, path: &Path) -> Result<(), CliError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let Ok(meta) = std::fs::metadata(path) else {
            return Ok(());
        };
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(CliError::invalid(
                field,
                format!(
                    "{path} is accessible by group or others (mode {mode:04o}); it holds a \
                     secret: run `chmod 600 {path}`",
                    path = path.display()
                ),
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = (field, path);
    Ok(())
}

/// Writes `bytes` to a new file at `path`, readable by its owner only (mode 0600); never
/// overwrites.
///
/// # Errors
///
/// The file exists or cannot be created (exit 2, naming `field`), or writing fails (exit 1).
pub(crate) fn create_private(field: &str, path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    create(field, path, bytes, 0o600)
}

/// [`create_private`] with `mode` (e.g. 0644 for a certificate).
///
/// # Errors
///
/// As [`create_private`].
pub(crate) fn create(field: &str, path: &Path, bytes: &[u8], mode: u32) -> Result<(), CliError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path).map_err(|e| {
        let problem = if e.kind() == std::io::ErrorKind::AlreadyExists {
            format!("{} exists; it is never overwritten", path.display())
        } else {
            format!("cannot create {}: {e}", path.display())
        };
        CliError::invalid(field, problem)
    })?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn group_or_world_access_is_refused_naming_the_file_and_the_fix() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("secret");
        create_private("cluster_key_file", &path, b"x").expect("create");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(check_private("cluster_key_file", &path).is_ok());
        for mode in [0o640, 0o604, 0o644, 0o660, 0o610, 0o601] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
            let e = check_private("cluster_key_file", &path).expect_err("open");
            assert_eq!(e.exit_code(), 2);
            let p = path.display();
            assert_eq!(
                e.to_string(),
                format!(
                    "cluster_key_file: {p} is accessible by group or others (mode {mode:04o}); \
                     it holds a secret: run `chmod 600 {p}`"
                )
            );
        }
        for mode in [0o400, 0o600, 0o700] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
            assert!(check_private("cluster_key_file", &path).is_ok(), "{mode:o}");
        }
        assert!(check_private("cluster_key_file", &dir.path().join("missing")).is_ok());
        let e = create_private("cluster_key_file", &path, b"y").expect_err("exists");
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("exists"), "{e}");
    }
}
