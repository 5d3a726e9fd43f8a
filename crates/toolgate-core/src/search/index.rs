//! The capability index: an inverted index over tool descriptors, scored with BM25F.
//!
//! BM25F (Robertson & Zaragoza, *The Probabilistic Relevance Framework*, 2009)
//! scores one query term `t` against tool `d` as
//!
//! ```text
//! tf(t,d) = Σ_field  weight_f · tf_f(t,d) / (1 − b_f + b_f · len_f(d) / avglen_f)
//! score  += idf(t) · tf(t,d) / (k1 + tf(t,d))
//! idf(t)  = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//! ```
//!
//! so a word found in the name counts more than one found in a parameter's
//! description, yet a word repeated across every field still saturates.
//!
//! Adding, replacing and removing a tool touch only that tool's postings; no
//! operation rebuilds the index. Field lengths are kept as running sums, so
//! averages stay exact as the catalog changes.

use std::collections::HashMap;

use super::fields::{FIELD_COUNT, Field, FieldWeights, MAX_FIELD_TERMS, for_each_field_term};
use super::tokenize::{PAIR_SEPARATOR, for_each_term_and_pair};
use crate::ToolDescriptor;

/// One field of one tool that holds a term, and how often.
#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    field: u8,
    tf: u16,
}

#[derive(Debug, Default)]
struct Term {
    text: Box<str>,
    /// Grouped by tool: a tool's postings are added together and removed together.
    postings: Vec<Posting>,
    /// How many tools hold the term.
    df: u32,
}

#[derive(Debug)]
struct Doc {
    name: Box<str>,
    /// Terms per field.
    lens: [u16; FIELD_COUNT],
    /// The ids of the terms it holds, sorted.
    terms: Box<[u32]>,
}

/// A query term that the index knows, with its weight.
pub(crate) struct QueryTerm {
    pub id: u32,
    pub idf: f32,
}

/// Tool descriptors indexed for search by what they do.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::search::{SearchIndex, SearchRequest};
/// use toolgate_core::{Effect, ToolDescriptor, ToolSource};
///
/// let tool = |name: &str, description: &str| {
///     ToolDescriptor::new(name, description, json!({"type": "object"}), Effect::Read, ToolSource::Builtin)
/// };
/// let mut index = SearchIndex::new();
/// index.insert(&tool("weather.forecast", "Forecast the weather for a city."));
/// index.insert(&tool("orders.refund", "Refund an order to the customer."));
/// let hits = index.search(&SearchRequest::new("give the customer their money back for an order"));
/// assert_eq!(hits[0].name, "orders.refund");
/// assert_eq!(hits[0].matched, ["customer", "order"]);
/// ```
#[derive(Debug)]
pub struct SearchIndex {
    weights: FieldWeights,
    lookup: HashMap<Box<str>, u32>,
    terms: Vec<Term>,
    free_terms: Vec<u32>,
    docs: Vec<Option<Doc>>,
    free_docs: Vec<u32>,
    by_name: HashMap<Box<str>, u32>,
    /// Sum of every live tool's length, per field.
    total_len: [u64; FIELD_COUNT],
}

impl Default for SearchIndex {
    fn default() -> Self {
        SearchIndex::with_weights(FieldWeights::default())
    }
}

impl SearchIndex {
    /// An empty index with the default [`FieldWeights`].
    pub fn new() -> Self {
        SearchIndex::default()
    }

    /// An empty index with `weights`.
    pub fn with_weights(weights: FieldWeights) -> Self {
        SearchIndex {
            weights,
            lookup: HashMap::new(),
            terms: Vec::new(),
            free_terms: Vec::new(),
            docs: Vec::new(),
            free_docs: Vec::new(),
            by_name: HashMap::new(),
            total_len: [0; FIELD_COUNT],
        }
    }

    /// An index of `tools`.
    pub fn from_tools<'a>(tools: impl IntoIterator<Item = &'a ToolDescriptor>) -> Self {
        let mut index = SearchIndex::new();
        for tool in tools {
            index.insert(tool);
        }
        index
    }

    /// The field weights the index scores with.
    pub fn weights(&self) -> &FieldWeights {
        &self.weights
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Whether a tool of exactly this name is indexed.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The indexed tool names, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(|k| &**k)
    }

    /// Indexes `tool`, replacing a tool of the same name. Returns true when it replaced one.
    pub fn insert(&mut self, tool: &ToolDescriptor) -> bool {
        let replaced = self.remove(&tool.name);
        let mut counts: HashMap<String, [u16; FIELD_COUNT]> = HashMap::new();
        let mut lens = [0u16; FIELD_COUNT];
        for_each_field_term(tool, |field, term| {
            let f = field.index();
            if usize::from(lens[f]) >= MAX_FIELD_TERMS {
                return;
            }
            lens[f] += 1;
            let tf = &mut counts.entry(term).or_default()[f];
            *tf = tf.saturating_add(1);
        });
        let doc = match self.free_docs.pop() {
            Some(slot) => slot,
            None => {
                self.docs.push(None);
                u32::try_from(self.docs.len() - 1).expect("fewer than 2^32 tools")
            }
        };
        let mut ids = Vec::with_capacity(counts.len());
        for (text, tfs) in counts {
            let id = self.term_id(text);
            let term = &mut self.terms[id as usize];
            term.df += 1;
            for (f, &tf) in tfs.iter().enumerate() {
                if tf > 0 {
                    term.postings.push(Posting {
                        doc,
                        field: f as u8,
                        tf,
                    });
                }
            }
            ids.push(id);
        }
        ids.sort_unstable();
        for (total, &len) in self.total_len.iter_mut().zip(&lens) {
            *total += u64::from(len);
        }
        self.docs[doc as usize] = Some(Doc {
            name: tool.name.as_str().into(),
            lens,
            terms: ids.into_boxed_slice(),
        });
        self.by_name.insert(tool.name.as_str().into(), doc);
        replaced
    }

    /// Removes the tool named `name`; returns whether it was indexed.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(doc) = self.by_name.remove(name) else {
            return false;
        };
        let Some(entry) = self.docs[doc as usize].take() else {
            return false;
        };
        for &id in entry.terms.iter() {
            let term = &mut self.terms[id as usize];
            term.postings.retain(|p| p.doc != doc);
            term.df -= 1;
            if term.df == 0 {
                let text = std::mem::take(&mut term.text);
                term.postings = Vec::new();
                self.lookup.remove(&text);
                self.free_terms.push(id);
            }
        }
        for (total, &len) in self.total_len.iter_mut().zip(&entry.lens) {
            *total -= u64::from(len);
        }
        self.free_docs.push(doc);
        true
    }

    fn term_id(&mut self, text: String) -> u32 {
        if let Some(&id) = self.lookup.get(text.as_str()) {
            return id;
        }
        let text: Box<str> = text.into();
        let id = match self.free_terms.pop() {
            Some(id) => {
                self.terms[id as usize].text = text.clone();
                id
            }
            None => {
                self.terms.push(Term {
                    text: text.clone(),
                    ..Term::default()
                });
                u32::try_from(self.terms.len() - 1).expect("fewer than 2^32 terms")
            }
        };
        self.lookup.insert(text, id);
        id
    }

    /// The distinct terms of `query` that the index holds, with their idf.
    pub(crate) fn query_terms(&self, query: &str) -> Vec<QueryTerm> {
        let n = self.len() as f32;
        let mut out: Vec<QueryTerm> = Vec::new();
        for_each_term_and_pair(query, |term| {
            if let Some(&id) = self.lookup.get(term.as_str())
                && !out.iter().any(|q| q.id == id)
            {
                let df = self.terms[id as usize].df as f32;
                let mut idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                if term.contains(PAIR_SEPARATOR) {
                    idf *= self.weights.pair;
                }
                out.push(QueryTerm { id, idf });
            }
        });
        out
    }

    /// BM25F scores of every tool that holds at least one of `terms`, as (slot, score).
    pub(crate) fn score(&self, terms: &[QueryTerm]) -> Vec<(u32, f32)> {
        let avg = self.average_lengths();
        let mut acc = vec![0.0f32; self.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        for q in terms {
            self.term_scores(q, &avg, |doc, score| {
                let slot = &mut acc[doc as usize];
                if *slot == 0.0 {
                    touched.push(doc);
                }
                *slot += score;
            });
        }
        touched
            .into_iter()
            .map(|doc| (doc, acc[doc as usize]))
            .filter(|&(_, s)| s > 0.0)
            .collect()
    }

    /// Average field lengths over the live tools (at least 1).
    pub(crate) fn average_lengths(&self) -> [f32; FIELD_COUNT] {
        let live = self.len().max(1) as f32;
        let mut avg = [1.0f32; FIELD_COUNT];
        for (a, &total) in avg.iter_mut().zip(&self.total_len) {
            *a = (total as f32 / live).max(1.0);
        }
        avg
    }

    /// Calls `f(slot, score)` with the BM25F score of `q` for every tool holding it.
    pub(crate) fn term_scores(
        &self,
        q: &QueryTerm,
        avg: &[f32; FIELD_COUNT],
        mut f: impl FnMut(u32, f32),
    ) {
        let w = &self.weights;
        let postings = &self.terms[q.id as usize].postings;
        let mut i = 0;
        while i < postings.len() {
            let doc = postings[i].doc;
            let Some(entry) = &self.docs[doc as usize] else {
                i += 1;
                continue;
            };
            let mut tf = 0.0f32;
            while i < postings.len() && postings[i].doc == doc {
                let p = postings[i];
                let field = usize::from(p.field);
                let norm =
                    1.0 - w.b[field] + w.b[field] * f32::from(entry.lens[field]) / avg[field];
                tf += w.weight[field] * f32::from(p.tf) / norm;
                i += 1;
            }
            if tf > 0.0 {
                f(doc, q.idf * tf / (w.k1 + tf));
            }
        }
    }

    /// The name of the tool in `slot`.
    pub(crate) fn name_of(&self, slot: u32) -> &str {
        self.docs[slot as usize]
            .as_ref()
            .map(|d| &*d.name)
            .unwrap_or_default()
    }

    pub(crate) fn slot_of(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// Which of `terms` the tool in `slot` holds, as their text.
    pub(crate) fn matched(&self, slot: u32, terms: &[QueryTerm]) -> Vec<String> {
        let Some(doc) = &self.docs[slot as usize] else {
            return Vec::new();
        };
        terms
            .iter()
            .filter(|q| doc.terms.binary_search(&q.id).is_ok())
            .map(|q| self.terms[q.id as usize].text.to_string())
            .collect()
    }

    /// The heap bytes the index holds: every vector's and map's capacity times its
    /// element size, and every string's bytes. Allocator overhead is not counted.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let map_entry = size_of::<(Box<str>, u32)>() + 1;
        let mut bytes = self.lookup.capacity() * map_entry + self.by_name.capacity() * map_entry;
        bytes += self.terms.capacity() * size_of::<Term>();
        for term in &self.terms {
            // The text is held twice: in the term and as the lookup key.
            bytes += 2 * term.text.len() + term.postings.capacity() * size_of::<Posting>();
        }
        bytes += self.free_terms.capacity() * 4 + self.free_docs.capacity() * 4;
        bytes += self.docs.capacity() * size_of::<Option<Doc>>();
        for doc in self.docs.iter().flatten() {
            // The name is held twice: in the doc and as the by-name key.
            bytes += 2 * doc.name.len() + doc.terms.len() * 4;
        }
        bytes
    }

    /// How many tool slots there are, live or free: one more than the highest slot.
    pub(crate) fn slots(&self) -> usize {
        self.docs.len()
    }

    /// Whether some tool holds `term`.
    pub(crate) fn knows(&self, term: &str) -> bool {
        self.lookup.contains_key(term)
    }

    /// How many distinct terms are indexed.
    pub fn term_count(&self) -> usize {
        self.lookup.len()
    }

    /// Which fields of the tool named `name` hold `term` (a term as [`super::tokenize`]
    /// makes it), for explaining a match.
    pub fn fields_holding(&self, name: &str, term: &str) -> Vec<Field> {
        let (Some(&doc), Some(&id)) = (self.by_name.get(name), self.lookup.get(term)) else {
            return Vec::new();
        };
        self.terms[id as usize]
            .postings
            .iter()
            .filter(|p| p.doc == doc)
            .map(|p| Field::ALL[p.field as usize])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::search::SearchRequest;
    use crate::{Effect, ToolSource, ToolUsage};

    fn tool(name: &str, description: &str) -> ToolDescriptor {
        ToolDescriptor::new(
            name,
            description,
            json!({"type": "object"}),
            Effect::Read,
            ToolSource::Builtin,
        )
    }

    fn names(index: &SearchIndex, query: &str) -> Vec<String> {
        index
            .search(&SearchRequest::new(query).k(10))
            .into_iter()
            .map(|h| h.name)
            .collect()
    }

    #[test]
    fn when_not_to_text_never_makes_a_tool_match() {
        let mut refund = tool("orders.refund", "Give money back for an order.");
        refund.usage = ToolUsage {
            when_to_use: Some("The customer asks for their money back.".into()),
            when_not_to: Some("Cancellations of a subscription: use billing.cancel.".into()),
            ..ToolUsage::default()
        };
        let index = SearchIndex::from_tools([&refund]);
        assert!(names(&index, "cancel subscription").is_empty());
        assert!(
            index
                .fields_holding("orders.refund", "subscript")
                .is_empty()
        );
        assert_eq!(names(&index, "customer money"), ["orders.refund"]);
    }

    #[test]
    fn every_searched_field_can_make_a_tool_match() {
        let mut t = tool("a.b", "Plain description.");
        t.title = Some("Glacier title".into());
        t.usage.when_to_use = Some("When a volcano erupts.".into());
        t.usage.example = Some("tsunami warnings".into());
        t.tags = vec!["seismology".into()];
        t.input_schema = json!({"type": "object", "properties": {
            "magnitudeScale": {"type": "string", "description": "Richter or moment.",
                "enum": ["lava"]},
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "depth_km": {"type": "number", "description": "Below the hypocenter."}}}}}});
        let index = SearchIndex::from_tools([&t]);
        for (query, field) in [
            ("glacier", Field::Title),
            ("volcano", Field::Usage),
            ("tsunami", Field::Usage),
            ("seismology", Field::Tags),
            ("magnitude", Field::ParamNames),
            ("richter", Field::ParamText),
            ("lava", Field::ParamText),
            ("hypocenter", Field::ParamText),
            ("depth", Field::ParamNames),
            ("plain", Field::Description),
        ] {
            assert_eq!(names(&index, query), ["a.b"], "{query}");
            let term = crate::search::tokenize(query).remove(0);
            assert_eq!(index.fields_holding("a.b", &term), [field], "{query}");
        }
    }

    #[test]
    fn a_word_in_the_name_outranks_the_same_word_in_a_parameter() {
        let mut by_param = tool("files.list", "List the files in a folder.");
        by_param.input_schema = json!({"type": "object", "properties": {
            "sort": {"type": "string", "description": "Sort by upload date."}}});
        let by_name = tool("files.upload", "Send a file to the folder.");
        let index = SearchIndex::from_tools([&by_param, &by_name]);
        assert_eq!(
            names(&index, "upload a file"),
            ["files.upload", "files.list"]
        );
    }

    #[test]
    fn adding_and_removing_tools_gives_the_index_a_fresh_build_would_have() {
        let tools: Vec<ToolDescriptor> = (0..40)
            .map(|i| {
                tool(
                    &format!("ns{}.tool_{i}", i % 3),
                    &format!("Does thing {i} with widgets and gadget {}", i % 7),
                )
            })
            .collect();
        let mut incremental = SearchIndex::new();
        for t in &tools {
            incremental.insert(t);
        }
        for t in tools.iter().step_by(3) {
            assert!(incremental.remove(&t.name));
        }
        let mut changed = tool("ns1.tool_1", "Now about sprockets and gadget 3");
        changed.tags = vec!["widgets".into()];
        assert!(incremental.insert(&changed));
        let mut kept: Vec<ToolDescriptor> = tools
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 3 != 0)
            .map(|(_, t)| t.clone())
            .collect();
        kept.retain(|t| t.name != changed.name);
        kept.push(changed);
        let fresh = SearchIndex::from_tools(&kept);
        assert_eq!(incremental.len(), fresh.len());
        assert_eq!(incremental.term_count(), fresh.term_count());
        for query in [
            "widgets",
            "gadget 3",
            "sprockets",
            "thing 12 widgets",
            "tool 4",
        ] {
            let a = incremental.search(&SearchRequest::new(query).k(50));
            let b = fresh.search(&SearchRequest::new(query).k(50));
            let view = |hits: &[crate::search::Hit]| {
                hits.iter()
                    .map(|h| {
                        (
                            h.name.clone(),
                            (h.score * 1e4).round() as i64,
                            h.matched.clone(),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(view(&a), view(&b), "{query}");
        }
    }

    #[test]
    fn removing_every_tool_leaves_an_empty_index() {
        let tools = [tool("a", "alpha beta"), tool("b", "beta gamma")];
        let mut index = SearchIndex::from_tools(&tools);
        assert!(!index.remove("c"));
        assert!(index.remove("a") && index.remove("b"));
        assert!(index.is_empty());
        assert_eq!(index.term_count(), 0);
        assert!(names(&index, "beta").is_empty());
        index.insert(&tools[1]);
        assert_eq!(names(&index, "gamma"), ["b"]);
    }
}
