//! Strict schemas: a tool's input schema rewritten into the subset an API's strict
//! mode (OpenAI Structured Outputs, Anthropic strict tool use) accepts, with every
//! change reported.
//!
//! What the transform does: every object is closed (`additionalProperties: false`);
//! for OpenAI every property is required and the optional ones become nullable (their
//! key paths are recorded so a `null` the model sends reads as absent again, see
//! [`CallReader::restore_optionals`](super::CallReader::restore_optionals));
//! `$ref`s are inlined (recursive ones kept under `$defs` for OpenAI, refused for
//! Anthropic); `allOf` is merged; `oneOf` becomes `anyOf`; keywords the mode does not
//! support are removed and their constraint is written into the description, where
//! the model can still follow it. A schema the transform cannot express without
//! changing its meaning (an open map, a tuple, a value of any type) is refused with
//! the reason, and the caller falls back to a non-strict declaration.
//!
//! Anthropic's strict mode accepts optional properties (it limits them to 24 per
//! request, and nullable unions to 16), so in that dialect optional properties stay
//! optional and nothing is made nullable.
//!
//! [`is_strict`] checks a schema against the same rules and the documented limits;
//! [`make_strict`] runs it on its own result before returning.

use serde_json::{Map, Value, json};

use super::{Note, Rendered};
use crate::ToolDescriptor;

/// Whose strict mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StrictDialect {
    /// OpenAI Structured Outputs (Chat Completions, Responses; Qwen follows it).
    OpenAi,
    /// Anthropic strict tool use.
    Anthropic,
}

/// A schema made strict, with what changed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Strict {
    pub schema: Value,
    /// `(JSON pointer in the strict schema, what changed)`.
    pub changes: Vec<(String, String)>,
    /// Property paths (object keys from the root) that were optional and became
    /// required and nullable; a `null` there means "absent".
    pub nullable_optionals: Vec<Vec<String>>,
}

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

/// `tool`'s input schema as a renderer declares it, and whether it is strict: made
/// strict when `strict` is asked for and possible (every change noted, the nullable
/// optionals recorded in `out.reader`), otherwise as declared, with the reason noted.
pub(crate) fn declare_parameters(
    tool: &ToolDescriptor,
    strict: bool,
    dialect: StrictDialect,
    out: &mut Rendered,
) -> (Value, bool) {
    if !strict {
        return (tool.input_schema.clone(), false);
    }
    match make_strict(&tool.input_schema, dialect) {
        Ok(made) => {
            out.changes.extend(
                made.changes
                    .into_iter()
                    .map(|(path, message)| Note::at(&tool.name, path, message)),
            );
            if !made.nullable_optionals.is_empty() {
                out.reader
                    .nullable_optionals
                    .insert(tool.name.clone(), made.nullable_optionals);
            }
            (made.schema, true)
        }
        Err(reason) => {
            out.changes.push(Note::tool(
                &tool.name,
                format!("declared without strict mode: {reason}"),
            ));
            (tool.input_schema.clone(), false)
        }
    }
}

/// Guards against runaway input (self-referencing `allOf`, enormous schemas).
const MAX_NODES: usize = 100_000;
const MAX_NESTING: usize = 256;

struct Transform<'a> {
    root: &'a Value,
    dialect: StrictDialect,
    changes: Vec<(String, String)>,
    nullable: Vec<Vec<String>>,
    /// The `$ref`s being inlined, outermost first ("#" is the root).
    stack: Vec<String>,
    /// `$ref`s kept as references because they recurse (OpenAI only).
    recursive: Vec<String>,
    nodes: usize,
    nesting: usize,
}

impl Transform<'_> {
    fn change(&mut self, pointer: &str, message: impl Into<String>) {
        self.changes.push((pointer.to_owned(), message.into()));
    }

    /// One schema node. `keys` is the property path from the root while it is one
    /// (through `properties` only); `None` below arrays, unions and recursive definitions.
    fn node(
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

    /// `allOf` merged into its parent: properties and `required` unite; any other
    /// keyword two branches give differently cannot be merged.
    fn merge_all_of(
        &mut self,
        map: &Map<String, Value>,
        ptr: &str,
    ) -> Result<Map<String, Value>, String> {
        let branches = map
            .get("allOf")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{}: `allOf` is not a list", at(ptr)))?;
        let mut merged: Map<String, Value> = map
            .iter()
            .filter(|(k, _)| *k != "allOf")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (i, branch) in branches.iter().enumerate() {
            let branch = self.expand_for_merge(branch, &format!("{ptr}/allOf/{i}"))?;
            for (key, value) in branch {
                match (key.as_str(), merged.get_mut(&key)) {
                    (_, None) => {
                        merged.insert(key, value);
                    }
                    ("properties", Some(Value::Object(existing))) => {
                        let Value::Object(more) = value else {
                            return Err(format!("{}: `properties` is not an object", at(ptr)));
                        };
                        for (name, schema) in more {
                            match existing.get(&name) {
                                Some(old) if *old != schema => {
                                    return Err(format!(
                                        "{}: the `allOf` branches declare `{name}` differently; strict mode cannot merge them",
                                        at(ptr)
                                    ));
                                }
                                Some(_) => {}
                                None => {
                                    existing.insert(name, schema);
                                }
                            }
                        }
                    }
                    ("required", Some(Value::Array(existing))) => {
                        for name in value.as_array().into_iter().flatten() {
                            if !existing.contains(name) {
                                existing.push(name.clone());
                            }
                        }
                    }
                    ("description" | "title" | "$comment" | "examples", Some(_)) => {}
                    (_, Some(existing)) if *existing == value => {}
                    (key, Some(_)) => {
                        return Err(format!(
                            "{}: the `allOf` branches disagree on `{key}`; strict mode cannot merge them",
                            at(ptr)
                        ));
                    }
                }
            }
        }
        Ok(merged)
    }

    /// An `allOf` branch as a plain map, its `$ref` (if any) resolved.
    fn expand_for_merge(
        &mut self,
        branch: &Value,
        ptr: &str,
    ) -> Result<Map<String, Value>, String> {
        let Value::Object(map) = branch else {
            return match branch {
                Value::Bool(true) => Ok(Map::new()),
                _ => Err(format!("{} is not a schema strict mode can merge", at(ptr))),
            };
        };
        let Some(reference) = map.get("$ref").and_then(Value::as_str) else {
            return Ok(map.clone());
        };
        if self.stack.iter().any(|r| r == reference) {
            return Err(format!(
                "{}: `allOf` with the recursive `$ref` {reference} cannot be made strict",
                at(ptr)
            ));
        }
        let Some(Value::Object(target)) = resolve(self.root, reference) else {
            return Err(format!(
                "{}: `$ref` {reference} points to no schema object",
                at(ptr)
            ));
        };
        let mut merged = target.clone();
        for (key, value) in map.iter().filter(|(k, _)| *k != "$ref") {
            merged.insert(key.clone(), value.clone());
        }
        self.change(ptr, format!("inlined `$ref` {reference}"));
        Ok(merged)
    }

    /// Keywords beside `anyOf` that constrain the value (not annotations) are moved
    /// into each branch, where strict mode can check them. `None` when there are none.
    fn distribute_into_any_of(
        &mut self,
        map: &Map<String, Value>,
        ptr: &str,
    ) -> Result<Option<Map<String, Value>>, String> {
        let structural: Vec<(&String, &Value)> = map
            .iter()
            .filter(|(k, _)| *k != "anyOf" && !is_annotation(k))
            .collect();
        if structural.is_empty() {
            return Ok(None);
        }
        let branches = map
            .get("anyOf")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{}: `anyOf` is not a list", at(ptr)))?;
        let mut new_branches = Vec::with_capacity(branches.len());
        for (i, branch) in branches.iter().enumerate() {
            let mut merged = match branch {
                Value::Object(b) => b.clone(),
                Value::Bool(true) => Map::new(),
                _ => return Err(format!("{}/anyOf/{i} is not a schema", at(ptr))),
            };
            for (key, value) in &structural {
                match merged.get(*key) {
                    Some(existing) if existing != *value => {
                        return Err(format!(
                            "{}: `{key}` beside `anyOf` conflicts with branch {i}; strict mode cannot merge them",
                            at(ptr)
                        ));
                    }
                    _ => {
                        merged.insert((*key).clone(), (*value).clone());
                    }
                }
            }
            new_branches.push(Value::Object(merged));
        }
        let names: Vec<String> = structural.iter().map(|(k, _)| format!("`{k}`")).collect();
        self.change(
            ptr,
            format!("moved {} beside `anyOf` into each branch", names.join(", ")),
        );
        let mut out: Map<String, Value> = map
            .iter()
            .filter(|(k, _)| is_annotation(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.insert("anyOf".to_owned(), Value::Array(new_branches));
        Ok(Some(out))
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

    /// `properties`, `required` and `additionalProperties: false` of an object.
    fn object(
        &mut self,
        map: &Map<String, Value>,
        ptr: &str,
        keys: Option<&[String]>,
        is_root: bool,
        out: &mut Map<String, Value>,
    ) -> Result<(), String> {
        let empty = Map::new();
        let properties = match map.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => return Err(format!("{}: `properties` is not an object", at(ptr))),
        };
        let allows_more = |v: Option<&Value>| v.is_some_and(|v| *v != Value::Bool(false));
        let pattern_properties = map
            .get("patternProperties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        let open = allows_more(map.get("additionalProperties"))
            || allows_more(map.get("unevaluatedProperties"))
            || pattern_properties;
        if properties.is_empty()
            && (open || (!is_root && map.get("additionalProperties").is_none()))
        {
            return Err(format!(
                "{} is an open map (an object with no fixed properties); strict mode accepts only objects with declared properties",
                at(ptr)
            ));
        }
        if open {
            return Err(format!(
                "{} accepts keys beyond its declared properties; strict mode closes every object",
                at(ptr)
            ));
        }
        let required: Vec<&str> = match map.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|n| {
                    n.as_str().ok_or_else(|| {
                        format!("{}: `required` holds a value that is not a name", at(ptr))
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(format!("{}: `required` is not a list", at(ptr))),
        };
        if let Some(missing) = required.iter().find(|r| !properties.contains_key(**r)) {
            return Err(format!(
                "{}: `{missing}` is required but not declared in `properties`",
                at(ptr)
            ));
        }
        let mut new_properties = Map::new();
        for (name, schema) in properties {
            let child_ptr = format!("{ptr}/properties/{}", escape(name));
            let child_keys: Option<Vec<String>> =
                keys.map(|k| k.iter().cloned().chain([name.clone()]).collect());
            let optional = !required.contains(&name.as_str());
            if optional && self.dialect == StrictDialect::OpenAi {
                match &child_keys {
                    Some(path) => {
                        self.nullable.push(path.clone());
                        self.change(&child_ptr, "optional: now required and nullable; a null the model sends reads as absent");
                    }
                    None => self.change(
                        &child_ptr,
                        "optional: now required and nullable; a null the model sends here is passed on as null (the path runs through an array, a union or a recursive definition)",
                    ),
                }
            }
            let mut child = self.node(schema, &child_ptr, child_keys.as_deref(), false)?;
            if optional && self.dialect == StrictDialect::OpenAi && make_nullable(&mut child) {
                self.change(&child_ptr, "it accepted null already: an explicit null and an absent value now read the same");
            }
            new_properties.insert(name.clone(), child);
        }
        let required: Vec<Value> = match self.dialect {
            StrictDialect::OpenAi => new_properties.keys().map(|k| json!(k)).collect(),
            StrictDialect::Anthropic => required.iter().map(|k| json!(k)).collect(),
        };
        out.insert("properties".to_owned(), Value::Object(new_properties));
        out.insert("required".to_owned(), Value::Array(required));
        out.insert("additionalProperties".to_owned(), Value::Bool(false));
        if map.get("additionalProperties").is_none() {
            if properties.is_empty() {
                self.change(ptr, "closed the object (`additionalProperties: false`): the tool takes no arguments");
            } else {
                self.change(ptr, "closed the object (`additionalProperties: false`)");
            }
        }
        for key in ["unevaluatedProperties", "patternProperties"] {
            if map.contains_key(key) {
                self.change(ptr, format!("removed `{key}` (the object is closed)"));
            }
        }
        Ok(())
    }
}

/// What to do with a keyword that is not structural.
enum Action {
    Keep,
    /// Removed; this text goes into the description.
    Fold(String),
    /// Removed, with this reason in the change note.
    Drop(&'static str),
    /// Removed without a note (it has no effect on what is accepted).
    Silent,
}

/// String formats each strict mode supports.
const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];
const ANTHROPIC_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

fn formats(dialect: StrictDialect) -> &'static [&'static str] {
    match dialect {
        StrictDialect::OpenAi => OPENAI_FORMATS,
        StrictDialect::Anthropic => ANTHROPIC_FORMATS,
    }
}

fn keyword_action(dialect: StrictDialect, key: &str, value: &Value) -> Action {
    let openai = dialect == StrictDialect::OpenAi;
    let v = compact(value);
    match key {
        "pattern" if openai => Action::Keep,
        "pattern" => Action::Fold(format!(
            "matching the regular expression `{}`",
            value.as_str().unwrap_or(&v)
        )),
        "format"
            if value
                .as_str()
                .is_some_and(|f| formats(dialect).contains(&f)) =>
        {
            Action::Keep
        }
        "format" => Action::Fold(format!("format: {}", value.as_str().unwrap_or(&v))),
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf"
        | "minItems" | "maxItems"
            if openai =>
        {
            Action::Keep
        }
        "minItems" if value.as_u64().is_some_and(|n| n <= 1) => Action::Keep,
        "minimum" => Action::Fold(format!("at least {v}")),
        "maximum" => Action::Fold(format!("at most {v}")),
        "exclusiveMinimum" => Action::Fold(format!("greater than {v}")),
        "exclusiveMaximum" => Action::Fold(format!("less than {v}")),
        "multipleOf" => Action::Fold(format!("a multiple of {v}")),
        "minItems" => Action::Fold(format!("at least {v} items")),
        "maxItems" => Action::Fold(format!("at most {v} items")),
        "minLength" => Action::Fold(format!("at least {v} characters")),
        "maxLength" => Action::Fold(format!("at most {v} characters")),
        "minProperties" => Action::Fold(format!("at least {v} entries")),
        "maxProperties" => Action::Fold(format!("at most {v} entries")),
        "uniqueItems" if *value == Value::Bool(true) => {
            Action::Fold("no duplicate items".to_owned())
        }
        "contains" => Action::Fold(format!("containing an item matching {v}")),
        "minContains" => Action::Fold(format!("at least {v} matching items")),
        "maxContains" => Action::Fold(format!("at most {v} matching items")),
        "default" if !openai => Action::Keep,
        "default" if value.is_null() => {
            Action::Drop("a `null` default says nothing a nullable field does not")
        }
        "default" => Action::Fold(format!("default: {v}")),
        "examples" => match value.as_array() {
            Some(list) if !list.is_empty() => Action::Fold(format!(
                "for example: {}",
                list.iter().map(compact).collect::<Vec<_>>().join(", ")
            )),
            _ => Action::Silent,
        },
        "deprecated" if *value == Value::Bool(true) => Action::Fold("deprecated".to_owned()),
        "not" => Action::Fold(format!("not matching {v}")),
        "if" => Action::Fold(format!("conditional: if {v}")),
        "then" => Action::Fold(format!("then {v}")),
        "else" => Action::Fold(format!("otherwise {v}")),
        "dependentRequired" => Action::Fold(
            dependent_required(value).unwrap_or_else(|| format!("dependent required: {v}")),
        ),
        "dependentSchemas" => Action::Fold(format!("dependent schemas: {v}")),
        "contentEncoding" => Action::Fold(format!("encoded as {}", value.as_str().unwrap_or(&v))),
        "contentMediaType" => {
            Action::Fold(format!("content type {}", value.as_str().unwrap_or(&v)))
        }
        "$schema" | "$id" | "$anchor" | "$dynamicAnchor" | "$comment" | "$vocabulary" => {
            Action::Silent
        }
        "uniqueItems" | "deprecated" | "readOnly" | "writeOnly" => Action::Silent,
        "nullable" => Action::Drop("an OpenAPI keyword, not JSON Schema"),
        _ => Action::Drop("not supported in strict mode"),
    }
}

fn dependent_required(value: &Value) -> Option<String> {
    let parts: Vec<String> = value
        .as_object()?
        .iter()
        .map(|(k, v)| {
            let others: Vec<String> = v
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| format!("`{}`", n.as_str().unwrap_or("?")))
                .collect();
            format!("when `{k}` is given, also give {}", others.join(", "))
        })
        .collect();
    Some(parts.join("; "))
}

/// Annotations: keywords that say something about a value but do not constrain it.
fn is_annotation(key: &str) -> bool {
    matches!(
        key,
        "description"
            | "title"
            | "default"
            | "examples"
            | "deprecated"
            | "readOnly"
            | "writeOnly"
            | "$comment"
            | "$schema"
            | "$id"
            | "$defs"
            | "definitions"
    )
}

/// Makes `schema` accept `null` as well; returns whether it already did.
fn make_nullable(schema: &mut Value) -> bool {
    let Some(map) = schema.as_object_mut() else {
        return false;
    };
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        if branches.iter().any(accepts_null_by_type) {
            return true;
        }
        branches.push(json!({"type": "null"}));
        return false;
    }
    let literal = map.contains_key("enum") || map.contains_key("const");
    if !literal && !map.contains_key("$ref") {
        match map.get_mut("type") {
            Some(Value::String(t)) if t == "null" => return true,
            // Scalars take `type: [T, "null"]`; objects and arrays are wrapped in `anyOf`,
            // the form the SDKs generate for optional models and lists.
            Some(Value::String(t)) if t != "object" && t != "array" => {
                let t = std::mem::take(t);
                map.insert("type".to_owned(), json!([t, "null"]));
                return false;
            }
            Some(Value::Array(types)) if types.iter().any(|t| t == "null") => return true,
            Some(Value::Array(types)) if types.iter().all(|t| t != "object" && t != "array") => {
                types.push(json!("null"));
                return false;
            }
            _ => {}
        }
    }
    if literal && accepts_null_by_type(schema) && literal_accepts_null(schema) {
        return true;
    }
    // Wrap: `anyOf: [schema, {type: null}]`, with the annotations on the outside.
    let Some(map) = schema.as_object_mut() else {
        return false;
    };
    let mut outer = Map::new();
    for key in ["title", "description"] {
        if let Some(v) = map.remove(key) {
            outer.insert(key.to_owned(), v);
        }
    }
    let inner = std::mem::take(map);
    outer.insert(
        "anyOf".to_owned(),
        json!([Value::Object(inner), {"type": "null"}]),
    );
    *schema = Value::Object(outer);
    false
}

fn accepts_null_by_type(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => false,
    }
}

fn literal_accepts_null(schema: &Value) -> bool {
    schema.get("const").is_some_and(Value::is_null)
        || schema
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.iter().any(Value::is_null))
}

const TYPES: &[&str] = &[
    "object", "array", "string", "integer", "number", "boolean", "null",
];

/// The `type` keyword as a list; empty when absent.
fn types_of(value: Option<&Value>) -> Result<Vec<String>, String> {
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

fn is_primitive(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

/// Where a local `$ref` points, within `root`.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

/// `#/$defs/name` → (`$defs`, `name`).
fn def_location(reference: &str) -> Option<(String, String)> {
    let rest = reference.strip_prefix("#/")?;
    let (container, name) = rest.split_once('/')?;
    if !matches!(container, "$defs" | "definitions") || name.contains('/') {
        return None;
    }
    Some((
        container.to_owned(),
        name.replace("~1", "/").replace("~0", "~"),
    ))
}

/// A JSON pointer token.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn at(ptr: &str) -> String {
    if ptr.is_empty() {
        "the schema".to_owned()
    } else {
        format!("`{ptr}`")
    }
}

fn compact(value: &Value) -> String {
    value.to_string()
}

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

fn allowed_keyword(dialect: StrictDialect, key: &str, is_root: bool) -> bool {
    let common = matches!(
        key,
        "type"
            | "description"
            | "title"
            | "enum"
            | "const"
            | "anyOf"
            | "properties"
            | "required"
            | "additionalProperties"
            | "items"
            | "$ref"
            | "format"
    );
    let defs = is_root && matches!(key, "$defs" | "definitions");
    let dialect_specific = match dialect {
        StrictDialect::OpenAi => matches!(
            key,
            "pattern"
                | "multipleOf"
                | "maximum"
                | "exclusiveMaximum"
                | "minimum"
                | "exclusiveMinimum"
                | "minItems"
                | "maxItems"
        ),
        StrictDialect::Anthropic => matches!(key, "default" | "minItems"),
    };
    common || defs || dialect_specific
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{CallReader, NameMap, NameRules};
    use proptest::prelude::*;

    fn openai(schema: Value) -> Strict {
        make_strict(&schema, StrictDialect::OpenAi).unwrap()
    }

    fn messages(strict: &Strict) -> Vec<String> {
        strict
            .changes
            .iter()
            .map(|(p, m)| format!("{p}: {m}"))
            .collect()
    }

    #[test]
    fn an_optional_property_becomes_required_and_nullable_and_its_path_is_recorded() {
        let s = openai(
            json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]}),
        );
        assert_eq!(
            s.schema,
            json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": ["string", "null"]}},
                   "required": ["city", "unit"], "additionalProperties": false})
        );
        assert_eq!(s.nullable_optionals, vec![vec!["unit".to_owned()]]);
    }

    #[test]
    fn an_optional_enum_gets_a_null_branch_with_the_description_outside() {
        let s = openai(
            json!({"type": "object", "properties": {"unit": {"description": "Unit", "type": "string", "enum": ["c", "f"]}}}),
        );
        assert_eq!(
            s.schema["properties"]["unit"],
            json!({"description": "Unit", "anyOf": [{"type": "string", "enum": ["c", "f"]}, {"type": "null"}]})
        );
    }

    #[test]
    fn nested_optional_properties_are_recorded_by_key_path_but_not_through_arrays() {
        let s = openai(json!({"type": "object", "properties": {
            "filter": {"type": "object", "properties": {"since": {"type": "string"}}},
            "rows": {"type": "array", "items": {"type": "object", "properties": {"note": {"type": "string"}}}}
        }, "required": ["filter", "rows"]}));
        assert_eq!(
            s.nullable_optionals,
            vec![vec!["filter".to_owned(), "since".to_owned()]]
        );
        assert!(messages(&s).iter().any(|m| {
            m.starts_with("/properties/rows/items/properties/note: ")
                && m.contains("passed on as null")
        }));
    }

    #[test]
    fn key_paths_run_through_an_optional_model_but_not_through_a_real_union() {
        let s = openai(json!({"type": "object", "properties": {
            "filter": {"anyOf": [{"$ref": "#/$defs/f"}, {"type": "null"}]},
            "either": {"anyOf": [{"$ref": "#/$defs/f"}, {"type": "string"}]}
        }, "required": ["filter", "either"], "$defs": {
            "f": {"type": "object", "properties": {"since": {"type": "string"}}}
        }}));
        assert_eq!(
            s.nullable_optionals,
            vec![vec!["filter".to_owned(), "since".to_owned()]]
        );
    }

    #[test]
    fn unsupported_keywords_are_folded_into_the_description() {
        let s = openai(json!({"type": "object", "properties": {
            "title": {"type": "string", "description": "Short title", "maxLength": 20, "minLength": 1},
            "site": {"type": "string", "format": "uri"}
        }, "required": ["title", "site"]}));
        assert_eq!(
            s.schema["properties"]["title"]["description"],
            "Short title (at most 20 characters; at least 1 characters)"
        );
        assert_eq!(
            s.schema["properties"]["site"],
            json!({"type": "string", "description": "(format: uri)"})
        );
        assert!(messages(&s).contains(&"/properties/title: removed `maxLength: 20` (not supported in strict mode); the description says it instead".to_owned()));
    }

    #[test]
    fn anthropic_keeps_optionals_optional_and_folds_numeric_bounds_and_patterns() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 5},
            "code": {"type": "string", "pattern": "^[A-Z]+$"},
            "site": {"type": "string", "format": "uri"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2}
        }, "required": ["n"]});
        let s = make_strict(&schema, StrictDialect::Anthropic).unwrap();
        assert_eq!(s.schema["required"], json!(["n"]));
        assert!(s.nullable_optionals.is_empty());
        assert_eq!(
            s.schema["properties"]["n"],
            json!({"type": "integer", "description": "(at least 1; at most 5)"})
        );
        assert_eq!(
            s.schema["properties"]["code"]["description"],
            "(matching the regular expression `^[A-Z]+$`)"
        );
        assert_eq!(
            s.schema["properties"]["site"],
            json!({"type": "string", "format": "uri"})
        );
        assert_eq!(
            s.schema["properties"]["tags"]["description"],
            "(at least 2 items)"
        );
    }

    #[test]
    fn an_open_map_cannot_be_made_strict() {
        let err = make_strict(
            &json!({"type": "object", "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}}}),
            StrictDialect::OpenAi,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "`/properties/labels` is an open map (an object with no fixed properties); strict mode accepts only objects with declared properties"
        );
        let err = make_strict(
            &json!({"type": "object", "properties": {"meta": {"type": "object"}}}),
            StrictDialect::OpenAi,
        )
        .unwrap_err();
        assert!(err.contains("open map"), "{err}");
    }

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
    fn a_root_with_no_properties_is_a_tool_without_arguments() {
        let s = openai(json!({"type": "object"}));
        assert_eq!(
            s.schema,
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
        );
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
    fn one_of_becomes_any_of_and_all_of_is_merged() {
        let s = openai(json!({"type": "object", "properties": {
            "id": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "both": {"allOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"properties": {"b": {"type": "integer"}}, "required": ["b"]}
            ]}
        }, "required": ["id", "both"]}));
        assert_eq!(
            s.schema["properties"]["id"],
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
        );
        assert_eq!(
            s.schema["properties"]["both"]["required"],
            json!(["a", "b"])
        );
        let notes = messages(&s);
        assert!(notes.iter().any(|m| m.contains("`oneOf` became `anyOf`")));
        assert!(notes.iter().any(|m| m.contains("merged `allOf`")));
    }

    #[test]
    fn conflicting_all_of_branches_are_refused() {
        let schema = json!({"type": "object", "properties": {"x": {"allOf": [{"type": "string"}, {"type": "integer"}]}}});
        assert!(
            make_strict(&schema, StrictDialect::OpenAi)
                .unwrap_err()
                .contains("disagree on `type`")
        );
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

    // Property tests: generated schemas with instances valid against them.

    #[derive(Debug, Clone)]
    enum Shape {
        Str {
            max_len: Option<usize>,
        },
        Int {
            min: Option<i64>,
        },
        Bool,
        Enum(Vec<String>),
        /// Properties with whether each is required.
        Object(Vec<(String, Shape, bool)>),
        /// Arrays hold scalars or objects whose properties are all required:
        /// a null inside an array cannot be restored by key path.
        Array(Box<Shape>),
    }

    fn scalar() -> impl Strategy<Value = Shape> {
        prop_oneof![
            proptest::option::of(1usize..30).prop_map(|max_len| Shape::Str { max_len }),
            proptest::option::of(-5i64..5).prop_map(|min| Shape::Int { min }),
            Just(Shape::Bool),
            proptest::collection::btree_set("[a-z]{1,4}", 1..4)
                .prop_map(|s| Shape::Enum(s.into_iter().collect())),
        ]
    }

    fn shape() -> impl Strategy<Value = Shape> {
        let leaf = scalar();
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::btree_map("[a-z]{1,5}", (inner.clone(), any::<bool>()), 0..4)
                    .prop_map(|m| Shape::Object(
                        m.into_iter().map(|(k, (s, r))| (k, s, r)).collect()
                    )),
                prop_oneof![
                    scalar(),
                    proptest::collection::btree_map("[a-z]{1,5}", scalar(), 1..3).prop_map(|m| {
                        Shape::Object(m.into_iter().map(|(k, s)| (k, s, true)).collect())
                    }),
                ]
                .prop_map(|s| Shape::Array(Box::new(s))),
            ]
        })
    }

    fn root_shape() -> impl Strategy<Value = Shape> {
        proptest::collection::btree_map("[a-z]{1,5}", (shape(), any::<bool>()), 0..5)
            .prop_map(|m| Shape::Object(m.into_iter().map(|(k, (s, r))| (k, s, r)).collect()))
    }

    fn schema_of(shape: &Shape) -> Value {
        match shape {
            Shape::Str { max_len: Some(n) } => json!({"type": "string", "maxLength": n}),
            Shape::Str { max_len: None } => json!({"type": "string"}),
            Shape::Int { min: Some(n) } => json!({"type": "integer", "minimum": n}),
            Shape::Int { min: None } => json!({"type": "integer"}),
            Shape::Bool => json!({"type": "boolean"}),
            Shape::Enum(values) => json!({"type": "string", "enum": values}),
            Shape::Object(props) => {
                let properties: Map<String, Value> = props
                    .iter()
                    .map(|(k, s, _)| (k.clone(), schema_of(s)))
                    .collect();
                let required: Vec<&String> = props
                    .iter()
                    .filter(|(_, _, r)| *r)
                    .map(|(k, _, _)| k)
                    .collect();
                if props.is_empty() {
                    json!({"type": "object", "properties": {}, "additionalProperties": false})
                } else {
                    json!({"type": "object", "properties": properties, "required": required})
                }
            }
            Shape::Array(item) => json!({"type": "array", "items": schema_of(item)}),
        }
    }

    /// An instance valid against `shape`'s schema; optional properties may be absent.
    fn instance(shape: &Shape) -> BoxedStrategy<Value> {
        match shape.clone() {
            Shape::Str { max_len } => {
                proptest::string::string_regex(&format!("[a-z ]{{0,{}}}", max_len.unwrap_or(12)))
                    .expect("a valid regex")
                    .prop_map(Value::String)
                    .boxed()
            }
            Shape::Int { min } => (min.unwrap_or(-100)..min.unwrap_or(-100) + 200)
                .prop_map(|n| json!(n))
                .boxed(),
            Shape::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
            Shape::Enum(values) => proptest::sample::select(values)
                .prop_map(Value::String)
                .boxed(),
            Shape::Object(props) => {
                let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = props
                    .into_iter()
                    .map(|(k, s, required)| {
                        let value = instance(&s).prop_map(move |v| Some((k.clone(), v)));
                        if required {
                            value.boxed()
                        } else {
                            prop_oneof![Just(None), value].boxed()
                        }
                    })
                    .collect();
                fields
                    .prop_map(|fs| Value::Object(fs.into_iter().flatten().collect()))
                    .boxed()
            }
            Shape::Array(item) => proptest::collection::vec(instance(&item), 0..3)
                .prop_map(Value::Array)
                .boxed(),
        }
    }

    /// What a model in strict mode sends: every absent optional property as `null`.
    fn fill_nulls(shape: &Shape, value: &mut Value) {
        match (shape, value) {
            (Shape::Object(props), Value::Object(map)) => {
                for (k, s, _) in props {
                    match map.get_mut(k) {
                        Some(v) => fill_nulls(s, v),
                        None => {
                            map.insert(k.clone(), Value::Null);
                        }
                    }
                }
            }
            (Shape::Array(item), Value::Array(values)) => {
                values.iter_mut().for_each(|v| fill_nulls(item, v))
            }
            _ => {}
        }
    }

    fn shape_and_instance() -> impl Strategy<Value = (Shape, Value)> {
        root_shape().prop_flat_map(|s| {
            let i = instance(&s);
            (Just(s), i)
        })
    }

    proptest! {
        #[test]
        fn the_transform_always_yields_a_strict_schema(shape in root_shape()) {
            for dialect in [StrictDialect::OpenAi, StrictDialect::Anthropic] {
                let strict = make_strict(&schema_of(&shape), dialect);
                prop_assert!(strict.is_ok(), "{:?}", strict);
                let strict = strict.unwrap();
                prop_assert_eq!(is_strict(&strict.schema, dialect), Ok(()));
                prop_assert_eq!(make_strict(&strict.schema, dialect).map(|s| s.schema), Ok(strict.schema.clone()), "not idempotent");
            }
        }

        #[test]
        fn strictness_never_changes_what_a_call_means((shape, original) in shape_and_instance()) {
            let schema = schema_of(&shape);
            prop_assert!(jsonschema::draft202012::new(&schema).unwrap().is_valid(&original));
            let strict = make_strict(&schema, StrictDialect::OpenAi).unwrap();
            let mut sent = original.clone();
            fill_nulls(&shape, &mut sent);
            let validator = jsonschema::draft202012::new(&strict.schema).unwrap();
            prop_assert!(validator.is_valid(&sent), "{} rejects {}", strict.schema, sent);
            let mut reader = CallReader::new(NameMap::build(["t"], &NameRules::OPENAI));
            reader.nullable_optionals.insert("t".to_owned(), strict.nullable_optionals.clone());
            reader.restore_optionals("t", &mut sent);
            prop_assert_eq!(sent, original);
        }
    }
}
