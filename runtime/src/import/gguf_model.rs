//! GGUF `llama` / `qwen2` → HF names, HF layout, runtime config.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde_json::{json, Map};

use super::gguf::{GgufFile, TensorInfo};
use super::{gguf_tokenizer, Imported, SourceTensor, TensorData, WeightSource};
use crate::error::{Result, SlmError};
use crate::format::manifest::{SourceKind, TokenizerSection};
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

/// An optional integer key: absent is None, a present value of another form is refused
/// (a per-layer array of head counts, say) rather than replaced by a default.
fn meta_opt_u(g: &GgufFile, key: &str) -> Result<Option<usize>> {
    match g.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|&x| x <= u32::MAX as u64)
            .map(|x| Some(x as usize))
            .ok_or_else(|| {
                SlmError::unsupported(format!("GGUF {key}"), v.brief(), "expected an integer")
            }),
    }
}

fn meta_u(g: &GgufFile, key: &str) -> Result<usize> {
    g.get(key)
        .and_then(|v| v.as_u64())
        .map(|v| v as usize)
        .ok_or_else(|| SlmError::unsupported(key, "<missing>", "required hyper-parameter"))
}

/// `{arch}.` keys the config reads (or checks to hold the value the forward pass
/// implements).
const ARCH_APPLIED: &[&str] = &[
    "context_length",
    "embedding_length",
    "block_count",
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.layer_norm_rms_epsilon",
    "attention.key_length",
    "attention.value_length",
    "rope.dimension_count",
    "rope.freq_base",
    "rope.scaling.type",
    "vocab_size",
];

/// `tokenizer.` keys read by `gguf_tokenizer::build` or by this importer.
const TOKENIZER_APPLIED: &[&str] = &[
    "tokenizer.ggml.model",
    "tokenizer.ggml.pre",
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.token_type",
    "tokenizer.ggml.merges",
    "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.eot_token_id",
    "tokenizer.ggml.eom_token_id",
    "tokenizer.ggml.unknown_token_id",
    "tokenizer.ggml.padding_token_id",
    "tokenizer.ggml.add_bos_token",
    "tokenizer.ggml.add_eos_token",
    "tokenizer.chat_template",
];

/// Keys that cannot change the logits or the text, each with the reason.
const HARMLESS: &[(&str, &str)] = &[
    ("tokenizer.ggml.scores", "BPE merges decide, not scores"),
    (
        "tokenizer.ggml.seperator_token_id",
        "not used by a causal LM",
    ),
    (
        "tokenizer.ggml.separator_token_id",
        "not used by a causal LM",
    ),
    ("tokenizer.ggml.cls_token_id", "not used by a causal LM"),
    ("tokenizer.ggml.mask_token_id", "not used by a causal LM"),
    (
        "tokenizer.ggml.prefix_token_id",
        "fill-in-the-middle ids, not used in chat",
    ),
    (
        "tokenizer.ggml.suffix_token_id",
        "fill-in-the-middle ids, not used in chat",
    ),
    (
        "tokenizer.ggml.middle_token_id",
        "fill-in-the-middle ids, not used in chat",
    ),
    (
        "tokenizer.ggml.fim_pre_token_id",
        "fill-in-the-middle ids, not used in chat",
    ),
    (
        "tokenizer.ggml.fim_suf_token_id",
        "fill-in-the-middle ids, not used in chat",
    ),
    (
        "tokenizer.ggml.fim_mid_token_id",
        "fill-in-the-middle ids, not used in chat",
    ),
    (
        "tokenizer.ggml.fim_pad_token_id",
        "fill-in-the-middle ids, not used in chat",
    ),
    (
        "tokenizer.ggml.fim_rep_token_id",
        "fill-in-the-middle ids, not used in chat",
    ),
    (
        "tokenizer.ggml.fim_sep_token_id",
        "fill-in-the-middle ids, not used in chat",
    ),
];

/// Give every metadata key a fate: applied, harmless, or refused with its name and value.
/// `general.*` (names, licence, file type, alignment) and `quantize.*` (how the weights
/// were calibrated) describe the file; named alternates `tokenizer.chat_template.NAME`
/// are not the default template, which is the one transformers uses.
fn check_metadata_fates(g: &GgufFile, arch: &str) -> Result<()> {
    for (k, v) in &g.metadata {
        let applied = match k.strip_prefix(arch).and_then(|r| r.strip_prefix('.')) {
            Some(rest) => ARCH_APPLIED.contains(&rest),
            None => TOKENIZER_APPLIED.contains(&k.as_str()),
        };
        // The prefix space is what SentencePiece-style vocabularies add; byte-level BPE
        // (the only model we read) adds none, so only `false` is what we run.
        let applied =
            applied || (k == "tokenizer.ggml.add_space_prefix" && v.as_bool() == Some(false));
        let harmless = k.starts_with("general.")
            || k.starts_with("quantize.")
            || k.starts_with("tokenizer.chat_template.")
            || (k == "split.count" && v.as_u64() == Some(1))
            || (k == "split.no" && v.as_u64() == Some(0))
            || k == "split.tensors.count"
            || HARMLESS.iter().any(|(h, _)| h == k);
        if !applied && !harmless {
            return Err(SlmError::unsupported(
                format!("GGUF {k}"),
                v.brief(),
                "not read by this runtime and not known to leave the logits unchanged",
            ));
        }
    }
    Ok(())
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
    check_metadata_fates(g, a)?;
    if let Some(v) = g.get(&format!("{a}.vocab_size")) {
        if v.as_u64() != Some(n_vocab as u64) {
            return Err(SlmError::unsupported(
                format!("GGUF {a}.vocab_size"),
                v.brief(),
                format!("disagrees with the {n_vocab} tokens of tokenizer.ggml.tokens"),
            ));
        }
    }
    let hidden = meta_u(g, &format!("{a}.embedding_length"))?;
    let heads = meta_u(g, &format!("{a}.attention.head_count"))?;
    let kv_heads = meta_opt_u(g, &format!("{a}.attention.head_count_kv"))?.unwrap_or(heads);
    let head_dim = match meta_opt_u(g, &format!("{a}.attention.key_length"))? {
        Some(k) => k,
        None => hidden.checked_div(heads).unwrap_or(0),
    };
    if let Some(v) = meta_opt_u(g, &format!("{a}.attention.value_length"))? {
        if v != head_dim {
            return Err(SlmError::unsupported(
                format!("GGUF {a}.attention.value_length"),
                v,
                "must equal key_length",
            ));
        }
    }
    if let Some(t) = g.get(&format!("{a}.rope.scaling.type")) {
        if t.as_str() != Some("none") {
            return Err(SlmError::unsupported(
                format!("GGUF {a}.rope.scaling.type"),
                t.brief(),
                "RoPE scaling from GGUF is not implemented",
            ));
        }
    }
    if let Some(v) = meta_opt_u(g, &format!("{a}.rope.dimension_count"))? {
        if v != head_dim {
            return Err(SlmError::unsupported(
                format!("GGUF {a}.rope.dimension_count"),
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
    // llama.cpp's default when the key is absent; a present value must be a number.
    let theta = match g.get(&format!("{a}.rope.freq_base")) {
        None => 10000.0,
        Some(v) => v.as_f64().ok_or_else(|| {
            SlmError::unsupported(
                format!("GGUF {a}.rope.freq_base"),
                v.brief(),
                "expected a number",
            )
        })?,
    };
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
    // The stop table is the one home of the EOS set; the synthesized generation config
    // states only what the GGUF itself states.
    if let Some(e) = tok.eos_token_id {
        gen.insert("eos_token_id".into(), json!(e));
    }
    let stop = super::stop_table(
        tok.eos_token_ids.clone(),
        "gguf: tokenizer.ggml.eos_token_id plus end-of-generation control tokens".into(),
        cfg.vocab_size,
    )?;
    Ok(Imported {
        kind: SourceKind::Gguf,
        config: cfg,
        stop,
        tokenizer: TokenizerSection {
            tokenizer_json: tok.tokenizer_json,
            tokenizer_config_json: serde_json::to_string_pretty(&config_json).unwrap(),
            special_tokens_map_json: None,
            chat_template: tok.chat_template,
            // transformers' GGUF loader reads only `tokenizer.chat_template`.
            named_chat_templates: Default::default(),
            special_tokens: tok.special_tokens,
            bos_token_id: tok.bos_token_id,
            eos_token_id: tok.eos_token_id,
            add_bos_token: tok.add_bos_token,
            add_eos_token: tok.add_eos_token,
        },
        generation_config: gen,
        preset_tuning: Default::default(),
        clarify_probe: None,
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
    if heads == 0 || !rows.is_multiple_of(heads) || !(rows / heads).is_multiple_of(2) {
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
            Some(dt) if prefer_encoded => Ok(TensorData::Encoded(dt, raw)),
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

    fn meta(extra: &[(&str, super::super::gguf::Value)]) -> GgufFile {
        use super::super::gguf::Value as V;
        let mut m = std::collections::BTreeMap::new();
        for (k, v) in [
            ("general.architecture", V::Str("llama".into())),
            ("general.name", V::Str("t".into())),
            ("llama.embedding_length", V::U32(64)),
            ("llama.attention.head_count", V::U32(4)),
            ("llama.feed_forward_length", V::U32(128)),
            ("llama.block_count", V::U32(2)),
            ("llama.context_length", V::U32(2048)),
            ("llama.attention.layer_norm_rms_epsilon", V::F32(1e-5)),
            ("tokenizer.ggml.add_space_prefix", V::Bool(false)),
        ] {
            m.insert(k.to_string(), v);
        }
        for (k, v) in extra {
            m.insert(k.to_string(), v.clone());
        }
        GgufFile {
            version: 3,
            metadata: m,
            tensors: vec![],
            file_len: 0,
        }
    }

    #[test]
    fn every_metadata_key_is_applied_harmless_or_refused_by_name() {
        use super::super::gguf::Value as V;
        assert!(config(&meta(&[]), 100).is_ok());
        assert!(config(&meta(&[("quantize.imatrix.file", V::Str("x".into()))]), 100).is_ok());
        for (k, v, want) in [
            (
                "llama.logit_scale",
                V::F32(0.5),
                "GGUF llama.logit_scale = F32(0.5)",
            ),
            (
                "llama.rope.scaling.factor",
                V::F32(8.0),
                "llama.rope.scaling.factor",
            ),
            (
                "tokenizer.ggml.add_space_prefix",
                V::Bool(true),
                "add_space_prefix = Bool(true)",
            ),
            (
                "tokenizer.huggingface.json",
                V::Str("{}".into()),
                "tokenizer.huggingface.json",
            ),
            (
                "llama.attention.head_count_kv",
                V::Array(vec![V::U32(2)]),
                "head_count_kv = [1 items]",
            ),
            (
                "llama.rope.freq_base",
                V::Str("1e4".into()),
                "llama.rope.freq_base",
            ),
            (
                "llama.vocab_size",
                V::U32(99),
                "disagrees with the 100 tokens",
            ),
        ] {
            let e = config(&meta(&[(k, v)]), 100).unwrap_err().to_string();
            assert!(e.contains(want), "{k}: {e}");
        }
    }
}
