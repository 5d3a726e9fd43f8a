//! The state directory as the CLI leaves it: private to its owner whatever the
//! umask, and never written through a symbolic link unless the operator says so.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const SPEC: &str = r#"
tools:
  - name: lookup
    description: Look something up.
    effect: read
"#;

/// Runs toolgate under `umask 000`, so any mode it gets is the one toolgate chose.
fn toolgate(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg("umask 000 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(dir)
        .env_remove("TOOLGATE_STATE_DIR")
        .env_remove("TOOLGATE_ALLOW_SYMLINKED_STATE")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn desk() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), SPEC).unwrap();
    dir
}

#[test]
fn a_new_state_dir_and_its_database_are_private_whatever_the_umask() {
    let dir = desk();
    let out = toolgate(dir.path(), &["call", "lookup", "{}"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state = dir.path().join(".toolgate");
    assert_eq!(mode(&state), 0o700, "the directory");
    assert_eq!(mode(&state.join("state.db")), 0o600, "the database");
    for companion in ["state.db-wal", "state.db-shm"] {
        let path = state.join(companion);
        if path.exists() {
            assert_eq!(mode(&path), 0o600, "{companion}");
        }
    }
    // A directory named with --state-dir, several levels deep, is private too.
    let deep = dir.path().join("var/lib/toolgate");
    let out = toolgate(
        dir.path(),
        &[
            "call",
            "lookup",
            "{}",
            "--state-dir",
            deep.to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(mode(&deep), 0o700);
    assert_eq!(mode(&deep.join("state.db")), 0o600);
}

#[test]
fn a_symlinked_database_is_refused_unless_the_operator_allows_it() {
    let dir = desk();
    let state = dir.path().join(".toolgate");
    std::fs::create_dir(&state).unwrap();
    let elsewhere = dir.path().join("elsewhere.db");
    std::os::unix::fs::symlink(&elsewhere, state.join("state.db")).unwrap();

    for args in [&["call", "lookup", "{}"][..], &["audit", "verify"]] {
        let out = toolgate(dir.path(), args, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("is a symbolic link"), "{stderr}");
        assert!(
            stderr.contains("TOOLGATE_ALLOW_SYMLINKED_STATE=1"),
            "{stderr}"
        );
        assert!(!elsewhere.exists(), "{args:?} created the link's target");
    }

    let allowed = [("TOOLGATE_ALLOW_SYMLINKED_STATE", "1")];
    let out = toolgate(dir.path(), &["call", "lookup", "{}"], &allowed);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(elsewhere.exists(), "followed, as asked");
}

#[test]
fn keys_add_creates_a_private_state_dir_whatever_the_umask() {
    let dir = desk();
    let out = toolgate(dir.path(), &["keys", "add", "operator"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state = dir.path().join(".toolgate");
    assert_eq!(mode(&state), 0o700, "the directory");
    let keys = std::fs::read_dir(&state)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|ext| ext == "json"))
        .expect("a key file");
    assert_eq!(mode(&keys), 0o600, "the key file");
}
