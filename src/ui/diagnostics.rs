//! What happened: the model card, KV use, stop reason, speed and memory, the exact
//! prompt, and the token console.

use leptos::prelude::*;

use super::{mb, State};

#[component]
pub fn DiagnosticsPanel() -> impl IntoView {
    view! {
        <h2>"Diagnostics"</h2>
        <ModelCard/>
        <KvBar/>
        <StopAndSpeed/>
        <PromptView/>
        <TokenConsole/>
    }
}

#[component]
fn ModelCard() -> impl IntoView {
    let state = expect_context::<State>();
    move || {
        state.card.get().map(|c| {
            let verified = c.evidence.as_ref().is_some_and(|e| e.verifies());
            let gate = if verified { "reference-verified".to_string() } else { c.quality_gate.clone() };
            view! {
                <div class="card" aria-label="Model card">
                    <h3>"Model card"</h3>
                    {(!verified).then(|| view! {
                        <p class="warning" role="note">
                            {format!("Not verified against a reference implementation (quality gate: {gate}). Outputs may differ from the original model.")}
                        </p>
                    })}
                    {c.evidence.clone().map(|e| view! {
                        <div class="evidence" aria-label="Gate evidence">
                            <p class=if e.verifies() { "verified" } else { "rejected" }>{e.summary.clone()}</p>
                            <ul>
                                {e.stages.iter().map(|(s, ok, crit, fig)| view! {
                                    <li>{format!("{s}: {} — {crit} {fig}", if *ok { "pass" } else { "FAIL" })}</li>
                                }).collect_view()}
                            </ul>
                            <p class="hash">{format!("source {} · goldens sha256 {}", e.source, e.goldens_sha256)}</p>
                        </div>
                    })}
                    <EvidencePicker/>
                    <dl>
                        <dt>"Architecture"</dt><dd>{format!("{} · {} layers · hidden {}", c.architecture, c.layers, c.hidden)}</dd>
                        <dt>"Heads / KV heads"</dt><dd>{format!("{} / {}", c.heads, c.kv_heads)}</dd>
                        <dt>"Vocabulary"</dt><dd>{c.vocab}</dd>
                        <dt>"Context"</dt><dd>{move || format!("{} (this session allocates {})", c.context, state.kv.get().1)}</dd>
                        <dt>"Quant"</dt><dd>{c.quant.clone()}</dd>
                        <dt>"EOS ids"</dt><dd>{format!("{:?}", c.eos_ids)}</dd>
                        <dt>"Source"</dt><dd>{c.source_kind.clone()}</dd>
                        {c.source_files.iter().map(|(n, h)| view! { <dt>"Source file"</dt><dd class="hash">{format!("{n} sha256 {h}")}</dd> }).collect_view()}
                        <dt>"Converter"</dt><dd>{c.converter.clone()}</dd>
                        <dt>"Quality gate"</dt><dd class="quality-gate">{gate.clone()}</dd>
                        <dt>"File SHA-256"</dt><dd class="hash">{c.file_sha256.clone()}</dd>
                        <dt>"Data chunks"</dt><dd>{format!("{} verified", c.chunks)}</dd>
                        <dt>"Memory"</dt><dd data-testid="memory-plan" data-planned=c.plan.total.to_string() data-measured=c.memory_measured.to_string()>{format!(
                            "planned {} (weights {} + KV cache {} + buffers {}) · measured {} (the worker's wasm memory after loading: {:+.1}% of the plan)",
                            mb(c.plan.total as f64), mb(c.plan.weights as f64), mb(c.plan.kv as f64), mb(c.plan.other as f64),
                            mb(c.memory_measured as f64), (c.memory_measured as f64 / c.plan.total.max(1) as f64 - 1.0) * 100.0)}</dd>
                        <dt>"Load time"</dt><dd>{format!("{:.2} s", c.load_ms / 1e3)}</dd>
                    </dl>
                </div>
            }
        })
    }
}

/// Attach a quality-gate evidence record (`slm gate` output) to the loaded model: the
/// worker checks that it speaks for this file before the card shows it.
#[component]
fn EvidencePicker() -> impl IntoView {
    let on_pick = move |ev: web_sys::Event| {
        use wasm_bindgen::JsCast;
        let input: web_sys::HtmlInputElement = ev.target().unwrap().unchecked_into();
        if let Some(f) = input.files().and_then(|f| f.get(0)) {
            leptos::task::spawn_local(async move {
                let name = f.name();
                if let Ok(text) = wasm_bindgen_futures::JsFuture::from(f.text()).await {
                    super::client::send(&crate::protocol::Command::AttachEvidence {
                        json: text.as_string().unwrap_or_default(),
                        source: format!("attached file {name}"),
                    });
                }
            });
        }
        input.set_value("");
    };
    view! {
        <label class="picker">"Attach gate evidence: "
            <input type="file" accept=".json,application/json" aria-label="Attach gate evidence" on:change=on_pick/>
        </label>
    }
}

#[component]
fn KvBar() -> impl IntoView {
    let state = expect_context::<State>();
    move || {
        let (len, cap) = state.kv.get();
        let pct = if cap > 0 {
            len as f64 * 100.0 / cap as f64
        } else {
            0.0
        };
        view! {
            <div class="kv">
                <h3>"KV cache"</h3>
                <div class="bar" role="progressbar" aria-label="KV cache use" aria-valuemin="0"
                    aria-valuemax=cap.to_string() aria-valuenow=len.to_string()>
                    <div class="fill" style=format!("width: {pct:.1}%")></div>
                </div>
                <div class="kv-text" data-testid="kv-length">{format!("KV length {len} / {cap}")}</div>
            </div>
        }
    }
}

#[component]
fn StopAndSpeed() -> impl IntoView {
    let state = expect_context::<State>();
    move || {
        state.stats.get().map(|s| {
            let detail = match s.stop_reason.as_str() {
                "stop_string" => format!("matched {}", s.stop_detail["stop"].as_str().map(|x| format!("{x:?}")).unwrap_or_else(|| s.stop_detail.to_string())),
                "loop_detected" => format!("pattern {:?} ({} repeats)", s.stop_detail["pattern_text"].as_str().unwrap_or(""), s.stop_detail["repeats"]),
                _ => s.stop_detail.to_string(),
            };
            view! {
                <div class="turn-stats">
                    <h3>"Last turn"</h3>
                    <p class="stop-reason" data-testid="stop-reason">{format!("Stop reason: {}", s.stop_reason)}</p>
                    <p class="stop-detail">{detail}</p>
                    <p>{format!("Prompt {} tokens: {} reused from the KV cache, {} prefilled; {} generated.", s.prompt_tokens, s.reused_tokens, s.prefilled_tokens, s.generated)}</p>
                    <p class="speed" data-testid="speed">{format!("Prefill {:.1} tok/s · decode {:.1} tok/s · first token after {:.0} ms", s.prefill_tok_s, s.decode_tok_s, s.first_token_ms)}</p>
                    <p class="memory">{format!("Worker memory (wasm heap): {}", mb(s.memory_bytes))}</p>
                </div>
            }
        })
    }
}

#[component]
fn PromptView() -> impl IntoView {
    let state = expect_context::<State>();
    move || {
        state.prompt.get().map(|p| {
            view! {
                <details class="prompt-view">
                    <summary>{format!("Prompt view: {} tokens, SHA-256 {}", p.ids.len(), &p.sha256[..16])}</summary>
                    <p class="hash" data-testid="prompt-sha256">{format!("SHA-256 {}", p.sha256)}</p>
                    <pre class="rendered" data-testid="rendered-prompt">{p.rendered.clone()}</pre>
                    <div class="ids">
                        {p.ids.iter().zip(p.pieces.iter()).enumerate().map(|(i, (id, piece))| {
                            let reused = i < p.reused;
                            view! { <span class="tok" class:reused=reused title=format!("#{i} id {id}")>{format!("{id}:{piece:?}")}</span> }
                        }).collect_view()}
                    </div>
                </details>
            }
        })
    }
}

#[component]
fn TokenConsole() -> impl IntoView {
    let state = expect_context::<State>();
    view! {
        <h2>"Token console"</h2>
        <table class="console">
            <thead><tr><th>"#"</th><th>"id"</th><th>"piece"</th><th>"p"</th><th>"draw"</th><th>"top candidates"</th></tr></thead>
            <tbody>
                <For each=move || state.tokens.get() key=|r| r.index let:r>
                    <tr class="token-row">
                        <td>{r.index}</td>
                        <td class="token-id">{r.id}</td>
                        <td class="piece">{format!("{:?}", r.piece)}</td>
                        <td>{format!("{:.3}", r.prob)}</td>
                        <td>{r.draw.map(|d| format!("{d:.4}")).unwrap_or_else(|| "greedy".into())}</td>
                        <td class="top">{r.top.iter().map(|(id, piece, p)| format!("{piece:?} ({id}) {p:.3}")).collect::<Vec<_>>().join(" · ")}</td>
                    </tr>
                </For>
            </tbody>
        </table>
    }
}
