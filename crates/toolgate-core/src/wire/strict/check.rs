//! The checker: [`is_strict`] tells whether a schema keeps a dialect's strict-mode
//! rules and OpenAI's documented limits, and names the first rule broken and
//! where. [`make_strict`](super::make_strict) runs it on its own result.

use serde_json::Value;

use super::StrictDialect;
use super::keywords::{allowed_keyword, formats};
use super::schema::{compact, is_primitive, resolve, types_of};
use super::transform::MAX_NESTING;
use crate::wire::pointer::escape;

/// OpenAI's documented limits (raised in July 2025).
const MAX_PROPERTIES: usize = 5000;
const MAX_OBJECT_DEPTH: usize = 10;
const MAX_ENUM_VALUES: usize = 1000;
const MAX_TOTAL_CHARS: usize = 120_000;
const LARGE_ENUM: usize = 250;
const MAX_LARGE_ENUM_CHARS: usize = 15_000;

/// Whether `schema` satisfies `dialect`'s strict-mode rules and documented limits;
/// `Err` names the first rule broken and where.
pub(crate) fn is_strict(schema: &Value, dialect: StrictDialect) -> Result<(), String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the root must be `type: object`".to_owned());
    }
    let mut check = Check {
        root: schema,
        dialect,
        properties: 0,
        enum_values: 0,
        chars: 0,
        refs: Vec::new(),
    };
    check.node(schema, "", 0, true)?;
    for container in ["$defs", "definitions"] {
        if let Some(defs) = schema.get(container) {
            let defs = defs
                .as_object()
                .ok_or_else(|| format!("`/{container}` is not an object"))?;
            for (name, def) in defs {
                check.chars += name.chars().count();
                check.node(def, &format!("/{container}/{}", escape(name)), 0, false)?;
            }
        }
    }
    if dialect == StrictDialect::OpenAi {
        if check.properties > MAX_PROPERTIES {
            return Err(format!(
                "the schema has {} properties; OpenAI's limit is {MAX_PROPERTIES}",
                check.properties
            ));
        }
        if check.enum_values > MAX_ENUM_VALUES {
            return Err(format!(
                "the schema has {} enum values; OpenAI's limit is {MAX_ENUM_VALUES}",
                check.enum_values
            ));
        }
        if check.chars > MAX_TOTAL_CHARS {
            return Err(format!(
                "the property names, definition names, enum and const values add up to {} characters; OpenAI's limit is {MAX_TOTAL_CHARS}",
                check.chars
            ));
        }
    }
    Ok(())
}

struct Check<'a> {
    root: &'a Value,
    dialect: StrictDialect,
    properties: usize,
    enum_values: usize,
    chars: usize,
    /// `$ref`s being followed (Anthropic, to find recursion).
    refs: Vec<String>,
}

impl Check<'_> {
    fn node(
        &mut self,
        schema: &Value,
        ptr: &str,
        depth: usize,
        is_root: bool,
    ) -> Result<(), String> {
        let here = || {
            if ptr.is_empty() {
                "the root".to_owned()
            } else {
                format!("`{ptr}`")
            }
        };
        let map = schema
            .as_object()
            .ok_or_else(|| format!("{} is not a schema object", here()))?;
        if self.refs.len() > MAX_NESTING || depth > MAX_NESTING {
            return Err(format!("{} is nested too deeply", here()));
        }
        for key in map.keys() {
            if !allowed_keyword(self.dialect, key, is_root) {
                return Err(format!(
                    "{} has `{key}`, which strict mode does not support",
                    here()
                ));
            }
        }
        if let Some(reference) = map.get("$ref") {
            let reference = reference
                .as_str()
                .ok_or_else(|| format!("{}: `$ref` is not a string", here()))?;
            if map.len() > 1 {
                return Err(format!("{} has keywords beside `$ref`", here()));
            }
            let target = resolve(self.root, reference)
                .ok_or_else(|| format!("{}: `$ref` {reference} points to nothing", here()))?;
            if self.dialect == StrictDialect::Anthropic {
                if self.refs.iter().any(|r| r == reference) {
                    return Err(format!(
                        "{}: `$ref` {reference} recurses; Anthropic strict mode does not support recursion",
                        here()
                    ));
                }
                self.refs.push(reference.to_owned());
                let result = self.node(target, ptr, depth, false);
                self.refs.pop();
                return result;
            }
            return Ok(());
        }
        let types = types_of(map.get("type")).map_err(|e| format!("{}: {e}", here()))?;
        let literal = map.contains_key("enum") || map.contains_key("const");
        if types.is_empty() && !literal && !map.contains_key("anyOf") {
            return Err(format!("{} has no `type`", here()));
        }
        if let Some(description) = map.get("description")
            && !description.is_string()
        {
            return Err(format!("{}: `description` is not a string", here()));
        }
        if let Some(values) = map.get("enum") {
            let values = values
                .as_array()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("{}: `enum` is not a non-empty list", here()))?;
            if !values.iter().all(is_primitive) {
                return Err(format!("{}: `enum` holds an object or a list", here()));
            }
            self.enum_values += values.len();
            let chars: usize = values
                .iter()
                .filter_map(Value::as_str)
                .map(|s| s.chars().count())
                .sum();
            self.chars += chars;
            if self.dialect == StrictDialect::OpenAi
                && values.len() > LARGE_ENUM
                && chars > MAX_LARGE_ENUM_CHARS
            {
                return Err(format!(
                    "{}: an enum of more than {LARGE_ENUM} values may hold at most {MAX_LARGE_ENUM_CHARS} characters; this one holds {chars}",
                    here()
                ));
            }
        }
        if let Some(value) = map.get("const") {
            if !is_primitive(value) {
                return Err(format!("{}: `const` is an object or a list", here()));
            }
            self.chars += value.as_str().map_or(0, |s| s.chars().count());
        }
        if let Some(format) = map.get("format")
            && !format
                .as_str()
                .is_some_and(|f| formats(self.dialect).contains(&f))
        {
            return Err(format!(
                "{}: `format: {}` is not supported in strict mode",
                here(),
                compact(format)
            ));
        }
        if self.dialect == StrictDialect::Anthropic
            && let Some(min) = map.get("minItems")
            && min.as_u64().is_none_or(|n| n > 1)
        {
            return Err(format!(
                "{}: Anthropic strict mode supports `minItems` of 0 or 1 only",
                here()
            ));
        }
        if let Some(branches) = map.get("anyOf") {
            if is_root {
                return Err("the root must not be a union (`anyOf`)".to_owned());
            }
            let branches = branches
                .as_array()
                .filter(|b| !b.is_empty())
                .ok_or_else(|| format!("{}: `anyOf` is not a non-empty list", here()))?;
            for (i, branch) in branches.iter().enumerate() {
                self.node(branch, &format!("{ptr}/anyOf/{i}"), depth, false)?;
            }
        }
        let is_object = types.iter().any(|t| t == "object");
        if is_object || map.contains_key("properties") {
            let depth = depth + 1;
            if self.dialect == StrictDialect::OpenAi && depth > MAX_OBJECT_DEPTH {
                return Err(format!(
                    "{} nests objects {depth} levels deep; OpenAI's limit is {MAX_OBJECT_DEPTH}",
                    here()
                ));
            }
            if map.get("additionalProperties") != Some(&Value::Bool(false)) {
                return Err(format!(
                    "{} is an object without `additionalProperties: false`",
                    here()
                ));
            }
            let properties = map
                .get("properties")
                .and_then(Value::as_object)
                .ok_or_else(|| format!("{} is an object without `properties`", here()))?;
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for name in &required {
                if !properties.contains_key(*name) {
                    return Err(format!(
                        "{}: `{name}` is required but not a property",
                        here()
                    ));
                }
            }
            for (name, schema) in properties {
                if self.dialect == StrictDialect::OpenAi && !required.contains(&name.as_str()) {
                    return Err(format!(
                        "{}: property `{name}` is not in `required` (strict mode requires every property)",
                        here()
                    ));
                }
                self.properties += 1;
                self.chars += name.chars().count();
                self.node(
                    schema,
                    &format!("{ptr}/properties/{}", escape(name)),
                    depth,
                    false,
                )?;
            }
        }
        if types.iter().any(|t| t == "array") {
            let items = map
                .get("items")
                .ok_or_else(|| format!("{} is an array without `items`", here()))?;
            self.node(items, &format!("{ptr}/items"), depth, false)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::*;
    use crate::wire::strict::make_strict;

    #[test]
    fn documented_limits_are_errors() {
        let many: Map<String, Value> = (0..5001)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        let err = make_strict(
            &json!({"type": "object", "properties": many}),
            StrictDialect::OpenAi,
        )
        .unwrap_err();
        assert!(err.contains("5001 properties"), "{err}");

        let mut deep = json!({"type": "object", "properties": {"leaf": {"type": "string"}}, "required": ["leaf"]});
        for _ in 0..10 {
            deep = json!({"type": "object", "properties": {"inner": deep}, "required": ["inner"]});
        }
        let err = make_strict(&deep, StrictDialect::OpenAi).unwrap_err();
        assert!(err.contains("OpenAI's limit is 10"), "{err}");

        let values: Vec<Value> = (0..1001).map(|i| json!(i)).collect();
        let err = make_strict(
            &json!({"type": "object", "properties": {"e": {"enum": values}}}),
            StrictDialect::OpenAi,
        )
        .unwrap_err();
        assert!(err.contains("1001 enum values"), "{err}");

        let long: Vec<Value> = (0..300).map(|i| json!(format!("{i:0>60}"))).collect();
        let err = make_strict(
            &json!({"type": "object", "properties": {"e": {"enum": long}}}),
            StrictDialect::OpenAi,
        )
        .unwrap_err();
        assert!(err.contains("at most 15000 characters"), "{err}");
    }

    #[test]
    fn the_checker_names_the_rule_a_schema_breaks() {
        let open =
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
        assert_eq!(
            is_strict(&open, StrictDialect::OpenAi).unwrap_err(),
            "the root is an object without `additionalProperties: false`"
        );
        let optional = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": [], "additionalProperties": false});
        assert!(
            is_strict(&optional, StrictDialect::OpenAi)
                .unwrap_err()
                .contains("not in `required`")
        );
        assert!(is_strict(&optional, StrictDialect::Anthropic).is_ok());
        let bounded = json!({"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}, "required": ["a"], "additionalProperties": false});
        assert!(
            is_strict(&bounded, StrictDialect::OpenAi)
                .unwrap_err()
                .contains("`maxLength`")
        );
    }
}
