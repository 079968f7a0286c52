//! AVX2 with AVX-VNNI: the AVX2 kernels with `vpdpbusd` for the i8 products. Each i32
//! lane is the exact sum of the same four byte products as maddubs + madd give (no
//! saturation either way), so every block sum, and every result, is unchanged.

use super::avx2::{blocks8, digits, each8, min_offsets, nibbles, values, widen_i8, widen_nibbles};
use super::*;

/// # Safety
///
/// The CPU must have `avx2`, `fma`, `f16c`, `avxvnni` (the `#[target_feature]` above): the
/// kernel tables that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2,fma,f16c,avxvnni")]
pub unsafe fn rows8(dtype: DType, w: &[u8], x: &Q8Row, out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        super::avx2::rows8_with(dtype, w, x, out, |acc, w, x| {
            _mm256_dpwssd_avx_epi32(acc, w, x)
        })
    }
}

/// # Safety
///
/// The CPU must have `avx2`, `fma`, `f16c`, `avxvnni` (the `#[target_feature]` above): the
/// kernel tables that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2,fma,f16c,avxvnni")]
pub unsafe fn rows8_tokens(dtype: DType, w: &[u8], x: &[Q8Row], out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        super::avx2::rows8_tokens_with::<{ super::avx2::TILE_TOKENS }>(
            dtype,
            w,
            x,
            out,
            |acc, w, x| _mm256_dpwssd_avx_epi32(acc, w, x),
        )
    }
}

/// `avx2::mul2` with the second half's products added by `vpdpwssd` (the same
/// exact i32 lane sums, one instruction fewer).
#[inline]
#[target_feature(enable = "avx2,avxvnni")]
fn mul2(w0: __m256i, x0: __m256i, w1: __m256i, x1: __m256i) -> __m256i {
    _mm256_dpwssd_avx_epi32(_mm256_madd_epi16(w0, x0), w1, x1)
}

/// Unsigned bytes × signed bytes, 4 products per i32 lane, exact.
#[inline]
#[target_feature(enable = "avx2,avxvnni")]
fn mul_sum_u8_i8(w: __m256i, x: __m256i) -> __m256i {
    _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w, x)
}

/// Wide rows: `values`. 8-bit rows: w + 128 (flipping the sign bit) is w as an
/// unsigned byte; `blocks8` takes the 128·Σx back off (< 2³¹: 128·32·DIGITS_MAX). One
/// xor instead of two sign operations.
///
/// # Safety
///
/// The CPU must have `avx2`, `fma`, `f16c`, `avxvnni` (the `#[target_feature]` above): the
/// kernel tables that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2,fma,f16c,avxvnni")]
pub unsafe fn dot_q8_0(w: &[u8], x: &Q8Row) -> f32 {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe { by_width!(q8_0_at, w, x) }
}

/// # Safety
///
/// The CPU must have `avx2`, `fma`, `f16c`, `avxvnni` (the `#[target_feature]` above): the
/// kernel tables that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2,fma,f16c,avxvnni")]
unsafe fn q8_0_at<const W: bool>(w: &[u8], x: &Q8Row) -> f32 {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        if W {
            let isum = |b: usize| {
                let wb = widen_i8(w.as_ptr().add(34 * b + 2));
                values(x, b, wb, |w0, x0, w1, x1| mul2(w0, x0, w1, x1))
            };
            return blocks8::<0>(w, x, 34, isum, |i| each8(isum, i));
        }
        let isum = |b: usize| {
            let wq = _mm256_loadu_si256(w.as_ptr().add(34 * b + 2) as *const __m256i);
            let wu = _mm256_xor_si256(wq, _mm256_set1_epi8(-128));
            digits::<false>(x, b, |xq| mul_sum_u8_i8(wu, xq))
        };
        blocks8::<128>(w, x, 34, isum, |i| each8(isum, i))
    }
}

q4_dots!("avx2,fma,f16c,avxvnni");
