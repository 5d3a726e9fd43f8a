//! The state directory and its files: private to their owner, and never reached
//! through a symbolic link unless the operator says so.
//!
//! The database holds conversation state and the audit log, which hold arguments
//! and results of every call: a new state directory is created `0700` and a new
//! database `0600` (SQLite gives its `-wal` and `-shm` files the database's mode),
//! whatever the umask. A link in place of the database (or its `-wal` or `-shm`)
//! would send state and audit log wherever it points, and a dangling one would
//! create a file there, so it is refused unless [`ALLOW_SYMLINK_ENV`] is `1`.
//! Directories and files that exist already keep the modes they have.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::StoreError;

/// Set to `1` to open a state database that is a symbolic link.
pub const ALLOW_SYMLINK_ENV: &str = "TOOLGATE_ALLOW_SYMLINKED_STATE";

/// Makes `path` ready for SQLite: its directory (created private if missing), no
/// link in place of it or its companions, and the file itself created private.
pub(super) fn prepare(path: &Path) -> Result<(), StoreError> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        create_private_dir(dir).map_err(|source| StoreError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    if !links_allowed() {
        for file in [
            path.to_path_buf(),
            companion(path, "-wal"),
            companion(path, "-shm"),
        ] {
            if let Some(target) = link_target(&file) {
                return Err(StoreError::Symlink { path: file, target });
            }
        }
    }
    create_private_file(path);
    Ok(())
}

fn links_allowed() -> bool {
    std::env::var_os(ALLOW_SYMLINK_ENV).is_some_and(|v| v == "1")
}

/// `path` with `suffix` added to its file name, as SQLite names its `-wal` file.
fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

/// Where `path` points, if it is a symbolic link (dangling or not).
fn link_target(path: &Path) -> Option<PathBuf> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.file_type()
        .is_symlink()
        .then(|| std::fs::read_link(path).unwrap_or_default())
}

/// Creates `dir` and its missing parents `0700` whatever the umask; directories
/// that exist already keep their modes. Shared by everything that writes state.
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Creates the database file, empty and `0600`, if nothing is there yet. Exclusive
/// creation never follows a link; any failure is left for SQLite to report.
fn create_private_file(path: &Path) {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let _ = options.open(path);
}
