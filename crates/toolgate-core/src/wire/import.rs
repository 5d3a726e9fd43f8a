//! Importing tool lists written for other APIs — and BFCL's function corpus — as
//! spec tools.
//!
//! Each dialect's list is found where its request bodies and listings keep it;
//! each entry becomes a [`ToolSpec`] and each schema becomes valid JSON Schema
//! 2020-12: pseudo-types (`dict`, `float`, `tuple`, `any`, Java and JavaScript type
//! names) take their JSON Schema names, Gemini's upper-case types and `nullable`
//! are rewritten, BFCL's `optional` marks, defaults of the wrong type and `required`
//! entries that name no property are fixed. Every change is a [`Note`]; what
//! cannot be made valid is dropped, with a note saying why. Names keep their
//! canonical form (dots allowed); a name that is not canonical is sanitized, and
//! a name met again gets a `_2`, `_3`... suffix, so every definition imports.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use indexmap::IndexMap;
use serde_json::{Map, Value, json};

use super::Note;
use crate::spec::ToolSpec;
use crate::{Annotations, Effect, MAX_NAME_LEN, ToolUsage};

/// A foreign tool-list dialect, named as on the command line (`--from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImportFormat {
    /// OpenAI Chat Completions `tools` (or the legacy `functions`).
    OpenAiChat,
    /// OpenAI Responses `tools`.
    OpenAiResponses,
    /// Anthropic Messages `tools`.
    Anthropic,
    /// Gemini `tools[].functionDeclarations`, or a list of declarations.
    Gemini,
    /// An MCP `tools/list` result.
    Mcp,
    /// BFCL function definitions: JSON Lines, one function a line, or a JSON array.
    Bfcl,
}

impl ImportFormat {
    pub const ALL: [ImportFormat; 6] = [
        ImportFormat::OpenAiChat,
        ImportFormat::OpenAiResponses,
        ImportFormat::Anthropic,
        ImportFormat::Gemini,
        ImportFormat::Mcp,
        ImportFormat::Bfcl,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ImportFormat::OpenAiChat => "openai-chat",
            ImportFormat::OpenAiResponses => "openai-responses",
            ImportFormat::Anthropic => "anthropic",
            ImportFormat::Gemini => "gemini",
            ImportFormat::Mcp => "mcp",
            ImportFormat::Bfcl => "bfcl",
        }
    }

    /// Where this dialect keeps its tools, for error messages.
    fn expected(self) -> &'static str {
        match self {
            ImportFormat::OpenAiChat => {
                "a JSON array of `{type: function, function: {...}}` tools, or a request body with `tools`"
            }
            ImportFormat::OpenAiResponses => {
                "a JSON array of `{type: function, name, parameters}` tools, or a request body with `tools`"
            }
            ImportFormat::Anthropic => {
                "a JSON array of `{name, input_schema}` tools, or a request body with `tools`"
            }
            ImportFormat::Gemini => {
                "a `[{functionDeclarations: [...]}]` list, a list of declarations, or a request body with `tools`"
            }
            ImportFormat::Mcp => {
                "a `tools/list` result `{tools: [...]}` (or the whole JSON-RPC response)"
            }
            ImportFormat::Bfcl => {
                "JSON Lines with one function a line, or a JSON array of functions"
            }
        }
    }
}

impl fmt::Display for ImportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--from` value that names no import format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown import format `{0}`: expected one of openai-chat, openai-responses, anthropic, gemini, mcp, bfcl"
)]
pub struct UnknownImportFormat(pub String);

impl FromStr for ImportFormat {
    type Err = UnknownImportFormat;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ImportFormat::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| UnknownImportFormat(s.to_owned()))
    }
}

/// The imported tools, and everything that was changed or left out on the way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Imported {
    pub tools: Vec<ToolSpec>,
    /// Notes name the imported tool; paths point into the spec tool (`/parameters/...`).
    pub notes: Vec<Note>,
}

/// Input that holds no tool list at all. (Tools that cannot be imported are
/// skipped with a note instead.)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    #[error(
        "the input is not JSON ({0}); give a JSON document, or JSON Lines with one tool a line"
    )]
    NotJson(String),
    #[error("line {line} is not JSON ({message}); in JSON Lines every line holds one whole tool")]
    BadLine { line: usize, message: String },
    #[error("no {format} tool list found: expected {expected}")]
    NoToolList {
        format: ImportFormat,
        expected: &'static str,
    },
}

/// Imports the tools of `text`, written in the `from` dialect.
///
/// ```
/// use toolgate_core::wire::{ImportFormat, import_tools};
/// let text = r#"{"name": "math.factorial", "description": "n!",
///     "parameters": {"type": "dict", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}"#;
/// let imported = import_tools(ImportFormat::Bfcl, text).unwrap();
/// assert_eq!(imported.tools[0].name, "math.factorial");
/// assert_eq!(imported.tools[0].parameters.as_ref().unwrap()["type"], "object");
/// ```
pub fn import_tools(from: ImportFormat, text: &str) -> Result<Imported, ImportError> {
    let document = parse_text(text)?;
    let mut notes = Vec::new();
    let entries = tool_entries(from, &document, &mut notes)?;
    let drafts: Vec<Draft> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| draft(from, i, e, &mut notes))
        .collect();
    let names = final_names(&drafts);
    let mut tools = Vec::with_capacity(drafts.len());
    let mut rewrites = Rewrites::default();
    for (draft, (name, name_notes)) in drafts.into_iter().zip(names) {
        let mut sink = Sink::new(&name, &mut rewrites);
        for message in name_notes.into_iter().chain(draft.notes.iter().cloned()) {
            sink.at("", message);
        }
        if let Some(tool) = build(draft, name.clone(), &mut sink) {
            tools.push(tool);
        }
        notes.extend(sink.finish());
    }
    notes.extend(rewrites.notes());
    if from != ImportFormat::Mcp && !tools.is_empty() {
        let count = match tools.len() {
            1 => "the imported tool has none, so it counts".to_owned(),
            n => format!("none of the {n} imported tools has one, so each counts"),
        };
        notes.push(Note::request(format!(
            "{from} tools declare no effect: {count} as `write` (the spec default); \
             add `effect:` (read, idempotent, write, execute, destructive or external) to say what it does"
        )));
    }
    Ok(Imported { tools, notes })
}

/// One JSON value, or several in a row (JSON Lines: one value a line) as an array.
fn parse_text(text: &str) -> Result<Value, ImportError> {
    let text = text.trim_start_matches('\u{feff}');
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let first = match values.next() {
        Some(Ok(value)) => value,
        Some(Err(e)) => return Err(ImportError::NotJson(e.to_string())),
        None => return Err(ImportError::NotJson("the input is empty".into())),
    };
    let rest = values
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ImportError::BadLine {
            line: e.line(),
            message: e.to_string(),
        })?;
    if rest.is_empty() {
        return Ok(first);
    }
    Ok(Value::Array(std::iter::once(first).chain(rest).collect()))
}

/// The entries that may be tools, wherever the dialect keeps them.
fn tool_entries<'v>(
    from: ImportFormat,
    document: &'v Value,
    notes: &mut Vec<Note>,
) -> Result<Vec<&'v Value>, ImportError> {
    let none = || ImportError::NoToolList {
        format: from,
        expected: from.expected(),
    };
    let gemini_tool = |o: &Map<String, Value>| declarations(o).is_some();
    let list: Vec<&Value> = match document {
        Value::Array(items) => items.iter().collect(),
        Value::Object(o) => {
            let tools = o
                .get("tools")
                .or_else(|| o.get("result").and_then(|r| r.get("tools")))
                .or_else(|| {
                    o.get("functions")
                        .filter(|_| from == ImportFormat::OpenAiChat)
                });
            match tools {
                Some(Value::Array(items)) => items.iter().collect(),
                Some(_) => return Err(none()),
                None if o.contains_key("name")
                    || (from == ImportFormat::Gemini && gemini_tool(o)) =>
                {
                    vec![document]
                }
                None => return Err(none()),
            }
        }
        _ => return Err(none()),
    };
    if from != ImportFormat::Gemini {
        return Ok(list);
    }
    // Gemini: a `Tool` holds `functionDeclarations`; other tools (search, code
    // execution) are the provider's and are left out.
    let mut out = Vec::new();
    for (i, entry) in list.into_iter().enumerate() {
        match entry.as_object() {
            Some(o) if let Some(list) = declarations(o) => out.extend(list),
            Some(o) if o.contains_key("name") => out.push(entry),
            _ => {
                let kind = entry
                    .as_object()
                    .and_then(|o| o.keys().next())
                    .map_or("?", String::as_str);
                notes.push(Note::request(format!(
                    "tools[{i}] (`{kind}`) holds no function declarations: skipped; declare provider tools under `hosted:`"
                )));
            }
        }
    }
    Ok(out)
}

fn declarations(tool: &Map<String, Value>) -> Option<&Vec<Value>> {
    tool.get("functionDeclarations")
        .or_else(|| tool.get("function_declarations"))
        .and_then(Value::as_array)
}

/// Which schema dialect a schema is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    JsonSchema,
    /// Gemini's `Schema`: the OpenAPI 3.0 subset, upper-case types, `nullable`.
    GeminiOpenApi,
}

/// One entry, read but not yet normalized.
struct Draft {
    name: String,
    title: Option<String>,
    description: Option<String>,
    parameters: Option<(Value, Dialect)>,
    returns: Option<(Value, Dialect)>,
    effect: Option<Effect>,
    background: bool,
    examples: Vec<Value>,
    /// Notes on the entry itself, attached once the name is final.
    notes: Vec<String>,
}

/// Reads entry `i`; `None` (with a note) for an entry that is not a function tool.
fn draft(from: ImportFormat, i: usize, entry: &Value, notes: &mut Vec<Note>) -> Option<Draft> {
    let mut skip = |message: String| {
        notes.push(Note::request(format!("tools[{i}]: {message}")));
        None
    };
    let Some(object) = entry.as_object() else {
        return skip("not an object: skipped".into());
    };
    let kind = object.get("type").and_then(Value::as_str);
    let function = match from {
        ImportFormat::OpenAiChat | ImportFormat::OpenAiResponses => match kind {
            Some("function") | None => object
                .get("function")
                .and_then(Value::as_object)
                .unwrap_or(object),
            Some(other) => {
                return skip(format!(
                    "`{other}` is not a function tool: skipped; declare provider tools under `hosted:`"
                ));
            }
        },
        ImportFormat::Anthropic => match kind {
            Some("custom") | None => object,
            Some(other) => {
                return skip(format!(
                    "`{other}` is one of Anthropic's own tools, not a custom tool: skipped"
                ));
            }
        },
        _ => object,
    };
    let Some(name) = function.get("name").and_then(Value::as_str) else {
        return skip("has no `name` string: skipped".into());
    };
    // `null` (as SDKs dump unset fields) counts as absent.
    let field = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| function.get(*k).filter(|v| !v.is_null()))
    };
    let mut draft = Draft {
        name: name.to_owned(),
        title: None,
        description: None,
        parameters: None,
        returns: None,
        effect: None,
        background: false,
        examples: Vec::new(),
        notes: Vec::new(),
    };
    match field(&["description"]) {
        Some(Value::String(d)) => draft.description = Some(d.clone()),
        Some(_) => draft
            .notes
            .push("`description` is not a string: left empty".into()),
        None => {}
    }
    let json = Dialect::JsonSchema;
    match from {
        ImportFormat::OpenAiChat | ImportFormat::OpenAiResponses => {
            draft.parameters = field(&["parameters"]).map(|s| (s.clone(), json));
        }
        ImportFormat::Anthropic => {
            draft.parameters = field(&["input_schema"]).map(|s| (s.clone(), json));
            if let Some(Value::Array(examples)) = field(&["input_examples"]) {
                draft.examples = examples.clone();
            }
        }
        ImportFormat::Gemini => {
            draft.parameters = field(&["parametersJsonSchema", "parameters_json_schema"])
                .map(|s| (s.clone(), json))
                .or_else(|| field(&["parameters"]).map(|s| (s.clone(), Dialect::GeminiOpenApi)));
            draft.returns = field(&["responseJsonSchema", "response_json_schema"])
                .map(|s| (s.clone(), json))
                .or_else(|| field(&["response"]).map(|s| (s.clone(), Dialect::GeminiOpenApi)));
            if field(&["behavior"]).and_then(Value::as_str) == Some("NON_BLOCKING") {
                draft.background = true;
                draft.notes.push(
                    "`behavior: NON_BLOCKING` imported as `background: true` (results arrive `when_idle` unless `scheduling:` says otherwise)"
                        .into(),
                );
            }
        }
        ImportFormat::Mcp => {
            draft.parameters = field(&["inputSchema"]).map(|s| (s.clone(), json));
            draft.returns = field(&["outputSchema"]).map(|s| (s.clone(), json));
            let annotations = field(&["annotations"]);
            draft.title = field(&["title"])
                .or_else(|| annotations.and_then(|a| a.get("title")))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let hints = match annotations.map(|a| serde_json::from_value::<Annotations>(a.clone()))
            {
                Some(Ok(hints)) => hints,
                Some(Err(_)) => {
                    draft.notes.push(
                        "`annotations` has hints that are not booleans: read as no hints".into(),
                    );
                    Annotations::default()
                }
                None => Annotations::default(),
            };
            let effect = Effect::from_annotations(&hints);
            if hints == Annotations::default() {
                draft.notes.push(format!(
                    "no annotation hints: imported as `effect: {effect}`, the most guarded reading (MCP's defaults)"
                ));
            }
            draft.effect = Some(effect);
        }
        ImportFormat::Bfcl => {
            draft.parameters = field(&["parameters"]).map(|s| (s.clone(), json));
            draft.returns = field(&["response"]).map(|s| (s.clone(), json));
        }
    }
    if field(&["strict"]).and_then(Value::as_bool) == Some(true) {
        draft.notes.push(
            "`strict: true` is not kept: ask for strict schemas when rendering (`--strict`)".into(),
        );
    }
    if let Err(why) = untrusted_text(&mut draft) {
        let name = crate::escape_for_terminal(&draft.name).into_owned();
        return skip(format!("`{name}` is skipped: {why}"));
    }
    Some(draft)
}

/// A foreign list is untrusted, and what it becomes is a spec file whose words a
/// model reads as the operator's: its description, title and every string of its
/// schemas are sanitized (see [`crate::sanitize_schema`]), with a note where that
/// changed something; a schema whose names or values would need it keeps the tool
/// out.
fn untrusted_text(draft: &mut Draft) -> Result<(), String> {
    // Whitespace is kept and nothing is cut: only what could attack a model changes.
    let options = crate::SanitizeOptions::for_output().with_max_chars(usize::MAX);
    for (field, text) in [
        ("description", &mut draft.description),
        ("title", &mut draft.title),
    ] {
        if let Some(text) = text {
            let clean = crate::sanitize_description(text, &options);
            if clean.text != *text {
                let changes = clean.changes.join(", ");
                draft.notes.push(format!(
                    "`{field}` held text a model must not be given: {changes}"
                ));
                *text = clean.text;
            }
        }
    }
    for (field, schema) in [
        ("parameters", &mut draft.parameters),
        ("returns", &mut draft.returns),
    ] {
        if let Some((schema, _)) = schema {
            let clean = crate::sanitize_schema(schema).map_err(|e| format!("`{field}`: {e}"))?;
            if clean != *schema {
                draft.notes.push(format!(
                    "`{field}`: descriptions or examples held text a model must not be given (control or invisible characters, template tokens, tool tags): sanitized"
                ));
                *schema = clean;
            }
        }
    }
    Ok(())
}

/// Canonical, unique names for every draft, in order, with a note for each change.
/// A name given in canonical form is kept by its first definition; sanitized names
/// and later definitions take a `_2`, `_3`... suffix where that name is taken.
fn final_names(drafts: &[Draft]) -> Vec<(String, Vec<String>)> {
    let sanitized: Vec<(String, Option<String>)> =
        drafts.iter().map(|d| sanitize_name(&d.name)).collect();
    let given: HashSet<&str> = sanitized.iter().map(|(n, _)| n.as_str()).collect();
    let mut used: HashSet<String> = HashSet::new();
    let keeps: Vec<bool> = sanitized
        .iter()
        .map(|(name, note)| note.is_none() && used.insert(name.clone()))
        .collect();
    let mut out = Vec::with_capacity(drafts.len());
    for ((name, note), keeps) in sanitized.iter().zip(keeps) {
        let mut notes: Vec<String> = note.iter().cloned().collect();
        if keeps {
            out.push((name.clone(), notes));
            continue;
        }
        let name = if used.contains(name) {
            let unique = (2usize..)
                .map(|k| with_suffix(name, k))
                .find(|c| !given.contains(c.as_str()) && !used.contains(c))
                .unwrap_or_else(|| name.clone());
            notes.push(format!(
                "another tool is named `{name}`: this definition is imported as `{unique}`"
            ));
            unique
        } else {
            name.clone()
        };
        used.insert(name.clone());
        out.push((name, notes));
    }
    out
}

/// `name` itself when canonical; otherwise runs of other characters become one `_`
/// and empty namespace parts go.
fn sanitize_name(name: &str) -> (String, Option<String>) {
    let Err(why) = crate::validate_name(name) else {
        return (name.to_owned(), None);
    };
    let mut out = String::new();
    for c in name.trim().chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') {
            c
        } else {
            '_'
        };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let mut out: String = out
        .split('.')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(".");
    out.truncate(MAX_NAME_LEN);
    let mut out = out.trim_end_matches('.').to_owned();
    if out.is_empty() {
        out = "tool".into();
    }
    let note = format!("{why}: imported as `{out}`");
    (out, Some(note))
}

fn with_suffix(name: &str, k: usize) -> String {
    let suffix = format!("_{k}");
    let stem = &name[..name.len().min(MAX_NAME_LEN - suffix.len())];
    format!("{}{suffix}", stem.trim_end_matches('.'))
}

/// The spec tool of a draft; `None` (with a note) when its arguments cannot be made
/// an object schema.
fn build(draft: Draft, name: String, sink: &mut Sink) -> Option<ToolSpec> {
    let description = draft.description.unwrap_or_else(|| {
        sink.at(
            "/description",
            "no description: left empty; the model picks tools by it, so add one".into(),
        );
        String::new()
    });
    let parameters = match draft.parameters {
        Some((mut schema, dialect)) => {
            Normalizer {
                dialect,
                sink: &mut *sink,
            }
            .schema(&mut schema, "/parameters");
            if let Err(why) = object_root(&mut schema, sink)
                .and_then(|()| make_valid(&mut schema, "/parameters", sink))
            {
                sink.at("", format!("not imported: {why}"));
                return None;
            }
            Some(schema)
        }
        None => None,
    };
    let returns = draft.returns.and_then(|(mut schema, dialect)| {
        Normalizer {
            dialect,
            sink: &mut *sink,
        }
        .schema(&mut schema, "/returns");
        match make_valid(&mut schema, "/returns", sink) {
            Ok(()) => Some(schema),
            Err(why) => {
                sink.at("/returns", format!("left out: {why}"));
                None
            }
        }
    });
    let examples = usable_examples(draft.examples, parameters.as_ref(), sink);
    Some(ToolSpec {
        name,
        title: draft.title,
        description,
        parameters,
        returns,
        response: None,
        set_state: Default::default(),
        save_response_as: None,
        http: None,
        mcp: None,
        background: draft.background,
        scheduling: None,
        effect: draft.effect,
        usage: ToolUsage::default(),
        examples,
        tags: Vec::new(),
        always_loaded: false,
        timeout: None,
    })
}

/// The examples that are objects matching `parameters`; the others are dropped.
fn usable_examples(
    examples: Vec<Value>,
    parameters: Option<&Value>,
    sink: &mut Sink,
) -> Vec<Value> {
    let validator = parameters.and_then(|p| jsonschema::draft202012::new(p).ok());
    let mut kept = Vec::new();
    for (i, example) in examples.into_iter().enumerate() {
        let fits = example.is_object() && validator.as_ref().is_none_or(|v| v.is_valid(&example));
        if fits {
            kept.push(example);
        } else {
            sink.at(
                &format!("/examples/{i}"),
                "dropped: the example does not match the parameters".into(),
            );
        }
    }
    kept
}

/// Makes the root of an arguments schema an object schema, or says why it cannot be.
fn object_root(schema: &mut Value, sink: &mut Sink) -> Result<(), String> {
    let at = "/parameters/type";
    match schema {
        Value::Bool(true) => {
            *schema = json!({"type": "object"});
            sink.at(
                at,
                "`true` (any value) written as `{type: object}`: tools take named arguments".into(),
            );
            Ok(())
        }
        Value::Object(map) => match map.get("type") {
            Some(Value::String(t)) if t == "object" => Ok(()),
            None => {
                let mut typed = Map::with_capacity(map.len() + 1);
                typed.insert("type".into(), "object".into());
                typed.extend(std::mem::take(map));
                *map = typed;
                sink.at(
                    at,
                    "no `type` at the root: set to `object`, as tools take named arguments".into(),
                );
                Ok(())
            }
            Some(Value::Array(types)) if types.iter().any(|t| t == "object") => {
                map.insert("type".into(), "object".into());
                sink.at(
                    at,
                    "the root may only be an object: other types removed".into(),
                );
                Ok(())
            }
            Some(other) => Err(format!(
                "the arguments must be an object schema (named arguments), not type {other}"
            )),
        },
        _ => Err("the arguments schema is not a JSON Schema object".into()),
    }
}

/// Schema keywords whose value is a map of names to schemas.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Schema keywords whose value is a schema.
const SCHEMA_VALUES: [&str; 12] = [
    "additionalProperties",
    "items",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
/// Schema keywords whose value is a list of schemas.
const SCHEMA_LISTS: [&str; 4] = ["prefixItems", "anyOf", "oneOf", "allOf"];
/// Keywords that bring in properties from elsewhere, so `required` may name them.
const COMPOSING: [&str; 9] = [
    "allOf",
    "anyOf",
    "oneOf",
    "$ref",
    "$dynamicRef",
    "if",
    "dependentSchemas",
    "patternProperties",
    "additionalProperties",
];
/// Gemini `Schema` fields written in snake_case by the Python SDK.
const GEMINI_SNAKE_CASE: [(&str, &str); 9] = [
    ("any_of", "anyOf"),
    ("min_items", "minItems"),
    ("max_items", "maxItems"),
    ("min_length", "minLength"),
    ("max_length", "maxLength"),
    ("min_properties", "minProperties"),
    ("max_properties", "maxProperties"),
    ("property_ordering", "propertyOrdering"),
    ("additional_properties", "additionalProperties"),
];
/// Counts that protobuf's JSON writes as strings (Gemini's int64 fields).
const COUNTS: [&str; 6] = [
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
];

/// What a type name in some dialect means in JSON Schema.
enum TypeName {
    Is(&'static str),
    /// Any value: no type constraint.
    Any,
    Unknown,
}

/// Reads BFCL's pseudo-types, Java and JavaScript names and Gemini's upper case.
fn type_name(name: &str) -> TypeName {
    match name.to_ascii_lowercase().as_str() {
        "object" | "dict" | "map" | "hashmap" | "treemap" | "linkedhashmap" | "hashtable"
        | "record" => TypeName::Is("object"),
        "array" | "list" | "arraylist" | "linkedlist" | "tuple" | "set" | "hashset" => {
            TypeName::Is("array")
        }
        "string" | "str" | "char" | "character" => TypeName::Is("string"),
        "integer" | "int" | "long" | "short" | "byte" | "bigint" | "biginteger" => {
            TypeName::Is("integer")
        }
        "number" | "float" | "double" | "decimal" | "bigdecimal" => TypeName::Is("number"),
        "boolean" | "bool" => TypeName::Is("boolean"),
        "null" | "none" => TypeName::Is("null"),
        "any" | "" | "type_unspecified" => TypeName::Any,
        _ => TypeName::Unknown,
    }
}

/// Rewrites one schema (and every schema inside it) into JSON Schema 2020-12.
struct Normalizer<'s, 'n> {
    dialect: Dialect,
    sink: &'s mut Sink<'n>,
}

impl Normalizer<'_, '_> {
    /// Normalizes `schema` at `path`; returns whether it carried an `optional: true`
    /// mark (BFCL), which its parent object reads.
    fn schema(&mut self, schema: &mut Value, path: &str) -> bool {
        if let Value::String(shorthand) = schema
            && let TypeName::Is(t) = type_name(shorthand)
        {
            let message = format!(
                "the type name `{shorthand}` where a schema belongs written `{{type: {t}}}`"
            );
            *schema = json!({"type": t});
            self.sink.at(path, message);
        }
        let Value::Object(map) = schema else {
            return false;
        };
        if self.dialect == Dialect::GeminiOpenApi {
            self.gemini_fields(map, path);
        }
        self.counts(map, path);
        self.types(map, path);
        self.nullable(map, path);
        self.tuple_items(map, path);
        let (marked_optional, optional_names) = self.optional_marks(map, path);
        let mut optional_properties = optional_names;
        for keyword in SCHEMA_MAPS {
            match map.get_mut(keyword) {
                Some(Value::Object(children)) => {
                    for (key, child) in children.iter_mut() {
                        let child_path = format!("{path}/{keyword}/{}", escape(key));
                        if self.schema(child, &child_path) && keyword == "properties" {
                            optional_properties.push(key.clone());
                        }
                    }
                }
                Some(_) => {
                    map.shift_remove(keyword);
                    self.sink.at(
                        &format!("{path}/{keyword}"),
                        format!("`{keyword}` is not an object: removed"),
                    );
                }
                None => {}
            }
        }
        for keyword in SCHEMA_VALUES {
            if let Some(child) = map.get_mut(keyword) {
                self.schema(child, &format!("{path}/{keyword}"));
            }
        }
        for keyword in SCHEMA_LISTS {
            if let Some(Value::Array(children)) = map.get_mut(keyword) {
                for (i, child) in children.iter_mut().enumerate() {
                    self.schema(child, &format!("{path}/{keyword}/{i}"));
                }
            }
        }
        self.required(map, path, &optional_properties);
        self.default_value(map, path);
        self.enum_values(map, path);
        marked_optional
    }

    /// Gemini's `Schema` spellings: snake_case fields, `ref`/`defs`, `example`,
    /// `propertyOrdering`, `format: enum`.
    fn gemini_fields(&mut self, map: &mut Map<String, Value>, path: &str) {
        for (snake, camel) in GEMINI_SNAKE_CASE {
            if let Some(value) = map.shift_remove(snake) {
                map.insert(camel.into(), value);
            }
        }
        if let Some(defs) = map.shift_remove("defs") {
            map.insert("$defs".into(), defs);
            self.sink
                .group(&format!("{path}/defs"), "`defs` written `$defs`".into());
        }
        if let Some(Value::String(target)) = map.shift_remove("ref") {
            let target = match target.strip_prefix("#/defs/") {
                Some(rest) => format!("#/$defs/{rest}"),
                None => target,
            };
            map.insert("$ref".into(), target.into());
            self.sink
                .group(&format!("{path}/ref"), "`ref` written `$ref`".into());
        }
        if let Some(example) = map.shift_remove("example") {
            map.insert("examples".into(), json!([example]));
            self.sink.group(
                &format!("{path}/example"),
                "`example` written `examples: [...]`".into(),
            );
        }
        if let Some(ordering) = map.shift_remove("propertyOrdering") {
            if let (Some(Value::Array(order)), Some(Value::Object(properties))) =
                (Some(&ordering), map.get_mut("properties"))
            {
                let mut ordered = Map::with_capacity(properties.len());
                for key in order.iter().filter_map(Value::as_str) {
                    if let Some(value) = properties.shift_remove(key) {
                        ordered.insert(key.to_owned(), value);
                    }
                }
                ordered.extend(std::mem::take(properties));
                *properties = ordered;
            }
            self.sink.group(
                &format!("{path}/propertyOrdering"),
                "`propertyOrdering` removed: the properties are kept in that order".into(),
            );
        }
        if map.get("format").is_some_and(|f| f == "enum") {
            map.shift_remove("format");
            self.sink.group(
                &format!("{path}/format"),
                "`format: enum` removed: `enum` says it".into(),
            );
        }
    }

    /// Counts written as strings (protobuf int64) become numbers.
    fn counts(&mut self, map: &mut Map<String, Value>, path: &str) {
        for keyword in COUNTS {
            if let Some(Value::String(text)) = map.get(keyword)
                && let Ok(n) = text.trim().parse::<u64>()
            {
                map.insert(keyword.into(), n.into());
                self.sink.group(
                    &format!("{path}/{keyword}"),
                    format!("`{keyword}` written as a number"),
                );
            }
        }
    }

    fn types(&mut self, map: &mut Map<String, Value>, path: &str) {
        let at = format!("{path}/type");
        let Some(given) = map.get("type").cloned() else {
            return;
        };
        let names: Vec<&Value> = match &given {
            Value::Array(names) => names.iter().collect(),
            one => vec![one],
        };
        let mut types: Vec<&'static str> = Vec::new();
        for name in names {
            let Some(text) = name.as_str() else {
                map.shift_remove("type");
                self.sink.at(
                    &at,
                    format!("`type` {name} is not a type name: removed, so any value is accepted"),
                );
                return;
            };
            match type_name(text) {
                TypeName::Is(canonical) => {
                    if text != canonical {
                        self.sink
                            .group(&at, format!("type `{text}` written `{canonical}`"));
                    }
                    if !types.contains(&canonical) {
                        types.push(canonical);
                    }
                }
                TypeName::Any => {
                    map.shift_remove("type");
                    let message = match text {
                        "" => "an empty type means any value: `type` removed".to_owned(),
                        _ => format!("type `{text}` means any value: `type` removed"),
                    };
                    self.sink.group(&at, message);
                    return;
                }
                TypeName::Unknown => {
                    map.shift_remove("type");
                    self.sink.at(
                        &at,
                        format!("unknown type `{text}`: `type` removed, so any value is accepted"),
                    );
                    return;
                }
            }
        }
        let normalized = match (&given, types.as_slice()) {
            (Value::Array(_), _) => json!(types),
            (_, [one]) => json!(one),
            _ => json!(types),
        };
        map.insert("type".into(), normalized);
    }

    /// OpenAPI's `nullable: true` becomes `null` among the types (and the enum).
    fn nullable(&mut self, map: &mut Map<String, Value>, path: &str) {
        let Some(nullable) = map.shift_remove("nullable") else {
            return;
        };
        let at = format!("{path}/nullable");
        if nullable != Value::Bool(true) {
            self.sink.group(
                &at,
                "`nullable: false` removed: JSON Schema types exclude `null` already".into(),
            );
            return;
        }
        match map.get_mut("type") {
            Some(Value::String(t)) if t != "null" => {
                let t = std::mem::take(t);
                map.insert("type".into(), json!([t, "null"]));
            }
            Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
                types.push("null".into())
            }
            _ => {}
        }
        if let Some(Value::Array(values)) = map.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
        self.sink
            .group(&at, "`nullable: true` written as a `null` type".into());
    }

    /// Draft 4 tuples (`items: [...]`) become `prefixItems`.
    fn tuple_items(&mut self, map: &mut Map<String, Value>, path: &str) {
        if !map.get("items").is_some_and(Value::is_array) {
            return;
        }
        if let Some(items) = map.shift_remove("items") {
            map.insert("prefixItems".into(), items);
        }
        if let Some(rest) = map.shift_remove("additionalItems") {
            map.insert("items".into(), rest);
        }
        self.sink.at(
            &format!("{path}/items"),
            "a list of `items` (a tuple) written as `prefixItems`".into(),
        );
    }

    /// BFCL's `optional`: `true` on a property, or a list of names on an object.
    /// Returns (this schema is marked optional, the properties it lists).
    fn optional_marks(&mut self, map: &mut Map<String, Value>, path: &str) -> (bool, Vec<String>) {
        let Some(mark) = map.shift_remove("optional") else {
            return (false, Vec::new());
        };
        self.sink.group(
            &format!("{path}/optional"),
            "`optional` removed: it is not JSON Schema, where a property is optional when `required` leaves it out"
                .into(),
        );
        match mark {
            Value::Bool(b) => (b, Vec::new()),
            Value::String(s) => (
                matches!(s.to_ascii_lowercase().as_str(), "true" | "yes"),
                Vec::new(),
            ),
            Value::Array(names) => (
                false,
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
            ),
            _ => (false, Vec::new()),
        }
    }

    /// `required` as JSON Schema wants it: unique names of declared properties,
    /// none marked optional.
    fn required(&mut self, map: &mut Map<String, Value>, path: &str, optional: &[String]) {
        let at = format!("{path}/required");
        let Some(required) = map.get("required") else {
            return;
        };
        let Value::Array(names) = required else {
            map.shift_remove("required");
            self.sink
                .at(&at, "`required` is not a list of names: removed".into());
            return;
        };
        let composed = COMPOSING.iter().any(|k| map.contains_key(*k));
        let declared: Option<HashSet<&str>> = match map.get("properties") {
            Some(Value::Object(p)) => Some(p.keys().map(String::as_str).collect()),
            _ => None,
        };
        let mut kept: Vec<Value> = Vec::with_capacity(names.len());
        let mut messages = Vec::new();
        for name in names {
            let Some(text) = name.as_str() else {
                messages.push(format!("{name} is not a property name: removed"));
                continue;
            };
            if kept.iter().any(|k| k == name) {
                messages.push(format!("`{text}` is listed twice: once is kept"));
            } else if optional.iter().any(|o| o == text) {
                messages.push(format!(
                    "`{text}` is marked optional: removed from `required`"
                ));
            } else if !composed && !declared.as_ref().is_some_and(|d| d.contains(text)) {
                messages.push(format!("`{text}` names no property: removed"));
            } else {
                kept.push(name.clone());
            }
        }
        for message in messages {
            self.sink.at(&at, message);
        }
        if kept.is_empty() {
            map.shift_remove("required");
        } else {
            map.insert("required".into(), Value::Array(kept));
        }
    }

    /// A `default` that is not of the declared type is converted when that loses
    /// nothing (`"false"` → `false`), removed otherwise.
    fn default_value(&mut self, map: &mut Map<String, Value>, path: &str) {
        let Some(types) = declared_types(map) else {
            return;
        };
        let Some(default) = map.get("default") else {
            return;
        };
        if types.iter().any(|t| fits(t, default)) {
            return;
        }
        let at = format!("{path}/default");
        match types.iter().find_map(|t| convert(t, default)) {
            Some(converted) => {
                self.sink.at(
                    &at,
                    format!(
                        "default {default} is not {}: written {converted}",
                        article(&types)
                    ),
                );
                map.insert("default".into(), converted);
            }
            None => {
                self.sink.at(
                    &at,
                    format!("default {default} is not {}: removed", article(&types)),
                );
                map.shift_remove("default");
            }
        }
    }

    /// Enum values of another type than the declared one are reported, not changed.
    fn enum_values(&mut self, map: &Map<String, Value>, path: &str) {
        let (Some(types), Some(Value::Array(values))) = (declared_types(map), map.get("enum"))
        else {
            return;
        };
        for value in values.iter().filter(|v| !types.iter().any(|t| fits(t, v))) {
            self.sink.at(
                &format!("{path}/enum"),
                format!(
                    "enum value {value} is not {}: no argument can take it",
                    article(&types)
                ),
            );
        }
    }
}

fn declared_types(map: &Map<String, Value>) -> Option<Vec<&str>> {
    match map.get("type")? {
        Value::String(t) => Some(vec![t.as_str()]),
        Value::Array(ts) => Some(ts.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

fn article(types: &[&str]) -> String {
    let names: Vec<String> = types
        .iter()
        .map(|t| match *t {
            "integer" | "object" | "array" => format!("an {t}"),
            "null" => "null".into(),
            _ => format!("a {t}"),
        })
        .collect();
    names.join(" or ")
}

/// Whether `value` is of JSON Schema type `t`.
fn fits(t: &str, value: &Value) -> bool {
    match t {
        "string" => value.is_string(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// `value` as type `t`, when the conversion loses nothing.
fn convert(t: &str, value: &Value) -> Option<Value> {
    match (t, value) {
        ("boolean", Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" => Some(true.into()),
            "false" => Some(false.into()),
            _ => None,
        },
        ("integer", Value::String(s)) => s.trim().parse::<i64>().ok().map(Into::into),
        ("number", Value::String(s)) => {
            let n = s.trim().parse::<f64>().ok().filter(|f| f.is_finite())?;
            serde_json::Number::from_f64(n).map(Value::Number)
        }
        ("string", Value::Number(_) | Value::Bool(_)) => Some(value.to_string().into()),
        _ => None,
    }
}

/// JSON-pointer escaping of one segment.
fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// Fixes is done within this many rounds or not at all.
const MAX_FIXES: usize = 64;

/// Makes `schema` valid JSON Schema 2020-12 that compiles: what breaks the
/// meta-schema is removed (a property's broken schema becomes `{}`), `$ref`s that
/// point nowhere are removed. Errs when the root itself is the problem.
fn make_valid(schema: &mut Value, path: &str, sink: &mut Sink) -> Result<(), String> {
    let meta = jsonschema::draft202012::meta::validator();
    dangling_refs(schema, path, sink);
    for _ in 0..MAX_FIXES {
        let problem = match meta.iter_errors(schema).next() {
            Some(error) => Some((error.instance_path().as_str().to_owned(), error.to_string())),
            None => match jsonschema::draft202012::new(schema) {
                Ok(_) => return Ok(()),
                Err(error) => Some((
                    error.instance_path().as_str().to_owned(),
                    error.masked().to_string(),
                )),
            },
        };
        let Some((pointer, message)) = problem else {
            return Ok(());
        };
        let Some(fix) = (!pointer.is_empty())
            .then(|| remove_at(schema, &pointer))
            .flatten()
        else {
            return Err(format!("the schema is not valid JSON Schema ({message})"));
        };
        sink.at(
            &format!("{path}{pointer}"),
            format!("not valid JSON Schema ({message}): {fix}"),
        );
    }
    Err("the schema has too many parts that are not valid JSON Schema".into())
}

/// Removes what `pointer` points at; a schema inside `properties` (and the other
/// maps of schemas) becomes `{}`, so the property stays. Says what it did.
fn remove_at(schema: &mut Value, pointer: &str) -> Option<&'static str> {
    let (parent_pointer, last) = pointer.rsplit_once('/')?;
    let in_schema_map = parent_pointer
        .rsplit_once('/')
        .is_some_and(|(_, key)| SCHEMA_MAPS.contains(&key));
    let last = unescape(last);
    match schema.pointer_mut(parent_pointer) {
        Some(Value::Object(map)) if in_schema_map && map.contains_key(&last) => {
            map.insert(last, json!({}));
            Some("replaced by `{}` (any value)")
        }
        Some(Value::Object(map)) => map.shift_remove(&last).map(|_| "removed"),
        Some(Value::Array(items)) => match last.parse::<usize>() {
            Ok(i) if i < items.len() => {
                items.remove(i);
                Some("removed")
            }
            _ => None,
        },
        _ => None,
    }
}

/// Removes `$ref`s to other documents and to places that do not exist.
fn dangling_refs(schema: &mut Value, path: &str, sink: &mut Sink) {
    let root = schema.clone();
    let mut found = Vec::new();
    collect_dangling(&root, &root, String::new(), &mut found);
    for pointer in found {
        if let Some(Value::Object(map)) = schema.pointer_mut(&pointer)
            && let Some(target) = map.shift_remove("$ref")
        {
            sink.at(
                &format!("{path}{pointer}/$ref"),
                format!("`$ref` {target} points nowhere in this schema (other documents are not fetched): removed"),
            );
        }
    }
}

fn collect_dangling(node: &Value, root: &Value, pointer: String, out: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                let resolves = match target.strip_prefix('#') {
                    Some("") => true,
                    Some(fragment) if fragment.starts_with('/') => {
                        root.pointer(&percent_decode(fragment)).is_some()
                    }
                    // Anchors are left to the compiler.
                    Some(_) => true,
                    None => false,
                };
                if !resolves {
                    out.push(pointer.clone());
                }
            }
            for (key, child) in map {
                collect_dangling(child, root, format!("{pointer}/{}", escape(key)), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                collect_dangling(child, root, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Notes for one tool. Mechanical rewrites (a type's spelling, `nullable`,
/// `optional`) go to the import-wide [`Rewrites`] instead.
struct Sink<'n> {
    tool: &'n str,
    notes: Vec<Note>,
    rewrites: &'n mut Rewrites,
}

impl<'n> Sink<'n> {
    fn new(tool: &'n str, rewrites: &'n mut Rewrites) -> Self {
        Sink {
            tool,
            notes: Vec::new(),
            rewrites,
        }
    }

    fn at(&mut self, path: &str, message: String) {
        self.notes.push(Note::at(self.tool, path, message));
    }

    fn group(&mut self, path: &str, message: String) {
        self.rewrites.count(self.tool, path, message);
    }

    fn finish(self) -> Vec<Note> {
        self.notes
    }
}

/// Mechanical rewrites counted across the whole import, so `dict` written
/// `object` in a thousand tools is one note, not a thousand.
#[derive(Default)]
struct Rewrites(IndexMap<String, Rewrite>);

/// Where a rewrite was first made, and how often.
struct Rewrite {
    tool: String,
    path: String,
    places: usize,
    tools: usize,
    last_tool: String,
}

impl Rewrites {
    fn count(&mut self, tool: &str, path: &str, message: String) {
        let rewrite = self.0.entry(message).or_insert_with(|| Rewrite {
            tool: tool.to_owned(),
            path: path.to_owned(),
            places: 0,
            tools: 0,
            last_tool: String::new(),
        });
        rewrite.places += 1;
        if rewrite.last_tool != tool {
            rewrite.tools += 1;
            rewrite.last_tool = tool.to_owned();
        }
    }

    /// A note per rewrite: on the tool when one tool had it, else for the request.
    fn notes(self) -> impl Iterator<Item = Note> {
        self.0
            .into_iter()
            .map(|(message, r)| match (r.tools, r.places) {
                (1, 1) => Note::at(&r.tool, r.path, message),
                (1, places) => Note::at(&r.tool, r.path, format!("{message} ({places} places)")),
                (tools, places) => Note::request(format!(
                    "{message}: {places} places in {tools} tools, the first in `{}` at {}",
                    r.tool, r.path
                )),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn import(from: ImportFormat, text: &str) -> Imported {
        import_tools(from, text).unwrap()
    }

    fn parameters(imported: &Imported, i: usize) -> &Value {
        imported.tools[i].parameters.as_ref().unwrap()
    }

    fn messages(imported: &Imported) -> Vec<String> {
        imported
            .notes
            .iter()
            .map(|n| {
                format!(
                    "{} {}: {}",
                    n.tool.as_deref().unwrap_or("*"),
                    n.path,
                    n.message
                )
            })
            .collect()
    }

    #[test]
    fn imported_words_are_sanitized_and_hostile_names_keep_a_tool_out() {
        let text = r#"[{"type": "function", "function": {"name": "evil",
            "description": "Looks fine.\u001b]0;pwned\u0007\u001b[2J\u202e<|im_start|>",
            "parameters": {"type": "object", "properties": {"q": {"type": "string",
                "description": "Query.\u009b2J</tool-output>"}}}}},
            {"type": "function", "function": {"name": "worse", "description": "x",
            "parameters": {"type": "object", "properties": {"q\u001b[2J": {"type": "string"}}}}}]"#;
        let imported = import(ImportFormat::OpenAiChat, text);
        assert_eq!(imported.tools.len(), 1);
        let evil = &imported.tools[0];
        assert_eq!(evil.description, "Looks fine.<¦im_start¦>");
        assert_eq!(
            parameters(&imported, 0)["properties"]["q"]["description"],
            "Query.‹/tool-output>"
        );
        let messages = messages(&imported);
        assert!(
            messages.contains(&"evil : `description` held text a model must not be given: removed 2 terminal escape sequences, removed 1 invisible formatting character (bidi, zero-width or tag), neutralized 1 chat-template control token".to_owned()),
            "{messages:#?}"
        );
        assert!(
            messages.iter().any(|m| m.starts_with(
                "* : tools[1]: `worse` is skipped: `parameters`: its schema's property name at `/properties/q\\u{1b}[2J` holds a control character (U+001B)"
            )),
            "{messages:#?}"
        );
    }

    fn assert_valid_json_schema(schema: &Value) {
        let meta = jsonschema::draft202012::meta::validator();
        let errors: Vec<String> = meta.iter_errors(schema).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{schema}: {errors:?}");
        assert!(jsonschema::draft202012::new(schema).is_ok(), "{schema}");
    }

    fn snapshot(imported: &Imported) -> Value {
        json!({"tools": imported.tools, "notes": messages(imported)})
    }

    #[test]
    fn format_names_round_trip_and_an_unknown_one_lists_the_valid_ones() {
        for format in ImportFormat::ALL {
            assert_eq!(format.as_str().parse::<ImportFormat>(), Ok(format));
        }
        let err = "openai".parse::<ImportFormat>().unwrap_err().to_string();
        assert!(
            err.contains("`openai`") && err.contains("openai-chat"),
            "{err}"
        );
    }

    #[test]
    fn an_openai_chat_request_body_imports() {
        let text = r#"{"model": "gpt-5", "tools": [
            {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": ["string", "null"], "enum": ["c", "f"]}},
                             "required": ["city", "unit"], "additionalProperties": false}, "strict": true}},
            {"type": "custom", "custom": {"name": "sql"}}]}"#;
        insta::assert_json_snapshot!(
            "import_openai_chat",
            snapshot(&import(ImportFormat::OpenAiChat, text))
        );
    }

    #[test]
    fn a_legacy_openai_functions_list_imports() {
        let text = r#"{"functions": [{"name": "ping", "description": "Ping.", "parameters": {"type": "object", "properties": {}}}]}"#;
        assert_eq!(import(ImportFormat::OpenAiChat, text).tools[0].name, "ping");
    }

    #[test]
    fn openai_responses_tools_import_and_hosted_tools_are_skipped_with_a_note() {
        let text = r#"[{"type": "function", "name": "lookup_order", "description": "Find an order.",
                        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
                       {"type": "web_search"}]"#;
        insta::assert_json_snapshot!(
            "import_openai_responses",
            snapshot(&import(ImportFormat::OpenAiResponses, text))
        );
    }

    #[test]
    fn anthropic_tools_import_with_their_input_examples() {
        let text = r#"{"tools": [{"name": "create_ticket", "description": "Open a ticket.",
            "input_schema": {"type": "object", "properties": {"title": {"type": "string"}, "priority": {"type": "integer"}}, "required": ["title"]},
            "input_examples": [{"title": "Printer on fire", "priority": 1}, {"priority": "high"}]},
            {"type": "web_search_20250305", "name": "web_search"}]}"#;
        insta::assert_json_snapshot!(
            "import_anthropic",
            snapshot(&import(ImportFormat::Anthropic, text))
        );
    }

    #[test]
    fn gemini_declarations_import_with_lower_case_types_and_nullable_as_a_null_type() {
        let text = r#"[{"functionDeclarations": [{"name": "schedule_meeting", "description": "Book a meeting.",
            "parameters": {"type": "OBJECT", "properties": {
                "attendees": {"type": "ARRAY", "items": {"type": "STRING"}, "minItems": "1"},
                "topic": {"type": "STRING", "nullable": true, "example": "Planning"},
                "room": {"type": "STRING", "format": "enum", "enum": ["A", "B"], "nullable": true}},
              "required": ["attendees"], "propertyOrdering": ["topic", "attendees", "room"]},
            "response": {"type": "OBJECT", "properties": {"id": {"type": "STRING"}}},
            "behavior": "NON_BLOCKING"}]},
          {"googleSearch": {}}]"#;
        let imported = import(ImportFormat::Gemini, text);
        assert_valid_json_schema(parameters(&imported, 0));
        insta::assert_json_snapshot!("import_gemini", snapshot(&imported));
    }

    #[test]
    fn a_single_gemini_declaration_list_and_a_json_schema_declaration_import() {
        let text = r#"[{"name": "a", "description": "A.", "parametersJsonSchema": {"type": "object", "properties": {"x": {"type": ["string", "null"]}}}},
                       {"name": "b", "description": "B."}]"#;
        let imported = import(ImportFormat::Gemini, text);
        assert_eq!(
            parameters(&imported, 0)["properties"]["x"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(imported.tools[1].parameters, None);
    }

    #[test]
    fn an_mcp_tools_list_imports_with_effects_from_annotations() {
        let text = r#"{"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "fs.read_file", "title": "Read file", "description": "Read a file.",
             "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
             "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
             "annotations": {"readOnlyHint": true}},
            {"name": "fs.delete", "description": "Delete a file.", "inputSchema": {"type": "object"},
             "annotations": {"title": "Delete", "destructiveHint": true, "openWorldHint": false}},
            {"name": "web.fetch", "description": "Fetch a URL.", "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}}}]}}"#;
        let imported = import(ImportFormat::Mcp, text);
        let effects: Vec<_> = imported.tools.iter().map(|t| t.effect).collect();
        assert_eq!(
            effects,
            [
                Some(Effect::Read),
                Some(Effect::Destructive),
                Some(Effect::External)
            ]
        );
        assert_eq!(imported.tools[1].title.as_deref(), Some("Delete"));
        insta::assert_json_snapshot!("import_mcp", snapshot(&imported));
    }

    #[test]
    fn bfcl_json_lines_import_with_every_pseudo_type_normalized() {
        let text = r#"{"name": "every.type", "description": "Every BFCL pseudo-type.", "parameters": {"type": "dict", "properties": {
            "a_dict": {"type": "dict", "properties": {"x": {"type": "float"}}},
            "a_float": {"type": "float"}, "a_double": {"type": "double"},
            "a_tuple": {"type": "tuple", "items": {"type": "float"}},
            "an_any": {"type": "any"}, "an_empty": {"type": ""},
            "an_int": {"type": "int"}, "a_long": {"type": "long"}, "a_short": {"type": "short"}, "an_integer": {"type": "integer"},
            "a_bool": {"type": "bool"}, "a_Boolean": {"type": "Boolean"},
            "a_str": {"type": "str"}, "a_String": {"type": "String"}, "a_char_array": {"type": "Array", "items": {"type": "char"}},
            "a_list": {"type": "list", "items": {"type": "String"}}, "an_ArrayList": {"type": "ArrayList", "items": {"type": "long"}},
            "a_HashMap": {"type": "HashMap"}, "a_Map": {"type": "Map"}, "an_object": {"type": "object"}}, "required": ["a_dict"]}}
{"name": "fixes", "description": "BFCL's other habits.", "parameters": {"type": "dict", "properties": {
            "detailed": {"type": "boolean", "default": "false"}, "k": {"type": "integer", "default": "5"},
            "info": {"type": "array", "items": {"type": "string"}, "default": "all"},
            "year": {"type": "integer", "optional": true}, "venue": {"type": "string", "optional": "True"},
            "population": {"type": "dict", "required": ["adults", "children"]},
            "weight": {"type": "float"}}, "required": ["year", "weight", "detailed"], "optional": ["weight"]},
  "response": {"type": "dict", "properties": {"ranked": {"type": "array", "items": {"type": "array", "items": [{"type": "float"}, {"type": "string"}]}}}}}
"#;
        let imported = import(ImportFormat::Bfcl, text);
        assert_eq!(imported.tools.len(), 2);
        for tool in &imported.tools {
            assert_valid_json_schema(tool.parameters.as_ref().unwrap());
        }
        assert_valid_json_schema(imported.tools[1].returns.as_ref().unwrap());
        insta::assert_json_snapshot!("import_bfcl_pseudo_types", snapshot(&imported));
    }

    #[test]
    fn a_bfcl_json_array_imports_too() {
        let text = r#"[{"name": "f", "description": "F.", "parameters": {"type": "dict", "properties": {}}}]"#;
        assert_eq!(
            parameters(&import(ImportFormat::Bfcl, text), 0),
            &json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn a_name_met_again_gets_a_suffix_that_takes_no_other_name() {
        let text = r#"{"name": "area", "description": "1", "parameters": {"type": "dict", "properties": {}}}
{"name": "area_2", "description": "2", "parameters": {"type": "dict", "properties": {}}}
{"name": "area", "description": "3", "parameters": {"type": "dict", "properties": {}}}
{"name": "area", "description": "4", "parameters": {"type": "dict", "properties": {}}}"#;
        let imported = import(ImportFormat::Bfcl, text);
        let names: Vec<_> = imported.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["area", "area_2", "area_3", "area_4"]);
        assert!(
            messages(&imported)
                .iter()
                .any(|m| m.contains("imported as `area_3`"))
        );
        let text = r#"[{"name": "a b", "description": "x"}, {"name": "a_b", "description": "y"}]"#;
        let imported = import(ImportFormat::OpenAiResponses, text);
        let names: Vec<_> = imported.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["a_b_2", "a_b"],
            "a name given in canonical form is kept"
        );
    }

    #[test]
    fn fields_an_sdk_dumped_as_null_count_as_absent() {
        let text = r#"[{"functionDeclarations": [{"name": "f", "description": null, "parameters": null,
            "parametersJsonSchema": null, "response": null, "behavior": null}]}]"#;
        let imported = import(ImportFormat::Gemini, text);
        let tool = &imported.tools[0];
        assert_eq!(
            (tool.parameters.as_ref(), tool.description.as_str()),
            (None, "")
        );
    }

    #[test]
    fn a_name_that_is_not_canonical_is_sanitized_with_a_note() {
        let text = r#"[{"name": "get weather/now", "description": "x"}, {"name": "..a..b.", "description": "y"}, {"name": "!!!", "description": "z"}]"#;
        let imported = import(ImportFormat::OpenAiResponses, text);
        let names: Vec<_> = imported.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["get_weather_now", "a.b", "_"]);
        for name in names {
            assert!(crate::validate_name(name).is_ok(), "{name}");
        }
        assert!(messages(&imported)[0].contains("imported as `get_weather_now`"));
    }

    #[test]
    fn schemas_that_break_json_schema_are_fixed_or_the_tool_is_dropped() {
        let text = r##"[
            {"name": "fixable", "description": "x", "input_schema": {"type": "object",
                "properties": {"a": "string", "b": {"type": "string", "pattern": "(unclosed", "minLength": -1}, "c": {"$ref": "#/$defs/missing"}, "d": 42},
                "required": ["a", "a"]}},
            {"name": "hopeless", "description": "y", "input_schema": {"type": "string"}},
            {"name": "not_a_schema", "description": "z", "input_schema": 42},
            {"name": "untyped", "description": "w", "input_schema": {"properties": {"q": {"type": "string"}}}}]"##;
        let imported = import(ImportFormat::Anthropic, text);
        let names: Vec<_> = imported.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["fixable", "untyped"]);
        for tool in &imported.tools {
            assert_valid_json_schema(tool.parameters.as_ref().unwrap());
        }
        assert_eq!(parameters(&imported, 1)["type"], "object");
        insta::assert_json_snapshot!("import_fixes_and_drops", snapshot(&imported));
    }

    #[test]
    fn input_that_holds_no_tool_list_is_an_error_that_says_what_was_expected() {
        let err = import_tools(ImportFormat::Mcp, r#"{"jsonrpc": "2.0"}"#).unwrap_err();
        assert!(err.to_string().contains("`tools/list` result"), "{err}");
        let err = import_tools(ImportFormat::Bfcl, "{\"name\": \"a\"}\n{\"name\": ").unwrap_err();
        assert!(matches!(err, ImportError::BadLine { line: 2, .. }), "{err}");
        assert!(matches!(
            import_tools(ImportFormat::Anthropic, "[{"),
            Err(ImportError::NotJson(_))
        ));
    }

    #[test]
    fn tools_without_an_effect_are_reported_once() {
        let imported = import(
            ImportFormat::OpenAiResponses,
            r#"[{"type": "function", "name": "a", "description": "A."}]"#,
        );
        let effect_notes = imported
            .notes
            .iter()
            .filter(|n| n.message.contains("declare no effect"))
            .count();
        assert_eq!(effect_notes, 1);
        assert_eq!(imported.tools[0].effect, None);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn type_name() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(json!("dict")),
                Just(json!("float")),
                Just(json!("tuple")),
                Just(json!("any")),
                Just(json!("String")),
                Just(json!("HashMap")),
                Just(json!("STRING")),
                Just(json!("integer")),
                Just(json!(["OBJECT", "null"])),
                Just(json!(["any", "string"])),
                Just(json!(7)),
                "[A-Za-z]{0,8}".prop_map(Value::from),
            ]
        }

        fn value() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i32>().prop_map(Value::from),
                "[a-zA-Z0-9. ]{0,6}".prop_map(Value::from),
                Just(json!(["a", 1])),
                Just(json!({"k": "v"})),
            ]
        }

        fn leaf() -> impl Strategy<Value = Value> {
            (
                type_name(),
                proptest::option::of(value()),
                proptest::option::of(value()),
                proptest::option::of(value()),
                proptest::option::of(value()),
            )
                .prop_map(|(t, default, nullable, optional, pattern)| {
                    let mut schema = json!({"type": t});
                    for (key, value) in [
                        ("default", default),
                        ("nullable", nullable),
                        ("optional", optional),
                        ("pattern", pattern),
                    ] {
                        if let Some(value) = value {
                            schema[key] = value;
                        }
                    }
                    schema
                })
        }

        fn schema() -> impl Strategy<Value = Value> {
            leaf().prop_recursive(4, 40, 5, |inner| {
                prop_oneof![
                    (
                        type_name(),
                        proptest::collection::btree_map("[a-z]{1,3}", inner.clone(), 0..4),
                        proptest::collection::vec(value(), 0..4),
                    )
                        .prop_map(|(t, properties, required)| {
                            json!({"type": t, "properties": properties, "required": required})
                        }),
                    (type_name(), inner.clone())
                        .prop_map(|(t, items)| json!({"type": t, "items": items})),
                    proptest::collection::vec(inner.clone(), 1..3)
                        .prop_map(|items| json!({"items": items})),
                    proptest::collection::vec(inner, 0..3)
                        .prop_map(|branches| json!({"anyOf": branches})),
                    "[a-zA-Z]{0,6}".prop_map(Value::from),
                ]
            })
        }

        proptest! {
            #[test]
            fn any_schema_imports_as_valid_json_schema_or_is_dropped_with_a_note(
                parameters in schema(),
                returns in schema(),
                gemini in any::<bool>(),
            ) {
                let (format, text) = if gemini {
                    let declaration = json!({"name": "f", "description": "d", "parameters": parameters, "response": returns});
                    (ImportFormat::Gemini, json!([{"functionDeclarations": [declaration]}]))
                } else {
                    (ImportFormat::Bfcl, json!([{"name": "f", "description": "d", "parameters": parameters, "response": returns}]))
                };
                let imported = import_tools(format, &text.to_string()).unwrap();
                match imported.tools.as_slice() {
                    [tool] => {
                        let parameters = tool.parameters.as_ref().unwrap();
                        prop_assert_eq!(&parameters["type"], "object");
                        assert_valid_json_schema(parameters);
                        if let Some(returns) = &tool.returns {
                            assert_valid_json_schema(returns);
                        }
                    }
                    [] => prop_assert!(imported.notes.iter().any(|n| n.message.starts_with("not imported"))),
                    more => prop_assert!(false, "{} tools from one", more.len()),
                }
            }

            #[test]
            fn any_names_import_as_distinct_canonical_names(
                names in proptest::collection::vec(prop_oneof!["\\PC{0,12}", "[a-z.]{0,6}", Just("a".repeat(140))], 1..8),
            ) {
                let tools: Vec<Value> = names.iter().map(|n| json!({"name": n, "description": "d"})).collect();
                let imported = import_tools(ImportFormat::OpenAiResponses, &Value::Array(tools).to_string()).unwrap();
                prop_assert_eq!(imported.tools.len(), names.len());
                let mut seen = HashSet::new();
                for (tool, given) in imported.tools.iter().zip(&names) {
                    prop_assert!(crate::validate_name(&tool.name).is_ok(), "{:?}", tool.name);
                    prop_assert!(seen.insert(tool.name.clone()), "{:?} twice", tool.name);
                    if crate::validate_name(given).is_ok() && names.iter().filter(|n| *n == given).count() == 1 {
                        prop_assert_eq!(&tool.name, given);
                    }
                }
            }
        }
    }
}
