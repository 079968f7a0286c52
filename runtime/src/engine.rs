//! A loaded `.slm`: the text side (template + tokenizer, from the manifest alone) and
//! the model, and generation: prefill what the cache lacks, then sample and apply the
//! stop rules step by step (`sampling`, `stopping`; `session` builds chats on top).

use crate::error::{Result, SlmError};
use crate::format::manifest::Manifest;
use crate::model::kv_cache::KvCache;
use crate::model::{Model, Scratch};
use crate::sampling::{Sampler, SamplerConfig, StepTrace};
use crate::stopping::{LoopConfig, StopReason, TextStream};
use crate::template::{ChatTemplate, RenderInput};
use crate::tokenizer::Tokenizer;

/// Everything between messages and token ids. Needs only the manifest.
pub struct TextSide {
    pub tokenizer: Tokenizer,
    template: Option<ChatTemplate>,
    pub manifest: Manifest,
}

impl TextSide {
    pub fn new(manifest: Manifest) -> Result<TextSide> {
        let tokenizer = Tokenizer::from_section(&manifest.tokenizer)?;
        let template = manifest
            .tokenizer
            .chat_template
            .as_deref()
            .map(ChatTemplate::new)
            .transpose()?;
        Ok(TextSide {
            tokenizer,
            template,
            manifest,
        })
    }

    /// Render OpenAI-style `messages` through the model's own chat template.
    pub fn render(
        &self,
        messages: &serde_json::Value,
        tools: Option<&serde_json::Value>,
        add_generation_prompt: bool,
        now_unix: i64,
    ) -> Result<String> {
        check_messages(messages)?;
        let t = self.template.as_ref().ok_or_else(|| {
            SlmError::unsupported(
                "tokenizer.chat_template",
                "<missing>",
                "this model has no chat template",
            )
        })?;
        t.render(&RenderInput {
            messages,
            tools,
            add_generation_prompt,
            special_tokens: &self.manifest.tokenizer.special_tokens,
            now_unix,
        })
    }

    /// Ids of a rendered prompt: the template already placed every special token.
    pub fn encode_rendered(&self, rendered: &str) -> Result<Vec<u32>> {
        self.tokenizer.encode(rendered, false)
    }

    pub fn is_eos(&self, id: u32) -> bool {
        self.manifest.stop.eos_token_ids.contains(&id)
    }
}

/// Messages must be a list of objects with a string `role`.
pub fn check_messages(m: &serde_json::Value) -> Result<()> {
    let list = m
        .as_array()
        .ok_or_else(|| SlmError::Invalid("messages must be a JSON array".into()))?;
    for (i, msg) in list.iter().enumerate() {
        if !msg.get("role").is_some_and(|r| r.is_string()) {
            return Err(SlmError::Invalid(format!(
                "message {i} has no string \"role\""
            )));
        }
    }
    Ok(())
}

pub struct Engine {
    pub text: TextSide,
    pub model: Model,
}

/// What to generate and when to stop.
#[derive(Clone, Debug)]
pub struct GenerateOptions {
    pub sampler: SamplerConfig,
    pub max_tokens: usize,
    pub stop_strings: Vec<String>,
    pub stop_token_ids: Vec<u32>,
    /// None disables loop detection.
    pub loop_detection: Option<LoopConfig>,
    /// Keep a per-step record (`Generation::steps`).
    pub trace: bool,
    /// Set from another thread (or a worker message handler) to stop after the
    /// current step with `StopReason::Aborted`.
    pub abort: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl GenerateOptions {
    /// Greedy decoding until an EOS id or `max_tokens`, nothing else.
    pub fn greedy(max_tokens: usize) -> GenerateOptions {
        GenerateOptions {
            sampler: SamplerConfig::preset("json").expect("built-in preset"),
            max_tokens,
            stop_strings: vec![],
            stop_token_ids: vec![],
            loop_detection: None,
            trace: false,
            abort: None,
        }
    }
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Timings {
    pub prefill_ms: f64,
    pub decode_ms: f64,
    pub prefill_tok_s: f64,
    pub decode_tok_s: f64,
}

#[derive(Debug, serde::Serialize)]
pub struct Generation {
    /// Generated ids (the stopping EOS / stop token is not included).
    pub ids: Vec<u32>,
    /// Decoded text without special tokens, cut before a matched stop string.
    pub text: String,
    pub stop_reason: StopReason,
    /// The token, stop string span or loop pattern that ended generation.
    pub stop_detail: serde_json::Value,
    pub prompt_tokens: usize,
    /// Prompt tokens whose K/V came from the cache (a chat session's common prefix).
    pub reused_tokens: usize,
    /// Prompt tokens run through the model for this generation.
    pub prefilled_tokens: usize,
    pub timings: Timings,
    /// Per-step record when `GenerateOptions::trace` is set.
    pub steps: Vec<StepTrace>,
}

/// Milliseconds from a monotonic clock (wasm32 has none in std: timings read 0 there).
fn now_ms() -> f64 {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use std::sync::OnceLock;
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_secs_f64()
            * 1e3
    }
    #[cfg(target_arch = "wasm32")]
    {
        0.0
    }
}

impl Engine {
    /// Load from a parsed manifest; `read` returns each tensor's stored bytes (from a
    /// file natively, from verified chunks in the browser).
    pub fn load(
        manifest: Manifest,
        read: &mut dyn FnMut(&str) -> Result<Vec<u8>>,
    ) -> Result<Engine> {
        let model = Model::load(&manifest, read)?;
        Ok(Engine {
            text: TextSide::new(manifest)?,
            model,
        })
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub fn load_file(path: &std::path::Path) -> Result<Engine> {
        let mut f = crate::format::reader::SlmFile::open(path)?;
        let manifest = f.manifest.clone();
        let mut read = |name: &str| match manifest.tensor(name) {
            Some(t) => f.read_tensor(&t.clone()),
            None => Err(SlmError::malformed(
                ".slm",
                format!("tensor {name} is missing"),
            )),
        };
        let mut eng = Engine::load(manifest.clone(), &mut read)?;
        eng.model.threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        Ok(eng)
    }

    pub fn context_len(&self) -> usize {
        self.model.cfg.max_position_embeddings
    }

    /// Logits after prefilling `ids` into a fresh cache.
    pub fn first_logits(&self, ids: &[u32]) -> Result<Vec<f32>> {
        if ids.is_empty() {
            return Err(SlmError::Invalid("empty prompt".into()));
        }
        let cap = ids.len();
        check_fits(ids.len(), 0, self.context_len())?;
        let mut cache = self.model.new_cache(cap);
        let mut s = Scratch::new(&self.model.cfg, cap);
        self.model.prefill(ids, &mut cache, &mut s)?;
        Ok(s.logits)
    }

    /// Generate from prompt `ids`. `on_text` receives each newly showable piece of text
    /// (never broken UTF-8, never part of a stop string) with the step's record.
    pub fn generate(
        &self,
        ids: &[u32],
        opts: &GenerateOptions,
        on_text: &mut dyn FnMut(&str, &StepTrace),
    ) -> Result<Generation> {
        if ids.is_empty() {
            return Err(SlmError::Invalid("empty prompt".into()));
        }
        let ctx = self.context_len();
        check_fits(ids.len(), 1, ctx)?;
        let cap = (ids.len() + opts.max_tokens).min(ctx);
        let mut cache = self.model.new_cache(cap);
        let mut s = Scratch::new(&self.model.cfg, cap);
        self.continue_from(&mut cache, &mut s, ids, opts, on_text)
    }

    /// Generate after `ids`, of which the first `cache.len` are already in `cache`
    /// (a reused prefix): prefill the rest, then decode. On return the cache holds the
    /// prompt and every generated token that was fed back.
    pub fn continue_from(
        &self,
        cache: &mut KvCache,
        s: &mut Scratch,
        ids: &[u32],
        opts: &GenerateOptions,
        on_text: &mut dyn FnMut(&str, &StepTrace),
    ) -> Result<Generation> {
        let reused = cache.len;
        if reused >= ids.len() {
            return Err(SlmError::Invalid(
                "nothing to prefill: the cache already holds the whole prompt".into(),
            ));
        }
        let ctx = self.context_len();
        let cap = cache.capacity;
        check_fits(ids.len(), 1, cap.min(ctx))?;
        let mut sampler = Sampler::new(opts.sampler.clone())?;
        sampler.record = opts.trace;
        let t0 = now_ms();
        self.model.prefill(&ids[reused..], cache, s)?;
        let t1 = now_ms();
        let mut context = ids.to_vec();
        let mut out = Vec::new();
        let mut steps = Vec::new();
        let mut stream = TextStream::new(opts.stop_strings.clone());
        let mut text = String::new();
        let (reason, detail) = loop {
            if out.len() >= opts.max_tokens {
                break (
                    StopReason::MaxTokens,
                    serde_json::json!({"max_tokens": opts.max_tokens}),
                );
            }
            if opts
                .abort
                .as_ref()
                .is_some_and(|a| a.load(std::sync::atomic::Ordering::Relaxed))
            {
                break (
                    StopReason::Aborted,
                    serde_json::json!({"after_tokens": out.len()}),
                );
            }
            let step = sampler.sample(&s.logits, &context);
            let tok = step.token;
            if opts.trace {
                steps.push(step.clone());
            }
            if self.text.is_eos(tok) {
                break (StopReason::EosToken, serde_json::json!({"token": tok}));
            }
            if opts.stop_token_ids.contains(&tok) {
                break (StopReason::StopTokenId, serde_json::json!({"token": tok}));
            }
            out.push(tok);
            context.push(tok);
            text = match self.text.tokenizer.decode(&out, true) {
                Ok(t) => t,
                // Keep what was generated; the record says why it ended.
                Err(e) => {
                    break (
                        StopReason::Error,
                        serde_json::json!({"message": e.to_string()}),
                    )
                }
            };
            if let Some(m) = stream.find_stop(&text) {
                text.truncate(m.start);
                break (StopReason::StopString, serde_json::to_value(&m).unwrap());
            }
            let piece = stream.advance(&text);
            on_text(&piece, &step);
            if let Some(l) = opts.loop_detection.as_ref().and_then(|c| c.check(&out)) {
                let pattern_text = self
                    .text
                    .tokenizer
                    .decode(&l.pattern, false)
                    .unwrap_or_default();
                break (
                    StopReason::LoopDetected,
                    serde_json::json!({"pattern": l.pattern, "pattern_text": pattern_text, "repeats": l.repeats}),
                );
            }
            if out.len() >= opts.max_tokens {
                break (
                    StopReason::MaxTokens,
                    serde_json::json!({"max_tokens": opts.max_tokens}),
                );
            }
            if cache.len >= cap {
                break (
                    StopReason::ContextFull,
                    serde_json::json!({"context": ctx, "used": cache.len}),
                );
            }
            if let Err(e) = self.model.forward(tok, cache, s, true) {
                break (
                    StopReason::Error,
                    serde_json::json!({"message": e.to_string()}),
                );
            }
        };
        if reason != StopReason::StopString {
            let rest = stream.finish(&text);
            if !rest.is_empty() {
                on_text(&rest, &StepTrace::default());
            }
        }
        // A run cut mid-character (max_tokens, loop, EOS after a partial byte sequence)
        // ends with U+FFFD from the lossy decode: the text, like the stream, drops it.
        text.truncate(text.trim_end_matches('\u{FFFD}').len());
        let t2 = now_ms();
        let rate = |n: usize, ms: f64| if ms > 0.0 { n as f64 * 1e3 / ms } else { 0.0 };
        let timings = Timings {
            prefill_ms: t1 - t0,
            decode_ms: t2 - t1,
            prefill_tok_s: rate(ids.len() - reused, t1 - t0),
            decode_tok_s: rate(out.len(), t2 - t1),
        };
        Ok(Generation {
            ids: out,
            text,
            stop_reason: reason,
            stop_detail: detail,
            prompt_tokens: ids.len(),
            reused_tokens: reused,
            prefilled_tokens: ids.len() - reused,
            timings,
            steps,
        })
    }

    /// Greedy decoding until an EOS id or `max_tokens`.
    pub fn greedy(&self, ids: &[u32], max_tokens: usize) -> Result<Generation> {
        self.generate(ids, &GenerateOptions::greedy(max_tokens), &mut |_, _| {})
    }
}

/// Refuse, before any compute, a prompt that leaves fewer than `min_new` free positions.
pub fn check_fits(prompt: usize, min_new: usize, ctx: usize) -> Result<()> {
    if prompt + min_new > ctx {
        return Err(SlmError::Invalid(format!(
            "prompt is {prompt} tokens; with {min_new} output token(s) it needs {} positions but the context holds {ctx}",
            prompt + min_new
        )));
    }
    Ok(())
}

/// Index of the largest finite value (lowest index on ties), or None if none is finite.
pub fn argmax_finite(x: &[f32]) -> Option<u32> {
    let mut best: Option<usize> = None;
    for (i, v) in x.iter().enumerate() {
        if v.is_finite() && best.is_none_or(|b| *v > x[b]) {
            best = Some(i);
        }
    }
    best.map(|b| b as u32)
}

/// Index of the largest logit; the lowest index wins ties (as torch.argmax). Non-finite
/// values never win; an all-non-finite vector gives 0.
pub fn argmax(x: &[f32]) -> u32 {
    argmax_finite(x).unwrap_or(0)
}
