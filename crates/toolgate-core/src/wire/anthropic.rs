//! Anthropic Messages: `tools[]` declarations, `tool_use` blocks (whole and streamed),
//! and `tool_result` blocks.
//!
//! Input schemas go out as JSON Schema, as declared, within the API's two rules for
//! them: the root is `type: "object"`, and it is not a union (`anyOf`, `oneOf` or
//! `allOf` at the top level is refused). With strict mode asked for, each schema that
//! can be made strict is (see `strict/`), within the per-request limits of strict
//! tool use: 20 strict tools, 24 optional parameters and 16 union-typed parameters
//! across them; tools beyond a limit are declared without `strict`, with a note.
//!
//! Hosted tools: `web_search` (`web_search_20250305`, the version every platform
//! serves) and `code_interpreter` (`code_execution_20250825`) are server tools in
//! `tools[]`. Remote MCP is not a tool on this API (it is the request-level
//! `mcp_servers` parameter of the MCP connector beta), and there is no file search
//! or image search; those are left out with a note.

use indexmap::IndexMap;
use serde_json::{Map, Value, json};

use super::openapi::constraint_only;
use super::pointer::escape;
use super::strict::{StrictDialect, make_strict};
use super::{
    CallReader, HostedTool, NameMap, Note, ParseError, ParsedCall, RawArguments, RenderInput,
    Rendered, StreamParser, Target, ToolResult, read_call,
};

/// Strict tools per request.
const MAX_STRICT_TOOLS: usize = 20;
/// Optional parameters (properties not in `required`) across the strict tools of a request.
const MAX_STRICT_OPTIONALS: usize = 24;
/// Union-typed parameters (`anyOf`, or `type` with `null`) across the strict tools of a request.
const MAX_STRICT_UNIONS: usize = 16;

/// Options of Anthropic's web search tool that a spec's `web_search` may carry.
const WEB_SEARCH_OPTIONS: &[&str] = &[
    "allowed_domains",
    "blocked_domains",
    "max_uses",
    "user_location",
    "cache_control",
    "defer_loading",
    "allowed_callers",
];

/// The name of Anthropic's BM25 tool search.
const TOOL_SEARCH_BM25: &str = "tool_search_tool_bm25";

pub(super) fn render(input: &RenderInput<'_>, names: &NameMap, out: &mut Rendered) {
    let mut budget = StrictBudget::default();
    let mut seen: IndexMap<&str, usize> = IndexMap::new();
    for tool in input.tools {
        *seen.entry(tool.name.as_str()).or_default() += 1;
        let wire = names.wire(&tool.name).unwrap_or(&tool.name);
        let schema = root_schema(&tool.name, &tool.input_schema, out);

        let mut declaration = Map::new();
        declaration.insert("name".into(), json!(wire));
        if !tool.description.is_empty() {
            declaration.insert("description".into(), json!(tool.description));
        }
        let strict = if input.options.strict {
            strict_schema(&tool.name, &schema, &mut budget, out)
        } else {
            None
        };
        let is_strict = strict.is_some();
        declaration.insert("input_schema".into(), strict.unwrap_or(schema));
        if !tool.input_examples.is_empty() {
            declaration.insert(
                "input_examples".into(),
                Value::Array(tool.input_examples.clone()),
            );
        }
        if is_strict {
            declaration.insert("strict".into(), Value::Bool(true));
        }
        if input.defer.is_some_and(|d| d.is_deferred(&tool.name)) {
            declaration.insert("defer_loading".into(), Value::Bool(true));
        }
        out.tools.push(Value::Object(declaration));
    }
    for (name, count) in seen {
        if count > 1 {
            out.problems.push(Note::tool(
                name,
                format!("declared {count} times; tool names must be unique"),
            ));
        }
    }
    if input.defer.is_some() {
        // The server-run BM25 search over the tools marked `defer_loading`.
        if names.canonical(TOOL_SEARCH_BM25).is_some() {
            out.problems.push(Note::tool(
                TOOL_SEARCH_BM25,
                format!("the tool search is named `{TOOL_SEARCH_BM25}`, like a function in the catalog; tool names must be unique"),
            ));
        }
        out.tools
            .push(json!({"type": "tool_search_tool_bm25_20251119", "name": TOOL_SEARCH_BM25}));
    }
    for hosted in input.hosted {
        if let Some(tool) = hosted_tool(hosted, out) {
            let name = tool["name"].as_str().unwrap_or_default();
            if names.canonical(name).is_some() {
                out.problems.push(Note::tool(
                    hosted.kind(),
                    format!("the server tool is named `{name}`, like a function in the catalog; tool names must be unique"),
                ));
            }
            out.tools.push(tool);
        }
    }
}

/// The input schema, with the API's rules for its root checked; a root-level union that
/// only says which properties must be present is dropped (the API refuses it).
fn root_schema(tool: &str, schema: &Value, out: &mut Rendered) -> Value {
    let mut schema = schema.clone();
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        out.problems.push(Note::at(
            tool,
            "/type",
            "the input schema must have `type: \"object\"` at the root",
        ));
    }
    if let Some(root) = schema.as_object_mut() {
        for key in ["anyOf", "oneOf", "allOf"] {
            let Some(branches) = root.get(key) else {
                continue;
            };
            let path = format!("/{key}");
            if branches
                .as_array()
                .is_some_and(|b| !b.is_empty() && b.iter().all(constraint_only))
            {
                root.remove(key);
                out.changes.push(Note::at(
                    tool,
                    path,
                    format!("a root-level `{key}` of `required` lists (\"at least one of\") is refused by the API; dropped"),
                ));
            } else {
                out.problems.push(Note::at(
                    tool,
                    path,
                    format!("the input schema may not use `{key}` at the top level; move the union into a property"),
                ));
            }
        }
    }
    schema
}

/// How much of the request's strict-tool allowance is used.
#[derive(Default)]
struct StrictBudget {
    tools: usize,
    optionals: usize,
    unions: usize,
}

/// The strict form of `schema`, when it can be made strict and fits what is left of the budget.
fn strict_schema(
    tool: &str,
    schema: &Value,
    budget: &mut StrictBudget,
    out: &mut Rendered,
) -> Option<Value> {
    if budget.tools >= MAX_STRICT_TOOLS {
        out.changes.push(Note::tool(tool, format!("declared without strict mode: a request may have at most {MAX_STRICT_TOOLS} strict tools")));
        return None;
    }
    let made = match make_strict(schema, StrictDialect::Anthropic) {
        Ok(made) => made,
        Err(reason) => {
            out.changes.push(Note::tool(
                tool,
                format!("declared without strict mode: {reason}"),
            ));
            return None;
        }
    };
    let (optionals, unions) = count_parameters(&made.schema);
    if budget.optionals + optionals > MAX_STRICT_OPTIONALS {
        out.changes.push(Note::tool(
            tool,
            format!(
                "declared without strict mode: its {optionals} optional parameters would take the request past {MAX_STRICT_OPTIONALS} across strict tools"
            ),
        ));
        return None;
    }
    if budget.unions + unions > MAX_STRICT_UNIONS {
        out.changes.push(Note::tool(
            tool,
            format!(
                "declared without strict mode: its {unions} union-typed parameters would take the request past {MAX_STRICT_UNIONS} across strict tools"
            ),
        ));
        return None;
    }
    budget.tools += 1;
    budget.optionals += optionals;
    budget.unions += unions;
    out.changes.extend(
        made.changes
            .into_iter()
            .map(|(path, message)| Note::at(tool, path, message)),
    );
    if !made.nullable_optionals.is_empty() {
        out.reader
            .nullable_optionals
            .insert(tool.to_owned(), made.nullable_optionals);
    }
    Some(made.schema)
}

/// (optional parameters, union-typed parameters) in a strict schema, counted over
/// every object's properties, definitions included.
fn count_parameters(schema: &Value) -> (usize, usize) {
    fn walk(schema: &Value, counts: &mut (usize, usize), depth: usize) {
        let Some(map) = schema.as_object() else {
            return;
        };
        if depth > 256 {
            return;
        }
        if let Some(Value::Object(properties)) = map.get("properties") {
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (name, property) in properties {
                if !required.contains(&name.as_str()) {
                    counts.0 += 1;
                }
                let is_union = property.get("anyOf").is_some()
                    || property
                        .get("type")
                        .and_then(Value::as_array)
                        .is_some_and(|types| types.len() > 1);
                if is_union {
                    counts.1 += 1;
                }
            }
        }
        for (key, value) in map {
            match (key.as_str(), value) {
                ("properties" | "$defs" | "definitions", Value::Object(children)) => {
                    children
                        .values()
                        .for_each(|child| walk(child, counts, depth + 1));
                }
                ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(children)) => {
                    children
                        .iter()
                        .for_each(|child| walk(child, counts, depth + 1));
                }
                ("items" | "additionalProperties" | "not", child) => walk(child, counts, depth + 1),
                _ => {}
            }
        }
    }
    let mut counts = (0, 0);
    walk(schema, &mut counts, 0);
    counts
}

/// A hosted tool as an Anthropic server tool, or `None` (with a note) when the API has none.
fn hosted_tool(hosted: &HostedTool, out: &mut Rendered) -> Option<Value> {
    let kind = hosted.kind();
    match hosted {
        HostedTool::WebSearch { options } => {
            let mut tool = Map::new();
            tool.insert("type".into(), json!("web_search_20250305"));
            tool.insert("name".into(), json!("web_search"));
            for (key, value) in options {
                if WEB_SEARCH_OPTIONS.contains(&key.as_str()) {
                    tool.insert(key.clone(), value.clone());
                } else {
                    out.changes.push(Note::at(
                        kind,
                        format!("/options/{}", escape(key)),
                        format!("`{key}` is not an option of Anthropic's web search; dropped"),
                    ));
                }
            }
            Some(Value::Object(tool))
        }
        HostedTool::CodeInterpreter { container } => {
            if container.is_some() {
                out.changes.push(Note::at(
                    kind,
                    "/container",
                    "`container` dropped: Anthropic's code execution takes its container per request (the `container` request parameter)",
                ));
            }
            Some(json!({"type": "code_execution_20250825", "name": "code_execution"}))
        }
        HostedTool::Mcp { server_label, .. } => {
            out.changes.push(Note::tool(
                kind,
                format!(
                    "MCP server `{server_label}` left out: Anthropic connects to remote MCP servers through the request-level `mcp_servers` parameter (MCP connector beta), not `tools`"
                ),
            ));
            None
        }
        HostedTool::WebExtractor {} => {
            out.changes.push(Note::tool(
                kind,
                "left out: Anthropic has no page extractor that follows web search (its `web_fetch` tool differs: it fetches only URLs the conversation already holds)",
            ));
            None
        }
        HostedTool::FileSearch { .. }
        | HostedTool::WebSearchImage {}
        | HostedTool::ImageSearch {} => {
            out.changes.push(Note::tool(
                kind,
                "left out: Anthropic has no such server tool",
            ));
            None
        }
    }
}

/// The calls in a Messages response: its `tool_use` content blocks, in order.
pub(super) fn parse_response(
    response: &Value,
    reader: &CallReader,
) -> Result<Vec<ParsedCall>, ParseError> {
    let blocks = response
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| error("a Messages response has a `content` list; this one has none"))?;
    let mut calls = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            continue;
        }
        let (id, name) = id_and_name(block, &format!("content[{i}]"))?;
        let input = block.get("input").unwrap_or(&Value::Null);
        calls.push(read_call(reader, id, name, RawArguments::Value(input)));
    }
    Ok(calls)
}

fn id_and_name<'a>(block: &'a Value, at: &str) -> Result<(&'a str, &'a str), ParseError> {
    let id = block
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| error(format!("the `tool_use` block {at} has no `id`")))?;
    let name = block
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| error(format!("the `tool_use` block {at} has no `name`")))?;
    Ok((id, name))
}

fn error(message: impl Into<String>) -> ParseError {
    ParseError::new(Target::Anthropic, message)
}

/// Assembles `tool_use` blocks from the Messages stream: `content_block_start` opens a
/// block at an `index`, `input_json_delta` fragments are concatenated per index, and
/// `content_block_stop` closes it. A block without deltas has the input of its start
/// event (normally `{}`); a block the stream never closed is an invalid call.
#[derive(Default)]
pub(super) struct Stream {
    /// Every block started, by index: `Some` for `tool_use` blocks.
    blocks: IndexMap<u64, Option<ToolUse>>,
}

struct ToolUse {
    id: String,
    name: String,
    start_input: Value,
    json: String,
    has_deltas: bool,
    stopped: bool,
}

impl StreamParser for Stream {
    fn feed(&mut self, event: &Value) -> Result<(), ParseError> {
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| error("a stream event has no `type`"))?;
        let index = || {
            event
                .get("index")
                .and_then(Value::as_u64)
                .ok_or_else(|| error(format!("a `{kind}` event has no numeric `index`")))
        };
        match kind {
            "content_block_start" => {
                let index = index()?;
                let block = event
                    .get("content_block")
                    .ok_or_else(|| error("a `content_block_start` event has no `content_block`"))?;
                if self.blocks.contains_key(&index) {
                    return Err(error(format!("content block {index} started twice")));
                }
                let tool_use = if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                    let (id, name) = id_and_name(block, &format!("started at index {index}"))?;
                    Some(ToolUse {
                        id: id.to_owned(),
                        name: name.to_owned(),
                        start_input: block.get("input").cloned().unwrap_or(Value::Null),
                        json: String::new(),
                        has_deltas: false,
                        stopped: false,
                    })
                } else {
                    None
                };
                self.blocks.insert(index, tool_use);
            }
            "content_block_delta" => {
                let index = index()?;
                let delta = event
                    .get("delta")
                    .ok_or_else(|| error("a `content_block_delta` event has no `delta`"))?;
                let block = self.blocks.get_mut(&index).ok_or_else(|| {
                    error(format!(
                        "a delta for content block {index}, which never started"
                    ))
                })?;
                if delta.get("type").and_then(Value::as_str) == Some("input_json_delta") {
                    let fragment = delta
                        .get("partial_json")
                        .and_then(Value::as_str)
                        .ok_or_else(|| {
                            error(format!(
                                "an `input_json_delta` for block {index} has no `partial_json`"
                            ))
                        })?;
                    if let Some(tool_use) = block {
                        tool_use.json.push_str(fragment);
                        tool_use.has_deltas = true;
                    }
                }
            }
            "content_block_stop" => {
                let index = index()?;
                let block = self.blocks.get_mut(&index).ok_or_else(|| {
                    error(format!("content block {index} stopped, but never started"))
                })?;
                if let Some(tool_use) = block {
                    tool_use.stopped = true;
                }
            }
            "error" => {
                let detail = event
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("no message");
                return Err(error(format!("the stream reported an error: {detail}")));
            }
            // message_start, message_delta, message_stop, ping, and events added later.
            _ => {}
        }
        Ok(())
    }

    fn finish(self: Box<Self>, reader: &CallReader) -> Vec<ParsedCall> {
        self.blocks
            .into_values()
            .flatten()
            .map(|block| {
                let mut call = if block.has_deltas {
                    read_call(reader, &block.id, &block.name, RawArguments::Text(&block.json))
                } else {
                    read_call(reader, &block.id, &block.name, RawArguments::Value(&block.start_input))
                };
                if !block.stopped && reader.names.canonical(&block.name).is_some() {
                    call.invalid = Some(format!(
                        "the response ended before the arguments for `{}` were complete; send the call again",
                        call.name
                    ));
                }
                call
            })
            .collect()
    }
}

/// The `tool_result` content block for `call` (it goes in the next user message,
/// with the results of the other calls of the turn, before any text).
/// `is_error` is sent only when true (the API's default is false).
pub(super) fn result_message(call: &ParsedCall, result: &ToolResult) -> Value {
    let mut block =
        json!({"type": "tool_result", "tool_use_id": call.id, "content": result.text()});
    if result.is_error {
        block["is_error"] = Value::Bool(true);
    }
    block
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::wire::{RenderOptions, render, stream_parser};
    use crate::{Effect, Scheduling, ToolDescriptor, ToolSource};
    use serde_json::json;

    /// A dotted name with an optional-nullable field and a const, a recursive schema,
    /// a union, and a background tool.
    pub(crate) fn catalog() -> Vec<ToolDescriptor> {
        let tool = |name: &str, description: &str, schema: Value| {
            ToolDescriptor::new(
                name,
                description,
                schema,
                Effect::Write,
                ToolSource::Spec {
                    file: "tools.yaml".into(),
                },
            )
        };
        let mut issue = tool(
            "github.create_issue",
            "Open an issue in a repository.",
            json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string", "description": "One line.", "minLength": 1},
                    "body": {"type": ["string", "null"], "description": "Markdown."},
                    "kind": {"const": "issue"},
                    "labels": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}
                },
                "required": ["title", "kind"],
                "additionalProperties": false
            }),
        );
        issue.input_examples = vec![json!({"title": "Crash on start", "kind": "issue"})];
        issue.output_schema = Some(json!({
            "type": "object",
            "properties": {"number": {"type": "integer"}, "url": {"type": "string", "format": "uri"}},
            "required": ["number"]
        }));
        let tree = tool(
            "tree.walk",
            "Visit every node of a tree.",
            json!({
                "type": "object",
                "properties": {"root": {"$ref": "#/$defs/Node"}},
                "required": ["root"],
                "$defs": {"Node": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
                    "required": ["name"]
                }}
            }),
        );
        let area = tool(
            "shape_area",
            "Compute the area of a shape.",
            json!({
                "type": "object",
                "properties": {
                    "shape": {"oneOf": [
                        {"type": "object", "properties": {"kind": {"const": "circle"}, "radius": {"type": "number", "exclusiveMinimum": 0}}, "required": ["kind", "radius"]},
                        {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}}, "required": ["kind", "side"]}
                    ]},
                    "unit": {"enum": ["cm", "in", null]},
                    "precision": {"type": "integer", "enum": [0, 1, 2]}
                },
                "required": ["shape"]
            }),
        );
        let mut report = tool(
            "report.build",
            "Build a report in the background.",
            json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
        );
        report.background = Some(Scheduling::WhenIdle);
        let ping = tool("ping", "Check liveness.", json!({"type": "object"}));
        vec![issue, tree, area, report, ping]
    }

    pub(crate) fn hosted() -> Vec<HostedTool> {
        let options = [
            ("max_uses".to_owned(), json!(3)),
            ("search_context_size".to_owned(), json!("low")),
        ]
        .into_iter()
        .collect();
        vec![
            HostedTool::WebSearch { options },
            HostedTool::CodeInterpreter { container: None },
            HostedTool::FileSearch {
                vector_store_ids: vec!["fileSearchStores/manuals".into()],
                max_num_results: Some(5),
            },
            HostedTool::Mcp {
                server_label: "deepwiki".into(),
                server_url: "https://mcp.deepwiki.com/mcp".into(),
                server_description: None,
                headers: Default::default(),
                server_protocol: None,
                allowed_tools: Vec::new(),
                require_approval: None,
            },
        ]
    }

    fn rendered(strict: bool) -> Rendered {
        render(
            Target::Anthropic,
            &catalog(),
            &hosted(),
            RenderOptions {
                strict,
                json_schema: false,
            },
        )
    }

    fn snapshot_of(out: &Rendered) -> Value {
        json!({"tools": out.tools, "changes": out.changes, "problems": out.problems})
    }

    fn reader() -> CallReader {
        rendered(false).reader
    }

    #[test]
    fn the_catalog_renders_as_anthropic_tools() {
        insta::assert_json_snapshot!(snapshot_of(&rendered(false)));
    }

    #[test]
    fn the_catalog_renders_as_strict_anthropic_tools() {
        insta::assert_json_snapshot!(snapshot_of(&rendered(true)));
    }

    #[test]
    fn a_schema_whose_root_is_not_an_object_is_a_problem() {
        let tools = vec![ToolDescriptor::new(
            "echo",
            "Echo.",
            json!({"type": "string"}),
            Effect::Read,
            ToolSource::Builtin,
        )];
        let out = render(Target::Anthropic, &tools, &[], RenderOptions::default());
        assert_eq!(
            out.problems,
            vec![Note::at(
                "echo",
                "/type",
                "the input schema must have `type: \"object\"` at the root"
            )]
        );
    }

    #[test]
    fn a_root_level_union_of_shapes_is_a_problem_and_one_of_required_lists_is_dropped() {
        let union = json!({"type": "object", "oneOf": [{"properties": {"a": {"type": "string"}}}, {"properties": {"b": {"type": "string"}}}]});
        let at_least_one = json!({"type": "object", "properties": {"a": {}, "b": {}}, "anyOf": [{"required": ["a"]}, {"required": ["b"]}]});
        let tools = vec![
            ToolDescriptor::new("pick", "Pick.", union, Effect::Read, ToolSource::Builtin),
            ToolDescriptor::new(
                "update",
                "Update.",
                at_least_one,
                Effect::Read,
                ToolSource::Builtin,
            ),
        ];
        let out = render(Target::Anthropic, &tools, &[], RenderOptions::default());
        assert_eq!(out.problems.len(), 1);
        assert_eq!(out.problems[0].tool.as_deref(), Some("pick"));
        assert!(out.tools[1]["input_schema"].get("anyOf").is_none());
    }

    #[test]
    fn strict_mode_stops_at_twenty_tools() {
        let tools: Vec<ToolDescriptor> = (0..22)
            .map(|i| {
                let schema = json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
                ToolDescriptor::new(format!("t{i}"), "T.", schema, Effect::Read, ToolSource::Builtin)
            })
            .collect();
        let out = render(
            Target::Anthropic,
            &tools,
            &[],
            RenderOptions {
                strict: true,
                json_schema: false,
            },
        );
        let strict = out
            .tools
            .iter()
            .filter(|t| t.get("strict") == Some(&json!(true)))
            .count();
        assert_eq!(strict, 20);
        assert!(
            out.changes.iter().any(|n| n.tool.as_deref() == Some("t21")
                && n.message.contains("at most 20 strict tools"))
        );
    }

    #[test]
    fn strict_mode_stops_at_twenty_four_optional_parameters() {
        let properties: Map<String, Value> = (0..10)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        let tools: Vec<ToolDescriptor> = (0..3)
            .map(|i| {
                let schema = json!({"type": "object", "properties": properties});
                ToolDescriptor::new(
                    format!("t{i}"),
                    "T.",
                    schema,
                    Effect::Read,
                    ToolSource::Builtin,
                )
            })
            .collect();
        let out = render(
            Target::Anthropic,
            &tools,
            &[],
            RenderOptions {
                strict: true,
                json_schema: false,
            },
        );
        let strict: Vec<bool> = out
            .tools
            .iter()
            .map(|t| t.get("strict").is_some())
            .collect();
        assert_eq!(strict, vec![true, true, false]);
    }

    #[test]
    fn tool_use_blocks_are_read_back_under_canonical_names() {
        let response = json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "stop_reason": "tool_use",
            "content": [
                {"type": "text", "text": "Opening it."},
                {"type": "tool_use", "id": "toolu_1", "name": "github_create_issue", "input": {"title": "Crash", "kind": "issue"}},
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
                {"type": "tool_use", "id": "toolu_2", "name": "ping", "input": {}}
            ]
        });
        let calls = parse_response(&response, &reader()).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("toolu_1", "github.create_issue")
        );
        assert_eq!(
            calls[0].arguments,
            json!({"title": "Crash", "kind": "issue"})
        );
        assert!(calls.iter().all(ParsedCall::is_valid));
    }

    #[test]
    fn a_name_over_64_characters_is_declared_in_64_and_read_back_as_itself() {
        let long = "actions.set-fork-pr-contributor-approval-permissions-organization";
        let tool = ToolDescriptor::new(
            long,
            "Set the approval policy for fork pull requests.",
            json!({"type": "object", "properties": {"org": {"type": "string"}}, "required": ["org"]}),
            Effect::Write,
            ToolSource::Spec {
                file: "github.yaml".into(),
            },
        );
        let out = render(Target::Anthropic, &[tool], &[], RenderOptions::default());
        let wire = out.tools[0]["name"].as_str().unwrap().to_owned();
        assert!(wire.len() <= 64, "{wire} has {} characters", wire.len());
        assert!(
            wire.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{wire}"
        );
        let response = json!({"content": [{"type": "tool_use", "id": "toolu_1", "name": wire, "input": {"org": "octo"}}]});
        let calls = parse_response(&response, &out.reader).unwrap();
        assert_eq!(calls[0].name, long);
        assert!(calls[0].is_valid(), "{:?}", calls[0].invalid);
    }

    #[test]
    fn malformed_responses_are_errors_or_invalid_calls() {
        let reader = reader();
        assert!(parse_response(&json!({"content": "text"}), &reader).is_err());
        assert!(parse_response(&json!([]), &reader).is_err());
        assert!(
            parse_response(
                &json!({"content": [{"type": "tool_use", "id": "t"}]}),
                &reader
            )
            .is_err()
        );
        let calls = parse_response(
            &json!({"content": [
                {"type": "tool_use", "id": "t1", "name": "ping", "input": [1]},
                {"type": "tool_use", "id": "t2", "name": "rm_rf", "input": {}},
                {"type": "tool_use", "id": "t3", "name": "ping"}
            ]}),
            &reader,
        )
        .unwrap();
        assert!(
            calls[0]
                .invalid
                .as_deref()
                .unwrap()
                .contains("must be a JSON object")
        );
        assert!(
            calls[1]
                .invalid
                .as_deref()
                .unwrap()
                .contains("there is no tool named `rm_rf`")
        );
        assert!(calls[2].is_valid());
        assert_eq!(calls[2].arguments, json!({}));
    }

    fn stream(events: &[Value]) -> Result<Vec<ParsedCall>, ParseError> {
        let mut parser = stream_parser(Target::Anthropic);
        for event in events {
            parser.feed(event)?;
        }
        Ok(parser.finish(&reader()))
    }

    #[test]
    fn streamed_input_json_deltas_are_concatenated_per_block() {
        let calls = stream(&[
            json!({"type": "message_start", "message": {"id": "msg_1", "content": []}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sure."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "github_create_issue", "input": {}}}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "ping", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"title\": \"Cra"}}),
            json!({"type": "ping"}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "sh\", \"kind\": \"issue\"}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
            json!({"type": "message_stop"}),
        ])
        .unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "github.create_issue");
        assert_eq!(
            calls[0].arguments,
            json!({"title": "Crash", "kind": "issue"})
        );
        assert_eq!(
            (calls[1].id.as_str(), &calls[1].arguments),
            ("toolu_2", &json!({}))
        );
        assert!(calls.iter().all(ParsedCall::is_valid));
    }

    #[test]
    fn a_block_the_stream_never_closed_is_an_invalid_call() {
        let calls = stream(&[
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "ping", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"a\": "}}),
        ])
        .unwrap();
        assert_eq!(
            calls[0].invalid.as_deref(),
            Some(
                "the response ended before the arguments for `ping` were complete; send the call again"
            )
        );
    }

    #[test]
    fn a_closed_block_with_truncated_json_is_an_invalid_call() {
        let calls = stream(&[
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "ping", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"a\": "}}),
            json!({"type": "content_block_stop", "index": 0}),
        ])
        .unwrap();
        assert!(
            calls[0]
                .invalid
                .as_deref()
                .unwrap()
                .contains("are not valid JSON")
        );
    }

    #[test]
    fn malformed_stream_events_are_errors_not_panics() {
        let start = json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "ping"}});
        for events in [
            vec![json!({"index": 0})],
            vec![json!({"type": "content_block_start"})],
            vec![
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "name": "ping"}}),
            ],
            vec![
                json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
            ],
            vec![
                start.clone(),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta"}}),
            ],
            vec![start.clone(), start.clone()],
            vec![json!({"type": "content_block_stop", "index": 9})],
            vec![
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ],
            vec![json!("text")],
        ] {
            assert!(stream(&events).is_err(), "{events:?}");
        }
    }

    #[test]
    fn results_are_tool_result_blocks_with_is_error_only_when_true() {
        let call = ParsedCall {
            id: "toolu_1".into(),
            name: "github.create_issue".into(),
            arguments: json!({}),
            invalid: None,
        };
        assert_eq!(
            result_message(&call, &ToolResult::ok(json!({"number": 7}))),
            json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"number\":7}"})
        );
        assert_eq!(
            result_message(&call, &ToolResult::error("no such repository")),
            json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "no such repository", "is_error": true})
        );
    }
}
