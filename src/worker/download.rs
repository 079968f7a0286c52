//! Downloading a catalog entry into IndexedDB: HTTP Range requests from the first
//! chunk not yet stored, each chunk verified against the manifest's table before it is
//! stored, retries after network errors, and the whole-file hash checked at the end
//! from what was stored. Only then is the model marked complete; a model that fails
//! verification is deleted, so a bad download never poisons the cache.

use js_sys::{Reflect, Uint8Array};
use sha2::{Digest, Sha256};
use slm_runtime::format::layout::hex;
use slm_runtime::model::memory::MemoryNeeds;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::idb::{describe, estimate, Store};
use super::source::{head_len, parse_head, verify_chunk, Failure, Head, HEADER_BYTES};
use crate::protocol::{CachedModel, CatalogEntry, ErrorKind, Event, Stage};
use slm_runtime::format::chunks;

/// Failed attempts in a row (an attempt that stored a chunk resets the count).
const MAX_RETRIES: u32 = 6;

/// A connection that delivers nothing for this long is given up on and resumed: a
/// stalled server or proxy must not hang a download forever.
const STALL_MS: i32 = 15_000;

/// Times a chunk may arrive with the wrong bytes before the download stops: a
/// corruption in transit is fetched again, a file that is wrong on the server is not.
const MAX_BAD_CHUNKS: u32 = 2;

/// Times the file may change on the server during one download before it stops.
const MAX_RESTARTS: u32 = 1;

fn scope() -> web_sys::WorkerGlobalScope {
    js_sys::global().unchecked_into()
}

/// What a timed-out `within` resolves to (nothing a fetch or a stream read can give).
const TIMED_OUT: &str = "tinyrustlm: timed out";

/// How often a wait checks whether the person cancelled the download.
const TICK_MS: i32 = 250;

/// `p`, or a `network` failure when it has not settled after `ms`, or a `cancelled`
/// one within `TICK_MS` of the person cancelling the download (a stalled connection
/// must not make Cancel wait for the stall timer). Either way `on_timeout` then runs,
/// to abort what `p` waits for.
async fn within(
    p: js_sys::Promise,
    ms: i32,
    what: &str,
    on_timeout: impl FnOnce(),
) -> Result<JsValue, Failure> {
    let mut waited = 0;
    loop {
        let tick = TICK_MS.min(ms - waited).max(1);
        let mut handle = None;
        let timer = js_sys::Promise::new(&mut |resolve, _| {
            handle = scope()
                .set_timeout_with_callback_and_timeout_and_arguments_1(
                    &resolve,
                    tick,
                    &JsValue::from_str(TIMED_OUT),
                )
                .ok();
        });
        let v = JsFuture::from(js_sys::Promise::race(&js_sys::Array::of2(&p, &timer))).await;
        // One timer per wait: cleared, so that a long download does not leave thousands.
        if let Some(h) = handle {
            scope().clear_timeout_with_handle(h);
        }
        let v = v.map_err(|e| Failure::network(format!("{what}: {}", describe(&e))))?;
        if v.as_string().as_deref() != Some(TIMED_OUT) {
            return Ok(v);
        }
        waited += tick;
        if super::download_cancelled() {
            on_timeout();
            return Err(Failure {
                kind: ErrorKind::Cancelled,
                message: format!("{what}: cancelled"),
                chunk: None,
            });
        }
        if waited >= ms {
            on_timeout();
            return Err(Failure::network(format!(
                "{what}: no data for {} s, the connection stalled",
                ms / 1000
            )));
        }
    }
}

/// GET `url`, uncached, with an optional byte range `[start, end)` and If-Range
/// validator. Headers that do not come within `STALL_MS` abort the request.
async fn get(
    url: &str,
    range: Option<(u64, u64)>,
    if_range: Option<&str>,
) -> Result<web_sys::Response, Failure> {
    let init = web_sys::RequestInit::new();
    let headers = web_sys::Headers::new().map_err(|e| Failure::from(describe(&e)))?;
    if let Some((start, end)) = range {
        headers
            .set("Range", &format!("bytes={start}-{}", end - 1))
            .map_err(|e| Failure::from(describe(&e)))?;
        if let Some(v) = if_range {
            headers
                .set("If-Range", v)
                .map_err(|e| Failure::from(describe(&e)))?;
        }
    }
    init.set_headers(&headers);
    init.set_cache(web_sys::RequestCache::NoStore);
    let abort = web_sys::AbortController::new().map_err(|e| Failure::from(describe(&e)))?;
    init.set_signal(Some(&abort.signal()));
    let req = web_sys::Request::new_with_str_and_init(url, &init)
        .map_err(|e| Failure::from(describe(&e)))?;
    let resp = within(
        scope().fetch_with_request(&req),
        STALL_MS,
        &format!("fetching {url}"),
        || abort.abort(),
    )
    .await?;
    Ok(resp.unchecked_into())
}

/// The server's version of what it sent (ETag, else Last-Modified), if it says.
fn validator(resp: &web_sys::Response) -> Option<String> {
    let h = resp.headers();
    ["ETag", "Last-Modified"]
        .iter()
        .find_map(|k| h.get(k).ok().flatten().filter(|v| !v.is_empty()))
}

/// A failure that means the file on the server is no longer the one being downloaded.
fn changed(url: &str, why: String) -> Failure {
    Failure {
        kind: ErrorKind::Changed,
        message: format!(
            "the file at {url} changed on the server since this download began ({why})"
        ),
        chunk: None,
    }
}

/// GET `url` bytes `[start, end)`; the server must answer 206. With `if_range` (the
/// version the stored part came from), a 200 means that version is gone.
async fn fetch_range(
    url: &str,
    start: u64,
    end: u64,
    if_range: Option<&str>,
) -> Result<web_sys::Response, Failure> {
    let resp = get(url, Some((start, end)), if_range).await?;
    match resp.status() {
        206 => Ok(resp),
        200 if if_range.is_some() => {
            let now = validator(&resp).unwrap_or_else(|| "no version".into());
            let _ = resp.body().map(|b| b.cancel());
            Err(changed(
                url,
                format!("it was {}, it is now {now}", if_range.unwrap_or_default()),
            ))
        }
        200 => Err(Failure::from(format!(
            "{url} ignored the HTTP Range request (status 200): the server must support ranges for verified, resumable downloads"
        ))),
        416 => Err(changed(
            url,
            format!("bytes {start}.. are past its end: the server answered 416 Range Not Satisfiable"),
        )),
        s => Err(Failure::network(format!("{url} answered HTTP {s}"))),
    }
}

/// GET `url` as text (a small JSON record such as gate evidence).
pub async fn fetch_text(url: &str) -> Result<String, Failure> {
    let resp = get(url, None, None).await?;
    if resp.status() != 200 {
        return Err(Failure::network(format!(
            "{url} answered HTTP {}",
            resp.status()
        )));
    }
    let bytes = read_all(resp).await?;
    String::from_utf8(bytes).map_err(|_| Failure::from(format!("{url} is not UTF-8")))
}

async fn read_all(resp: web_sys::Response) -> Result<Vec<u8>, Failure> {
    let buf = JsFuture::from(
        resp.array_buffer()
            .map_err(|e| Failure::from(describe(&e)))?,
    )
    .await
    .map_err(|e| Failure::network(format!("reading the response: {}", describe(&e))))?;
    Ok(Uint8Array::new(&buf).to_vec())
}

async fn sleep_ms(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        let _ = scope().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
    });
    let _ = JsFuture::from(p).await;
}

/// The head from the store, or fetched and stored with a fresh progress record.
async fn head(
    store: &Store,
    e: &CatalogEntry,
    context: usize,
    post: &dyn Fn(Event),
) -> Result<(Head, CachedModel), Failure> {
    if let (Some(meta), Some(bytes)) = (store.meta(&e.id).await?, store.head(&e.id).await?) {
        return Ok((parse_head(bytes, meta.bytes)?, meta));
    }
    post(Event::Progress {
        id: e.id.clone(),
        stage: Stage::Download,
        done: 0,
        total: e.size,
        note: Some("reading the manifest".into()),
    });
    let resp = fetch_range(&e.url, 0, HEADER_BYTES, None).await?;
    let version = validator(&resp);
    // A URL added by hand has no size: the server's Content-Range says it.
    let total = resp
        .headers()
        .get("Content-Range")
        .ok()
        .flatten()
        .and_then(|v| v.rsplit('/').next().and_then(|n| n.parse::<u64>().ok()));
    let size = match (e.size, total) {
        (0, Some(t)) => t,
        (0, None) => {
            return Err(Failure::from(format!(
                "{} gave no Content-Range total and the catalog gives no size",
                e.url
            )))
        }
        (s, Some(t)) if s != t => {
            return Err(Failure::from(format!(
            "{} is {t} bytes but the catalog says {s}: refusing a file that is not the one listed",
            e.url
        )))
        }
        (s, _) => s,
    };
    let e = &CatalogEntry { size, ..e.clone() };
    let first = read_all(resp).await?;
    let n = head_len(&first, size)?;
    let bytes = read_all(fetch_range(&e.url, 0, n, version.as_deref()).await?).await?;
    let head = parse_head(bytes, size)?;
    // The manifest's own plan decides (the catalog's copy was only shown): nothing
    // is stored for a model that cannot be loaded here.
    super::check_memory(
        &MemoryNeeds::of(&head.manifest),
        context,
        &e.name,
        "not downloaded",
    )?;
    let remaining = size as f64;
    if let (Some(usage), Some(quota)) = estimate().await {
        if usage + remaining > quota {
            return Err(Failure {
                kind: ErrorKind::Storage,
                message: format!(
                    "{} needs {:.1} MB but this browser grants {:.1} MB more storage to the page: delete a cached model or free disk space",
                    e.name,
                    remaining / 1e6,
                    (quota - usage).max(0.0) / 1e6
                ),
                chunk: None,
            });
        }
    }
    let meta = CachedModel {
        id: e.id.clone(),
        name: e.name.clone(),
        bytes: e.size,
        chunks_done: 0,
        chunks_total: chunks::count(&head.manifest),
        complete: false,
        sha256: e.sha256.clone(),
        entry: Some(e.clone()),
        evidence_json: None,
        validator: version,
    };
    store.put_head(&meta, &head.bytes).await?;
    Ok((head, meta))
}

/// Download or resume `e`. Returns the verified whole-file SHA-256. A file that changed
/// on the server since the stored part was fetched is started over (once), so two
/// versions are never mixed.
pub async fn download(
    store: &Store,
    e: &CatalogEntry,
    context: usize,
    post: &dyn Fn(Event),
) -> Result<String, Failure> {
    let mut restarts = 0;
    loop {
        match download_once(store, e, context, post).await {
            Err(f) if f.kind == ErrorKind::Changed && restarts < MAX_RESTARTS => {
                restarts += 1;
                store.delete(&e.id).await?;
                starting_note(
                    post,
                    e,
                    format!(
                        "{}: the stored part was discarded, starting over",
                        f.message
                    ),
                );
            }
            Err(f) if f.kind == ErrorKind::Changed => {
                let _ = store.delete(&e.id).await;
                return Err(Failure {
                    message: format!("{}, again: the stored part was discarded; Download again once the file is stable", f.message),
                    ..f
                });
            }
            r => return r,
        }
    }
}

/// A progress note before any chunk is counted (a retry of the manifest, a restart).
fn starting_note(post: &dyn Fn(Event), e: &CatalogEntry, note: String) {
    post(Event::Progress {
        id: e.id.clone(),
        stage: Stage::Download,
        done: 0,
        total: e.size,
        note: Some(note),
    });
}

async fn download_once(
    store: &Store,
    e: &CatalogEntry,
    context: usize,
    post: &dyn Fn(Event),
) -> Result<String, Failure> {
    // The head is fetched again after a dropped connection, as the chunks are.
    let mut tries = 0;
    let (head, mut meta) = loop {
        match head(store, e, context, post).await {
            Err(f) if f.kind == ErrorKind::Network && tries < MAX_RETRIES => {
                tries += 1;
                starting_note(
                    post,
                    e,
                    format!("reading the manifest failed ({}); retry {tries}", f.message),
                );
                sleep_ms(300 * tries as i32).await;
            }
            r => break r?,
        }
    };
    let e = &CatalogEntry {
        size: meta.bytes,
        ..e.clone()
    };
    let d = head.manifest.data.clone();
    let total = meta.chunks_total;
    let mut failures = 0;
    let mut bad_chunks = 0;
    // The last note (a resume, a retry) stays up until the next one, so that a
    // person who looks away still sees that the download recovered from something.
    let last_note: std::cell::RefCell<Option<String>> = Default::default();
    let progress = |meta: &CachedModel, note: Option<String>| {
        if note.is_some() {
            *last_note.borrow_mut() = note.clone();
        }
        let note = note.or_else(|| last_note.borrow().clone());
        let done = (head.data_offset + (meta.chunks_done * d.chunk_size)).min(e.size);
        post(Event::Progress {
            id: e.id.clone(),
            stage: Stage::Download,
            done,
            total: e.size,
            note,
        });
    };
    progress(
        &meta,
        (meta.chunks_done > 0).then(|| format!("resuming at chunk {}", meta.chunks_done)),
    );
    while meta.chunks_done < total {
        let before = meta.chunks_done;
        match stream_chunks(store, e, &head, &mut meta, &progress).await {
            Ok(()) => {}
            Err(f)
                if f.kind == ErrorKind::Network && (failures < MAX_RETRIES || meta.chunks_done > before) =>
            {
                if meta.chunks_done > before {
                    failures = 0;
                }
                failures += 1;
                progress(
                    &meta,
                    Some(format!(
                        "connection lost ({}); resuming from chunk {} (retry {failures})",
                        f.message, meta.chunks_done
                    )),
                );
                sleep_ms(300 * failures as i32).await;
                continue;
            }
            // Wrong bytes in a chunk are never stored; fetched again, a corruption in
            // transit goes away, and a file that is wrong on the server fails here.
            Err(f) if f.kind == ErrorKind::Checksum && f.chunk.is_some() && bad_chunks < MAX_BAD_CHUNKS => {
                bad_chunks += 1;
                progress(
                    &meta,
                    Some(format!("{}: not stored, fetching it again", f.message)),
                );
                continue;
            }
            Err(f) if f.kind == ErrorKind::Checksum => {
                return Err(Failure {
                    message: format!(
                        "{} ({} times): the {} verified chunks before it are kept, but this file cannot be completed from this server",
                        f.message,
                        bad_chunks + 1,
                        meta.chunks_done
                    ),
                    ..f
                })
            }
            Err(f) => return Err(f),
        }
        failures = 0;
    }
    // Everything is stored: hash the file as stored, which also proves the store.
    post(Event::Progress {
        id: e.id.clone(),
        stage: Stage::Verify,
        done: 0,
        total: e.size,
        note: Some("checking the whole-file SHA-256".into()),
    });
    let mut file = Sha256::new();
    let mut data = Sha256::new();
    file.update(&head.bytes);
    let mut buf = Vec::new();
    for i in 0..total {
        if !store.chunk_into(&e.id, i, &mut buf).await? {
            return Err(Failure::from(format!("chunk {i} vanished from IndexedDB")));
        }
        file.update(&buf);
        data.update(&buf);
    }
    let (got, got_data) = (hex(&file.finalize()), hex(&data.finalize()));
    let want = e.sha256.to_ascii_lowercase();
    if got_data != d.sha256 || (!want.is_empty() && got != want) {
        let _ = store.delete(&e.id).await;
        return Err(Failure {
            kind: ErrorKind::Checksum,
            message: format!(
                "the downloaded file hashes to {got}, the catalog says {want}: deleted, nothing was kept"
            ),
            chunk: None,
        });
    }
    meta.complete = true;
    meta.sha256 = got.clone();
    // Kept with the model so that an offline load can still check it; a record that
    // cannot be fetched now is fetched again at load.
    if let Some(url) = &e.evidence {
        meta.evidence_json = fetch_text(url).await.ok();
    }
    store.put_meta(&meta).await?;
    Ok(got)
}

/// One Range request from the first missing chunk to the end, storing chunks as they
/// complete. A dropped connection returns a `network` failure after storing what
/// arrived whole.
async fn stream_chunks(
    store: &Store,
    e: &CatalogEntry,
    head: &Head,
    meta: &mut CachedModel,
    progress: &dyn Fn(&CachedModel, Option<String>),
) -> Result<(), Failure> {
    let d = &head.manifest.data;
    let start = head.data_offset + meta.chunks_done * d.chunk_size;
    let resp = fetch_range(&e.url, start, e.size, meta.validator.as_deref()).await?;
    let body = resp
        .body()
        .ok_or_else(|| Failure::network("empty response body".into()))?;
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let mut pending: Vec<u8> = Vec::with_capacity(d.chunk_size as usize * 2);
    loop {
        while meta.chunks_done < meta.chunks_total {
            let i = meta.chunks_done;
            let want = chunks::len(&head.manifest, i) as usize;
            if pending.len() < want {
                break;
            }
            if let Err(f) = verify_chunk(head, i, &pending[..want]) {
                let _ = reader.cancel();
                return Err(f);
            }
            meta.chunks_done += 1;
            if let Err(why) = store.put_chunk(meta, i, &pending[..want]).await {
                meta.chunks_done -= 1;
                let _ = reader.cancel();
                return Err(Failure {
                    kind: ErrorKind::Storage,
                    message: format!(
                        "chunk {i} of {} could not be stored: {why}. The {} verified chunks stored before it are kept; Resume continues from there",
                        e.name, meta.chunks_done
                    ),
                    chunk: None,
                });
            }
            pending.drain(..want);
            progress(meta, None);
        }
        if meta.chunks_done >= meta.chunks_total {
            let _ = reader.cancel();
            return Ok(());
        }
        if super::download_cancelled() {
            let _ = reader.cancel();
            return Err(Failure {
                kind: ErrorKind::Cancelled,
                message: format!(
                    "the download of {} was cancelled at chunk {} of {}: the verified chunks are kept, so Resume continues from there (Delete removes them); the model cannot be loaded until it is complete",
                    e.name, meta.chunks_done, meta.chunks_total
                ),
                chunk: None,
            });
        }
        let r = match within(reader.read(), STALL_MS, "reading the download", || {
            let _ = reader.cancel();
        })
        .await
        {
            // Said by the check at the top of the loop, with the chunk it stopped at.
            Err(f) if f.kind == ErrorKind::Cancelled => continue,
            r => r?,
        };
        let done = Reflect::get(&r, &JsValue::from_str("done"))
            .ok()
            .and_then(|v| v.as_bool())
            .unwrap_or(true);
        if done {
            return Err(Failure::network(format!(
                "the stream ended early, at chunk {}",
                meta.chunks_done
            )));
        }
        let v = Reflect::get(&r, &JsValue::from_str("value")).unwrap_or(JsValue::UNDEFINED);
        let a: Uint8Array = v.unchecked_into();
        let at = pending.len();
        pending.resize(at + a.length() as usize, 0);
        a.copy_to(&mut pending[at..]);
    }
}
