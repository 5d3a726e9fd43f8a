//! Canonical JSON and content hashes: the same value always gives the same bytes.
//!
//! Object keys are sorted (by UTF-8 bytes), there is no insignificant whitespace,
//! and numbers and strings are written as serde_json writes them. Used wherever a
//! value is hashed: audit records, approval matching, pinned tool definitions.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The canonical text of `value`.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The SHA-256 of `bytes`, as lowercase hex.
pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    lower_hex(&Sha256::digest(bytes.as_ref()))
}

/// `bytes` as lowercase hex, two digits a byte.
pub fn lower_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &byte in bytes {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out
}

/// The SHA-256 of a value's canonical JSON.
pub fn content_hash(value: &Value) -> String {
    sha256_hex(canonical_json(value))
}

/// What "the same call" means to approvals, idempotency keys and calls in
/// doubt: the SHA-256 of the tool's name, the hash of its definition as the
/// gate holds it (`definition`: so an answer given for one definition of an
/// upstream tool does not cover a changed one) and the arguments, canonical.
pub fn call_hash(tool: &str, definition: &str, arguments: &Value) -> String {
    let call = serde_json::json!({"tool": tool, "definition": definition, "arguments": arguments});
    content_hash(&call)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_text() {
        let a = json!({"b": 1, "a": {"y": [1, 2], "x": "s"}});
        let b = json!({"a": {"x": "s", "y": [1, 2]}, "b": 1});
        assert_eq!(canonical_json(&a), r#"{"a":{"x":"s","y":[1,2]},"b":1}"#);
        assert_eq!(content_hash(&a), content_hash(&b));
    }

    #[test]
    fn the_hash_is_sha256_hex() {
        assert_eq!(
            sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
