//! The quality gate: a `.slm` file against a golden pack made by the reference
//! (transformers 5.24, `reference/make_goldens.py`), in stages that stop at the first
//! failure:
//!
//! 1. **template**: the rendered prompt bytes of every case (and the cases where the
//!    reference's template refused);
//! 2. **ids**: the prompt token ids;
//! 3. **logits**: first-step logits on the pack's recorded ids (the top 64 and every
//!    127th id). A file whose weights are all floats must be within 1e-4 of the f32
//!    reference; a quantized file within the q8 band: cosine ≥ 0.9995 on the recorded
//!    ids and the reference's top-1 in at least 99% of cases;
//! 4. **greedy**: greedy continuations, token for token, with the same stop reason;
//! 5. **seeded**: seeded sampled traces, token for token: the reference's logits through
//!    transformers' processors and this runtime's documented draw (docs/slm-format.md).
//!
//! The result is an [`Evidence`] record bound to the file (data and tokenizer SHA-256)
//! and to the pack (its SHA-256). The page shows "reference-verified" only for evidence
//! whose bindings match the loaded file.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::engine::{argmax, Engine, GenerateOptions, Generation};
use crate::error::{Result, SlmError};
use crate::format::layout::sha256_hex;
use crate::format::manifest::Manifest;
use crate::quant::DType;
use crate::sampling::SamplerConfig;

pub const EVIDENCE_FORMAT: &str = "tinyrustlm.gate-evidence";
pub const EVIDENCE_VERSION: u32 = 1;

/// f32 parity: max |logit − reference| on a float file.
pub const F32_TOLERANCE: f32 = 1e-4;
/// The q8 band for quantized files.
pub const BAND_MIN_COSINE: f64 = 0.9995;
pub const BAND_MIN_TOP1: f64 = 0.99;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Template,
    Ids,
    Logits,
    Greedy,
    Seeded,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    ReferenceVerified,
    Failed,
}

impl Stage {
    /// The name the record and every view use (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Template => "template",
            Stage::Ids => "ids",
            Stage::Logits => "logits",
            Stage::Greedy => "greedy",
            Stage::Seeded => "seeded",
        }
    }
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::ReferenceVerified => "reference-verified",
            Verdict::Failed => "failed",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StageResult {
    pub stage: Stage,
    pub passed: bool,
    /// Cases (or traces) checked.
    pub checked: usize,
    pub criterion: String,
    pub figures: Value,
    /// The first few failures, for a person to read.
    pub failures: Vec<String>,
}

impl StageResult {
    /// The figures as words: `max_abs_diff 5.4e-2, worst_cosine 0.999998`.
    pub fn figures_text(&self) -> String {
        self.figures
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| format!("{k} {}", v.as_str().map_or(v.to_string(), String::from)))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    }
}

/// What the evidence is about: the file's bytes and its tokenizer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileBinding {
    pub data_sha256: String,
    pub tokenizer_sha256: String,
    /// "float" (every tensor f32/f16: the 1e-4 criterion) or "quantized" (the band).
    pub weights: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PackBinding {
    pub sha256: String,
    pub model: String,
    pub source_id: Option<String>,
    pub reference: Value,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Evidence {
    pub format: String,
    pub version: u32,
    pub verdict: Verdict,
    pub failed_stage: Option<Stage>,
    pub file: FileBinding,
    pub goldens: PackBinding,
    pub stages: Vec<StageResult>,
    /// The native runtime that ran the gate: version, kernel path, activation bits.
    pub runtime: Value,
}

/// The binding of a loaded file.
pub fn binding_of(m: &Manifest) -> FileBinding {
    let float = m
        .tensors
        .iter()
        .all(|t| matches!(t.dtype, DType::F32 | DType::F16));
    FileBinding {
        data_sha256: m.data.sha256.clone(),
        tokenizer_sha256: sha256_hex(m.tokenizer.tokenizer_json.as_bytes()),
        weights: if float { "float" } else { "quantized" }.into(),
    }
}

impl Evidence {
    /// Parse an evidence record, refusing other formats and versions by name.
    pub fn parse(text: &str) -> Result<Evidence> {
        let e: Evidence =
            serde_json::from_str(text).map_err(|e| SlmError::malformed("gate evidence", e))?;
        if e.format != EVIDENCE_FORMAT || e.version != EVIDENCE_VERSION {
            return Err(SlmError::malformed(
                "gate evidence",
                format!(
                    "format {:?} version {}, expected {EVIDENCE_FORMAT:?} version {EVIDENCE_VERSION}",
                    e.format, e.version
                ),
            ));
        }
        Ok(e)
    }

    /// Whether this record speaks for `m`: the same data and tokenizer bytes. A record
    /// for another file is refused, naming the hash that differs.
    pub fn check_binding(&self, m: &Manifest) -> Result<()> {
        let have = binding_of(m);
        for (what, want, got) in [
            ("data SHA-256", &self.file.data_sha256, &have.data_sha256),
            (
                "tokenizer SHA-256",
                &self.file.tokenizer_sha256,
                &have.tokenizer_sha256,
            ),
        ] {
            if want != got {
                return Err(SlmError::Checksum {
                    detail: format!(
                        "the evidence is for another file: its {what} is {want}, this file's is {got}"
                    ),
                    chunk: None,
                });
            }
        }
        Ok(())
    }

    /// One line for a model card.
    pub fn summary(&self) -> String {
        let fig = |s: Stage| {
            self.stages
                .iter()
                .find(|r| r.stage == s)
                .map(|r| r.figures.clone())
        };
        match self.verdict {
            Verdict::ReferenceVerified => {
                let l = fig(Stage::Logits).unwrap_or_default();
                let cases = self.stages.first().map_or(0, |s| s.checked);
                format!(
                    "reference-verified against {} ({} cases): bytes and ids equal; logits max |diff| {}, worst cosine {}, top-1 {}; greedy and seeded traces equal",
                    self.goldens.reference["transformers"]
                        .as_str()
                        .map(|v| format!("transformers {v}"))
                        .unwrap_or_else(|| "the reference".into()),
                    cases,
                    l["max_abs_diff"].as_str().unwrap_or("?"),
                    l["worst_cosine"].as_str().unwrap_or("?"),
                    l["top1"].as_str().unwrap_or("?"),
                )
            }
            Verdict::Failed => format!(
                "failed the {} stage",
                self.failed_stage.map_or("?", Stage::as_str)
            ),
        }
    }
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    ab / (aa.sqrt() * bb.sqrt())
}

fn u32s(v: &Value) -> Vec<u32> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_u64())
                .map(|x| x as u32)
                .collect()
        })
        .unwrap_or_default()
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
        .unwrap_or_default()
}

/// Where a generation departs from the reference's tokens and stop reason: the index
/// of the first differing token, or None when both agree.
fn first_difference(out: &Generation, want: &[u32], stop: &Value) -> Option<usize> {
    (out.ids != want || Some(out.stop_reason.as_str()) != stop.as_str())
        .then(|| out.ids.iter().zip(want).take_while(|(a, b)| a == b).count())
}

/// Fixed clock of the goldens (templates that call strftime_now).
const PACK_NOW: i64 = 1_721_952_000;
const MAX_FAILURES: usize = 5;

/// Run every stage of `pack` (the golden pack's JSON text) against `engine`.
pub fn run(engine: &Engine, pack_text: &str, runtime: Value) -> Result<Evidence> {
    let pack: Value =
        serde_json::from_str(pack_text).map_err(|e| SlmError::malformed("golden pack", e))?;
    let cases = pack["cases"]
        .as_array()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| SlmError::malformed("golden pack", "no cases"))?;
    let m = &engine.text.manifest;
    let file = binding_of(m);
    let float = file.weights == "float";
    let goldens = PackBinding {
        sha256: sha256_hex(pack_text.as_bytes()),
        model: pack["model"].as_str().unwrap_or("?").into(),
        source_id: pack["source_id"].as_str().map(String::from),
        reference: pack["reference"].clone(),
    };
    let mut stages = Vec::new();
    let done = |stages: Vec<StageResult>| {
        let failed = stages.iter().find(|s| !s.passed).map(|s| s.stage);
        Evidence {
            format: EVIDENCE_FORMAT.into(),
            version: EVIDENCE_VERSION,
            verdict: if failed.is_none() {
                Verdict::ReferenceVerified
            } else {
                Verdict::Failed
            },
            failed_stage: failed,
            file: file.clone(),
            goldens: goldens.clone(),
            stages,
            runtime: runtime.clone(),
        }
    };
    let stage =
        |stage: Stage, checked, criterion: &str, figures, failures: Vec<String>| StageResult {
            stage,
            passed: failures.is_empty(),
            checked,
            criterion: criterion.into(),
            figures,
            failures: failures.into_iter().take(MAX_FAILURES).collect(),
        };
    let name = |c: &Value| c["name"].as_str().unwrap_or("?").to_string();

    // 1. Template bytes.
    let mut fails = Vec::new();
    let mut rendered = Vec::new();
    for c in cases {
        let tools = Some(&c["tools"]).filter(|t| !t.is_null());
        let r = engine.text.render(&c["messages"], tools, true, PACK_NOW);
        match (r, c.get("render_error")) {
            (Err(_), Some(_)) => rendered.push(None),
            (Ok(_), Some(want)) => {
                fails.push(format!(
                    "{}: rendered, but the reference refused: {want}",
                    name(c)
                ));
                rendered.push(None);
            }
            (Err(e), None) => {
                fails.push(format!("{}: {e}", name(c)));
                rendered.push(None);
            }
            (Ok(r), None) => {
                if Some(r.as_str()) != c["rendered"].as_str() {
                    fails.push(format!(
                        "{}: rendered SHA-256 {} differs from the reference's {}",
                        name(c),
                        sha256_hex(r.as_bytes()),
                        c["rendered_sha256"]
                    ));
                }
                rendered.push(Some(r));
            }
        }
    }
    stages.push(stage(
        Stage::Template,
        cases.len(),
        "rendered bytes equal transformers' apply_chat_template",
        json!({"cases": cases.len()}),
        fails,
    ));
    if !stages[0].passed {
        return Ok(done(stages));
    }

    // 2. Prompt ids.
    let mut fails = Vec::new();
    let mut prompts = Vec::new();
    for (c, r) in cases.iter().zip(&rendered) {
        let Some(r) = r else {
            prompts.push(None);
            continue;
        };
        let ids = engine.text.encode_rendered(r)?;
        if ids != u32s(&c["ids"]) {
            fails.push(format!("{}: prompt ids differ", name(c)));
        }
        prompts.push(Some(ids));
    }
    stages.push(stage(
        Stage::Ids,
        prompts.iter().flatten().count(),
        "prompt ids equal the reference tokenizer's",
        json!({}),
        fails,
    ));
    if !stages[1].passed {
        return Ok(done(stages));
    }

    // 3. First-step logits.
    let (mut worst_diff, mut worst_cos, mut top1, mut n) = (0f64, 1f64, 0usize, 0usize);
    let mut fails = Vec::new();
    for (c, ids) in cases.iter().zip(&prompts) {
        let Some(ids) = ids else { continue };
        let l = &c["logits"];
        let logits = engine.first_logits(ids)?;
        let stride = l["probe_stride"].as_u64().unwrap_or(0) as usize;
        let mut ours = Vec::new();
        let mut refs = Vec::new();
        for (id, want) in u32s(&l["top_ids"]).iter().zip(f64s(&l["top_values"])) {
            ours.push(*logits.get(*id as usize).unwrap_or(&f32::NAN) as f64);
            refs.push(want);
        }
        for (k, want) in f64s(&l["probe_values"]).into_iter().enumerate() {
            ours.push(*logits.get(k * stride).unwrap_or(&f32::NAN) as f64);
            refs.push(want);
        }
        let diff = ours
            .iter()
            .zip(&refs)
            .map(|(a, b)| (a - b).abs())
            .fold(
                0f64,
                |m, d| if d.is_nan() { f64::INFINITY } else { m.max(d) },
            );
        let cos = cosine(&ours, &refs);
        worst_diff = worst_diff.max(diff);
        worst_cos = worst_cos.min(if cos.is_nan() { -1.0 } else { cos });
        let same_top = u32s(&l["top_ids"]).first() == Some(&argmax(&logits));
        top1 += same_top as usize;
        n += 1;
        if float && (diff > F32_TOLERANCE as f64 || !same_top) {
            fails.push(format!(
                "{}: max |diff| {diff:.3e}, top-1 equal {same_top}",
                name(c)
            ));
        }
    }
    if !float && (worst_cos < BAND_MIN_COSINE || (top1 as f64) < BAND_MIN_TOP1 * n as f64) {
        fails.push(format!(
            "worst cosine {worst_cos:.6}, top-1 {top1}/{n}: outside the q8 band"
        ));
    }
    stages.push(stage(
        Stage::Logits,
        n,
        if float {
            "f32 logits within 1e-4 of the reference, top-1 equal"
        } else {
            "q8 band: cosine ≥ 0.9995 on the recorded ids, top-1 equal in ≥ 99% of cases"
        },
        json!({
            "max_abs_diff": format!("{worst_diff:.3e}"),
            "worst_cosine": format!("{worst_cos:.6}"),
            "top1": format!("{top1}/{n}"),
        }),
        fails,
    ));
    if !stages[2].passed {
        return Ok(done(stages));
    }

    // 4. Greedy continuations.
    let mut fails = Vec::new();
    let mut checked = 0;
    for (c, ids) in cases.iter().zip(&prompts) {
        let (Some(ids), Some(g)) = (ids, c.get("greedy")) else {
            continue;
        };
        checked += 1;
        let out = engine.greedy(ids, g["max_new_tokens"].as_u64().unwrap_or(0) as usize)?;
        if let Some(at) = first_difference(&out, &u32s(&g["ids"]), &g["stop_reason"]) {
            fails.push(format!("{}: greedy differs from token {at}", name(c)));
        }
    }
    stages.push(stage(
        Stage::Greedy,
        checked,
        "greedy tokens and stop reason equal the reference's",
        json!({"traces": checked}),
        fails,
    ));
    if !stages[3].passed {
        return Ok(done(stages));
    }

    // 5. Seeded traces.
    let mut fails = Vec::new();
    let mut checked = 0;
    for (c, ids) in cases.iter().zip(&prompts) {
        let Some(ids) = ids else { continue };
        for t in c["seeded"].as_array().into_iter().flatten() {
            checked += 1;
            let sampler = SamplerConfig::from_processor_settings(
                &t["settings"],
                t["seed"].as_u64().unwrap_or(0),
            );
            let mut opts =
                GenerateOptions::greedy(t["max_new_tokens"].as_u64().unwrap_or(0) as usize);
            opts.sampler = sampler;
            let out = engine.generate(ids, &opts, &mut |_, _| {})?;
            let steps = t["steps"].as_array().cloned().unwrap_or_default();
            let mut want: Vec<u32> = steps
                .iter()
                .filter_map(|s| s["token"].as_u64())
                .map(|x| x as u32)
                .collect();
            if t["stop_reason"] == "eos_token" {
                want.pop();
            }
            if let Some(at) = first_difference(&out, &want, &t["stop_reason"]) {
                fails.push(format!(
                    "{} ({}, seed {}): sampled tokens differ from token {at}",
                    name(c),
                    t["preset"].as_str().unwrap_or("?"),
                    t["seed"]
                ));
            }
        }
    }
    stages.push(stage(
        Stage::Seeded,
        checked,
        "seeded traces (reference logits, transformers' processors, the documented draw) equal",
        json!({"traces": checked}),
        if checked == 0 {
            vec!["the pack has no seeded traces".into()]
        } else {
            fails
        },
    ));
    Ok(done(stages))
}
