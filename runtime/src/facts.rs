//! What the runtime applies, stated for a person: the tokenizer's facts for the prompt
//! view and the execution facts for the model card. Both views (the page, `slm inspect`)
//! read these, so that what they say is what runs.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::TextSide;
use crate::format::manifest::Manifest;
use crate::model::Model;

/// A token by id and text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdText {
    pub id: u32,
    pub text: String,
}

/// One `added_tokens` entry of tokenizer.json, with the flags that decide how it splits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AddedToken {
    pub id: u32,
    pub content: String,
    pub special: bool,
    pub lstrip: bool,
    pub rstrip: bool,
    pub normalized: bool,
    pub single_word: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenizerFacts {
    /// The tokenizer.json model and its options, e.g. `BPE(byte_fallback=false)`.
    pub model: String,
    pub normalizer: String,
    pub pre_tokenizer: String,
    /// Run only for plain text: a rendered chat prompt is encoded without it, as
    /// transformers' `apply_chat_template` does.
    pub post_processor: String,
    pub decoder: String,
    pub added_tokens: Vec<AddedToken>,
    /// The BOS the template can write (`bos_token` of the tokenizer config).
    pub bos: Option<IdText>,
    /// Every id that ends a reply (the stop table: tokenizer, generation config).
    pub eos: Vec<IdText>,
    /// Named in the config; generation never pads.
    pub pad: Option<IdText>,
    /// The model's unknown token, if it has one.
    pub unk: Option<IdText>,
    pub add_bos_token: bool,
    pub add_eos_token: bool,
    /// `clean_up_tokenization_spaces` as the config gives it (None if absent)...
    pub clean_up_config: Option<bool>,
    /// ...and whether decoding applies it (transformers 5 skips it for BPE).
    pub clean_up_applied: bool,
    /// Where the stop table came from.
    pub eos_source: String,
}

impl TokenizerFacts {
    pub fn of(text: &TextSide) -> TokenizerFacts {
        let m = &text.manifest.tokenizer;
        let tj: Value = serde_json::from_str(&m.tokenizer_json).unwrap_or(Value::Null);
        let tc: Value = serde_json::from_str(&m.tokenizer_config_json).unwrap_or(Value::Null);
        let tok = &text.tokenizer;
        let id_text = |id: u32| IdText {
            id,
            text: tok.piece(id).unwrap_or_default(),
        };
        let flag = |t: &Value, k: &str| t[k].as_bool().unwrap_or(false);
        let added_tokens: Vec<AddedToken> = tj["added_tokens"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| {
                        Some(AddedToken {
                            id: u32::try_from(t["id"].as_u64()?).ok()?,
                            content: t["content"].as_str()?.to_string(),
                            special: flag(t, "special"),
                            lstrip: flag(t, "lstrip"),
                            rstrip: flag(t, "rstrip"),
                            normalized: flag(t, "normalized"),
                            single_word: flag(t, "single_word"),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        // A named special token's text (a string, or an AddedToken object) to its id.
        let named = |k: &str| {
            let v = m.special_tokens.get(k).or_else(|| tc.get(k))?;
            let s = v.as_str().or_else(|| v["content"].as_str())?;
            let id = added_tokens
                .iter()
                .find(|t| t.content == s)
                .map(|t| t.id)
                .or_else(|| {
                    tok.encode(s, false)
                        .ok()
                        .filter(|i| i.len() == 1)
                        .map(|i| i[0])
                })?;
            Some(IdText {
                id,
                text: s.to_string(),
            })
        };
        let unk = tj["model"]["unk_token"].as_str().and_then(|s| {
            tok.encode(s, false)
                .ok()
                .filter(|i| i.len() == 1)
                .map(|i| IdText {
                    id: i[0],
                    text: s.to_string(),
                })
        });
        TokenizerFacts {
            model: describe(&tj["model"], &["vocab", "merges"]),
            normalizer: describe(&tj["normalizer"], &[]),
            pre_tokenizer: describe(&tj["pre_tokenizer"], &[]),
            post_processor: describe(&tj["post_processor"], &["special_tokens"]),
            decoder: describe(&tj["decoder"], &[]),
            bos: bos_of(text),
            eos: text
                .manifest
                .stop
                .eos_token_ids
                .iter()
                .map(|&i| id_text(i))
                .collect(),
            pad: named("pad_token"),
            unk,
            add_bos_token: m.add_bos_token,
            add_eos_token: m.add_eos_token,
            clean_up_config: tc["clean_up_tokenization_spaces"].as_bool(),
            clean_up_applied: text.cleans_up(),
            eos_source: text.manifest.stop.source.clone(),
            added_tokens,
        }
    }
}

/// The BOS: the manifest's id, or the tokenizer config's `bos_token` text as one id.
fn bos_of(text: &TextSide) -> Option<IdText> {
    let m = &text.manifest.tokenizer;
    let tok = &text.tokenizer;
    if let Some(id) = m.bos_token_id {
        return Some(IdText {
            id,
            text: tok.piece(id).unwrap_or_default(),
        });
    }
    let v = m.special_tokens.get("bos_token")?;
    let s = v.as_str().or_else(|| v["content"].as_str())?;
    let ids = tok.encode(s, false).ok()?;
    (ids.len() == 1).then(|| IdText {
        id: ids[0],
        text: s.to_string(),
    })
}

/// Whether a rendered prompt's ids begin with the BOS: the template wrote it (the
/// post-processor does not run on chat prompts).
pub fn template_added_bos(text: &TextSide, ids: &[u32]) -> bool {
    bos_of(text).is_some_and(|b| ids.first() == Some(&b.id))
}

/// A tokenizer.json component as one line: its `type`, then its scalar options in the
/// file's order; a `Sequence` lists its steps; a pattern shows as its string. `skip`
/// names bulky fields (the vocabulary) left out.
pub fn describe(v: &Value, skip: &[&str]) -> String {
    match v {
        Value::Null => "none".into(),
        Value::Object(o) => {
            if let Some(steps) = o
                .get("normalizers")
                .or_else(|| o.get("pretokenizers"))
                .or_else(|| o.get("processors"))
                .or_else(|| o.get("decoders"))
                .and_then(|s| s.as_array())
            {
                let inner: Vec<String> = steps.iter().map(|s| describe(s, skip)).collect();
                return format!("Sequence[{}]", inner.join(", "));
            }
            if let Some(p) = o.get("Regex").or_else(|| o.get("String")) {
                return format!("{:?}", p.as_str().unwrap_or(""));
            }
            let ty = o.get("type").and_then(|t| t.as_str()).unwrap_or("?");
            let opts: Vec<String> = o
                .iter()
                .filter(|(k, _)| *k != "type" && !skip.contains(&k.as_str()))
                .filter_map(|(k, v)| {
                    let shown = match v {
                        Value::Bool(_) | Value::Number(_) => v.to_string(),
                        Value::String(s) if s.chars().count() <= 40 => format!("{s:?}"),
                        Value::Object(_) => describe(v, skip),
                        _ => return None,
                    };
                    Some(format!("{k}={shown}"))
                })
                .collect();
            if opts.is_empty() {
                ty.to_string()
            } else {
                format!("{ty}({})", opts.join(", "))
            }
        }
        other => other.to_string(),
    }
}

/// How the forward pass runs this model, as the runtime applies it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecutionFacts {
    pub architecture: String,
    /// The rotary convention, base and scaling the runtime applies.
    pub rope: String,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub layers: usize,
    pub hidden: usize,
    pub intermediate: usize,
    pub rms_norm_eps: f64,
    /// The LM head is the embedding matrix.
    pub tied_head: bool,
    pub attention_bias: bool,
    /// Tensors by storage type, e.g. `q8_0 × 210, f32 × 61`.
    pub weights: String,
    /// What the products quantize activations to, and how the rest is computed.
    pub activations: String,
    /// The kernel path products run on (`scalar`, `avx2`, `avx512`, `amx`, `simd128`).
    pub kernels: String,
    pub threads: usize,
    /// The kernels' read-ahead of their weight streams, where the host measured it at
    /// load (`Model::tune_read_ahead`; wasm only).
    #[serde(default)]
    pub read_ahead: Option<crate::model::ReadAheadTuning>,
}

impl ExecutionFacts {
    /// The facts for `model` as loaded, with its thread count.
    pub fn of(model: &Model, text: &TextSide) -> ExecutionFacts {
        Self::of_manifest(&text.manifest, model.threads.count())
    }

    /// The facts a `.slm` will run with on this machine, on `threads` threads, read
    /// from its manifest without loading the weights.
    pub fn of_manifest(manifest: &Manifest, threads: usize) -> ExecutionFacts {
        let c = &manifest.model;
        let scaling = match &c.rope_scaling {
            None => "no scaling".to_string(),
            Some(s) => format!(
                "llama3 scaling (factor {}, low {} / high {} frequency factors, original context {})",
                s.factor, s.low_freq_factor, s.high_freq_factor, s.original_max_position_embeddings
            ),
        };
        let mut types = std::collections::BTreeMap::<String, usize>::new();
        for t in &manifest.tensors {
            *types.entry(t.dtype.name().to_string()).or_default() += 1;
        }
        let bits = crate::kernels::act_bits();
        ExecutionFacts {
            architecture: format!("{:?}", c.architecture).to_lowercase(),
            rope: format!(
                "rotate-half (HF / GPT-NeoX) over all {} dims, θ = {}, {scaling}, f32 frequencies",
                c.head_dim, c.rope_theta
            ),
            heads: c.num_heads,
            kv_heads: c.num_kv_heads,
            head_dim: c.head_dim,
            layers: c.num_layers,
            hidden: c.hidden_size,
            intermediate: c.intermediate_size,
            rms_norm_eps: c.rms_norm_eps,
            tied_head: c.tie_word_embeddings,
            attention_bias: c.attention_bias,
            weights: types
                .iter()
                .map(|(t, n)| format!("{t} × {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            activations: format!(
                "f32; a product with quantized weights quantizes its input per block to \
                 {bits}-bit integers (exact integer sums, f32 scales); f32 weights, \
                 attention, norms and softmax in f32"
            ),
            kernels: crate::kernels::active().name.to_string(),
            threads,
            read_ahead: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn components_read_as_one_line() {
        assert_eq!(describe(&Value::Null, &[]), "none");
        let bl = json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true});
        assert_eq!(
            describe(&bl, &[]),
            "ByteLevel(add_prefix_space=false, trim_offsets=true, use_regex=true)"
        );
        let seq = json!({"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "\\d"}, "behavior": "Isolated", "invert": false},
            {"type": "ByteLevel", "add_prefix_space": false}
        ]});
        assert_eq!(
            describe(&seq, &[]),
            "Sequence[Split(pattern=\"\\\\d\", behavior=\"Isolated\", invert=false), ByteLevel(add_prefix_space=false)]"
        );
        let bpe = json!({"type": "BPE", "dropout": null, "byte_fallback": false, "vocab": {"a": 0}, "merges": []});
        assert_eq!(
            describe(&bpe, &["vocab", "merges"]),
            "BPE(byte_fallback=false)"
        );
    }
}
