//! The sampler's penalties and filters against HF transformers' logits processors
//! (reference/goldens/sampling.json, made by reference/make_sampling_goldens.py).

use slm_runtime::sampling::{Sampler, SamplerConfig};

#[test]
fn processors_match_transformers() {
    let p =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reference/goldens/sampling.json");
    let g: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let mut failures = Vec::new();
    for (n, case) in g["cases"].as_array().unwrap().iter().enumerate() {
        let c = &case["config"];
        let cfg = SamplerConfig::from_processor_settings(c, 0);
        let mut sampler = Sampler::new(cfg.clone()).unwrap();
        let mut work: Vec<f32> = case["logits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let context: Vec<u32> = case["context"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        sampler.penalize(&mut work, &context);
        let mut order = Vec::new();
        Sampler::filter(&cfg, &mut work, &mut order);
        for (i, want) in case["expected"].as_array().unwrap().iter().enumerate() {
            let got = work[i];
            match want.as_f64() {
                None if got.is_finite() => failures.push(format!(
                    "case {n} ({c}): id {i} kept ({got}), HF removed it"
                )),
                Some(w) if !got.is_finite() => {
                    failures.push(format!("case {n} ({c}): id {i} removed, HF kept {w}"))
                }
                Some(w) if (got as f64 - w).abs() > 1e-5 * w.abs().max(1.0) => {
                    failures.push(format!("case {n} ({c}): id {i} = {got}, HF {w}"))
                }
                _ => {}
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
