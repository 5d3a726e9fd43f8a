//! Budgets from the command line: each `toolgate call` is a process of its
//! own, and the budget counts them together in the state directory's store;
//! `toolgate budgets` shows what is spent, and `toolgate check` points at a
//! budget that cannot work.

mod support;

use support::{json, toolgate};

const SPEC: &str = r#"tools:
  - name: refund_order
    description: Refund an order.
    effect: external
    parameters: {type: object, properties: {cents: {type: integer}}, required: [cents]}
    cost: {arg: cents}
    response: {refunded: true}
policy:
  effects: {external: allow}
budgets:
  - {tools: refund_order, calls: 2, per: 1d}
  - {tools: "refund_*", cost: 100000, per: 1d, over: ask}
"#;

#[test]
fn calls_from_separate_processes_spend_one_budget() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), SPEC).unwrap();
    for cents in ["500", "700"] {
        let args = format!(r#"{{"cents": {cents}}}"#);
        let out = toolgate(dir.path(), &["call", "refund_order", &args]);
        assert!(out.status.success(), "{out:?}");
    }
    let third = toolgate(dir.path(), &["call", "refund_order", r#"{"cents": 100}"#]);
    assert!(!third.status.success());
    let said = String::from_utf8_lossy(&third.stdout).to_string()
        + &String::from_utf8_lossy(&third.stderr);
    assert!(
        said.contains("over budget (all calls to `refund_order`: 2 calls per 1d): 2 of 2 calls spent this window"),
        "{said}"
    );
    let used = json(&toolgate(dir.path(), &["budgets", "--json"]));
    let rows: Vec<(String, u64, u64, String)> = used
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["budget"].as_str().unwrap().to_owned(),
                u["spent"].as_u64().unwrap(),
                u["limit"].as_u64().unwrap(),
                u["over"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("budgets[0]".to_owned(), 2, 2, "deny".to_owned()),
            ("budgets[1]".to_owned(), 1200, 100000, "ask".to_owned())
        ]
    );
    let text = toolgate(dir.path(), &["budgets"]);
    let said = String::from_utf8_lossy(&text.stdout);
    assert!(
        said.contains("budgets[0]  all calls to `refund_order`: 2 calls per 1d\n    every caller: 2 of 2 calls spent; over: deny; the window ends "),
        "{said}"
    );
    assert!(said.contains("(used up)"), "{said}");
}

#[test]
fn check_points_at_a_budget_that_cannot_work() {
    let dir = tempfile::tempdir().unwrap();
    let broken = SPEC
        .replace("cost: {arg: cents}", "cost: {arg: amount}")
        .replace("calls: 2, per: 1d", "calls: 2, per: daily");
    std::fs::write(dir.path().join("toolgate.yaml"), broken).unwrap();
    let out = toolgate(dir.path(), &["check"]);
    assert!(!out.status.success());
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    insta::assert_snapshot!(said);
}
