//! The page's end of the worker: start it, hold commands until it says it is ready
//! (a worker drops messages that arrive before its wasm installs a handler), and route
//! its events into `State`. A worker that dies (a trap: an allocation failure, a
//! panic) is replaced by a fresh one, and the page says what was lost: the loaded
//! model, never the transcript on the page or what IndexedDB holds. Also a small window
//! hook (`window.tinyrustlm.probe`) that the e2e suite uses to compare the browser with
//! the native CLI.

use std::cell::RefCell;

use js_sys::{Function, Object, Promise, Reflect};
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::State;
use crate::protocol::{Command, ErrorKind, Event, Operation, Reply};

struct Client {
    worker: web_sys::Worker,
    ready: bool,
    queue: Vec<JsValue>,
}

/// Workers started after a crash, and when the last one was (`performance.now`).
/// Crashes closer than `CRASH_WINDOW_MS` in a row past `MAX_RESPAWNS` stop the cycle:
/// a worker that dies at startup would otherwise restart forever.
struct Respawns {
    count: u32,
    last_ms: f64,
}

const MAX_RESPAWNS: u32 = 3;
const CRASH_WINDOW_MS: f64 = 10_000.0;

/// A probe or bench promise waiting for the reply to request `req`.
struct PendingProbe {
    req: u64,
    resolve: Function,
    reject: Function,
}

thread_local! {
    static CLIENT: RefCell<Option<Client>> = const { RefCell::new(None) };
    /// The next request's id (`Request::req`): counted for the page's lifetime, so
    /// a reply from a worker that has since been replaced never matches a new request.
    static NEXT_REQ: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
    static PROBE: RefCell<Option<PendingProbe>> = const { RefCell::new(None) };
    static RESPAWNS: RefCell<Respawns> = const { RefCell::new(Respawns { count: 0, last_ms: f64::NEG_INFINITY }) };
}

fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

pub fn start(state: State) {
    spawn(state);
    install_probe_hook(state);
}

/// The worker died: say so, forget what it held (the model; a pending probe), and
/// start a new one unless it keeps dying.
fn on_crash(state: State, message: String) {
    CLIENT.with_borrow_mut(|c| {
        if let Some(c) = c.take() {
            c.worker.terminate();
        }
    });
    reject_any_probe(&format!("the worker failed: {message}"));
    // A model stored in this browser is loaded again in the new worker.
    let stored = state.models.card.get_untracked().filter(|c| {
        state
            .models
            .cached
            .with_untracked(|m| m.iter().any(|m| m.id == c.id && m.complete))
    });
    let had_model = state.worker_lost();
    let now = now_ms();
    let again = RESPAWNS.with_borrow_mut(|r| {
        r.count = if now - r.last_ms < CRASH_WINDOW_MS {
            r.count + 1
        } else {
            1
        };
        r.last_ms = now;
        r.count <= MAX_RESPAWNS
    });
    let next = if !again {
        format!("it failed {MAX_RESPAWNS} times in a row, so it was not restarted: reload the page")
    } else if let Some(card) = &stored {
        super::conversations::reopen_after_crash();
        format!(
            "a new worker was started, and {} is being loaded again from this browser's storage (the conversation is kept)",
            card.name
        )
    } else if had_model {
        "a new worker was started: load the model again (the conversation and the models stored in this browser are kept)".to_string()
    } else {
        "a new worker was started".to_string()
    };
    state.notices.error.set(Some(super::state::ErrorView {
        during: Operation::Worker,
        kind: ErrorKind::Crash,
        message: format!("the inference worker failed ({message}); {next}"),
        chunk: None,
    }));
    if again {
        spawn(state);
    }
}

fn spawn(state: State) {
    // Shared memory (so threads) only where the page is cross-origin isolated.
    let isolated = js_sys::Reflect::get(&js_sys::global(), &"crossOriginIsolated".into())
        .is_ok_and(|v| v.is_truthy());
    let loader = if isolated {
        "./worker_mt_loader.js"
    } else {
        "./worker_loader.js"
    };
    let worker = match web_sys::Worker::new(loader) {
        Ok(w) => w,
        Err(e) => {
            state.notices.error.set(Some(super::state::ErrorView {
                during: Operation::Startup,
                kind: ErrorKind::Browser,
                message: format!("could not start the inference worker: {e:?}"),
                chunk: None,
            }));
            return;
        }
    };
    let on_message =
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            let Some(s) = e.data().as_string() else {
                return;
            };
            match serde_json::from_str::<Reply>(&s) {
                Ok(Reply {
                    event: Event::Ready,
                    ..
                }) => {
                    let queued = CLIENT.with_borrow_mut(|c| {
                        c.as_mut().map(|c| {
                            c.ready = true;
                            std::mem::take(&mut c.queue)
                        })
                    });
                    CLIENT.with_borrow(|c| {
                        if let Some(c) = c {
                            for m in queued.unwrap_or_default() {
                                let _ = c.worker.post_message(&m);
                            }
                        }
                    });
                    state.apply(None, Event::Ready);
                }
                Ok(Reply { re, event }) => state.apply(re, event),
                Err(err) => {
                    web_sys::console::error_1(&format!("unreadable worker event: {err}").into())
                }
            }
        });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    let on_error = Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |e: web_sys::ErrorEvent| {
        e.prevent_default();
        on_crash(state, e.message());
    });
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    on_error.forget();
    CLIENT.with_borrow_mut(|c| {
        *c = Some(Client {
            worker,
            ready: false,
            queue: vec![],
        })
    });
    send(&Command::List);
}

/// Send a command (with a file for `LoadFile`) as a `Request`; returns its id, which
/// every event answering it carries.
pub fn send_with(cmd: &Command, file: Option<&web_sys::File>) -> u64 {
    let req = NEXT_REQ.get();
    NEXT_REQ.set(req + 1);
    let msg = Object::new();
    // `Request { req, command }`, without cloning the command.
    let mut json = serde_json::to_value(cmd).expect("commands serialize");
    json["req"] = req.into();
    let json = json.to_string();
    let _ = Reflect::set(&msg, &"json".into(), &json.into());
    if let Some(f) = file {
        let _ = Reflect::set(&msg, &"file".into(), f);
    }
    CLIENT.with_borrow_mut(|c| match c {
        Some(c) if c.ready => {
            let _ = c.worker.post_message(&msg);
        }
        Some(c) => c.queue.push(msg.into()),
        None => {}
    });
    req
}

pub fn send(cmd: &Command) {
    send_with(cmd, None);
}

/// `window.tinyrustlm.probe(messages, maxTokens, sampler?)` → Promise of
/// `{rendered, ids, logits, greedy, sampled, sampled_text}` from the worker's runtime
/// (one request at a time); `sampler` is the CLI's effective sampler JSON.
fn install_probe_hook(state: State) {
    let probe = Closure::<dyn Fn(JsValue, u32, JsValue) -> Promise>::new(
        |messages: JsValue, max_tokens: u32, sampler: JsValue| {
            let sampler: Option<slm_runtime::sampling::SamplerConfig> =
                js_sys::JSON::stringify(&sampler)
                    .ok()
                    .and_then(|s| s.as_string())
                    .and_then(|s| serde_json::from_str(&s).ok());
            Promise::new(&mut |resolve, reject| {
                let messages: serde_json::Value = match js_sys::JSON::stringify(&messages)
                    .ok()
                    .and_then(|s| s.as_string())
                    .and_then(|s| serde_json::from_str(&s).ok())
                {
                    Some(m) => m,
                    None => {
                        let _ = reject.call1(&JsValue::NULL, &"messages must be JSON".into());
                        return;
                    }
                };
                let req = send_with(
                    &Command::Probe {
                        messages,
                        max_tokens: max_tokens as usize,
                        sampler: sampler.clone(),
                    },
                    None,
                );
                wait_for(req, resolve, reject);
            })
        },
    );
    // `window.tinyrustlm.bench(promptTokens, genTokens)` → Promise of
    // `{prompt_tokens, gen_tokens, prefill_tok_s, decode_tok_s, simd128}`.
    let bench =
        Closure::<dyn Fn(u32, u32) -> Promise>::new(|prompt_tokens: u32, gen_tokens: u32| {
            Promise::new(&mut |resolve, reject| {
                let req = send_with(
                    &Command::Bench {
                        prompt_tokens: prompt_tokens as usize,
                        gen_tokens: gen_tokens as usize,
                    },
                    None,
                );
                wait_for(req, resolve, reject);
            })
        });
    // `window.tinyrustlm.crash()`: the worker aborts, as it would on an allocation
    // failure, so that the e2e suite can check that the page recovers.
    let crash = Closure::<dyn Fn()>::new(|| send(&Command::Crash));
    // `window.tinyrustlm.terminate()`: the page ends the worker from outside, as a
    // browser may; the page replaces it as it would a crashed one.
    let terminate =
        Closure::<dyn Fn()>::new(move || on_crash(state, "it was terminated".to_string()));
    let hook = Object::new();
    let _ = Reflect::set(&hook, &"probe".into(), probe.as_ref());
    let _ = Reflect::set(&hook, &"bench".into(), bench.as_ref());
    let _ = Reflect::set(&hook, &"crash".into(), crash.as_ref());
    let _ = Reflect::set(&hook, &"terminate".into(), terminate.as_ref());
    probe.forget();
    bench.forget();
    crash.forget();
    terminate.forget();
    if let Some(w) = web_sys::window() {
        let _ = Reflect::set(&w, &"tinyrustlm".into(), &hook);
    }
}

/// The probe or bench promise now waits for request `req` (one at a time: a
/// promise still waiting is rejected).
fn wait_for(req: u64, resolve: Function, reject: Function) {
    reject_any_probe("a newer probe or bench replaced this one");
    PROBE.with_borrow_mut(|p| {
        *p = Some(PendingProbe {
            req,
            resolve,
            reject,
        })
    });
}

/// The promise waiting for request `re`, taken (None for a reply to anything else).
fn take_probe(re: Option<u64>) -> Option<PendingProbe> {
    PROBE.with_borrow_mut(|p| {
        if p.as_ref().is_some_and(|w| Some(w.req) == re) {
            p.take()
        } else {
            None
        }
    })
}

/// Resolve the promise that request `re` answers with `ev`.
pub fn resolve_probe(re: Option<u64>, ev: &Event) {
    if let Some(w) = take_probe(re) {
        let s = serde_json::to_string(ev).unwrap_or_default();
        let v = js_sys::JSON::parse(&s).unwrap_or(JsValue::NULL);
        let _ = w.resolve.call1(&JsValue::NULL, &v);
    }
}

/// Reject the promise that request `re` answers.
pub fn reject_probe(re: Option<u64>, message: &str) {
    if let Some(w) = take_probe(re) {
        let _ = w.reject.call1(&JsValue::NULL, &message.into());
    }
}

/// Reject whatever promise is waiting (the worker that would answer it is gone).
fn reject_any_probe(message: &str) {
    if let Some(w) = PROBE.with_borrow_mut(|p| p.take()) {
        let _ = w.reject.call1(&JsValue::NULL, &message.into());
    }
}
