//! Diagnostic: steady-state prefill speed of one model (load once, prefill N tokens
//! REPS times), for profiling without the load and the bandwidth probe of `slm bench`.
//! cargo run --release --example prefill_probe -- M.slm N REPS [THREADS]
use slm_runtime::engine::Engine;
use slm_runtime::model::Scratch;
use std::time::Instant;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mut eng = Engine::load_file(a[1].as_ref()).unwrap();
    if let Some(t) = a.get(4) {
        eng.model.threads = slm_runtime::parallel::Threads::new(t.parse().unwrap()).unwrap();
    }
    let n: usize = a[2].parse().unwrap();
    let reps: usize = a[3].parse().unwrap();
    let ids: Vec<u32> = (0..n as u32).map(|i| 1000 + i * 7).collect();
    let cfg = &eng.model.cfg;
    let mut s = Scratch::new(cfg, n);
    for _ in 0..reps {
        let mut cache = eng.model.new_cache(n);
        let t = Instant::now();
        eng.model.prefill(&ids, &mut cache, &mut s).unwrap();
        println!("{:.1} tok/s", n as f64 / t.elapsed().as_secs_f64());
    }
}
