//! Messages between the page and the inference worker. Both sides are this crate, so
//! one set of types; they travel as JSON strings (`{"json": …}` plus, for a local
//! file, the `File` object itself, which postMessage clones without copying bytes).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use slm_runtime::model::memory::{MemoryNeeds, MemoryPlan, WASM32_LIMIT};
use slm_runtime::sampling::SamplerConfig;
pub use slm_runtime::stopping::StopReason;

/// One entry of `public/models.json`.
/// What kind of failure an `Event::Error` reports: the runtime's `SlmError` kinds, and
/// those of the browser side. On the wire as the snake_case name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    Io,
    Unsupported,
    Malformed,
    Checksum,
    Tokenizer,
    Template,
    Invalid,
    /// A connection failed or a server answered with an error (retried first).
    Network,
    /// IndexedDB or the storage quota.
    Storage,
    /// The file on the server changed under a download.
    Changed,
    /// Stopped by the person (a download or a load).
    Cancelled,
    /// The model cannot fit in the memory the browser gives.
    Memory,
    /// A browser API failed.
    Browser,
    /// The worker died.
    Crash,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Io => "io",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Malformed => "malformed",
            ErrorKind::Checksum => "checksum",
            ErrorKind::Tokenizer => "tokenizer",
            ErrorKind::Template => "template",
            ErrorKind::Invalid => "invalid",
            ErrorKind::Network => "network",
            ErrorKind::Storage => "storage",
            ErrorKind::Changed => "changed",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Memory => "memory",
            ErrorKind::Browser => "browser",
            ErrorKind::Crash => "crash",
        }
    }

    /// The kind of a runtime error.
    pub fn of(e: &slm_runtime::SlmError) -> ErrorKind {
        use slm_runtime::SlmError as E;
        match e {
            E::Io { .. } => ErrorKind::Io,
            E::Unsupported { .. } => ErrorKind::Unsupported,
            E::Malformed { .. } => ErrorKind::Malformed,
            E::Checksum { .. } => ErrorKind::Checksum,
            E::Tokenizer(_) => ErrorKind::Tokenizer,
            E::Template(_) => ErrorKind::Template,
            E::Invalid(_) => ErrorKind::Invalid,
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What was being done when an error came (`Event::Error::during`): one of the
/// worker's operations, or one of the page's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// Reading a command the page sent.
    Message,
    Download,
    Load,
    /// Listing or deleting stored models.
    Storage,
    Evidence,
    Chat,
    /// A probe or a bench (the test hooks' promises wait for these).
    Probe,
    Threads,
    /// The worker itself: it died, or could not be started.
    Worker,
    Startup,
    Catalog,
    Settings,
    Conversations,
    Import,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Message => "message",
            Operation::Download => "download",
            Operation::Load => "load",
            Operation::Storage => "storage",
            Operation::Evidence => "evidence",
            Operation::Chat => "chat",
            Operation::Probe => "probe",
            Operation::Threads => "threads",
            Operation::Worker => "worker",
            Operation::Startup => "startup",
            Operation::Catalog => "catalog",
            Operation::Settings => "settings",
            Operation::Conversations => "conversations",
            Operation::Import => "import",
        }
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who a chat message is from, as chat templates name the roles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// The stage a `Event::Progress` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Chunks arriving from the server, each verified before it is stored.
    Download,
    /// The whole-file hash (after a download) or the chunks of a load.
    Verify,
    /// Tensors assembled into the model.
    Load,
    /// The whole file verified: the page's last word on a finished download (the
    /// worker never sends it).
    Verified,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Download => "download",
            Stage::Verify => "verify",
            Stage::Load => "load",
            Stage::Verified => "verified",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CatalogEntry {
    pub id: String,
    pub name: String,
    pub url: String,
    /// Bytes of the .slm file.
    pub size: u64,
    /// SHA-256 of the whole file (what `slm verify` prints).
    pub sha256: String,
    pub quant: String,
    pub license: String,
    pub source: String,
    /// URL of the quality-gate evidence record (`slm gate`) for this file, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// What loading it takes (`slm --json inspect`'s `memory.needs`), so that the
    /// page can show it and refuse a model that cannot fit before downloading it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryNeeds>,
    /// This model's behaviour gate (`slm eval clarify` and `slm eval loops`, chat
    /// preset, docs/behaviour.md), shown on its card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behaviour: Option<BehaviourGate>,
}

/// The behaviour gate's rates for one model, as `slm eval` measured them (fractions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BehaviourGate {
    /// Clarify-first policy on: useful clarifying questions on underspecified prompts
    /// (goal ≥ 0.95).
    pub useful_clarification: f64,
    /// Policy on: clear prompts answered with a question only (goal ≤ 0.05).
    pub false_clarification: f64,
    /// Policy on: concrete answers invented where none is possible (goal 0).
    pub fabrication: f64,
    /// Chat preset: replies that loop (goal 0).
    pub loops: f64,
    /// Chat preset: replies that end by themselves (goal ≥ 0.95).
    pub natural_termination: f64,
    /// The useful-question rate read by hand on a sample of the same replies
    /// (eval/labels.jsonl), where one was labelled: the scorer reads words and can be
    /// lenient, so the goal must hold by hand too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub useful_by_hand: Option<HandSample>,
    /// The useful-question rate by the scorer on underspecified prompts by an author the
    /// rules were not written against and the clarify probe was not fitted on, run on
    /// the current policy before any change it led to
    /// (eval/probes/ID.unseen.replies.jsonl): how far the policy carries to new words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub useful_unseen: Option<HandSample>,
}

/// Replies read (by hand, or by the scorer on an unseen set): how many of `of` were
/// useful.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HandSample {
    pub useful: u32,
    pub of: u32,
}

impl BehaviourGate {
    /// The card's sentence: passes, or fails and which goals it misses.
    pub fn summary(&self) -> (bool, String) {
        let misses = self.misses();
        if misses.is_empty() {
            // The hand-read figure, where there is one, is the stricter reading.
            let hand = match self.useful_by_hand.filter(|h| h.of > 0) {
                Some(h) => format!(
                    "; {} of {} of its questions read by hand were useful",
                    h.useful, h.of
                ),
                None => String::new(),
            };
            (
                true,
                format!("Behaviour gate: passes (asks instead of inventing, does not loop{hand})."),
            )
        } else {
            (
                false,
                format!(
                    "Behaviour gate: fails. With Clarify first on, it {}.",
                    misses.join("; ")
                ),
            )
        }
    }

    /// Which goals it misses, in words; empty when it passes.
    pub fn misses(&self) -> Vec<String> {
        let pct = |x: f64| format!("{:.0}%", 100.0 * x);
        let mut v = Vec::new();
        let hand = self
            .useful_by_hand
            .filter(|h| h.of > 0)
            .map(|h| (h, h.useful as f64 / h.of as f64));
        match hand {
            Some((h, rate)) if rate < 0.95 => v.push(format!(
                "asks a useful question on {} of underspecified prompts by its scorer but {} ({} of {}) read by hand (goal 95%)",
                pct(self.useful_clarification),
                pct(rate),
                h.useful,
                h.of
            )),
            _ if self.useful_clarification < 0.95 => v.push(format!(
                "asks a useful question on {} of underspecified prompts (goal 95%)",
                pct(self.useful_clarification)
            )),
            _ => {}
        }
        if let Some(u) = self.useful_unseen.filter(|u| u.of > 0) {
            let rate = u.useful as f64 / u.of as f64;
            if rate < 0.95 {
                v.push(format!(
                    "asks a useful question on {} ({} of {}) of underspecified prompts by an author its rules and probe never saw (goal 95%)",
                    pct(rate),
                    u.useful,
                    u.of
                ));
            }
        }
        if self.false_clarification > 0.05 {
            v.push(format!(
                "asks needlessly on {} of clear prompts (goal at most 5%)",
                pct(self.false_clarification)
            ));
        }
        if self.fabrication > 0.0 {
            v.push(format!(
                "invents an answer on {} of prompts that have none (goal 0%)",
                pct(self.fabrication)
            ));
        }
        if self.loops > 0.0 {
            v.push(format!(
                "loops on {} of short tasks (goal 0%)",
                pct(self.loops)
            ));
        }
        if self.natural_termination < 0.95 {
            v.push(format!(
                "ends by itself on {} of short tasks (goal 95%)",
                pct(self.natural_termination)
            ));
        }
        v
    }
}

/// The most memory a model may plan for in this browser, and why: wasm32's 4 GiB,
/// and at most half the device's memory where the browser says how much it has
/// (`navigator.deviceMemory`, in GiB); the other half is the browser's and the OS's.
pub fn memory_limit(device_memory_gib: Option<f64>) -> (u64, String) {
    let half = |g: f64| g / 2.0 * (1u64 << 30) as f64;
    match device_memory_gib.filter(|g| g.is_finite() && *g > 0.0) {
        Some(g) if half(g) < WASM32_LIMIT as f64 => {
            (half(g) as u64, format!("half of this device's {g} GiB"))
        }
        _ => (WASM32_LIMIT, "the 4 GiB a wasm32 worker can address".into()),
    }
}

/// Why `needs` at `context` positions cannot be loaded here, or None.
pub fn memory_refusal(
    needs: &MemoryNeeds,
    context: usize,
    device_memory_gib: Option<f64>,
) -> Option<String> {
    let (limit, why) = memory_limit(device_memory_gib);
    needs.at(context as u64).refusal(limit, &why)
}

/// How the next reply is generated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatSettings {
    /// Empty: no system message (the template may add its default one).
    pub system: String,
    pub sampler: SamplerConfig,
    pub max_tokens: usize,
    pub stop_strings: Vec<String>,
    pub loop_detection: bool,
    /// Function schemas the template renders (a JSON list), or None: no tools. With
    /// tools, a reply's tool calls come back as data (`Event::Done::tool_calls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Value>,
    /// Context positions the session allocates; a change takes effect at the next turn
    /// (the KV cache is rebuilt and the transcript prefilled again).
    pub context: usize,
    /// Record every sampler stage and stop check of each token (the token console is
    /// open), and the turn's generation record (`Event::Done::trace`). Off, decoding
    /// does no extra work.
    #[serde(default)]
    pub trace: bool,
    /// Apply the clarify-first policy to the user's message (`slm_runtime::clarify`):
    /// when it is materially underspecified, a visible note joins it and the model
    /// asks for the missing piece (`Event::Policy` says what was decided).
    #[serde(default)]
    pub clarify_first: bool,
    /// What a turn does when its prompt does not fit the context.
    #[serde(default)]
    pub overflow: slm_runtime::session::Overflow,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// Cached models and storage use.
    List,
    /// Download (or resume) a catalog entry into IndexedDB, verifying every chunk.
    /// `context`: the context the download is planned for (refused if it cannot fit).
    Download {
        entry: CatalogEntry,
        context: usize,
    },
    /// Load a fully verified cached model, with a session of `context` positions.
    /// `first_turn`: the settings the next turn will most likely use (None when they
    /// cannot be sent yet); their system prompt and tools shape the lead the worker
    /// prefills while the person types.
    Load {
        id: String,
        context: usize,
        #[serde(default)]
        first_turn: Option<ChatSettings>,
    },
    /// Load the `File` sent alongside; `keep` also stores it in IndexedDB.
    LoadFile {
        name: String,
        keep: bool,
        context: usize,
        #[serde(default)]
        first_turn: Option<ChatSettings>,
    },
    Delete {
        id: String,
    },
    Send {
        text: String,
        settings: ChatSettings,
    },
    /// Answer the last reply's tool calls with a `tool` message, and generate the reply
    /// that follows it.
    ToolResult {
        content: String,
        settings: ChatSettings,
    },
    /// Drop the last reply and generate it again.
    Regenerate {
        settings: ChatSettings,
    },
    /// Continue the last reply (cut by its token limit, stopped or interrupted): the
    /// new text joins it.
    Continue {
        settings: ChatSettings,
    },
    /// Handled as soon as it arrives, even mid-generation.
    Stop,
    /// Stop the running download (handled at once): the chunks verified so far stay,
    /// so Resume continues from there; the model is not usable until complete.
    CancelDownload,
    /// Stop the running load (handled at once): no model is loaded afterwards.
    CancelLoad,
    /// Run the products on `count` threads (answered by `Event::Threads`). With a
    /// model loaded, its transcript is kept and prefilled again at the next turn.
    Threads {
        count: usize,
    },
    ResetContext,
    ClearTranscript,
    /// Make `messages` (model-facing, as `Event::Context` reported them) the session's
    /// transcript: another conversation was opened. The KV cache stays, so the next
    /// turn reuses whatever prefix still matches.
    OpenChat {
        messages: Vec<Value>,
    },
    /// Drop the model, its session and KV cache (answered by `Event::Unloaded`).
    Unload,
    /// Check a quality-gate evidence record (`slm gate` output) against the loaded
    /// model; the card then shows it, or why it was rejected.
    AttachEvidence {
        json: String,
        source: String,
    },
    /// Rendered prompt, ids, first-step logits and a greedy continuation of `messages`
    /// in a fresh context: what the e2e suite compares with the native CLI.
    Probe {
        messages: Value,
        max_tokens: usize,
        /// Also sample `max_tokens` with these settings (the CLI's effective sampler
        /// from `slm generate --json`), with the CLI's default loop detection.
        #[serde(default)]
        sampler: Option<slm_runtime::sampling::SamplerConfig>,
    },
    /// Abort the worker, as an allocation failure would (the e2e suite's check that
    /// the page replaces a dead worker).
    Crash,
    /// Prefill `prompt_tokens` and decode `gen_tokens` (EOS suppressed) in a fresh
    /// context, single thread: the browser benchmark.
    Bench {
        prompt_tokens: usize,
        gen_tokens: usize,
    },
}

/// A command as it travels: `req` is unique for the page's lifetime (across workers),
/// and every event the worker posts while carrying it out answers it (`Reply::re`).
/// On the wire the command's own fields sit beside `req` (not `id`: commands have
/// an `id` of their own, the model's).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Request {
    pub req: u64,
    #[serde(flatten)]
    pub command: Command,
}

/// An event as it travels. `re`: the id of the request it answers; None for what
/// answers no request (`Ready`, an unreadable command).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Reply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub re: Option<u64>,
    #[serde(flatten)]
    pub event: Event,
}

/// A candidate in the token console: id, piece, probability.
pub type Candidate = (u32, String, f32);

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The worker's wasm is running and its message handler installed.
    Ready,
    /// The threads products run on now, the most this page can have, and why not more
    /// (None when the limit is the browser's core count).
    Threads {
        count: usize,
        available: usize,
        note: Option<String>,
    },
    Cached {
        models: Vec<CachedModel>,
        usage: Option<f64>,
        quota: Option<f64>,
    },
    /// `stage`: download, verify or load.
    Progress {
        id: String,
        stage: Stage,
        done: u64,
        total: u64,
        note: Option<String>,
    },
    Downloaded {
        id: String,
        sha256: String,
    },
    Loaded {
        card: Box<ModelCard>,
    },
    /// Evidence checked against the loaded model (accepted or rejected).
    Evidence {
        view: EvidenceView,
    },
    /// The clarify-first decision on the message just sent (only with the policy on).
    /// `note`: the words appended to the user's message, which the model was given.
    Policy {
        clarify: bool,
        /// The decision in one line (`Decision::summary`).
        summary: String,
        note: Option<String>,
        /// The words the policy starts the reply with (`Decision::lead`); the model
        /// writes the rest.
        lead: Option<String>,
    },
    /// The clarifying reply streamed so far named no missing piece: it is set aside,
    /// and another attempt starts with `lead` (`Session::settle`). A Prompt event
    /// follows with that attempt's prompt.
    Retry {
        lead: String,
    },
    /// A clarifying reply's attempts, in order, once it is settled: the lead and text
    /// of each, whether it named a missing piece, and which one the transcript keeps.
    Tries {
        tries: Vec<slm_runtime::session::Attempt>,
    },
    /// A turn began: the exact prompt.
    Prompt {
        rendered: String,
        sha256: String,
        ids: Vec<u32>,
        pieces: Vec<String>,
        reused: usize,
        capacity: usize,
        /// The ids begin with the BOS, which the template wrote (a chat prompt is
        /// encoded without the post-processor).
        template_added_bos: bool,
        /// The Unix time the template was rendered with (`strftime_now`).
        unix_time: i64,
        /// What the prompt left out to fit the context (the context policy), if anything.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fitted: Option<slm_runtime::session::Fitted>,
    },
    /// Prompt tokens prefilled so far, of `total` (without a reused prefix): posted
    /// after every part (`engine::PREFILL_STEP` tokens), so the page shows progress
    /// and Stop takes effect within one part.
    Prefill {
        done: usize,
        total: usize,
    },
    Token {
        /// The token chosen; None for the end of a reply's text, flushed once no
        /// stop string can still match what was held back.
        id: Option<u32>,
        piece: String,
        /// Newly showable text (may be empty while a character or stop string is held back).
        text: String,
        prob: f32,
        draw: Option<f64>,
        top: Vec<Candidate>,
        kv_len: usize,
        /// Context position of the token.
        position: usize,
        /// With `ChatSettings::trace`: every sampler stage, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        stages: Vec<slm_runtime::sampling::Stage>,
        /// With `ChatSettings::trace`: the stop rules after this token.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_check: Option<slm_runtime::stopping::StopCheck>,
        /// The text of every id the stages list.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        stage_pieces: Vec<(u32, String)>,
    },
    Done {
        text: String,
        stop_reason: StopReason,
        stop_detail: Value,
        prompt_tokens: usize,
        reused_tokens: usize,
        prefilled_tokens: usize,
        generated: usize,
        prefill_tok_s: f64,
        decode_tok_s: f64,
        first_token_ms: f64,
        kv_len: usize,
        capacity: usize,
        divergence: Option<Value>,
        /// The worker's wasm linear memory: weights, KV cache, scratch, tokenizer.
        memory_bytes: f64,
        /// With tools: the reply's calls (also in the transcript as data), and why
        /// any block that looked like a call was kept as text.
        tool_calls: Vec<slm_runtime::tool_calls::ToolCall>,
        tool_errors: Vec<String>,
        /// The reply's text without its call blocks, as the transcript now holds it
        /// (a continued reply: all of it, the part before included).
        content: String,
        /// The turn continued the last reply (`Command::Continue`).
        #[serde(default)]
        continued: bool,
        /// With `ChatSettings::trace`: the turn's generation record, the schema of
        /// `slm generate --trace` (`slm_runtime::trace::record`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trace: Option<Value>,
    },
    /// The session's transcript after a turn, exactly as the model is given it (a
    /// clarify note included; a refused turn leaves it as it was).
    Transcript {
        messages: Vec<Value>,
    },
    /// No model is loaded any more. `memory_bytes`: the worker's wasm memory, which
    /// never shrinks; what the model held is free for the next one.
    Unloaded {
        memory_bytes: f64,
    },
    /// The session after a turn, a reset, a clear or an opened chat. `messages`: its
    /// transcript exactly as the model is given it (a clarify note included).
    Context {
        kv_len: usize,
        capacity: usize,
        messages: Vec<Value>,
        divergence: Option<Value>,
    },
    ProbeResult {
        rendered: String,
        ids: Vec<u32>,
        logits: Vec<f32>,
        greedy: Vec<u32>,
        /// With a probe's `sampler`: the sampled ids and text.
        sampled: Option<Vec<u32>>,
        sampled_text: Option<String>,
    },
    BenchResult {
        prompt_tokens: usize,
        gen_tokens: usize,
        prefill_tok_s: f64,
        decode_tok_s: f64,
        simd128: bool,
        /// The threads the products ran on.
        threads: usize,
    },
    Error {
        /// What was being done.
        during: Operation,
        kind: ErrorKind,
        message: String,
        /// The first bad chunk, for checksum failures.
        chunk: Option<u64>,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CachedModel {
    pub id: String,
    pub name: String,
    pub bytes: u64,
    pub chunks_done: u64,
    pub chunks_total: u64,
    /// Every chunk and the whole-file hash verified.
    pub complete: bool,
    pub sha256: String,
    pub entry: Option<CatalogEntry>,
    /// The catalog's gate evidence record, fetched when the download completed, so
    /// that the card can check it offline too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_json: Option<String>,
    /// The server's version of the file when the download began (its ETag, else its
    /// Last-Modified), sent as If-Range on every resume: a file that changed since is
    /// noticed and the download starts over instead of mixing two versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validator: Option<String>,
}

/// A quality-gate evidence record as the card shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvidenceView {
    /// The record's bindings (data and tokenizer SHA-256) match the loaded file.
    pub accepted: bool,
    /// "reference-verified" or "failed" (the record's verdict), or "rejected".
    pub verdict: String,
    pub summary: String,
    /// Where the record came from: the catalog URL or "attached file".
    pub source: String,
    /// (stage, passed, criterion, figures)
    pub stages: Vec<(String, bool, String, String)>,
    pub goldens_sha256: String,
    /// Why a record was rejected.
    pub error: Option<String>,
}

impl EvidenceView {
    /// A record that cannot speak for the loaded file (unreadable, unavailable, or
    /// bound to another file), with why.
    pub fn rejected(summary: String, source: String, error: String) -> EvidenceView {
        EvidenceView {
            accepted: false,
            verdict: "rejected".into(),
            summary,
            source,
            stages: vec![],
            goldens_sha256: String::new(),
            error: Some(error),
        }
    }

    /// The one rule for "reference-verified": a record that speaks for this file and
    /// whose verdict is a pass.
    pub fn verifies(&self) -> bool {
        self.accepted && self.verdict == "reference-verified"
    }
}

/// What the model card shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelCard {
    pub id: String,
    pub name: String,
    pub architecture: String,
    pub layers: usize,
    pub hidden: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub vocab: usize,
    pub context: usize,
    pub quant: String,
    pub source_kind: String,
    pub source_files: Vec<(String, String)>,
    pub converter: String,
    /// The manifest's value (the converter writes "unverified"); the card shows
    /// "reference-verified" only when `evidence` verifies.
    pub quality_gate: String,
    pub evidence: Option<EvidenceView>,
    pub file_sha256: String,
    pub data_sha256: String,
    pub chunks: usize,
    /// The plan at the context the model was loaded with (`plan.context`: the
    /// session's first capacity), from the manifest.
    pub plan: MemoryPlan,
    pub needs: MemoryNeeds,
    /// The worker's wasm memory once the model and its session were built: the load
    /// peak, since wasm memory never shrinks (0 until measured).
    pub memory_measured: u64,
    pub eos_ids: Vec<u32>,
    pub has_template: bool,
    pub generation_config: Value,
    /// The model's adjustments to the named presets (`Manifest::preset_tuning`).
    #[serde(default)]
    pub preset_tuning: slm_runtime::sampling::PresetTuning,
    pub load_ms: f64,
    pub execution: slm_runtime::facts::ExecutionFacts,
    pub tokenizer: slm_runtime::facts::TokenizerFacts,
}

#[cfg(test)]
mod tests {
    use super::{
        BehaviourGate, Command, ErrorKind, Event, HandSample, Operation, Reply, Request, Stage,
    };

    /// The id travels beside the command's own fields and tag, and comes back.
    #[test]
    fn requests_and_replies_carry_their_ids_beside_the_fields() {
        let r = Request {
            req: 7,
            command: Command::Delete { id: "m".into() },
        };
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, r#"{"req":7,"type":"delete","id":"m"}"#);
        let back: Request = serde_json::from_str(&json).unwrap();
        assert_eq!(back.req, 7);
        assert!(matches!(back.command, Command::Delete { id } if id == "m"));
        let back: Request =
            serde_json::from_str(r#"{"type":"bench","req":3,"prompt_tokens":8,"gen_tokens":4}"#)
                .unwrap();
        assert_eq!(back.req, 3);
        assert!(matches!(
            back.command,
            Command::Bench {
                prompt_tokens: 8,
                gen_tokens: 4
            }
        ));
        let reply = Reply {
            re: Some(3),
            event: Event::Progress {
                id: "m".into(),
                stage: Stage::Load,
                done: 1,
                total: 2,
                note: None,
            },
        };
        let v: serde_json::Value = serde_json::to_value(&reply).unwrap();
        assert_eq!(v["re"], 3);
        assert_eq!(v["type"], "progress");
        let back: Reply = serde_json::from_value(v).unwrap();
        assert_eq!(back.re, Some(3));
        let ready: Reply = serde_json::from_str(r#"{"type":"ready"}"#).unwrap();
        assert_eq!(ready.re, None);
        assert!(matches!(ready.event, Event::Ready));
    }

    /// An error names its operation as a word on the wire, and an unknown one is
    /// refused; a token event without a token carries `null`, not a sentinel id.
    #[test]
    fn operations_and_tokenless_events_are_typed_on_the_wire() {
        let e = Event::Error {
            during: Operation::Chat,
            kind: ErrorKind::Storage,
            message: "m".into(),
            chunk: None,
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["during"], "chat");
        assert_eq!(v["kind"], "storage");
        let mut bad = v.clone();
        bad["during"] = "somewhere".into();
        assert!(serde_json::from_value::<Event>(bad).is_err());
        for op in [
            Operation::Download,
            Operation::Load,
            Operation::Probe,
            Operation::Conversations,
        ] {
            let v = serde_json::to_value(op).unwrap();
            assert_eq!(v, op.as_str());
            assert_eq!(serde_json::from_value::<Operation>(v).unwrap(), op);
        }
        let flush = serde_json::json!({"type": "token", "id": null, "piece": "", "text": "!",
            "prob": 0.0, "draw": null, "top": [], "kv_len": 3, "position": 2});
        let ev: Event = serde_json::from_value(flush).unwrap();
        assert!(matches!(ev, Event::Token { id: None, ref text, .. } if text == "!"));
        assert_eq!(
            serde_json::to_value(&ev).unwrap()["id"],
            serde_json::Value::Null
        );
    }

    #[test]
    fn a_behaviour_gate_names_each_goal_it_misses() {
        let pass = BehaviourGate {
            useful_clarification: 0.96,
            false_clarification: 0.05,
            fabrication: 0.0,
            loops: 0.0,
            natural_termination: 0.95,
            useful_by_hand: None,
            useful_unseen: None,
        };
        assert!(pass.summary().0);
        // The committed sets pass; prompts by a new author do not.
        let unseen = BehaviourGate {
            useful_unseen: Some(HandSample { useful: 58, of: 88 }),
            ..pass.clone()
        };
        assert_eq!(
            unseen.summary(),
            (
                false,
                "Behaviour gate: fails. With Clarify first on, it asks a useful question on 66% (58 of 88) of underspecified prompts by an author its rules and probe never saw (goal 95%).".to_string()
            )
        );
        // The scorer's figure passes; the hand-read sample does not.
        let by_hand = BehaviourGate {
            useful_clarification: 0.972,
            useful_by_hand: Some(HandSample { useful: 72, of: 78 }),
            ..pass.clone()
        };
        let (ok, text) = by_hand.summary();
        assert!(!ok);
        assert!(
            text.contains("asks a useful question on 97% of underspecified prompts by its scorer but 92% (72 of 78) read by hand (goal 95%)"),
            "{text}"
        );
        assert!(pass.misses().is_empty());
        let by_hand_too = BehaviourGate {
            useful_by_hand: Some(HandSample {
                useful: 188,
                of: 196,
            }),
            ..pass.clone()
        };
        assert_eq!(
            by_hand_too.summary(),
            (
                true,
                "Behaviour gate: passes (asks instead of inventing, does not loop; 188 of 196 of its questions read by hand were useful).".to_string()
            )
        );
        let fail = BehaviourGate {
            useful_clarification: 0.155,
            fabrication: 0.457,
            natural_termination: 0.9,
            ..pass
        };
        let (ok, text) = fail.summary();
        assert!(!ok);
        assert_eq!(fail.misses().len(), 3);
        assert!(
            text.contains("asks a useful question on 16% of underspecified prompts (goal 95%)"),
            "{text}"
        );
        assert!(
            text.contains("invents an answer on 46% of prompts that have none (goal 0%)"),
            "{text}"
        );
        assert!(
            text.contains("ends by itself on 90% of short tasks (goal 95%)"),
            "{text}"
        );
    }
}
