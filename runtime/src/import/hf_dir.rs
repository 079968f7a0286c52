//! Hugging Face model directory: config.json, `*.safetensors` (single file or sharded
//! with `model.safetensors.index.json`), tokenizer.json, tokenizer_config.json,
//! special_tokens_map.json, generation_config.json.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{hash_file, Imported, SourceTensor, TensorData, WeightSource};
use crate::error::{Result, SlmError};
use crate::format::manifest::{SourceKind, TokenizerSection};
use crate::model::config::ModelConfig;
use crate::quant::DType;

/// The tensor names a model with `cfg` must have, exactly.
pub fn expected_tensors(cfg: &ModelConfig) -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    s.insert("model.embed_tokens.weight".to_string());
    s.insert("model.norm.weight".to_string());
    if !cfg.tie_word_embeddings {
        s.insert("lm_head.weight".to_string());
    }
    for i in 0..cfg.num_layers {
        let p = format!("model.layers.{i}.");
        for n in [
            "input_layernorm.weight",
            "self_attn.q_proj.weight",
            "self_attn.k_proj.weight",
            "self_attn.v_proj.weight",
            "self_attn.o_proj.weight",
            "post_attention_layernorm.weight",
            "mlp.gate_proj.weight",
            "mlp.up_proj.weight",
            "mlp.down_proj.weight",
        ] {
            s.insert(format!("{p}{n}"));
        }
        if cfg.attention_bias {
            for n in [
                "self_attn.q_proj.bias",
                "self_attn.k_proj.bias",
                "self_attn.v_proj.bias",
            ] {
                s.insert(format!("{p}{n}"));
            }
        }
    }
    s
}

/// Expected shape of each tensor, row-major.
pub fn expected_shape(cfg: &ModelConfig, name: &str) -> Vec<u64> {
    let (h, i, v) = (
        cfg.hidden_size as u64,
        cfg.intermediate_size as u64,
        cfg.vocab_size as u64,
    );
    let (q, kv) = (cfg.q_dim() as u64, cfg.kv_dim() as u64);
    let tail = name
        .rsplit_once("layers.")
        .map(|(_, t)| t.split_once('.').map(|x| x.1).unwrap_or(t))
        .unwrap_or(name);
    match tail {
        "model.embed_tokens.weight" | "lm_head.weight" => vec![v, h],
        "model.norm.weight" | "input_layernorm.weight" | "post_attention_layernorm.weight" => {
            vec![h]
        }
        "self_attn.q_proj.weight" => vec![q, h],
        "self_attn.k_proj.weight" | "self_attn.v_proj.weight" => vec![kv, h],
        "self_attn.q_proj.bias" => vec![q],
        "self_attn.k_proj.bias" | "self_attn.v_proj.bias" => vec![kv],
        "self_attn.o_proj.weight" => vec![h, q],
        "mlp.gate_proj.weight" | "mlp.up_proj.weight" => vec![i, h],
        "mlp.down_proj.weight" => vec![h, i],
        _ => vec![],
    }
}

/// Refuse a tensor set that is not exactly the graph the config describes.
pub fn check_tensor_set(cfg: &ModelConfig, list: &[SourceTensor]) -> Result<()> {
    let want = expected_tensors(cfg);
    let have: BTreeSet<String> = list.iter().map(|t| t.name.clone()).collect();
    if let Some(extra) = have.difference(&want).next() {
        return Err(SlmError::unsupported(
            format!("tensor {extra}"),
            "present",
            "not part of the configured graph",
        ));
    }
    if let Some(missing) = want.difference(&have).next() {
        return Err(SlmError::unsupported(
            format!("tensor {missing}"),
            "missing",
            "required by the configured graph",
        ));
    }
    for t in list {
        let s = expected_shape(cfg, &t.name);
        if t.shape != s {
            return Err(SlmError::malformed(
                "model",
                format!(
                    "tensor {} has shape {:?}, config implies {:?}",
                    t.name, t.shape, s
                ),
            ));
        }
    }
    Ok(())
}

#[derive(Deserialize)]
struct StEntry {
    dtype: String,
    shape: Vec<u64>,
    data_offsets: (u64, u64),
}

struct StTensor {
    file: usize,
    /// Absolute byte range in the shard.
    start: u64,
    end: u64,
    dtype: String,
}

struct SafetensorsWeights {
    shards: Vec<(PathBuf, File)>,
    list: Vec<SourceTensor>,
    origin: Vec<StTensor>,
}

const MAX_ST_HEADER: u64 = 100 << 20;

// The header is parsed here rather than with the `safetensors` crate because that crate
// validates against the whole file in memory; we read one tensor at a time.

/// Parse one safetensors header, checking every range against the file size.
fn read_st_header(path: &Path, f: &mut File) -> Result<Vec<(String, StEntry, u64)>> {
    let bad = |d: String| SlmError::malformed("safetensors", format!("{}: {d}", path.display()));
    let len = f
        .metadata()
        .map_err(|e| SlmError::io(path.display(), e))?
        .len();
    let mut n = [0u8; 8];
    f.read_exact(&mut n)
        .map_err(|_| bad("shorter than the 8-byte header length".into()))?;
    let n = u64::from_le_bytes(n);
    if n > MAX_ST_HEADER || 8 + n > len {
        return Err(bad(format!(
            "header length {n} is impossible for a {len}-byte file"
        )));
    }
    let mut h = vec![0u8; n as usize];
    f.read_exact(&mut h).map_err(|e| bad(e.to_string()))?;
    let mut map: BTreeMap<String, Value> =
        serde_json::from_slice(&h).map_err(|e| bad(format!("header JSON: {e}")))?;
    map.remove("__metadata__");
    let base = 8 + n;
    let mut out = Vec::new();
    for (name, v) in map {
        let e: StEntry =
            serde_json::from_value(v).map_err(|e| bad(format!("tensor {name}: {e}")))?;
        let (a, b) = e.data_offsets;
        let el = match e.dtype.as_str() {
            "F32" => 4,
            "F16" | "BF16" => 2,
            other => {
                return Err(SlmError::unsupported(
                    format!("tensor {name}.dtype"),
                    other,
                    "supported: F32, F16, BF16",
                ))
            }
        };
        let count = e
            .shape
            .iter()
            .try_fold(1u64, |x, &d| x.checked_mul(d))
            .and_then(|c| c.checked_mul(el));
        // Checked: a forged end offset must not wrap around to point into the header.
        let in_file = base.checked_add(b).is_some_and(|end| end <= len);
        if a > b || !in_file || count != Some(b - a) {
            return Err(bad(format!(
                "tensor {name}: data_offsets {a}..{b} do not match its shape or the file"
            )));
        }
        out.push((name, e, base));
    }
    Ok(out)
}

impl WeightSource for SafetensorsWeights {
    fn tensors(&self) -> &[SourceTensor] {
        &self.list
    }
    fn read(&mut self, i: usize, prefer_encoded: bool) -> Result<TensorData> {
        let t = &self.origin[i];
        let (path, f) = &mut self.shards[t.file];
        let mut buf = vec![0u8; (t.end - t.start) as usize];
        f.seek(SeekFrom::Start(t.start))
            .and_then(|_| f.read_exact(&mut buf))
            .map_err(|e| SlmError::io(path.display(), e))?;
        Ok(match t.dtype.as_str() {
            "F32" => {
                if prefer_encoded {
                    TensorData::Encoded(DType::F32, buf)
                } else {
                    TensorData::F32(
                        buf.chunks_exact(4)
                            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                            .collect(),
                    )
                }
            }
            "F16" => {
                if prefer_encoded {
                    TensorData::Encoded(DType::F16, buf)
                } else {
                    TensorData::F32(
                        buf.chunks_exact(2)
                            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                            .collect(),
                    )
                }
            }
            _ => TensorData::F32(
                buf.chunks_exact(2)
                    .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
                    .collect(),
            ),
        })
    }
}

/// `dir/name` if it exists, refusing a symbolic link (or a `..` step): every file of a
/// conversion is one the directory itself holds, never one a link points at elsewhere.
fn inside(dir: &Path, name: &str) -> Result<Option<PathBuf>> {
    if name.split('/').any(|c| c == ".." || c.is_empty()) || name.starts_with('/') {
        return Err(SlmError::malformed(
            "model directory",
            format!("{name:?} leaves the directory"),
        ));
    }
    let p = dir.join(name);
    match std::fs::symlink_metadata(&p) {
        Err(_) => Ok(None),
        Ok(m) if m.file_type().is_symlink() => Err(SlmError::malformed(
            "model directory",
            format!("{name} is a symbolic link: files must be inside the model directory"),
        )),
        Ok(_) => Ok(Some(p)),
    }
}

fn read_text(dir: &Path, name: &str) -> Result<Option<String>> {
    let Some(p) = inside(dir, name)? else {
        return Ok(None);
    };
    let b = std::fs::read(&p).map_err(|e| SlmError::io(p.display(), e))?;
    String::from_utf8(b)
        .map(Some)
        .map_err(|_| SlmError::malformed("model directory", format!("{name} is not UTF-8")))
}

fn parse_json(name: &str, s: &str) -> Result<Value> {
    serde_json::from_str(s)
        .map_err(|e| SlmError::malformed("model directory", format!("{name}: {e}")))
}

/// `"<s>"` or `{"content": "<s>", ...}` (an AddedToken) → `"<s>"`.
fn token_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("content").and_then(|c| c.as_str()).map(String::from),
        _ => None,
    }
}

fn id_list(v: Option<&Value>) -> Vec<u32> {
    match v {
        Some(Value::Number(n)) => n.as_u64().map(|x| vec![x as u32]).unwrap_or_default(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_u64())
            .map(|x| x as u32)
            .collect(),
        _ => vec![],
    }
}

/// The chat templates as transformers 5 loads them: `chat_template.jinja` (default) and
/// `additional_chat_templates/NAME.jinja` take priority over tokenizer_config.json's
/// `chat_template`, which is a string (the default) or a list of `{name, template}`.
/// Returns the default and the named others.
fn chat_templates(
    dir: &Path,
    tc: &Value,
    files: &mut Vec<crate::format::manifest::SourceFile>,
) -> Result<(Option<String>, BTreeMap<String, String>)> {
    let mut named = BTreeMap::new();
    if let Some(t) = read_text(dir, "chat_template.jinja")? {
        named.insert("default".to_string(), t);
    }
    let extra = dir.join("additional_chat_templates");
    if inside(dir, "additional_chat_templates")?.is_some() && extra.is_dir() {
        let mut names: Vec<String> = std::fs::read_dir(&extra)
            .map_err(|e| SlmError::io(extra.display(), e))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".jinja"))
            .collect();
        names.sort();
        for n in names {
            let rel = format!("additional_chat_templates/{n}");
            if let Some(t) = read_text(dir, &rel)? {
                files.push(hash_file(&dir.join(&rel), &mut |_, _| {})?);
                named.insert(n.trim_end_matches(".jinja").to_string(), t);
            }
        }
    }
    if named.is_empty() {
        match tc.get("chat_template") {
            Some(Value::String(s)) => {
                named.insert("default".into(), s.clone());
            }
            Some(Value::Array(list)) => {
                for t in list {
                    match (t["name"].as_str(), t["template"].as_str()) {
                        (Some(n), Some(s)) => {
                            named.insert(n.to_string(), s.to_string());
                        }
                        _ => {
                            return Err(SlmError::malformed(
                                "tokenizer_config.json",
                                "chat_template list entries need a string name and template",
                            ))
                        }
                    }
                }
            }
            None | Some(Value::Null) => {}
            Some(_) => {
                return Err(SlmError::malformed(
                    "tokenizer_config.json",
                    "chat_template must be a string or a list of {name, template}",
                ))
            }
        }
    }
    let default = named.remove("default");
    Ok((default, named))
}

/// The named special tokens transformers passes to templates and drops in
/// `decode(skip_special_tokens=True)`: its SPECIAL_TOKENS_ATTRIBUTES from
/// tokenizer_config.json (else special_tokens_map.json), and the config's
/// `extra_special_tokens` (Gemma 3's boi/eoi/image tokens).
pub fn named_special_tokens(tc: &Value, stm: &Value) -> Map<String, Value> {
    let mut special_tokens = Map::new();
    for key in [
        "bos_token",
        "eos_token",
        "unk_token",
        "sep_token",
        "pad_token",
        "cls_token",
        "mask_token",
    ] {
        if let Some(t) = tc
            .get(key)
            .and_then(token_text)
            .or_else(|| stm.get(key).and_then(token_text))
        {
            special_tokens.insert(key.into(), json!(t));
        }
    }
    if let Some(Value::Object(extra)) = tc.get("extra_special_tokens") {
        for (k, v) in extra {
            if let Some(t) = token_text(v) {
                special_tokens.entry(k.clone()).or_insert(json!(t));
            }
        }
    }
    special_tokens
}

pub fn open(dir: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<Imported> {
    let need = |name: &str| -> Result<String> {
        read_text(dir, name)?.ok_or_else(|| {
            SlmError::unsupported(
                format!("file {name}"),
                "missing",
                "required in a model directory",
            )
        })
    };
    let config_text = need("config.json")?;
    let config_map = match parse_json("config.json", &config_text)? {
        Value::Object(m) => m,
        _ => return Err(SlmError::malformed("config.json", "not a JSON object")),
    };
    let cfg = super::hf_config::to_runtime(&config_map)?;

    // Shards: the index names them, else the single model.safetensors.
    let mut shard_names: Vec<String> = match read_text(dir, "model.safetensors.index.json")? {
        Some(idx) => {
            let v = parse_json("model.safetensors.index.json", &idx)?;
            let wm = v
                .get("weight_map")
                .and_then(|w| w.as_object())
                .ok_or_else(|| {
                    SlmError::malformed(
                        "model directory",
                        "model.safetensors.index.json has no weight_map",
                    )
                })?;
            let set: BTreeSet<String> = wm
                .values()
                .filter_map(|s| s.as_str().map(String::from))
                .collect();
            set.into_iter().collect()
        }
        None => vec!["model.safetensors".to_string()],
    };
    shard_names.sort();
    let mut shards = Vec::new();
    let mut list = Vec::new();
    let mut origin = Vec::new();
    let mut files = vec![hash_file(&dir.join("config.json"), &mut |_, _| {})?];
    for (si, name) in shard_names.iter().enumerate() {
        if name.contains('/') || name.contains("..") {
            return Err(SlmError::malformed(
                "model directory",
                format!("shard name {name:?} leaves the directory"),
            ));
        }
        let p = inside(dir, name)?.ok_or_else(|| {
            SlmError::io(
                dir.join(name).display(),
                std::io::Error::new(std::io::ErrorKind::NotFound, "shard listed but missing"),
            )
        })?;
        let mut f = File::open(&p).map_err(|e| SlmError::io(p.display(), e))?;
        for (tname, e, base) in read_st_header(&p, &mut f)? {
            // Old checkpoints store RoPE's inverse frequencies; they are derived, never loaded.
            if tname.ends_with("rotary_emb.inv_freq") {
                continue;
            }
            let lossless = match e.dtype.as_str() {
                "F32" => Some(DType::F32),
                "F16" => Some(DType::F16),
                _ => None,
            };
            list.push(SourceTensor {
                name: tname,
                shape: e.shape.clone(),
                lossless,
                // Float sources follow `--quant`.
                kept: None,
            });
            origin.push(StTensor {
                file: si,
                start: base + e.data_offsets.0,
                end: base + e.data_offsets.1,
                dtype: e.dtype,
            });
        }
        files.push(hash_file(&p, progress)?);
        shards.push((p, f));
    }
    if list.iter().map(|t| &t.name).collect::<BTreeSet<_>>().len() != list.len() {
        return Err(SlmError::malformed(
            "model directory",
            "a tensor name appears in two shards",
        ));
    }
    check_tensor_set(&cfg, &list)?;

    let tokenizer_json = need("tokenizer.json")?;
    let tok_v = parse_json("tokenizer.json", &tokenizer_json)?;
    let tokenizer_config_json = need("tokenizer_config.json")?;
    let tc = parse_json("tokenizer_config.json", &tokenizer_config_json)?;
    let stm_json = read_text(dir, "special_tokens_map.json")?;
    let stm = match &stm_json {
        Some(s) => parse_json("special_tokens_map.json", s)?,
        None => json!({}),
    };
    let gen_json = read_text(dir, "generation_config.json")?;
    let generation_config: Map<String, Value> = match &gen_json {
        Some(s) => parse_json("generation_config.json", s)?
            .as_object()
            .cloned()
            .unwrap_or_default(),
        // transformers builds the generation config from config.json's sampling keys
        // when the directory has no generation_config.json.
        None => super::hf_config::legacy_generation_keys(&config_map),
    };
    for name in [
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "generation_config.json",
        "chat_template.jinja",
    ] {
        if dir.join(name).exists() {
            files.push(hash_file(&dir.join(name), &mut |_, _| {})?);
        }
    }

    let (chat_template, named_chat_templates) = chat_templates(dir, &tc, &mut files)?;

    let special_tokens = named_special_tokens(&tc, &stm);
    let id_of = |text: &Value| -> Option<u32> {
        let t = text.as_str()?;
        tok_v["added_tokens"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["content"] == t))
            .and_then(|x| x["id"].as_u64())
            .or_else(|| tok_v["model"]["vocab"].get(t).and_then(|x| x.as_u64()))
            .map(|x| x as u32)
    };
    let bos_id = special_tokens.get("bos_token").and_then(id_of);
    let eos_id = special_tokens.get("eos_token").and_then(id_of);
    let gen_ids = id_list(generation_config.get("eos_token_id"));
    let stop = if gen_ids.is_empty() {
        super::stop_table(
            eos_id.into_iter().collect(),
            "tokenizer_config.json eos_token (no eos_token_id in the generation config)".into(),
            cfg.vocab_size,
        )?
    } else if gen_json.is_some() {
        super::stop_table(
            gen_ids,
            "generation_config.json eos_token_id".into(),
            cfg.vocab_size,
        )?
    } else {
        super::stop_table(
            gen_ids,
            "config.json eos_token_id (the directory has no generation_config.json)".into(),
            cfg.vocab_size,
        )?
    };

    Ok(Imported {
        kind: SourceKind::HfDir,
        config: cfg,
        tokenizer: TokenizerSection {
            tokenizer_json,
            tokenizer_config_json,
            special_tokens_map_json: stm_json,
            chat_template,
            named_chat_templates,
            special_tokens,
            bos_token_id: bos_id,
            eos_token_id: eos_id,
            add_bos_token: tc
                .get("add_bos_token")
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
            add_eos_token: tc
                .get("add_eos_token")
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
        },
        generation_config,
        preset_tuning: Default::default(),
        clarify_probe: None,
        stop,
        source_files: files,
        weights: Box::new(SafetensorsWeights {
            shards,
            list,
            origin,
        }),
    })
}
