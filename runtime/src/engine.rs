//! A loaded `.slm`: the text side (template + tokenizer, from the manifest alone) and
//! the model, and generation: prefill what the cache lacks, then sample and apply the
//! stop rules step by step (`sampling`, `stopping`; `session` builds chats on top).

use crate::error::{Result, SlmError};
use crate::format::manifest::Manifest;
use crate::model::kv_cache::KvCache;
use crate::model::{Model, Scratch};
use crate::sampling::{Sampler, SamplerConfig, StepTrace};
use crate::stopping::{LoopConfig, StopCheck, StopReason, TextStream};
use crate::template::{ChatTemplate, RenderInput};
use crate::tokenizer::Tokenizer;

/// Everything between messages and token ids. Needs only the manifest.
pub struct TextSide {
    pub tokenizer: Tokenizer,
    template: Option<ChatTemplate>,
    /// Named alternates (`tool_use`, …), compiled.
    named: std::collections::BTreeMap<String, ChatTemplate>,
    /// Whether `decode` applies transformers' `clean_up_tokenization` (decided once).
    clean_up: bool,
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
        let named = manifest
            .tokenizer
            .named_chat_templates
            .iter()
            .map(|(n, t)| Ok((n.clone(), ChatTemplate::new(t)?)))
            .collect::<Result<_>>()?;
        // transformers 5 (`TokenizersBackend._decode`) cleans up spaces only when the
        // tokenizer config asks for it and the model is not BPE.
        let tc: serde_json::Value =
            serde_json::from_str(&manifest.tokenizer.tokenizer_config_json).unwrap_or_default();
        let clean_up = tc["clean_up_tokenization_spaces"] == true && !tokenizer.is_bpe();
        Ok(TextSide {
            tokenizer,
            template,
            named,
            clean_up,
            manifest,
        })
    }

    /// Render and encode a one-message chat, and decode it back, discarding the
    /// results. The first render and encode pay one-time costs (the tokenizer's
    /// lazily built regexes and caches, the template's first run; in wasm, the first
    /// calls of their code): 40-55 ms of the page's first turn on SmolLM2, where every
    /// later turn took under 3. A page calls this at load, so that the first reply's
    /// first token does not wait for them. A failure here is not reported: the real
    /// turn renders the real chat and reports its own errors.
    pub fn warm_up(&self, now_unix: i64) {
        let chat = serde_json::json!([{"role": "user", "content": "Hello, how are you?"}]);
        if let Ok(text) = self.render(&chat, None, true, now_unix) {
            if let Ok(ids) = self.encode_rendered(&text) {
                let _ = self.tokenizer.decode(&ids, true);
            }
        }
    }

    /// Render OpenAI-style `messages` through the model's own chat template.
    pub fn render(
        &self,
        messages: &serde_json::Value,
        tools: Option<&serde_json::Value>,
        add_generation_prompt: bool,
        now_unix: i64,
    ) -> Result<String> {
        self.render_values(
            minijinja::Value::from_serialize(messages),
            tools.map(minijinja::Value::from_serialize),
            add_generation_prompt,
            now_unix,
        )
    }

    /// The prompt for a reply to `messages`: with the generation prompt, or
    /// (`continues`) ending with the last message's text, as transformers'
    /// `continue_final_message` renders it, so that what is generated joins that
    /// message (a reply cut off, or one the clarify policy started).
    pub fn render_prompt(
        &self,
        messages: &[serde_json::Value],
        tools: Option<&serde_json::Value>,
        continues: bool,
        now_unix: i64,
    ) -> Result<String> {
        let mut r = self.render(
            &serde_json::Value::Array(messages.to_vec()),
            tools,
            !continues,
            now_unix,
        )?;
        if continues {
            let content = messages
                .last()
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default();
            let at = r.rfind(content).ok_or_else(|| {
                SlmError::Invalid(
                    "the chat template does not render the reply's text as it stands, so it cannot be continued".into(),
                )
            })?;
            r.truncate(at + content.len());
        }
        Ok(r)
    }

    /// Render template values (from [`crate::template::parse_json`], which keeps JSON
    /// integers of any width exact) through the model's own chat template.
    pub fn render_values(
        &self,
        messages: minijinja::Value,
        tools: Option<minijinja::Value>,
        add_generation_prompt: bool,
        now_unix: i64,
    ) -> Result<String> {
        check_messages(&messages)?;
        // transformers' `get_chat_template`: `tool_use` when tools are given and the
        // model has one, else the default.
        let t = match (tools.is_some(), self.named.get("tool_use"), &self.template) {
            (true, Some(t), _) => t,
            (_, _, Some(t)) => t,
            (_, _, None) if !self.named.is_empty() => {
                return Err(SlmError::Template(
                    "This model has multiple chat templates with no default specified! Please either pass a chat template or the name of the template you wish to use to the `chat_template` argument.".into(),
                ))
            }
            _ => {
                return Err(SlmError::unsupported(
                    "tokenizer.chat_template",
                    "<missing>",
                    "this model has no chat template",
                ))
            }
        };
        t.render_values(&RenderInput {
            messages,
            tools,
            documents: None,
            add_generation_prompt,
            special_tokens: &self.manifest.tokenizer.special_tokens,
            now_unix,
        })
    }

    /// Text of `ids` as transformers' `decode(ids, skip_special_tokens)` gives it: the
    /// tokenizer.json decoder; skipping drops the added tokens marked special and the
    /// named special tokens (bos, eos, unk, sep, pad, cls, mask), as transformers'
    /// `all_special_ids` does. transformers 5 applies `clean_up_tokenization_spaces`
    /// only to non-BPE models; [`clean_up_tokenization`] follows that rule.
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        let named: Vec<&str> = self
            .manifest
            .tokenizer
            .special_tokens
            .values()
            .filter_map(|v| v.as_str())
            .collect();
        self.tokenizer
            .decode_as_transformers(ids, skip_special_tokens, &named, self.clean_up)
    }

    /// Ids of a rendered prompt: the template already placed every special token.
    pub fn encode_rendered(&self, rendered: &str) -> Result<Vec<u32>> {
        self.tokenizer.encode(rendered, false)
    }

    /// Whether `decode` applies transformers' `clean_up_tokenization`.
    pub fn cleans_up(&self) -> bool {
        self.clean_up
    }

    pub fn is_eos(&self, id: u32) -> bool {
        self.manifest.stop.eos_token_ids.contains(&id)
    }
}

/// Messages must be a list of objects with a string `role`.
pub fn check_messages(m: &minijinja::Value) -> Result<()> {
    let list = m
        .try_iter()
        .ok()
        .filter(|_| m.kind() == minijinja::value::ValueKind::Seq)
        .ok_or_else(|| SlmError::Invalid("messages must be a JSON array".into()))?;
    for (i, msg) in list.enumerate() {
        if msg
            .get_attr("role")
            .ok()
            .and_then(|r| r.as_str().map(|_| ()))
            .is_none()
        {
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

/// New tokens a reply may take when nothing says otherwise: the page's "Max new
/// tokens", `slm generate|chat --max-tokens` and `slm eval loops`. At 256, 11 of
/// Qwen2.5-Coder-0.5B's 85 utility replies (code explanations, JSON extractions) were
/// still coherent when the budget cut them; at 512 all 85 end on EOS, with no loop
/// (docs/behaviour.md, "Loop suppression").
pub const REPLY_BUDGET: usize = 512;

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
    /// List the top candidates of greedy steps too (for a token console; costs a pass
    /// over the vocabulary per step).
    pub candidates: bool,
    /// Set from another thread (or a worker message handler) to stop after the
    /// current step with `StopReason::Aborted`.
    pub abort: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// End a clarifying reply early (`EndAt`); `EndAt::Never` for any other.
    pub end_at: EndAt,
    /// Token ids the reply may not start with: its first step samples as if their
    /// logits were -inf. A reply that restated the user's question is tried again so
    /// (`Session::settle`); empty for any other.
    pub barred_start: Vec<u32>,
}

/// Where a clarifying reply ends (`GenerateOptions::end_at`). It stops as
/// `StopReason::StopString`, the detail's `rule` naming which.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndAt {
    #[default]
    Never,
    /// After its first question (a "?" and then a space or a line break), the "?"
    /// kept: a clarifying reply asks one question. Rule "end_at_question".
    Question,
    /// After its first sentence: the first question, or a "." or "!" that a space
    /// follows, or before a line break. A reply the policy's lead starts is that
    /// sentence ("To help with that, I need to know the distance you run."); what a
    /// small model writes after it is an answer it invents. Rule "end_at_sentence".
    Sentence,
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
            candidates: false,
            abort: None,
            end_at: EndAt::Never,
            barred_start: Vec::new(),
        }
    }
}

/// Where the text's first sentence ends: just after its first question
/// (`first_question_end`), or just after a "." or "!" that a space follows, or just
/// before a line break. "3.5" and "Vue.js" do not end one.
pub fn first_sentence_end(text: &str) -> Option<usize> {
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match (c, chars.peek()) {
            ('\n', _) => return Some(i),
            ('.' | '!' | '?', Some((_, n))) if n.is_whitespace() => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// Where the text's first question ends: just after a "?" that a space or a line break
/// follows. A "?" inside a word or before a closing quote (a quoted question) does not
/// end one.
pub fn first_question_end(text: &str) -> Option<usize> {
    text.char_indices()
        .zip(text.chars().skip(1))
        .find(|((_, c), next)| *c == '?' && next.is_whitespace())
        .map(|((i, _), _)| i + 1)
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

/// The monotonic clock on targets whose std has none (wasm32): the embedder installs
/// one (the browser worker passes `performance.now`). Until then timings read 0.
static CLOCK: std::sync::OnceLock<fn() -> f64> = std::sync::OnceLock::new();

/// Install the millisecond clock used for timings (first call wins).
pub fn set_clock(f: fn() -> f64) {
    let _ = CLOCK.set(f);
}

/// Milliseconds from a monotonic clock.
pub fn now_ms() -> f64 {
    if let Some(f) = CLOCK.get() {
        return f();
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
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
        Self::with_text(TextSide::new(manifest)?, read)
    }

    /// `load` from a text side already built. The text side comes first, before any
    /// weight is read: building a tokenizer passes through a parse tree many times its
    /// JSON's size (about 20× for Qwen2.5's 5.4 MB: 100 MB), and in a wasm memory,
    /// which never shrinks, that peak is best reached while the weights are not yet in
    /// memory, so that they reuse it.
    pub fn with_text(
        text: TextSide,
        read: &mut dyn FnMut(&str) -> Result<Vec<u8>>,
    ) -> Result<Engine> {
        crate::kernels::requested()?;
        let model = Model::load(&text.manifest, read)?;
        Ok(Engine { text, model })
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
        eng.model.threads = crate::parallel::Threads::all();
        eng.model.tune_decode_width(&now_ms)?;
        Ok(eng)
    }

    pub fn context_len(&self) -> usize {
        self.model.cfg.max_position_embeddings
    }

    /// The model's clarify probe (`clarify::probe`), if its manifest carries one.
    pub fn clarify_probe(&self) -> Option<&crate::clarify::ClarifyProbe> {
        self.text.manifest.clarify_probe.as_ref()
    }

    /// The clarify probe's reading of prompt `ids` (rendered with the assistant
    /// opener, as a reply would start), prefilled into a fresh cache; None when the
    /// model carries no probe.
    pub fn probe_reading(&self, ids: &[u32]) -> Result<Option<crate::clarify::Reading>> {
        let Some(p) = self.clarify_probe() else {
            return Ok(None);
        };
        Ok(Some(p.read(&self.hidden_states(ids)?)))
    }

    /// The residual stream of the last position of `ids` after each layer
    /// ([layers, hidden_size]), prefilled into a fresh cache: what a clarify probe
    /// reads and is fitted on.
    pub fn hidden_states(&self, ids: &[u32]) -> Result<Vec<f32>> {
        let (mut cache, mut s) = self.fresh(ids, 0)?;
        s.capture_hidden(&self.model.cfg);
        self.model.prefill_part(ids, &mut cache, &mut s, false)?;
        Ok(s.hidden)
    }

    /// A fresh cache and scratch for prompt `ids` and `more` tokens after it, once the
    /// prompt is known to be non-empty and to fit the context.
    fn fresh(&self, ids: &[u32], more: usize) -> Result<(KvCache, Scratch)> {
        if ids.is_empty() {
            return Err(SlmError::Invalid("empty prompt".into()));
        }
        check_fits(ids.len(), more, self.context_len())?;
        let cap = ids.len() + more;
        Ok((
            self.model.new_cache(cap),
            Scratch::new(&self.model.cfg, cap),
        ))
    }

    /// Logits after prefilling `ids` into a fresh cache.
    pub fn first_logits(&self, ids: &[u32]) -> Result<Vec<f32>> {
        let (mut cache, mut s) = self.fresh(ids, 0)?;
        self.model.prefill(ids, &mut cache, &mut s)?;
        Ok(s.logits)
    }

    /// The log-probability (natural log, temperature 1, no penalty) of each token of
    /// `cont` following `prompt` and the tokens of `cont` before it: teacher forcing,
    /// for scoring a reply under another prompt (the CLI's `pick.rs`), each as
    /// `sampling::log_prob`.
    pub fn continuation_logprobs(&self, prompt: &[u32], cont: &[u32]) -> Result<Vec<f32>> {
        let (mut cache, mut s) = self.fresh(prompt, cont.len())?;
        self.model.prefill(prompt, &mut cache, &mut s)?;
        let mut out = Vec::with_capacity(cont.len());
        for (i, &t) in cont.iter().enumerate() {
            out.push(crate::sampling::log_prob(&s.logits, t).ok_or_else(|| {
                SlmError::Invalid(format!("token {t} is outside the vocabulary"))
            })?);
            if i + 1 < cont.len() {
                self.model.forward(t, &mut cache, &mut s, true)?;
            }
        }
        Ok(out)
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
        let mut d = self.start(cache, ids, opts)?;
        while !d.step(cache, s, on_text) {}
        Ok(d.finish(on_text))
    }

    /// Check that `ids` fit and return the generation, ready to step: the first steps
    /// prefill what `cache` lacks of `ids`, `PREFILL_STEP` tokens each, then each step
    /// decodes a token. An event loop (the browser worker) drives `Decoding::step`
    /// itself, so that it can show prefill progress, stop between parts and yield
    /// between tokens; `continue_from` is the blocking loop.
    pub fn start(
        &self,
        cache: &KvCache,
        ids: &[u32],
        opts: &GenerateOptions,
    ) -> Result<Decoding<'_>> {
        let reused = cache.len;
        if reused >= ids.len() {
            return Err(SlmError::Invalid(
                "nothing to prefill: the cache already holds the whole prompt".into(),
            ));
        }
        check_fits(ids.len(), 1, cache.capacity.min(self.context_len()))?;
        let mut sampler = Sampler::new(opts.sampler.clone())?;
        sampler.record = opts.trace;
        sampler.greedy_candidates = opts.trace || opts.candidates;
        Ok(Decoding {
            engine: self,
            stream: TextStream::new(opts.stop_strings.clone()),
            opts: opts.clone(),
            sampler,
            context: ids.to_vec(),
            prompt_len: ids.len(),
            reused,
            out: Vec::new(),
            text: String::new(),
            steps: Vec::new(),
            t0: now_ms(),
            t1: None,
            prefilled: reused,
            stop: None,
        })
    }
    /// Greedy decoding until an EOS id or `max_tokens`.
    pub fn greedy(&self, ids: &[u32], max_tokens: usize) -> Result<Generation> {
        self.generate(ids, &GenerateOptions::greedy(max_tokens), &mut |_, _| {})
    }
}

/// A generation in progress: the prompt is in the cache; each `step` samples one
/// token, applies the stop rules and feeds the token back.
pub struct Decoding<'e> {
    engine: &'e Engine,
    opts: GenerateOptions,
    sampler: Sampler,
    stream: TextStream,
    /// Prompt plus generated ids (what repetition penalties look at).
    context: Vec<u32>,
    prompt_len: usize,
    reused: usize,
    out: Vec<u32>,
    text: String,
    steps: Vec<StepTrace>,
    t0: f64,
    /// When the prefill ended.
    t1: Option<f64>,
    /// The prompt is in the cache up to here (`prompt_len` once prefilled).
    prefilled: usize,
    stop: Option<(StopReason, serde_json::Value)>,
}

/// Prompt tokens per prefill step of a `Decoding`: small enough that a page shows
/// progress and can stop within a fraction of a second, large enough that the batched
/// products keep their speed (each weight is read once per part).
pub const PREFILL_STEP: usize = 32;

/// Where the prefill part that starts at `from` of a `len`-token prompt ends: parts of
/// `PREFILL_STEP` tokens, but a tail of at most half a step joins the part before it.
/// A short tail would cost a whole pass over the weights for a few tokens, run mostly
/// by the single-token kernels: a 37-token prompt (a short first turn) is one part,
/// not 32 + 5, and its first token comes sooner.
pub fn prefill_part_end(from: usize, len: usize) -> usize {
    if len.saturating_sub(from) <= PREFILL_STEP + PREFILL_STEP / 2 {
        len
    } else {
        from + PREFILL_STEP
    }
}

impl Decoding<'_> {
    /// One step: a part of the prompt while it is not all in the cache (no text), then
    /// one token. `on_text` gets the newly showable text with the step's record
    /// (possibly empty text: a partial character or a possible stop-string prefix).
    /// Returns true once generation has stopped; further calls do nothing.
    pub fn step(
        &mut self,
        cache: &mut KvCache,
        s: &mut Scratch,
        on_text: &mut dyn FnMut(&str, &StepTrace),
    ) -> bool {
        if self.stop.is_none() {
            self.stop = self.advance(cache, s, on_text);
        }
        self.stop.is_some()
    }

    /// Prompt tokens prefilled so far and in all (both without a reused prefix).
    pub fn prefill_progress(&self) -> (usize, usize) {
        (self.prefilled - self.reused, self.prompt_len - self.reused)
    }

    fn advance(
        &mut self,
        cache: &mut KvCache,
        s: &mut Scratch,
        on_text: &mut dyn FnMut(&str, &StepTrace),
    ) -> Option<(StopReason, serde_json::Value)> {
        use serde_json::json;
        if self
            .opts
            .abort
            .as_ref()
            .is_some_and(|a| a.load(std::sync::atomic::Ordering::Relaxed))
        {
            let (done, of) = self.prefill_progress();
            let mut detail = json!({"after_tokens": self.out.len()});
            if done < of {
                detail["prefilled"] = json!(done);
                detail["prompt_tokens"] = json!(of);
            }
            return Some((StopReason::Aborted, detail));
        }
        if self.prefilled < self.prompt_len {
            let end = prefill_part_end(self.prefilled, self.prompt_len);
            let part = &self.context[self.prefilled..end];
            let last = end == self.prompt_len;
            if let Err(e) = self.engine.model.prefill_part(part, cache, s, last) {
                return Some((StopReason::Error, json!({"message": e.to_string()})));
            }
            self.prefilled = end;
            if last {
                self.t1 = Some(now_ms());
            }
            return None;
        }
        let max = self.opts.max_tokens;
        if self.out.len() >= max {
            return Some((StopReason::MaxTokens, json!({"max_tokens": max})));
        }
        let text_side = &self.engine.text;
        if self.out.is_empty() {
            for &t in &self.opts.barred_start {
                if let Some(l) = s.logits.get_mut(t as usize) {
                    *l = f32::NEG_INFINITY;
                }
            }
        }
        let mut step = self.sampler.sample(&s.logits, &self.context);
        let tok = step.token;
        let end = if text_side.is_eos(tok) {
            Some((StopReason::EosToken, json!({"token": tok})))
        } else if self.opts.stop_token_ids.contains(&tok) {
            Some((StopReason::StopTokenId, json!({"token": tok})))
        } else {
            None
        };
        if end.is_some() {
            self.keep_step(step, &end);
            return end;
        }
        self.out.push(tok);
        self.context.push(tok);
        self.text = match text_side.tokenizer.decode(&self.out, true) {
            Ok(t) => t,
            // Keep what was generated; the record says why it ended.
            Err(e) => {
                let end = Some((StopReason::Error, json!({"message": e.to_string()})));
                self.keep_step(step, &end);
                return end;
            }
        };
        if let Some(m) = self.stream.find_stop(&self.text) {
            self.text.truncate(m.start);
            let end = Some((StopReason::StopString, serde_json::to_value(&m).unwrap()));
            self.keep_step(step, &end);
            return end;
        }
        // A reply that ends at its question (or its sentence) shows it up to there,
        // then stops.
        let cut = match self.opts.end_at {
            EndAt::Never => None,
            EndAt::Question => first_question_end(&self.text).map(|at| (at, "end_at_question")),
            EndAt::Sentence => first_sentence_end(&self.text).map(|at| (at, "end_at_sentence")),
        };
        if let Some((at, _)) = cut {
            self.text.truncate(at);
        }
        let piece = self.stream.advance(&self.text);
        let looped = self
            .opts
            .loop_detection
            .as_ref()
            .and_then(|c| c.check(&self.out));
        let end = if let Some((at, rule)) = cut {
            // The mark the reply ends with (nothing before a line break).
            let mark = self.text[..at]
                .chars()
                .next_back()
                .filter(|c| ".!?".contains(*c));
            let start = at - mark.map_or(0, char::len_utf8);
            Some((
                StopReason::StopString,
                json!({"stop": mark.map(String::from).unwrap_or_else(|| "\n".into()), "start": start, "end": at, "rule": rule}),
            ))
        } else if let Some(l) = looped {
            let pattern_text = text_side
                .tokenizer
                .decode(&l.pattern, false)
                .unwrap_or_default();
            Some((
                StopReason::LoopDetected,
                json!({"pattern": l.pattern, "pattern_text": pattern_text, "repeats": l.repeats}),
            ))
        } else if self.out.len() >= max {
            Some((StopReason::MaxTokens, json!({"max_tokens": max})))
        } else if cache.len >= cache.capacity {
            Some((
                StopReason::ContextFull,
                json!({"context": self.engine.context_len(), "used": cache.len}),
            ))
        } else {
            None
        };
        if self.opts.trace {
            step.stop_check = Some(self.stop_check(&end));
            self.steps.push(step.clone());
        }
        on_text(&piece, &step);
        if end.is_some() {
            return end;
        }
        if let Err(e) = self.engine.model.forward(tok, cache, s, true) {
            return Some((StopReason::Error, json!({"message": e.to_string()})));
        }
        None
    }

    /// The stop rules after the latest token, for a traced step.
    fn stop_check(&self, end: &Option<(StopReason, serde_json::Value)>) -> StopCheck {
        StopCheck {
            stopped: end.as_ref().map(|(r, _)| r.as_str().to_string()),
            held_back: self.stream.held_back(&self.text).to_string(),
            repeat: self
                .opts
                .loop_detection
                .as_ref()
                .and_then(|c| c.strongest(&self.out)),
        }
    }

    /// Keep a traced step that ended generation before its text was shown.
    fn keep_step(&mut self, mut step: StepTrace, end: &Option<(StopReason, serde_json::Value)>) {
        if self.opts.trace {
            step.stop_check = Some(self.stop_check(end));
            self.steps.push(step);
        }
    }

    /// Flush held-back text and build the record. A generation finished before it
    /// stopped by itself counts as aborted.
    pub fn finish(mut self, on_text: &mut dyn FnMut(&str, &StepTrace)) -> Generation {
        let (reason, detail) = self.stop.take().unwrap_or((
            StopReason::Aborted,
            serde_json::json!({"after_tokens": self.out.len()}),
        ));
        if reason != StopReason::StopString {
            let rest = self.stream.finish(&self.text);
            if !rest.is_empty() {
                on_text(&rest, &StepTrace::default());
            }
        }
        let mut text = self.text;
        // A run cut mid-character (max_tokens, loop, EOS after a partial byte sequence)
        // ends with U+FFFD from the lossy decode: the text, like the stream, drops it.
        text.truncate(text.trim_end_matches('\u{FFFD}').len());
        let t2 = now_ms();
        // Stopped during the prefill: it ended then.
        let t1 = self.t1.unwrap_or(t2);
        let rate = |n: usize, ms: f64| if ms > 0.0 { n as f64 * 1e3 / ms } else { 0.0 };
        let prefilled = self.prefilled - self.reused;
        Generation {
            timings: Timings {
                prefill_ms: t1 - self.t0,
                decode_ms: t2 - t1,
                prefill_tok_s: rate(prefilled, t1 - self.t0),
                decode_tok_s: rate(self.out.len(), t2 - t1),
            },
            ids: self.out,
            text,
            stop_reason: reason,
            stop_detail: detail,
            prompt_tokens: self.prompt_len,
            reused_tokens: self.reused,
            prefilled_tokens: prefilled,
            steps: self.steps,
        }
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

#[cfg(test)]
mod tests {
    use super::{first_question_end, first_sentence_end, prefill_part_end};

    #[test]
    fn a_sentence_ends_at_its_mark_before_a_space_or_at_a_line_break() {
        assert_eq!(first_sentence_end(" the distance you run. Here"), Some(22));
        assert_eq!(first_sentence_end(" which city? I can"), Some(12));
        assert_eq!(first_sentence_end(" the city!\nOr"), Some(10));
        assert_eq!(first_sentence_end(" the date\n\nThe"), Some(9));
        // Not yet known to end, a decimal, a file name.
        assert_eq!(first_sentence_end(" the distance you run."), None);
        assert_eq!(first_sentence_end(" 3.5 km or Vue.js"), None);
    }

    #[test]
    fn a_question_ends_at_its_mark_before_a_space() {
        assert_eq!(first_question_end("Which city? I can"), Some(11));
        assert_eq!(first_question_end("Which city?\nThe"), Some(11));
        // Not yet known to end, inside a URL, or a quoted question.
        assert_eq!(first_question_end("Which city?"), None);
        assert_eq!(first_question_end("see a.php?x=1 now"), None);
        assert_eq!(first_question_end("Say \"Wo ist es?\" to them"), None);
        assert_eq!(first_question_end("¿Dónde? Aquí"), Some(9));
    }

    /// Where each part of a prompt of n tokens ends, by hand: steps of 32, a tail of
    /// at most 16 joined to the part before it.
    #[test]
    fn prefill_parts_join_a_short_tail() {
        let parts = |n: usize| {
            let mut at = vec![];
            let mut from = 0;
            while from < n {
                from = prefill_part_end(from, n);
                at.push(from);
            }
            at
        };
        assert_eq!(parts(1), [1]);
        assert_eq!(parts(37), [37]);
        assert_eq!(parts(48), [48]);
        assert_eq!(parts(49), [32, 49]);
        assert_eq!(parts(64), [32, 64]);
        assert_eq!(parts(80), [32, 80]);
        assert_eq!(parts(81), [32, 64, 81]);
        // A reused prefix: the parts count from where the cache ends.
        assert_eq!(prefill_part_end(100, 130), 130);
        assert_eq!(prefill_part_end(100, 149), 132);
    }
}
