//! What a tool call produced, as every API's tool-result message carries it.

use serde::Serialize;
use serde_json::Value;

/// The result of one call, API-neutral.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolResult {
    /// The value the tool returned, or the error message for the model.
    pub content: Value,
    /// Whether the call failed.
    pub is_error: bool,
}

impl ToolResult {
    /// A tool's successful result.
    pub fn ok(value: Value) -> Self {
        ToolResult {
            content: value,
            is_error: false,
        }
    }

    /// A failed call; the model sees `message`.
    pub fn error(message: impl Into<String>) -> Self {
        ToolResult {
            content: Value::String(message.into()),
            is_error: true,
        }
    }

    /// The content as text: strings as they are, anything else as compact JSON.
    pub fn text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}
