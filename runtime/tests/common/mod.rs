//! Shared helpers for the golden tests: where the real models are, converting them once
//! per test run, and reading the committed goldens.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use slm_runtime::format::writer::{self, QuantPolicy};
use slm_runtime::import;

/// Where scripts/fetch-models.sh puts the verified source models.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("TINYRUSTLM_CACHE") {
        Some(p) => PathBuf::from(p),
        None => {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/tinyrustlm")
        }
    }
}

pub fn source_path(name: &str) -> PathBuf {
    let p = match name {
        "smollm2" => cache_dir().join("models/SmolLM2-135M-Instruct.Q4_1.gguf"),
        "qwen2.5" => cache_dir().join("models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
        fixture => cache_dir()
            .join("fixtures")
            .join(fixture.trim_start_matches("fixture-")),
    };
    assert!(
        p.exists(),
        "{} is missing: run scripts/fetch-models.sh (the test suite needs the real models)",
        p.display()
    );
    p
}

static CONVERT_LOCK: Mutex<()> = Mutex::new(());

/// Convert `name` with `quant` into the cache (once per converter build) and return the
/// path. A `quant` of `q4_0+requantize` (or `q8_0+…`) re-quantizes the source's quantized
/// tensors too.
pub fn slm(name: &str, quant: &str) -> PathBuf {
    let _g = CONVERT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("slm");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{name}-{quant}.slm"));
    let stamp = out.with_extension("stamp");
    // Rebuild when the test binary (and so the converter) changed.
    let exe = std::env::current_exe().unwrap();
    let exe_time = std::fs::metadata(&exe).and_then(|m| m.modified()).ok();
    let fresh =
        out.exists() && std::fs::metadata(&stamp).and_then(|m| m.modified()).ok() >= exe_time;
    if !fresh {
        let src = import::open(&source_path(name), &mut |_, _| {})
            .unwrap_or_else(|e| panic!("import {name}: {e}"));
        writer::write(
            src,
            QuantPolicy::parse(quant.trim_end_matches("+requantize")).unwrap(),
            quant.ends_with("+requantize"),
            &out,
            "test",
            &mut |_, _, _| {},
        )
        .unwrap_or_else(|e| panic!("convert {name}: {e}"));
        std::fs::write(&stamp, b"").unwrap();
    }
    out
}

pub fn golden(name: &str) -> serde_json::Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../reference/goldens")
        .join(format!("{name}.json"));
    let s = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&s).unwrap()
}

pub fn u32s(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

pub fn f32s(v: &serde_json::Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

/// Fixed clock for templates that call strftime_now (none of the goldens depend on it).
pub const NOW: i64 = 1_721_952_000;
