//! A chat session: the transcript (messages) goes through the model's template into
//! tokens; the KV cache is reused for the longest common token prefix with what the
//! runtime last computed, so a follow-up turn prefills only its new tokens. Before the
//! first turn, `prefill_lead` can put the prompt's fixed start (the system prompt, a
//! user message's opening) in the cache ahead of time, as the page does after a load.
//!
//! Two clears, two meanings:
//! - `reset_context` forgets the KV cache and context tokens, keeps the messages (the
//!   next turn re-prefills the whole transcript);
//! - `clear_transcript` forgets the messages, keeps the KV cache (the next turn reuses
//!   whatever prefix still matches, typically the system prompt).
//!
//! With tools given (`tools`), a reply's tool calls are parsed into the transcript as
//! data (`tool_calls`, in the syntax the template teaches: `tool_calls.rs`); the
//! caller answers them with `tool` messages and asks for the next reply.
//!
//! The divergence flag is raised whenever the rendered transcript's tokens are not an
//! extension of the context tokens (e.g. the assistant's reply re-tokenizes differently,
//! or the transcript was edited or cleared), with an explanation.

mod fit;

use serde::Serialize;
use serde_json::{json, Value};

use crate::clarify::{self, Decision};
use crate::engine::{check_fits, Decoding, Engine, GenerateOptions, Generation};
use crate::error::{Result, SlmError};
use crate::model::kv_cache::KvCache;
use crate::model::Scratch;
use crate::sampling::StepTrace;
use crate::tool_calls::{self, ParsedReply, ToolCallSyntax};
pub use fit::{Fitted, Overflow};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Divergence {
    /// First token position where transcript and context disagree.
    pub position: usize,
    pub context_tokens: usize,
    pub transcript_tokens: usize,
    pub explanation: String,
}

pub struct Session<'e> {
    engine: &'e Engine,
    pub messages: Vec<Value>,
    pub tools: Option<Value>,
    /// Apply the clarify-first policy (`clarify.rs`) to each message `send` adds: a
    /// visible note joins the message when it is materially underspecified.
    pub clarify_first: bool,
    /// With the policy on, read the model's clarify probe where it carries one
    /// (`read_probe`); false decides by the rules alone (true by default).
    pub clarify_probe: bool,
    /// Where the policy fired on the last user message: that message as it stands
    /// (note included), as the user wrote it, and the decision. A reply to that message,
    /// first or regenerated, starts with the decision's lead.
    lead: Option<Led>,
    /// The last user message as the transcript holds it, where the policy judged it
    /// clear: a reply to it that restates it is tried again (`settle_unled`), first or
    /// regenerated.
    clear: Option<String>,
    /// The clarifying reply's attempts so far, while `settle` tries other leads.
    retrying: Option<Retrying>,
    /// What a turn does when its prompt does not fit (`fit.rs`).
    pub overflow: Overflow,
    /// What the last turn's prompt left out, if anything: the context then holds less
    /// than the transcript, and the divergence flag says so.
    trimmed: Option<Fitted>,
    /// Tokens whose K/V are in `cache` (always `cache.len` long).
    context: Vec<u32>,
    /// True while `context` holds only what `prefill_lead` put there: no turn was
    /// conditioned on it, so it never counts as a divergence.
    lead_only: bool,
    /// Some(n) while the context's tokens after its first n are only what the clarify
    /// probe prefilled (`read_probe`): no turn was conditioned on them, so they never
    /// count as a divergence.
    probed: Option<usize>,
    cache: KvCache,
    scratch: Scratch,
}

/// A session's messages and tools, apart from its cache (`Session::into_transcript`).
pub struct Transcript {
    pub messages: Vec<Value>,
    pub tools: Option<Value>,
    pub clarify_first: bool,
    lead: Option<Led>,
    clear: Option<String>,
    pub overflow: Overflow,
}

/// The user message the policy fired on (`Session::lead`).
#[derive(Clone, Debug)]
struct Led {
    /// The message's content in the transcript: the user's words and the note.
    content: String,
    /// The user's words alone: what a clarifying question must not merely repeat.
    user: String,
    decision: Decision,
}

/// A clarifying reply's earlier attempts (`Session::settle`).
#[derive(Debug)]
struct Retrying {
    /// The attempt kept if none names a piece (`clarify::kept_attempt` of the tries so
    /// far), and the context tokens it left.
    fallback: Turn,
    fallback_context: Vec<u32>,
    tries: Vec<Attempt>,
    /// The first tokens of the attempts that restated the user's question: the next
    /// may not start with any of them (`GenerateOptions::barred_start`).
    barred: Vec<u32>,
}

/// Attempts at a reply the policy judged clear, while each restates the user's
/// question (`Session::settle_unled`).
pub const RESTATED_TRIES: usize = 3;

/// One attempt at a clarifying reply (`Turn::tries`).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Attempt {
    pub lead: String,
    /// What the model wrote after the lead.
    pub text: String,
    /// The reply asks for a missing piece (`Decision::reply_names_a_piece`).
    pub names_a_piece: bool,
    /// The reply asks amiss (`Decision::reply_asks_amiss`): kept only when every
    /// attempt does. Absent from replies recorded before it existed.
    #[serde(default)]
    pub asks_amiss: bool,
    /// This attempt is the reply the transcript holds.
    pub kept: bool,
    /// A reply to a message the policy judged clear that restated the user's question
    /// instead of answering it (`clarify::restates_request`). Absent from replies
    /// recorded before it existed.
    #[serde(default)]
    pub restates: bool,
    /// The first tokens this attempt was barred from (`GenerateOptions::barred_start`):
    /// those of the attempts before it that restated the question.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub barred_start: Vec<u32>,
}

impl Attempt {
    /// An attempt at a reply the policy did not lead (`Session::settle_unled`).
    pub fn unled(text: &str, restates: bool, barred_start: &[u32]) -> Attempt {
        Attempt {
            lead: String::new(),
            text: text.to_string(),
            names_a_piece: false,
            asks_amiss: false,
            kept: false,
            restates,
            barred_start: barred_start.to_vec(),
        }
    }
}

/// The attempt kept of those at a reply the policy did not lead: the first that
/// answers. An empty one (stopped before a token, or an end of sequence first)
/// answers nothing; when none answers, the first is kept.
pub fn kept_answer(tries: &[Attempt]) -> usize {
    tries
        .iter()
        .position(|a| !a.restates && !a.text.trim().is_empty())
        .unwrap_or(0)
}

/// What `Session::settle` makes of a finished turn.
pub enum Settled<'e> {
    /// The reply asked for no missing piece: another attempt, with the next lead,
    /// has begun in its place.
    Again(Box<PendingTurn<'e>>),
    /// The turn as the transcript now holds it.
    Done(Box<Turn>),
}

#[derive(Debug, Serialize)]
pub struct Turn {
    pub generation: Generation,
    /// Set when this turn's transcript did not extend the previous context.
    pub divergence: Option<Divergence>,
    /// With tools: the reply split into its text and tool calls (also the message
    /// the transcript now ends with).
    pub reply: Option<ParsedReply>,
    /// The clarify-first decision on the user's message (`send` with the policy on).
    pub policy: Option<Decision>,
    /// The words the reply was started with by the policy (`Decision::lead`), before
    /// the generated text; the transcript's reply holds both.
    pub lead: Option<String>,
    /// What the prompt left out to fit the context (`overflow`), if anything.
    pub fitted: Option<Fitted>,
    /// A clarifying reply's attempts in order, each checked for a missing piece
    /// (`settle`); empty for any other turn.
    pub tries: Vec<Attempt>,
}

impl<'e> Session<'e> {
    /// `capacity`: context positions to allocate (at most the model's context length).
    pub fn new(engine: &'e Engine, capacity: usize) -> Session<'e> {
        let cap = capacity.clamp(1, engine.context_len());
        Session {
            engine,
            messages: Vec::new(),
            tools: None,
            clarify_first: false,
            clarify_probe: true,
            lead: None,
            clear: None,
            retrying: None,
            overflow: Overflow::Stop,
            trimmed: None,
            context: Vec::new(),
            lead_only: false,
            probed: None,
            cache: engine.model.new_cache(cap),
            scratch: Scratch::new(&engine.model.cfg, cap),
        }
    }

    /// The transcript (messages, tools) without the KV cache and buffers, which are
    /// freed here: what `resume` rebuilds a session from, on another context size or
    /// after the engine's threads changed.
    pub fn into_transcript(self) -> Transcript {
        Transcript {
            messages: self.messages,
            tools: self.tools,
            clarify_first: self.clarify_first,
            lead: self.lead,
            clear: self.clear,
            overflow: self.overflow,
        }
    }

    /// A session of `capacity` positions on a kept transcript, prefilled again at its
    /// next turn.
    pub fn resume(engine: &'e Engine, capacity: usize, t: Transcript) -> Session<'e> {
        let mut s = Session::new(engine, capacity);
        s.messages = t.messages;
        s.tools = t.tools;
        s.clarify_first = t.clarify_first;
        s.lead = t.lead;
        s.clear = t.clear;
        s.overflow = t.overflow;
        s
    }

    /// Answer the last reply's tool calls with a `tool` message (`reply` then generates
    /// what follows). Refused when the transcript does not end with a call.
    pub fn add_tool_result(&mut self, content: &str) -> Result<()> {
        let calls = self
            .messages
            .last()
            .and_then(|m| m["tool_calls"].as_array());
        if calls.is_none_or(|c| c.is_empty()) {
            return Err(SlmError::Invalid(
                "the last reply made no tool call to answer".into(),
            ));
        }
        self.messages
            .push(json!({"role": "tool", "content": content}));
        Ok(())
    }

    /// The tool-call syntax replies are parsed with: only when tools were given and
    /// the template renders calls.
    pub fn tool_syntax(&self) -> Option<ToolCallSyntax> {
        self.tools.as_ref()?;
        ToolCallSyntax::of_template(
            self.engine
                .text
                .manifest
                .tokenizer
                .chat_template
                .as_deref()?,
        )
    }

    pub fn capacity(&self) -> usize {
        self.cache.capacity
    }

    /// Tokens currently held in the KV cache.
    pub fn kv_len(&self) -> usize {
        self.cache.len
    }

    pub fn context_tokens(&self) -> &[u32] {
        &self.context
    }

    pub fn reset_context(&mut self) {
        self.cache.truncate(0);
        self.context.clear();
        self.lead_only = false;
        self.probed = None;
        self.trimmed = None;
    }

    /// Prefill the lead that the next user turn's prompt starts with, while the cache
    /// is empty and the transcript holds no turn: the template's system prompt (the
    /// transcript's own, or the template's default) and the opening of a user message.
    /// A page calls this in idle time after a load, so that the first turn prefills
    /// only its own tokens. Returns the tokens prefilled (0 when there is nothing to
    /// do).
    ///
    /// The lead is the longest token prefix that the transcript shares when rendered
    /// with two unlike user messages. The next turn reuses the cache only as far as its
    /// own ids match (`begin`), so a lead it does not share (another system prompt,
    /// tools) costs its compute and nothing else; and since no turn was conditioned on
    /// it, it is never flagged as a divergence. The K/V are bit for bit those of a
    /// whole prefill: every kernel computes each token's sums on its own.
    pub fn prefill_lead(&mut self, now_unix: i64) -> Result<usize> {
        if self.cache.len > 0 || self.messages.iter().any(|m| m["role"] != "system") {
            return Ok(0);
        }
        let probe = |text: &str| {
            let mut m = self.messages.clone();
            m.push(json!({"role": "user", "content": text}));
            self.prompt_for(&m, false, now_unix).map(|(_, ids)| ids)
        };
        let (a, b) = (probe("A")?, probe("\n\n1")?);
        let n = common_prefix(&a, &b);
        // Room for at least one more token, as any turn needs.
        if n == 0 || n >= self.cache.capacity {
            return Ok(0);
        }
        // No logits: the turn's own part computes them.
        if let Err(e) =
            self.engine
                .model
                .prefill_part(&a[..n], &mut self.cache, &mut self.scratch, false)
        {
            self.reset_context();
            return Err(e);
        }
        self.context = a[..n].to_vec();
        self.lead_only = true;
        Ok(n)
    }

    pub fn clear_transcript(&mut self) {
        self.messages.clear();
        self.lead = None;
        self.clear = None;
        self.retrying = None;
    }

    /// The transcript's token ids, with or without the assistant turn opener.
    pub fn transcript_ids(&self, add_generation_prompt: bool, now_unix: i64) -> Result<Vec<u32>> {
        let r = self.engine.text.render(
            &Value::Array(self.messages.clone()),
            self.tools.as_ref(),
            add_generation_prompt,
            now_unix,
        )?;
        self.engine.text.encode_rendered(&r)
    }

    /// Compare the transcript (as the next prompt would render it, without the opener)
    /// with the runtime context. None: the transcript extends the context.
    pub fn divergence(&self, now_unix: i64) -> Result<Option<Divergence>> {
        if self.lead_only {
            return Ok(None);
        }
        if self.messages.is_empty() {
            // Nothing to render, but the model is still conditioned on the old context.
            return Ok((!self.context.is_empty()).then(|| Divergence {
                position: 0,
                context_tokens: self.context.len(),
                transcript_tokens: 0,
                explanation: format!(
                    "the transcript is empty but the runtime context still holds {} tokens of the earlier conversation; the next turn reuses only the prefix that still matches",
                    self.context.len()
                ),
            }));
        }
        let d = diverges(
            self.conditioned(),
            &self.transcript_ids(false, now_unix)?,
            &self.engine.text.tokenizer,
        );
        Ok(match (d, &self.trimmed) {
            (Some(mut d), Some(f)) => {
                d.explanation = format!(
                    "the context no longer holds the whole transcript: {}",
                    f.explanation
                );
                Some(d)
            }
            (d, _) => d,
        })
    }

    /// Append a user message and generate the assistant's reply.
    pub fn send(
        &mut self,
        user: &str,
        opts: &GenerateOptions,
        now_unix: i64,
        on_text: &mut dyn FnMut(&str, &StepTrace),
    ) -> Result<Turn> {
        let p = self.begin_send(user, opts, now_unix)?;
        self.run(p, opts, now_unix, on_text)
    }

    /// Step `p` to its end and `settle` it, through every attempt a clarifying reply
    /// takes. `on_text` receives every attempt's text in turn.
    fn run(
        &mut self,
        mut p: PendingTurn<'e>,
        opts: &GenerateOptions,
        now_unix: i64,
        on_text: &mut dyn FnMut(&str, &StepTrace),
    ) -> Result<Turn> {
        loop {
            while !self.step(&mut p, on_text) {}
            let t = self.finish(p, on_text);
            match self.settle(t, opts, now_unix)? {
                Settled::Again(next) => p = *next,
                Settled::Done(t) => return Ok(*t),
            }
        }
    }

    /// Generate the assistant's reply to the transcript as it stands.
    pub fn reply(
        &mut self,
        opts: &GenerateOptions,
        now_unix: i64,
        on_text: &mut dyn FnMut(&str, &StepTrace),
    ) -> Result<Turn> {
        let p = self.begin_reply(opts, now_unix)?;
        self.run(p, opts, now_unix, on_text)
    }

    /// Generate more of the last reply (`begin_continue`), joining it.
    pub fn continue_reply(
        &mut self,
        opts: &GenerateOptions,
        now_unix: i64,
        on_text: &mut dyn FnMut(&str, &StepTrace),
    ) -> Result<Turn> {
        let mut p = self.begin_continue(opts, now_unix)?;
        while !self.step(&mut p, on_text) {}
        Ok(self.finish(p, on_text))
    }

    /// The part of the context a turn was conditioned on (`probed`).
    fn conditioned(&self) -> &[u32] {
        &self.context[..self.probed.unwrap_or(self.context.len())]
    }

    /// The clarify probe's reading of the transcript as it stands, with the assistant
    /// opener (`clarify::probe`); None when the model carries no probe. The prompt is
    /// prefilled into the session's own cache after the prefix it shares, so that the
    /// turn that follows reuses it (all but the last token, whose logits the turn
    /// computes). When the cache holds tokens a turn was conditioned on that this
    /// prompt does not start with, the probe reads from a cache of its own instead,
    /// which leaves the divergence for the turn to report.
    fn read_probe(&mut self, now_unix: i64) -> Result<Option<clarify::Reading>> {
        let engine: &'e Engine = self.engine;
        let Some(p) = engine.clarify_probe().filter(|_| self.clarify_probe) else {
            return Ok(None);
        };
        let (_, ids) = self.prompt_for(&self.messages, false, now_unix)?;
        if ids.is_empty() {
            return Err(SlmError::Invalid("empty prompt".into()));
        }
        crate::engine::check_fits(ids.len(), 0, self.cache.capacity)?;
        let conditioned = match self.lead_only {
            true => 0,
            false => self.conditioned().len(),
        };
        let keep = common_prefix(&self.context, &ids).min(ids.len() - 1);
        if keep < conditioned {
            return engine.probe_reading(&ids);
        }
        self.cache.truncate(keep);
        self.context.truncate(keep);
        self.scratch.capture_hidden(&engine.model.cfg);
        let r = engine
            .model
            .prefill_part(&ids[keep..], &mut self.cache, &mut self.scratch, false);
        let hidden = std::mem::take(&mut self.scratch.hidden);
        if let Err(e) = r {
            self.reset_context();
            return Err(e);
        }
        // The K/V of a prefix are those of a whole prefill (each token's sums are its
        // own), so dropping the last token leaves the cache a turn would have built.
        self.cache.truncate(ids.len() - 1);
        self.context = ids[..ids.len() - 1].to_vec();
        if !self.lead_only {
            self.probed = Some(conditioned);
        }
        Ok(Some(p.read(&hidden)))
    }

    /// Append a user message, with the clarify-first note when the policy is on and
    /// fires; the decision, when the policy is on. With the policy on and a model
    /// that carries a clarify probe, the probe reads the transcript first
    /// (`read_probe`); if it cannot run, the decision is the rules' and its `why`
    /// says so.
    pub fn push_user(&mut self, user: &str, now_unix: i64) -> Option<Decision> {
        self.messages.push(json!({"role": "user", "content": user}));
        let d = self.clarify_first.then(|| {
            let reading = self.read_probe(now_unix);
            let mut d = clarify::apply_read(
                &mut self.messages,
                reading.as_ref().ok().and_then(|r| r.as_ref()),
            );
            if let Err(e) = reading {
                d.why = format!("{}; the clarify probe did not run: {e}", d.why);
            }
            d
        });
        self.clear = d.as_ref().filter(|d| !d.clarify).map(|_| user.to_string());
        self.lead = d.as_ref().filter(|d| d.lead.is_some()).and_then(|d| {
            let content = self.messages.last()?["content"].as_str()?.to_string();
            Some(Led {
                content,
                user: user.to_string(),
                decision: d.clone(),
            })
        });
        d
    }

    /// The policy's decision on the user message the transcript ends with, if it
    /// fired there: a reply to it starts with the decision's lead.
    fn led_reply(&self) -> Option<&Led> {
        let led = self.lead.as_ref()?;
        let last = self.messages.last()?;
        (last["role"] == "user" && last["content"].as_str() == Some(led.content.as_str()))
            .then_some(led)
    }

    /// The lead a reply to the transcript starts with (`led_reply`).
    fn lead_for_reply(&self) -> Option<String> {
        self.led_reply()?.decision.lead.clone()
    }

    /// Close a clarifying reply's attempt (`finish`'s turn): when the policy led it and
    /// it asks for no missing piece (`Decision::reply_names_a_piece`), the reply is set
    /// aside and the next lead (`Decision::next_lead`) begins another in its place
    /// (`Again`). When no attempt names a piece, the first that asks nothing amiss
    /// is kept, or else the first (`clarify::kept_attempt`): the transcript and the
    /// context return to it. A stopped attempt is kept as it is, and any other turn is
    /// `Done` unchanged.
    pub fn settle(
        &mut self,
        mut t: Turn,
        opts: &GenerateOptions,
        now_unix: i64,
    ) -> Result<Settled<'e>> {
        let retrying = self.retrying.take();
        let Some(lead) = t.lead.clone() else {
            return self.settle_unled(t, retrying, opts, now_unix);
        };
        // The transcript ends with this reply, after the message the policy fired on.
        let n = self.messages.len();
        let led = self.lead.clone().filter(|l| {
            n >= 2 && self.messages[n - 2]["content"].as_str() == Some(l.content.as_str())
        });
        let Some(led) = led else {
            return Ok(Settled::Done(Box::new(t)));
        };
        let d = &led.decision;
        let stopped = t.generation.stop_reason == crate::stopping::StopReason::Aborted;
        let (mut tries, fallback) = match retrying {
            Some(r) => (r.tries, Some((r.fallback, r.fallback_context))),
            None => (Vec::new(), None),
        };
        tries.push(Attempt {
            names_a_piece: d.reply_names_a_piece(&led.user, &lead, &t.generation.text),
            asks_amiss: d.reply_asks_amiss(&led.user, &lead, &t.generation.text),
            lead,
            text: t.generation.text.clone(),
            kept: false,
            restates: false,
            barred_start: Vec::new(),
        });
        let named: Vec<bool> = tries.iter().map(|a| a.names_a_piece).collect();
        let amiss: Vec<bool> = tries.iter().map(|a| a.asks_amiss).collect();
        let next = match stopped {
            true => None,
            false => d.next_lead(&named).map(String::from),
        };
        let this = tries.len() - 1;
        let k = match stopped {
            true => this,
            false => clarify::kept_attempt(&named, &amiss),
        };
        let Some(next) = next else {
            // `keep_fallback` marks the kept attempt when it puts it back.
            return Ok(Settled::Done(Box::new(match fallback {
                Some((kept, context)) if k != this => self.keep_fallback(kept, &context, tries, k),
                _ => {
                    tries[k].kept = true;
                    t.tries = tries;
                    t
                }
            })));
        };
        // Until one names a piece, the attempt `kept_attempt` would keep so far waits.
        let (fallback, fallback_context) = match fallback {
            Some(f) if k != this => f,
            _ => {
                let context = self.context.clone();
                (t, context)
            }
        };
        // The set-aside reply leaves the transcript; the next lead starts another.
        self.messages.pop();
        self.messages
            .push(json!({"role": "assistant", "content": next}));
        let opts = GenerateOptions {
            end_at: clarify::reply_end(&next),
            ..opts.clone()
        };
        let r = Retrying {
            fallback,
            fallback_context,
            tries,
            barred: Vec::new(),
        };
        match self.begin_again(&opts, now_unix, Some(next), r) {
            Ok(p) => Ok(Settled::Again(Box::new(p))),
            Err(b) => {
                let (e, r) = *b;
                // The transcript goes back to the kept reply; the error is reported.
                self.keep_fallback(r.fallback, &r.fallback_context, r.tries, k);
                Err(e)
            }
        }
    }

    /// Close a reply the policy did not lead (`settle`). With the policy on and silent
    /// (the message is clear), a reply that restates the user's question instead of
    /// answering it (`clarify::restates_request`: "How can I read a file line by line
    /// in Go?" for "how do i read a file line by line in Go") is set aside, and
    /// another begins that may not start with its first token
    /// (`GenerateOptions::barred_start`): no words are put in the model's mouth. The
    /// first attempt that does not restate is kept; when `RESTATED_TRIES` all do, the
    /// first. Any other turn, and a stopped attempt, is `Done` unchanged.
    fn settle_unled(
        &mut self,
        mut t: Turn,
        retrying: Option<Retrying>,
        opts: &GenerateOptions,
        now_unix: i64,
    ) -> Result<Settled<'e>> {
        let stopped = t.generation.stop_reason == crate::stopping::StopReason::Aborted;
        // The reply answers the user message the policy judged clear (`clear`).
        let n = self.messages.len();
        let user = match n >= 2 && self.messages[n - 2]["role"] == "user" {
            true => self.messages[n - 2]["content"].as_str(),
            false => None,
        };
        let clear = self
            .clear
            .as_deref()
            .filter(|c| self.clarify_first && user == Some(*c));
        let restates =
            !stopped && clear.is_some_and(|u| clarify::restates_request(u, &t.generation.text));
        let (mut tries, fallback, mut barred) = match retrying {
            Some(r) => (r.tries, Some((r.fallback, r.fallback_context)), r.barred),
            None if restates => (Vec::new(), None, Vec::new()),
            None => return Ok(Settled::Done(Box::new(t))),
        };
        tries.push(Attempt::unled(&t.generation.text, restates, &barred));
        let this = tries.len() - 1;
        let first = t.generation.ids.first().copied();
        let again = restates && tries.len() < RESTATED_TRIES && first.is_some();
        if !again {
            let k = kept_answer(&tries);
            return Ok(Settled::Done(Box::new(match fallback {
                Some((kept, context)) if k != this => self.keep_fallback(kept, &context, tries, k),
                _ => {
                    tries[k].kept = true;
                    t.tries = tries;
                    t
                }
            })));
        }
        barred.extend(first);
        // The first attempt waits, kept if every attempt restates.
        let (fallback, fallback_context) = match fallback {
            Some(f) => f,
            None => {
                let context = self.context.clone();
                (t, context)
            }
        };
        self.messages.pop();
        let opts = GenerateOptions {
            barred_start: barred.clone(),
            ..opts.clone()
        };
        let r = Retrying {
            fallback,
            fallback_context,
            tries,
            barred,
        };
        match self.begin_again(&opts, now_unix, None, r) {
            Ok(p) => Ok(Settled::Again(Box::new(p))),
            Err(b) => {
                let (e, r) = *b;
                // The transcript goes back to the first reply; the error is reported.
                self.messages
                    .push(json!({"role": "assistant", "content": ""}));
                self.keep_fallback(r.fallback, &r.fallback_context, r.tries, 0);
                Err(e)
            }
        }
    }

    /// Begin the attempt that takes a set-aside one's place (`settle`, `settle_unled`),
    /// with `lead` if the policy leads it. The decision and the first attempt's
    /// divergence carry over: the context held the set-aside attempt, and a prompt
    /// shorter than it is no divergence of the transcript's. On an error the attempts
    /// come back, for the caller to keep one.
    fn begin_again(
        &mut self,
        opts: &GenerateOptions,
        now_unix: i64,
        lead: Option<String>,
        r: Retrying,
    ) -> std::result::Result<PendingTurn<'e>, Box<(SlmError, Retrying)>> {
        let policy = r.fallback.policy.clone();
        let divergence = r.fallback.divergence.clone();
        match self.begin(opts, now_unix, lead.is_some()) {
            Ok(mut p) => {
                p.lead = lead;
                p.policy = policy;
                p.divergence = divergence;
                self.retrying = Some(r);
                Ok(p)
            }
            Err(e) => Err(Box::new((e, r))),
        }
    }

    /// Put attempt `k` (`kept`, which left `kept_context`) back as the reply (the
    /// transcript's last message) and return it with every attempt recorded. The cache
    /// keeps the prefix the context shares with that attempt's.
    fn keep_fallback(
        &mut self,
        mut kept: Turn,
        kept_context: &[u32],
        mut tries: Vec<Attempt>,
        k: usize,
    ) -> Turn {
        for (i, a) in tries.iter_mut().enumerate() {
            a.kept = i == k;
        }
        kept.tries = tries;
        let keep = self
            .context
            .iter()
            .zip(kept_context)
            .take_while(|(a, b)| a == b)
            .count();
        self.context.truncate(keep);
        self.cache.truncate(keep);
        let content = format!(
            "{}{}",
            kept.lead.as_deref().unwrap_or_default(),
            kept.generation.text
        );
        if let Some(m) = self.messages.last_mut() {
            *m = json!({"role": "assistant", "content": content});
        }
        kept
    }

    /// `send`, step by step: append the user message and prefill.
    pub fn begin_send(
        &mut self,
        user: &str,
        opts: &GenerateOptions,
        now_unix: i64,
    ) -> Result<PendingTurn<'e>> {
        let policy = self.push_user(user, now_unix);
        let r = self.begin_reply(opts, now_unix);
        match r {
            Ok(mut p) => {
                p.policy = policy;
                Ok(p)
            }
            Err(e) => {
                self.messages.pop();
                Err(e)
            }
        }
    }

    /// `reply`, step by step: render the transcript, reuse the common prefix, prefill.
    pub fn begin_reply(
        &mut self,
        opts: &GenerateOptions,
        now_unix: i64,
    ) -> Result<PendingTurn<'e>> {
        // A new reply: attempts of an earlier one that was never settled are over.
        self.retrying = None;
        let Some(lead) = self.lead_for_reply() else {
            return self.begin(opts, now_unix, false);
        };
        // The policy's lead starts the reply, and the model continues it; the reply
        // ends at its question.
        self.messages
            .push(json!({"role": "assistant", "content": lead}));
        let opts = GenerateOptions {
            end_at: clarify::reply_end(&lead),
            ..opts.clone()
        };
        match self.begin(&opts, now_unix, true) {
            Ok(mut p) => {
                p.lead = Some(lead);
                Ok(p)
            }
            Err(e) => {
                self.messages.pop();
                Err(e)
            }
        }
    }

    /// Continue the transcript's last message, an assistant reply that was cut off:
    /// the prompt ends with its text, as transformers' `continue_final_message` renders
    /// it, and what is generated joins that message.
    pub fn begin_continue(
        &mut self,
        opts: &GenerateOptions,
        now_unix: i64,
    ) -> Result<PendingTurn<'e>> {
        let last = self.messages.last();
        let ok = last.is_some_and(|m| {
            m["role"] == "assistant"
                && m["content"].as_str().is_some_and(|c| !c.is_empty())
                && m.get("tool_calls")
                    .is_none_or(|c| c.as_array().is_none_or(|c| c.is_empty()))
        });
        if !ok {
            return Err(SlmError::Invalid(
                "only a reply with text and no tool calls, the transcript's last message, can be continued".into(),
            ));
        }
        self.begin(opts, now_unix, true)
    }

    /// The prompt for `messages`: with the assistant opener, or (`continues`) ending
    /// with the last message's text.
    fn prompt_for(
        &self,
        messages: &[Value],
        continues: bool,
        now_unix: i64,
    ) -> Result<(String, Vec<u32>)> {
        let r =
            self.engine
                .text
                .render_prompt(messages, self.tools.as_ref(), continues, now_unix)?;
        let ids = self.engine.text.encode_rendered(&r)?;
        Ok((r, ids))
    }

    /// Render, fit the context (`overflow`), reuse the common prefix, start decoding.
    fn begin(
        &mut self,
        opts: &GenerateOptions,
        now_unix: i64,
        continues: bool,
    ) -> Result<PendingTurn<'e>> {
        let cap = self.cache.capacity;
        let (mut rendered, mut ids) = self.prompt_for(&self.messages, continues, now_unix)?;
        let mut fitted = None;
        // Room for the reply: with a dropping policy, as much of `max_tokens` as half
        // the context; refused only when not even one output token fits.
        let reserve = opts.max_tokens.min(cap / 2).max(1);
        if self.overflow != Overflow::Stop && ids.len() + reserve > cap {
            let whole = ids.len();
            let turns = fit::removable_turns(&self.messages, self.overflow);
            // The last turn's cut, as a count of these turns: kept while it still fits,
            // so that this turn's prompt extends the cache instead of re-prefilling it.
            let prior = self.trimmed.as_ref().map_or(0, |f| {
                turns
                    .iter()
                    .take_while(|r| (*r).clone().all(|i| f.dropped_messages.contains(&i)))
                    .count()
            });
            // A new cut goes down to half the context (as llama.cpp's context shift
            // discards half), so that the turns after it fit under the same cut; at
            // least, the smallest cut that fits; at most, every removable turn.
            let mut cut = None;
            for n in prior.max(1)..=turns.len() {
                let (kept, gone) = fit::without(&self.messages, &turns, n);
                let (r, i) = self.prompt_for(&kept, continues, now_unix)?;
                let done = if n == prior {
                    i.len() + reserve <= cap
                } else {
                    i.len() <= cap / 2
                };
                cut = Some((r, i, gone));
                if done {
                    break;
                }
            }
            if let Some((r, i, gone)) = cut {
                rendered = r;
                ids = i;
                fitted = Some(Fitted {
                    policy: self.overflow,
                    explanation: format!(
                        "{} of {} messages were left out of the prompt ({}), which went from {whole} to {} tokens to fit a context of {cap} positions",
                        gone.len(),
                        self.messages.len(),
                        self.overflow.describe(),
                        ids.len()
                    ),
                    dropped_messages: gone,
                    whole_tokens: whole,
                    prompt_tokens: ids.len(),
                });
            }
        }
        // Budget: refuse before any compute when not even one output token fits.
        check_fits(ids.len(), 1, cap).map_err(|e| match e {
            SlmError::Invalid(m) => SlmError::Invalid(format!(
                "{m} (session capacity; the model allows {}; context policy: {})",
                self.engine.context_len(),
                self.overflow.describe()
            )),
            e => e,
        })?;
        let divergence = match &fitted {
            // The prompt leaves part of the transcript out: say so, whatever the cache.
            Some(f) => Some(Divergence {
                position: common_prefix(&self.context, &ids),
                context_tokens: self.context.len(),
                transcript_tokens: f.whole_tokens,
                explanation: format!(
                    "the context no longer holds the whole transcript: {}",
                    f.explanation
                ),
            }),
            None if self.lead_only => None,
            None => diverges(self.conditioned(), &ids, &self.engine.text.tokenizer),
        };
        self.probed = None;
        let common = common_prefix(&self.context, &ids).min(ids.len() - 1);
        self.cache.truncate(common);
        self.context.truncate(common);
        self.lead_only = false;
        let engine: &'e Engine = self.engine;
        match engine.start(&self.cache, &ids, opts) {
            Ok(decoding) => {
                self.trimmed = fitted.clone();
                Ok(PendingTurn {
                    decoding,
                    ids,
                    rendered,
                    divergence,
                    policy: None,
                    lead: None,
                    fitted,
                    continues,
                })
            }
            Err(e) => {
                // Refused before any compute; the truncated cache no longer matches the
                // transcript's ids, so start the context afresh.
                self.reset_context();
                Err(e)
            }
        }
    }

    /// One step of a pending turn (a part of the prompt, or one token); true once it
    /// has stopped.
    pub fn step(
        &mut self,
        p: &mut PendingTurn<'e>,
        on_text: &mut dyn FnMut(&str, &StepTrace),
    ) -> bool {
        p.decoding.step(&mut self.cache, &mut self.scratch, on_text)
    }

    /// Close a turn: the reply joins the transcript, the context records what the cache
    /// holds. A turn closed before it stopped is recorded as aborted.
    pub fn finish(
        &mut self,
        p: PendingTurn<'e>,
        on_text: &mut dyn FnMut(&str, &StepTrace),
    ) -> Turn {
        let g = p.decoding.finish(on_text);
        self.context = p.ids;
        self.context.extend(&g.ids);
        self.context.truncate(self.cache.len);
        let reply = if p.continues {
            // The continuation joins the reply it continues (`begin_continue` checked
            // that the last message is that reply).
            if let Some(m) = self.messages.last_mut() {
                let text = m["content"].as_str().unwrap_or_default().to_string() + &g.text;
                m["content"] = Value::String(text);
            }
            None
        } else {
            let reply = self.tool_syntax().map(|s| tool_calls::parse(s, &g.text));
            self.messages.push(match &reply {
                Some(r) => r.to_message(),
                None => json!({"role": "assistant", "content": g.text}),
            });
            reply
        };
        Turn {
            generation: g,
            divergence: p.divergence,
            reply,
            policy: p.policy,
            lead: p.lead,
            tries: Vec::new(),
            fitted: p.fitted,
        }
    }
}

/// A reply being generated (`Session::begin_send` / `begin_reply`).
pub struct PendingTurn<'e> {
    decoding: Decoding<'e>,
    /// The prompt's ids, and its text.
    ids: Vec<u32>,
    rendered: String,
    divergence: Option<Divergence>,
    pub policy: Option<Decision>,
    /// The policy's lead, which the reply starts with (`begin_reply`).
    lead: Option<String>,
    /// What the prompt left out to fit the context.
    fitted: Option<Fitted>,
    /// The turn continues the last message: a reply cut off (`begin_continue`) or one
    /// the policy's lead started.
    continues: bool,
}

impl PendingTurn<'_> {
    pub fn prompt_ids(&self) -> &[u32] {
        &self.ids
    }

    /// The words the policy started this reply with, if any (`Turn::lead`).
    pub fn lead(&self) -> Option<&str> {
        self.lead.as_deref()
    }

    /// The prompt as rendered: exactly the text its ids encode.
    pub fn prompt_text(&self) -> &str {
        &self.rendered
    }

    pub fn fitted(&self) -> Option<&Fitted> {
        self.fitted.as_ref()
    }

    /// Prompt tokens prefilled so far and to prefill in all (`Decoding::prefill_progress`).
    pub fn prefill_progress(&self) -> (usize, usize) {
        self.decoding.prefill_progress()
    }
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn diverges(
    context: &[u32],
    transcript: &[u32],
    tok: &crate::tokenizer::Tokenizer,
) -> Option<Divergence> {
    let p = common_prefix(context, transcript);
    if p == context.len() {
        return None;
    }
    let piece = |ids: &[u32], at: usize| {
        ids.get(at)
            .and_then(|&i| tok.piece(i))
            .map(|s| format!("{s:?}"))
            .unwrap_or_else(|| "end".into())
    };
    let explanation = if p == transcript.len() {
        format!(
            "the transcript ({} tokens) is shorter than the runtime context ({} tokens): messages were removed or edited; the model would still be conditioned on the old ones",
            transcript.len(),
            context.len()
        )
    } else {
        format!(
            "at token {p} the runtime context has {} but the transcript renders {}: the visible conversation is not what the model was conditioned on (a reply that re-tokenizes differently, or an edited/cleared transcript); the next turn re-prefills from token {p}",
            piece(context, p),
            piece(transcript, p)
        )
    };
    Some(Divergence {
        position: p,
        context_tokens: context.len(),
        transcript_tokens: transcript.len(),
        explanation,
    })
}
