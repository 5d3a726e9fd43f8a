//! A call's arguments in its span, for the tools whose arguments the spec's
//! `telemetry.span_arguments` opts in: only the names it lists, from the
//! arguments as the audit log keeps them (secrets already `[redacted]`), each
//! value cut at [`SPAN_VALUE_CHARS`].

use serde_json::{Map, Value};
use toolgate_core::clip_text;

/// How many characters of one argument's value a span keeps (a value that is
/// an object or array counts as its JSON text).
pub(crate) const SPAN_VALUE_CHARS: usize = 256;

/// The JSON text of the `names`d arguments of `redacted` (`"*"`: all), or
/// nothing when none of them is there.
pub(crate) fn span_arguments(redacted: &Value, names: &[String]) -> Option<String> {
    let Value::Object(map) = redacted else {
        return None;
    };
    let all = names.iter().any(|n| n == "*");
    let picked: Map<String, Value> = map
        .iter()
        .filter(|(key, _)| all || names.iter().any(|n| n == *key))
        .map(|(key, value)| (key.clone(), bounded(value)))
        .collect();
    (!picked.is_empty()).then(|| Value::Object(picked).to_string())
}

fn bounded(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(clip_text(s, SPAN_VALUE_CHARS).into_owned()),
        Value::Array(_) | Value::Object(_) => {
            let text = value.to_string();
            if text.chars().count() > SPAN_VALUE_CHARS {
                Value::String(clip_text(&text, SPAN_VALUE_CHARS).into_owned())
            } else {
                value.clone()
            }
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolgate_core::audit_arguments;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_the_named_arguments_are_recorded_and_secrets_never() {
        let schema = json!({"properties": {"pin": {"type": "string", "writeOnly": true}}});
        let args = json!({"id": "A-1", "note": "hi", "pin": "1234", "api_key": "sk-live-1"});
        let redacted = audit_arguments(&args, &schema);
        let text = span_arguments(&redacted, &names(&["id", "pin", "api_key"])).unwrap();
        let got: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            got,
            json!({"id": "A-1", "pin": "[redacted]", "api_key": "[redacted]"})
        );
        let all = span_arguments(&redacted, &names(&["*"])).unwrap();
        assert!(!all.contains("1234") && !all.contains("sk-live-1"), "{all}");
        assert!(all.contains("\"note\":\"hi\""), "{all}");
        assert_eq!(span_arguments(&redacted, &names(&["absent"])), None);
    }

    #[test]
    fn long_values_are_cut_to_the_bound() {
        let long = "x".repeat(5000);
        let args = json!({"text": long, "list": vec![long.clone(); 3], "n": 7});
        let text = span_arguments(&audit_arguments(&args, &Value::Null), &names(&["*"])).unwrap();
        let got: Value = serde_json::from_str(&text).unwrap();
        for key in ["text", "list"] {
            let value = got[key].as_str().unwrap();
            assert!(
                value.chars().count() < SPAN_VALUE_CHARS + 64,
                "{key}: {value}"
            );
        }
        assert_eq!(got["n"], 7);
        assert!(text.len() < 3 * (SPAN_VALUE_CHARS + 64), "{}", text.len());
    }
}
