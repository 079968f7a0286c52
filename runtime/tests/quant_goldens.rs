//! The block formats against llama.cpp's own decoder: reference/make_quant_goldens.py
//! wrote random blocks of every GGUF type `.slm` stores (plus all-ones and all-zero
//! blocks) and what gguf-py's `quants.dequantize` makes of them. `quant::dequantize`
//! must give the same f32 bits, and every kernel path's dot over those blocks must
//! match an f64 dot of the decoded weights: the kernels' own tests compare them with
//! the scalar reference, this pins the reference to GGML's layouts.

use slm_runtime::kernels::{available, Q8Act};
use slm_runtime::quant::{self, DType};

fn golden() -> serde_json::Value {
    serde_json::from_str(include_str!("../../reference/goldens/quant_blocks.json")).unwrap()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// GGUF type names (as gguf-py spells them) and the `.slm` types that hold them.
const TYPES: [(&str, DType); 8] = [
    ("Q8_0", DType::Q8_0),
    ("Q4_0", DType::Q4_0),
    ("Q4_1", DType::Q4_1),
    ("Q5_0", DType::Q5_0),
    ("Q5_1", DType::Q5_1),
    ("Q4_K", DType::Q4K),
    ("Q5_K", DType::Q5K),
    ("Q6_K", DType::Q6K),
];

fn case(g: &serde_json::Value, name: &str) -> (Vec<u8>, Vec<u32>) {
    let t = &g["types"][name];
    let raw = hex(t["blocks_hex"].as_str().unwrap());
    let bits = t["f32_bits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    (raw, bits)
}

#[test]
fn dequantize_matches_gguf_py_bit_for_bit() {
    let g = golden();
    for (name, dtype) in TYPES {
        let (raw, want) = case(&g, name);
        let mut got = vec![0f32; want.len()];
        assert_eq!(
            dtype.bytes_for(want.len() as u64),
            Some(raw.len() as u64),
            "{name}"
        );
        quant::dequantize(dtype, &raw, &mut got);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                g.to_bits(),
                *w,
                "{name} weight {i}: {g} vs gguf-py {}",
                f32::from_bits(*w)
            );
        }
    }
}

/// Every path's dot of the golden blocks (as one row) against the f64 dot of gguf-py's
/// decoded weights with the quantized activation, for activations of both signs and of
/// the largest magnitude (every value ±ACT_MAX: the integer sums' worst case).
#[test]
fn every_path_dots_golden_blocks_like_gguf_py() {
    let g = golden();
    for (name, dtype) in TYPES {
        let (raw, bits) = case(&g, name);
        let cols = bits.len();
        let wd: Vec<f64> = bits.iter().map(|&b| f32::from_bits(b) as f64).collect();
        let acts: [Vec<f32>; 3] = [
            vec![1.0; cols],
            (0..cols)
                .map(|i| if i % 3 == 0 { -2.5 } else { 1.0 })
                .collect(),
            (0..cols)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
                .collect(),
        ];
        for x in &acts {
            let mut a = Q8Act::default();
            a.quantize_bits(x, cols, 13);
            let r = a.row(0);
            let (mut want, mut mag) = (0f64, 0f64);
            for (j, w) in wd.iter().enumerate() {
                let t = w * r.d[j / 32] as f64 * r.value(j) as f64;
                want += t;
                mag += t.abs();
            }
            for k in available() {
                let got = (k.qdot(dtype).unwrap())(&raw, &r) as f64;
                // The min terms are summed apart from the scale terms, each in f32:
                // relative to Σ|terms| that is far inside 1e-5.
                assert!(
                    (got - want).abs() <= 1e-5 * mag + 1e-30,
                    "{} {name}: {got} vs {want} (Σ|t| {mag})",
                    k.name
                );
            }
        }
    }
}
