//! Tool search: the few tools that fit a request, out of thousands.
//!
//! A [`SearchIndex`] holds the catalog's descriptors as an inverted index and ranks
//! them with BM25F over weighted fields ([`Field`], [`FieldWeights`]): the name
//! split into words, title, description, usage guidance (`when_to_use`,
//! `example`), tags, and parameter names and descriptions. `when_not_to` is never
//! searched. The index changes one tool at a time ([`SearchIndex::insert`],
//! [`SearchIndex::remove`]), so an MCP server's list changing costs only that
//! server's tools.
//!
//! A [`SearchRequest`] says how many hits to return, which tools to leave out (a
//! caller's [`Filter`]: not permitted, blocked by the flow, quarantined, breaker
//! open), whether to return those anyway, marked, for operators, and an optional
//! [`Scorer`] whose ranking is fused with the lexical one. Each [`Hit`] carries its
//! score and the query terms it matched.
//!
//! On top of the index: the built-in `search_tools` tool's descriptor and result
//! ([`search_tools_descriptor`], [`found_tools`]), a session's list of tools when
//! tools are loaded on demand ([`ListedTools`]), and measurement ([`eval`]).
//!
//! A request that asks for several things ("get the weather in Paris, then convert
//! 30 USD to EUR") is split into its parts at sentence ends and words like `then`
//! and `also`; each part is searched too, and the first hits make room for every
//! part's best tool, so one part's near-duplicates cannot fill them all. A tool
//! named outright in a request (`sort_list`, `math.gcd`) ranks at the top.
//!
//! Limits: matching is lexical. A query must share a word (after
//! [`tokenize`]'s splitting and light stemming) with a tool to find it; synonyms
//! and paraphrase need a [`Scorer`].

mod builtin;
mod clauses;
mod embed_text;
pub mod eval;
mod fields;
mod fusion;
mod index;
mod listed;
mod query;
#[cfg(feature = "semantic")]
pub mod semantic;
mod tokenize;

pub use builtin::{
    MAX_SEARCH_K, SEARCH_TOOLS, SearchToolsInput, found_tool_names, found_tools,
    search_tools_descriptor,
};
pub use embed_text::embedding_text;
pub use fields::{FIELD_COUNT, Field, FieldWeights};
pub use fusion::{DEFAULT_LEXICAL_WEIGHT, Fusion, RRF_K, Scorer};
pub use index::SearchIndex;
pub use listed::ListedTools;
pub use query::{Exclusion, Filter, Hit, SearchRequest};
pub use tokenize::{is_stop_word, stem, tokenize};

/// An index of read-only tools given by name and description, for tests.
#[cfg(test)]
pub(crate) fn index_of(tools: &[(&str, &str)]) -> SearchIndex {
    let tools: Vec<crate::ToolDescriptor> = tools
        .iter()
        .map(|(name, description)| {
            crate::ToolDescriptor::new(
                *name,
                *description,
                serde_json::json!({"type": "object"}),
                crate::Effect::Read,
                crate::ToolSource::Builtin,
            )
        })
        .collect();
    SearchIndex::from_tools(&tools)
}
