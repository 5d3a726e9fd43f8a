//! The spec loader takes whatever text it is given: arbitrary bytes, mangled copies
//! of a real spec file, YAML-ish token soup and spec-shaped documents full of odd
//! values. It never panics, and every diagnostic points inside the text, on
//! character boundaries, so it can be rendered.

use std::path::Path;
use std::sync::LazyLock;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{Map, Value};
use toolgate::spec::render_diagnostics;
use toolgate_core::spec::check;

static HELPDESK: LazyLock<String> = LazyLock::new(|| {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk/toolgate.yaml");
    std::fs::read_to_string(path).expect("the helpdesk example is readable")
});

/// Cases per property, chosen so the whole file runs in a few seconds in debug
/// builds; `PROPTEST_CASES=100000` runs a deeper search.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        // Failures print their minimal input; nothing is written next to the tests.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Checks `text` and asserts every diagnostic is well formed and renders.
fn loads_soundly(text: &str) -> Result<(), TestCaseError> {
    let checked = check(text);
    for d in &checked.diagnostics {
        prop_assert!(!d.message.is_empty(), "a diagnostic without a message");
        if let Some(span) = d.span {
            let end = span.offset.checked_add(span.len);
            prop_assert!(
                end.is_some_and(|end| end <= text.len()),
                "span {span:?} of `{}` runs past the text ({} bytes)",
                d.message,
                text.len()
            );
            let end = span.offset + span.len;
            prop_assert!(
                text.is_char_boundary(span.offset) && text.is_char_boundary(end),
                "span {span:?} of `{}` splits a character",
                d.message
            );
        }
    }
    if checked.is_ok() {
        prop_assert!(checked.spec.is_some());
    }
    let rendered = render_diagnostics("fuzz.yaml", text, &checked.diagnostics);
    prop_assert!(rendered.ends_with(" warnings\n") || rendered.ends_with(" warning\n"));
    Ok(())
}

/// One way to damage a file.
#[derive(Debug, Clone)]
enum Mutation {
    FlipByte { at: usize, mask: u8 },
    Truncate { at: usize },
    DeleteLine { line: usize },
    DuplicateLine { line: usize },
    InsertByte { at: usize, byte: u8 },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    // Positions are scaled to the text when applied.
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(at, mask)| Mutation::FlipByte { at, mask }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        any::<usize>().prop_map(|line| Mutation::DeleteLine { line }),
        any::<usize>().prop_map(|line| Mutation::DuplicateLine { line }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::InsertByte { at, byte }),
    ]
}

fn apply(bytes: &mut Vec<u8>, mutation: &Mutation) {
    let len = bytes.len().max(1);
    match *mutation {
        Mutation::FlipByte { at, mask } => {
            if let Some(b) = bytes.get_mut(at % len) {
                *b ^= mask;
            }
        }
        Mutation::Truncate { at } => bytes.truncate(at % len),
        Mutation::InsertByte { at, byte } => bytes.insert(at % (bytes.len() + 1), byte),
        Mutation::DeleteLine { line } | Mutation::DuplicateLine { line } => {
            let mut lines: Vec<Vec<u8>> =
                bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
            let i = line % lines.len();
            if matches!(mutation, Mutation::DeleteLine { .. }) {
                lines.remove(i);
            } else {
                let copy = lines[i].clone();
                lines.insert(i, copy);
            }
            *bytes = lines.join(&b'\n');
        }
    }
}

/// YAML's punctuation, indentation, quotes, anchors and the spec's own words.
#[rustfmt::skip]
const TOKENS: &[&str] = &[
    ":", ": ", "-", "- ", "[", "]", "{", "}", ",", "&a", "*a", "&b ", "*b", "!!str ", "!tag ",
    "? ", "|", ">-", "#", "'", "\"", "\\", "\n", "\n  ", "\n    ", "\n      ", "\t", " ", "~",
    "null", "true", "no", "0x1F", "1e400", "-.inf", ".nan", "12:30", "tools", "tools:", "name",
    "name: x", "description", "description: d", "parameters", "properties", "type", "object",
    "string", "returns", "response", "http", "url", "https://", "https://{args.h}/", "mcp",
    "state", "state:", "set_state", "save_response_as", "effect", "read", "timeout", "10s",
    "usage", "examples", "{args.x}", "{args.x.y}", "{state.k}", "{state.}", "${env.T}",
    "{args.", "é", "日本", "🦀", "\u{0}", "\u{feff}", "\r\n", "---", "...", "%YAML 1.2", "<<: *a",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..80).prop_map(|tokens| tokens.concat())
}

/// Keys a spec file uses, plus a few it does not.
#[rustfmt::skip]
const KEYS: &[&str] = &[
    "tools", "state", "name", "title", "description", "parameters", "returns", "response",
    "set_state", "save_response_as", "http", "mcp", "background", "scheduling", "effect",
    "usage", "examples", "tags", "timeout", "method", "url", "headers", "query", "body",
    "command", "args", "env", "tool", "type", "default", "properties", "required", "items",
    "enum", "pattern", "$ref", "$defs", "anyOf", "additionalProperties", "minimum",
    "when_to_use", "x", "descripton",
];

/// Scalars that exercise the checks: names, effects, durations, URLs, placeholders.
#[rustfmt::skip]
const SCALARS: &[&str] = &[
    "", "x", "lookup_order", "look up", "a..b", "read", "raed", "write", "external", "30s",
    "soon", "GET", "FETCH", "object", "string", "strng", "integer",
    "https://api.example.com/{args.x}", "https://{args.host}/", "ftp://x", "/rel", "https:///",
    "{args.x}", "{state.k}", "{args.}", "${env.TOKEN}", "#/$defs/N", "#/nowhere", "[",
    "(?<!a)b", "(a+)+$", "when_idle", "é", "🦀",
];

fn spec_shaped() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        prop::sample::select(SCALARS).prop_map(|s| Value::String(s.to_owned())),
        any::<i64>().prop_map(Value::from),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        (-1e6..1e6f64).prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|entries| {
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

/// A JSON Schema, plausible or not: the checks compile and apply these.
fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        prop::sample::select(&["string", "strng", "integer", "object", "array", "null"][..])
            .prop_map(|t| serde_json::json!({ "type": t })),
        prop::sample::select(SCALARS)
            .prop_map(|p| serde_json::json!({ "type": "string", "pattern": p })),
        prop::sample::select(SCALARS).prop_map(|r| serde_json::json!({ "$ref": r })),
        Just(serde_json::json!({ "enum": ["a", "b"] })),
        Just(serde_json::json!({ "minimum": "x" })),
        Just(Value::Bool(false)),
        spec_shaped(),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        (
            prop::collection::vec((prop::sample::select(SCALARS), inner.clone()), 0..4),
            prop::collection::vec(prop::sample::select(SCALARS), 0..3),
            any::<bool>(),
            prop::option::of(inner),
        )
            .prop_map(|(properties, required, closed, items)| {
                let properties: Map<String, Value> = properties
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect();
                let mut schema = serde_json::json!({
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": !closed,
                });
                if let Some(items) = items {
                    schema["items"] = items;
                }
                schema
            })
    })
}

/// A tool that is mostly well formed, so the semantic checks run on odd values.
fn tool() -> impl Strategy<Value = Value> {
    let names =
        prop::sample::select(&["lookup_order", "lookup_order", "look up", "a..b", "", "é"][..]);
    let http = (
        prop::sample::select(&["GET", "POST", "FETCH"][..]),
        prop::sample::select(SCALARS),
        prop::collection::vec((prop::sample::select(KEYS), prop::sample::select(SCALARS)), 0..3),
        prop::option::of(spec_shaped()),
    )
        .prop_map(|(method, url, headers, body)| {
            let headers: Map<String, Value> = headers
                .into_iter()
                .map(|(k, v)| (k.to_owned(), Value::from(v)))
                .collect();
            let mut http = serde_json::json!({ "method": method, "url": url, "headers": headers.clone(), "query": headers });
            if let Some(body) = body {
                http["body"] = body;
            }
            http
        });
    let mcp = prop_oneof![
        prop::sample::select(SCALARS).prop_map(Value::from),
        (
            prop::option::of(prop::sample::select(SCALARS)),
            prop::option::of(prop::sample::select(SCALARS))
        )
            .prop_map(|(command, url)| {
                serde_json::json!({ "command": command, "url": url, "tool": "t" })
                    .as_object()
                    .map(|o| {
                        Value::Object(
                            o.iter()
                                .filter(|(_, v)| !v.is_null())
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect(),
                        )
                    })
                    .unwrap_or_default()
            }),
    ];
    let set_state = prop::collection::vec(
        (
            prop::sample::select(&["k", "kk", "other"][..]),
            spec_shaped(),
        ),
        0..3,
    );
    (
        (
            names,
            prop::option::of(schema()),
            prop::option::of(schema()),
            prop::option::of(spec_shaped()),
        ),
        (
            prop::option::of(http),
            prop::option::of(mcp),
            set_state,
            prop::option::of(prop::sample::select(&["k", "kk"][..])),
        ),
        (
            prop::option::of(prop::sample::select(SCALARS)),
            prop::option::of(prop::sample::select(SCALARS)),
            prop::collection::vec(spec_shaped(), 0..3),
        ),
    )
        .prop_map(
            |(
                (name, parameters, returns, response),
                (http, mcp, set_state, save_as),
                (effect, timeout, examples),
            )| {
                let mut tool = Map::new();
                tool.insert("name".into(), name.into());
                tool.insert("description".into(), "A tool.".into());
                let optional = [
                    ("parameters", parameters),
                    ("returns", returns),
                    ("response", response),
                    ("http", http),
                    ("mcp", mcp),
                    ("save_response_as", save_as.map(Value::from)),
                    ("effect", effect.map(Value::from)),
                    ("timeout", timeout.map(Value::from)),
                ];
                for (key, value) in optional {
                    if let Some(value) = value {
                        tool.insert(key.into(), value);
                    }
                }
                if !set_state.is_empty() {
                    let set_state: Map<String, Value> = set_state
                        .into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect();
                    tool.insert("set_state".into(), set_state.into());
                }
                if !examples.is_empty() {
                    tool.insert("examples".into(), examples.into());
                }
                Value::Object(tool)
            },
        )
}

/// A document with `tools:` and `state:` at the top, so the deeper checks run.
fn spec_document() -> impl Strategy<Value = String> {
    let state_key = (
        prop::option::of(prop::sample::select(
            &["string", "integer", "object", "boolean"][..],
        )),
        prop::option::of(spec_shaped()),
    )
        .prop_map(|(kind, default)| {
            let mut key = serde_json::json!({ "description": "A key." });
            if let Some(kind) = kind {
                key["type"] = kind.into();
            }
            if let Some(default) = default {
                key["default"] = default;
            }
            key
        });
    (
        prop::collection::vec(prop_oneof![3 => tool(), 1 => spec_shaped()], 0..4),
        prop::collection::vec(
            (prop::sample::select(&["k", "k2", "other"][..]), state_key),
            0..3,
        ),
        any::<bool>(),
    )
        .prop_map(|(tools, state, pretty)| {
            let state: Map<String, Value> =
                state.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            let doc = serde_json::json!({ "state": state, "tools": tools });
            if pretty {
                serde_json::to_string_pretty(&doc).unwrap()
            } else {
                serde_json::to_string(&doc).unwrap()
            }
        })
}

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn arbitrary_bytes_never_panic_the_loader(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        loads_soundly(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn yaml_token_soup_never_panics_the_loader(text in token_soup()) {
        loads_soundly(&text)?;
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn spec_shaped_documents_never_panic_the_checks(text in spec_document()) {
        loads_soundly(&text)?;
    }
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn a_mangled_helpdesk_example_never_panics_the_loader(
        mutations in prop::collection::vec(mutation(), 1..6)
    ) {
        let mut bytes = HELPDESK.as_bytes().to_vec();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        loads_soundly(&String::from_utf8_lossy(&bytes))?;
    }
}

/// The spec-shaped strategy is not vacuous: its documents reach many different
/// checks (counted by message, with the quoted parts blanked out).
#[test]
fn spec_shaped_documents_reach_many_different_checks() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut kinds = std::collections::BTreeSet::<String>::new();
    for _ in 0..500 {
        let text = spec_document().new_tree(&mut runner).unwrap().current();
        for d in check(&text).diagnostics {
            let words: Vec<&str> = d.message.split('`').step_by(2).collect();
            kinds.insert(words.join("_").chars().take(80).collect());
        }
    }
    assert!(
        kinds.len() >= 10,
        "only {} kinds of diagnostic reached: {kinds:#?}",
        kinds.len()
    );
}

#[test]
fn the_unmangled_helpdesk_example_loads_clean() {
    let checked = check(&HELPDESK);
    assert!(checked.diagnostics.is_empty(), "{:?}", checked.diagnostics);
}
