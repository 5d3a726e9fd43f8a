//! What the operator's terminal shows of hostile text: spec files, foreign tool
//! lists and model arguments carrying escape sequences (set the window title, clear
//! the screen), C1 controls and bidi overrides. A person sees them escaped; `--json`
//! keeps them exactly.

use std::process::Output;

use serde_json::{Value, json};

use support::toolgate;

mod support;

/// A tool whose title, description, parameter description and canned response
/// drive a terminal, behind a policy rule whose reason does too.
const HOSTILE_SPEC: &str = r#"policy:
  rules:
    - tools: evil
      decision: ask
      reason: "ask\e]0;pwned-by-policy\a"
tools:
  - name: evil
    title: "\e[31mRed title\e[0m"
    description: "Looks fine.\e]0;pwned\a\e[2J\e[H\u202Eevil"
    effect: external
    parameters:
      type: object
      properties:
        note:
          type: string
          description: "A note.\e]0;param\a"
    response:
      ok: "\e[2J done"
"#;

fn dir_with(spec: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
    dir
}

/// Both streams, checked for anything a terminal would obey.
fn shown(out: &Output) -> (String, String) {
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        let bad: Vec<char> = text
            .chars()
            .filter(|&c| toolgate::sanitize::is_unsafe_for_terminal(c))
            .collect();
        assert!(bad.is_empty(), "{name} holds {bad:?}:\n{text}");
    }
    (stdout, stderr)
}

#[test]
fn check_shows_a_hostile_files_keys_and_source_lines_escaped() {
    let dir = dir_with(
        "tools:\n  - name: evil\n    \"desc\\e]0;pwned\\aription\": x\n    description: \"ok\\e[2J\"\n    effect: read\n",
    );
    let out = toolgate(dir.path(), &["check"]);
    assert_eq!(out.status.code(), Some(1));
    let (stdout, _) = shown(&out);
    insta::assert_snapshot!("check_unknown_key", stdout);

    // A raw ESC byte is no YAML: the snippet that shows where still cannot act.
    let dir =
        dir_with("tools:\n  - name: evil\n    description: ok\n    # raw \x1b]0;title\x07 here\n");
    let out = toolgate(dir.path(), &["check"]);
    assert_eq!(out.status.code(), Some(1));
    let (stdout, _) = shown(&out);
    insta::assert_snapshot!("check_raw_escape", stdout);

    let json: Value = serde_json::from_slice(&toolgate(dir.path(), &["check", "--json"]).stdout)
        .expect("--json stays JSON");
    assert_eq!(json["ok"], false);
}

#[test]
fn describe_and_list_show_a_hostile_description_escaped_and_json_keeps_it_exactly() {
    let dir = dir_with(HOSTILE_SPEC);
    let out = toolgate(dir.path(), &["describe", "evil"]);
    assert!(out.status.success());
    let (stdout, _) = shown(&out);
    insta::assert_snapshot!("describe", stdout);

    let (list, _) = shown(&toolgate(dir.path(), &["list"]));
    assert!(
        list.contains("Looks fine.\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{1b}[H\\u{202e}evil"),
        "{list}"
    );

    let json: Value =
        serde_json::from_slice(&toolgate(dir.path(), &["describe", "evil", "--json"]).stdout)
            .unwrap();
    assert_eq!(
        json["descriptor"]["description"],
        "Looks fine.\x1b]0;pwned\x07\x1b[2J\x1b[H\u{202e}evil"
    );
}

#[test]
fn import_of_a_hostile_tool_list_prints_sanitized_yaml_and_escaped_notes() {
    let dir = tempfile::tempdir().unwrap();
    let list = json!([
        {"type": "function", "function": {"name": "evil\u{1b}]0;name\u{7}",
         "description": "Looks fine.\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}",
         "parameters": {"type": "object", "properties": {
             "q": {"type": "string", "description": "x\u{9b}2J\u{202e}"}}}}},
        {"type": "function", "function": {"name": "worse", "description": "x",
         "parameters": {"type": "object", "properties": {"q\u{1b}[2J": {"type": "string"}}}}}
    ]);
    std::fs::write(dir.path().join("tools.json"), list.to_string()).unwrap();
    let out = toolgate(
        dir.path(),
        &["import", "--from", "openai-chat", "tools.json"],
    );
    assert!(out.status.success());
    let (stdout, stderr) = shown(&out);
    insta::assert_snapshot!("import_yaml", stdout);
    assert!(
        stderr.contains("`worse` is skipped: `parameters`: its schema's property name at `/properties/q\\u{1b}[2J` holds a control character (U+001B)"),
        "{stderr}"
    );
}

#[test]
fn approvals_and_audit_show_a_models_hostile_arguments_and_names_escaped() {
    let dir = dir_with(HOSTILE_SPEC);
    // A model's arguments: an OSC title, a C1 CSI that clears the screen, a bidi override.
    let out = toolgate(
        dir.path(),
        &[
            "call",
            "evil",
            r#"{"note": "\u001b]0;arg\u0007\u009b2J\u202e"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(3), "waits for approval");
    let (_, stderr) = shown(&out);
    assert!(
        stderr.contains("ask\\u{1b}]0;pwned-by-policy\\u{7}"),
        "{stderr}"
    );
    // And a tool name no tool has.
    let out = toolgate(dir.path(), &["call", "\x1b]0;name\x07\x1b[2J"]);
    assert_eq!(out.status.code(), Some(1));
    let (_, stderr) = shown(&out);
    assert!(
        stderr.contains("no tool is named `\\u{1b}]0;name\\u{7}\\u{1b}[2J`"),
        "{stderr}"
    );

    let (approvals, _) = shown(&toolgate(dir.path(), &["approvals"]));
    assert!(
        approvals.contains(r#"evil  {"note":"\u001b]0;arg\u0007\u{9b}2J\u{202e}"}"#),
        "{approvals}"
    );
    let json: Value =
        serde_json::from_slice(&toolgate(dir.path(), &["approvals", "--json"]).stdout).unwrap();
    assert_eq!(
        json[0]["arguments"]["note"],
        "\x1b]0;arg\x07\u{9b}2J\u{202e}"
    );

    let (tail, _) = shown(&toolgate(dir.path(), &["audit", "tail"]));
    assert!(
        tail.contains("refusal     \\u{1b}]0;name\\u{7}\\u{1b}[2J  unknown_tool"),
        "{tail}"
    );
    let json: Value =
        serde_json::from_slice(&toolgate(dir.path(), &["audit", "tail", "--json"]).stdout).unwrap();
    assert_eq!(json[1]["tool"], "\x1b]0;name\x07\x1b[2J", "{json}");

    let (_, _) = shown(&toolgate(dir.path(), &["audit", "pending"]));
    let (_, _) = shown(&toolgate(dir.path(), &["audit", "verify"]));
}

#[test]
fn a_call_prints_a_hostile_value_escaped_as_valid_json() {
    let dir = dir_with(
        "tools:\n  - name: evil\n    description: x\n    effect: read\n    response:\n      ok: \"\\e[2J\\x9B2J\\u202E done\"\n",
    );
    let out = toolgate(dir.path(), &["call", "evil"]);
    assert!(out.status.success());
    let (stdout, _) = shown(&out);
    let value: Value = serde_json::from_str(&stdout).expect("still JSON");
    assert_eq!(value, json!({"ok": "\x1b[2J\u{9b}2J\u{202e} done"}));
}
