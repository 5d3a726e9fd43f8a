//! An OpenAPI schema made a self-contained JSON Schema 2020-12.
//!
//! `$ref`s are inlined, their siblings kept over the target's keywords; a schema
//! that refers to itself, directly or through others, is kept once under the root's
//! `$defs` and referred to as `#/$defs/NAME` (the renderers inline or cut it where a
//! target allows no references). The OpenAPI 3.0 and Swagger 2.0 dialect is
//! rewritten: `nullable` adds `null` to the type (and the enum), boolean
//! `exclusiveMinimum`/`exclusiveMaximum` become the numeric form, `example` becomes
//! `examples`, `type: file` a binary string. Keywords that are documentation only
//! (`discriminator`, `xml`, `externalDocs`, `x-...` extensions) go.
//!
//! For arguments, `readOnly` properties are left out (the server sets them) and
//! `format: password` is marked `writeOnly`, which redaction reads as secret; for
//! a return value, `writeOnly` properties are left out.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use indexmap::IndexMap;
use serde_json::{Map, Value, json};

use super::document::OpenApiVersion;
use super::refs::{Place, Resolver, last_segment};

/// How deep inlined references may nest before the schema is cut.
const MAX_REF_DEPTH: usize = 48;
/// How deep one schema may nest (its own keywords) before it is cut.
const MAX_NESTING: usize = 96;

/// Whether a schema describes what is sent or what comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    Input,
    Output,
}

/// What a conversion noticed, for the import's notes.
#[derive(Debug, Default)]
pub(super) struct SchemaNotes {
    /// References that could not be followed, with why.
    pub broken: Vec<String>,
    /// Names of recursive schemas kept under `$defs`.
    pub recursive: Vec<String>,
    /// The schema nested too deep and was cut here.
    pub cut: bool,
    /// Properties left out for `readOnly` (inputs) or `writeOnly` (outputs).
    pub left_out: usize,
}

/// Converts the schemas of one root (a tool's arguments or its return value).
pub(super) struct Converter<'r, 's> {
    resolver: &'r mut Resolver<'s>,
    version: OpenApiVersion,
    direction: Direction,
    stack: Vec<Place>,
    recursive: HashSet<Place>,
    names: HashMap<Place, String>,
    defs: IndexMap<String, Value>,
    pub notes: SchemaNotes,
}

impl<'r, 's> Converter<'r, 's> {
    pub(crate) fn new(
        resolver: &'r mut Resolver<'s>,
        version: OpenApiVersion,
        direction: Direction,
    ) -> Self {
        Converter {
            resolver,
            version,
            direction,
            stack: Vec::new(),
            recursive: HashSet::new(),
            names: HashMap::new(),
            defs: IndexMap::new(),
            notes: SchemaNotes::default(),
        }
    }

    /// Converts `schema`, written in document `base`.
    pub(crate) fn convert(&mut self, schema: &Value, base: &Rc<str>) -> Value {
        self.node(schema, base, 0)
    }

    /// The recursive schemas met so far, for the root's `$defs`.
    pub(crate) fn take_defs(&mut self) -> IndexMap<String, Value> {
        std::mem::take(&mut self.defs)
    }

    /// Puts the `$defs` gathered into `root` (an object schema).
    pub(crate) fn finish(mut self, mut root: Value) -> (Value, SchemaNotes) {
        let defs = self.take_defs();
        if !defs.is_empty() {
            match &mut root {
                Value::Object(map) => {
                    map.insert("$defs".into(), Value::Object(defs.into_iter().collect()));
                }
                other => {
                    *other = json!({"allOf": [other.clone()], "$defs": defs});
                }
            }
        }
        (root, self.notes)
    }

    fn node(&mut self, schema: &Value, base: &Rc<str>, depth: usize) -> Value {
        let Value::Object(object) = schema else {
            return match schema {
                Value::Bool(_) => schema.clone(),
                _ => json!({}),
            };
        };
        if depth > MAX_NESTING || self.stack.len() > MAX_REF_DEPTH {
            self.notes.cut = true;
            return json!({});
        }
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            return self.reference(object, reference, base, depth);
        }
        let mut out = Map::with_capacity(object.len());
        let legacy = self.version != OpenApiVersion::V3_1;
        let mut nullable = false;
        let mut dropped: Vec<&str> = Vec::new();
        for (key, value) in object {
            match key.as_str() {
                k if k.starts_with("x-") => {
                    if k == "x-nullable" && value == &Value::Bool(true) {
                        nullable = true;
                    }
                }
                "discriminator" | "xml" | "externalDocs" | "$schema" | "$id" | "$anchor"
                | "$dynamicAnchor" | "$comment" => {}
                "nullable" if legacy => nullable = value == &Value::Bool(true),
                "example" => {
                    out.entry("examples").or_insert_with(|| json!([value]));
                }
                "exclusiveMinimum" | "exclusiveMaximum" if value.is_boolean() => {
                    let bound = if key == "exclusiveMinimum" {
                        "minimum"
                    } else {
                        "maximum"
                    };
                    if value == &Value::Bool(true)
                        && let Some(limit) = object.get(bound)
                    {
                        out.insert(key.clone(), limit.clone());
                    }
                }
                "minimum" | "maximum" => {
                    let exclusive = if key == "minimum" {
                        "exclusiveMinimum"
                    } else {
                        "exclusiveMaximum"
                    };
                    if object.get(exclusive) != Some(&Value::Bool(true)) {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "type" if value == "file" => {
                    out.insert("type".into(), "string".into());
                    out.insert("format".into(), "binary".into());
                }
                "properties" | "patternProperties" | "dependentSchemas" | "$defs"
                | "definitions" => {
                    let Value::Object(map) = value else { continue };
                    let mut converted = Map::with_capacity(map.len());
                    for (name, sub) in map {
                        let sub = self.node(sub, base, depth + 1);
                        if key == "properties" && self.hidden(&sub) {
                            self.notes.left_out += 1;
                            dropped.push(name);
                            continue;
                        }
                        converted.insert(name.clone(), sub);
                    }
                    out.insert(key.clone(), Value::Object(converted));
                }
                "items" if value.is_array() => {
                    let items = self.list(value, base, depth);
                    out.insert("prefixItems".into(), items);
                }
                "additionalProperties"
                | "items"
                | "additionalItems"
                | "contains"
                | "not"
                | "if"
                | "then"
                | "else"
                | "propertyNames"
                | "unevaluatedItems"
                | "unevaluatedProperties"
                | "contentSchema" => {
                    let sub = self.node(value, base, depth + 1);
                    out.insert(key.clone(), sub);
                }
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                    let list = self.list(value, base, depth);
                    out.insert(key.clone(), list);
                }
                "required" => {
                    if let Value::Array(names) = value {
                        let names: Vec<Value> =
                            names.iter().filter(|n| n.is_string()).cloned().collect();
                        out.insert(key.clone(), Value::Array(names));
                    }
                }
                _ => {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
        if !dropped.is_empty()
            && let Some(Value::Array(required)) = out.get_mut("required")
        {
            required.retain(|n| n.as_str().is_none_or(|n| !dropped.contains(&n)));
        }
        if matches!(out.get("required"), Some(Value::Array(r)) if r.is_empty()) {
            out.remove("required");
        }
        if nullable {
            make_nullable(&mut out);
        }
        if self.direction == Direction::Input
            && out.get("format").and_then(Value::as_str) == Some("password")
        {
            out.insert("writeOnly".into(), true.into());
        }
        Value::Object(out)
    }

    /// Whether a property is left out in this direction.
    fn hidden(&self, property: &Value) -> bool {
        let flag = match self.direction {
            Direction::Input => "readOnly",
            Direction::Output => "writeOnly",
        };
        property.get(flag) == Some(&Value::Bool(true))
    }

    fn list(&mut self, value: &Value, base: &Rc<str>, depth: usize) -> Value {
        match value {
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.node(item, base, depth + 1))
                    .collect(),
            ),
            _ => json!([]),
        }
    }

    fn reference(
        &mut self,
        object: &Map<String, Value>,
        reference: &str,
        base: &Rc<str>,
        depth: usize,
    ) -> Value {
        let mut siblings = object.clone();
        siblings.remove("$ref");
        let place = match self.resolver.place(base, reference) {
            Ok(place) => place,
            Err(why) => {
                self.notes.broken.push(why);
                return self.node(&Value::Object(siblings), base, depth + 1);
            }
        };
        if let Some(name) = self.names.get(&place).cloned()
            && (self.defs.contains_key(&name) || self.stack.contains(&place))
        {
            self.recursive.insert(place);
            return self.with_siblings(
                json!({"$ref": format!("#/$defs/{name}")}),
                siblings,
                base,
                depth,
            );
        }
        if self.stack.contains(&place) {
            let name = self.def_name(&place);
            self.recursive.insert(place);
            return self.with_siblings(
                json!({"$ref": format!("#/$defs/{name}")}),
                siblings,
                base,
                depth,
            );
        }
        let target = match self.resolver.get(&place) {
            Ok(target) => target,
            Err(why) => {
                self.notes.broken.push(why);
                return self.node(&Value::Object(siblings), base, depth + 1);
            }
        };
        self.stack.push(place.clone());
        let converted = self.node(&target, &place.doc.clone(), depth + 1);
        self.stack.pop();
        if self.recursive.contains(&place) {
            let name = self.def_name(&place);
            self.defs.insert(name.clone(), converted);
            if !self.notes.recursive.contains(&name) {
                self.notes.recursive.push(name.clone());
            }
            return self.with_siblings(
                json!({"$ref": format!("#/$defs/{name}")}),
                siblings,
                base,
                depth,
            );
        }
        self.with_siblings(converted, siblings, base, depth)
    }

    /// `target` with the reference's sibling keywords over it.
    fn with_siblings(
        &mut self,
        target: Value,
        siblings: Map<String, Value>,
        base: &Rc<str>,
        depth: usize,
    ) -> Value {
        if siblings.is_empty() {
            return target;
        }
        let Value::Object(siblings) = self.node(&Value::Object(siblings), base, depth + 1) else {
            return target;
        };
        match target {
            Value::Object(mut map) if !map.contains_key("$ref") => {
                map.extend(siblings);
                Value::Object(map)
            }
            Value::Object(map) => {
                let mut out = siblings;
                out.extend(map);
                Value::Object(out)
            }
            other => {
                let mut out = siblings;
                out.insert("allOf".into(), json!([other]));
                Value::Object(out)
            }
        }
    }

    fn def_name(&mut self, place: &Place) -> String {
        if let Some(name) = self.names.get(place) {
            return name.clone();
        }
        let stem: String = last_segment(&place.pointer)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let stem = if stem.is_empty() {
            "schema".to_owned()
        } else {
            stem
        };
        let taken: HashSet<&String> = self.names.values().collect();
        let name = (1..)
            .map(|k| {
                if k == 1 {
                    stem.clone()
                } else {
                    format!("{stem}_{k}")
                }
            })
            .find(|n| !taken.contains(n))
            .unwrap_or(stem);
        self.names.insert(place.clone(), name.clone());
        name
    }
}

/// Adds `null` to a schema's type and enum (OpenAPI 3.0's `nullable: true`).
fn make_nullable(out: &mut Map<String, Value>) {
    match out.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            out.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
            types.push("null".into());
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = out.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest_import::refs::Sources;

    struct NoFiles;
    impl Sources for NoFiles {
        fn read(&self, path: &str) -> Result<String, String> {
            Err(format!("no file {path}"))
        }
    }

    fn convert(
        doc: Value,
        schema: Value,
        version: OpenApiVersion,
        direction: Direction,
    ) -> (Value, SchemaNotes) {
        let mut resolver = Resolver::new(&NoFiles, "api.json", doc);
        let root = resolver.root();
        let mut c = Converter::new(&mut resolver, version, direction);
        let out = c.convert(&schema, &root);
        c.finish(out)
    }

    #[test]
    fn the_3_0_dialect_becomes_json_schema() {
        let (out, _) = convert(
            json!({}),
            json!({"type": "integer", "nullable": true, "minimum": 1, "exclusiveMinimum": true,
                   "example": 3, "x-internal": 1, "enum": [1, 2]}),
            OpenApiVersion::V3_0,
            Direction::Input,
        );
        assert_eq!(
            out,
            json!({"type": ["integer", "null"], "exclusiveMinimum": 1, "examples": [3], "enum": [1, 2, null]})
        );
    }

    #[test]
    fn read_only_properties_leave_inputs_and_passwords_are_secret() {
        let doc = json!({"components": {"schemas": {"User": {"type": "object", "required": ["id", "name"], "properties": {
            "id": {"type": "integer", "readOnly": true},
            "name": {"type": "string"},
            "password": {"type": "string", "format": "password"}}}}}});
        let (out, notes) = convert(
            doc.clone(),
            json!({"$ref": "#/components/schemas/User"}),
            OpenApiVersion::V3_0,
            Direction::Input,
        );
        assert_eq!(
            out,
            json!({"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"},
                "password": {"type": "string", "format": "password", "writeOnly": true}}})
        );
        assert_eq!(notes.left_out, 1);
        let (out, _) = convert(
            doc,
            json!({"$ref": "#/components/schemas/User"}),
            OpenApiVersion::V3_0,
            Direction::Output,
        );
        assert!(out["properties"].get("id").is_some());
    }

    #[test]
    fn a_recursive_schema_is_kept_once_under_defs() {
        let doc = json!({"components": {"schemas": {"Node": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}}}});
        let (out, notes) = convert(
            doc,
            json!({"type": "object", "properties": {"root": {"$ref": "#/components/schemas/Node", "description": "The top."}}}),
            OpenApiVersion::V3_1,
            Direction::Input,
        );
        assert_eq!(
            out["properties"]["root"],
            json!({"description": "The top.", "$ref": "#/$defs/Node"})
        );
        assert_eq!(
            out["$defs"]["Node"]["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Node"})
        );
        assert_eq!(notes.recursive, ["Node"]);
        let meta = jsonschema::draft202012::meta::validator();
        assert!(meta.is_valid(&out));
        assert!(jsonschema::draft202012::new(&out).is_ok());
    }

    #[test]
    fn a_broken_reference_is_noted_and_dropped() {
        let (out, notes) = convert(
            json!({}),
            json!({"$ref": "#/components/schemas/Nope", "description": "x"}),
            OpenApiVersion::V3_0,
            Direction::Input,
        );
        assert_eq!(out, json!({"description": "x"}));
        assert!(
            notes.broken[0].contains("points nowhere"),
            "{:?}",
            notes.broken
        );
    }
}
