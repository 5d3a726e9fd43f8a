//! Trying a policy change on a store's real traffic: calls made through two
//! gates with a shadow rule leave records that still verify, say what the
//! shadow rule would have decided, and replay through a new spec.

use super::*;
use toolgate::policy::{Replay, Shadowed};
use toolgate::{Catalog, Decision, Gate, Principal, ToolCall};

/// The tools and state both specs declare.
const TOOLS: &str = r#"
tools:
  - {name: lookup, description: Look an order up., effect: read, set_state: {looked_up: true}}
  - name: refund
    description: Refund an order.
    effect: external
    parameters: {type: object, properties: {cents: {type: integer}}, required: [cents]}
state:
  looked_up: {type: boolean, default: false}
"#;

/// The policy in force: refunds run, and a shadow rule trials refusing big ones.
const CURRENT: &str = r#"
policy:
  rules:
    - {tools: refund, mode: shadow, when: {above: {arg: cents, value: 1000}}, decision: deny}
    - {tools: refund, decision: allow}
"#;

/// The change tried: refunds only once an order is looked up, by the state
/// the lookup writes.
const NEW: &str = r#"
policy:
  rules:
    - {tools: refund, when: {is_true: looked_up}, decision: allow}
    - {tools: refund, decision: deny}
"#;

fn spec(policy: &str) -> toolgate::spec::SpecFile {
    let text = format!("{TOOLS}{policy}");
    serde_json::from_value(toolgate::spec::Document::parse(&text).unwrap().value).unwrap()
}

pub(super) fn shadow_records_verify_and_replay_through_a_new_spec(backend: &dyn Backend) {
    let current = spec(CURRENT);
    let gate = |store: Arc<dyn Store>| {
        Gate::from_spec(&current, "toolgate.yaml", &Catalog::new(), store).unwrap()
    };
    let gates = [gate(backend.open().unwrap()), gate(backend.open().unwrap())];
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let operator = Principal::operator();
    runtime.block_on(async {
        let call = |tool: &str, args: Value| ToolCall::new("c", tool, args);
        // Conversation a looks up, then refunds a lot; b refunds a little, unlooked.
        let calls = [
            (0, "a", call("lookup", json!({}))),
            (1, "a", call("refund", json!({"cents": 5000}))),
            (0, "b", call("refund", json!({"cents": 300}))),
        ];
        for (on, session, call) in calls {
            let outcome = gates[on].call(session, call, &operator).await;
            assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
        }
    });
    let store = backend.open().unwrap();
    assert!(store.verify().unwrap().is_ok(), "the chain verifies");
    let records = store.tail(usize::MAX).unwrap();
    let shadows: Vec<Option<Shadowed>> = records
        .iter()
        .filter(|r| r.entry.kind == RecordKind::Intent && r.entry.tool == "refund")
        .map(|r| r.entry.reason.as_deref().and_then(Shadowed::from_reason))
        .collect();
    assert_eq!(
        shadows,
        [
            Some(Shadowed {
                rule: Some(0),
                decision: Decision::Deny
            }),
            None
        ],
        "the big refund, allowed, was one the shadow rule would deny"
    );
    let new = spec(NEW);
    let catalog = toolgate::spec::spec_catalog(&new, "new.yaml", &Catalog::new()).unwrap();
    let tools: Vec<toolgate::ToolDescriptor> =
        catalog.iter().map(|t| t.descriptor().clone()).collect();
    let replay = Replay {
        policy: &new.policy,
        principals: &new.principals,
        tools: &tools,
        spec: Some(&new),
    };
    let run = replay.run(&records, None, None);
    let changed: Vec<(&str, Decision, Decision)> = run
        .changes
        .iter()
        .map(|c| (c.session.as_str(), c.old, c.new))
        .collect();
    assert_eq!(changed, [("b", Decision::Allow, Decision::Deny)]);
    assert_eq!((run.judged, run.same), (3, 2));
}
