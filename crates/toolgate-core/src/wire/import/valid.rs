//! The last step for a schema: what still breaks the JSON Schema 2020-12
//! meta-schema, or keeps it from compiling, is removed part by part, and `$ref`s
//! that point nowhere go, so every imported schema is one a validator accepts.

use serde_json::{Value, json};

use super::normalize::SCHEMA_MAPS;
use super::notes::Sink;
use crate::wire::pointer::{escape, percent_decode, unescape};

/// Fixes is done within this many rounds or not at all.
const MAX_FIXES: usize = 64;

/// Makes `schema` valid JSON Schema 2020-12 that compiles: what breaks the
/// meta-schema is removed (a property's broken schema becomes `{}`), `$ref`s that
/// point nowhere are removed. Errs when the root itself is the problem.
pub(super) fn make_valid(schema: &mut Value, path: &str, sink: &mut Sink) -> Result<(), String> {
    let meta = jsonschema::draft202012::meta::validator();
    dangling_refs(schema, path, sink);
    for _ in 0..MAX_FIXES {
        let problem = match meta.iter_errors(schema).next() {
            Some(error) => Some((error.instance_path().as_str().to_owned(), error.to_string())),
            None => match jsonschema::draft202012::new(schema) {
                Ok(_) => return Ok(()),
                Err(error) => Some((
                    error.instance_path().as_str().to_owned(),
                    error.masked().to_string(),
                )),
            },
        };
        let Some((pointer, message)) = problem else {
            return Ok(());
        };
        let Some(fix) = (!pointer.is_empty())
            .then(|| remove_at(schema, &pointer))
            .flatten()
        else {
            return Err(format!("the schema is not valid JSON Schema ({message})"));
        };
        sink.at(
            &format!("{path}{pointer}"),
            format!("not valid JSON Schema ({message}): {fix}"),
        );
    }
    Err("the schema has too many parts that are not valid JSON Schema".into())
}

/// Removes what `pointer` points at; a schema inside `properties` (and the other
/// maps of schemas) becomes `{}`, so the property stays. Says what it did.
fn remove_at(schema: &mut Value, pointer: &str) -> Option<&'static str> {
    let (parent_pointer, last) = pointer.rsplit_once('/')?;
    let in_schema_map = parent_pointer
        .rsplit_once('/')
        .is_some_and(|(_, key)| SCHEMA_MAPS.contains(&key));
    let last = unescape(last);
    match schema.pointer_mut(parent_pointer) {
        Some(Value::Object(map)) if in_schema_map && map.contains_key(&last) => {
            map.insert(last, json!({}));
            Some("replaced by `{}` (any value)")
        }
        Some(Value::Object(map)) => map.shift_remove(&last).map(|_| "removed"),
        Some(Value::Array(items)) => match last.parse::<usize>() {
            Ok(i) if i < items.len() => {
                items.remove(i);
                Some("removed")
            }
            _ => None,
        },
        _ => None,
    }
}

/// Removes `$ref`s to other documents and to places that do not exist.
fn dangling_refs(schema: &mut Value, path: &str, sink: &mut Sink) {
    let root = schema.clone();
    let mut found = Vec::new();
    collect_dangling(&root, &root, String::new(), &mut found);
    for pointer in found {
        if let Some(Value::Object(map)) = schema.pointer_mut(&pointer)
            && let Some(target) = map.shift_remove("$ref")
        {
            sink.at(
                &format!("{path}{pointer}/$ref"),
                format!("`$ref` {target} points nowhere in this schema (other documents are not fetched): removed"),
            );
        }
    }
}

fn collect_dangling(node: &Value, root: &Value, pointer: String, out: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                let resolves = match target.strip_prefix('#') {
                    Some("") => true,
                    Some(fragment) if fragment.starts_with('/') => {
                        root.pointer(&percent_decode(fragment)).is_some()
                    }
                    // Anchors are left to the compiler.
                    Some(_) => true,
                    None => false,
                };
                if !resolves {
                    out.push(pointer.clone());
                }
            }
            for (key, child) in map {
                collect_dangling(child, root, format!("{pointer}/{}", escape(key)), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                collect_dangling(child, root, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::tests::{assert_valid_json_schema, import, parameters, snapshot};
    use super::super::{ImportFormat, import_tools};

    #[test]
    fn schemas_that_break_json_schema_are_fixed_or_the_tool_is_dropped() {
        let text = r##"[
            {"name": "fixable", "description": "x", "input_schema": {"type": "object",
                "properties": {"a": "string", "b": {"type": "string", "pattern": "(unclosed", "minLength": -1}, "c": {"$ref": "#/$defs/missing"}, "d": 42},
                "required": ["a", "a"]}},
            {"name": "hopeless", "description": "y", "input_schema": {"type": "string"}},
            {"name": "not_a_schema", "description": "z", "input_schema": 42},
            {"name": "untyped", "description": "w", "input_schema": {"properties": {"q": {"type": "string"}}}}]"##;
        let imported = import(ImportFormat::Anthropic, text);
        let names: Vec<_> = imported.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["fixable", "untyped"]);
        for tool in &imported.tools {
            assert_valid_json_schema(tool.parameters.as_ref().unwrap());
        }
        assert_eq!(parameters(&imported, 1)["type"], "object");
        insta::assert_json_snapshot!("import_fixes_and_drops", snapshot(&imported));
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn type_name() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(json!("dict")),
                Just(json!("float")),
                Just(json!("tuple")),
                Just(json!("any")),
                Just(json!("String")),
                Just(json!("HashMap")),
                Just(json!("STRING")),
                Just(json!("integer")),
                Just(json!(["OBJECT", "null"])),
                Just(json!(["any", "string"])),
                Just(json!(7)),
                "[A-Za-z]{0,8}".prop_map(Value::from),
            ]
        }

        fn value() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i32>().prop_map(Value::from),
                "[a-zA-Z0-9. ]{0,6}".prop_map(Value::from),
                Just(json!(["a", 1])),
                Just(json!({"k": "v"})),
            ]
        }

        fn leaf() -> impl Strategy<Value = Value> {
            (
                type_name(),
                proptest::option::of(value()),
                proptest::option::of(value()),
                proptest::option::of(value()),
                proptest::option::of(value()),
            )
                .prop_map(|(t, default, nullable, optional, pattern)| {
                    let mut schema = json!({"type": t});
                    for (key, value) in [
                        ("default", default),
                        ("nullable", nullable),
                        ("optional", optional),
                        ("pattern", pattern),
                    ] {
                        if let Some(value) = value {
                            schema[key] = value;
                        }
                    }
                    schema
                })
        }

        fn schema() -> impl Strategy<Value = Value> {
            leaf().prop_recursive(4, 40, 5, |inner| {
                prop_oneof![
                    (
                        type_name(),
                        proptest::collection::btree_map("[a-z]{1,3}", inner.clone(), 0..4),
                        proptest::collection::vec(value(), 0..4),
                    )
                        .prop_map(|(t, properties, required)| {
                            json!({"type": t, "properties": properties, "required": required})
                        }),
                    (type_name(), inner.clone())
                        .prop_map(|(t, items)| json!({"type": t, "items": items})),
                    proptest::collection::vec(inner.clone(), 1..3)
                        .prop_map(|items| json!({"items": items})),
                    proptest::collection::vec(inner, 0..3)
                        .prop_map(|branches| json!({"anyOf": branches})),
                    "[a-zA-Z]{0,6}".prop_map(Value::from),
                ]
            })
        }

        proptest! {
            #[test]
            fn any_schema_imports_as_valid_json_schema_or_is_dropped_with_a_note(
                parameters in schema(),
                returns in schema(),
                gemini in any::<bool>(),
            ) {
                let (format, text) = if gemini {
                    let declaration = json!({"name": "f", "description": "d", "parameters": parameters, "response": returns});
                    (ImportFormat::Gemini, json!([{"functionDeclarations": [declaration]}]))
                } else {
                    (ImportFormat::Bfcl, json!([{"name": "f", "description": "d", "parameters": parameters, "response": returns}]))
                };
                let imported = import_tools(format, &text.to_string()).unwrap();
                match imported.tools.as_slice() {
                    [tool] => {
                        let parameters = tool.parameters.as_ref().unwrap();
                        prop_assert_eq!(&parameters["type"], "object");
                        assert_valid_json_schema(parameters);
                        if let Some(returns) = &tool.returns {
                            assert_valid_json_schema(returns);
                        }
                    }
                    [] => prop_assert!(imported.notes.iter().any(|n| n.message.starts_with("not imported"))),
                    more => prop_assert!(false, "{} tools from one", more.len()),
                }
            }

        }
    }
}
