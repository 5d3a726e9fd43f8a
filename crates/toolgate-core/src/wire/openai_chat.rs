//! OpenAI Chat Completions: `tools[]` of `{type: function, function: {…}}`, calls in
//! `choices[].message.tool_calls[]` (streamed as `delta.tool_calls[]` fragments merged
//! by `index`), results as `role: tool` messages.
//!
//! Chat Completions carries no provider-hosted tools; they are left out with a note.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::strict::{StrictDialect, declare_parameters};
use super::{
    CallReader, NameMap, Note, ParseError, ParsedCall, RawArguments, RenderInput, Rendered,
    StreamParser, Target, ToolResult, read_call,
};
use crate::ToolDescriptor;

const TARGET: Target = Target::OpenAiChat;

pub(super) fn render(input: &RenderInput<'_>, names: &NameMap, out: &mut Rendered) {
    for tool in input.tools {
        let wire = names.wire(&tool.name).unwrap_or(&tool.name).to_owned();
        let (parameters, strict) = function_parameters(tool, input.options.strict, out);
        let mut function = Map::new();
        function.insert("name".to_owned(), json!(wire));
        if !tool.description.is_empty() {
            function.insert("description".to_owned(), json!(tool.description));
        }
        function.insert("parameters".to_owned(), parameters);
        function.insert("strict".to_owned(), json!(strict));
        out.tools
            .push(json!({"type": "function", "function": function}));
    }
    for hosted in input.hosted {
        out.changes.push(Note::tool(
            hosted.kind(),
            "not supported by openai-chat (Chat Completions carries no hosted tools); left out",
        ));
    }
}

/// The `parameters` of an OpenAI function (Chat Completions, Responses, Qwen) and
/// whether it is strict. The API wants `type: object` at the root, strict or not.
pub(super) fn function_parameters(
    tool: &ToolDescriptor,
    strict: bool,
    out: &mut Rendered,
) -> (Value, bool) {
    let (mut parameters, strict) = declare_parameters(tool, strict, StrictDialect::OpenAi, out);
    match &mut parameters {
        Value::Object(map) => match map.get("type") {
            None => {
                map.shift_insert(0, "type".to_owned(), json!("object"));
                out.changes.push(Note::at(
                    &tool.name,
                    "",
                    "added `type: object` (the API needs it at the root)",
                ));
            }
            Some(t) if t != "object" => {
                out.problems.push(Note::at(
                    &tool.name,
                    "",
                    format!("the parameters must be `type: object`, not `type: {t}`"),
                ));
            }
            Some(_) => {}
        },
        _ => out.problems.push(Note::tool(
            &tool.name,
            "the input schema is not a JSON Schema object",
        )),
    }
    (parameters, strict)
}

pub(super) fn parse_response(
    response: &Value,
    reader: &CallReader,
) -> Result<Vec<ParsedCall>, ParseError> {
    let choices = response
        .get("choices")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            ParseError::new(TARGET, "a Chat Completions response has a `choices` list")
        })?;
    let mut calls = Vec::new();
    for (i, choice) in choices.iter().enumerate() {
        let message = choice
            .get("message")
            .filter(|m| m.is_object())
            .ok_or_else(|| {
                ParseError::new(TARGET, format!("`choices[{i}]` has no `message` object"))
            })?;
        let tool_calls = match message.get("tool_calls") {
            None | Some(Value::Null) => continue,
            Some(Value::Array(list)) => list,
            Some(_) => {
                return Err(ParseError::new(
                    TARGET,
                    format!("`choices[{i}].message.tool_calls` is not a list"),
                ));
            }
        };
        for (j, call) in tool_calls.iter().enumerate() {
            calls.push(read_tool_call(call, reader).map_err(|m| {
                ParseError::new(
                    TARGET,
                    format!("`choices[{i}].message.tool_calls[{j}]` {m}"),
                )
            })?);
        }
    }
    Ok(calls)
}

/// One entry of `message.tool_calls`.
fn read_tool_call(call: &Value, reader: &CallReader) -> Result<ParsedCall, String> {
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .ok_or("has no `id`")?;
    match call.get("type").and_then(Value::as_str) {
        Some("function") | None => {}
        Some("custom") => {
            let name = call
                .pointer("/custom/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            return Ok(custom_call(reader, id, name));
        }
        Some(other) => {
            return Ok(ParsedCall {
                id: id.to_owned(),
                name: String::new(),
                arguments: json!({}),
                invalid: Some(format!(
                    "a `{other}` tool call is not something these tools answer; call one of the functions you were given"
                )),
            });
        }
    }
    let function = call.get("function").ok_or("has no `function`")?;
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or("has no `function.name`")?;
    Ok(match function.get("arguments") {
        None | Some(Value::Null) => read_call(reader, id, name, RawArguments::Text("")),
        Some(Value::String(text)) => read_call(reader, id, name, RawArguments::Text(text)),
        // Some OpenAI-compatible servers send the object itself.
        Some(value) => read_call(reader, id, name, RawArguments::Value(value)),
    })
}

/// A `custom` (free-text) tool call: these tools are all functions.
fn custom_call(reader: &CallReader, id: &str, wire_name: &str) -> ParsedCall {
    let name = reader
        .names
        .canonical(wire_name)
        .unwrap_or(wire_name)
        .to_owned();
    ParsedCall {
        id: id.to_owned(),
        invalid: Some(format!(
            "`{name}` is a function: call it with JSON arguments, not as a custom tool with free text"
        )),
        name,
        arguments: json!({}),
    }
}

/// Assembles calls from `chat.completion.chunk`s: fragments are merged by `(choice
/// index, tool call index)` and their string fields concatenated, as the SDK does.
#[derive(Default)]
pub(super) struct Stream {
    calls: BTreeMap<(u64, u64), Fragment>,
}

#[derive(Default)]
struct Fragment {
    id: String,
    name: String,
    arguments: String,
    custom: bool,
}

impl StreamParser for Stream {
    fn feed(&mut self, event: &Value) -> Result<(), ParseError> {
        if event.as_str().is_some_and(|s| s.trim() == "[DONE]") {
            return Ok(());
        }
        let Some(chunk) = event.as_object() else {
            return Err(ParseError::new(
                TARGET,
                "a stream chunk is not a JSON object",
            ));
        };
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message");
            return Err(ParseError::new(
                TARGET,
                format!("the stream reported an error: {message}"),
            ));
        }
        let choices = match chunk.get("choices") {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(choices)) => choices,
            Some(_) => {
                return Err(ParseError::new(
                    TARGET,
                    "`choices` in a stream chunk is not a list",
                ));
            }
        };
        for (position, choice) in choices.iter().enumerate() {
            let choice_index = choice
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64);
            let fragments = match choice.pointer("/delta/tool_calls") {
                None | Some(Value::Null) => continue,
                Some(Value::Array(fragments)) => fragments,
                Some(_) => {
                    return Err(ParseError::new(
                        TARGET,
                        "`delta.tool_calls` in a stream chunk is not a list",
                    ));
                }
            };
            for fragment in fragments {
                self.merge(choice_index, fragment)?;
            }
        }
        Ok(())
    }

    fn finish(self: Box<Self>, reader: &CallReader) -> Vec<ParsedCall> {
        self.calls
            .into_values()
            .map(|call| {
                if call.custom {
                    custom_call(reader, &call.id, &call.name)
                } else if call.name.is_empty() {
                    ParsedCall {
                        id: call.id,
                        name: String::new(),
                        arguments: json!({}),
                        invalid: Some(
                            "the tool call arrived without a name; call the tool again".to_owned(),
                        ),
                    }
                } else {
                    read_call(
                        reader,
                        &call.id,
                        &call.name,
                        RawArguments::Text(&call.arguments),
                    )
                }
            })
            .collect()
    }
}

impl Stream {
    fn merge(&mut self, choice: u64, fragment: &Value) -> Result<(), ParseError> {
        if !fragment.is_object() {
            return Err(ParseError::new(
                TARGET,
                "a `delta.tool_calls` entry is not an object",
            ));
        }
        let id = fragment
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let index = match fragment.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            // Servers that leave out `index` (it is required): a new id starts a new call,
            // anything else continues the last one.
            None => {
                let last = self
                    .calls
                    .range((choice, 0)..=(choice, u64::MAX))
                    .next_back()
                    .map(|(k, c)| (k.1, c.id.clone()));
                match last {
                    Some((index, last_id)) if id.is_empty() || id == last_id => index,
                    Some((index, _)) => index.checked_add(1).ok_or_else(|| {
                        ParseError::new(
                            TARGET,
                            format!("a tool call without `index` follows one at index {index}, the largest there is; give every tool call its `index`"),
                        )
                    })?,
                    None => 0,
                }
            }
        };
        let call = self.calls.entry((choice, index)).or_default();
        // The id comes once; some servers repeat it on every fragment.
        if !id.is_empty() && call.id != id {
            call.id.push_str(id);
        }
        if fragment.get("type").and_then(Value::as_str) == Some("custom") {
            call.custom = true;
        }
        let function = fragment.get("function").or_else(|| fragment.get("custom"));
        // Names are concatenated like arguments; a fragment repeating the whole name
        // (as some compatible servers send it on every fragment) is not appended again.
        if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str)
            && call.name != name
        {
            call.name.push_str(name);
        }
        match function.and_then(|f| f.get("arguments").or_else(|| f.get("input"))) {
            Some(Value::String(text)) => call.arguments.push_str(text),
            Some(Value::Null) | None => {}
            Some(value) => call.arguments.push_str(&value.to_string()),
        }
        Ok(())
    }
}

pub(super) fn result_message(call: &ParsedCall, result: &ToolResult) -> Value {
    json!({"role": "tool", "tool_call_id": call.id, "content": result.text()})
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::wire::{HostedTool, RenderOptions, render, stream_parser};
    use crate::{Effect, ToolSource};
    use proptest::prelude::*;

    /// A small catalog covering what the transforms care about: a dotted name, an
    /// optional field, an enum, an open map, a nested object, an array of objects.
    pub(crate) fn catalog() -> Vec<ToolDescriptor> {
        let spec = || ToolSource::Spec {
            file: "tools.yaml".to_owned(),
        };
        vec![
            ToolDescriptor::new(
                "github.create_issue",
                "Open an issue in a GitHub repository.",
                json!({"type": "object", "properties": {
                    "repo": {"type": "string", "description": "owner/name", "pattern": "^[\\w.-]+/[\\w.-]+$"},
                    "title": {"type": "string", "maxLength": 80},
                    "body": {"type": "string", "description": "Markdown body"},
                    "labels": {"type": "array", "items": {"type": "string"}}
                }, "required": ["repo", "title"]}),
                Effect::Write,
                spec(),
            ),
            ToolDescriptor::new(
                "weather",
                "Current weather for a city.",
                json!({"type": "object", "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}
                }, "required": ["city"]}),
                Effect::Read,
                spec(),
            ),
            ToolDescriptor::new(
                "tag_resource",
                "Set tags on a resource.",
                json!({"type": "object", "properties": {
                    "id": {"type": "string"},
                    "tags": {"type": "object", "additionalProperties": {"type": "string"}}
                }, "required": ["id", "tags"]}),
                Effect::Idempotent,
                spec(),
            ),
            ToolDescriptor::new(
                "calendar.schedule",
                "Schedule a meeting.",
                json!({"type": "object", "properties": {
                    "when": {"type": "object", "properties": {
                        "start": {"type": "string", "format": "date-time"},
                        "minutes": {"type": "integer", "minimum": 5}
                    }, "required": ["start"]},
                    "attendees": {"type": "array", "items": {"type": "object", "properties": {
                        "email": {"type": "string", "format": "email"},
                        "optional": {"type": "boolean"}
                    }, "required": ["email"]}}
                }, "required": ["when", "attendees"]}),
                Effect::External,
                spec(),
            ),
        ]
    }

    pub(crate) fn hosted() -> Vec<HostedTool> {
        serde_json::from_value(json!([
            {"type": "web_search", "options": {"search_context_size": "low"}},
            {"type": "web_extractor"},
            {"type": "code_interpreter"},
            {"type": "file_search", "vector_store_ids": ["vs_123"], "max_num_results": 8},
            {"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.deepwiki.com/sse",
             "server_description": "Docs of public repositories", "headers": {"Authorization": "Bearer t"},
             "allowed_tools": ["ask_question"], "require_approval": "never"}
        ]))
        .unwrap()
    }

    /// Everything a render produced, for a snapshot.
    pub(crate) fn snapshot_of(out: &Rendered) -> Value {
        let optionals: BTreeMap<&String, &Vec<Vec<String>>> =
            out.reader.nullable_optionals.iter().collect();
        json!({"tools": out.tools, "changes": out.changes, "problems": out.problems, "nullable_optionals": optionals})
    }

    fn rendered(strict: bool) -> Rendered {
        render(
            TARGET,
            &catalog(),
            &hosted(),
            RenderOptions {
                strict,
                json_schema: false,
            },
        )
    }

    #[test]
    fn the_catalog_renders_as_chat_completions_tools() {
        insta::assert_json_snapshot!(snapshot_of(&rendered(false)));
    }

    #[test]
    fn the_catalog_renders_as_strict_chat_completions_tools() {
        insta::assert_json_snapshot!(snapshot_of(&rendered(true)));
    }

    #[test]
    fn a_strict_render_falls_back_per_tool_and_says_why() {
        let out = rendered(true);
        let strict: Vec<bool> = out
            .tools
            .iter()
            .map(|t| t["function"]["strict"] == json!(true))
            .collect();
        assert_eq!(strict, [true, true, false, true]);
        assert!(out.changes.iter().any(|n| {
            n.tool.as_deref() == Some("tag_resource")
                && n.message
                    .starts_with("declared without strict mode: `/properties/tags` is an open map")
        }));
        assert!(out.problems.is_empty(), "{:?}", out.problems);
    }

    #[test]
    fn hosted_tools_are_left_out_with_a_note_not_a_problem() {
        let out = rendered(false);
        assert_eq!(out.tools.len(), 4);
        let left_out: Vec<&str> = out
            .changes
            .iter()
            .filter(|n| n.message.contains("left out"))
            .filter_map(|n| n.tool.as_deref())
            .collect();
        assert_eq!(
            left_out,
            [
                "web_search",
                "web_extractor",
                "code_interpreter",
                "file_search",
                "mcp"
            ]
        );
    }

    #[test]
    fn a_root_that_is_not_an_object_is_a_problem() {
        let tool = ToolDescriptor::new(
            "echo",
            "Echo",
            json!({"type": "string"}),
            Effect::Read,
            ToolSource::Builtin,
        );
        let out = render(TARGET, &[tool], &[], RenderOptions::default());
        assert_eq!(
            out.problems[0].message,
            "the parameters must be `type: object`, not `type: \"string\"`"
        );
    }

    fn response(calls: Value) -> Value {
        json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-5",
               "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null,
                            "message": {"role": "assistant", "content": null, "refusal": null, "tool_calls": calls}}]})
    }

    #[test]
    fn calls_in_a_response_come_back_under_canonical_names_with_optionals_restored() {
        let out = rendered(true);
        let calls = parse_response(
            &response(json!([
                {"id": "call_1", "type": "function", "function": {"name": "github_create_issue",
                 "arguments": "{\"repo\":\"a/b\",\"title\":\"Crash\",\"body\":null,\"labels\":null}"}},
                {"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\",\"unit\":null}"}}
            ])),
            &out.reader,
        )
        .unwrap();
        assert_eq!(calls[0].name, "github.create_issue");
        assert_eq!(calls[0].arguments, json!({"repo": "a/b", "title": "Crash"}));
        assert_eq!(calls[1].arguments, json!({"city": "Paris"}));
        assert!(calls.iter().all(ParsedCall::is_valid));
    }

    #[test]
    fn a_response_without_tool_calls_has_no_calls() {
        let reply = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}]});
        assert_eq!(
            parse_response(&reply, &rendered(false).reader).unwrap(),
            vec![]
        );
    }

    #[test]
    fn bad_arguments_and_unknown_tools_are_invalid_calls() {
        let reader = rendered(false).reader;
        let calls = parse_response(
            &response(json!([
                {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Par"}},
                {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": "[\"Paris\"]"}},
                {"id": "c3", "type": "function", "function": {"name": "rm_rf", "arguments": "{}"}},
                {"id": "c4", "type": "custom", "custom": {"name": "weather", "input": "Paris"}}
            ])),
            &reader,
        )
        .unwrap();
        let messages: Vec<&str> = calls
            .iter()
            .map(|c| c.invalid.as_deref().unwrap_or(""))
            .collect();
        assert!(messages[0].starts_with("the arguments for `weather` are not valid JSON"));
        assert_eq!(
            messages[1],
            "the arguments for `weather` must be a JSON object, not an array"
        );
        assert!(messages[2].starts_with("there is no tool named `rm_rf`"));
        assert_eq!(
            messages[3],
            "`weather` is a function: call it with JSON arguments, not as a custom tool with free text"
        );
    }

    #[test]
    fn a_response_missing_what_the_api_always_sends_is_a_parse_error() {
        let reader = rendered(false).reader;
        assert!(parse_response(&json!({"object": "chat.completion"}), &reader).is_err());
        assert!(parse_response(&json!({"choices": [{"index": 0}]}), &reader).is_err());
        let err = parse_response(
            &response(json!([{"type": "function", "function": {"name": "weather"}}])),
            &reader,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "openai-chat: `choices[0].message.tool_calls[0]` has no `id`"
        );
    }

    fn chunk(delta: Value) -> Value {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-5",
               "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    }

    /// Two parallel calls as the API streams them: the first fragment of each carries
    /// id and name, the rest only argument text, and one chunk holds fragments of both.
    pub(crate) fn parallel_chunks() -> Vec<Value> {
        vec![
            chunk(json!({"role": "assistant", "content": null})),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "weather", "arguments": ""}}]}),
            ),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"ci"}}]})),
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "github_create_issue", "arguments": ""}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "function": {"arguments": "{\"repo\":\"a/b\","}}, {"index": 0, "function": {"arguments": "ty\":\"Oslo\"}"}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "function": {"arguments": "\"title\":\"x\"}"}}]}),
            ),
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-5",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-5", "choices": [],
                   "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}),
            json!("[DONE]"),
        ]
    }

    fn replay(chunks: &[Value], reader: &CallReader) -> Vec<ParsedCall> {
        let mut stream = stream_parser(TARGET);
        for c in chunks {
            stream.feed(c).unwrap();
        }
        stream.finish(reader)
    }

    #[test]
    fn streamed_fragments_are_merged_by_index_not_position() {
        let calls = replay(&parallel_chunks(), &rendered(false).reader);
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("call_a", "weather")
        );
        assert_eq!(calls[0].arguments, json!({"city": "Oslo"}));
        assert_eq!(
            (calls[1].id.as_str(), calls[1].name.as_str()),
            ("call_b", "github.create_issue")
        );
        assert_eq!(calls[1].arguments, json!({"repo": "a/b", "title": "x"}));
    }

    #[test]
    fn calls_of_several_choices_are_kept_apart() {
        let two = |i: u64, id: &str, args: &str| json!({"choices": [{"index": i, "delta": {"tool_calls": [{"index": 0, "id": id, "function": {"name": "weather", "arguments": args}}]}}]});
        let calls = replay(
            &[
                two(1, "c1", "{\"city\":\"B\"}"),
                two(0, "c0", "{\"city\":\"A\"}"),
            ],
            &rendered(false).reader,
        );
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c0", "c1"]);
        assert_eq!(calls[1].arguments, json!({"city": "B"}));
    }

    #[test]
    fn a_stream_cut_short_gives_invalid_calls() {
        let reader = rendered(false).reader;
        let calls = replay(&parallel_chunks()[..3], &reader);
        assert!(
            calls[0]
                .invalid
                .as_deref()
                .unwrap()
                .contains("not valid JSON")
        );
        let nameless = replay(
            &[chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
            )],
            &reader,
        );
        assert_eq!(
            nameless[0].invalid.as_deref(),
            Some("the tool call arrived without a name; call the tool again")
        );
    }

    #[test]
    fn a_server_that_repeats_id_and_name_or_leaves_out_index_is_understood() {
        let calls = replay(
            &[
                chunk(
                    json!({"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":"}}]}),
                ),
                chunk(
                    json!({"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "\"Rome\"}"}}]}),
                ),
                chunk(
                    json!({"tool_calls": [{"id": "c2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Nice\"}"}}]}),
                ),
            ],
            &rendered(false).reader,
        );
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("c1", "weather")
        );
        assert_eq!(calls[0].arguments, json!({"city": "Rome"}));
        assert_eq!(calls[1].arguments, json!({"city": "Nice"}));
    }

    #[test]
    fn the_largest_index_is_a_parse_error_not_a_wrap() {
        let mut stream = stream_parser(TARGET);
        let max = u64::MAX;
        stream
            .feed(&chunk(json!({"tool_calls": [{"index": max, "id": "c1", "function": {"name": "weather", "arguments": "{}"}}]})))
            .unwrap();
        let err = stream
            .feed(&chunk(json!({"tool_calls": [{"id": "c2", "function": {"name": "weather", "arguments": "{}"}}]})))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("follows one at index 18446744073709551615"),
            "{err}"
        );
        // The call at the largest index itself is kept.
        let calls = stream.finish(&rendered(false).reader);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].id, "c1");
    }

    #[test]
    fn a_stream_error_or_a_chunk_of_the_wrong_shape_is_a_parse_error() {
        let mut stream = stream_parser(TARGET);
        assert!(
            stream
                .feed(&json!({"error": {"message": "overloaded"}}))
                .unwrap_err()
                .to_string()
                .contains("overloaded")
        );
        assert!(stream.feed(&json!([1, 2])).is_err());
        assert!(
            stream
                .feed(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [7]}}]}))
                .is_err()
        );
    }

    #[test]
    fn results_go_back_as_tool_messages() {
        let call = ParsedCall {
            id: "call_1".to_owned(),
            name: "weather".to_owned(),
            arguments: json!({}),
            invalid: None,
        };
        assert_eq!(
            result_message(&call, &ToolResult::ok(json!({"temp": 21}))),
            json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\":21}"})
        );
        assert_eq!(
            result_message(&call, &ToolResult::error("city not found")),
            json!({"role": "tool", "tool_call_id": "call_1", "content": "city not found"})
        );
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            // Indexes from outside: the extremes must not wrap or index out of bounds.
            prop_oneof![Just(u64::MAX), Just(u64::MAX - 1), any::<u64>()].prop_map(|n| json!(n)),
            Just(json!(i64::MIN)),
            Just(json!(1e300)),
            prop_oneof![
                Just("index"),
                Just("function"),
                Just("name"),
                Just("{\"a\""),
                Just("weather"),
                Just("")
            ]
            .prop_map(|s| json!(s)),
        ];
        leaf.prop_recursive(5, 48, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec(
                    (
                        prop_oneof![
                            Just("choices"),
                            Just("message"),
                            Just("delta"),
                            Just("tool_calls"),
                            Just("index"),
                            Just("id"),
                            Just("type"),
                            Just("function"),
                            Just("name"),
                            Just("arguments"),
                            Just("custom")
                        ],
                        inner
                    ),
                    0..5
                )
                .prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                )),
            ]
        })
    }

    proptest! {
        #[test]
        fn no_input_makes_the_parsers_panic(values in proptest::collection::vec(any_json(), 1..6)) {
            let reader = CallReader::new(NameMap::build(["weather"], &Target::OpenAiChat.name_rules()));
            for v in &values {
                let _ = parse_response(v, &reader);
            }
            let mut stream = stream_parser(TARGET);
            for v in &values {
                let _ = stream.feed(v);
            }
            let _ = stream.finish(&reader);
        }
    }
}
