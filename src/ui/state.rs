//! The page's state, as signals, and how each worker event changes it.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use slm_runtime::sampling::SamplerConfig;

use crate::protocol::{
    CachedModel, CatalogEntry, ErrorKind, Event, ModelCard, Operation, Role, Stage, StopReason,
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
    /// The words the policy started the reply with.
    #[serde(default)]
    pub lead: Option<String>,
    /// The clarifying reply's attempts (`Event::Tries`): more than one when a reply
    /// named no missing piece and was tried again with another lead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tries: Vec<slm_runtime::session::Attempt>,
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
    pub during: Operation,
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
    /// This reply's token trace among `Chat::traces`, while this page keeps it. Not
    /// stored: a trace takes about 9 KB per token.
    #[serde(skip)]
    pub trace: Option<u64>,
}

/// The context a session starts with: every catalog model has at least this.
pub const DEFAULT_CONTEXT: usize = 2048;

/// The page's state: small types, each with the signals of one concern and the
/// transitions that change them. `apply` routes each worker event to them. Copy:
/// signals are handles.
#[derive(Clone, Copy)]
pub struct State {
    pub worker: WorkerState,
    pub models: Models,
    pub chat: Chat,
    pub turn: Turn,
    pub settings: Settings,
    pub notices: Notices,
    pub view: ViewState,
}

/// The worker: whether it answers, and the threads its products run on.
#[derive(Clone, Copy)]
pub struct WorkerState {
    pub ready: RwSignal<bool>,
    /// The worker's threads, as it reports them.
    pub threads: RwSignal<Option<ThreadsView>>,
    /// The count the person chose (asked again of a replacement worker).
    pub threads_wanted: RwSignal<Option<usize>>,
    /// This worker was asked for `threads_wanted` already.
    pub threads_asked: RwSignal<bool>,
}

impl WorkerState {
    fn new() -> Self {
        WorkerState {
            ready: RwSignal::new(false),
            threads: RwSignal::new(None),
            threads_wanted: RwSignal::new(None),
            threads_asked: RwSignal::new(false),
        }
    }

    fn on_ready(self) {
        self.ready.set(true);
        self.threads_asked.set(false);
    }

    /// A new worker starts with its default count: ask it once for the count the
    /// person chose, when this page can have it.
    fn on_threads(self, view: ThreadsView) {
        if let Some(want) = self.threads_wanted.get_untracked() {
            if want != view.count && want <= view.available && !self.threads_asked.get_untracked() {
                self.threads_asked.set(true);
                super::client::send(&crate::protocol::Command::Threads { count: want });
            }
        }
        self.threads.set(Some(view));
    }
}

/// Models: the catalog, what is stored in this browser, the operation under way
/// (download or load) and the model loaded.
#[derive(Clone, Copy)]
pub struct Models {
    pub catalog: RwSignal<Vec<CatalogEntry>>,
    pub cached: RwSignal<Vec<CachedModel>>,
    /// Bytes used and the quota, as the browser estimates them.
    pub storage: RwSignal<(Option<f64>, Option<f64>)>,
    pub progress: RwSignal<Option<ProgressView>>,
    /// Something the worker is doing that blocks model commands (download, load).
    pub working: RwSignal<Option<String>>,
    pub card: RwSignal<Option<ModelCard>>,
    /// Keep a picked file in this browser's storage.
    pub keep_file: RwSignal<bool>,
}

impl Models {
    fn new() -> Self {
        Models {
            catalog: RwSignal::new(vec![]),
            cached: RwSignal::new(vec![]),
            storage: RwSignal::new((None, None)),
            progress: RwSignal::new(None),
            working: RwSignal::new(None),
            card: RwSignal::new(None),
            keep_file: RwSignal::new(false),
        }
    }

    /// A progress report; the speed counts from the start of this id's stage.
    fn on_progress(self, id: String, stage: Stage, done: u64, total: u64, note: Option<String>) {
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

    fn on_downloaded(self) {
        self.working.set(None);
        self.progress.update(|p| {
            if let Some(p) = p {
                p.done = p.total;
                p.stage = Stage::Verified;
                p.note = Some("whole-file SHA-256 verified".into());
            }
        });
    }

    fn on_loaded(self, card: ModelCard) {
        self.working.set(None);
        self.progress.set(None);
        self.card.set(Some(card));
    }

    /// No model is loaded (unloaded, a failed load, a lost worker).
    fn none_loaded(self) {
        self.card.set(None);
    }

    fn operation_ended(self) {
        self.working.set(None);
    }
}

/// The open conversation: its messages, the stored list, whether it is saved.
#[derive(Clone, Copy)]
pub struct Chat {
    pub transcript: RwSignal<Vec<ChatMessage>>,
    /// The open conversation (its messages are `transcript`).
    pub open: RwSignal<Option<super::conversations::ChatHead>>,
    /// Every stored conversation.
    pub list: RwSignal<Vec<super::conversations::ChatHead>>,
    pub saved: RwSignal<super::conversations::SaveState>,
    /// The transcript as it was before the turn being generated, put back if the
    /// worker refuses the turn.
    pub before_turn: RwSignal<Option<Vec<ChatMessage>>>,
    /// The token traces of the last `TRACES_KEPT` traced replies made on this page
    /// (`TurnStats::trace` names them), for "Export with traces".
    pub traces: StoredValue<Traces>,
}

/// Token traces held for export: the newest `TRACES_KEPT`, each under its id.
#[derive(Default)]
pub struct Traces {
    next: u64,
    kept: std::collections::VecDeque<(u64, Value)>,
}

/// How many replies' traces the page holds (a trace takes about 9 KB per token).
pub const TRACES_KEPT: usize = 32;

impl Traces {
    fn keep(&mut self, trace: Value) -> u64 {
        self.next += 1;
        if self.kept.len() == TRACES_KEPT {
            self.kept.pop_front();
        }
        self.kept.push_back((self.next, trace));
        self.next
    }

    pub fn get(&self, id: u64) -> Option<&Value> {
        self.kept.iter().find(|(i, _)| *i == id).map(|(_, t)| t)
    }
}

impl Chat {
    fn new() -> Self {
        Chat {
            transcript: RwSignal::new(vec![]),
            open: RwSignal::new(None),
            list: RwSignal::new(vec![]),
            saved: RwSignal::new(super::conversations::SaveState::Saved),
            before_turn: RwSignal::new(None),
            traces: StoredValue::new(Traces::default()),
        }
    }

    /// The reply that was streaming stays as far as it got, marked interrupted (an
    /// empty one goes).
    fn interrupt_reply(self) {
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

    /// The policy's decision belongs to the latest user message (the reply being
    /// generated follows it).
    fn set_policy(self, view: PolicyView) {
        self.transcript.update(|t| {
            if let Some(m) = t.iter_mut().rev().find(|m| m.role == Role::User) {
                m.policy = Some(view);
            }
        });
    }

    /// The reply streamed so far is set aside: another attempt starts with `lead`.
    fn restart_reply(self, lead: String) {
        self.transcript.update(|t| {
            if let Some(m) = t.last_mut().filter(|m| m.role == Role::Assistant) {
                m.content.clear();
            }
            if let Some(p) = t
                .iter_mut()
                .rev()
                .find(|m| m.role == Role::User)
                .and_then(|m| m.policy.as_mut())
            {
                // A reply that restated the question is tried again with no lead.
                p.lead = (!lead.is_empty()).then_some(lead);
            }
        });
    }

    /// The clarifying reply's attempts: the policy line shows them, and the lead of
    /// the one kept.
    fn set_tries(self, tries: Vec<slm_runtime::session::Attempt>) {
        self.transcript.update(|t| {
            if let Some(p) = t
                .iter_mut()
                .rev()
                .find(|m| m.role == Role::User)
                .and_then(|m| m.policy.as_mut())
            {
                // A led reply always records its attempts; with none, the lead the
                // policy event set stands.
                if !tries.is_empty() {
                    p.lead = tries
                        .iter()
                        .find(|a| a.kept)
                        .map(|a| a.lead.clone())
                        .filter(|l| !l.is_empty());
                }
                p.tries = tries;
            }
        });
    }

    fn append_text(self, text: &str) {
        if !text.is_empty() {
            self.transcript.update(|t| {
                if let Some(m) = t.last_mut() {
                    m.content.push_str(text);
                }
            });
        }
    }

    /// The reply is complete: its final text, tool calls and record.
    fn finish_reply(
        self,
        content: String,
        tool_calls: Vec<ToolCall>,
        mut stats: TurnStats,
        continued: bool,
    ) {
        self.before_turn.set(None);
        self.transcript.update(|t| {
            if let Some(m) = t.last_mut() {
                stats.continued = continued || m.stats.as_ref().is_some_and(|s| s.continued);
                m.content = content;
                m.tool_calls = tool_calls;
                m.interrupted = false;
                m.stats = Some(stats);
            }
        });
    }

    /// The worker refused the turn: put the transcript back as it was, and give the
    /// session the same messages.
    fn undo_turn(self) {
        if let Some(before) = self.before_turn.get_untracked() {
            open_in_session(&before);
            self.transcript.set(before);
        }
        self.before_turn.set(None);
    }

    /// Keep each message's model-facing form from the session's transcript.
    fn record_given(self, session: &[Value]) {
        self.transcript.update(|t| record_given(t, session));
    }
}

/// The turn being generated, or the last one: its prompt, tokens, KV cache and
/// figures (what the diagnostics column shows).
#[derive(Clone, Copy)]
pub struct Turn {
    pub generating: RwSignal<bool>,
    pub tokens: RwSignal<Vec<TokenRow>>,
    pub prompt: RwSignal<Option<PromptView>>,
    /// KV length and capacity.
    pub kv: RwSignal<(usize, usize)>,
    /// Prompt tokens prefilled and in all, while a turn reads its prompt.
    pub prefill: RwSignal<Option<(usize, usize)>>,
    pub stats: RwSignal<Option<TurnStats>>,
    pub divergence: RwSignal<Option<Value>>,
    /// When the reply's first token arrived (page clock), for the live rate.
    pub first_token_at: RwSignal<Option<f64>>,
    /// The last turn's generation record (`slm generate --trace`'s schema), if traced.
    pub last_trace: RwSignal<Option<Value>>,
    /// Tokens that arrived since the page last drew the reply (`State::queue_token`).
    streamed: StoredValue<Streamed>,
}

/// Tokens held until the next draw: their text, and their console rows with the KV
/// length after each.
#[derive(Default)]
struct Streamed {
    text: String,
    rows: Vec<(TokenRow, usize)>,
    /// The reply's text ended (a token event without a token).
    ended: bool,
    /// A draw is scheduled.
    due: bool,
}

/// How often a streaming reply is drawn. Every token was a layout and a paint of the
/// page (about 7 ms with the diagnostics open, SmolLM2, Zen 4, headless Chromium): on
/// two cores the page's main thread took a core from the decode's two threads, and a
/// chat turn decoded at 40% of the bench hook's rate. Twenty draws a second still
/// read as a stream.
const DRAW_EVERY_MS: u64 = 50;

impl Turn {
    fn new() -> Self {
        Turn {
            generating: RwSignal::new(false),
            tokens: RwSignal::new(vec![]),
            prompt: RwSignal::new(None),
            kv: RwSignal::new((0, 0)),
            prefill: RwSignal::new(None),
            stats: RwSignal::new(None),
            divergence: RwSignal::new(None),
            first_token_at: RwSignal::new(None),
            last_trace: RwSignal::new(None),
            streamed: StoredValue::new(Streamed::default()),
        }
    }

    /// The last turn's console, figures and trace go (a turn starts, a chat is left).
    fn clear(self) {
        self.tokens.set(vec![]);
        self.stats.set(None);
        self.last_trace.set(None);
        self.first_token_at.set(None);
    }

    /// Nothing runs and no model holds a cache (a lost worker, an unload).
    fn stopped(self) {
        self.generating.set(false);
        self.prefill.set(None);
        self.kv.set((0, 0));
    }

    /// A model was loaded with a context of `capacity`: the last turn's views go.
    fn fresh(self, capacity: usize) {
        self.kv.set((0, capacity));
        self.tokens.set(vec![]);
        self.prompt.set(None);
        self.stats.set(None);
        self.divergence.set(None);
    }

    fn on_prompt(self, view: PromptView, capacity: usize) {
        self.kv.set((view.reused, capacity));
        let total = view.ids.len().saturating_sub(view.reused);
        self.prefill.set((total > 0).then_some((0, total)));
        self.prompt.set(Some(view));
    }

    fn on_prefill(self, done: usize, total: usize) {
        self.prefill.set((done < total).then_some((done, total)));
    }

    /// Tokens chosen (each row with the KV length after it), drawn at once.
    fn on_tokens(self, new: Vec<(TokenRow, usize)>) {
        self.prefill.set(None);
        let Some(kv_len) = new.last().map(|r| r.1) else {
            return;
        };
        if self.first_token_at.get_untracked().is_none() {
            self.first_token_at.set(Some(super::now_ms()));
        }
        self.tokens.update(|rows| {
            for (mut row, _) in new {
                row.index = rows.len();
                rows.push(row);
            }
        });
        self.kv.update(|kv| kv.0 = kv_len);
    }

    /// The turn's record: its prompt's hash and time, and what it left out.
    fn prompt_record(self) -> (String, i64, Option<String>) {
        self.prompt.with_untracked(|p| match p {
            Some(p) => (
                p.sha256.clone(),
                p.unix_time,
                p.fitted.as_ref().map(|f| f.explanation.clone()),
            ),
            None => Default::default(),
        })
    }

    fn finish(self, stats: TurnStats, kv: (usize, usize), divergence: Option<Value>) {
        self.first_token_at.set(None);
        self.generating.set(false);
        self.prefill.set(None);
        self.kv.set(kv);
        self.divergence.set(divergence);
        self.stats.set(Some(stats));
    }
}

/// What the next turn is generated with. `saved` keeps these across reloads and a
/// conversation keeps its own.
#[derive(Clone, Copy)]
pub struct Settings {
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
    /// Why the logit-bias field cannot be read (nothing is sent until it can).
    pub bias_error: RwSignal<Option<String>>,
}

impl Settings {
    fn new() -> Self {
        Settings {
            system: RwSignal::new(String::new()),
            preset: RwSignal::new("chat".into()),
            sampler: RwSignal::new(SamplerConfig::preset("chat").expect("built-in preset")),
            max_tokens: RwSignal::new(slm_runtime::engine::REPLY_BUDGET),
            stop_strings: RwSignal::new(String::new()),
            loop_detection: RwSignal::new(true),
            clarify_first: RwSignal::new(true),
            context: RwSignal::new(DEFAULT_CONTEXT),
            overflow: RwSignal::new(Default::default()),
            tools: RwSignal::new(String::new()),
            bias_error: RwSignal::new(None),
        }
    }

    /// A named preset follows the loaded model: "model" its generation_config.json,
    /// the others its tuning of them (`ModelCard::preset_tuning`). The seed stays; a
    /// "custom" sampler (edited by hand) stays as it is.
    fn model_loaded(self, card: &ModelCard) {
        let empty = serde_json::Map::new();
        let gen = card.generation_config.as_object().unwrap_or(&empty);
        let name = self.preset.get_untracked();
        if let Some(mut cfg) = SamplerConfig::preset_for_model(&name, gen, &card.preset_tuning) {
            cfg.seed = self.sampler.get_untracked().seed;
            self.sampler.set(cfg);
        }
    }
}

/// What the page tells the person: a notice, an error, and the screen reader's
/// announcement of a finished reply.
#[derive(Clone, Copy)]
pub struct Notices {
    pub notice: RwSignal<Option<String>>,
    pub error: RwSignal<Option<ErrorView>>,
    /// One polite announcement per finished reply, for screen readers.
    pub announcement: RwSignal<String>,
}

impl Notices {
    fn new() -> Self {
        Notices {
            notice: RwSignal::new(None),
            error: RwSignal::new(None),
            announcement: RwSignal::new(String::new()),
        }
    }

    pub fn say(self, text: impl Into<String>) {
        self.notice.set(Some(text.into()));
    }

    pub fn fail(self, error: ErrorView) {
        self.error.set(Some(error));
    }
}

/// How the page is shown.
#[derive(Clone, Copy)]
pub struct ViewState {
    /// The diagnostics column is open. Closed, turns record no sampler stages, so
    /// decoding does no extra work.
    pub diagnostics_open: RwSignal<bool>,
    /// The token console row opened to its stages.
    pub opened_token: RwSignal<Option<usize>>,
    /// "system" (follow `prefers-color-scheme`), "light" or "dark".
    pub theme: RwSignal<String>,
}

impl ViewState {
    fn new() -> Self {
        ViewState {
            diagnostics_open: RwSignal::new(true),
            opened_token: RwSignal::new(None),
            theme: RwSignal::new("system".into()),
        }
    }
}

impl Default for State {
    fn default() -> Self {
        Self::new()
    }
}

impl State {
    pub fn new() -> State {
        State {
            worker: WorkerState::new(),
            models: Models::new(),
            chat: Chat::new(),
            turn: Turn::new(),
            settings: Settings::new(),
            notices: Notices::new(),
            view: ViewState::new(),
        }
    }

    /// A turn starts: the transcript as it was is kept (put back if the worker refuses
    /// the turn), and the last turn's views and messages go.
    pub fn start_turn(self, before: Vec<ChatMessage>) {
        self.chat.before_turn.set(Some(before));
        self.notices.error.set(None);
        self.notices.notice.set(None);
        self.turn.clear();
        self.view.opened_token.set(None);
        self.turn.generating.set(true);
    }

    /// The last turn's console, prompt and figures belong to the chat being left.
    pub fn leave_turn(self) {
        self.draw_tokens();
        self.turn.clear();
        self.turn.prompt.set(None);
        self.turn.divergence.set(None);
        self.chat.before_turn.set(None);
        self.view.opened_token.set(None);
        self.notices.notice.set(None);
    }

    /// The worker died with what it held: no model is loaded, nothing runs. The
    /// transcript and the stored models stay. Whether a model was loaded.
    pub fn worker_lost(&self) -> bool {
        self.draw_tokens();
        let had_model = self.models.card.get_untracked().is_some();
        if self.turn.generating.get_untracked() {
            self.chat.interrupt_reply();
        }
        self.turn.stopped();
        self.models.operation_ended();
        self.models.progress.set(None);
        self.models.none_loaded();
        self.worker.ready.set(false);
        had_model
    }

    /// A token event: held for the next draw, except a reply's first token, which is
    /// drawn at once (it is what a person waits for).
    fn queue_token(self, text: &str, row: Option<(TokenRow, usize)>) {
        let streamed = self.turn.streamed;
        streamed.update_value(|s| {
            s.text.push_str(text);
            match row {
                Some(r) => s.rows.push(r),
                None => s.ended = true,
            }
        });
        if self.turn.first_token_at.get_untracked().is_none() {
            self.draw_tokens();
        } else if !streamed.with_value(|s| s.due) {
            streamed.update_value(|s| s.due = true);
            set_timeout(
                move || self.draw_tokens(),
                std::time::Duration::from_millis(DRAW_EVERY_MS),
            );
        }
    }

    /// Draw the tokens held since the last draw: the reply's text and the console.
    pub fn draw_tokens(self) {
        let Some((text, rows, ended)) = self.turn.streamed.try_update_value(|s| {
            s.due = false;
            (
                std::mem::take(&mut s.text),
                std::mem::take(&mut s.rows),
                std::mem::take(&mut s.ended),
            )
        }) else {
            return;
        };
        if text.is_empty() && rows.is_empty() && !ended {
            return;
        }
        self.chat.append_text(&text);
        self.turn.on_tokens(rows);
    }

    /// Apply one worker event; `re`: the request it answers (`Reply::re`). Token
    /// events are drawn a few at a time (`DRAW_EVERY_MS`); any other event first draws
    /// what is held, so that events keep their order on the page.
    pub fn apply(self, re: Option<u64>, ev: Event) {
        if !matches!(ev, Event::Token { .. }) {
            self.draw_tokens();
        }
        match ev {
            Event::Ready => self.worker.on_ready(),
            Event::Threads {
                count,
                available,
                note,
            } => self.worker.on_threads(ThreadsView {
                count,
                available,
                note,
            }),
            Event::Cached {
                models,
                usage,
                quota,
            } => {
                self.models.cached.set(models);
                self.models.storage.set((usage, quota));
                super::conversations::reopen_last_model(self);
            }
            Event::Progress {
                id,
                stage,
                done,
                total,
                note,
            } => self.models.on_progress(id, stage, done, total, note),
            Event::Downloaded { id, .. } => {
                self.models.on_downloaded();
                self.notices.say(format!(
                    "{id} downloaded and verified; it is cached in this browser."
                ));
            }
            Event::Loaded { card } => {
                self.turn.fresh(card.plan.context as usize);
                // The open conversation goes on with this model: its session starts
                // from the conversation's messages.
                self.chat.transcript.with_untracked(|t| {
                    if !t.is_empty() {
                        open_in_session(t);
                    }
                });
                self.notices.say(format!(
                    "{} loaded in {:.1} s.",
                    card.name,
                    card.load_ms / 1e3
                ));
                self.settings.model_loaded(&card);
                super::conversations::model_loaded(&card);
                self.models.on_loaded(*card);
            }
            Event::Evidence { view } => {
                self.notices.say(view.summary.clone());
                self.models.card.update(|c| {
                    if let Some(c) = c {
                        c.evidence = Some(view);
                    }
                });
            }
            Event::Policy {
                clarify,
                summary,
                note,
                lead,
            } => self.chat.set_policy(PolicyView {
                clarify,
                summary,
                note,
                lead,
                tries: Vec::new(),
            }),
            Event::Retry { lead } => {
                let why = match lead.is_empty() {
                    true => "The reply restated your question instead of answering it: the model tries again, not starting as it did.",
                    false => "The question named no missing piece: the model tries again.",
                };
                self.chat.restart_reply(lead);
                // The console shows the attempt being generated.
                self.turn.tokens.set(Vec::new());
                self.notices.say(why.to_string());
            }
            Event::Tries { tries } => self.chat.set_tries(tries),
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
            } => self.turn.on_prompt(
                PromptView {
                    rendered,
                    sha256,
                    ids,
                    pieces,
                    reused,
                    template_added_bos,
                    unix_time,
                    fitted,
                },
                capacity,
            ),
            Event::Prefill { done, total } => self.turn.on_prefill(done, total),
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
                self.queue_token(
                    &text,
                    id.map(|id| {
                        let row = TokenRow {
                            index: 0,
                            id,
                            piece,
                            prob,
                            draw,
                            top,
                            position,
                            stages,
                            stop_check,
                            stage_pieces,
                        };
                        (row, kv_len)
                    }),
                );
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
                self.notices.announcement.set(format!(
                    "Reply complete: {generated} tokens, stopped by {}.",
                    stop_reason.as_str()
                ));
                // The turn's prompt and model, as the Prompt event and the card say.
                let (prompt_sha256, unix_time, fitted) = self.turn.prompt_record();
                let (model, model_sha256) = self.models.card.with_untracked(|c| match c {
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
                    trace: trace
                        .clone()
                        .and_then(|t| self.chat.traces.try_update_value(|k| k.keep(t))),
                };
                self.turn.last_trace.set(trace);
                self.chat
                    .finish_reply(content, tool_calls, stats.clone(), continued);
                if !tool_errors.is_empty() {
                    self.notices.say(tool_errors.join("; "));
                }
                self.turn.finish(stats, (kv_len, capacity), divergence);
                super::conversations::reply_done(self);
            }
            Event::Transcript { messages } => self.chat.record_given(&messages),
            Event::Unloaded { memory_bytes } => {
                self.models.none_loaded();
                self.turn.kv.set((0, 0));
                self.turn.prompt.set(None);
                self.notices.say(format!(
                    "Model unloaded: the memory it held is free for the next model (the worker's heap stays at {}, as wasm memory never shrinks). The transcript stays on this page.",
                    super::mb(memory_bytes)
                ));
            }
            Event::Context {
                kv_len,
                capacity,
                messages,
                divergence,
            } => {
                self.turn.kv.set((kv_len, capacity));
                self.turn.divergence.set(divergence);
                self.chat.record_given(&messages);
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
                if during == Operation::Chat {
                    if self.turn.generating.get_untracked() {
                        self.chat.undo_turn();
                    }
                    self.chat.before_turn.set(None);
                    self.turn.generating.set(false);
                }
                if during == Operation::Load {
                    // The worker frees the old model before loading: none is loaded now.
                    // The conversation stays.
                    self.models.none_loaded();
                    self.turn.kv.set((0, 0));
                }
                if during == Operation::Probe {
                    super::client::reject_probe(re, &message);
                }
                if matches!(during, Operation::Download | Operation::Load) {
                    self.models.operation_ended();
                }
                if kind == ErrorKind::Cancelled {
                    // Asked for, so said plainly rather than raised as an error.
                    self.models.progress.set(None);
                    self.notices.say(message);
                    return;
                }
                self.notices.fail(ErrorView {
                    during,
                    kind,
                    message,
                    chunk,
                });
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
