//! A BERT sentence-embedding model run in process: the tokenizer, the encoder
//! ([`Bert`], on candle), mean pooling over the tokens and L2 normalisation, as
//! sentence-transformers computes all-MiniLM-L6-v2's vectors.
//!
//! The model is built from its files' bytes; reading them is the runtime's job
//! (`toolgate::semantic::load_model`), since this crate does no I/O.

use super::bert::{Bert, BertConfig};
use super::dense::Precision;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use sha2::{Digest, Sha256};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// The window sentence-transformers gives all-MiniLM-L6-v2 (`max_seq_length`), used
/// when the model directory does not say.
pub const DEFAULT_MAX_TOKENS: usize = 256;

/// How many texts one forward pass embeds when indexing.
const BATCH: usize = 16;

/// A model that cannot be loaded or run: which file or step, and what went wrong.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// `config.json` does not describe a BERT model (the parser's words).
    #[error("the model's config.json is not a BERT configuration: {0}")]
    Config(String),
    /// `tokenizer.json` cannot be read as a tokenizer (the tokenizer's words).
    #[error("the model's tokenizer.json cannot be read: {0}")]
    Tokenizer(String),
    #[error(
        "the model's weights (model.safetensors) do not fit its config.json: {0}; \
         give the directory of a BERT sentence-embedding model such as all-MiniLM-L6-v2"
    )]
    /// `model.safetensors` cannot be read, or does not fit the configuration (a
    /// tensor missing or of the wrong shape).
    Weights(String),
    /// Embedding a text failed (tokenizing it or the forward pass).
    #[error("the model failed on a text: {0}")]
    Run(String),
}

/// The files of a model, read: what [`Embedder::new`] builds from.
pub struct ModelFiles {
    /// `config.json`.
    pub config: String,
    /// `tokenizer.json`.
    pub tokenizer: Vec<u8>,
    /// `model.safetensors`.
    pub weights: Vec<u8>,
    /// The longest input in tokens (sentence-transformers' `max_seq_length`).
    pub max_tokens: Option<usize>,
    /// How the dense layers hold their weights.
    pub precision: Precision,
}

/// A sentence-embedding model: texts in, unit vectors out.
pub struct Embedder {
    model: Bert,
    tokenizer: Tokenizer,
    dimension: usize,
    max_tokens: usize,
    id: String,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("dimension", &self.dimension)
            .field("max_tokens", &self.max_tokens)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Builds the model from its files.
    pub fn new(files: ModelFiles) -> Result<Self, ModelError> {
        let mut hasher = Sha256::new();
        for part in [files.config.as_bytes(), &files.tokenizer, &files.weights] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        // The same files at another precision make other vectors.
        if files.precision != Precision::Full {
            hasher.update(format!("{:?}", files.precision));
        }
        let id = format!("{:x}", hasher.finalize());
        let config: BertConfig =
            serde_json::from_str(&files.config).map_err(|e| ModelError::Config(e.to_string()))?;
        let window = files.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let max_tokens = window.min(config.max_position_embeddings).max(2);
        let mut tokenizer = Tokenizer::from_bytes(&files.tokenizer)
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        let pad = tokenizer.get_padding().cloned().unwrap_or_default();
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_to_multiple_of: None,
            ..pad
        }));
        let weights =
            VarBuilder::from_buffered_safetensors(files.weights, DType::F32, &Device::Cpu)
                .map_err(|e| ModelError::Weights(e.to_string()))?;
        let model = Bert::load(weights, &config, files.precision)
            .map_err(|e| ModelError::Weights(e.to_string()))?;
        Ok(Embedder {
            model,
            tokenizer,
            dimension: config.hidden_size,
            max_tokens,
            id,
        })
    }

    /// The length of every vector.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The longest input, in tokens; the rest of a text is not read.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// A digest of the model's files: vectors made by another model never mix.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The unit vector of one text.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, ModelError> {
        Ok(self.embed_batch(&[text])?.remove(0))
    }

    /// The unit vectors of `texts`, in order. Texts of like length are run together,
    /// so little of each pass is padding.
    pub fn embed_all(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            for (&i, vector) in chunk.iter().zip(self.embed_batch(&batch)?) {
                out[i] = vector;
            }
        }
        Ok(out)
    }

    /// One forward pass over `texts`, padded to the longest.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        let run = |e: &dyn std::fmt::Display| ModelError::Run(e.to_string());
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| run(&e))?;
        let rows = encodings.len();
        let len = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(rows * len);
        let mut mask = Vec::with_capacity(rows * len);
        for encoding in &encodings {
            ids.extend_from_slice(encoding.get_ids());
            mask.extend_from_slice(encoding.get_attention_mask());
        }
        let device = Device::Cpu;
        let tensors = || -> candle_core::Result<Vec<Vec<f32>>> {
            let ids = Tensor::from_vec(ids, (rows, len), &device)?;
            let mask = Tensor::from_vec(mask, (rows, len), &device)?;
            let hidden = self.model.forward(&ids, &mask)?;
            // Mean over the real tokens (not the padding), then unit length.
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
            let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
            let mean = summed.broadcast_div(&counts)?;
            let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
            mean.broadcast_div(&norms)?.to_vec2::<f32>()
        };
        tensors().map_err(|e| run(&e))
    }
}
