//! The BFCL function corpus (`tests/data/bfcl/functions.jsonl`, Apache-2.0, see its
//! NOTICE.md) checked end to end: every function imports, makes a valid spec file,
//! and renders for every target — strict and not, JSON Schema and not — with no
//! problem, names the API accepts, and schemas the API can read.
//!
//! Each render is one request of at most [`REQUEST_SIZE`] tools, the most OpenAI
//! (128 functions) and Vertex (128 declarations) accept in one request.

use std::collections::HashSet;
use std::sync::OnceLock;

use serde_json::Value;
use toolgate_core::spec::{self, SpecFile, ToolSpec};
use toolgate_core::wire::{self, ImportFormat, NameMap, RenderOptions, Target};
use toolgate_core::{ToolDescriptor, ToolSource};

/// The functions in the corpus, one a line.
const CORPUS_FUNCTIONS: usize = 1674;
/// The most tools one request holds.
const REQUEST_SIZE: usize = 128;
const CORPUS: &str = include_str!("../../../tests/data/bfcl/functions.jsonl");

fn imported() -> &'static wire::Imported {
    static IMPORTED: OnceLock<wire::Imported> = OnceLock::new();
    IMPORTED.get_or_init(|| {
        wire::import_tools(ImportFormat::Bfcl, CORPUS).expect("the corpus is JSON Lines")
    })
}

/// What `toolgate render -f <imported spec>` renders: a descriptor per spec tool.
fn descriptor(spec: &ToolSpec) -> ToolDescriptor {
    let mut d = ToolDescriptor::new(
        spec.name.clone(),
        spec.description.clone(),
        spec.input_schema(),
        spec.effect(),
        ToolSource::Spec {
            file: "tests/data/bfcl/functions.jsonl".into(),
        },
    );
    d.title = spec.title.clone();
    d.output_schema = spec.returns.clone();
    d.input_examples = spec.examples.clone();
    d.background = spec.background_scheduling();
    d
}

fn descriptors() -> &'static [ToolDescriptor] {
    static DESCRIPTORS: OnceLock<Vec<ToolDescriptor>> = OnceLock::new();
    DESCRIPTORS.get_or_init(|| imported().tools.iter().map(descriptor).collect())
}

fn is_valid_json_schema(schema: &Value) -> Result<(), String> {
    let meta = jsonschema::draft202012::meta::validator();
    let errors: Vec<String> = meta
        .iter_errors(schema)
        .map(|e| format!("{}: {e}", e.instance_path().as_str()))
        .collect();
    if !errors.is_empty() {
        return Err(errors.join("; "));
    }
    jsonschema::draft202012::new(schema)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn every_function_of_the_corpus_imports() {
    let lines = CORPUS.lines().filter(|l| !l.trim().is_empty()).count();
    assert_eq!(lines, CORPUS_FUNCTIONS);
    let imported = imported();
    assert_eq!(imported.tools.len(), CORPUS_FUNCTIONS);
    let dropped: Vec<_> = imported
        .notes
        .iter()
        .filter(|n| n.message.starts_with("not imported"))
        .collect();
    assert!(dropped.is_empty(), "{dropped:?}");
    let mut names = HashSet::new();
    for tool in &imported.tools {
        assert!(
            toolgate_core::validate_name(&tool.name).is_ok(),
            "{}",
            tool.name
        );
        assert!(
            names.insert(tool.name.as_str()),
            "`{}` imported twice",
            tool.name
        );
        let parameters = tool
            .parameters
            .as_ref()
            .expect("every BFCL function has parameters");
        assert_eq!(parameters["type"], "object", "{}", tool.name);
        if let Err(e) = is_valid_json_schema(parameters) {
            panic!("{}: parameters: {e}", tool.name);
        }
        if let Some(returns) = &tool.returns
            && let Err(e) = is_valid_json_schema(returns)
        {
            panic!("{}: returns: {e}", tool.name);
        }
    }
}

#[test]
fn the_imported_corpus_is_a_spec_file_that_passes_the_check() {
    let file = SpecFile {
        tools: imported().tools.clone(),
        ..SpecFile::default()
    };
    let text = serde_json::to_string_pretty(&file).unwrap();
    let checked = spec::check(&text);
    let errors: Vec<_> = checked
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .take(10)
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(checked.is_ok());
    assert_eq!(checked.spec.map(|s| s.tools.len()), Some(CORPUS_FUNCTIONS));
}

#[test]
fn every_target_maps_the_whole_corpus_to_distinct_names_it_accepts() {
    let names: Vec<&str> = imported().tools.iter().map(|t| t.name.as_str()).collect();
    for target in Target::ALL {
        let rules = target.name_rules();
        let map = NameMap::build(names.iter().copied(), &rules);
        let mut seen = HashSet::new();
        for name in &names {
            let wire = map.wire(name).unwrap();
            assert!(rules.accepts(wire), "{target}: `{wire}`");
            assert!(seen.insert(wire), "{target}: `{wire}` used twice");
            assert_eq!(map.canonical(wire), Some(*name), "{target}");
        }
    }
}

/// One rendered function: its wire name and its parameters schema.
struct Function<'a> {
    name: Option<&'a str>,
    parameters: Option<&'a Value>,
}

fn function<'a>(target: Target, tool: &'a Value, parameters: &str) -> Function<'a> {
    let holder = if target == Target::OpenAiChat {
        &tool["function"]
    } else {
        tool
    };
    Function {
        name: holder["name"].as_str(),
        parameters: holder.get(parameters),
    }
}

/// The functions of a rendered request, or why they cannot be read.
fn functions(
    target: Target,
    tools: &[Value],
    json_schema: bool,
) -> Result<Vec<Function<'_>>, String> {
    match target {
        Target::OpenAiChat | Target::OpenAiResponses | Target::Qwen => Ok(tools
            .iter()
            .map(|t| function(target, t, "parameters"))
            .collect()),
        Target::Anthropic => Ok(tools
            .iter()
            .map(|t| function(target, t, "input_schema"))
            .collect()),
        Target::Mcp => Ok(tools
            .iter()
            .map(|t| function(target, t, "inputSchema"))
            .collect()),
        Target::Gemini | Target::Vertex => {
            let [tool] = tools else {
                return Err(format!(
                    "expected one Tool holding every declaration, got {} tools",
                    tools.len()
                ));
            };
            let declarations = tool["functionDeclarations"]
                .as_array()
                .ok_or("the Tool has no `functionDeclarations`")?;
            let parameters = if json_schema {
                "parametersJsonSchema"
            } else {
                "parameters"
            };
            Ok(declarations
                .iter()
                .map(|d| function(target, d, parameters))
                .collect())
        }
    }
}

/// The fields of Gemini's `Schema` type (google-genai 3.6.1).
const GEMINI_SCHEMA_FIELDS: [&str; 25] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "properties",
    "required",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "example",
    "default",
    "anyOf",
    "propertyOrdering",
    "additionalProperties",
    "defs",
    "ref",
];
const GEMINI_TYPES: [&str; 8] = [
    "TYPE_UNSPECIFIED",
    "STRING",
    "NUMBER",
    "INTEGER",
    "BOOLEAN",
    "ARRAY",
    "OBJECT",
    "NULL",
];

/// Checks that `schema` uses only what Gemini's `Schema` type holds.
fn gemini_schema_errors(schema: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        errors.push(format!("{path}: a Schema is an object, not {schema}"));
        return;
    };
    for (key, value) in map {
        let at = format!("{path}/{key}");
        if !GEMINI_SCHEMA_FIELDS.contains(&key.as_str()) {
            errors.push(format!("{at}: not a Gemini Schema field"));
            continue;
        }
        match key.as_str() {
            "type"
                if !value
                    .as_str()
                    .is_some_and(|t| GEMINI_TYPES.contains(&t.to_ascii_uppercase().as_str())) =>
            {
                errors.push(format!("{at}: {value} is not a Gemini type"));
            }
            "enum" | "required" | "propertyOrdering"
                if !value
                    .as_array()
                    .is_some_and(|v| v.iter().all(Value::is_string)) =>
            {
                errors.push(format!("{at}: must be a list of strings"));
            }
            "items" => gemini_schema_errors(value, &at, errors),
            "additionalProperties" if !value.is_boolean() => {
                gemini_schema_errors(value, &at, errors)
            }
            "properties" | "defs" => match value.as_object() {
                Some(children) => {
                    for (name, child) in children {
                        gemini_schema_errors(child, &format!("{at}/{name}"), errors);
                    }
                }
                None => errors.push(format!("{at}: must be an object")),
            },
            "anyOf" => match value.as_array() {
                Some(branches) => {
                    for (i, branch) in branches.iter().enumerate() {
                        gemini_schema_errors(branch, &format!("{at}/{i}"), errors);
                    }
                }
                None => errors.push(format!("{at}: must be a list")),
            },
            _ => {}
        }
    }
}

/// Renders the corpus for `target` in every option, request by request, and lists
/// everything that breaks the target's rules.
fn render_errors(target: Target) -> Vec<String> {
    let rules = target.name_rules();
    let mut errors = Vec::new();
    for strict in [false, true] {
        for json_schema in [false, true] {
            let options = RenderOptions {
                strict,
                json_schema,
            };
            for (request, chunk) in descriptors().chunks(REQUEST_SIZE).enumerate() {
                let at =
                    format!("{target} strict={strict} json_schema={json_schema} request {request}");
                let rendered = wire::render(target, chunk, &[], options);
                for problem in &rendered.problems {
                    errors.push(format!("{at}: problem: {problem:?}"));
                }
                let functions = match functions(target, &rendered.tools, json_schema) {
                    Ok(functions) => functions,
                    Err(e) => {
                        errors.push(format!("{at}: {e}"));
                        continue;
                    }
                };
                if functions.len() != chunk.len() {
                    errors.push(format!(
                        "{at}: {} functions rendered for {} tools",
                        functions.len(),
                        chunk.len()
                    ));
                    continue;
                }
                let mut seen = HashSet::new();
                for (function, tool) in functions.iter().zip(chunk) {
                    let Some(name) = function.name else {
                        errors.push(format!("{at}: `{}` rendered without a name", tool.name));
                        continue;
                    };
                    if !rules.accepts(name) {
                        errors.push(format!("{at}: `{name}` breaks the name rules"));
                    }
                    if !seen.insert(name) {
                        errors.push(format!("{at}: `{name}` rendered twice"));
                    }
                    if rendered.reader.names.canonical(name) != Some(tool.name.as_str()) {
                        errors.push(format!(
                            "{at}: `{name}` does not map back to `{}`",
                            tool.name
                        ));
                    }
                    let Some(parameters) = function.parameters else {
                        // Leaving `parameters` out declares a function without arguments.
                        if takes_arguments(tool) {
                            errors.push(format!("{at}: `{name}` rendered without its parameters"));
                        }
                        continue;
                    };
                    let gemini_subset =
                        matches!(target, Target::Gemini | Target::Vertex) && !json_schema;
                    if gemini_subset {
                        let mut schema_errors = Vec::new();
                        gemini_schema_errors(parameters, "", &mut schema_errors);
                        errors.extend(
                            schema_errors
                                .into_iter()
                                .map(|e| format!("{at}: `{name}` parameters{e}")),
                        );
                    } else if let Err(e) = is_valid_json_schema(parameters) {
                        errors.push(format!(
                            "{at}: `{name}` parameters are not valid JSON Schema: {e}"
                        ));
                    }
                }
            }
        }
    }
    errors
}

fn takes_arguments(tool: &ToolDescriptor) -> bool {
    tool.input_schema["properties"]
        .as_object()
        .is_some_and(|p| !p.is_empty())
}

fn assert_renders(target: Target) {
    let errors = render_errors(target);
    let shown: Vec<&String> = errors
        .iter()
        .take(if std::env::var_os("BFCL_ALL").is_some() {
            usize::MAX
        } else {
            20
        })
        .collect();
    assert!(
        errors.is_empty(),
        "{} errors for {target}, the first ones:\n{shown:#?}",
        errors.len()
    );
}

#[test]
fn every_function_renders_for_openai_chat() {
    assert_renders(Target::OpenAiChat);
}

#[test]
fn every_function_renders_for_openai_responses() {
    assert_renders(Target::OpenAiResponses);
}

#[test]
fn every_function_renders_for_qwen() {
    assert_renders(Target::Qwen);
}

#[test]
fn every_function_renders_for_anthropic() {
    assert_renders(Target::Anthropic);
}

#[test]
fn every_function_renders_for_gemini() {
    assert_renders(Target::Gemini);
}

#[test]
fn every_function_renders_for_vertex() {
    assert_renders(Target::Vertex);
}

#[test]
fn every_function_renders_for_mcp() {
    assert_renders(Target::Mcp);
}

/// The dialect that reads back what `target` renders.
fn import_format(target: Target) -> ImportFormat {
    match target {
        Target::OpenAiChat => ImportFormat::OpenAiChat,
        Target::OpenAiResponses | Target::Qwen => ImportFormat::OpenAiResponses,
        Target::Anthropic => ImportFormat::Anthropic,
        Target::Gemini | Target::Vertex => ImportFormat::Gemini,
        Target::Mcp => ImportFormat::Mcp,
    }
}

#[test]
fn every_rendered_request_imports_back_under_its_wire_names() {
    let mut errors = Vec::new();
    for target in Target::ALL {
        for (strict, json_schema) in [(false, false), (true, false), (false, true)] {
            let options = RenderOptions {
                strict,
                json_schema,
            };
            for (request, chunk) in descriptors().chunks(REQUEST_SIZE).enumerate() {
                let at =
                    format!("{target} strict={strict} json_schema={json_schema} request {request}");
                let rendered = wire::render(target, chunk, &[], options);
                let text = serde_json::to_string(&rendered.tools).unwrap();
                let back = match wire::import_tools(import_format(target), &text) {
                    Ok(back) => back,
                    Err(e) => {
                        errors.push(format!("{at}: {e}"));
                        continue;
                    }
                };
                let wire_names: Vec<&str> = chunk
                    .iter()
                    .map(|t| rendered.reader.names.wire(&t.name).unwrap_or(&t.name))
                    .collect();
                let names: Vec<&str> = back.tools.iter().map(|t| t.name.as_str()).collect();
                if names != wire_names {
                    errors.push(format!(
                        "{at}: imported {} tools, not the {} rendered",
                        names.len(),
                        wire_names.len()
                    ));
                }
                for note in back
                    .notes
                    .iter()
                    .filter(|n| n.message.starts_with("not imported"))
                {
                    errors.push(format!("{at}: {note:?}"));
                }
            }
        }
    }
    let shown: Vec<&String> = errors.iter().take(20).collect();
    assert!(errors.is_empty(), "{} errors:\n{shown:#?}", errors.len());
}
