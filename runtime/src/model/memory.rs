//! The memory a model needs, planned from its manifest alone: before a byte of its
//! weights is downloaded or read. The page shows it in the catalog and refuses a model
//! that cannot fit; the CLI prints it (`slm inspect`). One owner for the estimate, so
//! the figure the catalog shows is the figure the worker checks.
//!
//! What a loaded model holds, by part (every count is from the manifest):
//! - `weights`: every tensor as stored. Block tensors keep their bytes; f32 tensors are
//!   decoded into an f32 buffer of the same size.
//! - `transient`: while an f32 matrix is decoded, its stored bytes and its f32 buffer
//!   exist at once. One at a time, so the largest f32 tensor counts once.
//! - `kv_per_position`: f32 keys and values, every layer and KV head (`KvCache`).
//! - `scratch`: the forward-pass buffers (`Scratch`, sized for a full prefill batch)
//!   plus the sampler's vocabulary-sized working set; `scratch_per_position` is the
//!   attention-score row that grows with the context.
//! - `text`: the manifest (which carries the tokenizer graph and template as text) and
//!   the tokenizer built from it, at `TOKENIZER_EXPANSION` times its JSON size. The
//!   build itself peaks higher (about 20×: `tokenizers` buffers the model section as a
//!   parse tree), which is why the worker builds the text side before reading any
//!   weight (`Engine::with_text`): the weights then reuse that memory.

use serde::{Deserialize, Serialize};

use crate::format::manifest::Manifest;
use crate::model::config::ModelConfig;
use crate::quant::DType;

/// The wasm32 address space: no wasm32 memory grows past 4 GiB.
pub const WASM32_LIMIT: u64 = 4 << 30;

/// Memory a built `tokenizers` tokenizer keeps per byte of its tokenizer.json (vocab
/// and merges as hash maps and strings), with what of its build peak the weights do
/// not reuse. Fitted to the worker's wasm memory after loading in Chromium (file
/// picker, context 2048), less weights, KV cache and scratch: 12.0 MB for SmolLM2's
/// 1.56 MB of JSON (7.7×), 45.5 MB for Qwen2.5's 5.37 MB (8.5×).
pub const TOKENIZER_EXPANSION: u64 = 8;

/// Prefill batch the scratch buffers are sized for (`model::PREFILL_BATCH`).
const BATCH: u64 = super::PREFILL_BATCH as u64;

/// Vocabulary-sized f32 rows of a step: the logits (`Scratch`), and the sampler's
/// candidates (an id and a value each) and probabilities.
const VOCAB_ROWS: u64 = 4;

/// The forward pass's buffers for `c`, in bytes: (KV cache per position, scratch at a
/// full prefill batch, scratch per position). What `KvCache::new` and `Scratch::new`
/// allocate (a test below holds them together).
fn buffers(c: &ModelConfig) -> (u64, u64, u64) {
    let n = |x: usize| x as u64;
    let kv_per_position = 2 * n(c.num_layers) * n(c.num_kv_heads) * n(c.head_dim) * 4;
    let per_token = 2 * n(c.hidden_size)
        + 2 * n(c.q_dim())
        + 2 * n(c.kv_dim())
        + 2 * n(c.intermediate_size)
        + n(c.head_dim);
    let scratch = 4 * (BATCH * per_token + VOCAB_ROWS * n(c.vocab_size));
    let scratch_per_position = 4 * n(c.num_heads / c.num_kv_heads.max(1));
    (kv_per_position, scratch, scratch_per_position)
}

/// The parts of a model's memory that depend only on its manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryNeeds {
    pub weights: u64,
    pub transient: u64,
    pub kv_per_position: u64,
    pub scratch: u64,
    pub scratch_per_position: u64,
    pub text: u64,
    /// The model's own context length: the largest context a plan may ask for.
    pub max_context: u64,
}

/// A plan at one context size, in bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryPlan {
    pub context: u64,
    pub weights: u64,
    pub kv: u64,
    /// Scratch, transient load buffers and the text side.
    pub other: u64,
    pub total: u64,
}

impl MemoryNeeds {
    pub fn of(m: &Manifest) -> MemoryNeeds {
        let c = &m.model;
        let n = |x: usize| x as u64;
        let weights = m.weight_bytes();
        let transient = m
            .tensors
            .iter()
            .filter(|t| t.dtype == DType::F32)
            .map(|t| t.length)
            .max()
            .unwrap_or(0);
        let (kv_per_position, scratch, scratch_per_position) = buffers(c);
        let tj = n(m.tokenizer.tokenizer_json.len());
        let template = m.tokenizer.chat_template.as_ref().map_or(0, |t| n(t.len()));
        let text = tj * TOKENIZER_EXPANSION + tj + template;
        MemoryNeeds {
            weights,
            transient,
            kv_per_position,
            scratch,
            scratch_per_position,
            text,
            max_context: n(c.max_position_embeddings),
        }
    }

    /// The plan at `context` positions (clamped to the model's own length, as a
    /// session clamps its capacity).
    pub fn at(&self, context: u64) -> MemoryPlan {
        let context = context.clamp(1, self.max_context.max(1));
        let kv = self.kv_per_position.saturating_mul(context);
        let other = self
            .scratch
            .saturating_add(self.scratch_per_position.saturating_mul(context))
            .saturating_add(self.transient)
            .saturating_add(self.text);
        MemoryPlan {
            context,
            weights: self.weights,
            kv,
            other,
            total: self.weights.saturating_add(kv).saturating_add(other),
        }
    }
}

impl MemoryPlan {
    /// Why this plan cannot run within `limit` bytes (named `what`), or None.
    pub fn refusal(&self, limit: u64, what: &str) -> Option<String> {
        (self.total > limit).then(|| {
            format!(
                "needs {} (weights {}, KV cache {} at {} positions, buffers {}), more than {} ({what})",
                mb(self.total),
                mb(self.weights),
                mb(self.kv),
                self.context,
                mb(self.other),
                mb(limit),
            )
        })
    }
}

/// Bytes as MB with one decimal, as the page shows sizes.
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs() -> MemoryNeeds {
        MemoryNeeds {
            weights: 1000,
            transient: 10,
            kv_per_position: 8,
            scratch: 100,
            scratch_per_position: 2,
            text: 50,
            max_context: 64,
        }
    }

    /// The plan's buffers are what the KV cache and the scratch really allocate (plus
    /// the sampler's rows), so that neither can change without the plan.
    #[test]
    fn the_plan_counts_what_kv_cache_and_scratch_allocate() {
        use crate::model::config::Architecture;
        use crate::model::kv_cache::KvCache;
        use crate::model::Scratch;
        let c = ModelConfig {
            architecture: Architecture::Qwen2,
            vocab_size: 1000,
            hidden_size: 64,
            intermediate_size: 176,
            num_layers: 3,
            num_heads: 8,
            num_kv_heads: 2,
            head_dim: 8,
            max_position_embeddings: 4096,
            rms_norm_eps: 1e-6,
            rope_theta: 1e6,
            rope_scaling: None,
            tie_word_embeddings: true,
            attention_bias: true,
        };
        let (kv, scratch, per_position) = buffers(&c);
        let cap = 300;
        let cache = KvCache::new(c.num_layers, cap, c.num_kv_heads, c.head_dim);
        assert_eq!(cache.bytes() as u64, kv * cap as u64);
        let s = Scratch::new(&c, cap);
        let floats = [
            &s.x, &s.xn, &s.q, &s.k, &s.v, &s.att, &s.gate, &s.up, &s.cos, &s.sin, &s.scores,
        ]
        .iter()
        .map(|l| l.len())
        .sum::<usize>()
            + s.logits.len();
        let sampler = (VOCAB_ROWS - 1) * 4 * c.vocab_size as u64;
        assert_eq!(
            scratch + per_position * cap as u64,
            4 * floats as u64 + sampler
        );
    }

    #[test]
    fn a_plan_adds_kv_and_scores_per_position() {
        let p = needs().at(10);
        assert_eq!((p.kv, p.other, p.total), (80, 100 + 20 + 10 + 50, 1260));
    }

    #[test]
    fn the_context_is_clamped_to_the_models_length() {
        assert_eq!(needs().at(1 << 20).context, 64);
        assert_eq!(needs().at(0).context, 1);
    }

    #[test]
    fn a_refusal_names_every_part() {
        let p = needs().at(64);
        assert_eq!(p.refusal(p.total, "x"), None);
        let why = p.refusal(1000, "the limit").unwrap();
        assert!(
            why.contains("KV cache") && why.contains("64 positions"),
            "{why}"
        );
        assert!(why.contains("(the limit)"), "{why}");
    }
}
