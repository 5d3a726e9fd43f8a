//! A host's own scorer (embeddings, a reranker, usage statistics), fused with the
//! lexical ranking by reciprocal rank fusion.
//!
//! Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009) scores each
//! tool `Σ 1 / (60 + rank)` over the rankings it appears in. It reads only ranks,
//! so scores on different scales (BM25F's unbounded sums, cosine similarities)
//! combine without calibration, and a tool both rankings like rises above a tool
//! only one of them likes.

use std::collections::HashMap;

use super::SearchIndex;

/// A second opinion on which tools fit a query.
///
/// ```
/// use toolgate_core::search::Scorer;
/// /// Ranks the tools a host saw used most often for anything.
/// struct Popular(Vec<String>);
/// impl Scorer for Popular {
///     fn rank(&self, _query: &str, limit: usize) -> Vec<String> {
///         self.0.iter().take(limit).cloned().collect()
///     }
/// }
/// ```
pub trait Scorer: Send + Sync {
    /// Up to `limit` tool names, best first, for `query`. Names the index does not
    /// hold are ignored.
    fn rank(&self, query: &str, limit: usize) -> Vec<String>;
}

/// The rank constant of reciprocal rank fusion; 60 is the published value.
pub const RRF_K: f32 = 60.0;

/// Fuses the lexical ranking (best first) with the scorer's, as (slot, fused score).
pub(crate) fn fuse(
    index: &SearchIndex,
    lexical: &[(u32, f32)],
    other: &[String],
) -> Vec<(u32, f32)> {
    let mut fused: HashMap<u32, f32> = HashMap::new();
    for (rank, &(slot, _)) in lexical.iter().enumerate() {
        *fused.entry(slot).or_default() += 1.0 / (RRF_K + rank as f32 + 1.0);
    }
    let mut seen = Vec::new();
    let mut rank = 0;
    for name in other {
        let Some(slot) = index.slot_of(name) else {
            continue;
        };
        if seen.contains(&slot) {
            continue;
        }
        seen.push(slot);
        *fused.entry(slot).or_default() += 1.0 / (RRF_K + rank as f32 + 1.0);
        rank += 1;
    }
    fused.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::{SearchRequest, index_of};

    struct Fixed(Vec<&'static str>);

    impl Scorer for Fixed {
        fn rank(&self, _query: &str, limit: usize) -> Vec<String> {
            self.0.iter().take(limit).map(|s| s.to_string()).collect()
        }
    }

    fn index() -> SearchIndex {
        index_of(&[
            ("cars.rent", "Rent a car for some days."),
            ("cars.buy", "Buy a car outright."),
            ("flights.book", "Book a plane ticket."),
        ])
    }

    fn names(index: &SearchIndex, request: &SearchRequest<'_>) -> Vec<String> {
        index.search(request).into_iter().map(|h| h.name).collect()
    }

    #[test]
    fn without_a_scorer_the_ranking_is_lexical() {
        let index = index();
        assert_eq!(
            names(&index, &SearchRequest::new("rent a car")),
            ["cars.rent", "cars.buy"]
        );
    }

    #[test]
    fn a_tool_both_rankings_like_rises_above_one_only_the_lexical_ranking_likes() {
        let index = index();
        let scorer = Fixed(vec!["cars.buy", "unknown.tool", "cars.buy"]);
        let hits = index.search(&SearchRequest::new("rent a car").scorer(&scorer));
        let got: Vec<&str> = hits.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(got, ["cars.buy", "cars.rent"]);
        assert!((hits[0].score - (1.0f32 / 62.0 + 1.0 / 61.0) as f64).abs() < 1e-6);
        assert_eq!(
            hits[0].matched,
            ["car"],
            "matched terms still come from the lexical side"
        );
    }

    #[test]
    fn a_scorer_can_find_a_tool_that_shares_no_word_with_the_query() {
        let index = index();
        let scorer = Fixed(vec!["flights.book"]);
        let got = names(&index, &SearchRequest::new("travel by air").scorer(&scorer));
        assert_eq!(got, ["flights.book"]);
    }
}
