//! Diagnostic: one weight product alone, best time of REPS.
//! - `gemm`: a batched product (prefill) of N tokens, in ns per 16×16×32 tile product;
//! - `matvec`: one token over enough copies of the weight to exceed the caches (so that
//!   it streams from memory, as decode does), in GB/s of weight bytes; with
//!   `RESIDENT=1`, one copy read again and again from cache, which measures the
//!   kernel's own speed: far above the streaming figure means decode waits on memory,
//!   close to it means on compute.
//!
//! cargo run --release --example kernel_probe -- gemm|matvec DTYPE ROWS COLS N REPS
use slm_runtime::model::weight::Weight;
use slm_runtime::quant::{self, DType};
use std::time::Instant;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let gemm = a[1] == "gemm";
    let dtype = DType::parse(&a[2]).expect("a quantized type");
    let p = |i: usize| a[i].parse::<usize>().unwrap();
    let (rows, cols, n, reps) = (p(3), p(4), if gemm { p(5) } else { 1 }, p(6));
    let wf: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
        .collect();
    let mut bytes = Vec::new();
    if quant::quantize(dtype, &wf, &mut bytes).is_err() {
        // No quantizer for the q5 and k-quant types: pseudo-random blocks with finite
        // scales (every f16 field's exponent kept small).
        let (bw, bb) = dtype.block();
        bytes = (0..rows * cols / bw * bb)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let fields: &[usize] = match dtype {
            DType::Q6K => &[208],
            DType::Q4K | DType::Q5K | DType::Q5_1 | DType::Q4_1 => &[0, 2],
            _ => &[0],
        };
        for blk in bytes.chunks_exact_mut(bb) {
            for &at in fields {
                blk[at + 1] &= 0x3b;
            }
        }
    }
    let resident = std::env::var_os("RESIDENT").is_some();
    let copies = if gemm || resident {
        1
    } else {
        (256 << 20) / bytes.len() + 1
    };
    let ws: Vec<Weight> = (0..copies)
        .map(|_| Weight::new(dtype, rows, cols, bytes.clone()).unwrap())
        .collect();
    let x: Vec<f32> = (0..n * cols)
        .map(|i| ((i * 104729) % 2000) as f32 / 1000.0 - 1.0)
        .collect();
    let mut y = vec![0f32; n * rows];
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        for w in &ws {
            w.matmul(&x, n, &mut y, &slm_runtime::parallel::Threads::one());
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    if gemm {
        let tiles = (rows / 16) as f64 * (cols / 32) as f64 * n.div_ceil(16) as f64;
        println!(
            "{:.1} us, {:.1} ns per tile product",
            best * 1e6,
            best * 1e9 / tiles
        );
    } else {
        let gbs = (bytes.len() * copies) as f64 / best / 1e9;
        println!("{gbs:.2} GB/s");
    }
}
