//! IndexedDB as futures, for the two databases: the worker's model store
//! (`worker::idb`) and the page's conversations (`ui::chat_store`). Failures come back
//! as sentences for people.

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{IdbDatabase, IdbFactory, IdbRequest, IdbTransaction};

/// An IndexedDB failure, already phrased for people (quota errors say so).
pub fn describe(e: &JsValue) -> String {
    if let Some(d) = e.dyn_ref::<web_sys::DomException>() {
        if d.name() == "QuotaExceededError" {
            return "browser storage is full (QuotaExceededError): free space or delete a cached model".into();
        }
        return format!("{}: {}", d.name(), d.message());
    }
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        return String::from(err.message());
    }
    e.as_string().unwrap_or_else(|| format!("{e:?}"))
}

pub fn request(req: &IdbRequest) -> JsFuture {
    let promise = Promise::new(&mut |resolve, reject| {
        let r = req.clone();
        let ok = Closure::once_into_js(move || {
            let _ = resolve.call1(&JsValue::NULL, &r.result().unwrap_or(JsValue::UNDEFINED));
        });
        let r = req.clone();
        let fail = Closure::once_into_js(move || {
            let e = r
                .error()
                .ok()
                .flatten()
                .map(JsValue::from)
                .unwrap_or(JsValue::NULL);
            let _ = reject.call1(&JsValue::NULL, &e);
        });
        req.set_onsuccess(Some(ok.unchecked_ref()));
        req.set_onerror(Some(fail.unchecked_ref()));
    });
    JsFuture::from(promise)
}

/// Resolves when the transaction has committed; rejects with its error if it aborts.
pub fn committed(tx: &IdbTransaction) -> JsFuture {
    let promise = Promise::new(&mut |resolve, reject| {
        let ok = Closure::once_into_js(move || {
            let _ = resolve.call0(&JsValue::NULL);
        });
        let t = tx.clone();
        let reject2 = reject.clone();
        let fail = Closure::once_into_js(move || {
            let e = t.error().map(JsValue::from).unwrap_or(JsValue::NULL);
            let _ = reject.call1(&JsValue::NULL, &e);
        });
        let t = tx.clone();
        let aborted = Closure::once_into_js(move || {
            let e = t
                .error()
                .map(JsValue::from)
                .unwrap_or_else(|| JsValue::from_str("transaction aborted"));
            let _ = reject2.call1(&JsValue::NULL, &e);
        });
        tx.set_oncomplete(Some(ok.unchecked_ref()));
        tx.set_onerror(Some(fail.unchecked_ref()));
        tx.set_onabort(Some(aborted.unchecked_ref()));
    });
    JsFuture::from(promise)
}

/// Open (creating or upgrading) database `name` with these object stores; works in
/// the page and in a worker alike.
pub async fn open(
    name: &str,
    version: u32,
    stores: &[&'static str],
) -> Result<IdbDatabase, String> {
    let factory: IdbFactory = js_sys::Reflect::get(&js_sys::global(), &"indexedDB".into())
        .ok()
        .filter(|f| !f.is_undefined() && !f.is_null())
        .ok_or("IndexedDB is not available in this browser context")?
        .unchecked_into();
    let req = factory
        .open_with_u32(name, version)
        .map_err(|e| describe(&e))?;
    let stores: Vec<&'static str> = stores.to_vec();
    let upgrade = Closure::<dyn FnMut(web_sys::IdbVersionChangeEvent)>::new(
        move |e: web_sys::IdbVersionChangeEvent| {
            let Some(req) = e.target() else { return };
            let req: web_sys::IdbOpenDbRequest = req.unchecked_into();
            let Ok(db) = req.result() else { return };
            let db: IdbDatabase = db.unchecked_into();
            let names = db.object_store_names();
            for s in &stores {
                if !names.contains(s) {
                    let _ = db.create_object_store(s);
                }
            }
        },
    );
    req.set_onupgradeneeded(Some(upgrade.as_ref().unchecked_ref()));
    let db = request(&req).await.map_err(|e| describe(&e))?;
    drop(upgrade);
    Ok(db.unchecked_into())
}

/// Every value in `store`, in key order.
pub async fn get_all(db: &IdbDatabase, store: &str) -> Result<js_sys::Array, String> {
    let tx = db.transaction_with_str(store).map_err(|e| describe(&e))?;
    let req = tx
        .object_store(store)
        .and_then(|s| s.get_all())
        .map_err(|e| describe(&e))?;
    Ok(request(&req)
        .await
        .map_err(|e| describe(&e))?
        .unchecked_into())
}

/// The value under `key` in `store`, if there is one.
pub async fn get(db: &IdbDatabase, store: &str, key: &JsValue) -> Result<Option<JsValue>, String> {
    let tx = db.transaction_with_str(store).map_err(|e| describe(&e))?;
    let req = tx
        .object_store(store)
        .and_then(|s| s.get(key))
        .map_err(|e| describe(&e))?;
    let v = request(&req).await.map_err(|e| describe(&e))?;
    Ok((!v.is_undefined()).then_some(v))
}
