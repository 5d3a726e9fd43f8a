//! MCP (spec 2025-11-25): `tools/list` entries, `tools/call` requests and
//! `CallToolResult`s.
//!
//! MCP carries JSON Schema as it is, so rendering changes no schema; it only checks
//! the two rules the 2025-11-25 `Tool` type imposes (`inputSchema` and
//! `outputSchema` are object schemas at the root) and reads the annotations off the
//! tool's effect. MCP has no provider-hosted tools and no streamed calls: a
//! "stream" is the session's messages, one whole message at a time.

use serde_json::{Map, Value, json};

use super::{
    CallReader, NameMap, Note, ParseError, ParsedCall, RawArguments, RenderInput, Rendered,
    StreamParser, Target, ToolResult, read_call,
};

/// Renders each tool as a `tools/list` entry.
pub(super) fn render(input: &RenderInput<'_>, names: &NameMap, out: &mut Rendered) {
    for tool in input.tools {
        let name = names.wire(&tool.name).unwrap_or(&tool.name);
        let mut entry = Map::new();
        entry.insert("name".into(), name.into());
        if let Some(title) = &tool.title {
            entry.insert("title".into(), title.as_str().into());
        }
        if !tool.description.is_empty() {
            entry.insert("description".into(), tool.description.as_str().into());
        }
        if !is_object_schema(&tool.input_schema) {
            out.problems.push(Note::at(
                &tool.name,
                "/inputSchema",
                "MCP requires `inputSchema` to be an object schema (`type: object`) at the root",
            ));
        }
        entry.insert("inputSchema".into(), tool.input_schema.clone());
        // What the host sends apart from the model's arguments (SEP-3221, draft).
        if let Some(secure) = &tool.secure_input_schema {
            entry.insert("secureInputSchema".into(), secure.clone());
        }
        match &tool.output_schema {
            Some(schema) if is_object_schema(schema) => {
                entry.insert("outputSchema".into(), schema.clone());
            }
            Some(_) => out.changes.push(Note::at(
                &tool.name,
                "/outputSchema",
                "left out: MCP 2025-11-25 restricts `outputSchema` to an object schema at the root",
            )),
            None => {}
        }
        entry.insert("annotations".into(), annotations(tool));
        out.tools.push(Value::Object(entry));
    }
    for hosted in input.hosted {
        out.changes.push(Note::tool(
            hosted.kind(),
            format!(
                "left out: MCP has no provider-hosted tools, so `{}` cannot be carried",
                hosted.kind()
            ),
        ));
    }
}

/// `type: "object"` at the root, as MCP's `Tool` type spells it.
fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// `ToolAnnotations`: the title, then every hint read off the effect.
fn annotations(tool: &crate::ToolDescriptor) -> Value {
    let mut out = Map::new();
    if let Some(title) = &tool.title {
        out.insert("title".into(), title.as_str().into());
    }
    if let Ok(Value::Object(hints)) = serde_json::to_value(tool.effect.annotations()) {
        out.extend(hints);
    }
    Value::Object(out)
}

/// The call in a `tools/call` request: the whole JSON-RPC message (`id` is its
/// JSON-RPC id) or its bare `params` (`id` is empty).
pub(super) fn parse_response(
    response: &Value,
    reader: &CallReader,
) -> Result<Vec<ParsedCall>, ParseError> {
    let (id, name, arguments) =
        call_of(response)?.ok_or_else(|| match response.get("method").and_then(Value::as_str) {
            Some(method) => error(format!(
                "expected a `tools/call` request, got method `{method}`"
            )),
            None => {
                error("expected a `tools/call` request, got a JSON-RPC message without a `method`")
            }
        })?;
    Ok(vec![read_call(
        reader,
        &id,
        &name,
        RawArguments::Value(&arguments),
    )])
}

/// One call's id, wire name and arguments; `None` for a JSON-RPC message that is
/// not a `tools/call` request.
fn call_of(message: &Value) -> Result<Option<(String, String, Value)>, ParseError> {
    let Some(object) = message.as_object() else {
        return Err(error(
            "expected a JSON-RPC `tools/call` request or its `params` object",
        ));
    };
    let is_message = object.contains_key("jsonrpc") || object.contains_key("method");
    let (id, params) = if is_message {
        if object.get("method").and_then(Value::as_str) != Some("tools/call") {
            return Ok(None);
        }
        let id = match object.get("id") {
            Some(Value::String(id)) => id.clone(),
            Some(Value::Number(id)) => id.to_string(),
            _ => {
                return Err(error(
                    "a `tools/call` request needs an `id` (a string or a number)",
                ));
            }
        };
        let params = object
            .get("params")
            .ok_or_else(|| error("the `tools/call` request has no `params`"))?;
        (id, params)
    } else {
        (String::new(), message)
    };
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| error("the `tools/call` params have no `name` string"))?;
    let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
    Ok(Some((id, name.to_owned(), arguments)))
}

fn error(message: impl Into<String>) -> ParseError {
    ParseError::new(Target::Mcp, message)
}

/// MCP's calls as a stream: whole messages, one call each. A string event is read
/// as newline-delimited JSON (the stdio transport). Other messages of the session
/// (`initialize`, notifications, responses) are skipped.
#[derive(Default)]
pub(super) struct Stream {
    calls: Vec<(String, String, Value)>,
}

impl StreamParser for Stream {
    fn feed(&mut self, event: &Value) -> Result<(), ParseError> {
        if let Value::String(text) = event {
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                let message: Value = serde_json::from_str(line)
                    .map_err(|e| error(format!("a line of the stream is not JSON ({e})")))?;
                self.feed(&message)?;
            }
            return Ok(());
        }
        self.calls.extend(call_of(event)?);
        Ok(())
    }

    fn finish(self: Box<Self>, reader: &CallReader) -> Vec<ParsedCall> {
        self.calls
            .iter()
            .map(|(id, name, arguments)| {
                read_call(reader, id, name, RawArguments::Value(arguments))
            })
            .collect()
    }
}

/// A `CallToolResult`: the result as text, the value again as `structuredContent`
/// when it is an object, and `isError`.
pub(super) fn result_message(result: &ToolResult) -> Value {
    let mut out = Map::new();
    out.insert(
        "content".into(),
        json!([{"type": "text", "text": result.text()}]),
    );
    if result.content.is_object() {
        out.insert("structuredContent".into(), result.content.clone());
    }
    out.insert("isError".into(), result.is_error.into());
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{self, HostedTool, RenderOptions};
    use crate::{Effect, ToolDescriptor, ToolSource};

    fn catalog() -> Vec<ToolDescriptor> {
        let mut lookup = ToolDescriptor::new(
            "orders.lookup",
            "Look up an order by its id.",
            json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
            Effect::Read,
            ToolSource::Builtin,
        );
        lookup.title = Some("Look up order".into());
        lookup.output_schema = Some(
            json!({"type": "object", "properties": {"status": {"type": "string"}}, "required": ["status"]}),
        );
        let mut refund = ToolDescriptor::new(
            "refund_order",
            "Refund an order in full.",
            json!({"type": "object", "properties": {"id": {"type": "string"}, "reason": {"type": "string"}}}),
            Effect::External,
            ToolSource::Builtin,
        );
        refund.output_schema = Some(json!({"type": "array", "items": {"type": "string"}}));
        let ping = ToolDescriptor::new(
            "ping",
            "",
            json!({"type": "object"}),
            Effect::Idempotent,
            ToolSource::Builtin,
        );
        vec![lookup, refund, ping]
    }

    fn rendered(tools: &[ToolDescriptor], hosted: &[HostedTool]) -> Rendered {
        wire::render(Target::Mcp, tools, hosted, RenderOptions::default())
    }

    fn reader() -> CallReader {
        rendered(&catalog(), &[]).reader
    }

    #[test]
    fn a_small_catalog_renders_as_tools_list_entries() {
        let out = rendered(&catalog(), &[]);
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        insta::assert_json_snapshot!(
            "mcp_tools_list",
            json!({"tools": out.tools, "changes": out.changes})
        );
    }

    #[test]
    fn annotations_carry_every_hint_of_the_effect_and_the_title() {
        let out = rendered(&catalog(), &[]);
        assert_eq!(
            out.tools[0]["annotations"],
            json!({"title": "Look up order", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
        );
        assert_eq!(
            out.tools[1]["annotations"],
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true})
        );
    }

    #[test]
    fn a_non_object_output_schema_is_left_out_with_a_note() {
        let out = rendered(&catalog(), &[]);
        assert!(out.tools[1].get("outputSchema").is_none());
        assert!(out.tools[0].get("outputSchema").is_some());
        assert!(
            out.changes
                .iter()
                .any(|n| n.tool.as_deref() == Some("refund_order") && n.path == "/outputSchema")
        );
    }

    #[test]
    fn an_input_schema_that_is_not_an_object_is_a_problem() {
        let tool = ToolDescriptor::new(
            "echo",
            "Echo.",
            json!({"type": "string"}),
            Effect::Read,
            ToolSource::Builtin,
        );
        let out = rendered(&[tool], &[]);
        assert_eq!(out.problems.len(), 1);
        assert_eq!(out.problems[0].path, "/inputSchema");
    }

    #[test]
    fn hosted_tools_are_left_out_with_a_note_each() {
        let hosted = [
            HostedTool::WebSearch {
                options: Default::default(),
            },
            HostedTool::WebExtractor {},
        ];
        let out = rendered(&catalog(), &hosted);
        assert_eq!(out.tools.len(), 3);
        let notes: Vec<_> = out
            .changes
            .iter()
            .filter_map(|n| n.tool.as_deref())
            .collect();
        assert!(
            notes.contains(&"web_search") && notes.contains(&"web_extractor"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_whole_tools_call_request_is_read_with_its_jsonrpc_id() {
        let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "orders.lookup", "arguments": {"id": "A1"}}});
        let calls = parse_response(&request, &reader()).unwrap();
        assert_eq!(
            calls,
            vec![ParsedCall {
                id: "7".into(),
                name: "orders.lookup".into(),
                arguments: json!({"id": "A1"}),
                invalid: None
            }]
        );
        let request = json!({"jsonrpc": "2.0", "id": "req-1", "method": "tools/call", "params": {"name": "ping"}});
        let calls = parse_response(&request, &reader()).unwrap();
        assert_eq!(
            (calls[0].id.as_str(), &calls[0].arguments),
            ("req-1", &json!({}))
        );
    }

    #[test]
    fn bare_params_are_read_with_an_empty_id() {
        let calls = parse_response(&json!({"name": "ping", "arguments": {}}), &reader()).unwrap();
        assert_eq!(calls[0].id, "");
        assert!(calls[0].is_valid());
    }

    #[test]
    fn another_method_is_a_parse_error() {
        let err = parse_response(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            &reader(),
        )
        .unwrap_err();
        assert!(err.message.contains("got method `tools/list`"), "{err}");
    }

    #[test]
    fn malformed_requests_are_parse_errors_not_panics() {
        for bad in [
            json!([1, 2]),
            json!("tools/call"),
            json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "ping"}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 3}}),
            json!({"arguments": {}}),
        ] {
            assert!(parse_response(&bad, &reader()).is_err(), "{bad}");
        }
    }

    #[test]
    fn arguments_that_are_not_an_object_make_an_invalid_call() {
        let calls = parse_response(&json!({"name": "ping", "arguments": [1]}), &reader()).unwrap();
        assert!(
            calls[0]
                .invalid
                .as_deref()
                .unwrap()
                .contains("must be a JSON object")
        );
        let calls = parse_response(&json!({"name": "nope"}), &reader()).unwrap();
        assert!(
            calls[0]
                .invalid
                .as_deref()
                .unwrap()
                .contains("no tool named `nope`")
        );
    }

    #[test]
    fn a_stream_of_messages_yields_one_call_per_tools_call_request() {
        let mut stream: Box<dyn StreamParser> = Box::<Stream>::default();
        stream
            .feed(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}))
            .unwrap();
        stream
            .feed(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .unwrap();
        stream
            .feed(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping"}}))
            .unwrap();
        let lines = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"orders.lookup\",\"arguments\":{\"id\":\"B\"}}}\n\n{\"name\":\"ping\"}\n";
        stream.feed(&Value::String(lines.into())).unwrap();
        let calls = stream.finish(&reader());
        let ids: Vec<_> = calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str()))
            .collect();
        assert_eq!(ids, [("1", "ping"), ("2", "orders.lookup"), ("", "ping")]);
    }

    #[test]
    fn a_stream_line_that_is_not_json_is_a_parse_error() {
        let mut stream = Stream::default();
        assert!(stream.feed(&Value::String("{\"name\": ".into())).is_err());
    }

    #[test]
    fn results_carry_text_structured_content_for_objects_and_is_error() {
        let ok = result_message(&ToolResult::ok(json!({"status": "shipped"})));
        assert_eq!(
            ok,
            json!({"content": [{"type": "text", "text": "{\"status\":\"shipped\"}"}], "structuredContent": {"status": "shipped"}, "isError": false})
        );
        let list = result_message(&ToolResult::ok(json!([1, 2])));
        assert!(list.get("structuredContent").is_none());
        let failed = result_message(&ToolResult::error("no such order"));
        assert_eq!(
            failed,
            json!({"content": [{"type": "text", "text": "no such order"}], "isError": true})
        );
    }
}
