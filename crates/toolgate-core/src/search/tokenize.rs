//! Turning names, descriptions and queries into search terms.
//!
//! One tokenizer serves both sides, so a query word and a catalog word meet when
//! they are the same word written differently:
//!
//! - **Words** are runs of letters and digits. Everything else separates them, so
//!   `math.factorial`, `get_weather` and `get-weather` all split.
//! - **Identifiers split at case and digit changes**: `getUserName` is `get user
//!   name`, `XMLHttpRequest` is `xml http request`, `sha256` is `sha 256`. Tool and
//!   parameter names are written this way, questions are not.
//! - **Lower case** throughout (ASCII case folding plus Unicode lowercase for the rest).
//! - **Stop words** — the 33 of Lucene's classic English set plus a few pronouns
//!   and auxiliaries — carry no topic; leaving them out keeps a question's filler
//!   from matching every description, and keeps postings short.
//! - **Pairs of neighbouring terms** are indexed and searched beside single terms
//!   (`"greatest common"`, `"common divisor"`), so a tool whose text says what the
//!   question says in the same order ranks above one that merely shares the words.
//! - **Light stemming** ([`stem`]): only inflections (plurals, `-ing`, `-ed`) and the
//!   `-ion`/`-ions` nouns made from verbs, so `calculating`, `calculated`,
//!   `calculation` and `calculate` meet. Derivations that change meaning
//!   (`-er`, `-ly`, `-ity`, `-ness`) are kept, which is why this is not Porter's
//!   stemmer: an aggressive stemmer merges words a tool catalog keeps apart
//!   (`organ`/`organization`, `general`/`generate`, `port`/`portable`).

/// Lucene's classic English stop set, plus pronouns and auxiliaries that questions
/// ("can you help me ...", "I would like ...") are full of and tool text never needs.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with", // Lucene's set ends here.
    "i", "me", "my", "we", "our", "you", "your", "can", "could", "would", "should", "do", "does",
    "did", "please", "am", "been", "being", "has", "have", "had", "its", "what", "which", "who",
    "whom", "how", "also", "some", "any", "all", "from", "s",
];

/// Whether `word` (lower case) is a stop word.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// The search terms of `text`, in order, repeats kept (they count as term frequency).
///
/// ```
/// use toolgate_core::search::tokenize;
/// assert_eq!(tokenize("getUserId"), ["get", "user", "id"]);
/// assert_eq!(tokenize("math.factorial of the numbers"), ["math", "factorial", "number"]);
/// assert_eq!(tokenize("XMLHttpRequest sha256"), ["xml", "http", "request", "sha", "256"]);
/// ```
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, |term| out.push(term));
    out
}

/// Calls `f` with each term of `text` and then, for each term after the first,
/// the pair it makes with the term before it (`"final velocity"`). Pairs are
/// what an index and a query share beyond single words: word order, as in a phrase.
pub(crate) fn for_each_term_and_pair(text: &str, mut f: impl FnMut(String)) {
    let mut prev: Option<String> = None;
    for_each_term(text, |term| {
        if let Some(before) = prev.replace(term.clone()) {
            f(format!("{before}{PAIR_SEPARATOR}{term}"));
        }
        f(term);
    });
}

/// Joins the two terms of a pair; no term contains it.
pub(crate) const PAIR_SEPARATOR: char = ' ';

/// Calls `f` with each term of `text`, as [`tokenize`] returns them.
pub(crate) fn for_each_term(text: &str, mut f: impl FnMut(String)) {
    for run in text.split(|c: char| !c.is_alphanumeric()) {
        for word in split_identifier(run) {
            let lower = lowercase(word);
            if lower.is_empty() || is_stop_word(&lower) {
                continue;
            }
            let stemmed = stem(&lower);
            if !stemmed.is_empty() {
                f(stemmed);
            }
        }
    }
}

/// The words of an identifier (`github.create_issue`, `getUserName`), lower case and
/// joined by spaces, none left out or stemmed: how a name reads as a phrase.
pub(crate) fn identifier_words(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for run in name.split(|c: char| !c.is_alphanumeric()) {
        for word in split_identifier(run) {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&lowercase(word));
        }
    }
    out
}

fn lowercase(word: &str) -> String {
    if word.is_ascii() {
        word.to_ascii_lowercase()
    } else {
        word.to_lowercase()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Lower,
    Upper,
    Digit,
}

fn class(c: char) -> Class {
    if c.is_numeric() {
        Class::Digit
    } else if c.is_uppercase() {
        Class::Upper
    } else {
        Class::Lower
    }
}

/// Splits one run of letters and digits at camelCase humps, acronym ends and
/// letter/digit changes.
fn split_identifier(run: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = run.char_indices().collect();
    let mut words = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = class(chars[i - 1].1);
        let here = class(c);
        let next = chars.get(i + 1).map(|&(_, n)| class(n));
        let boundary = match (prev, here) {
            (Class::Digit, Class::Digit) => false,
            (Class::Digit, _) | (_, Class::Digit) => true,
            (Class::Lower, Class::Upper) => true,
            // The last capital of an acronym starts the next word: `HTTPServer`.
            (Class::Upper, Class::Upper) => next == Some(Class::Lower),
            _ => false,
        };
        if boundary {
            words.push(&run[start..at]);
            start = at;
        }
    }
    if start < run.len() {
        words.push(&run[start..]);
    }
    words
}

fn is_vowel(c: u8) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

fn has_vowel(s: &[u8]) -> bool {
    s.iter().any(|&c| is_vowel(c))
}

/// Reduces an inflected English word (lower case) to a stem shared by its forms.
///
/// The rules, in order, each applied at most once:
/// 1. plurals: `-ies` → `-y`, `-sses` → `-ss`, `-xes`/`-ches`/`-shes`/`-zes` lose
///    `-es`, other `-s` is dropped unless the word ends in `-ss`, `-us` or `-is`;
/// 2. `-ing` and `-ed` are dropped when a vowel stays before them (but `-eed` is
///    kept: `speed`), and a doubled final consonant is undoubled (`running` → `run`);
/// 3. `-ion` after `t` or `s` is dropped (`calculation` → `calculat`);
/// 4. a final silent `-e` is dropped, so `calculate` and `calculat(ing)` meet.
///
/// Words of three letters or fewer, and words with non-ASCII letters, are left alone.
///
/// ```
/// use toolgate_core::search::stem;
/// for word in ["calculate", "calculates", "calculated", "calculating", "calculation"] {
///     assert_eq!(stem(word), "calculat");
/// }
/// assert_eq!(stem("cities"), "city");
/// assert_eq!(stem("status"), "status");
/// ```
pub fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.is_ascii() || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word.to_owned();
    }
    let mut w = word.as_bytes().to_vec();
    plural(&mut w);
    if !verb_ending(&mut w) {
        noun_ending(&mut w);
    }

    if w.len() > 3 && w.ends_with(b"e") && !w.ends_with(b"ee") {
        w.pop();
    }
    String::from_utf8(w).unwrap_or_else(|_| word.to_owned())
}

fn plural(w: &mut Vec<u8>) {
    let n = w.len();
    if w.ends_with(b"ies") && n > 4 {
        w.truncate(n - 3);
        w.push(b'y');
    } else if ["sses", "xes", "ches", "shes", "zes"]
        .iter()
        .any(|s| w.ends_with(s.as_bytes()))
    {
        w.truncate(n - 2);
    } else if w.ends_with(b"s")
        && !w.ends_with(b"ss")
        && !w.ends_with(b"us")
        && !w.ends_with(b"is")
        && n > 3
    {
        w.truncate(n - 1);
    }
}

/// Drops `-ing` or `-ed`; true when one was dropped.
fn verb_ending(w: &mut Vec<u8>) -> bool {
    for suffix in [&b"ing"[..], b"ed"] {
        if !w.ends_with(suffix) {
            continue;
        }
        let stem = &w[..w.len() - suffix.len()];
        // `-eed` is no past tense (`speed`, `need`, `proceed`).
        if stem.len() < 3 || !has_vowel(stem) || (suffix == b"ed" && stem.ends_with(b"e")) {
            return false;
        }
        let keep = stem.len();
        w.truncate(keep);
        let n = w.len();
        if n >= 2
            && w[n - 1] == w[n - 2]
            && !is_vowel(w[n - 1])
            && !matches!(w[n - 1], b'l' | b's' | b'z')
        {
            w.pop();
        }
        return true;
    }
    false
}

fn noun_ending(w: &mut Vec<u8>) {
    if w.ends_with(b"ion") && w.len() > 6 {
        let before = w[w.len() - 4];
        if before == b't' || before == b's' {
            w.truncate(w.len() - 3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn identifiers_split_at_every_separator_case_change_and_digit() {
        assert_eq!(tokenize("get_weather"), ["get", "weather"]);
        assert_eq!(tokenize("get-weather.now"), ["get", "weather", "now"]);
        assert_eq!(tokenize("HTTPServer"), ["http", "server"]);
        assert_eq!(tokenize("parseJSON2XML"), ["pars", "json", "2", "xml"]);
        assert_eq!(
            tokenize("GeometryPresentation.createPresentation"),
            ["geometry", "presentat", "creat", "presentat"]
        );
    }

    #[test]
    fn stop_words_are_left_out() {
        assert_eq!(
            tokenize("Can you help me find the weather in Paris?"),
            ["help", "find", "weather", "paris"]
        );
    }

    #[test]
    fn inflections_meet_at_one_stem() {
        for group in [
            &["order", "orders", "ordered", "ordering"][..],
            &["book", "books", "booking", "booked"],
            &["run", "runs", "running"],
            &["city", "cities"],
            &["box", "boxes"],
            &["match", "matches", "matched", "matching"],
            &["convert", "converts", "converted", "converting"],
            &["compute", "computes", "computed", "computing"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(
                stems.iter().all(|s| s == &stems[0]),
                "{group:?} -> {stems:?}"
            );
        }
    }

    #[test]
    fn words_that_only_look_inflected_are_kept() {
        for word in ["status", "analysis", "class", "bus", "thing", "red", "news"] {
            let stemmed = stem(word);
            assert!(stemmed.len() + 1 >= word.len(), "{word} -> {stemmed}");
        }
        assert_ne!(stem("organization"), stem("organ"));
        assert_ne!(stem("general"), stem("generate"));
    }

    #[test]
    fn non_ascii_words_are_lowercased_and_kept_whole() {
        assert_eq!(tokenize("Größe ÜBER"), ["größe", "über"]);
    }

    proptest! {
        #[test]
        fn any_text_tokenizes_to_lowercase_alphanumeric_terms(text in "\\PC{0,40}") {
            for term in tokenize(&text) {
                prop_assert!(!term.is_empty());
                prop_assert!(term.chars().all(char::is_alphanumeric), "{:?}", term);
                prop_assert_eq!(lowercase(&term), term.clone());
            }
        }

        #[test]
        fn stemming_never_empties_a_word_nor_grows_it_by_more_than_a_letter(word in "[a-z]{1,14}") {
            let once = stem(&word);
            prop_assert!(once.len() <= word.len() + 1);
            prop_assert!(!once.is_empty());
        }
    }
}
