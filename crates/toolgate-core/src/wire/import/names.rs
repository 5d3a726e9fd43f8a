//! The names of imported tools: kept when canonical, sanitized otherwise, and made
//! unique with a `_2`, `_3`... suffix, so that every definition imports.

use std::collections::HashSet;

use super::Draft;
use crate::MAX_NAME_LEN;

/// Canonical, unique names for every draft, in order, with a note for each change.
/// A name given in canonical form is kept by its first definition; sanitized names
/// and later definitions take a `_2`, `_3`... suffix where that name is taken.
pub(super) fn final_names(drafts: &[Draft]) -> Vec<(String, Vec<String>)> {
    let sanitized: Vec<(String, Option<String>)> =
        drafts.iter().map(|d| sanitize_name(&d.name)).collect();
    let given: HashSet<&str> = sanitized.iter().map(|(n, _)| n.as_str()).collect();
    let mut used: HashSet<String> = HashSet::new();
    let keeps: Vec<bool> = sanitized
        .iter()
        .map(|(name, note)| note.is_none() && used.insert(name.clone()))
        .collect();
    let mut out = Vec::with_capacity(drafts.len());
    for ((name, note), keeps) in sanitized.iter().zip(keeps) {
        let mut notes: Vec<String> = note.iter().cloned().collect();
        if keeps {
            out.push((name.clone(), notes));
            continue;
        }
        let name = if used.contains(name) {
            let unique = (2usize..)
                .map(|k| with_suffix(name, k))
                .find(|c| !given.contains(c.as_str()) && !used.contains(c))
                .unwrap_or_else(|| name.clone());
            notes.push(format!(
                "another tool is named `{name}`: this definition is imported as `{unique}`"
            ));
            unique
        } else {
            name.clone()
        };
        used.insert(name.clone());
        out.push((name, notes));
    }
    out
}

/// `name` itself when canonical; otherwise runs of other characters become one `_`
/// and empty namespace parts go.
fn sanitize_name(name: &str) -> (String, Option<String>) {
    let Err(why) = crate::validate_name(name) else {
        return (name.to_owned(), None);
    };
    let mut out = String::new();
    for c in name.trim().chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') {
            c
        } else {
            '_'
        };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let mut out: String = out
        .split('.')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(".");
    out.truncate(MAX_NAME_LEN);
    let mut out = out.trim_end_matches('.').to_owned();
    if out.is_empty() {
        out = "tool".into();
    }
    let note = format!("{why}: imported as `{out}`");
    (out, Some(note))
}

fn with_suffix(name: &str, k: usize) -> String {
    let suffix = format!("_{k}");
    let stem = &name[..name.len().min(MAX_NAME_LEN - suffix.len())];
    format!("{}{suffix}", stem.trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::super::tests::{import, messages};
    use super::super::{ImportFormat, import_tools};

    #[test]
    fn a_name_met_again_gets_a_suffix_that_takes_no_other_name() {
        let text = r#"{"name": "area", "description": "1", "parameters": {"type": "dict", "properties": {}}}
{"name": "area_2", "description": "2", "parameters": {"type": "dict", "properties": {}}}
{"name": "area", "description": "3", "parameters": {"type": "dict", "properties": {}}}
{"name": "area", "description": "4", "parameters": {"type": "dict", "properties": {}}}"#;
        let imported = import(ImportFormat::Bfcl, text);
        let names: Vec<_> = imported.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["area", "area_2", "area_3", "area_4"]);
        assert!(
            messages(&imported)
                .iter()
                .any(|m| m.contains("imported as `area_3`"))
        );
        let text = r#"[{"name": "a b", "description": "x"}, {"name": "a_b", "description": "y"}]"#;
        let imported = import(ImportFormat::OpenAiResponses, text);
        let names: Vec<_> = imported.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["a_b_2", "a_b"],
            "a name given in canonical form is kept"
        );
    }

    #[test]
    fn a_name_that_is_not_canonical_is_sanitized_with_a_note() {
        let text = r#"[{"name": "get weather/now", "description": "x"}, {"name": "..a..b.", "description": "y"}, {"name": "!!!", "description": "z"}]"#;
        let imported = import(ImportFormat::OpenAiResponses, text);
        let names: Vec<_> = imported.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["get_weather_now", "a.b", "_"]);
        for name in names {
            assert!(crate::validate_name(name).is_ok(), "{name}");
        }
        assert!(messages(&imported)[0].contains("imported as `get_weather_now`"));
    }

    proptest! {
        #[test]
        fn any_names_import_as_distinct_canonical_names(
            names in proptest::collection::vec(prop_oneof!["\\PC{0,12}", "[a-z.]{0,6}", Just("a".repeat(140))], 1..8),
        ) {
            let tools: Vec<Value> = names.iter().map(|n| json!({"name": n, "description": "d"})).collect();
            let imported = import_tools(ImportFormat::OpenAiResponses, &Value::Array(tools).to_string()).unwrap();
            prop_assert_eq!(imported.tools.len(), names.len());
            let mut seen = HashSet::new();
            for (tool, given) in imported.tools.iter().zip(&names) {
                prop_assert!(crate::validate_name(&tool.name).is_ok(), "{:?}", tool.name);
                prop_assert!(seen.insert(tool.name.clone()), "{:?} twice", tool.name);
                if crate::validate_name(given).is_ok() && names.iter().filter(|n| *n == given).count() == 1 {
                    prop_assert_eq!(&tool.name, given);
                }
            }
        }
    }
}
