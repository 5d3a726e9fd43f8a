//! The schema rewrite: every schema of an entry, and every schema inside it,
//! rewritten from its dialect into JSON Schema 2020-12 — pseudo-type and Java
//! type names, Gemini's spellings and `nullable`, BFCL's `optional` marks,
//! `required` entries that name nothing and defaults of the wrong type.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::Dialect;
use super::notes::Sink;
use crate::wire::pointer::escape;

/// Schema keywords whose value is a map of names to schemas.
pub(super) const SCHEMA_MAPS: [&str; 5] = [
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
pub(super) struct Normalizer<'s, 'n> {
    pub(super) dialect: Dialect,
    pub(super) sink: &'s mut Sink<'n>,
}

impl Normalizer<'_, '_> {
    /// Normalizes `schema` at `path`; returns whether it carried an `optional: true`
    /// mark (BFCL), which its parent object reads.
    pub(super) fn schema(&mut self, schema: &mut Value, path: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::super::ImportFormat;
    use super::super::tests::{assert_valid_json_schema, import, snapshot};

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
}
