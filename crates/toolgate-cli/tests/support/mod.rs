//! What the CLI's integration tests share: the built binary, run as a user runs it.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `toolgate ARGS` in `dir` to its end, with no state dir taken from the
/// environment (each test's state stays beside its own spec file).
pub fn toolgate(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(dir)
        .env_remove("TOOLGATE_STATE_DIR")
        .output()
        .expect("the toolgate binary runs")
}
