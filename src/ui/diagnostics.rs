//! What happened: the model card, KV use, stop reason, speed and memory, the exact
//! prompt, and the token console.

use leptos::prelude::*;

use super::follow::Follow;
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
        state.models.card.get().map(|c| {
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
                        <dt>"Context"</dt><dd>{move || format!("{} (this session allocates {})", c.context, state.turn.kv.get().1)}</dd>
                        <dt>"Quant"</dt><dd>{c.quant.clone()}</dd>
                        <dt>"EOS ids"</dt><dd>{format!("{:?}", c.eos_ids)}</dd>
                        <dt>"Source"</dt><dd>{c.source_kind.clone()}</dd>
                        {c.source_files.iter().map(|(n, h)| view! { <dt>"Source file"</dt><dd class="hash">{format!("{n} sha256 {h}")}</dd> }).collect_view()}
                        <dt>"Converter"</dt><dd>{c.converter.clone()}</dd>
                        <dt>"Quality gate"</dt><dd class="quality-gate">{gate.clone()}</dd>
                        // The behaviour gate of the catalog entry this very file is (by hash).
                        {
                            let sha = c.file_sha256.clone();
                            move || state.models.catalog.with(|cat| cat.iter().find(|e| e.sha256 == sha).and_then(|e| e.behaviour.clone())).map(|b| {
                                let (passes, text) = b.summary();
                                view! { <dt>"Behaviour gate"</dt><dd data-testid="card-behaviour" data-passes=passes.to_string()>{text}</dd> }
                            })
                        }
                        <dt>"File SHA-256"</dt><dd class="hash">{c.file_sha256.clone()}</dd>
                        <dt>"Data chunks"</dt><dd>{format!("{} verified", c.chunks)}</dd>
                        <dt>"Memory"</dt><dd data-testid="memory-plan" data-planned=c.plan.total.to_string() data-measured=c.memory_measured.to_string()>{format!(
                            "planned {} (weights {} + KV cache {} + buffers {}) · measured {} (the worker's wasm memory after loading: {:+.1}% of the plan)",
                            mb(c.plan.total as f64), mb(c.plan.weights as f64), mb(c.plan.kv as f64), mb(c.plan.other as f64),
                            mb(c.memory_measured as f64), (c.memory_measured as f64 / c.plan.total.max(1) as f64 - 1.0) * 100.0)}</dd>
                        <dt>"Load time"</dt><dd>{format!("{:.2} s", c.load_ms / 1e3)}</dd>
                    </dl>
                    <ExecutionFacts facts=c.execution.clone()/>
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

/// The KV cache's use. It changes with every token, so the block stays and only the
/// bar's width, its value and the line of text follow.
#[component]
fn KvBar() -> impl IntoView {
    let state = expect_context::<State>();
    let pct = move || {
        let (len, cap) = state.turn.kv.get();
        if cap > 0 {
            len as f64 * 100.0 / cap as f64
        } else {
            0.0
        }
    };
    view! {
        <div class="kv">
            <h3>"KV cache"</h3>
            <div class="bar" role="progressbar" aria-label="KV cache use" aria-valuemin="0"
                aria-valuemax=move || state.turn.kv.get().1.to_string()
                aria-valuenow=move || state.turn.kv.get().0.to_string()>
                <div class="fill" style:width=move || format!("{:.1}%", pct())></div>
            </div>
            <div class="kv-text" data-testid="kv-length">{move || {
                let (len, cap) = state.turn.kv.get();
                format!("KV length {len} / {cap}")
            }}</div>
        </div>
    }
}

#[component]
fn StopAndSpeed() -> impl IntoView {
    let state = expect_context::<State>();
    move || {
        state.turn.stats.get().map(|s| {
            let detail = match s.stop_reason.as_str() {
                "stop_string" => format!("matched {}", s.stop_detail["stop"].as_str().map(|x| format!("{x:?}")).unwrap_or_else(|| s.stop_detail.to_string())),
                "loop_detected" => format!("pattern {:?} ({} repeats)", s.stop_detail["pattern_text"].as_str().unwrap_or(""), s.stop_detail["repeats"]),
                _ => s.stop_detail.to_string(),
            };
            view! {
                <div class="turn-stats">
                    <h3>"Last turn"</h3>
                    <p class="stop-reason" data-testid="stop-reason">{format!("Stop reason: {}", s.stop_reason.as_str())}</p>
                    <p class="stop-detail">{detail}</p>
                    <p>{format!("Prompt {} tokens: {} reused from the KV cache, {} prefilled; {} generated.", s.prompt_tokens, s.reused_tokens, s.prefilled_tokens, s.generated)}</p>
                    <p class="speed" data-testid="speed">{format!("Prefill {:.1} tok/s · decode {:.1} tok/s · first token after {:.0} ms", s.prefill_tok_s, s.decode_tok_s, s.first_token_ms)}</p>
                    <p class="memory">{format!("Worker memory (wasm heap): {}", mb(s.memory_bytes))}</p>
                </div>
            }
        })
    }
}

/// How the forward pass runs this model, as the runtime applies it.
#[component]
fn ExecutionFacts(facts: slm_runtime::facts::ExecutionFacts) -> impl IntoView {
    let state = expect_context::<State>();
    let x = facts;
    view! {
        <details class="execution" data-testid="execution-facts">
            <summary>"Execution"</summary>
            <dl>
                <dt>"RoPE"</dt><dd>{x.rope.clone()}</dd>
                <dt>"Heads"</dt><dd>{format!("{} query heads, {} KV heads ({} per KV head), head_dim {}", x.heads, x.kv_heads, x.heads / x.kv_heads.max(1), x.head_dim)}</dd>
                <dt>"Layers"</dt><dd>{format!("{} · hidden {} · MLP {}", x.layers, x.hidden, x.intermediate)}</dd>
                <dt>"Norm eps"</dt><dd>{x.rms_norm_eps.to_string()}</dd>
                <dt>"LM head"</dt><dd>{if x.tied_head { "tied to the embeddings" } else { "its own matrix" }}</dd>
                <dt>"QKV bias"</dt><dd>{x.attention_bias.to_string()}</dd>
                <dt>"Weights"</dt><dd>{x.weights.clone()}</dd>
                <dt>"Activations"</dt><dd>{x.activations.clone()}</dd>
                <dt>"Kernels"</dt><dd data-testid="kernel-path">{move || {
                    let n = state.worker.threads.get().map_or(x.threads, |t| t.count);
                    format!("{} on {n} thread{}", x.kernels, if n == 1 { "" } else { "s" })
                }}</dd>
                {x.read_ahead.map(|r| view! {
                    <dt>"Read-ahead"</dt><dd data-testid="read-ahead">{r.describe()}</dd>
                })}
            </dl>
        </details>
    }
}

#[component]
fn PromptView() -> impl IntoView {
    let state = expect_context::<State>();
    move || {
        state.turn.prompt.get().map(|p| {
            view! {
                <details class="prompt-view">
                    <summary>{format!("Prompt view: {} tokens ({} reused from the KV cache), SHA-256 {}", p.ids.len(), p.reused, &p.sha256[..16])}</summary>
                    <p class="reused" data-testid="prompt-reused" data-reused=p.reused.to_string()>
                        {format!("{} of {} prompt tokens were reused from the KV cache; {} were read.", p.reused, p.ids.len(), p.ids.len() - p.reused.min(p.ids.len()))}
                    </p>
                    {p.fitted.clone().map(|f| view! {
                        <p class="fitted" data-testid="prompt-fitted">{format!("To fit the context: {}.", f.explanation)}</p>
                    })}
                    <p class="hash" data-testid="prompt-sha256">{format!("SHA-256 {}", p.sha256)}</p>
                    <pre class="rendered" data-testid="rendered-prompt">{p.rendered.clone()}</pre>
                    <div class="ids">
                        {p.ids.iter().zip(p.pieces.iter()).enumerate().map(|(i, (id, piece))| {
                            let reused = i < p.reused;
                            view! { <span class="tok" class:reused=reused title=format!("#{i} id {id}")>{format!("{id}:{piece:?}")}</span> }
                        }).collect_view()}
                    </div>
                    {move || state.models.card.get().map(|c| view! { <TokenizerFacts facts=c.tokenizer bos_added=p.template_added_bos/> })}
                </details>
            }
        })
    }
}

/// What explains the ids: the tokenizer's stages, its special tokens and their flags.
#[component]
fn TokenizerFacts(facts: slm_runtime::facts::TokenizerFacts, bos_added: bool) -> impl IntoView {
    let t = facts;
    let it = |x: &Option<slm_runtime::facts::IdText>| {
        x.as_ref()
            .map_or("none".to_string(), |x| format!("{} {:?}", x.id, x.text))
    };
    let eos = t
        .eos
        .iter()
        .map(|e| format!("{} {:?}", e.id, e.text))
        .collect::<Vec<_>>()
        .join(", ");
    let bos_note = match (&t.bos, bos_added) {
        (None, _) => "this model has no BOS".to_string(),
        (Some(_), true) => {
            "yes: the template wrote it (chat prompts are encoded without the post-processor)"
                .into()
        }
        (Some(_), false) => {
            "no: the template did not write it, and the post-processor does not run on chat prompts"
                .into()
        }
    };
    view! {
        <div class="tokenizer-facts" data-testid="tokenizer-facts">
            <h4>"Tokenizer"</h4>
            <dl>
                <dt>"Model"</dt><dd>{t.model.clone()}</dd>
                <dt>"Normalizer"</dt><dd data-testid="normalizer">{t.normalizer.clone()}</dd>
                <dt>"Pre-tokenizer"</dt><dd data-testid="pre-tokenizer">{t.pre_tokenizer.clone()}</dd>
                <dt>"Post-processor"</dt><dd>{format!("{} (plain text only)", t.post_processor)}</dd>
                <dt>"Decoder"</dt><dd>{t.decoder.clone()}</dd>
                <dt>"BOS"</dt><dd data-testid="bos">{it(&t.bos)}</dd>
                <dt>"Template added BOS"</dt><dd data-testid="bos-added">{bos_note}</dd>
                <dt>"EOS (stop table)"</dt><dd data-testid="eos">{format!("{eos} — {}", t.eos_source)}</dd>
                <dt>"PAD"</dt><dd>{format!("{} (generation never pads)", it(&t.pad))}</dd>
                <dt>"UNK"</dt><dd>{it(&t.unk)}</dd>
                <dt>"add_bos_token / add_eos_token"</dt><dd>{format!("{} / {}", t.add_bos_token, t.add_eos_token)}</dd>
                <dt>"clean_up_tokenization_spaces"</dt><dd data-testid="clean-up">{format!(
                    "{} in the config; {}",
                    t.clean_up_config.map_or("absent".to_string(), |b| b.to_string()),
                    if t.clean_up_applied { "applied when decoding" } else { "not applied (transformers skips it for BPE, or the config does not ask)" })}</dd>
            </dl>
            <table class="added-tokens" data-testid="added-tokens">
                <thead><tr><th>"id"</th><th>"token"</th><th>"special"</th><th>"lstrip"</th><th>"rstrip"</th><th>"normalized"</th><th>"single_word"</th></tr></thead>
                <tbody>
                    {t.added_tokens.iter().map(|a| {
                        let b = |v: bool| if v { "yes" } else { "·" };
                        view! { <tr><td>{a.id}</td><td class="piece">{format!("{:?}", a.content)}</td><td>{b(a.special)}</td><td>{b(a.lstrip)}</td><td>{b(a.rstrip)}</td><td>{b(a.normalized)}</td><td>{b(a.single_word)}</td></tr> }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

/// Console rows are this tall (CSS `.token-row`), so that only the rows in view are
/// in the DOM: a long reply does not grow the page.
const ROW_PX: f64 = 22.0;
/// Rows the panel shows at once (its height).
const PANEL_ROWS: f64 = 14.0;
/// Rows rendered beyond the visible ones, each side, so that scrolling stays smooth.
const OVERSCAN: usize = 6;

#[component]
fn TokenConsole() -> impl IntoView {
    let state = expect_context::<State>();
    let panel = NodeRef::<leptos::html::Div>::new();
    let scroll = RwSignal::new(0.0f64);
    // Follow the newest token while the reader is at the bottom. The rows in view
    // come from `scroll`, so following sets it with the panel's scrollTop.
    let follow = Follow::new(
        move || panel.get_untracked().map(Into::into),
        move || state.turn.tokens.track(),
        move |_| {
            let n = state.turn.tokens.with_untracked(|t| t.len());
            let bottom = (n as f64 * ROW_PX - PANEL_ROWS * ROW_PX).max(0.0);
            scroll.set(bottom);
            bottom
        },
    );
    let on_scroll = move |_| {
        if let Some(el) = panel.get_untracked() {
            scroll.set(follow.scrolled(&el, ROW_PX));
        }
    };
    let visible = move || {
        let first = ((scroll.get() / ROW_PX) as usize).saturating_sub(OVERSCAN);
        let last = first + PANEL_ROWS as usize + 2 * OVERSCAN;
        state.turn.tokens.with(|t| {
            t.iter()
                .skip(first)
                .take(last - first)
                .cloned()
                .collect::<Vec<_>>()
        })
    };
    view! {
        <div class="console-head">
            <h2>"Token console"</h2>
            <span class="token-count" data-testid="token-count">{move || format!("{} tokens", state.turn.tokens.with(|t| t.len()))}</span>
            <ExportTrace/>
        </div>
        <div class="console-cols token-grid" aria-hidden="true">
            <span>"#"</span><span>"id"</span><span>"piece"</span><span>"p"</span><span>"draw"</span><span>"top candidates"</span>
        </div>
        <div class="console-scroll" node_ref=panel on:scroll=on_scroll role="list" aria-label="Generated tokens"
            style=format!("height: {}px", PANEL_ROWS * ROW_PX)>
            <div class="console-spacer" style=move || format!("height: {}px", state.turn.tokens.with(|t| t.len()) as f64 * ROW_PX)>
                <For each=visible key=|r| r.index let:r>
                    {
                        let i = r.index;
                        view! {
                            <div class="token-row token-grid" role="listitem" style=format!("top: {}px", i as f64 * ROW_PX)
                                class:open=move || state.view.opened_token.get() == Some(i)
                                title="Open this token's sampler stages"
                                on:click=move |_| state.view.opened_token.update(|o| *o = if *o == Some(i) { None } else { Some(i) })>
                                <span>{i}</span>
                                <span class="token-id">{r.id}</span>
                                <span class="piece">{format!("{:?}", r.piece)}</span>
                                <span>{format!("{:.3}", r.prob)}</span>
                                <span>{r.draw.map(|d| format!("{d:.4}")).unwrap_or_else(|| "greedy".into())}</span>
                                <span class="top">{r.top.iter().map(|(id, piece, p)| format!("{piece:?} ({id}) {p:.3}")).collect::<Vec<_>>().join(" · ")}</span>
                            </div>
                        }
                    }
                </For>
            </div>
        </div>
        <TokenStages/>
    }
}

/// The opened token's sampler stages, in processing order: each stage's survivors with
/// renormalized probabilities, where each listed candidate was cut, and where the pick
/// stood; then the stop rules as they stood after it.
#[component]
fn TokenStages() -> impl IntoView {
    let state = expect_context::<State>();
    move || {
        let i = state.view.opened_token.get()?;
        let r = state.turn.tokens.with(|t| t.get(i).cloned())?;
        let text = |id: u32| {
            r.stage_pieces
                .iter()
                .find(|p| p.0 == id)
                .map_or(String::new(), |p| format!("{:?}", p.1))
        };
        let pick = r.id;
        Some(view! {
            <div class="token-stages" data-testid="token-stages" aria-label="Sampler stages">
                <h3>{format!("Token #{i} · position {} · id {} {:?} · p {:.4}{}", r.position, r.id, r.piece, r.prob,
                    r.draw.map(|d| format!(" · draw {d:.6}")).unwrap_or_default())}</h3>
                {r.stages.is_empty().then(|| view! {
                    <p class="note">"No stages were recorded for this turn: the diagnostics were closed while it ran."</p>
                })}
                <ol class="stages">
                    {r.stages.iter().map(|s| {
                        let placed = match s.pick {
                            Some((rank, p)) => format!("pick kept at rank {rank}, p {p:.4}"),
                            None if s.stage == "raw" || s.stage == "penalized" => "pick not finite here".into(),
                            None => "pick was not in this stage's set (fallback)".into(),
                        };
                        view! {
                            <li class="stage" data-stage=s.stage.clone() data-count=s.count.to_string()>
                                <span class="stage-name">{s.stage.clone()}</span>
                                <span class="stage-count">{format!("{} left", s.count)}</span>
                                <span class="stage-pick">{placed}</span>
                                <ul class="cands">
                                    {s.top.iter().map(|c| {
                                        let cut = c.cut_by.clone();
                                        let is_cut = cut.is_some();
                                        let data_cut = cut.clone().unwrap_or_default();
                                        view! {
                                            <li class="cand" class:pick=c.id == pick class:cut=is_cut
                                                data-id=c.id.to_string() data-prob=c.prob.to_string() data-cut=data_cut>
                                                {format!("{} ({}) {:.4} [{:.3}]", text(c.id), c.id, c.prob, c.logit)}
                                                {cut.map(|by| view! { <em class="cut-by">{format!(" cut by {by}")}</em> })}
                                            </li>
                                        }
                                    }).collect_view()}
                                </ul>
                            </li>
                        }
                    }).collect_view()}
                </ol>
                {r.stop_check.clone().map(|c| view! {
                    <p class="stop-check" data-testid="stop-check">{format!(
                        "After this token: {}; held back {:?}; loop detector {}",
                        c.stopped.map_or("generation went on".to_string(), |s| format!("stopped ({s})")),
                        c.held_back,
                        c.repeat.map_or("sees no repeat".to_string(), |(len, reps)| format!(
                            "sees a {len}-token pattern repeated {reps}× ({} tokens; it fires at 4 repeats over 24 tokens)", len * reps))
                    )}</p>
                })}
            </div>
        })
    }
}

/// Save the last turn's generation record as JSON, in `slm generate --trace`'s schema
/// and formatting, so that the CLI's tooling can open it and compare.
#[component]
fn ExportTrace() -> impl IntoView {
    let state = expect_context::<State>();
    let save = move |_| {
        let Some(record) = state.turn.last_trace.get_untracked() else {
            return;
        };
        let sha = record["prompt"]["rendered_sha256"]
            .as_str()
            .unwrap_or("turn")
            .chars()
            .take(12)
            .collect::<String>();
        let text = serde_json::to_string_pretty(&record).unwrap_or_default();
        if let Err(e) = super::offer_file(&format!("trace-{sha}.json"), "application/json", &text) {
            state
                .notices
                .notice
                .set(Some(format!("The trace could not be saved: {e}")));
        }
    };
    view! {
        <button class="export-trace" disabled=move || state.turn.last_trace.with(|t| t.is_none())
            title="The last turn's record: prompt ids, every sampler stage per token, stop reason"
            on:click=save>"Export trace"</button>
    }
}
