//! Anchors: an audit log's head, kept outside the log, so that what a hash chain
//! cannot show by itself — records cut from the end, every record deleted, or the
//! chain rewritten from some record on — shows against the copy.
//!
//! An anchor is a record number and that record's hash, written `SEQ:HASH` (the
//! empty log's anchor is `0:` and [`GENESIS_HASH`]). [`ChainVerifier::with_anchors`]
//! checks a log against any number of them: the record at each anchor's number must
//! carry the anchor's hash, and the log must reach the highest anchor. Records after
//! the last anchor are only as safe as the chain: take anchors as often as a rewrite
//! would matter.
//!
//! [`ChainVerifier::with_anchors`]: crate::ChainVerifier::with_anchors

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::GENESIS_HASH;

/// A record number and the hash the record there had when the anchor was taken.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Anchor {
    /// The record's number (0 for the empty log).
    pub seq: u64,
    /// The record's hash ([`GENESIS_HASH`] for the empty log).
    pub head: String,
}

/// Why a text is not an anchor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnchorError {
    #[error(
        "`{text}` is not an anchor: write it as SEQ:HASH, e.g. `12:3f5a…` with the 64 hex digits `toolgate audit anchor` prints"
    )]
    /// The text is not `SEQ:HASH` with a number and 64 lowercase hex digits.
    Malformed {
        /// The text as given.
        text: String,
    },
    /// A line of an anchor file is not an anchor.
    #[error("line {line} of the anchor file: {error}")]
    Line {
        /// The line's number, from 1.
        line: usize,
        /// What is wrong with the line's anchor.
        error: Box<AnchorError>,
    },
    /// An anchor at record 0 names a hash other than [`GENESIS_HASH`], which no log
    /// can match.
    #[error("`{text}` anchors record 0, whose hash is always {GENESIS_HASH}")]
    BadGenesis {
        /// The anchor as given.
        text: String,
    },
}

impl Anchor {
    /// Every anchor in the text of an anchor file: the first word of each line that
    /// is not blank and does not start with `#` (the rest of the line, such as the
    /// time it was taken, is a note).
    ///
    /// ```
    /// use toolgate_core::{Anchor, GENESIS_HASH};
    ///
    /// let text = format!("# anchors of shop/state.db\n0:{GENESIS_HASH} 2026-01-01T00:00:00Z\n");
    /// let anchors = Anchor::parse_file(&text).unwrap();
    /// assert_eq!(anchors, [Anchor { seq: 0, head: GENESIS_HASH.into() }]);
    /// ```
    pub fn parse_file(text: &str) -> Result<Vec<Anchor>, AnchorError> {
        text.lines()
            .enumerate()
            .map(|(i, line)| (i + 1, line.trim()))
            .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
            .map(|(line, text)| {
                let word = text.split_whitespace().next().unwrap_or_default();
                word.parse().map_err(|error| AnchorError::Line {
                    line,
                    error: Box::new(error),
                })
            })
            .collect()
    }

    /// The line an anchor file keeps for this anchor: the anchor, then a note.
    pub fn to_line(&self, note: &str) -> String {
        if note.is_empty() {
            format!("{self}\n")
        } else {
            format!("{self} {note}\n")
        }
    }
}

impl FromStr for Anchor {
    type Err = AnchorError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let malformed = || AnchorError::Malformed {
            text: text.to_owned(),
        };
        let (seq, head) = text.trim().split_once(':').ok_or_else(malformed)?;
        let seq: u64 = seq.parse().map_err(|_| malformed())?;
        let is_hash = head.len() == 64 && head.bytes().all(|b| b.is_ascii_hexdigit());
        if !is_hash {
            return Err(malformed());
        }
        let head = head.to_ascii_lowercase();
        if seq == 0 && head != GENESIS_HASH {
            return Err(AnchorError::BadGenesis {
                text: text.to_owned(),
            });
        }
        Ok(Anchor { seq, head })
    }
}

impl fmt::Display for Anchor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.seq, self.head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "3f5a0b1c2d3e4f5061728394a5b6c7d8e9f00112233445566778899aabbccddee";

    #[test]
    fn an_anchor_reads_back_what_it_prints() {
        let anchor: Anchor = format!("12:{}", &HASH[..64]).parse().unwrap();
        assert_eq!(anchor.seq, 12);
        assert_eq!(anchor.to_string().parse::<Anchor>().unwrap(), anchor);
        let upper: Anchor = format!("12:{}", HASH[..64].to_uppercase()).parse().unwrap();
        assert_eq!(upper, anchor, "hex digits are read in either case");
    }

    #[test]
    fn anything_else_is_refused_with_the_form_to_use() {
        for text in [
            "",
            "12",
            "12:",
            "x:abc",
            "-1:00",
            &format!("12:{}", &HASH[..63]),
        ] {
            let error = text.parse::<Anchor>().unwrap_err();
            assert!(error.to_string().contains("SEQ:HASH"), "{error}");
        }
        let error = format!("0:{}", &HASH[..64]).parse::<Anchor>().unwrap_err();
        assert!(matches!(error, AnchorError::BadGenesis { .. }), "{error}");
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_is_refused_without_a_panic(text in "\\PC*") {
            let _ = text.parse::<Anchor>();
            let _ = Anchor::parse_file(&text);
        }

        #[test]
        fn every_anchor_reads_back_from_its_line(
            seq in 1u64.., head in "[0-9a-f]{64}", note in "[^\\n\\r]*",
        ) {
            let anchor = Anchor { seq, head };
            let line = anchor.to_line(note.trim());
            let back = Anchor::parse_file(&line).unwrap();
            proptest::prop_assert_eq!(back, vec![anchor]);
        }
    }

    #[test]
    fn a_file_names_the_line_that_is_not_an_anchor() {
        let text = format!(
            "# kept by ops\n\n1:{} 2026-01-01\nnot-an-anchor\n",
            &HASH[..64]
        );
        let error = Anchor::parse_file(&text).unwrap_err();
        assert!(
            error.to_string().starts_with("line 4 of the anchor file"),
            "{error}"
        );
        let text = format!("1:{} 2026-01-01\n  2:{}\n", &HASH[..64], &HASH[..64]);
        assert_eq!(Anchor::parse_file(&text).unwrap().len(), 2);
    }
}
