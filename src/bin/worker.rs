//! The inference Web Worker (built by Trunk with `data-type="worker"`).
fn main() {
    #[cfg(target_arch = "wasm32")]
    tinyrustlm_web::worker::start();
}
