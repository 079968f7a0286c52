//! tokenizer.json and a text (split by `common::split`): load, encode with and without
//! special tokens, decode both ways.
#![no_main]
use libfuzzer_sys::fuzz_target;
use slm_runtime::tokenizer::Tokenizer;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let (json, text) = common::split(data);
    let (Ok(json), Ok(text)) = (std::str::from_utf8(json), std::str::from_utf8(text)) else {
        return;
    };
    let Ok(t) = Tokenizer::from_json(json) else {
        return;
    };
    for special in [false, true] {
        if let Ok(ids) = t.encode(text, special) {
            let _ = t.decode(&ids, false);
            let _ = t.decode(&ids, true);
        }
    }
    let _ = t.decode(&[0, 1, 2, u32::MAX], false);
});
