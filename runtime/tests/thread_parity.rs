//! The thread count changes no bit: a real model's prompt logits, and the decode step
//! after them, are the same on one thread and on two. Prefill splits every part of a
//! batch over the threads (the products by bands of rows; the activation's
//! quantization, its tile packing and the glue between the products by tokens), so
//! this is the end-to-end check that each split keeps every value's arithmetic whole.
//! Run where the machine has two threads or more (`Threads::new(2)` needs a pool).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use slm_runtime::engine::Engine;
use slm_runtime::model::Scratch;
use slm_runtime::parallel::Threads;

/// The logits after the prompt and after one more token, on `threads`.
fn run(eng: &mut Engine, threads: Threads, prompt: &[u32]) -> (Vec<f32>, Vec<f32>) {
    eng.model.threads = threads;
    let m = &eng.model;
    let mut s = Scratch::new(&m.cfg, prompt.len() + 1);
    let mut cache = m.new_cache(prompt.len() + 1);
    m.prefill(prompt, &mut cache, &mut s).unwrap();
    let first = s.logits.to_vec();
    m.forward(prompt[0], &mut cache, &mut s, true).unwrap();
    (first, s.logits.to_vec())
}

#[test]
fn prompt_and_decode_logits_are_the_same_bits_on_one_and_two_threads() {
    // The tile products' types (q8_0, q4_0), the catalog's q4_1, and a prompt of 37
    // tokens: two whole 16-token tiles and a part, split unevenly over the threads.
    for quant in ["q8_0+requantize", "q4_0+requantize", "keep"] {
        let path = common::slm("smollm2", quant);
        let mut eng = Engine::load_file(&path).unwrap();
        let prompt: Vec<u32> = (0..37).map(|i| 200 + 53 * i).collect();
        let one = run(&mut eng, Threads::one(), &prompt);
        let two = run(&mut eng, Threads::new(2).unwrap(), &prompt);
        for (what, a, b) in [("prompt", &one.0, &two.0), ("decode", &one.1, &two.1)] {
            assert_eq!(a.len(), b.len());
            let differ = a
                .iter()
                .zip(b.iter())
                .position(|(x, y)| x.to_bits() != y.to_bits());
            assert!(
                differ.is_none(),
                "smollm2 {quant} {what} logit {differ:?}: 1 thread {} vs 2 threads {}",
                a[differ.unwrap()],
                b[differ.unwrap()]
            );
            assert!(
                a.iter().any(|&v| v != 0.0),
                "{quant} {what}: logits were computed"
            );
        }
    }
}
