//! One schema's keywords, once `$ref`s, `allOf` and several types are gone: the
//! type named in upper case, enums kept on strings only, tuples sent as one item
//! schema, counts as integers, and every keyword outside the subset dropped with
//! a note.

use serde_json::{Map, Value, json};

use super::Transform;
use super::union::Union;
use crate::wire::pointer::escape;

impl Transform<'_> {
    /// The keywords of a schema without `$ref`, `allOf` or several types.
    pub(super) fn keywords(
        &mut self,
        raw: &Map<String, Value>,
        src: &str,
        depth: usize,
    ) -> Option<Map<String, Value>> {
        let at = |key: &str| format!("{src}/{key}");
        let mut nullable = raw
            .get("nullable")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut hints: Vec<String> = Vec::new();

        // The type.
        let mut types: Vec<String> = match raw.get("type") {
            None => Vec::new(),
            Some(Value::String(t)) => vec![t.clone()],
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            Some(_) => {
                self.change(
                    at("type"),
                    "`type` is neither a name nor a list of names; dropped",
                );
                Vec::new()
            }
        };
        let only_null = !types.is_empty() && types.iter().all(|t| t == "null");
        if types.iter().any(|t| t == "null") {
            nullable = true;
            types.retain(|t| t != "null");
            if !only_null {
                self.change(
                    at("type"),
                    "`null` among the types sent as `nullable: true`",
                );
            }
        }

        // enum and const.
        let mut enum_out: Option<Vec<Value>> = None;
        let (enum_key, values) = match (raw.get("const"), raw.get("enum")) {
            (Some(value), _) => ("const", Some(vec![value.clone()])),
            (None, Some(Value::Array(values))) => ("enum", Some(values.clone())),
            (None, Some(_)) => {
                self.change(at("enum"), "`enum` is not a list; dropped");
                ("enum", None)
            }
            (None, None) => ("enum", None),
        };
        if raw.contains_key("const") && raw.contains_key("enum") {
            self.change(at("enum"), "`enum` beside `const`: the `const` is kept");
        }
        if let Some(mut values) = values {
            if values.iter().any(Value::is_null) {
                nullable = true;
                values.retain(|v| !v.is_null());
                self.change(
                    at(enum_key),
                    format!("`null` in `{enum_key}` sent as `nullable: true`"),
                );
            }
            let strings = values.iter().all(Value::is_string);
            if values.is_empty() {
                if !nullable {
                    self.change(at(enum_key), format!("empty `{enum_key}` dropped"));
                }
            } else if strings && (types.is_empty() || types == ["string"]) {
                if types.is_empty() {
                    types.push("string".into());
                }
                if enum_key == "const" {
                    self.change(
                        at("const"),
                        "`const` sent as a one-value `enum` (the API has no `const`)",
                    );
                }
                enum_out = Some(values);
            } else {
                let listed: Vec<String> = values.iter().map(Value::to_string).collect();
                hints.push(if values.len() == 1 {
                    format!("Must be {}.", listed[0])
                } else {
                    format!("Allowed values: {}.", listed.join(", "))
                });
                self.change(
                    at(enum_key),
                    format!("`{enum_key}` of non-string values dropped (the API takes enums on strings only); the values are listed in the description"),
                );
            }
        }

        // Infer a missing type from the keywords.
        if types.is_empty()
            && !only_null
            && !raw.contains_key("anyOf")
            && !raw.contains_key("oneOf")
        {
            if raw.contains_key("properties") {
                types.push("object".into());
                self.change(
                    at("type"),
                    "`type: OBJECT` added (the schema has `properties`)",
                );
            } else if raw.contains_key("items") || raw.contains_key("prefixItems") {
                types.push("array".into());
                self.change(at("type"), "`type: ARRAY` added (the schema has `items`)");
            }
        }
        if types.len() > 1 {
            self.change(
                at("type"),
                format!("several types; only `{}` kept", types[0]),
            );
            types.truncate(1);
        }
        let ty: Option<&'static str> = match types.first().map(String::as_str) {
            None if only_null => Some("NULL"),
            None => None,
            Some("string") => Some("STRING"),
            Some("number") => Some("NUMBER"),
            Some("integer") => Some("INTEGER"),
            Some("boolean") => Some("BOOLEAN"),
            Some("array") => Some("ARRAY"),
            Some("object") => Some("OBJECT"),
            Some(other) => {
                self.change(at("type"), format!("unknown type `{other}` dropped"));
                None
            }
        };

        // A union.
        let union = self.union(raw, src, depth, &mut nullable)?;

        // Every other keyword.
        let mut out = Map::new();
        if let Some(ty) = ty {
            out.insert("type".into(), json!(ty));
        }
        let mut properties: Option<Map<String, Value>> = None;
        let mut left_out: Vec<String> = Vec::new();
        let mut items: Option<Value> = None;
        let mut rest = Map::new();
        for (key, value) in raw {
            let key_src = at(&escape(key));
            let wrong_type =
                |expected: &str| format!("`{key}` applies to {expected} only; dropped");
            match key.as_str() {
                "type" | "nullable" | "enum" | "const" | "anyOf" | "oneOf" | "required" => {}
                "title" | "description" => match value {
                    Value::String(_) => {
                        rest.insert(key.clone(), value.clone());
                    }
                    _ => self.change(key_src, format!("`{key}` is not a string; dropped")),
                },
                "default" | "example" => {
                    rest.insert(key.clone(), value.clone());
                }
                "examples" => match value.as_array().and_then(|list| list.first()) {
                    Some(first) if !raw.contains_key("example") => {
                        rest.insert("example".into(), first.clone());
                        self.change(key_src, "`examples` sent as `example` (the first one)");
                    }
                    _ => self.change(key_src, "`examples` dropped (the API takes one `example`)"),
                },
                "format" => match (ty, value.as_str()) {
                    (Some("STRING"), Some("date-time" | "enum"))
                    | (Some("NUMBER"), Some("float" | "double"))
                    | (Some("INTEGER"), Some("int32" | "int64")) => {
                        rest.insert(key.clone(), value.clone());
                    }
                    (_, Some(format)) => self.change(
                        key_src,
                        format!("`format: {format}` dropped (the API takes `date-time` and `enum` on strings, `float`/`double` on numbers, `int32`/`int64` on integers)"),
                    ),
                    (_, None) => self.change(key_src, "`format` is not a string; dropped"),
                },
                "properties" if ty == Some("OBJECT") => {
                    let Value::Object(declared) = value else {
                        self.change(key_src, "`properties` is not an object; dropped");
                        continue;
                    };
                    let mut kept = Map::new();
                    for (name, schema) in declared {
                        let child_src = format!("{key_src}/{}", escape(name));
                        match self.node(schema, &child_src, depth + 1) {
                            Some(child) => {
                                kept.insert(name.clone(), Value::Object(child));
                            }
                            None => {
                                self.change(child_src, format!("property `{name}` left out (its schema was cut)"));
                                left_out.push(name.clone());
                            }
                        }
                    }
                    properties = Some(kept);
                }
                "items" if ty == Some("ARRAY") => match value {
                    Value::Array(tuple) => items = Some(Value::Object(self.tuple(tuple, &key_src, depth)?)),
                    schema => items = Some(Value::Object(self.node(schema, &key_src, depth + 1)?)),
                },
                "prefixItems" if ty == Some("ARRAY") => match value {
                    Value::Array(tuple) if !raw.contains_key("items") => {
                        items = Some(Value::Object(self.tuple(tuple, &key_src, depth)?));
                    }
                    _ => self.change(key_src, "`prefixItems` dropped (the API has no tuples)"),
                },
                "minItems" | "maxItems" if ty == Some("ARRAY") => self.count(&mut rest, key, value, &key_src),
                "minProperties" | "maxProperties" if ty == Some("OBJECT") => self.count(&mut rest, key, value, &key_src),
                "minLength" | "maxLength" if ty == Some("STRING") => self.count(&mut rest, key, value, &key_src),
                "pattern" if ty == Some("STRING") && value.is_string() => {
                    rest.insert(key.clone(), value.clone());
                }
                "minimum" | "maximum" if matches!(ty, Some("NUMBER" | "INTEGER")) && value.is_number() => {
                    rest.insert(key.clone(), value.clone());
                }
                "exclusiveMinimum" | "exclusiveMaximum" if ty == Some("INTEGER") && (value.is_i64() || value.is_u64()) => {
                    let (bound, step) = if key == "exclusiveMinimum" { ("minimum", 1) } else { ("maximum", -1) };
                    let limit = value.as_i64().map_or(Value::from(value.as_u64().unwrap_or(0)), |v| Value::from(v.saturating_add(step)));
                    if !raw.contains_key(bound) {
                        rest.insert(bound.into(), limit);
                    }
                    self.change(key_src, format!("`{key}` on an integer sent as `{bound}`"));
                }
                "propertyOrdering" if ty == Some("OBJECT") && value.as_array().is_some_and(|l| l.iter().all(Value::is_string)) => {
                    rest.insert(key.clone(), value.clone());
                }
                "properties" | "minProperties" | "maxProperties" | "propertyOrdering" => self.change(key_src, wrong_type("objects")),
                "items" | "prefixItems" | "minItems" | "maxItems" => self.change(key_src, wrong_type("arrays")),
                "minLength" | "maxLength" | "pattern" => self.change(key_src, wrong_type("strings")),
                "minimum" | "maximum" => self.change(key_src, wrong_type("numbers")),
                "$defs" | "definitions" => self.change(key_src, format!("`{key}` inlined where referenced, then removed (the API takes no `$ref`)")),
                _ => self.change(key_src, format!("`{key}` is not in the API's schema subset; dropped")),
            }
        }

        // required: only names among the properties kept.
        let mut required: Vec<Value> = Vec::new();
        if raw.contains_key("required") && ty != Some("OBJECT") {
            self.change(
                at("required"),
                "`required` applies to objects only; dropped",
            );
        } else if let Some(Value::Array(names)) = raw.get("required") {
            for name in names {
                let Some(name_str) = name.as_str() else {
                    self.change(
                        at("required"),
                        "a `required` entry that is not a string dropped",
                    );
                    continue;
                };
                if left_out.iter().any(|l| l == name_str) {
                    continue;
                }
                if properties
                    .as_ref()
                    .is_some_and(|p| p.contains_key(name_str))
                {
                    if !required.contains(name) {
                        required.push(name.clone());
                    }
                } else {
                    self.change(
                        at("required"),
                        format!(
                            "`{name_str}` in `required` names no property; dropped from `required`"
                        ),
                    );
                }
            }
        } else if raw.contains_key("required") {
            self.change(at("required"), "`required` is not a list; dropped");
        }

        // Assemble in the order the API reference lists the fields.
        for key in ["format", "title", "description"] {
            if let Some(value) = rest.remove(key) {
                out.insert(key.into(), value);
            }
        }
        if !hints.is_empty() {
            let description = match out.get("description").and_then(Value::as_str) {
                Some(text) if !text.is_empty() => format!("{text} {}", hints.join(" ")),
                _ => hints.join(" "),
            };
            out.insert("description".into(), Value::String(description));
        }
        if let Some(values) = enum_out {
            out.insert("enum".into(), Value::Array(values));
        }
        match properties {
            Some(props) if !props.is_empty() => {
                out.insert("properties".into(), Value::Object(props));
            }
            _ => {}
        }
        if !required.is_empty() {
            out.insert("required".into(), Value::Array(required));
        }
        if let Some(items) = items {
            out.insert("items".into(), items);
        }
        out.extend(rest);
        match union {
            Union::None => {}
            Union::Branches(branches) => {
                out.insert(
                    "anyOf".into(),
                    Value::Array(branches.into_iter().map(Value::Object).collect()),
                );
            }
            Union::One(branch) => {
                // The branch gives the shape; the union's own annotations stay on top.
                let mut merged = branch;
                // A `null` type beside the union is one more option (`nullable`, set
                // above), not the shape: the branch's type stays.
                if out.get("type").and_then(Value::as_str) == Some("NULL")
                    && merged.contains_key("type")
                {
                    out.remove("type");
                }
                for (key, value) in out {
                    merged.insert(key, value);
                }
                if merged.get("nullable") == Some(&Value::Bool(true)) {
                    nullable = true;
                }
                out = merged;
            }
        }
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }

        // Rules the API imposes that the transform cannot satisfy.
        let ty = out.get("type").and_then(Value::as_str);
        if ty == Some("ARRAY") && !out.contains_key("items") {
            self.problem(
                src,
                "an array without `items`: the API needs the item schema; declare `items`",
            );
        }
        Some(out)
    }

    /// A tuple (`prefixItems`, or a draft-4 `items` list) as one item schema.
    fn tuple(&mut self, tuple: &[Value], src: &str, depth: usize) -> Option<Map<String, Value>> {
        let mut branches: Vec<Map<String, Value>> = Vec::new();
        for (i, schema) in tuple.iter().enumerate() {
            let branch = self.node(schema, &format!("{src}/{i}"), depth + 1)?;
            if !branches.contains(&branch) {
                branches.push(branch);
            }
        }
        self.change(
            src,
            "a tuple sent as an array of its item schemas (the API has no tuples)",
        );
        match branches.len() {
            0 => Some(Map::new()),
            1 => branches.pop(),
            _ => {
                let mut union = Map::new();
                union.insert(
                    "anyOf".into(),
                    Value::Array(branches.into_iter().map(Value::Object).collect()),
                );
                Some(union)
            }
        }
    }

    /// A count keyword (`minItems`, ...): a non-negative integer.
    fn count(&mut self, rest: &mut Map<String, Value>, key: &str, value: &Value, src: &str) {
        if value.as_u64().is_some() {
            rest.insert(key.to_owned(), value.clone());
        } else if let Some(n) = value
            .as_f64()
            .filter(|n| n.fract() == 0.0 && *n >= 0.0 && *n < 9.0e15)
        {
            rest.insert(key.to_owned(), Value::from(n as u64));
        } else {
            self.change(
                src,
                format!("`{key}` is not a non-negative integer; dropped"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::{convert, messages};

    #[test]
    fn a_string_const_becomes_a_one_value_enum_and_other_consts_go_to_the_description() {
        let out = convert(json!({"type": "object", "properties": {
            "kind": {"const": "circle"},
            "version": {"type": "integer", "const": 2, "description": "Schema version."}
        }}));
        assert_eq!(
            out.schema["properties"]["kind"],
            json!({"type": "STRING", "enum": ["circle"]})
        );
        assert_eq!(
            out.schema["properties"]["version"],
            json!({"type": "INTEGER", "description": "Schema version. Must be 2."})
        );
        assert!(messages(&out.changes).iter().any(|m| {
            m.starts_with("/properties/version/const: `const` of non-string values dropped")
        }));
    }

    #[test]
    fn integer_enums_are_dropped_with_their_values_in_the_description() {
        let out = convert(
            json!({"type": "object", "properties": {"level": {"type": "integer", "enum": [1, 2, 3]}}}),
        );
        assert_eq!(
            out.schema["properties"]["level"],
            json!({"type": "INTEGER", "description": "Allowed values: 1, 2, 3."})
        );
    }

    #[test]
    fn unsupported_keywords_are_dropped_each_with_a_note() {
        let out = convert(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "url": {"type": "string", "format": "uri"},
                "when": {"type": "string", "format": "date-time"},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
                "count": {"type": "integer", "exclusiveMinimum": 0, "multipleOf": 2},
                "ratio": {"type": "number", "exclusiveMaximum": 1},
                "meta": {"type": "object", "properties": {"a": {"type": "string"}}, "patternProperties": {"^x-": {}}},
                "name": {"type": "string", "examples": ["Ada", "Grace"], "not": {"const": ""}}
            },
            "required": ["url", "missing"]
        }));
        assert_eq!(
            out.schema["properties"]["count"],
            json!({"type": "INTEGER", "minimum": 1})
        );
        assert_eq!(out.schema["properties"]["when"]["format"], "date-time");
        assert_eq!(
            out.schema["properties"]["name"],
            json!({"type": "STRING", "example": "Ada"})
        );
        assert_eq!(out.schema["required"], json!(["url"]));
        insta::assert_json_snapshot!(messages(&out.changes), @r#"
        [
          "/$schema: `$schema` is not in the API's schema subset; dropped",
          "/additionalProperties: `additionalProperties` is not in the API's schema subset; dropped",
          "/properties/url/format: `format: uri` dropped (the API takes `date-time` and `enum` on strings, `float`/`double` on numbers, `int32`/`int64` on integers)",
          "/properties/tags/uniqueItems: `uniqueItems` is not in the API's schema subset; dropped",
          "/properties/count/exclusiveMinimum: `exclusiveMinimum` on an integer sent as `minimum`",
          "/properties/count/multipleOf: `multipleOf` is not in the API's schema subset; dropped",
          "/properties/ratio/exclusiveMaximum: `exclusiveMaximum` is not in the API's schema subset; dropped",
          "/properties/meta/patternProperties: `patternProperties` is not in the API's schema subset; dropped",
          "/properties/name/examples: `examples` sent as `example` (the first one)",
          "/properties/name/not: `not` is not in the API's schema subset; dropped",
          "/required: `missing` in `required` names no property; dropped from `required`"
        ]
        "#);
    }

    #[test]
    fn an_array_without_items_is_a_problem_and_an_open_object_is_sent_without_properties() {
        let out = convert(json!({"type": "object", "properties": {
            "state": {"type": "object", "description": "Free-form state."},
            "list": {"type": "array"}
        }}));
        insta::assert_json_snapshot!(messages(&out.problems), @r#"
        [
          "/properties/list: an array without `items`: the API needs the item schema; declare `items`"
        ]
        "#);
        assert_eq!(
            out.schema["properties"]["state"],
            json!({"type": "OBJECT", "description": "Free-form state."})
        );
    }
}
