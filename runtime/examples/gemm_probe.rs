//! Diagnostic: one batched product alone (rows × cols weight, n tokens), best time of
//! REPS, in ns per 16×16×32 tile product.
//! cargo run --release --example gemm_probe -- q8_0|q4_0 ROWS COLS N REPS
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
    let (rows, cols, n, reps) = (p(2), p(3), p(4), p(5));
    let wf: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
        .collect();
    let mut bytes = Vec::new();
    quant::quantize(dtype, &wf, &mut bytes);
    let w = Weight::new(dtype, rows, cols, bytes).unwrap();
    let x: Vec<f32> = (0..n * cols)
        .map(|i| ((i * 104729) % 2000) as f32 / 1000.0 - 1.0)
        .collect();
    let mut y = vec![0f32; n * rows];
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        w.matmul(&x, n, &mut y, 1);
        best = best.min(t.elapsed().as_secs_f64());
    }
    let tiles = (rows / 16) as f64 * (cols / 32) as f64 * n.div_ceil(16) as f64;
    println!(
        "{:.1} us, {:.1} ns per tile product",
        best * 1e6,
        best * 1e9 / tiles
    );
}
