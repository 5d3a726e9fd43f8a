//! Structural checks: the document against the JSON Schema of the spec format,
//! every violation turned into a diagnostic that points at the text.

use std::sync::LazyLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

use super::diagnostic::{Diagnostic, did_you_mean};
use super::document::{Document, pointer_segment};
use super::model::SpecFile;

/// The JSON Schema of the spec file format, generated from [`SpecFile`].
pub fn spec_file_schema() -> &'static Value {
    static SCHEMA: LazyLock<Value> = LazyLock::new(|| schemars::schema_for!(SpecFile).to_value());
    &SCHEMA
}

fn spec_file_validator() -> &'static Validator {
    static VALIDATOR: LazyLock<Validator> = LazyLock::new(|| {
        jsonschema::draft202012::new(spec_file_schema())
            .expect("the generated spec schema is valid")
    });
    &VALIDATOR
}

/// Every structural problem in `doc`.
pub(crate) fn check_structure(doc: &Document) -> Vec<Diagnostic> {
    let mut found = Found::default();
    for error in spec_file_validator().iter_errors(&doc.value) {
        explain(doc, &error, &mut found);
    }
    // A misspelt required key is one mistake: the unknown key's "did you mean" says it,
    // so the "missing" report for the key it meant is dropped.
    let Found {
        out,
        suggested,
        missing,
    } = found;
    out.into_iter()
        .enumerate()
        .filter(|(i, _)| {
            !missing.iter().any(|(at, parent, key)| {
                at == i && suggested.contains(&(parent.clone(), key.clone()))
            })
        })
        .map(|(_, d)| d)
        .collect()
}

/// Diagnostics found so far, with what is needed to merge related ones.
#[derive(Default)]
struct Found {
    out: Vec<Diagnostic>,
    /// (mapping path, key) suggested for an unknown key in that mapping.
    suggested: Vec<(String, String)>,
    /// (index in `out`, mapping path, key) of each missing required key.
    missing: Vec<(usize, String, String)>,
}

fn explain(doc: &Document, error: &ValidationError<'_>, found: &mut Found) {
    let out = &mut found.out;
    let path = error.instance_path().as_str().to_owned();
    let schema_path = error.schema_path().as_str();
    let field = field_name(&path);
    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let parent = schema_path
                .strip_suffix("/additionalProperties")
                .unwrap_or("");
            let known = known_keys(parent);
            let present = error.instance().as_object();
            // Keys already present are not suggestions.
            let candidates: Vec<&str> = known
                .iter()
                .map(String::as_str)
                .filter(|k| present.is_none_or(|p| !p.contains_key(*k)))
                .collect();
            for key in unexpected {
                let key_path = format!("{path}/{}", pointer_segment(key));
                let mut diagnostic = Diagnostic::error(
                    &key_path,
                    format!(
                        "unknown key `{key}` in {}",
                        context_of(parent, error.instance())
                    ),
                )
                .with_span(doc.key_span(&key_path));
                let best = crate::closest_names(key, candidates.iter().copied())
                    .into_iter()
                    .next();
                diagnostic.help = Some(match best {
                    Some(best) => {
                        found.suggested.push((path.clone(), best.clone()));
                        format!("did you mean `{best}`?")
                    }
                    None => format!("the keys allowed here are {}", list(&known)),
                });
                out.push(diagnostic);
            }
        }
        ValidationErrorKind::Required { property } => {
            let key = property.as_str().unwrap_or_default();
            let parent = schema_path.strip_suffix("/required").unwrap_or("");
            found
                .missing
                .push((out.len(), path.clone(), key.to_owned()));
            out.push(
                Diagnostic::error(
                    &path,
                    format!(
                        "{} is missing the required key `{key}`",
                        context_of(parent, error.instance())
                    ),
                )
                .with_span(named_span(doc, &path, error.instance()))
                .with_help(required_help(key)),
            );
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => article(&t.to_string()),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| article(&t.to_string()))
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            out.push(
                Diagnostic::error(
                    &path,
                    format!(
                        "`{field}` must be {expected}, not {}",
                        describe_typed(error.instance())
                    ),
                )
                .with_span(doc.value_span(&path))
                .with_help(
                    type_help(field, &expected, error.instance()).unwrap_or_else(|| {
                        "`toolgate schema` prints the format of every key".into()
                    }),
                ),
            );
        }
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            // The branch whose type fits the value is the one the author meant: explain its errors.
            let fitting: Vec<_> = context
                .iter()
                .filter(|branch| !branch.iter().any(|e| is_type_error_at(e, &path)))
                .collect();
            if let [branch] = fitting.as_slice()
                && !branch.is_empty()
            {
                branch.iter().for_each(|e| explain(doc, e, found));
                return;
            }
            let parent = schema_path.rsplit_once('/').map(|(p, _)| p).unwrap_or("");
            out.push(not_one_of(
                doc,
                &path,
                field,
                error.instance(),
                &allowed_values(parent),
            ));
        }
        ValidationErrorKind::Enum { options } => {
            let options = options.as_array().cloned().unwrap_or_default();
            out.push(not_one_of(doc, &path, field, error.instance(), &options));
        }
        _ => out.push(
            Diagnostic::error(&path, format!("`{field}`: {}", error.masked()))
                .with_span(doc.value_span(&path)),
        ),
    }
}

fn not_one_of(
    doc: &Document,
    path: &str,
    field: &str,
    instance: &Value,
    allowed: &[Value],
) -> Diagnostic {
    let diagnostic = Diagnostic::error(path, format!("`{field}` cannot be {}", describe(instance)))
        .with_span(doc.value_span(path));
    let words: Vec<String> = allowed
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    if words.is_empty() {
        return diagnostic.with_help("`toolgate schema` shows the forms this key accepts");
    }
    let hint = instance
        .as_str()
        .and_then(|given| did_you_mean(given, words.iter().map(String::as_str)));
    diagnostic.with_help(match hint {
        Some(hint) => format!("{hint} (one of {})", list(&words)),
        None => format!("use one of {}", list(&words)),
    })
}

fn is_type_error_at(error: &ValidationError<'_>, path: &str) -> bool {
    matches!(
        error.kind(),
        ValidationErrorKind::Type { .. }
            | ValidationErrorKind::Constant { .. }
            | ValidationErrorKind::Enum { .. }
    ) && error.instance_path().as_str() == path
}

/// The `const` and `enum` values a schema node admits, through `$ref`, `anyOf` and `oneOf`.
fn allowed_values(schema_pointer: &str) -> Vec<Value> {
    fn collect(node: &Value, depth: usize, out: &mut Vec<Value>) {
        if depth > 8 {
            return;
        }
        let target = node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'));
        if let Some(resolved) = target.and_then(|t| spec_file_schema().pointer(t)) {
            collect(resolved, depth + 1, out);
        }
        if let Some(c) = node.get("const") {
            out.push(c.clone());
        }
        if let Some(values) = node.get("enum").and_then(Value::as_array) {
            out.extend(values.iter().cloned());
        }
        for key in ["anyOf", "oneOf"] {
            for branch in node
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                collect(branch, depth + 1, out);
            }
        }
    }
    let mut out = Vec::new();
    if let Some(node) = spec_file_schema().pointer(schema_pointer) {
        collect(node, 0, &mut out);
    }
    out
}

/// The keys a schema object (by pointer into the spec schema) declares.
fn known_keys(schema_pointer: &str) -> Vec<String> {
    spec_file_schema()
        .pointer(&format!("{schema_pointer}/properties"))
        .and_then(Value::as_object)
        .map(|props| props.keys().cloned().collect())
        .unwrap_or_default()
}

/// What kind of mapping a schema pointer describes, naming the tool when it can.
fn context_of(schema_pointer: &str, instance: &Value) -> String {
    let kind = context(schema_pointer);
    match instance.get("name").and_then(Value::as_str) {
        Some(name) if kind == "a tool" && name.chars().count() <= 60 => format!("tool `{name}`"),
        _ => kind.to_owned(),
    }
}

/// Where to point for a mapping that lacks a key: its `name` when it has one (a
/// tool), else the mapping.
fn named_span(doc: &Document, path: &str, instance: &Value) -> Option<super::Span> {
    if instance.get("name").is_some_and(Value::is_string) {
        return doc.value_span(&format!("{path}/name"));
    }
    doc.value_span(path)
}

/// What to write instead of a scalar of the wrong type, when there is an obvious fix.
fn type_help(field: &str, expected: &str, instance: &Value) -> Option<String> {
    match instance {
        Value::String(_) | Value::Number(_) | Value::Bool(_) if expected == "a list" => Some(
            format!("write a list, e.g. `{field}: [{}]`", scalar_text(instance)),
        ),
        Value::Number(_) | Value::Bool(_) if expected == "a string" => Some(format!(
            "quote it to make it a string: `{field}: \"{}\"`",
            scalar_text(instance)
        )),
        Value::String(_) if expected.contains("an integer") && field.ends_with("_bytes") => Some(
            format!("write the number of bytes, e.g. `{field}: 65536` for 64 KiB"),
        ),
        _ => None,
    }
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What to write for a missing required key.
fn required_help(key: &str) -> String {
    match key {
        "description" => {
            "add `description:` saying what the tool does; the model reads it to pick tools".into()
        }
        "name" => "add `name:`, e.g. `name: lookup_order`".into(),
        "url" => "add `url:` with the absolute http(s) URL to call".into(),
        _ => format!("add `{key}:`"),
    }
}

/// What kind of mapping a schema pointer describes, in words.
fn context(schema_pointer: &str) -> &'static str {
    let definition = schema_pointer
        .strip_prefix("/$defs/")
        .and_then(|rest| rest.split('/').next());
    match definition {
        None => "the spec file",
        Some("ToolSpec") => "a tool",
        Some("ToolUsage") => "`usage`",
        Some("HttpBinding") => "an `http` binding",
        Some("McpServerRef") => "an `mcp` binding",
        Some("McpServerSpec") => "an MCP server",
        Some("McpTimeouts") => "`timeouts`",
        Some("StateKey") => "a state key",
        Some("Policy") => "`policy`",
        Some("EffectDecisions") => "`policy.effects`",
        Some("PolicyRule") => "a policy rule",
        Some("PrincipalSpec") => "a principal",
        Some("HostedTool") => "a hosted tool",
        Some("NetworkSection") => "`network`",
        Some("LimitsSection") => "`limits`",
        Some("TelemetrySection") => "`telemetry`",
        Some("AuthSection") => "`auth`",
        Some("ApiKeysSection") => "`auth.api_keys`",
        Some("OAuthSection") => "`auth.oauth`",
        Some("CodeModeSection") => "`code_mode`",
        Some("SearchSection") => "`search`",
        Some("Flow") => "`flow`",
        Some("Step") => "a flow step",
        Some("Guard") => "a guard",
        Some("Above") => "`above`",
        Some("Constraint") => "a flow constraint",
        Some("Before") => "`before`",
        Some("NeverUntil") => "`never_until`",
        Some("Require") => "`require`",
        Some("ConfirmWhen") => "a `confirm` entry",
        Some("TestScript") => "a test",
        Some("Event") => "a test event",
        Some("CallEvent") => "a test's `call`",
        Some("Expect") => "`expect`",
        Some(_) => "this mapping",
    }
}

/// The last key of a pointer, or `the spec file` at the root.
fn field_name(pointer: &str) -> &str {
    match pointer.rsplit('/').next() {
        Some(last) if !pointer.is_empty() => last,
        _ => "the spec file",
    }
}

/// A value in words, for "cannot be ..." messages: strings in backticks.
pub(super) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "empty".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.chars().count() <= 40 => format!("`{s}`"),
        Value::String(_) => "this string".into(),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

/// A value in words, for "must be X, not ..." messages: strings say they are strings.
pub(super) fn describe_typed(value: &Value) -> String {
    match value {
        Value::String(s) if s.chars().count() <= 40 => format!("the string `{s}`"),
        Value::String(_) => "a string".into(),
        other => describe(other),
    }
}

/// The message for one way a value breaks a JSON Schema, naming the offending key
/// rather than "value". Returns the message and, when there is one, what to do.
pub(super) fn violation_message(error: &ValidationError<'_>) -> (String, Option<String>) {
    let path = error.instance_path().as_str();
    let field = path.rsplit('/').next().filter(|_| !path.is_empty());
    let name = field.map_or_else(|| "the value".to_owned(), |f| format!("`{f}`"));
    let instance = error.instance();
    match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => article(&t.to_string()),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| article(&t.to_string()))
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            let help = field.and_then(|f| type_help(f, &expected, instance));
            (
                format!(
                    "{name} must be {expected}, not {}",
                    describe_typed(instance)
                ),
                help,
            )
        }
        ValidationErrorKind::Required { property } => {
            let key = property.as_str().unwrap_or_default();
            (format!("the required key `{key}` is missing"), None)
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let keyword = match error.kind() {
                ValidationErrorKind::AdditionalProperties { .. } => "additionalProperties",
                _ => "unevaluatedProperties",
            };
            let (noun, verb) = if unexpected.len() == 1 {
                ("key", "is")
            } else {
                ("keys", "are")
            };
            (
                format!(
                    "{noun} {} {verb} not declared under `properties` (and `{keyword}` is false)",
                    list(unexpected)
                ),
                None,
            )
        }
        ValidationErrorKind::Enum { options } => {
            let words: Vec<String> = options
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect();
            let hint = instance
                .as_str()
                .and_then(|given| did_you_mean(given, words.iter().map(String::as_str)));
            (
                format!(
                    "{name} cannot be {}; it is one of {}",
                    describe(instance),
                    list(&words)
                ),
                hint,
            )
        }
        ValidationErrorKind::Constant { expected_value } => {
            (format!("{name} must be {expected_value}"), None)
        }
        ValidationErrorKind::AnyOf { .. } | ValidationErrorKind::OneOfNotValid { .. }
            if field == Some("type") =>
        {
            // The meta-schema's `type`: one type name or a list of them.
            const TYPES: [&str; 7] = [
                "string", "number", "integer", "boolean", "object", "array", "null",
            ];
            let given: Vec<&str> = match instance.as_ref() {
                Value::String(s) => vec![s.as_str()],
                Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let words: Vec<String> = TYPES.iter().map(|t| (*t).to_owned()).collect();
            match given.iter().find(|t| !TYPES.contains(t)) {
                Some(bad) => {
                    let hint = did_you_mean(bad, TYPES);
                    let choices = format!("one of {}", list(&words));
                    (
                        format!("`{bad}` is not a JSON Schema type"),
                        Some(match hint {
                            Some(hint) => format!("{hint} ({choices})"),
                            None => format!("use {choices}"),
                        }),
                    )
                }
                None => (
                    format!("`type` cannot be {}", describe(instance)),
                    Some(format!("use one of {}, or a list of them", list(&words))),
                ),
            }
        }
        _ => (error.masked_with(name).to_string(), None),
    }
}

/// A JSON type name with its article, in the spec's words: `a mapping`, `an integer`.
pub(super) fn article(json_type: &str) -> String {
    match json_type {
        "object" => "a mapping".into(),
        "array" => "a list".into(),
        "integer" => "an integer".into(),
        "null" => "empty".into(),
        other => format!("a {other}"),
    }
}

fn list(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("`{w}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
