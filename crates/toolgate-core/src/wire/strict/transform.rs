//! The transform: [`make_strict`] walks a schema node by node, inlining `$ref`s
//! (keeping recursive ones under `$defs` for OpenAI), rewriting each node keyword
//! by keyword and recording every change. Merging `allOf` and distributing into
//! `anyOf` are in `merge`, objects and their optional properties in `object`;
//! this file holds the walk itself.

use serde_json::{Map, Value, json};

use super::keywords::{Action, keyword_action};
use super::schema::{at, compact, def_location, is_primitive, resolve, types_of};
use super::{Strict, StrictDialect, is_strict};
use crate::wire::pointer::escape;

/// Rewrites `schema` for `dialect`'s strict mode. `Err(reason)` when it cannot be
/// made strict without changing what it accepts (e.g. an open map, a root that is
/// not an object) or when the result would exceed a documented limit.
pub(crate) fn make_strict(schema: &Value, dialect: StrictDialect) -> Result<Strict, String> {
    let mut t = Transform {
        root: schema,
        dialect,
        changes: Vec::new(),
        nullable: Vec::new(),
        stack: vec!["#".to_owned()],
        recursive: Vec::new(),
        nodes: 0,
        nesting: 0,
    };
    let root = t.node(schema, "", Some(&[]), true)?;
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the root of a strict schema must be an object".to_owned());
    }
    let mut root = root;
    let mut done = 0;
    while done < t.recursive.len() {
        let reference = t.recursive[done].clone();
        done += 1;
        if reference == "#" {
            continue;
        }
        let (container, name) = def_location(&reference).ok_or_else(|| {
            format!("the recursive `$ref` {reference} must point into `$defs` or `definitions`")
        })?;
        let target = resolve(schema, &reference)
            .ok_or_else(|| format!("`$ref` {reference} points to nothing"))?;
        t.stack = vec!["#".to_owned(), reference.clone()];
        let pointer = format!("/{container}/{}", escape(&name));
        let def = t.node(target, &pointer, None, false)?;
        if def.get("$ref").is_some() {
            return Err(format!("`$ref` {reference} refers only to itself"));
        }
        if let Some(object) = root.as_object_mut() {
            let defs = object
                .entry(container)
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(defs) = defs.as_object_mut() {
                defs.insert(name, def);
            }
        }
    }
    is_strict(&root, dialect)?;
    Ok(Strict {
        schema: root,
        changes: t.changes,
        nullable_optionals: t.nullable,
    })
}

/// Guards against runaway input (self-referencing `allOf`, enormous schemas).
const MAX_NODES: usize = 100_000;
pub(super) const MAX_NESTING: usize = 256;

/// One run of the transform over one schema: where it is, and what it has changed
/// and recorded so far.
pub(super) struct Transform<'a> {
    pub(super) root: &'a Value,
    pub(super) dialect: StrictDialect,
    changes: Vec<(String, String)>,
    pub(super) nullable: Vec<Vec<String>>,
    /// The `$ref`s being inlined, outermost first ("#" is the root).
    pub(super) stack: Vec<String>,
    /// `$ref`s kept as references because they recurse (OpenAI only).
    recursive: Vec<String>,
    nodes: usize,
    nesting: usize,
}

impl Transform<'_> {
    pub(super) fn change(&mut self, pointer: &str, message: impl Into<String>) {
        self.changes.push((pointer.to_owned(), message.into()));
    }

    /// One schema node. `keys` is the property path from the root while it is one
    /// (through `properties` only); `None` below arrays, unions and recursive definitions.
    pub(super) fn node(
        &mut self,
        schema: &Value,
        ptr: &str,
        keys: Option<&[String]>,
        is_root: bool,
    ) -> Result<Value, String> {
        self.nodes += 1;
        if self.nodes > MAX_NODES || self.nesting > MAX_NESTING {
            return Err("the schema is too large or too deeply nested to make strict".to_owned());
        }
        self.nesting += 1;
        let result = self.node_inner(schema, ptr, keys, is_root);
        self.nesting -= 1;
        result
    }

    fn node_inner(
        &mut self,
        schema: &Value,
        ptr: &str,
        keys: Option<&[String]>,
        is_root: bool,
    ) -> Result<Value, String> {
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(true) => {
                return Err(format!(
                    "{} accepts any value; strict mode needs a type",
                    at(ptr)
                ));
            }
            Value::Bool(false) => return Err(format!("{} accepts no value at all", at(ptr))),
            _ => return Err(format!("{} is not a schema", at(ptr))),
        };
        if let Some(reference) = map.get("$ref") {
            return self.reference(map, reference, ptr, keys, is_root);
        }
        if map.contains_key("allOf") {
            let merged = self.merge_all_of(map, ptr)?;
            self.change(
                ptr,
                "merged `allOf` into one schema (strict mode does not support `allOf`)",
            );
            return self.node(&Value::Object(merged), ptr, keys, is_root);
        }
        if map.contains_key("oneOf") {
            if map.contains_key("anyOf") {
                return Err(format!(
                    "{} has both `anyOf` and `oneOf`; strict mode supports one `anyOf`",
                    at(ptr)
                ));
            }
            let renamed: Map<String, Value> = map
                .iter()
                .map(|(k, v)| {
                    (
                        if k == "oneOf" {
                            "anyOf".to_owned()
                        } else {
                            k.clone()
                        },
                        v.clone(),
                    )
                })
                .collect();
            self.change(ptr, "`oneOf` became `anyOf` (strict mode does not support `oneOf`); the model may match several branches");
            return self.node(&Value::Object(renamed), ptr, keys, is_root);
        }
        if map.contains_key("anyOf") {
            if is_root {
                return Err(
                    "the root of a strict schema must be an object, not a union (`anyOf`)"
                        .to_owned(),
                );
            }
            if let Some(distributed) = self.distribute_into_any_of(map, ptr)? {
                return self.node(&Value::Object(distributed), ptr, keys, is_root);
            }
        }
        self.keywords(map, ptr, keys, is_root)
    }

    /// `$ref`: inlined, or kept when it recurses (OpenAI).
    fn reference(
        &mut self,
        map: &Map<String, Value>,
        reference: &Value,
        ptr: &str,
        keys: Option<&[String]>,
        is_root: bool,
    ) -> Result<Value, String> {
        let reference = reference
            .as_str()
            .ok_or_else(|| format!("{}: `$ref` is not a string", at(ptr)))?;
        if self.stack.iter().any(|r| r == reference) {
            if self.dialect == StrictDialect::Anthropic {
                return Err(format!(
                    "{} refers back to {reference}: Anthropic strict mode does not support recursive schemas",
                    at(ptr)
                ));
            }
            if is_root {
                return Err(
                    "the root of a strict schema must be an object, not a `$ref`".to_owned(),
                );
            }
            if reference != "#" && def_location(reference).is_none() {
                return Err(format!(
                    "the recursive `$ref` {reference} must point into `$defs` or `definitions`"
                ));
            }
            if !self.recursive.iter().any(|r| r == reference) {
                self.recursive.push(reference.to_owned());
            }
            for key in map.keys().filter(|k| *k != "$ref") {
                self.change(ptr, format!("removed `{key}` beside the recursive `$ref` {reference} (strict mode allows nothing beside `$ref`)"));
            }
            return Ok(json!({ "$ref": reference }));
        }
        let target = resolve(self.root, reference).ok_or_else(|| {
            format!(
                "{}: `$ref` {reference} points to nothing in this schema",
                at(ptr)
            )
        })?;
        let mut merged = match target {
            Value::Object(target) => target.clone(),
            other => return self.node(other, ptr, keys, is_root),
        };
        for (key, value) in map.iter().filter(|(k, _)| *k != "$ref") {
            merged.insert(key.clone(), value.clone());
        }
        self.change(ptr, format!("inlined `$ref` {reference}"));
        self.stack.push(reference.to_owned());
        let result = self.node(&Value::Object(merged), ptr, keys, is_root);
        self.stack.pop();
        result
    }

    /// A node without `$ref`, `allOf` or `oneOf`: keyword by keyword.
    fn keywords(
        &mut self,
        map: &Map<String, Value>,
        ptr: &str,
        keys: Option<&[String]>,
        is_root: bool,
    ) -> Result<Value, String> {
        let mut types = types_of(map.get("type")).map_err(|e| format!("{}: {e}", at(ptr)))?;
        let mut out = Map::new();
        let has_union = map.contains_key("anyOf");
        let has_literal = map.contains_key("enum") || map.contains_key("const");
        if types.is_empty() && !has_union && !has_literal {
            let inferred = if is_root || map.contains_key("properties") {
                "object"
            } else if map.contains_key("items") {
                "array"
            } else {
                return Err(format!(
                    "{} has no `type`, so it accepts any value; strict mode needs a type",
                    at(ptr)
                ));
            };
            self.change(ptr, format!("added `type: {inferred}`"));
            out.insert("type".to_owned(), json!(inferred));
            types.push(inferred.to_owned());
        }
        if is_root && types.iter().any(|t| t != "object") {
            return Err("the root of a strict schema must be an object".to_owned());
        }
        let is_object = types.iter().any(|t| t == "object");
        let is_array = types.iter().any(|t| t == "array");
        let mut folds: Vec<String> = Vec::new();
        let mut object_done = false;
        for (key, value) in map {
            match key.as_str() {
                "type" | "title" => {
                    out.insert(key.clone(), value.clone());
                }
                "description" => {
                    if value.is_string() {
                        out.insert(key.clone(), value.clone());
                    } else {
                        self.change(ptr, "removed `description` (not a string)");
                    }
                }
                "enum" => {
                    let valid = value
                        .as_array()
                        .is_some_and(|v| !v.is_empty() && v.iter().all(is_primitive));
                    if !valid {
                        return Err(format!(
                            "{}: strict mode needs `enum` to be a non-empty list of strings, numbers, booleans or null",
                            at(ptr)
                        ));
                    }
                    out.insert(key.clone(), value.clone());
                }
                "const" => {
                    if !is_primitive(value) {
                        return Err(format!(
                            "{}: strict mode needs `const` to be a string, number, boolean or null",
                            at(ptr)
                        ));
                    }
                    out.insert(key.clone(), value.clone());
                }
                "anyOf" => {
                    let branches = value
                        .as_array()
                        .filter(|b| !b.is_empty())
                        .ok_or_else(|| format!("{}: `anyOf` must be a non-empty list", at(ptr)))?;
                    // `anyOf: [X, {type: null}]` (an optional X): key paths run on into X,
                    // since the value there is either null or an X.
                    let is_null = |b: &Value| *b == json!({"type": "null"});
                    let only_one = branches.iter().filter(|b| !is_null(b)).count() == 1;
                    let mut new = Vec::with_capacity(branches.len());
                    for (i, branch) in branches.iter().enumerate() {
                        let branch_keys = if only_one && !is_null(branch) {
                            keys
                        } else {
                            None
                        };
                        new.push(self.node(
                            branch,
                            &format!("{ptr}/anyOf/{i}"),
                            branch_keys,
                            false,
                        )?);
                    }
                    out.insert(key.clone(), Value::Array(new));
                }
                "properties"
                | "required"
                | "additionalProperties"
                | "patternProperties"
                | "unevaluatedProperties" => {
                    if is_object && !object_done {
                        self.object(map, ptr, keys, is_root, &mut out)?;
                        object_done = true;
                    } else if !is_object {
                        self.change(ptr, format!("removed `{key}` (an object keyword on a schema that is not an object)"));
                    }
                }
                "items" => {
                    if !is_array {
                        self.change(
                            ptr,
                            "removed `items` (an array keyword on a schema that is not an array)",
                        );
                        continue;
                    }
                    let items = self.node(value, &format!("{ptr}/items"), None, false)?;
                    out.insert(key.clone(), items);
                }
                "prefixItems" => {
                    return Err(format!(
                        "{} is a tuple (`prefixItems`); strict mode supports only arrays of one item schema",
                        at(ptr)
                    ));
                }
                "$defs" | "definitions" => {}
                _ => match keyword_action(self.dialect, key, value) {
                    Action::Keep => {
                        out.insert(key.clone(), value.clone());
                    }
                    Action::Fold(text) => {
                        self.change(ptr, format!("removed `{key}: {}` (not supported in strict mode); the description says it instead", compact(value)));
                        folds.push(text);
                    }
                    Action::Drop(reason) => {
                        self.change(ptr, format!("removed `{key}` ({reason})"));
                    }
                    Action::Silent => {}
                },
            }
        }
        if is_object && !object_done {
            self.object(map, ptr, keys, is_root, &mut out)?;
        }
        if is_array && !map.contains_key("items") {
            return Err(format!(
                "{} is an array with no `items`; strict mode needs the item schema",
                at(ptr)
            ));
        }
        if !folds.is_empty() {
            let folded = format!("({})", folds.join("; "));
            let description = match out.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{d} {folded}"),
                _ => folded,
            };
            out.insert("description".to_owned(), Value::String(description));
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::strict::tests::openai;

    #[test]
    fn a_root_that_is_not_an_object_cannot_be_made_strict() {
        for schema in [
            json!({"type": "string"}),
            json!({"anyOf": [{"type": "object", "properties": {}}]}),
            json!(true),
        ] {
            assert!(
                make_strict(&schema, StrictDialect::OpenAi).is_err(),
                "{schema}"
            );
        }
    }

    #[test]
    fn a_ref_with_siblings_is_inlined_and_a_recursive_ref_is_kept_under_defs() {
        let s = openai(json!({"type": "object", "properties": {
            "home": {"$ref": "#/$defs/place", "description": "Home"},
            "tree": {"$ref": "#/$defs/node"}
        }, "required": ["home", "tree"], "$defs": {
            "place": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["children"]}
        }}));
        assert_eq!(s.schema["properties"]["home"]["description"], "Home");
        assert_eq!(
            s.schema["properties"]["home"]["properties"]["city"],
            json!({"type": "string"})
        );
        assert_eq!(
            s.schema["properties"]["tree"]["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/node"})
        );
        assert!(s.schema["$defs"]["node"].is_object());
        assert!(s.schema["$defs"].get("place").is_none());
    }

    #[test]
    fn anthropic_refuses_recursion() {
        let schema = json!({"type": "object", "properties": {"tree": {"$ref": "#"}}});
        let err = make_strict(&schema, StrictDialect::Anthropic).unwrap_err();
        assert!(err.contains("does not support recursive schemas"), "{err}");
    }

    #[test]
    fn a_value_of_any_type_and_a_tuple_are_refused() {
        for schema in [
            json!({"type": "object", "properties": {"x": {}}}),
            json!({"type": "object", "properties": {"x": {"type": "array"}}}),
            json!({"type": "object", "properties": {"x": {"type": "array", "prefixItems": [{"type": "string"}]}}}),
        ] {
            assert!(
                make_strict(&schema, StrictDialect::OpenAi).is_err(),
                "{schema}"
            );
        }
    }

    #[test]
    fn malformed_schemas_give_reasons_not_panics() {
        for schema in [
            json!(null),
            json!({"type": 3}),
            json!({"type": "object", "properties": []}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}),
            json!({"type": "object", "properties": {"a": {"$ref": 7}}}),
            json!({"type": "object", "required": [1]}),
            json!({"type": "object", "properties": {"a": {"allOf": [{"$ref": "#/$defs/x"}]}}, "$defs": {"x": {"allOf": [{"$ref": "#/$defs/x"}]}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"$ref": "#/$defs/x"}}}),
        ] {
            assert!(
                make_strict(&schema, StrictDialect::OpenAi).is_err(),
                "{schema}"
            );
        }
    }
}
