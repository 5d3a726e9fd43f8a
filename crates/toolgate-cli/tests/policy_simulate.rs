//! `toolgate policy simulate`: the audit log real calls wrote, replayed through
//! another spec's policy; what it would decide otherwise (loosened first), what
//! it cannot judge, and an exit code CI can use.

mod support;

use std::path::Path;

use support::{json, toolgate};

/// The tools both specs declare.
const TOOLS: &str = r#"tools:
  - {name: lookup_order, description: Look up an order., effect: read, response: {status: shipped}}
  - name: refund_order
    description: Refund an order.
    effect: external
    parameters: {type: object, properties: {cents: {type: integer}}}
    response: {refunded: true}
"#;

/// The current spec: the tools, and `legacy_export`.
const LEGACY: &str = "  - {name: legacy_export, description: Export everything., effect: read, response: {rows: 3}}\n";

/// The new policy: a refund after a lookup runs at once, a big one is refused,
/// and `legacy_export` is gone.
const NEW_POLICY: &str = r#"policy:
  rules:
    - tools: refund_order
      when: {above: {arg: cents, value: 10000}}
      decision: deny
    - tools: refund_order
      when: {called_ok: lookup_order}
      decision: allow
"#;

fn call(dir: &Path, session: &str, tool: &str, args: &str) {
    let out = toolgate(dir, &["call", tool, args, "--session", session]);
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_changed_policy_is_replayed_over_the_calls_real_traffic_made() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), format!("{TOOLS}{LEGACY}")).unwrap();
    std::fs::write(dir.path().join("new.yaml"), format!("{TOOLS}{NEW_POLICY}")).unwrap();
    // A refund after a lookup, a big refund, and a tool the new spec drops.
    call(dir.path(), "a", "lookup_order", "{}");
    call(dir.path(), "a", "refund_order", r#"{"cents": 500}"#);
    call(dir.path(), "b", "refund_order", r#"{"cents": 50000}"#);
    call(dir.path(), "b", "legacy_export", "{}");

    let out = toolgate(
        dir.path(),
        &["policy", "simulate", "--spec", "new.yaml", "--json"],
    );
    assert_eq!(out.status.code(), Some(0));
    let report = json(&out);
    assert_eq!(report["judged"], 3, "{report}");
    assert_eq!(report["same"], 1, "the lookup: {report}");
    assert_eq!(report["loosened"], 1, "{report}");
    let first = &report["changes"][0];
    assert_eq!(
        (
            first["tool"].as_str(),
            first["old"].as_str(),
            first["new"].as_str()
        ),
        (Some("refund_order"), Some("ask"), Some("allow")),
        "loosened first: {report}"
    );
    assert_eq!(first["decided_by"], "policy.rules[1]");
    assert_eq!(report["changes"][1]["new"], "deny");
    assert_eq!(report["unjudged"]["the new spec has no such tool"], 1);

    let text = toolgate(dir.path(), &["policy", "simulate", "--spec", "new.yaml"]);
    let said = String::from_utf8_lossy(&text.stdout);
    assert!(
        said.starts_with("replayed 4 calls through new.yaml: 1 decided as before, 2 otherwise (1 loosened), 1 not judged\n"),
        "{said}"
    );
    assert!(
        said.contains(
            "LOOSENED  refund_order  as operator: ask → allow  ×1  (decided by policy.rules[1])"
        ),
        "{said}"
    );

    let gate = ["policy", "simulate", "--spec", "new.yaml", "--fail-on"];
    let loosened = toolgate(dir.path(), &[&gate[..], &["loosened"]].concat());
    assert_eq!(loosened.status.code(), Some(1));
    let unchanged = toolgate(
        dir.path(),
        &[
            "policy",
            "simulate",
            "--spec",
            "toolgate.yaml",
            "--fail-on",
            "changed",
        ],
    );
    assert_eq!(
        unchanged.status.code(),
        Some(0),
        "the current policy changes nothing"
    );
}

/// A flow that opens refunds once an order is looked up, and keeps the order
/// looked up in state, which a rule reads.
const FLOW: &str = r#"state:
  last_order: {type: string}
flow:
  steps:
    - {id: look, instruction: Look the order up., allow: [lookup_order]}
    - id: refund
      instruction: Refund it.
      gate: {called_ok: lookup_order}
      allow: [refund_order]
policy:
  rules:
    - {tools: refund_order, when: {is_set: last_order}, decision: allow}
"#;

#[test]
fn a_new_flow_is_replayed_over_each_conversation_in_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), TOOLS).unwrap();
    let with_flow = TOOLS.replace(
        "effect: read, response: {status: shipped}}",
        "effect: read, response: {status: shipped}, set_state: {last_order: \"{args.order_id}\"}}",
    );
    std::fs::write(dir.path().join("new.yaml"), format!("{with_flow}{FLOW}")).unwrap();
    // A refund with nothing looked up, and one after a lookup.
    call(dir.path(), "a", "refund_order", r#"{"cents": 500}"#);
    call(dir.path(), "b", "lookup_order", r#"{"order_id": "A-1"}"#);
    call(dir.path(), "b", "refund_order", r#"{"cents": 500}"#);

    let out = toolgate(
        dir.path(),
        &["policy", "simulate", "--spec", "new.yaml", "--json"],
    );
    let report = json(&out);
    let changes: Vec<(String, String, String, String)> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap().to_owned();
            (s("session"), s("old"), s("new"), s("decided_by"))
        })
        .collect();
    assert_eq!(
        changes,
        [
            (
                "b".into(),
                "ask".into(),
                "allow".into(),
                "policy.rules[0]".into()
            ),
            ("a".into(), "ask".into(), "deny".into(), "flow".into()),
        ],
        "{report}"
    );
    assert_eq!(report["unjudged"], serde_json::json!({}), "{report}");
}
