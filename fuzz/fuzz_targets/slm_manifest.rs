//! A manifest that passes every structural check: the input is the manifest's JSON, the
//! header is made to match it (length, SHA-256), and every tensor reads as zeros of its
//! listed length. So the fuzzer reaches what a hostile file that hashes correctly
//! reaches: the config's sizes, the tokenizer, the template, the stop table, the
//! generation_config, the model's allocation budget and forward pass.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sha2::{Digest, Sha256};
use slm_runtime::engine::Engine;
use slm_runtime::format::layout::{parse_manifest, Header};
use slm_runtime::format::manifest::FORMAT_VERSION;
use slm_runtime::SlmError;

#[path = "common.rs"]
mod common;

/// Tensor bytes beyond this are not handed out (a real file bounds them by its length).
const MAX_TENSOR: u64 = 8 << 20;

fuzz_target!(|data: &[u8]| {
    let header = Header {
        version: FORMAT_VERSION,
        manifest_len: data.len() as u64,
        manifest_sha256: Sha256::digest(data).into(),
    };
    let Ok(m) = parse_manifest(&header, data, None) else {
        return;
    };
    let tensors = m.clone();
    let mut read = |name: &str| match tensors.tensor(name) {
        Some(t) if t.length <= MAX_TENSOR => Ok(vec![0u8; t.length as usize]),
        Some(_) => Err(SlmError::Invalid("tensor over the fuzz cap".into())),
        None => Err(SlmError::Invalid(format!("tensor {name} is missing"))),
    };
    if let Ok(e) = Engine::load(m, &mut read) {
        common::exercise(&e);
    }
});
