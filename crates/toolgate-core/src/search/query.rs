//! Asking the index: a request (query, how many, what to leave out, an optional
//! second scorer) and the hits it returns.

use std::cmp::Ordering;

use serde::Serialize;

use super::SearchIndex;
use super::fusion::{Scorer, fuse};

/// Why a tool that matched is not offered to this caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", content = "detail", rename_all = "snake_case")]
pub enum Exclusion {
    /// The principal may not use it (tier ceiling, scopes or a denying policy).
    NotPermitted,
    /// The conversation's flow does not allow it now.
    FlowBlocked,
    /// Quarantined: its definition changed, or it was pulled by an operator.
    Quarantined,
    /// Its circuit breaker is open after repeated failures.
    BreakerOpen,
    /// Another reason, in words.
    Other(String),
}

impl Exclusion {
    /// The reason, as a phrase.
    pub fn describe(&self) -> String {
        match self {
            Exclusion::NotPermitted => "not permitted for this caller".into(),
            Exclusion::FlowBlocked => "blocked by the conversation's flow".into(),
            Exclusion::Quarantined => "quarantined".into(),
            Exclusion::BreakerOpen => "circuit breaker open".into(),
            Exclusion::Other(reason) => reason.clone(),
        }
    }
}

/// Decides, by tool name, whether a tool is left out of a caller's results.
pub type Filter<'a> = &'a (dyn Fn(&str) -> Option<Exclusion> + 'a);

/// One search: what to look for and how to rank and filter.
///
/// ```
/// use toolgate_core::search::{Exclusion, SearchRequest};
/// let hidden = |name: &str| (name == "admin.reset").then_some(Exclusion::NotPermitted);
/// let request = SearchRequest::new("reset a password").k(3).filter(&hidden);
/// assert_eq!(request.k, 3);
/// ```
#[derive(Clone, Copy)]
pub struct SearchRequest<'a> {
    pub query: &'a str,
    /// How many hits to return at most (default 5).
    pub k: usize,
    /// Tools to leave out; `None` leaves none out.
    pub filter: Option<Filter<'a>>,
    /// Return left-out tools too, marked with their [`Exclusion`] (for operators).
    pub include_excluded: bool,
    /// A second ranking to fuse with the lexical one.
    pub scorer: Option<&'a dyn Scorer>,
}

impl<'a> SearchRequest<'a> {
    /// The default number of hits.
    pub const DEFAULT_K: usize = 5;

    pub fn new(query: &'a str) -> Self {
        SearchRequest {
            query,
            k: Self::DEFAULT_K,
            filter: None,
            include_excluded: false,
            scorer: None,
        }
    }

    pub fn k(mut self, k: usize) -> Self {
        self.k = k;
        self
    }

    pub fn filter(mut self, filter: Filter<'a>) -> Self {
        self.filter = Some(filter);
        self
    }

    pub fn include_excluded(mut self, include: bool) -> Self {
        self.include_excluded = include;
        self
    }

    pub fn scorer(mut self, scorer: &'a dyn Scorer) -> Self {
        self.scorer = Some(scorer);
        self
    }
}

impl std::fmt::Debug for SearchRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchRequest")
            .field("query", &self.query)
            .field("k", &self.k)
            .field("filter", &self.filter.is_some())
            .field("include_excluded", &self.include_excluded)
            .field("scorer", &self.scorer.is_some())
            .finish()
    }
}

/// A tool that matched.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub name: String,
    /// Higher is better. BM25F's score; with a [`Scorer`], the fused
    /// reciprocal-rank score instead.
    pub score: f64,
    /// The query terms (as the tokenizer makes them, and pairs of neighbouring
    /// terms, written `"refund order"`) that the tool holds, in query order.
    pub matched: Vec<String>,
    /// Why the tool is not offered; only with `include_excluded`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded: Option<Exclusion>,
}

/// How many lexical candidates a fused ranking reads.
const FUSION_DEPTH: usize = 100;

impl SearchIndex {
    /// The best tools for `request`, best first; ties go to the name that sorts first.
    pub fn search(&self, request: &SearchRequest<'_>) -> Vec<Hit> {
        if request.k == 0 {
            return Vec::new();
        }
        let terms = self.query_terms(request.query);
        let mut scored = self.score(&terms);
        if let Some(scorer) = request.scorer {
            let depth = FUSION_DEPTH.max(request.k * 4);
            let lexical = top(self, &mut scored, depth);
            scored = fuse(self, &lexical, &scorer.rank(request.query, depth));
        }
        let by_rank = |a: &(u32, f32), b: &(u32, f32)| {
            b.1.partial_cmp(&a.1)
                .unwrap_or(Ordering::Equal)
                .then_with(|| self.name_of(a.0).cmp(self.name_of(b.0)))
        };
        let mut hits = Vec::with_capacity(request.k);
        let mut start = 0;
        let mut window = (request.k * 4).max(16);
        while start < scored.len() && hits.len() < request.k {
            let len = scored.len();
            let end = (start + window).min(len);
            let rest = &mut scored[start..];
            if end < len {
                rest.select_nth_unstable_by(end - start - 1, by_rank);
            }
            rest[..end - start].sort_unstable_by(by_rank);
            for &(slot, score) in &scored[start..end] {
                let name = self.name_of(slot);
                let excluded = request.filter.and_then(|f| f(name));
                if excluded.is_some() && !request.include_excluded {
                    continue;
                }
                hits.push(Hit {
                    name: name.to_owned(),
                    score: f64::from(score),
                    matched: self.matched(slot, &terms),
                    excluded,
                });
                if hits.len() == request.k {
                    break;
                }
            }
            start = end;
            window *= 4;
        }
        hits
    }
}

/// The best `n` of `scored`, best first.
fn top(index: &SearchIndex, scored: &mut [(u32, f32)], n: usize) -> Vec<(u32, f32)> {
    let by_rank = |a: &(u32, f32), b: &(u32, f32)| {
        b.1.partial_cmp(&a.1)
            .unwrap_or(Ordering::Equal)
            .then_with(|| index.name_of(a.0).cmp(index.name_of(b.0)))
    };
    if scored.len() > n {
        scored.select_nth_unstable_by(n - 1, by_rank);
    }
    let mut best = scored[..n.min(scored.len())].to_vec();
    best.sort_unstable_by(by_rank);
    best
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{Effect, ToolDescriptor, ToolSource};

    fn index() -> SearchIndex {
        let tools: Vec<ToolDescriptor> = [
            (
                "users.reset_password",
                "Reset a user's password and email a link.",
            ),
            ("admin.reset_database", "Reset the whole database to empty."),
            ("users.change_email", "Change a user's email address."),
            ("weather.now", "The weather now."),
        ]
        .into_iter()
        .map(|(n, d)| {
            ToolDescriptor::new(
                n,
                d,
                json!({"type": "object"}),
                Effect::Read,
                ToolSource::Builtin,
            )
        })
        .collect();
        SearchIndex::from_tools(&tools)
    }

    fn names(hits: &[Hit]) -> Vec<&str> {
        hits.iter().map(|h| h.name.as_str()).collect()
    }

    #[test]
    fn hits_come_best_first_with_scores_and_matched_terms() {
        let hits = index().search(&SearchRequest::new("reset my password"));
        assert_eq!(
            names(&hits),
            ["users.reset_password", "admin.reset_database"]
        );
        assert!(hits[0].score > hits[1].score);
        assert_eq!(hits[0].matched, ["reset", "reset password", "password"]);
        assert_eq!(hits[1].matched, ["reset"]);
    }

    #[test]
    fn k_bounds_the_hits_and_zero_asks_for_none() {
        let index = index();
        assert_eq!(
            index
                .search(&SearchRequest::new("reset user email").k(1))
                .len(),
            1
        );
        assert!(index.search(&SearchRequest::new("reset").k(0)).is_empty());
        assert!(index.search(&SearchRequest::new("quantum").k(5)).is_empty());
        assert!(index.search(&SearchRequest::new("").k(5)).is_empty());
    }

    #[test]
    fn a_filtered_out_tool_is_skipped_and_the_next_one_takes_its_place() {
        let index = index();
        let filter = |name: &str| {
            name.starts_with("admin.")
                .then_some(Exclusion::NotPermitted)
                .or_else(|| (name == "users.reset_password").then_some(Exclusion::BreakerOpen))
        };
        let hits = index.search(&SearchRequest::new("reset a user").k(2).filter(&filter));
        assert_eq!(names(&hits), ["users.change_email"]);
        assert!(hits.iter().all(|h| h.excluded.is_none()));
    }

    #[test]
    fn operators_see_filtered_out_tools_marked_with_the_reason() {
        let index = index();
        let filter = |name: &str| name.starts_with("admin.").then_some(Exclusion::Quarantined);
        let hits = index.search(
            &SearchRequest::new("reset database")
                .filter(&filter)
                .include_excluded(true),
        );
        assert_eq!(hits[0].name, "admin.reset_database");
        assert_eq!(hits[0].excluded, Some(Exclusion::Quarantined));
        assert_eq!(
            serde_json::to_value(&hits[0].excluded).unwrap(),
            json!({"reason": "quarantined"})
        );
        assert_eq!(hits[1].excluded, None);
    }

    #[test]
    fn many_filtered_candidates_still_fill_k() {
        let tools: Vec<ToolDescriptor> = (0..200)
            .map(|i| {
                ToolDescriptor::new(
                    format!("t{i:03}"),
                    format!("widget {}", "widget ".repeat(i % 5)),
                    json!({"type": "object"}),
                    Effect::Read,
                    ToolSource::Builtin,
                )
            })
            .collect();
        let index = SearchIndex::from_tools(&tools);
        let only_last = |name: &str| (name < "t190").then_some(Exclusion::FlowBlocked);
        let hits = index.search(&SearchRequest::new("widget").k(5).filter(&only_last));
        assert_eq!(hits.len(), 5);
        assert!(hits.iter().all(|h| h.name.as_str() >= "t190"));
        for pair in hits.windows(2) {
            assert!(pair[0].score >= pair[1].score);
        }
    }
}
