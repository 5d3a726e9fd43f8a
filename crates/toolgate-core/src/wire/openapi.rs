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

use indexmap::IndexSet;
use serde_json::{Map, Value, json};

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

/// Escapes one JSON-pointer segment.
pub(crate) fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

struct Transform<'a> {
    root: &'a Value,
    /// The `$ref` targets being expanded, outermost first.
    refs: Vec<String>,
    expansions: usize,
    changes: IndexSet<(String, String)>,
    problems: IndexSet<(String, String)>,
}

/// Which side wins when two schemas set the same keyword to different values.
#[derive(Clone, Copy, PartialEq)]
enum Prefer {
    Base,
    Extra,
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

    /// Inlines a `$ref` (its siblings win over the target's keywords).
    fn reference(
        &mut self,
        object: &Map<String, Value>,
        reference: &Value,
        src: &str,
        depth: usize,
    ) -> Option<Map<String, Value>> {
        let mut siblings = object.clone();
        siblings.remove("$ref");
        let ref_src = format!("{src}/$ref");
        let Some(pointer) = reference
            .as_str()
            .and_then(|r| r.strip_prefix('#'))
            .map(percent_decode)
        else {
            self.problem(
                ref_src,
                "only references inside this schema (`#/...`) can be inlined; `$ref` dropped",
            );
            return self.node(&Value::Object(siblings), src, depth);
        };
        let Some(target) = self.root.pointer(&pointer) else {
            self.problem(
                ref_src,
                format!("`#{pointer}` points nowhere in this schema; `$ref` dropped"),
            );
            return self.node(&Value::Object(siblings), src, depth);
        };
        if self.refs.iter().filter(|r| **r == pointer).count() >= RECURSION_LIMIT {
            self.change(
                src,
                format!("recursive `$ref` to `#{pointer}` cut after {RECURSION_LIMIT} levels"),
            );
            return None;
        }
        if self.expansions >= MAX_EXPANSIONS {
            self.change(
                src,
                format!("more than {MAX_EXPANSIONS} `$ref` expansions; cut here"),
            );
            return None;
        }
        self.expansions += 1;
        let merged = match target {
            Value::Object(target) => {
                let mut merged = target.clone();
                merge(&mut merged, &siblings, Prefer::Extra);
                Value::Object(merged)
            }
            Value::Bool(true) => Value::Object(siblings),
            other => other.clone(),
        };
        self.refs.push(pointer.clone());
        let out = self.node(&merged, &pointer, depth + 1);
        self.refs.pop();
        out
    }

    /// Merges `allOf` branches into the schema itself.
    fn merge_all_of(&mut self, raw: &mut Map<String, Value>, src: &str) {
        // A merged branch may bring its own `allOf`; a few rounds cover real schemas.
        for _ in 0..8 {
            let Some(all_of) = raw.remove("allOf") else {
                return;
            };
            let all_src = format!("{src}/allOf");
            let Value::Array(branches) = all_of else {
                self.change(all_src, "`allOf` is not a list; dropped");
                return;
            };
            let mut conflicts = Vec::new();
            for (i, branch) in branches.iter().enumerate() {
                match self.resolve_raw(branch) {
                    Some(branch) => conflicts.extend(merge(raw, &branch, Prefer::Base)),
                    None => self.change(
                        format!("{all_src}/{i}"),
                        "this `allOf` branch cannot be merged (its `$ref` is recursive, unresolvable or past the expansion limit); dropped",
                    ),
                }
            }
            self.change(
                &all_src,
                "`allOf` merged into one schema (the API has no `allOf`)",
            );
            for key in conflicts {
                self.change(
                    &all_src,
                    format!("`allOf` branches disagree on `{key}`; the first value is kept"),
                );
            }
        }
    }

    /// A branch as a plain object, following `$ref` chains. A reference to the root
    /// or to a schema being expanded is recursion that merging cannot flatten (each
    /// merge would bring the reference back), so such a branch is `None`; every
    /// reference followed counts against [`MAX_EXPANSIONS`].
    fn resolve_raw(&mut self, branch: &Value) -> Option<Map<String, Value>> {
        let mut current = branch.as_object()?.clone();
        for _ in 0..16 {
            let Some(reference) = current.remove("$ref") else {
                return Some(current);
            };
            let pointer = reference.as_str()?.strip_prefix('#').map(percent_decode)?;
            if pointer.is_empty() || self.refs.contains(&pointer) {
                return None;
            }
            self.expansions += 1;
            if self.expansions > MAX_EXPANSIONS {
                return None;
            }
            let mut target = self.root.pointer(&pointer)?.as_object()?.clone();
            merge(&mut target, &current, Prefer::Extra);
            current = target;
        }
        None
    }

    /// `type: [A, B]` becomes `anyOf: [{type: A, ...}, {type: B, ...}]`, each branch
    /// taking the keywords that apply to its type.
    fn split_types(&mut self, raw: &mut Map<String, Value>, src: &str) {
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
    fn fold_into_union(&mut self, raw: &mut Map<String, Value>, src: &str, depth: usize) {
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

    /// The keywords of a schema without `$ref`, `allOf` or several types.
    fn keywords(
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

    /// `anyOf` / `oneOf`, with `null` branches turned into `nullable`.
    fn union(
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

enum Union {
    None,
    One(Map<String, Value>),
    Branches(Vec<Map<String, Value>>),
}

/// Merges `extra` into `base`: properties and `required` are united, types
/// intersected, a property both declare gets both schemas (`allOf`). Returns the
/// keywords where the two disagreed and `prefer`'s side was kept.
fn merge(base: &mut Map<String, Value>, extra: &Map<String, Value>, prefer: Prefer) -> Vec<String> {
    let mut conflicts = Vec::new();
    for (key, value) in extra {
        let Some(existing) = base.get_mut(key) else {
            base.insert(key.clone(), value.clone());
            continue;
        };
        if existing == value {
            continue;
        }
        match (key.as_str(), existing, value) {
            ("properties", Value::Object(mine), Value::Object(theirs)) => {
                for (name, schema) in theirs {
                    match mine.get_mut(name) {
                        None => {
                            mine.insert(name.clone(), schema.clone());
                        }
                        Some(own) if own == schema => {}
                        Some(own) => *own = json!({"allOf": [own.clone(), schema.clone()]}),
                    }
                }
            }
            ("required", Value::Array(mine), Value::Array(theirs)) => {
                for name in theirs {
                    if !mine.contains(name) {
                        mine.push(name.clone());
                    }
                }
            }
            ("type", existing, value) => match intersect_types(existing, value) {
                Some(ty) => *existing = ty,
                None => conflicts.push(key.clone()),
            },
            (_, existing, value) => {
                if prefer == Prefer::Extra {
                    *existing = value.clone();
                }
                if !ANNOTATIONS.contains(&key.as_str()) {
                    conflicts.push(key.clone());
                }
            }
        }
    }
    conflicts
}

/// The types both `a` and `b` allow (`integer` is a `number`), or `None` if none.
fn intersect_types(a: &Value, b: &Value) -> Option<Value> {
    let names = |v: &Value| -> Vec<String> {
        match v {
            Value::String(s) => vec![s.clone()],
            Value::Array(list) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        }
    };
    let (a, b) = (names(a), names(b));
    let mut both: Vec<String> = Vec::new();
    for x in &a {
        for y in &b {
            let common = match (x.as_str(), y.as_str()) {
                (x, y) if x == y => Some(x),
                ("integer", "number") | ("number", "integer") => Some("integer"),
                _ => None,
            };
            if let Some(common) = common
                && !both.iter().any(|t| t == common)
            {
                both.push(common.to_owned());
            }
        }
    }
    match both.len() {
        0 => None,
        1 => Some(Value::String(both.remove(0))),
        _ => Some(Value::Array(both.into_iter().map(Value::String).collect())),
    }
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

/// Decodes `%XX` escapes in a URI fragment.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

    fn convert(schema: Value) -> OpenApi {
        to_openapi(&schema)
    }

    fn messages(list: &[(String, String)]) -> Vec<String> {
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
    fn a_recursive_ref_is_unrolled_to_the_limit_and_then_cut() {
        let out = convert(json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            }}}
        }));
        let mut node = &out.schema["properties"]["root"];
        for _ in 0..RECURSION_LIMIT - 1 {
            assert_eq!(node["properties"]["name"]["type"], "STRING");
            node = &node["properties"]["children"]["items"];
        }
        assert_eq!(node["properties"]["name"]["type"], "STRING");
        assert!(node["properties"].get("children").is_none(), "{node}");
        let changes = messages(&out.changes);
        assert!(changes.contains(&"/$defs/Node/properties/children/items: recursive `$ref` to `#/$defs/Node` cut after 3 levels".to_owned()), "{changes:#?}");
        assert!(changes.contains(&"/$defs/Node/properties/children: property `children` left out (its schema was cut)".to_owned()));
        assert!(out.problems.is_empty(), "{:?}", out.problems);
    }

    #[test]
    fn a_self_referencing_root_does_not_loop() {
        let out = convert(json!({"$ref": "#"}));
        assert!(!out.problems.is_empty());
        let out = convert(
            json!({"type": "object", "properties": {"next": {"$ref": "#"}, "value": {"type": "number"}}}),
        );
        assert_eq!(
            out.schema["properties"]["next"]["properties"]["value"]["type"],
            "NUMBER"
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
    fn all_of_is_merged() {
        let out = convert(json!({
            "allOf": [
                {"$ref": "#/$defs/Base"},
                {"type": "object", "properties": {"extra": {"type": "boolean"}}, "required": ["extra"]}
            ],
            "$defs": {"Base": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}
        }));
        assert_eq!(
            out.schema,
            json!({"type": "OBJECT", "properties": {"id": {"type": "STRING"}, "extra": {"type": "BOOLEAN"}}, "required": ["id", "extra"]})
        );
    }

    #[test]
    fn a_nullable_multi_type_all_of_with_a_const_union_keeps_the_const_s_type() {
        let out = convert(json!({
            "type": "object",
            "properties": {"value": {"allOf": [
                {"type": ["string", "integer", "null"], "pattern": "^a"},
                {"anyOf": [{"const": "fixed"}]}
            ]}}
        }));
        let value = &out.schema["properties"]["value"];
        assert_eq!(value["type"], "STRING", "{value}");
        assert_eq!(value["enum"], json!(["fixed"]), "{value}");
    }

    #[test]
    fn a_recursive_ref_in_all_of_is_dropped_not_expanded_without_end() {
        // Found by the property test: merging the root into a union branch of itself
        // grew without bound.
        let out = convert(json!({
            "type": "object",
            "properties": {"value": {"allOf": [
                {"oneOf": [{"type": "integer"}, {}, {"type": "object", "properties": {"x": {"type": "string"}}}]},
                {"allOf": [{"$ref": "#"}, {"type": "string", "minLength": 1}]}
            ]}}
        }));
        assert!(
            out.changes
                .iter()
                .any(|c| c.1.contains("its `$ref` is recursive")),
            "{:?}",
            out.changes
        );
        assert!(out.schema.to_string().len() < 2_000, "{}", out.schema);
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
