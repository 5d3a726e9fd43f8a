//! Checking a call's arguments against the tool's input schema, and filling defaults.

use serde::Serialize;
use serde_json::Value;
use toolgate_core::{ECHO_CHARS, clip_text};

/// One way the arguments break the tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArgumentProblem {
    /// JSON pointer into the arguments (`""` is the whole object).
    pub path: String,
    /// The schema keyword broken, e.g. `required` or `type`.
    pub rule: String,
    /// What is wrong, in words a model can act on.
    pub message: String,
}

/// A tool's compiled input schema. Compiled once, when the gate is built.
pub(crate) struct ArgumentChecker {
    schema: Value,
    validator: Result<jsonschema::Validator, String>,
}

impl ArgumentChecker {
    pub(crate) fn new(schema: &Value) -> Self {
        let validator = jsonschema::draft202012::new(schema).map_err(|e| e.to_string());
        ArgumentChecker {
            schema: schema.clone(),
            validator,
        }
    }

    /// Every violation, or the arguments with schema defaults filled in.
    pub(crate) fn check(&self, arguments: &Value) -> Result<Value, Vec<ArgumentProblem>> {
        let validator = self.validator.as_ref().map_err(|schema_error| {
            vec![ArgumentProblem {
                path: String::new(),
                rule: "schema".into(),
                message: format!(
                    "the tool's own input schema is broken ({schema_error}); tell the operator"
                ),
            }]
        })?;
        if validator.is_valid(arguments) {
            let mut filled = arguments.clone();
            fill_defaults(&self.schema, &self.schema, &mut filled, 0);
            return Ok(filled);
        }
        let problems: Vec<ArgumentProblem> = validator
            .iter_errors(arguments)
            .take(MAX_PROBLEMS + 1)
            .map(|e| ArgumentProblem {
                path: clip_text(e.instance_path().as_str(), ECHO_CHARS).into_owned(),
                rule: e.kind().keyword().to_owned(),
                message: describe(&e),
            })
            .collect();
        Err(problems)
    }
}

/// How many problems are reported at most; past them, the message says there are more.
const MAX_PROBLEMS: usize = 20;

/// How long one problem's message may be, once the value it quotes is cut.
const MAX_PROBLEM_CHARS: usize = 600;

/// The validator's message, except that an enum lists every allowed value (the
/// validator elides all but two), so the model can pick one, and that the value
/// it quotes is cut to [`ECHO_CHARS`] (a 4 MiB argument is not sent back whole).
fn describe(error: &jsonschema::ValidationError<'_>) -> String {
    let message = message(error);
    let quoted = error.instance().to_string();
    let message = if quoted.chars().nth(ECHO_CHARS).is_some() {
        message.replacen(&quoted, &clip_text(&quoted, ECHO_CHARS), 1)
    } else {
        message
    };
    clip_text(&message, MAX_PROBLEM_CHARS).into_owned()
}

fn message(error: &jsonschema::ValidationError<'_>) -> String {
    match error.kind() {
        jsonschema::error::ValidationErrorKind::Enum { options } => {
            let allowed = options.as_array().map_or_else(
                || options.to_string(),
                |values| {
                    values
                        .iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            );
            format!("{} is not one of {allowed}", error.instance())
        }
        _ => error.to_string(),
    }
}

/// How deep `$ref`s and nested objects are followed when filling defaults.
const MAX_DEPTH: usize = 16;

/// Inserts each absent property that declares a `default`, in objects the value has.
fn fill_defaults(schema: &Value, root: &Value, value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        && let Some(resolved) = root.pointer(target)
    {
        fill_defaults(resolved, root, value, depth + 1);
    }
    let (Some(properties), Some(object)) = (
        schema.get("properties").and_then(Value::as_object),
        value.as_object_mut(),
    ) else {
        return;
    };
    for (key, property) in properties {
        match object.get_mut(key) {
            Some(present) => fill_defaults(property, root, present, depth + 1),
            None => {
                if let Some(default) = property.get("default") {
                    object.insert(key.clone(), default.clone());
                }
            }
        }
    }
}

/// The message a model gets for invalid arguments: every problem, with its path and rule.
pub fn invalid_arguments_message(tool: &str, problems: &[ArgumentProblem]) -> String {
    let mut message =
        format!("the arguments for `{tool}` are invalid; nothing ran. Fix these and call again:");
    for p in problems.iter().take(MAX_PROBLEMS) {
        let at = if p.path.is_empty() {
            "(the arguments)".to_owned()
        } else {
            format!("`{}`", p.path)
        };
        message.push_str(&format!("\n- at {at}: {} [{}]", p.message, p.rule));
    }
    if problems.len() > MAX_PROBLEMS {
        message.push_str("\n- and more: fix these first, then call again to see the rest");
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_fill_absent_properties_at_every_level() {
        let schema = json!({
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "default": 10},
                "filter": {"$ref": "#/$defs/Filter"}
            },
            "$defs": {"Filter": {"type": "object", "properties": {"archived": {"type": "boolean", "default": false}}}}
        });
        let checker = ArgumentChecker::new(&schema);
        assert_eq!(
            checker.check(&json!({"filter": {}})).unwrap(),
            json!({"filter": {"archived": false}, "limit": 10})
        );
        assert_eq!(
            checker.check(&json!({"limit": 3})).unwrap(),
            json!({"limit": 3})
        );
    }

    #[test]
    fn a_huge_invalid_value_is_quoted_only_in_part() {
        let schema = json!({"type": "object", "properties": {"order_id": {"type": "integer"}}});
        let huge = "7".repeat(4 << 20);
        let problems = ArgumentChecker::new(&schema)
            .check(&json!({"order_id": huge}))
            .unwrap_err();
        let message = invalid_arguments_message("lookup_order", &problems);
        assert!(message.len() < 1000, "{} bytes", message.len());
        assert!(message.contains("bytes more)"), "{message}");
        assert!(message.contains("is not of type"), "{message}");
    }

    #[test]
    fn at_most_twenty_problems_are_listed() {
        let schema = json!({"type": "array", "items": {"type": "integer"}});
        let problems = ArgumentChecker::new(&schema)
            .check(&json!(vec!["x"; 10_000]))
            .unwrap_err();
        let message = invalid_arguments_message("t", &problems);
        assert_eq!(message.matches("\n- at ").count(), MAX_PROBLEMS);
        assert!(message.ends_with("call again to see the rest"), "{message}");
    }

    #[test]
    fn every_violation_is_reported_with_its_path_and_rule() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"minimum": 1}}, "required": ["c"]});
        let problems = ArgumentChecker::new(&schema)
            .check(&json!({"a": 1, "b": 0}))
            .unwrap_err();
        let found: Vec<(&str, &str)> = problems
            .iter()
            .map(|p| (p.path.as_str(), p.rule.as_str()))
            .collect();
        assert_eq!(found.len(), 3);
        assert!(
            found.contains(&("/a", "type"))
                && found.contains(&("/b", "minimum"))
                && found.contains(&("", "required"))
        );
    }
}
