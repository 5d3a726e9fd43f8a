//! The flow monitor as a specification: every step rule, guard and constraint, the
//! reasons it gives a model, and that it is a function of its inputs alone.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolgate_core::flow::{
    CallRecord, Flow, FlowView, FlowVisibility, Monitor, StepStatus, ToolStatus, visible_tools,
};
use toolgate_core::{
    Effect, Policy, Principal, ToolDescriptor, ToolSource, planner_digest_in_flow,
};

fn flow(yaml: &str) -> Flow {
    let doc = toolgate_core::spec::Document::parse(yaml).expect("YAML");
    serde_json::from_value(doc.value).expect("a flow")
}

fn state(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn ok(tools: &[&str]) -> Vec<CallRecord> {
    tools.iter().map(|t| CallRecord::new(*t, true)).collect()
}

const TOOLS: &[&str] = &[
    "verify_identity",
    "lookup_order",
    "refund_order",
    "escalate",
    "close_case",
];

fn view(flow: &Flow, state: &Map<String, Value>, history: &[CallRecord]) -> FlowView {
    Monitor::new(flow).view(state, history, TOOLS.iter().copied())
}

fn reason(view: &FlowView, tool: &str) -> String {
    match view.status(tool) {
        ToolStatus::Blocked { reason, .. } => reason,
        allowed => panic!("{tool} is {allowed:?}"),
    }
}

/// The support flow of the examples: verify, then look up, then refund.
fn support() -> Flow {
    flow(
        r#"
steps:
  - id: identify
    allow: [verify_identity]
    done: {called_ok: verify_identity}
    instruction: Ask for the account email, then verify it.
  - id: assist
    after: [identify]
    allow: [lookup_order]
  - id: refund
    after: [identify]
    gate: {called_ok: lookup_order}
    allow: [refund_order]
constraints:
  - once: refund_order
"#,
    )
}

// Steps.

#[test]
fn a_step_without_after_or_gate_is_active_from_the_start() {
    let v = view(&support(), &Map::new(), &[]);
    assert_eq!(v.active(), ["identify"]);
    assert!(v.done().is_empty());
    assert_eq!(
        v.instructions(),
        [("identify", "Ask for the account email, then verify it.")]
    );
}

#[test]
fn a_tool_of_a_waiting_step_says_what_must_happen_first() {
    let v = view(&support(), &Map::new(), &[]);
    assert_eq!(
        reason(&v, "refund_order"),
        "refund_order is blocked until verify_identity has succeeded and lookup_order has succeeded"
    );
    assert_eq!(
        reason(&v, "lookup_order"),
        "lookup_order is blocked until verify_identity has succeeded"
    );
    let ToolStatus::Blocked { details, .. } = v.status("refund_order") else {
        panic!()
    };
    assert_eq!(
        details,
        [
            "step `refund` allows it, but is not active: it comes after `identify`, which is not done: its `done: {called_ok: verify_identity}` does not hold; its `gate: {called_ok: lookup_order}` does not hold"
        ]
    );
}

#[test]
fn the_done_guard_completes_a_step_and_the_steps_after_it_activate() {
    let v = view(&support(), &Map::new(), &ok(&["verify_identity"]));
    assert_eq!(v.done(), ["identify"]);
    assert_eq!(v.active(), ["assist"], "refund still waits for its gate");
    assert!(v.is_allowed("lookup_order"));
    assert_eq!(
        reason(&v, "refund_order"),
        "refund_order is blocked until lookup_order has succeeded"
    );
    let refund = &v.steps[2];
    assert_eq!(refund.status, StepStatus::Waiting);
    assert_eq!(
        refund.why,
        ["its `gate: {called_ok: lookup_order}` does not hold"]
    );
}

#[test]
fn a_failed_call_does_not_complete_a_step() {
    let history = [CallRecord::new("verify_identity", false)];
    assert_eq!(
        view(&support(), &Map::new(), &history).active(),
        ["identify"]
    );
}

#[test]
fn a_tool_whose_only_step_is_done_is_no_longer_available() {
    let v = view(&support(), &Map::new(), &ok(&["verify_identity"]));
    assert_eq!(
        reason(&v, "verify_identity"),
        "verify_identity is blocked for the rest of this conversation: step `identify` is done"
    );
}

#[test]
fn a_tool_no_step_allows_is_ambient() {
    let v = view(&support(), &Map::new(), &[]);
    assert!(v.is_allowed("escalate"));
    let mut closed = support();
    closed.ambient = toolgate_core::flow::Ambient::Block;
    let v = view(&closed, &Map::new(), &[]);
    assert_eq!(
        reason(&v, "escalate"),
        "escalate is not part of this conversation's flow"
    );
}

#[test]
fn a_gate_reads_state_and_the_step_follows_it_both_ways() {
    let f = flow(
        r#"
steps:
  - id: vip
    gate: {eq: {tier: gold}}
    allow: [escalate]
"#,
    );
    let gold = view(&f, &state(json!({"tier": "gold"})), &[]);
    assert!(gold.is_allowed("escalate"));
    let plain = view(&f, &state(json!({"tier": "basic"})), &[]);
    assert_eq!(
        reason(&plain, "escalate"),
        "escalate is blocked until `tier` is `gold`"
    );
}

#[test]
fn an_active_step_denies_a_tool_until_it_is_done() {
    let f = flow(
        r#"
steps:
  - id: identify
    allow: [verify_identity]
    deny: [escalate]
    done: {is_true: verified}
  - id: waiting_room
    deny: [close_case]
"#,
    );
    let v = view(&f, &Map::new(), &[]);
    assert_eq!(
        reason(&v, "escalate"),
        "escalate is blocked until `verified` is true"
    );
    assert_eq!(
        reason(&v, "close_case"),
        "close_case is not allowed during step `waiting_room`",
        "a step without `done` denies for good while it is active"
    );
    let v = view(&f, &state(json!({"verified": true})), &[]);
    assert!(v.is_allowed("escalate"));
}

#[test]
fn deny_wins_over_another_steps_allow() {
    let f = flow(
        r#"
steps:
  - id: a
    allow: [lookup_order]
  - id: b
    deny: [lookup_order]
    done: {called_ok: escalate}
"#,
    );
    let v = view(&f, &Map::new(), &[]);
    assert_eq!(
        reason(&v, "lookup_order"),
        "lookup_order is blocked until escalate has succeeded"
    );
}

#[test]
fn a_done_terminal_step_ends_the_flow() {
    let f = flow(
        r#"
steps:
  - id: work
    allow: [lookup_order]
  - id: wrap_up
    terminal: true
    allow: [close_case]
    done: {called_ok: close_case}
"#,
    );
    let v = view(&f, &Map::new(), &ok(&["close_case"]));
    assert_eq!(v.finished_by.as_deref(), Some("wrap_up"));
    assert!(v.active().is_empty());
    assert_eq!(
        reason(&v, "lookup_order"),
        "lookup_order is blocked for the rest of this conversation: the conversation's flow ended when step `wrap_up` was done"
    );
    assert!(v.is_allowed("escalate"), "ambient tools outlive the flow");
}

#[test]
fn steps_that_wait_for_each_other_never_hang_the_monitor() {
    let f = flow(
        r#"
steps:
  - id: a
    after: [b]
    done: {done: b}
    allow: [lookup_order]
  - id: b
    after: [a]
    done: {not: {done: a}}
"#,
    );
    let v = view(&f, &Map::new(), &[]);
    assert!(v.active().is_empty());
    assert!(!v.is_allowed("lookup_order"));
}

// Constraints.

#[test]
fn once_allows_one_success_and_failures_do_not_count() {
    let f = flow("constraints: [{once: refund_order}]");
    let failed = [CallRecord::new("refund_order", false)];
    assert!(view(&f, &Map::new(), &failed).is_allowed("refund_order"));
    let v = view(&f, &Map::new(), &ok(&["refund_order"]));
    assert_eq!(
        reason(&v, "refund_order"),
        "refund_order may succeed only once in a conversation, and it already has"
    );
}

#[test]
fn before_blocks_the_second_tool_until_the_first_has_succeeded() {
    let f = flow("constraints: [{before: {first: lookup_order, then: refund_order}}]");
    let v = view(&f, &Map::new(), &[]);
    assert_eq!(
        reason(&v, "refund_order"),
        "refund_order is blocked until lookup_order has succeeded"
    );
    assert!(v.is_allowed("lookup_order"));
    assert!(view(&f, &Map::new(), &ok(&["lookup_order"])).is_allowed("refund_order"));
}

#[test]
fn never_until_blocks_until_its_guard_holds() {
    let f = flow(
        "constraints: [{never_until: {tool: escalate, until: {any: [{is_set: ticket}, {called_ok: lookup_order}]}}}]",
    );
    let v = view(&f, &Map::new(), &[]);
    assert_eq!(
        reason(&v, "escalate"),
        "escalate is blocked until either `ticket` is set or lookup_order has succeeded"
    );
    assert!(view(&f, &state(json!({"ticket": "T-1"})), &[]).is_allowed("escalate"));
    assert!(view(&f, &Map::new(), &ok(&["lookup_order"])).is_allowed("escalate"));
}

#[test]
fn require_keeps_terminal_steps_inactive_until_the_required_tool_succeeds() {
    let f = flow(
        r#"
steps:
  - id: wrap_up
    terminal: true
    allow: [close_case]
constraints:
  - require: {tool: escalate, when: {is_true: angry}}
"#,
    );
    let calm = view(&f, &Map::new(), &[]);
    assert!(calm.is_allowed("close_case"));
    assert!(calm.required.is_empty());
    let angry = view(&f, &state(json!({"angry": true})), &[]);
    assert_eq!(
        reason(&angry, "close_case"),
        "close_case is blocked until escalate has succeeded (it is required because `angry` is true)"
    );
    assert_eq!(angry.required[0].tool, "escalate");
    assert_eq!(angry.required[0].because, "`angry` is true");
    let done = view(&f, &state(json!({"angry": true})), &ok(&["escalate"]));
    assert!(done.is_allowed("close_case"));
}

#[test]
fn every_unmet_condition_is_named_once() {
    let f = flow(
        r#"
steps:
  - id: identify
    allow: [verify_identity]
    done: {called_ok: verify_identity}
  - id: refund
    after: [identify]
    allow: [refund_order]
constraints:
  - before: {first: lookup_order, then: refund_order}
  - never_until: {tool: refund_order, until: {called_ok: verify_identity}}
"#,
    );
    let v = view(&f, &Map::new(), &[]);
    assert_eq!(
        reason(&v, "refund_order"),
        "refund_order is blocked until verify_identity has succeeded and lookup_order has succeeded"
    );
}

#[test]
fn a_condition_that_can_no_longer_change_says_so() {
    let f = flow(
        "constraints: [{never_until: {tool: escalate, until: {not: {called_ok: refund_order}}}}]",
    );
    assert!(view(&f, &Map::new(), &[]).is_allowed("escalate"));
    let v = view(&f, &Map::new(), &ok(&["refund_order"]));
    assert_eq!(
        reason(&v, "escalate"),
        "escalate is blocked for the rest of this conversation: refund_order has already succeeded"
    );
}

// Confirmation.

#[test]
fn confirm_asks_for_every_call_of_a_listed_tool() {
    let f = flow("confirm: [refund_order]");
    let status = Monitor::new(&f).admit(&Map::new(), &[], "refund_order", &json!({}));
    assert_eq!(
        status,
        ToolStatus::Allowed {
            confirm: Some("the flow asks the user to confirm every refund_order call".into())
        }
    );
    let other = Monitor::new(&f).admit(&Map::new(), &[], "lookup_order", &json!({}));
    assert_eq!(other, ToolStatus::Allowed { confirm: None });
}

#[test]
fn confirm_above_a_threshold_asks_only_for_calls_above_it() {
    let f = flow(
        "confirm: [{tool: refund_order, when: {above: {arg: amount_cents, state: refund_threshold_cents}}}]",
    );
    let m = Monitor::new(&f);
    let s = state(json!({"refund_threshold_cents": 5000}));
    let big = m.admit(&s, &[], "refund_order", &json!({"amount_cents": 6499}));
    assert_eq!(
        big,
        ToolStatus::Allowed {
            confirm: Some("the flow asks the user to confirm refund_order when `amount_cents` is above `refund_threshold_cents` (`amount_cents` is 6499, `refund_threshold_cents` is 5000)".into())
        }
    );
    let small = m.admit(&s, &[], "refund_order", &json!({"amount_cents": 1999}));
    assert_eq!(small, ToolStatus::Allowed { confirm: None });
    // A limit nobody set: ask, the safe side.
    let unset = m.admit(
        &Map::new(),
        &[],
        "refund_order",
        &json!({"amount_cents": 1}),
    );
    assert!(matches!(unset, ToolStatus::Allowed { confirm: Some(_) }));
    // Listing tools, there is no call: the listing says when it asks.
    let listed = m.view(&s, &[], ["refund_order"]);
    assert_eq!(
        listed.status("refund_order"),
        ToolStatus::Allowed {
            confirm: Some(
                "the user confirms calls where `amount_cents` is above `refund_threshold_cents`"
                    .into()
            )
        }
    );
}

#[test]
fn a_blocked_tool_is_blocked_whatever_its_arguments() {
    let f = flow("constraints: [{once: refund_order}]\nconfirm: [refund_order]");
    let status = Monitor::new(&f).admit(
        &Map::new(),
        &ok(&["refund_order"]),
        "refund_order",
        &json!({}),
    );
    assert!(!status.is_allowed());
}

// Rendering for a model.

fn descriptor(name: &str, effect: Effect) -> ToolDescriptor {
    ToolDescriptor::new(
        name,
        format!("Does {name}."),
        json!({"type": "object"}),
        effect,
        ToolSource::Builtin,
    )
}

#[test]
fn blocked_tools_are_hidden_or_marked_with_the_reason() {
    let tools: Vec<ToolDescriptor> = TOOLS.iter().map(|t| descriptor(t, Effect::Read)).collect();
    let v = view(&support(), &Map::new(), &[]);
    let hidden = visible_tools(&tools, &v, FlowVisibility::Hide);
    let names: Vec<&str> = hidden.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["verify_identity", "escalate", "close_case"]);
    let marked = visible_tools(&tools, &v, FlowVisibility::Mark);
    assert_eq!(marked.len(), TOOLS.len());
    assert_eq!(
        marked[1].description,
        "[Not available yet: lookup_order is blocked until verify_identity has succeeded.] Does lookup_order."
    );
}

#[test]
fn the_digest_leads_with_the_active_steps_and_hides_or_marks_blocked_tools() {
    let tools: Vec<ToolDescriptor> = TOOLS.iter().map(|t| descriptor(t, Effect::Read)).collect();
    let v = view(&support(), &Map::new(), &[]);
    let policy = Policy::default();
    let principal = Principal::operator();
    let hidden = planner_digest_in_flow(&tools, &policy, &principal, &v, FlowVisibility::Hide);
    assert!(
        hidden.contains("### Where the conversation stands\n- Now (identify): Ask for the account email, then verify it.\n"),
        "{hidden}"
    );
    assert!(
        hidden.contains("### verify_identity (read; runs at once)"),
        "{hidden}"
    );
    assert!(!hidden.contains("### refund_order"), "{hidden}");
    let marked = planner_digest_in_flow(&tools, &policy, &principal, &v, FlowVisibility::Mark);
    assert!(
        marked.contains("### refund_order (read; not available yet: refund_order is blocked until verify_identity has succeeded and lookup_order has succeeded)"),
        "{marked}"
    );
}

// Determinism.

const KEYS: &[&str] = &["k1", "k2", "k3"];
const STEPS: &[&str] = &["s1", "s2", "s3", "s4"];

fn pick(names: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(names).prop_map(str::to_owned)
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(true)),
        Just(json!(false)),
        Just(json!(null)),
        Just(json!(1)),
        Just(json!("x")),
    ]
}

fn guard() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!("always")),
        pick(KEYS).prop_map(|k| json!({"is_true": k})),
        pick(KEYS).prop_map(|k| json!({"is_set": k})),
        (pick(KEYS), value()).prop_map(|(k, v)| json!({"eq": {k: v}})),
        pick(TOOLS).prop_map(|t| json!({"called_ok": t})),
        pick(STEPS).prop_map(|s| json!({"done": s})),
        (pick(&["amount"]), pick(KEYS)).prop_map(|(a, k)| json!({"above": {"arg": a, "state": k}})),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(|g| json!({"all": g})),
            prop::collection::vec(inner.clone(), 0..3).prop_map(|g| json!({"any": g})),
            inner.prop_map(|g| json!({"not": g})),
        ]
    })
}

fn tools() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(pick(TOOLS), 0..3)
}

fn step() -> impl Strategy<Value = Value> {
    (
        pick(STEPS),
        prop::collection::vec(pick(STEPS), 0..2),
        prop::option::of(guard()),
        prop::option::of(guard()),
        tools(),
        tools(),
        any::<bool>(),
    )
        .prop_map(|(id, after, gate, done, allow, deny, terminal)| {
            let mut step = json!({"id": id, "after": after, "allow": allow, "deny": deny, "terminal": terminal});
            if let Some(gate) = gate {
                step["gate"] = gate;
            }
            if let Some(done) = done {
                step["done"] = done;
            }
            step
        })
}

fn constraint() -> impl Strategy<Value = Value> {
    prop_oneof![
        pick(TOOLS).prop_map(|t| json!({"once": t})),
        (pick(TOOLS), pick(TOOLS)).prop_map(|(a, b)| json!({"before": {"first": a, "then": b}})),
        (pick(TOOLS), guard()).prop_map(|(t, g)| json!({"never_until": {"tool": t, "until": g}})),
        (pick(TOOLS), guard()).prop_map(|(t, g)| json!({"require": {"tool": t, "when": g}})),
    ]
}

fn any_flow() -> impl Strategy<Value = Flow> {
    (
        prop::collection::vec(step(), 0..5),
        prop::collection::vec(constraint(), 0..4),
        prop::collection::vec(
            prop_oneof![
                pick(TOOLS).prop_map(Value::String),
                (pick(TOOLS), guard()).prop_map(|(t, g)| json!({"tool": t, "when": g})),
            ],
            0..2,
        ),
        any::<bool>(),
    )
        .prop_map(|(steps, constraints, confirm, block)| {
            let ambient = if block { "block" } else { "allow" };
            serde_json::from_value(json!({
                "steps": steps, "constraints": constraints, "confirm": confirm, "ambient": ambient
            }))
            .expect("generated flows are well-formed")
        })
}

fn any_state() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(pick(KEYS), value(), 0..4).prop_map(|m| m.into_iter().collect())
}

fn any_history() -> impl Strategy<Value = Vec<CallRecord>> {
    prop::collection::vec(
        (pick(TOOLS), any::<bool>()).prop_map(|(t, ok)| CallRecord::new(t, ok)),
        0..8,
    )
}

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> T {
    serde_json::from_str(&serde_json::to_string(value).unwrap()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_same_history_gives_the_same_answer(
        f in any_flow(), s in any_state(), h in any_history(), amount in 0u32..10_000,
    ) {
        let first = view(&f, &s, &h);
        prop_assert_eq!(&first, &view(&f, &s, &h));
        // Across serialization: the flow, state and history as stored, and the answer.
        let (f2, s2, h2) = (round_trip(&f), round_trip(&s), round_trip(&h));
        prop_assert_eq!(&f2, &f);
        prop_assert_eq!(&first, &view(&f2, &s2, &h2));
        prop_assert_eq!(&round_trip(&first), &first);
        // Admitting a call agrees with the listing on whether the tool may run.
        let m = Monitor::new(&f);
        for tool in TOOLS {
            let admitted = m.admit(&s, &h, tool, &json!({"amount": amount}));
            prop_assert_eq!(admitted.is_allowed(), first.is_allowed(tool));
            prop_assert_eq!(&admitted, &Monitor::new(&f2).admit(&s2, &h2, tool, &json!({"amount": amount})));
        }
    }

    #[test]
    fn a_blocked_tool_always_has_a_reason_that_names_it(
        f in any_flow(), s in any_state(), h in any_history(),
    ) {
        for (tool, status) in &view(&f, &s, &h).tools {
            if let ToolStatus::Blocked { reason, .. } = status {
                prop_assert!(reason.starts_with(tool.as_str()), "{}", reason);
                prop_assert!(reason.len() > tool.len() + 10, "{}", reason);
            }
        }
    }
}

// Words for a principal.

#[test]
fn words_for_a_viewer_name_no_tool_outside_its_view() {
    let f = flow(
        r#"
steps:
  - id: identify
    allow: [verify_identity]
    done: {called_ok: verify_identity}
  - id: wrap_up
    after: [identify]
    terminal: true
    allow: [close_case]
constraints:
  - require: {tool: escalate, when: {called_ok: refund_order}}
  - never_until: {tool: lookup_order, until: {not: {called_ok: refund_order}}}
confirm:
  - {tool: close_case, when: {not: {called_ok: escalate}}}
"#,
    );
    // Sees neither `refund_order` nor `escalate`.
    let sees = |tool: &str| !matches!(tool, "refund_order" | "escalate");
    let monitor = Monitor::new(&f).seen_by(&sees);
    let history = ok(&["verify_identity", "refund_order"]);
    let v = monitor.view(&Map::new(), &history, TOOLS.iter().copied());
    assert_eq!(
        reason(&v, "close_case"),
        "close_case is blocked until a step you cannot take has been done (it is required because a step you cannot take has been done)"
    );
    assert_eq!(
        reason(&v, "lookup_order"),
        "lookup_order is blocked for the rest of this conversation: a step you cannot take has already been done"
    );
    assert_eq!(v.required[0].tool, "a step you cannot take");
    let text = serde_json::to_string(&v).unwrap();
    assert!(
        !text.contains("refund_order") && !text.contains("escalate"),
        "{text}"
    );
    // The same facts without a viewer: every tool named, for the operator.
    let full = view(&f, &Map::new(), &history);
    assert_eq!(
        reason(&full, "close_case"),
        "close_case is blocked until escalate has succeeded (it is required because refund_order has succeeded)"
    );
    // A confirmation's reason too.
    let history = ok(&["verify_identity"]);
    let f = flow(
        r#"
confirm:
  - {tool: close_case, when: {not: {called_ok: escalate}}}
"#,
    );
    let status =
        Monitor::new(&f)
            .seen_by(&sees)
            .admit(&Map::new(), &history, "close_case", &json!({}));
    assert_eq!(
        status,
        ToolStatus::Allowed {
            confirm: Some(
                "the flow asks the user to confirm close_case when a step you cannot take has not been done"
                    .into()
            )
        }
    );
}
