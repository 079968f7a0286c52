//! x86-64 kernels. AVX2 needs FMA and F16C too (every AVX2 CPU we target has them, but
//! each is detected, not assumed). The q kernels take 8 blocks at a time so that the 8
//! per-block i32 sums can be reduced together into one vector (`hsum8`) and scaled by
//! one multiply (then one add, never an FMA): the integer sums stay exact and the
//! reduction cost is shared. `rows8` takes 8 interleaved rows instead (`interleave8`).

use super::{Kernels, Q8Row};
use crate::quant::DType;
use std::arch::x86_64::*;

pub(super) fn available() -> Vec<&'static Kernels> {
    let mut v: Vec<&'static Kernels> = Vec::new();
    let avx2 = is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c");
    // AVX2 first: on the machine we measured (2 cores, 2.1 GHz) the AVX-512 path was
    // 10-20% slower end to end (two blocks per register cost an insert and an extract
    // each, and the loop is near the memory bound anyway). SLM_KERNEL=avx512 selects it.
    // AVX-VNNI first where present: `vpdpbusd` does maddubs + madd + add in one
    // instruction with the same exact i32 lane sums, so the results do not change.
    // AMX where the OS grants it: the VNNI dots plus tile products for prefill, and
    // the AVX-512 activation quantizer and `rows8` (so it needs AVX512BW and
    // AVX512-VNNI too, which every AMX CPU has).
    let avx512 =
        avx2 && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw");
    if avx512
        && is_x86_feature_detected!("avxvnni")
        && is_x86_feature_detected!("avx512vnni")
        && super::amx::usable()
    {
        v.push(&AMX);
    }
    // AVX-512 with VNNI and no usable AMX (AMD Zen 4 and 5, Intel before Sapphire
    // Rapids): the AVX-512 `rows8` for every interleaved type's decode, and two groups
    // per zmm for q8_0/q4_0 prefill (`rows16_tokens`); AVX2's kernels for the rest,
    // since Zen 4 has no AVX-VNNI. On an AMD EPYC (Zen 5) against avxvnni, 1 thread, alternated: SmolLM2
    // prefill 592 → 914 tok/s (q4_0) and 607 → 1008 (q8_0), q4_0 decode 267 → 317,
    // q8_0 decode even (bench/README.md, thirteenth session). On Zen 4, which splits
    // every 512-bit operation in two, 256-bit `rows8` decodes faster (SmolLM2 Q8_0 144
    // against 101 tok/s), so the table carries one as `rows8_narrow` and the loaded
    // model measures both (`Model::tune_decode_width`, eighteenth session). That one
    // is `avx512::rows8_vl`, AVX2's loop with 256-bit `vpdpwssd`: it needs VL.
    if avx512 && is_x86_feature_detected!("avx512vnni") && is_x86_feature_detected!("avx512vl") {
        v.push(&AVX512_VNNI);
    }
    if avx2 && is_x86_feature_detected!("avxvnni") {
        v.push(&AVX_VNNI);
    }
    if avx2 {
        v.push(&AVX2);
    }
    if avx512 {
        v.push(&AVX512);
    }
    v
}

// Safety of every wrapper below: these tables are only reachable through `available()`,
// which checked the features the wrapped functions enable.
#[allow(
    clippy::undocumented_unsafe_blocks,
    reason = "the comment above the tables covers every wrapper"
)]
static AVX2: Kernels = Kernels {
    name: "avx2",
    dot_f32: |a, b| unsafe { avx2::dot_f32(a, b) },
    dots_f32: |a, b, stride, out| unsafe { avx2::dots_f32(a, b, stride, out) },
    weighted_sum_f32: |w, v, stride, out| unsafe { avx2::weighted_sum_f32(w, v, stride, out) },
    dot_f16: |w, x| unsafe { avx2::dot_f16(w, x) },
    dot_q8_0: |w, x| unsafe { avx2::dot_q8_0(w, x) },
    dot_q4_0: |w, x| unsafe { avx2::dot_q4_0(w, x) },
    dot_q4_1: |w, x| unsafe { avx2::dot_q4_1(w, x) },
    // The q5 dots are AVX2's on every x86 path (the AVX-512 and AMX tables inherit
    // them); the k-quant ones too but in the AMX and `avx512vnni` tables, which take
    // `avx512`'s (a sub-block a zmm).
    dot_q5_0: |w, x| unsafe { avx2::dot_q5_0(w, x) },
    dot_q5_1: |w, x| unsafe { avx2::dot_q5_1(w, x) },
    dot_q4_k: |w, x| unsafe { avx2::dot_q4_k(w, x) },
    dot_q5_k: |w, x| unsafe { avx2::dot_q5_k(w, x) },
    dot_q6_k: |w, x| unsafe { avx2::dot_q6_k(w, x) },
    quantize: |x, max, d, qh, ql, s| unsafe { avx2::quantize(x, max, d, qh, ql, s) },
    gemm: None,
    rows8: Some(|d, w, x, out| unsafe { avx2::rows8(d, w, x, out) }),
    rows8_tokens: Some(|d, w, x, out| unsafe { avx2::rows8_tokens(d, w, x, out) }),
    tile_tokens: avx2::TILE_TOKENS,
    rows16_tokens: None,
    rows8_dtypes: super::ROWS8_ALL,
    rows8_spread: false,
    rows8_narrow: None,
    k_tokens: Some(|d, w, x, out| unsafe { avx2::dot_tokens(d, w, x, out) }),
    k_tokens_n: avx2::K_TOKENS,
};

#[allow(
    clippy::undocumented_unsafe_blocks,
    reason = "the comment above the tables covers every wrapper"
)]
static AVX_VNNI: Kernels = Kernels {
    name: "avxvnni",
    dot_q8_0: |w, x| unsafe { vnni::dot_q8_0(w, x) },
    dot_q4_0: |w, x| unsafe { vnni::dot_q4_0(w, x) },
    dot_q4_1: |w, x| unsafe { vnni::dot_q4_1(w, x) },
    rows8: Some(|d, w, x, out| unsafe { vnni::rows8(d, w, x, out) }),
    rows8_tokens: Some(|d, w, x, out| unsafe { vnni::rows8_tokens(d, w, x, out) }),
    tile_tokens: avx2::TILE_TOKENS,
    ..AVX2
};

#[allow(
    clippy::undocumented_unsafe_blocks,
    reason = "the comment above the tables covers every wrapper"
)]
static AMX: Kernels = Kernels {
    name: "amx",
    dots_f32: |a, b, stride, out| unsafe { avx512::dots_f32(a, b, stride, out) },
    weighted_sum_f32: |w, v, stride, out| unsafe { avx512::weighted_sum_f32(w, v, stride, out) },
    quantize: |x, max, d, qh, ql, s| unsafe { avx512::quantize(x, max, d, qh, ql, s) },
    // Every interleaved type decodes 8 rows at a time (and prefills in AVX-VNNI's
    // token tiles where the tile products do not take it: `kernels::tile_form`).
    rows8: Some(|d, w, x, out| unsafe { avx512::rows8(d, w, x, out) }),
    rows8_spread: true,
    rows8_narrow: Some(|d, w, x, out| unsafe { vnni::rows8(d, w, x, out) }),
    dot_q4_k: |w, x| unsafe { avx512::dot_q4_k(w, x) },
    dot_q5_k: |w, x| unsafe { avx512::dot_q5_k(w, x) },
    dot_q6_k: |w, x| unsafe { avx512::dot_q6_k(w, x) },
    k_tokens: Some(|d, w, x, out| unsafe { avx512::dot_tokens(d, w, x, out) }),
    gemm: Some(|d, w, il, rows, cols, x, y| unsafe {
        super::amx::gemm(d, w, il, rows, cols, x, y)
    }),
    ..AVX_VNNI
};

#[allow(
    clippy::undocumented_unsafe_blocks,
    reason = "the comment above the tables covers every wrapper"
)]
static AVX512_VNNI: Kernels = Kernels {
    name: "avx512vnni",
    rows8: Some(|d, w, x, out| unsafe { avx512::rows8(d, w, x, out) }),
    rows8_spread: true,
    rows8_narrow: Some(|d, w, x, out| unsafe { avx512::rows8_vl(d, w, x, out) }),
    rows16_tokens: Some(|d, w, x, out| unsafe { avx512::rows16_tokens(d, w, x, out) }),
    dot_q4_k: |w, x| unsafe { avx512::dot_q4_k(w, x) },
    dot_q5_k: |w, x| unsafe { avx512::dot_q5_k(w, x) },
    dot_q6_k: |w, x| unsafe { avx512::dot_q6_k(w, x) },
    k_tokens: Some(|d, w, x, out| unsafe { avx512::dot_tokens(d, w, x, out) }),
    dots_f32: |a, b, stride, out| unsafe { avx512::dots_f32(a, b, stride, out) },
    weighted_sum_f32: |w, v, stride, out| unsafe { avx512::weighted_sum_f32(w, v, stride, out) },
    quantize: |x, max, d, qh, ql, s| unsafe { avx512::quantize(x, max, d, qh, ql, s) },
    ..AVX2
};

// rows16_tokens takes the table's tile of tokens.
const _: () = assert!(avx512::TILE_TOKENS == avx2::TILE_TOKENS);

#[allow(
    clippy::undocumented_unsafe_blocks,
    reason = "the comment above the tables covers every wrapper"
)]
static AVX512: Kernels = Kernels {
    name: "avx512",
    // f32/f16 dots are AVX2's; attention's are AVX-512's in the same order (as in
    // `AMX`). No `rows8`, so that SLM_KERNEL=avx512 measures these dots on every matrix.
    rows8: None,
    rows8_tokens: None,
    tile_tokens: 0,
    dots_f32: |a, b, stride, out| unsafe { avx512::dots_f32(a, b, stride, out) },
    weighted_sum_f32: |w, v, stride, out| unsafe { avx512::weighted_sum_f32(w, v, stride, out) },
    quantize: |x, max, d, qh, ql, s| unsafe { avx512::quantize(x, max, d, qh, ql, s) },
    dot_q8_0: |w, x| unsafe { avx512::dot_q8_0(w, x) },
    dot_q4_0: |w, x| unsafe { avx512::dot_q4_0(w, x) },
    dot_q4_1: |w, x| unsafe { avx512::dot_q4_1(w, x) },
    ..AVX2
};

/// `dot_q4_0` and `dot_q4_1` of a module, over that module's `mul_sum_u8_i8` (8-bit
/// rows: nibbles 0..15, not nibble − 8, times x's digits, since u8 × i8 needs no sign
/// trick) and `mul2` (wide rows: the same nibbles as i16 times x's values); `blocks8`
/// takes q4_0's 8·Σx back off.
/// `dot_q4_k`, `dot_q5_k`, `dot_q6_k` (one row, one token) and `dot_tokens` (one row,
/// `avx2::K_TOKENS` tokens: prefill's k-quant rows) of a module, over that module's
/// `k_tokens`: every result is bit for bit the scalar dot.
macro_rules! k_dots {
    ($features:literal) => {
        /// # Safety
        ///
        /// The CPU must have the features of the `#[target_feature]` above: the kernel
        /// tables that hold this, and its callers, are chosen only after detecting them.
        #[target_feature(enable = $features)]
        pub unsafe fn dot_q4_k(w: &[u8], x: &Q8Row) -> f32 {
            // Safety: the caller keeps this function's `# Safety` contract.
            unsafe { k_row(DType::Q4K, w, x) }
        }

        /// # Safety
        ///
        /// As `dot_q4_k`.
        #[target_feature(enable = $features)]
        pub unsafe fn dot_q5_k(w: &[u8], x: &Q8Row) -> f32 {
            // Safety: the caller keeps this function's `# Safety` contract.
            unsafe { k_row(DType::Q5K, w, x) }
        }

        /// # Safety
        ///
        /// As `dot_q4_k`.
        #[target_feature(enable = $features)]
        pub unsafe fn dot_q6_k(w: &[u8], x: &Q8Row) -> f32 {
            // Safety: the caller keeps this function's `# Safety` contract.
            unsafe { k_row(DType::Q6K, w, x) }
        }

        /// One k-quant row's dot: `k_tokens` for a single token.
        ///
        /// # Safety
        ///
        /// Only for callers compiled with the CPU features its intrinsics need (it is
        /// inlined into them), on a CPU that has them.
        #[inline(always)]
        unsafe fn k_row(dtype: DType, w: &[u8], x: &Q8Row) -> f32 {
            // Safety: the caller keeps this function's `# Safety` contract.
            unsafe {
                let mut o = [0f32];
                k_tokens::<1>(dtype, w, std::slice::from_ref(x), &mut o);
                o[0]
            }
        }

        /// One k-quant row (q4_k, q5_k, q6_k) against `avx2::K_TOKENS` tokens: out[t]
        /// is bit for bit the row dot with token t. Each super-block is unpacked to
        /// scaled i16 weights once for all of them.
        ///
        /// # Safety
        ///
        /// As `dot_q4_k`.
        #[target_feature(enable = $features)]
        pub unsafe fn dot_tokens(dtype: DType, w: &[u8], x: &[Q8Row], out: &mut [f32]) {
            const N: usize = super::avx2::K_TOKENS;
            // Safety: the caller keeps this function's `# Safety` contract.
            unsafe {
                assert!(x.len() == N && out.len() == N);
                k_tokens::<N>(dtype, w, x, out)
            }
        }
    };
}

macro_rules! q4_dots {
    ($features:literal) => {
        /// # Safety
        ///
        /// Only for callers compiled with the CPU features its intrinsics need (it is
        /// inlined into them), on a CPU that has them.
        #[target_feature(enable = $features)]
        pub unsafe fn dot_q4_0(w: &[u8], x: &Q8Row) -> f32 {
            // Safety: the caller keeps this function's `# Safety` contract, which
            // is all that the operations below rely on.
            unsafe {
                if x.wide() {
                    q4_sums::<8, true>(w, x, 18, 2)
                } else {
                    q4_sums::<8, false>(w, x, 18, 2)
                }
            }
        }

        /// # Safety
        ///
        /// Only for callers compiled with the CPU features its intrinsics need (it is
        /// inlined into them), on a CPU that has them.
        #[target_feature(enable = $features)]
        pub unsafe fn dot_q4_1(w: &[u8], x: &Q8Row) -> f32 {
            // Safety: the caller keeps this function's `# Safety` contract, which
            // is all that the operations below rely on.
            unsafe {
                let sums = if x.wide() {
                    q4_sums::<0, true>(w, x, 20, 4)
                } else {
                    q4_sums::<0, false>(w, x, 20, 4)
                };
                sums + min_offsets(w, x, 20)
            }
        }

        /// The nibble block sums of q4_0 (`BIAS` 8, nibbles at byte 2 of 18) or q4_1
        /// (`BIAS` 0, at byte 4 of 20), for a wide row (`W`) or an 8-bit one.
        ///
        /// # Safety
        ///
        /// Only for callers compiled with the CPU features its intrinsics need (it is
        /// inlined into them), on a CPU that has them.
        #[target_feature(enable = $features)]
        unsafe fn q4_sums<const BIAS: i32, const W: bool>(
            w: &[u8],
            x: &Q8Row,
            stride: usize,
            off: usize,
        ) -> f32 {
            // Safety: the caller keeps this function's `# Safety` contract, which
            // is all that the operations below rely on.
            unsafe {
                let isum = |b: usize| {
                    let p = w.as_ptr().add(stride * b + off);
                    if W {
                        values(x, b, widen_nibbles(p), |w0, x0, w1, x1| {
                            mul2(w0, x0, w1, x1)
                        })
                    } else {
                        digits::<false>(x, b, |xq| mul_sum_u8_i8(nibbles(p), xq))
                    }
                };
                blocks8::<BIAS>(w, x, stride, isum, |i| each8(isum, i))
            }
        }
    };
}

/// `$imp::<true>` for a row with low digits, `$imp::<false>` for an 8-bit one: the
/// width is decided once per row, and is a constant in the block loop.
macro_rules! by_width {
    ($imp:ident, $w:expr, $x:expr) => {
        if $x.wide() {
            $imp::<true>($w, $x)
        } else {
            $imp::<false>($w, $x)
        }
    };
}

/// The body of a `weighted_sum_f32` at one register width (`$lanes` floats): 64
/// outputs (`$wide` add chains, each a register of running sums) at a time over all
/// the rows, then one register at a time; returns how many outputs it did (the rest
/// is the caller's). Each output adds its rows one by one in order, at any width.
macro_rules! weighted_sums {
    ($w:ident, $v:ident, $stride:ident, $out:ident; $lanes:literal, $wide:literal, $vec:ty,
     $zero:ident, $set1:ident, $load:ident, $add:ident, $mul:ident, $store:ident) => {{
        let n = $out.len();
        super::avx2::assert_rows_fit($v.len(), $w.len(), $stride, n);
        /// # Safety
        ///
        /// Only for callers compiled with the CPU features its intrinsics need (it is
        /// inlined into them), on a CPU that has them.
        /// `v` must be valid for reading `w.len()` rows of `stride` floats (the
        /// first `lanes·K` of each), `out` for writing `lanes·K` floats.
        #[inline(always)]
        unsafe fn chunk<const K: usize>(w: &[f32], v: *const f32, stride: usize, out: *mut f32) {
            // Safety: the caller keeps this function's `# Safety` contract, which
            // is all that the operations below rely on.
            unsafe {
                let mut acc: [$vec; K] = [$zero(); K];
                for (p, &wp) in w.iter().enumerate() {
                    super::avx2::prefetch_kv(v.wrapping_add(p * stride), 4 * $lanes * K);
                    let wv = $set1(wp);
                    for (k, acc) in acc.iter_mut().enumerate() {
                        let x = $load(v.add(p * stride + $lanes * k));
                        *acc = $add(*acc, $mul(wv, x));
                    }
                }
                for (k, acc) in acc.iter().enumerate() {
                    $store(out.add($lanes * k), *acc);
                }
            }
        }
        let (pv, po) = ($v.as_ptr(), $out.as_mut_ptr());
        let mut i = 0;
        while i + $lanes * $wide <= n {
            chunk::<$wide>($w, pv.add(i), $stride, po.add(i));
            i += $lanes * $wide;
        }
        while i + $lanes <= n {
            chunk::<1>($w, pv.add(i), $stride, po.add(i));
            i += $lanes;
        }
        i
    }};
}

/// The lane accumulators of a tile kernel, [token][block % 8], that start as
/// 0 + the first block's term instead of as a zeroed array: zeroing 8 KiB of them per
/// call (two `memset`s) took 6% of `avx512::rows16_tokens`' prefill. 0 + v is what
/// adding v to a zeroed accumulator gives (−0 becomes +0 either way), so the bits are
/// unchanged.
struct LaneSums<V: Copy, const T: usize> {
    lanes: [[std::mem::MaybeUninit<V>; 8]; T],
    /// The vector type's zero.
    zero: V,
}

impl<V: Copy, const T: usize> LaneSums<V, T> {
    fn new(zero: V) -> Self {
        LaneSums {
            lanes: [[std::mem::MaybeUninit::uninit(); 8]; T],
            zero,
        }
    }

    /// Applies `f` to token t's accumulator of block b (lane b % 8): to zero when b
    /// is that lane's first block, else to what the lane holds.
    #[inline(always)]
    fn update(&mut self, t: usize, b: usize, f: impl FnOnce(&mut V)) {
        let slot = &mut self.lanes[t][b % 8];
        // A volatile read, so that LLVM keeps the branch: with a plain one it loaded
        // from a select of two addresses (the lane or a spilled zero), which put a
        // store, a cmov and a dependent load in every block and cost the AVX2 tile
        // a quarter of its speed.
        let mut v = if b < 8 {
            self.zero
        } else {
            // Safety: block b − 8 (< b) wrote this lane.
            unsafe { std::ptr::read_volatile(slot.as_ptr()) }
        };
        f(&mut v);
        slot.write(v);
    }

    /// Every lane, after the blocks 0..nb were added: lanes that no block reached
    /// (nb < 8) are zero.
    #[inline(always)]
    fn finish(&mut self, nb: usize) -> &[[V; 8]; T] {
        for lanes in &mut self.lanes {
            for slot in lanes.iter_mut().skip(nb) {
                slot.write(self.zero);
            }
        }
        // Safety: every lane is written, by block k (< nb) or just above, and
        // `MaybeUninit<V>` has V's layout.
        unsafe { &*(self.lanes.as_ptr() as *const [[V; 8]; T]) }
    }
}

// One file per ISA, declared after the macros above, which they use.
mod avx2;
mod avx512;
mod vnni;
