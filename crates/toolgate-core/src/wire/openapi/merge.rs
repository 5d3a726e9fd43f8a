//! Merging schemas, as the API has no `allOf`: `allOf` branches (their `$ref`s
//! followed) are merged into the schema itself, properties and `required` united
//! and types intersected, with every disagreement noted.

use serde_json::{Map, Value, json};

use super::{ANNOTATIONS, MAX_EXPANSIONS, Transform};
use crate::wire::pointer::percent_decode;

/// Which side wins when two schemas set the same keyword to different values.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Prefer {
    Base,
    Extra,
}

impl Transform<'_> {
    /// Merges `allOf` branches into the schema itself.
    pub(super) fn merge_all_of(&mut self, raw: &mut Map<String, Value>, src: &str) {
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
}

/// Merges `extra` into `base`: properties and `required` are united, types
/// intersected, a property both declare gets both schemas (`allOf`). Returns the
/// keywords where the two disagreed and `prefer`'s side was kept.
pub(super) fn merge(
    base: &mut Map<String, Value>,
    extra: &Map<String, Value>,
    prefer: Prefer,
) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::convert;

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
}
