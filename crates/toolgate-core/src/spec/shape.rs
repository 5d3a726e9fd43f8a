//! What a tool returns, written as a program's docstring would show it:
//! `{order_id: string, status: "shipped" | "pending", items: [{sku: string}]}`.

use serde_json::Value;

use super::model::ToolSpec;

/// The shape of what `tool` returns: from `returns` when declared, else from the
/// mock's canned response.
pub fn returns_shape(tool: &ToolSpec) -> String {
    match &tool.returns {
        Some(schema) => schema_shape(schema, schema, 0),
        None => value_shape(&tool.canned_response()),
    }
}

const MAX_DEPTH: usize = 6;

/// The shape a JSON Schema describes; optional properties end in `?`.
pub fn schema_shape(schema: &Value, root: &Value, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "…".into();
    }
    let Some(object) = schema.as_object() else {
        return if schema == &Value::Bool(false) {
            "never".into()
        } else {
            "any".into()
        };
    };
    if let Some(target) = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        && let Some(resolved) = root.pointer(target)
    {
        return schema_shape(resolved, root, depth + 1);
    }
    if let Some(c) = object.get("const") {
        return c.to_string();
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = object.get(key).and_then(Value::as_array) {
            return branches
                .iter()
                .map(|b| schema_shape(b, root, depth + 1))
                .collect::<Vec<_>>()
                .join(" | ");
        }
    }
    match object.get("type") {
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .map(|t| typed_shape(t, object, root, depth))
            .collect::<Vec<_>>()
            .join(" | "),
        Some(Value::String(t)) => typed_shape(t, object, root, depth),
        _ if object.contains_key("properties") => typed_shape("object", object, root, depth),
        _ => "any".into(),
    }
}

fn typed_shape(
    json_type: &str,
    object: &serde_json::Map<String, Value>,
    root: &Value,
    depth: usize,
) -> String {
    match json_type {
        "object" => {
            let Some(properties) = object.get("properties").and_then(Value::as_object) else {
                return "object".into();
            };
            let required: Vec<&str> = object
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let fields: Vec<String> = properties
                .iter()
                .map(|(name, sub)| {
                    let optional = if required.contains(&name.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    format!("{name}{optional}: {}", schema_shape(sub, root, depth + 1))
                })
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        "array" => match object.get("items") {
            Some(items) => format!("[{}]", schema_shape(items, root, depth + 1)),
            None => "[any]".into(),
        },
        other => other.into(),
    }
}

/// The shape of a concrete value: its keys and the JSON types of its leaves.
pub fn value_shape(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "boolean".into(),
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(items) => match items.first() {
            Some(first) => format!("[{}]", value_shape(first)),
            None => "[]".into(),
        },
        Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}: {}", value_shape(v)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_reads_like_a_docstring() {
        let schema = json!({
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "status": {"enum": ["shipped", "pending"]},
                "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
                "note": {"type": ["string", "null"]}
            },
            "required": ["order_id", "status", "items"],
            "$defs": {"Item": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}}
        });
        assert_eq!(
            schema_shape(&schema, &schema, 0),
            r#"{order_id: string, status: "shipped" | "pending", items: [{sku: string}], note?: string | null}"#
        );
    }

    #[test]
    fn a_canned_response_gives_the_shape_of_its_values() {
        assert_eq!(
            value_shape(&json!({"ok": true, "n": 2, "tags": ["a"], "x": 1.5})),
            "{ok: boolean, n: integer, tags: [string], x: number}"
        );
    }

    #[test]
    fn recursive_schemas_stop_at_a_bounded_depth() {
        let schema = json!({"$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}, "$ref": "#/$defs/N"});
        assert!(schema_shape(&schema, &schema, 0).contains('…'));
    }
}
