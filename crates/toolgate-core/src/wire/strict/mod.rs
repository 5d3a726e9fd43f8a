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
//!
//! The transform is in `transform` (with `merge` for `allOf` and `anyOf`, and
//! `object` for objects and their optional properties), the checker in `check`,
//! the per-dialect keyword tables in `keywords`, and the JSON Schema reading both
//! share in `schema`.

mod check;
mod keywords;
mod merge;
mod object;
mod schema;
mod transform;

use serde_json::Value;

use super::{Note, Rendered};
use crate::ToolDescriptor;

pub(crate) use check::is_strict;
pub(crate) use transform::make_strict;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{CallReader, NameMap, NameRules};
    use proptest::prelude::*;
    use serde_json::{Map, json};

    pub(super) fn openai(schema: Value) -> Strict {
        make_strict(&schema, StrictDialect::OpenAi).unwrap()
    }

    pub(super) fn messages(strict: &Strict) -> Vec<String> {
        strict
            .changes
            .iter()
            .map(|(p, m)| format!("{p}: {m}"))
            .collect()
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
