//! The text of a tool that a sentence-embedding model reads: what the tool is for,
//! as a passage.
//!
//! It holds the name split into words (`get current weather`), the description,
//! usage guidance (`when_to_use`, `example`), and each parameter's name in words
//! with its description, nested parameters included. `when_not_to` is left out, as
//! in the lexical index: it names what the tool is *not* for, and an embedding of
//! it would pull exactly those requests towards the tool. Titles, tags and
//! enumerated values are left out too: the model reads a passage, and lists of
//! labels dilute it. The model truncates the passage to its window, so the most
//! telling parts come first.

use serde_json::Value;

use super::tokenize::identifier_words;
use crate::ToolDescriptor;

/// The deepest a parameter schema is read.
const MAX_DEPTH: usize = 8;

/// The passage the embedding model reads for `tool`.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::search::embedding_text;
/// use toolgate_core::{Effect, ToolDescriptor, ToolSource};
/// let tool = ToolDescriptor::new(
///     "weather.get_current",
///     "The weather now.",
///     json!({"type": "object", "properties": {"cityName": {"type": "string", "description": "A city."}}}),
///     Effect::Read,
///     ToolSource::Builtin,
/// );
/// assert_eq!(embedding_text(&tool), "weather get current. The weather now. Parameters: city name: A city.");
/// ```
pub fn embedding_text(tool: &ToolDescriptor) -> String {
    let mut parts: Vec<String> = vec![identifier_words(&tool.name)];
    let mut push = |text: &str| {
        let text = text.trim();
        if !text.is_empty() {
            parts.push(text.to_owned());
        }
    };
    push(&tool.description);
    for s in [&tool.usage.when_to_use, &tool.usage.example]
        .into_iter()
        .flatten()
    {
        push(s);
    }
    let mut params = Vec::new();
    parameters(&tool.input_schema, 0, &mut params);
    if !params.is_empty() {
        parts.push(format!("Parameters: {}", params.join("; ")));
    }
    let mut text = String::new();
    for part in parts {
        if !text.is_empty() {
            text.push(' ');
        }
        let ends = part.ends_with(['.', '!', '?', ':', ';']);
        text.push_str(&part);
        if !ends {
            text.push('.');
        }
    }
    text
}

/// `name: description` (or the name alone) of each property of `schema`, depth first.
fn parameters(schema: &Value, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Some(object) = schema.as_object() else {
        return;
    };
    if let Some(properties) = object.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let words = identifier_words(name);
            let description = property
                .get("description")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|d| !d.is_empty());
            out.push(match description {
                Some(d) => format!("{words}: {}", d.trim_end_matches(['.', ';'])),
                None => words,
            });
            parameters(property, depth + 1, out);
        }
    }
    match object.get("items") {
        Some(items @ Value::Object(_)) => parameters(items, depth + 1, out),
        Some(Value::Array(items)) => items.iter().for_each(|i| parameters(i, depth + 1, out)),
        _ => {}
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(branches) = object.get(key).and_then(Value::as_array) {
            for branch in branches {
                parameters(branch, depth + 1, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{Effect, ToolSource, ToolUsage};

    #[test]
    fn the_passage_holds_name_description_guidance_and_parameters_never_when_not_to() {
        let mut tool = ToolDescriptor::new(
            "orders.refund_order",
            "Give money back for an order",
            json!({"type": "object", "properties": {
                "orderId": {"type": "string", "description": "The order."},
                "lines": {"type": "array", "items": {"type": "object", "properties": {
                    "sku": {"type": "string"}}}}}}),
            Effect::Write,
            ToolSource::Builtin,
        );
        tool.title = Some("Refund".into());
        tool.tags = vec!["billing".into()];
        tool.usage = ToolUsage {
            when_to_use: Some("The customer wants their money back.".into()),
            when_not_to: Some("Cancelling a subscription.".into()),
            example: Some("refund order 42".into()),
            ..ToolUsage::default()
        };
        assert_eq!(
            embedding_text(&tool),
            "orders refund order. Give money back for an order. The customer wants their \
             money back. refund order 42. Parameters: order id: The order; lines; sku."
        );
    }
}
