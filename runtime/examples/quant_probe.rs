//! Diagnostic: how far a quantized .slm's first-step logits are from the f32 one, per
//! golden prompt, optionally re-quantizing only some tensor classes of the f32 model.
//! cargo run --release --example quant_probe -- F32.slm (QUANT.slm | q4_0:CLASSES) GOLDEN.json

use slm_runtime::engine::{argmax, Engine};
use slm_runtime::model::weight::{Weight, WeightData};
use slm_runtime::quant::{self, DType};

fn requant(w: &mut Weight, dt: DType) {
    if let WeightData::F32(v) = &w.data {
        let mut b = Vec::new();
        quant::quantize(dt, v, &mut b).unwrap();
        *w = Weight::new(dt, w.rows, w.cols, b).unwrap();
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let base = Engine::load_file(a[1].as_ref()).unwrap();
    let other = if let Some(spec) = a[2]
        .strip_prefix("q4_0:")
        .or(a[2].strip_prefix("q8_0:"))
        .or(a[2].strip_prefix("q4_1:"))
    {
        let dt = DType::parse(&a[2][..4]).unwrap();
        let mut e = Engine::load_file(a[1].as_ref()).unwrap();
        for l in e.model.layers.iter_mut() {
            for class in spec.split(',') {
                match class {
                    "q" => requant(&mut l.wq, dt),
                    "k" => requant(&mut l.wk, dt),
                    "v" => requant(&mut l.wv, dt),
                    "o" => requant(&mut l.wo, dt),
                    "gate" => requant(&mut l.w_gate, dt),
                    "up" => requant(&mut l.w_up, dt),
                    "down" => requant(&mut l.w_down, dt),
                    _ => {}
                }
            }
        }
        if spec.contains("embed") {
            requant(&mut e.model.embed, dt);
        }
        e
    } else {
        Engine::load_file(a[2].as_ref()).unwrap()
    };
    let g: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&a[3]).unwrap()).unwrap();
    let limit: usize = a.get(4).map(|s| s.parse().unwrap()).unwrap_or(100);
    let mut worst = 1f64;
    for c in g["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c.get("ids").is_some())
        .take(limit)
    {
        let ids: Vec<u32> = c["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        let x = base.first_logits(&ids).unwrap();
        let y = other.first_logits(&ids).unwrap();
        let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
        for (p, q) in x.iter().zip(&y) {
            ab += (*p as f64) * (*q as f64);
            aa += (*p as f64).powi(2);
            bb += (*q as f64).powi(2);
        }
        let cos = ab / (aa.sqrt() * bb.sqrt());
        worst = worst.min(cos);
        let (t1, t2) = (argmax(&x), argmax(&y));
        // The f32 run's lead of its top token over the runner-up: how near a tie it is.
        let second = x
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != t1 as usize)
            .fold(f32::NEG_INFINITY, |m, (_, &v)| m.max(v));
        println!(
            "{:22} cos {cos:.6} top1 {t1} vs {t2} f32 lead {:.4} {}",
            c["name"].as_str().unwrap(),
            x[t1 as usize] - second,
            if t1 != t2 { "FLIP" } else { "" }
        );
    }
    println!("worst {worst:.6}");
}
