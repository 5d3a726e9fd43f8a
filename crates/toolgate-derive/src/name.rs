//! Canonical tool names, checked at compile time.
//!
//! The same rule as `toolgate_core::validate_name` (`[A-Za-z0-9_.-]{1,128}`, `.`
//! between non-empty namespace parts), restated here because a proc-macro crate
//! cannot use the runtime's types; the messages match.

const MAX_NAME_LEN: usize = 128;

/// Why `name` is not a canonical tool name, if it is not.
pub(crate) fn validate(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a tool name cannot be empty".to_owned());
    }
    let len = name.chars().count();
    if len > MAX_NAME_LEN {
        return Err(format!(
            "tool name `{name}` is {len} characters long; the limit is {MAX_NAME_LEN}"
        ));
    }
    if let Some(found) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(format!(
            "tool name `{name}` contains {found:?}; use only letters, digits, `_`, `-`, and `.` between namespace parts"
        ));
    }
    if name.split('.').any(str::is_empty) {
        return Err(format!(
            "tool name `{name}` has an empty namespace part; `.` goes between two non-empty parts, as in `github.create_issue`"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_matches_the_runtime() {
        for ok in [
            "ping",
            "create_ticket",
            "github.create_issue",
            "a-b",
            &"a".repeat(128),
        ] {
            assert_eq!(validate(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            &"a".repeat(129),
            "create ticket",
            "émoji",
            ".a",
            "a.",
            "a..b",
        ] {
            assert!(validate(bad).is_err(), "{bad}");
        }
    }
}
