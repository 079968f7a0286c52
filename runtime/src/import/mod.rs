//! Importers turn a source model (GGUF file or HF directory) into what the `.slm`
//! writer needs: a validated config, the tokenizer bundle, and tensors under their HF
//! names in HF layout, readable one at a time (never the whole model in memory).

pub mod gguf;
pub mod gguf_model;
pub mod gguf_tokenizer;
pub mod hf_config;
pub mod hf_dir;

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{Result, SlmError};
use crate::format::manifest::{SourceFile, SourceKind, StopTable, TokenizerSection};
use crate::model::config::ModelConfig;
use crate::quant::DType;

/// One tensor as an importer offers it.
#[derive(Clone, Debug)]
pub struct SourceTensor {
    /// HF name.
    pub name: String,
    /// Row-major shape, outermost first.
    pub shape: Vec<u64>,
    /// The `.slm` type that holds the source bytes losslessly, if any.
    pub lossless: Option<DType>,
    /// For a tensor the source already stores quantized: the `.slm` type that keeps its
    /// precision, used unless the conversion asks to re-quantize. None for floats.
    pub kept: Option<DType>,
}

/// A tensor's data as read from the source.
pub enum TensorData {
    F32(Vec<f32>),
    /// Bytes already in a `.slm` block format (row-major, rows in HF order).
    Encoded(DType, Vec<u8>),
}

pub trait WeightSource {
    fn tensors(&self) -> &[SourceTensor];
    /// Read tensor `i`. `prefer_encoded` asks for the raw blocks when they are lossless.
    fn read(&mut self, i: usize, prefer_encoded: bool) -> Result<TensorData>;
}

pub struct Imported {
    pub kind: SourceKind,
    pub config: ModelConfig,
    pub tokenizer: TokenizerSection,
    pub generation_config: Map<String, Value>,
    /// Preset adjustments to write with the model (`Manifest::preset_tuning`): none from
    /// a source, set by the converter's caller.
    pub preset_tuning: crate::sampling::PresetTuning,
    /// The clarify probe to write with the model (`Manifest::clarify_probe`): none
    /// from a source, set by the converter's caller.
    pub clarify_probe: Option<crate::clarify::ClarifyProbe>,
    pub stop: StopTable,
    pub source_files: Vec<SourceFile>,
    pub weights: Box<dyn WeightSource>,
}

/// Open `src`: a `.gguf` file or a Hugging Face model directory.
pub fn open(src: &Path, hash_progress: &mut dyn FnMut(u64, u64)) -> Result<Imported> {
    if src.is_dir() {
        hf_dir::open(src, hash_progress)
    } else if src.is_file() {
        gguf_model::open(src, hash_progress)
    } else {
        Err(SlmError::io(
            src.display(),
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory"),
        ))
    }
}

/// The one place an EOS set is finalized, for every importer: ascending, each id
/// once, non-empty, and inside the vocab. `source` says where the ids came from.
pub fn stop_table(mut ids: Vec<u32>, source: String, vocab_size: usize) -> Result<StopTable> {
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Err(SlmError::unsupported(
            "eos_token_id",
            "<missing>",
            format!("no EOS token ({source}): generation could never stop"),
        ));
    }
    if let Some(bad) = ids.iter().find(|&&i| i as usize >= vocab_size) {
        return Err(SlmError::malformed(
            "model",
            format!("EOS token id {bad} ({source}) is outside the vocab of {vocab_size}"),
        ));
    }
    Ok(StopTable {
        eos_token_ids: ids,
        source,
    })
}

/// SHA-256 of a file, streamed, with progress (bytes done, total).
pub fn hash_file(path: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<SourceFile> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| SlmError::io(path.display(), e))?;
    let total = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0;
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| SlmError::io(path.display(), e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        done += n as u64;
        progress(done, total);
    }
    Ok(SourceFile {
        name: path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        bytes: done,
        sha256: crate::format::layout::hex(&h.finalize()),
    })
}
