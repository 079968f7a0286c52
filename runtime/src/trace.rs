//! The generation record: what `slm generate --trace` writes and what the page exports
//! for a turn, one schema built here for both. With `timings` removed, the CLI's
//! record and the page's for the same `.slm`, messages, settings and seed are the same
//! bytes (e2e `trace.spec` checks it).

use serde_json::{json, Value};

use crate::engine::{Engine, Generation};
use crate::format::layout::sha256_hex;
use crate::sampling::SamplerConfig;

/// The record of one generation from prompt `ids` (rendered from `rendered`).
pub fn record(
    eng: &Engine,
    rendered: &str,
    ids: &[u32],
    sampler: &SamplerConfig,
    g: &Generation,
) -> Value {
    let m = &eng.text.manifest;
    let tok: Value = serde_json::from_str(&m.tokenizer.tokenizer_json).unwrap_or(Value::Null);
    let special: std::collections::BTreeSet<u64> = tok["added_tokens"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|t| t["special"] == true)
                .filter_map(|t| t["id"].as_u64())
                .collect()
        })
        .unwrap_or_default();
    let used: Vec<Value> = ids
        .iter()
        .filter(|i| special.contains(&(**i as u64)))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|&i| json!({"id": i, "text": eng.text.tokenizer.piece(i)}))
        .collect();
    let kv_len = g.prompt_tokens + g.ids.len();
    json!({
        "model": {
            "data_sha256": m.data.sha256,
            "tokenizer_sha256": sha256_hex(m.tokenizer.tokenizer_json.as_bytes()),
            "source_files": m.provenance.source_files,
            "architecture": m.model.architecture,
            "num_heads": m.model.num_heads,
            "num_kv_heads": m.model.num_kv_heads,
            "quant": m.provenance.quant,
        },
        "prompt": {
            "rendered_sha256": sha256_hex(rendered.as_bytes()),
            "ids": ids,
            "special_tokens_used": used,
            "template_added_bos": crate::facts::template_added_bos(&eng.text, ids),
        },
        "sampler": sampler,
        "steps": g.steps,
        "stop_reason": g.stop_reason,
        "stop_detail": g.stop_detail,
        "timings": g.timings,
        "kv_len": kv_len,
        "memory": {"weight_bytes": eng.model.weight_bytes(), "kv_bytes_per_token": eng.model.cfg.num_layers * eng.model.cfg.kv_dim() * 8},
    })
}

/// A record without its `timings`: the part two runs of the same generation share.
pub fn without_timings(mut record: Value) -> Value {
    if let Some(o) = record.as_object_mut() {
        o.remove("timings");
    }
    record
}
