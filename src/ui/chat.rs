//! The conversation: transcript, system prompt, composer, and the context controls.

use leptos::prelude::*;

use super::client::send;
use super::follow::Follow;
use super::settings::{current, SettingsPanel};
use super::state::{open_in_session, ChatMessage, TurnStats};
use super::State;
use crate::protocol::{ChatSettings, Command, ErrorKind, Operation, Role};

/// A new reply's placeholder, keeping the settings it is generated with.
fn placeholder(settings: &ChatSettings) -> ChatMessage {
    let mut reply = ChatMessage::new(Role::Assistant, String::new());
    reply.turn = Some(settings.clone());
    reply
}

/// The settings for a turn, or the page says why there is none (and nothing is sent).
/// None too while a reply is generated or no model is loaded.
fn settings_or_error(state: State) -> Option<ChatSettings> {
    if state.turn.generating.get_untracked() || state.models.card.get_untracked().is_none() {
        return None;
    }
    match current(state) {
        Ok(s) => Some(s),
        Err(message) => {
            state.notices.error.set(Some(super::state::ErrorView {
                during: Operation::Chat,
                kind: ErrorKind::Invalid,
                message,
                chunk: None,
            }));
            None
        }
    }
}

/// Answer the last reply's tool calls with `result` as a `tool` message.
fn send_tool_result(state: State, result: RwSignal<String>) {
    let content = result.get_untracked();
    let Some(settings) = settings_or_error(state) else {
        return;
    };
    result.set(String::new());
    state.start_turn(state.chat.transcript.get_untracked());
    state.chat.transcript.update(|t| {
        t.push(ChatMessage::new(Role::Tool, content.clone()));
        t.push(placeholder(&settings));
    });
    send(&Command::ToolResult { content, settings });
}

fn send_message(state: State, text: RwSignal<String>) {
    let msg = text.get_untracked();
    if msg.trim().is_empty() {
        return;
    }
    let Some(settings) = settings_or_error(state) else {
        return;
    };
    text.set(String::new());
    state.start_turn(state.chat.transcript.get_untracked());
    state.chat.transcript.update(|t| {
        t.push(ChatMessage::new(Role::User, msg.clone()));
        t.push(placeholder(&settings));
    });
    send(&Command::Send {
        text: msg,
        settings,
    });
}

/// Message `i` and all after it leave the transcript as one branch among the
/// branches at `i` (the current one at its place among them); all of them, in order.
fn fork(t: &mut Vec<ChatMessage>, i: usize) -> Vec<Vec<ChatMessage>> {
    let mut current = t.split_off(i);
    let Some(first) = current.first_mut() else {
        return vec![];
    };
    let mut all = std::mem::take(&mut first.alts);
    let at = first.alt_pos.min(all.len());
    all.insert(at, current);
    all
}

/// Make branch `k` of `all` the transcript's tail from `i` (the others stay on its
/// first message).
fn join(t: &mut Vec<ChatMessage>, mut all: Vec<Vec<ChatMessage>>, k: usize) {
    let mut chosen = all.remove(k);
    if let Some(first) = chosen.first_mut() {
        first.alts = all;
        first.alt_pos = k;
    }
    t.extend(chosen);
}

/// Replace user message `i` with `text` and generate the reply to it. What followed
/// stays as a branch.
fn edit_message(state: State, i: usize, text: String) {
    if text.trim().is_empty() {
        return;
    }
    let Some(settings) = settings_or_error(state) else {
        return;
    };
    let before = state.chat.transcript.get_untracked();
    state.start_turn(before.clone());
    let mut t = before;
    let all = fork(&mut t, i);
    open_in_session(&t);
    let n = all.len();
    let mut edited = ChatMessage::new(Role::User, text.clone());
    edited.alts = all;
    edited.alt_pos = n;
    t.push(edited);
    t.push(placeholder(&settings));
    state.chat.transcript.set(t);
    send(&Command::Send { text, settings });
}

/// Generate reply `i` again (any reply, not only the last). The old one, with what
/// followed it, stays as a branch.
fn regenerate_at(state: State, i: usize) {
    let Some(settings) = settings_or_error(state) else {
        return;
    };
    let before = state.chat.transcript.get_untracked();
    if before.get(i).is_none_or(|m| m.role != Role::Assistant) {
        return;
    }
    state.start_turn(before.clone());
    let mut t = before;
    let all = fork(&mut t, i);
    open_in_session(&t);
    let n = all.len();
    let mut reply = placeholder(&settings);
    reply.alts = all;
    reply.alt_pos = n;
    t.push(reply);
    state.chat.transcript.set(t);
    send(&Command::Regenerate { settings });
}

/// Continue the last reply: what is generated joins it.
fn continue_reply(state: State) {
    let Some(settings) = settings_or_error(state) else {
        return;
    };
    let before = state.chat.transcript.get_untracked();
    if !before.last().is_some_and(can_continue) {
        return;
    }
    state.start_turn(before);
    state.chat.transcript.update(|t| {
        if let Some(m) = t.last_mut() {
            m.interrupted = false;
            m.turn = Some(settings.clone());
        }
    });
    send(&Command::Continue { settings });
}

fn can_continue(m: &ChatMessage) -> bool {
    !m.content.is_empty() && can_continue_frame(m)
}

/// `can_continue` less its text check (a streaming frame has no text): an assistant
/// reply with no tool calls.
fn can_continue_frame(m: &ChatMessage) -> bool {
    m.role == Role::Assistant && m.tool_calls.is_empty()
}

/// Show branch `k` at message `i`.
fn switch_branch(state: State, i: usize, k: usize) {
    if state.turn.generating.get_untracked() {
        return;
    }
    let mut t = state.chat.transcript.get_untracked();
    let all = fork(&mut t, i);
    if k >= all.len() {
        return;
    }
    join(&mut t, all, k);
    if state.models.card.get_untracked().is_some() {
        open_in_session(&t);
    }
    state.turn.tokens.set(vec![]);
    state.turn.prompt.set(None);
    state.chat.transcript.set(t);
}

/// One transcript entry: Markdown (`crate::markdown`), or the exact text with Raw on.
///
/// A streamed token changes only the text: the entry's frame (its buttons, figures
/// and note) is a memo of everything else, so a token re-renders the text's element
/// and nothing around it.
#[component]
fn Message(i: usize) -> impl IntoView {
    let state = expect_context::<State>();
    let frame = Memo::new(move |_| {
        state.chat.transcript.with(|t| {
            t.get(i).map(|m| {
                let has_text = !m.content.is_empty();
                (
                    ChatMessage {
                        content: String::new(),
                        ..m.clone()
                    },
                    has_text,
                )
            })
        })
    });
    let text = Memo::new(move |_| {
        state
            .chat
            .transcript
            .with(|t| t.get(i).map(|m| m.content.clone()).unwrap_or_default())
    });
    let raw = RwSignal::new(false);
    let editing = RwSignal::new(None::<String>);
    let idle = move || !state.turn.generating.get() && state.models.card.with(|c| c.is_some());
    let is_last = move || state.chat.transcript.with(|t| t.len() == i + 1);
    move || {
        frame.get().map(|(m, has_text)| {
            let class = format!("msg {}", m.role.as_str());
            let continuable = has_text && can_continue_frame(&m);
            let branches = m.alts.len() + 1;
            let pos = m.alt_pos.min(m.alts.len());
            let at_end = pos + 1 == branches;
            view! {
                <li class=class data-role=m.role.as_str()>
                    <span class="role">{m.role.as_str()}</span>
                    <span class="msg-tools">
                        {(branches > 1).then(|| view! {
                            <span class="branches" data-testid="branches">
                                <button class="small" aria-label="Previous branch" disabled=move || pos == 0 || state.turn.generating.get()
                                    on:click=move |_| switch_branch(state, i, pos - 1)>"‹"</button>
                                <span class="branch-pos">{format!("{} / {branches}", pos + 1)}</span>
                                <button class="small" aria-label="Next branch" disabled=move || at_end || state.turn.generating.get()
                                    on:click=move |_| switch_branch(state, i, pos + 1)>"›"</button>
                            </span>
                        })}
                        {(m.role == Role::User).then(|| view! {
                            <button class="small" disabled=move || !idle()
                                title="Change this message and generate the reply again; what followed stays as a branch"
                                on:click=move |_| editing.set(Some(text.get_untracked()))>"Edit"</button>
                        })}
                        {(m.role == Role::Assistant).then(|| view! {
                            <button class="small" disabled=move || !idle()
                                title="Generate this reply again; the old one stays as a branch"
                                on:click=move |_| regenerate_at(state, i)>"Regenerate"</button>
                        })}
                        {move || (continuable && is_last()).then(|| view! {
                            <button class="small" disabled=move || !idle()
                                title="Generate more of this reply; the new text joins it"
                                on:click=move |_| continue_reply(state)>"Continue"</button>
                        })}
                        <button class="small" aria-pressed=move || raw.get().to_string()
                            title="The exact text the model produced, as the token console explains it"
                            on:click=move |_| raw.update(|r| *r = !*r)>"Raw"</button>
                        <button class="small" on:click=move |ev| copy_text(&ev, &text.get_untracked())>"Copy"</button>
                    </span>
                    {move || editing.get().map(|draft| view! {
                        <div class="edit">
                            <textarea aria-label="Edit message" rows="3" prop:value=draft
                                on:input=move |ev| editing.set(Some(event_target_value(&ev)))></textarea>
                            <button class="primary" on:click=move |_| {
                                if let Some(t) = editing.get_untracked() { edit_message(state, i, t); }
                                editing.set(None);
                            }>"Send edit"</button>
                            <button on:click=move |_| editing.set(None)>"Cancel edit"</button>
                        </div>
                    })}
                    {move || if raw.get() {
                        view! { <pre class="content raw">{move || text.get()}</pre> }.into_any()
                    } else {
                        view! { <div class="content markdown" inner_html=move || text.with(|t| crate::markdown::to_html(t))></div> }.into_any()
                    }}
                    {m.tool_calls.into_iter().map(|c| view! {
                        <div class="tool-call" data-testid="tool-call" data-name=c.name.clone()>
                            <span class="tool-name">{format!("calls {}", c.name)}</span>
                            <pre class="tool-args">{serde_json::to_string_pretty(&c.arguments).unwrap_or_default()}</pre>
                        </div>
                    }).collect_view()}
                    {m.policy.map(|p| policy_line(&p))}
                    {m.interrupted.then(|| view! {
                        <p class="msg-interrupted" data-testid="msg-interrupted">
                            "Interrupted: this reply was cut off before it finished (the page closed or the worker stopped)."
                        </p>
                    })}
                    {m.stats.map(|s| view! {
                        <p class="msg-stats" data-testid="msg-stats"
                            title=format!("Prompt {} tokens ({} reused, {} read at {:.1} tok/s), SHA-256 {}; model {}", s.prompt_tokens, s.reused_tokens, s.prefilled_tokens, s.prefill_tok_s, s.prompt_sha256, s.model)>
                            {message_stats(&s)}
                        </p>
                    })}
                </li>
            }
        })
    }
}

/// The clarify-first decision under a user message, and the exact note the model got.
fn policy_line(p: &super::state::PolicyView) -> impl IntoView {
    view! {
        <div class="msg-policy" data-testid="msg-policy" data-clarify=p.clarify.to_string()>
            <span>{p.summary.clone()}</span>
            {p.note.clone().map(|n| view! {
                <details><summary>"Note the model was given"</summary><pre class="policy-note">{n}</pre></details>
            })}
            {p.lead.clone().map(|l| view! {
                <span class="policy-lead" data-testid="policy-lead">
                    "The reply starts with “"{l}"”, written by the policy; the model wrote the rest."
                </span>
            })}
            {(p.tries.len() > 1).then(|| view! {
                <details class="policy-tries" data-testid="policy-tries">
                    <summary>{match p.tries.iter().any(|a| a.restates) {
                        true => format!(
                            "{} attempts: a reply that restated the question was tried again, barred from its first token",
                            p.tries.len()
                        ),
                        false => format!(
                            "{} attempts: a question that named no missing piece was tried again with another lead",
                            p.tries.len()
                        ),
                    }}</summary>
                    <ol>
                        {p.tries.iter().map(|a| view! {
                            <li data-kept=a.kept.to_string() data-named=a.names_a_piece.to_string()
                                data-amiss=a.asks_amiss.to_string() data-restates=a.restates.to_string()>
                                {format!("{}{}", a.lead, a.text)}
                                <span class="try-verdict">{match (a.kept, a.names_a_piece, a.asks_amiss) {
                                    (true, ..) if a.restates => " (kept: every attempt restated the question)",
                                    (false, ..) if a.restates => " (set aside: restates the question instead of answering it)",
                                    (true, ..) if p.tries.iter().any(|a| a.restates) => " (kept: answers the question)",
                                    (true, true, _) => " (kept: names a missing piece)",
                                    (true, false, false) => " (kept: no attempt named a missing piece; this one asks nothing amiss)",
                                    (true, false, true) => " (kept: no attempt named a missing piece)",
                                    (false, _, false) => " (set aside: names no missing piece)",
                                    (false, _, true) => " (set aside: asks amiss, for the answer or the user's own question)",
                                }}</span>
                            </li>
                        }).collect_view()}
                    </ol>
                </details>
            })}
        </div>
    }
}

/// A finished reply's figures in one line: what it cost and why it ended.
fn message_stats(s: &TurnStats) -> String {
    let mut line = format!("{} tokens", s.generated);
    if s.generated > 0 {
        line += &format!(
            " · {:.1} tok/s · first token after {:.0} ms",
            s.decode_tok_s, s.first_token_ms
        );
    }
    line + &format!(" · stopped: {}", s.stop_reason.as_str())
}

/// Put `text` on the clipboard, and say so on the button that asked.
fn copy_text(ev: &web_sys::MouseEvent, text: &str) {
    use wasm_bindgen::JsCast;
    let Some(w) = web_sys::window() else { return };
    let _ = w.navigator().clipboard().write_text(text);
    if let Some(b) = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
    {
        b.set_text_content(Some("Copied"));
    }
}

/// A code block's Copy button (markup from `crate::markdown`, so one handler on the
/// transcript serves them all): copy that block's code.
fn copy_code(ev: web_sys::MouseEvent) {
    use wasm_bindgen::JsCast;
    let Some(button) = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .filter(|e| e.class_list().contains("copy-code"))
    else {
        return;
    };
    let code = button
        .parent_element()
        .and_then(|block| block.query_selector("code").ok().flatten())
        .and_then(|c| c.text_content())
        .unwrap_or_default();
    copy_text(&ev, &code);
}

/// The transcript scrolls in its own box, so that a streamed token lays out and
/// repaints that box and not the page under it. While the reader is at its bottom, it
/// follows the newest text; scrolling up stops that until they come back down, and a
/// new turn starts it again.
fn follow_transcript(state: State) -> (NodeRef<leptos::html::Ol>, impl Fn(web_sys::Event) + Copy) {
    let list = NodeRef::<leptos::html::Ol>::new();
    let follow = Follow::new(
        move || list.get_untracked().map(Into::into),
        move || state.chat.transcript.track(),
        |el| (el.scroll_height() - el.client_height()) as f64,
    );
    Effect::new(move |_| {
        if state.turn.generating.get() {
            follow.resume();
        }
    });
    let on_scroll = move |_| {
        if let Some(el) = list.get_untracked() {
            follow.scrolled(&el, 8.0);
        }
    };
    (list, on_scroll)
}

#[component]
pub fn ChatPanel() -> impl IntoView {
    let state = expect_context::<State>();
    let text = RwSignal::new(String::new());
    let tool_result = RwSignal::new(String::new());
    let awaits_tool = move || {
        state
            .chat
            .transcript
            .with(|t| t.last().is_some_and(|m| !m.tool_calls.is_empty()))
    };
    let no_model = move || state.models.card.get().is_none();
    let (list, on_scroll) = follow_transcript(state);
    // A reply past its first token is streaming (a memo: it changes twice a turn).
    let streaming =
        Memo::new(move |_| state.turn.generating.get() && state.turn.tokens.with(|t| t.len() > 1));
    view! {
        <h2>"Chat"</h2>
        {move || match state.models.card.get() {
            Some(c) => view! { <p class="model-line">"Model: "<strong>{c.name}</strong>{format!(" ({}, {})", c.quant, c.architecture)}</p> }.into_any(),
            None => view! { <p class="model-line">"No model loaded: download one from the catalog, load a cached one, or drop a .slm file."</p> }.into_any(),
        }}
        <label class="field system">
            <span>"System prompt"</span>
            <textarea aria-label="System prompt" rows="2" placeholder="Empty: the chat template's own default applies"
                prop:value=move || state.settings.system.get()
                on:input=move |ev| state.settings.system.set(event_target_value(&ev))></textarea>
        </label>
        {move || state.turn.divergence.get().map(|d| view! {
            <div class="divergence" role="status" data-testid="divergence">
                <strong>"Transcript and runtime context differ. "</strong>
                {d["explanation"].as_str().unwrap_or("").to_string()}
            </div>
        })}
        <ol class="transcript" role="log" aria-live="off" aria-label="Transcript" tabindex="0"
            node_ref=list on:scroll=on_scroll on:click=copy_code>
            // Keyed by position, each message a memo: a streamed token re-renders only
            // the message it grows.
            <For each=move || 0..state.chat.transcript.with(|t| t.len()) key=|i| *i let:i>
                <Message i=i/>
            </For>
        </ol>
        <p class="sr-only" role="status" aria-live="polite">{move || state.notices.announcement.get()}</p>
        // The line stays for the whole turn; a token changes only its text.
        {move || streaming.get().then(|| view! {
            <p class="live-rate" data-testid="live-rate">{move || {
                let n = state.turn.tokens.with(|t| t.len());
                let secs = state.turn.first_token_at.get().map_or(0.0, |start| (super::now_ms() - start) / 1e3);
                format!("Generating: {n} tokens, {:.1} tok/s", if secs > 0.0 { n.saturating_sub(1) as f64 / secs } else { 0.0 })
            }}</p>
        })}
        {move || state.turn.prefill.get().map(|(done, total)| view! {
            <p class="prefill" role="status" data-testid="prefill">
                {format!("Reading the prompt: {done} of {total} tokens")}
                <progress max=total.to_string() value=done.to_string()></progress>
            </p>
        })}
        {move || (awaits_tool() && !state.turn.generating.get()).then(|| view! {
            <div class="tool-result">
                <label class="field">
                    <span>"Tool result (sent as a tool message; the model then continues)"</span>
                    <textarea aria-label="Tool result" rows="2"
                        prop:value=move || tool_result.get()
                        on:input=move |ev| tool_result.set(event_target_value(&ev))></textarea>
                </label>
                <button on:click=move |_| send_tool_result(state, tool_result)>"Send tool result"</button>
            </div>
        })}
        <div class="composer">
            <textarea aria-label="Message" rows="3" placeholder="Message (Enter sends, Shift+Enter adds a line)"
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))
                on:keydown=move |ev: web_sys::KeyboardEvent| {
                    if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
                        ev.prevent_default();
                        send_message(state, text);
                    }
                }></textarea>
            <div class="buttons">
                <button class="primary" disabled=move || no_model() || state.turn.generating.get()
                    on:click=move |_| send_message(state, text)>"Send"</button>
                <button disabled=move || !state.turn.generating.get()
                    on:click=move |_| send(&Command::Stop)>"Stop"</button>

            </div>
        </div>
        <SettingsPanel/>
        <div class="context-controls">
            <div>
                <button disabled=move || no_model() || state.turn.generating.get()
                    on:click=move |_| {
                        send(&Command::ResetContext);
                        state.notices.notice.set(Some("Context reset: the model's KV cache is empty; the transcript stays, and the next turn re-reads all of it.".into()));
                    }>"Reset context"</button>
                <span class="explain">"Forget the model's KV cache, keep the messages. The next turn re-reads the whole transcript."</span>
            </div>
            <div>
                <button disabled=move || no_model() || state.turn.generating.get()
                    on:click=move |_| {
                        state.chat.transcript.set(vec![]);
                        state.turn.tokens.set(vec![]);
                        send(&Command::ClearTranscript);
                        state.notices.notice.set(Some("Transcript cleared: the messages are gone, but the KV cache still holds them until the next turn re-uses what matches.".into()));
                    }>"Clear transcript"</button>
                <span class="explain">"Forget the messages, keep the KV cache. The next turn reuses only the prefix that still matches."</span>
            </div>
            <div>
                <button disabled=move || no_model() || state.turn.generating.get()
                    on:click=move |_| send(&Command::Unload)>"Unload model"</button>
                <span class="explain">"Free the model's memory. The messages stay on the page; load a model to chat again."</span>
            </div>
        </div>
        {move || state.notices.notice.get().map(|n| view! { <p class="notice" role="status">{n}</p> })}
    }
}
