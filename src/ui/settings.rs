//! Sampling presets and the advanced panel: every sampler control and the seed.

use leptos::prelude::*;
use slm_runtime::sampling::SamplerConfig;
use slm_runtime::session::Overflow;

use super::State;
use crate::protocol::ChatSettings;

/// The tools field as the template's `tools`: None when empty, else a JSON list of
/// objects (function schemas), or why not.
pub fn parse_tools(text: &str) -> Result<Option<serde_json::Value>, String> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("the tools are not JSON: {e}"))?;
    slm_runtime::tool_calls::check_tools(&v)?;
    Ok(Some(v))
}

/// What the next turn is generated with (validated by the worker's runtime too), or
/// why it cannot be sent (invalid tools JSON, an unreadable logit bias).
pub fn current(state: State) -> Result<ChatSettings, String> {
    if let Some(e) = state.settings.bias_error.get_untracked() {
        return Err(e);
    }
    Ok(ChatSettings {
        tools: parse_tools(&state.settings.tools.get_untracked())?,
        system: state.settings.system.get_untracked(),
        sampler: state.settings.sampler.get_untracked(),
        max_tokens: state.settings.max_tokens.get_untracked(),
        stop_strings: state
            .settings
            .stop_strings
            .get_untracked()
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect(),
        loop_detection: state.settings.loop_detection.get_untracked(),
        context: state.settings.context.get_untracked(),
        trace: state.view.diagnostics_open.get_untracked(),
        clarify_first: state.settings.clarify_first.get_untracked(),
        overflow: state.settings.overflow.get_untracked(),
    })
}

/// Context sizes offered (up to the loaded model's own length).
const CONTEXTS: [usize; 7] = [512, 1024, 2048, 4096, 8192, 16384, 32768];

/// The context setting, with what its KV cache costs for the loaded model.
#[component]
fn ContextField() -> impl IntoView {
    let state = expect_context::<State>();
    let max = move || {
        state
            .models
            .card
            .with(|c| c.as_ref().map_or(usize::MAX, |c| c.context))
    };
    let cost = move || {
        state.models.card.with(|c| {
            c.as_ref().map(|c| {
                let p = c.needs.at(state.settings.context.get() as u64);
                format!(
                    "KV cache {} · in all {}",
                    super::mb(p.kv as f64),
                    super::mb(p.total as f64)
                )
            })
        })
    };
    view! {
        <label class="field">
            <span>"Context size"</span>
            <select aria-label="Context size" prop:value=move || state.settings.context.get().to_string()
                on:change=move |ev| {
                    if let Ok(v) = event_target_value(&ev).parse::<usize>() { state.settings.context.set(v) }
                }>
                {move || CONTEXTS.iter().filter(|&&n| n <= max()).map(|&n| {
                    view! { <option value=n.to_string() selected=move || state.settings.context.get() == n>{format!("{n} tokens")}</option> }
                }).collect_view()}
            </select>
            <span class="context-cost" data-testid="context-cost">{cost}</span>
        </label>
        <label class="field">
            <span>"When a turn does not fit"</span>
            <select aria-label="Context policy"
                prop:value=move || policy_value(state.settings.overflow.get())
                on:change=move |ev| {
                    let p = serde_json::from_value(serde_json::Value::String(event_target_value(&ev)));
                    if let Ok(p) = p { state.settings.overflow.set(p) }
                }>
                {[Overflow::Stop, Overflow::DropOldest, Overflow::TruncateMiddle].into_iter().map(|p| view! {
                    <option value=policy_value(p) selected=move || state.settings.overflow.get() == p>{p.describe()}</option>
                }).collect_view()}
            </select>
        </label>
    }
}

/// The policy's name as the protocol spells it.
fn policy_value(p: Overflow) -> String {
    serde_json::to_value(p)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// The threads setting: 1..=what the worker can have, with why not more.
#[component]
fn ThreadsField() -> impl IntoView {
    let state = expect_context::<State>();
    let view = move || state.worker.threads.get();
    let available = move || view().map_or(1, |t| t.available);
    let count = move || view().map_or(1, |t| t.count);
    view! {
        <label class="field">
            <span>"Threads"</span>
            <select aria-label="Threads" prop:value=move || count().to_string()
                disabled=move || available() <= 1 || state.turn.generating.get()
                on:change=move |ev| {
                    if let Ok(n) = event_target_value(&ev).parse::<usize>() {
                        state.worker.threads_wanted.set(Some(n));
                        super::client::send(&crate::protocol::Command::Threads { count: n });
                    }
                }>
                {move || (1..=available()).map(|n| {
                    view! { <option value=n.to_string() selected=move || count() == n>{n.to_string()}</option> }
                }).collect_view()}
            </select>
            <span class="threads-note" data-testid="threads-note">
                {move || view().and_then(|t| t.note)}
            </span>
        </label>
    }
}

fn apply_preset(state: State, name: &str) {
    state.settings.preset.set(name.to_string());
    // On by default for the chat preset; the other presets are for tasks that state
    // what they need (code, JSON) or for diagnostics.
    state.settings.clarify_first.set(name == "chat");
    let seed = state.settings.sampler.get_untracked().seed;
    // Without a model, "model" has no generation_config to follow: the default.
    let mut cfg = state
        .models
        .card
        .with_untracked(|card| {
            let c = card.as_ref()?;
            let empty = serde_json::Map::new();
            let gen = c.generation_config.as_object().unwrap_or(&empty);
            SamplerConfig::preset_for_model(name, gen, &c.preset_tuning)
        })
        .or_else(|| SamplerConfig::preset(name))
        .unwrap_or_default();
    cfg.seed = seed;
    state.settings.sampler.set(cfg);
}

/// A sampler value as typed: whole numbers as they are (seeds), fractions as the
/// shortest text of their f32 (0.35, not 0.3499999940395355).
fn shown(v: f64) -> String {
    if v.fract() == 0.0 {
        v.to_string()
    } else {
        (v as f32).to_string()
    }
}

/// A number field bound to one sampler parameter, with what it does in one line.
fn number_field(
    state: State,
    (label, help): (&'static str, &'static str),
    step: &'static str,
    get: fn(&SamplerConfig) -> f64,
    set: fn(&mut SamplerConfig, f64),
) -> impl IntoView {
    view! {
        <label class="field" title=help>
            <span>{label}</span>
            <span class="help">{help}</span>
            <input type="number" step=step aria-label=label
                prop:value=move || state.settings.sampler.with(|c| shown(get(c)))
                on:change=move |ev| {
                    if let Ok(v) = event_target_value(&ev).parse::<f64>() {
                        state.settings.sampler.update(|c| set(c, v));
                        state.settings.preset.set("custom".into());
                    }
                }/>
        </label>
    }
}

/// What the loaded model changes in the chosen preset, said where the preset is
/// chosen: a tuned preset must never look like the stock one.
fn preset_tuned_note(state: State) -> Option<impl IntoView> {
    let name = state.settings.preset.get();
    let card = state.models.card.get()?;
    let fields = card.preset_tuning.get(&name).filter(|f| !f.is_empty())?;
    let f = slm_runtime::sampling::tuning_text(fields);
    Some(view! {
        <p class="hint" data-testid="preset-tuning">
            {format!("This model tunes the {name} preset: {f} (measured, docs/behaviour.md).")}
        </p>
    })
}

#[component]
pub fn SettingsPanel() -> impl IntoView {
    let state = expect_context::<State>();
    let presets = ["chat", "precise", "creative", "code", "json", "model"];
    view! {
        <div class="settings">
            <label class="field">
                <span>"Preset"</span>
                <select aria-label="Preset" on:change=move |ev| apply_preset(state, &event_target_value(&ev))
                    prop:value=move || state.settings.preset.get()>
                    {presets.iter().map(|p| view! { <option value=*p>{*p}</option> }).collect_view()}
                    <option value="custom" disabled=true>"custom"</option>
                </select>
            </label>
            {move || preset_tuned_note(state)}
            <label class="field check" title="When a message leaves out something the answer depends on (the text to translate, a place, a date, a language), the model is told what is missing and asks for it instead of guessing. The note it is given is shown under your message.">
                <input type="checkbox" aria-label="Clarify first" prop:checked=move || state.settings.clarify_first.get()
                    on:change=move |ev| state.settings.clarify_first.set(event_target_checked(&ev))/>
                <span>"Clarify first (ask instead of guessing)"</span>
            </label>
            <ContextField/>
            <ThreadsField/>
            <details class="advanced">
                <summary>"Advanced sampling"</summary>
                {number_field(state, ("Temperature", "Divides the logits before the filters; 0 is greedy (always the most likely token)."), "0.05", |c| c.temperature as f64, |c, v| c.temperature = v as f32)}
                {number_field(state, ("Top-k", "Keeps the k most likely tokens (ties at the k-th are kept); 0 turns it off."), "1", |c| c.top_k as f64, |c, v| c.top_k = v.max(0.0) as usize)}
                {number_field(state, ("Top-p", "Keeps the fewest tokens whose probabilities add up to p; 1 turns it off."), "0.01", |c| c.top_p as f64, |c, v| c.top_p = v as f32)}
                {number_field(state, ("Min-p", "Drops tokens less likely than min-p times the most likely one; 0 turns it off."), "0.01", |c| c.min_p as f64, |c, v| c.min_p = v as f32)}
                {number_field(state, ("Typical-p", "Keeps the tokens whose surprise is nearest the average, up to mass p; 1 turns it off."), "0.01", |c| c.typical_p as f64, |c, v| c.typical_p = v as f32)}
                {number_field(state, ("Repetition penalty", "Divides a positive logit (multiplies a negative one) of every token already in the context, once; 1 turns it off."), "0.01", |c| c.repetition_penalty as f64, |c, v| c.repetition_penalty = v as f32)}
                {number_field(state, ("Presence penalty", "Subtracted from the logit of every token the reply has used; 0 turns it off."), "0.05", |c| c.presence_penalty as f64, |c, v| c.presence_penalty = v as f32)}
                {number_field(state, ("Frequency penalty", "Subtracted once per earlier use of a token in the reply; 0 turns it off."), "0.05", |c| c.frequency_penalty as f64, |c, v| c.frequency_penalty = v as f32)}
                {number_field(state, ("Seed", "Seeds the random draws: the same seed, settings and prompt give the same reply."), "1", |c| c.seed as f64, |c, v| c.seed = v.max(0.0) as u64)}
                <label class="field">
                    <span>"Logit bias (id:bias per line)"</span>
                    <textarea aria-label="Logit bias" rows="2"
                        prop:value=move || state.settings.sampler.with(|c| c.logit_bias.iter().map(|(i, b)| format!("{i}:{b}")).collect::<Vec<_>>().join("\n"))
                        on:change=move |ev| match crate::parse::logit_bias(&event_target_value(&ev)) {
                            Ok(bias) => {
                                state.settings.bias_error.set(None);
                                state.settings.sampler.update(|c| c.logit_bias = bias);
                            }
                            // Nothing is sent while the field holds what it cannot read.
                            Err(e) => state.settings.bias_error.set(Some(e)),
                        }></textarea>
                    {move || state.settings.bias_error.get().map(|e| view! { <span class="invalid" role="alert">{e}</span> })}
                </label>
                <label class="field">
                    <span>"Max new tokens"</span>
                    <input type="number" min="1" aria-label="Max new tokens"
                        prop:value=move || state.settings.max_tokens.get().to_string()
                        on:change=move |ev| {
                            if let Ok(v) = event_target_value(&ev).parse::<usize>() { state.settings.max_tokens.set(v.max(1)) }
                        }/>
                </label>
                <label class="field">
                    <span>"Stop strings (one per line)"</span>
                    <textarea aria-label="Stop strings" rows="2"
                        prop:value=move || state.settings.stop_strings.get()
                        on:input=move |ev| state.settings.stop_strings.set(event_target_value(&ev))></textarea>
                </label>
                <label class="field">
                    <span>"Tools (a JSON list of function schemas, rendered by the model's template)"</span>
                    <textarea aria-label="Tools" rows="4" placeholder=r#"[{"type": "function", "function": {"name": "get_weather", "parameters": {...}}}]"#
                        prop:value=move || state.settings.tools.get()
                        on:input=move |ev| state.settings.tools.set(event_target_value(&ev))></textarea>
                    {move || parse_tools(&state.settings.tools.get()).err().map(|e| view! { <span class="invalid" role="alert">{e}</span> })}
                </label>
                <label class="field check">
                    <input type="checkbox" prop:checked=move || state.settings.loop_detection.get()
                        on:change=move |ev| state.settings.loop_detection.set(event_target_checked(&ev))/>
                    <span>"Stop on repetition loops"</span>
                </label>
            </details>
        </div>
    }
}
