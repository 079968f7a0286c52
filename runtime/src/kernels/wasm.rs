//! wasm simd128 kernels, compiled only when the build enables simd128 (wasm has no
//! run-time feature detection: a module using it fails to validate where unsupported).
//! simd128 has no u8×i8 multiply-add, so the weights are widened to i16 and multiplied
//! with `i32x4_dot_i16x8` by the activation's values (`Q8Row::v`, at either
//! precision): exact, since every product is below 2¹⁵·2⁸ and a block's sum below 2³¹.
//! Block terms are accumulated with the scalar path's `Lanes8`, so these results are
//! bit-identical to the scalar path (and so to the x86 paths).

use super::scalar::{f16_at, Lanes8};
use super::{Kernels, Q8Row, ReadAhead, GROUP};
use crate::quant::{DType, QK};
use core::arch::wasm32::*;

pub(super) static SIMD128: Kernels = Kernels {
    name: "simd128",
    dot_f32,
    dots_f32,
    weighted_sum_f32,
    dot_f16,
    dot_q8_0,
    dot_q4_0,
    dot_q4_1,
    dot_q5_0,
    dot_q5_1,
    dot_q4_k,
    dot_q5_k,
    dot_q6_k,
    quantize,
    gemm: None,
    rows8: Some(rows8),
    rows8_tokens: Some(rows8_tokens),
    tile_tokens: TOKENS,
    rows16_tokens: None,
    rows8_dtypes: super::ROWS8_ALL,
    rows8_spread: false,
    rows8_narrow: None,
    k_tokens: Some(k_tokens),
    k_tokens_n: K_TOKENS,
};

#[inline]
fn load(b: &[u8], at: usize) -> v128 {
    assert!(at + 16 <= b.len());
    // Safety: bounds checked above; v128_load has no alignment requirement.
    unsafe { v128_load(b.as_ptr().add(at) as *const v128) }
}

#[inline]
fn load_v(v: &[i16], at: usize) -> v128 {
    assert!(at + 8 <= v.len());
    // Safety: as in `load`.
    unsafe { v128_load(v.as_ptr().add(at) as *const v128) }
}

/// 16 i8 lanes as two i16x8 (lanes 0..8, 8..16).
#[inline]
fn widen(a: v128) -> [v128; 2] {
    [i16x8_extend_low_i8x16(a), i16x8_extend_high_i8x16(a)]
}

#[inline]
fn hsum_i32(v: v128) -> i32 {
    i32x4_extract_lane::<0>(v)
        + i32x4_extract_lane::<1>(v)
        + i32x4_extract_lane::<2>(v)
        + i32x4_extract_lane::<3>(v)
}

/// Four f16 bit patterns (the low halves of u32 lanes) as f32, exactly as
/// `half::f16::to_f32` gives them (tested on all 65536 patterns): the exponent and
/// mantissa moved into f32's place and scaled by 2¹¹² (exact for normals and
/// subnormals alike); for infinities and NaNs that lands on 2¹⁶·(1 + m), whose bits
/// are a subset of the all-ones exponent, so or-ing that exponent in gives ±∞ or the
/// NaN with its payload, quieted as half does; then the sign. Twelve vector ops where
/// `f16_at` per value is a call into half's software conversion (wasm has no F16C).
#[inline]
fn f16x4_to_f32(h: v128) -> v128 {
    let em = v128_and(h, i32x4_splat(0x7fff));
    let sign = i32x4_shl(v128_xor(h, em), 16);
    let scaled = f32x4_mul(
        i32x4_shl(em, 13),
        f32x4_splat(f32::from_bits((127 + 112) << 23)),
    );
    let inf_nan = v128_and(i32x4_gt(em, i32x4_splat(0x7bff)), i32x4_splat(0x7f80_0000));
    let quiet = v128_and(i32x4_gt(em, i32x4_splat(0x7c00)), i32x4_splat(0x0040_0000));
    v128_or(v128_or(scaled, sign), v128_or(inf_nan, quiet))
}

/// The 8 f16 at b[at..at + 16] as f32: lanes 0..4, then 4..8.
#[inline]
fn f16x8_at(b: &[u8], at: usize) -> [v128; 2] {
    let v = load(b, at);
    let em = v128_and(v, u16x8_splat(0x7fff));
    if v128_any_true(i16x8_gt(em, i16x8_splat(0x7bff))) {
        return [
            f16x4_to_f32(u32x4_extend_low_u16x8(v)),
            f16x4_to_f32(u32x4_extend_high_u16x8(v)),
        ];
    }
    // All eight finite (scales are): `f16x4_to_f32` without its infinity and NaN
    // terms, which are zero here, with the sign and exponent split once for both
    // halves; half the instructions of the general case.
    let sign = v128_xor(v, em);
    let scale = f32x4_splat(f32::from_bits((127 + 112) << 23));
    let half =
        |em: v128, sign: v128| v128_or(f32x4_mul(i32x4_shl(em, 13), scale), i32x4_shl(sign, 16));
    [
        half(u32x4_extend_low_u16x8(em), u32x4_extend_low_u16x8(sign)),
        half(u32x4_extend_high_u16x8(em), u32x4_extend_high_u16x8(sign)),
    ]
}

/// `f16x8_at` of eight values, for the tests.
#[doc(hidden)]
pub fn f16x8_to_f32_simd(h: [u16; 8]) -> [f32; 8] {
    let b: Vec<u8> = h.iter().flat_map(|h| h.to_le_bytes()).collect();
    let [lo, hi] = f16x8_at(&b, 0);
    let lane = |v: v128, i: usize| match i {
        0 => f32x4_extract_lane::<0>(v),
        1 => f32x4_extract_lane::<1>(v),
        2 => f32x4_extract_lane::<2>(v),
        _ => f32x4_extract_lane::<3>(v),
    };
    core::array::from_fn(|i| lane(if i < 4 { lo } else { hi }, i % 4))
}

/// How far ahead of the bytes in use `touch_ahead` reads, one line per page
/// (`ReadAhead::Page`) and every line (`ReadAhead::Line`).
const PAGE_DISTANCE: usize = 32 * 1024;
const LINE_DISTANCE: usize = 8 * 1024;

/// Reads ahead of `[from, from + len)` of `w` as `super::read_ahead()` says, so that a
/// decode step's weight stream has lines in flight where the hardware prefetcher would
/// not fetch them. wasm has no prefetch instruction, and on some CPUs (Sapphire Rapids)
/// the prefetcher stops at every 4 KiB page (V8's memory is not on huge pages): there
/// a decode step streamed its weights at about half the speed the kernels take them
/// from cache. `Page` reads the first byte of the page the bytes `PAGE_DISTANCE` ahead
/// run into, if they cross into one; `Line` one byte of each line `LINE_DISTANCE`
/// ahead. A load whose value is dropped does not stall the kernel's arithmetic.
#[inline(always)]
pub(super) fn touch_ahead(w: &[u8], from: usize, len: usize) {
    match super::read_ahead() {
        ReadAhead::Off => {}
        ReadAhead::Page => touch_page(w, from.saturating_add(PAGE_DISTANCE), len),
        ReadAhead::Line => touch_lines(w, from.saturating_add(LINE_DISTANCE), len),
    }
}

/// The first byte of the 4 KiB page `[start, start + len)` of `w` runs into, read if
/// it crosses into one inside `w`.
#[inline(always)]
fn touch_page(w: &[u8], start: usize, len: usize) {
    const PAGE: usize = 4096;
    // wasm memory starts on a page, so offsets and addresses share their pages.
    let base = w.as_ptr() as usize;
    let first = base.saturating_add(start);
    let last = first.saturating_add(len);
    if first / PAGE != last / PAGE {
        let page = last / PAGE * PAGE;
        if page < base + w.len() {
            // Safety: base ≤ first < page < base + w.len(): inside `w`.
            unsafe { core::ptr::read_volatile(page as *const u8) };
        }
    }
}

/// One byte of each line of `[start, start + len)` read (the part inside `w`).
/// Saturating: past the end (or past usize, on wasm32) there is nothing to touch.
#[inline(always)]
fn touch_lines(w: &[u8], start: usize, len: usize) {
    let end = start.saturating_add(len).min(w.len());
    let mut at = start;
    while at < end {
        // Safety: `at` < w.len(); a volatile read is a plain load the compiler keeps.
        unsafe { core::ptr::read_volatile(w.as_ptr().add(at)) };
        at += 64;
    }
}

/// How far ahead of the rows in use attention reads the KV cache (decode streams the
/// whole cache every token).
const KV_TOUCH: usize = 4096;

/// Every line of `[from, from + len)` of a KV cache's floats (elements) read `KV_TOUCH`
/// bytes ahead, unless `super::read_ahead()` is off.
#[inline(always)]
fn touch_kv(v: &[f32], from: usize, len: usize) {
    if super::read_ahead() == ReadAhead::Off {
        return;
    }
    // Safety: the same memory viewed as bytes (any bit pattern is a u8, alignment 1).
    let b = unsafe { core::slice::from_raw_parts(v.as_ptr() as *const u8, 4 * v.len()) };
    let start = from.saturating_mul(4).saturating_add(KV_TOUCH);
    touch_lines(b, start, len.saturating_mul(4));
}

/// `nibbles_at` of chunk `4h + J` of a q5 block, with its fifth bits (`fifth_bytes`
/// [low weights, high weights] for chunks 4h..4h + 4) merged while still bytes: the
/// low weights' byte vector takes bit 4 from the low weights' fifth bits, the high
/// weights' from theirs, before either is widened. Merged after widening, the same
/// bits cost a test, a mask and an or on each of four vectors. `J` is a constant so
/// that each chunk's shift is one instruction, not a branch on c % 4.
#[inline(always)]
fn merge5<const J: usize>(q: v128, [f_lo, f_hi]: [v128; 2]) -> [[v128; 2]; 2] {
    // Chunk c's bit of every lane sits at bit 2(c % 4) (`fifth_bytes`); moved to bit 4
    // by a 16-bit shift, which carries no byte's bits into another's bit 4.
    let take = |g: v128| {
        let g = match J {
            0 => u16x8_shl(g, 4),
            1 => u16x8_shl(g, 2),
            2 => g,
            _ => u16x8_shr(g, 2),
        };
        v128_and(g, u8x16_splat(0x10))
    };
    let low = u8x16_splat(0x0f);
    let lo = v128_or(v128_and(q, low), take(f_lo));
    // A 16-bit shift moves each high nibble down; the mask drops what came across.
    let hi = v128_or(v128_and(u16x8_shr(q, 4), low), take(f_hi));
    let wide = |b: v128| [u16x8_extend_low_u8x16(b), u16x8_extend_high_u8x16(b)];
    [wide(lo), wide(hi)]
}

/// `merge5` of chunk `c`, any of the 8.
#[inline]
fn merge5_any(q: v128, fifth: &[[v128; 2]; 2], c: usize) -> [[v128; 2]; 2] {
    let f = [fifth[0][c / 4], fifth[1][c / 4]];
    match c % 4 {
        0 => merge5::<0>(q, f),
        1 => merge5::<1>(q, f),
        2 => merge5::<2>(q, f),
        _ => merge5::<3>(q, f),
    }
}

/// The 8 chunks of an interleaved q5 block's nibbles `q`, their fifth bits merged
/// (`fifth` from `fifth_bytes`): `each(c, [low weights, high weights])` in chunk order,
/// unrolled by hand (as a loop, V8 got a branch per chunk).
#[inline(always)]
fn q5_chunks(q: &[u8; 128], fifth: &[[v128; 2]; 2], mut each: impl FnMut(usize, [[v128; 2]; 2])) {
    for (h, (&f_lo, &f_hi)) in fifth[0].iter().zip(&fifth[1]).enumerate() {
        let f = [f_lo, f_hi];
        let c = 4 * h;
        each(c, merge5::<0>(load(q, 16 * c), f));
        each(c + 1, merge5::<1>(load(q, 16 * (c + 1)), f));
        each(c + 2, merge5::<2>(load(q, 16 * (c + 2)), f));
        each(c + 3, merge5::<3>(load(q, 16 * (c + 3)), f));
    }
}

/// The fifth bits of an interleaved q5 block (from `at`: the 8 rows' `qh` low half
/// words, then their high half words) as byte vectors in the lanes of a nibble chunk:
/// [low weights, high weights] × [chunks 0..4, chunks 4..8]. Lane 2r + j of chunk c
/// needs bit 2c + j of row r's half word: byte c / 4 of it, bit 2(c % 4) + j. Each
/// lane gets that byte (one shuffle), odd lanes shifted down by one, so that chunk c's
/// bit is bit 2(c % 4) in every lane. Once per block, for its 8 chunks.
#[inline]
fn fifth_bytes(blk: &[u8], at: usize) -> [[v128; 2]; 2] {
    let odd = u16x8_splat(0xff00);
    [0, 16].map(|o| {
        let h = load(blk, at + o);
        let bytes = [
            i8x16_shuffle::<0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14>(h, h),
            i8x16_shuffle::<1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15>(h, h),
        ];
        // An odd lane is the high byte of a 16-bit lane: its 16-bit shift by one is
        // the byte's own.
        bytes.map(|g| v128_bitselect(u16x8_shr(g, 1), g, odd))
    })
}

/// Values 2k and 2k + 1 of a block's values as one i32 (little-endian), in every lane:
/// one load-and-splat. With k a constant of an unrolled loop, the check folds away.
#[inline(always)]
fn pair_in(v: &[i16; QK], k: usize) -> v128 {
    assert!(2 * k + 2 <= QK);
    // Safety: bounds checked above; the load has no alignment requirement.
    unsafe { v128_load32_splat(v.as_ptr().add(2 * k) as *const u32) }
}

/// Bytes `at..at + 16` of `q` as i16x8 (bytes 0..8, then 8..16), each sign-extended
/// by its load: `widen(load(q, at))` in two instructions where that takes three.
#[inline(always)]
fn load_i8_wide<const N: usize>(q: &[u8; N], at: usize) -> [v128; 2] {
    assert!(at + 16 <= N);
    // Safety: bounds checked above; extending loads have no alignment requirement.
    unsafe {
        let p = q.as_ptr().add(at) as *const i8;
        [i16x8_load_extend_i8x8(p), i16x8_load_extend_i8x8(p.add(8))]
    }
}

/// The interleaved q4 chunk at `q[at..at + 16]` (bytes 2r, 2r + 1 of row r) as i16
/// weights: its low nibbles (weights 2c, 2c + 1 of each row) for rows 0..4 and 4..8,
/// then its high ones (weights 2c + 16, 2c + 17). Widened to u16 by the loads, so that
/// the nibbles come out by a 16-bit mask and shift (x86 has no byte shift: a u8x16 one
/// costs V8 two instructions, and a widening of each nibble vector two more).
#[inline(always)]
fn nibbles_at<const N: usize>(q: &[u8; N], at: usize) -> [[v128; 2]; 2] {
    assert!(at + 16 <= N);
    // Safety: as in `load_i8_wide`.
    let (l, h) = unsafe {
        let p = q.as_ptr().add(at);
        (u16x8_load_extend_u8x8(p), u16x8_load_extend_u8x8(p.add(8)))
    };
    let m = u16x8_splat(0x0f);
    [
        [v128_and(l, m), v128_and(h, m)],
        [u16x8_shr(l, 4), u16x8_shr(h, 4)],
    ]
}

/// Σw·x over block i, the weights given as i8 (elements 0..16 and 16..32), against the
/// row's values (`Q8Row::v`, at either precision).
#[inline]
fn block_sum(x: &Q8Row, i: usize, w0: v128, w1: v128) -> i32 {
    let [a, b] = widen(w0);
    let [c, d] = widen(w1);
    let p = |w: v128, k: usize| i32x4_dot_i16x8(w, load_v(x.v, 32 * i + 8 * k));
    hsum_i32(i32x4_add(
        i32x4_add(p(a, 0), p(b, 1)),
        i32x4_add(p(c, 2), p(d, 3)),
    ))
}

fn dot_q8_0(w: &[u8], x: &Q8Row) -> f32 {
    let mut s = Lanes8::new();
    for i in 0..w.len() / 34 {
        let o = 34 * i + 2;
        let isum = block_sum(x, i, load(w, o), load(w, o + 16));
        s.push(isum as f32 * (f16_at(w, 34 * i) * x.d[i]));
    }
    s.finish()
}

#[inline]
fn nib_dot(w: &[u8], at: usize, x: &Q8Row, i: usize, offset: i8) -> i32 {
    let b = load(w, at);
    let off = i8x16_splat(offset);
    let lo = i8x16_sub(v128_and(b, u8x16_splat(0x0f)), off);
    let hi = i8x16_sub(u8x16_shr(b, 4), off);
    block_sum(x, i, lo, hi)
}

fn dot_q4_0(w: &[u8], x: &Q8Row) -> f32 {
    let mut s = Lanes8::new();
    for i in 0..w.len() / 18 {
        s.push(nib_dot(w, 18 * i + 2, x, i, 8) as f32 * (f16_at(w, 18 * i) * x.d[i]));
    }
    s.finish()
}

fn dot_q4_1(w: &[u8], x: &Q8Row) -> f32 {
    let (mut s, mut sm) = (Lanes8::new(), Lanes8::new());
    for i in 0..w.len() / 20 {
        s.push(nib_dot(w, 20 * i + 4, x, i, 0) as f32 * (f16_at(w, 20 * i) * x.d[i]));
        sm.push(x.s[i] as f32 * (f16_at(w, 20 * i + 2) * x.d[i]));
    }
    s.finish() + sm.finish()
}

/// A q5_0/q5_1 block's 32 quants (0..31) as i8x16 (elements 0..16, 16..32) from `at`
/// = its u32 `qh` and 16 nibble bytes: the fifth bit of weight j is bit j of qh,
/// spread to byte lanes by a compare with each lane's own bit.
#[inline]
fn q5_quants(w: &[u8], at: usize) -> [v128; 2] {
    let qh = u32::from_le_bytes([w[at], w[at + 1], w[at + 2], w[at + 3]]);
    let b = load(w, at + 4);
    let bit = u8x16(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128);
    let fifth = |half: u32| {
        // Bytes 0..8 test bits 0..8 of the half word, bytes 8..16 bits 8..16.
        let lo = u8x16_splat(half as u8);
        let hi = u8x16_splat((half >> 8) as u8);
        let v = i8x16_shuffle::<0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23>(lo, hi);
        v128_and(i8x16_eq(v128_and(v, bit), bit), u8x16_splat(16))
    };
    [
        v128_or(v128_and(b, u8x16_splat(0x0f)), fifth(qh & 0xffff)),
        v128_or(u8x16_shr(b, 4), fifth(qh >> 16)),
    ]
}

fn dot_q5_0(w: &[u8], x: &Q8Row) -> f32 {
    let mut s = Lanes8::new();
    let off = i8x16_splat(16);
    for i in 0..w.len() / 22 {
        let [lo, hi] = q5_quants(w, 22 * i + 2);
        let isum = block_sum(x, i, i8x16_sub(lo, off), i8x16_sub(hi, off));
        s.push(isum as f32 * (f16_at(w, 22 * i) * x.d[i]));
    }
    s.finish()
}

fn dot_q5_1(w: &[u8], x: &Q8Row) -> f32 {
    let (mut s, mut sm) = (Lanes8::new(), Lanes8::new());
    for i in 0..w.len() / 24 {
        let [lo, hi] = q5_quants(w, 24 * i + 4);
        s.push(block_sum(x, i, lo, hi) as f32 * (f16_at(w, 24 * i) * x.d[i]));
        sm.push(x.s[i] as f32 * (f16_at(w, 24 * i + 2) * x.d[i]));
    }
    s.finish() + sm.finish()
}

/// Bytes `at..at + 16` of a block as two u16x8 (bytes 0..8, 8..16), zero-extended by
/// their loads. The block is a fixed-size view, so that with `at` a constant of an
/// unrolled loop the check folds away (a slice's check was most of a k-quant loop).
#[inline(always)]
fn widen_u8<const N: usize>(b: &[u8; N], at: usize) -> [v128; 2] {
    assert!(at + 16 <= N);
    // Safety: bounds checked above; extending loads have no alignment requirement.
    unsafe {
        let p = b.as_ptr().add(at);
        [u16x8_load_extend_u8x8(p), u16x8_load_extend_u8x8(p.add(8))]
    }
}

/// Values `at..at + 8` of a super-block's 256 values (`Q8Row::v`), checked as `widen_u8`.
#[inline(always)]
fn values_in(v: &[i16; QK_K], at: usize) -> v128 {
    assert!(at + 8 <= QK_K);
    // Safety: bounds checked above; v128_load has no alignment requirement.
    unsafe { v128_load(v.as_ptr().add(at) as *const v128) }
}

/// Super-block k's values of each token, as fixed-size views.
#[inline(always)]
fn super_values<'a, const T: usize>(x: &[&'a Q8Row; T], k: usize) -> [&'a [i16; QK_K]; T] {
    core::array::from_fn(|t| {
        x[t].v[QK_K * k..QK_K * (k + 1)]
            .try_into()
            .expect("a super-block of values")
    })
}

/// Weights per k-quant super-block.
const QK_K: usize = 256;

fn dot_q4_k(w: &[u8], x: &Q8Row) -> f32 {
    k4_tokens::<false, 144, 1>(w, [x])[0]
}

fn dot_q5_k(w: &[u8], x: &Q8Row) -> f32 {
    k4_tokens::<true, 176, 1>(w, [x])[0]
}

/// Lanes j of four vectors' horizontal sums: (Σv0, Σv1, Σv2, Σv3), exact (integers).
#[inline]
fn sums4([v0, v1, v2, v3]: [v128; 4]) -> v128 {
    // t0 = (v0₀+v0₂, v1₀+v1₂, v0₁+v0₃, v1₁+v1₃), t1 likewise for v2, v3.
    let t0 = i32x4_add(
        i32x4_shuffle::<0, 4, 1, 5>(v0, v1),
        i32x4_shuffle::<2, 6, 3, 7>(v0, v1),
    );
    let t1 = i32x4_add(
        i32x4_shuffle::<0, 4, 1, 5>(v2, v3),
        i32x4_shuffle::<2, 6, 3, 7>(v2, v3),
    );
    i32x4_add(
        i32x4_shuffle::<0, 1, 4, 5>(t0, t1),
        i32x4_shuffle::<2, 3, 6, 7>(t0, t1),
    )
}

/// Four f32 (or i32) values from `v` at `at`.
#[inline]
fn load4<T: Copy>(v: &[T], at: usize) -> v128 {
    assert!(at + 4 <= v.len() && core::mem::size_of::<T>() == 4);
    // Safety: bounds checked above; the load has no alignment requirement.
    unsafe { v128_load(v.as_ptr().add(at) as *const v128) }
}

/// A q4_k/q5_k super-block's eight 6-bit scales and mins (`quant::scale_min_k4`,
/// from its 12 bytes at 4..16) as i32 lanes: [scales, mins] × [sub-blocks 0..4,
/// 4..8]. With q = those bytes as u32 lanes a = q[0..4], b = q[4..8], c = q[8..12]:
/// scales 0..4 are a & 63, mins 0..4 b & 63; scales 4..8 are c's low nibbles with
/// a's top two bits above them ((a >> 6) << 4 = (a >> 2) & 0x30), mins 4..8 c's high
/// nibbles with b's. The same values as the scalar unpacking, in 13 vector ops.
#[inline]
fn scales_mins_k4<const N: usize>(b: &[u8; N]) -> [[v128; 2]; 2] {
    let q = load(b, 4);
    let (lo, hi) = (u16x8_extend_low_u8x16(q), u16x8_extend_high_u8x16(q));
    let (a, bb, c) = (
        u32x4_extend_low_u16x8(lo),
        u32x4_extend_high_u16x8(lo),
        u32x4_extend_low_u16x8(hi),
    );
    let top = |v: v128| v128_and(u32x4_shr(v, 2), i32x4_splat(0x30));
    let six = i32x4_splat(63);
    [
        [
            v128_and(a, six),
            v128_or(v128_and(c, i32x4_splat(0x0f)), top(a)),
        ],
        [v128_and(bb, six), v128_or(u32x4_shr(c, 4), top(bb))],
    ]
}

/// q4_k (`Q5` false) or q5_k, as the scalar `dot_k4`, for `T` tokens at once (1 for
/// decode, `K_TOKENS` for prefill: the row is unpacked once for all of them). A
/// super-block's eight sub-block sums Σq·x stay in vectors and are gathered by `sums4`
/// into lanes j (their `Lanes8` lanes), then times their 6-bit scales (the scalar dot's
/// sc·isum, an exact i32), d·d_x and the min terms, four sub-blocks per vector op: per
/// token the same integers, the same f32 products and adds per lane, the same tree.
/// `BS` is the block's size in bytes (144, or 176 for q5_k).
#[inline(always)]
fn k4_tokens<const Q5: bool, const BS: usize, const T: usize>(
    w: &[u8],
    x: [&Q8Row; T],
) -> [f32; T] {
    let qs = if Q5 { 48 } else { 16 };
    let (mut s, mut sm) = ([[f32x4_splat(0.0); 2]; T], [[f32x4_splat(0.0); 2]; T]);
    let low = u16x8_splat(0x0f);
    let (blocks, rest) = w.as_chunks::<BS>();
    assert!(rest.is_empty(), "whole super-blocks");
    for (k, b) in blocks.iter().enumerate() {
        let xv = super_values(&x, k);
        let (d, dmin) = (f32x4_splat(f16_at(b, 0)), f32x4_splat(f16_at(b, 2)));
        let [sc, m] = scales_mins_k4(b);
        let qh = [widen_u8(b, 16), widen_u8(b, 32)];
        let mut sums = [[i32x4_splat(0); 8]; T];
        for g in 0..4 {
            let z = [widen_u8(b, qs + 32 * g), widen_u8(b, qs + 32 * g + 16)];
            for half in 0..2 {
                let j = 2 * g + half;
                let q: [v128; 4] = core::array::from_fn(|e| {
                    let z = z[e / 2][e % 2];
                    let mut q = if half == 0 {
                        v128_and(z, low)
                    } else {
                        u16x8_shr(z, 4)
                    };
                    if Q5 {
                        let bit = v128_and(u16x8_shr(qh[e / 2][e % 2], j as u32), u16x8_splat(1));
                        q = v128_or(q, i16x8_shl(bit, 4));
                    }
                    q
                });
                for (t, xv) in xv.iter().enumerate() {
                    let p = |e: usize| i32x4_dot_i16x8(q[e], values_in(xv, 32 * j + 8 * e));
                    sums[t][j] = i32x4_add(i32x4_add(p(0), p(1)), i32x4_add(p(2), p(3)));
                }
            }
        }
        for (t, x) in x.iter().enumerate() {
            for h in 0..2 {
                let j = 4 * h;
                let v = &sums[t];
                let isum = i32x4_mul(sums4([v[j], v[j + 1], v[j + 2], v[j + 3]]), sc[h]);
                let dx = load4(x.d, 8 * k + j);
                s[t][h] = f32x4_add(
                    s[t][h],
                    f32x4_mul(f32x4_convert_i32x4(isum), f32x4_mul(d, dx)),
                );
                let mins = i32x4_mul(m[h], load4(x.s, 8 * k + j));
                sm[t][h] = f32x4_add(
                    sm[t][h],
                    f32x4_mul(f32x4_convert_i32x4(mins), f32x4_mul(dmin, dx)),
                );
            }
        }
    }
    core::array::from_fn(|t| finish(&s[t]) - finish(&sm[t]))
}

/// A q6_k super-block's i8 scales (16 bytes at 192: sub-block j's two halves at
/// 2j and 2j + 1) as i32 lanes: [half 0, half 1] × [sub-blocks 0..4, 4..8]. As i16
/// lanes, lane j holds half 0 in its low byte and half 1 in its high one; arithmetic
/// shifts sign-extend each.
#[inline]
fn scales_q6k(b: &[u8; 210]) -> [[v128; 2]; 2] {
    let v = load(b, 192);
    let wide = |h: v128| [i32x4_extend_low_i16x8(h), i32x4_extend_high_i16x8(h)];
    [wide(i16x8_shr(i16x8_shl(v, 8), 8)), wide(i16x8_shr(v, 8))]
}

/// q6_k as the scalar `dot_q6_k`, for `T` tokens, sub-blocks gathered into vectors as
/// in `k4_tokens`: sub-block j's two 16-weight halves summed apart (Σ(q − 32)·x,
/// exact), times their i8 scales and added (the scalar dot's sc_a·Σ_a + sc_b·Σ_b),
/// times d·d_x, in lane j.
#[inline(always)]
fn q6k_tokens<const T: usize>(w: &[u8], x: [&Q8Row; T]) -> [f32; T] {
    let mut s = [[f32x4_splat(0.0); 2]; T];
    let (low, three, bias) = (u16x8_splat(0x0f), u16x8_splat(3), i16x8_splat(32));
    let (blocks, rest) = w.as_chunks::<210>();
    assert!(rest.is_empty(), "whole super-blocks");
    for (k, b) in blocks.iter().enumerate() {
        let xv = super_values(&x, k);
        let d = f32x4_splat(f16_at(b, 208));
        let sc = scales_q6k(b);
        // [token][half of the sub-block][sub-block j]
        let mut sums = [[[i32x4_splat(0); 8]; 2]; T];
        for h in 0..2 {
            let qh = [widen_u8(b, 128 + 32 * h), widen_u8(b, 144 + 32 * h)];
            for c in 0..4 {
                let j = 4 * h + c;
                let at = 64 * h + 32 * (c % 2);
                let ql = [widen_u8(b, at), widen_u8(b, at + 16)];
                let q: [v128; 4] = core::array::from_fn(|e| {
                    let z = ql[e / 2][e % 2];
                    let lo = if c < 2 {
                        v128_and(z, low)
                    } else {
                        u16x8_shr(z, 4)
                    };
                    let hi = v128_and(u16x8_shr(qh[e / 2][e % 2], 2 * c as u32), three);
                    i16x8_sub(v128_or(lo, i16x8_shl(hi, 4)), bias)
                });
                for (t, xv) in xv.iter().enumerate() {
                    let p = |e: usize| i32x4_dot_i16x8(q[e], values_in(xv, 32 * j + 8 * e));
                    sums[t][0][j] = i32x4_add(p(0), p(1));
                    sums[t][1][j] = i32x4_add(p(2), p(3));
                }
            }
        }
        for (t, x) in x.iter().enumerate() {
            for g in 0..2 {
                let j = 4 * g;
                let part = |half: usize| {
                    let v = &sums[t][half];
                    i32x4_mul(sums4([v[j], v[j + 1], v[j + 2], v[j + 3]]), sc[half][g])
                };
                let isum = i32x4_add(part(0), part(1));
                let dx = load4(x.d, 8 * k + j);
                s[t][g] = f32x4_add(
                    s[t][g],
                    f32x4_mul(f32x4_convert_i32x4(isum), f32x4_mul(d, dx)),
                );
            }
        }
    }
    core::array::from_fn(|t| finish(&s[t]))
}

fn dot_q6_k(w: &[u8], x: &Q8Row) -> f32 {
    q6k_tokens::<1>(w, [x])[0]
}

/// Tokens per `k_tokens` call (prefill).
const K_TOKENS: usize = 4;

/// `KTokens`: one k-quant row against `K_TOKENS` tokens, unpacked once; per token the
/// row dot's bits.
fn k_tokens(dtype: DType, w: &[u8], x: &[Q8Row], out: &mut [f32]) {
    assert!(x.len() == K_TOKENS && out.len() == K_TOKENS);
    let xs: [&Q8Row; K_TOKENS] = core::array::from_fn(|t| &x[t]);
    let r = match dtype {
        DType::Q4K => k4_tokens::<false, 144, K_TOKENS>(w, xs),
        DType::Q5K => k4_tokens::<true, 176, K_TOKENS>(w, xs),
        DType::Q6K => q6k_tokens::<K_TOKENS>(w, xs),
        _ => unreachable!("k_tokens takes k-quants only"),
    };
    out.copy_from_slice(&r);
}

/// `Rows8` over `interleave8` groups: a chunk's low 8 bytes widened are two weights of
/// rows 0..4, its high 8 bytes those of rows 4..8, and `i32x4_dot_i16x8` against the
/// pair of values splatted adds row r's two products into lane r % 4, so each row's
/// exact block sum builds up in its own lane; then d_w·d_x and `Lanes8`'s lane b % 8
/// for 4 rows at a time, and its `reduce8` tree.
fn rows8(dtype: DType, w: &[u8], x: &Q8Row, out: &mut [f32]) {
    let super::Rows8Shape {
        bs,
        bias,
        nb,
        group,
        nibbles: nibbled,
        at,
        offsets,
        fifth,
    } = super::rows8_shape(dtype, w, x, out);
    for (gi, (g, o)) in w
        .chunks_exact(group)
        .zip(out.chunks_exact_mut(GROUP))
        .enumerate()
    {
        // [block b % 8][rows 0..4, rows 4..8]; q4_1's offset terms apart, as in the
        // scalar dot.
        let mut acc = [[f32x4_splat(0.0); 2]; 8];
        let mut accm = [[f32x4_splat(0.0); 2]; 8];
        for b in 0..nb {
            touch_ahead(w, gi * group + b * GROUP * bs, GROUP * bs);
            let blk = &g[b * GROUP * bs..(b + 1) * GROUP * bs];
            // Fixed-size views, so that the chunk loops carry no bounds checks (they
            // were half the loop's instructions) and unroll.
            let xv: &[i16; QK] = x.v[QK * b..QK * (b + 1)]
                .try_into()
                .expect("a block of values");
            let pair = |k: usize| pair_in(xv, k);
            let (mut lo, mut hi) = (i32x4_splat(0), i32x4_splat(0));
            // Rows 0..4's and rows 4..8's weights as i16, times a pair of values.
            let mut add = |[wl, wh]: [v128; 2], xp: v128| {
                lo = i32x4_add(lo, i32x4_dot_i16x8(wl, xp));
                hi = i32x4_add(hi, i32x4_dot_i16x8(wh, xp));
            };
            if !nibbled {
                let q: &[u8; 16 * 16] = blk[at..at + 256].try_into().expect("16 chunks");
                // Unrolled by hand: as a loop, LLVM unrolled it by four with an exit
                // test and address arithmetic after every chunk, 12 instructions in
                // V8 where the chunk's own work is 7.
                unroll16(|c| add(load_i8_wide(q, 16 * c), pair(c)));
            } else if let Some(f) = fifth {
                let q: &[u8; 16 * 8] = blk[at..at + 128].try_into().expect("8 chunks");
                q5_chunks(q, &fifth_bytes(blk, f), |c, [lo_nib, hi_nib]| {
                    add(lo_nib, pair(c));
                    add(hi_nib, pair(c + 8));
                });
            } else {
                let q: &[u8; 16 * 8] = blk[at..at + 128].try_into().expect("8 chunks");
                for c in 0..8 {
                    let [lo_nib, hi_nib] = nibbles_at(q, 16 * c);
                    add(lo_nib, pair(c));
                    add(hi_nib, pair(c + 8));
                }
            }
            if bias != 0 {
                // Quants were multiplied; the weights are q − bias (q4_0, q5_0).
                let off = i32x4_splat(bias * x.s[b]);
                (lo, hi) = (i32x4_sub(lo, off), i32x4_sub(hi, off));
            }
            // d_w · d_x per row, the scalar path's f32 products.
            let dx = f32x4_splat(x.d[b]);
            let [dw0, dw4] = f16x8_at(blk, 0);
            let a = &mut acc[b % 8];
            a[0] = f32x4_add(a[0], f32x4_mul(f32x4_convert_i32x4(lo), f32x4_mul(dw0, dx)));
            a[1] = f32x4_add(a[1], f32x4_mul(f32x4_convert_i32x4(hi), f32x4_mul(dw4, dx)));
            if offsets {
                add_offset(&mut accm[b % 8], offsets_at(blk), x, b);
            }
        }
        store_rows(&acc, offsets.then_some(&accm), o);
    }
}

/// `f(0)`, `f(1)`, …, `f(15)`, written out: each call's index is a constant, so that
/// its offsets fold into the loads' addresses.
#[inline(always)]
fn unroll16(mut f: impl FnMut(usize)) {
    f(0);
    f(1);
    f(2);
    f(3);
    f(4);
    f(5);
    f(6);
    f(7);
    f(8);
    f(9);
    f(10);
    f(11);
    f(12);
    f(13);
    f(14);
    f(15);
}

/// q4_1's offset term of block b for 8 rows, Σx · (m · d_x), into its lanes, with the
/// rows' m as f32 (`offsets_at`).
#[inline]
fn add_offset(a: &mut [v128; 2], [m0, m4]: [v128; 2], x: &Q8Row, b: usize) {
    let dx = f32x4_splat(x.d[b]);
    let sx = f32x4_splat(x.s[b] as f32);
    a[0] = f32x4_add(a[0], f32x4_mul(sx, f32x4_mul(m0, dx)));
    a[1] = f32x4_add(a[1], f32x4_mul(sx, f32x4_mul(m4, dx)));
}

/// The 8 rows' q4_1 offsets m of an interleaved block (after their scales) as f32.
#[inline]
fn offsets_at(blk: &[u8]) -> [v128; 2] {
    f16x8_at(blk, 2 * GROUP)
}

/// 8 rows' results: `reduce8`'s tree over the lanes of `acc`, plus that of `accm`
/// where there are offset terms (the scalar dot's s.finish() + sm.finish()).
#[inline]
fn store_rows(acc: &[[v128; 2]; 8], accm: Option<&[[v128; 2]; 8]>, o: &mut [f32]) {
    let tree = |acc: &[[v128; 2]; 8], h: usize| {
        let l = |k: usize| acc[k][h];
        f32x4_add(
            f32x4_add(f32x4_add(l(0), l(4)), f32x4_add(l(1), l(5))),
            f32x4_add(f32x4_add(l(2), l(6)), f32x4_add(l(3), l(7))),
        )
    };
    for (h, o) in o.chunks_exact_mut(4).enumerate() {
        let mut v = tree(acc, h);
        if let Some(m) = accm {
            v = f32x4_add(v, tree(m, h));
        }
        // Safety: o holds 4 floats; stores are unaligned-safe.
        unsafe { v128_store(o.as_mut_ptr() as *mut v128, v) };
    }
}

/// Tokens per `rows8_tokens` call: two accumulators per token, 8 tokens would spill
/// V8's 16 xmm registers.
const TOKENS: usize = 4;

/// `rows8` for one group and `TOKENS` tokens at once (prefill): each chunk is loaded
/// and widened once for all the tokens, and the group's scales converted once per
/// block. Per token, the same exact block sums, the same d_w·d_x products (d_w as f32
/// times d_x, lane by lane) and the same lane b % 8 accumulation and tree as `rows8`:
/// the same bits.
fn rows8_tokens(dtype: DType, w: &[u8], x: &[Q8Row], out: &mut [f32]) {
    assert!(x.len() == TOKENS && out.len() == GROUP * TOKENS);
    let super::Rows8Shape {
        bs,
        bias,
        nb,
        group,
        nibbles: nibbled,
        at,
        offsets,
        fifth,
    } = super::rows8_shape(dtype, w, &x[0], &out[..GROUP]);
    assert_eq!(w.len(), group);
    super::check_tile_tokens(x, nb);
    // [token][block b % 8][rows 0..4, rows 4..8]
    let mut acc = [[[f32x4_splat(0.0); 2]; 8]; TOKENS];
    let mut accm = [[[f32x4_splat(0.0); 2]; 8]; TOKENS];
    for b in 0..nb {
        let blk = &w[b * GROUP * bs..(b + 1) * GROUP * bs];
        // Each token's block of values as a fixed-size view, checked once here, so that
        // the chunks' value loads carry no bounds checks (with slices, V8's loop spent a
        // compare and branch per token on every chunk).
        let xv: [&[i16; QK]; TOKENS] = core::array::from_fn(|t| {
            x[t].v[QK * b..QK * (b + 1)]
                .try_into()
                .expect("a block of values")
        });
        let z = i32x4_splat(0);
        let mut sum = [[z; 2]; TOKENS];
        // Weights `w` (rows 0..4, rows 4..8) times the value pair k of every token.
        // Integer sums: exact in any order, so the same block sums as `rows8`.
        let mut add = |[wl, wh]: [v128; 2], k: usize| {
            for (s, xv) in sum.iter_mut().zip(&xv) {
                let xp = pair_in(xv, k);
                s[0] = i32x4_add(s[0], i32x4_dot_i16x8(wl, xp));
                s[1] = i32x4_add(s[1], i32x4_dot_i16x8(wh, xp));
            }
        };
        // The chunks in loops, not unrolled by hand as in `rows8`: unrolled, LLVM (to
        // which wasm's locals are unlimited) regroups the sums token by token with
        // every chunk's weights live, and V8 spills them to the stack.
        if !nibbled {
            let q: &[u8; 16 * 16] = blk[at..at + 256].try_into().expect("16 chunks");
            for c in 0..16 {
                add(load_i8_wide(q, 16 * c), c);
            }
        } else if let Some(f) = fifth {
            // A loop, not `q5_chunks`: unrolled, four chunks times `TOKENS` tokens
            // spilled V8's registers (prefill 40% slower on Qwen's q5_0 layers).
            let fifth = fifth_bytes(blk, f);
            for c in 0..8 {
                let [lo_nib, hi_nib] = merge5_any(load(blk, at + 16 * c), &fifth, c);
                add(lo_nib, c);
                add(hi_nib, c + 8);
            }
        } else {
            let q: &[u8; 16 * 8] = blk[at..at + 128].try_into().expect("8 chunks");
            for c in 0..8 {
                let [lo_nib, hi_nib] = nibbles_at(q, 16 * c);
                add(lo_nib, c);
                add(hi_nib, c + 8);
            }
        }
        let [dw0, dw4] = f16x8_at(blk, 0);
        // Converted once for all the tokens (only read for q4_1).
        let m = if offsets { offsets_at(blk) } else { [dw0, dw4] };
        for (t, s) in sum.iter().enumerate() {
            let (mut lo, mut hi) = (s[0], s[1]);
            if bias != 0 {
                let off = i32x4_splat(bias * x[t].s[b]);
                (lo, hi) = (i32x4_sub(lo, off), i32x4_sub(hi, off));
            }
            let dx = f32x4_splat(x[t].d[b]);
            if offsets {
                add_offset(&mut accm[t][b % 8], m, &x[t], b);
            }
            let a = &mut acc[t][b % 8];
            a[0] = f32x4_add(a[0], f32x4_mul(f32x4_convert_i32x4(lo), f32x4_mul(dw0, dx)));
            a[1] = f32x4_add(a[1], f32x4_mul(f32x4_convert_i32x4(hi), f32x4_mul(dw4, dx)));
        }
    }
    for ((acc, m), o) in acc.iter().zip(&accm).zip(out.chunks_exact_mut(GROUP)) {
        store_rows(acc, offsets.then_some(m), o);
    }
}

/// f32 dots in the scalar reference's order: 8 lanes (two v128), a multiply then an
/// add per element, ((a0 + a4) + (a1 + a5)) + ((a2 + a6) + (a3 + a7)), then the tail.
#[inline]
fn acc8(acc: &mut [v128; 2], a: &[f32], b: &[f32]) {
    assert!(a.len() >= 8 && b.len() >= 8);
    for (k, acc) in acc.iter_mut().enumerate() {
        // Safety: both chunks hold 8 floats (asserted); loads are unaligned-safe.
        let (va, vb) = unsafe {
            (
                v128_load(a.as_ptr().add(4 * k) as *const v128),
                v128_load(b.as_ptr().add(4 * k) as *const v128),
            )
        };
        *acc = f32x4_add(*acc, f32x4_mul(va, vb));
    }
}

/// The lane sum of two vectors' sum, ((a0 + a4) + (a1 + a5)) + ((a2 + a6) + (a3 + a7))
/// for lanes 0..4 and 4..8: `reduce8`'s tree, so also `Lanes8::finish` kept as two
/// vectors (the k-quant dots).
#[inline]
fn finish(acc: &[v128; 2]) -> f32 {
    let v = f32x4_add(acc[0], acc[1]);
    (f32x4_extract_lane::<0>(v) + f32x4_extract_lane::<1>(v))
        + (f32x4_extract_lane::<2>(v) + f32x4_extract_lane::<3>(v))
}

fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len()) / 8 * 8;
    let mut acc = [f32x4_splat(0.0); 2];
    for (ca, cb) in a[..n].chunks_exact(8).zip(b[..n].chunks_exact(8)) {
        acc8(&mut acc, ca, cb);
    }
    let mut s = finish(&acc);
    for i in n..a.len().min(b.len()) {
        s += a[i] * b[i];
    }
    s
}

/// `dot_f32` against 4 vectors at a time (4 independent add chains), each in its order.
fn dots_f32(a: &[f32], b: &[f32], stride: usize, out: &mut [f32]) {
    let n = a.len();
    let n8 = n / 8 * 8;
    let mut j = 0;
    while j + 4 <= out.len() {
        let rows: [&[f32]; 4] = std::array::from_fn(|c| &b[(j + c) * stride..(j + c) * stride + n]);
        touch_kv(b, j * stride, 4 * stride);
        let mut acc = [[f32x4_splat(0.0); 2]; 4];
        for i in (0..n8).step_by(8) {
            for c in 0..4 {
                acc8(&mut acc[c], &a[i..i + 8], &rows[c][i..i + 8]);
            }
        }
        for c in 0..4 {
            let mut s = finish(&acc[c]);
            for i in n8..n {
                s += a[i] * rows[c][i];
            }
            out[j + c] = s;
        }
        j += 4;
    }
    for (jj, o) in out.iter_mut().enumerate().skip(j) {
        *o = dot_f32(a, &b[jj * stride..jj * stride + n]);
    }
}

/// Outputs per pass of `weighted_sum_f32`: 8 vectors held in registers over all the
/// rows (V8 has 16 xmm registers; the row values and the weight take three more).
const SUM_WIDTH: usize = 32;

/// `scalar::weighted_sum_f32` four outputs per vector: each output adds its rows one
/// by one in order (a multiply, then an add), so the bits are the same. The outputs
/// are summed `SUM_WIDTH` at a time in registers across all the rows (a load and a
/// store of each output per row were most of attention's time in V8); the rows ahead
/// are read early (`touch_kv`) on the first pass.
fn weighted_sum_f32(w: &[f32], v: &[f32], stride: usize, out: &mut [f32]) {
    let n = out.len();
    let wide = n / SUM_WIDTH * SUM_WIDTH;
    let n4 = n / 4 * 4;
    assert!(w.is_empty() || (w.len() - 1) * stride + n <= v.len());
    for c in (0..wide).step_by(SUM_WIDTH) {
        let mut acc = [f32x4_splat(0.0); SUM_WIDTH / 4];
        for (p, &wp) in w.iter().enumerate() {
            if c == 0 {
                touch_kv(v, p * stride, stride);
            }
            let wv = f32x4_splat(wp);
            let at = p * stride + c;
            for (k, a) in acc.iter_mut().enumerate() {
                // Safety: at + 4k + 4 ≤ p·stride + n ≤ v.len() (asserted above).
                let r = unsafe { v128_load(v.as_ptr().add(at + 4 * k) as *const v128) };
                *a = f32x4_add(*a, f32x4_mul(wv, r));
            }
        }
        for (k, a) in acc.iter().enumerate() {
            // Safety: out holds c + SUM_WIDTH floats (c < wide); stores are unaligned-safe.
            unsafe { v128_store(out.as_mut_ptr().add(c + 4 * k) as *mut v128, *a) };
        }
    }
    for i in (wide..n4).step_by(4) {
        let mut a = f32x4_splat(0.0);
        for (p, &wp) in w.iter().enumerate() {
            a = f32x4_add(a, f32x4_mul(f32x4_splat(wp), load4(v, p * stride + i)));
        }
        // Safety: out holds i + 4 floats (i < n4); stores are unaligned-safe.
        unsafe { v128_store(out.as_mut_ptr().add(i) as *mut v128, a) };
    }
    for (i, o) in out.iter_mut().enumerate().skip(n4) {
        *o = 0.0;
        for (p, &wp) in w.iter().enumerate() {
            *o += wp * v[p * stride + i];
        }
    }
}

/// The activation quantizer (`Quantize`), a block of 32 in eight vectors: the scalar
/// reference's arithmetic element for element, as `avx2::quantize` does it (the
/// maximum is exact in any order; the rounding is `round_to_act`'s: clamp, truncate,
/// then ±1 where the remainder reaches ±½; the digits `split_act`'s), so the bits are
/// the same. The scalar loop was 5% of a decode step in V8.
fn quantize(x: &[f32], max: i32, d: &mut [f32], hi: &mut [i8], lo: &mut [i8], s: &mut [i32]) {
    const _: () = assert!(super::ACT_BASE == 255 && super::DIGITS_MAX == 32385);
    assert!(0 < max && max <= super::DIGITS_MAX);
    let nb = x.len() / QK;
    assert!(d.len() >= nb && s.len() >= nb && hi.len() >= QK * nb && lo.len() >= QK * nb);
    let (top, bottom) = (f32x4_splat(max as f32), f32x4_splat(-max as f32));
    let (half, nhalf) = (f32x4_splat(0.5), f32x4_splat(-0.5));
    for (i, xs) in x.chunks_exact(QK).enumerate() {
        let xs: &[f32; QK] = xs.try_into().expect("a block");
        let v: [v128; 8] = core::array::from_fn(|k| {
            // Safety: the block holds 32 floats; loads are unaligned-safe.
            unsafe { v128_load(xs.as_ptr().add(4 * k) as *const v128) }
        });
        // A lane that is not equal to itself is a NaN.
        let un = v
            .iter()
            .fold(i32x4_splat(0), |m, &x| v128_or(m, f32x4_ne(x, x)));
        let nan = v128_any_true(un);
        // `pmax` is a compare and a select: exact for the non-NaN lanes, and a NaN
        // anywhere makes d NaN whatever the maximum is.
        let m = v
            .iter()
            .fold(f32x4_splat(0.0), |m, &x| f32x4_pmax(m, f32x4_abs(x)));
        let m = f32x4_pmax(m, i32x4_shuffle::<2, 3, 0, 1>(m, m));
        let m = f32x4_pmax(m, i32x4_shuffle::<1, 0, 3, 2>(m, m));
        let (di, id) = super::act_scale(f32x4_extract_lane::<0>(m), nan, max);
        let id = f32x4_splat(id);
        let r = v.map(|x| {
            let y = f32x4_mul(x, id);
            // NaN → 0 (the mask), else clamped to ±max (pmax/pmin keep the bound for
            // a NaN, which the mask then drops), so the truncation is exact.
            let c = v128_and(f32x4_eq(y, y), f32x4_pmin(top, f32x4_pmax(bottom, y)));
            let t = i32x4_trunc_sat_f32x4(c);
            let frac = f32x4_sub(c, f32x4_convert_i32x4(t));
            // A true compare is −1: t + (frac ≥ ½) − (frac ≤ −½).
            i32x4_add(i32x4_sub(t, f32x4_ge(frac, half)), f32x4_le(frac, nhalf))
        });
        let sum = r.iter().fold(i32x4_splat(0), |a, &b| i32x4_add(a, b));
        let sum = i32x4_add(sum, i32x4_shuffle::<2, 3, 0, 1>(sum, sum));
        let sum = i32x4_add(sum, i32x4_shuffle::<1, 0, 3, 2>(sum, sum));
        // hi = ⌊(v + 127) / 255⌋ = ⌊n / 255⌋ − 128 with n = v + 32767 in 382..=65152,
        // where ⌊n / 255⌋ = (n·32897) >> 23 (true below 2¹⁶, product below 2³¹).
        let h = r.map(|v| {
            let n = i32x4_add(v, i32x4_splat(32767));
            i32x4_sub(
                u32x4_shr(i32x4_mul(n, i32x4_splat(32897)), 23),
                i32x4_splat(128),
            )
        });
        let l: [v128; 8] =
            core::array::from_fn(|k| i32x4_sub(r[k], i32x4_sub(i32x4_shl(h[k], 8), h[k])));
        // Every digit is within ±127, so the saturating narrows are plain ones.
        let bytes = |v: &[v128; 8], k: usize| {
            i8x16_narrow_i16x8(
                i16x8_narrow_i32x4(v[4 * k], v[4 * k + 1]),
                i16x8_narrow_i32x4(v[4 * k + 2], v[4 * k + 3]),
            )
        };
        for k in 0..2 {
            let at = QK * i + 16 * k;
            // Safety: hi and lo hold QK·nb bytes (asserted); stores are unaligned-safe.
            unsafe {
                v128_store(hi.as_mut_ptr().add(at) as *mut v128, bytes(&h, k));
                v128_store(lo.as_mut_ptr().add(at) as *mut v128, bytes(&l, k));
            }
        }
        d[i] = di;
        s[i] = i32x4_extract_lane::<0>(sum);
    }
}

fn dot_f16(w: &[u8], x: &[f32]) -> f32 {
    let n = x.len() / 8 * 8;
    let mut acc = [f32x4_splat(0.0); 2];
    let mut buf = [0f32; 8];
    for (cw, cx) in w[..2 * n].chunks_exact(16).zip(x[..n].chunks_exact(8)) {
        for (k, o) in buf.iter_mut().enumerate() {
            *o = f16_at(cw, 2 * k);
        }
        acc8(&mut acc, &buf, cx);
    }
    let mut s = finish(&acc);
    for (i, &xi) in x.iter().enumerate().skip(n) {
        s += f16_at(w, 2 * i) * xi;
    }
    s
}
