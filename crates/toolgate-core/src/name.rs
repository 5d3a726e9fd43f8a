//! Canonical tool names: `[A-Za-z0-9_.-]{1,128}`, with `.` separating namespaces.

/// The longest canonical name.
pub const MAX_NAME_LEN: usize = 128;

/// Why a name is not a canonical tool name. The message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name is the empty string.
    #[error("a tool name cannot be empty")]
    Empty,
    /// The name has more than [`MAX_NAME_LEN`] characters.
    #[error("tool name `{name}` is {len} characters long; the limit is {MAX_NAME_LEN}")]
    TooLong {
        /// The name as given.
        name: String,
        /// Its length in characters.
        len: usize,
    },
    /// The name holds a character outside `[A-Za-z0-9_.-]`.
    #[error(
        "tool name `{name}` contains {found:?}; use only letters, digits, `_`, `-`, and `.` between namespace parts"
    )]
    BadCharacter {
        /// The name as given.
        name: String,
        /// The first character not allowed.
        found: char,
    },
    /// A `.` starts or ends the name, or two `.` stand together.
    #[error(
        "tool name `{name}` has an empty namespace part; `.` goes between two non-empty parts, as in `github.create_issue`"
    )]
    EmptySegment {
        /// The name as given.
        name: String,
    },
}

/// Checks that `name` is a canonical tool name.
pub fn validate_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    let len = name.chars().count();
    if len > MAX_NAME_LEN {
        return Err(NameError::TooLong {
            name: name.to_owned(),
            len,
        });
    }
    if let Some(found) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(NameError::BadCharacter {
            name: name.to_owned(),
            found,
        });
    }
    if name.split('.').any(str::is_empty) {
        return Err(NameError::EmptySegment {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// Up to three known names close to `unknown`, closest first.
pub fn closest_names<'a>(unknown: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let wanted = unknown.to_ascii_lowercase();
    let mut scored: Vec<(f64, &str)> = known
        .into_iter()
        .map(|name| {
            let lower = name.to_ascii_lowercase();
            // The name without its namespace counts too: `create_issue` finds `github.create_issue`.
            let local = lower.rsplit('.').next().unwrap_or(&lower);
            let mut score =
                strsim::jaro_winkler(&wanted, &lower).max(strsim::jaro_winkler(&wanted, local));
            // A name that contains the other (`ticket` in `create_ticket`) is a good hint.
            if lower.contains(&wanted) || wanted.contains(&lower) {
                score = score.max(0.85);
            }
            (score, name)
        })
        .filter(|(score, _)| *score >= 0.75)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, name)| name.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_pass() {
        for name in [
            "ping",
            "create_ticket",
            "github.create_issue",
            "a-b",
            "x.y.z",
            &"a".repeat(128),
        ] {
            assert_eq!(validate_name(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn invalid_names_say_what_is_wrong() {
        assert_eq!(validate_name(""), Err(NameError::Empty));
        assert!(matches!(
            validate_name(&"a".repeat(129)),
            Err(NameError::TooLong { len: 129, .. })
        ));
        assert!(matches!(
            validate_name("create ticket"),
            Err(NameError::BadCharacter { found: ' ', .. })
        ));
        assert!(matches!(
            validate_name("émoji"),
            Err(NameError::BadCharacter { found: 'é', .. })
        ));
        for name in [".a", "a.", "a..b"] {
            assert!(
                matches!(validate_name(name), Err(NameError::EmptySegment { .. })),
                "{name}"
            );
        }
        let message = validate_name("refund/order").unwrap_err().to_string();
        assert!(
            message.contains("'/'") && message.contains("use only letters"),
            "{message}"
        );
    }

    #[test]
    fn closest_names_prefer_near_spellings() {
        let known = [
            "lookup_order",
            "refund_order",
            "create_ticket",
            "github.create_issue",
        ];
        assert_eq!(closest_names("lookup_ordr", known)[0], "lookup_order");
        assert_eq!(
            closest_names("create_issue", known)[0],
            "github.create_issue"
        );
        assert!(closest_names("zzzz", known).is_empty());
    }
}
