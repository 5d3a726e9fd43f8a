//! Bounding what a caller's input costs downstream: how much of an argument an
//! error message echoes, and how much of a call's arguments the audit log keeps.
//!
//! A 4 MiB argument used to come back whole in the error message and be stored
//! twice in the audit log (arguments and message). Echoes are cut to a few
//! hundred characters with `… (N bytes more)`; the audit log keeps the start of
//! each long string with the size and SHA-256 of the whole (so a record still
//! says which value it was), and replaces arguments that stay large as a whole
//! by their size, hash and first characters.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use crate::{content_hash, redact_arguments, sha256_hex};

/// How many characters of an argument an error message shows.
pub const ECHO_CHARS: usize = 200;

/// How many bytes of one string the audit log keeps.
pub const AUDIT_STRING_BYTES: usize = 256;

/// How many bytes of a call's arguments (as JSON) the audit log keeps, at most
/// after long strings are cut; larger arguments are kept as size, hash and start.
pub const AUDIT_ARGUMENTS_BYTES: usize = 8 * 1024;

/// How many characters of the start of large arguments the audit log keeps.
const AUDIT_START_CHARS: usize = 512;

/// The key that marks arguments kept only as size, hash and start.
pub const CLIPPED_KEY: &str = "[clipped]";

/// `text` cut to at most `max_chars` characters, followed by `… (N bytes more)`.
///
/// ```
/// use toolgate_core::clip_text;
/// assert_eq!(clip_text("abcdef", 3), "abc… (3 bytes more)");
/// assert_eq!(clip_text("abc", 3), "abc");
/// ```
pub fn clip_text(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => Cow::Owned(format!(
            "{}… ({} bytes more)",
            &text[..cut],
            text.len() - cut
        )),
    }
}

/// The length of `value` as compact JSON, counted without building the text.
pub fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// A call's arguments as the audit log stores them: secrets redacted (see
/// [`redact_arguments`]), then bounded (see [`clip_for_audit`]).
pub fn audit_arguments(arguments: &Value, schema: &Value) -> Value {
    clip_for_audit(&redact_arguments(arguments, schema))
}

/// `value` bounded for the audit log: every string (and key) longer than
/// [`AUDIT_STRING_BYTES`] keeps its start, `… [N bytes more; sha256 HEX]` (the
/// hash of the whole string); if the result is still larger than
/// [`AUDIT_ARGUMENTS_BYTES`], it becomes `{"[clipped]": {bytes, sha256, start}}`
/// (the size and canonical hash of the whole value, and its first characters).
pub fn clip_for_audit(value: &Value) -> Value {
    let clipped = clip_strings(value);
    if json_len(&clipped) <= AUDIT_ARGUMENTS_BYTES {
        return clipped;
    }
    let start = clipped.to_string();
    json!({CLIPPED_KEY: {
        "bytes": json_len(value),
        "sha256": content_hash(value),
        "start": clip_text(&start, AUDIT_START_CHARS),
    }})
}

fn clip_strings(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(clip_string(s).into_owned()),
        Value::Array(items) => Value::Array(items.iter().map(clip_strings).collect()),
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (key, item) in map {
                out.insert(clip_string(key).into_owned(), clip_strings(item));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn clip_string(s: &str) -> Cow<'_, str> {
    if s.len() <= AUDIT_STRING_BYTES {
        return Cow::Borrowed(s);
    }
    let mut cut = AUDIT_STRING_BYTES;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    Cow::Owned(format!(
        "{}… [{} bytes more; sha256 {}]",
        &s[..cut],
        s.len() - cut,
        sha256_hex(s)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_long_string_keeps_its_start_size_and_hash() {
        let long = "x".repeat(4 << 20);
        let kept = clip_for_audit(&json!({"note": long, "n": 1}));
        let note = kept["note"].as_str().unwrap();
        assert!(note.starts_with(&"x".repeat(AUDIT_STRING_BYTES)), "{note}");
        assert!(
            note.ends_with(&format!(
                "… [{} bytes more; sha256 {}]",
                (4 << 20) - AUDIT_STRING_BYTES,
                sha256_hex(&long)
            )),
            "{note}"
        );
        assert_eq!(kept["n"], 1);
    }

    #[test]
    fn arguments_that_stay_large_are_kept_as_size_hash_and_start() {
        let many: Vec<Value> = (0..100_000).map(Value::from).collect();
        let value = json!({"ids": many});
        let kept = clip_for_audit(&value);
        let clipped = &kept[CLIPPED_KEY];
        assert_eq!(clipped["bytes"], json_len(&value));
        assert_eq!(clipped["sha256"], content_hash(&value));
        assert!(
            clipped["start"]
                .as_str()
                .unwrap()
                .starts_with("{\"ids\":[0,1,2")
        );
        assert!(json_len(&kept) < 1024);
    }

    #[test]
    fn small_arguments_are_kept_as_they_are() {
        let value = json!({"order_id": "A-1", "items": [1, 2, {"sku": "k"}]});
        assert_eq!(clip_for_audit(&value), value);
    }

    #[test]
    fn clip_text_cuts_at_a_character_boundary() {
        assert_eq!(clip_text("ééé", 1), "é… (4 bytes more)");
    }

    proptest! {
        #[test]
        fn what_the_audit_log_keeps_is_bounded(
            strings in proptest::collection::vec(".{0,600}", 0..40),
            numbers in proptest::collection::vec(any::<i64>(), 0..2000),
        ) {
            let value = json!({"strings": strings, "numbers": numbers});
            let kept = clip_for_audit(&value);
            prop_assert!(json_len(&kept) <= AUDIT_ARGUMENTS_BYTES + 2048);
            if json_len(&value) <= AUDIT_ARGUMENTS_BYTES
                && strings.iter().all(|s| s.len() <= AUDIT_STRING_BYTES)
            {
                prop_assert_eq!(kept, value);
            }
        }

        #[test]
        fn clip_text_keeps_at_most_the_characters_asked_for(text in ".{0,300}", max in 0usize..200) {
            let clipped = clip_text(&text, max);
            let kept = clipped.split("… (").next().unwrap();
            prop_assert!(kept.chars().count() <= max || clipped == text);
            prop_assert!(text.starts_with(kept));
        }
    }
}
