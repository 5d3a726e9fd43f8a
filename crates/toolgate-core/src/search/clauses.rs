//! Splitting a request that asks for several things into the parts that ask for one.
//!
//! "Get the weather in Paris, then convert 30 USD to EUR" needs two tools. Ranked
//! as one bag of words, the tool for whichever part has the rarer words fills the
//! whole top five with its near-duplicates. So each part is also searched on its
//! own, and the ranking makes room for every part's best tool
//! (`SearchIndex::diversified`).
//!
//! A part ends at a sentence's end (`.`, `?` or `!` before a space, a quote or the
//! end), at `;` or a line break, and before a word that opens another request
//! inside a sentence: `then`, `also`, `additionally`, `afterwards`, `furthermore`,
//! `moreover`, `finally`, `lastly`. Plain `and` and commas are no boundary: they
//! join two things one tool takes ("the area and perimeter of a rectangle") far
//! more often than two requests, and splitting at them was measured to lose more
//! than it won.

use std::ops::Range;

/// Words that open another request inside a sentence.
const CONNECTIVES: &[&str] = &[
    "then",
    "also",
    "additionally",
    "afterwards",
    "furthermore",
    "moreover",
    "finally",
    "lastly",
];

/// The parts of `query`, in order, as byte ranges of it, blank ones left out; one
/// part when it asks for one thing.
pub(crate) fn clauses(query: &str) -> Vec<Range<usize>> {
    let bytes = query.as_bytes();
    let mut out = Vec::new();
    let mut push = |range: Range<usize>| {
        if !query[range.clone()].trim().is_empty() {
            out.push(range);
        }
    };
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let ends_sentence = match c {
            // Not `2.5`, `e.g.x` or `file.csv`: a sentence ends before a space.
            b'.' | b'?' | b'!' => bytes
                .get(i + 1)
                .is_none_or(|b| b.is_ascii_whitespace() || matches!(b, b'"' | b'\'')),
            b';' | b'\n' => true,
            _ => false,
        };
        if ends_sentence {
            push(start..i + 1);
            start = i + 1;
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) {
            let end = bytes[i..]
                .iter()
                .position(|b| !b.is_ascii_alphabetic())
                .map_or(bytes.len(), |n| i + n);
            let word = &query[i..end];
            if i > start && CONNECTIVES.iter().any(|w| w.eq_ignore_ascii_case(word)) {
                push(start..i);
                start = i;
            }
            i = end;
            continue;
        }
        i += 1;
    }
    push(start..bytes.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(query: &str) -> Vec<&str> {
        clauses(query)
            .into_iter()
            .map(|r| query[r].trim())
            .collect()
    }

    #[test]
    fn sentences_and_connectives_end_a_part() {
        assert_eq!(
            parts("Get the weather in Paris, then convert 30 USD to EUR. Also: news?\n1) x; 2) y"),
            [
                "Get the weather in Paris,",
                "then convert 30 USD to EUR.",
                "Also: news?",
                "1) x;",
                "2) y"
            ]
        );
    }

    #[test]
    fn and_commas_decimals_and_dotted_names_do_not() {
        for query in [
            "the area and perimeter of a 2.5 m square",
            "call math.factorial on 5, 10 and 15",
            "Thenceforth alsoran",
        ] {
            assert_eq!(parts(query), [query]);
        }
        assert!(parts("  ").is_empty());
    }

    proptest::proptest! {
        #[test]
        fn parts_are_ordered_disjoint_slices_of_any_text(text in "(\\PC|[ .?!;\n]|then |also ){0,60}") {
            let mut end = 0;
            for range in clauses(&text) {
                proptest::prop_assert!(range.start >= end && range.start < range.end);
                proptest::prop_assert!(!text[range.clone()].trim().is_empty());
                end = range.end;
            }
            proptest::prop_assert!(end <= text.len());
        }
    }
}
