//! The `search:` section: how `search_tools`, `toolgate search` and `serve --search`
//! rank tools beyond words: a sentence-embedding model whose similarities are
//! fused with BM25F (the `semantic` feature).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Search by meaning as well as by words.
///
/// ```yaml
/// search:
///   model: models/all-MiniLM-L6-v2   # config.json, tokenizer.json, model.safetensors
///   cache: .toolgate/vectors         # tools' vectors, re-embedded only when they change
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchSection {
    /// The directory of a BERT sentence-embedding model (such as all-MiniLM-L6-v2):
    /// `config.json`, `tokenizer.json` and `model.safetensors`. Relative to the spec
    /// file. Without it, search is lexical only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Where the tools' vectors are kept between runs, keyed by the embedded text
    /// and the model (default: `vectors/` in the state directory). Relative to the
    /// spec file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<String>,
}

impl SearchSection {
    /// True for a section that says nothing.
    pub fn is_default(&self) -> bool {
        self == &SearchSection::default()
    }
}
