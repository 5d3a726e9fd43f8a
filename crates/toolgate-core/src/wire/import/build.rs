//! A draft made a spec tool: its arguments schema normalized and made an object
//! schema that is valid JSON Schema (or the tool left out, with the reason), its
//! return schema likewise, and its examples kept only where they fit.

use serde_json::{Map, Value, json};

use super::Draft;
use super::normalize::Normalizer;
use super::notes::Sink;
use super::valid::make_valid;
use crate::ToolUsage;
use crate::spec::ToolSpec;

/// The spec tool of a draft; `None` (with a note) when its arguments cannot be made
/// an object schema.
pub(super) fn build(draft: Draft, name: String, sink: &mut Sink) -> Option<ToolSpec> {
    let description = draft.description.unwrap_or_else(|| {
        sink.at(
            "/description",
            "no description: left empty; the model picks tools by it, so add one".into(),
        );
        String::new()
    });
    let parameters = match draft.parameters {
        Some((mut schema, dialect)) => {
            Normalizer {
                dialect,
                sink: &mut *sink,
            }
            .schema(&mut schema, "/parameters");
            if let Err(why) = object_root(&mut schema, sink)
                .and_then(|()| make_valid(&mut schema, "/parameters", sink))
            {
                sink.at("", format!("not imported: {why}"));
                return None;
            }
            Some(schema)
        }
        None => None,
    };
    let returns = draft.returns.and_then(|(mut schema, dialect)| {
        Normalizer {
            dialect,
            sink: &mut *sink,
        }
        .schema(&mut schema, "/returns");
        match make_valid(&mut schema, "/returns", sink) {
            Ok(()) => Some(schema),
            Err(why) => {
                sink.at("/returns", format!("left out: {why}"));
                None
            }
        }
    });
    let examples = usable_examples(draft.examples, parameters.as_ref(), sink);
    Some(ToolSpec {
        name,
        title: draft.title,
        description,
        parameters,
        returns,
        response: None,
        set_state: Default::default(),
        save_response_as: None,
        http: None,
        mcp: None,
        background: draft.background,
        scheduling: None,
        effect: draft.effect,
        usage: ToolUsage::default(),
        examples,
        tags: Vec::new(),
        always_loaded: false,
        timeout: None,
        output: None,
        sends: false,
        cost: None,
        inject: Default::default(),
    })
}

/// The examples that are objects matching `parameters`; the others are dropped.
fn usable_examples(
    examples: Vec<Value>,
    parameters: Option<&Value>,
    sink: &mut Sink,
) -> Vec<Value> {
    let validator = parameters.and_then(|p| jsonschema::draft202012::new(p).ok());
    let mut kept = Vec::new();
    for (i, example) in examples.into_iter().enumerate() {
        let fits = example.is_object() && validator.as_ref().is_none_or(|v| v.is_valid(&example));
        if fits {
            kept.push(example);
        } else {
            sink.at(
                &format!("/examples/{i}"),
                "dropped: the example does not match the parameters".into(),
            );
        }
    }
    kept
}

/// Makes the root of an arguments schema an object schema, or says why it cannot be.
fn object_root(schema: &mut Value, sink: &mut Sink) -> Result<(), String> {
    let at = "/parameters/type";
    match schema {
        Value::Bool(true) => {
            *schema = json!({"type": "object"});
            sink.at(
                at,
                "`true` (any value) written as `{type: object}`: tools take named arguments".into(),
            );
            Ok(())
        }
        Value::Object(map) => match map.get("type") {
            Some(Value::String(t)) if t == "object" => Ok(()),
            None => {
                let mut typed = Map::with_capacity(map.len() + 1);
                typed.insert("type".into(), "object".into());
                typed.extend(std::mem::take(map));
                *map = typed;
                sink.at(
                    at,
                    "no `type` at the root: set to `object`, as tools take named arguments".into(),
                );
                Ok(())
            }
            Some(Value::Array(types)) if types.iter().any(|t| t == "object") => {
                map.insert("type".into(), "object".into());
                sink.at(
                    at,
                    "the root may only be an object: other types removed".into(),
                );
                Ok(())
            }
            Some(other) => Err(format!(
                "the arguments must be an object schema (named arguments), not type {other}"
            )),
        },
        _ => Err("the arguments schema is not a JSON Schema object".into()),
    }
}
