//! The page: a Leptos CSR app. Inference runs in the worker (`src/bin/worker.rs`).
fn main() {
    #[cfg(target_arch = "wasm32")]
    tinyrustlm_web::ui::start();
}
