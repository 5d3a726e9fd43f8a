//! Parameter names mapped to names an API accepts, at every level of a schema, and
//! the values that cross the wire mapped with them.
//!
//! Gemini and Vertex take property names matching `[A-Za-z_][A-Za-z0-9_]{0,63}`
//! only, while real APIs name parameters `año`, `größe`, `api-key`, `user.name` or
//! `2fa`. [`map_schema`] renames the properties of a rendered schema the way tool
//! names are renamed ([`NameMap`]): names that fit keep themselves; the others are
//! transliterated to ASCII (`año` → `ano`, `größe` → `grosse`), every other
//! character becomes `_`, and a name that is then taken or too long is cut and
//! suffixed with a hash. The map is built per position in the schema (the root
//! object, each property's value, list items), over every `anyOf` branch at that
//! position at once, so it is injective wherever a value can stand. [`ParamNames`]
//! remembers it, to read a call's arguments back under their own names and to send
//! a result under the names its declared schema uses.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::names::{NameMap, NameRules};
use super::pointer::escape;

fn word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn letter_or_underscore(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

/// Gemini's and Vertex's parameter names: `[A-Za-z_][A-Za-z0-9_]{0,63}`.
pub(crate) const GEMINI_PARAMETER: NameRules = NameRules {
    max_len: 64,
    allowed: word,
    first: Some(letter_or_underscore),
};

/// The renamed properties of one schema, by position: what a value's keys are
/// called on the wire and under the tool's own schema.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParamNames {
    root: Shape,
}

/// One position in a schema: the properties an object there may have, and what
/// the items of a list there look like.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Shape {
    /// By original name: the wire name and the shape of the property's value.
    properties: IndexMap<String, (String, Shape)>,
    items: Option<Box<Shape>>,
}

impl Shape {
    fn is_identity(&self) -> bool {
        self.properties
            .iter()
            .all(|(original, (wire, child))| original == wire && child.is_identity())
            && self.items.as_ref().is_none_or(|items| items.is_identity())
    }

    fn rename(&self, value: &mut Value, to_wire: bool) {
        match value {
            Value::Object(map) => {
                let old = std::mem::take(map);
                let mut out = Map::new();
                for (key, mut child) in old {
                    let found = if to_wire {
                        self.properties
                            .get_key_value(&key)
                            .map(|(_, (wire, shape))| (wire.clone(), shape))
                    } else {
                        self.properties
                            .iter()
                            .find(|(_, (wire, _))| *wire == key)
                            .map(|(original, (_, shape))| (original.clone(), shape))
                    };
                    match found {
                        Some((name, shape)) => {
                            shape.rename(&mut child, to_wire);
                            out.insert(name, child);
                        }
                        // Not a declared property: an open map's key, kept as it is.
                        None => {
                            out.entry(key).or_insert(child);
                        }
                    }
                }
                *map = out;
            }
            Value::Array(items) => {
                if let Some(shape) = &self.items {
                    items
                        .iter_mut()
                        .for_each(|item| shape.rename(item, to_wire));
                }
            }
            _ => {}
        }
    }
}

impl ParamNames {
    /// Whether every name keeps itself (nothing to map).
    pub fn is_identity(&self) -> bool {
        self.root.is_identity()
    }

    /// Arguments the API sent (wire names) under the schema's own names, nested too.
    pub fn to_original(&self, value: &mut Value) {
        self.root.rename(value, false);
    }

    /// A value under the schema's own names as the API's declaration names it.
    pub fn to_wire(&self, value: &mut Value) {
        self.root.rename(value, true);
    }
}

/// One property renamed: where (a JSON pointer into the rendered schema, with the
/// original names), from what, to what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Renamed {
    /// The JSON pointer of the property, with the original names.
    pub path: String,
    /// The schema's name for it.
    pub original: String,
    /// The name the API is given instead.
    pub wire: String,
}

/// Renames every property of the rendered (OpenAPI subset) `schema` that `rules`
/// refuse, in `properties`, `required` and `propertyOrdering`, at every level.
pub(crate) fn map_schema(schema: &mut Value, rules: &NameRules) -> (ParamNames, Vec<Renamed>) {
    let mut renamed = Vec::new();
    let root = map_position(
        schema,
        &[(String::new(), String::new())],
        rules,
        &mut renamed,
        0,
    );
    (ParamNames { root }, renamed)
}

/// Bounds the walk; rendered schemas are cut well before this.
const MAX_DEPTH: usize = 128;

/// Maps the position made of the schema nodes at `at` (pointers into `root` with
/// wire names, and the same with original names, for notes).
fn map_position(
    root: &mut Value,
    at: &[(String, String)],
    rules: &NameRules,
    renamed: &mut Vec<Renamed>,
    depth: usize,
) -> Shape {
    let mut shape = Shape::default();
    if depth > MAX_DEPTH {
        return shape;
    }
    // Every node a value here may have to match: the nodes and their `anyOf` branches.
    let mut nodes: Vec<(String, String)> = Vec::new();
    let mut queue: Vec<(String, String)> = at.to_vec();
    while let Some((wire, original)) = queue.pop() {
        let Some(node) = root.pointer(&wire) else {
            continue;
        };
        if let Some(branches) = node.get("anyOf").and_then(Value::as_array) {
            for i in (0..branches.len()).rev() {
                queue.push((format!("{wire}/anyOf/{i}"), format!("{original}/anyOf/{i}")));
            }
        }
        nodes.push((wire, original));
    }
    let mut names: Vec<String> = Vec::new();
    for (wire, _) in &nodes {
        let properties = root
            .pointer(&format!("{wire}/properties"))
            .and_then(Value::as_object);
        for name in properties.into_iter().flat_map(|p| p.keys()) {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    let map = NameMap::build(names.iter().map(String::as_str), rules);
    for (wire_at, original_at) in &nodes {
        if let Some(node) = root.pointer_mut(wire_at).and_then(Value::as_object_mut) {
            rename_node(node, &map);
        }
        let present = root
            .pointer(&format!("{wire_at}/properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        for (original, wire) in map.renamed() {
            if present.iter().any(|p| p == wire) {
                renamed.push(Renamed {
                    path: format!("{original_at}/properties/{}", escape(original)),
                    original: original.to_owned(),
                    wire: wire.to_owned(),
                });
            }
        }
    }
    for name in &names {
        let wire = map.wire(name).unwrap_or(name).to_owned();
        let children: Vec<(String, String)> = nodes
            .iter()
            .map(|(w, o)| {
                (
                    format!("{w}/properties/{}", escape(&wire)),
                    format!("{o}/properties/{}", escape(name)),
                )
            })
            .filter(|(w, _)| root.pointer(w).is_some())
            .collect();
        let child = map_position(root, &children, rules, renamed, depth + 1);
        shape.properties.insert(name.clone(), (wire, child));
    }
    let items: Vec<(String, String)> = nodes
        .iter()
        .map(|(w, o)| (format!("{w}/items"), format!("{o}/items")))
        .filter(|(w, _)| root.pointer(w).is_some_and(Value::is_object))
        .collect();
    if !items.is_empty() {
        shape.items = Some(Box::new(map_position(
            root,
            &items,
            rules,
            renamed,
            depth + 1,
        )));
    }
    shape
}

/// Renames one schema node's own `properties`, `required` and `propertyOrdering`.
fn rename_node(node: &mut Map<String, Value>, map: &NameMap) {
    let wire_of = |name: &str| map.wire(name).unwrap_or(name).to_owned();
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        let old = std::mem::take(properties);
        *properties = old.into_iter().map(|(k, v)| (wire_of(&k), v)).collect();
    }
    for key in ["required", "propertyOrdering"] {
        if let Some(Value::Array(list)) = node.get_mut(key) {
            for entry in list.iter_mut() {
                if let Value::String(name) = entry {
                    *name = wire_of(name);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn mapped(schema: Value) -> (Value, ParamNames, Vec<Renamed>) {
        let mut schema = schema;
        let (names, renamed) = map_schema(&mut schema, &GEMINI_PARAMETER);
        (schema, names, renamed)
    }

    #[test]
    fn names_read_as_their_ascii_spelling() {
        let (schema, names, renamed) = mapped(json!({
            "type": "OBJECT",
            "properties": {"año": {"type": "INTEGER"}, "größe": {"type": "STRING"}, "city": {"type": "STRING"}},
            "required": ["año", "city"],
        }));
        assert_eq!(
            schema,
            json!({
                "type": "OBJECT",
                "properties": {"ano": {"type": "INTEGER"}, "grosse": {"type": "STRING"}, "city": {"type": "STRING"}},
                "required": ["ano", "city"],
            })
        );
        assert_eq!(
            renamed
                .iter()
                .map(|r| (r.path.as_str(), r.wire.as_str()))
                .collect::<Vec<_>>(),
            [("/properties/año", "ano"), ("/properties/größe", "grosse")]
        );
        let mut args = json!({"ano": 2024, "grosse": "L", "city": "Oslo"});
        names.to_original(&mut args);
        assert_eq!(args, json!({"año": 2024, "größe": "L", "city": "Oslo"}));
    }

    #[test]
    fn dashes_dots_spaces_and_leading_digits_become_names_that_fit() {
        let (schema, _, _) = mapped(json!({
            "type": "OBJECT",
            "properties": {"api-key": {}, "user.name": {}, "first name": {}, "2fa": {}},
        }));
        let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["api_key", "user_name", "first_name", "_2fa"]);
    }

    #[test]
    fn a_mapped_name_never_takes_a_name_that_fits() {
        let (schema, names, _) = mapped(json!({
            "type": "OBJECT",
            "properties": {"api_key": {"type": "STRING"}, "api-key": {"type": "INTEGER"}},
        }));
        let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys[0], "api_key");
        assert!(
            keys[1].starts_with("api_key_") && keys[1].len() == 16,
            "{keys:?}"
        );
        let mut args = json!({"api_key": "a", keys[1].clone(): 1});
        names.to_original(&mut args);
        assert_eq!(args, json!({"api_key": "a", "api-key": 1}));
    }

    #[test]
    fn nested_objects_lists_and_branches_are_mapped_and_read_back() {
        let (schema, names, renamed) = mapped(json!({
            "type": "OBJECT",
            "properties": {
                "dirección": {
                    "type": "OBJECT",
                    "properties": {"código-postal": {"type": "STRING"}},
                    "required": ["código-postal"],
                },
                "líneas": {"type": "ARRAY", "items": {
                    "anyOf": [
                        {"type": "OBJECT", "properties": {"cantidad": {"type": "INTEGER"}, "precio.unit": {"type": "NUMBER"}}},
                        {"type": "OBJECT", "properties": {"nota": {"type": "STRING"}}},
                    ],
                }},
            },
        }));
        assert_eq!(
            schema["properties"]["direccion"]["required"],
            json!(["codigo_postal"])
        );
        assert!(
            schema["properties"]["lineas"]["items"]["anyOf"][0]["properties"]
                .get("precio_unit")
                .is_some()
        );
        assert!(
            renamed
                .iter()
                .any(|r| r.path == "/properties/dirección/properties/código-postal")
        );
        let mut args = json!({
            "direccion": {"codigo_postal": "28001"},
            "lineas": [{"cantidad": 2, "precio_unit": 1.5}, {"nota": "x"}],
        });
        names.to_original(&mut args);
        assert_eq!(
            args,
            json!({
                "dirección": {"código-postal": "28001"},
                "líneas": [{"cantidad": 2, "precio.unit": 1.5}, {"nota": "x"}],
            })
        );
        names.to_wire(&mut args);
        assert_eq!(args["lineas"][0]["precio_unit"], 1.5);
    }

    #[test]
    fn keys_of_an_open_map_are_left_as_they_are() {
        let (_, names, _) = mapped(json!({
            "type": "OBJECT",
            "properties": {"etiquetas-extra": {"type": "OBJECT"}},
        }));
        let mut args = json!({"etiquetas_extra": {"ano": 1}});
        names.to_original(&mut args);
        assert_eq!(args, json!({"etiquetas-extra": {"ano": 1}}));
    }

    /// A property name as real APIs write them: ASCII words, accents, dashes, dots,
    /// spaces, leading digits, other scripts.
    fn property_name() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z_][a-z0-9_]{0,10}",
            "[a-zñçäöüß]{1,10}",
            "[0-9a-z .-]{1,12}",
            "[ёжзиклмнопрстуфхцчшщыэюя]{1,8}",
            "[a-z]{60,70}",
            ".{0,6}",
        ]
    }

    fn schema_of(names: &[String], nested: &[String]) -> Value {
        let inner: Map<String, Value> = nested
            .iter()
            .map(|n| (n.clone(), json!({"type": "STRING"})))
            .collect();
        let mut properties: Map<String, Value> = names
            .iter()
            .map(|n| (n.clone(), json!({"type": "STRING"})))
            .collect();
        properties.insert(
            "nested".into(),
            json!({"type": "ARRAY", "items": {"type": "OBJECT", "properties": inner}}),
        );
        json!({"type": "OBJECT", "properties": properties, "required": names})
    }

    fn arguments_of(names: &[String], nested: &[String]) -> Value {
        let inner: Map<String, Value> = nested
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), json!(format!("n{i}"))))
            .collect();
        let mut args: Map<String, Value> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), json!(format!("v{i}"))))
            .collect();
        args.insert("nested".into(), json!([inner]));
        Value::Object(args)
    }

    proptest! {
        #[test]
        fn every_mapping_fits_is_injective_and_round_trips(
            names in proptest::collection::btree_set(property_name(), 0..12),
            nested in proptest::collection::btree_set(property_name(), 0..6),
        ) {
            let names: Vec<String> = names.into_iter().filter(|n| n != "nested").collect();
            let nested: Vec<String> = nested.into_iter().collect();
            let (schema, map, _) = mapped(schema_of(&names, &nested));
            for level in [&schema["properties"], &schema["properties"]["nested"]["items"]["properties"]] {
                let keys: Vec<&String> = level.as_object().unwrap().keys().collect();
                for key in &keys {
                    prop_assert!(GEMINI_PARAMETER.accepts(key), "{key:?} does not fit");
                }
                let count = if std::ptr::eq(level, &schema["properties"]) { names.len() + 1 } else { nested.len() };
                prop_assert_eq!(keys.len(), count, "two names share a wire name");
            }
            for entry in schema["required"].as_array().unwrap() {
                prop_assert!(schema["properties"].get(entry.as_str().unwrap()).is_some());
            }
            let original = arguments_of(&names, &nested);
            let mut wire = original.clone();
            map.to_wire(&mut wire);
            for key in wire.as_object().unwrap().keys() {
                prop_assert!(schema["properties"].get(key).is_some(), "{key:?} is not declared");
            }
            map.to_original(&mut wire);
            prop_assert_eq!(wire, original);
            // Deterministic: the same schema, in another order, maps the same way.
            let mut reversed = names.clone();
            reversed.reverse();
            let (again, _, _) = mapped(schema_of(&reversed, &nested));
            for name in &names {
                let mut one = json!({name.clone(): 1});
                map.to_wire(&mut one);
                let key = one.as_object().unwrap().keys().next().unwrap().clone();
                prop_assert!(again["properties"].get(&key).is_some());
            }
        }
    }
}
