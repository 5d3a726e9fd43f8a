//! Shadow rules (`mode: shadow`): evaluated on every call and recorded in the
//! audit reason, never deciding; `toolgate policy shadow-report` sums them up,
//! and the audit chain still verifies.

mod support;

use support::{json, toolgate};

const SPEC: &str = r#"tools:
  - name: refund_order
    description: Refund an order.
    effect: external
    parameters: {type: object, properties: {cents: {type: integer}}}
    response: {refunded: true}
policy:
  rules:
    - tools: refund_order
      mode: shadow
      when: {above: {arg: cents, value: 10000}}
      decision: deny
    - tools: refund_order
      decision: allow
"#;

#[test]
fn a_shadow_rule_is_recorded_and_reported_but_never_decides() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), SPEC).unwrap();
    for cents in ["500", "50000", "70000"] {
        let args = format!(r#"{{"cents": {cents}}}"#);
        let out = toolgate(dir.path(), &["call", "refund_order", &args]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "the shadow rule refuses nothing"
        );
    }
    let tail = json(&toolgate(dir.path(), &["audit", "tail", "--json"]));
    let reasons: Vec<String> = tail
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["reason"].as_str().map(str::to_owned))
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.ends_with("(decided by policy.rules[1]); shadow policy.rules[0] would deny")),
        "{reasons:?}"
    );

    let report = json(&toolgate(
        dir.path(),
        &["policy", "shadow-report", "--json"],
    ));
    assert_eq!(report["observed"], 2, "{report}");
    assert_eq!(report["differ"], 2, "{report}");
    assert_eq!(report["rows"][0]["rule"], "policy.rules[0]");
    assert_eq!(report["rows"][0]["decided"], "allow");
    assert_eq!(report["rows"][0]["shadow"], "deny");
    let text = toolgate(dir.path(), &["policy", "shadow-report"]);
    let said = String::from_utf8_lossy(&text.stdout);
    assert!(
        said.contains("would tighten  policy.rules[0]  refund_order: allow → deny  ×2"),
        "{said}"
    );
    assert!(toolgate(dir.path(), &["audit", "verify"]).status.success());
}

#[test]
fn a_policy_in_shadow_mode_observes_while_the_defaults_decide() {
    let dir = tempfile::tempdir().unwrap();
    let spec = r#"tools:
  - name: lookup_order
    description: Look an order up.
    effect: read
    response: {found: true}
  - name: refund_order
    description: Refund an order.
    effect: external
    response: {refunded: true}
policy:
  mode: shadow
  effects: {external: allow}
  rules:
    - {tools: lookup_order, decision: deny, reason: lookups go through the new search}
"#;
    std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
    let lookup = toolgate(dir.path(), &["call", "lookup_order", "{}"]);
    assert_eq!(lookup.status.code(), Some(0), "reads run, as by default");
    let refund = toolgate(dir.path(), &["call", "refund_order", "{}"]);
    assert_ne!(
        refund.status.code(),
        Some(0),
        "an external call is asked, as by default"
    );
    let report = json(&toolgate(
        dir.path(),
        &["policy", "shadow-report", "--json"],
    ));
    let rows: Vec<(String, String, String, String)> = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_owned();
            (s("rule"), s("tool"), s("decided"), s("shadow"))
        })
        .collect();
    assert_eq!(
        rows,
        [
            (
                "policy".into(),
                "lookup_order".into(),
                "allow".into(),
                "deny".into()
            ),
            (
                "policy".into(),
                "refund_order".into(),
                "ask".into(),
                "allow".into()
            ),
        ]
    );
    assert!(toolgate(dir.path(), &["audit", "verify"]).status.success());
}
