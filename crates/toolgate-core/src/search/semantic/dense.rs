//! A fully connected layer whose weights are kept either as loaded (f32) or
//! quantized to 8 bits ([`Precision::Int8`]: GGML's Q8_0, one scale per 32
//! weights).
//!
//! A query is a few tokens, so each layer's product reads every weight for a
//! handful of rows. Eight-bit weights are a quarter of the bytes, and on a CPU
//! with VNNI (integer dot products) candle multiplies them in tiles, several
//! times faster than its f32 product. Those tiles take rows of a multiple of
//! 256 inputs, so a layer with fewer (BERT's 384) is padded with zero weights
//! and its input with zeros, which adds nothing to any output. Without VNNI,
//! candle's other 8-bit kernel is slower than f32 on longer texts, so
//! [`Precision::for_this_cpu`] keeps f32 there.
//!
//! The 8-bit product costs about the same per token at any length, while f32's
//! gets cheaper as a pass grows (measured with all-MiniLM-L6-v2 on one core:
//! 0.39 against 0.91 ms a token for 11 tokens, 0.46 against 0.76 for 28, 0.46
//! against 0.40 for 256). So an 8-bit layer keeps its f32 weights too, and a
//! pass of more than `INT8_MAX_ROWS` tokens uses them.

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{D, Module, Result, Tensor};
use candle_nn::{Linear, VarBuilder};

/// How a model's dense layers hold their weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// As the model's files have them: f32, exact.
    Full,
    /// Quantized to 8 bits at load, for passes of up to 160 tokens (a
    /// query's); their vectors are a little off the exact ones
    /// (cosine above 0.99 to them).
    Int8,
}

impl Precision {
    /// 8 bits where the CPU has VNNI (AVX-512 or AVX), else f32.
    pub fn for_this_cpu() -> Self {
        #[cfg(target_arch = "x86_64")]
        if (is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vnni"))
            || (is_x86_feature_detected!("avxvnni") && is_x86_feature_detected!("avx2"))
        {
            return Precision::Int8;
        }
        Precision::Full
    }
}

impl Default for Precision {
    fn default() -> Self {
        Self::for_this_cpu()
    }
}

/// The row length candle's tiled 8-bit product takes a multiple of.
const TILE_INPUTS: usize = 256;

/// The most tokens (over every text of a pass) that the 8-bit weights take;
/// a longer pass runs on the f32 ones, which are faster there.
const INT8_MAX_ROWS: usize = 160;

pub(crate) struct Dense {
    full: Linear,
    int8: Option<Int8>,
}

struct Int8 {
    weight: QMatMul,
    /// Zero inputs added to each row to reach a multiple of [`TILE_INPUTS`].
    padding: usize,
}

impl Dense {
    /// The layer `inputs → outputs` under `vb` (`weight`, `bias`), held at `precision`.
    pub(crate) fn load(
        inputs: usize,
        outputs: usize,
        vb: VarBuilder,
        precision: Precision,
    ) -> Result<Self> {
        let full = candle_nn::linear(inputs, outputs, vb)?;
        let int8 = match precision {
            Precision::Full => None,
            Precision::Int8 => {
                let padding = inputs.next_multiple_of(TILE_INPUTS) - inputs;
                let weight = full.weight().pad_with_zeros(1, 0, padding)?;
                let weight = QMatMul::from_qtensor(QTensor::quantize(&weight, GgmlDType::Q8_0)?)?;
                Some(Int8 { weight, padding })
            }
        };
        Ok(Dense { full, int8 })
    }
}

impl Module for Dense {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let rows = x.elem_count() / x.dim(D::Minus1)?.max(1);
        let (Some(int8), Some(bias)) = (&self.int8, self.full.bias()) else {
            return self.full.forward(x);
        };
        if rows > INT8_MAX_ROWS {
            return self.full.forward(x);
        }
        let x = match int8.padding {
            0 => x.contiguous()?,
            n => x.pad_with_zeros(D::Minus1, 0, n)?,
        };
        int8.weight.forward(&x)?.broadcast_add(bias)
    }
}
