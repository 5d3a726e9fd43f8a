//! A `SKILL.md` is text from anywhere: its readers return an answer or a
//! refusal for every input, and what they accept holds the rules they promise.

use proptest::prelude::*;
use toolgate_core::skill::{check_skill_name, parse_skill_md, referenced_files, unsafe_text};

/// Front matter-like text: the delimiters, keys and YAML punctuation the
/// parser meets, in any order.
fn skill_md() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "---\n",
        "name: ",
        "description: ",
        "refund-dispute",
        "\n",
        "&a ",
        "*a",
        "[",
        "]",
        "{",
        "}",
        ": ",
        "- ",
        "\"",
        "'",
        "|\n  ",
        "%2e",
        "/",
        "\u{1b}[2J",
        "<|im_start|>",
        "é",
        "\u{200b}",
        "[link](forms/a.md)",
        "](",
        ")",
        "../",
        "#",
    ]);
    prop::collection::vec(pieces, 0..40).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_skill_md_is_read_or_refused_and_an_accepted_name_follows_the_rules(text in skill_md()) {
        if let Ok(front) = parse_skill_md(&text) {
            prop_assert!(check_skill_name(&front.name).is_ok());
            prop_assert!(!front.description.trim().is_empty());
        }
        let _ = unsafe_text(&text);
    }

    #[test]
    fn any_text_yields_relative_links_only(text in "\\PC{0,200}", md in skill_md()) {
        for text in [text, md] {
            for link in referenced_files(&text) {
                prop_assert!(!link.is_empty());
                prop_assert!(!link.starts_with('/'));
                prop_assert!(!link.contains('#'));
            }
        }
    }

    #[test]
    fn an_accepted_name_has_no_separator_or_escape(name in "\\PC{0,70}") {
        if check_skill_name(&name).is_ok() {
            prop_assert!(!name.contains(['/', '\\', '.', '%', ':']));
            prop_assert!(unsafe_text(&name).is_none());
        }
    }
}
