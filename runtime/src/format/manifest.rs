//! The `.slm` manifest: everything about a model except its tensor bytes.
//! See docs/slm-format.md for the byte layout around it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::config::ModelConfig;
use crate::quant::DType;

pub const FORMAT_NAME: &str = "tinyrustlm.slm";
pub const FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub format_version: u32,
    pub model: ModelConfig,
    pub tokenizer: TokenizerSection,
    /// HF `generation_config.json` as a JSON object (verbatim keys), or synthesized for GGUF.
    pub generation_config: Map<String, Value>,
    /// This model's measured adjustments to the named presets (`sampling::PresetTuning`),
    /// set at conversion with `--tune-preset`; absent for most models.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub preset_tuning: crate::sampling::PresetTuning,
    /// This conversion's clarify probe (`clarify::probe`), set at conversion with
    /// `--clarify-probe`; absent for most models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarify_probe: Option<crate::clarify::ClarifyProbe>,
    pub stop: StopTable,
    pub provenance: Provenance,
    pub tensors: Vec<TensorEntry>,
    pub data: DataSection,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TokenizerSection {
    /// `tokenizer.json`, byte for byte as the source had it (or as rebuilt from GGUF).
    pub tokenizer_json: String,
    /// `tokenizer_config.json` verbatim (HF) or synthesized from GGUF metadata.
    pub tokenizer_config_json: String,
    /// `special_tokens_map.json` verbatim when the source had one.
    pub special_tokens_map_json: Option<String>,
    /// The chat template, verbatim. None when the model has none.
    pub chat_template: Option<String>,
    /// Named alternates besides the default (`tool_use`, `rag`, …), verbatim:
    /// transformers renders with `tool_use` when tools are given and it exists.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub named_chat_templates: std::collections::BTreeMap<String, String>,
    /// Template variables: `bos_token`, `eos_token`, `unk_token`, `pad_token`, ... → text.
    pub special_tokens: Map<String, Value>,
    pub bos_token_id: Option<u32>,
    pub eos_token_id: Option<u32>,
    pub add_bos_token: bool,
    pub add_eos_token: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StopTable {
    /// Every token id that ends generation.
    pub eos_token_ids: Vec<u32>,
    /// Where the set came from, for humans.
    pub source: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SourceFile {
    pub name: String,
    pub bytes: u64,
    pub sha256: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    Gguf,
    HfDir,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Provenance {
    pub source_kind: SourceKind,
    pub source_files: Vec<SourceFile>,
    pub converter: String,
    /// The `--quant` the file was converted with.
    pub quant: String,
    /// Whether `--requantize` applied `quant` to tensors the source had already
    /// quantized (otherwise they kept their precision). None (absent) in files written
    /// before the flag existed, which always re-quantized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requantize: Option<bool>,
    /// `unverified` until a reference comparison passes (`reference-verified`).
    pub quality_gate: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TensorEntry {
    /// HF name, e.g. `model.layers.0.self_attn.q_proj.weight`.
    pub name: String,
    pub dtype: DType,
    /// Row-major, outermost first: a linear layer is `[out_features, in_features]`.
    pub shape: Vec<u64>,
    /// Byte offset from the start of the data region (a multiple of 64, `layout::DATA_ALIGN`).
    pub offset: u64,
    pub length: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DataSection {
    /// Bytes in the data region (from the aligned data offset to the end of the file).
    pub length: u64,
    pub chunk_size: u64,
    /// SHA-256 (lowercase hex) of each `chunk_size` piece of the data region; the last may be short.
    pub chunk_sha256: Vec<String>,
    /// SHA-256 of the whole data region.
    pub sha256: String,
}

impl Manifest {
    pub fn tensor(&self, name: &str) -> Option<&TensorEntry> {
        self.tensors.iter().find(|t| t.name == name)
    }
    /// Sum of the stored tensor bytes.
    pub fn weight_bytes(&self) -> u64 {
        self.tensors.iter().map(|t| t.length).sum()
    }
}
