//! Rebuild an exact HF `tokenizer.json` from a GGUF's vocab, merges and token types.
//!
//! GGUF stores no pre-tokenizer graph, only a name (`tokenizer.ggml.pre`). For every
//! name we support we write out the original model's pipeline; any other name is refused
//! rather than approximated.
//!
//! Qwen2 note: the original Qwen2/2.5 tokenizer.json has an NFC normalizer before the
//! split regex. transformers' GGUF import and llama.cpp omit it, so they tokenize
//! decomposed (NFD) text differently from the model's training pipeline. We follow the
//! original pipeline (docs/architecture.md, "Tokenizer fidelity").

use serde_json::{json, Map, Value as J};

use super::gguf::{GgufFile, Value};
use crate::error::{Result, SlmError};

/// GGUF `tokenizer.ggml.token_type` values.
const TYPE_CONTROL: i64 = 3;
const TYPE_USER_DEFINED: i64 = 4;

/// Token texts that end generation in chat models (llama.cpp's end-of-generation set).
const END_OF_GENERATION: &[&str] = &[
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end_of_text|>",
    "<|end|>",
    "<end_of_turn>",
];

const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// What the importer learns from the GGUF tokenizer metadata.
pub struct GgufTokenizer {
    pub tokenizer_json: String,
    pub bos_token_id: Option<u32>,
    pub eos_token_id: Option<u32>,
    pub add_bos_token: bool,
    pub add_eos_token: bool,
    /// Template variables (`bos_token`, `eos_token`, `unk_token`, `pad_token`) → content.
    pub special_tokens: Map<String, J>,
    /// eos id plus every control token in [`END_OF_GENERATION`] (unsorted; the importer
    /// finalizes the set with `import::stop_table`).
    pub eos_token_ids: Vec<u32>,
    pub chat_template: Option<String>,
}

fn req<'a>(g: &'a GgufFile, key: &str) -> Result<&'a Value> {
    g.get(key)
        .ok_or_else(|| SlmError::unsupported(key, "<missing>", "required to rebuild the tokenizer"))
}

fn opt_id(g: &GgufFile, key: &str, n_vocab: usize) -> Result<Option<u32>> {
    match g.get(key) {
        None => Ok(None),
        Some(v) => match v.as_u64() {
            Some(id) if (id as usize) < n_vocab => Ok(Some(id as u32)),
            _ => Err(SlmError::malformed(
                "GGUF",
                format!("{key} = {} is not a vocab id", v.brief()),
            )),
        },
    }
}

pub fn build(g: &GgufFile) -> Result<GgufTokenizer> {
    let model = req(g, "tokenizer.ggml.model")?.as_str().unwrap_or("");
    if model != "gpt2" {
        return Err(SlmError::unsupported(
            "tokenizer.ggml.model",
            model,
            "only byte-level BPE (\"gpt2\") is supported",
        ));
    }
    let pre = g
        .get("tokenizer.ggml.pre")
        .and_then(|v| v.as_str())
        .unwrap_or("<missing>");
    let (normalizer, pre_tokenizer) = match pre {
        "smollm" => (
            J::Null,
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Digits", "individual_digits": true},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
            ]}),
        ),
        "qwen2" => (
            json!({"type": "NFC"}),
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated", "invert": false},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
            ]}),
        ),
        other => {
            return Err(SlmError::unsupported(
                "tokenizer.ggml.pre",
                other,
                "pre-tokenizer not supported (supported: smollm, qwen2)",
            ))
        }
    };

    let tokens = req(g, "tokenizer.ggml.tokens")?
        .as_array()
        .ok_or_else(|| SlmError::malformed("GGUF", "tokenizer.ggml.tokens is not an array"))?;
    let types = g
        .get("tokenizer.ggml.token_type")
        .and_then(|v| v.as_array())
        .unwrap_or(&[]);
    let merges = req(g, "tokenizer.ggml.merges")?
        .as_array()
        .ok_or_else(|| SlmError::malformed("GGUF", "tokenizer.ggml.merges is not an array"))?;

    let mut vocab = Map::with_capacity(tokens.len());
    let mut added = Vec::new();
    let mut texts = Vec::with_capacity(tokens.len());
    for (id, t) in tokens.iter().enumerate() {
        let text = t
            .as_str()
            .ok_or_else(|| SlmError::malformed("GGUF", format!("token {id} is not a string")))?;
        if vocab.insert(text.to_string(), json!(id)).is_some() {
            return Err(SlmError::malformed(
                "GGUF",
                format!("token {id} ({text:?}) appears twice in the vocab"),
            ));
        }
        let ty = match types.get(id) {
            Some(Value::I32(v)) => *v as i64,
            Some(v) => v.as_u64().map(|x| x as i64).unwrap_or(1),
            None => 1,
        };
        if ty == TYPE_CONTROL || ty == TYPE_USER_DEFINED {
            added.push(json!({
                "id": id, "content": text, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": ty == TYPE_CONTROL,
            }));
        }
        texts.push((text, ty));
    }
    let mut merge_list = Vec::with_capacity(merges.len());
    for (i, m) in merges.iter().enumerate() {
        let s = m
            .as_str()
            .ok_or_else(|| SlmError::malformed("GGUF", format!("merge {i} is not a string")))?;
        let (a, b) = s.split_once(' ').ok_or_else(|| {
            SlmError::malformed("GGUF", format!("merge {i} ({s:?}) has no space"))
        })?;
        merge_list.push(json!([a, b]));
    }

    let n = tokens.len();
    let bos = opt_id(g, "tokenizer.ggml.bos_token_id", n)?;
    let eos = opt_id(g, "tokenizer.ggml.eos_token_id", n)?;
    let unk = opt_id(g, "tokenizer.ggml.unknown_token_id", n)?;
    let pad = opt_id(g, "tokenizer.ggml.padding_token_id", n)?;
    let add_bos = g
        .get("tokenizer.ggml.add_bos_token")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let add_eos = g
        .get("tokenizer.ggml.add_eos_token")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);

    let mut special_tokens = Map::new();
    for (name, id) in [
        ("bos_token", bos),
        ("eos_token", eos),
        ("unk_token", unk),
        ("pad_token", pad),
    ] {
        if let Some(id) = id {
            special_tokens.insert(name.into(), json!(texts[id as usize].0));
        }
    }

    // A post-processor that adds exactly the tokens the GGUF asks for.
    let mut single = Vec::new();
    let mut specials = Map::new();
    let mut push_special = |id: u32, seq: &mut Vec<J>| {
        let text = texts[id as usize].0;
        seq.push(json!({"SpecialToken": {"id": text, "type_id": 0}}));
        specials.insert(
            text.into(),
            json!({"id": text, "ids": [id], "tokens": [text]}),
        );
    };
    if add_bos {
        let id = bos.ok_or_else(|| {
            SlmError::unsupported(
                "tokenizer.ggml.bos_token_id",
                "<missing>",
                "add_bos_token is true",
            )
        })?;
        push_special(id, &mut single);
    }
    single.push(json!({"Sequence": {"id": "A", "type_id": 0}}));
    if add_eos {
        let id = eos.ok_or_else(|| {
            SlmError::unsupported(
                "tokenizer.ggml.eos_token_id",
                "<missing>",
                "add_eos_token is true",
            )
        })?;
        push_special(id, &mut single);
    }
    let post = json!({"type": "TemplateProcessing", "single": single, "pair": single, "special_tokens": specials});

    let tk = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post,
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {
            "type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
            "vocab": vocab, "merges": merge_list,
        },
    });

    let mut eos_ids: Vec<u32> = texts
        .iter()
        .enumerate()
        .filter(|(_, (t, ty))| *ty == TYPE_CONTROL && END_OF_GENERATION.contains(t))
        .map(|(i, _)| i as u32)
        .collect();
    eos_ids.extend(eos);
    // llama.cpp ends generation at the end-of-turn and end-of-message ids too.
    eos_ids.extend(opt_id(g, "tokenizer.ggml.eot_token_id", n)?);
    eos_ids.extend(opt_id(g, "tokenizer.ggml.eom_token_id", n)?);
    Ok(GgufTokenizer {
        tokenizer_json: serde_json::to_string(&tk).expect("JSON values always serialize"),
        bos_token_id: bos,
        eos_token_id: eos,
        add_bos_token: add_bos,
        add_eos_token: add_eos,
        special_tokens,
        eos_token_ids: eos_ids,
        chat_template: g
            .get("tokenizer.chat_template")
            .and_then(|v| v.as_str())
            .map(String::from),
    })
}
