//! HF `config.json` → [`ModelConfig`].
//!
//! Every top-level key of the file gets exactly one of three fates:
//! - **applied**: read and turned into the runtime config (or checked to be the value
//!   the forward pass implements);
//! - **harmless**: on [`HARMLESS`], an explicit list of keys that cannot change the
//!   logits (ids, dtype, cache switches, bookkeeping), each with the reason;
//! - **refused**: anything else, with its name and value. A key we do not read might
//!   change the math, and a default applied in its place would be a silent
//!   approximation.
//!
//! RoPE is read from both layouts: transformers ≥ 5 writes `rope_parameters`
//! (`rope_type`, `rope_theta`, the scaling factors); transformers 4 wrote top-level
//! `rope_theta` and `rope_scaling`. Where both layouts are present they must agree.

use serde_json::{Map, Value};

use crate::error::{Result, SlmError};
use crate::model::config::{Architecture, Llama3RopeScaling, ModelConfig};

/// Keys read by [`to_runtime`].
const APPLIED: &[&str] = &[
    "architectures",
    "model_type",
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "max_position_embeddings",
    "rms_norm_eps",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "tie_word_embeddings",
    "attention_bias",
    "mlp_bias",
    "hidden_act",
    "use_sliding_window",
    "sliding_window",
    "max_window_layers",
    "layer_types",
    "pretraining_tp",
    "is_encoder_decoder",
    "pruned_heads",
    "quantization_config",
];

/// Keys that cannot change the logits, each with the reason. Sampling defaults that old
/// configs carry (`temperature`, `top_p`, …) are here for the math; the importer also
/// hands them to the "model" preset when generation_config.json is absent, as
/// transformers' `GenerationConfig.from_model_config` does.
pub const HARMLESS: &[(&str, &str)] = &[
    ("_name_or_path", "provenance"),
    ("transformers_version", "provenance"),
    ("torch_dtype", "the tensors carry their own dtypes"),
    ("dtype", "the tensors carry their own dtypes"),
    ("use_bfloat16", "the tensors carry their own dtypes"),
    ("use_cache", "a KV cache does not change the logits"),
    (
        "bos_token_id",
        "token ids come from the tokenizer and generation_config",
    ),
    (
        "eos_token_id",
        "token ids come from the tokenizer and generation_config",
    ),
    (
        "pad_token_id",
        "padding is not used in single-sequence inference",
    ),
    ("sep_token_id", "not used by a causal LM"),
    ("decoder_start_token_id", "not used by a causal LM"),
    ("initializer_range", "initialization only"),
    ("attention_dropout", "dropout is off at inference"),
    ("hidden_dropout", "dropout is off at inference"),
    ("embd_pdrop", "dropout is off at inference"),
    ("resid_pdrop", "dropout is off at inference"),
    ("output_attentions", "output selection"),
    ("output_hidden_states", "output selection"),
    ("return_dict", "output selection"),
    ("torchscript", "export switch"),
    ("tf_legacy_loss", "training loss"),
    ("problem_type", "training head"),
    ("id2label", "classification heads only"),
    ("label2id", "classification heads only"),
    ("num_labels", "classification heads only"),
    ("finetuning_task", "provenance"),
    ("task_specific_params", "pipeline defaults"),
    ("tokenizer_class", "the tokenizer is tokenizer.json"),
    ("prefix", "pipeline defaults"),
    ("is_decoder", "a causal LM is a decoder"),
    (
        "add_cross_attention",
        "false for a causal LM; no cross-attention tensors",
    ),
    ("tie_encoder_decoder", "encoder-decoder only"),
    (
        "chunk_size_feed_forward",
        "chunking the MLP does not change its result",
    ),
    ("cross_attention_hidden_size", "encoder-decoder only"),
    ("architectures_version", "provenance"),
    ("max_length", "sampling default (generation_config)"),
    ("min_length", "sampling default (generation_config)"),
    ("do_sample", "sampling default (generation_config)"),
    ("early_stopping", "sampling default (generation_config)"),
    ("num_beams", "sampling default (generation_config)"),
    ("num_beam_groups", "sampling default (generation_config)"),
    ("diversity_penalty", "sampling default (generation_config)"),
    ("temperature", "sampling default (generation_config)"),
    ("top_k", "sampling default (generation_config)"),
    ("top_p", "sampling default (generation_config)"),
    ("typical_p", "sampling default (generation_config)"),
    ("repetition_penalty", "sampling default (generation_config)"),
    ("length_penalty", "sampling default (generation_config)"),
    (
        "no_repeat_ngram_size",
        "sampling default (generation_config)",
    ),
    (
        "encoder_no_repeat_ngram_size",
        "sampling default (generation_config)",
    ),
    ("bad_words_ids", "sampling default (generation_config)"),
    (
        "num_return_sequences",
        "sampling default (generation_config)",
    ),
    ("output_scores", "sampling default (generation_config)"),
    (
        "return_dict_in_generate",
        "sampling default (generation_config)",
    ),
    (
        "forced_bos_token_id",
        "sampling default (generation_config)",
    ),
    (
        "forced_eos_token_id",
        "sampling default (generation_config)",
    ),
    (
        "remove_invalid_values",
        "sampling default (generation_config)",
    ),
    (
        "exponential_decay_length_penalty",
        "sampling default (generation_config)",
    ),
    ("suppress_tokens", "sampling default (generation_config)"),
    (
        "begin_suppress_tokens",
        "sampling default (generation_config)",
    ),
];

/// The config.json keys that transformers turns into a generation config when the
/// model directory has no generation_config.json.
pub fn legacy_generation_keys(config: &Map<String, Value>) -> Map<String, Value> {
    HARMLESS
        .iter()
        .filter(|(_, why)| why.starts_with("sampling default"))
        .filter_map(|(k, _)| config.get(*k).map(|v| (k.to_string(), v.clone())))
        .chain(
            ["bos_token_id", "eos_token_id", "pad_token_id"]
                .iter()
                .filter_map(|k| config.get(*k).map(|v| (k.to_string(), v.clone()))),
        )
        .filter(|(_, v)| !v.is_null())
        .collect()
}

fn refuse(field: &str, v: &Value, why: &str) -> SlmError {
    SlmError::unsupported(format!("config.json {field}"), brief(v), why)
}

/// A JSON value for an error message, cut to a readable length.
fn brief(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 120 {
        let cut: String = s.chars().take(117).collect();
        format!("{cut}...")
    } else {
        s
    }
}

/// Field readers that refuse a present value of the wrong form instead of defaulting.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn uint(&self, k: &str) -> Result<Option<usize>> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .filter(|&x| x <= u32::MAX as u64)
                .map(|x| Some(x as usize))
                .ok_or_else(|| refuse(k, v, "expected a non-negative integer")),
        }
    }
    fn need_uint(&self, k: &str) -> Result<usize> {
        self.uint(k)?
            .ok_or_else(|| refuse(k, &Value::Null, "required hyper-parameter"))
    }
    fn num(&self, k: &str) -> Result<Option<f64>> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| refuse(k, v, "expected a number")),
        }
    }
    fn boolean(&self, k: &str) -> Result<Option<bool>> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(refuse(k, v, "expected true or false")),
        }
    }
    fn string(&self, k: &str) -> Result<Option<&str>> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(refuse(k, v, "expected a string")),
        }
    }
}

/// Parse config.json text into the runtime config, giving every key its fate.
pub fn parse(text: &str) -> Result<ModelConfig> {
    let v: Value = serde_json::from_str(text).map_err(|e| SlmError::malformed("config.json", e))?;
    let Value::Object(map) = v else {
        return Err(SlmError::malformed("config.json", "not a JSON object"));
    };
    to_runtime(&map)
}

pub fn to_runtime(map: &Map<String, Value>) -> Result<ModelConfig> {
    for (k, v) in map {
        if !APPLIED.contains(&k.as_str()) && !HARMLESS.iter().any(|(h, _)| h == k) {
            return Err(refuse(
                k,
                v,
                "not read by this runtime and not known to leave the logits unchanged",
            ));
        }
    }
    let f = Fields(map);
    let arch = match map.get("architectures") {
        Some(Value::Array(a)) if a.len() == 1 && a[0] == "LlamaForCausalLM" => Architecture::Llama,
        Some(Value::Array(a)) if a.len() == 1 && a[0] == "Qwen2ForCausalLM" => Architecture::Qwen2,
        other => {
            return Err(refuse(
                "architectures",
                other.unwrap_or(&Value::Null),
                "supported: [\"LlamaForCausalLM\"], [\"Qwen2ForCausalLM\"]",
            ))
        }
    };
    let want_type = match arch {
        Architecture::Llama => "llama",
        Architecture::Qwen2 => "qwen2",
    };
    if let Some(t) = f.string("model_type")? {
        if t != want_type {
            return Err(refuse(
                "model_type",
                &map["model_type"],
                &format!("{} expects model_type {want_type:?}", arch_name(arch)),
            ));
        }
    }
    if let Some(act) = f.string("hidden_act")? {
        if act != "silu" {
            return Err(refuse(
                "hidden_act",
                &map["hidden_act"],
                "only silu (SwiGLU) is implemented",
            ));
        }
    }
    for (k, why) in [
        ("mlp_bias", "MLP biases are not implemented"),
        (
            "is_encoder_decoder",
            "encoder-decoder models are not implemented",
        ),
        (
            "use_sliding_window",
            "sliding-window attention is not implemented",
        ),
    ] {
        if f.boolean(k)? == Some(true) {
            return Err(refuse(k, &Value::Bool(true), why));
        }
    }
    if let Some(tp) = f.uint("pretraining_tp")? {
        if tp != 1 {
            return Err(refuse(
                "pretraining_tp",
                &map["pretraining_tp"],
                "only 1 is supported",
            ));
        }
    }
    for k in ["pruned_heads", "quantization_config"] {
        match map.get(k) {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) if o.is_empty() => {}
            Some(v) => {
                return Err(refuse(
                    k,
                    v,
                    if k == "pruned_heads" {
                        "pruned attention heads are not implemented"
                    } else {
                        "pre-quantized checkpoints (bitsandbytes, GPTQ, AWQ, …) are not read"
                    },
                ))
            }
        }
    }
    // Sliding windows: Llama has none; Qwen2 applies one only with use_sliding_window,
    // which is refused above, so `sliding_window` and `max_window_layers` are inert.
    if arch == Architecture::Llama {
        if let Some(w) = map.get("sliding_window").filter(|w| !w.is_null()) {
            return Err(refuse(
                "sliding_window",
                w,
                "sliding-window attention is not implemented",
            ));
        }
    }
    f.uint("max_window_layers")?;
    if let Some(lt) = map.get("layer_types").filter(|v| !v.is_null()) {
        let all_full = lt
            .as_array()
            .is_some_and(|a| a.iter().all(|t| t == "full_attention"));
        if !all_full {
            return Err(refuse(
                "layer_types",
                lt,
                "only full_attention layers are implemented",
            ));
        }
    }
    let attention_bias = f.boolean("attention_bias")?.unwrap_or(false);
    if arch == Architecture::Llama && attention_bias {
        return Err(refuse(
            "attention_bias",
            &Value::Bool(true),
            "Llama attention biases (which also bias o_proj) are not implemented",
        ));
    }
    let (rope_theta, rope_scaling) = resolve_rope(map)?;
    let heads = f.need_uint("num_attention_heads")?;
    let hidden = f.need_uint("hidden_size")?;
    let head_dim = match f.uint("head_dim")? {
        Some(d) => d,
        None => hidden.checked_div(heads).unwrap_or(0),
    };
    let num_layers = f.need_uint("num_hidden_layers")?;
    if let Some(lt) = map.get("layer_types").and_then(|v| v.as_array()) {
        if lt.len() != num_layers {
            return Err(refuse(
                "layer_types",
                &map["layer_types"],
                "must list one type per hidden layer",
            ));
        }
    }
    let rms_norm_eps = f
        .num("rms_norm_eps")?
        .ok_or_else(|| refuse("rms_norm_eps", &Value::Null, "required hyper-parameter"))?;
    let cfg = ModelConfig {
        architecture: arch,
        vocab_size: f.need_uint("vocab_size")?,
        hidden_size: hidden,
        intermediate_size: f.need_uint("intermediate_size")?,
        num_layers,
        num_heads: heads,
        num_kv_heads: f.uint("num_key_value_heads")?.unwrap_or(heads),
        head_dim,
        max_position_embeddings: f.need_uint("max_position_embeddings")?,
        rms_norm_eps,
        rope_theta,
        rope_scaling,
        tie_word_embeddings: f.boolean("tie_word_embeddings")?.unwrap_or(false),
        // Qwen2 always has Q/K/V biases; Llama only when attention_bias says so.
        attention_bias: arch == Architecture::Qwen2 || attention_bias,
    };
    cfg.validate()?;
    Ok(cfg)
}

fn arch_name(a: Architecture) -> &'static str {
    match a {
        Architecture::Llama => "LlamaForCausalLM",
        Architecture::Qwen2 => "Qwen2ForCausalLM",
    }
}

/// transformers' default θ for Llama and Qwen2 configs that state none.
const DEFAULT_THETA: f64 = 10000.0;

/// RoPE as one layout states it: θ (if stated) and the scaling.
#[derive(Debug, PartialEq)]
struct RopeSpec {
    theta: Option<f64>,
    scaling: Option<Llama3RopeScaling>,
}

/// Read RoPE from `rope_parameters` (transformers ≥ 5) and from `rope_theta` +
/// `rope_scaling` (transformers 4); refuse where both state it and they disagree.
fn resolve_rope(map: &Map<String, Value>) -> Result<(f64, Option<Llama3RopeScaling>)> {
    let f = Fields(map);
    let max_pos = f.uint("max_position_embeddings")?;
    let legacy_theta = f.num("rope_theta")?;
    let legacy_scaling = match map.get("rope_scaling") {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) => Some(rope_object("rope_scaling", o, false, max_pos)?.scaling),
        Some(v) => return Err(refuse("rope_scaling", v, "expected an object or null")),
    };
    let params = match map.get("rope_parameters") {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) => Some(rope_object("rope_parameters", o, true, max_pos)?),
        Some(v) => return Err(refuse("rope_parameters", v, "expected an object or null")),
    };
    let Some(p) = params else {
        return Ok((
            legacy_theta.unwrap_or(DEFAULT_THETA),
            legacy_scaling.flatten(),
        ));
    };
    if let (Some(a), Some(b)) = (legacy_theta, p.theta) {
        if a != b {
            return Err(SlmError::unsupported(
                "config.json rope_theta",
                a,
                format!("disagrees with rope_parameters.rope_theta = {b}"),
            ));
        }
    }
    if let Some(s) = &legacy_scaling {
        if *s != p.scaling {
            return Err(SlmError::unsupported(
                "config.json rope_scaling",
                brief(&map["rope_scaling"]),
                format!(
                    "disagrees with rope_parameters = {}",
                    brief(&map["rope_parameters"])
                ),
            ));
        }
    }
    Ok((p.theta.or(legacy_theta).unwrap_or(DEFAULT_THETA), p.scaling))
}

/// One RoPE object: `rope_type` (or the older `type`) "default" or "llama3", with
/// exactly the keys that type reads. `rope_theta` is read only in `rope_parameters`.
/// A llama3 object without `original_max_position_embeddings` takes
/// `max_position_embeddings`, as transformers' `standardize_rope_params` does.
fn rope_object(
    field: &str,
    o: &Map<String, Value>,
    with_theta: bool,
    max_pos: Option<usize>,
) -> Result<RopeSpec> {
    let ty_v = o.get("rope_type").or_else(|| o.get("type"));
    let ty = match ty_v {
        Some(Value::String(s)) => s.as_str(),
        None if with_theta => "default",
        Some(v) => {
            return Err(refuse(
                &format!("{field}.rope_type"),
                v,
                "expected a string",
            ))
        }
        None => {
            return Err(refuse(
                &format!("{field}.rope_type"),
                &Value::Null,
                "required in rope_scaling",
            ))
        }
    };
    if let (Some(a), Some(b)) = (o.get("rope_type"), o.get("type")) {
        if a != b {
            return Err(refuse(
                &format!("{field}.type"),
                b,
                "disagrees with rope_type",
            ));
        }
    }
    let mut allowed = vec!["rope_type", "type"];
    if with_theta {
        allowed.push("rope_theta");
    }
    let llama3_keys = [
        "factor",
        "low_freq_factor",
        "high_freq_factor",
        "original_max_position_embeddings",
    ];
    match ty {
        "default" => {}
        "llama3" => allowed.extend(llama3_keys),
        other => {
            return Err(refuse(
                &format!("{field}.rope_type"),
                &Value::String(other.into()),
                "only \"default\" and \"llama3\" RoPE are implemented",
            ))
        }
    }
    for (k, v) in o {
        // A partial rotary factor of 1 rotates every dimension, which is what we do.
        if k == "partial_rotary_factor" && v.as_f64() == Some(1.0) {
            continue;
        }
        if !allowed.contains(&k.as_str()) {
            return Err(refuse(
                &format!("{field}.{k}"),
                v,
                &format!("not read for rope_type {ty:?}"),
            ));
        }
    }
    let num = |k: &str| -> Result<f64> {
        match o.get(k) {
            Some(v) => v
                .as_f64()
                .ok_or_else(|| refuse(&format!("{field}.{k}"), v, "expected a number")),
            None => Err(refuse(
                &format!("{field}.{k}"),
                &Value::Null,
                &format!("required for rope_type {ty:?}"),
            )),
        }
    };
    let theta = if with_theta && o.contains_key("rope_theta") {
        Some(num("rope_theta")?)
    } else {
        None
    };
    let scaling = if ty == "llama3" {
        let orig = match (o.contains_key("original_max_position_embeddings"), max_pos) {
            (false, Some(m)) => m as f64,
            _ => num("original_max_position_embeddings")?,
        };
        if !(orig >= 1.0 && orig.fract() == 0.0 && orig <= u32::MAX as f64) {
            return Err(refuse(
                &format!("{field}.original_max_position_embeddings"),
                &Value::from(orig),
                "expected a positive integer",
            ));
        }
        let s = Llama3RopeScaling {
            factor: num("factor")?,
            low_freq_factor: num("low_freq_factor")?,
            high_freq_factor: num("high_freq_factor")?,
            original_max_position_embeddings: orig as u64,
        };
        if !(s.factor > 0.0
            && s.factor.is_finite()
            && s.high_freq_factor > s.low_freq_factor
            && s.low_freq_factor > 0.0
            && s.high_freq_factor.is_finite())
        {
            return Err(SlmError::unsupported(
                format!("config.json {field}"),
                brief(&Value::Object(o.clone())),
                "inconsistent llama3 factors",
            ));
        }
        Some(s)
    } else {
        None
    };
    Ok(RopeSpec { theta, scaling })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Map<String, Value> {
        json!({
            "architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "vocab_size": 100, "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
        })
        .as_object()
        .cloned()
        .unwrap()
    }

    fn with(kv: &[(&str, Value)]) -> Result<ModelConfig> {
        let mut m = base();
        for (k, v) in kv {
            m.insert(k.to_string(), v.clone());
        }
        to_runtime(&m)
    }

    fn llama3() -> Value {
        json!({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
    }

    #[test]
    fn theta_defaults_only_when_no_layout_states_it() {
        assert_eq!(with(&[]).unwrap().rope_theta, 10000.0);
        let c = with(&[(
            "rope_parameters",
            json!({"rope_type": "default", "rope_theta": 500000.0}),
        )])
        .unwrap();
        assert_eq!((c.rope_theta, c.rope_scaling), (500000.0, None));
        assert_eq!(with(&[("rope_theta", json!(1e6))]).unwrap().rope_theta, 1e6);
    }

    #[test]
    fn transformers5_llama3_parameters_equal_the_v4_layout() {
        let mut p = llama3();
        p["rope_theta"] = json!(500000.0);
        let v5 = with(&[("rope_parameters", p)]).unwrap();
        let v4 = with(&[("rope_theta", json!(500000.0)), ("rope_scaling", llama3())]).unwrap();
        assert_eq!(v5, v4);
        assert_eq!(v5.rope_scaling.as_ref().unwrap().factor, 8.0);
    }

    #[test]
    fn disagreeing_layouts_are_refused_by_name() {
        let e = with(&[
            ("rope_theta", json!(10000.0)),
            (
                "rope_parameters",
                json!({"rope_type": "default", "rope_theta": 500000.0}),
            ),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("rope_theta") && e.contains("500000"), "{e}");
        let e = with(&[
            ("rope_scaling", llama3()),
            (
                "rope_parameters",
                json!({"rope_type": "default", "rope_theta": 10000.0}),
            ),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("rope_scaling") && e.contains("disagrees"), "{e}");
    }

    #[test]
    fn unread_keys_are_refused_with_their_value() {
        for (k, v, want) in [
            ("logit_scale", json!(0.5), "config.json logit_scale = 0.5"),
            (
                "rope_parameters",
                json!({"rope_type": "yarn", "factor": 4.0}),
                "rope_parameters.rope_type = \"yarn\"",
            ),
            (
                "rope_parameters",
                json!({"rope_type": "default", "rope_theta": 1e4, "mrope_section": [1]}),
                "rope_parameters.mrope_section",
            ),
            (
                "rope_scaling",
                json!({"rope_type": "default", "factor": 2.0}),
                "rope_scaling.factor = 2.0",
            ),
            ("rope_theta", json!("500000"), "rope_theta = \"500000\""),
            (
                "layer_types",
                json!(["full_attention", "sliding_attention"]),
                "layer_types",
            ),
            (
                "quantization_config",
                json!({"quant_method": "gptq"}),
                "quantization_config",
            ),
            (
                "num_key_value_heads",
                json!(2.5),
                "num_key_value_heads = 2.5",
            ),
        ] {
            let e = with(&[(k, v)]).unwrap_err().to_string();
            assert!(e.contains(want), "{k}: {e}");
        }
    }

    #[test]
    fn harmless_keys_change_nothing() {
        let plain = with(&[]).unwrap();
        let noisy = with(&[
            ("use_cache", json!(true)),
            ("torch_dtype", json!("bfloat16")),
            ("transformers_version", json!("5.24.0")),
            ("bos_token_id", json!(1)),
            ("layer_types", json!(["full_attention", "full_attention"])),
            ("rope_scaling", Value::Null),
            ("temperature", json!(0.7)),
        ])
        .unwrap();
        assert_eq!(plain, noisy);
    }

    #[test]
    fn legacy_generation_keys_feed_the_model_preset() {
        let mut m = base();
        m.insert("temperature".into(), json!(0.6));
        m.insert("eos_token_id".into(), json!(2));
        m.insert("pad_token_id".into(), Value::Null);
        let g = legacy_generation_keys(&m);
        assert_eq!(
            Value::Object(g),
            json!({"temperature": 0.6, "eos_token_id": 2})
        );
    }
}
