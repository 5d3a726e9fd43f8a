//! Asking the index: a request (query, how many, what to leave out, an optional
//! second scorer) and the hits it returns.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::ops::Range;

use serde::Serialize;

use super::SearchIndex;
use super::clauses::clauses;
use super::fusion::{Fusion, SIMILAR_DEPTH, Scorer, fuse, fuse_scores};
use super::index::QueryTerm;
use super::tokenize::for_each_term;

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
    /// The search text, in the caller's own words.
    pub query: &'a str,
    /// How many hits to return at most (default 5).
    pub k: usize,
    /// Tools to leave out; `None` leaves none out.
    pub filter: Option<Filter<'a>>,
    /// Return left-out tools too, marked with their [`Exclusion`] (for operators).
    pub include_excluded: bool,
    /// A second ranking to fuse with the lexical one.
    pub scorer: Option<&'a dyn Scorer>,
    /// How the scorer's opinion is fused (default: by rank).
    pub fusion: Fusion,
}

impl<'a> SearchRequest<'a> {
    /// The default number of hits.
    pub const DEFAULT_K: usize = 5;

    /// A request for `query` with the defaults: [`Self::DEFAULT_K`] hits, nothing
    /// left out, no scorer.
    pub fn new(query: &'a str) -> Self {
        SearchRequest {
            query,
            k: Self::DEFAULT_K,
            filter: None,
            include_excluded: false,
            scorer: None,
            fusion: Fusion::Ranks,
        }
    }

    /// Returns at most `k` hits.
    pub fn k(mut self, k: usize) -> Self {
        self.k = k;
        self
    }

    /// Leaves out the tools `filter` gives an [`Exclusion`] for.
    pub fn filter(mut self, filter: Filter<'a>) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Whether left-out tools come back too, marked (for operators).
    pub fn include_excluded(mut self, include: bool) -> Self {
        self.include_excluded = include;
        self
    }

    /// Fuses `scorer`'s ranking with the lexical one.
    pub fn scorer(mut self, scorer: &'a dyn Scorer) -> Self {
        self.scorer = Some(scorer);
        self
    }

    /// How the scorer's ranking is fused; without a scorer it changes nothing.
    pub fn fusion(mut self, fusion: Fusion) -> Self {
        self.fusion = fusion;
        self
    }

    /// The scorer and lexical weight when scores are fused.
    fn score_fusion(&self) -> Option<(&'a dyn Scorer, f32)> {
        match (self.scorer, self.fusion) {
            (Some(scorer), Fusion::Scores { lexical }) => Some((scorer, lexical.clamp(0.0, 1.0))),
            _ => None,
        }
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
            .field("fusion", &self.fusion)
            .finish()
    }
}

/// A tool that matched.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// The tool's canonical name.
    pub name: String,
    /// Higher is better. BM25F's score; for a request of several parts, the
    /// tool's gain in the ranking that makes room for every part (on BM25F's
    /// scale); with a [`Scorer`], the fused score instead (reciprocal-rank, or
    /// with [`Fusion::Scores`] the weighted sum of BM25F over the best and similarity).
    pub score: f64,
    /// The query terms (as the tokenizer makes them, and pairs of neighbouring
    /// terms, written `"refund order"`) that the tool holds, in query order.
    pub matched: Vec<String>,
    /// Why the tool is not offered; only with `include_excluded`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded: Option<Exclusion>,
}

impl SearchIndex {
    /// The best tools for `request`, best first; ties go to the name that sorts first.
    ///
    /// A request that asks for several things in several sentences or clauses
    /// ("... in Paris, then convert 30 USD to EUR") is also searched part by part,
    /// and the first `k` hits make room for each part's best tool.
    pub fn search(&self, request: &SearchRequest<'_>) -> Vec<Hit> {
        if request.k == 0 || request.query.trim().is_empty() {
            return Vec::new();
        }
        let terms = self.query_terms(request.query);
        let (mut scored, fused_scores) = self.relevance(request.query, &terms, request);
        let by_rank = request.scorer.is_some() && !fused_scores;
        let depth = if by_rank {
            FUSION_DEPTH.max(request.k * 4)
        } else {
            request.k
        };
        let parts = self.parts(request.query);
        let mut ranked = if parts.len() > 1 {
            self.diversified(&mut scored, &parts, request.k, depth, request)
        } else {
            self.best(&mut scored, depth, request)
        };
        if let Some(scorer) = request.scorer.filter(|_| by_rank) {
            let mut fused = fuse(self, &ranked, &scorer.rank(request.query, depth));
            ranked = self.best(&mut fused, request.k, request);
        }
        ranked.truncate(request.k);
        ranked
            .into_iter()
            .map(|(slot, score)| {
                let name = self.name_of(slot);
                Hit {
                    name: name.to_owned(),
                    score: f64::from(score),
                    matched: self.matched(slot, &terms),
                    excluded: request.filter.and_then(|f| f(name)),
                }
            })
            .collect()
    }

    /// How well each tool fits `text`: [`Self::score_text`], fused with the request's
    /// scorer's similarities when it fuses scores; and whether it did.
    fn relevance(
        &self,
        text: &str,
        terms: &[QueryTerm],
        request: &SearchRequest<'_>,
    ) -> (Vec<(u32, f32)>, bool) {
        let lexical = self.score_text(text, terms);
        let Some((scorer, weight)) = request.score_fusion() else {
            return (lexical, false);
        };
        match scorer.similarities(text, SIMILAR_DEPTH) {
            Some(similar) => (fuse_scores(self, &lexical, &similar, weight), true),
            None => (lexical, false),
        }
    }

    /// BM25F scores of `text`'s `terms`, with tools `text` names outright raised.
    ///
    /// A word written as an identifier (`sort_list`, `math.gcd`, `getWeather`) that
    /// is a tool's whole name says which tool is meant more surely than any word
    /// match can, so that tool gains the best score of the ranking on top of its
    /// own. Plain words (`find`, `sort`) are left to BM25F: as a name they are rare,
    /// as a word common.
    fn score_text(&self, text: &str, terms: &[QueryTerm]) -> Vec<(u32, f32)> {
        let mut scored = self.score(terms);
        let best = scored.iter().map(|s| s.1).fold(1.0f32, f32::max);
        let words = text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '-')));
        for word in words {
            let word = word.trim_matches(|c: char| !c.is_alphanumeric());
            let mut chars = word.chars();
            let mut prev = chars.next();
            let hump = chars.any(|c| {
                let hump = prev.is_some_and(char::is_lowercase) && c.is_uppercase();
                prev = Some(c);
                hump
            });
            if !(hump || word.contains(['_', '.'])) {
                continue;
            }
            let Some(slot) = self.slot_of(word) else {
                continue;
            };
            match scored.iter_mut().find(|s| s.0 == slot) {
                Some(s) => s.1 += best,
                None => scored.push((slot, best)),
            }
        }
        scored
    }

    /// The parts of `query` to search on their own: [`clauses`], each with at
    /// least [`MIN_PART_TERMS`] words the index knows; a shorter one joins the next
    /// (the last, the one before).
    fn parts<'q>(&self, query: &'q str) -> Vec<&'q str> {
        let mut parts: Vec<Range<usize>> = Vec::new();
        let mut pending: Option<usize> = None;
        for range in clauses(query) {
            let start = pending.take().unwrap_or(range.start);
            let mut known = 0;
            for_each_term(&query[range.clone()], |t| {
                known += usize::from(self.knows(&t));
            });
            if known < MIN_PART_TERMS {
                pending = Some(start);
            } else {
                parts.push(start..range.end);
            }
        }
        if pending.is_some()
            && let Some(last) = parts.last_mut()
        {
            last.end = query.len();
        }
        parts.into_iter().map(|r| &query[r]).collect()
    }

    /// The best `n` of `scored` that `request` lets through (all of them, marked
    /// later, with `include_excluded`), best first.
    fn best(
        &self,
        scored: &mut [(u32, f32)],
        n: usize,
        request: &SearchRequest<'_>,
    ) -> Vec<(u32, f32)> {
        let by_rank = |a: &(u32, f32), b: &(u32, f32)| {
            b.1.partial_cmp(&a.1)
                .unwrap_or(Ordering::Equal)
                .then_with(|| self.name_of(a.0).cmp(self.name_of(b.0)))
        };
        let mut best = Vec::with_capacity(n);
        let mut start = 0;
        let mut window = (n * 4).max(16);
        while start < scored.len() && best.len() < n {
            let len = scored.len();
            let end = (start + window).min(len);
            let rest = &mut scored[start..];
            if end < len {
                rest.select_nth_unstable_by(end - start - 1, by_rank);
            }
            rest[..end - start].sort_unstable_by(by_rank);
            for &(slot, score) in &scored[start..end] {
                let left_out = !request.include_excluded
                    && request
                        .filter
                        .is_some_and(|f| f(self.name_of(slot)).is_some());
                if !left_out {
                    best.push((slot, score));
                    if best.len() == n {
                        break;
                    }
                }
            }
            start = end;
            window *= 4;
        }
        best
    }

    /// The best `depth` tools for a request of several `parts`, the first `k`
    /// chosen so that each part's best tool gets a place; `whole` is the whole
    /// query's ranking.
    ///
    /// This is xQuAD (Santos, Macdonald & Ounis, WWW 2010) with the parts as the
    /// query's aspects. A tool's relevance to the whole query and to each part is
    /// its BM25F score over the best score of that ranking. Tools are picked one
    /// at a time, each time the one with the most
    ///
    /// ```text
    /// (1 − λ)·rel(whole) + λ·Σ_part weight(part)·rel(part)·Π_picked (1 − rel_picked(part))
    /// ```
    ///
    /// so once a part's best tool is picked, that part's near-duplicates gain
    /// nothing more from it, and the next part's best tool moves up. A part
    /// weighs its best score over the whole query's best: a part that a tool fits
    /// about as well as any tool fits the whole request is a request of its own; a
    /// part of filler ("Can you help me with these?") fits nothing well and
    /// counts little. [`DIVERSITY`] is λ.
    fn diversified(
        &self,
        whole: &mut [(u32, f32)],
        parts: &[&str],
        k: usize,
        depth: usize,
        request: &SearchRequest<'_>,
    ) -> Vec<(u32, f32)> {
        let top = self.best(whole, depth.max(PART_CANDIDATES), request);
        let Some(&(_, best_whole)) = top.first() else {
            return top;
        };
        let mut candidates: Vec<u32> = top.iter().map(|&(slot, _)| slot).collect();
        let mut seen: HashSet<u32> = candidates.iter().copied().collect();
        // Per part, its weight and every tool's relevance to it, by slot.
        let mut part_rels: Vec<Vec<f32>> = Vec::with_capacity(parts.len());
        let mut weights: Vec<f32> = Vec::with_capacity(parts.len());
        for part in parts {
            let (mut scored, _) = self.relevance(part, &self.query_terms(part), request);
            let best = self.best(&mut scored, PART_CANDIDATES, request);
            let Some(&(_, best_part)) = best.first() else {
                continue;
            };
            weights.push(best_part / best_whole);
            let mut rel = vec![0.0f32; self.slots()];
            for (slot, s) in scored {
                rel[slot as usize] = s / best_part;
            }
            part_rels.push(rel);
            for (slot, _) in best {
                if seen.insert(slot) {
                    candidates.push(slot);
                }
            }
        }
        // Relevance of each candidate, to the whole query then to each part.
        let mut whole_rel = vec![0.0f32; self.slots()];
        for &(slot, s) in whole.iter() {
            whole_rel[slot as usize] = s / best_whole;
        }
        let rels: Vec<Vec<f32>> = candidates
            .iter()
            .map(|&slot| {
                std::iter::once(whole_rel[slot as usize])
                    .chain(part_rels.iter().map(|rel| rel[slot as usize]))
                    .collect()
            })
            .collect();
        let mut open = vec![1.0f32; part_rels.len()];
        let mut left: Vec<usize> = (0..candidates.len()).collect();
        let mut ranked = Vec::with_capacity(depth);
        while ranked.len() < k && !left.is_empty() {
            let gain = |c: usize| {
                let rel = &rels[c];
                let parts: f32 = rel[1..]
                    .iter()
                    .zip(&weights)
                    .zip(&open)
                    .map(|((r, w), o)| r * w * o)
                    .sum();
                (1.0 - DIVERSITY) * rel[0] + DIVERSITY * parts
            };
            let (at, value) = left
                .iter()
                .enumerate()
                .map(|(at, &c)| (at, gain(c)))
                .max_by(|a, b| {
                    a.1.partial_cmp(&b.1)
                        .unwrap_or(Ordering::Equal)
                        .then_with(|| {
                            let name = |at: usize| self.name_of(candidates[left[at]]);
                            name(b.0).cmp(name(a.0))
                        })
                })
                .expect("some candidate is left");
            let c = left.remove(at);
            for (o, r) in open.iter_mut().zip(&rels[c][1..]) {
                *o *= 1.0 - r;
            }
            ranked.push((candidates[c], value * best_whole));
        }
        // Past the first k, for a fused ranking, the whole query's order.
        let picked: Vec<u32> = ranked.iter().map(|&(slot, _)| slot).collect();
        let floor = ranked.last().map_or(0.0, |&(_, s)| s);
        let rest = top.iter().filter(|(slot, _)| !picked.contains(slot));
        ranked.extend(rest.map(|&(slot, s)| (slot, s.min(floor))));
        ranked.truncate(depth);
        ranked
    }
}

/// How many lexical candidates a fused ranking reads.
const FUSION_DEPTH: usize = 100;

/// λ of [`SearchIndex::diversified`]: how much the parts of a request count against
/// the whole of it. Half: a part's best tool moves up past the whole request's
/// near-duplicates, yet a tool that fits the whole request well keeps its place.
const DIVERSITY: f32 = 0.5;

/// How many of the best tools of the whole query and of each part compete for a
/// place in a diversified ranking.
const PART_CANDIDATES: usize = 20;

/// The fewest words the index knows that a part of a request needs to be
/// searched on its own; one word is a fragment ("and Tokyo?"), not a request.
const MIN_PART_TERMS: usize = 2;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::search::index_of;
    use crate::{Effect, ToolDescriptor, ToolSource};

    fn index() -> SearchIndex {
        index_of(&[
            (
                "users.reset_password",
                "Reset a user's password and email a link.",
            ),
            ("admin.reset_database", "Reset the whole database to empty."),
            ("users.change_email", "Change a user's email address."),
            ("weather.now", "The weather now."),
        ])
    }

    fn names(hits: &[Hit]) -> Vec<&str> {
        hits.iter().map(|h| h.name.as_str()).collect()
    }

    /// Five weather tools that share many words, three converters, and filler.
    fn weather_and_money() -> SearchIndex {
        index_of(&[
            (
                "weather.now",
                "Current weather forecast: temperature, humidity, wind and rain in a city.",
            ),
            (
                "weather.hourly",
                "Hourly weather forecast: temperature, humidity, wind and rain for a city.",
            ),
            (
                "weather.daily",
                "Daily weather forecast: temperature, humidity, wind and rain for a city.",
            ),
            (
                "weather.alerts",
                "Weather forecast alerts: temperature, humidity, wind and rain of a city.",
            ),
            (
                "weather.history",
                "Past weather forecast: temperature, humidity, wind and rain of a city.",
            ),
            (
                "money.convert",
                "Convert an amount of one currency to another.",
            ),
            ("units.convert", "Convert a length between units."),
            ("files.convert", "Convert a file between formats."),
            ("email.send", "Send an email."),
            ("calendar.add", "Add an event to a calendar."),
            ("notes.write", "Write a note."),
            ("maps.route", "A route between two places."),
            ("news.top", "Top news headlines."),
            ("stocks.quote", "A stock quote."),
        ])
    }

    const ONE_SENTENCE: &str =
        "Weather forecast, temperature, humidity, wind and rain in Paris and convert a currency";
    const TWO_SENTENCES: &str =
        "Weather forecast, temperature, humidity, wind and rain in Paris. Then convert a currency.";

    #[test]
    fn each_part_of_a_request_for_several_things_gets_its_best_tool_in_the_top_k() {
        let index = weather_and_money();
        let hits = index.search(&SearchRequest::new(ONE_SENTENCE).k(3));
        assert!(
            names(&hits).iter().all(|n| n.starts_with("weather.")),
            "{hits:?}"
        );

        let hits = index.search(&SearchRequest::new(TWO_SENTENCES).k(3));
        assert_eq!(
            names(&hits)[..2],
            ["weather.daily", "money.convert"],
            "{hits:?}"
        );
        assert_eq!(hits[1].matched, ["convert", "currency"]);
        for pair in hits.windows(2) {
            assert!(pair[0].score >= pair[1].score);
        }
    }

    #[test]
    fn a_left_out_tool_takes_no_place_in_a_request_for_several_things() {
        let index = weather_and_money();
        let hidden = |name: &str| (name == "weather.daily").then_some(Exclusion::NotPermitted);
        let request = SearchRequest::new(TWO_SENTENCES).k(3).filter(&hidden);
        let hits = index.search(&request);
        assert_eq!(
            names(&hits)[..2],
            ["weather.history", "money.convert"],
            "{hits:?}"
        );
        let marked = index.search(&request.include_excluded(true));
        assert_eq!(names(&marked)[..2], ["weather.daily", "money.convert"]);
        assert_eq!(marked[0].excluded, Some(Exclusion::NotPermitted));
    }

    #[test]
    fn a_tool_named_outright_ranks_at_the_top() {
        let index = index_of(&[
            ("sort_list", "Sort a list."),
            (
                "list.sort_numbers",
                "Sort a list of numbers in ascending or descending order.",
            ),
        ]);
        let query = "sort the numbers 3, 1, 2 in descending order";
        assert_eq!(
            names(&index.search(&SearchRequest::new(query)))[0],
            "list.sort_numbers"
        );
        let named = "use 'sort_list' to sort the numbers 3, 1, 2 in descending order";
        assert_eq!(
            names(&index.search(&SearchRequest::new(named))),
            ["sort_list", "list.sort_numbers"]
        );
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
