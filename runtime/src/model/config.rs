//! The runtime's model configuration: one type, stored verbatim in the `.slm` manifest.
//! Importers fill it from HF `config.json` (via [`HfConfig`], a serde mirror of that
//! file) or from GGUF metadata, and refuse every field the forward pass does not
//! implement, naming the field and its value.

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
        if self.num_heads == 0 || self.num_kv_heads == 0 || self.num_heads % self.num_kv_heads != 0
        {
            return bad(
                "num_key_value_heads",
                self.num_kv_heads,
                "must divide num_attention_heads",
            );
        }
        if self.head_dim == 0 || self.head_dim % 2 != 0 || self.head_dim > 1024 {
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

/// Serde mirror of the fields of HF `config.json` that matter to us. Unknown fields are
/// collected in `rest` so that the importer can refuse the ones that change the math.
#[derive(Debug, Deserialize)]
pub struct HfConfig {
    #[serde(default)]
    pub architectures: Vec<String>,
    pub model_type: Option<String>,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: Option<usize>,
    pub head_dim: Option<usize>,
    pub max_position_embeddings: usize,
    pub rms_norm_eps: f64,
    #[serde(default = "default_theta")]
    pub rope_theta: f64,
    pub rope_scaling: Option<serde_json::Value>,
    #[serde(default)]
    pub tie_word_embeddings: bool,
    #[serde(default)]
    pub attention_bias: bool,
    #[serde(default)]
    pub mlp_bias: bool,
    pub hidden_act: Option<String>,
    pub use_sliding_window: Option<bool>,
    pub sliding_window: Option<serde_json::Value>,
    pub max_window_layers: Option<usize>,
    pub pretraining_tp: Option<usize>,
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

fn default_theta() -> f64 {
    10000.0
}

impl HfConfig {
    pub fn to_runtime(&self) -> Result<ModelConfig> {
        let arch = match self.architectures.as_slice() {
            [a] if a == "LlamaForCausalLM" => Architecture::Llama,
            [a] if a == "Qwen2ForCausalLM" => Architecture::Qwen2,
            other => {
                return Err(SlmError::unsupported(
                    "architectures",
                    format!("{other:?}"),
                    "supported: LlamaForCausalLM, Qwen2ForCausalLM",
                ))
            }
        };
        if let Some(act) = &self.hidden_act {
            if act != "silu" {
                return Err(SlmError::unsupported(
                    "hidden_act",
                    act,
                    "only silu (SwiGLU) is implemented",
                ));
            }
        }
        if self.mlp_bias {
            return Err(SlmError::unsupported(
                "mlp_bias",
                true,
                "MLP biases are not implemented",
            ));
        }
        if let Some(tp) = self.pretraining_tp {
            if tp != 1 {
                return Err(SlmError::unsupported(
                    "pretraining_tp",
                    tp,
                    "only 1 is supported",
                ));
            }
        }
        if self.use_sliding_window == Some(true) {
            return Err(SlmError::unsupported(
                "use_sliding_window",
                true,
                "sliding-window attention is not implemented",
            ));
        }
        if arch == Architecture::Llama {
            if let Some(w) = self.sliding_window.as_ref().filter(|w| !w.is_null()) {
                return Err(SlmError::unsupported(
                    "sliding_window",
                    w,
                    "sliding-window attention is not implemented",
                ));
            }
        }
        let rope_scaling = match &self.rope_scaling {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => Some(parse_rope_scaling(v)?),
        };
        let heads = self.num_attention_heads;
        let head_dim = self.head_dim.unwrap_or(if heads > 0 {
            self.hidden_size / heads
        } else {
            0
        });
        let cfg = ModelConfig {
            architecture: arch,
            vocab_size: self.vocab_size,
            hidden_size: self.hidden_size,
            intermediate_size: self.intermediate_size,
            num_layers: self.num_hidden_layers,
            num_heads: heads,
            num_kv_heads: self.num_key_value_heads.unwrap_or(heads),
            head_dim,
            max_position_embeddings: self.max_position_embeddings,
            rms_norm_eps: self.rms_norm_eps,
            rope_theta: self.rope_theta,
            rope_scaling,
            tie_word_embeddings: self.tie_word_embeddings,
            // Qwen2 always has Q/K/V biases; Llama only when attention_bias says so.
            attention_bias: arch == Architecture::Qwen2 || self.attention_bias,
        };
        if arch == Architecture::Llama && self.attention_bias {
            return Err(SlmError::unsupported(
                "attention_bias",
                true,
                "Llama attention biases (which also bias o_proj) are not implemented",
            ));
        }
        cfg.validate()?;
        Ok(cfg)
    }
}

pub fn parse_rope_scaling(v: &serde_json::Value) -> Result<Llama3RopeScaling> {
    let ty = v
        .get("rope_type")
        .or_else(|| v.get("type"))
        .and_then(|t| t.as_str())
        .unwrap_or("<missing>");
    if ty != "llama3" {
        return Err(SlmError::unsupported(
            "rope_scaling.rope_type",
            ty,
            "only \"llama3\" is implemented",
        ));
    }
    let num = |k: &str| {
        v.get(k).and_then(|x| x.as_f64()).ok_or_else(|| {
            SlmError::unsupported(
                format!("rope_scaling.{k}"),
                "<missing>",
                "required for llama3 scaling",
            )
        })
    };
    let s = Llama3RopeScaling {
        factor: num("factor")?,
        low_freq_factor: num("low_freq_factor")?,
        high_freq_factor: num("high_freq_factor")?,
        original_max_position_embeddings: num("original_max_position_embeddings")? as u64,
    };
    if !(s.factor > 0.0 && s.high_freq_factor > s.low_freq_factor && s.low_freq_factor > 0.0) {
        return Err(SlmError::unsupported(
            "rope_scaling",
            v,
            "inconsistent llama3 factors",
        ));
    }
    Ok(s)
}
