//! The model store in IndexedDB, from the worker. Three object stores:
//! - `models`: id → `CachedModel` as JSON (progress and verification state);
//! - `heads`:  id → the file's header + manifest + padding (everything before the data);
//! - `chunks`: [id, index] → one verified data chunk.
//!
//! A chunk and the progress record that counts it are written in one transaction, so
//! after a crash or reload the record never claims a chunk that is not there.

use js_sys::{Array, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{IdbDatabase, IdbKeyRange, IdbTransaction, IdbTransactionMode};

use crate::idb::committed;
pub use crate::idb::describe;

use crate::protocol::CachedModel;

const DB_NAME: &str = "tinyrustlm";
const DB_VERSION: u32 = 1;
pub const MODELS: &str = "models";
pub const HEADS: &str = "heads";
pub const CHUNKS: &str = "chunks";

/// A handle on the database (cloning shares it).
#[derive(Clone)]
pub struct Store {
    db: IdbDatabase,
}

fn chunk_key(id: &str, index: u64) -> JsValue {
    Array::of2(&JsValue::from_str(id), &JsValue::from_f64(index as f64)).into()
}

impl Store {
    pub async fn open() -> Result<Store, String> {
        let db = crate::idb::open(DB_NAME, DB_VERSION, &[MODELS, HEADS, CHUNKS]).await?;
        Ok(Store { db })
    }

    fn tx(&self, stores: &[&str], write: bool) -> Result<IdbTransaction, String> {
        let names = Array::new();
        for s in stores {
            names.push(&JsValue::from_str(s));
        }
        let mode = if write {
            IdbTransactionMode::Readwrite
        } else {
            IdbTransactionMode::Readonly
        };
        self.db
            .transaction_with_str_sequence_and_mode(&names, mode)
            .map_err(|e| describe(&e))
    }

    async fn get(&self, store: &str, key: &JsValue) -> Result<Option<JsValue>, String> {
        crate::idb::get(&self.db, store, key).await
    }

    pub async fn meta(&self, id: &str) -> Result<Option<CachedModel>, String> {
        match self.get(MODELS, &JsValue::from_str(id)).await? {
            Some(v) => {
                let s = v.as_string().ok_or("a model record is not a string")?;
                serde_json::from_str(&s)
                    .map(Some)
                    .map_err(|e| format!("model record of {id} is unreadable: {e}"))
            }
            None => Ok(None),
        }
    }

    pub async fn list(&self) -> Result<Vec<CachedModel>, String> {
        let all = crate::idb::get_all(&self.db, MODELS).await?;
        Ok(all
            .iter()
            .filter_map(|v| v.as_string())
            .filter_map(|s| serde_json::from_str(&s).ok())
            .collect())
    }

    /// Store the file head and the initial record together.
    pub async fn put_head(&self, meta: &CachedModel, head: &[u8]) -> Result<(), String> {
        let tx = self.tx(&[MODELS, HEADS], true)?;
        let key = JsValue::from_str(&meta.id);
        let json = JsValue::from_str(&serde_json::to_string(meta).unwrap());
        let r = tx
            .object_store(HEADS)
            .and_then(|s| s.put_with_key(&Uint8Array::from(head), &key))
            .and_then(|_| tx.object_store(MODELS))
            .and_then(|s| s.put_with_key(&json, &key));
        r.map_err(|e| describe(&e))?;
        committed(&tx).await.map(|_| ()).map_err(|e| describe(&e))
    }

    pub async fn put_meta(&self, meta: &CachedModel) -> Result<(), String> {
        let tx = self.tx(&[MODELS], true)?;
        let json = JsValue::from_str(&serde_json::to_string(meta).unwrap());
        tx.object_store(MODELS)
            .and_then(|s| s.put_with_key(&json, &JsValue::from_str(&meta.id)))
            .map_err(|e| describe(&e))?;
        committed(&tx).await.map(|_| ()).map_err(|e| describe(&e))
    }

    /// Store verified chunk `index` and the record counting it, atomically.
    pub async fn put_chunk(
        &self,
        meta: &CachedModel,
        index: u64,
        bytes: &[u8],
    ) -> Result<(), String> {
        let tx = self.tx(&[MODELS, CHUNKS], true)?;
        let json = JsValue::from_str(&serde_json::to_string(meta).unwrap());
        let r = tx
            .object_store(CHUNKS)
            .and_then(|s| s.put_with_key(&Uint8Array::from(bytes), &chunk_key(&meta.id, index)))
            .and_then(|_| tx.object_store(MODELS))
            .and_then(|s| s.put_with_key(&json, &JsValue::from_str(&meta.id)));
        r.map_err(|e| describe(&e))?;
        committed(&tx).await.map(|_| ()).map_err(|e| describe(&e))
    }

    pub async fn head(&self, id: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(self
            .get(HEADS, &JsValue::from_str(id))
            .await?
            .map(|v| Uint8Array::new(&v).to_vec()))
    }

    /// Copy chunk `index` into `out` (cleared first). False if it is not stored.
    pub async fn chunk_into(
        &self,
        id: &str,
        index: u64,
        out: &mut Vec<u8>,
    ) -> Result<bool, String> {
        out.clear();
        match self.get(CHUNKS, &chunk_key(id, index)).await? {
            Some(v) => {
                let a = Uint8Array::new(&v);
                out.resize(a.length() as usize, 0);
                a.copy_to(out);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Remove a model's record, head and every chunk.
    pub async fn delete(&self, id: &str) -> Result<(), String> {
        let tx = self.tx(&[MODELS, HEADS, CHUNKS], true)?;
        let key = JsValue::from_str(id);
        let range = IdbKeyRange::bound(&chunk_key(id, 0), &chunk_key(id, u32::MAX as u64))
            .map_err(|e| describe(&e))?;
        let r = tx
            .object_store(CHUNKS)
            .and_then(|s| s.delete(&range))
            .and_then(|_| tx.object_store(HEADS))
            .and_then(|s| s.delete(&key))
            .and_then(|_| tx.object_store(MODELS))
            .and_then(|s| s.delete(&key));
        r.map_err(|e| describe(&e))?;
        committed(&tx).await.map(|_| ()).map_err(|e| describe(&e))
    }
}

/// Bytes used and available to this origin, when the browser says.
pub async fn estimate() -> (Option<f64>, Option<f64>) {
    let scope: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
    let Ok(p) = scope.navigator().storage().estimate() else {
        return (None, None);
    };
    match JsFuture::from(p).await {
        Ok(v) => {
            let e: web_sys::StorageEstimate = v.unchecked_into();
            (e.get_usage(), e.get_quota())
        }
        Err(_) => (None, None),
    }
}
