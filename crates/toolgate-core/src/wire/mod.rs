//! Wire formats: one catalog described to every model API, and every API's calls
//! read back under canonical tool names.
//!
//! Each target lives in its own file and provides four things: `render` (the
//! request's `tools`), `parse_response` (calls in a whole response), `Stream` (calls
//! assembled from streamed events) and `result_message` (the tool-result message).
//! This module holds what they share — names, notes, call reading — and dispatches.

mod anthropic;
mod call;
mod gemini;
mod hosted;
mod import;
mod mcp;
mod names;
mod openai_chat;
mod openai_responses;
mod openapi;
mod params;
pub(crate) mod pointer;
mod render;
mod result;
mod sse;
mod strict;
mod target;

use serde_json::Value;

pub use call::{ParseError, ParsedCall, RawArguments, StreamParser, read_call};
pub use hosted::HostedTool;
pub use import::{ImportError, ImportFormat, Imported, UnknownImportFormat, import_tools};
pub use names::{NameMap, NameRules};
pub use params::ParamNames;
pub use render::{CallReader, DeferSet, Note, RenderInput, RenderOptions, Rendered};
pub use result::ToolResult;
pub use sse::{SseEvent, is_sse, sse_events};
pub use target::{Target, UnknownTarget};

use crate::ToolDescriptor;

/// Renders `tools` (and the provider-hosted tools) for `target`.
pub fn render(
    target: Target,
    tools: &[ToolDescriptor],
    hosted: &[HostedTool],
    options: RenderOptions,
) -> Rendered {
    render_with(target, tools, hosted, options, None)
}

/// Renders `tools` with only the tools `defer` keeps loaded up front; the rest wait
/// for a tool search.
///
/// OpenAI Responses and Anthropic defer loading themselves: every tool is declared,
/// the deferred ones with `defer_loading: true`, followed by the API's tool search
/// (`{"type": "tool_search"}`; `tool_search_tool_bm25_20251119`). Every other API
/// gets the always-loaded tools plus toolgate's built-in `search_tools`
/// ([`crate::search::search_tools_descriptor`]); a tool it finds can be called once
/// it is declared, so render again with it loaded ([`DeferSet::load`]).
pub fn render_deferred(
    target: Target,
    tools: &[ToolDescriptor],
    hosted: &[HostedTool],
    options: RenderOptions,
    defer: &DeferSet,
) -> Rendered {
    use crate::search::{SEARCH_TOOLS, search_tools_descriptor};
    let deferred = tools
        .iter()
        .filter(|t| t.name != SEARCH_TOOLS && defer.is_deferred(&t.name))
        .count();
    if deferred == 0 {
        let mut out = render_with(target, tools, hosted, options, None);
        out.changes.push(Note::request(
            "every tool is loaded up front, so no tool search is added",
        ));
        return out;
    }
    if matches!(target, Target::OpenAiResponses | Target::Anthropic) {
        let has_builtin = tools.iter().any(|t| t.name == SEARCH_TOOLS);
        let own: Vec<ToolDescriptor> = tools
            .iter()
            .filter(|t| t.name != SEARCH_TOOLS)
            .cloned()
            .collect();
        let mut out = render_with(target, &own, hosted, options, Some(defer));
        if has_builtin {
            out.changes.push(Note::tool(
                SEARCH_TOOLS,
                "left out: the API's own tool search finds the deferred tools",
            ));
        }
        out.changes.push(Note::request(format!(
            "{deferred} of {} tools are deferred (`defer_loading: true`) behind the API's own tool search",
            own.len()
        )));
        return out;
    }
    let mut loaded: Vec<ToolDescriptor> = tools
        .iter()
        .filter(|t| t.name != SEARCH_TOOLS && !defer.is_deferred(&t.name))
        .cloned()
        .collect();
    loaded.push(search_tools_descriptor());
    let mut out = render_with(target, &loaded, hosted, options, None);
    out.changes.push(Note::request(format!(
        "{deferred} tools are deferred behind the built-in `{SEARCH_TOOLS}` ({target} has no deferred loading): \
         declare a tool it finds by rendering again with that tool loaded"
    )));
    out
}

fn has_mcp_keywords(tool: &ToolDescriptor) -> bool {
    crate::mentions_mcp_keywords(&tool.input_schema)
}

fn without_mcp_keywords(mut tool: ToolDescriptor) -> ToolDescriptor {
    strip_mcp_keywords(&mut tool.input_schema, false);
    tool
}

/// Drops MCP's keywords from every schema in `value`; `names` is true for a map
/// whose keys are property or definition names (a property may be named so).
fn strip_mcp_keywords(value: &mut Value, names: bool) {
    match value {
        Value::Object(map) => {
            if !names {
                map.retain(|key, _| !crate::schema_text::MCP_OWN.contains(&key.as_str()));
            }
            for (key, child) in map.iter_mut() {
                let holds_names = !names
                    && matches!(
                        key.as_str(),
                        "properties"
                            | "patternProperties"
                            | "$defs"
                            | "definitions"
                            | "dependentSchemas"
                    );
                strip_mcp_keywords(child, holds_names);
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| strip_mcp_keywords(item, false)),
        _ => {}
    }
}

fn render_with(
    target: Target,
    tools: &[ToolDescriptor],
    hosted: &[HostedTool],
    options: RenderOptions,
    defer: Option<&DeferSet>,
) -> Rendered {
    let names = NameMap::build(tools.iter().map(|t| t.name.as_str()), &target.name_rules());
    let mut out = Rendered {
        target,
        tools: Vec::new(),
        changes: names
            .renamed()
            .map(|(canonical, wire)| {
                Note::tool(
                    canonical,
                    format!("renamed to `{wire}` to fit the API's name rules"),
                )
            })
            .collect(),
        problems: Vec::new(),
        reader: CallReader::new(names.clone()),
    };
    // `x-mcp-header` is MCP's own keyword (SEP-2243): an MCP client reads it,
    // a model has no use for it.
    let stripped: Vec<ToolDescriptor>;
    let tools = if target != Target::Mcp && tools.iter().any(has_mcp_keywords) {
        stripped = tools.iter().cloned().map(without_mcp_keywords).collect();
        &stripped[..]
    } else {
        tools
    };
    let input = RenderInput {
        tools,
        hosted,
        options,
        defer,
    };
    match target {
        Target::OpenAiChat => openai_chat::render(&input, &names, &mut out),
        Target::OpenAiResponses | Target::Qwen => {
            openai_responses::render(&input, &names, &mut out)
        }
        Target::Anthropic => anthropic::render(&input, &names, &mut out),
        Target::Gemini | Target::Vertex => gemini::render(&input, &names, &mut out),
        Target::Mcp => mcp::render(&input, &names, &mut out),
    }
    out
}

/// The calls in a whole (non-streamed) response of `target`.
pub fn parse_response(
    target: Target,
    response: &Value,
    reader: &CallReader,
) -> Result<Vec<ParsedCall>, ParseError> {
    match target {
        Target::OpenAiChat => openai_chat::parse_response(response, reader),
        Target::OpenAiResponses | Target::Qwen => {
            openai_responses::parse_response(target, response, reader)
        }
        Target::Anthropic => anthropic::parse_response(response, reader),
        Target::Gemini | Target::Vertex => gemini::parse_response(target, response, reader),
        Target::Mcp => mcp::parse_response(response, reader),
    }
}

/// A parser for `target`'s stream of events.
pub fn stream_parser(target: Target) -> Box<dyn StreamParser> {
    match target {
        Target::OpenAiChat => Box::<openai_chat::Stream>::default(),
        Target::OpenAiResponses | Target::Qwen => Box::new(openai_responses::Stream::new(target)),
        Target::Anthropic => Box::<anthropic::Stream>::default(),
        Target::Gemini | Target::Vertex => Box::new(gemini::Stream::new(target)),
        Target::Mcp => Box::<mcp::Stream>::default(),
    }
}

/// The message (or content part) that carries `result` of `call` back to `target`.
/// `descriptor` is the called tool's, when known (Gemini reads its background scheduling).
pub fn result_message(
    target: Target,
    call: &ParsedCall,
    result: &ToolResult,
    reader: &CallReader,
    descriptor: Option<&ToolDescriptor>,
) -> Value {
    match target {
        Target::OpenAiChat => openai_chat::result_message(call, result),
        Target::OpenAiResponses | Target::Qwen => openai_responses::result_message(call, result),
        Target::Anthropic => anthropic::result_message(call, result),
        Target::Gemini | Target::Vertex => gemini::result_message(call, reader, result, descriptor),
        Target::Mcp => mcp::result_message(result),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mcp_s_own_keywords_reach_mcp_clients_and_no_model_api() {
        let tool = ToolDescriptor::new(
            "forecast",
            "The weather in a region.",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "x-mcp-header": {"type": "string"}
            }, "$defs": {"d": {"type": "string", "x-mcp-header": "D"}}}),
            crate::Effect::Read,
            crate::ToolSource::Spec {
                file: "toolgate.yaml".into(),
            },
        );
        for target in &Target::ALL {
            let rendered = render(
                *target,
                std::slice::from_ref(&tool),
                &[],
                RenderOptions::default(),
            );
            let text = serde_json::to_string(&rendered.tools).unwrap();
            let keywords = text.matches("\"x-mcp-header\":\"").count();
            if *target == Target::Mcp {
                assert_eq!(keywords, 2, "{target:?}: {text}");
            } else {
                assert_eq!(keywords, 0, "{target:?}: {text}");
                assert!(
                    text.contains("\"x-mcp-header\":{") || text.contains("\"x_mcp_header\":{"),
                    "a property of that name stays: {text}"
                );
            }
        }
    }
}
