//! `toolgate code list` and `toolgate code resume`, as an operator meets them: a
//! program pauses for approval in one process, is listed and approved from
//! others, and resumes in yet another — one process per command, one real state
//! database.

use std::path::Path;

use support::{json, toolgate};

mod support;

const SPEC: &str = r#"
state:
  refunds: {type: integer, default: 0}
tools:
  - name: lookup
    description: Look up an order.
    effect: read
    parameters:
      type: object
      properties:
        order_id: {type: string}
      required: [order_id]
    response: {order_id: "{args.order_id}", total: 120}
  - name: refund
    description: Refund an order.
    effect: write
    parameters:
      type: object
      properties:
        order_id: {type: string}
      required: [order_id]
    response: {refunded: true}
    set_state: {refunds: 1}
policy:
  rules:
    - tools: refund
      decision: ask
      reason: refunds need a person
"#;

const PROGRAM: &str = r#"
order = lookup(order_id="A-1")
print("refunding", order["order_id"])
refund(order_id=order["order_id"])["refunded"]
"#;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    toolgate(dir, args)
}

/// Writes the spec and the program into `dir` and runs it to its pause: its run
/// id and the approval it waits for.
fn paused_program(dir: &Path) -> (String, String) {
    std::fs::write(dir.join("toolgate.yaml"), SPEC).unwrap();
    std::fs::write(dir.join("program.py"), PROGRAM).unwrap();
    let out = run(dir, &["code", "run", "program.py", "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let paused = json(&out);
    assert_eq!(paused["status"], "pending_approval", "{paused}");
    let id = |field: &str| paused[field].as_str().unwrap().to_owned();
    (id("run_id"), id("approval_id"))
}

#[test]
fn a_paused_program_is_listed_approved_and_resumed_once_by_separate_processes() {
    let dir = tempfile::tempdir().unwrap();
    let (run_id, approval_id) = paused_program(dir.path());

    let listed = run(dir.path(), &["code", "list"]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let table = text(&listed.stdout);
    let row = table
        .lines()
        .find(|line| line.contains(&run_id))
        .unwrap_or_else(|| panic!("{run_id} not listed:\n{table}"));
    for cell in ["default", "operator", approval_id.as_str(), "refund"] {
        assert!(row.contains(cell), "`{cell}` not in {row}");
    }

    let early = run(dir.path(), &["code", "resume", &run_id]);
    assert_eq!(early.status.code(), Some(3), "still waiting");
    assert!(text(&early.stderr).contains("toolgate approvals approve"));

    let approved = run(dir.path(), &["approvals", "approve", &approval_id]);
    assert!(approved.status.success(), "{}", text(&approved.stderr));

    let resumed = run(dir.path(), &["code", "resume", &run_id]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(text(&resumed.stdout), "refunding A-1\ntrue\n");

    let again = run(dir.path(), &["code", "resume", &run_id]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("has finished"),
        "{}",
        text(&again.stderr)
    );
    let state = run(dir.path(), &["state", "get", "refunds"]);
    assert_eq!(text(&state.stdout).trim(), "1", "the refund ran");

    let empty = run(dir.path(), &["code", "list"]);
    assert_eq!(text(&empty.stdout), "no programs are paused for approval\n");
}

#[test]
fn a_program_left_resuming_by_a_dead_process_is_released_by_the_operator_and_resumed_once() {
    let dir = tempfile::tempdir().unwrap();
    let (run_id, approval_id) = paused_program(dir.path());
    let approved = run(dir.path(), &["approvals", "approve", &approval_id]);
    assert!(approved.status.success(), "{}", text(&approved.stderr));

    // A process takes the run to resume it and dies before it ends.
    {
        let store = toolgate::SqliteStore::open_in_dir(dir.path().join(".toolgate")).unwrap();
        toolgate::store::CodeRunStore::take_run(&store, &run_id).unwrap();
    }
    let stuck = run(dir.path(), &["code", "resume", &run_id]);
    assert_eq!(stuck.status.code(), Some(1));
    let said = text(&stuck.stderr);
    assert!(
        said.contains("being resumed already")
            && said.contains(&format!("toolgate code release {run_id}")),
        "{said}"
    );

    let released = run(dir.path(), &["code", "release", &run_id]);
    assert!(released.status.success(), "{}", text(&released.stderr));
    assert!(text(&released.stdout).contains("is paused again"));
    let twice = run(dir.path(), &["code", "release", &run_id]);
    assert_eq!(
        twice.status.code(),
        Some(1),
        "a paused program is not released"
    );
    assert!(text(&twice.stderr).contains("is not being resumed"));

    let resumed = run(dir.path(), &["code", "resume", &run_id]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(text(&resumed.stdout), "refunding A-1\ntrue\n");
    let state = run(dir.path(), &["state", "get", "refunds"]);
    assert_eq!(text(&state.stdout).trim(), "1", "the refund ran once");
}
