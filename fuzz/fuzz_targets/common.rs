//! Shared by the fuzz targets (each includes it with `#[path]`).
#![allow(dead_code)]

use std::path::PathBuf;

/// A scratch path of this process in memory-backed storage (`/dev/shm` when there is
/// one): the readers take paths, and a fuzzer runs thousands of inputs a second.
pub fn scratch(name: &str) -> PathBuf {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    base.join(format!("slm-fuzz-{}-{name}", std::process::id()))
}

/// `data` as two parts: the first 4 bytes (little-endian) give the first part's length
/// (modulo what is there). Mutations then move the split as well as the bytes.
pub fn split(data: &[u8]) -> (&[u8], &[u8]) {
    if data.len() < 4 {
        return (data, &[]);
    }
    let n = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize;
    let rest = &data[4..];
    rest.split_at(n % (rest.len() + 1))
}

/// Whatever an engine does with one short prompt: render, encode, a few greedy and
/// sampled steps (the "model" preset built from the file's generation_config), decode.
/// Every error is fine; a panic, abort or hang is the finding.
pub fn exercise(e: &slm_runtime::engine::Engine) {
    use slm_runtime::engine::GenerateOptions;
    use slm_runtime::sampling::SamplerConfig;
    let msgs = serde_json::json!([{"role": "user", "content": "hi ünï 🙂"}]);
    let Ok(text) = e.text.render(&msgs, None, true, 0) else {
        return;
    };
    let Ok(ids) = e.text.encode_rendered(&text) else {
        return;
    };
    let mut opts = GenerateOptions::greedy(3);
    let _ = e.generate(&ids, &opts, &mut |_, _| {});
    opts.sampler = SamplerConfig::from_generation_config(&e.text.manifest.generation_config);
    let _ = e.generate(&ids, &opts, &mut |_, _| {});
}

/// Convert what an import gave to a `.slm` (`name` in scratch), load it back and run a
/// prompt: the path a person's GGUF or Hugging Face directory takes.
pub fn convert_and_exercise(imported: slm_runtime::import::Imported, name: &str) {
    use slm_runtime::format::writer::{self, QuantPolicy};
    let out = scratch(name);
    let policy = QuantPolicy::parse("keep").expect("policy");
    if writer::write(imported, policy, false, &out, "fuzz", &mut |_, _, _| {}).is_ok() {
        if let Ok(e) = slm_runtime::engine::Engine::load_file(&out) {
            exercise(&e);
        }
    }
}
