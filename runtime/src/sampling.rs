//! Next-token selection with HF transformers / vLLM semantics.
//!
//! Processing order (one step, on a copy of the f32 logits):
//! 1. logit bias: `logits[id] += bias` (OpenAI `logit_bias`);
//! 2. repetition penalty over every id in the context (prompt + generated), each id
//!    once: positive logits are divided by the penalty, negative ones multiplied (HF);
//! 3. presence / frequency penalties over the *generated* ids (OpenAI / vLLM):
//!    `logit -= presence · [count > 0] + frequency · count`;
//! 4. greedy (temperature 0 or top-k 1) stops here: argmax, lowest id on ties;
//! 5. temperature: `logits / T`;
//! 6. top-k: drop logits below the k-th largest (ties at the boundary are kept);
//! 7. top-p: drop the low tail whose cumulative probability is ≤ 1 − p (HF keeps the
//!    smallest set with mass ≥ p, and at least one token);
//! 8. min-p: drop tokens whose probability is below `min_p × p_max`;
//! 9. typical-p: keep the tokens closest to the entropy until mass ≥ p (HF);
//! 10. softmax over the survivors and one draw `u ∈ [0, 1)` from the seeded PRNG.
//!
//! Steps 5–9 are HF's warper order (`GenerationMixin._get_logits_processor`).
//! Non-finite logits are treated as removed; if nothing survives, the step falls back
//! to the argmax of the raw logits (or id 0 if none is finite) and says so.
//!
//! With `Sampler::record`, a step also keeps each stage's view ([`Stage`]): the best
//! `STAGE_TOP` candidates with their renormalized probabilities, how many survive, which
//! later stage cut each listed candidate, and where the chosen token stood. Recording
//! costs a few passes over the vocabulary per step and allocates nothing vocabulary-sized
//! per step (one reused buffer keeps the penalized logits); off, it costs nothing.

use serde::{Deserialize, Serialize};

use crate::error::{Result, SlmError};
// e^x with the same bits on every target (the model's own `exp`): the platform's f32
// `exp` differs between glibc and the wasm libm by an ulp here and there, which would
// make the browser's probabilities, and in a near tie its draws, differ from the CLI's.
use crate::model::exp;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplerConfig {
    /// 0 means greedy.
    pub temperature: f32,
    /// 0 disables.
    pub top_k: usize,
    /// In (0, 1]; 1 disables.
    pub top_p: f32,
    /// In [0, 1); 0 disables.
    pub min_p: f32,
    /// In (0, 1]; 1 disables.
    pub typical_p: f32,
    /// > 0; 1 disables.
    pub repetition_penalty: f32,
    pub presence_penalty: f32,
    pub frequency_penalty: f32,
    /// (token id, bias) pairs.
    pub logit_bias: Vec<(u32, f32)>,
    pub seed: u64,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig::preset("json").expect("built-in preset")
    }
}

/// The named presets of issue 3 (temperature, top-k, top-p, min-p, typical-p,
/// repetition, presence, frequency).
const PRESETS: &[(&str, [f32; 8])] = &[
    ("chat", [0.7, 40.0, 0.9, 0.05, 1.0, 1.05, 0.0, 0.0]),
    ("precise", [0.15, 20.0, 0.95, 0.0, 1.0, 1.05, 0.0, 0.0]),
    ("creative", [0.9, 80.0, 0.95, 0.03, 0.95, 1.03, 0.2, 0.1]),
    ("code", [0.2, 50.0, 0.9, 0.0, 1.0, 1.03, 0.0, 0.0]),
    ("json", [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0]),
];

/// A model's own adjustments to the named presets, carried in its `.slm`
/// (`Manifest::preset_tuning`) and set at conversion (`slm convert --tune-preset
/// chat.repetition_penalty=1.1`): preset name → { field → value }. One chat preset
/// does not suit every model (docs/behaviour.md: SmolLM2 loops under the penalty that
/// lets Qwen ask in the user's words), so a measured difference travels with the
/// model, is shown wherever the preset is, and is applied by the CLI, the page and
/// the evaluations alike. Empty for most models.
pub type PresetTuning = std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>>;

/// The fields a preset tuning may set: the presets' own eight.
pub const TUNABLE: [&str; 8] = [
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "typical_p",
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
];

/// A preset's tuned fields as people read them: "repetition_penalty 1.1, top_k 20".
pub fn tuning_text(fields: &std::collections::BTreeMap<String, f64>) -> String {
    let f: Vec<String> = fields.iter().map(|(k, v)| format!("{k} {v}")).collect();
    f.join(", ")
}

impl SamplerConfig {
    /// The sampler preset `name` gives for one model: "model" its generation_config
    /// (`from_generation_config`), a built-in preset with the model's tuning
    /// (`preset_tuned`); None for any other name. The CLI's `--preset` and the page's
    /// preset choice both resolve through here.
    pub fn preset_for_model(
        name: &str,
        generation_config: &serde_json::Map<String, serde_json::Value>,
        tuning: &PresetTuning,
    ) -> Option<SamplerConfig> {
        if name == "model" {
            Some(Self::from_generation_config(generation_config))
        } else {
            Self::preset_tuned(name, tuning)
        }
    }

    /// Preset `name` with `tuning`'s adjustments for it applied; None for an unknown
    /// name. The tuning must have passed `check_tuning` (the file reader and the
    /// converter check it).
    pub fn preset_tuned(name: &str, tuning: &PresetTuning) -> Option<SamplerConfig> {
        let mut c = Self::preset(name)?;
        for (field, &v) in tuning.get(name).into_iter().flatten() {
            c.set(field, v);
        }
        Some(c)
    }

    /// Field `field` (one of `TUNABLE`) to `v`.
    fn set(&mut self, field: &str, v: f64) {
        match field {
            "temperature" => self.temperature = v as f32,
            "top_k" => self.top_k = v as usize,
            "top_p" => self.top_p = v as f32,
            "min_p" => self.min_p = v as f32,
            "typical_p" => self.typical_p = v as f32,
            "repetition_penalty" => self.repetition_penalty = v as f32,
            "presence_penalty" => self.presence_penalty = v as f32,
            "frequency_penalty" => self.frequency_penalty = v as f32,
            _ => {}
        }
    }

    /// Every preset named in `tuning` exists, every field is one of `TUNABLE`
    /// (`top_k` a whole number), and each tuned preset passes `validate`; otherwise an
    /// error naming the first preset and field that does not.
    pub fn check_tuning(tuning: &PresetTuning) -> Result<()> {
        for (name, fields) in tuning {
            if Self::preset(name).is_none() {
                return Err(SlmError::Invalid(format!(
                    "preset tuning: no preset {name:?} (expected one of {:?})",
                    Self::preset_names()
                )));
            }
            for (field, &v) in fields {
                if !TUNABLE.contains(&field.as_str()) {
                    return Err(SlmError::Invalid(format!(
                        "preset tuning {name}.{field}: not a preset field (expected one of {TUNABLE:?})"
                    )));
                }
                if field == "top_k" && !(v >= 0.0 && v.fract() == 0.0 && v <= u32::MAX as f64) {
                    return Err(SlmError::Invalid(format!(
                        "preset tuning {name}.top_k = {v}: must be a whole number ≥ 0"
                    )));
                }
            }
            let tuned = Self::preset_tuned(name, tuning).expect("checked above");
            tuned
                .validate()
                .map_err(|e| SlmError::Invalid(format!("preset tuning {name}: {}", e.message())))?;
        }
        Ok(())
    }

    /// `PRESET.FIELD=VALUE` (as `slm convert --tune-preset` takes it) into `tuning`,
    /// checked.
    pub fn parse_tuning(arg: &str, tuning: &mut PresetTuning) -> Result<()> {
        let bad = || {
            SlmError::Invalid(format!(
                "--tune-preset {arg}: expected PRESET.FIELD=VALUE, e.g. chat.repetition_penalty=1.1"
            ))
        };
        let (key, value) = arg.split_once('=').ok_or_else(bad)?;
        let (name, field) = key.split_once('.').ok_or_else(bad)?;
        let v: f64 = value.trim().parse().map_err(|_| bad())?;
        if !v.is_finite() {
            return Err(bad());
        }
        let mut next = tuning.clone();
        next.entry(name.trim().to_string())
            .or_default()
            .insert(field.trim().to_string(), v);
        Self::check_tuning(&next)?;
        *tuning = next;
        Ok(())
    }

    pub fn preset_names() -> Vec<&'static str> {
        PRESETS.iter().map(|p| p.0).collect()
    }

    pub fn preset(name: &str) -> Option<SamplerConfig> {
        let (_, v) = PRESETS.iter().find(|p| p.0 == name)?;
        Some(SamplerConfig {
            temperature: v[0],
            top_k: v[1] as usize,
            top_p: v[2],
            min_p: v[3],
            typical_p: v[4],
            repetition_penalty: v[5],
            presence_penalty: v[6],
            frequency_penalty: v[7],
            logit_bias: vec![],
            seed: 0,
        })
    }

    /// The base a sampling flag given without a preset starts from: transformers'
    /// `GenerationConfig` defaults with `do_sample=True` (temperature 1, top-k 50,
    /// top-p 1, no min-p, typical-p or penalties).
    pub fn hf_sampling_defaults() -> SamplerConfig {
        SamplerConfig {
            top_k: 50,
            ..Self::from_processor_settings(&serde_json::Value::Null, 0)
        }
    }

    /// transformers' logits-processor settings as the reference scripts name them
    /// (`temperature`, `top_k` (0 = off), `top_p`, `min_p`, `typical_p`,
    /// `repetition_penalty`); a missing key is that processor's neutral value.
    pub fn from_processor_settings(s: &serde_json::Value, seed: u64) -> SamplerConfig {
        Self::from_fields(&|k| s.get(k), 0, seed)
    }

    /// The "model" preset: HF generation_config defaults over HF's own defaults
    /// (do_sample false ⇒ greedy; temperature 1, top_k 50, top_p 1).
    pub fn from_generation_config(g: &serde_json::Map<String, serde_json::Value>) -> SamplerConfig {
        let c = Self::from_fields(&|k| g.get(k), 50, 0);
        let sample = g
            .get("do_sample")
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        SamplerConfig {
            temperature: if sample { c.temperature } else { 0.0 },
            ..c
        }
    }

    /// The processor fields HF names, each absent one at its neutral value (`top_k`
    /// at `top_k_default`); OpenAI-style penalties and biases are not HF keys.
    fn from_fields<'a>(
        get: &dyn Fn(&str) -> Option<&'a serde_json::Value>,
        top_k_default: u64,
        seed: u64,
    ) -> SamplerConfig {
        let f = |k: &str, d: f32| get(k).and_then(|v| v.as_f64()).map_or(d, |v| v as f32);
        SamplerConfig {
            temperature: f("temperature", 1.0),
            top_k: get("top_k")
                .and_then(|v| v.as_u64())
                .unwrap_or(top_k_default) as usize,
            top_p: f("top_p", 1.0),
            min_p: f("min_p", 0.0),
            typical_p: f("typical_p", 1.0),
            repetition_penalty: f("repetition_penalty", 1.0),
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            logit_bias: vec![],
            seed,
        }
    }

    /// Every parameter in its domain, or an error naming the first one that is not.
    pub fn validate(&self) -> Result<()> {
        let bad = |name: &str, v: f32, domain: &str| {
            Err(SlmError::Invalid(format!("{name} = {v}: must be {domain}")))
        };
        if !(self.temperature >= 0.0 && self.temperature.is_finite()) {
            return bad("temperature", self.temperature, "≥ 0");
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return bad("top_p", self.top_p, "in (0, 1]");
        }
        if !(self.min_p >= 0.0 && self.min_p < 1.0) {
            return bad("min_p", self.min_p, "in [0, 1)");
        }
        if !(self.typical_p > 0.0 && self.typical_p <= 1.0) {
            return bad("typical_p", self.typical_p, "in (0, 1]");
        }
        if !(self.repetition_penalty > 0.0 && self.repetition_penalty.is_finite()) {
            return bad("repetition_penalty", self.repetition_penalty, "> 0");
        }
        for (name, v) in [
            ("presence_penalty", self.presence_penalty),
            ("frequency_penalty", self.frequency_penalty),
        ] {
            if !(-2.0..=2.0).contains(&v) {
                return bad(name, v, "in [-2, 2]");
            }
        }
        if let Some((id, b)) = self.logit_bias.iter().find(|(_, b)| !b.is_finite()) {
            return Err(SlmError::Invalid(format!(
                "logit_bias for token {id} is {b}: must be finite"
            )));
        }
        Ok(())
    }

    pub fn is_greedy(&self) -> bool {
        self.temperature == 0.0 || self.top_k == 1
    }
}

/// xoshiro256** seeded through splitmix64: small, fast, and the same on every target.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed;
        let mut next = || {
            z = z.wrapping_add(0x9E3779B97F4A7C15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94D049BB133111EB);
            x ^ (x >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let r = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Candidates listed per recorded stage.
pub const STAGE_TOP: usize = 8;

/// One stage of a recorded step, as the token console and `--trace` show it.
///
/// `raw` and `penalized` list logits with their softmax at temperature 1 over every
/// finite logit (summed in f64, in id order). From `temperature` on, the values are the
/// scaled logits and the probabilities are renormalized over the stage's survivors in
/// f32, summed best first: exactly how the draw computes them, so the last stage's
/// probabilities equal the step's `top` bit for bit. `greedy` is the argmax (prob 1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub stage: String,
    /// Finite candidates alive after this stage.
    pub count: usize,
    /// The best of them by value (lowest id on ties), at most `STAGE_TOP`.
    pub top: Vec<StageCandidate>,
    /// The chosen token's rank among this stage's survivors (0 = best) and its
    /// probability here; None where the stage had already lost it (a fallback step).
    pub pick: Option<(usize, f32)>,
    /// How this stage's probabilities were normalized: the max, the sum of
    /// `exp(v − max)` (an f32 sum is kept exactly) and whether it is an f32 sum.
    #[serde(skip)]
    norm: (f32, f64, bool),
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageCandidate {
    pub id: u32,
    /// The value at this stage: the logit, penalized or divided by the temperature.
    pub logit: f32,
    pub prob: f32,
    /// The later stage that removed this candidate; None if it reached the draw.
    pub cut_by: Option<String>,
}

impl Stage {
    /// A temperature-1 view of `x` over every finite value (the `raw` and `penalized`
    /// stages): one pass keeping a small sorted list, one pass for the sum.
    fn softmax_view(name: &str, x: &[f32]) -> Stage {
        let best = best_n(x, STAGE_TOP);
        let max = best.first().map_or(0.0, |b| b.1);
        let z = exp_sum(x, max);
        Stage {
            stage: name.into(),
            count: x.iter().filter(|v| v.is_finite()).count(),
            top: best
                .iter()
                .map(|&(id, v)| StageCandidate {
                    id,
                    logit: v,
                    prob: (exp(v - max) as f64 / z) as f32,
                    cut_by: None,
                })
                .collect(),
            pick: None,
            norm: (max, z, false),
        }
    }

    /// The survivors of a stage from `temperature` on: the first `count` finite
    /// entries of `order` (sorted best first), normalized as `softmax_sorted` does.
    fn sorted_view(name: &str, work: &[f32], order: &[u32], count: usize) -> Stage {
        let (mut max, mut sum, mut seen) = (NEG_INF, 0f32, 0);
        let mut top = Vec::new();
        for &i in order {
            if seen == count {
                break;
            }
            let v = work[i as usize];
            if !v.is_finite() {
                continue;
            }
            if seen == 0 {
                max = v;
            }
            seen += 1;
            sum += exp(v - max);
            if top.len() < STAGE_TOP {
                top.push((i, v));
            }
        }
        Stage {
            stage: name.into(),
            count,
            top: top
                .iter()
                .map(|&(id, v)| StageCandidate {
                    id,
                    logit: v,
                    prob: exp(v - max) / sum,
                    cut_by: None,
                })
                .collect(),
            pick: None,
            norm: (max, sum as f64, true),
        }
    }

    fn prob_of(&self, v: f32) -> f32 {
        let (max, sum, f32_sum) = self.norm;
        if f32_sum {
            exp(v - max) / sum as f32
        } else {
            (exp(v - max) as f64 / sum) as f32
        }
    }
}

/// Σ exp(v − max) over the finite values of `x`, summed in f64 in id order. The
/// exponentials are taken a block at a time with no branch, so that they vectorize
/// (simd128, AVX2). Taken one by one inside the sum they cost a recorded step of the
/// page's decode about 2.3 ms (SmolLM2, three views of 49 152 logits); blocked, about
/// 0.8 ms. A value that is not finite adds +0, which leaves the sum as it was (it
/// holds max's own 1).
fn exp_sum(x: &[f32], max: f32) -> f64 {
    const BLOCK: usize = 64;
    let mut e = [0f32; BLOCK];
    let mut z = 0f64;
    for chunk in x.chunks(BLOCK) {
        for (o, &v) in e.iter_mut().zip(chunk) {
            let t = exp(v - max);
            *o = if v.is_finite() { t } else { 0.0 };
        }
        for &t in &e[..chunk.len()] {
            z += t as f64;
        }
    }
    z
}

/// Mark, in every stage recorded so far, the listed candidates that `stage` removed.
fn mark_cuts(stages: &mut [Stage], alive: impl Fn(u32) -> bool, stage: &str) {
    for c in stages.iter_mut().flat_map(|s| s.top.iter_mut()) {
        if c.cut_by.is_none() && !alive(c.id) {
            c.cut_by = Some(stage.to_string());
        }
    }
}

/// Rank of `id` among the finite values of `x` (0 = best, lowest id first on ties).
fn rank_of(x: &[f32], id: u32) -> usize {
    let v = x[id as usize];
    x.iter()
        .enumerate()
        .filter(|&(i, &w)| w.is_finite() && (w > v || (w == v && (i as u32) < id)))
        .count()
}

/// What one step did, for the token console and the generation record.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StepTrace {
    /// Context position of the chosen token.
    pub position: usize,
    pub token: u32,
    /// Probability of the chosen token after all filters (1 for greedy).
    pub prob: f32,
    /// The uniform draw (None for greedy).
    pub draw: Option<f64>,
    /// Surviving candidates after each filter, in order: (filter, count).
    pub candidates: Vec<(&'static str, usize)>,
    /// Top candidates after all filters: (id, probability), best first. For greedy
    /// decoding, the top of the softmax at temperature 1 (the pick itself has prob 1).
    pub top: Vec<(u32, f32)>,
    /// Set when the defined fallback was used (non-finite logits, empty candidate set).
    pub fallback: Option<String>,
    /// With `Sampler::record`: every stage in processing order (`raw`, `penalized`,
    /// then `greedy`, or `temperature` and each filter that ran).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Stage>,
    /// With a trace: the stop rules as they stood after this token (the decoder fills it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_check: Option<crate::stopping::StopCheck>,
}

/// Candidates recorded for a greedy step.
const GREEDY_TOP: usize = 8;

/// The `n` (≤ `STAGE_TOP`) largest finite values of `x` with their ids, best first,
/// lowest id on ties: one pass keeping a small sorted list (no vocabulary-sized buffer).
fn best_n(x: &[f32], n: usize) -> Vec<(u32, f32)> {
    let mut best: [(u32, f32); STAGE_TOP] = [(0, f32::NEG_INFINITY); STAGE_TOP];
    let n = n.min(STAGE_TOP);
    let mut len = 0;
    if n == 0 {
        return vec![];
    }
    for (i, &v) in x.iter().enumerate() {
        // Strictly greater: the lower id wins ties, as in `top_n`.
        if !v.is_finite() || (len == n && v <= best[n - 1].1) {
            continue;
        }
        let mut at = len.min(n - 1);
        while at > 0 && best[at - 1].1 < v {
            best[at] = best[at - 1];
            at -= 1;
        }
        best[at] = (i as u32, v);
        len = (len + 1).min(n);
    }
    best[..len].to_vec()
}

/// The `GREEDY_TOP` most probable ids under softmax(x), with their probabilities.
fn softmax_top(x: &[f32], n: usize) -> Vec<(u32, f32)> {
    Stage::softmax_view("", x)
        .top
        .iter()
        .take(n.min(GREEDY_TOP))
        .map(|c| (c.id, c.prob))
        .collect()
}

/// The `n` largest finite values with their ids, best first (lowest id on ties).
pub fn top_n(x: &[f32], n: usize) -> Vec<(u32, f32)> {
    let mut v: Vec<(u32, f32)> = x
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .map(|(i, v)| (i as u32, *v))
        .collect();
    let n = n.min(v.len());
    if n == 0 {
        return vec![];
    }
    v.select_nth_unstable_by(n - 1, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(n);
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

pub struct Sampler {
    pub cfg: SamplerConfig,
    /// Record the top logits before and after penalties in every `StepTrace`.
    pub record: bool,
    /// For greedy steps, also list the most probable candidates (`StepTrace::top`), as
    /// a token console shows them: one pass over the vocabulary per step, so opt-in.
    pub greedy_candidates: bool,
    rng: Rng,
    /// Working copy of the logits and the sort order, reused every step.
    work: Vec<f32>,
    order: Vec<u32>,
    counts: std::collections::HashMap<u32, u32>,
    /// Ids already penalized this step (reused, so sampling does not allocate).
    seen: std::collections::HashSet<u32>,
    /// With `record`: the penalized logits, for the chosen token's rank there.
    penalized: Vec<f32>,
}

const NEG_INF: f32 = f32::NEG_INFINITY;

impl Sampler {
    pub fn new(cfg: SamplerConfig) -> Result<Sampler> {
        cfg.validate()?;
        let rng = Rng::new(cfg.seed);
        Ok(Sampler {
            cfg,
            record: false,
            greedy_candidates: false,
            rng,
            work: Vec::new(),
            order: Vec::new(),
            counts: Default::default(),
            seen: Default::default(),
            penalized: Vec::new(),
        })
    }

    /// Record a generated token for presence / frequency penalties (`sample` does this
    /// for the tokens it picks).
    fn accept(&mut self, id: u32) {
        *self.counts.entry(id).or_insert(0) += 1;
    }

    /// Apply steps 1–3 (bias and penalties) in place.
    pub fn penalize(&mut self, logits: &mut [f32], context: &[u32]) {
        for &(id, b) in &self.cfg.logit_bias {
            if let Some(l) = logits.get_mut(id as usize) {
                *l += b;
            }
        }
        let p = self.cfg.repetition_penalty;
        if p != 1.0 {
            self.seen.clear();
            for &id in context {
                if self.seen.insert(id) {
                    if let Some(l) = logits.get_mut(id as usize) {
                        *l = if *l < 0.0 { *l * p } else { *l / p };
                    }
                }
            }
        }
        let (pres, freq) = (self.cfg.presence_penalty, self.cfg.frequency_penalty);
        if pres != 0.0 || freq != 0.0 {
            for (&id, &c) in &self.counts {
                if let Some(l) = logits.get_mut(id as usize) {
                    *l -= pres + freq * c as f32;
                }
            }
        }
    }

    /// Steps 5–9 on `work` (already penalized); removed entries become −∞.
    /// Returns the candidate counts after each filter. `order` is left listing every
    /// survivor best first (after a top-k cut, only those: `top_k_first`).
    pub fn filter(
        cfg: &SamplerConfig,
        work: &mut [f32],
        order: &mut Vec<u32>,
    ) -> Vec<(&'static str, usize)> {
        Self::filter_recorded(cfg, work, order, None)
    }

    /// `filter`, pushing each stage's view onto `stages` when given.
    fn filter_recorded(
        cfg: &SamplerConfig,
        work: &mut [f32],
        order: &mut Vec<u32>,
        stages: Option<&mut Vec<Stage>>,
    ) -> Vec<(&'static str, usize)> {
        Self::filter_sorting(cfg, work, order, stages, false)
    }

    /// `filter_recorded`; `sort_all` sorts the whole vocabulary even before a top-k cut
    /// (the reference the faster path is tested against).
    fn filter_sorting(
        cfg: &SamplerConfig,
        work: &mut [f32],
        order: &mut Vec<u32>,
        mut stages: Option<&mut Vec<Stage>>,
        sort_all: bool,
    ) -> Vec<(&'static str, usize)> {
        let mut counts = Vec::new();
        let recording = stages.is_some();
        let cut_by_k = cfg.top_k > 0 && cfg.top_k < work.len();
        // Count a stage's survivors and, when recording, keep its view and mark what
        // it removed from the views before it. `whole`: the view is normalized over
        // the whole vocabulary (`Stage::softmax_view`), not over `order`.
        let mut done =
            |name: &'static str, work: &[f32], order: &[u32], counts: &mut Vec<_>, whole: bool| {
                let n = work.iter().filter(|v| v.is_finite()).count();
                counts.push((name, n));
                if let Some(st) = stages.as_deref_mut() {
                    mark_cuts(st, |id| work[id as usize].is_finite(), name);
                    st.push(if whole {
                        Stage::softmax_view(name, work)
                    } else {
                        Stage::sorted_view(name, work, order, n)
                    });
                }
            };
        for v in work.iter_mut() {
            if !v.is_finite() {
                *v = NEG_INF;
            }
        }
        if cfg.temperature != 1.0 {
            for v in work.iter_mut() {
                *v /= cfg.temperature;
            }
        }
        // Sort once, descending (stable by id), then filter on the sorted view. Before a
        // top-k cut only its survivors are sorted (`top_k_first`; a recorded step also
        // lists the temperature stage's best `STAGE_TOP`): a whole vocabulary sorted
        // every step was a fifth of Qwen's decode time. The temperature stage's view is
        // then normalized over the whole vocabulary, as the raw and penalized ones are;
        // without a cut it may be the last stage, normalized as the draw is.
        order.clear();
        order.extend(0..work.len() as u32);
        let sorted_part = if recording {
            cfg.top_k.max(STAGE_TOP)
        } else {
            cfg.top_k
        };
        if cut_by_k && !sort_all && sorted_part < work.len() {
            let listed = top_k_first(work, order, sorted_part);
            order.truncate(listed);
        } else {
            order.sort_by(|a, b| by_value(work, a, b));
        }
        done("temperature", work, order, &mut counts, cut_by_k);
        if cut_by_k {
            let kth = work[order[cfg.top_k - 1] as usize];
            for v in work.iter_mut() {
                if *v < kth {
                    *v = NEG_INF;
                }
            }
            done("top_k", work, order, &mut counts, false);
        }
        if cfg.top_p < 1.0 {
            let probs = softmax_sorted(work, order);
            // HF: ascending cumulative sum; drop while cum ≤ 1 − p, keep at least one.
            let mut cum = 0f32;
            let n = probs.len();
            for i in (0..n).rev() {
                cum += probs[i];
                if cum <= 1.0 - cfg.top_p && i != 0 {
                    work[order[i] as usize] = NEG_INF;
                }
            }
            done("top_p", work, order, &mut counts, false);
        }
        if cfg.min_p > 0.0 {
            let probs = softmax_sorted(work, order);
            let cut = cfg.min_p * probs[0];
            for (i, p) in probs.iter().enumerate().skip(1) {
                if *p < cut {
                    work[order[i] as usize] = NEG_INF;
                }
            }
            done("min_p", work, order, &mut counts, false);
        }
        if cfg.typical_p < 1.0 {
            // HF: log p by log-softmax (one log, of the sum), H = −Σ log p · e^(log p).
            let probs = softmax_sorted(work, order);
            let logp = log_softmax_sorted(work, order);
            let ent: f32 = logp
                .iter()
                .filter(|l| l.is_finite())
                .map(|&l| -(l * exp(l)))
                .sum();
            // Order by |−log p − H| ascending (ties by id), keep until mass ≥ p.
            let mut idx: Vec<usize> = (0..logp.len()).filter(|&i| logp[i].is_finite()).collect();
            if idx.is_empty() {
                // Nothing finite is left to keep; the caller's fallback takes over.
                work.fill(NEG_INF);
                done("typical_p", work, order, &mut counts, false);
                return counts;
            }
            let shift = |i: usize| (-logp[i] - ent).abs();
            idx.sort_by(|&a, &b| shift(a).total_cmp(&shift(b)).then(order[a].cmp(&order[b])));
            let mut cum = 0f32;
            let mut last = idx.len().saturating_sub(1);
            for (j, &i) in idx.iter().enumerate() {
                cum += probs[i];
                if cum >= cfg.typical_p {
                    last = j;
                    break;
                }
            }
            let cutoff = shift(idx[last]);
            for &i in &idx {
                if shift(i) > cutoff {
                    work[order[i] as usize] = NEG_INF;
                }
            }
            done("typical_p", work, order, &mut counts, false);
        }
        counts
    }

    /// Choose the next token from `logits` given the full `context` (prompt + generated).
    pub fn sample(&mut self, logits: &[f32], context: &[u32]) -> StepTrace {
        self.work.clear();
        self.work.extend_from_slice(logits);
        let mut work = std::mem::take(&mut self.work);
        self.penalize(&mut work, context);
        let mut trace = StepTrace {
            position: context.len(),
            ..Default::default()
        };
        let mut stages = Vec::new();
        if self.record {
            stages.push(Stage::softmax_view("raw", logits));
            stages.push(Stage::softmax_view("penalized", &work));
            self.penalized.clear();
            self.penalized.extend_from_slice(&work);
        }
        let fallback = |raw: &[f32], why: &str, trace: &mut StepTrace| {
            let best = raw.iter().enumerate().filter(|(_, v)| v.is_finite()).fold(
                None,
                |b: Option<(usize, f32)>, (i, &v)| match b {
                    Some((_, bv)) if bv >= v => b,
                    _ => Some((i, v)),
                },
            );
            trace.token = best.map_or(0, |b| b.0 as u32);
            trace.prob = 1.0;
            trace.fallback = Some(why.to_string());
        };
        if self.cfg.is_greedy() {
            match crate::engine::argmax_finite(&work) {
                Some(id) => {
                    trace.token = id;
                    trace.prob = 1.0;
                    // No filter ran, so show the (penalized) distribution at temperature 1:
                    // what a console reader wants to see next to a greedy pick.
                    if self.greedy_candidates {
                        trace.top = softmax_top(&work, GREEDY_TOP);
                    }
                    if self.record {
                        mark_cuts(&mut stages, |c| c == id, "greedy");
                        stages.push(Stage {
                            stage: "greedy".into(),
                            count: 1,
                            top: vec![StageCandidate {
                                id,
                                logit: work[id as usize],
                                prob: 1.0,
                                cut_by: None,
                            }],
                            pick: Some((0, 1.0)),
                            norm: (work[id as usize], 1.0, false),
                        });
                    }
                }
                None => fallback(logits, "no finite logit after penalties", &mut trace),
            }
        } else {
            let mut order = std::mem::take(&mut self.order);
            trace.candidates = Self::filter_recorded(
                &self.cfg,
                &mut work,
                &mut order,
                self.record.then_some(&mut stages),
            );
            let probs = softmax_sorted(&work, &order);
            if probs.iter().all(|p| *p == 0.0 || !p.is_finite()) {
                fallback(
                    logits,
                    "every candidate was filtered out or non-finite",
                    &mut trace,
                );
            } else {
                let u = self.rng.next_f64();
                let mut cum = 0f64;
                let mut pick = 0;
                for (i, p) in probs.iter().enumerate() {
                    if *p <= 0.0 {
                        continue;
                    }
                    cum += *p as f64;
                    pick = i;
                    if u < cum {
                        break;
                    }
                }
                trace.token = order[pick];
                trace.prob = probs[pick];
                trace.draw = Some(u);
                let mut top: Vec<(u32, f32)> = probs
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| **p > 0.0)
                    .map(|(i, p)| (order[i], *p))
                    .collect();
                top.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                top.truncate(10);
                trace.top = top;
            }
            self.order = order;
        }
        if self.record {
            self.place_pick(&mut stages, logits, &work, trace.token);
            trace.stages = stages;
        }
        self.work = work;
        self.accept(trace.token);
        trace
    }

    /// Where the chosen token stood at each recorded stage. `work` holds the last
    /// stage's values. Every stage from `temperature` up to `min_p` keeps a prefix of
    /// `order` (the values sorted best first), so there the rank is the index in
    /// `order`; typical-p, last, keeps any subset, so there it counts the survivors
    /// ahead. A fallback pick was lost by some filter: those stages leave it unplaced.
    fn place_pick(&self, stages: &mut [Stage], logits: &[f32], work: &[f32], id: u32) {
        let at = |x: &[f32]| x.get(id as usize).copied().filter(|v| v.is_finite());
        let alive = at(work);
        let pos = self.order.iter().position(|&i| i == id);
        for st in stages.iter_mut() {
            st.pick = match st.stage.as_str() {
                "raw" => at(logits).map(|v| (rank_of(logits, id), st.prob_of(v))),
                "penalized" => {
                    at(&self.penalized).map(|v| (rank_of(&self.penalized, id), st.prob_of(v)))
                }
                "greedy" => continue,
                "typical_p" => alive.zip(pos).map(|(v, p)| {
                    let ahead = self.order[..p]
                        .iter()
                        .filter(|&&i| work[i as usize].is_finite())
                        .count();
                    (ahead, st.prob_of(v))
                }),
                _ => alive
                    .zip(pos)
                    .filter(|&(_, p)| p < st.count)
                    .map(|(v, p)| (p, st.prob_of(v))),
            };
        }
    }
}

/// The sampler's order: descending value, then ascending id (a total order).
fn by_value(work: &[f32], a: &u32, b: &u32) -> std::cmp::Ordering {
    work[*b as usize]
        .total_cmp(&work[*a as usize])
        .then(a.cmp(b))
}

/// Arranges `order` (every id once) so that it starts with top-k's survivors (every
/// value ≥ the k-th largest, ties and −0 beside +0 included) exactly as a full sort by
/// `by_value` puts them, and returns how many there are; the rest follow in no
/// particular order, to be dropped. The survivors are a prefix of the full sort (a
/// value ≥ the k-th is above every value below it), and every later stage and the draw
/// would read the rest only as −∞ (probability 0, adding nothing to any sum), so the
/// outcome is the full sort's bit for bit.
fn top_k_first(work: &[f32], order: &mut [u32], k: usize) -> usize {
    assert!(0 < k && k < order.len());
    order.select_nth_unstable_by(k - 1, |a, b| by_value(work, a, b));
    let kth = work[order[k - 1] as usize];
    let mut m = k;
    for j in k..order.len() {
        if work[order[j] as usize] >= kth {
            order.swap(m, j);
            m += 1;
        }
    }
    order[..m].sort_by(|a, b| by_value(work, a, b));
    m
}

/// The largest finite value among `order`'s entries of `work` (−∞ if none). Every
/// finite value is listed in `order` (a top-k cut drops only −∞ ones), so this is the
/// maximum of `work`, found without a pass over the whole vocabulary.
fn max_listed(work: &[f32], order: &[u32]) -> f32 {
    order
        .iter()
        .map(|&i| work[i as usize])
        .filter(|v| v.is_finite())
        .fold(f32::NEG_INFINITY, f32::max)
}

/// The log-probability of `token` under `logits`, as torch's `log_softmax` at that id
/// (`v − max − ln Σ e^(v − max)` over the finite logits), with this module's `exp` and
/// `ln`, so the same bits on every target. None for an id outside `logits`.
pub fn log_prob(logits: &[f32], token: u32) -> Option<f32> {
    let v = *logits.get(token as usize)?;
    let finite = || logits.iter().copied().filter(|v| v.is_finite());
    let max = finite().fold(NEG_INF, f32::max);
    // Summed in f64: an f32 sum over a vocabulary drifts by 1e-4 in the log.
    let s: f64 = finite().map(|v| f64::from(exp(v - max))).sum();
    Some(if v.is_finite() {
        v - max - ln(s as f32)
    } else {
        NEG_INF
    })
}

/// Log-softmax of `work` listed in `order` (descending), as torch's `log_softmax`:
/// `v − max − ln Σ e^(v − max)`, −∞ for removed entries.
fn log_softmax_sorted(work: &[f32], order: &[u32]) -> Vec<f32> {
    let max = max_listed(work, order);
    let s: f32 = order
        .iter()
        .map(|&i| work[i as usize])
        .filter(|v| v.is_finite())
        .map(|v| exp(v - max))
        .sum();
    let log_s = ln(s);
    order
        .iter()
        .map(|&i| {
            let v = work[i as usize];
            if v.is_finite() {
                v - max - log_s
            } else {
                NEG_INF
            }
        })
        .collect()
}

/// ln x for finite x > 0, with the same bits on every target (plain f64 adds,
/// multiplies and divides): x = m·2^e with m in [√½, √2), ln m = 2·atanh(z) for
/// z = (m − 1)/(m + 1), |z| ≤ 0.172, summed to z²¹ (error below 1e-17), rounded to f32.
fn ln(x: f32) -> f32 {
    if !(x > 0.0 && x.is_finite()) {
        return if x == 0.0 { NEG_INF } else { f32::NAN };
    }
    let x = x as f64;
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | (1023u64 << 52));
    if m > std::f64::consts::SQRT_2 {
        m /= 2.0;
        e += 1;
    }
    let z = (m - 1.0) / (m + 1.0);
    let z2 = z * z;
    let mut term = z;
    let mut sum = 0.0;
    for k in 0..11 {
        sum += term / (2 * k + 1) as f64;
        term *= z2;
    }
    (e as f64 * std::f64::consts::LN_2 + 2.0 * sum) as f32
}

/// Softmax of `work` listed in `order` (descending), f32 like torch.
fn softmax_sorted(work: &[f32], order: &[u32]) -> Vec<f32> {
    let max = max_listed(work, order);
    let mut p: Vec<f32> = order
        .iter()
        .map(|&i| {
            let v = work[i as usize];
            if v.is_finite() {
                exp(v - max)
            } else {
                0.0
            }
        })
        .collect();
    let s: f32 = p.iter().sum();
    if s > 0.0 {
        for x in p.iter_mut() {
            *x /= s;
        }
    }
    p
}

#[cfg(test)]
mod tests {
    //! Small hand-checkable tables, in the style of llama.cpp's test-sampling.
    use super::*;

    /// Logits ln 1 and ln 3 are probabilities 1/4 and 3/4; a −∞ logit has none; an
    /// id past the vocabulary is None.
    #[test]
    fn log_prob_is_log_softmax_at_one_id() {
        let l = [0.0, 3f32.ln(), NEG_INF];
        assert!((log_prob(&l, 0).unwrap() - 0.25f32.ln()).abs() < 1e-6);
        assert!((log_prob(&l, 1).unwrap() - 0.75f32.ln()).abs() < 1e-6);
        assert_eq!(log_prob(&l, 2), Some(NEG_INF));
        assert_eq!(log_prob(&l, 3), None);
    }

    /// The blocked sum is the id-order f64 sum of the finite values' exponentials, bit
    /// for bit, over a ragged last block and every kind of value that is not finite.
    #[test]
    fn exp_sum_is_the_plain_sum_of_finite_values() {
        let x: Vec<f32> = (0..200)
            .map(|i| match i % 17 {
                3 => NEG_INF,
                5 => f32::NAN,
                11 => f32::INFINITY,
                _ => (i as f32 * 0.37).sin() * 9.0,
            })
            .collect();
        let max = 9.0;
        assert_eq!(exp_sum(&[], max), 0.0);
        for n in [1, 63, 64, 65, 200] {
            let plain_n: f64 = x[..n]
                .iter()
                .filter(|v| v.is_finite())
                .map(|&v| exp(v - max) as f64)
                .sum();
            assert!(plain_n > 0.0);
            assert_eq!(
                exp_sum(&x[..n], max).to_bits(),
                plain_n.to_bits(),
                "n = {n}"
            );
        }
    }

    #[test]
    fn greedy_records_the_temperature_one_distribution() {
        // softmax([1, 2, 3]) = [0.0900, 0.2447, 0.6652]
        let mut s = Sampler::new(SamplerConfig::preset("json").unwrap()).unwrap();
        assert!(s.sample(&[1.0, 2.0, 3.0], &[]).top.is_empty(), "opt-in");
        s.greedy_candidates = true;
        let t = s.sample(&[1.0, 2.0, 3.0], &[]);
        assert_eq!((t.token, t.prob), (2, 1.0));
        let ids: Vec<u32> = t.top.iter().map(|c| c.0).collect();
        assert_eq!(ids, vec![2, 1, 0]);
        for (got, want) in t.top.iter().map(|c| c.1).zip([0.6652f32, 0.2447, 0.0900]) {
            assert!((got - want).abs() < 1e-4, "{got} vs {want}");
        }
    }

    fn cfg(f: impl FnOnce(&mut SamplerConfig)) -> SamplerConfig {
        // Every filter neutral, seed 1.
        let mut c = SamplerConfig::from_processor_settings(&serde_json::Value::Null, 1);
        f(&mut c);
        c
    }

    /// Which ids survive filtering, for probabilities given directly (logits = ln p).
    fn survivors(c: &SamplerConfig, probs: &[f32]) -> Vec<u32> {
        let mut w: Vec<f32> = probs.iter().map(|p| p.ln()).collect();
        let mut order = Vec::new();
        Sampler::filter(c, &mut w, &mut order);
        (0..w.len() as u32)
            .filter(|&i| w[i as usize].is_finite())
            .collect()
    }

    const P: [f32; 4] = [0.1, 0.2, 0.3, 0.4];

    #[test]
    fn top_k_table() {
        assert_eq!(survivors(&cfg(|c| c.top_k = 1), &P), vec![3]);
        assert_eq!(survivors(&cfg(|c| c.top_k = 3), &P), vec![1, 2, 3]);
        assert_eq!(survivors(&cfg(|c| c.top_k = 4), &P), vec![0, 1, 2, 3]);
        assert_eq!(survivors(&cfg(|c| c.top_k = 0), &P), vec![0, 1, 2, 3]);
        // Ties at the boundary are kept, as torch.topk's threshold does in HF.
        assert_eq!(
            survivors(&cfg(|c| c.top_k = 2), &[0.3, 0.3, 0.3, 0.1]),
            vec![0, 1, 2]
        );
    }

    #[test]
    fn top_p_table() {
        // Ascending cumsum 0.1, 0.3, 0.6, 1.0; drop while ≤ 1 − p (no case sits on a boundary).
        assert_eq!(survivors(&cfg(|c| c.top_p = 0.4), &P), vec![3]);
        assert_eq!(survivors(&cfg(|c| c.top_p = 0.65), &P), vec![2, 3]);
        assert_eq!(survivors(&cfg(|c| c.top_p = 0.75), &P), vec![1, 2, 3]);
        assert_eq!(survivors(&cfg(|c| c.top_p = 0.95), &P), vec![0, 1, 2, 3]);
        assert_eq!(
            survivors(&cfg(|c| c.top_p = 0.01), &P),
            vec![3],
            "always keeps one"
        );
    }

    #[test]
    fn min_p_table() {
        // Cut = min_p × 0.4.
        assert_eq!(survivors(&cfg(|c| c.min_p = 0.3), &P), vec![1, 2, 3]);
        assert_eq!(survivors(&cfg(|c| c.min_p = 0.76), &P), vec![3]);
        assert_eq!(survivors(&cfg(|c| c.min_p = 0.05), &P), vec![0, 1, 2, 3]);
    }

    #[test]
    fn typical_p_table() {
        // H = 1.2799; |−ln p − H| = 1.0227, 0.3296, 0.0760, 0.3636: order 2, 1, 3, 0.
        assert_eq!(survivors(&cfg(|c| c.typical_p = 0.25), &P), vec![2]);
        assert_eq!(survivors(&cfg(|c| c.typical_p = 0.45), &P), vec![1, 2]);
        assert_eq!(survivors(&cfg(|c| c.typical_p = 0.85), &P), vec![1, 2, 3]);
    }

    #[test]
    fn penalties_table() {
        let mut s = Sampler::new(cfg(|c| {
            c.repetition_penalty = 2.0;
            c.logit_bias = vec![(3, 1.0)];
        }))
        .unwrap();
        let mut l = vec![2.0, -2.0, 1.0, 0.0];
        s.penalize(&mut l, &[0, 1, 1, 3]);
        // id 0: 2/2; id 1: −2·2 (once, despite repeats); id 2 untouched; id 3: (0+1)/2.
        assert_eq!(l, vec![1.0, -4.0, 1.0, 0.5]);

        let mut s = Sampler::new(cfg(|c| {
            c.presence_penalty = 0.5;
            c.frequency_penalty = 0.25;
        }))
        .unwrap();
        s.accept(2);
        s.accept(2);
        s.accept(0);
        let mut l = vec![1.0, 1.0, 1.0];
        s.penalize(&mut l, &[]);
        assert_eq!(l, vec![1.0 - 0.5 - 0.25, 1.0, 1.0 - 0.5 - 0.5]);
    }

    #[test]
    fn temperature_scales_before_filters() {
        // T = 0.5 squares the probabilities (∝ p²: .033, .133, .3, .533), so top-p 0.5
        // keeps fewer tokens: ascending cumsum .033, .167, .467 are all ≤ 1 − 0.5.
        assert_eq!(survivors(&cfg(|c| c.top_p = 0.5), &P), vec![2, 3]);
        assert_eq!(
            survivors(
                &cfg(|c| {
                    c.top_p = 0.5;
                    c.temperature = 0.5
                }),
                &P
            ),
            vec![3]
        );
    }

    #[test]
    fn invalid_values_are_named() {
        for (c, name) in [
            (cfg(|c| c.temperature = -1.0), "temperature"),
            (cfg(|c| c.top_p = 0.0), "top_p"),
            (cfg(|c| c.top_p = 1.5), "top_p"),
            (cfg(|c| c.min_p = 1.0), "min_p"),
            (cfg(|c| c.typical_p = 0.0), "typical_p"),
            (cfg(|c| c.repetition_penalty = 0.0), "repetition_penalty"),
            (cfg(|c| c.presence_penalty = 3.0), "presence_penalty"),
        ] {
            let e = Sampler::new(c).err().expect("must be refused").to_string();
            assert!(e.contains(name), "{e}");
        }
    }

    #[test]
    fn seeded_runs_repeat_and_seeds_differ() {
        let logits: Vec<f32> = (0..50).map(|i| ((i * 7 % 13) as f32) / 3.0).collect();
        let run = |seed| {
            let mut s = Sampler::new(cfg(|c| c.seed = seed)).unwrap();
            (0..40)
                .map(|_| s.sample(&logits, &[]).token)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn draws_follow_the_distribution() {
        // p = 0.1, 0.2, 0.3, 0.4: 20k draws land within 1.5% of each.
        let logits: Vec<f32> = P.iter().map(|p| p.ln()).collect();
        let mut s = Sampler::new(cfg(|_| {})).unwrap();
        let mut n = [0usize; 4];
        for _ in 0..20000 {
            n[s.sample(&logits, &[]).token as usize] += 1;
        }
        for (i, p) in P.iter().enumerate() {
            let f = n[i] as f32 / 20000.0;
            assert!((f - p).abs() < 0.015, "id {i}: {f} vs {p}");
        }
    }

    #[test]
    fn non_finite_logits_fall_back_and_say_so() {
        let mut s = Sampler::new(cfg(|_| {})).unwrap();
        let t = s.sample(&[f32::NAN, f32::NAN], &[]);
        assert_eq!(t.token, 0);
        assert!(t.fallback.is_some());
        let t = s.sample(&[f32::NAN, 1.0, f32::INFINITY], &[]);
        assert_eq!(t.token, 1, "only finite logits compete");
        let mut g = Sampler::new(SamplerConfig::preset("json").unwrap()).unwrap();
        assert_eq!(
            g.sample(&[1.0, 3.0, 3.0], &[]).token,
            1,
            "greedy: lowest id on ties"
        );
    }

    /// All-non-finite logits under every filter combination (the typical-p path once
    /// indexed an empty set): a defined fallback, recorded, never a panic.
    #[test]
    fn all_non_finite_logits_fall_back_under_every_filter() {
        for name in SamplerConfig::preset_names() {
            for typical in [1.0, 0.9] {
                let mut c = SamplerConfig::preset(name).unwrap();
                c.typical_p = typical;
                let mut s = Sampler::new(c).unwrap();
                for logits in [
                    vec![f32::NAN; 5],
                    vec![f32::NEG_INFINITY; 5],
                    vec![f32::INFINITY, f32::NAN, f32::NEG_INFINITY],
                ] {
                    let t = s.sample(&logits, &[0, 1]);
                    assert!(t.fallback.is_some(), "{name} typical {typical}: {logits:?}");
                    assert_eq!(t.token, 0);
                }
            }
        }
    }

    /// A recorded step on logits ln(p): its stages by name.
    fn recorded(c: SamplerConfig, probs: &[f32], context: &[u32]) -> StepTrace {
        let mut s = Sampler::new(c).unwrap();
        s.record = true;
        let logits: Vec<f32> = probs.iter().map(|p| p.ln()).collect();
        s.sample(&logits, context)
    }

    fn stage<'a>(t: &'a StepTrace, name: &str) -> &'a Stage {
        t.stages
            .iter()
            .find(|s| s.stage == name)
            .unwrap_or_else(|| panic!("no {name} in {:?}", t.stages))
    }

    /// (id, prob) of a stage's listed candidates, probabilities checked to 1e-4.
    fn assert_listed(st: &Stage, want: &[(u32, f32)]) {
        let got: Vec<u32> = st.top.iter().map(|c| c.id).collect();
        let ids: Vec<u32> = want.iter().map(|w| w.0).collect();
        assert_eq!(got, ids, "{}", st.stage);
        for (c, w) in st.top.iter().zip(want) {
            assert!(
                (c.prob - w.1).abs() < 1e-4,
                "{} id {}: {} vs {}",
                st.stage,
                c.id,
                c.prob,
                w.1
            );
        }
    }

    fn cuts(st: &Stage) -> Vec<(u32, Option<&str>)> {
        st.top.iter().map(|c| (c.id, c.cut_by.as_deref())).collect()
    }

    #[test]
    fn each_filter_records_its_survivors_renormalized() {
        // P = 0.1, 0.2, 0.3, 0.4 (ids 0..3). Each row: the filter, its survivors with
        // probabilities renormalized over them, and the id the filter cut first.
        type Row<'a> = (&'a str, SamplerConfig, &'a [(u32, f32)]);
        let rows: [Row; 4] = [
            // 0.4/0.9, 0.3/0.9, 0.2/0.9
            (
                "top_k",
                cfg(|c| c.top_k = 3),
                &[(3, 0.4444), (2, 0.3333), (1, 0.2222)],
            ),
            // 0.4/0.7, 0.3/0.7
            (
                "top_p",
                cfg(|c| c.top_p = 0.65),
                &[(3, 0.5714), (2, 0.4286)],
            ),
            // cut 0.3 × 0.4 = 0.12 drops only 0.1
            (
                "min_p",
                cfg(|c| c.min_p = 0.3),
                &[(3, 0.4444), (2, 0.3333), (1, 0.2222)],
            ),
            // typical keeps 2 then 1 (see typical_p_table): 0.3/0.5, 0.2/0.5
            (
                "typical_p",
                cfg(|c| c.typical_p = 0.45),
                &[(2, 0.6), (1, 0.4)],
            ),
        ];
        for (name, c, want) in rows {
            let t = recorded(c, &P, &[]);
            let names: Vec<&str> = t.stages.iter().map(|s| s.stage.as_str()).collect();
            assert_eq!(names, ["raw", "penalized", "temperature", name]);
            assert_listed(stage(&t, "raw"), &[(3, 0.4), (2, 0.3), (1, 0.2), (0, 0.1)]);
            assert_listed(
                stage(&t, "temperature"),
                &[(3, 0.4), (2, 0.3), (1, 0.2), (0, 0.1)],
            );
            let last = stage(&t, name);
            assert_eq!(last.count, want.len(), "{name}");
            assert_listed(last, want);
            // Every raw candidate the filter removed says so; the survivors reach the draw.
            for (id, by) in cuts(stage(&t, "raw")) {
                let kept = want.iter().any(|w| w.0 == id);
                assert_eq!(by, (!kept).then_some(name), "{name} id {id}");
            }
            // The last stage is what the draw used, bit for bit.
            let top: Vec<(u32, f32)> = last.top.iter().map(|c| (c.id, c.prob)).collect();
            assert_eq!(top, t.top, "{name}");
            let (rank, p) = last.pick.expect("the pick survives");
            assert_eq!(p.to_bits(), t.prob.to_bits(), "{name}");
            assert_eq!(last.top[rank].id, t.token, "{name}");
        }
    }

    #[test]
    fn a_chain_records_where_each_candidate_was_cut() {
        // top-k 3 → 0.444, 0.333, 0.222; top-p 0.6 drops 0.222 (cum ≤ 0.4) → 0.571,
        // 0.429; min-p 0.8 cuts below 0.457 → id 3 alone, prob 1.
        let c = cfg(|c| {
            c.top_k = 3;
            c.top_p = 0.6;
            c.min_p = 0.8;
        });
        let t = recorded(c, &P, &[]);
        let counts: Vec<(&str, usize)> = t
            .stages
            .iter()
            .map(|s| (s.stage.as_str(), s.count))
            .collect();
        assert_eq!(
            counts,
            [
                ("raw", 4),
                ("penalized", 4),
                ("temperature", 4),
                ("top_k", 3),
                ("top_p", 2),
                ("min_p", 1)
            ]
        );
        assert_listed(stage(&t, "top_p"), &[(3, 0.5714), (2, 0.4286)]);
        assert_listed(stage(&t, "min_p"), &[(3, 1.0)]);
        assert_eq!(
            cuts(stage(&t, "temperature")),
            [
                (3, None),
                (2, Some("min_p")),
                (1, Some("top_p")),
                (0, Some("top_k"))
            ]
        );
        assert_eq!(
            cuts(stage(&t, "top_k")),
            [(3, None), (2, Some("min_p")), (1, Some("top_p"))]
        );
        assert_eq!(t.token, 3);
        // The pick at each stage: rank 0 throughout, its probability renormalized.
        let picks: Vec<(usize, f32)> = t.stages.iter().map(|s| s.pick.unwrap()).collect();
        for ((rank, p), want) in picks.iter().zip([0.4, 0.4, 0.4, 0.4444, 0.5714, 1.0]) {
            assert_eq!(*rank, 0);
            assert!((p - want).abs() < 1e-4, "{p} vs {want}");
        }
    }

    #[test]
    fn temperature_stage_shows_scaled_logits_and_the_pick_lower_down() {
        // T = 0.5: logits 2·ln p, probabilities ∝ p² (0.033, 0.133, 0.3, 0.533).
        let mut c = cfg(|c| c.temperature = 0.5);
        c.seed = 3;
        let t = recorded(c, &P, &[]);
        let st = stage(&t, "temperature");
        assert_listed(st, &[(3, 0.5333), (2, 0.3), (1, 0.1333), (0, 0.0333)]);
        assert!((st.top[0].logit - 2.0 * 0.4f32.ln()).abs() < 1e-6);
        let (rank, p) = st.pick.unwrap();
        assert_eq!(st.top[rank].id, t.token);
        assert_eq!(p.to_bits(), t.prob.to_bits());
        let (raw_rank, _) = stage(&t, "raw").pick.unwrap();
        assert_eq!(
            raw_rank, rank,
            "the order is the same before and after scaling"
        );
    }

    #[test]
    fn greedy_records_penalties_and_the_argmax() {
        // logits 1, 2, 3; repetition 2 on id 2 → 1, 2, 1.5: the argmax moves to id 1.
        let mut c = SamplerConfig::preset("json").unwrap();
        c.repetition_penalty = 2.0;
        let mut s = Sampler::new(c).unwrap();
        s.record = true;
        let t = s.sample(&[1.0, 2.0, 3.0], &[2]);
        assert_eq!(t.token, 1);
        let names: Vec<&str> = t.stages.iter().map(|s| s.stage.as_str()).collect();
        assert_eq!(names, ["raw", "penalized", "greedy"]);
        // softmax(1, 2, 3) and softmax(1, 2, 1.5)
        assert_listed(stage(&t, "raw"), &[(2, 0.6652), (1, 0.2447), (0, 0.0900)]);
        assert_listed(
            stage(&t, "penalized"),
            &[(1, 0.5065), (2, 0.3072), (0, 0.1863)],
        );
        assert_eq!(
            cuts(stage(&t, "raw")),
            [(2, Some("greedy")), (1, None), (0, Some("greedy"))]
        );
        assert_eq!(stage(&t, "raw").pick.map(|p| p.0), Some(1));
        assert_eq!(stage(&t, "penalized").pick.map(|p| p.0), Some(0));
        assert_eq!(stage(&t, "greedy").pick, Some((0, 1.0)));
    }

    /// `top_k_first` against a full sort: logits with heavy ties, ±0, −∞ and NaN, every
    /// preset and k at its edges (1, V − 1, past V). The filtered values, the counts and
    /// every draw (token, probability, uniform, top list) must be the same bits.
    #[test]
    fn sorting_only_top_k_survivors_changes_nothing() {
        let mut rng = Rng::new(5);
        let special = [0.0, -0.0, f32::NEG_INFINITY, f32::NAN, 1.5, -1.5];
        let mut configs: Vec<SamplerConfig> = SamplerConfig::preset_names()
            .iter()
            .map(|n| SamplerConfig::preset(n).unwrap())
            .collect();
        for k in [1, 2, 7, 63, 64, 65, 500] {
            for (t, p, m, ty) in [(1.0, 1.0, 0.0, 1.0), (0.8, 0.9, 0.05, 0.9)] {
                configs.push(SamplerConfig {
                    temperature: t,
                    top_k: k,
                    top_p: p,
                    min_p: m,
                    typical_p: ty,
                    ..SamplerConfig::hf_sampling_defaults()
                });
            }
        }
        for round in 0..40 {
            let v = [64, 65, 300][round % 3];
            let levels = 1 + (rng.next_u64() % 12) as usize;
            let logits: Vec<f32> = (0..v)
                .map(|_| match rng.next_u64() % 10 {
                    0 => special[(rng.next_u64() % 6) as usize],
                    _ => (rng.next_u64() % levels as u64) as f32 / 3.0 - 1.0,
                })
                .collect();
            for (ci, c) in configs.iter().enumerate() {
                // The draw's input: the surviving (id, probability) in order.
                let drawn = |work: &[f32], order: &[u32]| {
                    let p = softmax_sorted(work, order);
                    order
                        .iter()
                        .zip(p)
                        .filter(|(_, p)| *p > 0.0)
                        .map(|(i, p)| (*i, p.to_bits()))
                        .collect::<Vec<_>>()
                };
                let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                for record in [false, true] {
                    let run = |sort_all| {
                        let (mut w, mut o, mut st) = (logits.clone(), vec![], vec![]);
                        let stages = record.then_some(&mut st);
                        let n = Sampler::filter_sorting(c, &mut w, &mut o, stages, sort_all);
                        (bits(&w), n, drawn(&w, &o), st)
                    };
                    assert_eq!(
                        run(false),
                        run(true),
                        "round {round} config {ci} record {record}"
                    );
                }
                let c = SamplerConfig {
                    seed: round as u64,
                    ..c.clone()
                };
                assert_eq!(
                    draws(&c, &logits, 6, false),
                    draws(&c, &logits, 6, true),
                    "round {round} config {ci}"
                );
            }
        }
    }

    /// One draw as bits: token, probability, uniform, top list, fallback.
    type Draw = (u32, u32, Option<u64>, Vec<(u32, u32)>, Option<String>);

    /// `steps` draws on fixed `logits` (each step's token joins the context).
    fn draws(c: &SamplerConfig, logits: &[f32], steps: usize, record: bool) -> Vec<Draw> {
        let mut s = Sampler::new(c.clone()).unwrap();
        s.record = record;
        let mut ctx = vec![];
        (0..steps)
            .map(|_| {
                let t = s.sample(logits, &ctx);
                ctx.push(t.token);
                let top = t.top.iter().map(|(i, p)| (*i, p.to_bits())).collect();
                (
                    t.token,
                    t.prob.to_bits(),
                    t.draw.map(f64::to_bits),
                    top,
                    t.fallback,
                )
            })
            .collect()
    }

    #[test]
    fn recording_does_not_change_the_draws() {
        let logits: Vec<f32> = (0..300).map(|i| ((i * 37 % 101) as f32) / 17.0).collect();
        let c = SamplerConfig {
            seed: 9,
            ..SamplerConfig::preset("creative").unwrap()
        };
        assert_eq!(draws(&c, &logits, 50, true), draws(&c, &logits, 50, false));
    }

    #[test]
    fn a_fallback_step_records_without_placing_the_pick_after_the_filters() {
        let mut s = Sampler::new(cfg(|c| c.typical_p = 0.9)).unwrap();
        s.record = true;
        let t = s.sample(&[f32::NAN, f32::NAN], &[]);
        assert!(t.fallback.is_some());
        assert_eq!(stage(&t, "raw").count, 0);
        assert!(t.stages.iter().all(|s| s.pick.is_none()));
    }

    #[test]
    fn portable_ln_is_within_an_ulp_of_the_platform_one() {
        let mut worst = 0u32;
        let mut x = 1e-30f32;
        while x < 1e30 {
            let (got, want) = (ln(x), (x as f64).ln() as f32);
            worst = worst.max(got.to_bits().abs_diff(want.to_bits()));
            x *= 1.0137;
        }
        assert!(worst <= 1, "{worst} ulps");
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(0.0), f32::NEG_INFINITY);
        assert!(ln(-1.0).is_nan());
    }

    #[test]
    fn presets_are_valid() {
        for name in SamplerConfig::preset_names() {
            SamplerConfig::preset(name).unwrap().validate().unwrap();
        }
        assert!(SamplerConfig::preset("json").unwrap().is_greedy());
    }

    /// A model's tuning changes only the fields it names, only in the preset it names;
    /// each bad tuning is refused with the preset and field in the message.
    #[test]
    fn preset_tuning_changes_what_it_names_and_refuses_the_rest() {
        let mut t = PresetTuning::new();
        SamplerConfig::parse_tuning("chat.repetition_penalty=1.1", &mut t).unwrap();
        SamplerConfig::parse_tuning(" chat.top_k = 20 ", &mut t).unwrap();
        let chat = SamplerConfig::preset_tuned("chat", &t).unwrap();
        let want = SamplerConfig {
            repetition_penalty: 1.1,
            top_k: 20,
            ..SamplerConfig::preset("chat").unwrap()
        };
        assert_eq!(chat, want);
        assert_eq!(
            SamplerConfig::preset_tuned("precise", &t),
            SamplerConfig::preset("precise")
        );
        assert_eq!(SamplerConfig::preset_tuned("nope", &t), None);
        for (arg, says) in [
            ("chat.repetition_penalty", "expected PRESET.FIELD=VALUE"),
            ("chat=1", "expected PRESET.FIELD=VALUE"),
            ("chat.temperature=warm", "expected PRESET.FIELD=VALUE"),
            ("chat.temperature=inf", "expected PRESET.FIELD=VALUE"),
            ("model.temperature=1", "no preset \"model\""),
            ("chat.seed=1", "chat.seed: not a preset field"),
            ("chat.top_k=2.5", "chat.top_k = 2.5: must be a whole number"),
            ("chat.top_p=0", "preset tuning chat: top_p = 0"),
            (
                "json.repetition_penalty=-1",
                "preset tuning json: repetition_penalty = -1",
            ),
        ] {
            let mut u = t.clone();
            let e = SamplerConfig::parse_tuning(arg, &mut u)
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{arg}: {e}");
            assert_eq!(u, t, "{arg}: a refused tuning changes nothing");
        }
    }
}
