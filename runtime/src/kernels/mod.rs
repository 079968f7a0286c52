//! Row-dot kernels for `Weight::matvec`/`matmul`: a scalar reference plus SIMD paths
//! (x86 AVX2/FMA, AVX-VNNI and AVX-512BW chosen at run time; wasm simd128 at compile time).
//!
//! Quantized weights (q8_0, q4_0, q4_1) are dotted with an activation that was itself
//! quantized to 8 bits in blocks of 32 (`Q8Act`), as llama.cpp does: the inner products
//! become exact integer sums and the weights are never decoded to f32. f32 and f16
//! weights keep f32 activations.
//!
//! Every path returns the same bits as the scalar reference: the same per-block integer
//! sums, the same f32 products, added in the same order (block by block for quantized
//! rows; 8 lanes and a fixed tree for f32 dots; never FMA). That is not pedantry:
//! activation quantization rounds x/d to an integer, so a one-ulp difference upstream
//! can move an activation by a whole step, and over 30 layers such flips moved
//! SmolLM2's logits by up to 1.3 between AVX2 and scalar. With one order, the browser
//! (simd128) and the CLI (AVX2) compute identical logits.
//!
//! `SLM_KERNEL=scalar|avx2|avxvnni|avx512|simd128` forces a path (for benchmarks and bisecting);
//! an unknown or unsupported value falls back to the best available one.

pub mod scalar;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod wasm;
#[cfg(target_arch = "x86_64")]
mod x86;

use crate::quant::{DType, QK};
use std::sync::OnceLock;

/// An activation quantized to q8 blocks of 32, for `n` rows of `cols` values.
#[derive(Default)]
pub struct Q8Act {
    /// Per-block scale, max|x|/127.
    pub d: Vec<f32>,
    /// Values round(x/d), clamped to ±127: never −128, so the x86 sign trick
    /// (negating x by the weight's sign) cannot overflow.
    pub q: Vec<i8>,
    /// Per-block Σq, which q4_1's offset term needs.
    pub s: Vec<i32>,
    cols: usize,
}

/// One quantized activation row.
#[derive(Clone, Copy)]
pub struct Q8Row<'a> {
    pub d: &'a [f32],
    pub q: &'a [i8],
    pub s: &'a [i32],
}

impl<'a> Q8Row<'a> {
    /// The row without its first `blocks` blocks.
    pub fn skip(&self, blocks: usize) -> Q8Row<'a> {
        Q8Row {
            d: &self.d[blocks..],
            q: &self.q[QK * blocks..],
            s: &self.s[blocks..],
        }
    }
}

impl Q8Act {
    /// Quantize `x` (`n` rows of `cols`, `cols` a multiple of 32). Reuses the buffers,
    /// so a decode loop of same-sized calls allocates only on the first.
    pub fn quantize(&mut self, x: &[f32], cols: usize) {
        debug_assert_eq!(cols % QK, 0);
        debug_assert_eq!(x.len() % cols.max(1), 0);
        let nb = x.len() / QK;
        self.cols = cols;
        self.d.resize(nb, 0.0);
        self.s.resize(nb, 0);
        self.q.resize(x.len(), 0);
        for (i, xs) in x.chunks_exact(QK).enumerate() {
            let mut amax = 0f32;
            let mut nan = false;
            for &v in xs {
                amax = amax.max(v.abs());
                nan |= v.is_nan();
            }
            // A NaN must reach the output as it would without quantization.
            let d = if nan { f32::NAN } else { amax / 127.0 };
            let id = if d != 0.0 && d.is_finite() {
                1.0 / d
            } else {
                0.0
            };
            let q = &mut self.q[i * QK..(i + 1) * QK];
            let mut s = 0i32;
            for (o, &v) in q.iter_mut().zip(xs) {
                let r = (v * id).round().clamp(-127.0, 127.0) as i8;
                *o = r;
                s += r as i32;
            }
            self.d[i] = d;
            self.s[i] = s;
        }
    }

    pub fn row(&self, t: usize) -> Q8Row<'_> {
        let nb = self.cols / QK;
        Q8Row {
            d: &self.d[t * nb..(t + 1) * nb],
            q: &self.q[t * self.cols..(t + 1) * self.cols],
            s: &self.s[t * nb..(t + 1) * nb],
        }
    }
}

/// Dot of one encoded weight row with a quantized activation row.
pub type QDot = fn(&[u8], &Q8Row) -> f32;

/// One implementation of every kernel. The SIMD tables hold safe wrappers around
/// `#[target_feature]` functions; they are only handed out after feature detection,
/// which is what makes those wrappers sound.
pub struct Kernels {
    pub name: &'static str,
    pub dot_f32: fn(&[f32], &[f32]) -> f32,
    /// f16 weight bytes · f32 activation.
    pub dot_f16: fn(&[u8], &[f32]) -> f32,
    pub dot_q8_0: QDot,
    pub dot_q4_0: QDot,
    pub dot_q4_1: QDot,
}

impl Kernels {
    /// The kernel for a weight type whose activations are quantized, or None for
    /// f32/f16 (which take f32 activations).
    pub fn qdot(&self, dtype: DType) -> Option<QDot> {
        match dtype {
            DType::Q8_0 => Some(self.dot_q8_0),
            DType::Q4_0 => Some(self.dot_q4_0),
            DType::Q4_1 => Some(self.dot_q4_1),
            DType::F32 | DType::F16 => None,
        }
    }
}

pub static SCALAR: Kernels = Kernels {
    name: "scalar",
    dot_f32: scalar::dot_f32,
    dot_f16: scalar::dot_f16,
    dot_q8_0: scalar::dot_q8_0,
    dot_q4_0: scalar::dot_q4_0,
    dot_q4_1: scalar::dot_q4_1,
};

/// Every path this machine can run, preferred first; the scalar reference is always last.
pub fn available() -> Vec<&'static Kernels> {
    let mut v: Vec<&'static Kernels> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    v.extend(x86::available());
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    v.push(&wasm::SIMD128);
    v.push(&SCALAR);
    v
}

/// The path used by the model: chosen once (detection and the env lookup are not free).
pub fn active() -> &'static Kernels {
    static K: OnceLock<&'static Kernels> = OnceLock::new();
    K.get_or_init(|| {
        let all = available();
        let want = std::env::var("SLM_KERNEL").unwrap_or_default();
        all.iter()
            .find(|k| k.name == want)
            .copied()
            .unwrap_or(all[0])
    })
}
