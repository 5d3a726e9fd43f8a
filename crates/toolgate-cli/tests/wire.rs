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

const WEATHER: &str = r#"
tools:
  - name: weather
    description: The weather in a city.
    effect: read
    parameters:
      type: object
      properties:
        city: {type: string}
"#;

#[test]
fn a_stream_with_any_of_the_line_endings_sse_allows_is_parsed() {
    let dir = desk(WEATHER);
    let chunk = |delta: Value| {
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]})
            .to_string()
    };
    let events = [
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":"}}]}),
        ),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Oslo\"}"}}]})),
    ];
    for ending in ["\n", "\r\n", "\r"] {
        let mut text = format!(": a comment{ending}");
        for event in &events {
            text.push_str(&format!("data: {event}{ending}{ending}"));
        }
        text.push_str(&format!("data: [DONE]{ending}{ending}"));
        let calls = ok_json(&toolgate(
            dir.path(),
            &["parse", "--for", "openai-chat", "--stream"],
            Some(&text),
        ));
        assert_eq!(calls[0]["arguments"], json!({"city": "Oslo"}), "{ending:?}");
    }
}

/// Runs `args`, failing the test (and ending the process) if it takes longer than 10 s.
#[cfg(unix)]
fn within_ten_seconds(dir: &Path, args: &[&str]) -> Output {
    use std::time::{Duration, Instant};
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(dir)
        .env_remove("TOOLGATE_STATE_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(10) {
            child.kill().unwrap();
            panic!("`toolgate {}` still running after 10 s", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[cfg(unix)]
#[test]
fn a_named_pipe_given_as_a_file_is_refused_at_once() {
    let dir = desk(WEATHER);
    let fifo = dir.path().join("pipe.yaml");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let out = within_ten_seconds(dir.path(), &["check", "-f", "pipe.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "cannot read spec file pipe.yaml: it is a named pipe, not a regular file; a spec file is read whole"
        ),
        "{}",
        stderr(&out)
    );
    for args in [
        &["parse", "--for", "openai-chat", "pipe.yaml"][..],
        &["import", "--from", "mcp", "pipe.yaml"],
    ] {
        let out = within_ten_seconds(dir.path(), args);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains("cannot read pipe.yaml: it is a named pipe, not a regular file; to read from a pipe, give `-`"),
            "{}",
            stderr(&out)
        );
    }
}
