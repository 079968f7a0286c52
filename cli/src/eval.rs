//! `slm eval clarify` and `slm eval loops`: the behaviour gates, measured on the
//! sets in eval/ with the chat preset and fixed seeds. The tables they print are the
//! ones docs/behaviour.md reports; `--out` keeps every reply for hand labelling.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use slm_runtime::clarify;
use slm_runtime::engine::{EndAt, Engine, GenerateOptions, Generation};
use slm_runtime::sampling::{PresetTuning, SamplerConfig};
use slm_runtime::session::Session;
use slm_runtime::stopping::{LoopConfig, StopReason};
use slm_runtime::{Result, SlmError};

use crate::score::{score, Score};

/// One prompt of a clarify set (eval/clarify.jsonl; its fields are checked by
/// eval/check_sets.py).
pub struct Case {
    pub file: String,
    pub id: String,
    pub underspecified: bool,
    pub category: String,
    pub prompt: String,
    pub missing: Vec<String>,
    pub no_answer: bool,
}

fn read_jsonl(path: &Path) -> Result<Vec<Value>> {
    let s = std::fs::read_to_string(path).map_err(|e| {
        SlmError::io(
            format!(
                "{} (run from the repository root, or give --set)",
                path.display()
            ),
            e,
        )
    })?;
    s.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                SlmError::Invalid(format!("{} line {}: not JSON: {e}", path.display(), i + 1))
            })
        })
        .collect()
}

fn field<'v>(v: &'v Value, path: &Path, name: &str) -> Result<&'v str> {
    v[name].as_str().ok_or_else(|| {
        SlmError::Invalid(format!(
            "{}: a case without a string \"{name}\": {v}",
            path.display()
        ))
    })
}

pub fn load_clarify(path: &Path) -> Result<Vec<Case>> {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    read_jsonl(path)?
        .iter()
        .map(|v| {
            Ok(Case {
                file: file.clone(),
                id: field(v, path, "id")?.to_string(),
                underspecified: field(v, path, "set")? == "underspecified",
                category: field(v, path, "category")?.to_string(),
                prompt: field(v, path, "prompt")?.to_string(),
                missing: v["missing"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|s| s.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default(),
                no_answer: v["no_answer"].as_bool().unwrap_or(false),
            })
        })
        .collect()
}

/// `n` items spread evenly over `v` (all of them when `n` is None or too large).
fn sample<T>(v: Vec<T>, n: Option<usize>) -> Vec<T> {
    match n {
        Some(n) if n < v.len() && n > 0 => {
            // Keep the items at ⌊k·len/n⌋ for k = 0..n (strictly increasing: n < len).
            let step = v.len() as f64 / n as f64;
            let mut k = 0;
            v.into_iter()
                .enumerate()
                .filter(|(i, _)| {
                    let keep = k < n && *i == (k as f64 * step) as usize;
                    k += keep as usize;
                    keep
                })
                .map(|(_, x)| x)
                .collect()
        }
        _ => v,
    }
}

/// Context positions of a clarify case's session: a one-message prompt and its reply.
const EVAL_CONTEXT: usize = 1024;

fn options(sampler: SamplerConfig, max_tokens: usize) -> GenerateOptions {
    GenerateOptions {
        sampler,
        max_tokens,
        stop_strings: vec![],
        stop_token_ids: vec![],
        loop_detection: Some(LoopConfig::default()),
        trace: false,
        candidates: false,
        abort: None,
        end_at: EndAt::Never,
        barred_start: Vec::new(),
    }
}

/// Preset `name` as this model tunes it (`Manifest::preset_tuning`), at `seed`.
fn preset(name: &str, tuning: &PresetTuning, seed: u64) -> Result<SamplerConfig> {
    let mut c = SamplerConfig::preset_tuned(name, tuning).ok_or_else(|| {
        SlmError::Invalid(format!(
            "--preset {name}: expected one of {:?}",
            SamplerConfig::preset_names()
        ))
    })?;
    c.seed = seed;
    Ok(c)
}

/// Generate a reply to `messages` (rendered with the model's template), continuing
/// the last message where it is the reply's start.
fn reply(eng: &Engine, messages: &[Value], opts: &GenerateOptions) -> Result<Generation> {
    eng.generate(&prompt_ids(eng, messages)?, opts, &mut |_, _| {})
}

fn prompt_ids(eng: &Engine, messages: &[Value]) -> Result<Vec<u32>> {
    let continues = messages.last().is_some_and(|m| m["role"] == "assistant");
    let r = eng.text.render_prompt(messages, None, continues, 0)?;
    eng.text.encode_rendered(&r)
}

fn pct(n: usize, d: usize) -> String {
    if d == 0 {
        "–".into()
    } else {
        format!("{:.1}% ({n}/{d})", 100.0 * n as f64 / d as f64)
    }
}

#[derive(Default, Clone)]
struct Tally {
    under: usize,
    fired: usize,
    asks: usize,
    useful: usize,
    no_answer: usize,
    fabricated: usize,
    controls: usize,
    fired_controls: usize,
    false_clarification: usize,
}

impl Tally {
    fn add(&mut self, c: &Case, fired: bool, s: &Score) {
        if c.underspecified {
            self.under += 1;
            self.fired += fired as usize;
            self.asks += s.asks as usize;
            self.useful += s.useful(c.category == "live", c.no_answer) as usize;
            if c.no_answer {
                self.no_answer += 1;
                self.fabricated += s.fabricated() as usize;
            }
        } else {
            self.controls += 1;
            self.fired_controls += fired as usize;
            self.false_clarification += s.false_clarification() as usize;
        }
    }

    fn json(&self) -> Value {
        let r = |n: usize, d: usize| {
            if d == 0 {
                Value::Null
            } else {
                json!(n as f64 / d as f64)
            }
        };
        json!({
            "underspecified": self.under, "controls": self.controls, "no_answer": self.no_answer,
            "policy_fired": self.fired, "policy_fired_on_controls": self.fired_controls,
            "clarification_rate": r(self.asks, self.under),
            "useful_clarification_rate": r(self.useful, self.under),
            "fabrication_rate": r(self.fabricated, self.no_answer),
            "false_clarification_rate": r(self.false_clarification, self.controls),
        })
    }

    fn row(&self, label: &str) -> String {
        format!(
            "| {label} | {} | {} | {} | {} | {} |",
            pct(self.asks, self.under),
            pct(self.useful, self.under),
            pct(self.false_clarification, self.controls),
            pct(self.fabricated, self.no_answer),
            pct(self.fired, self.under) + " / " + &pct(self.fired_controls, self.controls),
        )
    }
}

pub struct ClarifyRun<'a> {
    pub preset: &'a str,
    pub sets: &'a [PathBuf],
    pub sample: Option<usize>,
    pub seed: u64,
    pub max_tokens: usize,
    pub policies: &'a [bool],
    pub out: Option<&'a Path>,
    pub quiet: bool,
    /// Clarifying replies sampled per fired prompt, the best kept (`pick.rs`; an
    /// experiment, 1 in production).
    pub candidates: usize,
    /// Read the model's clarify probe where it carries one (`clarify::probe`); false
    /// decides by the rules alone, for the comparison.
    pub probe: bool,
}

/// Run the clarify evaluation; returns the JSON report and prints the tables
/// unless `quiet`.
/// Where replies come from: the model, or a saved `--out` file (`--from`), which
/// re-scores the same replies (the scorer changed, or a table is wanted again).
/// A saved reply: its text, stop reason, tokens, the clarifying reply's attempts
/// (`tries`) and the probe's reading its decision was made with (none in replies
/// saved by rules alone).
type SavedReply = (String, String, usize, Value, Option<clarify::Reading>);

pub enum Replies<'a> {
    Model(&'a Engine),
    Saved(std::collections::HashMap<(String, String, bool), SavedReply>),
}

impl Replies<'_> {
    /// Replies saved by an earlier run's `--out`, keyed by (set file, id, policy).
    pub fn saved(path: &Path) -> Result<Replies<'static>> {
        let mut m = std::collections::HashMap::new();
        for v in read_jsonl(path)? {
            let key = (
                field(&v, path, "file")?.to_string(),
                field(&v, path, "id")?.to_string(),
                v["policy"].as_bool().unwrap_or(false),
            );
            let val = (
                field(&v, path, "text")?.to_string(),
                field(&v, path, "stop_reason")?.to_string(),
                v["tokens"].as_u64().unwrap_or(0) as usize,
                v.get("tries").cloned().unwrap_or_else(|| json!([])),
                match v["decision"].get("probe") {
                    Some(r) => Some(serde_json::from_value(r.clone()).map_err(|e| {
                        SlmError::Invalid(format!(
                            "{}: decision.probe is not a probe reading: {e}",
                            path.display()
                        ))
                    })?),
                    None => None,
                },
            );
            m.insert(key, val);
        }
        Ok(Replies::Saved(m))
    }
}

pub fn clarify(replies: &Replies, model: &str, run: &ClarifyRun) -> Result<Value> {
    // Saved replies are not generated again, so only a model's tuning matters.
    let none = PresetTuning::new();
    let tuning = match replies {
        Replies::Model(eng) => &eng.text.manifest.preset_tuning,
        Replies::Saved(_) => &none,
    };
    let opts = options(preset(run.preset, tuning, run.seed)?, run.max_tokens);
    let mut rows = Vec::new();
    let mut report = Vec::new();
    let mut out_lines = Vec::new();
    let mut tables = Vec::new();
    for path in run.sets {
        let cases = sample(load_clarify(path)?, run.sample);
        let mut by_policy = Vec::new();
        // With the policy on and silent, the model sees the same prompt as with it
        // off: the reply (same seed) is reused, not generated twice.
        let mut off_replies: Vec<Option<(String, Score)>> = vec![None; cases.len()];
        // The probe's reading of each prompt as written, with the assistant opener, as
        // a session's `push_user` takes it: once, for both policies.
        let readings: Vec<Option<clarify::Reading>> = match replies {
            Replies::Model(eng) if run.probe => cases
                .iter()
                .map(|c| {
                    let messages = [json!({"role": "user", "content": c.prompt})];
                    eng.probe_reading(&prompt_ids(eng, &messages)?)
                })
                .collect::<Result<_>>()?,
            _ => vec![None; cases.len()],
        };
        for &on in run.policies {
            let mut total = Tally::default();
            let mut per_cat = std::collections::BTreeMap::<String, Tally>::new();
            for (i, c) in cases.iter().enumerate() {
                let mut messages = vec![json!({"role": "user", "content": c.prompt})];
                let mut picked = None;
                let mut tries = json!([]);
                let mut as_written = messages.clone();
                // A saved reply keeps the reading it was decided with.
                let reading = match replies {
                    Replies::Model(_) => readings[i].clone(),
                    Replies::Saved(m) => [on, false]
                        .iter()
                        .find_map(|&p| m.get(&(c.file.clone(), c.id.clone(), p)))
                        .and_then(|r| r.4.clone()),
                };
                let d = if on {
                    clarify::apply_read(&mut messages, reading.as_ref())
                } else {
                    clarify::assess_read(&messages, reading.as_ref())
                };
                // The policy's lead starts the reply, as in a session (`Session::begin_reply`).
                let lead = match &d.lead {
                    Some(lead) if on => {
                        clarify::start_reply(&mut messages, &d);
                        clarify::start_reply(&mut as_written, &d);
                        lead.clone()
                    }
                    _ => String::new(),
                };
                // A reply (each candidate too) that continues the lead ends at its
                // question, as in a session (`Session::begin_reply`).
                let opts = GenerateOptions {
                    end_at: match lead.is_empty() {
                        true => EndAt::Never,
                        false => clarify::reply_end(&lead),
                    },
                    ..opts.clone()
                };
                // The product's own path for one message: a session sends the prompt and
                // settles the reply, trying again where the clarifying question names
                // no missing piece, or where a reply to a clear message restates it.
                let in_session = |eng: &Engine| -> Result<(String, String, usize, Value)> {
                    let mut session = Session::new(eng, EVAL_CONTEXT);
                    session.clarify_first = true;
                    session.clarify_probe = run.probe;
                    let t = session.send(&c.prompt, &opts, 0, &mut |_, _| {})?;
                    let text = session
                        .messages
                        .last()
                        .and_then(|m| m["content"].as_str())
                        .unwrap_or_default()
                        .to_string();
                    Ok((
                        text,
                        t.generation.stop_reason.as_str().to_string(),
                        t.generation.ids.len(),
                        serde_json::to_value(&t.tries).expect("serializes"),
                    ))
                };
                // A reply to a clear message is the policy-off reply, unless it restates
                // the question (`clarify::restates_request`).
                let restated =
                    |t: &str| on && !d.clarify && clarify::restates_request(&c.prompt, t);
                let (text, s, stop, tokens) = match (&off_replies[i], on && !d.clarify) {
                    (Some((t, s)), true) if !restated(t) => {
                        (t.clone(), s.clone(), "reused".to_string(), 0)
                    }
                    _ => {
                        let (text, stop, tokens) = match replies {
                            Replies::Model(eng) if on && d.clarify && run.candidates > 1 => {
                                let with = prompt_ids(eng, &messages)?;
                                let without = prompt_ids(eng, &as_written)?;
                                let (g, mut p) =
                                    crate::pick::pick(eng, &with, &without, &opts, run.candidates)?;
                                // Each candidate continued the lead, as the reply did.
                                for c in &mut p.candidates {
                                    c.text = format!("{lead}{}", c.text);
                                }
                                picked = Some(p);
                                (
                                    format!("{lead}{}", g.text),
                                    g.stop_reason.as_str().to_string(),
                                    g.ids.len(),
                                )
                            }
                            // Where the policy fires, the product's own path: a session
                            // that sends the prompt and settles the clarifying reply,
                            // trying other leads when it names no missing piece.
                            Replies::Model(eng) if on && d.clarify => {
                                let (text, stop, tokens, t) = in_session(eng)?;
                                tries = t;
                                (text, stop, tokens)
                            }
                            Replies::Model(eng) => {
                                let g = reply(eng, &messages, &opts)?;
                                if restated(&g.text) {
                                    let (text, stop, tokens, t) = in_session(eng)?;
                                    tries = t;
                                    (text, stop, tokens)
                                } else {
                                    (
                                        format!("{lead}{}", g.text),
                                        g.stop_reason.as_str().to_string(),
                                        g.ids.len(),
                                    )
                                }
                            }
                            Replies::Saved(m) => {
                                let key = (c.file.clone(), c.id.clone(), on);
                                // A reply reused from policy off was saved under policy off.
                                let hit = m
                                    .get(&key)
                                    .filter(|r| r.1 != "reused")
                                    .or_else(|| m.get(&(c.file.clone(), c.id.clone(), false)));
                                let (text, stop, tokens, saved_tries, _) =
                                    hit.cloned().ok_or_else(|| {
                                        SlmError::Invalid(format!(
                                            "--from: no saved reply for {} {} (policy {})",
                                            c.file,
                                            c.id,
                                            if on { "on" } else { "off" }
                                        ))
                                    })?;
                                tries = saved_tries;
                                (text, stop, tokens)
                            }
                        };
                        let s = score(&text, &c.missing, &c.prompt);
                        (text, s, stop, tokens)
                    }
                };
                if !on {
                    off_replies[i] = Some((text.clone(), s.clone()));
                }
                let fired = on && d.clarify;
                total.add(c, d.clarify, &s);
                per_cat
                    .entry(c.category.clone())
                    .or_default()
                    .add(c, d.clarify, &s);
                out_lines.push(json!({
                    "model": model, "file": c.file, "id": c.id, "category": c.category,
                    "underspecified": c.underspecified, "missing": c.missing, "no_answer": c.no_answer,
                    "policy": on, "fired": fired, "decision": d.to_json(), "prompt": c.prompt,
                    "text": text, "stop_reason": stop, "tokens": tokens, "score": s, "tries": tries,
                    "useful": s.useful(c.category == "live", c.no_answer), "fabricated": c.no_answer && s.fabricated(), "false_clarification": s.false_clarification(),
                    "picked": picked.map(|p| {
                        let mut v = serde_json::to_value(&p).expect("serializes");
                        for (k, x) in p.candidates.iter().enumerate() {
                            let s = score(&x.text, &c.missing, &c.prompt);
                            v["candidates"][k]["useful"] = json!(s.useful(c.category == "live", c.no_answer));
                        }
                        v
                    }),
                }));
                if !run.quiet && (i + 1) % 25 == 0 {
                    eprintln!(
                        "[{} policy {}: {}/{}]",
                        c.file,
                        if on { "on" } else { "off" },
                        i + 1,
                        cases.len()
                    );
                }
            }
            let label = format!(
                "{} policy {}",
                path.file_name().unwrap_or_default().to_string_lossy(),
                if on { "on" } else { "off" }
            );
            rows.push(total.row(&label));
            by_policy.push(json!({
                "policy": on, "total": total.json(),
                "categories": per_cat.iter().map(|(k, t)| (k.clone(), t.json())).collect::<serde_json::Map<_, _>>(),
            }));
            let mut t = format!("{label}\n\n| category | clarified | useful | false clarification | fabrication | policy fired (under / controls) |\n|---|---|---|---|---|---|\n");
            for (k, v) in &per_cat {
                t += &v.row(k);
                t.push('\n');
            }
            if !run.quiet {
                eprintln!("{t}");
            }
            tables.push(t);
        }
        report.push(
            json!({"set": path.display().to_string(), "cases": cases.len(), "results": by_policy}),
        );
    }
    if let Some(p) = run.out {
        let body: String = out_lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(p, body).map_err(|e| SlmError::io(p.display(), e))?;
    }
    let mut summary = format!("| {model} | clarified | useful | false clarification | fabrication | policy fired (under / controls) |\n|---|---|---|---|---|---|\n");
    for r in &rows {
        summary += r;
        summary.push('\n');
    }
    if !run.quiet {
        print!("{summary}");
    }
    Ok(json!({
        "model": model, "seed": run.seed, "max_tokens": run.max_tokens, "preset": run.preset,
        "sets": report, "summary": summary, "categories": tables,
    }))
}

/// A word n-gram of `n` words that occurs at least `times` times: a loop the token
/// detector may not have cut (it looks at tokens in a window, this at the whole text).
pub fn repeated_ngram(text: &str, n: usize, times: usize) -> Option<String> {
    let w: Vec<&str> = text.split_whitespace().collect();
    let mut seen = std::collections::HashMap::<&[&str], usize>::new();
    for g in w.windows(n) {
        let c = seen.entry(g).or_default();
        *c += 1;
        if *c >= times {
            return Some(g.join(" "));
        }
    }
    None
}

pub struct LoopsRun<'a> {
    pub set: &'a Path,
    pub sample: Option<usize>,
    pub seed: u64,
    pub max_tokens: usize,
    /// The chat arm's repetition penalty, when not the preset's own.
    pub repetition_penalty: Option<f32>,
    pub out: Option<&'a Path>,
    pub quiet: bool,
}

/// Run the loop evaluation: the chat preset against the same preset with no
/// repetition penalty, on short utility prompts.
pub fn loops(eng: &Engine, model: &str, run: &LoopsRun) -> Result<Value> {
    let prompts = sample(read_jsonl(run.set)?, run.sample);
    let tuning = &eng.text.manifest.preset_tuning;
    let mut no_penalty = preset("chat", tuning, run.seed)?;
    no_penalty.repetition_penalty = 1.0;
    let mut chat = preset("chat", tuning, run.seed)?;
    let chat_name = match run.repetition_penalty {
        Some(p) => {
            chat.repetition_penalty = p;
            chat.validate()?;
            format!("chat preset, repetition penalty {p}")
        }
        // The name says when the chat arm is this model's tuned chat preset.
        None => match tuning.get("chat").filter(|t| !t.is_empty()) {
            Some(t) => format!(
                "chat preset (this model's: {})",
                slm_runtime::sampling::tuning_text(t)
            ),
            None => "chat preset".to_string(),
        },
    };
    let configs = [
        (chat_name.as_str(), chat),
        ("repetition penalty 1.0", no_penalty),
    ];
    let mut results = Vec::new();
    let mut out_lines = Vec::new();
    let mut summary = format!("| {model} | pathological loops | natural termination | median tokens |\n|---|---|---|---|\n");
    for (name, sampler) in configs {
        let opts = options(sampler, run.max_tokens);
        let (mut looped, mut natural, mut lengths) = (0, 0, Vec::new());
        for (i, p) in prompts.iter().enumerate() {
            let prompt = field(p, run.set, "prompt")?;
            let g = reply(eng, &[json!({"role": "user", "content": prompt})], &opts)?;
            let ngram = repeated_ngram(&g.text, 6, 3);
            let is_loop = g.stop_reason == StopReason::LoopDetected || ngram.is_some();
            let ended = matches!(
                g.stop_reason,
                StopReason::EosToken | StopReason::StopString | StopReason::StopTokenId
            );
            looped += is_loop as usize;
            natural += ended as usize;
            lengths.push(g.ids.len());
            out_lines.push(json!({
                "model": model, "config": name, "id": p["id"], "category": p["category"],
                "text": g.text, "stop_reason": g.stop_reason.as_str(), "tokens": g.ids.len(),
                "loop": is_loop, "repeated_ngram": ngram,
            }));
            if !run.quiet && (i + 1) % 20 == 0 {
                eprintln!("[{name}: {}/{}]", i + 1, prompts.len());
            }
        }
        lengths.sort_unstable();
        let median = lengths.get(lengths.len() / 2).copied().unwrap_or(0);
        summary += &format!(
            "| {name} | {} | {} | {median} |\n",
            pct(looped, prompts.len()),
            pct(natural, prompts.len())
        );
        results.push(json!({
            "config": name, "prompts": prompts.len(), "loops": looped, "natural_termination": natural,
            "loop_rate": looped as f64 / prompts.len().max(1) as f64,
            "natural_rate": natural as f64 / prompts.len().max(1) as f64,
            "median_tokens": median,
        }));
    }
    if let Some(p) = run.out {
        let body: String = out_lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(p, body).map_err(|e| SlmError::io(p.display(), e))?;
    }
    if !run.quiet {
        print!("{summary}");
    }
    Ok(
        json!({"model": model, "seed": run.seed, "max_tokens": run.max_tokens, "results": results, "summary": summary}),
    )
}

/// What `slm eval probe` fits a clarify probe with.
pub struct ProbeRun<'a> {
    /// The sets, each one author: each is held out in turn to measure the probe.
    pub sets: &'a [PathBuf],
    /// The layer after which the residual stream is read; None for 70% of the depth,
    /// where both models' held-out readings were best (docs/behaviour.md).
    pub layer: Option<usize>,
    pub quiet: bool,
}

/// Fit a clarify probe on the hidden states of every prompt of `run.sets`, rendered
/// as a first user message with the assistant opener, as a session reads them.
pub fn fit_probe(eng: &Engine, run: &ProbeRun) -> Result<clarify::ClarifyProbe> {
    let cfg = &eng.model.cfg;
    let layer = run.layer.unwrap_or(cfg.num_layers * 7 / 10);
    if layer >= cfg.num_layers {
        return Err(SlmError::Invalid(format!(
            "--layer {layer}: the model has {} layers (0 to {})",
            cfg.num_layers,
            cfg.num_layers - 1
        )));
    }
    let h = cfg.hidden_size;
    let mut examples = Vec::new();
    let mut sets = Vec::new();
    for (g, path) in run.sets.iter().enumerate() {
        let bytes = std::fs::read(path).map_err(|e| SlmError::io(path.display(), e))?;
        let cases = load_clarify(path)?;
        for (i, c) in cases.iter().enumerate() {
            let missing = c
                .missing
                .iter()
                .map(|m| {
                    clarify::Slot::parse(m).ok_or_else(|| {
                        SlmError::Invalid(format!(
                            "{} {}: missing slot {m:?} is not one of the slots",
                            path.display(),
                            c.id
                        ))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let messages = [json!({"role": "user", "content": c.prompt})];
            let rules = clarify::assess(&messages);
            let hidden = eng.hidden_states(&prompt_ids(eng, &messages)?)?;
            examples.push(clarify::probe::Example {
                x: hidden[layer * h..(layer + 1) * h].to_vec(),
                underspecified: c.underspecified,
                missing,
                group: g,
                rules_fire: rules.clarify,
                rules_kept: !clarify::vetoable(&rules),
            });
            if !run.quiet && (i + 1) % 50 == 0 {
                eprintln!(
                    "[{}: {}/{} prompts read]",
                    path.display(),
                    i + 1,
                    cases.len()
                );
            }
        }
        sets.push(clarify::probe::FitSet {
            path: path.display().to_string(),
            sha256: slm_runtime::format::layout::sha256_hex(&bytes),
            underspecified: cases.iter().filter(|c| c.underspecified).count(),
            controls: cases.iter().filter(|c| !c.underspecified).count(),
        });
    }
    let prov = &eng.text.manifest.provenance;
    clarify::probe::fit(
        &examples,
        layer,
        sets,
        prov.source_files.iter().map(|f| f.sha256.clone()).collect(),
        prov.quant.clone(),
        &clarify::probe::FitSettings::default(),
        &mut |what| {
            if !run.quiet {
                eprintln!("[{what}]");
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_ngrams_and_samples() {
        assert_eq!(
            repeated_ngram("a b c a b c a b c", 3, 3).as_deref(),
            Some("a b c")
        );
        assert_eq!(repeated_ngram("a b c a b c d", 3, 3), None);
        assert_eq!(sample((0..10).collect::<Vec<_>>(), Some(3)), vec![0, 3, 6]);
        assert_eq!(sample((0..3).collect::<Vec<_>>(), Some(5)), vec![0, 1, 2]);
    }

    /// The scorer against the hand labels of eval/labels.jsonl, per question the labels
    /// answer ("useful clarification", "false clarification", "fabrication"): agreement
    /// ≥ 90% on each.
    #[test]
    fn scorer_agrees_with_the_hand_labels() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../eval/labels.jsonl");
        let labels = read_jsonl(&path).expect("eval/labels.jsonl");
        // Each label's prompt, from its set.
        let mut sets = Vec::new();
        for f in [
            "clarify.jsonl",
            "clarify_heldout.jsonl",
            "clarify_fresh.jsonl",
        ] {
            let p = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../eval")
                .join(f);
            sets.push((f, load_clarify(&p).expect(f)));
        }
        let prompts: std::collections::HashMap<(&str, &str), &str> = sets
            .iter()
            .flat_map(|(f, cases)| {
                cases
                    .iter()
                    .map(move |c| ((*f, c.id.as_str()), c.prompt.as_str()))
            })
            .collect();
        let mut by_kind = std::collections::BTreeMap::<String, (usize, usize, Vec<String>)>::new();
        let mut by_batch = std::collections::BTreeMap::<(&str, String), (usize, usize)>::new();
        for l in &labels {
            let missing: Vec<String> = l["missing"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            let prompt = prompts
                .get(&(l["file"].as_str().unwrap(), l["id"].as_str().unwrap()))
                .unwrap_or_else(|| panic!("{} {}: not in the sets", l["file"], l["id"]));
            let s = score(l["text"].as_str().unwrap(), &missing, prompt);
            let kind = l["label_means"].as_str().unwrap();
            let no_answer = l["no_answer"].as_bool().unwrap();
            let scorer = match kind {
                "useful clarification" => s.useful(l["category"] == "live", no_answer),
                "false clarification" => s.false_clarification(),
                "fabrication" => s.fabricated(),
                other => panic!("unknown label_means {other}"),
            };
            // Useful and false clarification are one question each of one reply kind.
            let key = if kind == "fabrication" {
                "fabrication"
            } else {
                "clarification"
            };
            let batch = l["batch"].as_str().unwrap_or("?").to_string();
            let b = by_batch.entry((key, batch)).or_default();
            b.1 += 1;
            b.0 += (scorer == l["label"].as_bool().unwrap()) as usize;
            let e = by_kind.entry(key.to_string()).or_default();
            e.1 += 1;
            if scorer == l["label"].as_bool().unwrap() {
                e.0 += 1;
            } else {
                e.2.push(format!("{} {}: scorer {scorer}", l["model"], l["id"]));
            }
        }
        assert_eq!(by_kind.len(), 2, "both kinds of label are present");
        for ((kind, batch), (agree, n)) in &by_batch {
            eprintln!("{kind}, batch {batch}: {agree}/{n}");
        }
        for (kind, (agree, n, disagreements)) in &by_kind {
            let rate = *agree as f64 / *n as f64;
            eprintln!(
                "{kind}: agreement {agree}/{n} = {:.1}%; {}",
                100.0 * rate,
                disagreements.join(", ")
            );
            assert!(*n >= 60, "{kind}: at least 60 hand labels");
            // The goal: 90% on each kind (docs/behaviour.md gives each batch's figure).
            let floor = 0.9;
            assert!(rate >= floor, "{kind}: agreement {rate}: {disagreements:?}");
        }
    }
}
