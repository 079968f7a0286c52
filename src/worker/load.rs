//! Loading a model into the worker: from IndexedDB (a completed download) or from a
//! dropped `File` (optionally kept in IndexedDB as it is read). Every chunk is
//! verified on the way in, whatever the source.

use sha2::{Digest, Sha256};
use slm_runtime::engine::Engine;
use slm_runtime::format::chunks;
use slm_runtime::format::layout::hex;
use slm_runtime::model::memory::MemoryNeeds;

use super::idb::Store;
use super::source::{
    blob_range, head_len, parse_head, verify_chunk, Assembler, Failure, Head, HEADER_BYTES,
};
use crate::protocol::{CachedModel, ErrorKind, Event, EvidenceView, ModelCard, Stage};

pub enum Origin {
    Stored(String),
    File { file: web_sys::File, keep: bool },
}

/// A model ready to chat, with what the card shows.
pub struct Loaded {
    pub engine: Engine,
    pub card: ModelCard,
    /// The catalog's evidence URL for a downloaded model, and the record stored with
    /// it at download time.
    pub evidence_url: Option<String>,
    pub evidence_json: Option<String>,
}

/// Check an evidence record against the loaded engine's file.
pub fn evidence_view(e: &Engine, text: &str, source: &str) -> EvidenceView {
    use slm_runtime::gate::Evidence;
    let checked =
        Evidence::parse(text).and_then(|ev| ev.check_binding(&e.text.manifest).map(|_| ev));
    match checked {
        Ok(ev) => EvidenceView {
            accepted: true,
            verdict: ev.verdict.as_str().into(),
            summary: ev.summary(),
            source: source.into(),
            stages: ev
                .stages
                .iter()
                .map(|s| {
                    (
                        s.stage.as_str().to_string(),
                        s.passed,
                        s.criterion.clone(),
                        s.figures_text(),
                    )
                })
                .collect(),
            goldens_sha256: ev.goldens.sha256,
            error: None,
        },
        Err(err) => EvidenceView::rejected(
            format!("Evidence rejected: {err}"),
            source.into(),
            err.to_string(),
        ),
    }
}

/// A kept file's id comes from its content (the manifest's data SHA-256), not its
/// name: two different files never share a record, and the same model dropped twice
/// is stored once.
fn id_for_file(head: &Head) -> String {
    format!("local-{}", &head.manifest.data.sha256[..16])
}

pub async fn load(
    store: &Store,
    origin: Origin,
    post: &dyn Fn(Event),
    now: fn() -> f64,
    context: usize,
) -> Result<Loaded, Failure> {
    let t0 = now();
    let (id, name, head, file_len, expect_sha, evidence_url, evidence_json) = match &origin {
        Origin::Stored(id) => {
            let meta = store.meta(id).await?.ok_or_else(|| {
                Failure::from(format!("model {id} is not in the browser's store"))
            })?;
            if !meta.complete {
                return Err(Failure::from(format!(
                    "{} is not fully downloaded and verified ({} of {} chunks): resume the download first",
                    meta.name, meta.chunks_done, meta.chunks_total
                )));
            }
            let bytes = store.head(id).await?.ok_or_else(|| {
                Failure::from(format!("the manifest of {id} is missing from the store"))
            })?;
            (
                id.clone(),
                meta.name.clone(),
                parse_head(bytes, meta.bytes)?,
                meta.bytes,
                Some(meta.sha256),
                meta.entry.and_then(|e| e.evidence),
                meta.evidence_json,
            )
        }
        Origin::File { file, .. } => {
            let len = file.size() as u64;
            let first = blob_range(file, 0, HEADER_BYTES.min(len)).await?;
            let n = head_len(&first, len)?;
            let head = parse_head(blob_range(file, 0, n).await?, len)?;
            (id_for_file(&head), file.name(), head, len, None, None, None)
        }
    };
    // Planned from the manifest before any weight is read: a model that cannot fit is
    // refused here, with the numbers, instead of failing an allocation half way.
    super::check_memory(
        &MemoryNeeds::of(&head.manifest),
        context,
        &name,
        "choose a smaller context or a smaller model",
    )?;
    // The tokenizer's build peak before the weights arrive (`Engine::with_text`).
    let text = slm_runtime::engine::TextSide::new(head.manifest.clone())?;
    // Already kept and verified: load from the file without touching the stored copy.
    let already = match &origin {
        Origin::File { keep: true, .. } => store.meta(&id).await?.is_some_and(|m| m.complete),
        _ => false,
    };
    let keep = match &origin {
        Origin::File { keep: true, .. } if !already => {
            let meta = CachedModel {
                id: id.clone(),
                name: name.clone(),
                bytes: file_len,
                chunks_done: 0,
                chunks_total: chunks::count(&head.manifest),
                complete: false,
                sha256: String::new(),
                entry: None,
                evidence_json: None,
                validator: None,
            };
            store.delete(&id).await?;
            store.put_head(&meta, &head.bytes).await?;
            Some(meta)
        }
        _ => None,
    };
    let (file_sha, keep, mut asm) = match read_chunks(store, &origin, &id, &head, keep, post).await
    {
        Ok(r) => r,
        Err(f) => {
            if matches!(origin, Origin::File { keep: true, .. }) && !already {
                // A file that failed verification is not kept, not even in part.
                let _ = store.delete(&id).await;
            }
            return Err(f);
        }
    };
    if let Some(want) = expect_sha.filter(|w| !w.is_empty()) {
        if want != file_sha {
            return Err(Failure {
                kind: ErrorKind::Checksum,
                message: format!("the stored file hashes to {file_sha}, it was verified as {want}"),
                chunk: None,
            });
        }
    }
    if let Some(mut meta) = keep {
        meta.complete = true;
        meta.sha256 = file_sha.clone();
        store.put_meta(&meta).await?;
    }
    post(Event::Progress {
        id: id.clone(),
        stage: Stage::Load,
        done: file_len,
        total: file_len,
        note: Some("building the model".into()),
    });
    drop(head);
    let tensors = text.manifest.tensors.clone();
    let engine = Engine::with_text(text, &mut |name| asm.take(&tensors, name))?;
    // One-time costs paid here rather than in the first reply (see each warm_up).
    engine.text.warm_up(super::now_unix());
    engine.model.warm_up()?;
    let tuning = engine.model.tune_read_ahead(&now)?;
    let mut card = card(&id, &name, &engine, file_sha, now() - t0, context);
    card.execution.read_ahead = tuning;
    Ok(Loaded {
        engine,
        card,
        evidence_url,
        evidence_json,
    })
}

/// Read, verify and assemble every chunk; keep them in the store when asked. Returns
/// the whole-file SHA-256, the record to complete, and the assembled tensors.
async fn read_chunks(
    store: &Store,
    origin: &Origin,
    id: &str,
    head: &Head,
    mut keep: Option<CachedModel>,
    post: &dyn Fn(Event),
) -> Result<(String, Option<CachedModel>, Assembler), Failure> {
    let d = &head.manifest.data;
    let total = chunks::count(&head.manifest);
    let file_len = head.data_offset + d.length;
    let mut asm = Assembler::new(&head.manifest);
    let mut file = Sha256::new();
    file.update(&head.bytes);
    let mut buf = Vec::with_capacity(d.chunk_size as usize);
    for i in 0..total {
        if super::load_cancelled() {
            return Err(Failure {
                kind: ErrorKind::Cancelled,
                message: format!(
                    "loading {id} was cancelled at chunk {i} of {total}: no model is loaded"
                ),
                chunk: None,
            });
        }
        let start = head.data_offset + i * d.chunk_size;
        let end = start + chunks::len(&head.manifest, i);
        match origin {
            Origin::Stored(_) => {
                if !store.chunk_into(id, i, &mut buf).await? {
                    return Err(Failure::from(format!(
                        "chunk {i} is missing from the store"
                    )));
                }
            }
            Origin::File { file, .. } => buf = blob_range(file, start, end).await?,
        }
        verify_chunk(head, i, &buf)?;
        file.update(&buf);
        asm.feed(&buf);
        if let Some(meta) = keep.as_mut() {
            meta.chunks_done = i + 1;
            store.put_chunk(meta, i, &buf).await?;
        }
        if i % 4 == 3 || i + 1 == total {
            post(Event::Progress {
                id: id.to_string(),
                stage: Stage::Verify,
                done: end,
                total: file_len,
                note: None,
            });
        }
    }
    Ok((hex(&file.finalize()), keep, asm))
}

fn card(
    id: &str,
    name: &str,
    e: &Engine,
    file_sha256: String,
    load_ms: f64,
    context: usize,
) -> ModelCard {
    let m = &e.text.manifest;
    let c = &e.model.cfg;
    let needs = MemoryNeeds::of(m);
    let plan = needs.at(context as u64);
    ModelCard {
        id: id.to_string(),
        name: name.to_string(),
        architecture: format!("{:?}", c.architecture),
        layers: c.num_layers,
        hidden: c.hidden_size,
        heads: c.num_heads,
        kv_heads: c.num_kv_heads,
        vocab: c.vocab_size,
        context: e.context_len(),
        quant: m.provenance.quant.clone(),
        source_kind: serde_json::to_value(m.provenance.source_kind)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default(),
        source_files: m
            .provenance
            .source_files
            .iter()
            .map(|f| (f.name.clone(), f.sha256.clone()))
            .collect(),
        converter: m.provenance.converter.clone(),
        quality_gate: m.provenance.quality_gate.clone(),
        evidence: None,
        file_sha256,
        data_sha256: m.data.sha256.clone(),
        chunks: m.data.chunk_sha256.len(),
        plan,
        needs,
        memory_measured: 0,
        eos_ids: m.stop.eos_token_ids.clone(),
        has_template: m.tokenizer.chat_template.is_some()
            || !m.tokenizer.named_chat_templates.is_empty(),
        generation_config: serde_json::Value::Object(m.generation_config.clone()),
        preset_tuning: m.preset_tuning.clone(),
        load_ms,
        execution: slm_runtime::facts::ExecutionFacts::of(&e.model, &e.text),
        tokenizer: slm_runtime::facts::TokenizerFacts::of(&e.text),
    }
}
