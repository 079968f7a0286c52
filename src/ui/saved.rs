//! The person's settings, kept in `localStorage` across reloads: system prompt, preset
//! and sampler, limits, context, tools, threads, whether the diagnostics are open, and the theme. (Conversations are another
//! matter: they belong in IndexedDB with the chats.)

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use slm_runtime::sampling::SamplerConfig;

use super::state::{ErrorView, State};

const KEY: &str = "tinyrustlm.settings.v1";

#[derive(Serialize, Deserialize, Default)]
#[serde(default)]
struct Saved {
    system: String,
    preset: Option<String>,
    sampler: Option<SamplerConfig>,
    max_tokens: Option<usize>,
    stop_strings: String,
    loop_detection: Option<bool>,
    clarify_first: Option<bool>,
    context: Option<usize>,
    tools: String,
    threads: Option<usize>,
    diagnostics_open: Option<bool>,
    theme: Option<String>,
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Put the saved settings into `state` (what is missing keeps its default), then save
/// every change from now on. A record this version cannot read is replaced.
pub fn keep(state: State) {
    let saved = storage()
        .and_then(|s| s.get_item(KEY).ok().flatten())
        .and_then(|t| serde_json::from_str::<Saved>(&t).ok())
        .unwrap_or_default();
    state.system.set(saved.system);
    if let Some(p) = saved.preset {
        state.preset.set(p);
    }
    if let Some(s) = saved.sampler {
        state.sampler.set(s);
    }
    if let Some(m) = saved.max_tokens {
        state.max_tokens.set(m);
    }
    state.stop_strings.set(saved.stop_strings);
    if let Some(l) = saved.loop_detection {
        state.loop_detection.set(l);
    }
    if let Some(c) = saved.clarify_first {
        state.clarify_first.set(c);
    }
    if let Some(c) = saved.context {
        state.context.set(c);
    }
    state.tools.set(saved.tools);
    state.threads_wanted.set(saved.threads);
    if let Some(d) = saved.diagnostics_open {
        state.diagnostics_open.set(d);
    }
    if let Some(t) = saved.theme {
        state.theme.set(t);
    }
    Effect::new(move |_| {
        let now = Saved {
            system: state.system.get(),
            preset: Some(state.preset.get()),
            sampler: Some(state.sampler.get()),
            max_tokens: Some(state.max_tokens.get()),
            stop_strings: state.stop_strings.get(),
            loop_detection: Some(state.loop_detection.get()),
            clarify_first: Some(state.clarify_first.get()),
            context: Some(state.context.get()),
            tools: state.tools.get(),
            threads: state.threads_wanted.get(),
            diagnostics_open: Some(state.diagnostics_open.get()),
            theme: Some(state.theme.get()),
        };
        let Ok(text) = serde_json::to_string(&now) else {
            return;
        };
        let stored = storage().map(|s| s.set_item(KEY, &text));
        if !matches!(stored, Some(Ok(()))) {
            state.error.set(Some(ErrorView {
                during: "settings".into(),
                kind: "storage".into(),
                message: "the settings could not be saved in this browser (storage is \
                          unavailable or full); they apply until the page is closed"
                    .into(),
                chunk: None,
            }));
        }
    });
}
