//! Rendering a catalog as "a few always-loaded tools plus search": the APIs that
//! defer loading themselves get every tool, the deferred ones marked, and their own
//! tool search; every other API gets the always-loaded tools and `search_tools`.

use serde_json::{Value, json};
use toolgate_core::search::SEARCH_TOOLS;
use toolgate_core::wire::{self, DeferSet, RenderOptions, Rendered, Target};
use toolgate_core::{Effect, ToolDescriptor, ToolSource};

fn catalog() -> Vec<ToolDescriptor> {
    let tool = |name: &str, description: &str| {
        ToolDescriptor::new(
            name,
            description,
            json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
            Effect::Read,
            ToolSource::Builtin,
        )
    };
    vec![
        tool("help", "Say what this assistant can do."),
        tool("orders.lookup", "Look up an order by its id."),
        tool("orders.refund", "Refund an order."),
    ]
}

fn deferred(target: Target) -> Rendered {
    wire::render_deferred(
        target,
        &catalog(),
        &[],
        RenderOptions::default(),
        &DeferSet::always_loading(["help"]),
    )
}

fn snapshot(out: &Rendered) -> Value {
    json!({"tools": out.tools, "changes": out.changes, "problems": out.problems})
}

fn names(out: &Rendered) -> Vec<String> {
    out.tools
        .iter()
        .flat_map(
            |t| match t.get("functionDeclarations").and_then(Value::as_array) {
                Some(declarations) => declarations.clone(),
                None => vec![t.clone()],
            },
        )
        .map(|t| {
            t.get("name")
                .or_else(|| t.pointer("/function/name"))
                .or_else(|| t.get("type"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[test]
fn openai_responses_marks_deferred_functions_and_adds_its_tool_search() {
    let out = deferred(Target::OpenAiResponses);
    assert!(out.problems.is_empty(), "{:?}", out.problems);
    assert_eq!(out.tools[0].get("defer_loading"), None);
    assert_eq!(out.tools[1]["defer_loading"], true);
    assert_eq!(out.tools.last().unwrap(), &json!({"type": "tool_search"}));
    insta::assert_json_snapshot!(snapshot(&out));
}

#[test]
fn anthropic_marks_deferred_tools_and_adds_its_bm25_tool_search() {
    let out = deferred(Target::Anthropic);
    assert!(out.problems.is_empty(), "{:?}", out.problems);
    assert_eq!(out.tools[0].get("defer_loading"), None);
    assert_eq!(out.tools[2]["defer_loading"], true);
    assert_eq!(
        out.tools.last().unwrap(),
        &json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
    );
    insta::assert_json_snapshot!(snapshot(&out));
}

#[test]
fn apis_without_deferred_loading_get_the_loaded_tools_and_search_tools() {
    for target in [
        Target::OpenAiChat,
        Target::Qwen,
        Target::Gemini,
        Target::Vertex,
        Target::Mcp,
    ] {
        let out = deferred(target);
        assert!(out.problems.is_empty(), "{target}: {:?}", out.problems);
        assert_eq!(names(&out), ["help", SEARCH_TOOLS], "{target}");
        assert!(
            out.changes
                .iter()
                .any(|n| n.message.contains("2 tools are deferred")),
            "{target}: {:?}",
            out.changes
        );
        let text = serde_json::to_string(&out.tools).unwrap();
        assert!(!text.contains("defer_loading"), "{target}");
    }
    insta::assert_json_snapshot!(snapshot(&deferred(Target::OpenAiChat)));
}

#[test]
fn a_catalog_with_nothing_deferred_renders_as_usual() {
    let all = DeferSet::always_loading(["help", "orders.lookup", "orders.refund"]);
    for target in Target::ALL {
        let plain = wire::render(target, &catalog(), &[], RenderOptions::default());
        let out = wire::render_deferred(target, &catalog(), &[], RenderOptions::default(), &all);
        assert_eq!(out.tools, plain.tools, "{target}");
    }
}

#[test]
fn the_builtin_search_tool_gives_way_to_the_apis_own() {
    let mut tools = catalog();
    tools.push(toolgate_core::search::search_tools_descriptor());
    for target in [Target::OpenAiResponses, Target::Anthropic] {
        let out = wire::render_deferred(
            target,
            &tools,
            &[],
            RenderOptions::default(),
            &DeferSet::always_loading(["help", SEARCH_TOOLS]),
        );
        assert!(!names(&out).contains(&SEARCH_TOOLS.to_owned()), "{target}");
        assert!(
            out.changes
                .iter()
                .any(|n| n.tool.as_deref() == Some(SEARCH_TOOLS)),
            "{target}"
        );
    }
    let out = wire::render_deferred(
        Target::OpenAiChat,
        &tools,
        &[],
        RenderOptions::default(),
        &DeferSet::always_loading(["help"]),
    );
    assert_eq!(names(&out), ["help", SEARCH_TOOLS], "declared once");
}

#[test]
fn a_spec_file_marks_its_always_loaded_tools() {
    let spec: toolgate_core::spec::SpecFile = serde_json::from_value(json!({"tools": [
        {"name": "help", "description": "Help.", "always_loaded": true},
        {"name": "orders.refund", "description": "Refund."}
    ]}))
    .unwrap();
    let defer = DeferSet::from_spec(&spec);
    assert!(!defer.is_deferred("help"));
    assert!(defer.is_deferred("orders.refund"));
}
