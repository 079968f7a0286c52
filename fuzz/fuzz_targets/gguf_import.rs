//! A GGUF file: the reader, then the import (config, tokenizer rebuilt from the
//! metadata, chat template, tensors) and a conversion to `.slm` that is loaded back.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let _ = slm_runtime::import::gguf::GgufFile::read(&mut std::io::Cursor::new(data));
    let p = common::scratch("in.gguf");
    std::fs::write(&p, data).expect("scratch file");
    let Ok(imported) = slm_runtime::import::open(&p, &mut |_, _| {}) else {
        return;
    };
    common::convert_and_exercise(imported, "gguf.slm");
});
