//! Search by meaning (the `semantic` feature): a sentence-embedding model run in
//! process (a BERT encoder on candle, pure Rust), each tool's [`embedding_text`] embedded
//! once, and an [`EmbeddingScorer`] that ranks tools by cosine similarity to the
//! query. Fused with BM25F it finds tools a query shares no word with ("give the
//! customer their money back" → `refund_order`); on its own it ranks worse than
//! BM25F, so it is a [`Scorer`](super::Scorer), not a replacement.
//!
//! [`embedding_text`]: super::embedding_text

mod bert;
mod dense;
mod model;
mod vectors;

pub use dense::Precision;
pub use model::{DEFAULT_MAX_TOKENS, Embedder, ModelError, ModelFiles};
pub use vectors::{EmbeddingScorer, Vectors};
