//! The inference worker. Everything heavy happens here, off the page's thread:
//! downloads and their verification, IndexedDB, model loading and generation.
//!
//! Commands arrive as messages and are handled one at a time by a single async task
//! (`actor`), in order. `Stop` is the exception: the message handler sets the abort
//! flag at once, and generation yields to the event loop after every token, so the
//! flag is seen within one token.

pub mod download;
pub mod idb;
pub mod load;
pub mod pool;
pub mod source;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::channel::mpsc::{unbounded, UnboundedReceiver};
use futures::StreamExt;
use js_sys::Reflect;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use slm_runtime::engine::{EndAt, Engine, GenerateOptions};
use slm_runtime::format::layout::hex;
use slm_runtime::parallel::Threads;
use slm_runtime::sampling::StepTrace;
use slm_runtime::session::{Session, Settled, Turn};
use slm_runtime::stopping::LoopConfig;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{spawn_local, JsFuture};

use crate::protocol::{ChatSettings, Command, ErrorKind, Event, Operation, Reply, Request};
use idb::Store;
use load::{Loaded, Origin};
use source::Failure;

/// Candidates shown per token in the console.
const TOP_SHOWN: usize = 8;

type Msg = (Command, Option<web_sys::File>);
/// A command as the message handler queues it: its request id, the command, a file.
type Incoming = (u64, Command, Option<web_sys::File>);

fn scope() -> web_sys::DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

/// Post `ev` as the answer to the command being carried out (`ANSWERING`). The actor
/// takes one command at a time and sets it as it does, so this holds across its
/// awaits; a task spawned for a command (a download) posts with `post_reply` and the
/// id it was started for.
fn post(ev: Event) {
    post_reply(ANSWERING.get(), ev)
}

fn post_reply(re: Option<u64>, event: Event) {
    let s = serde_json::to_string(&Reply { re, event }).expect("events serialize");
    let _ = scope().post_message(&JsValue::from_str(&s));
}

fn failure(during: Operation, f: Failure) -> Event {
    Event::Error {
        during,
        kind: f.kind,
        message: f.message,
        chunk: f.chunk,
    }
}

fn post_failure(during: Operation, f: Failure) {
    post(failure(during, f));
}

/// The next command from the page; from here on every event answers it.
async fn next_msg(rx: &mut UnboundedReceiver<Incoming>) -> Option<Msg> {
    let (req, cmd, file) = rx.next().await?;
    ANSWERING.set(Some(req));
    Some((cmd, file))
}

fn perf_now() -> f64 {
    js_sys::global()
        .unchecked_into::<web_sys::WorkerGlobalScope>()
        .performance()
        .map(|p| p.now())
        .unwrap_or(0.0)
}

fn now_unix() -> i64 {
    (js_sys::Date::now() / 1000.0) as i64
}

/// The worker's wasm linear memory in bytes: its high-water mark, since wasm memory
/// never shrinks.
fn wasm_memory() -> u64 {
    wasm_bindgen::memory()
        .unchecked_into::<js_sys::WebAssembly::Memory>()
        .buffer()
        .unchecked_into::<js_sys::ArrayBuffer>()
        .byte_length() as u64
}

/// Refuse `what` (the model or context named in the message) when `needs` at
/// `context` positions cannot fit in this browser; `then` says what happens instead.
pub fn check_memory(
    needs: &slm_runtime::model::memory::MemoryNeeds,
    context: usize,
    what: &str,
    then: &str,
) -> Result<(), Failure> {
    match crate::protocol::memory_refusal(needs, context, device_memory()) {
        None => Ok(()),
        Some(why) => Err(Failure {
            kind: ErrorKind::Memory,
            message: format!("{what} {why}: {then}"),
            chunk: None,
        }),
    }
}

/// `navigator.deviceMemory` (GiB) where the browser exposes it.
pub fn device_memory() -> Option<f64> {
    Reflect::get(&scope().navigator(), &"deviceMemory".into())
        .ok()
        .and_then(|v| v.as_f64())
}

thread_local! {
    /// Set by `Command::CancelDownload` / `CancelLoad` the moment they arrive; the
    /// running download or load sees it between chunks.
    static CANCEL_DOWNLOAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static CANCEL_LOAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The id of the download running in the background, if any.
    static DOWNLOADING: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
    /// The request id (`Request::req`) of the command the actor is carrying out.
    static ANSWERING: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Whether the person cancelled the running download (`true` once per cancel).
pub fn download_cancelled() -> bool {
    CANCEL_DOWNLOAD.with(|c| c.get())
}

/// Whether the person cancelled the running load.
pub fn load_cancelled() -> bool {
    CANCEL_LOAD.with(|c| c.get())
}

thread_local! {
    static YIELD: web_sys::MessageChannel =
        web_sys::MessageChannel::new().expect("MessageChannel exists in workers");
}

/// Let the event loop run (and deliver a Stop) between tokens. A message to ourselves
/// rather than `setTimeout(0)`, which browsers clamp to 4 ms when nested.
async fn yield_now() {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        YIELD.with(|c| {
            c.port1().set_onmessage(Some(&resolve));
            let _ = c.port2().post_message(&JsValue::NULL);
        });
    });
    let _ = JsFuture::from(p).await;
}

/// Entry point of the worker binary.
pub fn start() {
    console_error_panic_hook::set_once();
    slm_runtime::engine::set_clock(perf_now);
    let (tx, rx) = unbounded::<Incoming>();
    let abort = Arc::new(AtomicBool::new(false));
    let flag = abort.clone();
    let on_message =
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            let data = e.data();
            let json = Reflect::get(&data, &"json".into())
                .ok()
                .and_then(|v| v.as_string())
                .unwrap_or_default();
            let file = Reflect::get(&data, &"file".into())
                .ok()
                .and_then(|v| v.dyn_into::<web_sys::File>().ok());
            // Stop and the cancels act at once (the command they end answers with
            // its own events); the rest queue for the actor.
            match serde_json::from_str::<Request>(&json) {
                Ok(Request {
                    command: Command::Stop,
                    ..
                }) => flag.store(true, Ordering::Relaxed),
                Ok(Request {
                    command: Command::CancelDownload,
                    ..
                }) => CANCEL_DOWNLOAD.with(|c| c.set(true)),
                Ok(Request {
                    command: Command::CancelLoad,
                    ..
                }) => CANCEL_LOAD.with(|c| c.set(true)),
                // A trap, as `handle_alloc_error` ends a wasm worker.
                Ok(Request {
                    command: Command::Crash,
                    ..
                }) => std::process::abort(),
                Ok(Request { req, command }) => {
                    let _ = tx.unbounded_send((req, command, file));
                }
                Err(err) => {
                    // Answer the request if its id can be read at all.
                    let re = serde_json::from_str::<Value>(&json)
                        .ok()
                        .and_then(|v| v.get("req").and_then(Value::as_u64));
                    post_reply(
                        re,
                        Event::Error {
                            during: Operation::Message,
                            kind: ErrorKind::Invalid,
                            message: format!("unreadable command: {err}"),
                            chunk: None,
                        },
                    )
                }
            }
        });
    scope().set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    spawn_local(actor(rx, abort));
    // The page queues its commands until this arrives: messages sent before the
    // handler above existed would have been lost.
    post(Event::Ready);
}

async fn actor(mut rx: UnboundedReceiver<Incoming>, abort: Arc<AtomicBool>) {
    let store = match Store::open().await {
        Ok(s) => Some(s),
        Err(e) => {
            post_failure(
                Operation::Storage,
                Failure::from(format!("IndexedDB is unavailable: {e}")),
            );
            None
        }
    };
    let mut loaded: Option<Loaded> = None;
    let mut next: Option<Msg> = None;
    // The threads, held here while no model is loaded and by the model while one is.
    let mut threads = Threads::one();
    set_threads(&mut threads, pool::default_count()).await;
    loop {
        let msg = match next.take() {
            Some(m) => m,
            None => match next_msg(&mut rx).await {
                Some(m) => m,
                None => return,
            },
        };
        // A loaded model gets its session at once, so that the card reports the
        // memory of both; its chat loop runs until a command replaces the model.
        let (origin, context, first_turn) = match msg {
            (
                Command::Load {
                    id,
                    context,
                    first_turn,
                },
                _,
            ) => (Origin::Stored(id), context, first_turn),
            (
                Command::LoadFile {
                    keep,
                    context,
                    first_turn,
                    ..
                },
                Some(file),
            ) => (Origin::File { file, keep }, context, first_turn),
            (Command::AttachEvidence { .. }, _) => {
                post_failure(
                    Operation::Evidence,
                    Failure::from("no model is loaded".to_string()),
                );
                continue;
            }
            (Command::Threads { count }, _) => {
                set_threads(&mut threads, count).await;
                continue;
            }
            (Command::Unload, _) => {
                // The model, its session and cache go; the thread pool stays.
                if let Some(mut old) = loaded.take() {
                    threads = std::mem::take(&mut old.engine.model.threads);
                }
                post(Event::Unloaded {
                    memory_bytes: wasm_memory() as f64,
                });
                continue;
            }
            // The page opens a conversation before any model is loaded too; the
            // transcript reaches the session when one is (`Event::Loaded`).
            (Command::OpenChat { .. }, _) => continue,
            (cmd, _) if is_chat(&cmd) => {
                // The page's probe/bench promises wait for a "probe" answer.
                let during = match cmd {
                    Command::Probe { .. } | Command::Bench { .. } => Operation::Probe,
                    _ => Operation::Chat,
                };
                post_failure(during, Failure::from("no model is loaded".to_string()));
                continue;
            }
            (cmd, _) => {
                storage(store.as_ref(), cmd).await;
                continue;
            }
        };
        let kept = matches!(origin, Origin::File { keep: true, .. });
        // Free the old model before building the new one; its threads stay.
        if let Some(mut old) = loaded.take() {
            threads = std::mem::take(&mut old.engine.model.threads);
        }
        loaded = load_model(store.as_ref(), origin, context).await;
        if kept {
            list(store.as_ref()).await;
        }
        if let Some(l) = &mut loaded {
            l.engine.model.threads = std::mem::take(&mut threads);
            next = chat(l, context, first_turn, &mut rx, store.as_ref(), &abort).await;
        }
    }
}

fn is_chat(c: &Command) -> bool {
    matches!(
        c,
        Command::Send { .. }
            | Command::ToolResult { .. }
            | Command::Regenerate { .. }
            | Command::Continue { .. }
            | Command::ResetContext
            | Command::ClearTranscript
            | Command::OpenChat { .. }
            | Command::Probe { .. }
            | Command::Bench { .. }
    )
}

/// Load a model (its card is posted by `chat`, once the session exists).
async fn load_model(store: Option<&Store>, origin: Origin, context: usize) -> Option<Loaded> {
    let Some(store) = store else {
        post_failure(
            Operation::Load,
            Failure::from("IndexedDB is unavailable".to_string()),
        );
        return None;
    };
    CANCEL_LOAD.with(|c| c.set(false));
    match load::load(store, origin, &post, perf_now, context).await {
        Ok(mut l) => {
            // The catalog's evidence comes with the card; a missing or unreadable
            // record leaves the card unverified and says why.
            if let Some(url) = l.evidence_url.clone() {
                let text = match l.evidence_json.take() {
                    Some(t) => Ok(t),
                    None => download::fetch_text(&url).await,
                };
                let view = match text {
                    Ok(text) => load::evidence_view(&l.engine, &text, &url),
                    Err(f) => crate::protocol::EvidenceView::rejected(
                        format!("Evidence unavailable: {}", f.message),
                        url,
                        f.message,
                    ),
                };
                l.card.evidence = Some(view);
            }
            Some(l)
        }
        Err(f) => {
            post_failure(Operation::Load, f);
            None
        }
    }
}

async fn list(store: Option<&Store>) {
    list_to(store, &post).await
}

/// `list`, posting through `post`.
async fn list_to(store: Option<&Store>, post: &dyn Fn(Event)) {
    let Some(store) = store else { return };
    match store.list().await {
        Ok(models) => {
            let (usage, quota) = idb::estimate().await;
            post(Event::Cached {
                models,
                usage,
                quota,
            });
        }
        Err(e) => post(failure(Operation::Storage, Failure::from(e))),
    }
}

/// Commands about the store (valid with or without a model loaded).
async fn storage(store: Option<&Store>, cmd: Command) {
    let Some(s) = store else {
        post_failure(
            Operation::Storage,
            Failure::from("IndexedDB is unavailable".to_string()),
        );
        return;
    };
    match cmd {
        Command::List => {}
        Command::Download { entry, context } => {
            // In the background: chatting with a loaded model goes on meanwhile.
            if let Some(running) = DOWNLOADING.with_borrow(|d| d.clone()) {
                post_failure(
                    Operation::Download,
                    Failure::from(format!(
                        "{running} is downloading: wait for it or cancel it first"
                    )),
                );
                return;
            }
            DOWNLOADING.set(Some(entry.name.clone()));
            CANCEL_DOWNLOAD.with(|c| c.set(false));
            let s = s.clone();
            // Its events answer the Download request, whatever the actor takes up
            // meanwhile.
            let re = ANSWERING.get();
            spawn_local(async move {
                let post = |ev| post_reply(re, ev);
                match download::download(&s, &entry, context, &post).await {
                    Ok(sha256) => post(Event::Downloaded {
                        id: entry.id.clone(),
                        sha256,
                    }),
                    Err(f) => post(failure(Operation::Download, f)),
                }
                DOWNLOADING.set(None);
                list_to(Some(&s), &post).await;
            });
            return;
        }
        Command::Delete { id } => {
            if let Err(e) = s.delete(&id).await {
                post_failure(Operation::Storage, Failure::from(e));
            }
        }
        Command::LoadFile { .. } => post_failure(
            Operation::Load,
            Failure::from("no file came with the message".to_string()),
        ),
        _ => return,
    }
    list(store).await;
}

/// Serve chat commands with one session on `l` until a command that replaces the
/// model arrives (returned) or the page goes away (None). Posts the model's card
/// first, with the memory measured once the session exists, then prefills the lead
/// of a first turn made with `first_turn`'s settings.
async fn chat(
    l: &mut Loaded,
    context: usize,
    first_turn: Option<ChatSettings>,
    rx: &mut UnboundedReceiver<Incoming>,
    store: Option<&Store>,
    abort: &Arc<AtomicBool>,
) -> Option<Msg> {
    let mut session = Session::new(&l.engine, context);
    let mut card = l.card.clone();
    card.memory_measured = wasm_memory();
    post(Event::Loaded {
        card: Box::new(card),
    });
    if let Some(st) = &first_turn {
        apply(&mut session, st);
    }
    prefill_lead(&mut session);
    loop {
        let msg = next_msg(rx).await?;
        if let Command::Threads { count } = msg.0 {
            if count == l.engine.model.threads.count() {
                post_threads(&l.engine.model.threads);
                continue;
            }
            // The session borrows the model: set it aside, keeping its transcript.
            let capacity = session.capacity();
            let kept = session.into_transcript();
            set_threads(&mut l.engine.model.threads, count).await;
            session = Session::resume(&l.engine, capacity, kept);
            prefill_lead(&mut session);
            continue;
        }
        let engine = &l.engine;
        let settings = match &msg.0 {
            Command::Send { settings, .. }
            | Command::Regenerate { settings }
            | Command::Continue { settings }
            | Command::ToolResult { settings, .. } => Some(settings),
            _ => None,
        };
        if let Some(st) =
            settings.filter(|st| st.context.clamp(1, engine.context_len()) != session.capacity())
        {
            // A new context size: a new KV cache (the old one freed first), the
            // transcript kept and prefilled again at the next turn.
            let what = format!("a context of {} positions", st.context);
            if let Err(f) =
                check_memory(&l.card.needs, st.context, &what, "the context is unchanged")
            {
                post_failure(Operation::Chat, f);
                continue;
            }
            let kept = session.into_transcript();
            session = Session::resume(engine, st.context, kept);
            post_context(&session);
        }
        match msg.0 {
            Command::Send { text, settings } => {
                apply(&mut session, &settings);
                if let Some(d) = session.push_user(&text, now_unix()) {
                    post(Event::Policy {
                        clarify: d.clarify,
                        summary: d.summary(),
                        note: d.note,
                        lead: d.lead,
                    });
                }
                if !turn(engine, &mut session, &settings, abort, false).await {
                    session.messages.pop();
                }
                post_transcript(&session);
            }
            Command::ToolResult { content, settings } => {
                if let Err(e) = session.add_tool_result(&content) {
                    post_failure(Operation::Chat, e.into());
                    continue;
                }
                apply(&mut session, &settings);
                if !turn(engine, &mut session, &settings, abort, false).await {
                    session.messages.pop();
                }
                post_transcript(&session);
            }
            Command::Regenerate { settings } => {
                let is_reply =
                    |m: Option<&Value>| m.and_then(|m| m["role"].as_str()) == Some("assistant");
                let dropped = if is_reply(session.messages.last()) {
                    session.messages.pop()
                } else {
                    None
                };
                apply(&mut session, &settings);
                if !turn(engine, &mut session, &settings, abort, false).await {
                    session.messages.extend(dropped);
                }
                post_transcript(&session);
            }
            Command::Continue { settings } => {
                apply(&mut session, &settings);
                turn(engine, &mut session, &settings, abort, true).await;
                post_transcript(&session);
            }
            Command::ResetContext => {
                session.reset_context();
                post_context(&session);
            }
            Command::AttachEvidence { json, source } => post(Event::Evidence {
                view: load::evidence_view(engine, &json, &source),
            }),
            Command::ClearTranscript => {
                session.clear_transcript();
                post_context(&session);
            }
            Command::OpenChat { messages } => {
                session.messages = messages;
                post_context(&session);
            }
            Command::Probe {
                messages,
                max_tokens,
                sampler,
            } => {
                if let Err(e) = probe(engine, &messages, max_tokens, sampler) {
                    post_failure(Operation::Probe, e.into());
                }
            }
            Command::Bench {
                prompt_tokens,
                gen_tokens,
            } => {
                if let Err(e) = bench(engine, prompt_tokens, gen_tokens) {
                    post_failure(Operation::Probe, e.into());
                }
            }
            Command::Load { .. } | Command::LoadFile { .. } | Command::Unload => return Some(msg),
            other => storage(store, other).await,
        }
    }
}

/// While the person reads the card and types, prefill the lead of the first turn's
/// prompt (`Session::prefill_lead`: the system prompt and a user message's opening),
/// then post the context, which now holds it. A failure is not reported here: the
/// turn prefills the lead again and reports its own errors.
fn prefill_lead(session: &mut Session) {
    let _ = session.prefill_lead(now_unix());
    post_context(session);
}

/// Replace `current` by a pool of `count` threads, and report the threads in use; a
/// pool that cannot start is reported, and `current` kept.
async fn set_threads(current: &mut Threads, count: usize) {
    if count != current.count() {
        match pool::start(count).await {
            Ok(t) => *current = t,
            Err(f) => post_failure(Operation::Threads, f),
        }
    }
    post_threads(current);
}

fn post_threads(current: &Threads) {
    post(Event::Threads {
        count: current.count(),
        available: pool::available(),
        note: pool::limit_note(),
    });
}

/// What a turn's settings say of the transcript: its system prompt and its tools.
fn apply(s: &mut Session, settings: &ChatSettings) {
    set_system(s, &settings.system);
    s.tools = settings.tools.clone();
    s.clarify_first = settings.clarify_first;
    s.overflow = settings.overflow;
}

/// The editable system prompt is the transcript's first message (when non-empty).
fn set_system(s: &mut Session, system: &str) {
    let has = s.messages.first().and_then(|m| m["role"].as_str()) == Some("system");
    match (has, system.is_empty()) {
        (true, true) => {
            s.messages.remove(0);
        }
        (true, false) => s.messages[0]["content"] = Value::from(system),
        (false, false) => s
            .messages
            .insert(0, json!({"role": "system", "content": system})),
        (false, true) => {}
    }
}

/// The transcript after a turn (the turn's Done already said how the context stands).
fn post_transcript(s: &Session) {
    post(Event::Transcript {
        messages: s.messages.clone(),
    });
}

fn post_context(s: &Session) {
    post(Event::Context {
        kv_len: s.kv_len(),
        capacity: s.capacity(),
        messages: s.messages.clone(),
        divergence: s
            .divergence(now_unix())
            .ok()
            .flatten()
            .and_then(|d| serde_json::to_value(d).ok()),
    });
}

/// Generate the reply to the transcript (which ends with the user's message), or
/// (`continues`) more of its last reply, streaming tokens. False if it could not start
/// (the error has been posted).
async fn turn(
    engine: &Engine,
    session: &mut Session<'_>,
    st: &ChatSettings,
    abort: &Arc<AtomicBool>,
    continues: bool,
) -> bool {
    let t0 = perf_now();
    abort.store(false, Ordering::Relaxed);
    let opts = GenerateOptions {
        sampler: st.sampler.clone(),
        max_tokens: st.max_tokens,
        stop_strings: st.stop_strings.clone(),
        stop_token_ids: vec![],
        loop_detection: st.loop_detection.then(LoopConfig::default),
        trace: st.trace,
        candidates: true,
        abort: Some(abort.clone()),
        // The session sets it for a reply that continues the policy's lead.
        end_at: EndAt::Never,
        barred_start: Vec::new(),
    };
    let now = now_unix();
    let begun = if continues {
        session.begin_continue(&opts, now)
    } else {
        session.begin_reply(&opts, now)
    };
    let mut p = match begun {
        Ok(p) => p,
        Err(e) => {
            post_failure(Operation::Chat, e.into());
            return false;
        }
    };
    let mut first_token_ms = None;
    // Each attempt at the reply: a clarifying reply that names no missing piece is set
    // aside and tried again with another lead (`Session::settle`); the page clears it
    // (`Event::Retry`) and shows the next attempt's prompt.
    let mut prompts = Vec::new();
    let t = loop {
        let rendered = p.prompt_text().to_string();
        let ids = p.prompt_ids().to_vec();
        let prompt = Event::Prompt {
            sha256: hex(&Sha256::digest(rendered.as_bytes())),
            template_added_bos: slm_runtime::facts::template_added_bos(&engine.text, &ids),
            rendered: rendered.clone(),
            pieces: ids
                .iter()
                .map(|&i| engine.text.tokenizer.piece(i).unwrap_or_default())
                .collect(),
            reused: session.kv_len(),
            capacity: session.capacity(),
            ids: ids.clone(),
            unix_time: now,
            fitted: p.fitted().cloned(),
        };
        post(prompt.clone());
        prompts.push((rendered, ids, prompt));
        // The policy's lead starts the reply: posted as text with no token, as the page
        // shows a flush.
        if let Some(lead) = p.lead() {
            post(token_event(engine, lead, &StepTrace::default()));
        }
        // A token is posted as soon as it is chosen, before its own forward pass (which
        // the same step then runs): the page shows it one pass sooner, and the first
        // token's time is when it was known (`token_event` says which KV length it
        // reports; the Done event carries the final one).
        let mut on_text = |text: &str, step: &StepTrace| {
            let ev = token_event(engine, text, step);
            if matches!(ev, Event::Token { id: Some(_), .. }) {
                first_token_ms.get_or_insert_with(|| perf_now() - t0);
            }
            post(ev);
        };
        loop {
            let before = p.prefill_progress().0;
            let done = session.step(&mut p, &mut on_text);
            // Progress moves only in prefill steps.
            let (now, total) = p.prefill_progress();
            if now > before {
                post(Event::Prefill { done: now, total });
            }
            if done {
                break;
            }
            yield_now().await;
        }
        let t: Turn = session.finish(p, &mut on_text);
        match session.settle(t, &opts, now) {
            Ok(Settled::Again(next)) => {
                post(Event::Retry {
                    lead: next.lead().unwrap_or_default().to_string(),
                });
                p = *next;
            }
            Ok(Settled::Done(t)) => break *t,
            Err(e) => {
                post_failure(Operation::Chat, e.into());
                return false;
            }
        }
    };
    // The prompt of the reply the transcript keeps: an earlier attempt's when no
    // attempt named a missing piece. The page shows it again, and the record is its.
    let kept = t
        .tries
        .iter()
        .position(|a| a.kept)
        .unwrap_or(prompts.len() - 1);
    let (rendered, ids, prompt) = prompts.swap_remove(kept.min(prompts.len() - 1));
    // A new reply to a user message replaces that message's attempts, even with none
    // (a regenerated reply that restated nothing): the page shows no stale ones, and
    // the replay bundle takes no stale bar (`barred_start`).
    let n = session.messages.len();
    let to_user = !continues && n >= 2 && session.messages[n - 2]["role"] == "user";
    if !t.tries.is_empty() || to_user {
        if kept + 1 < t.tries.len() {
            post(prompt);
        }
        post(Event::Tries {
            tries: t.tries.clone(),
        });
    }
    let g = &t.generation;
    let reply = t
        .reply
        .clone()
        .unwrap_or_else(|| slm_runtime::tool_calls::ParsedReply {
            content: g.text.clone(),
            ..Default::default()
        });
    // The reply as the transcript holds it (all of a continued one, or of one the
    // policy's lead started).
    let content = match session.messages.last() {
        Some(m) if continues || t.lead.is_some() => {
            m["content"].as_str().unwrap_or_default().to_string()
        }
        _ => reply.content,
    };
    post(Event::Done {
        content,
        continued: continues,
        tool_calls: reply.calls,
        tool_errors: reply.errors,
        text: g.text.clone(),
        stop_reason: g.stop_reason,
        stop_detail: g.stop_detail.clone(),
        prompt_tokens: g.prompt_tokens,
        reused_tokens: g.reused_tokens,
        prefilled_tokens: g.prefilled_tokens,
        generated: g.ids.len(),
        prefill_tok_s: g.timings.prefill_tok_s,
        decode_tok_s: g.timings.decode_tok_s,
        first_token_ms: first_token_ms.unwrap_or(0.0),
        kv_len: session.kv_len(),
        capacity: session.capacity(),
        divergence: t.divergence.and_then(|d| serde_json::to_value(d).ok()),
        memory_bytes: wasm_memory() as f64,
        trace: st
            .trace
            .then(|| slm_runtime::trace::record(engine, &rendered, &ids, &st.sampler, g)),
    });
    true
}

/// A step's record as the console shows it; a flush (no step) carries only text.
fn token_event(engine: &Engine, text: &str, step: &StepTrace) -> Event {
    let tok = &engine.text.tokenizer;
    // The token as text ("Ġtime" shows as " time"); a lone byte of a multi-byte
    // character shows as U+FFFD, the raw piece otherwise.
    let piece = |id: u32| {
        tok.decode(&[id], false)
            .ok()
            .filter(|t| !t.is_empty())
            .or_else(|| tok.piece(id))
            .unwrap_or_default()
    };
    // `Decoding::finish` flushes held-back text with an empty record (no token).
    let flush = step.top.is_empty() && step.prob == 0.0;
    Event::Token {
        id: (!flush).then_some(step.token),
        piece: if flush {
            String::new()
        } else {
            piece(step.token)
        },
        text: text.to_string(),
        prob: step.prob,
        draw: step.draw,
        top: step
            .top
            .iter()
            .take(TOP_SHOWN)
            .map(|&(id, p)| (id, piece(id), p))
            .collect(),
        // The KV length once this token's own forward pass has run (the page reads it
        // for real tokens only).
        kv_len: step.position + 1,
        position: step.position,
        stage_pieces: {
            let mut ids: Vec<u32> = step
                .stages
                .iter()
                .flat_map(|s| s.top.iter().map(|c| c.id))
                .collect();
            ids.sort_unstable();
            ids.dedup();
            ids.into_iter().map(|id| (id, piece(id))).collect()
        },
        stages: step.stages.clone(),
        stop_check: step.stop_check.clone(),
    }
}

/// The same shape as `slm bench`: a prompt of ordinary text ids, then greedy decoding
/// with every EOS id biased away so that exactly `gen_tokens` are generated.
fn bench(engine: &Engine, prompt_tokens: usize, gen_tokens: usize) -> slm_runtime::Result<()> {
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(prompt_tokens / 4 + 8);
    let mut ids = engine.text.tokenizer.encode(&text, false)?;
    ids.truncate(prompt_tokens.max(1));
    let mut opts = GenerateOptions::greedy(gen_tokens);
    opts.sampler.logit_bias = engine
        .text
        .manifest
        .stop
        .eos_token_ids
        .iter()
        .map(|&id| (id, -1e9))
        .collect();
    let g = engine.generate(&ids, &opts, &mut |_, _| {})?;
    post(Event::BenchResult {
        prompt_tokens: ids.len(),
        gen_tokens: g.ids.len(),
        prefill_tok_s: g.timings.prefill_tok_s,
        decode_tok_s: g.timings.decode_tok_s,
        simd128: cfg!(target_feature = "simd128"),
        threads: engine.model.threads.count(),
    });
    Ok(())
}

fn probe(
    engine: &Engine,
    messages: &Value,
    max_tokens: usize,
    sampler: Option<slm_runtime::sampling::SamplerConfig>,
) -> slm_runtime::Result<()> {
    let rendered = engine.text.render(messages, None, true, now_unix())?;
    let ids = engine.text.encode_rendered(&rendered)?;
    let logits = engine.first_logits(&ids)?;
    let greedy = engine.greedy(&ids, max_tokens)?.ids;
    let sampled = match sampler {
        Some(s) => {
            // `slm generate`'s options for the same flags: loop detection on, no stops.
            let mut opts = slm_runtime::engine::GenerateOptions::greedy(max_tokens);
            opts.sampler = s;
            opts.loop_detection = Some(slm_runtime::stopping::LoopConfig::default());
            Some(engine.generate(&ids, &opts, &mut |_, _| {})?)
        }
        None => None,
    };
    post(Event::ProbeResult {
        rendered,
        ids,
        logits,
        greedy,
        sampled_text: sampled.as_ref().map(|g| g.text.clone()),
        sampled: sampled.map(|g| g.ids),
    });
    Ok(())
}
