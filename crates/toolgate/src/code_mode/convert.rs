//! JSON values in and out of the interpreter, faithfully: integers keep every digit
//! that JSON's 64-bit range holds, floats stay floats, `null` is `None`, objects keep
//! their key order, and strings are Unicode both ways. What JSON cannot carry (a
//! set, bytes, `nan`, an integer past 64 bits, a dict with tuple keys) is refused
//! with a message the program's author can act on, never silently changed.

use monty_types::{DictPairs, MontyObject};
use num_bigint::BigInt;
use serde_json::{Map, Number, Value};

/// How deep a value may nest on its way out: deeper than JSON parsers accept.
const MAX_DEPTH: usize = 128;

/// A JSON value as a Python value.
pub(crate) fn to_python(value: &Value) -> MontyObject {
    match value {
        Value::Null => MontyObject::None,
        Value::Bool(b) => MontyObject::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                MontyObject::Int(i)
            } else if let Some(u) = n.as_u64() {
                MontyObject::BigInt(BigInt::from(u))
            } else {
                MontyObject::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => MontyObject::String(s.clone()),
        Value::Array(items) => MontyObject::List(items.iter().map(to_python).collect()),
        Value::Object(map) => MontyObject::Dict(DictPairs::from(
            map.iter()
                .map(|(k, v)| (MontyObject::String(k.clone()), to_python(v)))
                .collect::<Vec<_>>(),
        )),
    }
}

/// A Python value as JSON, or why it is not JSON (a `TypeError` or `ValueError`
/// message for the program).
pub(crate) fn to_json(object: &MontyObject) -> Result<Value, NotJson> {
    to_json_at(object, 0)
}

/// Why a Python value cannot cross as JSON; `type_error` picks `TypeError` over
/// `ValueError`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NotJson {
    pub type_error: bool,
    pub message: String,
}

impl NotJson {
    fn type_error(message: String) -> Self {
        NotJson {
            type_error: true,
            message,
        }
    }

    fn value_error(message: String) -> Self {
        NotJson {
            type_error: false,
            message,
        }
    }

    /// The Python exception type to raise.
    pub(super) fn exception(&self) -> &'static str {
        if self.type_error {
            "TypeError"
        } else {
            "ValueError"
        }
    }
}

fn to_json_at(object: &MontyObject, depth: usize) -> Result<Value, NotJson> {
    if depth > MAX_DEPTH {
        return Err(NotJson::value_error(format!(
            "a value nested deeper than {MAX_DEPTH} levels cannot be sent as JSON"
        )));
    }
    Ok(match object {
        MontyObject::None => Value::Null,
        MontyObject::Bool(b) => Value::Bool(*b),
        MontyObject::Int(i) => Value::from(*i),
        MontyObject::BigInt(big) => {
            if let Ok(i) = i64::try_from(big) {
                Value::from(i)
            } else if let Ok(u) = u64::try_from(big) {
                Value::from(u)
            } else {
                return Err(NotJson::value_error(format!(
                    "the integer {big} does not fit in JSON's 64-bit range; pass it as a string (str(n))"
                )));
            }
        }
        MontyObject::Float(f) => match Number::from_f64(*f) {
            Some(n) => Value::Number(n),
            None => {
                return Err(NotJson::value_error(format!(
                    "{} is not a JSON number; send None or a string instead",
                    object.py_repr()
                )));
            }
        },
        MontyObject::String(s) => Value::String(s.clone()),
        MontyObject::List(items) | MontyObject::Tuple(items) => Value::Array(
            items
                .iter()
                .map(|item| to_json_at(item, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        MontyObject::Dict(pairs) => {
            let mut map = Map::new();
            for (key, value) in pairs {
                map.insert(json_key(key)?, to_json_at(value, depth + 1)?);
            }
            Value::Object(map)
        }
        other => {
            return Err(NotJson::type_error(format!(
                "a value of type {} cannot be sent as JSON; convert it to a str, int, float, bool, None, list or dict",
                other.type_name()
            )));
        }
    })
}

/// A dict key as a JSON key, as Python's `json.dumps` makes it: strings as they
/// are, numbers, booleans and None as their JSON text.
fn json_key(key: &MontyObject) -> Result<String, NotJson> {
    match key {
        MontyObject::String(s) => Ok(s.clone()),
        MontyObject::Int(i) => Ok(i.to_string()),
        MontyObject::BigInt(i) => Ok(i.to_string()),
        MontyObject::Bool(b) => Ok(b.to_string()),
        MontyObject::None => Ok("null".to_owned()),
        MontyObject::Float(f) if f.is_finite() => Ok(Value::from(*f).to_string()),
        other => Err(NotJson::type_error(format!(
            "a dict key of type {} cannot be sent as JSON; use str keys",
            other.type_name()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_crosses_into_python_and_back_unchanged() {
        let value = json!({
            "big": 18446744073709551615u64,
            "neg": -9223372036854775808i64,
            "float": 0.1,
            "whole_float": 2.0,
            "none": null,
            "nested": [{"a": [1, [2, {"b": true}]]}],
            "unicode": "año 日本 🦀",
            "z_first_then_a": {"z": 1, "a": 2}
        });
        assert_eq!(to_json(&to_python(&value)).unwrap(), value);
    }

    #[test]
    fn an_integer_past_64_bits_is_refused_with_a_way_out() {
        let big = MontyObject::BigInt(BigInt::from(u64::MAX) * 4);
        let error = to_json(&big).unwrap_err();
        assert_eq!(error.exception(), "ValueError");
        assert!(error.message.contains("str(n)"), "{}", error.message);
    }

    #[test]
    fn nan_and_sets_are_refused() {
        assert!(to_json(&MontyObject::Float(f64::NAN)).is_err());
        let error = to_json(&MontyObject::Set(vec![MontyObject::Int(1)])).unwrap_err();
        assert_eq!(error.exception(), "TypeError");
    }

    #[test]
    fn dict_keys_become_strings_as_json_dumps_makes_them() {
        let dict = MontyObject::Dict(DictPairs::from(vec![
            (MontyObject::Int(1), MontyObject::None),
            (MontyObject::Bool(true), MontyObject::None),
        ]));
        assert_eq!(to_json(&dict).unwrap(), json!({"1": null, "true": null}));
    }
}
