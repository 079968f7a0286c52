//! The runtime's model configuration: one type, stored verbatim in the `.slm` manifest.
//! Importers fill it from HF `config.json` (`import::hf_config`, which gives every key
//! of the file a fate) or from GGUF metadata (`import::gguf_model`), and refuse every
//! field the forward pass does not implement, naming the field and its value.

use serde::{Deserialize, Serialize};

use crate::error::{Result, SlmError};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Architecture {
    /// `LlamaForCausalLM` / GGUF `llama`.
    Llama,
    /// `Qwen2ForCausalLM` / GGUF `qwen2` (Q/K/V projections carry biases).
    Qwen2,
}

/// Llama 3.1-style frequency-dependent RoPE scaling (`rope_scaling.rope_type = "llama3"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Llama3RopeScaling {
    pub factor: f64,
    pub low_freq_factor: f64,
    pub high_freq_factor: f64,
    pub original_max_position_embeddings: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    pub architecture: Architecture,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    /// Context length the model was trained for; the runtime's context capacity.
    pub max_position_embeddings: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub rope_scaling: Option<Llama3RopeScaling>,
    /// The LM head reuses `model.embed_tokens.weight`.
    pub tie_word_embeddings: bool,
    /// Q, K and V projections have biases (Qwen2); O never does in supported models.
    pub attention_bias: bool,
}

impl ModelConfig {
    /// Internal consistency checks shared by every importer and the `.slm` reader.
    pub fn validate(&self) -> Result<()> {
        let bad = |f: &str, v: usize, why: &str| Err(SlmError::unsupported(f, v, why));
        if self.num_heads == 0
            || self.num_kv_heads == 0
            || !self.num_heads.is_multiple_of(self.num_kv_heads)
        {
            return bad(
                "num_key_value_heads",
                self.num_kv_heads,
                "must divide num_attention_heads",
            );
        }
        if self.head_dim == 0 || !self.head_dim.is_multiple_of(2) || self.head_dim > 1024 {
            return bad("head_dim", self.head_dim, "must be even and at most 1024");
        }
        for (f, v) in [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_hidden_layers", self.num_layers),
            ("max_position_embeddings", self.max_position_embeddings),
        ] {
            if v == 0 || v > 1 << 24 {
                return bad(f, v, "out of range");
            }
        }
        // Sizes that scratch buffers and the KV cache are allocated by, before any weight
        // is read: bounded, and their products computed without wrapping (wasm32's
        // usize is 32 bits).
        for (f, v, max) in [
            ("num_hidden_layers", self.num_layers, 4096),
            ("num_attention_heads", self.num_heads, 4096),
            ("hidden_size", self.hidden_size, 1 << 20),
            ("intermediate_size", self.intermediate_size, 1 << 20),
        ] {
            if v > max {
                return bad(f, v, &format!("out of range (at most {max})"));
            }
        }
        if self
            .num_heads
            .checked_mul(self.head_dim)
            .is_none_or(|q| q > 1 << 20)
        {
            return bad(
                "num_attention_heads",
                self.num_heads,
                "times head_dim is over 2^20",
            );
        }
        if let Some(s) = &self.rope_scaling {
            let ok = s.factor > 0.0
                && s.factor.is_finite()
                && s.low_freq_factor > 0.0
                && s.high_freq_factor > s.low_freq_factor
                && s.high_freq_factor.is_finite()
                && s.original_max_position_embeddings >= 1;
            if !ok {
                return Err(SlmError::unsupported(
                    "rope_scaling",
                    format!("{s:?}"),
                    "inconsistent llama3 factors",
                ));
            }
        }
        if !(self.rms_norm_eps > 0.0 && self.rms_norm_eps < 1.0) {
            return Err(SlmError::unsupported(
                "rms_norm_eps",
                self.rms_norm_eps,
                "out of range",
            ));
        }
        if !(self.rope_theta > 0.0 && self.rope_theta.is_finite()) {
            return Err(SlmError::unsupported(
                "rope_theta",
                self.rope_theta,
                "out of range",
            ));
        }
        Ok(())
    }

    pub fn q_dim(&self) -> usize {
        self.num_heads * self.head_dim
    }
    pub fn kv_dim(&self) -> usize {
        self.num_kv_heads * self.head_dim
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> ModelConfig {
        ModelConfig {
            architecture: Architecture::Llama,
            vocab_size: 100,
            hidden_size: 64,
            intermediate_size: 128,
            num_layers: 2,
            num_heads: 4,
            num_kv_heads: 2,
            head_dim: 16,
            max_position_embeddings: 2048,
            rms_norm_eps: 1e-5,
            rope_theta: 1e4,
            rope_scaling: None,
            tie_word_embeddings: true,
            attention_bias: false,
        }
    }

    /// What a `.slm` manifest states is checked on open too, not only on convert.
    #[test]
    fn hostile_sizes_and_rope_factors_are_refused_by_name() {
        base().validate().unwrap();
        let zeros = Llama3RopeScaling {
            factor: 0.0,
            low_freq_factor: 0.0,
            high_freq_factor: 0.0,
            original_max_position_embeddings: 0,
        };
        for (c, want) in [
            (
                ModelConfig {
                    num_layers: 1 << 24,
                    ..base()
                },
                "num_hidden_layers",
            ),
            (
                ModelConfig {
                    num_heads: 4096,
                    num_kv_heads: 4096,
                    head_dim: 1024,
                    ..base()
                },
                "times head_dim",
            ),
            (
                ModelConfig {
                    intermediate_size: 1 << 22,
                    ..base()
                },
                "intermediate_size",
            ),
            (
                ModelConfig {
                    rope_scaling: Some(zeros),
                    ..base()
                },
                "rope_scaling",
            ),
        ] {
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
    }
}
