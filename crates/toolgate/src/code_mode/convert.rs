//! JSON values in and out of the interpreter, faithfully: integers keep every digit
//! that JSON's 64-bit range holds, floats stay floats, `null` is `None`, objects keep
//! their key order, and strings are Unicode both ways. What JSON cannot carry (a
//! set, bytes, `nan`, an integer past 64 bits, a dict with tuple keys) is refused
//! with a message the program's author can act on, never silently changed.

use monty_types::{MontyObject, ObjectRef};
use num_bigint::BigInt;
use serde_json::{Map, Number, Value};

/// How deep a value may nest on its way out: deeper than JSON parsers accept.
const MAX_DEPTH: usize = 128;

/// A JSON value as a Python value.
pub(crate) fn to_python(value: &Value) -> MontyObject {
    match value {
        Value::Null => MontyObject::none(),
        Value::Bool(b) => MontyObject::bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                MontyObject::int(i)
            } else if let Some(u) = n.as_u64() {
                MontyObject::bigint(BigInt::from(u))
            } else {
                MontyObject::float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => MontyObject::string(s.clone()),
        Value::Array(items) => MontyObject::list(items.iter().map(to_python)),
        Value::Object(map) => MontyObject::dict(
            map.iter()
                .map(|(k, v)| (MontyObject::string(k.clone()), to_python(v))),
        ),
    }
}

/// A Python value as JSON, or why it is not JSON (a `TypeError` or `ValueError`
/// message for the program).
pub(crate) fn to_json(object: ObjectRef<'_>) -> Result<Value, NotJson> {
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

fn to_json_at(object: ObjectRef<'_>, depth: usize) -> Result<Value, NotJson> {
    if depth > MAX_DEPTH {
        return Err(NotJson::value_error(format!(
            "a value nested deeper than {MAX_DEPTH} levels cannot be sent as JSON"
        )));
    }
    Ok(match object.type_name() {
        "NoneType" => Value::Null,
        "bool" => Value::Bool(object.as_bool().unwrap_or_default()),
        "int" => integer(object)?,
        "float" => {
            let f = object.as_float().unwrap_or(f64::NAN);
            match Number::from_f64(f) {
                Some(n) => Value::Number(n),
                None => {
                    return Err(NotJson::value_error(format!(
                        "{} is not a JSON number; send None or a string instead",
                        object.py_repr()
                    )));
                }
            }
        }
        "str" => Value::String(object.as_str().unwrap_or_default().to_owned()),
        "list" | "tuple" => Value::Array(
            object
                .items()
                .unwrap_or_default()
                .into_iter()
                .map(|item| to_json_at(item, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        "dict" => {
            let mut map = Map::new();
            for (key, value) in object.pairs().unwrap_or_default() {
                map.insert(json_key(key)?, to_json_at(value, depth + 1)?);
            }
            Value::Object(map)
        }
        other => {
            return Err(NotJson::type_error(format!(
                "a value of type {other} cannot be sent as JSON; convert it to a str, int, float, bool, None, list or dict"
            )));
        }
    })
}

/// An `int` as a JSON number, if JSON's 64-bit range holds it.
fn integer(object: ObjectRef<'_>) -> Result<Value, NotJson> {
    if let Some(i) = object.as_int() {
        return Ok(Value::from(i));
    }
    let digits = object.py_repr();
    match digits.parse::<u64>() {
        Ok(u) => Ok(Value::from(u)),
        Err(_) => Err(NotJson::value_error(format!(
            "the integer {digits} does not fit in JSON's 64-bit range; pass it as a string (str(n))"
        ))),
    }
}

/// A dict key as a JSON key, as Python's `json.dumps` makes it: strings as they
/// are, numbers, booleans and None as their JSON text.
fn json_key(key: ObjectRef<'_>) -> Result<String, NotJson> {
    match key.type_name() {
        "str" => Ok(key.as_str().unwrap_or_default().to_owned()),
        "int" => Ok(key.py_repr()),
        "bool" => Ok(key.as_bool().unwrap_or_default().to_string()),
        "NoneType" => Ok("null".to_owned()),
        "float" if key.as_float().is_some_and(f64::is_finite) => {
            Ok(Value::from(key.as_float().unwrap_or_default()).to_string())
        }
        other => Err(NotJson::type_error(format!(
            "a dict key of type {other} cannot be sent as JSON; use str keys"
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
        assert_eq!(to_json(to_python(&value).as_ref()).unwrap(), value);
    }

    #[test]
    fn an_integer_past_64_bits_is_refused_with_a_way_out() {
        let big = MontyObject::bigint(BigInt::from(u64::MAX) * 4);
        let error = to_json(big.as_ref()).unwrap_err();
        assert_eq!(error.exception(), "ValueError");
        assert!(error.message.contains("str(n)"), "{}", error.message);
    }

    #[test]
    fn nan_and_sets_are_refused() {
        assert!(to_json(MontyObject::float(f64::NAN).as_ref()).is_err());
        let error = to_json(MontyObject::set([MontyObject::int(1)]).as_ref()).unwrap_err();
        assert_eq!(error.exception(), "TypeError");
    }

    #[test]
    fn dict_keys_become_strings_as_json_dumps_makes_them() {
        let dict = MontyObject::dict([
            (MontyObject::int(1), MontyObject::none()),
            (MontyObject::bool(true), MontyObject::none()),
        ]);
        assert_eq!(
            to_json(dict.as_ref()).unwrap(),
            json!({"1": null, "true": null})
        );
    }
}
