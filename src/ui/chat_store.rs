//! Conversations in IndexedDB, from the page: one object store, `chats`, id → the
//! `Conversation` as JSON. A record is written whole, in one transaction, so a reader
//! never sees half of one. (Models live in the worker's own database.)

use std::rc::Rc;

use wasm_bindgen::prelude::*;
use web_sys::{IdbDatabase, IdbTransaction, IdbTransactionMode};

use super::conversations::{ChatHead, Conversation};
use crate::idb::{committed, describe};

const DB_NAME: &str = "tinyrustlm-chats";
const DB_VERSION: u32 = 1;
const CHATS: &str = "chats";

#[derive(Clone)]
pub struct ChatStore {
    db: Rc<IdbDatabase>,
}

impl ChatStore {
    pub async fn open() -> Result<ChatStore, String> {
        let db = crate::idb::open(DB_NAME, DB_VERSION, &[CHATS]).await?;
        Ok(ChatStore { db: Rc::new(db) })
    }

    fn write_tx(&self) -> Result<IdbTransaction, String> {
        self.db
            .transaction_with_str_and_mode(CHATS, IdbTransactionMode::Readwrite)
            .map_err(|e| describe(&e))
    }

    /// Every conversation's head, the most recently changed first. A record this
    /// version cannot read is skipped and named.
    pub async fn list(&self) -> Result<(Vec<ChatHead>, Vec<String>), String> {
        let all = crate::idb::get_all(&self.db, CHATS).await?;
        let mut heads = Vec::new();
        let mut unreadable = Vec::new();
        for v in all.iter() {
            match v.as_string().map(|s| serde_json::from_str::<ChatHead>(&s)) {
                Some(Ok(h)) => heads.push(h),
                Some(Err(e)) => unreadable.push(e.to_string()),
                None => unreadable.push("a record is not text".into()),
            }
        }
        heads.sort_by(|a, b| b.updated.total_cmp(&a.updated));
        Ok((heads, unreadable))
    }

    pub async fn get(&self, id: &str) -> Result<Option<Conversation>, String> {
        let Some(v) = crate::idb::get(&self.db, CHATS, &JsValue::from_str(id)).await? else {
            return Ok(None);
        };
        let text = v.as_string().ok_or("a conversation record is not text")?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("the conversation record is unreadable: {e}"))
    }

    /// Write `json` (a `Conversation`) under `id`; resolves once it is committed.
    pub async fn put(&self, id: &str, json: &str) -> Result<(), String> {
        let tx = self.write_tx()?;
        tx.object_store(CHATS)
            .and_then(|s| s.put_with_key(&JsValue::from_str(json), &JsValue::from_str(id)))
            .map_err(|e| describe(&e))?;
        committed(&tx).await.map(|_| ()).map_err(|e| describe(&e))
    }

    pub async fn delete(&self, id: &str) -> Result<(), String> {
        let tx = self.write_tx()?;
        tx.object_store(CHATS)
            .and_then(|s| s.delete(&JsValue::from_str(id)))
            .map_err(|e| describe(&e))?;
        committed(&tx).await.map(|_| ()).map_err(|e| describe(&e))
    }
}
