//! An upstream `tools/call` result as a tool's value or error.
//!
//! - `structuredContent`, when the server sent it, is the value;
//! - otherwise content that is all text is the value as one string (parts joined
//!   with newlines);
//! - otherwise (images, audio, resources, resource links) the value is
//!   `{"content": [...]}` holding every part as the MCP content block it was, so
//!   nothing is flattened into text and a server can pass the parts on as they are
//!   ([`content_blocks`] recognises this shape);
//! - `isError: true` is the tool's error, with the server's text.

use serde_json::{Value, json};
use toolgate_core::ToolError;

use super::config::Scrubber;

/// The value or error of one upstream call result (given as its JSON form).
pub fn call_outcome(result: &Value, scrubber: &Scrubber) -> Result<Value, ToolError> {
    let parts: &[Value] = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text = texts(parts).join("\n");
        let others = parts.len() - texts(parts).len();
        let mut message = if text.trim().is_empty() {
            "the server reported an error without a message".to_owned()
        } else {
            scrubber.scrub(text.trim())
        };
        if others > 0 {
            message.push_str(&format!(" ({others} more non-text parts left out)"));
        }
        return Err(ToolError::permanent(message));
    }
    if let Some(structured) = result.get("structuredContent") {
        return Ok(structured.clone());
    }
    if parts
        .iter()
        .all(|p| p.get("type").and_then(Value::as_str) == Some("text"))
    {
        return Ok(Value::String(texts(parts).join("\n")));
    }
    Ok(json!({ "content": parts }))
}

fn texts(parts: &[Value]) -> Vec<&str> {
    parts
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect()
}

/// The MCP content blocks of a value shaped `{"content": [...]}` by [`call_outcome`]:
/// an object with only `content`, a list of objects that each have a `type`.
pub fn content_blocks(value: &Value) -> Option<&[Value]> {
    let object = value.as_object()?;
    if object.len() != 1 {
        return None;
    }
    let parts = object.get("content")?.as_array()?;
    parts
        .iter()
        .all(|p| p.get("type").is_some_and(Value::is_string))
        .then_some(parts.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(result: Value) -> Result<Value, ToolError> {
        call_outcome(&result, &Scrubber::default())
    }

    #[test]
    fn structured_content_wins_over_text() {
        let value = outcome(json!({
            "content": [{"type": "text", "text": "{\"t\": 21}"}],
            "structuredContent": {"t": 21}
        }));
        assert_eq!(value, Ok(json!({"t": 21})));
    }

    #[test]
    fn text_parts_are_joined() {
        let value = outcome(json!({"content": [
            {"type": "text", "text": "one"}, {"type": "text", "text": "two"}
        ]}));
        assert_eq!(value, Ok(json!("one\ntwo")));
        assert_eq!(outcome(json!({"content": []})), Ok(json!("")));
    }

    #[test]
    fn images_and_resources_stay_content_blocks() {
        let parts = json!([
            {"type": "text", "text": "a tiny image:"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://1", "text": "x"}}
        ]);
        let value = outcome(json!({"content": parts.clone()})).unwrap();
        assert_eq!(value, json!({"content": parts}));
        assert_eq!(content_blocks(&value).map(<[Value]>::len), Some(3));
        assert_eq!(content_blocks(&json!({"content": "x"})), None);
        assert_eq!(content_blocks(&json!({"content": [], "more": 1})), None);
    }

    #[test]
    fn is_error_becomes_the_tools_error_with_the_servers_text_scrubbed() {
        let mut scrubber = Scrubber::default();
        scrubber.add("sekrit-token".into());
        let err = call_outcome(
            &json!({"isError": true, "content": [{"type": "text", "text": "denied for sekrit-token"}]}),
            &scrubber,
        )
        .unwrap_err();
        assert_eq!(err, ToolError::permanent("denied for [redacted]"));
        let err = outcome(json!({"isError": true, "content": []})).unwrap_err();
        assert_eq!(
            err,
            ToolError::permanent("the server reported an error without a message")
        );
    }
}
