//! OpenAI Responses, and Qwen's compatible-mode Responses on Model Studio (DashScope):
//! flat function tools plus each provider's hosted tools, calls as `function_call`
//! output items (streamed as `response.function_call_arguments.*` events), results as
//! `function_call_output` items.
//!
//! The two differ only in the hosted tools they carry and the rules on them:
//! OpenAI runs `web_search`, `file_search`, `code_interpreter` and remote `mcp`; Qwen
//! runs `web_search`, `web_extractor` (only beside `web_search`), `code_interpreter`
//! (no container), `web_search_image`, `image_search`, `file_search` (exactly one
//! knowledge base) and `mcp` (SSE only, at most 10 servers).

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};

use super::openai_chat::function_parameters;
use super::{
    CallReader, HostedTool, NameMap, Note, ParseError, ParsedCall, RawArguments, RenderInput,
    Rendered, StreamParser, Target, ToolResult, read_call,
};

pub(super) fn render(input: &RenderInput<'_>, names: &NameMap, out: &mut Rendered) {
    let target = out.target;
    for tool in input.tools {
        let wire = names.wire(&tool.name).unwrap_or(&tool.name).to_owned();
        let (parameters, strict) = function_parameters(tool, input.options.strict, out);
        let mut function = Map::new();
        function.insert("type".to_owned(), json!("function"));
        function.insert("name".to_owned(), json!(wire));
        if !tool.description.is_empty() {
            function.insert("description".to_owned(), json!(tool.description));
        }
        function.insert("parameters".to_owned(), parameters);
        // Always explicit: Responses makes a function strict when `strict` is left out.
        function.insert("strict".to_owned(), json!(strict));
        if target == Target::OpenAiResponses
            && input.defer.is_some_and(|d| d.is_deferred(&tool.name))
        {
            function.insert("defer_loading".to_owned(), json!(true));
        }
        out.tools.push(Value::Object(function));
    }
    if target == Target::Qwen
        && input.options.strict
        && out.tools.iter().any(|t| t["strict"] == json!(true))
    {
        out.changes.push(Note::request(
            "qwen does not document strict mode (it ignores parameters it does not know): the strict schemas are sent, but a model may not be held to them; calls read the same either way",
        ));
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    for hosted in input.hosted {
        let key = match hosted {
            HostedTool::Mcp { server_label, .. } => format!("mcp server `{server_label}`"),
            other => format!("`{}`", other.kind()),
        };
        let count = seen.entry(key.clone()).or_default();
        *count += 1;
        if *count == 2 {
            out.problems.push(Note::tool(
                hosted.kind(),
                format!("{key} is declared more than once; the API takes each hosted tool once"),
            ));
        }
        let rendered = match target {
            Target::Qwen => qwen_hosted(hosted, input.hosted, out),
            _ => openai_hosted(hosted, out),
        };
        if let Some(tool) = rendered {
            out.tools.push(tool);
        }
    }
    if target == Target::OpenAiResponses && input.defer.is_some() {
        // The server-run search over the functions marked `defer_loading`.
        out.tools.push(json!({"type": "tool_search"}));
    }
    if target == Target::Qwen {
        let servers = input
            .hosted
            .iter()
            .filter(|h| matches!(h, HostedTool::Mcp { .. }))
            .count();
        if servers > QWEN_MAX_MCP_SERVERS {
            out.problems.push(Note::tool(
                "mcp",
                format!(
                    "{servers} MCP servers are declared; qwen takes at most {QWEN_MAX_MCP_SERVERS}"
                ),
            ));
        }
    }
}

const QWEN_MAX_MCP_SERVERS: usize = 10;
const WEB_SEARCH_OPTIONS: &[&str] = &[
    "filters",
    "search_context_size",
    "user_location",
    "external_web_access",
];

fn left_out(hosted: &HostedTool, target: &str) -> Note {
    Note::tool(
        hosted.kind(),
        format!("not supported by {target}; left out"),
    )
}

/// A hosted tool in OpenAI's Responses shape; `None` when OpenAI has no such tool.
fn openai_hosted(hosted: &HostedTool, out: &mut Rendered) -> Option<Value> {
    let kind = hosted.kind();
    match hosted {
        HostedTool::WebSearch { options } => {
            let mut tool = Map::new();
            tool.insert("type".to_owned(), json!("web_search"));
            for (key, value) in options {
                if key == "type" {
                    out.changes.push(Note::tool(
                        kind,
                        "removed the option `type` (the tool's type is `web_search`)",
                    ));
                    continue;
                }
                if !WEB_SEARCH_OPTIONS.contains(&key.as_str()) {
                    out.problems.push(Note::tool(
                        kind,
                        format!(
                            "`web_search` has no option `{key}`; openai-responses knows {}",
                            WEB_SEARCH_OPTIONS.join(", ")
                        ),
                    ));
                }
                tool.insert(key.clone(), value.clone());
            }
            Some(Value::Object(tool))
        }
        HostedTool::FileSearch {
            vector_store_ids,
            max_num_results,
        } => {
            if vector_store_ids.is_empty() {
                out.problems.push(Note::tool(
                    kind,
                    "`file_search` needs at least one vector store id",
                ));
            }
            let mut tool = json!({"type": "file_search", "vector_store_ids": vector_store_ids});
            if let Some(n) = max_num_results {
                if !(1..=50).contains(n) {
                    out.problems.push(Note::tool(
                        kind,
                        format!("`max_num_results` is {n}; the API takes 1 to 50"),
                    ));
                }
                tool["max_num_results"] = json!(n);
            }
            Some(tool)
        }
        HostedTool::CodeInterpreter { container } => {
            let container = match container {
                Some(Value::String(id)) => json!(id),
                Some(Value::Object(c)) if c.get("type").and_then(Value::as_str) == Some("auto") => {
                    Value::Object(c.clone())
                }
                Some(other) => {
                    out.problems.push(Note::tool(
                        kind,
                        format!(
                            "`container` must be a container id or `{{type: auto, …}}`, not {other}"
                        ),
                    ));
                    other.clone()
                }
                None => {
                    out.changes.push(Note::tool(
                        kind,
                        "added `container: {type: auto}` (the API requires a container)",
                    ));
                    json!({"type": "auto"})
                }
            };
            Some(json!({"type": "code_interpreter", "container": container}))
        }
        HostedTool::Mcp {
            server_label,
            server_url,
            server_description,
            headers,
            server_protocol,
            allowed_tools,
            require_approval,
        } => {
            let mut tool = Map::new();
            tool.insert("type".to_owned(), json!("mcp"));
            tool.insert("server_label".to_owned(), json!(server_label));
            tool.insert("server_url".to_owned(), json!(server_url));
            if !headers.is_empty() {
                tool.insert("headers".to_owned(), json!(headers));
            }
            if let Some(description) = server_description {
                tool.insert("server_description".to_owned(), json!(description));
            }
            if !allowed_tools.is_empty() {
                tool.insert("allowed_tools".to_owned(), json!(allowed_tools));
            }
            if let Some(approval) = require_approval {
                let valid = match approval {
                    Value::String(s) => s == "always" || s == "never",
                    Value::Object(o) => o.keys().all(|k| k == "always" || k == "never"),
                    _ => false,
                };
                if !valid {
                    out.problems.push(Note::tool(
                        kind,
                        format!("mcp server `{server_label}`: `require_approval` must be `always`, `never` or `{{always: …, never: …}}`, not {approval}"),
                    ));
                }
                tool.insert("require_approval".to_owned(), approval.clone());
            }
            if server_protocol.is_some() {
                out.changes.push(Note::tool(
                    kind,
                    format!(
                        "mcp server `{server_label}`: removed `server_protocol` (a Qwen field)"
                    ),
                ));
            }
            Some(Value::Object(tool))
        }
        HostedTool::WebExtractor {}
        | HostedTool::WebSearchImage {}
        | HostedTool::ImageSearch {} => {
            out.changes.push(left_out(hosted, "openai-responses"));
            None
        }
    }
}

/// A hosted tool in Qwen's shape. `all` is every hosted tool declared (rules between them).
fn qwen_hosted(hosted: &HostedTool, all: &[HostedTool], out: &mut Rendered) -> Option<Value> {
    let kind = hosted.kind();
    match hosted {
        HostedTool::WebSearch { options } => {
            if !options.is_empty() {
                let keys: Vec<String> = options.keys().map(|k| format!("`{k}`")).collect();
                out.changes.push(Note::tool(
                    kind,
                    format!(
                        "removed the options {} (qwen's `web_search` takes none)",
                        keys.join(", ")
                    ),
                ));
            }
            Some(json!({"type": "web_search"}))
        }
        HostedTool::WebExtractor {} => {
            if !all
                .iter()
                .any(|h| matches!(h, HostedTool::WebSearch { .. }))
            {
                out.problems.push(Note::tool(kind, "qwen's `web_extractor` works only together with `web_search`; declare `web_search` too"));
            }
            Some(json!({"type": "web_extractor"}))
        }
        HostedTool::CodeInterpreter { container } => {
            if container.is_some() {
                out.changes.push(Note::tool(
                    kind,
                    "removed `container` (qwen's `code_interpreter` takes none)",
                ));
            }
            Some(json!({"type": "code_interpreter"}))
        }
        HostedTool::WebSearchImage {} => Some(json!({"type": "web_search_image"})),
        HostedTool::ImageSearch {} => Some(json!({"type": "image_search"})),
        HostedTool::FileSearch {
            vector_store_ids,
            max_num_results,
        } => {
            if vector_store_ids.len() != 1 {
                out.problems.push(Note::tool(
                    kind,
                    format!("qwen's `file_search` takes exactly one knowledge base id in `vector_store_ids`, not {}", vector_store_ids.len()),
                ));
            }
            if max_num_results.is_some() {
                out.changes.push(Note::tool(
                    kind,
                    "removed `max_num_results` (qwen's `file_search` does not take it)",
                ));
            }
            Some(json!({"type": "file_search", "vector_store_ids": vector_store_ids}))
        }
        HostedTool::Mcp {
            server_label,
            server_url,
            server_description,
            headers,
            server_protocol,
            allowed_tools,
            require_approval,
        } => {
            let protocol = match server_protocol {
                Some(p) if p == "sse" => p.clone(),
                Some(p) => {
                    out.problems.push(Note::tool(kind, format!("mcp server `{server_label}`: qwen connects to SSE servers only, not `{p}`")));
                    p.clone()
                }
                None => {
                    out.changes.push(Note::tool(kind, format!("mcp server `{server_label}`: added `server_protocol: sse` (the only one qwen supports)")));
                    "sse".to_owned()
                }
            };
            let mut tool = Map::new();
            tool.insert("type".to_owned(), json!("mcp"));
            tool.insert("server_protocol".to_owned(), json!(protocol));
            tool.insert("server_label".to_owned(), json!(server_label));
            if let Some(description) = server_description {
                tool.insert("server_description".to_owned(), json!(description));
            }
            tool.insert("server_url".to_owned(), json!(server_url));
            if !headers.is_empty() {
                tool.insert("headers".to_owned(), json!(headers));
            }
            for (field, present) in [
                ("allowed_tools", !allowed_tools.is_empty()),
                ("require_approval", require_approval.is_some()),
            ] {
                if present {
                    out.changes.push(Note::tool(
                        kind,
                        format!(
                            "mcp server `{server_label}`: removed `{field}` (qwen does not take it)"
                        ),
                    ));
                }
            }
            Some(Value::Object(tool))
        }
    }
}

pub(super) fn parse_response(
    target: Target,
    response: &Value,
    reader: &CallReader,
) -> Result<Vec<ParsedCall>, ParseError> {
    let output = response
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError::new(target, "a Responses response has an `output` list"))?;
    let mut calls = Vec::new();
    for (i, item) in output.iter().enumerate() {
        if item.get("type").and_then(Value::as_str) != Some("function_call") {
            continue;
        }
        let call = read_item(item, reader)
            .map_err(|m| ParseError::new(target, format!("`output[{i}]` {m}")))?;
        calls.push(call);
    }
    Ok(calls)
}

/// A complete `function_call` item.
fn read_item(item: &Value, reader: &CallReader) -> Result<ParsedCall, String> {
    let call_id = item
        .get("call_id")
        .and_then(Value::as_str)
        .ok_or("is a `function_call` without `call_id`")?;
    let name = item
        .get("name")
        .and_then(Value::as_str)
        .ok_or("is a `function_call` without `name`")?;
    Ok(match item.get("arguments") {
        None | Some(Value::Null) => read_call(reader, call_id, name, RawArguments::Text("")),
        Some(Value::String(text)) => read_call(reader, call_id, name, RawArguments::Text(text)),
        Some(value) => read_call(reader, call_id, name, RawArguments::Value(value)),
    })
}

/// Assembles `function_call` items from Responses stream events, keyed by output
/// index (deltas find theirs by `item_id`), yielded in output order.
pub(super) struct Stream {
    target: Target,
    calls: BTreeMap<u64, Partial>,
    by_item: HashMap<String, u64>,
}

#[derive(Default)]
struct Partial {
    call_id: String,
    item_id: String,
    name: String,
    arguments: String,
}

impl Stream {
    pub(super) fn new(target: Target) -> Self {
        Stream {
            target,
            calls: BTreeMap::new(),
            by_item: HashMap::new(),
        }
    }

    fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError::new(self.target, message)
    }

    /// The call an event is about: by `item_id` when known, else by `output_index`.
    fn slot(&mut self, event: &Value) -> Result<&mut Partial, ParseError> {
        let item_id = event.get("item_id").and_then(Value::as_str);
        let index = match item_id.and_then(|id| self.by_item.get(id)) {
            Some(index) => *index,
            None => event
                .get("output_index")
                .and_then(Value::as_u64)
                .ok_or_else(|| {
                    self.error(
                        "an arguments event has neither a known `item_id` nor an `output_index`",
                    )
                })?,
        };
        let call = self.calls.entry(index).or_default();
        if let Some(id) = item_id
            && call.item_id.is_empty()
        {
            call.item_id = id.to_owned();
            self.by_item.insert(id.to_owned(), index);
        }
        Ok(self.calls.entry(index).or_default())
    }

    /// `response.output_item.added` / `.done`: the item's identity (and, when done, its arguments).
    fn item(&mut self, event: &Value, done: bool) -> Result<(), ParseError> {
        let item = event
            .get("item")
            .filter(|i| i.is_object())
            .ok_or_else(|| self.error("an output item event has no `item`"))?;
        if item.get("type").and_then(Value::as_str) != Some("function_call") {
            return Ok(());
        }
        let index = event.get("output_index").and_then(Value::as_u64);
        let item_id = item.get("id").and_then(Value::as_str).unwrap_or_default();
        let index = match (index, self.by_item.get(item_id)) {
            (Some(index), _) => index,
            (None, Some(index)) => *index,
            (None, None) => match self.calls.keys().next_back() {
                None => 0,
                Some(&last) => last.checked_add(1).ok_or_else(|| {
                    self.error(format!(
                        "an output item without `output_index` follows one at index {last}, the largest there is; give every item its `output_index`"
                    ))
                })?,
            },
        };
        let call = self.calls.entry(index).or_default();
        if !item_id.is_empty() {
            call.item_id = item_id.to_owned();
            self.by_item.insert(item_id.to_owned(), index);
        }
        if let Some(call_id) = item.get("call_id").and_then(Value::as_str) {
            call.call_id = call_id.to_owned();
        }
        if let Some(name) = item
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        {
            call.name = name.to_owned();
        }
        if done {
            match item.get("arguments") {
                Some(Value::String(text)) => call.arguments = text.clone(),
                Some(Value::Null) | None => {}
                Some(value) => call.arguments = value.to_string(),
            }
        }
        Ok(())
    }
}

impl StreamParser for Stream {
    fn feed(&mut self, event: &Value) -> Result<(), ParseError> {
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| self.error("a stream event has no `type`"))?;
        match kind {
            "response.output_item.added" => self.item(event, false),
            "response.output_item.done" => self.item(event, true),
            "response.function_call_arguments.delta" => {
                let delta = event
                    .get("delta")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                self.slot(event)?.arguments.push_str(&delta);
                Ok(())
            }
            "response.function_call_arguments.done" => {
                let arguments = event
                    .get("arguments")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let name = event.get("name").and_then(Value::as_str).map(str::to_owned);
                let call = self.slot(event)?;
                if let Some(arguments) = arguments {
                    call.arguments = arguments;
                }
                if let Some(name) = name.filter(|n| !n.is_empty()) {
                    call.name = name;
                }
                Ok(())
            }
            "error" => {
                let message = event
                    .get("message")
                    .or_else(|| event.pointer("/error/message"))
                    .and_then(Value::as_str)
                    .unwrap_or("no message");
                Err(self.error(format!("the stream reported an error: {message}")))
            }
            _ => Ok(()),
        }
    }

    fn finish(self: Box<Self>, reader: &CallReader) -> Vec<ParsedCall> {
        self.calls
            .into_values()
            .map(|call| {
                let id = if call.call_id.is_empty() {
                    call.item_id
                } else {
                    call.call_id
                };
                if call.name.is_empty() {
                    ParsedCall {
                        id,
                        name: String::new(),
                        arguments: json!({}),
                        invalid: Some(
                            "the tool call arrived without a name; call the tool again".to_owned(),
                        ),
                    }
                } else {
                    read_call(reader, &id, &call.name, RawArguments::Text(&call.arguments))
                }
            })
            .collect()
    }
}

pub(super) fn result_message(call: &ParsedCall, result: &ToolResult) -> Value {
    json!({"type": "function_call_output", "call_id": call.id, "output": result.text()})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::openai_chat::tests::{catalog, hosted, snapshot_of};
    use crate::wire::{
        RenderOptions, parse_response as parse, render as render_for, stream_parser,
    };

    fn rendered(target: Target, strict: bool) -> Rendered {
        render_for(
            target,
            &catalog(),
            &hosted(),
            RenderOptions {
                strict,
                json_schema: false,
            },
        )
    }

    fn hosted_from(value: Value) -> Vec<HostedTool> {
        serde_json::from_value(value).unwrap()
    }

    fn messages(notes: &[Note]) -> Vec<String> {
        notes
            .iter()
            .map(|n| format!("{}: {}", n.tool.as_deref().unwrap_or("-"), n.message))
            .collect()
    }

    #[test]
    fn the_catalog_renders_as_responses_tools() {
        insta::assert_json_snapshot!(snapshot_of(&rendered(Target::OpenAiResponses, false)));
    }

    #[test]
    fn the_catalog_renders_as_strict_responses_tools() {
        insta::assert_json_snapshot!(snapshot_of(&rendered(Target::OpenAiResponses, true)));
    }

    #[test]
    fn the_catalog_renders_as_qwen_tools() {
        insta::assert_json_snapshot!(snapshot_of(&rendered(Target::Qwen, false)));
    }

    #[test]
    fn the_catalog_renders_as_strict_qwen_tools() {
        insta::assert_json_snapshot!(snapshot_of(&rendered(Target::Qwen, true)));
    }

    #[test]
    fn strict_is_always_sent_because_responses_defaults_to_strict() {
        for strict in [false, true] {
            let out = rendered(Target::OpenAiResponses, strict);
            let functions = out.tools.iter().filter(|t| t["type"] == "function");
            assert!(functions.clone().all(|f| f["strict"].is_boolean()));
            assert_eq!(
                functions.filter(|f| f["strict"] == json!(true)).count(),
                if strict { 3 } else { 0 }
            );
        }
    }

    #[test]
    fn openai_leaves_out_qwen_only_tools_and_drops_qwen_only_fields() {
        let out = render_for(
            Target::OpenAiResponses,
            &[],
            &hosted_from(json!([
                {"type": "web_search_image"}, {"type": "image_search"}, {"type": "web_extractor"},
                {"type": "mcp", "server_label": "m", "server_url": "https://m/sse", "server_protocol": "sse"}
            ])),
            RenderOptions::default(),
        );
        assert_eq!(
            out.tools,
            vec![json!({"type": "mcp", "server_label": "m", "server_url": "https://m/sse"})]
        );
        assert_eq!(
            messages(&out.changes),
            [
                "web_search_image: not supported by openai-responses; left out",
                "image_search: not supported by openai-responses; left out",
                "web_extractor: not supported by openai-responses; left out",
                "mcp: mcp server `m`: removed `server_protocol` (a Qwen field)",
            ]
        );
        assert!(out.problems.is_empty());
    }

    #[test]
    fn openai_rules_on_hosted_tools_are_reported() {
        let out = render_for(
            Target::OpenAiResponses,
            &[],
            &hosted_from(json!([
                {"type": "file_search", "vector_store_ids": [], "max_num_results": 51},
                {"type": "web_search", "options": {"search_context_size": "low", "depth": 3}},
                {"type": "web_search"},
                {"type": "code_interpreter", "container": 7},
                {"type": "mcp", "server_label": "m", "server_url": "https://m", "require_approval": "sometimes"}
            ])),
            RenderOptions::default(),
        );
        assert_eq!(
            messages(&out.problems),
            [
                "file_search: `file_search` needs at least one vector store id",
                "file_search: `max_num_results` is 51; the API takes 1 to 50",
                "web_search: `web_search` has no option `depth`; openai-responses knows filters, search_context_size, user_location, external_web_access",
                "web_search: `web_search` is declared more than once; the API takes each hosted tool once",
                "code_interpreter: `container` must be a container id or `{type: auto, …}`, not 7",
                "mcp: mcp server `m`: `require_approval` must be `always`, `never` or `{always: …, never: …}`, not \"sometimes\"",
            ]
        );
    }

    #[test]
    fn qwen_rules_on_hosted_tools_are_reported() {
        let mut tools = json!([
            {"type": "web_extractor"},
            {"type": "file_search", "vector_store_ids": ["kb1", "kb2"]},
            {"type": "mcp", "server_label": "s0", "server_url": "https://s/mcp", "server_protocol": "streamable-http"}
        ]);
        for i in 1..=10 {
            tools.as_array_mut().unwrap().push(json!({"type": "mcp", "server_label": format!("s{i}"), "server_url": "https://s/sse"}));
        }
        tools
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "mcp", "server_label": "s1", "server_url": "https://s/sse"}));
        let out = render_for(
            Target::Qwen,
            &[],
            &hosted_from(tools),
            RenderOptions::default(),
        );
        assert_eq!(
            messages(&out.problems),
            [
                "web_extractor: qwen's `web_extractor` works only together with `web_search`; declare `web_search` too",
                "file_search: qwen's `file_search` takes exactly one knowledge base id in `vector_store_ids`, not 2",
                "mcp: mcp server `s0`: qwen connects to SSE servers only, not `streamable-http`",
                "mcp: mcp server `s1` is declared more than once; the API takes each hosted tool once",
                "mcp: 12 MCP servers are declared; qwen takes at most 10",
            ]
        );
    }

    #[test]
    fn web_extractor_beside_web_search_is_fine_for_qwen() {
        let out = render_for(
            Target::Qwen,
            &[],
            &hosted_from(json!([{"type": "web_extractor"}, {"type": "web_search"}])),
            RenderOptions::default(),
        );
        assert!(out.problems.is_empty());
        assert_eq!(
            out.tools,
            vec![
                json!({"type": "web_extractor"}),
                json!({"type": "web_search"})
            ]
        );
    }

    fn function_call(call_id: &str, name: &str, arguments: &str) -> Value {
        json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id, "name": name, "arguments": arguments, "status": "completed"})
    }

    #[test]
    fn function_call_items_come_back_correlated_by_call_id() {
        let out = rendered(Target::OpenAiResponses, true);
        let response = json!({"id": "resp_1", "object": "response", "status": "completed", "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            function_call("call_1", "calendar_schedule", "{\"when\":{\"start\":\"2026-01-01T10:00:00Z\",\"minutes\":null},\"attendees\":[]}"),
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Done", "annotations": []}]},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"}
        ]});
        let calls = parse(Target::OpenAiResponses, &response, &out.reader).unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].id, "call_1");
        assert_eq!(calls[0].name, "calendar.schedule");
        assert_eq!(
            calls[0].arguments,
            json!({"when": {"start": "2026-01-01T10:00:00Z"}, "attendees": []})
        );
    }

    #[test]
    fn bad_function_calls_are_invalid_and_bad_responses_are_parse_errors() {
        let reader = rendered(Target::Qwen, false).reader;
        let response = json!({"output": [
            function_call("c1", "weather", "{\"city\":"),
            function_call("c2", "weather", "\"Paris\""),
            function_call("c3", "drop_tables", "{}")
        ]});
        let calls = parse(Target::Qwen, &response, &reader).unwrap();
        assert!(calls.iter().all(|c| !c.is_valid()));
        assert!(
            calls[1]
                .invalid
                .as_deref()
                .unwrap()
                .ends_with("must be a JSON object, not a string")
        );
        assert!(
            parse(Target::Qwen, &json!({"status": "completed"}), &reader)
                .unwrap_err()
                .to_string()
                .starts_with("qwen: ")
        );
        let no_call_id =
            json!({"output": [{"type": "function_call", "name": "weather", "arguments": "{}"}]});
        assert_eq!(
            parse(Target::Qwen, &no_call_id, &reader)
                .unwrap_err()
                .to_string(),
            "qwen: `output[0]` is a `function_call` without `call_id`"
        );
    }

    /// Two function calls streamed as the Responses API sends them, with a reasoning
    /// item first and the second call's deltas interleaved with the first's.
    fn events() -> Vec<Value> {
        let mut n = 0;
        let mut event = |mut e: Value| {
            n += 1;
            e["sequence_number"] = json!(n);
            e
        };
        vec![
            event(
                json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
            ),
            event(
                json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            ),
            event(
                json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            ),
            event(
                json!({"type": "response.output_item.added", "output_index": 1,
                         "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather", "arguments": "", "status": "in_progress"}}),
            ),
            event(
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "{\"city\":"}),
            ),
            event(
                json!({"type": "response.output_item.added", "output_index": 2,
                         "item": {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "github_create_issue", "arguments": "", "status": "in_progress"}}),
            ),
            event(
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc_2", "output_index": 2, "delta": "{\"repo\":\"a/b\",\"title\":\"t\"}"}),
            ),
            event(
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "\"Lima\"}"}),
            ),
            event(
                json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1, "arguments": "{\"city\":\"Lima\"}"}),
            ),
            event(
                json!({"type": "response.output_item.done", "output_index": 1,
                         "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather", "arguments": "{\"city\":\"Lima\"}", "status": "completed"}}),
            ),
            event(
                json!({"type": "response.function_call_arguments.done", "item_id": "fc_2", "output_index": 2, "arguments": "{\"repo\":\"a/b\",\"title\":\"t\"}"}),
            ),
            event(
                json!({"type": "response.output_item.done", "output_index": 2,
                         "item": {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "github_create_issue", "arguments": "{\"repo\":\"a/b\",\"title\":\"t\"}", "status": "completed"}}),
            ),
            event(
                json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": []}}),
            ),
        ]
    }

    fn replay(target: Target, events: &[Value], reader: &CallReader) -> Vec<ParsedCall> {
        let mut stream = stream_parser(target);
        for e in events {
            stream.feed(e).unwrap();
        }
        stream.finish(reader)
    }

    #[test]
    fn streamed_calls_are_assembled_by_item_and_yielded_in_output_order() {
        for target in [Target::OpenAiResponses, Target::Qwen] {
            let calls = replay(target, &events(), &rendered(target, false).reader);
            assert_eq!(calls.len(), 2);
            assert_eq!(
                (calls[0].id.as_str(), calls[0].name.as_str()),
                ("call_1", "weather")
            );
            assert_eq!(calls[0].arguments, json!({"city": "Lima"}));
            assert_eq!(
                (calls[1].id.as_str(), calls[1].name.as_str()),
                ("call_2", "github.create_issue")
            );
            assert!(calls.iter().all(ParsedCall::is_valid));
        }
    }

    #[test]
    fn deltas_alone_assemble_a_call_and_a_cut_stream_gives_an_invalid_call() {
        let reader = rendered(Target::OpenAiResponses, false).reader;
        let calls = replay(Target::OpenAiResponses, &events()[..8], &reader);
        assert_eq!(calls[0].arguments, json!({"city": "Lima"}));
        let cut = replay(Target::OpenAiResponses, &events()[..5], &reader);
        assert!(
            cut[0]
                .invalid
                .as_deref()
                .unwrap()
                .contains("not valid JSON")
        );
        let nameless = replay(
            Target::OpenAiResponses,
            &[
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc_9", "output_index": 0, "delta": "{}"}),
            ],
            &reader,
        );
        assert_eq!(
            nameless[0].invalid.as_deref(),
            Some("the tool call arrived without a name; call the tool again")
        );
        assert_eq!(nameless[0].id, "fc_9");
    }

    #[test]
    fn a_stream_error_or_an_untyped_event_is_a_parse_error() {
        let mut stream = stream_parser(Target::OpenAiResponses);
        assert_eq!(
            stream.feed(&json!({"type": "error", "code": "server_error", "message": "try again", "sequence_number": 1})).unwrap_err().to_string(),
            "openai-responses: the stream reported an error: try again"
        );
        assert!(stream.feed(&json!({"delta": "x"})).is_err());
        assert!(
            stream
                .feed(&json!({"type": "response.function_call_arguments.delta", "delta": "x"}))
                .is_err()
        );
        assert!(
            stream
                .feed(&json!({"type": "response.output_item.added", "output_index": 0}))
                .is_err()
        );
    }

    #[test]
    fn the_largest_output_index_is_a_parse_error_not_a_wrap() {
        let mut stream = stream_parser(Target::OpenAiResponses);
        let item = |id: &str| json!({"type": "function_call", "id": id, "call_id": id, "name": "weather", "arguments": "{}"});
        stream
            .feed(&json!({"type": "response.output_item.done", "output_index": u64::MAX, "item": item("fc_1")}))
            .unwrap();
        let err = stream
            .feed(&json!({"type": "response.output_item.done", "item": item("fc_2")}))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("follows one at index 18446744073709551615"),
            "{err}"
        );
    }

    #[test]
    fn results_go_back_as_function_call_output_items() {
        let call = ParsedCall {
            id: "call_1".to_owned(),
            name: "weather".to_owned(),
            arguments: json!({}),
            invalid: None,
        };
        assert_eq!(
            result_message(&call, &ToolResult::ok(json!({"temp": 21}))),
            json!({"type": "function_call_output", "call_id": "call_1", "output": "{\"temp\":21}"})
        );
        assert_eq!(
            result_message(&call, &ToolResult::error("no such city"))["output"],
            "no such city"
        );
    }
}
