//! A host's own scorer (embeddings, a reranker, usage statistics), fused with the
//! lexical ranking by reciprocal rank fusion or, for a scorer with similarities on
//! a fixed scale, by their scores.
//!
//! Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009) scores each
//! tool `Σ 1 / (60 + rank)` over the rankings it appears in. It reads only ranks,
//! so scores on different scales (BM25F's unbounded sums, cosine similarities)
//! combine without calibration, and a tool both rankings like rises above a tool
//! only one of them likes.
//!
//! Score fusion ([`Fusion::Scores`]) reads how much each side likes a tool, not
//! just the order: `w · bm25f / best_bm25f + (1 − w) · max(similarity, 0)`. BM25F
//! over the query's best score is 1 for the best lexical match; a cosine is already
//! on a fixed scale. So a tool the lexical side likes far more than the next keeps
//! its lead, which ranks cannot express. It also works per part of a request of
//! several parts (each part is embedded too), so the ranking that makes room for
//! every part's best tool reads fused scores.

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

    /// Up to `limit` tools with a similarity on a scale that is the same for every
    /// query (a cosine: 1 is the same meaning, 0 unrelated), best first; `None` for
    /// a scorer that only ranks. [`Fusion::Scores`] reads these.
    fn similarities(&self, query: &str, limit: usize) -> Option<Vec<(String, f32)>> {
        let _ = (query, limit);
        None
    }
}

/// How a [`Scorer`]'s opinion joins the lexical ranking.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Fusion {
    /// Reciprocal rank fusion of the two rankings.
    #[default]
    Ranks,
    /// `lexical · BM25F / best BM25F + (1 − lexical) · similarity`, for the whole
    /// query and for each of its parts; a scorer without similarities falls back
    /// to [`Fusion::Ranks`].
    Scores {
        /// The lexical side's weight, 0 to 1 (clamped); the similarity gets the rest.
        lexical: f32,
    },
}

impl Fusion {
    /// Score fusion with an even split between the two sides ([`DEFAULT_LEXICAL_WEIGHT`]);
    /// a starting point, to be chosen by measurement on the development set.
    pub const SCORES: Fusion = Fusion::Scores {
        lexical: DEFAULT_LEXICAL_WEIGHT,
    };
}

/// The lexical side's share in [`Fusion::SCORES`].
pub const DEFAULT_LEXICAL_WEIGHT: f32 = 0.5;

/// How many of a scorer's most similar tools score fusion reads per query or part;
/// a tool past them counts the least similarity among them.
pub(crate) const SIMILAR_DEPTH: usize = 200;

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

/// Fuses `lexical` BM25F scores of one text with `similar` tools' similarities to it
/// (best first), as (slot, fused score), with `weight` the lexical share.
pub(crate) fn fuse_scores(
    index: &SearchIndex,
    lexical: &[(u32, f32)],
    similar: &[(String, f32)],
    weight: f32,
) -> Vec<(u32, f32)> {
    let best = lexical.iter().map(|s| s.1).fold(0.0f32, f32::max);
    let floor = similar.last().map_or(0.0, |s| s.1.max(0.0));
    let mut fused: HashMap<u32, f32> = HashMap::with_capacity(lexical.len() + similar.len());
    for (name, similarity) in similar {
        if let Some(slot) = index.slot_of(name) {
            fused
                .entry(slot)
                .or_insert((1.0 - weight) * similarity.max(0.0));
        }
    }
    for &(slot, score) in lexical {
        let lexical = if best > 0.0 { score / best } else { 0.0 };
        *fused.entry(slot).or_insert((1.0 - weight) * floor) += weight * lexical;
    }
    fused.into_iter().filter(|&(_, s)| s > 0.0).collect()
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

    /// Similarities by tool name; a query about the air is like `flights.book`, a
    /// query about the air alone (not the whole request it is part of) more so.
    struct Similar(Vec<(&'static str, f32)>);

    impl Scorer for Similar {
        fn rank(&self, _query: &str, limit: usize) -> Vec<String> {
            self.0.iter().take(limit).map(|s| s.0.to_string()).collect()
        }

        fn similarities(&self, query: &str, limit: usize) -> Option<Vec<(String, f32)>> {
            let air = match (query.contains("air"), query.contains("car")) {
                (true, false) => Some(1.0),
                (true, true) => Some(0.5),
                _ => None,
            };
            let mut out: Vec<(String, f32)> = self
                .0
                .iter()
                .map(|&(n, s)| {
                    let s = match air {
                        Some(like) if n == "flights.book" => like,
                        _ => s,
                    };
                    (n.to_string(), s)
                })
                .collect();
            out.sort_by(|a, b| b.1.total_cmp(&a.1));
            out.truncate(limit);
            Some(out)
        }
    }

    #[test]
    fn score_fusion_adds_normalised_bm25f_and_similarity() {
        let index = index();
        let scorer = Similar(vec![
            ("cars.buy", 0.6),
            ("cars.rent", 0.2),
            ("flights.book", 0.1),
        ]);
        let request = SearchRequest::new("rent a car")
            .scorer(&scorer)
            .fusion(Fusion::Scores { lexical: 0.5 });
        let hits = index.search(&request);
        let lexical = index.search(&SearchRequest::new("rent a car"));
        let bm25 = |name: &str| lexical.iter().find(|h| h.name == name).unwrap().score;
        let want = |name: &str, cos: f64| 0.5 * bm25(name) / bm25("cars.rent") + 0.5 * cos;
        let got: Vec<(&str, f64)> = hits.iter().map(|h| (h.name.as_str(), h.score)).collect();
        assert_eq!(got.len(), 3, "{got:?}");
        for (name, score) in &got[..2] {
            let cos = if *name == "cars.buy" { 0.6 } else { 0.2 };
            assert!((score - want(name, cos)).abs() < 1e-5, "{name}: {score}");
        }
        assert_eq!(got[2], ("flights.book", 0.5 * 0.1f32 as f64));
        assert_eq!(got[0].0, "cars.rent");
        assert!(
            hits[2].matched.is_empty(),
            "matched terms still come from the lexical side"
        );
    }

    #[test]
    fn with_score_fusion_each_part_of_a_request_is_scored_by_meaning_too() {
        let index = index_of(&[
            ("cars.rent", "Rent a car for a week."),
            ("cars.buy", "Buy a car outright."),
            ("calendar.count", "Count the days between two dates."),
            ("flights.book", "Book a plane ticket."),
        ]);
        let scorer = Similar(vec![
            ("cars.buy", 0.3),
            ("cars.rent", 0.3),
            ("calendar.count", 0.0),
            ("flights.book", 0.0),
        ]);
        let query = "Rent a car and buy a car. Then count days in the air.";
        let request = SearchRequest::new(query)
            .k(2)
            .scorer(&scorer)
            .fusion(Fusion::Scores { lexical: 0.4 });
        let got = names(&index, &request);
        assert!(got[0].starts_with("cars."), "{got:?}");
        assert_eq!(got[1], "flights.book", "{got:?}");
        let lexical_only = names(&index, &SearchRequest::new(query).k(2));
        assert_eq!(lexical_only[1], "calendar.count", "{lexical_only:?}");
    }

    #[test]
    fn a_scorer_can_find_a_tool_that_shares_no_word_with_the_query() {
        let index = index();
        let scorer = Fixed(vec!["flights.book"]);
        let got = names(&index, &SearchRequest::new("travel by air").scorer(&scorer));
        assert_eq!(got, ["flights.book"]);
    }
}
