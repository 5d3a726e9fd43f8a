//! `toolgate code` and `render --code-mode`, as a user meets them: the real binary
//! (which is also the worker that runs each program), a real spec file and state
//! database, one process per command.

use std::path::Path;

use serde_json::Value;

use support::{json, toolgate};

mod support;

/// Two tools a program can chain, one the flow keeps until the first ran, one
/// the policy denies, and a `code_mode:` section that keeps programs short.
const SPEC: &str = r#"
code_mode:
  max_calls: 3
state:
  greeted: {type: boolean, default: false}
tools:
  - name: greet
    description: Greet someone by name.
    effect: read
    parameters:
      type: object
      properties:
        name: {type: string, description: Who to greet.}
      required: [name]
    response: {greeting: "hello {args.name}"}
    set_state: {greeted: true}
  - name: shop.wave-back
    description: Wave back, once greeted.
    effect: read
    always_loaded: true
    returns:
      type: object
      properties:
        waved: {type: boolean}
      required: [waved]
    response: {waved: true}
  - name: wipe
    description: Wipe everything.
    effect: destructive
policy:
  rules:
    - tools: wipe
      decision: deny
      reason: nobody wipes anything
flow:
  constraints:
    - before: {first: greet, then: shop.wave-back}
"#;

fn desk() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), SPEC).unwrap();
    dir
}

fn program(dir: &Path, code: &str) -> std::process::Output {
    std::fs::write(dir.join("program.py"), code).unwrap();
    toolgate(dir, &["code", "run", "program.py", "--json"])
}

#[test]
fn code_stubs_print_one_function_per_tool_the_principal_may_call() {
    let dir = desk();
    let out = toolgate(dir.path(), &["code", "stubs"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout));
}

#[test]
fn code_run_chains_tools_through_the_gate_in_a_worker_of_the_binary() {
    let dir = desk();
    let out = program(
        dir.path(),
        "g = greet(name='Ada')\nprint(g['greeting'])\nshop.wave_back()['waved']\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = json(&out);
    assert_eq!(run["value"], Value::Bool(true), "{run}");
    assert_eq!(run["printed"], "hello Ada\n");
    assert_eq!(run["calls"], 2);
    // The state the program's calls wrote is the conversation's.
    let state = toolgate(dir.path(), &["state", "get", "greeted"]);
    assert_eq!(String::from_utf8_lossy(&state.stdout).trim(), "true");
}

#[test]
fn code_run_meets_the_flow_and_the_policy_as_exceptions() {
    let dir = desk();
    let out = program(
        dir.path(),
        "out = []\n\
         for f in [shop.wave_back, wipe]:\n\
         \x20   try:\n\
         \x20       f()\n\
         \x20   except PermissionError as e:\n\
         \x20       out.append(str(e))\n\
         out\n",
    );
    let run = json(&out);
    let refusals = run["value"].as_array().unwrap_or_else(|| panic!("{run}"));
    assert_eq!(refusals.len(), 2, "{run}");
    assert!(
        refusals[1]
            .as_str()
            .unwrap()
            .contains("nobody wipes anything"),
        "{run}"
    );
}

#[test]
fn code_run_reads_its_limits_from_the_spec_file() {
    let dir = desk();
    let out = program(dir.path(), "for i in range(10):\n    greet(name=str(i))\n");
    assert!(!out.status.success());
    let run = json(&out);
    assert_eq!(run["error"]["limit"], "max_calls", "{run}");
    assert!(
        run["error"]["message"]
            .as_str()
            .unwrap()
            .contains("code_mode.max_calls` is 3"),
        "{run}"
    );
}

#[test]
fn code_run_stops_a_program_at_its_memory_limit_in_a_worker_of_the_binary() {
    let dir = desk();
    let spec = SPEC.replace(
        "max_calls: 3",
        "max_calls: 3\n  max_memory_bytes: 268435456",
    );
    std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
    // Within the limit, a program runs: the binary's allocator reserves no more
    // address space than the limit allows.
    let small = program(dir.path(), "len(greet(name='Ada')['greeting'] * 1000000)\n");
    assert_eq!(json(&small)["value"], 9_000_000, "{}", json(&small));
    let grown = program(
        dir.path(),
        "xs = []\nwhile True:\n    xs.append('x' * 1000000 + str(len(xs)))\n",
    );
    let run = json(&grown);
    assert_eq!(run["error"]["limit"], "max_memory_bytes", "{run}");
    assert!(
        run["error"]["message"]
            .as_str()
            .unwrap()
            .contains("256 MiB"),
        "{run}"
    );
}

#[test]
fn render_code_mode_offers_run_code_and_the_always_loaded_tools() {
    let dir = desk();
    let out = toolgate(
        dir.path(),
        &["render", "--for", "openai-chat", "--code-mode"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered = json(&out);
    let names: Vec<&str> = rendered["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["run_code", "resume_code", "shop_wave-back"]);
    let description = rendered["tools"][0]["function"]["description"]
        .as_str()
        .unwrap();
    assert!(
        description.contains("def greet(name: str) -> dict:"),
        "{description}"
    );
    assert!(
        description.contains("class shop:") && description.contains("    def wave_back() -> dict:"),
        "{description}"
    );
    assert!(!description.contains("def wipe"), "{description}");
}
