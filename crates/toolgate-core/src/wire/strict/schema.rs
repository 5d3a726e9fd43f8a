//! Reading JSON Schema, shared by the transform and the checker: the `type`
//! keyword as a list, local `$ref`s and `$defs` locations, JSON pointer tokens,
//! and how a place or a value is written in a message.

use serde_json::Value;

use crate::wire::pointer::unescape;

const TYPES: &[&str] = &[
    "object", "array", "string", "integer", "number", "boolean", "null",
];

/// The `type` keyword as a list; empty when absent.
pub(super) fn types_of(value: Option<&Value>) -> Result<Vec<String>, String> {
    let names: Vec<&Value> = match value {
        None => return Ok(Vec::new()),
        Some(Value::String(_)) => vec![value.unwrap_or(&Value::Null)],
        Some(Value::Array(list)) if !list.is_empty() => list.iter().collect(),
        Some(other) => {
            return Err(format!(
                "`type: {}` is not a type or a non-empty list of types",
                compact(other)
            ));
        }
    };
    names
        .into_iter()
        .map(|n| match n.as_str() {
            Some(t) if TYPES.contains(&t) => Ok(t.to_owned()),
            _ => Err(format!("`{}` is not a JSON Schema type", compact(n))),
        })
        .collect()
}

pub(super) fn is_primitive(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

/// Where a local `$ref` points, within `root`.
pub(super) fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

/// `#/$defs/name` → (`$defs`, `name`).
pub(super) fn def_location(reference: &str) -> Option<(String, String)> {
    let rest = reference.strip_prefix("#/")?;
    let (container, name) = rest.split_once('/')?;
    if !matches!(container, "$defs" | "definitions") || name.contains('/') {
        return None;
    }
    Some((container.to_owned(), unescape(name)))
}

pub(super) fn at(ptr: &str) -> String {
    if ptr.is_empty() {
        "the schema".to_owned()
    } else {
        format!("`{ptr}`")
    }
}

pub(super) fn compact(value: &Value) -> String {
    value.to_string()
}
