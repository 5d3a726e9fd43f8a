//! Combining schemas for strict mode, which supports neither `allOf` nor
//! constraints beside `anyOf`: `allOf` branches are merged into one schema, and
//! the constraints beside an `anyOf` move into each of its branches.

use serde_json::{Map, Value};

use super::keywords::is_annotation;
use super::schema::{at, resolve};
use super::transform::Transform;

impl Transform<'_> {
    /// `allOf` merged into its parent: properties and `required` unite; any other
    /// keyword two branches give differently cannot be merged.
    pub(super) fn merge_all_of(
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
    pub(super) fn distribute_into_any_of(
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
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::wire::strict::tests::{messages, openai};
    use crate::wire::strict::{StrictDialect, make_strict};

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
}
