//! The page's state, as signals, and how each worker event changes it.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use slm_runtime::sampling::SamplerConfig;

use crate::protocol::{
    CachedModel, CatalogEntry, ErrorKind, Event, ModelCard, Role, Stage, StopReason,
};
use slm_runtime::tool_calls::ToolCall;

/// One message as the page shows it and a conversation stores it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
    /// An assistant reply's tool calls, parsed by the worker's session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A finished reply's figures (the worker's Done), shown under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<TurnStats>,
    /// On a user message: the clarify-first policy's decision and the note the model
    /// was given with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyView>,
    /// The message exactly as the model was given it (the worker's session reports
    /// it: a clarify note included, tool calls as data). None until reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given: Option<Value>,
    /// A reply cut off before it finished: the page closed or the worker died while
    /// it streamed. Its text is what had arrived.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// On a reply: the settings it was generated with (what a replay needs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<crate::protocol::ChatSettings>,
    /// The other branches from this message on (an edit or a regenerated reply keeps
    /// what it replaced), each a whole tail of the transcript; this one sits at
    /// `alt_pos` among them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alts: Vec<Vec<ChatMessage>>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub alt_pos: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What the clarify-first policy decided on a user message (`Event::Policy`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PolicyView {
    pub clarify: bool,
    pub summary: String,
    pub note: Option<String>,
}

impl ChatMessage {
    pub fn new(role: Role, content: String) -> ChatMessage {
        ChatMessage {
            role,
            content,
            tool_calls: vec![],
            stats: None,
            policy: None,
            given: None,
            interrupted: false,
            turn: None,
            alts: vec![],
            alt_pos: 0,
        }
    }

    /// The message to give the model: as reported, or else as shown.
    pub fn for_model(&self) -> Value {
        self.given.clone().unwrap_or_else(
            || serde_json::json!({"role": self.role, "content": self.content.clone()}),
        )
    }
}

/// Make `messages` (as the model is given them) the worker session's transcript: a
/// chat opened, a model loaded, an edit or a branch switch, a refused turn undone. The
/// KV cache keeps the prefix that still matches.
pub fn open_in_session(messages: &[ChatMessage]) {
    super::client::send(&crate::protocol::Command::OpenChat {
        messages: messages.iter().map(ChatMessage::for_model).collect(),
    });
}

/// The threads the worker's products run on (the worker's report).
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadsView {
    pub count: usize,
    /// The most this page can have.
    pub available: usize,
    /// Why not more, when the limit is not the core count.
    pub note: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ErrorView {
    pub during: String,
    pub kind: ErrorKind,
    pub message: String,
    pub chunk: Option<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ProgressView {
    pub id: String,
    pub stage: Stage,
    pub done: u64,
    pub total: u64,
    pub note: Option<String>,
    /// Bytes per second since this operation started.
    pub speed: f64,
    started: (f64, u64),
}

impl ProgressView {
    pub fn percent(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.done as f64 * 100.0 / self.total as f64
        }
    }
    pub fn eta_s(&self) -> Option<f64> {
        (self.speed > 0.0).then(|| (self.total.saturating_sub(self.done)) as f64 / self.speed)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TokenRow {
    pub index: usize,
    pub id: u32,
    pub piece: String,
    pub prob: f32,
    pub draw: Option<f64>,
    pub top: Vec<(u32, String, f32)>,
    /// Context position of the token.
    pub position: usize,
    /// Every sampler stage (empty when the console was closed during the turn).
    pub stages: Vec<slm_runtime::sampling::Stage>,
    pub stop_check: Option<slm_runtime::stopping::StopCheck>,
    /// The text of every id the stages list.
    pub stage_pieces: Vec<(u32, String)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PromptView {
    pub rendered: String,
    pub sha256: String,
    pub ids: Vec<u32>,
    pub pieces: Vec<String>,
    pub reused: usize,
    pub template_added_bos: bool,
    pub unix_time: i64,
    /// What the prompt left out to fit the context.
    pub fitted: Option<slm_runtime::session::Fitted>,
}

/// A finished turn's record, kept with its reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnStats {
    /// SHA-256 of the rendered prompt this reply answered.
    #[serde(default)]
    pub prompt_sha256: String,
    /// The model that wrote the reply, and its file's SHA-256.
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub model_sha256: String,
    /// The Unix time the prompt was rendered at (templates may print the date).
    #[serde(default)]
    pub unix_time: i64,
    /// What the prompt left out to fit the context, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fitted: Option<String>,
    /// The reply was continued (made in more than one turn).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub continued: bool,
    pub stop_reason: StopReason,
    pub stop_detail: Value,
    pub prompt_tokens: usize,
    pub reused_tokens: usize,
    pub prefilled_tokens: usize,
    pub generated: usize,
    pub prefill_tok_s: f64,
    pub decode_tok_s: f64,
    pub first_token_ms: f64,
    pub memory_bytes: f64,
}

/// The context a session starts with: every catalog model has at least this.
pub const DEFAULT_CONTEXT: usize = 2048;

/// Every signal the views read. Copy: signals are handles.
#[derive(Clone, Copy)]
pub struct State {
    pub worker_ready: RwSignal<bool>,
    pub catalog: RwSignal<Vec<CatalogEntry>>,
    pub cached: RwSignal<Vec<CachedModel>>,
    pub storage: RwSignal<(Option<f64>, Option<f64>)>,
    pub progress: RwSignal<Option<ProgressView>>,
    /// Something the worker is doing that blocks model commands (download, load).
    pub working: RwSignal<Option<String>>,
    pub card: RwSignal<Option<ModelCard>>,
    pub transcript: RwSignal<Vec<ChatMessage>>,
    /// The open conversation (its messages are `transcript`), and every stored one.
    pub chat: RwSignal<Option<super::conversations::ChatHead>>,
    pub chats: RwSignal<Vec<super::conversations::ChatHead>>,
    pub saved: RwSignal<super::conversations::SaveState>,
    pub generating: RwSignal<bool>,
    pub tokens: RwSignal<Vec<TokenRow>>,
    pub prompt: RwSignal<Option<PromptView>>,
    pub kv: RwSignal<(usize, usize)>,
    /// Prompt tokens prefilled and in all, while a turn reads its prompt.
    pub prefill: RwSignal<Option<(usize, usize)>>,
    pub stats: RwSignal<Option<TurnStats>>,
    pub divergence: RwSignal<Option<Value>>,
    pub notice: RwSignal<Option<String>>,
    pub error: RwSignal<Option<ErrorView>>,
    pub system: RwSignal<String>,
    pub preset: RwSignal<String>,
    pub sampler: RwSignal<SamplerConfig>,
    pub max_tokens: RwSignal<usize>,
    pub stop_strings: RwSignal<String>,
    pub loop_detection: RwSignal<bool>,
    /// The clarify-first policy (on by default with the chat preset).
    pub clarify_first: RwSignal<bool>,
    /// Context positions for the session (a load plans for it; a change applies at
    /// the next turn).
    pub context: RwSignal<usize>,
    /// What a turn does when its prompt does not fit the context.
    pub overflow: RwSignal<slm_runtime::session::Overflow>,
    /// The tools JSON as typed (a list of function schemas); empty: no tools.
    pub tools: RwSignal<String>,
    pub keep_file: RwSignal<bool>,
    /// The worker's threads, and the count the person chose (asked again of a
    /// replacement worker).
    pub threads: RwSignal<Option<ThreadsView>>,
    pub threads_wanted: RwSignal<Option<usize>>,
    /// This worker was asked for `threads_wanted` already.
    pub threads_asked: RwSignal<bool>,
    /// The transcript as it was before the turn being generated, put back if the
    /// worker refuses the turn.
    pub before_turn: RwSignal<Option<Vec<ChatMessage>>>,
    /// The diagnostics column is open. Closed, turns record no sampler stages, so
    /// decoding does no extra work.
    pub diagnostics_open: RwSignal<bool>,
    /// The token console row opened to its stages.
    pub opened_token: RwSignal<Option<usize>>,
    /// The last turn's generation record (`slm generate --trace`'s schema), if traced.
    pub last_trace: RwSignal<Option<Value>>,
    /// "system" (follow `prefers-color-scheme`), "light" or "dark".
    pub theme: RwSignal<String>,
    /// When the reply's first token arrived (page clock), for the live rate.
    pub first_token_at: RwSignal<Option<f64>>,
    /// One polite announcement per finished reply, for screen readers.
    pub announcement: RwSignal<String>,
    /// Why the logit-bias field cannot be read (nothing is sent until it can).
    pub bias_error: RwSignal<Option<String>>,
}

impl Default for State {
    fn default() -> Self {
        Self::new()
    }
}

impl State {
    /// The worker died with what it held: no model is loaded, nothing runs. The
    /// transcript and the stored models stay. Whether a model was loaded.
    pub fn worker_lost(&self) -> bool {
        let had_model = self.card.get_untracked().is_some();
        if self.generating.get_untracked() {
            // The reply that was streaming stays as far as it got, marked interrupted.
            self.transcript.update(|t| {
                if let Some(m) = t.last_mut().filter(|m| m.role == Role::Assistant) {
                    m.interrupted = true;
                }
                if t.last()
                    .is_some_and(|m| m.interrupted && m.content.is_empty())
                {
                    t.pop();
                }
            });
        }
        self.generating.set(false);
        self.working.set(None);
        self.progress.set(None);
        self.prefill.set(None);
        self.worker_ready.set(false);
        self.card.set(None);
        self.kv.set((0, 0));
        had_model
    }

    pub fn new() -> State {
        State {
            worker_ready: RwSignal::new(false),
            catalog: RwSignal::new(vec![]),
            cached: RwSignal::new(vec![]),
            storage: RwSignal::new((None, None)),
            progress: RwSignal::new(None),
            working: RwSignal::new(None),
            card: RwSignal::new(None),
            transcript: RwSignal::new(vec![]),
            chat: RwSignal::new(None),
            chats: RwSignal::new(vec![]),
            saved: RwSignal::new(super::conversations::SaveState::Saved),
            generating: RwSignal::new(false),
            tokens: RwSignal::new(vec![]),
            prompt: RwSignal::new(None),
            kv: RwSignal::new((0, 0)),
            prefill: RwSignal::new(None),
            stats: RwSignal::new(None),
            divergence: RwSignal::new(None),
            notice: RwSignal::new(None),
            error: RwSignal::new(None),
            system: RwSignal::new(String::new()),
            preset: RwSignal::new("chat".into()),
            sampler: RwSignal::new(SamplerConfig::preset("chat").expect("built-in preset")),
            max_tokens: RwSignal::new(256),
            stop_strings: RwSignal::new(String::new()),
            loop_detection: RwSignal::new(true),
            clarify_first: RwSignal::new(true),
            tools: RwSignal::new(String::new()),
            context: RwSignal::new(DEFAULT_CONTEXT),
            overflow: RwSignal::new(Default::default()),
            keep_file: RwSignal::new(false),
            threads: RwSignal::new(None),
            threads_wanted: RwSignal::new(None),
            threads_asked: RwSignal::new(false),
            before_turn: RwSignal::new(None),
            diagnostics_open: RwSignal::new(true),
            opened_token: RwSignal::new(None),
            last_trace: RwSignal::new(None),
            theme: RwSignal::new("system".into()),
            first_token_at: RwSignal::new(None),
            announcement: RwSignal::new(String::new()),
            bias_error: RwSignal::new(None),
        }
    }

    /// Apply one worker event; `re`: the request it answers (`Reply::re`).
    pub fn apply(self, re: Option<u64>, ev: Event) {
        match ev {
            Event::Ready => {
                self.worker_ready.set(true);
                self.threads_asked.set(false);
            }
            Event::Threads {
                count,
                available,
                note,
            } => {
                // A new worker starts with its default: ask it once for the count the
                // person chose, when this page can have it.
                if let Some(want) = self.threads_wanted.get_untracked() {
                    if want != count && want <= available && !self.threads_asked.get_untracked() {
                        self.threads_asked.set(true);
                        super::client::send(&crate::protocol::Command::Threads { count: want });
                    }
                }
                self.threads.set(Some(ThreadsView {
                    count,
                    available,
                    note,
                }))
            }
            Event::Cached {
                models,
                usage,
                quota,
            } => {
                self.cached.set(models);
                self.storage.set((usage, quota));
                super::conversations::reopen_last_model(self);
            }
            Event::Progress {
                id,
                stage,
                done,
                total,
                note,
            } => {
                let now = super::now_ms();
                self.progress.update(|p| {
                    let started = match p {
                        Some(old) if old.id == id && old.stage == stage => old.started,
                        _ => (now, done),
                    };
                    let secs = (now - started.0) / 1e3;
                    let speed = if secs > 0.2 {
                        (done.saturating_sub(started.1)) as f64 / secs
                    } else {
                        0.0
                    };
                    *p = Some(ProgressView {
                        id,
                        stage,
                        done,
                        total,
                        note,
                        speed,
                        started,
                    });
                });
            }
            Event::Downloaded { id, .. } => {
                self.working.set(None);
                self.notice.set(Some(format!(
                    "{id} downloaded and verified; it is cached in this browser."
                )));
                self.progress.update(|p| {
                    if let Some(p) = p {
                        p.done = p.total;
                        p.stage = Stage::Verified;
                        p.note = Some("whole-file SHA-256 verified".into());
                    }
                });
            }
            Event::Loaded { card } => {
                self.working.set(None);
                self.progress.set(None);
                self.kv.set((0, card.plan.context as usize));
                // The open conversation goes on with this model: its session starts
                // from the conversation's messages.
                self.transcript.with_untracked(|t| {
                    if !t.is_empty() {
                        open_in_session(t);
                    }
                });
                self.tokens.set(vec![]);
                self.prompt.set(None);
                self.stats.set(None);
                self.divergence.set(None);
                self.notice.set(Some(format!(
                    "{} loaded in {:.1} s.",
                    card.name,
                    card.load_ms / 1e3
                )));
                if self.preset.get_untracked() == "model" {
                    self.sampler.set(SamplerConfig::from_generation_config(
                        card.generation_config
                            .as_object()
                            .unwrap_or(&Default::default()),
                    ));
                }
                super::conversations::model_loaded(&card);
                self.card.set(Some(*card));
            }
            Event::Evidence { view } => {
                self.notice.set(Some(view.summary.clone()));
                self.card.update(|c| {
                    if let Some(c) = c {
                        c.evidence = Some(view);
                    }
                });
            }
            Event::Policy {
                clarify,
                summary,
                note,
            } => {
                let view = PolicyView {
                    clarify,
                    summary,
                    note,
                };
                // The decision belongs to the latest user message (the reply being
                // generated follows it).
                self.transcript.update(|t| {
                    if let Some(m) = t.iter_mut().rev().find(|m| m.role == Role::User) {
                        m.policy = Some(view);
                    }
                });
            }
            Event::Prompt {
                rendered,
                sha256,
                ids,
                pieces,
                reused,
                capacity,
                template_added_bos,
                unix_time,
                fitted,
            } => {
                self.kv.set((reused, capacity));
                let total = ids.len().saturating_sub(reused);
                self.prefill.set((total > 0).then_some((0, total)));
                self.prompt.set(Some(PromptView {
                    rendered,
                    sha256,
                    ids,
                    pieces,
                    reused,
                    template_added_bos,
                    unix_time,
                    fitted,
                }));
            }
            Event::Prefill { done, total } => {
                self.prefill.set((done < total).then_some((done, total)));
            }
            Event::Token {
                id,
                piece,
                text,
                prob,
                draw,
                top,
                kv_len,
                position,
                stages,
                stop_check,
                stage_pieces,
            } => {
                self.prefill.set(None);
                if !text.is_empty() {
                    self.transcript.update(|t| {
                        if let Some(m) = t.last_mut() {
                            m.content.push_str(&text);
                        }
                    });
                }
                if id != u32::MAX {
                    if self.first_token_at.get_untracked().is_none() {
                        self.first_token_at.set(Some(super::now_ms()));
                    }
                    self.tokens.update(|rows| {
                        let index = rows.len();
                        rows.push(TokenRow {
                            index,
                            id,
                            piece,
                            prob,
                            draw,
                            top,
                            position,
                            stages,
                            stop_check,
                            stage_pieces,
                        });
                    });
                    self.kv.update(|kv| kv.0 = kv_len);
                }
            }
            Event::Done {
                text: _,
                content,
                continued,
                tool_calls,
                tool_errors,
                stop_reason,
                stop_detail,
                prompt_tokens,
                reused_tokens,
                prefilled_tokens,
                generated,
                prefill_tok_s,
                decode_tok_s,
                first_token_ms,
                kv_len,
                capacity,
                divergence,
                memory_bytes,
                trace,
            } => {
                self.last_trace.set(trace);
                self.first_token_at.set(None);
                self.announcement.set(format!(
                    "Reply complete: {generated} tokens, stopped by {}.",
                    stop_reason.as_str()
                ));
                self.generating.set(false);
                self.prefill.set(None);
                // The turn's prompt and model, as the Prompt event and the card say.
                let (prompt_sha256, unix_time, fitted) = self.prompt.with_untracked(|p| match p {
                    Some(p) => (
                        p.sha256.clone(),
                        p.unix_time,
                        p.fitted.as_ref().map(|f| f.explanation.clone()),
                    ),
                    None => Default::default(),
                });
                let (model, model_sha256) = self.card.with_untracked(|c| match c {
                    Some(c) => (c.name.clone(), c.file_sha256.clone()),
                    None => Default::default(),
                });
                let stats = TurnStats {
                    prompt_sha256,
                    model,
                    model_sha256,
                    unix_time,
                    fitted,
                    continued: false,
                    stop_reason,
                    stop_detail,
                    prompt_tokens,
                    reused_tokens,
                    prefilled_tokens,
                    generated,
                    prefill_tok_s,
                    decode_tok_s,
                    first_token_ms,
                    memory_bytes,
                };
                self.before_turn.set(None);
                self.transcript.update(|t| {
                    if let Some(m) = t.last_mut() {
                        let mut stats = stats.clone();
                        stats.continued =
                            continued || m.stats.as_ref().is_some_and(|s| s.continued);
                        m.content = content;
                        m.tool_calls = tool_calls;
                        m.interrupted = false;
                        m.stats = Some(stats);
                    }
                });
                if !tool_errors.is_empty() {
                    self.notice.set(Some(tool_errors.join("; ")));
                }
                self.kv.set((kv_len, capacity));
                self.divergence.set(divergence);
                self.stats.set(Some(stats));
                super::conversations::reply_done(self);
            }
            Event::Transcript { messages } => {
                self.transcript.update(|t| record_given(t, &messages));
            }
            Event::Unloaded { memory_bytes } => {
                self.card.set(None);
                self.kv.set((0, 0));
                self.prompt.set(None);
                self.notice.set(Some(format!(
                    "Model unloaded: the memory it held is free for the next model (the worker's heap stays at {}, as wasm memory never shrinks). The transcript stays on this page.",
                    super::mb(memory_bytes)
                )));
            }
            Event::Context {
                kv_len,
                capacity,
                messages,
                divergence,
            } => {
                self.kv.set((kv_len, capacity));
                self.divergence.set(divergence);
                self.transcript.update(|t| record_given(t, &messages));
            }
            Event::ProbeResult { .. } | Event::BenchResult { .. } => {
                super::client::resolve_probe(re, &ev)
            }
            Event::Error {
                during,
                kind,
                message,
                chunk,
            } => {
                if during == "chat" {
                    // The worker refused the turn: put the transcript back as it was, and
                    // give the session the same messages.
                    if self.generating.get_untracked() {
                        if let Some(before) = self.before_turn.get_untracked() {
                            open_in_session(&before);
                            self.transcript.set(before);
                        }
                    }
                    self.before_turn.set(None);
                    self.generating.set(false);
                }
                if during == "load" {
                    // The worker frees the old model before loading: none is loaded now.
                    // The conversation stays.
                    self.card.set(None);
                    self.kv.set((0, 0));
                }
                if during == "probe" {
                    super::client::reject_probe(re, &message);
                }
                if during == "download" || during == "load" {
                    self.working.set(None);
                }
                if kind == ErrorKind::Cancelled {
                    // Asked for, so said plainly rather than raised as an error.
                    self.progress.set(None);
                    self.notice.set(Some(message));
                    return;
                }
                self.error.set(Some(ErrorView {
                    during,
                    kind,
                    message,
                    chunk,
                }));
            }
        }
    }
}

/// Keep each message's model-facing form from the session's transcript
/// (`Event::Context`): the two pair in order, once the session's system message (the
/// system prompt setting) is set aside.
fn record_given(t: &mut [ChatMessage], session: &[Value]) {
    let skip = usize::from(session.first().is_some_and(|m| m["role"] == "system"));
    for (m, g) in t.iter_mut().zip(&session[skip..]) {
        if g["role"].as_str() == Some(m.role.as_str()) {
            m.given = Some(g.clone());
        }
    }
}
