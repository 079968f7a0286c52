//! Parity with HF transformers on real models: rendered prompt bytes, token ids,
//! first-step f32 logits (max |diff| ≤ 1e-4, top-1 equal) and greedy continuations.
//! Goldens: reference/goldens/*.json, made by reference/make_goldens.py.

mod common;

use common::*;
use slm_runtime::engine::{argmax, Engine};

const LOGIT_TOL: f32 = 1e-4;

/// Parity checks; returns (prompt ids, f32 logits) of every rendered case.
fn check_model(name: &str) -> Vec<(Vec<u32>, Vec<f32>)> {
    let g = golden(name);
    let eng = Engine::load_file(&slm(name, "f32")).unwrap();
    assert_eq!(
        u32s(&g["eos_token_ids"]),
        eng.text.manifest.stop.eos_token_ids,
        "{name}: EOS set"
    );
    let mut failures = Vec::new();
    let mut worst = 0f32;
    let mut computed = Vec::new();
    for case in g["cases"].as_array().unwrap() {
        let cname = case["name"].as_str().unwrap();
        let tools = if case["tools"].is_null() {
            None
        } else {
            Some(&case["tools"])
        };
        // 1. Rendered bytes, with and without the generation prompt. Where the reference
        // template refused (raise_exception), ours must refuse with the same message.
        let rendered = match (
            eng.text.render(&case["messages"], tools, true, NOW),
            case.get("render_error"),
        ) {
            (Err(e), Some(want)) => {
                if !e.to_string().contains(want.as_str().unwrap()) {
                    failures.push(format!("{cname}: template error {e} does not carry {want}"));
                }
                continue;
            }
            (Ok(r), Some(want)) => {
                failures.push(format!(
                    "{cname}: rendered {r:?} but the reference refused: {want}"
                ));
                continue;
            }
            (Err(e), None) => {
                failures.push(format!("{cname}: render failed: {e}"));
                continue;
            }
            (Ok(r), None) => r,
        };
        if rendered != case["rendered"].as_str().unwrap() {
            failures.push(format!(
                "{cname}: rendered prompt differs:\n ours: {rendered:?}\n ref:  {:?}",
                case["rendered"]
            ));
            continue;
        }
        let nogen = eng
            .text
            .render(&case["messages"], tools, false, NOW)
            .unwrap();
        if nogen != case["rendered_no_generation_prompt"].as_str().unwrap() {
            failures.push(format!(
                "{cname}: rendered prompt without generation prompt differs"
            ));
        }
        // 2. Token ids of the rendered prompt and of each raw user text.
        let ids = eng.text.encode_rendered(&rendered).unwrap();
        if ids != u32s(&case["ids"]) {
            failures.push(format!(
                "{cname}: prompt ids differ:\n ours: {ids:?}\n ref:  {:?}",
                u32s(&case["ids"])
            ));
            continue;
        }
        for tc in case["text_cases"].as_array().unwrap() {
            let t = tc["text"].as_str().unwrap();
            let got = eng.text.tokenizer.encode(t, true).unwrap();
            if got != u32s(&tc["ids"]) {
                failures.push(format!(
                    "{cname}: text ids differ for {t:?}: {got:?} vs {:?}",
                    u32s(&tc["ids"])
                ));
            }
        }
        // 3. First-step logits.
        let logits = eng.first_logits(&ids).unwrap();
        let l = &case["logits"];
        assert_eq!(logits.len() as u64, l["vocab"].as_u64().unwrap());
        let mut maxdiff = 0f32;
        for (id, want) in u32s(&l["top_ids"]).iter().zip(f32s(&l["top_values"])) {
            maxdiff = maxdiff.max((logits[*id as usize] - want).abs());
        }
        let stride = l["probe_stride"].as_u64().unwrap() as usize;
        for (k, want) in f32s(&l["probe_values"]).into_iter().enumerate() {
            maxdiff = maxdiff.max((logits[k * stride] - want).abs());
        }
        worst = worst.max(maxdiff);
        if maxdiff > LOGIT_TOL {
            failures.push(format!(
                "{cname}: logits max |diff| {maxdiff:e} > {LOGIT_TOL:e}"
            ));
        }
        let top1 = u32s(&l["top_ids"])[0];
        if argmax(&logits) != top1 {
            failures.push(format!(
                "{cname}: top-1 {} vs reference {top1}",
                argmax(&logits)
            ));
        }
        computed.push((ids.clone(), logits));
        // 4. Greedy continuation.
        if let Some(gr) = case.get("greedy") {
            let max_new = gr["max_new_tokens"].as_u64().unwrap() as usize;
            let out = eng.greedy(&ids, max_new).unwrap();
            if out.ids != u32s(&gr["ids"])
                || out.stop_reason.as_str() != gr["stop_reason"].as_str().unwrap()
            {
                failures.push(format!(
                    "{cname}: greedy differs:\n ours: {:?} ({})\n ref:  {:?} ({})",
                    out.ids,
                    out.stop_reason.as_str(),
                    gr["ids"],
                    gr["stop_reason"]
                ));
            }
        }
    }
    eprintln!(
        "{name}: {} cases, worst logit |diff| {worst:e}",
        g["cases"].as_array().unwrap().len()
    );
    assert!(
        failures.is_empty(),
        "{name}: {} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    computed
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        ab += *x as f64 * *y as f64;
        aa += *x as f64 * *x as f64;
        bb += *y as f64 * *y as f64;
    }
    ab / (aa.sqrt() * bb.sqrt())
}

/// Quantized conversions against the f32 conversion of the same source, on every
/// golden prompt: worst logit cosine and top-1 agreement, compared with floors.
/// The bands are q8_0: cosine >= 0.9995, top-1 >= 99%; q4_0: cosine >= 0.997,
/// top-1 >= 96%; with 20 prompts both mean 20/20. `+requantize` conversions force the
/// policy type onto the GGUFs' already-quantized tensors (a second rounding) and miss
/// the q4_0 band: their floors are the measured values, so regressions still fail.
fn check_quant_bands(name: &str, f32_runs: &[(Vec<u32>, Vec<f32>)], floors: &[(&str, f64, usize)]) {
    let mut failures = Vec::new();
    for &(quant, min_cos, min_agree) in floors {
        let eng = Engine::load_file(&slm(name, quant)).unwrap();
        let (mut worst_cos, mut agree) = (1f64, 0usize);
        for (ids, reference) in f32_runs {
            let l = eng.first_logits(ids).unwrap();
            worst_cos = worst_cos.min(cosine(&l, reference));
            agree += (argmax(&l) == argmax(reference)) as usize;
        }
        eprintln!(
            "{name} {quant}: worst cosine {worst_cos:.6}, top-1 agreement {agree}/{}",
            f32_runs.len()
        );
        if worst_cos < min_cos || agree < min_agree {
            failures.push(format!("{quant}: cosine {worst_cos:.6} (floor {min_cos}), top-1 {agree}/{} (floor {min_agree})", f32_runs.len()));
        }
    }
    assert!(failures.is_empty(), "{name}: {}", failures.join("; "));
}

#[test]
fn smollm2_matches_transformers() {
    let runs = check_model("smollm2");
    // The GGUF stores the layers as Q4_1 and the embedding as Q8_0, which both
    // conversions keep byte for byte, so their weights equal the f32 conversion's; with
    // 13-bit activations they measured a worst cosine of 0.999998 and 20/20 (16-bit ones
    // read 1.000000). (With 8-bit activations, as llama.cpp uses, the same files read
    // 0.999169 and 19/20: a near-tie top token, 0.08 logits ahead in f32, flipped.)
    // Forced re-quantization: q8_0 0.999612 and 19/20; q4_0 0.977982 and 11/20.
    check_quant_bands(
        "smollm2",
        &runs,
        &[
            ("keep", 0.9995, 20),
            ("q8_0", 0.9995, 20),
            ("q4_0", 0.997, 20),
            ("q8_0+requantize", 0.9995, 19),
            ("q4_0+requantize", 0.975, 11),
        ],
    );
}

#[test]
fn qwen25_matches_transformers() {
    let runs = check_model("qwen2.5");
    // The Q4_K_M mix: Q5_0 bulk, Q8_0 head and some attn_v, Q4_K/Q6_K ffn_down. The
    // default `keep` and the q8_0/q4_0 policies copy every one of those blocks, so the
    // weights equal the f32 conversion's and only the activations' rounding remains.
    // Forced re-quantization decodes them and rounds again: q4_0 measured 0.930530
    // and 18/20 (the embedding and the untied head stay q8_0).
    check_quant_bands(
        "qwen2.5",
        &runs,
        &[
            ("keep", 0.9995, 20),
            ("q8_0", 0.9995, 20),
            ("q4_0", 0.997, 20),
            ("q8_0+requantize", 0.9995, 20),
            ("q4_0+requantize", 0.925, 18),
        ],
    );
}

#[test]
fn fixture_llama3_untied_bf16_matches_transformers() {
    check_model("fixture-llama3-untied-bf16");
}

#[test]
fn fixture_llama2_tied_f16_matches_transformers() {
    check_model("fixture-llama2-tied-f16");
}

#[test]
fn fixture_qwen2_with_qwen3_tokenizer_matches_transformers() {
    check_model("fixture-qwen3tok-qwen2-f32");
}

// Directories whose config.json transformers 5.24 wrote itself (`save_pretrained`):
// RoPE under `rope_parameters`, llama3 scaling and the default type.
#[test]
fn fixture_saved_by_transformers5_llama3_rope_matches_transformers() {
    check_model("fixture-llama3-v5-untied-bf16");
}

#[test]
fn fixture_saved_by_transformers5_default_rope_matches_transformers() {
    check_model("fixture-llama2-v5-tied-f16");
}

#[test]
fn fixture_saved_by_transformers5_qwen2_matches_transformers() {
    check_model("fixture-qwen2-v5-f32");
}

/// The gate on f32 conversions (the 1e-4 criterion), and evidence bound to one file is
/// refused for another, naming the hash.
#[test]
fn gate_verifies_float_files_and_binds_evidence_to_its_file() {
    use slm_runtime::gate::{run, Evidence, Verdict};
    let pack = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reference/goldens/smollm2.json"),
    )
    .unwrap();
    let eng = Engine::load_file(&slm("smollm2", "f32")).unwrap();
    let ev = run(&eng, &pack, serde_json::json!({})).unwrap();
    assert_eq!(ev.verdict, Verdict::ReferenceVerified, "{:#?}", ev.stages);
    assert_eq!(ev.file.weights, "float");
    let text = serde_json::to_string(&ev).unwrap();
    let back = Evidence::parse(&text).unwrap();
    back.check_binding(&eng.text.manifest).unwrap();
    let other = Engine::load_file(&slm("qwen2.5", "q8_0")).unwrap();
    let e = back
        .check_binding(&other.text.manifest)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("another file") && e.contains("data SHA-256"),
        "{e}"
    );
    assert!(Evidence::parse("{\"format\": \"x\"}").is_err());
}
