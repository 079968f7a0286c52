//! TinyRustLM in the browser: the page (`ui`, a Leptos CSR app) and the inference
//! worker (`worker`), which talk through `protocol`. The worker is the only place the
//! runtime runs; the page never blocks on inference.

#[cfg(target_arch = "wasm32")]
pub mod idb;
pub mod markdown;
pub mod parse;
pub mod protocol;
#[cfg(target_arch = "wasm32")]
pub mod ui;
#[cfg(target_arch = "wasm32")]
pub mod worker;
