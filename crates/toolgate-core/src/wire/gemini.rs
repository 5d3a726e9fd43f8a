//! Gemini API (AI Studio) and Vertex AI: `functionDeclarations`, `functionCall` parts
//! (whole, streamed, and Vertex's streamed `partialArgs`), and `functionResponse` parts.
//!
//! All function declarations go in one `Tool`; hosted tools follow as Tools of their
//! own (`googleSearch`, `codeExecution`, and on the Gemini API `fileSearch`). Input
//! schemas go out as `parameters` in the OpenAPI subset (see `openapi/`), or as
//! `parametersJsonSchema` unchanged when full JSON Schema is asked for; output schemas
//! likewise as `response` / `responseJsonSchema`. Property names in `parameters` and
//! `response` that the API refuses are renamed (see `params.rs`); calls are read back
//! and results sent under the right names. Background tools are declared
//! `behavior: NON_BLOCKING` on the Gemini API; for Vertex the field is stripped.
//! Reading calls back lives in `gemini/calls.rs`.
//!
//! The API may leave a call's `id` out. Calls without one get a deterministic id,
//! `toolgate_call_<n>` (`n` counts the calls of the response or stream from 0), so
//! results can still be correlated; [`result_message`] does not send such an id back.

use indexmap::IndexMap;
use serde_json::{Map, Value, json};

mod calls;

pub(super) use calls::{Stream, parse_response};

use super::openapi::{is_empty_object, to_openapi};
use super::params::{GEMINI_PARAMETER, ParamNames, map_schema};
use super::pointer::escape;
use super::{
    CallReader, HostedTool, NameMap, Note, ParsedCall, RenderInput, Rendered, Target, ToolResult,
};
use crate::{Scheduling, ToolDescriptor};

/// The prefix of ids made up for calls the API sent without one.
const SYNTHETIC_ID: &str = "toolgate_call_";
/// Function declarations per request: the Gemini API refuses more than 512 ("At most
/// 512 function declarations can be specified"); Vertex's `Tool` documents 128.
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
            "{} function declarations; {target} takes at most {limit} per request: defer the rest \
             (`render --defer` declares only the `always_loaded` tools and `search_tools`, which finds the others), \
             or split the catalog across requests (by tags, say)",
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
/// Property names the API refuses are renamed, at every level; the reader maps them back.
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
    let mut schema = converted.schema;
    if let Some(names) = rename_properties(&tool.name, &mut schema, Side::Parameters, out) {
        out.reader.parameters.insert(tool.name.clone(), names);
    }
    (!is_empty_object(&schema)).then_some(schema)
}

/// Which schema a property is renamed in.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Parameters,
    Output,
}

/// Renames the properties of a rendered schema that break the API's parameter-name
/// rule, noting each; the map, when anything was renamed.
fn rename_properties(
    tool: &str,
    schema: &mut Value,
    side: Side,
    out: &mut Rendered,
) -> Option<ParamNames> {
    let (names, renamed) = map_schema(schema, &GEMINI_PARAMETER);
    for r in &renamed {
        let (what, then) = match side {
            Side::Parameters => (
                "parameter",
                format!("calls are read back under `{}`", r.original),
            ),
            Side::Output => (
                "output property",
                format!("results are sent under `{}`", r.wire),
            ),
        };
        out.changes.push(Note::at(
            tool,
            r.path.clone(),
            format!(
                "{what} `{}` renamed to `{}` to fit the API's names (`[A-Za-z_][A-Za-z0-9_]{{0,63}}`); {then}",
                r.original, r.wire
            ),
        ));
    }
    (!names.is_identity()).then_some(names)
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
    let mut schema = converted.schema;
    if let Some(names) = rename_properties(tool, &mut schema, Side::Output, out) {
        out.reader.results.insert(tool.to_owned(), names);
    }
    Some(schema)
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

/// The `functionResponse` part for `call` (it goes in the next `user` turn's `parts`).
/// A made-up id is not sent back; background tools carry their `scheduling`.
/// An output whose schema was declared with renamed properties goes under those names.
pub(super) fn result_message(
    call: &ParsedCall,
    reader: &CallReader,
    result: &ToolResult,
    descriptor: Option<&ToolDescriptor>,
) -> Value {
    let wire_name = reader.names.wire(&call.name).unwrap_or(&call.name);
    let mut response = Map::new();
    if !call.id.is_empty() && !call.id.starts_with(SYNTHETIC_ID) {
        response.insert("id".into(), json!(call.id));
    }
    response.insert("name".into(), json!(wire_name));
    let body = if result.is_error {
        json!({"error": result.text()})
    } else {
        let mut output = result.content.clone();
        if let Some(names) = reader.results.get(&call.name) {
            names.to_wire(&mut output);
        }
        json!({"output": output})
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

    pub(super) fn reader() -> CallReader {
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

    /// A tool whose parameter names Gemini refuses, at the root and nested, with an
    /// output schema of the same kind.
    fn spanish_tool() -> ToolDescriptor {
        let schema = json!({
            "type": "object",
            "properties": {
                "año": {"type": "integer"},
                "größe": {"type": "string"},
                "api-key": {"type": "string"},
                "2fa": {"type": "boolean"},
                "dirección": {
                    "type": "object",
                    "properties": {"código postal": {"type": "string"}, "calle": {"type": "string"}},
                    "required": ["código postal"]
                },
                "líneas": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"precio.unit": {"type": "number"}}
                }}
            },
            "required": ["año", "dirección"]
        });
        let mut tool = ToolDescriptor::new(
            "pedidos.crear",
            "Crea un pedido.",
            schema,
            Effect::Write,
            ToolSource::Builtin,
        );
        tool.output_schema = Some(json!({
            "type": "object",
            "properties": {"número": {"type": "string"}, "total": {"type": "number"}}
        }));
        tool
    }

    #[test]
    fn parameter_names_the_api_refuses_are_renamed_at_every_level() {
        for target in [Target::Gemini, Target::Vertex] {
            let out = render(target, &[spanish_tool()], &[], RenderOptions::default());
            assert_eq!(out.problems, Vec::new(), "{target}");
            if target == Target::Gemini {
                insta::assert_json_snapshot!(snapshot_of(&out));
            }
        }
    }

    #[test]
    fn renamed_parameters_are_read_back_under_their_own_names() {
        let out = render(
            Target::Gemini,
            &[spanish_tool()],
            &[],
            RenderOptions::default(),
        );
        let response = json!({"candidates": [{"content": {"parts": [{"functionCall": {
            "name": "pedidos.crear",
            "args": {"ano": 2024, "grosse": "L", "api_key": "k", "_2fa": true,
                     "direccion": {"codigo_postal": "28001", "calle": "Mayor"},
                     "lineas": [{"precio_unit": 1.5}]}
        }}]}}]});
        let calls = parse_response(Target::Gemini, &response, &out.reader).unwrap();
        assert_eq!(
            calls[0].arguments,
            json!({"año": 2024, "größe": "L", "api-key": "k", "2fa": true,
                   "dirección": {"código postal": "28001", "calle": "Mayor"},
                   "líneas": [{"precio.unit": 1.5}]})
        );
        // Vertex's streamed partial arguments name the wire names in their paths.
        let out = render(
            Target::Vertex,
            &[spanish_tool()],
            &[],
            RenderOptions::default(),
        );
        let mut parser = stream_parser(Target::Vertex);
        parser
            .feed(&chunk(
                json!([{"functionCall": {"name": "pedidos.crear", "partialArgs": [
                    {"jsonPath": "$.ano", "numberValue": 2024},
                    {"jsonPath": "$.direccion.codigo_postal", "stringValue": "28001"}
                ]}}]),
            ))
            .unwrap();
        let calls = parser.finish(&out.reader);
        assert_eq!(
            calls[0].arguments,
            json!({"año": 2024, "dirección": {"código postal": "28001"}})
        );
        // A result goes back under the names its declared `response` schema uses.
        let message = crate::wire::result_message(
            Target::Gemini,
            &calls[0],
            &ToolResult::ok(json!({"número": "P-1", "total": 3})),
            &out.reader,
            None,
        );
        assert_eq!(
            message["functionResponse"]["response"]["output"],
            json!({"numero": "P-1", "total": 3})
        );
    }

    /// One streamed `GenerateContentResponse` carrying `parts`.
    pub(super) fn chunk(parts: Value) -> Value {
        json!({"candidates": [{"content": {"role": "model", "parts": parts}}]})
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
        let reader = reader();
        assert_eq!(
            result_message(&call, &reader, &ToolResult::ok(json!({"rows": 3})), report),
            json!({"functionResponse": {"id": "fc_1", "name": "report.build", "response": {"output": {"rows": 3}}, "scheduling": "WHEN_IDLE"}})
        );
        let made_up = ParsedCall {
            id: "toolgate_call_0".into(),
            name: "ping".into(),
            arguments: json!({}),
            invalid: None,
        };
        assert_eq!(
            result_message(&made_up, &reader, &ToolResult::error("down"), None),
            json!({"functionResponse": {"name": "ping", "response": {"error": "down"}}})
        );
    }
}
