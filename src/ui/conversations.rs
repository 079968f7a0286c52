//! Conversations: the chats this browser keeps (`chat_store`, IndexedDB), which one is
//! open, and every move between them: new, open, rename, delete. The open chat is the
//! page's transcript and chat settings; each change to either is written back within
//! `SAVE_DELAY_MS`, a streaming reply included. A reply still streaming when a record
//! is written is stored as interrupted, so a closed tab or a dead worker leaves an
//! honest record; the finished reply replaces it.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use wasm_bindgen_futures::spawn_local;

use super::chat_file;
use super::chat_store::ChatStore;
use super::client::send;
use super::saved::{recall, remember, ChatPrefs};
use super::state::{open_in_session, ChatMessage, ErrorView, State};
use crate::protocol::{Command, ErrorKind, Operation, Role};

/// The longest a change waits before it is written.
const SAVE_DELAY_MS: u64 = 250;
/// `localStorage` keys: the chat open at the last visit, and the model last loaded.
const OPEN_KEY: &str = "tinyrustlm.open-chat";
const LAST_MODEL_KEY: &str = "tinyrustlm.last-model";
/// A title made from the first message keeps at most this many characters.
const TITLE_CHARS: usize = 48;

/// Whether the open chat's last change is in IndexedDB (shown beside the chat list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaveState {
    Saved,
    Saving,
    Failed,
}

/// The model a conversation's first reply came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelRef {
    pub id: String,
    pub name: String,
    /// SHA-256 of the whole `.slm` file.
    pub sha256: String,
}

/// What the list shows of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatHead {
    pub id: String,
    pub title: String,
    /// The person named it; otherwise the title follows the first message.
    #[serde(default)]
    pub renamed: bool,
    /// Milliseconds since the Unix epoch.
    pub created: f64,
    pub updated: f64,
    #[serde(default)]
    pub model: Option<ModelRef>,
}

/// One stored conversation: its messages as shown (each with the form the model was
/// given), and the settings its replies are generated with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    #[serde(flatten)]
    pub head: ChatHead,
    #[serde(default)]
    pub prefs: ChatPrefs,
    #[serde(default)]
    pub messages: Vec<ChatMessage>,
}

impl Conversation {
    /// What a write compares: everything but the time it was written.
    fn body(&self) -> String {
        serde_json::to_string(&(
            &self.head.title,
            self.head.renamed,
            &self.head.model,
            &self.prefs,
            &self.messages,
        ))
        .unwrap_or_default()
    }
}

thread_local! {
    static STORE: RefCell<Option<ChatStore>> = const { RefCell::new(None) };
    /// The open chat's id and body as last written or read: a snapshot equal to it
    /// needs no write.
    static WRITTEN: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
    /// The open chat's id and body of the last write that failed: the same body is not
    /// tried again (a failed write would otherwise retry every `SAVE_DELAY_MS`, as each
    /// write touches the chat's head); a change is.
    static FAILED: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
    static SAVE_PENDING: Cell<bool> = const { Cell::new(false) };
    /// Writes sent to IndexedDB and not yet committed.
    static IN_FLIGHT: Cell<u32> = const { Cell::new(0) };
    /// The last model is reopened once, at the first list of cached models.
    static REOPEN: Cell<bool> = const { Cell::new(true) };
}

fn now() -> f64 {
    js_sys::Date::now()
}

fn new_id() -> String {
    format!(
        "chat-{:x}-{:08x}",
        now() as u64,
        (js_sys::Math::random() * f64::from(u32::MAX)) as u32
    )
}

fn fail(state: State, message: String) {
    state.notices.error.set(Some(ErrorView {
        during: Operation::Conversations,
        kind: ErrorKind::Storage,
        message,
        chunk: None,
    }));
}

/// A title from the first user message: its first line, shortened.
fn title_of(messages: &[ChatMessage]) -> String {
    let first = messages
        .iter()
        .find(|m| m.role == Role::User)
        .and_then(|m| m.content.lines().find(|l| !l.trim().is_empty()))
        .map(str::trim);
    match first {
        None => "New chat".into(),
        Some(l) if l.chars().count() <= TITLE_CHARS => l.into(),
        Some(l) => l.chars().take(TITLE_CHARS - 1).collect::<String>() + "…",
    }
}

/// The open chat as it would be stored now. A reply still streaming is stored as
/// interrupted.
fn snapshot(state: State) -> Option<Conversation> {
    let mut head = state.chat.open.get()?;
    let mut messages = state.chat.transcript.get();
    if state.turn.generating.get() {
        if let Some(m) = messages.last_mut().filter(|m| m.role == Role::Assistant) {
            m.interrupted = true;
        }
    }
    if !head.renamed {
        head.title = title_of(&messages);
    }
    Some(Conversation {
        head,
        prefs: ChatPrefs::read(state),
        messages,
    })
}

/// A chat is kept once it has a message or a name; after that every change is
/// written, a cleared transcript included.
fn worth_writing(c: &Conversation) -> bool {
    !c.messages.is_empty()
        || c.head.renamed
        || WRITTEN.with_borrow(|w| w.as_ref().is_some_and(|w| w.0 == c.head.id))
}

/// Write the open chat if it changed since it was last written (an empty chat that was
/// never named is not kept).
fn flush(state: State) {
    SAVE_PENDING.set(false);
    let Some(mut c) = untrack(|| snapshot(state)) else {
        return;
    };
    let body = c.body();
    let key = (c.head.id.clone(), body.clone());
    if FAILED.with_borrow(|f| f.as_ref() == Some(&key)) {
        if IN_FLIGHT.get() == 0 {
            state.chat.saved.set(SaveState::Failed);
        }
        return;
    }
    let same = WRITTEN.with_borrow(|w| w.as_ref() == Some(&key));
    if same || !worth_writing(&c) {
        if IN_FLIGHT.get() == 0 && same {
            state.chat.saved.set(SaveState::Saved);
        }
        return;
    }
    c.head.updated = now();
    WRITTEN.set(Some((c.head.id.clone(), body)));
    let head = c.head.clone();
    state.chat.open.update(|h| {
        if let Some(h) = h.as_mut().filter(|h| h.id == head.id) {
            h.updated = head.updated;
            h.title = head.title.clone();
        }
    });
    state.chat.list.update(|list| {
        list.retain(|h| h.id != head.id);
        list.insert(0, head.clone());
    });
    let Some(store) = STORE.with_borrow(|s| s.clone()) else {
        return;
    };
    let json = serde_json::to_string(&c).unwrap_or_default();
    IN_FLIGHT.set(IN_FLIGHT.get() + 1);
    state.chat.saved.set(SaveState::Saving);
    spawn_local(async move {
        let result = store.put(&head.id, &json).await;
        IN_FLIGHT.set(IN_FLIGHT.get().saturating_sub(1));
        if IN_FLIGHT.get() == 0 && !SAVE_PENDING.get() {
            state.chat.saved.set(if result.is_ok() {
                SaveState::Saved
            } else {
                SaveState::Failed
            });
        }
        match &result {
            Ok(()) => FAILED.set(None),
            Err(_) => FAILED.set(Some(key)),
        }
        if let Err(e) = result {
            // The record of the last successful write stays as it was.
            WRITTEN.set(None);
            fail(
                state,
                format!(
                    "the conversation \"{}\" could not be saved ({e}); it stays on this page, \
                     and what was saved before is kept",
                    head.title
                ),
            );
        }
    });
}

/// Open the store, show the chat that was open at the last visit (or the latest one),
/// and keep every change from now on.
pub fn start(state: State) {
    // Only tracks what a record holds and schedules a write: the record is built and
    // compared when the write is due, not once per streamed token.
    Effect::new(move |_| {
        state.chat.transcript.track();
        state.turn.generating.track();
        let _ = ChatPrefs::read(state);
        if state.chat.open.with(|c| c.is_some()) && !SAVE_PENDING.replace(true) {
            set_timeout(move || flush(state), Duration::from_millis(SAVE_DELAY_MS));
        }
    });
    // A closing tab gets one last write (it may or may not commit; what was written
    // before stays either way).
    let handle = window_event_listener(leptos::ev::pagehide, move |_| flush(state));
    std::mem::forget(handle);
    spawn_local(async move {
        let store = match ChatStore::open().await {
            Ok(s) => s,
            Err(e) => {
                fail(
                    state,
                    format!("conversations cannot be kept in this browser ({e}); this chat lasts until the page closes"),
                );
                fresh(state);
                return;
            }
        };
        STORE.set(Some(store.clone()));
        let heads = match store.list().await {
            Ok((heads, unreadable)) => {
                if !unreadable.is_empty() {
                    fail(
                        state,
                        format!(
                            "{} stored conversation(s) could not be read and are left as they are: {}",
                            unreadable.len(),
                            unreadable.join("; ")
                        ),
                    );
                }
                heads
            }
            Err(e) => {
                fail(
                    state,
                    format!("the stored conversations could not be listed: {e}"),
                );
                vec![]
            }
        };
        state.chat.list.set(heads.clone());
        let want = recall(OPEN_KEY)
            .filter(|id| heads.iter().any(|h| &h.id == id))
            .or_else(|| heads.first().map(|h| h.id.clone()));
        match want {
            Some(id) => show_stored(state, &store, &id).await,
            None => fresh(state),
        }
    });
}

async fn show_stored(state: State, store: &ChatStore, id: &str) {
    match store.get(id).await {
        Ok(Some(c)) => show(state, c),
        Ok(None) => {
            fail(state, "that conversation is no longer stored".into());
            state.chat.list.update(|l| l.retain(|h| h.id != id));
            fresh(state);
        }
        Err(e) => {
            fail(state, format!("the conversation could not be opened: {e}"));
            if state.chat.open.get_untracked().is_none() {
                fresh(state);
            }
        }
    }
}

/// Make `c` the open chat: its messages, its settings, and (with a model loaded) the
/// session's transcript.
fn show(state: State, c: Conversation) {
    WRITTEN.set(Some((c.head.id.clone(), c.body())));
    remember(OPEN_KEY, &c.head.id);
    state.leave_turn();
    c.prefs.apply(state);
    if state.models.card.get_untracked().is_some() {
        open_in_session(&c.messages);
    }
    state.chat.transcript.set(c.messages);
    state.chat.open.set(Some(c.head));
}

/// A new, empty chat with the settings in use.
fn fresh(state: State) {
    let head = ChatHead {
        id: new_id(),
        title: "New chat".into(),
        renamed: false,
        created: now(),
        updated: now(),
        model: None,
    };
    WRITTEN.set(None);
    remember(OPEN_KEY, &head.id);
    state.leave_turn();
    state.chat.transcript.set(vec![]);
    state.chat.list.update(|l| l.insert(0, head.clone()));
    state.chat.open.set(Some(head));
    if state.models.card.get_untracked().is_some() {
        open_in_session(&[]);
    }
}

/// "New chat": the open chat is saved and an empty one opens (unless the open one is
/// empty already).
pub fn new_chat(state: State) {
    if state.turn.generating.get_untracked() {
        return;
    }
    if state.chat.transcript.with_untracked(|t| t.is_empty())
        && state.chat.open.get_untracked().is_some()
    {
        return;
    }
    flush(state);
    drop_unsaved(state);
    fresh(state);
}

/// The list keeps only chats that are stored, and the open one.
fn drop_unsaved(state: State) {
    let open = state.chat.open.get_untracked().map(|h| h.id);
    let written = WRITTEN.with_borrow(|w| w.as_ref().map(|w| w.0.clone()));
    if let Some(open) = open.filter(|o| Some(o) != written.as_ref()) {
        state.chat.list.update(|l| l.retain(|h| h.id != open));
    }
}

pub fn open(state: State, id: String) {
    if state.turn.generating.get_untracked()
        || state
            .chat
            .open
            .with_untracked(|h| h.as_ref().is_some_and(|h| h.id == id))
    {
        return;
    }
    flush(state);
    drop_unsaved(state);
    let Some(store) = STORE.with_borrow(|s| s.clone()) else {
        return;
    };
    spawn_local(async move { show_stored(state, &store, &id).await });
}

pub fn rename(state: State, title: String) {
    let title = title.trim().to_string();
    if title.is_empty() {
        return;
    }
    state.chat.open.update(|h| {
        if let Some(h) = h {
            h.title = title.clone();
            h.renamed = true;
        }
    });
}

/// Delete a stored chat for good (the page asked first). The open one is replaced by
/// the latest other, or a new chat.
pub fn delete(state: State, id: String) {
    if state.turn.generating.get_untracked() {
        return;
    }
    let store = STORE.with_borrow(|s| s.clone());
    spawn_local(async move {
        if let Some(store) = &store {
            if let Err(e) = store.delete(&id).await {
                fail(state, format!("the conversation could not be deleted: {e}"));
                return;
            }
        }
        state.chat.list.update(|l| l.retain(|h| h.id != id));
        let was_open = state
            .chat
            .open
            .with_untracked(|h| h.as_ref().is_some_and(|h| h.id == id));
        if was_open {
            WRITTEN.set(None);
            let next = state
                .chat
                .list
                .with_untracked(|l| l.first().map(|h| h.id.clone()));
            match (next, store) {
                (Some(next), Some(store)) => show_stored(state, &store, &next).await,
                _ => fresh(state),
            }
        }
    });
}

/// A model finished loading: remember it for the next visit (nothing to reopen now).
pub fn model_loaded(card: &crate::protocol::ModelCard) {
    remember(LAST_MODEL_KEY, &card.id);
    REOPEN.set(false);
}

/// A reply finished: it is written at once (a closing tab then keeps all of it), and
/// the chat's model is the one that wrote its first reply.
pub fn reply_done(state: State) {
    let Some(card) = state.models.card.get_untracked() else {
        return;
    };
    state.chat.open.update(|h| {
        if let Some(h) = h.as_mut().filter(|h| h.model.is_none()) {
            h.model = Some(ModelRef {
                id: card.id.clone(),
                name: card.name.clone(),
                sha256: card.file_sha256.clone(),
            });
        }
    });
    flush(state);
}

/// The worker died with a stored model loaded: reload it at the new worker's first
/// list of cached models.
pub fn reopen_after_crash() {
    REOPEN.set(true);
}

/// The first list of cached models after the page opened: load the model used last,
/// if it is stored and verified and nothing else is loading.
pub fn reopen_last_model(state: State) {
    if !REOPEN.replace(false)
        || state.models.card.get_untracked().is_some()
        || state.models.working.get_untracked().is_some()
    {
        return;
    }
    let Some(last) = recall(LAST_MODEL_KEY) else {
        return;
    };
    let found = state.models.cached.with_untracked(|c| {
        c.iter()
            .find(|m| m.id == last && m.complete)
            .map(|m| m.name.clone())
    });
    if let Some(name) = found {
        state.notices.notice.set(Some(format!(
            "Reopening {name}, the model used last (stored in this browser)."
        )));
        state.models.working.set(Some(format!("loading {last}")));
        send(&Command::Load {
            id: last,
            context: state.settings.context.get_untracked(),
            first_turn: super::settings::current(state).ok(),
        });
    }
}

/// A file name from the chat's title.
fn file_stem(title: &str) -> String {
    let s: String = title
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    if s.is_empty() {
        "chat".into()
    } else {
        s.chars().take(40).collect()
    }
}

/// The open chat as a file: "json" (Import reads it back), "md", or "replay".
pub fn export(state: State, kind: &str) {
    let Some(c) = untrack(|| snapshot(state)) else {
        return;
    };
    let stem = file_stem(&c.head.title);
    let result = match kind {
        "json" => super::offer_file(
            &format!("{stem}.chat.json"),
            "application/json",
            &chat_file::to_json(&c, now(), None),
        ),
        "traces" => {
            let traces = state.chat.traces;
            let trace = move |id: u64| traces.with_value(|t| t.get(id).cloned());
            super::offer_file(
                &format!("{stem}.chat.json"),
                "application/json",
                &chat_file::to_json(&c, now(), Some(&trace)),
            )
        }
        "md" => super::offer_file(
            &format!("{stem}.md"),
            "text/markdown",
            &chat_file::to_markdown(&c),
        ),
        _ => chat_file::replay_bundle(&c).and_then(|b| {
            super::offer_file(
                &format!("{stem}.replay.json"),
                "application/json",
                &serde_json::to_string_pretty(&b).unwrap_or_default(),
            )
        }),
    };
    if let Err(e) = result {
        state
            .notices
            .notice
            .set(Some(format!("Nothing was exported: {e}.")));
    }
}

/// Import an exported chat as a new conversation (a new id, so that nothing stored
/// is overwritten) and open it.
pub fn import(state: State, file: web_sys::File) {
    if state.turn.generating.get_untracked() {
        return;
    }
    spawn_local(async move {
        let text = match wasm_bindgen_futures::JsFuture::from(file.text()).await {
            Ok(t) => t.as_string().unwrap_or_default(),
            Err(e) => {
                fail(
                    state,
                    format!(
                        "{} could not be read: {}",
                        file.name(),
                        crate::idb::describe(&e)
                    ),
                );
                return;
            }
        };
        let mut c = match chat_file::from_json(&text) {
            Ok(c) => c,
            Err(e) => {
                state.notices.error.set(Some(ErrorView {
                    during: Operation::Import,
                    kind: ErrorKind::Invalid,
                    message: format!("{} was not imported: {e}", file.name()),
                    chunk: None,
                }));
                return;
            }
        };
        flush(state);
        drop_unsaved(state);
        c.head.id = new_id();
        c.head.updated = now();
        if let Some(store) = STORE.with_borrow(|s| s.clone()) {
            let json = serde_json::to_string(&c).unwrap_or_default();
            if let Err(e) = store.put(&c.head.id, &json).await {
                fail(
                    state,
                    format!("the imported chat could not be saved ({e}); it is shown, not kept"),
                );
            }
        }
        state.chat.list.update(|l| l.insert(0, c.head.clone()));
        state.notices.notice.set(Some(format!(
            "Imported \"{}\" from {}.",
            c.head.title,
            file.name()
        )));
        show(state, c);
    });
}

fn when(ms: f64) -> String {
    let d = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms));
    String::from(d.to_locale_string("default", &wasm_bindgen::JsValue::UNDEFINED))
}

/// The list of chats, and the open chat's name, rename and delete.
#[component]
pub fn ConversationsPanel() -> impl IntoView {
    let state = expect_context::<State>();
    // The open chat's actions are built once per open chat and the name field once per
    // rename, so an autosave (which rewrites the open chat's head) leaves a name being
    // typed alone.
    let open_id = Memo::new(move |_| state.chat.open.with(|h| h.as_ref().map(|h| h.id.clone())));
    let renaming = RwSignal::new(None::<String>);
    let is_renaming = Memo::new(move |_| renaming.with(Option::is_some));
    let name_field = NodeRef::<leptos::html::Input>::new();
    let confirming = RwSignal::new(false);
    // Another chat opened: a rename or a delete begun on the last one is dropped.
    Effect::new(move |_| {
        open_id.track();
        renaming.set(None);
        confirming.set(false);
    });
    // The name field takes the focus when it opens, its text selected for typing over.
    Effect::new(move |_| {
        if let Some(field) = name_field.get() {
            // The text is set before it is selected, so the selection covers it.
            field.set_value(&renaming.get_untracked().unwrap_or_default());
            let _ = field.focus();
            field.select();
        }
    });
    let busy = move || state.turn.generating.get();
    view! {
        <nav class="conversations" aria-label="Conversations panel">
            <div class="conv-head">
                <h2>"Conversations"</h2>
                <span class="save-state" data-testid="chat-saved" role="status">{move || match state.chat.saved.get() {
                    SaveState::Saved => "Saved in this browser",
                    SaveState::Saving => "Saving…",
                    SaveState::Failed => "Not saved",
                }}</span>
                <button disabled=busy on:click=move |_| new_chat(state)>"New chat"</button>
            </div>
            <ul class="conv-list" role="list" aria-label="Conversations">
                <For each=move || state.chat.list.get() key=|h| (h.id.clone(), h.title.clone(), h.updated.to_bits()) let:h>
                    {
                        let id = h.id.clone();
                        let id2 = h.id.clone();
                        let is_open = Memo::new(move |_| state.chat.open.with(|c| c.as_ref().is_some_and(|c| c.id == id2)));
                        view! {
                            <li class="conv" class:open=is_open data-id=h.id.clone()>
                                <button class="conv-open" aria-current=move || is_open.get().then_some("true")
                                    disabled=busy title=format!("Last changed {}", when(h.updated))
                                    on:click=move |_| open(state, id.clone())>{h.title.clone()}</button>
                            </li>
                        }
                    }
                </For>
            </ul>
            {move || open_id.get().map(|id| {
                let model_note = move || state.chat.open.with(|h| h.as_ref().and_then(|h| h.model.clone())).and_then(|m| {
                    let loaded = state.models.card.get();
                    match loaded {
                        Some(c) if c.file_sha256 == m.sha256 => None,
                        Some(c) => Some(format!("This chat was made with {}; {} is loaded now and continues it.", m.name, c.name)),
                        None => Some(format!("This chat was made with {}.", m.name)),
                    }
                });
                view! {
                    <div class="conv-actions">
                        {move || if is_renaming.get() {
                            view! {
                                <input class="conv-title-input" aria-label="Chat name" node_ref=name_field
                                    on:input=move |ev| renaming.set(Some(event_target_value(&ev)))
                                    on:keydown=move |ev: web_sys::KeyboardEvent| {
                                        if ev.key() == "Enter" {
                                            if let Some(t) = renaming.get_untracked() { rename(state, t); }
                                            renaming.set(None);
                                        } else if ev.key() == "Escape" {
                                            ev.stop_propagation();
                                            renaming.set(None);
                                        }
                                    }/>
                                <button on:click=move |_| {
                                    if let Some(t) = renaming.get_untracked() { rename(state, t); }
                                    renaming.set(None);
                                }>"Save name"</button>
                            }.into_any()
                        } else {
                            view! {
                                <button disabled=busy on:click=move |_| renaming.set(
                                    state.chat.open.with_untracked(|h| h.as_ref().map(|h| h.title.clone()))
                                )>"Rename"</button>
                            }.into_any()
                        }}
                        {move || if confirming.get() {
                            let id = id.clone();
                            view! {
                                <span class="confirm" role="alertdialog" aria-label="Confirm delete">
                                    "Delete this chat for good? "
                                    <button class="danger" on:click=move |_| { confirming.set(false); delete(state, id.clone()); }>"Delete"</button>
                                    <button on:click=move |_| confirming.set(false)>"Keep"</button>
                                </span>
                            }.into_any()
                        } else {
                            view! { <button disabled=busy on:click=move |_| confirming.set(true)>"Delete chat"</button> }.into_any()
                        }}
                    </div>
                    {move || model_note().map(|n| view! { <p class="conv-model" data-testid="chat-model">{n}</p> })}
                    <div class="conv-actions conv-files">
                        <button on:click=move |_| export(state, "json") title="The whole chat as JSON: messages, settings, seeds, prompt hashes; Import reads it back">"Export"</button>
                        <button on:click=move |_| export(state, "traces") title={format!("As Export, with each reply's token trace (the schema of `slm generate --trace`): the replies made on this page since it was opened, the last {} traced (a trace is held only while the page is open)", super::state::TRACES_KEPT)}>"Export with traces"</button>
                        <button on:click=move |_| export(state, "md") title="The chat as Markdown, for people">"Export Markdown"</button>
                        <button on:click=move |_| export(state, "replay")
                            title="The last reply as a bundle that `slm generate MODEL --replay FILE` reproduces byte for byte">"Export for replay"</button>
                        <label class="import">
                            <span class="button-like">"Import"</span>
                            <input type="file" accept=".json,application/json" aria-label="Import" class="sr-only"
                                disabled=busy
                                on:change=move |ev| {
                                    use wasm_bindgen::JsCast;
                                    let input: Option<web_sys::HtmlInputElement> = ev.target().and_then(|t| t.dyn_into().ok());
                                    if let Some(input) = input {
                                        if let Some(f) = input.files().and_then(|l| l.get(0)) { import(state, f); }
                                        input.set_value("");
                                    }
                                }/>
                        </label>
                    </div>
                }
            })}
        </nav>
    }
}
