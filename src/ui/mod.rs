//! The page. It owns no model: it shows state and sends commands to the worker
//! (`client`), whose events (`state::apply`) update the signals the views read.

mod chat;
mod chat_file;
mod chat_store;
mod client;
mod conversations;
mod diagnostics;
mod follow;
mod models;
mod saved;
mod settings;
mod state;

use leptos::prelude::*;
use wasm_bindgen::JsCast;

pub use state::State;

pub fn start() {
    console_error_panic_hook::set_once();
    register_service_worker();
    leptos::mount::mount_to_body(App);
}

/// The service worker keeps the app shell for offline use (public/sw.js).
fn register_service_worker() {
    let Some(w) = web_sys::window() else { return };
    let sw = w.navigator().service_worker();
    let _ = sw.register("./sw.js");
}

#[component]
fn App() -> impl IntoView {
    let state = State::new();
    provide_context(state);
    saved::keep(state);
    conversations::start(state);
    theme::follow(state);
    stop_on_escape(state);
    client::start(state);
    models::fetch_catalog(state);
    view! {
        <header class="top">
            <h1>"TinyRustLM"</h1>
            <span class="tagline">"A small instruct model, running in this tab. Nothing leaves your machine."</span>
            <span class="worker-state">{move || if state.worker.ready.get() { "worker ready" } else { "starting worker…" }}</span>
            <label class="theme">
                <select class="theme-select" aria-label="Theme"
                    prop:value=move || state.view.theme.get()
                    on:change=move |ev| state.view.theme.set(event_target_value(&ev))>
                    <option value="system">"System theme"</option>
                    <option value="light">"Light"</option>
                    <option value="dark">"Dark"</option>
                </select>
            </label>
            <button class="diag-toggle" aria-pressed=move || state.view.diagnostics_open.get().to_string()
                title="Closed, turns record no sampler stages, so decoding does no extra work"
                on:click=move |_| state.view.diagnostics_open.update(|o| *o = !*o)>
                {move || if state.view.diagnostics_open.get() { "Hide diagnostics" } else { "Show diagnostics" }}
            </button>
        </header>
        {move || state.notices.error.get().map(|e| view! {
            <div class="error" role="alert">
                <strong>{format!("Error ({}, {}): ", e.during, e.kind)}</strong>
                <span class="error-message">{e.message.clone()}</span>
                {e.chunk.map(|c| view! { <span class="bad-chunk">{format!(" First bad chunk: {c}.")}</span> })}
                <button class="dismiss" on:click=move |_| state.notices.error.set(None)>"Dismiss"</button>
            </div>
        })}
        <main class="layout" class:no-diag=move || !state.view.diagnostics_open.get()>
            <section class="column models-column" aria-label="Models">
                <models::ModelsPanel/>
            </section>
            <section class="column chat-column" aria-label="Chat">
                <conversations::ConversationsPanel/>
                <chat::ChatPanel/>
            </section>
            <Show when=move || state.view.diagnostics_open.get()>
                <section class="column diag-column" aria-label="Diagnostics panels">
                    <diagnostics::DiagnosticsPanel/>
                </section>
            </Show>
        </main>
    }
}

/// Esc stops a reply (or a prompt being read), wherever the focus is.
fn stop_on_escape(state: State) {
    let handle = window_event_listener(leptos::ev::keydown, move |e| {
        if e.key() == "Escape" && state.turn.generating.get_untracked() {
            client::send(&crate::protocol::Command::Stop);
        }
    });
    // The page lives as long as the tab: the listener is never removed.
    std::mem::forget(handle);
}

mod theme {
    use super::State;
    use leptos::prelude::*;

    /// Keep `<html data-theme>` on the chosen theme; none for "system", so that the
    /// stylesheet follows `prefers-color-scheme`.
    pub fn follow(state: State) {
        Effect::new(move |_| {
            let t = state.view.theme.get();
            let Some(root) = web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| d.document_element())
            else {
                return;
            };
            let _ = match t.as_str() {
                "light" | "dark" => root.set_attribute("data-theme", &t),
                _ => root.remove_attribute("data-theme"),
            };
        });
    }
}

/// performance.now() on the page.
pub fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

pub fn mb(bytes: f64) -> String {
    format!("{:.1} MB", bytes / 1e6)
}

/// The page's `navigator.storage.persist()`: ask once, before the first download.
pub fn request_persistence() {
    if let Some(w) = web_sys::window() {
        // A JS promise runs unawaited; the browser's answer is not needed here.
        let _ = w.navigator().storage().persist();
    }
}

pub fn input_value(ev: &web_sys::Event) -> String {
    ev.target()
        .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
        .map(|i| i.value())
        .unwrap_or_default()
}

/// Offer `text` as a file download (a Blob URL on a temporary link).
pub fn offer_file(name: &str, mime: &str, text: &str) -> Result<(), String> {
    use wasm_bindgen::JsCast;
    let err = |e: wasm_bindgen::JsValue| format!("{e:?}");
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts).map_err(err)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(err)?;
    let doc = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("no document")?;
    let a: web_sys::HtmlAnchorElement = doc.create_element("a").map_err(err)?.unchecked_into();
    a.set_href(&url);
    a.set_download(name);
    a.click();
    let _ = web_sys::Url::revoke_object_url(&url);
    Ok(())
}
