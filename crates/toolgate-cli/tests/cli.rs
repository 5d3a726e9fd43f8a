//! The `toolgate` command, run as a user runs it: a real binary, real files, one
//! process per command.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};

use support::toolgate;

mod support;

use support::HELPDESK;

/// A scratch directory holding a copy of the helpdesk spec.
struct Desk {
    dir: tempfile::TempDir,
}

impl Desk {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        support::write_helpdesk(dir.path(), HELPDESK);
        Desk { dir }
    }

    fn spec(&self) -> PathBuf {
        self.dir.path().join("toolgate.yaml")
    }

    fn run(&self, args: &[&str]) -> Output {
        toolgate(self.dir.path(), args)
    }

    fn state_get(&self, key: &str) -> Value {
        let out = self.run(&["state", "get", key]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

#[test]
fn a_call_changes_state_as_declared_and_the_next_process_reads_it() {
    let desk = Desk::new();
    assert_eq!(
        desk.state_get("customer_verified"),
        json!(false),
        "the declared default"
    );

    let out = desk.run(&[
        "call",
        "verify_customer",
        r#"{"email": "ada@example.com", "last4": "4242"}"#,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));

    assert_eq!(desk.state_get("customer_verified"), json!(true));
    assert_eq!(desk.state_get("customer_id"), json!("cus_1001"));
    assert!(
        desk.dir.path().join(".toolgate/state.db").exists(),
        "state lives beside the spec file"
    );
}

#[test]
fn a_saved_response_interpolates_the_arguments() {
    let desk = Desk::new();
    // The helpdesk's flow opens orders once the customer is verified.
    let verify = r#"{"email": "ada@example.com", "last4": "4242"}"#;
    assert!(
        desk.run(&["call", "verify_customer", verify])
            .status
            .success()
    );
    let out = desk.run(&["call", "lookup_order", r#"{"order_id": "ORD-7777"}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(printed["order_id"], "ORD-7777");
    assert_eq!(desk.state_get("last_order")["order_id"], "ORD-7777");
}

#[test]
fn invalid_arguments_name_every_offending_field_and_nothing_runs() {
    let desk = Desk::new();
    let out = desk.run(&[
        "call",
        "verify_customer",
        r#"{"email": 7, "last4": "42", "extra": true}"#,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("the arguments for `verify_customer` are invalid; nothing ran"),
        "{err}"
    );
    assert!(
        err.contains("at `/email`: 7 is not of type \"string\" [type]"),
        "{err}"
    );
    assert!(err.contains("at `/last4`"), "{err}");
    assert!(err.contains("[additionalProperties]"), "{err}");
    assert_eq!(
        desk.state_get("customer_verified"),
        json!(false),
        "nothing ran, nothing latched"
    );
}

#[test]
fn json_output_reports_status() {
    let desk = Desk::new();
    let out = desk.run(&["call", "search_kb", r#"{"query": "returns"}"#, "--json"]);
    let printed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(printed["status"], "ok", "{printed}");
    let out = desk.run(&["call", "search_kb", "{}", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let printed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(printed["status"], "error");
    assert_eq!(printed["retryable"], false);
}

#[test]
fn an_unknown_tool_suggests_the_closest_name() {
    let out = Desk::new().run(&["call", "lookup_ordr"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: no tool is named `lookup_ordr`; did you mean `lookup_order`?\n"
    );
}

#[test]
fn sessions_keep_separate_state() {
    let desk = Desk::new();
    let args = r#"{"email": "ada@example.com", "last4": "4242"}"#;
    assert!(
        desk.run(&["call", "verify_customer", args, "--session", "alice"])
            .status
            .success()
    );
    let other = desk.run(&["state", "get", "customer_verified", "--session", "bob"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&other.stdout).unwrap(),
        json!(false)
    );
}

#[test]
fn state_can_be_set_read_and_reset() {
    let desk = Desk::new();
    assert!(
        desk.run(&["state", "set", "escalated", "true"])
            .status
            .success()
    );
    assert_eq!(desk.state_get("escalated"), json!(true));
    assert!(desk.run(&["state", "reset"]).status.success());
    assert_eq!(desk.state_get("escalated"), json!(false));

    let out = desk.run(&["state", "set", "escalated", "yes please"]);
    assert!(
        stderr(&out).contains("the value is not JSON"),
        "{}",
        stderr(&out)
    );
    let out = desk.run(&["state", "get", "escalatd"]);
    assert!(
        stderr(&out).contains("did you mean `escalated`?"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_state_dir_can_be_chosen_by_flag_or_environment() {
    let desk = Desk::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let flag = elsewhere.path().join("by-flag");
    let args = [
        "state",
        "set",
        "escalated",
        "true",
        "--state-dir",
        flag.to_str().unwrap(),
    ];
    assert!(desk.run(&args).status.success());
    assert!(flag.join("state.db").exists());

    let by_env = elsewhere.path().join("by-env");
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["state", "set", "escalated", "true", "-f"])
        .arg(desk.spec())
        .env("TOOLGATE_STATE_DIR", &by_env)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(by_env.join("state.db").exists());
    assert!(!desk.dir.path().join(".toolgate").exists());
}

#[test]
fn check_passes_the_helpdesk_and_fails_a_broken_file_with_every_problem() {
    let desk = Desk::new();
    let out = desk.run(&["check"]);
    assert!(out.status.success());
    let said = stdout(&out);
    assert!(
        said.starts_with("toolgate.yaml: ok, 14 tools\nlabels: untrusted results: read_ticket\n"),
        "{said}"
    );
    assert!(
        said.contains("  faq_bot cannot hold all three: it reads nothing untrusted and reads nothing private and cannot act on the world\n"),
        "{said}"
    );

    let broken = HELPDESK
        .replacen("name: lookup_order", "name: lookup order", 1)
        .replacen("effect: read", "effect: reed", 1);
    std::fs::write(desk.spec(), broken).unwrap();
    let out = desk.run(&["check"]);
    assert_eq!(out.status.code(), Some(1));
    let printed = stdout(&out);
    assert!(printed.contains("`effect` cannot be `reed`"), "{printed}");
    assert!(printed.contains("did you mean `read`?"), "{printed}");
    assert!(
        printed.contains("tool name `lookup order` contains ' '"),
        "{printed}"
    );
    // The structural mistake hides none of the rest: the flow's steps, tests and
    // tool lists that name `lookup_order` no longer find it.
    assert!(
        printed.contains("`lookup_order` is not a tool this file declares"),
        "{printed}"
    );
    assert!(
        printed.ends_with("toolgate.yaml: 6 errors, 12 warnings\n"),
        "{printed}"
    );
}

#[test]
fn a_missing_spec_file_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolgate(dir.path(), &["list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: cannot read spec file toolgate.yaml: No such file"),
        "{err}"
    );
    assert!(
        err.ends_with("create it or name another with -f FILE\n"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
}

#[test]
fn list_shows_one_line_per_tool() {
    insta::assert_snapshot!(stdout(&Desk::new().run(&["list"])));
}

#[test]
fn describe_shows_everything_about_one_tool() {
    insta::assert_snapshot!(stdout(&Desk::new().run(&["describe", "refund_order"])));
}

#[test]
fn the_committed_schema_matches_the_format() {
    let out = Desk::new().run(&["schema"]);
    let committed = include_str!("../../../schema/toolgate.schema.json");
    assert!(
        stdout(&out) == committed,
        "schema/toolgate.schema.json is stale; regenerate it with\n  cargo run -p toolgate-cli -- schema > schema/toolgate.schema.json"
    );
}

#[test]
fn the_schema_validates_the_helpdesk_example() {
    let schema: Value =
        serde_json::from_str(include_str!("../../../schema/toolgate.schema.json")).unwrap();
    let spec: Value = toolgate::spec::Document::parse(HELPDESK).unwrap().value;
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    assert!(validator.is_valid(&spec));
}
