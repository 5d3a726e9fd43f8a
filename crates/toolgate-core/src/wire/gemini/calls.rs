//! Reading Gemini's and Vertex's calls: the `functionCall` parts of a whole
//! response, of a stream of them, and Vertex's streamed `partialArgs` (a value at a
//! JSON path, strings in pieces) assembled into arguments.

use serde_json::{Map, Value};

use super::SYNTHETIC_ID;
use crate::wire::{
    CallReader, ParseError, ParsedCall, RawArguments, StreamParser, Target, read_call,
};

/// The calls in a `GenerateContentResponse`: the `functionCall` parts of its first
/// candidate, in order (other candidates are alternatives, not further calls).
pub(in crate::wire) fn parse_response(
    target: Target,
    response: &Value,
    reader: &CallReader,
) -> Result<Vec<ParsedCall>, ParseError> {
    let mut assembler = Assembler::new(target);
    assembler.take(response)?;
    Ok(assembler.finish(reader))
}

/// Assembles calls from `streamGenerateContent`: each event is a whole
/// `GenerateContentResponse` (a JSON array of them is taken too). The Gemini API
/// sends each call whole; Vertex, asked to stream arguments, sends a call over several
/// chunks as `partialArgs` (JSON path + value) while `willContinue` is true.
pub(in crate::wire) struct Stream {
    assembler: Assembler,
}

impl Stream {
    pub(in crate::wire) fn new(target: Target) -> Self {
        Stream {
            assembler: Assembler::new(target),
        }
    }
}

impl StreamParser for Stream {
    fn feed(&mut self, event: &Value) -> Result<(), ParseError> {
        match event {
            Value::Array(chunks) => chunks
                .iter()
                .try_for_each(|chunk| self.assembler.take(chunk)),
            chunk => self.assembler.take(chunk),
        }
    }

    fn finish(self: Box<Self>, reader: &CallReader) -> Vec<ParsedCall> {
        self.assembler.finish(reader)
    }
}

struct Assembler {
    target: Target,
    calls: Vec<Pending>,
    /// The call that said `willContinue: true` and is still receiving parts.
    open: Option<usize>,
}

struct Pending {
    id: Option<String>,
    name: String,
    /// The arguments so far; a value that is not an object is kept to be reported.
    args: Option<Value>,
    /// The JSON path whose string value the last partial argument said would continue.
    continuing: Option<String>,
    /// Why the streamed arguments could not be assembled.
    broken: Option<String>,
    complete: bool,
    /// List items that partial arguments may still create (to reach an index, the
    /// items before it are filled with `null`): bounds what a stream can make a call
    /// allocate, however its indexes are spread over paths.
    room: usize,
}

/// List items the partial arguments of one call may create in all.
const MAX_CREATED_ITEMS: usize = 100_000;

impl Assembler {
    fn new(target: Target) -> Self {
        Assembler {
            target,
            calls: Vec::new(),
            open: None,
        }
    }

    fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError::new(self.target, message)
    }

    /// One `GenerateContentResponse`.
    fn take(&mut self, response: &Value) -> Result<(), ParseError> {
        let object = response
            .as_object()
            .ok_or_else(|| self.error("a response must be a JSON object"))?;
        if let Some(error) = object.get("error") {
            let detail = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message");
            return Err(self.error(format!("the API reported an error: {detail}")));
        }
        let Some(candidates) = object.get("candidates") else {
            return Ok(());
        };
        let candidates = candidates
            .as_array()
            .ok_or_else(|| self.error("`candidates` is not a list"))?;
        let Some(candidate) = candidates
            .iter()
            .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        else {
            return Ok(());
        };
        let Some(parts) = candidate
            .get("content")
            .and_then(|content| content.get("parts"))
        else {
            return Ok(());
        };
        let parts = parts
            .as_array()
            .ok_or_else(|| self.error("`content.parts` is not a list"))?;
        for part in parts {
            if let Some(call) = part.get("functionCall") {
                self.function_call(call)?;
            }
        }
        Ok(())
    }

    fn function_call(&mut self, call: &Value) -> Result<(), ParseError> {
        let call = call
            .as_object()
            .ok_or_else(|| self.error("a `functionCall` is not an object"))?;
        let name = call
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let continues = self.open.is_some_and(|i| {
            let open = &self.calls[i];
            name.is_none_or(|n| n == open.name)
                && id.is_none_or(|id| open.id.as_deref().is_none_or(|own| own == id))
        });
        let index = match (continues, self.open) {
            (true, Some(index)) => index,
            _ => {
                let name = name.ok_or_else(|| self.error("a `functionCall` has no `name`"))?;
                self.calls.push(Pending {
                    id: id.map(str::to_owned),
                    name: name.to_owned(),
                    args: None,
                    continuing: None,
                    broken: None,
                    complete: false,
                    room: MAX_CREATED_ITEMS,
                });
                self.calls.len() - 1
            }
        };
        let pending = &mut self.calls[index];
        if pending.id.is_none() {
            pending.id = id.map(str::to_owned);
        }
        match (call.get("args"), &mut pending.args) {
            (None | Some(Value::Null), _) => {}
            (Some(Value::Object(more)), Some(Value::Object(args))) => args.extend(more.clone()),
            (Some(args), slot) => *slot = Some(args.clone()),
        }
        if let Some(partials) = call.get("partialArgs") {
            let partials = partials
                .as_array()
                .ok_or_else(|| ParseError::new(self.target, "`partialArgs` is not a list"))?;
            for partial in partials {
                pending.apply(partial);
            }
        }
        let will_continue = call.get("willContinue").and_then(Value::as_bool) == Some(true);
        pending.complete = !will_continue;
        self.open = will_continue.then_some(index);
        Ok(())
    }

    fn finish(self, reader: &CallReader) -> Vec<ParsedCall> {
        self.calls
            .into_iter()
            .enumerate()
            .map(|(n, pending)| {
                let id = pending.id.unwrap_or_else(|| format!("{SYNTHETIC_ID}{n}"));
                let args = pending.args.unwrap_or(Value::Null);
                let mut call = read_call(reader, &id, &pending.name, RawArguments::Value(&args));
                let known = reader.names.canonical(&pending.name).is_some();
                if known && let Some(broken) = pending.broken {
                    call.invalid = Some(format!("the streamed arguments for `{}` could not be assembled: {broken}; send the call again", call.name));
                } else if known && !pending.complete {
                    call.invalid = Some(format!("the response ended before the arguments for `{}` were complete; send the call again", call.name));
                }
                call
            })
            .collect()
    }
}

impl Pending {
    /// One Vertex `PartialArg`: a value at a JSON path; string values may come in pieces.
    fn apply(&mut self, partial: &Value) {
        if self.broken.is_some() {
            return;
        }
        let Some(path) = partial.get("jsonPath").and_then(Value::as_str) else {
            self.broken = Some("a partial argument has no `jsonPath`".into());
            return;
        };
        let Some(segments) = parse_json_path(path) else {
            self.broken = Some(format!("the JSON path `{path}` is not a simple path"));
            return;
        };
        let value = if let Some(text) = partial.get("stringValue").and_then(Value::as_str) {
            Some(Value::String(text.to_owned()))
        } else if let Some(number) = partial.get("numberValue").filter(|v| v.is_number()) {
            Some(number.clone())
        } else if let Some(flag) = partial.get("boolValue").and_then(Value::as_bool) {
            Some(Value::Bool(flag))
        } else if partial.get("nullValue").is_some() {
            Some(Value::Null)
        } else {
            None
        };
        let append = self.continuing.as_deref() == Some(path);
        self.continuing = (partial.get("willContinue").and_then(Value::as_bool) == Some(true))
            .then(|| path.to_owned());
        let Some(value) = value else { return };
        let args = self.args.get_or_insert_with(|| Value::Object(Map::new()));
        if let Err(reason) = set_at(args, &segments, value, append, &mut self.room) {
            self.broken = Some(format!("{reason} at `{path}`"));
        }
    }
}

#[derive(Debug, PartialEq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// `$`, then `.name`, `[n]`, `['name']` or `["name"]` segments; `None` for anything else
/// (wildcards, filters, slices, recursive descent).
fn parse_json_path(path: &str) -> Option<Vec<Segment>> {
    let mut rest = path.strip_prefix('$')?;
    let mut segments = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty()
                || name == "*"
                || !name
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
            {
                return None;
            }
            segments.push(Segment::Key(name.to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let inner = &after[..end];
            let quoted = inner
                .strip_prefix('\'')
                .and_then(|s| s.strip_suffix('\''))
                .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
            match quoted {
                Some(name) if !name.contains(['\'', '"', '\\']) => {
                    segments.push(Segment::Key(name.to_owned()))
                }
                Some(_) => return None,
                None => segments.push(Segment::Index(
                    inner.parse().ok().filter(|n: &usize| *n < 100_000)?,
                )),
            }
            rest = &after[end + 1..];
        } else {
            return None;
        }
    }
    Some(segments)
}

/// Sets (or, for a continued string, appends) `value` at `segments` under `root`,
/// creating objects and arrays on the way, at most `room` list items in all.
fn set_at(
    root: &mut Value,
    segments: &[Segment],
    value: Value,
    append: bool,
    room: &mut usize,
) -> Result<(), String> {
    let mut node = root;
    for segment in segments {
        node = match segment {
            Segment::Key(key) => {
                if node.is_null() {
                    *node = Value::Object(Map::new());
                }
                let object = node
                    .as_object_mut()
                    .ok_or("a name inside a value that is not an object")?;
                object.entry(key.clone()).or_insert(Value::Null)
            }
            Segment::Index(i) => {
                if node.is_null() {
                    *node = Value::Array(Vec::new());
                }
                let array = node
                    .as_array_mut()
                    .ok_or("an index inside a value that is not a list")?;
                if array.len() <= *i {
                    let created = i + 1 - array.len();
                    if created > *room {
                        return Err(format!(
                            "list indexes that would make more than {MAX_CREATED_ITEMS} items"
                        ));
                    }
                    *room -= created;
                    array.resize(i + 1, Value::Null);
                }
                &mut array[*i]
            }
        };
    }
    match (node, value) {
        (Value::String(existing), Value::String(more)) if append => existing.push_str(&more),
        (node, value) => *node = value,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::gemini::tests::{chunk, reader};
    use crate::wire::stream_parser;
    use serde_json::json;

    fn stream(target: Target, events: &[Value]) -> Result<Vec<ParsedCall>, ParseError> {
        let mut parser = stream_parser(target);
        for event in events {
            parser.feed(event)?;
        }
        Ok(parser.finish(&reader()))
    }

    #[test]
    fn function_calls_are_read_back_with_ids_made_up_where_missing() {
        let response = json!({
            "candidates": [{
                "index": 0,
                "content": {"role": "model", "parts": [
                    {"text": "Let me check."},
                    {"functionCall": {"name": "github.create_issue", "args": {"title": "Crash", "kind": "issue"}}, "thoughtSignature": "c2ln"},
                    {"functionCall": {"id": "fc_9", "name": "ping", "args": {}}},
                    {"functionCall": {"name": "ping"}}
                ]},
                "finishReason": "STOP"
            }],
            "usageMetadata": {"promptTokenCount": 10}
        });
        let calls = parse_response(Target::Gemini, &response, &reader()).unwrap();
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["toolgate_call_0", "fc_9", "toolgate_call_2"]);
        assert_eq!(
            calls[0].arguments,
            json!({"title": "Crash", "kind": "issue"})
        );
        assert_eq!(calls[2].arguments, json!({}));
        assert!(calls.iter().all(ParsedCall::is_valid));
    }

    #[test]
    fn a_response_without_calls_has_none() {
        let reader = reader();
        for response in [
            json!({"promptFeedback": {"blockReason": "SAFETY"}}),
            json!({"candidates": []}),
            json!({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL"}]}),
            json!({"candidates": [{"content": {"role": "model"}}]}),
        ] {
            assert_eq!(
                parse_response(Target::Gemini, &response, &reader).unwrap(),
                Vec::new()
            );
        }
    }

    #[test]
    fn malformed_responses_are_errors_or_invalid_calls() {
        let reader = reader();
        for response in [
            json!([]),
            json!({"candidates": {}}),
            json!({"candidates": [{"content": {"parts": {}}}]}),
            json!({"candidates": [{"content": {"parts": [{"functionCall": "ping"}]}}]}),
            json!({"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]}),
            json!({"error": {"code": 400, "message": "Invalid JSON payload"}}),
        ] {
            assert!(
                parse_response(Target::Gemini, &response, &reader).is_err(),
                "{response}"
            );
        }
        let calls = parse_response(
            Target::Gemini,
            &json!({"candidates": [{"content": {"parts": [
                {"functionCall": {"name": "ping", "args": "{}"}},
                {"functionCall": {"name": "format_disk", "args": {}}}
            ]}}]}),
            &reader,
        )
        .unwrap();
        assert!(
            calls[0]
                .invalid
                .as_deref()
                .unwrap()
                .contains("must be a JSON object, not a string")
        );
        assert!(
            calls[1]
                .invalid
                .as_deref()
                .unwrap()
                .contains("there is no tool named `format_disk`")
        );
    }

    #[test]
    fn streamed_chunks_each_carry_whole_calls() {
        let calls = stream(
            Target::Gemini,
            &[
                chunk(json!([{"text": "Checking"}])),
                chunk(json!([{"functionCall": {"name": "ping", "args": {}}}])),
                json!([chunk(json!([{"functionCall": {"id": "b", "name": "report.build", "args": {"query": "q3"}}}])), {"usageMetadata": {}}]),
            ],
        )
        .unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("toolgate_call_0", "ping")
        );
        assert_eq!(calls[1].arguments, json!({"query": "q3"}));
    }

    #[test]
    fn vertex_partial_args_are_assembled_by_json_path() {
        let calls = stream(
            Target::Vertex,
            &[
                chunk(json!([{"functionCall": {"id": "c1", "name": "github.create_issue", "willContinue": true}}])),
                chunk(json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.title", "stringValue": "Crash on ", "willContinue": true}], "willContinue": true}}])),
                chunk(json!([{"functionCall": {"partialArgs": [
                    {"jsonPath": "$.title", "stringValue": "start"},
                    {"jsonPath": "$.labels[1]", "stringValue": "p1"},
                    {"jsonPath": "$.labels[0]", "stringValue": "bug"},
                    {"jsonPath": "$['kind']", "stringValue": "issue"},
                    {"jsonPath": "$.body", "nullValue": "NULL_VALUE"}
                ], "willContinue": true}}])),
                chunk(json!([{"functionCall": {"willContinue": false}}])),
            ],
        )
        .unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].id, "c1");
        assert_eq!(
            calls[0].arguments,
            json!({"title": "Crash on start", "labels": ["bug", "p1"], "kind": "issue", "body": null})
        );
        assert!(calls[0].is_valid());
    }

    #[test]
    fn partial_args_with_a_path_that_is_not_simple_make_the_call_invalid() {
        let calls = stream(
            Target::Vertex,
            &[chunk(json!([{"functionCall": {"name": "ping", "partialArgs": [{"jsonPath": "$..deep[*]", "numberValue": 1}]}}]))],
        )
        .unwrap();
        assert_eq!(
            calls[0].invalid.as_deref(),
            Some(
                "the streamed arguments for `ping` could not be assembled: the JSON path `$..deep[*]` is not a simple path; send the call again"
            )
        );
    }

    #[test]
    fn a_call_the_stream_left_open_is_invalid() {
        let calls = stream(
            Target::Vertex,
            &[chunk(json!([{"functionCall": {"name": "ping", "partialArgs": [{"jsonPath": "$.a", "boolValue": true}], "willContinue": true}}]))],
        )
        .unwrap();
        assert!(
            calls[0]
                .invalid
                .as_deref()
                .unwrap()
                .starts_with("the response ended before the arguments for `ping` were complete")
        );
    }

    #[test]
    fn malformed_stream_chunks_are_errors_not_panics() {
        for event in [
            json!("data"),
            json!({"candidates": 1}),
            json!([{"candidates": [{"content": {"parts": [{"functionCall": {}}]}}]}]),
            chunk(json!([{"functionCall": {"name": "ping", "partialArgs": {}}}])),
        ] {
            assert!(
                stream(Target::Vertex, std::slice::from_ref(&event)).is_err(),
                "{event}"
            );
        }
        // Shapes that are wrong inside the arguments give invalid calls instead.
        let calls = stream(
            Target::Vertex,
            &[chunk(
                json!([{"functionCall": {"name": "ping", "partialArgs": [
                    {"jsonPath": "$.a", "stringValue": "x"},
                    {"jsonPath": "$.a.b", "stringValue": "y"}
                ]}}]),
            )],
        )
        .unwrap();
        assert!(
            calls[0]
                .invalid
                .as_deref()
                .unwrap()
                .contains("a name inside a value that is not an object at `$.a.b`")
        );
        let calls = stream(
            Target::Vertex,
            &[chunk(
                json!([{"functionCall": {"name": "ping", "partialArgs": [{"stringValue": "x"}]}}]),
            )],
        )
        .unwrap();
        assert!(!calls[0].is_valid());
    }

    #[test]
    fn indexes_spread_over_many_paths_cannot_make_a_call_allocate_without_bound() {
        // Each index is below the per-index cap; together they would fill 100,000 items
        // a level, at every level of the path.
        let deep = format!("$.a{}", "[99999]".repeat(50));
        let calls = stream(
            Target::Vertex,
            &[chunk(
                json!([{"functionCall": {"name": "ping", "partialArgs": [
                    {"jsonPath": "$.b[99998]", "boolValue": true},
                    {"jsonPath": deep, "boolValue": true}
                ]}}]),
            )],
        )
        .unwrap();
        assert_eq!(
            calls[0].invalid.as_deref(),
            Some(
                format!("the streamed arguments for `ping` could not be assembled: list indexes that would make more than 100000 items at `{deep}`; send the call again").as_str()
            )
        );
    }

    #[test]
    fn json_paths_are_parsed_only_when_simple() {
        use Segment::{Index, Key};
        assert_eq!(parse_json_path("$"), Some(vec![]));
        assert_eq!(
            parse_json_path("$.a[2]['b c'][\"d\"].e_f"),
            Some(vec![
                Key("a".into()),
                Index(2),
                Key("b c".into()),
                Key("d".into()),
                Key("e_f".into())
            ])
        );
        for path in [
            "a.b",
            "$.",
            "$[*]",
            "$..a",
            "$[0:2]",
            "$[?(@.a)]",
            "$.a[",
            "$['a]",
            "$[99999999999]",
        ] {
            assert_eq!(parse_json_path(path), None, "{path}");
        }
    }
}
