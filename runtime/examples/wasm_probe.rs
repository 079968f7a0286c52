//! Diagnostic for the browser's kernels: the `kernel_probe` matvec and quantize loops
//! as a wasm module that node times from outside (wasm32-unknown-unknown has no clock).
//! `bench/wasm_probe.mjs` builds and runs it beside the native `kernel_probe`.
//!
//! Also a whole model: `alloc(len)` a buffer for a `.slm` file's bytes, `load_model(ptr,
//! len)`, then `decode(n)`: n single-token forward passes after an 8-token prefill (the
//! shape of `slm bench`'s decode), so that `node --cpu-prof` shows where a decode step
//! spends its time in V8.
//!
//! Exports: `setup(dtype, rows, cols, copies)` (dtype 0 = q8_0, 1 = q4_0, 2 = f32 attention
//! rows: `rows` cached positions of `cols` floats, 3 = q5_0, 4 = q4_k, 5 = q6_k: blocks
//! of pseudo-random bytes, for timing only), then `matvec()`, `quantize()` or
//! `attend()`, each one pass over everything set up.
use slm_runtime::format::layout::{parse_manifest, Header, HEADER_LEN};
use slm_runtime::kernels::{self, Q8Act};
use slm_runtime::model::weight::Weight;
use slm_runtime::model::{Model, Scratch};
use slm_runtime::parallel::Threads;
use slm_runtime::quant::{self, DType};
use std::cell::RefCell;

#[derive(Default)]
struct State {
    ws: Vec<Weight>,
    x: Vec<f32>,
    y: Vec<f32>,
    act: Q8Act,
    keys: Vec<f32>,
    scores: Vec<f32>,
}

thread_local! {
    static S: RefCell<State> = RefCell::new(State::default());
}

/// Sets the kernels' read-ahead (`kernels::set_read_ahead`): 0 off, 1 one line per
/// page (the default), 2 every line.
#[no_mangle]
pub extern "C" fn read_ahead(mode: u32) {
    kernels::set_read_ahead(kernels::ReadAhead::ALL[(mode as usize).min(2)]);
}

#[no_mangle]
pub extern "C" fn setup(dtype: u32, rows: usize, cols: usize, copies: usize) {
    S.with(|s| {
        let s = &mut *s.borrow_mut();
        *s = State::default();
        s.x = (0..cols)
            .map(|i| ((i * 104729) % 2000) as f32 / 1000.0 - 1.0)
            .collect();
        if dtype == 2 {
            s.keys = (0..rows * cols)
                .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
                .collect();
            s.scores = vec![0.0; rows];
            s.y = vec![0.0; cols];
            return;
        }
        let dtype = match dtype {
            0 => DType::Q8_0,
            1 => DType::Q4_0,
            3 => DType::Q5_0,
            4 => DType::Q4K,
            _ => DType::Q6K,
        };
        let mut bytes = Vec::new();
        if matches!(dtype, DType::Q8_0 | DType::Q4_0) {
            let wf: Vec<f32> = (0..rows * cols)
                .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
                .collect();
            quant::quantize(dtype, &wf, &mut bytes).unwrap();
        } else {
            let n = dtype.bytes_for(cols as u64).unwrap() as usize * rows;
            bytes = (0..n)
                .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
                .collect();
        }
        s.ws = (0..copies)
            .map(|_| Weight::new(dtype, rows, cols, bytes.clone()).unwrap())
            .collect();
        s.y = vec![0.0; rows];
    })
}

#[no_mangle]
pub extern "C" fn matvec() -> usize {
    S.with(|s| {
        let s = &mut *s.borrow_mut();
        let one = Threads::one();
        let mut bytes = 0;
        for w in &s.ws {
            w.matvec(&s.x, &mut s.y, &one);
            bytes += w.bytes();
        }
        bytes
    })
}

#[no_mangle]
pub extern "C" fn quantize() {
    S.with(|s| {
        let s = &mut *s.borrow_mut();
        s.act.quantize(&s.x, s.x.len());
    })
}

#[no_mangle]
pub extern "C" fn attend() {
    S.with(|s| {
        let s = &mut *s.borrow_mut();
        let k = kernels::active();
        let hd = s.x.len();
        (k.dots_f32)(&s.x, &s.keys, hd, &mut s.scores);
        (k.weighted_sum_f32)(&s.scores, &s.keys, hd, &mut s.y);
    })
}

thread_local! {
    static MODEL: RefCell<Option<(Vec<u8>, Option<Model>)>> = const { RefCell::new(None) };
}

/// A buffer of `len` bytes for the file, kept until `load_model`.
#[no_mangle]
pub extern "C" fn alloc(len: usize) -> *mut u8 {
    MODEL.with(|m| {
        let mut m = m.borrow_mut();
        *m = Some((vec![0u8; len], None));
        m.as_mut().unwrap().0.as_mut_ptr()
    })
}

/// Parses the file in the `alloc` buffer and loads its model; 0 on success.
#[no_mangle]
pub extern "C" fn load_model() -> u32 {
    MODEL.with(|m| {
        let mut m = m.borrow_mut();
        let (bytes, model) = m.as_mut().expect("alloc first");
        let len = bytes.len() as u64;
        let Ok(h) = Header::decode(&bytes[..HEADER_LEN as usize], Some(len)) else {
            return 1;
        };
        let start = HEADER_LEN as usize;
        let mb = &bytes[start..start + h.manifest_len as usize];
        let data = h.data_offset() as usize;
        let Ok(manifest) = parse_manifest(&h, mb, Some(len - data as u64)) else {
            return 2;
        };
        let loaded = Model::load(&manifest, &mut |name| {
            let t = manifest.tensor(name).expect("tensor");
            let at = data + t.offset as usize;
            Ok(bytes[at..at + t.length as usize].to_vec())
        });
        match loaded {
            Ok(x) => {
                *model = Some(x);
                0
            }
            Err(_) => 3,
        }
    })
}

/// A fresh prefill of `prompt` ordinary ids into a cache with room for `room` more
/// positions, then `steps(model, cache, scratch)`.
fn after_prefill(
    prompt: usize,
    room: usize,
    steps: impl FnOnce(&Model, &mut slm_runtime::model::kv_cache::KvCache, &mut Scratch) -> u32,
) -> u32 {
    with_model(|model| {
        let mut cache = model.new_cache(prompt + room);
        let mut s = Scratch::new(&model.cfg, prompt + room);
        let ids: Vec<u32> = (0..prompt as u32).map(|i| 1000 + 7 * i).collect();
        model.prefill(&ids, &mut cache, &mut s).unwrap();
        steps(model, &mut cache, &mut s)
    })
}

/// `f` of the model `load_model` loaded.
fn with_model<R>(f: impl FnOnce(&Model) -> R) -> R {
    MODEL.with(|m| {
        let m = m.borrow();
        f(m.as_ref()
            .and_then(|m| m.1.as_ref())
            .expect("load_model first"))
    })
}

/// n decode steps after an 8-token prefill.
#[no_mangle]
pub extern "C" fn decode(n: usize) -> u32 {
    after_prefill(8, n, |model, cache, s| {
        let mut tok = 0;
        for _ in 0..n {
            tok = slm_runtime::engine::argmax(&s.logits);
            model.forward(tok, cache, s, true).unwrap();
        }
        tok
    })
}

/// A fresh prefill of n tokens; returns the argmax of its logits.
#[no_mangle]
pub extern "C" fn prefill(n: usize) -> u32 {
    prefill_room(n, 0)
}

/// The bytes `matvec` reads, only read: one 16-byte load each, folded by xor, for the
/// engine's raw streaming bandwidth (a ceiling for `matvec`'s streamed GB/s).
#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn stream() -> usize {
    use core::arch::wasm32::*;
    use slm_runtime::model::weight::WeightData;
    S.with(|s| {
        let s = &*s.borrow();
        let mut acc = [u8x16_splat(0); 4];
        let mut bytes = 0;
        for w in &s.ws {
            let WeightData::Blocks(b) = &w.data else {
                continue;
            };
            for c in b.chunks_exact(64) {
                for (k, a) in acc.iter_mut().enumerate() {
                    // Safety: c holds 64 bytes; v128 loads have no alignment requirement.
                    let v = unsafe { v128_load(c.as_ptr().add(16 * k) as *const v128) };
                    *a = v128_xor(*a, v);
                }
            }
            bytes += b.len();
        }
        std::hint::black_box(acc);
        bytes
    })
}

/// The page's load-time warm-up (`Model::warm_up`); 0 on success.
#[no_mangle]
pub extern "C" fn warm_up() -> u32 {
    with_model(|model| u32::from(model.warm_up().is_err()))
}

/// A fresh prefill of n tokens into a cache with room for `room` more positions (a
/// chat session's cache is as long as its context).
#[no_mangle]
pub extern "C" fn prefill_room(n: usize, room: usize) -> u32 {
    after_prefill(n, room, |_, _, s| slm_runtime::engine::argmax(&s.logits))
}
