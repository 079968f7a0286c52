//! Diagnostic: one matrix-vector product alone (rows × cols weight), best time of REPS
//! over a weight set larger than the caches (so that it streams from memory, as in
//! decode), in GB/s of weight bytes.
//! cargo run --release --example matvec_probe -- q8_0|q4_0 ROWS COLS REPS
use slm_runtime::model::weight::Weight;
use slm_runtime::quant::{self, DType};
use std::time::Instant;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let dtype = if a[1] == "q4_0" {
        DType::Q4_0
    } else {
        DType::Q8_0
    };
    let p = |i: usize| a[i].parse::<usize>().unwrap();
    let (rows, cols, reps) = (p(2), p(3), p(4));
    let wf: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
        .collect();
    let mut bytes = Vec::new();
    quant::quantize(dtype, &wf, &mut bytes);
    // Enough copies to exceed the last-level cache.
    let copies = (256 << 20) / bytes.len() + 1;
    let ws: Vec<Weight> = (0..copies)
        .map(|_| Weight::new(dtype, rows, cols, bytes.clone()).unwrap())
        .collect();
    let x: Vec<f32> = (0..cols)
        .map(|i| ((i * 104729) % 2000) as f32 / 1000.0 - 1.0)
        .collect();
    let mut y = vec![0f32; rows];
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        for w in &ws {
            w.matvec(&x, &mut y, 1);
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!("{:.2} GB/s", (bytes.len() * copies) as f64 / best / 1e9);
}
