//! Getting a model: the catalog (download / resume), the models cached in this
//! browser (load / delete), a URL of your own, and a local file by drop or picker.

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::client::{send, send_with};
use super::{mb, State};
use crate::protocol::{memory_refusal, CatalogEntry, Command, ErrorKind, Operation, Stage};

/// Load `models.json` (served next to the page; the run script points it at a
/// locally converted model).
pub fn fetch_catalog(state: State) {
    spawn_local(async move {
        let result: Result<Vec<CatalogEntry>, String> = async {
            let w = web_sys::window().ok_or("no window")?;
            let resp: web_sys::Response = JsFuture::from(w.fetch_with_str("models.json"))
                .await
                .map_err(|e| format!("{e:?}"))?
                .unchecked_into();
            if !resp.ok() {
                return Err(format!("models.json: HTTP {}", resp.status()));
            }
            let text = JsFuture::from(resp.text().map_err(|e| format!("{e:?}"))?)
                .await
                .map_err(|e| format!("{e:?}"))?
                .as_string()
                .unwrap_or_default();
            serde_json::from_str(&text).map_err(|e| format!("models.json is invalid: {e}"))
        }
        .await;
        match result {
            Ok(list) => state.models.catalog.update(|c| {
                for e in list {
                    if !c.iter().any(|x| x.id == e.id) {
                        c.push(e);
                    }
                }
            }),
            Err(message) => state.notices.error.set(Some(super::state::ErrorView {
                during: Operation::Catalog,
                kind: ErrorKind::Network,
                message,
                chunk: None,
            })),
        }
    });
}

/// `navigator.deviceMemory` (GiB) where the browser exposes it.
pub fn device_memory() -> Option<f64> {
    let w = web_sys::window()?;
    js_sys::Reflect::get(&w.navigator(), &"deviceMemory".into())
        .ok()?
        .as_f64()
}

/// The catalog's plan for `e` at the chosen context, and why it cannot load here.
fn plan_text(state: State, e: &CatalogEntry) -> Option<(String, Option<String>)> {
    let needs = e.memory.as_ref()?;
    let ctx = state.settings.context.get();
    let p = needs.at(ctx as u64);
    let text = format!(
        "needs {} at {} positions: weights {}, KV cache {}, buffers {}",
        mb(p.total as f64),
        p.context,
        mb(p.weights as f64),
        mb(p.kv as f64),
        mb(p.other as f64)
    );
    Some((text, memory_refusal(needs, ctx, device_memory())))
}

fn start_download(state: State, entry: CatalogEntry) {
    if let Some(why) = entry
        .memory
        .as_ref()
        .and_then(|n| memory_refusal(n, state.settings.context.get_untracked(), device_memory()))
    {
        state.notices.error.set(Some(super::state::ErrorView {
            during: Operation::Download,
            kind: ErrorKind::Memory,
            message: format!("{} {why}: not downloaded", entry.name),
            chunk: None,
        }));
        return;
    }
    super::request_persistence();
    state.notices.error.set(None);
    state
        .models
        .working
        .set(Some(format!("downloading {}", entry.name)));
    let context = state.settings.context.get_untracked();
    send(&Command::Download { entry, context });
}

fn load_file(state: State, file: web_sys::File) {
    state.notices.error.set(None);
    state
        .models
        .working
        .set(Some(format!("verifying and loading {}", file.name())));
    send_with(
        &Command::LoadFile {
            name: file.name(),
            keep: state.models.keep_file.get_untracked(),
            context: state.settings.context.get_untracked(),
            first_turn: super::settings::current(state).ok(),
        },
        Some(&file),
    );
}

#[component]
pub fn ModelsPanel() -> impl IntoView {
    view! {
        <h2>"Models"</h2>
        <CatalogList/>
        <ProgressBar/>
        <CachedList/>
        <AddUrl/>
        <LocalFile/>
    }
}

#[component]
fn CatalogList() -> impl IntoView {
    let state = expect_context::<State>();
    let status = move |id: &str| {
        state.models.cached.with(|c| {
            c.iter().find(|m| m.id == id).map(|m| {
                if m.complete {
                    "cached".to_string()
                } else {
                    format!("partial: {} of {} chunks", m.chunks_done, m.chunks_total)
                }
            })
        })
    };
    view! {
        <h3>"Catalog"</h3>
        <ul class="catalog">
            <For each=move || state.models.catalog.get() key=|e| e.id.clone() let:entry>
                {
                    let id = entry.id.clone();
                    let id2 = entry.id.clone();
                    let e = entry.clone();
                    // The plan at the chosen context, and why it cannot load here.
                    let plan = {
                        let e = entry.clone();
                        Memo::new(move |_| plan_text(state, &e))
                    };
                    let refused = move || plan.get().and_then(|(_, r)| r);
                    view! {
                        <li class="catalog-entry" data-id=entry.id.clone()>
                            <div class="entry-name">{entry.name.clone()}</div>
                            <div class="entry-meta">
                                {format!("{} · {} · {} · {}", entry.quant, mb(entry.size as f64), entry.license, entry.source)}
                            </div>
                            <div class="entry-url" title=entry.url.clone()>{entry.url.clone()}</div>
                            {entry.behaviour.clone().map(|b| {
                                let (passes, text) = b.summary();
                                view! { <div class="entry-behaviour" data-testid="entry-behaviour" data-passes=passes.to_string()>{text}</div> }
                            })}
                            <div class="entry-memory" data-testid="entry-memory">{move || plan.get().map_or_else(|| "memory: unknown until its manifest is read".to_string(), |(t, _)| t)}</div>
                            {move || refused().map(|r| view! { <div class="memory-refusal" role="alert">{format!("Too big for this browser: {r}")}</div> })}
                            <div class="entry-status">{move || status(&id).unwrap_or_else(|| "not downloaded".into())}</div>
                            <button
                                disabled=move || state.models.working.get().is_some() || status(&id2).as_deref() == Some("cached") || refused().is_some()
                                on:click=move |_| start_download(state, e.clone())
                            >"Download"</button>
                        </li>
                    }
                }
            </For>
        </ul>
    }
}

#[component]
fn ProgressBar() -> impl IntoView {
    let state = expect_context::<State>();
    move || {
        state.models.progress.get().map(|p| {
            let pct = p.percent();
            let eta = p
                .eta_s()
                .map(|s| format!(" · ETA {s:.0} s"))
                .unwrap_or_default();
            let label = match p.stage {
                Stage::Download => "Download progress",
                Stage::Verify => "Verification progress",
                Stage::Load | Stage::Verified => "Progress",
            };
            let downloading = p.stage == Stage::Download;
            view! {
                <div class="progress" data-stage=p.stage.as_str()>
                    <div class="progress-title">{format!("{}: {}", p.stage.as_str(), p.id)}</div>
                    <div class="bar" role="progressbar" aria-label=label
                        aria-valuemin="0" aria-valuemax="100" aria-valuenow=format!("{pct:.0}")>
                        <div class="fill" style=format!("width: {pct:.1}%")></div>
                    </div>
                    <div class="progress-text">
                        {format!("{} / {} ({pct:.1}%) · {}/s{eta}", mb(p.done as f64), mb(p.total as f64), mb(p.speed))}
                    </div>
                    {p.note.map(|n| view! { <div class="progress-note">{n}</div> })}
                    {downloading.then(|| view! {
                        <button class="cancel" on:click=move |_| send(&Command::CancelDownload)>"Cancel download"</button>
                    })}
                    {move || (!downloading && state.models.working.with(|w| w.as_ref().is_some_and(|w| w.starts_with("loading")))).then(|| view! {
                        <button class="cancel" on:click=move |_| send(&Command::CancelLoad)>"Cancel load"</button>
                    })}
                </div>
            }
        })
    }
}

#[component]
fn CachedList() -> impl IntoView {
    let state = expect_context::<State>();
    view! {
        <h3>"In this browser"</h3>
        <div class="storage">
            {move || match state.models.storage.get() {
                (Some(u), Some(q)) => format!("Storage: {} used of {} allowed", mb(u), mb(q)),
                _ => "Storage: unknown".into(),
            }}
        </div>
        <ul class="cached">
            <For each=move || state.models.cached.get() key=|m| (m.id.clone(), m.chunks_done, m.complete) let:m>
                {
                    let id = m.id.clone();
                    let id_del = m.id.clone();
                    let entry = m.entry.clone();
                    let complete = m.complete;
                    view! {
                        <li class="cached-model" data-id=m.id.clone()>
                            <span class="cached-name">{m.name.clone()}</span>
                            <span class="cached-size">{mb(m.bytes as f64)}</span>
                            <span class="cached-state">
                                {if complete { "verified".to_string() } else { format!("partial {}/{}", m.chunks_done, m.chunks_total) }}
                            </span>
                            {if complete {
                                view! {
                                    <button disabled=move || state.models.working.get().is_some() || state.turn.generating.get()
                                        on:click=move |_| {
                                            state.notices.error.set(None);
                                            state.models.working.set(Some(format!("loading {id}")));
                                            send(&Command::Load { id: id.clone(), context: state.settings.context.get_untracked(), first_turn: super::settings::current(state).ok() });
                                        }>"Load"</button>
                                }.into_any()
                            } else {
                                entry.map(|e| view! {
                                    <button disabled=move || state.models.working.get().is_some()
                                        on:click=move |_| start_download(state, e.clone())>"Resume"</button>
                                }.into_any()).unwrap_or_else(|| ().into_any())
                            }}
                            <button disabled=move || state.models.working.get().is_some()
                                on:click=move |_| send(&Command::Delete { id: id_del.clone() })>"Delete"</button>
                        </li>
                    }
                }
            </For>
        </ul>
    }
}

#[component]
fn AddUrl() -> impl IntoView {
    let state = expect_context::<State>();
    let url = RwSignal::new(String::new());
    let add = move |_| {
        let u = url.get_untracked().trim().to_string();
        if u.is_empty() {
            return;
        }
        let name = u.rsplit('/').next().unwrap_or(&u).to_string();
        let entry = CatalogEntry {
            id: format!("url-{}", name.trim_end_matches(".slm")),
            name,
            url: u,
            size: 0,
            sha256: String::new(),
            quant: "?".into(),
            license: "?".into(),
            source: "added by you".into(),
            evidence: None,
            memory: None,
            behaviour: None,
        };
        state.models.catalog.update(|c| {
            if !c.iter().any(|x| x.id == entry.id) {
                c.push(entry)
            }
        });
        url.set(String::new());
    };
    view! {
        <h3>"Add a model URL"</h3>
        <div class="add-url">
            <input type="url" aria-label="Model URL" placeholder="https://…/model.slm"
                prop:value=move || url.get() on:input=move |ev| url.set(super::input_value(&ev))/>
            <button on:click=add>"Add"</button>
        </div>
        <p class="hint">"The server must allow HTTP Range requests. Every chunk is still verified against the file's own hash table."</p>
    }
}

#[component]
fn LocalFile() -> impl IntoView {
    let state = expect_context::<State>();
    let hover = RwSignal::new(false);
    let on_drop = move |ev: web_sys::DragEvent| {
        ev.prevent_default();
        hover.set(false);
        let file = ev
            .data_transfer()
            .and_then(|d| d.files())
            .and_then(|f| f.get(0));
        match file {
            Some(f) => load_file(state, f),
            None => state.notices.error.set(Some(super::state::ErrorView {
                during: Operation::Load,
                kind: ErrorKind::Invalid,
                message: "the drop carried no file".into(),
                chunk: None,
            })),
        }
    };
    let on_pick = move |ev: web_sys::Event| {
        let input: web_sys::HtmlInputElement = ev.target().unwrap().unchecked_into();
        if let Some(f) = input.files().and_then(|f| f.get(0)) {
            load_file(state, f);
        }
        input.set_value("");
    };
    view! {
        <h3>"A local .slm file"</h3>
        <div class="drop-zone" class:hover=move || hover.get() data-testid="drop-zone"
            on:dragover=move |ev: web_sys::DragEvent| { ev.prevent_default(); hover.set(true); }
            on:dragleave=move |_| hover.set(false)
            on:drop=on_drop>
            "Drop a .slm file here"
            <label class="picker">" or choose one: "
                <input type="file" accept=".slm" aria-label="Choose a .slm file" on:change=on_pick/>
            </label>
        </div>
        <label class="keep">
            <input type="checkbox" prop:checked=move || state.models.keep_file.get()
                on:change=move |ev| state.models.keep_file.set(event_target_checked(&ev))/>
            " Keep in browser"
        </label>
        <p class="hint">"Loading verifies every 1 MiB chunk against the file's manifest; the model is read once, never copied twice."</p>
        {move || state.models.working.get().map(|w| view! { <p class="working" role="status">{w}"…"</p> })}
    }
}
