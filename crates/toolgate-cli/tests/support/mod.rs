//! What the CLI's integration tests share: the built binary, run as a user runs it,
//! and the helpers several test files need (the PostgreSQL database and
//! `toolgate serve` instances on it, the web console as a browser meets it, a
//! slow tool server on loopback).

#![allow(dead_code)]

pub mod console;
pub mod effect_server;
pub mod postgres;
pub mod slow_server;
pub mod stateless;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Output};

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

/// A command's stdout as JSON; panics with what it printed when it is not.
pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Reads `child`'s stderr until `found` picks a word out of a line; that word and
/// everything read so far. Then keeps draining stderr on a thread, so the process
/// never blocks on a full pipe. Panics, with what it said, if it stops first.
pub fn await_line(child: &mut Child, found: impl Fn(&str) -> Option<String>) -> (String, String) {
    let mut stderr: BufReader<ChildStderr> = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let word = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!("toolgate serve stopped: {said}");
        }
        said.push_str(&line);
        if let Some(word) = found(&line) {
            break word;
        }
    };
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
    });
    (word, said)
}

/// The helpdesk example's spec file.
pub const HELPDESK: &str = include_str!("../../../../examples/helpdesk/toolgate.yaml");

/// The helpdesk example's skills, by path under its folder.
pub const HELPDESK_SKILLS: [(&str, &str); 2] = [
    (
        "skills/refund-dispute/SKILL.md",
        include_str!("../../../../examples/helpdesk/skills/refund-dispute/SKILL.md"),
    ),
    (
        "skills/refund-dispute/forms/dispute-checklist.md",
        include_str!(
            "../../../../examples/helpdesk/skills/refund-dispute/forms/dispute-checklist.md"
        ),
    ),
];

/// Writes `spec` (the helpdesk's, or a variant of it) as `dir/toolgate.yaml`,
/// with the helpdesk's skills beside it.
pub fn write_helpdesk(dir: &Path, spec: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("toolgate.yaml"), spec).unwrap();
    for (path, text) in HELPDESK_SKILLS {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}
