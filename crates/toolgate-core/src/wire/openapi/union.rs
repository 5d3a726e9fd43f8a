//! Unions, as the API takes one type per schema and has no `oneOf`: several types
//! become an `anyOf` of one type each, constraints beside a union move into its
//! branches, `oneOf` is sent as `anyOf`, and `null` branches become `nullable`.

use serde_json::{Map, Value, json};

use super::merge::{Prefer, merge};
use super::{ANNOTATIONS, Transform, constraint_only};

impl Transform<'_> {
    /// `type: [A, B]` becomes `anyOf: [{type: A, ...}, {type: B, ...}]`, each branch
    /// taking the keywords that apply to its type.
    pub(super) fn split_types(&mut self, raw: &mut Map<String, Value>, src: &str) {
        let Some(Value::Array(types)) = raw.get("type") else {
            return;
        };
        let types: Vec<String> = types
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let has_null = types.iter().any(|t| t == "null");
        let others: Vec<&String> = types.iter().filter(|t| *t != "null").collect();
        if others.len() < 2 {
            return;
        }
        let type_src = format!("{src}/type");
        if raw.contains_key("anyOf") || raw.contains_key("oneOf") {
            self.change(
                type_src,
                "several types beside a union: the union is kept, the types dropped",
            );
        } else {
            let mut branches = Vec::new();
            for ty in &others {
                let mut branch = Map::new();
                branch.insert("type".into(), Value::String((*ty).clone()));
                for (key, value) in raw.iter() {
                    if applies_to(key, ty) {
                        let value = match key.as_str() {
                            "enum" => Value::Array(
                                value
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                    .filter(|v| value_has_type(v, ty))
                                    .cloned()
                                    .collect(),
                            ),
                            _ => value.clone(),
                        };
                        if key == "const" && !value_has_type(&value, ty) {
                            continue;
                        }
                        branch.insert(key.clone(), value);
                    }
                }
                branches.push(Value::Object(branch));
            }
            raw.retain(|key, _| {
                !others.iter().any(|ty| applies_to(key, ty)) && key != "enum" && key != "const"
            });
            raw.insert("anyOf".into(), Value::Array(branches));
            self.change(type_src, "several types sent as `anyOf` of one type each (the API takes one type per schema)");
        }
        if has_null {
            raw.insert("type".into(), json!("null"));
        } else {
            raw.remove("type");
        }
    }

    /// Keywords beside `anyOf`/`oneOf` that constrain the value move into each branch
    /// (A and (B or C) is (A and B) or (A and C)); at the root, a union that only says
    /// which properties must be present is dropped.
    pub(super) fn fold_into_union(
        &mut self,
        raw: &mut Map<String, Value>,
        src: &str,
        depth: usize,
    ) {
        let key = if raw.contains_key("anyOf") {
            "anyOf"
        } else if raw.contains_key("oneOf") {
            "oneOf"
        } else {
            return;
        };
        if depth == 0
            && let Some(Value::Array(branches)) = raw.get(key)
            && !branches.is_empty()
            && branches.iter().all(constraint_only)
        {
            raw.remove(key);
            self.change(
                format!("{src}/{key}"),
                format!("a root-level `{key}` of `required` lists (\"at least one of\") cannot be expressed; dropped"),
            );
            return;
        }
        let structural: Map<String, Value> = raw
            .iter()
            .filter(|(k, v)| {
                !ANNOTATIONS.contains(&k.as_str())
                    && !matches!(k.as_str(), "anyOf" | "oneOf" | "nullable")
                    && (k.as_str() != "type" || v.as_str() != Some("null"))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if structural.is_empty() {
            return;
        }
        if let Some(Value::Array(branches)) = raw.get_mut(key) {
            for branch in branches.iter_mut() {
                match branch {
                    Value::Object(map) => {
                        merge(map, &structural, Prefer::Base);
                    }
                    Value::Bool(true) => *branch = Value::Object(structural.clone()),
                    _ => {}
                }
            }
        }
        raw.retain(|k, _| !structural.contains_key(k));
        let keys: Vec<String> = structural.keys().map(|k| format!("`{k}`")).collect();
        self.change(
            format!("{src}/{key}"),
            format!("{} beside `{key}` moved into each branch", keys.join(", ")),
        );
    }

    /// `anyOf` / `oneOf`, with `null` branches turned into `nullable`.
    pub(super) fn union(
        &mut self,
        raw: &Map<String, Value>,
        src: &str,
        depth: usize,
        nullable: &mut bool,
    ) -> Option<Union> {
        let key = if raw.contains_key("anyOf") {
            "anyOf"
        } else if raw.contains_key("oneOf") {
            "oneOf"
        } else {
            return Some(Union::None);
        };
        let key_src = format!("{src}/{key}");
        if key == "anyOf" && raw.contains_key("oneOf") {
            self.change(format!("{src}/oneOf"), "`oneOf` beside `anyOf` dropped");
        }
        let Some(Value::Array(branches)) = raw.get(key) else {
            self.change(key_src, format!("`{key}` is not a list; dropped"));
            return Some(Union::None);
        };
        if key == "oneOf" {
            self.change(&key_src, "`oneOf` sent as `anyOf` (the API has no `oneOf`)");
        }
        let mut kept: Vec<Map<String, Value>> = Vec::new();
        for (i, branch) in branches.iter().enumerate() {
            let branch_src = format!("{key_src}/{i}");
            if is_null_schema(branch) {
                *nullable = true;
                self.change(branch_src, "a `null` branch sent as `nullable: true`");
                continue;
            }
            match self.node(branch, &branch_src, depth + 1) {
                Some(map)
                    if map.get("type").and_then(Value::as_str) == Some("NULL")
                        && map.len() == 1 =>
                {
                    *nullable = true;
                }
                Some(map) => kept.push(map),
                None => self.change(branch_src, "branch left out (its schema was cut)"),
            }
        }
        if kept.is_empty() && !branches.is_empty() && !*nullable {
            return None;
        }
        if kept.len() > 1 && kept.iter().all(is_string_enum) {
            let mut values: Vec<Value> = Vec::new();
            for branch in &kept {
                for value in branch
                    .get("enum")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if !values.contains(value) {
                        values.push(value.clone());
                    }
                }
            }
            if kept
                .iter()
                .any(|b| b.contains_key("description") || b.contains_key("title"))
            {
                self.change(&key_src, "a union of string values sent as one `enum`; the branches' descriptions are lost");
            } else {
                self.change(&key_src, "a union of string values sent as one `enum`");
            }
            let mut merged = Map::new();
            merged.insert("type".into(), json!("STRING"));
            merged.insert("enum".into(), Value::Array(values));
            return Some(Union::One(merged));
        }
        Some(match kept.len() {
            0 => Union::None,
            1 => Union::One(kept.pop().unwrap_or_default()),
            _ => Union::Branches(kept),
        })
    }
}

pub(super) enum Union {
    None,
    One(Map<String, Value>),
    Branches(Vec<Map<String, Value>>),
}

/// Whether a keyword constrains values of JSON type `ty`.
fn applies_to(key: &str, ty: &str) -> bool {
    match key {
        "minLength" | "maxLength" | "pattern" | "format" | "contentEncoding"
        | "contentMediaType" => ty == "string",
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
            matches!(ty, "number" | "integer")
        }
        "items" | "prefixItems" | "minItems" | "maxItems" | "uniqueItems" | "contains" => {
            ty == "array"
        }
        "properties"
        | "required"
        | "additionalProperties"
        | "patternProperties"
        | "minProperties"
        | "maxProperties"
        | "propertyNames"
        | "propertyOrdering" => ty == "object",
        "enum" | "const" => true,
        _ => false,
    }
}

fn value_has_type(value: &Value, ty: &str) -> bool {
    match ty {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|n| n.fract() == 0.0)
        }
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => false,
    }
}

/// `{type: "null"}`, `{const: null}` or `{enum: [null]}`, annotations aside.
fn is_null_schema(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    let mut says_null = false;
    for (key, value) in map {
        match key.as_str() {
            "type" if value.as_str() == Some("null") => says_null = true,
            "const" if value.is_null() => says_null = true,
            "enum"
                if value
                    .as_array()
                    .is_some_and(|l| !l.is_empty() && l.iter().all(Value::is_null)) =>
            {
                says_null = true
            }
            k if ANNOTATIONS.contains(&k) => {}
            _ => return false,
        }
    }
    says_null
}

/// `{type: STRING, enum: [...]}`, annotations aside.
fn is_string_enum(branch: &Map<String, Value>) -> bool {
    branch.get("type").and_then(Value::as_str) == Some("STRING")
        && branch.contains_key("enum")
        && branch
            .keys()
            .all(|k| matches!(k.as_str(), "type" | "enum" | "description" | "title"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::convert;

    #[test]
    fn an_optional_nullable_field_becomes_nullable() {
        let out = convert(
            json!({"type": "object", "properties": {"note": {"type": ["string", "null"]}}}),
        );
        assert_eq!(
            out.schema["properties"]["note"],
            json!({"type": "STRING", "nullable": true})
        );
        let out = convert(
            json!({"type": "object", "properties": {"note": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "d"}}}),
        );
        assert_eq!(
            out.schema["properties"]["note"],
            json!({"type": "STRING", "description": "d", "nullable": true})
        );
    }

    #[test]
    fn one_of_becomes_any_of_and_siblings_move_into_the_branches() {
        let out = convert(json!({"type": "object", "properties": {"shape": {
            "type": "object",
            "description": "A shape.",
            "oneOf": [
                {"properties": {"radius": {"type": "number"}}, "required": ["radius"]},
                {"properties": {"side": {"type": "number"}}, "required": ["side"]}
            ]
        }}}));
        assert_eq!(
            out.schema["properties"]["shape"],
            json!({"description": "A shape.", "anyOf": [
                {"type": "OBJECT", "properties": {"radius": {"type": "NUMBER"}}, "required": ["radius"]},
                {"type": "OBJECT", "properties": {"side": {"type": "NUMBER"}}, "required": ["side"]}
            ]})
        );
    }

    #[test]
    fn a_union_of_string_constants_becomes_one_enum() {
        let out = convert(
            json!({"type": "object", "properties": {"unit": {"oneOf": [{"const": "cm"}, {"const": "in"}, {"type": "null"}]}}}),
        );
        assert_eq!(
            out.schema["properties"]["unit"],
            json!({"type": "STRING", "enum": ["cm", "in"], "nullable": true})
        );
    }

    #[test]
    fn several_types_become_an_any_of_with_the_keywords_that_apply() {
        let out = convert(
            json!({"type": "object", "properties": {"id": {"type": ["string", "integer"], "minLength": 3, "minimum": 0}}}),
        );
        assert_eq!(
            out.schema["properties"]["id"],
            json!({"anyOf": [{"type": "STRING", "minLength": 3}, {"type": "INTEGER", "minimum": 0}]})
        );
    }

    #[test]
    fn a_root_union_of_required_lists_is_dropped() {
        let out = convert(json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}]
        }));
        assert_eq!(
            out.schema,
            json!({"type": "OBJECT", "properties": {"a": {"type": "STRING"}, "b": {"type": "STRING"}}})
        );
    }
}
