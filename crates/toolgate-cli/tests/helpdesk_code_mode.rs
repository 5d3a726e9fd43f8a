//! The helpdesk example as a code-mode conversation, one `toolgate` process per
//! command over one real state database: a program (examples/helpdesk/refund.py)
//! verifies the customer, lists their orders, checks each for a refund and
//! refunds the eligible one; the refund is above the threshold, so the program
//! pauses; a person answers with `toolgate approvals`, and `toolgate code resume`
//! goes on in a new process — approved, the refund runs once; denied, the
//! program's `except PermissionError` handles it. The flow still refuses a refund
//! out of order inside a program (examples/helpdesk/out_of_order.py).

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use support::toolgate;

mod support;

use support::HELPDESK;
const REFUND: &str = include_str!("../../../examples/helpdesk/refund.py");
const OUT_OF_ORDER: &str = include_str!("../../../examples/helpdesk/out_of_order.py");

fn desk() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    support::write_helpdesk(dir.path(), HELPDESK);
    std::fs::write(dir.path().join("refund.py"), REFUND).unwrap();
    std::fs::write(dir.path().join("out_of_order.py"), OUT_OF_ORDER).unwrap();
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        )
    })
}

/// `toolgate code run refund.py` pauses at the refund; its run and approval ids.
fn run_until_paused(dir: &Path) -> (String, String) {
    let out = toolgate(
        dir,
        &["code", "run", "refund.py", "--as", "support_bot", "--json"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let paused = json(&out);
    assert_eq!(paused["status"], "pending_approval", "{paused}");
    assert_eq!(paused["waiting_for"]["tool"], "refund_order", "{paused}");
    // verify, list, one eligibility check per delivered order, lookup, the refund.
    assert_eq!(paused["calls"], 5, "{paused}");
    let ids = (
        paused["run_id"].as_str().unwrap().to_owned(),
        paused["approval_id"].as_str().unwrap().to_owned(),
    );
    let state = toolgate(dir, &["state", "get", "refunded_order"]);
    assert_ne!(
        text(&state.stdout).trim(),
        "\"ORD-10422\"",
        "not yet refunded"
    );
    ids
}

/// The completed `refund_order` calls in the audit log.
fn refunds(dir: &Path) -> usize {
    let out = toolgate(dir, &["audit", "tail", "-n", "200", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let records: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    records
        .iter()
        .filter(|r| {
            r["kind"] == "completion" && r["tool"] == "refund_order" && r["outcome"] == "ok"
        })
        .count()
}

#[test]
fn the_refund_program_pauses_for_approval_and_resumes_in_a_new_process_to_refund_once() {
    let dir = desk();
    let (run_id, approval_id) = run_until_paused(dir.path());
    let listed = toolgate(dir.path(), &["code", "list"]);
    assert!(
        text(&listed.stdout).contains(&run_id),
        "{}",
        text(&listed.stdout)
    );

    let approved = toolgate(dir.path(), &["approvals", "approve", &approval_id]);
    assert!(approved.status.success(), "{}", text(&approved.stderr));
    let resumed = toolgate(
        dir.path(),
        &["code", "resume", &run_id, "--as", "support_bot", "--json"],
    );
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    let done = json(&resumed);
    assert_eq!(done["value"]["order"], "ORD-10422", "{done}");
    assert_eq!(done["value"]["checked"], 1, "{done}");
    assert_eq!(
        done["value"]["outcome"], "refunded re_3PqX9L2eZvKYlo2C",
        "{done}"
    );
    assert!(
        done["printed"]
            .as_str()
            .unwrap()
            .contains("Ada Lovelace - refunded"),
        "{done}"
    );
    let state = toolgate(dir.path(), &["state", "get", "refunded_order"]);
    assert_eq!(text(&state.stdout).trim(), "\"ORD-10422\"");

    let again = toolgate(
        dir.path(),
        &["code", "resume", &run_id, "--as", "support_bot"],
    );
    assert_eq!(again.status.code(), Some(1), "{}", text(&again.stderr));
    assert_eq!(
        refunds(dir.path()),
        1,
        "the approved refund ran exactly once"
    );
}

#[test]
fn a_denied_refund_raises_permission_error_in_the_program_which_handles_it() {
    let dir = desk();
    let (run_id, approval_id) = run_until_paused(dir.path());
    let denied = toolgate(
        dir.path(),
        &[
            "approvals",
            "deny",
            &approval_id,
            "--reason",
            "the customer will get a replacement",
        ],
    );
    assert!(denied.status.success(), "{}", text(&denied.stderr));
    let resumed = toolgate(
        dir.path(),
        &["code", "resume", &run_id, "--as", "support_bot", "--json"],
    );
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    let done = json(&resumed);
    let outcome = done["value"]["outcome"].as_str().unwrap_or_default();
    assert!(outcome.starts_with("not refunded: "), "{done}");
    assert!(
        outcome.contains("replacement"),
        "the denial's reason reaches the program: {done}"
    );
    assert_eq!(refunds(dir.path()), 0);
}

#[test]
fn the_flow_refuses_a_refund_out_of_order_inside_a_program() {
    let dir = desk();
    let out = toolgate(
        dir.path(),
        &[
            "code",
            "run",
            "out_of_order.py",
            "--as",
            "support_bot",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let done = json(&out);
    let said = done["value"].as_str().unwrap_or_default();
    assert!(
        said.contains("refund_order is blocked until lookup_order has succeeded"),
        "{done}"
    );
    assert_eq!(refunds(dir.path()), 0);
}
