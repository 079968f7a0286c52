//! Streaming `.slm` writer. Tensor sizes are known before any data is read, so the
//! manifest is written first with placeholder hashes of the final length, the data is
//! streamed tensor by tensor (one tensor in memory at a time), and the manifest is
//! rewritten in place once the hashes are known. The output appears under its final
//! name only when complete; on any error the partial file is removed.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::layout::{hex, Header, DATA_ALIGN, DEFAULT_CHUNK, HEADER_LEN};
use super::manifest::{
    DataSection, Manifest, Provenance, TensorEntry, FORMAT_NAME, FORMAT_VERSION,
};
use crate::error::{Result, SlmError};
use crate::import::{Imported, SourceTensor, TensorData};
use crate::quant::{self, DType};

/// What `--quant` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuantPolicy {
    /// Every tensor exactly as the source stores it: quantized GGUF blocks copied,
    /// f32 and f16 as they are, bf16 widened to f32 (`.slm` has no bf16). The default:
    /// nothing is rounded that the source did not round.
    Keep,
    F32,
    Q8_0,
    Q4_0,
}

impl QuantPolicy {
    pub const NAMES: &'static str = "keep, f32, q8_0 or q4_0";

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "keep" => QuantPolicy::Keep,
            "f32" => QuantPolicy::F32,
            "q8_0" => QuantPolicy::Q8_0,
            "q4_0" => QuantPolicy::Q4_0,
            _ => return None,
        })
    }
    /// `requantize` needs a type to quantize to, which `keep` does not name.
    pub fn check_requantize(self, requantize: bool) -> Result<()> {
        if requantize && self == QuantPolicy::Keep {
            return Err(SlmError::Invalid(
                "--requantize needs a type to quantize to: --quant q8_0 or q4_0 (keep has none)"
                    .into(),
            ));
        }
        Ok(())
    }

    pub fn name(self) -> &'static str {
        match self {
            QuantPolicy::Keep => "keep",
            QuantPolicy::F32 => "f32",
            QuantPolicy::Q8_0 => "q8_0",
            QuantPolicy::Q4_0 => "q4_0",
        }
    }
    /// Storage type of one tensor. Vectors (norms, biases) always stay f32, and so does a
    /// matrix whose rows are not whole blocks (visible per tensor in the manifest).
    /// Under `f32` everything is decoded; under `keep` every matrix keeps the source's
    /// type (`SourceTensor::lossless`, else f32). Otherwise a tensor the source already
    /// stores quantized keeps its precision (`SourceTensor::kept`) unless `requantize`
    /// is set: re-quantizing a 4- or 5-bit GGUF onto another grid stacks a second
    /// rounding on the first, which measured a worst logit cosine of 0.978 (SmolLM2,
    /// Q4_1 → q4_0) and 0.931 (Qwen2.5, Q4_K_M → q4_0) against the f32 conversion. The
    /// policy type applies to float tensors, and to everything under `requantize`.
    /// Under q4_0 the embedding table and an untied output head are q8_0: llama.cpp's
    /// quantizer keeps both above 4 bits too (the head at Q6_K), because the logits
    /// feel their error directly.
    pub fn dtype_for(self, t: &SourceTensor, requantize: bool) -> DType {
        let row = t.shape.last().copied().unwrap_or(0);
        if t.shape.len() != 2 || row % quant::QK as u64 != 0 || self == QuantPolicy::F32 {
            return DType::F32;
        }
        if self == QuantPolicy::Keep {
            return t.lossless.unwrap_or(DType::F32);
        }
        if let (Some(kept), false) = (t.kept, requantize) {
            return kept;
        }
        match self {
            QuantPolicy::Keep | QuantPolicy::F32 => DType::F32,
            QuantPolicy::Q8_0 => DType::Q8_0,
            QuantPolicy::Q4_0
                if t.name == "model.embed_tokens.weight" || t.name == "lm_head.weight" =>
            {
                DType::Q8_0
            }
            QuantPolicy::Q4_0 => DType::Q4_0,
        }
    }
}

/// Hashes the data region in fixed-size chunks as it streams past.
struct ChunkHasher {
    chunk_size: u64,
    in_chunk: u64,
    chunk: Sha256,
    whole: Sha256,
    done: Vec<String>,
}

impl ChunkHasher {
    fn new(chunk_size: u64) -> Self {
        ChunkHasher {
            chunk_size,
            in_chunk: 0,
            chunk: Sha256::new(),
            whole: Sha256::new(),
            done: Vec::new(),
        }
    }
    fn update(&mut self, mut b: &[u8]) {
        self.whole.update(b);
        while !b.is_empty() {
            let take = ((self.chunk_size - self.in_chunk) as usize).min(b.len());
            self.chunk.update(&b[..take]);
            self.in_chunk += take as u64;
            b = &b[take..];
            if self.in_chunk == self.chunk_size {
                self.done
                    .push(hex(&std::mem::take(&mut self.chunk).finalize()));
                self.in_chunk = 0;
            }
        }
    }
    fn finish(mut self) -> (Vec<String>, String) {
        if self.in_chunk > 0 {
            self.done.push(hex(&self.chunk.finalize()));
        }
        (self.done, hex(&self.whole.finalize()))
    }
}

pub struct WriteSummary {
    pub manifest: Manifest,
    pub file_bytes: u64,
}

/// Progress callback: (tensor index, tensor count, tensor name).
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, &str);

/// Convert `src` into the `.slm` file `out` (written beside it as `.slm.partial`, then
/// renamed; removed on error). `requantize` applies `quant` to already-quantized
/// tensors too (see `QuantPolicy::dtype_for`).
pub fn write(
    mut src: Imported,
    quant: QuantPolicy,
    requantize: bool,
    out: &Path,
    converter: &str,
    progress: Progress,
) -> Result<WriteSummary> {
    quant.check_requantize(requantize)?;
    crate::sampling::SamplerConfig::check_tuning(&src.preset_tuning)?;
    if let Some(p) = &src.clarify_probe {
        p.validate(&src.config)?;
        let sums: Vec<String> = src.source_files.iter().map(|f| f.sha256.clone()).collect();
        p.check_source(&sums, quant.name())?;
    }
    let partial = out.with_extension("slm.partial");
    let r = write_inner(&mut src, quant, requantize, &partial, converter, progress);
    match r {
        Ok(s) => {
            std::fs::rename(&partial, out).map_err(|e| SlmError::io(out.display(), e))?;
            Ok(s)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}

fn write_inner(
    src: &mut Imported,
    quant: QuantPolicy,
    requantize: bool,
    path: &Path,
    converter: &str,
    progress: Progress,
) -> Result<WriteSummary> {
    let io = |e| SlmError::io(path.display(), e);
    // 1. Directory: dtype, size and aligned offset of every tensor.
    let mut tensors = Vec::new();
    let mut offset = 0u64;
    for t in src.weights.tensors() {
        let dtype = quant.dtype_for(t, requantize);
        let n: u64 = t.shape.iter().product();
        let length = dtype
            .bytes_for(n)
            .ok_or_else(|| SlmError::malformed("model", format!("tensor {} size", t.name)))?;
        tensors.push(TensorEntry {
            name: t.name.clone(),
            dtype,
            shape: t.shape.clone(),
            offset,
            length,
        });
        offset = (offset + length).div_ceil(DATA_ALIGN) * DATA_ALIGN;
    }
    let data_len = tensors.last().map(|t| t.offset + t.length).unwrap_or(0);
    let chunk_size = DEFAULT_CHUNK;
    let n_chunks = data_len.div_ceil(chunk_size) as usize;
    let zero_hash = "0".repeat(64);
    let mut manifest = Manifest {
        format: FORMAT_NAME.into(),
        format_version: FORMAT_VERSION,
        model: src.config.clone(),
        tokenizer: src.tokenizer.clone(),
        generation_config: src.generation_config.clone(),
        preset_tuning: src.preset_tuning.clone(),
        clarify_probe: src.clarify_probe.clone(),
        stop: src.stop.clone(),
        provenance: Provenance {
            source_kind: src.kind,
            source_files: src.source_files.clone(),
            converter: converter.into(),
            quant: quant.name().into(),
            requantize: Some(requantize),
            quality_gate: "unverified".into(),
        },
        tensors,
        data: DataSection {
            length: data_len,
            chunk_size,
            chunk_sha256: vec![zero_hash.clone(); n_chunks],
            sha256: zero_hash,
        },
    };
    let placeholder =
        serde_json::to_vec(&manifest).map_err(|e| SlmError::malformed("manifest", e))?;
    let header = Header {
        version: FORMAT_VERSION,
        manifest_len: placeholder.len() as u64,
        manifest_sha256: [0; 32],
    };
    let data_offset = header.data_offset();

    let mut f = BufWriter::with_capacity(1 << 20, File::create(path).map_err(io)?);
    f.write_all(&header.encode()).map_err(io)?;
    f.write_all(&placeholder).map_err(io)?;
    f.write_all(&vec![
        0u8;
        (data_offset - HEADER_LEN - placeholder.len() as u64)
            as usize
    ])
    .map_err(io)?;

    // 2. Stream the tensors.
    let mut hasher = ChunkHasher::new(chunk_size);
    let mut written = 0u64;
    let count = manifest.tensors.len();
    let mut buf = Vec::new();
    for i in 0..count {
        let entry = &manifest.tensors[i];
        progress(i, count, &entry.name);
        let pad = entry.offset - written;
        let zeros = vec![0u8; pad as usize];
        f.write_all(&zeros).map_err(io)?;
        hasher.update(&zeros);
        buf.clear();
        let want_raw = src.weights.tensors()[i].lossless == Some(entry.dtype);
        match src.weights.read(i, want_raw)? {
            TensorData::Encoded(dt, bytes) if dt == entry.dtype => buf = bytes,
            TensorData::Encoded(dt, bytes) => {
                let mut f32s = vec![0f32; bytes.len() / dt.block().1 * dt.block().0];
                quant::dequantize(dt, &bytes, &mut f32s);
                quant::quantize(entry.dtype, &f32s, &mut buf)?;
            }
            TensorData::F32(v) => quant::quantize(entry.dtype, &v, &mut buf)?,
        }
        check_finite(entry, &buf)?;
        if buf.len() as u64 != entry.length {
            return Err(SlmError::malformed(
                "model",
                format!(
                    "tensor {}: {} bytes, expected {}",
                    entry.name,
                    buf.len(),
                    entry.length
                ),
            ));
        }
        f.write_all(&buf).map_err(io)?;
        hasher.update(&buf);
        written = entry.offset + entry.length;
    }
    progress(count, count, "");

    // 3. Hashes into the manifest, rewritten in place at the same length.
    let (chunks, whole) = hasher.finish();
    manifest.data.chunk_sha256 = chunks;
    manifest.data.sha256 = whole;
    let final_manifest =
        serde_json::to_vec(&manifest).map_err(|e| SlmError::malformed("manifest", e))?;
    assert_eq!(
        final_manifest.len(),
        placeholder.len(),
        "hex hashes have a fixed length"
    );
    let header = Header {
        version: FORMAT_VERSION,
        manifest_len: final_manifest.len() as u64,
        manifest_sha256: Sha256::digest(&final_manifest).into(),
    };
    f.seek(SeekFrom::Start(0)).map_err(io)?;
    f.write_all(&header.encode()).map_err(io)?;
    f.write_all(&final_manifest).map_err(io)?;
    let file = f.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    debug_assert_eq!(data_offset % DATA_ALIGN, 0);
    Ok(WriteSummary {
        manifest,
        file_bytes: data_offset + data_len,
    })
}

/// Refuse NaN/Inf weights (including block scales of raw-copied tensors): they would
/// poison every logit silently.
fn check_finite(entry: &TensorEntry, encoded: &[u8]) -> Result<()> {
    const BLOCKS: usize = 1024;
    let (bw, bb) = entry.dtype.block();
    let mut vals = vec![0f32; bw * BLOCKS];
    for (ci, c) in encoded.chunks(bb * BLOCKS).enumerate() {
        let n = c.len() / bb * bw;
        quant::dequantize(entry.dtype, c, &mut vals[..n]);
        if let Some(i) = vals[..n].iter().position(|x| !x.is_finite()) {
            return Err(SlmError::malformed(
                "model",
                format!(
                    "tensor {} has a non-finite weight at index {}",
                    entry.name,
                    ci * bw * BLOCKS + i
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, shape: &[u64], kept: Option<DType>) -> SourceTensor {
        SourceTensor {
            name: name.into(),
            shape: shape.to_vec(),
            lossless: kept,
            kept,
        }
    }

    #[test]
    fn dtype_table() {
        use DType::*;
        use QuantPolicy as P;
        let layer = "model.layers.0.mlp.up_proj.weight";
        let embed = "model.embed_tokens.weight";
        #[rustfmt::skip]
        let cases = [
            // (policy, requantize, tensor, want)
            (P::Q4_0, false, t(layer, &[64, 64], None), Q4_0),
            (P::Q4_0, false, t(embed, &[64, 64], None), Q8_0),
            (P::Q4_0, false, t(layer, &[64, 64], Some(Q4_1)), Q4_1),
            (P::Q4_0, true, t(layer, &[64, 64], Some(Q4_1)), Q4_0),
            (P::Q4_0, true, t(embed, &[64, 64], Some(Q4_1)), Q8_0),
            (P::Q8_0, false, t(layer, &[64, 64], Some(Q4_0)), Q4_0),
            (P::Q8_0, true, t(layer, &[64, 64], Some(Q4_0)), Q8_0),
            (P::Q8_0, false, t(layer, &[64, 64], None), Q8_0),
            (P::F32, false, t(layer, &[64, 64], Some(Q4_1)), F32),
            (P::Q4_0, false, t(layer, &[64], Some(Q4_1)), F32),
            (P::Q4_0, false, t(layer, &[64, 48], Some(Q8_0)), F32),
        ];
        for (p, rq, src, want) in cases {
            assert_eq!(p.dtype_for(&src, rq), want, "{p:?} requantize={rq} {src:?}");
        }
    }
}
