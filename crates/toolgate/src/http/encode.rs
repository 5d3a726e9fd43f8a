//! How a request writes a value as text: a JSON value as the text spliced into a
//! template, and percent-encoding for a URL component or a query value.
//!
//! Shared by every part of a request (URL, path styles, headers, body) and by the
//! secret masking, which must match the encoded forms it sends. Pure functions of
//! their input; nothing here reads arguments, state or the environment.

use serde_json::Value;

/// A value as text spliced into a string: strings as they are, `null` as nothing,
/// anything else as JSON.
pub(super) fn as_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Percent-encodes every byte but the unreserved characters.
pub(super) fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Percent-encodes as OpenAPI's `allowReserved` does in a query value: RFC 3986's
/// unreserved and reserved characters and percent-encoded triples pass, but for
/// `[`, `]` and `#` (not allowed in a query) and `&`, `=` and `+` (the
/// form-urlencoded delimiters); every other byte, and a `%` that starts no
/// triple, is encoded.
pub(super) fn encode_allowing_reserved(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    for (i, &b) in bytes.iter().enumerate() {
        let triple = b == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        let passes = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b':'
                    | b'/'
                    | b'?'
                    | b'@'
                    | b'!'
                    | b'$'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b','
                    | b';'
            );
        if passes || triple {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
