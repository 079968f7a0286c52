//! The threads the worker's products run on.
//!
//! The threaded build (`scripts/build-web.sh`: shared memory, `+atomics`, chosen by the
//! page when it is cross-origin isolated) starts n − 1 pool threads as Web Workers
//! (`public/pool.js`). Each instantiates this same module on this same shared memory,
//! says it is ready, and then runs one rayon pool thread (`pool_thread`) until the pool
//! is dropped. The single-threaded build has 1 thread and says why.
//!
//! Order matters: the pool is built only once every pool worker is running and
//! blocked on the hand-off channel. Building it hands each thread over that channel
//! rather than by `postMessage`, because a worker that blocks right after posting
//! (the first product would) can keep its message from ever leaving.

use slm_runtime::parallel::Threads;

use super::source::Failure;
use crate::protocol::ErrorKind;

/// Threads a build can have at most here: 1, or the cores the browser reports.
pub fn available() -> usize {
    if !cfg!(target_feature = "atomics") {
        return 1;
    }
    let cores = super::scope().navigator().hardware_concurrency();
    (cores as usize).clamp(1, slm_runtime::parallel::MAX_THREADS)
}

/// Why the build cannot have more threads (None when it can).
pub fn limit_note() -> Option<String> {
    if cfg!(target_feature = "atomics") {
        None
    } else {
        Some(
            "one thread: this page is not cross-origin isolated (COOP/COEP headers), so \
             the browser gives it no shared memory"
                .into(),
        )
    }
}

/// The default: every core, up to 4 (past that, decode gains little and the page's
/// other work suffers).
pub fn default_count() -> usize {
    available().min(4)
}

/// A pool of `n` threads (the calling worker and n − 1 pool workers).
pub async fn start(n: usize) -> Result<Threads, Failure> {
    if n > available() {
        return Err(Failure {
            kind: ErrorKind::Invalid,
            message: format!(
                "{n} threads: at most {} here{}",
                available(),
                limit_note().map(|w| format!(" ({w})")).unwrap_or_default()
            ),
            chunk: None,
        });
    }
    if n <= 1 {
        return Ok(Threads::one());
    }
    #[cfg(target_feature = "atomics")]
    return threaded::start(n).await;
    #[cfg(not(target_feature = "atomics"))]
    unreachable!("available() is 1 without atomics")
}

#[cfg(target_feature = "atomics")]
mod threaded {
    use std::cell::RefCell;
    use std::sync::{mpsc, Arc, Mutex};

    use js_sys::{Object, Promise, Reflect};
    use slm_runtime::parallel::{ThreadBuilder, Threads};
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;

    use super::{ErrorKind, Failure};

    /// Where pool workers wait for their rayon thread.
    type Handoff = Mutex<mpsc::Receiver<ThreadBuilder>>;

    thread_local! {
        /// The current pool's workers, kept referenced for as long as they run; each
        /// closes itself once its thread returns (the pool was dropped).
        static WORKERS: RefCell<Vec<web_sys::Worker>> = const { RefCell::new(Vec::new()) };
    }

    fn failure(what: &str, e: impl std::fmt::Debug) -> Failure {
        Failure {
            kind: ErrorKind::Browser,
            message: format!("the thread pool could not start: {what}: {e:?}"),
            chunk: None,
        }
    }

    pub async fn start(n: usize) -> Result<Threads, Failure> {
        let (tx, rx) = mpsc::channel::<ThreadBuilder>();
        let handoff = Arc::new(Mutex::new(rx));
        let mut workers = Vec::new();
        let mut ready = Vec::new();
        for _ in 1..n {
            let w = web_sys::Worker::new("./pool.js").map_err(|e| failure("new Worker", e))?;
            let msg = Object::new();
            let set = |k: &str, v: &JsValue| Reflect::set(&msg, &k.into(), v);
            set("module", &wasm_bindgen::module()).map_err(|e| failure("module", e))?;
            set("memory", &wasm_bindgen::memory()).map_err(|e| failure("memory", e))?;
            // One reference per pool worker, released by `pool_thread`.
            let ptr = Arc::into_raw(handoff.clone()) as u32;
            set("handoff", &ptr.into()).map_err(|e| failure("handoff", e))?;
            let answer = Promise::new(&mut |resolve, reject| {
                w.set_onmessage(Some(&resolve));
                w.set_onerror(Some(&reject));
            });
            w.post_message(&msg)
                .map_err(|e| failure("postMessage", e))?;
            ready.push(JsFuture::from(answer));
            workers.push(w);
        }
        for r in ready {
            // An error event (the script or the module failed) rejects; the channel's
            // sender is then dropped, and the workers already waiting return.
            r.await.map_err(|e| {
                let m = e
                    .dyn_ref::<web_sys::ErrorEvent>()
                    .map(|e| e.message())
                    .unwrap_or_else(|| format!("{e:?}"));
                failure("a pool worker", m)
            })?;
        }
        for w in &workers {
            w.set_onmessage(None);
            w.set_onerror(None);
        }
        let threads = Threads::spawned(n, |b| {
            tx.send(b)
                .map_err(|_| std::io::Error::other("the pool workers are gone"))
        })
        .map_err(Failure::from)?;
        WORKERS.with_borrow_mut(|w| *w = workers);
        Ok(threads)
    }

    /// A pool worker's thread (called by `public/pool.js` once this module runs there):
    /// takes one rayon thread from the hand-off and runs it until the pool is dropped.
    #[wasm_bindgen]
    pub fn pool_thread(handoff: u32) {
        // Safety: `handoff` is one `Arc::into_raw` reference that `start` made for
        // this worker alone, and it is taken back exactly once, here.
        let h = unsafe { Arc::from_raw(handoff as usize as *const Handoff) };
        let thread = h.lock().map(|rx| rx.recv()).ok().and_then(Result::ok);
        drop(h);
        if let Some(t) = thread {
            t.run();
        }
    }
}
