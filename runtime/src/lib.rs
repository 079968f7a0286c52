//! TinyRustLM runtime: everything needed to convert, load and run a small instruct
//! model, with no web dependencies (builds for native and wasm32-unknown-unknown).
//!
//! Modules, in pipeline order:
//! - [`import`]: GGUF and HF-directory readers → HF-named tensors + tokenizer bundle;
//! - [`format`]: the `.slm` container (manifest, chunk hashes, streaming writer, reader);
//! - [`tokenizer`]: the tokenizer.json graph via the HF `tokenizers` crate;
//! - [`template`]: chat templates via minijinja;
//! - [`model`]: config, weights, RoPE, KV cache and the forward pass;
//! - [`quant`]: block formats and their scalar f32 reference;
//! - [`kernels`]: the row-dot kernels the model runs (scalar, AVX2, AVX-512, simd128);
//! - [`sampling`]: next-token selection (HF/vLLM semantics, presets, seeded PRNG);
//! - [`session`]: chat sessions with KV prefix reuse and the divergence flag;
//! - [`clarify`]: the clarify-first policy (is a message materially underspecified,
//!   and the note that tells the model what to ask for);
//! - [`stopping`]: stop reasons, stop strings, loop detection, UTF-8-safe streaming;
//! - [`engine`]: the pieces above assembled for a loaded `.slm` (render → ids → logits → greedy);
//! - [`gate`]: the staged quality gate against a golden pack, and its evidence record;
//! - [`facts`]: the tokenizer and execution facts the views state;
//! - [`trace`]: the generation record (`slm generate --trace`, the page's export);
//! - [`error`]: the one error type.

pub mod clarify;
pub mod engine;
pub mod error;
pub mod facts;
pub mod format;
pub mod gate;
pub mod import;
pub mod kernels;
pub mod model;
pub mod parallel;
pub mod quant;
pub mod sampling;
pub mod session;
pub mod stopping;
pub mod template;
pub mod tokenizer;
pub mod tool_calls;
pub mod trace;

pub use error::{Result, SlmError};

/// Converter identification written into every `.slm` provenance.
pub const CONVERTER: &str = concat!("tinyrustlm-slm ", env!("CARGO_PKG_VERSION"));
