//! A `.slm` file as it comes: open (header, manifest hash, manifest checks), verify
//! every chunk, load, and run a prompt.
#![no_main]
use libfuzzer_sys::fuzz_target;
use slm_runtime::engine::Engine;
use slm_runtime::format::reader::SlmFile;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let p = common::scratch("file.slm");
    std::fs::write(&p, data).expect("scratch file");
    if let Ok(mut f) = SlmFile::open(&p) {
        let _ = f.verify(&mut |_, _| {});
    }
    if let Ok(e) = Engine::load_file(&p) {
        common::exercise(&e);
    }
});
