//! Calls read back from a model's response, whole or streamed.

use serde::Serialize;
use serde_json::Value;

use super::CallReader;

/// One tool call, under its canonical name. A call the model got wrong (arguments
/// that are not a JSON object, an unknown tool) is kept and marked `invalid` with a
/// message the model can act on, so the loop can answer it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParsedCall {
    /// The API's id for the call, used to correlate the result.
    pub id: String,
    /// The canonical tool name (the wire name when the tool is unknown).
    pub name: String,
    /// The arguments, `{}` when they could not be read.
    pub arguments: Value,
    /// Why the call cannot run, in words for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

impl ParsedCall {
    /// Whether the call may run (`invalid` is `None`).
    pub fn is_valid(&self) -> bool {
        self.invalid.is_none()
    }
}

/// Arguments as an API sends them: a JSON text (OpenAI) or an object (Anthropic, Gemini, MCP).
pub enum RawArguments<'a> {
    /// A JSON text still to be parsed (OpenAI's `arguments` string).
    Text(&'a str),
    /// An already-parsed value.
    Value(&'a Value),
}

/// Builds a [`ParsedCall`] from what the API sent: maps the name back, parses and
/// checks the arguments, and restores optional fields.
pub fn read_call(
    reader: &CallReader,
    id: &str,
    wire_name: &str,
    arguments: RawArguments<'_>,
) -> ParsedCall {
    let (name, unknown) = match reader.names.canonical(wire_name) {
        Some(canonical) => (canonical.to_owned(), None),
        None => (
            wire_name.to_owned(),
            Some(format!(
                "there is no tool named `{wire_name}`; call one of the tools you were given"
            )),
        ),
    };
    let parsed = match arguments {
        RawArguments::Text(text) if text.trim().is_empty() => Ok(Value::Object(Default::default())),
        RawArguments::Text(text) => serde_json::from_str::<Value>(text).map_err(|e| {
            format!(
                "the arguments for `{name}` are not valid JSON ({e}); send one complete JSON object"
            )
        }),
        RawArguments::Value(value) => Ok(value.clone()),
    };
    let (mut arguments, bad_arguments) = match parsed {
        Ok(value @ Value::Object(_)) => (value, None),
        Ok(Value::Null) => (Value::Object(Default::default()), None),
        Ok(other) => (
            Value::Object(Default::default()),
            Some(format!(
                "the arguments for `{name}` must be a JSON object, not {}",
                kind(&other)
            )),
        ),
        Err(message) => (Value::Object(Default::default()), Some(message)),
    };
    if unknown.is_none() {
        reader.restore_parameters(&name, &mut arguments);
        reader.restore_optionals(&name, &mut arguments);
    }
    ParsedCall {
        id: id.to_owned(),
        name,
        arguments,
        invalid: unknown.or(bad_arguments),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A response (or stream event) that is not the shape the API sends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{target}: {message}")]
pub struct ParseError {
    /// The target whose response it is (its `as_str` name).
    pub target: &'static str,
    /// What is wrong with it.
    pub message: String,
}

impl ParseError {
    /// An error in a response of `target`.
    pub fn new(target: super::Target, message: impl Into<String>) -> Self {
        ParseError {
            target: target.as_str(),
            message: message.into(),
        }
    }
}

/// Assembles calls from an API's stream of events, in the order they started.
pub trait StreamParser {
    /// Takes one event (a parsed SSE `data:` payload, or a chunk).
    fn feed(&mut self, event: &Value) -> Result<(), ParseError>;
    /// The calls the stream carried; unfinished arguments are reported as invalid.
    fn finish(self: Box<Self>, reader: &CallReader) -> Vec<ParsedCall>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{NameMap, NameRules};
    use serde_json::json;

    fn reader() -> CallReader {
        CallReader::new(NameMap::build(["github.create_issue"], &NameRules::OPENAI))
    }

    #[test]
    fn a_wire_name_maps_back_to_the_canonical_name() {
        let call = read_call(
            &reader(),
            "c1",
            "github_create_issue",
            RawArguments::Text(r#"{"title": "x"}"#),
        );
        assert_eq!(call.name, "github.create_issue");
        assert_eq!(call.arguments, json!({"title": "x"}));
        assert!(call.is_valid());
    }

    #[test]
    fn truncated_json_is_an_invalid_call_not_a_panic() {
        let call = read_call(
            &reader(),
            "c1",
            "github_create_issue",
            RawArguments::Text(r#"{"title": "#),
        );
        assert!(call.invalid.unwrap().contains("are not valid JSON"));
        assert_eq!(call.arguments, json!({}));
    }

    #[test]
    fn arguments_that_are_not_an_object_are_invalid() {
        let call = read_call(
            &reader(),
            "c1",
            "github_create_issue",
            RawArguments::Value(&json!([1])),
        );
        assert_eq!(
            call.invalid.unwrap(),
            "the arguments for `github.create_issue` must be a JSON object, not an array"
        );
    }

    #[test]
    fn an_unknown_tool_is_invalid_and_keeps_its_wire_name() {
        let call = read_call(
            &reader(),
            "c1",
            "delete_everything",
            RawArguments::Text("{}"),
        );
        assert_eq!(call.name, "delete_everything");
        assert!(
            call.invalid
                .unwrap()
                .contains("there is no tool named `delete_everything`")
        );
    }

    mod properties {
        use super::*;
        use crate::wire::{Target, parse_response, stream_parser};
        use proptest::prelude::*;

        /// JSON built from every target's stream vocabulary, with indexes from
        /// outside at their extremes.
        fn event() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                prop_oneof![Just(u64::MAX), Just(u64::MAX - 1), any::<u64>()]
                    .prop_map(|n| json!(n)),
                Just(json!(i64::MIN)),
                Just(json!(-1)),
                Just(json!(1e300)),
                prop_oneof![
                    Just("function_call"),
                    Just("tool_use"),
                    Just("content_block_start"),
                    Just("content_block_delta"),
                    Just("input_json_delta"),
                    Just("content_block_stop"),
                    Just("response.output_item.added"),
                    Just("response.output_item.done"),
                    Just("response.function_call_arguments.delta"),
                    Just("tools/call"),
                    Just("github_create_issue"),
                    Just("$.a[99999]"),
                    Just("{\"a\""),
                    Just(""),
                ]
                .prop_map(|s| json!(s)),
            ];
            leaf.prop_recursive(5, 64, 6, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    proptest::collection::vec(
                        (
                            prop_oneof![
                                Just("choices"),
                                Just("delta"),
                                Just("tool_calls"),
                                Just("index"),
                                Just("output_index"),
                                Just("item_id"),
                                Just("item"),
                                Just("id"),
                                Just("type"),
                                Just("function"),
                                Just("name"),
                                Just("arguments"),
                                Just("content_block"),
                                Just("partial_json"),
                                Just("candidates"),
                                Just("content"),
                                Just("parts"),
                                Just("functionCall"),
                                Just("args"),
                                Just("partialArgs"),
                                Just("jsonPath"),
                                Just("stringValue"),
                                Just("willContinue"),
                                Just("method"),
                                Just("params"),
                                Just("jsonrpc"),
                            ],
                            inner,
                        ),
                        0..6,
                    )
                    .prop_map(|kv| Value::Object(
                        kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                    )),
                ]
            })
        }

        proptest! {
            #[test]
            fn no_event_makes_any_targets_parser_panic(events in proptest::collection::vec(event(), 1..8)) {
                let reader = reader();
                for target in Target::ALL {
                    for e in &events {
                        let _ = parse_response(target, e, &reader);
                    }
                    let mut stream = stream_parser(target);
                    for e in &events {
                        let _ = stream.feed(e);
                    }
                    let _ = stream.finish(&reader);
                }
            }
        }
    }
}
