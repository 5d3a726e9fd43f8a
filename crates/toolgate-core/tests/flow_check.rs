//! `toolgate check` on flows and tests: every mistake found, located, and explained.

use toolgate_core::spec::{Diagnostic, Severity, check};

const TOOLS: &str = r#"
tools:
  - name: verify_identity
    description: Verify.
    effect: read
    set_state: {verified: true}
  - name: lookup_order
    description: Look up.
    effect: read
    parameters:
      type: object
      properties: {order_id: {type: string}}
  - name: refund_order
    description: Refund.
    parameters:
      type: object
      properties: {amount_cents: {type: integer}}
  - name: escalate
    description: Escalate.
principals:
  bot: {ceiling: external}
state:
  verified: {type: boolean}
  threshold: {type: integer, default: 5000}
  angry: {type: boolean}
"#;

/// The diagnostics of the tools above plus `rest`, as (severity, message, help, the text marked).
fn problems(rest: &str) -> Vec<(Severity, String, String, String)> {
    let text = format!("{TOOLS}{rest}");
    let checked = check(&text);
    checked
        .diagnostics
        .iter()
        .map(|d: &Diagnostic| {
            let marked = d
                .span
                .map(|s| text[s.offset..s.offset + s.len].to_owned())
                .unwrap_or_default();
            (
                d.severity,
                d.message.clone(),
                d.help.clone().unwrap_or_default(),
                marked,
            )
        })
        .collect()
}

fn messages(rest: &str) -> Vec<String> {
    problems(rest).into_iter().map(|p| p.1).collect()
}

#[test]
fn a_sound_flow_and_its_tests_check_clean() {
    let found = problems(
        r#"
flow:
  steps:
    - id: identify
      allow: [verify_identity]
      done: {is_true: verified}
    - id: assist
      after: [identify]
      allow: [lookup_order, refund_order]
  constraints:
    - once: refund_order
    - before: {first: lookup_order, then: refund_order}
  confirm:
    - {tool: refund_order, when: {above: {arg: amount_cents, state: threshold}}}
tests:
  - name: verification comes first
    as: bot
    events:
      - call: {tool: lookup_order, args: {order_id: A-1}}
      - expect: {outcome: blocked, blocked: [lookup_order], active: [identify], state: {verified: false}}
"#,
    );
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn unknown_tools_and_steps_suggest_the_closest_name() {
    let found = problems(
        r#"
flow:
  steps:
    - id: identify
      allow: [verify_identiy]
      done: {called_ok: verify_identity}
    - id: assist
      after: [identfy]
      allow: [lookup_order]
  constraints:
    - once: refund_ordr
"#,
    );
    assert_eq!(
        found,
        [
            (
                Severity::Error,
                "`verify_identiy` is not a tool this file declares".into(),
                "did you mean `verify_identity`?".into(),
                "verify_identiy".into()
            ),
            (
                Severity::Error,
                "there is no step `identfy`".into(),
                "did you mean `identify`?".into(),
                "identfy".into()
            ),
            (
                Severity::Error,
                "`refund_ordr` is not a tool this file declares".into(),
                "did you mean `refund_order`?".into(),
                "refund_ordr".into()
            ),
        ]
    );
}

#[test]
fn a_misspelt_guard_is_an_unknown_key_with_a_suggestion() {
    let found = problems(
        r#"
flow:
  steps:
    - id: identify
      done: {caled_ok: verify_identity}
"#,
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].1, "unknown key `caled_ok` in a guard");
    assert_eq!(found[0].2, "did you mean `called_ok`?");
}

#[test]
fn guards_that_read_state_nothing_writes_are_reported() {
    let found = problems(
        r#"
flow:
  steps:
    - id: calm
      gate: {not: {is_true: angry}}
    - id: vip
      gate: {is_true: vipp}
"#,
    );
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!(found[0].0, Severity::Warning);
    assert_eq!(
        found[0].1,
        "this guard reads state key `angry`, which no tool writes and no default sets"
    );
    assert_eq!(found[1].0, Severity::Error);
    assert_eq!(
        found[1].1,
        "this guard reads state key `vipp`, which is not declared under `state:` and no tool writes"
    );
}

#[test]
fn cycles_in_after_are_errors() {
    let found = messages(
        r#"
flow:
  steps:
    - id: a
      after: [b]
      done: always
    - id: b
      after: [a]
      done: always
    - id: c
      after: [c]
"#,
    );
    assert_eq!(
        found,
        [
            "steps `a` → `b` → `a` wait for each other in a cycle, so none of them can ever become active",
            "step `c` waits for itself, so it can never become active",
        ]
    );
}

#[test]
fn steps_that_can_never_become_active_are_errors() {
    let found = messages(
        r#"
flow:
  steps:
    - id: open
      allow: [lookup_order]
    - id: after_open
      after: [open]
    - id: closing
      terminal: true
      done: {called_ok: escalate}
    - id: after_closing
      after: [closing]
    - id: impossible
      gate: {all: [{is_true: verified}, {not: {is_true: verified}}]}
    - id: never_done
      done: {not: always}
"#,
    );
    assert_eq!(
        found,
        [
            "step `after_open` can never become active: it comes after `open`, which can never be done (it has no `done:` guard)",
            "step `after_closing` can never become active: it comes after terminal step `closing`, and the flow ends when `closing` is done",
            "step `impossible` can never become active: its `gate` can never hold",
            "step `never_done` can never be done: its `done` guard can never hold",
        ]
    );
}

#[test]
fn contradictory_constraints_are_errors() {
    let found = messages(
        r#"
flow:
  steps:
    - id: s
      allow: [lookup_order]
      deny: [lookup_order]
  constraints:
    - before: {first: lookup_order, then: refund_order}
    - never_until: {tool: lookup_order, until: {called_ok: refund_order}}
    - never_until: {tool: escalate, until: {not: always}}
    - once: escalate
    - once: escalate
    - before: {first: verify_identity, then: verify_identity}
"#,
    );
    assert_eq!(
        found,
        [
            "step `s` both allows and denies `lookup_order`",
            "`refund_order` and `lookup_order` each wait for the next to succeed first (`refund_order` → `lookup_order` → `refund_order`), so none of them can ever run",
            "`escalate` can never run: its `until` can never hold",
            "`once: escalate` is already stated (constraint #4)",
            "`verify_identity` must succeed before it may run, so it can never run",
        ]
    );
}

#[test]
fn above_belongs_to_confirm_and_names_an_argument() {
    let found = messages(
        r#"
flow:
  steps:
    - id: s
      gate: {above: {arg: amount_cents, value: 1}}
  confirm:
    - {tool: refund_order, when: {above: {arg: amount, state: threshold}}}
    - {tool: escalate, when: {above: {arg: x}}}
"#,
    );
    assert_eq!(
        found,
        [
            "`above` compares an argument of the call being admitted, so it can only appear in a `confirm:` entry's `when`",
            "`amount` is not an argument of `refund_order`",
            "`above` needs exactly one limit: `state: KEY` or `value: NUMBER`",
            "`x` is not an argument of `escalate`",
        ]
    );
}

#[test]
fn tests_name_real_tools_steps_state_and_principals() {
    let found = problems(
        r#"
flow:
  steps:
    - id: identify
      allow: [verify_identity]
      done: {is_true: verified}
tests:
  - name: one
    as: bott
    events:
      - expect: {outcome: ok}
      - call: {tool: lookup_ordr}
      - expect: {allowed: [escalat], blocked: [escalate], active: [identfy], state: {verifed: true}}
      - expect: {}
  - name: one
    events: []
"#,
    );
    let summary: Vec<(Severity, &str)> = found.iter().map(|p| (p.0, p.1.as_str())).collect();
    assert_eq!(
        summary,
        [
            (Severity::Error, "no principal is named `bott`"),
            (
                Severity::Error,
                "there is no call before this `expect` for `outcome` to check"
            ),
            (
                Severity::Warning,
                "`lookup_ordr` is not a tool this file declares"
            ),
            (
                Severity::Error,
                "`escalat` is not a tool this file declares"
            ),
            (Severity::Error, "there is no step `identfy`"),
            (
                Severity::Error,
                "state key `verifed` is not declared, and nothing in this test sets it"
            ),
            (Severity::Warning, "this `expect` checks nothing"),
            (Severity::Error, "test `one` is declared twice"),
            (Severity::Warning, "test `one` has no events"),
        ]
    );
    assert_eq!(found[0].2, "did you mean `bot`?");
}

#[test]
fn a_flow_with_the_wrong_shape_is_a_structural_error() {
    let found = problems(
        r#"
flow:
  steps:
    - id: s
      aftr: [x]
  constraints:
    - {once: a, before: {first: a, then: b}}
"#,
    );
    let summary: Vec<&str> = found.iter().map(|p| p.1.as_str()).collect();
    assert!(
        summary.contains(&"unknown key `aftr` in a flow step"),
        "{summary:#?}"
    );
    assert_eq!(found[0].2, "did you mean `after`?");
    assert_eq!(found.len(), 2, "{found:#?}");
}
