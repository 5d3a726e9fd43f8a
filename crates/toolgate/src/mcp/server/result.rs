//! A gate outcome as an MCP `CallToolResult`: the content the model reads,
//! `structuredContent` when there is a structured value, and `isError`.
//!
//! A tool returns MCP content parts (images, audio, embedded resources, several
//! parts) by returning the value `{"content": [ContentBlock, ...]}` and nothing
//! else; [`content_value`] builds it. Any other value is one text part (the
//! gate's text for the model: sanitized and fenced when the tool is untrusted),
//! and, when it is an object, also `structuredContent`.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value};
use toolgate_core::{DynTool, SanitizeOptions, sanitize_output};

use crate::Outcome;

/// The value a tool returns to answer with MCP content parts (images, audio,
/// resources, several parts) rather than one text part; [`content_blocks`] reads
/// it back when the call is answered.
pub fn content_value(blocks: &[ContentBlock]) -> Value {
    let mut out = Map::new();
    out.insert(
        "content".into(),
        serde_json::to_value(blocks).unwrap_or_else(|_| Value::Array(Vec::new())),
    );
    Value::Object(out)
}

/// Server side of the wire: the MCP content parts a tool's value asks the
/// gateway to answer its downstream client with, when it is a [`content_value`]:
/// an object with only `content`, a non-empty list whose every part parses as a
/// content block. `None` for anything else, which is then answered as one text
/// part. (Reading an upstream server's result is the client side's rule,
/// [`client::upstream_content`](crate::mcp::client::upstream_content).)
pub fn content_blocks(value: &Value) -> Option<Vec<ContentBlock>> {
    let object = value.as_object()?;
    let parts = object.get("content")?.as_array()?;
    if object.len() != 1 || parts.is_empty() {
        return None;
    }
    parts
        .iter()
        .map(|part| serde_json::from_value::<ContentBlock>(part.clone()).ok())
        .collect()
}

/// The result of a call that ran or was refused (a call still waiting for a
/// person says how to approve it).
pub(crate) fn call_result(outcome: &Outcome, tool: Option<&dyn DynTool>) -> CallToolResult {
    match outcome {
        Outcome::Ok {
            value,
            structured,
            text,
            ..
        } => {
            let trusted = tool.is_some_and(|t| t.trusted());
            let source = tool.map_or("", |t| t.name());
            let mut result = match content_blocks(value) {
                Some(blocks) if trusted => CallToolResult::success(blocks),
                Some(blocks) => CallToolResult::success(
                    blocks
                        .into_iter()
                        .map(|b| sanitize_block(b, source))
                        .collect(),
                ),
                None => CallToolResult::success(vec![ContentBlock::text(text.clone())]),
            };
            result.structured_content = match structured {
                Some(structured) => Some(structured.clone()),
                None if trusted && value.is_object() && content_blocks(value).is_none() => {
                    Some(value.clone())
                }
                None => None,
            }
            .filter(Value::is_object);
            result
        }
        Outcome::PendingApproval {
            approval_id,
            reason,
        } => error_result(super::approval::pending_message(approval_id, reason, None)),
        refused => error_result(refused.message_for_model()),
    }
}

/// An `isError` result the model reads.
pub(crate) fn error_result(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

/// Text from an untrusted tool, sanitized and fenced as the gate does its output;
/// binary parts are passed as they are.
fn sanitize_block(block: ContentBlock, source: &str) -> ContentBlock {
    let clean = |text: &str| sanitize_output(text, source, &SanitizeOptions::for_output()).text;
    match block {
        ContentBlock::Text(mut text) => {
            text.text = clean(&text.text);
            ContentBlock::Text(text)
        }
        ContentBlock::Resource(mut embedded) => {
            if let ResourceContents::TextResourceContents { text, .. } = &mut embedded.resource {
                *text = clean(text);
            }
            ContentBlock::Resource(embedded)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_content_value_round_trips_its_parts() {
        let blocks = vec![
            ContentBlock::text("a chart:"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
        ];
        assert_eq!(content_blocks(&content_value(&blocks)), Some(blocks));
    }

    #[test]
    fn values_that_only_look_like_content_stay_values() {
        for value in [
            json!({"content": []}),
            json!({"content": [{"type": "text", "text": "x"}], "more": 1}),
            json!({"content": [{"type": "video", "url": "x"}]}),
            json!({"content": "text"}),
            json!("content"),
        ] {
            assert_eq!(content_blocks(&value), None, "{value}");
        }
    }

    #[test]
    fn an_object_from_an_untrusted_tool_without_a_declared_shape_is_text_only() {
        let outcome = Outcome::Ok {
            value: json!({"status": "shipped"}),
            structured: None,
            text: "{\"status\":\"shipped\"}".into(),
            notes: vec![],
        };
        let result = serde_json::to_value(call_result(&outcome, None)).unwrap();
        assert_eq!(result["content"][0]["text"], "{\"status\":\"shipped\"}");
        assert_eq!(
            result.get("structuredContent"),
            None,
            "an unknown tool is untrusted"
        );
    }

    #[test]
    fn refusals_are_error_results_with_the_message_for_the_model() {
        let outcome = Outcome::Denied {
            reason: "outside the scopes of faq_bot".into(),
        };
        let result = serde_json::to_value(call_result(&outcome, None)).unwrap();
        assert_eq!(result["isError"], true);
        assert_eq!(
            result["content"][0]["text"],
            "this call is not allowed: outside the scopes of faq_bot"
        );
    }
}
