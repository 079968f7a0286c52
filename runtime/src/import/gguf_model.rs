//! GGUF `llama` / `qwen2` → HF names, HF layout, runtime config.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde_json::{json, Map};

use super::gguf::{GgufFile, TensorInfo};
use super::{gguf_tokenizer, Imported, SourceTensor, TensorData, WeightSource};
use crate::error::{Result, SlmError};
use crate::format::manifest::{SourceKind, StopTable, TokenizerSection};
use crate::model::config::{Architecture, ModelConfig};

struct GgufWeights {
    file: BufReader<File>,
    gguf: GgufFile,
    list: Vec<SourceTensor>,
    /// For each entry of `list`: its GGUF tensor, and the head count to un-permute
    /// llama Q/K rows with (None for every other tensor).
    origin: Vec<(TensorInfo, Option<usize>)>,
}

/// GGUF block name → HF name inside `model.layers.N.`.
const LAYER_NAMES: &[(&str, &str)] = &[
    ("attn_norm.weight", "input_layernorm.weight"),
    ("attn_q.weight", "self_attn.q_proj.weight"),
    ("attn_q.bias", "self_attn.q_proj.bias"),
    ("attn_k.weight", "self_attn.k_proj.weight"),
    ("attn_k.bias", "self_attn.k_proj.bias"),
    ("attn_v.weight", "self_attn.v_proj.weight"),
    ("attn_v.bias", "self_attn.v_proj.bias"),
    ("attn_output.weight", "self_attn.o_proj.weight"),
    ("ffn_norm.weight", "post_attention_layernorm.weight"),
    ("ffn_gate.weight", "mlp.gate_proj.weight"),
    ("ffn_up.weight", "mlp.up_proj.weight"),
    ("ffn_down.weight", "mlp.down_proj.weight"),
];

fn hf_name(gguf: &str, n_layers: usize) -> Option<String> {
    match gguf {
        "token_embd.weight" => return Some("model.embed_tokens.weight".into()),
        "output_norm.weight" => return Some("model.norm.weight".into()),
        "output.weight" => return Some("lm_head.weight".into()),
        _ => {}
    }
    let rest = gguf.strip_prefix("blk.")?;
    let (idx, tail) = rest.split_once('.')?;
    let i: usize = idx.parse().ok().filter(|i| *i < n_layers)?;
    LAYER_NAMES
        .iter()
        .find(|(g, _)| *g == tail)
        .map(|(_, h)| format!("model.layers.{i}.{h}"))
}

fn meta_u(g: &GgufFile, key: &str) -> Result<usize> {
    g.get(key)
        .and_then(|v| v.as_u64())
        .map(|v| v as usize)
        .ok_or_else(|| SlmError::unsupported(key, "<missing>", "required hyper-parameter"))
}

fn config(g: &GgufFile, n_vocab: usize) -> Result<ModelConfig> {
    let arch_name = g
        .get("general.architecture")
        .and_then(|v| v.as_str())
        .unwrap_or("<missing>");
    let arch = match arch_name {
        "llama" => Architecture::Llama,
        "qwen2" => Architecture::Qwen2,
        other => {
            return Err(SlmError::unsupported(
                "general.architecture",
                other,
                "supported GGUF architectures: llama, qwen2",
            ))
        }
    };
    let a = arch_name;
    let hidden = meta_u(g, &format!("{a}.embedding_length"))?;
    let heads = meta_u(g, &format!("{a}.attention.head_count"))?;
    let kv_heads = g
        .get(&format!("{a}.attention.head_count_kv"))
        .and_then(|v| v.as_u64())
        .map(|v| v as usize)
        .unwrap_or(heads);
    let head_dim = match g
        .get(&format!("{a}.attention.key_length"))
        .and_then(|v| v.as_u64())
    {
        Some(k) => k as usize,
        None => hidden.checked_div(heads).unwrap_or(0),
    };
    if let Some(v) = g
        .get(&format!("{a}.attention.value_length"))
        .and_then(|v| v.as_u64())
    {
        if v as usize != head_dim {
            return Err(SlmError::unsupported(
                format!("{a}.attention.value_length"),
                v,
                "must equal key_length",
            ));
        }
    }
    if let Some(t) = g
        .get(&format!("{a}.rope.scaling.type"))
        .and_then(|v| v.as_str())
    {
        if t != "none" {
            return Err(SlmError::unsupported(
                format!("{a}.rope.scaling.type"),
                t,
                "RoPE scaling from GGUF is not implemented",
            ));
        }
    }
    if let Some(v) = g
        .get(&format!("{a}.rope.dimension_count"))
        .and_then(|v| v.as_u64())
    {
        if v as usize != head_dim {
            return Err(SlmError::unsupported(
                format!("{a}.rope.dimension_count"),
                v,
                "partial rotary embeddings are not implemented",
            ));
        }
    }
    let eps = g
        .get(&format!("{a}.attention.layer_norm_rms_epsilon"))
        .and_then(|v| v.as_f64())
        .ok_or_else(|| {
            SlmError::unsupported(
                format!("{a}.attention.layer_norm_rms_epsilon"),
                "<missing>",
                "only RMSNorm is implemented",
            )
        })?;
    let theta = g
        .get(&format!("{a}.rope.freq_base"))
        .and_then(|v| v.as_f64())
        .unwrap_or(10000.0);
    let cfg = ModelConfig {
        architecture: arch,
        vocab_size: n_vocab,
        hidden_size: hidden,
        intermediate_size: meta_u(g, &format!("{a}.feed_forward_length"))?,
        num_layers: meta_u(g, &format!("{a}.block_count"))?,
        num_heads: heads,
        num_kv_heads: kv_heads,
        head_dim,
        max_position_embeddings: meta_u(g, &format!("{a}.context_length"))?,
        // GGUF stores eps as f32: widen exactly as transformers' GGUF loader does.
        rms_norm_eps: eps,
        rope_theta: theta,
        rope_scaling: None,
        tie_word_embeddings: g.tensor("output.weight").is_none(),
        attention_bias: arch == Architecture::Qwen2,
    };
    cfg.validate()?;
    Ok(cfg)
}

pub fn open(path: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<Imported> {
    let f = File::open(path).map_err(|e| SlmError::io(path.display(), e))?;
    let mut file = BufReader::with_capacity(1 << 20, f);
    let gguf = GgufFile::read(&mut file)?;
    let tok = gguf_tokenizer::build(&gguf)?;
    let n_vocab = gguf
        .get("tokenizer.ggml.tokens")
        .and_then(|v| v.as_array())
        .map(|a| a.len())
        .unwrap_or(0);
    let cfg = config(&gguf, n_vocab)?;

    let mut list = Vec::new();
    let mut origin = Vec::new();
    for t in &gguf.tensors {
        let name = hf_name(&t.name, cfg.num_layers).ok_or_else(|| {
            SlmError::unsupported(
                format!("tensor {}", t.name),
                t.ggml_type.name(),
                "not part of a supported llama/qwen2 graph",
            )
        })?;
        let permute_heads = match (cfg.architecture, t.name.rsplit('.').nth(1)) {
            (Architecture::Llama, Some("attn_q")) => Some(cfg.num_heads),
            (Architecture::Llama, Some("attn_k")) => Some(cfg.num_kv_heads),
            _ => None,
        };
        list.push(SourceTensor {
            name,
            shape: t.shape(),
            lossless: t.ggml_type.lossless_slm(),
            kept: t.ggml_type.kept_slm(),
        });
        origin.push((t.clone(), permute_heads));
    }
    super::hf_dir::check_tensor_set(&cfg, &list)?;

    let source = super::hash_file(path, progress)?;
    let config_json = json!({
        "source": "gguf",
        "add_bos_token": tok.add_bos_token,
        "add_eos_token": tok.add_eos_token,
        "bos_token": tok.special_tokens.get("bos_token"),
        "eos_token": tok.special_tokens.get("eos_token"),
        "chat_template": tok.chat_template,
    });
    let mut gen = Map::new();
    if let Some(b) = tok.bos_token_id {
        gen.insert("bos_token_id".into(), json!(b));
    }
    gen.insert("eos_token_id".into(), json!(tok.eos_token_ids));
    Ok(Imported {
        kind: SourceKind::Gguf,
        config: cfg,
        stop: StopTable {
            eos_token_ids: tok.eos_token_ids.clone(),
            source: "gguf: tokenizer.ggml.eos_token_id plus end-of-generation control tokens"
                .into(),
        },
        tokenizer: TokenizerSection {
            tokenizer_json: tok.tokenizer_json,
            tokenizer_config_json: serde_json::to_string_pretty(&config_json).unwrap(),
            special_tokens_map_json: None,
            chat_template: tok.chat_template,
            special_tokens: tok.special_tokens,
            bos_token_id: tok.bos_token_id,
            eos_token_id: tok.eos_token_id,
            add_bos_token: tok.add_bos_token,
            add_eos_token: tok.add_eos_token,
        },
        generation_config: gen,
        source_files: vec![source],
        weights: Box::new(GgufWeights {
            file,
            gguf,
            list,
            origin,
        }),
    })
}

/// llama.cpp's converter permutes Q/K rows so that RoPE can rotate adjacent pairs
/// (GPT-J style). Our runtime uses HF's rotate-half convention, so undo it: view the
/// rows as (heads, head_dim/2, 2) and swap the last two axes. Whole rows move, so this
/// works on raw quantized rows too.
fn unpermute_rows(data: &[u8], row_bytes: usize, heads: usize) -> Result<Vec<u8>> {
    let rows = data.len() / row_bytes;
    if heads == 0 || rows % heads != 0 || (rows / heads) % 2 != 0 {
        return Err(SlmError::malformed(
            "GGUF",
            format!("cannot un-permute {rows} rows over {heads} heads"),
        ));
    }
    let hd = rows / heads;
    let half = hd / 2;
    let mut out = vec![0u8; data.len()];
    for h in 0..heads {
        for i in 0..half {
            for j in 0..2 {
                // GGUF row (h, i, j) holds HF row (h, j, i).
                let src = h * hd + i * 2 + j;
                let dst = h * hd + j * half + i;
                out[dst * row_bytes..(dst + 1) * row_bytes]
                    .copy_from_slice(&data[src * row_bytes..(src + 1) * row_bytes]);
            }
        }
    }
    Ok(out)
}

impl WeightSource for GgufWeights {
    fn tensors(&self) -> &[SourceTensor] {
        &self.list
    }

    fn read(&mut self, i: usize, prefer_encoded: bool) -> Result<TensorData> {
        let (info, permute) = &self.origin[i];
        let mut raw = self.gguf.read_raw(&mut self.file, info)?;
        if let Some(heads) = permute {
            let (bw, bb) = info.ggml_type.block();
            let row_bytes = (info.dims[0] / bw * bb) as usize;
            raw = unpermute_rows(&raw, row_bytes, *heads)?;
        }
        match info.ggml_type.lossless_slm() {
            Some(dt) if prefer_encoded => {
                Ok(TensorData::Encoded(dt, info.ggml_type.to_lossless(raw)))
            }
            _ => {
                let mut out = vec![0f32; info.n_elements() as usize];
                info.ggml_type.dequantize(&raw, &mut out);
                Ok(TensorData::F32(out))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 heads of head_dim 4, one byte per row: GGUF order (h, i, j) → HF order (h, j, i).
    #[test]
    fn unpermute_matches_hand_table() {
        let gguf_rows = [0u8, 2, 1, 3, 4, 6, 5, 7];
        let hf = unpermute_rows(&gguf_rows, 1, 2).unwrap();
        assert_eq!(hf, vec![0, 1, 2, 3, 4, 5, 6, 7]);
    }
}
