//! The person's settings, kept in `localStorage` across reloads. The chat settings
//! (`ChatPrefs`: system prompt, preset and sampler, limits, context, tools) are also
//! kept with each conversation (`conversations`); the ones here are what a new chat
//! starts with. Threads, the diagnostics column and the theme belong to the page.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use slm_runtime::sampling::SamplerConfig;

use super::state::{ErrorView, State};
use crate::protocol::{ErrorKind, Operation};

const KEY: &str = "tinyrustlm.settings.v1";

/// How a chat's replies are generated, as the settings panel holds it. A field that is
/// missing keeps what the page has.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ChatPrefs {
    pub system: String,
    pub preset: Option<String>,
    pub sampler: Option<SamplerConfig>,
    pub max_tokens: Option<usize>,
    pub stop_strings: String,
    pub loop_detection: Option<bool>,
    pub clarify_first: Option<bool>,
    pub context: Option<usize>,
    pub overflow: Option<slm_runtime::session::Overflow>,
    pub tools: String,
}

impl ChatPrefs {
    /// The settings in use (tracked: an effect that reads them reruns on a change).
    pub fn read(state: State) -> ChatPrefs {
        ChatPrefs {
            system: state.settings.system.get(),
            preset: Some(state.settings.preset.get()),
            sampler: Some(state.settings.sampler.get()),
            max_tokens: Some(state.settings.max_tokens.get()),
            stop_strings: state.settings.stop_strings.get(),
            loop_detection: Some(state.settings.loop_detection.get()),
            clarify_first: Some(state.settings.clarify_first.get()),
            context: Some(state.settings.context.get()),
            overflow: Some(state.settings.overflow.get()),
            tools: state.settings.tools.get(),
        }
    }

    /// Make these the settings in use.
    pub fn apply(self, state: State) {
        state.settings.system.set(self.system);
        if let Some(p) = self.preset {
            state.settings.preset.set(p);
        }
        if let Some(s) = self.sampler {
            state.settings.sampler.set(s);
        }
        if let Some(m) = self.max_tokens {
            state.settings.max_tokens.set(m);
        }
        state.settings.stop_strings.set(self.stop_strings);
        if let Some(l) = self.loop_detection {
            state.settings.loop_detection.set(l);
        }
        if let Some(c) = self.clarify_first {
            state.settings.clarify_first.set(c);
        }
        if let Some(c) = self.context {
            state.settings.context.set(c);
        }
        if let Some(o) = self.overflow {
            state.settings.overflow.set(o);
        }
        state.settings.tools.set(self.tools);
    }
}

#[derive(Serialize, Deserialize, Default)]
#[serde(default)]
struct Saved {
    #[serde(flatten)]
    chat: ChatPrefs,
    threads: Option<usize>,
    diagnostics_open: Option<bool>,
    theme: Option<String>,
}

pub fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Put the saved settings into `state` (what is missing keeps its default), then save
/// every change from now on. A record this version cannot read is replaced.
pub fn keep(state: State) {
    let saved = storage()
        .and_then(|s| s.get_item(KEY).ok().flatten())
        .and_then(|t| serde_json::from_str::<Saved>(&t).ok())
        .unwrap_or_default();
    saved.chat.apply(state);
    state.worker.threads_wanted.set(saved.threads);
    if let Some(d) = saved.diagnostics_open {
        state.view.diagnostics_open.set(d);
    }
    if let Some(t) = saved.theme {
        state.view.theme.set(t);
    }
    Effect::new(move |_| {
        let now = Saved {
            chat: ChatPrefs::read(state),
            threads: state.worker.threads_wanted.get(),
            diagnostics_open: Some(state.view.diagnostics_open.get()),
            theme: Some(state.view.theme.get()),
        };
        let Ok(text) = serde_json::to_string(&now) else {
            return;
        };
        if !remember(KEY, &text) {
            state.notices.error.set(Some(ErrorView {
                during: Operation::Settings,
                kind: ErrorKind::Storage,
                message: "the settings could not be saved in this browser (storage is \
                          unavailable or full); they apply until the page is closed"
                    .into(),
                chunk: None,
            }));
        }
    });
}

/// Write one `localStorage` item; false if the browser refused.
pub fn remember(key: &str, value: &str) -> bool {
    matches!(storage().map(|s| s.set_item(key, value)), Some(Ok(())))
}

/// Read one `localStorage` item.
pub fn recall(key: &str) -> Option<String> {
    storage()?.get_item(key).ok().flatten()
}
