//! `toolgate check` on policy conditions, `toolgate policy explain`, and who may
//! answer with `toolgate approvals approve|deny`.

mod support;

use std::process::Output;

use serde_json::Value;
use support::toolgate;

const SPEC: &str = r#"tools:
  - name: refund_order
    description: Refund an order.
    effect: write
    parameters:
      type: object
      properties:
        order_id: {type: string}
        amount_cents: {type: integer}
    response: {refunded: true}
  - name: fs.write_file
    description: Write a file.
    effect: write
    parameters:
      type: object
      properties:
        path: {type: string}
        content: {type: string}
    response: {written: true}
principals:
  agent: {ceiling: write}
  lead: {ceiling: write, approve: ["*"]}
  clerk: {ceiling: write, approve: [fs.*]}
policy:
  rules:
    - tools: refund_order
      when: {above: {arg: amount_cents, value: 10000}}
      decision: ask
    - tools: fs.write_file
      when: {not: {starts_with: {arg: path, value: /srv/data/}}}
      decision: deny
      reason: files are written only under /srv/data
    - tools: "*"
      decision: allow
"#;

fn dir_with(spec: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
    dir
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn check_reports_a_condition_on_an_argument_the_tool_does_not_take_where_it_is_written() {
    assert!(toolgate(dir_with(SPEC).path(), &["check"]).status.success());
    let broken = SPEC.replace("arg: amount_cents", "arg: amount");
    let out = toolgate(dir_with(&broken).path(), &["check"]);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(stdout(&out));
}

#[test]
fn policy_explain_names_the_rule_that_decided_and_why_the_others_did_not() {
    let dir = dir_with(SPEC);
    let out = toolgate(
        dir.path(),
        &[
            "policy",
            "explain",
            "fs.write_file",
            r#"{"path": "/srv/data/../../etc/passwd", "content": "x"}"#,
            "--as",
            "agent",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!(stdout(&out));
    let out = toolgate(
        dir.path(),
        &[
            "policy",
            "explain",
            "refund_order",
            r#"{"amount_cents": 25000}"#,
            "--as",
            "agent",
            "--json",
        ],
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["decision"], "ask");
    assert_eq!(json["decided_by"], "policy.rules[0]");
    assert_eq!(json["answered_by"], "approver");
    assert_eq!(json["considered"].as_array().unwrap().len(), 7);
    assert_eq!(json["considered"][2]["matched"], true);
    assert_eq!(json["considered"][4]["decided"], false);
    let bad = toolgate(dir.path(), &["policy", "explain", "refund_order", "[1]"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("must be a JSON object"),
        "{}",
        stderr(&bad)
    );
}

/// Makes `agent` call `refund_order` for 250 dollars; returns the approval id.
fn pending_refund(dir: &std::path::Path) -> String {
    let out = toolgate(
        dir,
        &[
            "call",
            "refund_order",
            r#"{"order_id": "A-1", "amount_cents": 25000}"#,
            "--as",
            "agent",
            "--json",
        ],
    );
    let printed = stdout(&out);
    let at = printed
        .find("ap-")
        .unwrap_or_else(|| panic!("no approval id in {printed}"));
    printed[at..at + 11].to_owned()
}

#[test]
fn only_a_principal_granted_approve_answers_and_never_its_own_call() {
    let dir = dir_with(SPEC);
    let id = pending_refund(dir.path());
    let as_agent = toolgate(dir.path(), &["approvals", "approve", &id, "--as", "agent"]);
    assert_eq!(as_agent.status.code(), Some(1));
    assert!(
        stderr(&as_agent).contains(
            "`agent` may not answer approvals: the spec file grants `approve` to `lead`, `clerk`"
        ),
        "{}",
        stderr(&as_agent)
    );
    let as_clerk = toolgate(dir.path(), &["approvals", "approve", &id, "--as", "clerk"]);
    assert!(
        stderr(&as_clerk).contains("`clerk` may approve only `fs.*`, not `refund_order`"),
        "{}",
        stderr(&as_clerk)
    );
    let by_default = toolgate(dir.path(), &["approvals", "approve", &id]);
    assert_eq!(
        by_default.status.code(),
        Some(1),
        "the OS user is no approver here"
    );
    let as_lead = toolgate(dir.path(), &["approvals", "approve", &id, "--as", "lead"]);
    assert!(as_lead.status.success(), "{}", stderr(&as_lead));
    assert!(
        stdout(&as_lead).contains(&format!("approved {id} as lead")),
        "{}",
        stdout(&as_lead)
    );
    let listed: Value = serde_json::from_slice(
        &toolgate(dir.path(), &["approvals", "list", "--all", "--json"]).stdout,
    )
    .unwrap();
    assert_eq!(listed[0]["decided_by"]["who"], "lead");
    assert_eq!(listed[0]["decided_by"]["via"], "cli");
    assert_eq!(listed[0]["answered_by"], "approver");

    // The lead's own call waits for another approver, unless the spec allows it.
    let own = toolgate(
        dir.path(),
        &[
            "call",
            "refund_order",
            r#"{"amount_cents": 30000}"#,
            "--as",
            "lead",
            "--json",
        ],
    );
    let printed = stdout(&own);
    let at = printed.find("ap-").unwrap();
    let own_id = &printed[at..at + 11];
    let refused = toolgate(
        dir.path(),
        &["approvals", "approve", own_id, "--as", "lead"],
    );
    assert!(
        stderr(&refused).contains("`lead` made this call and may not approve it"),
        "{}",
        stderr(&refused)
    );
    let denied = toolgate(dir.path(), &["approvals", "deny", own_id, "--as", "lead"]);
    assert!(
        denied.status.success(),
        "one may deny one's own call: {}",
        stderr(&denied)
    );
    std::fs::write(
        dir.path().join("toolgate.yaml"),
        SPEC.replace("policy:\n", "policy:\n  self_approve: true\n"),
    )
    .unwrap();
    let again = toolgate(
        dir.path(),
        &[
            "call",
            "refund_order",
            r#"{"amount_cents": 40000}"#,
            "--as",
            "lead",
            "--json",
        ],
    );
    let printed = stdout(&again);
    let at = printed.find("ap-").unwrap();
    let allowed = toolgate(
        dir.path(),
        &[
            "approvals",
            "approve",
            &printed[at..at + 11],
            "--as",
            "lead",
        ],
    );
    assert!(allowed.status.success(), "{}", stderr(&allowed));
}

#[test]
fn without_declared_approvers_the_operator_approves_as_their_os_user() {
    let dir = dir_with(
        &SPEC
            .replace(", approve: [\"*\"]", "")
            .replace(", approve: [fs.*]", ""),
    );
    let id = pending_refund(dir.path());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["approvals", "approve", &id])
        .current_dir(dir.path())
        .env_remove("TOOLGATE_STATE_DIR")
        .env("USER", "ada")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("approved {id} as ada")),
        "{}",
        stdout(&out)
    );
}
