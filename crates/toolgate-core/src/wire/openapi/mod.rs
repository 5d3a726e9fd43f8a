//! The Gemini/Vertex function-declaration schema dialect, not OpenAPI import: this
//! module writes tool schemas *out* for Gemini; reading an OpenAPI document *in* to make
//! tools is [`crate::rest_import`].
//!
//! Gemini's `parameters` and `response` schemas: JSON Schema 2020-12 turned into the
//! OpenAPI 3.0 subset that the Gemini API and Vertex accept (their `Schema` type).
//!
//! The transform keeps what the subset can say and records everything else:
//! - `$ref`s are inlined; a recursive reference is unrolled [`RECURSION_LIMIT`] times,
//!   and the property that would recurse further is left out;
//! - `type: [T, "null"]`, a `{type: "null"}` branch and a `null` enum member become
//!   `nullable: true`; several types become an `anyOf` of one type each;
//! - `oneOf` becomes `anyOf`, `allOf` is merged into one schema, keywords beside a
//!   union move into each branch, a string `const` becomes a one-value `enum`;
//! - enums are kept on strings only (the API's rule); other enums are dropped and
//!   their values listed in the description;
//! - type names are upper case (`OBJECT`, `STRING`, ...), as the API reference writes them;
//! - every other keyword outside the subset is dropped.
//!
//! An object without properties goes out as `{type: OBJECT}` with no `properties`
//! key: the API refuses an explicitly empty `properties` map, and google-genai's own
//! JSON Schema converter sends open maps this way. At the root the caller decides
//! (a function without parameters is declared without `parameters`). What the
//! transform cannot fix, an array without `items`, it reports as a problem.
//!
//! The walk over a schema is here; `$ref`s are inlined in `refs`, `allOf` merged
//! in `merge`, several types and unions in `union`, and every other keyword is
//! read in `keywords`.

mod keywords;
mod merge;
mod refs;
mod union;

use indexmap::IndexSet;
use serde_json::{Map, Value};

/// How many times one `$ref` may be unrolled inside itself before it is cut.
pub(crate) const RECURSION_LIMIT: usize = 3;
/// Schemas nested deeper than this are cut (keeps the output, and the stack, bounded).
const MAX_DEPTH: usize = 64;
/// `$ref` expansions per schema; bounds the output of schemas that share definitions widely.
const MAX_EXPANSIONS: usize = 2_000;

/// Keywords that describe a schema without constraining it; they stay beside a union.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "example",
    "examples",
    "$comment",
    "$schema",
    "$id",
    "$defs",
    "definitions",
];

/// The result of [`to_openapi`]: the schema, and what happened on the way, as
/// (JSON pointer into the source schema, message) pairs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpenApi {
    pub schema: Value,
    pub changes: Vec<(String, String)>,
    pub problems: Vec<(String, String)>,
}

/// Turns `schema` into the OpenAPI subset.
pub(crate) fn to_openapi(schema: &Value) -> OpenApi {
    let mut transform = Transform {
        root: schema,
        refs: Vec::new(),
        expansions: 0,
        changes: IndexSet::new(),
        problems: IndexSet::new(),
    };
    let schema = match transform.node(schema, "", 0) {
        Some(map) => Value::Object(map),
        None => {
            transform.problem(
                "",
                "nothing of this schema can be expressed in the API's schema subset",
            );
            Value::Object(Map::new())
        }
    };
    OpenApi {
        schema,
        changes: transform.changes.into_iter().collect(),
        problems: transform.problems.into_iter().collect(),
    }
}

/// Whether a rendered schema is an object that declares no properties: a function
/// whose parameters are that is declared without `parameters` (an explicitly empty
/// `properties` map is refused at the root).
pub(crate) fn is_empty_object(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("OBJECT")
        && schema
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
        && schema.get("anyOf").is_none()
}

/// Whether a union branch only constrains which properties are present
/// (`{required: [...]}`, the "at least one of" idiom). Such a union at the root
/// cannot be expressed by Gemini or Anthropic, and dropping it loses no shape.
pub(crate) fn constraint_only(branch: &Value) -> bool {
    branch.as_object().is_some_and(|map| {
        map.keys().all(|key| {
            matches!(
                key.as_str(),
                "required" | "minProperties" | "maxProperties" | "description" | "title"
            )
        })
    })
}

struct Transform<'a> {
    root: &'a Value,
    /// The `$ref` targets being expanded, outermost first.
    refs: Vec<String>,
    expansions: usize,
    changes: IndexSet<(String, String)>,
    problems: IndexSet<(String, String)>,
}

impl Transform<'_> {
    fn change(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.changes.insert((path.into(), message.into()));
    }

    fn problem(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.problems.insert((path.into(), message.into()));
    }

    /// One schema; `None` when it is cut (recursion, depth) or allows nothing.
    fn node(&mut self, schema: &Value, src: &str, depth: usize) -> Option<Map<String, Value>> {
        if depth > MAX_DEPTH {
            self.change(
                src,
                format!("nested deeper than {MAX_DEPTH} levels; cut here"),
            );
            return None;
        }
        let object = match schema {
            Value::Object(object) => object,
            Value::Bool(true) => return Some(Map::new()),
            Value::Bool(false) => {
                self.change(
                    src,
                    "`false` (no value allowed) cannot be expressed; left out",
                );
                return None;
            }
            _ => {
                self.problem(src, "not a schema (expected an object or a boolean)");
                return Some(Map::new());
            }
        };
        if let Some(reference) = object.get("$ref") {
            return self.reference(object, reference, src, depth);
        }
        let mut raw = object.clone();
        self.merge_all_of(&mut raw, src);
        self.split_types(&mut raw, src);
        self.fold_into_union(&mut raw, src, depth);
        self.keywords(&raw, src, depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Keywords of the Gemini `Schema` type this transform emits (google-genai 3.6.1, minus
    /// `additionalProperties`, `defs` and `ref`, which the Gemini API refuses in places).
    const GEMINI_KEYWORDS: &[&str] = &[
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "properties",
        "required",
        "propertyOrdering",
        "items",
        "anyOf",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "default",
        "example",
    ];

    pub(super) fn convert(schema: Value) -> OpenApi {
        to_openapi(&schema)
    }

    pub(super) fn messages(list: &[(String, String)]) -> Vec<String> {
        list.iter()
            .map(|(path, message)| format!("{path}: {message}"))
            .collect()
    }

    #[test]
    fn a_plain_schema_only_changes_its_type_names() {
        let out = convert(json!({
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}, "days": {"type": "integer", "minimum": 1}},
            "required": ["city"]
        }));
        assert_eq!(
            out.schema,
            json!({
                "type": "OBJECT",
                "properties": {"city": {"type": "STRING", "description": "City name"}, "days": {"type": "INTEGER", "minimum": 1}},
                "required": ["city"]
            })
        );
        assert!(out.changes.is_empty(), "{:?}", out.changes);
        assert!(out.problems.is_empty());
    }

    #[test]
    fn bad_shapes_give_notes_not_panics() {
        for schema in [
            json!(null),
            json!(3),
            json!({"type": 7, "properties": [], "required": "x", "enum": {}, "anyOf": 1, "items": "no"}),
            json!({"$ref": 5}),
            json!({"$ref": "#/nowhere"}),
            json!({"$ref": "https://example.com/schema"}),
            json!({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}),
            json!({"type": "object", "properties": {"x": false}}),
        ] {
            let _ = convert(schema);
        }
    }

    /// Every key of every schema node (values of `properties` are nodes, not keys).
    fn check_keywords(schema: &Value, path: &str) -> Result<(), String> {
        let map = schema
            .as_object()
            .ok_or(format!("{path} is not an object"))?;
        for (key, value) in map {
            if !GEMINI_KEYWORDS.contains(&key.as_str()) {
                return Err(format!("{path} has `{key}`"));
            }
            match key.as_str() {
                "type" => {
                    let ty = value
                        .as_str()
                        .ok_or(format!("{path}/type is not a string"))?;
                    if ![
                        "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL",
                    ]
                    .contains(&ty)
                    {
                        return Err(format!("{path}/type is `{ty}`"));
                    }
                }
                "enum"
                    if !value
                        .as_array()
                        .is_some_and(|l| l.iter().all(Value::is_string))
                        || map.get("type") != Some(&json!("STRING")) =>
                {
                    return Err(format!("{path}/enum is not a list of strings on a STRING"));
                }
                "properties" => {
                    for (name, child) in value.as_object().ok_or(format!("{path}/properties"))? {
                        check_keywords(child, &format!("{path}/properties/{name}"))?;
                    }
                }
                "items" => check_keywords(value, &format!("{path}/items"))?,
                "anyOf" => {
                    for (i, child) in value
                        .as_array()
                        .ok_or(format!("{path}/anyOf"))?
                        .iter()
                        .enumerate()
                    {
                        check_keywords(child, &format!("{path}/anyOf/{i}"))?;
                    }
                }
                "required" => {
                    let properties = map.get("properties").and_then(Value::as_object);
                    for name in value.as_array().ok_or(format!("{path}/required"))? {
                        if !name
                            .as_str()
                            .is_some_and(|n| properties.is_some_and(|p| p.contains_key(n)))
                        {
                            return Err(format!("{path}/required names {name}, not a property"));
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// JSON Schemas built from the keywords tools use, including the unsupported ones.
    fn any_schema() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(json!({"type": "string"})),
            Just(json!({"type": "string", "format": "uri", "minLength": 1})),
            Just(json!({"type": "integer", "exclusiveMinimum": 0, "enum": [1, 2]})),
            Just(json!({"type": ["number", "null"], "multipleOf": 0.5})),
            Just(json!({"const": "fixed"})),
            Just(json!({"const": 3})),
            Just(json!({"enum": ["a", null, 2]})),
            Just(json!({"type": "boolean", "default": false})),
            Just(json!({"type": "null"})),
            Just(json!({"$ref": "#/$defs/Node"})),
            Just(json!({"$ref": "#"})),
            Just(json!({})),
            Just(json!(true)),
            Just(json!({"type": "object"})),
            Just(json!({"type": ["string", "integer", "null"], "pattern": "^a", "maximum": 9})),
        ];
        leaf.prop_recursive(4, 48, 4, |inner| {
            prop_oneof![
                proptest::collection::btree_map("[a-z]{1,6}", inner.clone(), 1..4).prop_map(|properties| {
                    let required: Vec<&String> = properties.keys().take(1).collect();
                    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
                }),
                inner.clone().prop_map(|items| json!({"type": "array", "items": items, "uniqueItems": true})),
                proptest::collection::vec(inner.clone(), 1..4).prop_map(|branches| json!({"anyOf": branches})),
                proptest::collection::vec(inner.clone(), 1..4).prop_map(|branches| json!({"oneOf": branches, "description": "one"})),
                proptest::collection::vec(inner.clone(), 1..3).prop_map(|branches| json!({"allOf": branches})),
                inner.clone().prop_map(|schema| json!({"type": "object", "properties": {"x": schema}, "not": {"required": ["y"]}})),
                proptest::collection::vec(inner, 1..3).prop_map(|tuple| json!({"type": "array", "prefixItems": tuple})),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_output_only_uses_keywords_the_gemini_schema_type_accepts(schema in any_schema()) {
            let schema = json!({
                "type": "object",
                "properties": {"value": schema},
                "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}, "label": {"type": "string"}}}}
            });
            let out = to_openapi(&schema);
            if let Err(message) = check_keywords(&out.schema, "") {
                prop_assert!(false, "{message}\n{}", serde_json::to_string_pretty(&out.schema).unwrap_or_default());
            }
        }
    }
}
