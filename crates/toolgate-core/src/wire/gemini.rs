//! Gemini API (AI Studio) and Vertex AI: `functionDeclarations`, `functionCall` parts
//! (whole, streamed, and Vertex's streamed `partialArgs`), and `functionResponse` parts.
//!
//! All function declarations go in one `Tool`; hosted tools follow as Tools of their
//! own (`googleSearch`, `codeExecution`, and on the Gemini API `fileSearch`). Input
//! schemas go out as `parameters` in the OpenAPI subset (see `openapi.rs`), or as
//! `parametersJsonSchema` unchanged when full JSON Schema is asked for; output schemas
//! likewise as `response` / `responseJsonSchema`. Background tools are declared
//! `behavior: NON_BLOCKING` on the Gemini API; for Vertex the field is stripped.
//!
//! The API may leave a call's `id` out. Calls without one get a deterministic id,
//! `toolgate_call_<n>` (`n` counts the calls of the response or stream from 0), so
//! results can still be correlated; [`result_message`] does not send such an id back.

use indexmap::IndexMap;
use serde_json::{Map, Value, json};

use super::openapi::{escape, is_empty_object, to_openapi};
use super::{
    CallReader, HostedTool, NameMap, Note, ParseError, ParsedCall, RawArguments, RenderInput,
    Rendered, StreamParser, Target, ToolResult, read_call,
};
use crate::{Scheduling, ToolDescriptor};

/// The prefix of ids made up for calls the API sent without one.
const SYNTHETIC_ID: &str = "toolgate_call_";
/// Function declarations per request: the Gemini API's `Tool` documents 512, Vertex 128.
const MAX_DECLARATIONS_GEMINI: usize = 512;
const MAX_DECLARATIONS_VERTEX: usize = 128;
/// Options of Gemini's `googleSearch` a spec's `web_search` may carry (camelCase on the wire).
const GOOGLE_SEARCH_OPTIONS: &[&str] = &[
    "searchTypes",
    "blockingConfidence",
    "excludeDomains",
    "timeRangeFilter",
];

pub(super) fn render(input: &RenderInput<'_>, names: &NameMap, out: &mut Rendered) {
    let target = out.target;
    let mut declarations = Vec::new();
    let mut seen: IndexMap<&str, usize> = IndexMap::new();
    for tool in input.tools {
        *seen.entry(tool.name.as_str()).or_default() += 1;
        let wire = names.wire(&tool.name).unwrap_or(&tool.name);
        let mut declaration = Map::new();
        declaration.insert("name".into(), json!(wire));
        if !tool.description.is_empty() {
            declaration.insert("description".into(), json!(tool.description));
        }
        if tool.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            out.problems.push(Note::at(
                &tool.name,
                "/type",
                "the parameters must describe an object (`type: object` at the root)",
            ));
        }
        if input.options.json_schema {
            declaration.insert("parametersJsonSchema".into(), tool.input_schema.clone());
        } else if let Some(parameters) = parameters(tool, out) {
            declaration.insert("parameters".into(), parameters);
        }
        if let Some(output) = &tool.output_schema {
            if input.options.json_schema {
                declaration.insert("responseJsonSchema".into(), output.clone());
            } else if let Some(response) = response(&tool.name, output, out) {
                declaration.insert("response".into(), response);
            }
        }
        if tool.background.is_some() {
            if target == Target::Vertex {
                out.changes.push(Note::tool(
                    &tool.name,
                    "`behavior: NON_BLOCKING` stripped for Vertex: the tool is declared as an ordinary (blocking) function",
                ));
            } else {
                declaration.insert("behavior".into(), json!("NON_BLOCKING"));
            }
        }
        declarations.push(Value::Object(declaration));
    }
    for (name, count) in seen {
        if count > 1 {
            out.problems.push(Note::tool(
                name,
                format!("declared {count} times; function names must be unique"),
            ));
        }
    }
    let limit = if target == Target::Vertex {
        MAX_DECLARATIONS_VERTEX
    } else {
        MAX_DECLARATIONS_GEMINI
    };
    if declarations.len() > limit {
        out.problems.push(Note::request(format!(
            "{} function declarations; {target} takes at most {limit} per request",
            declarations.len()
        )));
    }
    if !declarations.is_empty() {
        out.tools
            .push(json!({"functionDeclarations": declarations}));
    }
    for hosted in input.hosted {
        if let Some(tool) = hosted_tool(target, hosted, out) {
            out.tools.push(tool);
        }
    }
}

/// A tool's `parameters` in the OpenAPI subset, or `None` for a function without any.
fn parameters(tool: &ToolDescriptor, out: &mut Rendered) -> Option<Value> {
    let converted = to_openapi(&tool.input_schema);
    out.changes.extend(
        converted
            .changes
            .into_iter()
            .map(|(path, message)| Note::at(&tool.name, path, message)),
    );
    out.problems.extend(
        converted
            .problems
            .into_iter()
            .map(|(path, message)| Note::at(&tool.name, path, message)),
    );
    if let Some(properties) = converted
        .schema
        .get("properties")
        .and_then(Value::as_object)
    {
        for name in properties.keys() {
            if !is_parameter_name(name) {
                out.problems.push(Note::at(
                    &tool.name,
                    format!("/properties/{}", escape(name)),
                    "parameter names must start with a letter or `_` and hold only letters, digits and `_` (at most 64)",
                ));
            }
        }
    }
    (!is_empty_object(&converted.schema)).then_some(converted.schema)
}

/// `[A-Za-z_][A-Za-z0-9_]{0,63}`, the parameter names the API documents.
fn is_parameter_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 64
}

/// A tool's `response` in the OpenAPI subset. It is optional, so an output schema the
/// subset cannot carry is left out (with the reason) rather than breaking the request.
fn response(tool: &str, output: &Value, out: &mut Rendered) -> Option<Value> {
    let converted = to_openapi(output);
    if let Some((path, message)) = converted.problems.into_iter().next() {
        out.changes.push(Note::at(
            tool,
            path,
            format!("output schema left out of `response`: {message}"),
        ));
        return None;
    }
    if is_empty_object(&converted.schema) {
        out.changes.push(Note::tool(
            tool,
            "output schema left out of `response`: an object without declared properties",
        ));
        return None;
    }
    out.changes.extend(
        converted
            .changes
            .into_iter()
            .map(|(path, message)| Note::at(tool, path, format!("output schema: {message}"))),
    );
    Some(converted.schema)
}

/// A hosted tool as a Gemini `Tool`, or `None` (with a note) when the target has none.
fn hosted_tool(target: Target, hosted: &HostedTool, out: &mut Rendered) -> Option<Value> {
    let kind = hosted.kind();
    match hosted {
        HostedTool::WebSearch { options } => {
            let mut search = Map::new();
            for (key, value) in options {
                let camel = camel_case(key);
                if GOOGLE_SEARCH_OPTIONS.contains(&camel.as_str()) {
                    search.insert(camel, value.clone());
                } else {
                    out.changes.push(Note::at(
                        kind,
                        format!("/options/{}", escape(key)),
                        format!("`{key}` is not an option of Google Search grounding; dropped"),
                    ));
                }
            }
            Some(json!({"googleSearch": search}))
        }
        HostedTool::CodeInterpreter { container } => {
            if container.is_some() {
                out.changes.push(Note::at(
                    kind,
                    "/container",
                    "`container` dropped: Gemini's code execution has no containers",
                ));
            }
            Some(json!({"codeExecution": {}}))
        }
        HostedTool::FileSearch {
            vector_store_ids,
            max_num_results,
        } => {
            if target == Target::Vertex {
                out.changes.push(Note::tool(
                    kind,
                    "left out: Vertex refuses `fileSearch` (on Vertex, retrieval goes through RAG Engine's `retrieval` tool)",
                ));
                return None;
            }
            if vector_store_ids.is_empty() {
                out.problems.push(Note::at(
                    kind,
                    "/vector_store_ids",
                    "file search needs at least one file search store name",
                ));
            }
            let mut search = Map::new();
            search.insert("fileSearchStoreNames".into(), json!(vector_store_ids));
            if let Some(n) = max_num_results {
                search.insert("topK".into(), json!(n));
            }
            Some(json!({"fileSearch": search}))
        }
        HostedTool::Mcp { server_label, .. } => {
            out.changes.push(Note::tool(
                kind,
                format!(
                    "MCP server `{server_label}` left out: {target} has no documented remote-MCP tool for generateContent (the SDK's `mcpServers` field is Gemini API only and not in its REST reference)"
                ),
            ));
            None
        }
        HostedTool::WebExtractor {} => {
            out.changes.push(Note::tool(kind, "left out: Gemini has no page extractor (its `urlContext` tool, the nearest, reads URLs given in the prompt)"));
            None
        }
        HostedTool::WebSearchImage {} | HostedTool::ImageSearch {} => {
            out.changes.push(Note::tool(
                kind,
                format!("left out: {target} has no such built-in tool"),
            ));
            None
        }
    }
}

/// `snake_case` → `camelCase`; camelCase stays as it is.
fn camel_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The calls in a `GenerateContentResponse`: the `functionCall` parts of its first
/// candidate, in order (other candidates are alternatives, not further calls).
pub(super) fn parse_response(
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
pub(super) struct Stream {
    assembler: Assembler,
}

impl Stream {
    pub(super) fn new(target: Target) -> Self {
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
}

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
        if let Err(reason) = set_at(args, &segments, value, append) {
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
/// creating objects and arrays on the way.
fn set_at(
    root: &mut Value,
    segments: &[Segment],
    value: Value,
    append: bool,
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

/// The `functionResponse` part for `call` (it goes in the next `user` turn's `parts`).
/// A made-up id is not sent back; background tools carry their `scheduling`.
pub(super) fn result_message(
    call: &ParsedCall,
    wire_name: &str,
    result: &ToolResult,
    descriptor: Option<&ToolDescriptor>,
) -> Value {
    let mut response = Map::new();
    if !call.id.is_empty() && !call.id.starts_with(SYNTHETIC_ID) {
        response.insert("id".into(), json!(call.id));
    }
    response.insert("name".into(), json!(wire_name));
    let body = if result.is_error {
        json!({"error": result.text()})
    } else {
        json!({"output": result.content})
    };
    response.insert("response".into(), body);
    if let Some(scheduling) = descriptor.and_then(|d| d.background) {
        let scheduling = match scheduling {
            Scheduling::Interrupt => "INTERRUPT",
            Scheduling::WhenIdle => "WHEN_IDLE",
            Scheduling::Silent => "SILENT",
        };
        response.insert("scheduling".into(), json!(scheduling));
    }
    json!({"functionResponse": response})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::anthropic::tests::{catalog, hosted};
    use crate::wire::{RenderOptions, render, stream_parser};
    use crate::{Effect, ToolSource};

    fn rendered(target: Target, json_schema: bool) -> Rendered {
        render(
            target,
            &catalog(),
            &hosted(),
            RenderOptions {
                strict: false,
                json_schema,
            },
        )
    }

    fn snapshot_of(out: &Rendered) -> Value {
        json!({"tools": out.tools, "changes": out.changes, "problems": out.problems})
    }

    fn reader() -> CallReader {
        rendered(Target::Gemini, false).reader
    }

    #[test]
    fn the_catalog_renders_as_gemini_function_declarations() {
        insta::assert_json_snapshot!(snapshot_of(&rendered(Target::Gemini, false)));
    }

    #[test]
    fn the_catalog_renders_as_gemini_function_declarations_with_json_schema() {
        insta::assert_json_snapshot!(snapshot_of(&rendered(Target::Gemini, true)));
    }

    #[test]
    fn the_catalog_renders_as_vertex_function_declarations() {
        insta::assert_json_snapshot!(snapshot_of(&rendered(Target::Vertex, false)));
    }

    #[test]
    fn vertex_strips_behavior_and_leaves_file_search_out() {
        let out = rendered(Target::Vertex, false);
        let declarations = out.tools[0]["functionDeclarations"].as_array().unwrap();
        assert!(declarations.iter().all(|d| d.get("behavior").is_none()));
        assert!(out.tools.iter().all(|t| t.get("fileSearch").is_none()));
        let gemini = rendered(Target::Gemini, false);
        let report = gemini.tools[0]["functionDeclarations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == "report.build")
            .unwrap();
        assert_eq!(report["behavior"], "NON_BLOCKING");
    }

    #[test]
    fn dotted_names_fit_gemini_as_they_are() {
        let out = rendered(Target::Gemini, false);
        assert_eq!(
            out.tools[0]["functionDeclarations"][0]["name"],
            "github.create_issue"
        );
        assert_eq!(
            out.reader.names.canonical("github.create_issue"),
            Some("github.create_issue")
        );
    }

    #[test]
    fn parameter_names_outside_the_documented_set_are_a_problem() {
        let schema = json!({"type": "object", "properties": {"api-key": {"type": "string"}}});
        let tools = vec![ToolDescriptor::new(
            "login",
            "Log in.",
            schema,
            Effect::Read,
            ToolSource::Builtin,
        )];
        let out = render(Target::Gemini, &tools, &[], RenderOptions::default());
        assert_eq!(out.problems.len(), 1);
        assert_eq!(out.problems[0].path, "/properties/api-key");
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

    fn stream(target: Target, events: &[Value]) -> Result<Vec<ParsedCall>, ParseError> {
        let mut parser = stream_parser(target);
        for event in events {
            parser.feed(event)?;
        }
        Ok(parser.finish(&reader()))
    }

    fn chunk(parts: Value) -> Value {
        json!({"candidates": [{"content": {"role": "model", "parts": parts}}]})
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

    #[test]
    fn results_are_function_response_parts() {
        let catalog = catalog();
        let report = catalog.iter().find(|t| t.name == "report.build");
        let call = ParsedCall {
            id: "fc_1".into(),
            name: "report.build".into(),
            arguments: json!({}),
            invalid: None,
        };
        assert_eq!(
            result_message(
                &call,
                "report.build",
                &ToolResult::ok(json!({"rows": 3})),
                report
            ),
            json!({"functionResponse": {"id": "fc_1", "name": "report.build", "response": {"output": {"rows": 3}}, "scheduling": "WHEN_IDLE"}})
        );
        let made_up = ParsedCall {
            id: "toolgate_call_0".into(),
            name: "ping".into(),
            arguments: json!({}),
            invalid: None,
        };
        assert_eq!(
            result_message(&made_up, "ping", &ToolResult::error("down"), None),
            json!({"functionResponse": {"name": "ping", "response": {"error": "down"}}})
        );
    }
}
