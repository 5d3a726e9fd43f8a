//! `toolgate render` and `toolgate parse` on real-world files, run as a user runs
//! them: the real binary on real files.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn toolgate(dir: &Path, args: &[&str], input: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(dir)
        .env_remove("TOOLGATE_STATE_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    if let Some(input) = input {
        use std::io::Write;
        let mut stdin = stdin;
        stdin.write_all(input.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

/// A scratch directory holding `spec` as `toolgate.yaml`.
fn desk(spec: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
    dir
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ok_json(out: &Output) -> Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

const SPANISH: &str = r#"
tools:
  - name: pedidos.crear
    description: Crea un pedido.
    effect: read
    parameters:
      type: object
      properties:
        año: {type: integer}
        größe: {type: string}
        api-key: {type: string}
        dirección:
          type: object
          properties:
            código postal: {type: string}
      required: [año]
"#;

#[test]
fn gemini_renames_parameter_names_it_refuses_and_parse_reads_them_back() {
    let dir = desk(SPANISH);
    for target in ["gemini", "vertex"] {
        let value = ok_json(&toolgate(dir.path(), &["render", "--for", target], None));
        let declaration = &value["tools"][0]["functionDeclarations"][0];
        let names: Vec<&String> = declaration["parameters"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(names, ["ano", "grosse", "api_key", "direccion"]);
        assert_eq!(declaration["parameters"]["required"], json!(["ano"]));
    }
    let explained = toolgate(
        dir.path(),
        &["render", "--for", "gemini", "--explain"],
        None,
    );
    let explained = String::from_utf8(explained.stdout).unwrap();
    assert!(
        explained.contains("at /properties/dirección/properties/código postal: parameter `código postal` renamed to `codigo_postal`"),
        "{explained}"
    );
    let response = json!({"candidates": [{"content": {"parts": [{"functionCall": {
        "name": "pedidos.crear",
        "args": {"ano": 2024, "grosse": "L", "direccion": {"codigo_postal": "28001"}}
    }}]}}]});
    let calls = ok_json(&toolgate(
        dir.path(),
        &["parse", "--for", "gemini"],
        Some(&response.to_string()),
    ));
    assert_eq!(
        calls[0]["arguments"],
        json!({"año": 2024, "größe": "L", "dirección": {"código postal": "28001"}})
    );
}

/// A spec with `n` tools, the first marked `always_loaded`.
fn catalog_of(n: usize) -> String {
    let mut spec = String::from("tools:\n");
    for i in 0..n {
        spec.push_str(&format!(
            "  - name: tool_{i}\n    description: Tool number {i}.\n    effect: read\n{}",
            if i == 0 {
                "    always_loaded: true\n"
            } else {
                ""
            }
        ));
    }
    spec
}

#[test]
fn a_catalog_larger_than_the_api_takes_says_to_defer_and_defer_renders_it() {
    for (target, limit) in [("gemini", 512), ("vertex", 128)] {
        let dir = desk(&catalog_of(limit + 1));
        let out = toolgate(dir.path(), &["render", "--for", target], None);
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert!(
            err.contains(&format!(
                "{} function declarations; {target} takes at most {limit} per request",
                limit + 1
            )) && err.contains("`render --defer`"),
            "{err}"
        );
        let value = ok_json(&toolgate(
            dir.path(),
            &["render", "--for", target, "--defer"],
            None,
        ));
        let declared: Vec<&str> = value["tools"][0]["functionDeclarations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert_eq!(declared, ["tool_0", "search_tools"]);
        // The calls of a deferred request are read with its own names.
        let response = json!({"candidates": [{"content": {"parts": [
            {"functionCall": {"name": "search_tools", "args": {"query": "tool 7"}}}
        ]}}]});
        let calls = ok_json(&toolgate(
            dir.path(),
            &["parse", "--for", target, "--defer"],
            Some(&response.to_string()),
        ));
        assert_eq!(calls[0]["name"], "search_tools");
        assert!(calls[0].get("invalid").is_none(), "{}", calls[0]);
    }
}
