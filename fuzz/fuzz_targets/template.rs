//! A chat template and a messages JSON (split by `common::split`): compile, render with
//! and without a generation prompt and with the messages as tools.
#![no_main]
use libfuzzer_sys::fuzz_target;
use slm_runtime::template::ChatTemplate;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let (source, messages) = common::split(data);
    let Ok(source) = std::str::from_utf8(source) else {
        return;
    };
    let Ok(t) = ChatTemplate::new(source) else {
        return;
    };
    let messages = serde_json::from_slice(messages)
        .unwrap_or_else(|_| serde_json::json!([{"role": "user", "content": "hi"}]));
    let mut special = serde_json::Map::new();
    special.insert("bos_token".into(), "<s>".into());
    special.insert("eos_token".into(), "</s>".into());
    for add in [false, true] {
        let _ = t.render(&messages, None, add, &special, 0);
    }
    let _ = t.render(&messages, Some(&messages), true, &special, 1_700_000_000);
});
