//! A Hugging Face directory: the input is config.json and model.safetensors (split by
//! `common::split`), beside the seed's tokenizer files; imported, converted, loaded.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

/// The tokenizer files every input gets (the seed directory's, embedded at build time).
const TOKENIZER: &str = include_str!("../seeds/hf/tokenizer.json");
const TOKENIZER_CONFIG: &str = include_str!("../seeds/hf/tokenizer_config.json");

fuzz_target!(|data: &[u8]| {
    let (config, safetensors) = common::split(data);
    let dir = common::scratch("hf");
    let _ = std::fs::create_dir_all(&dir);
    let files: [(&str, &[u8]); 4] = [
        ("config.json", config),
        ("model.safetensors", safetensors),
        ("tokenizer.json", TOKENIZER.as_bytes()),
        ("tokenizer_config.json", TOKENIZER_CONFIG.as_bytes()),
    ];
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).expect("scratch file");
    }
    let Ok(imported) = slm_runtime::import::open(&dir, &mut |_, _| {}) else {
        return;
    };
    common::convert_and_exercise(imported, "hf.slm");
});
