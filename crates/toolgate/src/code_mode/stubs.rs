//! The program's API as Python text: one function per tool the principal may
//! call, with keyword parameters typed from the input schema and a docstring from
//! the description, the usage guidance, the consent it needs and the shape of what
//! it returns. This is what a model reads before it writes a program (the
//! description of `run_code`, or `toolgate code stubs`).
//!
//! A namespaced tool (`github.create_issue`) is a static method of a class named
//! for its namespace, which is how a program calls it: `github.create_issue(...)`.
//!
//! Tools the conversation's flow blocks now are listed and marked "not available
//! yet" with the reason, never hidden: a program's own earlier calls can unblock
//! them while it runs.

use std::fmt::Write as _;

use serde_json::Value;
use toolgate_core::flow::ToolStatus;
use toolgate_core::spec::{SpecFile, returns_shape, schema_shape};
use toolgate_core::{Decision, Principal, SanitizeOptions, ToolDescriptor, sanitize_description};

use super::names::is_parameter_name;
use crate::{Gate, store::StoreError};

/// How a program is written and what its Python has, for the model; it opens
/// the stubs, so that a model's first program fits and its second need not.
const PREFACE: &str = "\
# Tools you can call from a program, as Python functions (signatures only); a
# namespace's tools as its class's: `github.create_issue(...)`.
# Pass arguments by position or keyword. Each call is checked and may be refused:
# invalid arguments raise ValueError, a refusal (policy, flow) PermissionError, a
# deadline TimeoutError, a failing tool RuntimeError. A call that needs a
# person's approval pauses the program until it is answered.
# The result is the program's last expression (or final_answer(x)); print() is
# shown too. With `await`, tools are coroutines: `await asyncio.gather(...)` runs
# calls concurrently. asyncio and json are imported already. The standard library
# has collections, dataclasses, datetime, decimal, functools, itertools, math, re,
# random, statistics, heapq, operator, csv, io, pprint, string, textwrap, typing;
# no files, network or environment (use the tools). Not supported: exception
# classes of your own (raise ValueError or RuntimeError with a message),
# @classmethod.
";

/// The stubs of the tools `principal` may call through `gate` in `session`.
/// With the spec file the tools came from, a mock's canned `response` gives the
/// returns shape of a tool that declares no `returns`.
pub fn stubs(
    gate: &Gate,
    session: &str,
    principal: &Principal,
    spec: Option<&SpecFile>,
) -> Result<String, StoreError> {
    let names = super::CodeMode::names(gate, principal);
    let view = gate.flow_view_for(session, principal)?;
    // Each top-level stub in catalog order; a namespace's tools go together, in
    // a class at the place of its first tool.
    let mut entries: Vec<(Option<String>, Vec<String>)> = Vec::new();
    for tool in gate.catalog().iter() {
        let descriptor = tool.descriptor();
        let Some(python) = names.python(&descriptor.name) else {
            continue;
        };
        let decision = gate.policy().decide(descriptor, principal).decision;
        let consent = match decision {
            Decision::Deny => continue,
            Decision::Allow => None,
            Decision::Ask => Some("A human approves each call.".to_owned()),
        };
        let blocked = view
            .as_ref()
            .and_then(|v| match v.status(&descriptor.name) {
                ToolStatus::Blocked { reason, .. } => Some(reason),
                ToolStatus::Allowed { .. } => None,
            });
        // A shape the tool declares, or its canned response's: never the
        // default a mock answers when it has none, which says nothing.
        let returns = spec
            .and_then(|s| s.tools.iter().find(|t| t.name == descriptor.name))
            .filter(|t| t.returns.is_some() || t.response.is_some())
            .map(returns_shape)
            .or_else(|| {
                descriptor
                    .output_schema
                    .as_ref()
                    .map(|schema| schema_shape(schema, schema, 0))
            });
        let mut stub = String::new();
        match python.split_once('.') {
            None => {
                write_stub(
                    &mut stub, python, python, descriptor, consent, blocked, returns,
                );
                entries.push((None, vec![stub]));
            }
            Some((namespace, member)) => {
                write_stub(
                    &mut stub, member, python, descriptor, consent, blocked, returns,
                );
                let at = entries
                    .iter()
                    .position(|(n, _)| n.as_deref() == Some(namespace));
                match at {
                    Some(at) => entries[at].1.push(stub),
                    None => entries.push((Some(namespace.to_owned()), vec![stub])),
                }
            }
        }
    }
    let mut out = String::from(PREFACE);
    for (namespace, stubs) in entries {
        out.push('\n');
        match namespace {
            None => out.push_str(&stubs.concat()),
            Some(namespace) => {
                let _ = writeln!(out, "class {namespace}:");
                for (i, stub) in stubs.into_iter().enumerate() {
                    out.push_str(if i == 0 {
                        "    @staticmethod\n"
                    } else {
                        "\n    @staticmethod\n"
                    });
                    for line in stub.lines() {
                        let _ = writeln!(out, "    {line}");
                    }
                }
            }
        }
    }
    Ok(out)
}

/// One function's stub: `def name(...)`, where `python` is how a program calls
/// it (`name`, or `namespace.name` for a method of a namespace's class).
fn write_stub(
    out: &mut String,
    name: &str,
    python: &str,
    tool: &ToolDescriptor,
    consent: Option<String>,
    blocked: Option<String>,
    returns: Option<String>,
) {
    let params = parameters(&tool.input_schema);
    let plain = params.iter().all(|p| is_parameter_name(&p.name));
    let signature = if params.is_empty() {
        String::new()
    } else if plain {
        let list: Vec<String> = params.iter().map(Param::signature).collect();
        list.join(", ")
    } else {
        "**arguments".to_owned()
    };
    let _ = writeln!(out, "def {name}({signature}) -> {}:", return_hint(&returns));
    let mut doc = Vec::new();
    doc.push(clean(&tool.description));
    if python != tool.name {
        doc.push(format!("Tool `{}`.", tool.name));
    }
    if let Some(reason) = blocked {
        doc.push(format!("Not available yet: {}", clean(&reason)));
    }
    let usage = &tool.usage;
    if let Some(when) = &usage.when_to_use {
        doc.push(format!("Use when: {}", clean(when)));
    }
    if let Some(when) = &usage.when_not_to {
        doc.push(format!("Not when: {}", clean(when)));
    }
    for pre in &usage.preconditions {
        doc.push(format!("Requires: {}", clean(pre)));
    }
    if let Some(consent) = consent {
        doc.push(consent);
    }
    if !plain {
        let listed: Vec<String> = params.iter().map(Param::signature).collect();
        doc.push(format!(
            "Arguments (pass as **{{...}}, names are not identifiers): {}",
            listed.join(", ")
        ));
    }
    for p in params.iter().filter(|p| !p.description.is_empty()) {
        doc.push(format!("{}: {}", p.name, p.description));
    }
    if let Some(shape) = returns {
        doc.push(format!("Returns: {}", clean(&shape)));
    }
    let _ = writeln!(
        out,
        "    \"\"\"{}\"\"\"",
        doc.join("\n    ").replace("\"\"\"", "'''")
    );
    out.push_str("    ...\n");
}

/// Sanitized for a docstring: no control tokens, no hidden text, one paragraph.
fn clean(text: &str) -> String {
    sanitize_description(text, &SanitizeOptions::for_description())
        .text
        .replace('\\', "\\\\")
        .replace('\n', "\n    ")
}

struct Param {
    name: String,
    hint: String,
    required: bool,
    default: Option<String>,
    description: String,
}

impl Param {
    fn signature(&self) -> String {
        match (&self.default, self.required) {
            (_, true) => format!("{}: {}", self.name, self.hint),
            (Some(default), false) => format!("{}: {} = {default}", self.name, self.hint),
            (None, false) => format!("{}: {} = ...", self.name, self.hint),
        }
    }
}

/// A tool's parameter names in its stub's order, which positional arguments
/// fill.
pub(super) fn parameter_names(schema: &Value) -> Vec<String> {
    ordered_properties(schema)
        .into_iter()
        .map(|(name, _, _)| name.clone())
        .collect()
}

/// The properties of an object schema with whether each is required, required
/// ones first (this reads best, and positional arguments fill them in this
/// order).
fn ordered_properties(schema: &Value) -> Vec<(&String, &Value, bool)> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut ordered: Vec<_> = properties
        .iter()
        .map(|(name, property)| (name, property, required.contains(&name.as_str())))
        .collect();
    ordered.sort_by_key(|(_, _, required)| !required);
    ordered
}

/// The stub's parameters of an object schema, in [`ordered_properties`] order.
fn parameters(schema: &Value) -> Vec<Param> {
    ordered_properties(schema)
        .into_iter()
        .map(|(name, property, required)| Param {
            name: name.clone(),
            hint: hint(property, schema, 0),
            required,
            default: property.get("default").map(python_literal),
            description: property
                .get("description")
                .and_then(Value::as_str)
                .map(clean)
                .unwrap_or_default(),
        })
        .collect()
}

/// A Python type hint for a JSON Schema.
fn hint(schema: &Value, root: &Value, depth: usize) -> String {
    if depth > 4 {
        return "Any".into();
    }
    let Some(object) = schema.as_object() else {
        return "Any".into();
    };
    if let Some(target) = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        && let Some(resolved) = root.pointer(target)
    {
        return hint(resolved, root, depth + 1);
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        let literals: Vec<String> = values.iter().map(python_literal).collect();
        return format!("Literal[{}]", literals.join(", "));
    }
    if let Some(value) = object.get("const") {
        return format!("Literal[{}]", python_literal(value));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = object.get(key).and_then(Value::as_array) {
            let hints: Vec<String> = options.iter().map(|o| hint(o, root, depth + 1)).collect();
            return hints.join(" | ");
        }
    }
    match object.get("type") {
        Some(Value::String(t)) => type_hint(t, object, root, depth),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .map(|t| type_hint(t, object, root, depth))
            .collect::<Vec<_>>()
            .join(" | "),
        _ => "Any".into(),
    }
}

fn type_hint(
    kind: &str,
    object: &serde_json::Map<String, Value>,
    root: &Value,
    depth: usize,
) -> String {
    match kind {
        "string" => "str".into(),
        "integer" => "int".into(),
        "number" => "float".into(),
        "boolean" => "bool".into(),
        "null" => "None".into(),
        "array" => match object.get("items") {
            Some(items) => format!("list[{}]", hint(items, root, depth + 1)),
            None => "list".into(),
        },
        "object" => "dict".into(),
        _ => "Any".into(),
    }
}

fn return_hint(shape: &Option<String>) -> &'static str {
    match shape.as_deref() {
        Some(s) if s.starts_with('{') => "dict",
        Some(s) if s.starts_with('[') => "list",
        Some("string") => "str",
        Some("integer") => "int",
        Some("number") => "float",
        Some("boolean") => "bool",
        _ => "Any",
    }
}

/// A JSON value as Python source (a default or a `Literal` in the stubs; a value
/// written into a program).
pub fn python_literal(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(python_literal)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), python_literal(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_types_become_python_hints() {
        let schema = json!({"$defs": {"S": {"enum": ["open", "shipped"]}}});
        assert_eq!(hint(&json!({"type": "string"}), &schema, 0), "str");
        assert_eq!(
            hint(
                &json!({"type": "array", "items": {"type": "integer"}}),
                &schema,
                0
            ),
            "list[int]"
        );
        assert_eq!(
            hint(&json!({"type": ["string", "null"]}), &schema, 0),
            "str | None"
        );
        assert_eq!(
            hint(&json!({"$ref": "#/$defs/S"}), &schema, 0),
            "Literal[\"open\", \"shipped\"]"
        );
    }

    #[test]
    fn required_parameters_come_first_and_defaults_show() {
        let params = parameters(&json!({
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "default": 10},
                "customer": {"type": "string"},
                "note": {"type": "string"}
            },
            "required": ["customer"]
        }));
        let signature: Vec<String> = params.iter().map(Param::signature).collect();
        assert_eq!(
            signature,
            ["customer: str", "limit: int = 10", "note: str = ..."]
        );
    }
}
