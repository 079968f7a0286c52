//! `cfg(pool)`: the build has a thread pool. Native builds always do; wasm builds only
//! with shared memory (`+atomics`), whose pool threads the page starts as Web Workers.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(pool)");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    if arch != "wasm32" || features.split(',').any(|f| f == "atomics") {
        println!("cargo::rustc-cfg=pool");
    }
}
