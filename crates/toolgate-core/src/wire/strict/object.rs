//! Objects in strict mode: every object is closed, and for OpenAI every property
//! is required, the optional ones made nullable with their key paths recorded so
//! that a `null` the model sends reads as absent again.

use serde_json::{Map, Value, json};

use super::StrictDialect;
use super::schema::at;
use super::transform::Transform;
use crate::wire::pointer::escape;

impl Transform<'_> {
    /// `properties`, `required` and `additionalProperties: false` of an object.
    pub(super) fn object(
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::wire::strict::tests::{messages, openai};
    use crate::wire::strict::{StrictDialect, make_strict};

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
    fn a_root_with_no_properties_is_a_tool_without_arguments() {
        let s = openai(json!({"type": "object"}));
        assert_eq!(
            s.schema,
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
        );
    }
}
