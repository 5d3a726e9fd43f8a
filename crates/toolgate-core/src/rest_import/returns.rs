//! A return value's schema cut to a shape the model can read.
//!
//! Response schemas of large APIs describe whole resources several levels deep
//! (GitHub's repository object holds its owner, its organization, its license ...);
//! written out for every operation they would make the spec file larger than a spec
//! file may be, and tell the model little it can use. Below [`RETURNS_DEPTH`] levels
//! of properties a schema keeps only its type, format, enum and description. The
//! cut only removes constraints, so every response the whole schema accepts is still
//! accepted. The binding reads the whole response regardless.

use serde_json::{Map, Value};

/// Levels of `properties` kept in a return value's schema (`items` and
/// `additionalProperties` add none: a list of orders shows an order's fields).
pub(super) const RETURNS_DEPTH: usize = 1;

/// Keywords a cut schema keeps.
const KEPT: [&str; 5] = ["type", "format", "enum", "description", "$ref"];

/// Cuts `schema` (and its `$defs`) below `RETURNS_DEPTH` levels; true when it cut.
pub(super) fn cut_returns(schema: &mut Value) -> bool {
    let mut cut = false;
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        for def in defs.values_mut() {
            cut |= cut_at(def, 0);
        }
    }
    let defs = schema.as_object_mut().and_then(|m| m.remove("$defs"));
    cut |= cut_at(schema, 0);
    if let (Some(defs), Value::Object(map)) = (defs, &mut *schema) {
        map.insert("$defs".into(), defs);
    }
    cut
}

fn cut_at(schema: &mut Value, depth: usize) -> bool {
    let Value::Object(map) = schema else {
        return false;
    };
    if depth >= RETURNS_DEPTH {
        let nested = map.keys().any(|k| !KEPT.contains(&k.as_str()));
        if nested {
            let kept: Map<String, Value> = map
                .iter()
                .filter(|(k, _)| KEPT.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            *map = kept;
        }
        return nested;
    }
    let mut cut = false;
    for (key, value) in map.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" => {
                if let Value::Object(props) = value {
                    for sub in props.values_mut() {
                        cut |= cut_at(sub, depth + 1);
                    }
                }
            }
            "items" | "additionalProperties" => cut |= cut_at(value, depth),
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                if let Value::Array(list) = value {
                    for sub in list {
                        cut |= cut_at(sub, depth);
                    }
                }
            }
            _ => {}
        }
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_deep_return_value_keeps_its_first_level_and_types_below() {
        let mut schema = json!({"type": "array", "items": {"type": "object", "required": ["owner"], "properties": {
            "owner": {"type": "object", "description": "Who.", "required": ["login"], "properties": {"login": {"type": "string"}}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "name": {"type": "string"}}}});
        assert!(cut_returns(&mut schema));
        assert_eq!(
            schema,
            json!({"type": "array", "items": {"type": "object", "required": ["owner"], "properties": {
                "owner": {"type": "object", "description": "Who."},
                "tags": {"type": "array"},
                "name": {"type": "string"}}}})
        );
        let mut flat = json!({"type": "object", "properties": {"id": {"type": "integer"}}});
        assert!(!cut_returns(&mut flat));
    }
}
