//! Opening files that are read whole: regular files only. Opening a named pipe that
//! no one writes to blocks forever, and a device or socket may never end, so such a
//! path is refused, before it is opened, with what it is.

use std::fs::{File, Metadata};
use std::path::Path;

/// Why a file to be read whole could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenFileError {
    /// The path could not be opened or examined (missing, no permission, ...).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The path names something other than a regular file: `kind` says what, in words
    /// ("a named pipe", "a directory", ...).
    #[error("it is {kind}, not a regular file")]
    NotAFile {
        /// What the path names instead, in words.
        kind: &'static str,
    },
}

/// Opens `path` for reading if it is a regular file (symbolic links followed).
pub fn open_regular_file(path: &Path) -> Result<File, OpenFileError> {
    check(&std::fs::metadata(path)?)?;
    let file = File::open(path)?;
    // The path may have been replaced between the look and the open.
    check(&file.metadata()?)?;
    Ok(file)
}

/// Reads the whole of `path`, a regular file, as UTF-8 text.
pub fn read_regular_file(path: &Path) -> Result<String, OpenFileError> {
    use std::io::Read as _;
    let mut text = String::new();
    open_regular_file(path)?.read_to_string(&mut text)?;
    Ok(text)
}

fn check(meta: &Metadata) -> Result<(), OpenFileError> {
    if meta.is_file() {
        return Ok(());
    }
    Err(OpenFileError::NotAFile {
        kind: kind_of(meta),
    })
}

fn kind_of(meta: &Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "a named pipe";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
    }
    "something other than a file"
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_named_pipe_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("spec.yaml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = open_regular_file(&fifo).unwrap_err();
        assert_eq!(err.to_string(), "it is a named pipe, not a regular file");
        let err = open_regular_file(dir.path()).unwrap_err();
        assert_eq!(err.to_string(), "it is a directory, not a regular file");
        std::fs::write(dir.path().join("ok.yaml"), "tools: []").unwrap();
        assert_eq!(
            read_regular_file(&dir.path().join("ok.yaml")).unwrap(),
            "tools: []"
        );
    }
}
