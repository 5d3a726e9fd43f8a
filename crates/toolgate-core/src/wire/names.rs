//! Mapping canonical tool names to names an API accepts, and back.
//!
//! Canonical names may hold dots and run to 128 characters; APIs are stricter.
//! A [`NameMap`] gives every tool a wire name that fits the API's [`NameRules`]:
//! names that already fit keep themselves; the others are sanitized (letters
//! transliterated to ASCII, each other disallowed character becoming `_`) and, when that is too long or taken, cut and
//! suffixed with a hash of the canonical name. The map is deterministic (the same
//! names give the same map in any order), injective (two tools never share a wire
//! name) and never lets a mapped name shadow another tool's real name.

use std::collections::{BTreeSet, HashMap};

use indexmap::IndexMap;

/// What names an API accepts.
#[derive(Debug, Clone, Copy)]
pub struct NameRules {
    /// The longest name.
    pub max_len: usize,
    /// Characters allowed anywhere.
    pub allowed: fn(char) -> bool,
    /// Characters allowed first, if stricter than `allowed`.
    pub first: Option<fn(char) -> bool>,
}

fn word_or_dash(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn word_dash_or_dot(c: char) -> bool {
    word_or_dash(c) || c == '.'
}

fn gemini_char(c: char) -> bool {
    word_dash_or_dot(c) || c == ':'
}

fn letter_or_underscore(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

impl NameRules {
    /// OpenAI Chat Completions and Responses, and Qwen: `^[a-zA-Z0-9_-]{1,64}$`.
    pub const OPENAI: NameRules = NameRules {
        max_len: 64,
        allowed: word_or_dash,
        first: None,
    };
    /// Anthropic Messages: `^[a-zA-Z0-9_-]{1,64}$`, the rule its tool-use guide gives
    /// (the API refuses longer names, though its schema once said 128).
    pub const ANTHROPIC: NameRules = NameRules {
        max_len: 64,
        allowed: word_or_dash,
        first: None,
    };
    /// Gemini and Vertex: a letter or `_` first, then letters, digits, `_ . : -`, at most 64
    /// (the Gemini API's limit; Vertex allows 128).
    pub const GEMINI: NameRules = NameRules {
        max_len: 64,
        allowed: gemini_char,
        first: Some(letter_or_underscore),
    };
    /// MCP: `^[A-Za-z0-9_.-]{1,128}$`, the canonical rule itself.
    pub const MCP: NameRules = NameRules {
        max_len: 128,
        allowed: word_dash_or_dot,
        first: None,
    };

    /// Whether `name` is acceptable as it is.
    pub fn accepts(&self, name: &str) -> bool {
        let mut chars = name.chars();
        let Some(first) = chars.next() else {
            return false;
        };
        name.chars().count() <= self.max_len
            && self.first.map_or((self.allowed)(first), |f| f(first))
            && chars.all(self.allowed)
    }
}

/// Canonical ↔ wire names for one catalog and one API.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    to_wire: IndexMap<String, String>,
    to_canonical: HashMap<String, String>,
}

/// Hex digits of the hash suffix.
const HASH_LEN: usize = 8;

impl NameMap {
    /// Builds the map for `names` under `rules`.
    pub fn build<'a>(names: impl IntoIterator<Item = &'a str>, rules: &NameRules) -> NameMap {
        let names: Vec<&str> = names.into_iter().collect();
        let mut taken: BTreeSet<String> = names
            .iter()
            .filter(|n| rules.accepts(n))
            .map(|n| n.to_string())
            .collect();
        let mut mapped: HashMap<&str, String> = HashMap::new();
        let mut needs_mapping: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !rules.accepts(n))
            .collect();
        needs_mapping.sort_unstable();
        needs_mapping.dedup();
        for name in needs_mapping {
            let wire = mapped_name(name, rules, &taken);
            taken.insert(wire.clone());
            mapped.insert(name, wire);
        }
        let mut map = NameMap::default();
        for name in names {
            let wire = mapped.get(name).cloned().unwrap_or_else(|| name.to_owned());
            map.to_canonical.insert(wire.clone(), name.to_owned());
            map.to_wire.insert(name.to_owned(), wire);
        }
        map
    }

    /// The wire name of a canonical name.
    pub fn wire<'a>(&'a self, canonical: &'a str) -> Option<&'a str> {
        self.to_wire.get(canonical).map(String::as_str)
    }

    /// The canonical name behind a wire name the API sent back.
    pub fn canonical(&self, wire: &str) -> Option<&str> {
        self.to_canonical.get(wire).map(String::as_str)
    }

    /// Pairs of (canonical, wire) that differ, in catalog order.
    pub fn renamed(&self) -> impl Iterator<Item = (&str, &str)> {
        self.to_wire
            .iter()
            .filter(|(c, w)| c != w)
            .map(|(c, w)| (c.as_str(), w.as_str()))
    }
}

/// A wire name for a canonical name that does not fit, avoiding `taken`.
fn mapped_name(name: &str, rules: &NameRules, taken: &BTreeSet<String>) -> String {
    // Letters outside ASCII read as their nearest ASCII spelling (`ñ` → `n`, `ß` → `ss`).
    let mut sanitized: String = deunicode::deunicode(name)
        .trim()
        .chars()
        .map(|c| if (rules.allowed)(c) { c } else { '_' })
        .collect();
    if let Some(first_ok) = rules.first
        && !sanitized.chars().next().is_some_and(first_ok)
    {
        sanitized.insert(0, '_');
    }
    if sanitized.chars().count() <= rules.max_len
        && !taken.contains(&sanitized)
        && rules.accepts(&sanitized)
    {
        return sanitized;
    }
    // Cut, and add a hash of the canonical name; rehash with a counter in the
    // (vanishingly rare) case that the result is taken too.
    let keep = rules.max_len.saturating_sub(HASH_LEN + 1);
    let stem: String = sanitized.chars().take(keep).collect();
    (0u64..)
        .map(|salt| {
            format!(
                "{stem}_{:0width$x}",
                fnv1a(name, salt) & 0xffff_ffff,
                width = HASH_LEN
            )
        })
        .find(|candidate| !taken.contains(candidate))
        .expect("some salt gives a free name")
}

/// FNV-1a, 64-bit: stable across runs, platforms and Rust versions.
fn fnv1a(text: &str, salt: u64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ salt;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_that_fit_keep_themselves() {
        let map = NameMap::build(["lookup_order", "refund-order"], &NameRules::OPENAI);
        assert_eq!(map.wire("lookup_order"), Some("lookup_order"));
        assert_eq!(map.renamed().count(), 0);
    }

    #[test]
    fn dots_become_underscores_and_map_back() {
        let map = NameMap::build(["github.create_issue"], &NameRules::OPENAI);
        assert_eq!(map.wire("github.create_issue"), Some("github_create_issue"));
        assert_eq!(
            map.canonical("github_create_issue"),
            Some("github.create_issue")
        );
    }

    #[test]
    fn a_mapped_name_never_shadows_a_real_name() {
        let map = NameMap::build(
            ["github.create_issue", "github_create_issue"],
            &NameRules::OPENAI,
        );
        assert_eq!(map.wire("github_create_issue"), Some("github_create_issue"));
        let mapped = map.wire("github.create_issue").unwrap();
        assert_ne!(mapped, "github_create_issue");
        assert!(mapped.starts_with("github_create_issue_"), "{mapped}");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let long = format!("ns.{}", "a".repeat(120));
        let map = NameMap::build([long.as_str()], &NameRules::OPENAI);
        let wire = map.wire(&long).unwrap();
        assert_eq!(wire.len(), 64);
        assert_eq!(
            wire,
            NameMap::build([long.as_str()], &NameRules::OPENAI)
                .wire(&long)
                .unwrap()
        );
    }

    #[test]
    fn anthropic_names_over_64_characters_are_cut_and_read_back() {
        // One of GitHub's REST operations, namespaced as `toolgate import` names it.
        let long = "actions.list-selected-repositories-enabled-github-actions-organization";
        let fits = "actions.get-repo";
        let map = NameMap::build([long, fits], &NameRules::ANTHROPIC);
        let wire = map.wire(long).unwrap();
        assert_eq!(wire.len(), 64, "{wire}");
        assert!(NameRules::ANTHROPIC.accepts(wire), "{wire}");
        assert!(
            wire.starts_with("actions_list-selected-repositories-enabled-github-ac"),
            "{wire}"
        );
        assert_eq!(map.canonical(wire), Some(long));
        assert_eq!(map.wire(fits), Some("actions_get-repo"));
        // Mapped as for OpenAI, whose rule is the same.
        assert_eq!(
            NameMap::build([long, fits], &NameRules::OPENAI),
            map,
            "Anthropic and OpenAI map names alike"
        );
    }

    #[test]
    fn anthropic_names_that_share_their_first_64_characters_get_distinct_wire_names() {
        let stem = format!("repos.{}", "x".repeat(70));
        let (a, b) = (format!("{stem}-a"), format!("{stem}-b"));
        let cut = format!("repos_{}", "x".repeat(58));
        // A real name equal to what a plain cut would give keeps itself.
        let map = NameMap::build(
            [a.as_str(), b.as_str(), cut.as_str()],
            &NameRules::ANTHROPIC,
        );
        let (wa, wb) = (map.wire(&a).unwrap(), map.wire(&b).unwrap());
        assert_ne!(wa, wb);
        assert_eq!(map.wire(&cut), Some(cut.as_str()));
        for (name, wire) in [(&a, wa), (&b, wb)] {
            assert!(NameRules::ANTHROPIC.accepts(wire), "{wire}");
            assert_ne!(wire, cut);
            assert_eq!(map.canonical(wire), Some(name.as_str()));
        }
    }

    #[test]
    fn anthropic_names_of_exactly_64_characters_keep_themselves() {
        let name = "a".repeat(64);
        let map = NameMap::build([name.as_str()], &NameRules::ANTHROPIC);
        assert_eq!(map.wire(&name), Some(name.as_str()));
        assert!(!NameRules::ANTHROPIC.accepts(&"a".repeat(65)));
    }

    #[test]
    fn gemini_names_start_with_a_letter_or_underscore() {
        let map = NameMap::build(["3d.render"], &NameRules::GEMINI);
        assert_eq!(map.wire("3d.render"), Some("_3d.render"));
    }

    fn canonical_name() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z][a-z0-9_]{0,20}",
            "[a-z]{1,8}(\\.[a-z_]{1,12}){1,3}",
            "[A-Za-z0-9_.-]{1,128}",
        ]
        .prop_filter("canonical", |n| crate::validate_name(n).is_ok())
    }

    proptest! {
        #[test]
        fn every_map_is_valid_injective_reversible_and_order_independent(
            names in proptest::collection::btree_set(canonical_name(), 1..40),
            rules in prop_oneof![Just(NameRules::OPENAI), Just(NameRules::ANTHROPIC), Just(NameRules::GEMINI), Just(NameRules::MCP)],
        ) {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let map = NameMap::build(names.iter().copied(), &rules);
            let mut seen = BTreeSet::new();
            for name in &names {
                let wire = map.wire(name).unwrap();
                prop_assert!(rules.accepts(wire), "{wire} breaks the rules");
                prop_assert!(seen.insert(wire.to_owned()), "{wire} used twice");
                prop_assert_eq!(map.canonical(wire), Some(*name));
                if rules.accepts(name) {
                    prop_assert_eq!(wire, *name);
                }
            }
            let mut reversed = names.clone();
            reversed.reverse();
            let again = NameMap::build(reversed.iter().copied(), &rules);
            for name in &names {
                prop_assert_eq!(map.wire(name), again.wire(name));
            }
        }
    }
}
