//! Search by meaning (the `semantic` feature): a sentence-embedding model loaded
//! from a directory, the catalog's vectors kept up to date as tools come and go
//! and cached on disk, and the [`Scorer`](toolgate_core::search::Scorer) that
//! `search_tools` fuses with BM25F.
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolgate::semantic::SemanticIndex;
//! use toolgate::{Catalog, search::SearchTools};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let catalog = Catalog::new();
//! let semantic = SemanticIndex::open("models/all-MiniLM-L6-v2".as_ref(), Some(".toolgate/vectors".as_ref()))?;
//! let search = SearchTools::new(&catalog).with_scorer(Arc::new(semantic));
//! # Ok(()) }
//! ```

mod cache;
mod index;

use std::path::Path;

pub use cache::{CacheError, CacheKey, VectorCache, cache_key};
pub use index::SemanticIndex;
pub use toolgate_core::search::semantic::{
    DEFAULT_MAX_TOKENS, Embedder, EmbeddingScorer, ModelError, ModelFiles, Precision, Vectors,
};

/// A model directory that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SemanticError {
    /// A file of the model directory could not be read.
    #[error(
        "cannot read {file} in the model directory {dir}: {source}; the directory of a \
         sentence-embedding model holds config.json, tokenizer.json and model.safetensors"
    )]
    Read {
        /// The model directory, as given.
        dir: String,
        /// The file that could not be read (`config.json`, `tokenizer.json`, ...).
        file: &'static str,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The files were read but do not make a model toolgate can run.
    #[error("the model in {dir}: {source}")]
    Model {
        /// The model directory, as given.
        dir: String,
        /// What is wrong with the model.
        #[source]
        source: ModelError,
    },
    /// The model loaded, but its vector cache cannot be used.
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// Loads the sentence-embedding model in `dir`: `config.json`, `tokenizer.json`,
/// `model.safetensors`, and the window from `sentence_bert_config.json`
/// (`max_seq_length`) when there is one; its dense layers quantized to 8 bits
/// ([`Precision::Int8`]).
pub fn load_model(dir: &Path) -> Result<Embedder, SemanticError> {
    load_model_at(dir, Precision::default())
}

/// [`load_model`] with the dense layers held at `precision`.
pub fn load_model_at(dir: &Path, precision: Precision) -> Result<Embedder, SemanticError> {
    let shown = dir.display().to_string();
    let read = |file: &'static str| {
        std::fs::read(dir.join(file)).map_err(|source| SemanticError::Read {
            dir: shown.clone(),
            file,
            source,
        })
    };
    let config = String::from_utf8_lossy(&read("config.json")?).into_owned();
    let tokenizer = read("tokenizer.json")?;
    let weights = read("model.safetensors")?;
    let max_tokens = std::fs::read(dir.join("sentence_bert_config.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("max_seq_length")?.as_u64())
        .map(|n| n as usize);
    Embedder::new(ModelFiles {
        config,
        tokenizer,
        weights,
        max_tokens,
        precision,
    })
    .map_err(|source| SemanticError::Model { dir: shown, source })
}
