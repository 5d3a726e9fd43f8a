//! Text for a person's terminal: control characters shown, not obeyed.
//!
//! Spec files, upstream servers and models put text in front of the operator
//! (`check`, `describe`, `audit tail`, `approvals list`...). A terminal obeys the
//! escape sequences in such text: it can set the window title, clear the screen,
//! rewrite what is already shown, or hide a line with a carriage return or a bidi
//! override. [`escape_for_terminal`] shows each such character as a visible escape
//! instead (`\x1b` as `\u{1b}`), so the person sees exactly what the text holds.
//!
//! Unlike [`crate::sanitize_output`], nothing is removed or rewritten: this is for
//! a person reading what is there, not for a model. Machine output (`--json`) is
//! not passed through here; [`escape_json_for_terminal`] is for JSON a person
//! reads, and keeps it valid JSON with the same value.

use std::borrow::Cow;

/// Whether a terminal could act on `c` or hide text with it: every control
/// character but `\n` and `\t`, the line and paragraph separators, and the
/// invisible characters the sanitizer strips (bidi controls, zero-width characters,
/// tag characters).
pub fn is_unsafe_for_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{2028}' | '\u{2029}')
        || crate::sanitize::is_invisible(c)
}

/// `text` with every character a terminal could act on shown as `\u{…}` (its code
/// point in hex); `\n` and `\t` are kept. Borrowed when nothing needed escaping.
///
/// ```
/// use toolgate_core::escape_for_terminal;
/// assert_eq!(escape_for_terminal("\x1b]0;pwned\x07ok"), "\\u{1b}]0;pwned\\u{7}ok");
/// assert_eq!(escape_for_terminal("plain\ttext\n"), "plain\ttext\n");
/// ```
pub fn escape_for_terminal(text: &str) -> Cow<'_, str> {
    escape_with(text, |c, out| {
        out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
    })
}

/// JSON text (as `serde_json` writes it) with every character a terminal could act
/// on written as a JSON `\uXXXX` escape. Such characters can only stand inside
/// strings there, so the result is valid JSON that reads back as the same value.
///
/// ```
/// use toolgate_core::escape_json_for_terminal;
/// let json = serde_json::to_string(&"a\u{9b}2J\u{202e}b").unwrap();
/// let shown = escape_json_for_terminal(&json);
/// assert_eq!(shown, r#""a\u009b2J\u202eb""#);
/// assert_eq!(serde_json::from_str::<String>(&shown).unwrap(), "a\u{9b}2J\u{202e}b");
/// ```
pub fn escape_json_for_terminal(json: &str) -> Cow<'_, str> {
    escape_with(json, |c, out| {
        let mut units = [0u16; 2];
        for unit in c.encode_utf16(&mut units) {
            out.push_str(&format!("\\u{unit:04x}"));
        }
    })
}

fn escape_with(text: &str, escape: impl Fn(char, &mut String)) -> Cow<'_, str> {
    let Some(first) = text.find(is_unsafe_for_terminal) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if is_unsafe_for_terminal(c) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn title_setting_and_screen_clearing_sequences_are_shown() {
        assert_eq!(
            escape_for_terminal("\x1b]0;owned\x07\x1b[2J\x1b[H"),
            "\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\u{1b}[H"
        );
    }

    #[test]
    fn carriage_returns_c1_controls_and_bidi_overrides_are_shown() {
        assert_eq!(
            escape_for_terminal("safe\rrm -rf \u{9b}2J \u{202e}txt.exe \u{e0041}"),
            "safe\\u{d}rm -rf \\u{9b}2J \\u{202e}txt.exe \\u{e0041}"
        );
    }

    #[test]
    fn ordinary_text_is_borrowed_as_it_is() {
        let text = "Lists files.\n\tÜmlaut, 字, 🦀";
        assert!(matches!(escape_for_terminal(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn tag_characters_become_surrogate_pairs_in_json() {
        let json = serde_json::to_string(&"\u{e0041}").unwrap();
        assert_eq!(escape_json_for_terminal(&json), r#""\udb40\udc41""#);
    }

    proptest! {
        #[test]
        fn nothing_a_terminal_obeys_survives(text in any::<String>()) {
            let shown = escape_for_terminal(&text);
            prop_assert!(!shown.chars().any(is_unsafe_for_terminal));
        }

        #[test]
        fn escaped_json_reads_back_as_the_same_value(text in any::<String>()) {
            let value = serde_json::json!({ "k": text, text.clone(): [text.clone()] });
            let json = serde_json::to_string_pretty(&value).unwrap();
            let shown = escape_json_for_terminal(&json);
            prop_assert!(!shown.chars().any(is_unsafe_for_terminal));
            let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
            prop_assert_eq!(back, value);
        }
    }
}
