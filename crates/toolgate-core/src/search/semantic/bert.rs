//! The BERT encoder (Devlin et al., 2019) of a sentence-embedding model, on
//! candle's tensors and layers: embeddings, then self-attention and feed-forward
//! blocks, each with a residual connection and layer norm, as Hugging Face's
//! `BertModel` computes them (inference only: no dropout, no pooler).
//!
//! Written here rather than taken from candle-transformers, whose BERT is one of
//! some 120 models compiled together: that crate alone added minutes to every
//! build of the feature, for one file's worth of code.

use candle_core::{DType, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, VarBuilder, embedding, layer_norm};

use super::dense::{Dense, Precision};
use serde::Deserialize;

/// The fields of a Hugging Face `config.json` that the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "two")]
    pub type_vocab_size: usize,
    #[serde(default = "layer_norm_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "gelu")]
    pub hidden_act: String,
}

fn two() -> usize {
    2
}

fn layer_norm_eps() -> f64 {
    1e-12
}

fn gelu() -> String {
    "gelu".into()
}

struct Layer {
    query: Dense,
    key: Dense,
    value: Dense,
    attention_out: Dense,
    attention_norm: LayerNorm,
    intermediate: Dense,
    output: Dense,
    output_norm: LayerNorm,
}

/// The encoder: token ids in, one vector per token out.
pub(crate) struct Bert {
    words: Embedding,
    positions: Embedding,
    types: Embedding,
    norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    head_size: usize,
    exact_gelu: bool,
}

impl Bert {
    /// Loads the weights under `vb` (with or without a `bert.` prefix).
    pub(crate) fn load(vb: VarBuilder, config: &BertConfig, precision: Precision) -> Result<Self> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let h = config.hidden_size;
        if config.num_attention_heads == 0 || !h.is_multiple_of(config.num_attention_heads) {
            candle_core::bail!(
                "hidden_size {h} is not a multiple of num_attention_heads {}",
                config.num_attention_heads
            );
        }
        let exact_gelu = match config.hidden_act.as_str() {
            "gelu" => true,
            "gelu_new" | "gelu_pytorch_tanh" => false,
            other => candle_core::bail!("hidden_act `{other}` is not supported (gelu is)"),
        };
        let eps = config.layer_norm_eps;
        let e = vb.pp("embeddings");
        let dense = |inputs, outputs, vb| Dense::load(inputs, outputs, vb, precision);
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let l = vb.pp(format!("encoder.layer.{i}"));
            let a = l.pp("attention");
            layers.push(Layer {
                query: dense(h, h, a.pp("self.query"))?,
                key: dense(h, h, a.pp("self.key"))?,
                value: dense(h, h, a.pp("self.value"))?,
                attention_out: dense(h, h, a.pp("output.dense"))?,
                attention_norm: layer_norm(h, eps, a.pp("output.LayerNorm"))?,
                intermediate: dense(h, config.intermediate_size, l.pp("intermediate.dense"))?,
                output: dense(config.intermediate_size, h, l.pp("output.dense"))?,
                output_norm: layer_norm(h, eps, l.pp("output.LayerNorm"))?,
            });
        }
        Ok(Bert {
            words: embedding(config.vocab_size, h, e.pp("word_embeddings"))?,
            positions: embedding(
                config.max_position_embeddings,
                h,
                e.pp("position_embeddings"),
            )?,
            types: embedding(config.type_vocab_size, h, e.pp("token_type_embeddings"))?,
            norm: layer_norm(h, eps, e.pp("LayerNorm"))?,
            layers,
            heads: config.num_attention_heads,
            head_size: h / config.num_attention_heads,
            exact_gelu,
        })
    }

    /// The last layer's vectors, `[batch, tokens, hidden]`, for `ids` `[batch,
    /// tokens]` (u32) whose padding `mask` (same shape, 1 for a real token) is 0.
    pub(crate) fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (batch, len) = ids.dims2()?;
        let positions = Tensor::arange(0u32, len as u32, ids.device())?;
        let types = ids.zeros_like()?;
        let x = self
            .words
            .forward(ids)?
            .broadcast_add(&self.positions.forward(&positions)?)?
            .add(&self.types.forward(&types)?)?;
        let mut x = self.norm.forward(&x)?;
        // 0 where a token may be attended to, a large negative number at padding.
        let bias = ((mask.to_dtype(DType::F32)? - 1.0)? * 1e9)?.reshape((batch, 1, 1, len))?;
        let scale = 1.0 / (self.head_size as f64).sqrt();
        for layer in &self.layers {
            let split = |t: Tensor| {
                t.reshape((batch, len, self.heads, self.head_size))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let q = split(layer.query.forward(&x)?)?;
            let k = split(layer.key.forward(&x)?)?;
            let v = split(layer.value.forward(&x)?)?;
            let scores = (q.matmul(&k.t()?.contiguous()?)? * scale)?.broadcast_add(&bias)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let context = probs.matmul(&v)?.transpose(1, 2)?.contiguous()?.reshape((
                batch,
                len,
                self.heads * self.head_size,
            ))?;
            let attended = layer
                .attention_norm
                .forward(&(layer.attention_out.forward(&context)? + &x)?)?;
            let inner = layer.intermediate.forward(&attended)?;
            let inner = if self.exact_gelu {
                inner.gelu_erf()?
            } else {
                inner.gelu()?
            };
            x = layer
                .output_norm
                .forward(&(layer.output.forward(&inner)? + &attended)?)?;
        }
        Ok(x)
    }
}
