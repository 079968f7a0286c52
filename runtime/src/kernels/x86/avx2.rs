//! The AVX2 (with FMA and F16C) kernels: the reference x86 path, whose helpers the
//! VNNI and AVX-512 paths share.

use super::*;

/// Bytes ahead of the current block that decode asks the memory system for: tuned
/// on SmolLM2 (rows of 612 bytes). On 4 KiB pages 4-6 KiB was best (8 KiB fell
/// off); on huge pages (`model::Pages`) 8 KiB gave a median of 160 against 146 tok/s
/// (q4_0, alternated runs).
const PREFETCH_DISTANCE: usize = 8192;

/// Lane k of the result is the sum of the 8 lanes of v[k].
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn hsum8(v: &[__m256i; 8]) -> __m256i {
    let a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    let b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    // a = [v0..v3 low-half sums | v0..v3 high-half sums], likewise b for v4..v7.
    _mm256_add_epi32(
        _mm256_permute2x128_si256(a, b, 0x20),
        _mm256_permute2x128_si256(a, b, 0x31),
    )
}

/// Block scales × activation scales for the 8 blocks from `i`: d_w·d_x, the same
/// f32 product the scalar path forms. Blocks at or past `nb` get 0, which is how the
/// tail shares the 8-block code (so its per-block arithmetic is identical too).
/// A macro, because as a function LLVM kept it out of line in the hot loop.
macro_rules! scales8 {
    ($w:expr, $xd:expr, $i:expr, $nb:expr, $stride:expr, $off:expr) => {{
        let (w, xd, i, nb, stride, off): (&[u8], &[f32], usize, usize, usize, usize) =
            ($w, $xd, $i, $nb, $stride, $off);
        assert!(nb * stride <= w.len() && nb <= xd.len());
        let p = w.as_ptr();
        // Safety: every read below is of a block < nb, inside both slices (asserted).
        unsafe {
            let h = |k: usize| (p.add((i + k) * stride + off) as *const i16).read_unaligned();
            if i + 8 <= nb {
                let dw = _mm256_cvtph_ps(_mm_setr_epi16(
                    h(0),
                    h(1),
                    h(2),
                    h(3),
                    h(4),
                    h(5),
                    h(6),
                    h(7),
                ));
                _mm256_mul_ps(dw, _mm256_loadu_ps(xd.as_ptr().add(i)))
            } else {
                let (mut dw, mut dx) = ([0i16; 8], [0f32; 8]);
                for k in 0..nb - i {
                    dw[k] = h(k);
                    dx[k] = xd[i + k];
                }
                let dw = _mm256_cvtph_ps(_mm_loadu_si128(dw.as_ptr() as *const __m128i));
                _mm256_mul_ps(dw, _mm256_loadu_ps(dx.as_ptr()))
            }
        }
    }};
}

/// Σ w·x over i8 pairs, as 8 i32 partial sums. maddubs wants unsigned × signed, so
/// |w| × (x with w's sign): |w| ≤ 128 and |x| ≤ 127 (a digit) keep each i16 pair
/// sum below 2·128·127 = 32512, so its saturation never triggers.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn mul_sum_i8(w: __m256i, x: __m256i) -> __m256i {
    let p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
    _mm256_madd_epi16(p, _mm256_set1_epi16(1))
}

/// u8 nibbles (≤ 15) × i8: maddubs directly, no saturation possible.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn mul_sum_u8_i8(w: __m256i, x: __m256i) -> __m256i {
    _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1))
}

/// 16 bytes of nibbles → 32 bytes: low nibbles (elements 0..16) then high (16..32).
///
/// # Safety
///
/// The CPU must have `avx2` (the `#[target_feature]` above): the kernel tables that hold
/// this, and its callers, are chosen only after detecting them.
/// `p` must be valid for reading 16 bytes.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn nibbles(p: *const u8) -> __m256i {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let t = _mm_loadu_si128(p as *const __m128i);
        let both = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
        _mm256_and_si256(both, _mm256_set1_epi8(0x0f))
    }
}

/// A block's 32 q8_0 weights as i16: elements 0..16, then 16..32.
///
/// # Safety
///
/// The CPU must have `avx2` (the `#[target_feature]` above): the kernel tables that hold
/// this, and its callers, are chosen only after detecting them.
/// `p` must be valid for reading 32 bytes.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn widen_i8(p: *const u8) -> (__m256i, __m256i) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let half = |k: usize| _mm256_cvtepi8_epi16(_mm_loadu_si128(p.add(k) as *const __m128i));
        (half(0), half(16))
    }
}

/// 16 bytes of nibbles as i16: the low nibbles (elements 0..16), then the high
/// ones (16..32).
///
/// # Safety
///
/// The CPU must have `avx2` (the `#[target_feature]` above): the kernel tables that hold
/// this, and its callers, are chosen only after detecting them.
/// `p` must be valid for reading 16 bytes.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn widen_nibbles(p: *const u8) -> (__m256i, __m256i) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let z = _mm256_cvtepu8_epi16(_mm_loadu_si128(p as *const __m128i));
        (
            _mm256_and_si256(z, _mm256_set1_epi16(0x0f)),
            _mm256_srli_epi16::<4>(z),
        )
    }
}

/// Σ over both halves of i16 pair products, as 8 i32 lane sums: exact, since every
/// product is below 2¹⁵·2⁸ and a block's sum below 2³¹ (32·128·32385).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn mul2(w0: __m256i, x0: __m256i, w1: __m256i, x1: __m256i) -> __m256i {
    _mm256_add_epi32(_mm256_madd_epi16(w0, x0), _mm256_madd_epi16(w1, x1))
}

/// Block `blk`'s Σw·x as 8 i32 lane sums, from its weights as i16 (`widen_*`) and
/// a wide row's i16 values (`Q8Row::v`): one pass of i16 products, where
/// `digits` takes two of bytes and a combination.
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
pub(super) unsafe fn values(
    x: &Q8Row,
    blk: usize,
    w: (__m256i, __m256i),
    mul2: impl Fn(__m256i, __m256i, __m256i, __m256i) -> __m256i,
) -> __m256i {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        debug_assert!(x.v.len() >= 32 * blk + 32);
        let p = x.v.as_ptr().add(32 * blk);
        let ld = |k: usize| _mm256_loadu_si256(p.add(k) as *const __m256i);
        mul2(w.0, ld(0), w.1, ld(16))
    }
}

/// `Rows8` for q8_0/q4_0 over `interleave8` groups, one block of 8 rows per step:
/// each 16-byte chunk widened to i16 is two weights of every row, multiplied by
/// that pair of values broadcast (`dp(acc, w, x)` adds the i16 pair products into
/// i32 lanes), so each row's exact block sum builds up in its own lanes; then
/// d_w·d_x for the 8 rows at once and `Lanes8`'s lane b % 8, vectorized over rows.
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
pub(super) unsafe fn rows8_with(
    dtype: DType,
    w: &[u8],
    x: &Q8Row,
    out: &mut [f32],
    dp: impl Fn(__m256i, __m256i, __m256i) -> __m256i,
) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        use super::super::{Rows8Shape, GROUP};
        let Rows8Shape {
            bs,
            bias,
            nb,
            group,
            nibbles,
            at,
            offsets,
            fifth,
        } = super::super::rows8_shape(dtype, w, x, out);
        let xv = x.v.as_ptr() as *const i32;
        let (nib, z) = (_mm256_set1_epi16(0x0f), _mm256_setzero_si256());
        for (g, o) in w.chunks_exact(group).zip(out.chunks_exact_mut(GROUP)) {
            let mut acc = [_mm256_setzero_ps(); 8];
            // q4_1's Σx·(m·d_x) terms, in their own lanes as in the scalar dot.
            let mut accm = [_mm256_setzero_ps(); 8];
            // Block b into accumulator b % 8.
            for (b, k) in (0..nb).zip((0..8).cycle()) {
                prefetch_ahead(g, b * GROUP * bs, GROUP * bs);
                let p = g.as_ptr().add(b * GROUP * bs);
                let chunk = |c: usize| _mm_loadu_si128(p.add(at + 16 * c) as *const __m128i);
                // Values 2k and 2k + 1 of block b, as one i32 in every lane (broadcast
                // as f32 bits: `vbroadcastss` from memory takes no shuffle port, where
                // LLVM made `set1_epi32` a move and a shuffle).
                let pair = |k: usize| {
                    _mm256_castps_si256(_mm256_broadcast_ss(&*(xv.add(16 * b + k) as *const f32)))
                };
                // Four partial sums (exact i32, so any grouping gives the same total):
                // chains of 4 multiply-adds instead of 8, whose latency bounded q4_0.
                let mut sum = [z; 4];
                if !nibbles {
                    for c in (0..16).step_by(4) {
                        for (k, sum) in sum.iter_mut().enumerate() {
                            *sum = dp(*sum, _mm256_cvtepi8_epi16(chunk(c + k)), pair(c + k));
                        }
                    }
                } else {
                    // Chunk c's low nibbles are weights 2c, 2c + 1, its high ones
                    // 2c + 16, 2c + 17 (a q4 block's byte j holds weights j and j + 16).
                    let fifth = fifth.map(|f| fifth_lanes(p.add(f)));
                    for c in (0..8).step_by(2) {
                        for (k, sum) in sum.chunks_exact_mut(2).enumerate() {
                            let [lo, hi] = nibble_weights(chunk(c + k), nib, fifth, c + k);
                            sum[0] = dp(sum[0], lo, pair(c + k));
                            sum[1] = dp(sum[1], hi, pair(c + k + 8));
                        }
                    }
                }
                let isum = _mm256_add_epi32(
                    _mm256_add_epi32(sum[0], sum[1]),
                    _mm256_add_epi32(sum[2], sum[3]),
                );
                rows8_add_block(isum, p, x, b, bias, &mut acc[k]);
                if offsets {
                    rows8_add_offset(p, x, b, &mut accm[k]);
                }
            }
            rows8_finish(&acc, o);
            if offsets {
                rows8_finish_offsets(&accm, o);
            }
        }
    }
}

/// An interleaved nibble chunk c (bytes 2r, 2r + 1 of row r) as i16 weights: its low
/// nibbles (weights 2c, 2c + 1 of each row), then its high ones (2c + 16, 2c + 17),
/// with q5's fifth bits (`fifth_lanes`) added where the type has them.
///
/// # Safety
///
/// The CPU must have `avx2` (the `#[target_feature]` above): the kernel tables that hold
/// this, and its callers, are chosen only after detecting them.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn nibble_weights(
    chunk: __m128i,
    nib: __m256i,
    fifth: Option<[__m256i; 2]>,
    c: usize,
) -> [__m256i; 2] {
    let q = _mm256_cvtepu8_epi16(chunk);
    let (mut lo, mut hi) = (_mm256_and_si256(q, nib), _mm256_srli_epi16::<4>(q));
    if let Some([a, b]) = fifth {
        // Lane 2r + j tests bit 2c + j of row r's half word: 16 where it is set.
        let m = _mm256_sll_epi16(
            _mm256_setr_epi16(1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2),
            _mm_cvtsi32_si128(2 * c as i32),
        );
        let bit = |h: __m256i| {
            let set = _mm256_cmpeq_epi16(_mm256_and_si256(h, m), m);
            _mm256_and_si256(set, _mm256_set1_epi16(16))
        };
        lo = _mm256_or_si256(lo, bit(a));
        hi = _mm256_or_si256(hi, bit(b));
    }
    [lo, hi]
}

/// The 8 rows' q5 `qh` words of an interleaved block (`Rows8Shape::fifth` at `p`) as
/// two registers, the low half words (weights 0..16) then the high ones: row r's half
/// word in i16 lanes 2r and 2r + 1, as its weights lie in a widened chunk.
///
/// # Safety
///
/// The CPU must have `avx2` (the `#[target_feature]` above): the kernel tables that hold
/// this, and its callers, are chosen only after detecting them.
/// `p` must be valid for reading 32 bytes.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn fifth_lanes(p: *const u8) -> [__m256i; 2] {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        [0, 16].map(|o| {
            let h = _mm256_cvtepu16_epi32(_mm_loadu_si128(p.add(o) as *const __m128i));
            _mm256_or_si256(h, _mm256_slli_epi32::<16>(h))
        })
    }
}

/// A `rows8` block's exact sums `isum` (8 rows) into its lane `acc`: q4_0's offset
/// taken off (nibbles 0..15 were multiplied, the weights are nibble − 8), then
/// isum · (d_w · d_x) added, d_w from the group block at `p`.
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
/// `p` must be valid for reading 16 bytes (the 8 rows' f16 scales).
#[inline(always)]
pub(super) unsafe fn rows8_add_block(
    mut isum: __m256i,
    p: *const u8,
    x: &Q8Row,
    b: usize,
    bias: i32,
    acc: &mut __m256,
) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        if bias != 0 {
            isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(bias * x.s[b]));
        }
        let dw = _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i));
        let scale = _mm256_mul_ps(dw, _mm256_set1_ps(x.d[b]));
        *acc = _mm256_add_ps(*acc, _mm256_mul_ps(_mm256_cvtepi32_ps(isum), scale));
    }
}

/// q4_1's offset term of block b for 8 rows into its lane: Σx · (m · d_x), with
/// the rows' m from the group block at `p` (after their 8 scales).
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
/// `p` must be valid for reading 32 bytes (8 f16 scales, then 8 f16 offsets).
#[inline(always)]
pub(super) unsafe fn rows8_add_offset(p: *const u8, x: &Q8Row, b: usize, acc: &mut __m256) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let m = _mm256_cvtph_ps(_mm_loadu_si128(p.add(16) as *const __m128i));
        let scale = _mm256_mul_ps(m, _mm256_set1_ps(x.d[b]));
        let s = _mm256_cvtepi32_ps(_mm256_set1_epi32(x.s[b]));
        *acc = _mm256_add_ps(*acc, _mm256_mul_ps(s, scale));
    }
}

/// o += the offsets' `reduce8` tree (the scalar dot's s.finish() + sm.finish()).
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
pub(super) unsafe fn rows8_finish_offsets(a: &[__m256; 8], o: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let mut m = [0f32; 8];
        rows8_finish(a, &mut m);
        let sum = _mm256_add_ps(_mm256_loadu_ps(o.as_ptr()), _mm256_loadu_ps(m.as_ptr()));
        _mm256_storeu_ps(o.as_mut_ptr(), sum);
    }
}

/// `reduce8`'s tree over the 8 lanes, for 8 rows at once, into `o`.
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
pub(super) unsafe fn rows8_finish(a: &[__m256; 8], o: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let sum = _mm256_add_ps(
            _mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[1], a[5])),
            _mm256_add_ps(_mm256_add_ps(a[2], a[6]), _mm256_add_ps(a[3], a[7])),
        );
        _mm256_storeu_ps(o.as_mut_ptr(), sum);
    }
}

/// # Safety
///
/// The CPU must have `avx2`, `fma`, `f16c` (the `#[target_feature]` above): the kernel
/// tables that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn rows8(dtype: DType, w: &[u8], x: &Q8Row, out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        rows8_with(dtype, w, x, out, |acc, w, x| {
            _mm256_add_epi32(acc, _mm256_madd_epi16(w, x))
        })
    }
}

/// Tokens per `rows8_tokens` call: 8 accumulators and the chunk's weights fit the
/// 16 ymm registers.
pub const TILE_TOKENS: usize = 8;

/// # Safety
///
/// The CPU must have `avx2`, `fma`, `f16c` (the `#[target_feature]` above): the kernel
/// tables that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn rows8_tokens(dtype: DType, w: &[u8], x: &[Q8Row], out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        rows8_tokens_with::<TILE_TOKENS>(dtype, w, x, out, |acc, w, x| {
            _mm256_add_epi32(acc, _mm256_madd_epi16(w, x))
        })
    }
}

/// `rows8_with` for one group of 8 rows and `T` tokens at once (prefill): each
/// chunk of weights is loaded and widened once and multiplied by every token's
/// value pair, so the widening, the nibble split and the group's scales are shared
/// by the tokens, and the tokens' sums are independent chains that keep the
/// multipliers busy. Token t's results go to out[8t..8t + 8]. Per token, the block
/// sums are the same exact integers and each block's f32 product is added into
/// lane b % 8 and reduced by `rows8_finish`, as in `rows8_with`: the same bits.
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
pub(super) unsafe fn rows8_tokens_with<const T: usize>(
    dtype: DType,
    w: &[u8],
    x: &[Q8Row],
    out: &mut [f32],
    dp: impl Fn(__m256i, __m256i, __m256i) -> __m256i,
) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        use super::super::GROUP;
        assert!(x.len() == T && out.len() == GROUP * T);
        let super::super::Rows8Shape {
            bs,
            bias,
            nb,
            nibbles,
            at,
            offsets,
            fifth,
            ..
        } = super::super::rows8_shape(dtype, w, &x[0], &out[..GROUP]);
        super::super::check_tile_tokens(x, nb);
        let xv: [*const f32; T] = std::array::from_fn(|t| x[t].v.as_ptr() as *const f32);
        let (nib, z) = (_mm256_set1_epi16(0x0f), _mm256_setzero_si256());
        // [token][block b % 8], written before read (`super::LaneSums`).
        let mut acc = super::LaneSums::<__m256, T>::new(_mm256_setzero_ps());
        let mut accm = super::LaneSums::<__m256, T>::new(_mm256_setzero_ps());
        for b in 0..nb {
            let p = w.as_ptr().add(b * GROUP * bs);
            let chunk = |c: usize| _mm_loadu_si128(p.add(at + 16 * c) as *const __m128i);
            // Values 2k and 2k + 1 of token t's block b as one 32-bit lane, broadcast
            // (as f32 bits: `vbroadcastss` from memory needs no shuffle port).
            let pair = |t: usize, k: usize| {
                _mm256_castps_si256(_mm256_broadcast_ss(&*xv[t].add(16 * b + k)))
            };
            // One exact i32 sum per token (any grouping gives the same integers).
            let mut sum = [z; T];
            if !nibbles {
                for c in 0..16 {
                    let wc = _mm256_cvtepi8_epi16(chunk(c));
                    for (t, s) in sum.iter_mut().enumerate() {
                        *s = dp(*s, wc, pair(t, c));
                    }
                }
            } else {
                // As in `rows8_with`: chunk c's low nibbles are weights 2c, 2c + 1,
                // its high ones 2c + 16, 2c + 17.
                let fifth = fifth.map(|f| fifth_lanes(p.add(f)));
                for c in 0..8 {
                    let [lo, hi] = nibble_weights(chunk(c), nib, fifth, c);
                    for (t, s) in sum.iter_mut().enumerate() {
                        *s = dp(*s, lo, pair(t, c));
                        *s = dp(*s, hi, pair(t, c + 8));
                    }
                }
            }
            for (t, &s) in sum.iter().enumerate() {
                acc.update(t, b, |a| rows8_add_block(s, p, &x[t], b, bias, a));
                if offsets {
                    accm.update(t, b, |a| rows8_add_offset(p, &x[t], b, a));
                }
            }
        }
        let acc = acc.finish(nb);
        let accm = offsets.then(|| accm.finish(nb));
        for (t, o) in out.chunks_exact_mut(GROUP).enumerate() {
            rows8_finish(&acc[t], o);
            if let Some(m) = accm {
                rows8_finish_offsets(&m[t], o);
            }
        }
    }
}

/// 255·f(hi) + f(lo), lane by lane, over block `blk`'s two digit planes (only
/// f(hi) for an 8-bit row, whose scale holds the 255): `f` gives a product's i32
/// partial sums, so this gives those of Σw·x (exact in i32).
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
pub(super) unsafe fn digits<const W: bool>(
    x: &Q8Row,
    blk: usize,
    f: impl Fn(__m256i) -> __m256i,
) -> __m256i {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        debug_assert!(x.hi.len() >= 32 * blk + 32 && W == x.wide());
        let h = f(_mm256_loadu_si256(
            x.hi.as_ptr().add(32 * blk) as *const __m256i
        ));
        if !W {
            return h;
        }
        debug_assert!(x.lo.len() >= 32 * blk + 32);
        let l = f(_mm256_loadu_si256(
            x.lo.as_ptr().add(32 * blk) as *const __m256i
        ));
        times_base_plus(h, l)
    }
}

/// 255·h + l per i32 lane (255·h as (h << 8) − h).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn times_base_plus(h: __m256i, l: __m256i) -> __m256i {
    const _: () = assert!(super::super::ACT_BASE == 255);
    _mm256_add_epi32(_mm256_sub_epi32(_mm256_slli_epi32::<8>(h), h), l)
}

/// Σ over blocks of (exact i32 block sum) × d_w·d_x, 8 blocks per step. `isum8(i)`
/// gives the lane sums of blocks i..i+8 (all in range); the tail uses `isum(b)` per
/// block and zeros for the rest. The kernels may feed the products with the weight
/// offset by `BIAS` (a nibble 0..15 instead of nibble − 8, a byte w + 128 instead of
/// w, which u8 × i8 instructions want); `BIAS`·Σx, exact in i32, is taken off each
/// block sum here, so the sums, and the result, are those of the plain weights.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn blocks8<const BIAS: i32>(
    w: &[u8],
    x: &Q8Row,
    stride: usize,
    isum: impl Fn(usize) -> __m256i,
    isum8: impl Fn(usize) -> [__m256i; 8],
) -> f32 {
    let nb = w.len() / stride;
    assert!(x.d.len() >= nb && x.hi.len() >= 32 * nb);
    assert!(!x.wide() || (x.lo.len() >= 32 * nb && x.v.len() >= 32 * nb));
    assert!(x.s.len() >= nb);
    let mut acc = _mm256_setzero_ps();
    let mut i = 0;
    while i < nb {
        prefetch_ahead(w, i * stride, 8 * stride);
        if nb - i <= 4 {
            // A short tail (SmolLM2's rows of 18 blocks end in 2): half the
            // reduction, and lanes 4..8 add 0.0 as the 8-block step would.
            acc = _mm256_add_ps(acc, tail4::<BIAS>(w, x, stride, i, &isum));
            break;
        }
        let (v, sq) = if i + 8 <= nb {
            // Safety: blocks i..i+8 are in range (asserted above).
            let sq = unsafe { _mm256_loadu_si256(x.s.as_ptr().add(i) as *const __m256i) };
            (isum8(i), sq)
        } else {
            let mut v = [_mm256_setzero_si256(); 8];
            let mut sq = [0i32; 8];
            for (k, vk) in v.iter_mut().enumerate().take(nb - i) {
                *vk = isum(i + k);
                sq[k] = x.s[i + k];
            }
            // Safety: a local array of 8 i32.
            (v, unsafe {
                _mm256_loadu_si256(sq.as_ptr() as *const __m256i)
            })
        };
        let mut isums = hsum8(&v);
        if BIAS != 0 {
            isums = _mm256_sub_epi32(isums, _mm256_mullo_epi32(sq, _mm256_set1_epi32(BIAS)));
        }
        let sums = _mm256_cvtepi32_ps(isums);
        // `scalar::Lanes8`: lane k takes block i + k, a product then an add (no
        // FMA); past the last block both factors are 0, so the lane adds 0.0.
        acc = _mm256_add_ps(acc, _mm256_mul_ps(sums, scales8!(w, x.d, i, nb, stride, 0)));
        i += 8;
    }
    reduce8(acc)
}

/// The products d_w·d_x · (block sum) of the last `nb − i` ≤ 4 blocks in lanes
/// 0..4, the other lanes 0.0: what `blocks8`'s step gives for them, with a 4-lane
/// reduction.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn tail4<const BIAS: i32>(
    w: &[u8],
    x: &Q8Row,
    stride: usize,
    i: usize,
    isum: &impl Fn(usize) -> __m256i,
) -> __m256 {
    let nb = w.len() / stride;
    let t = nb - i;
    assert!(t <= 4 && x.s.len() >= nb);
    let z = _mm256_setzero_si256();
    let v: [__m256i; 4] = std::array::from_fn(|k| if k < t { isum(i + k) } else { z });
    // [Σv0, Σv1, Σv2, Σv3] as the two halves of one register, then added.
    let c = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    let mut isums = _mm_add_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
    if BIAS != 0 {
        let mut sq = [0i32; 4];
        sq[..t].copy_from_slice(&x.s[i..nb]);
        // Safety: a local array of 4 i32.
        let sq = unsafe { _mm_loadu_si128(sq.as_ptr() as *const __m128i) };
        isums = _mm_sub_epi32(isums, _mm_mullo_epi32(sq, _mm_set1_epi32(BIAS)));
    }
    let scales = scales8!(w, x.d, i, nb, stride, 0);
    let sums = _mm256_zextps128_ps256(_mm_cvtepi32_ps(isums));
    _mm256_mul_ps(sums, scales)
}

/// Ask for the weight bytes `PREFETCH_DISTANCE` past `[from, from + len)` of this
/// row. Decode streams every weight once from DRAM and the hardware prefetcher
/// alone keeps too few lines in flight: without this, one thread reached 55% of
/// the measured read bandwidth. Prefetching past the end of the row (into the next
/// rows, or past the matrix) is harmless: a prefetch never faults.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn prefetch_ahead(w: &[u8], from: usize, len: usize) {
    prefetch_lines(w.as_ptr().wrapping_add(from + PREFETCH_DISTANCE), len);
}

/// Prefetch the lines of `len` bytes from `p` into L1 (any address: a prefetch has
/// no architectural effect and never faults, hence safe).
#[inline]
#[target_feature(enable = "avx2")]
fn prefetch_lines(p: *const u8, len: usize) {
    let mut o = 0;
    while o < len {
        _mm_prefetch(p.wrapping_add(o) as *const i8, _MM_HINT_T0);
        o += 64;
    }
}

/// q4_1's or q5_1's Σ m_w·d_x·Σx (Σx came with the activation; m is the f16 at byte 2
/// of each `stride`-byte block), in the `Lanes8` order.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn min_offsets(w: &[u8], x: &Q8Row, stride: usize) -> f32 {
    let nb = w.len() / stride;
    assert!(x.s.len() >= nb);
    let mut acc = _mm256_setzero_ps();
    let mut i = 0;
    while i < nb {
        let mut s = [0i32; 8];
        let n = (nb - i).min(8);
        s[..n].copy_from_slice(&x.s[i..i + n]);
        // Safety: a local array of 8 i32.
        let sq = _mm256_cvtepi32_ps(unsafe { _mm256_loadu_si256(s.as_ptr() as *const __m256i) });
        acc = _mm256_add_ps(acc, _mm256_mul_ps(sq, scales8!(w, x.d, i, nb, stride, 2)));
        i += 8;
    }
    reduce8(acc)
}

/// Eight single-block sums, for paths without a wider batch.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn each8(isum: impl Fn(usize) -> __m256i, i: usize) -> [__m256i; 8] {
    [
        isum(i),
        isum(i + 1),
        isum(i + 2),
        isum(i + 3),
        isum(i + 4),
        isum(i + 5),
        isum(i + 6),
        isum(i + 7),
    ]
}

/// # Safety
///
/// The CPU must have `avx2`, `fma`, `f16c` (the `#[target_feature]` above): the kernel
/// tables that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn dot_q8_0(w: &[u8], x: &Q8Row) -> f32 {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe { by_width!(q8_0_at, w, x) }
}

/// # Safety
///
/// The CPU must have `avx2`, `fma`, `f16c` (the `#[target_feature]` above): the kernel
/// tables that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q8_0_at<const W: bool>(w: &[u8], x: &Q8Row) -> f32 {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let isum = |b: usize| {
            let p = w.as_ptr().add(34 * b + 2);
            if W {
                values(x, b, widen_i8(p), |w0, x0, w1, x1| mul2(w0, x0, w1, x1))
            } else {
                let wq = _mm256_loadu_si256(p as *const __m256i);
                digits::<false>(x, b, |xq| mul_sum_i8(wq, xq))
            }
        };
        blocks8::<0>(w, x, 34, isum, |i| each8(isum, i))
    }
}

q4_dots!("avx2,fma,f16c");

/// The scalar reference's reduction of 8 lane sums:
/// ((a0 + a4) + (a1 + a5)) + ((a2 + a6) + (a3 + a7)).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn reduce8(v: __m256) -> f32 {
    // [a0+a4, a1+a5, a2+a6, a3+a7]
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    // [s0+s1, s1+s0, s2+s3, s3+s2] (addition commutes exactly)
    let u = _mm_add_ps(s, _mm_shuffle_ps(s, s, 0b10_11_00_01));
    // (s0+s1) + (s2+s3)
    _mm_cvtss_f32(_mm_add_ss(u, _mm_movehl_ps(u, u)))
}

/// The largest of 8 lanes (of magnitudes, none NaN: exact in any order).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn max8(m: __m256) -> f32 {
    let m = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)))
}

/// The whole blocks a quantizer writes, after checking that its outputs hold them
/// and that `max` is a range its digit arithmetic serves (|v| ≤ 32385).
pub(super) fn quantize_blocks(
    x: &[f32],
    max: i32,
    d: &[f32],
    qh: &[i8],
    ql: &[i8],
    s: &[i32],
) -> usize {
    use super::super::DIGITS_MAX;
    const _: () = assert!(super::super::ACT_BASE == 255 && DIGITS_MAX == 32385);
    assert!(0 < max && max <= DIGITS_MAX);
    let nb = x.len() / 32;
    assert!(d.len() >= nb && s.len() >= nb && qh.len() >= 32 * nb && ql.len() >= 32 * nb);
    nb
}

/// The activation quantizer, a block of 32 in four registers: the scalar
/// reference's arithmetic element for element (the maximum is exact in any order,
/// the rounding is `round_to_act`'s, the digits `split_act`'s), so the bits are the
/// same.
///
/// # Safety
///
/// The CPU must have `avx2` (the `#[target_feature]` above): the kernel tables that hold
/// this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2")]
pub unsafe fn quantize(
    x: &[f32],
    max: i32,
    d: &mut [f32],
    qh: &mut [i8],
    ql: &mut [i8],
    s: &mut [i32],
) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let nb = quantize_blocks(x, max, d, qh, ql, s);
        let abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
        let (hi, lo) = (_mm256_set1_ps(max as f32), _mm256_set1_ps(-max as f32));
        let (half, nhalf) = (_mm256_set1_ps(0.5), _mm256_set1_ps(-0.5));
        // Undoes the lane interleaving of the two packs below.
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for i in 0..nb {
            let p = x.as_ptr().add(32 * i);
            let v = [0, 8, 16, 24].map(|k| _mm256_loadu_ps(p.add(k)));
            let un = _mm256_or_ps(
                _mm256_or_ps(
                    _mm256_cmp_ps::<_CMP_UNORD_Q>(v[0], v[0]),
                    _mm256_cmp_ps::<_CMP_UNORD_Q>(v[1], v[1]),
                ),
                _mm256_or_ps(
                    _mm256_cmp_ps::<_CMP_UNORD_Q>(v[2], v[2]),
                    _mm256_cmp_ps::<_CMP_UNORD_Q>(v[3], v[3]),
                ),
            );
            let nan = _mm256_movemask_ps(un) != 0;
            let a = v.map(|v| _mm256_and_ps(v, abs));
            let amax = max8(_mm256_max_ps(
                _mm256_max_ps(a[0], a[1]),
                _mm256_max_ps(a[2], a[3]),
            ));
            let (di, id) = super::super::act_scale(amax, nan, max);
            let id = _mm256_set1_ps(id);
            let r = v.map(|v| {
                let y = _mm256_mul_ps(v, id);
                // NaN → 0, else clamped to ±max (so the truncation below is exact).
                let c = _mm256_and_ps(
                    _mm256_cmp_ps::<_CMP_ORD_Q>(y, y),
                    _mm256_min_ps(_mm256_max_ps(y, lo), hi),
                );
                let t = _mm256_cvttps_epi32(c);
                let frac = _mm256_sub_ps(c, _mm256_cvtepi32_ps(t));
                // A true compare is −1: t + (frac ≥ ½) − (frac ≤ −½).
                let up = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GE_OQ>(frac, half));
                let down = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_LE_OQ>(frac, nhalf));
                _mm256_add_epi32(_mm256_sub_epi32(t, up), down)
            });
            let sum = _mm256_add_epi32(_mm256_add_epi32(r[0], r[1]), _mm256_add_epi32(r[2], r[3]));
            let sum = _mm_add_epi32(
                _mm256_castsi256_si128(sum),
                _mm256_extracti128_si256(sum, 1),
            );
            let sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0b01_00_11_10));
            let sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0b10_11_00_01));
            // The digits: hi = ⌊(v + 127) / 255⌋ = ⌊n / 255⌋ − 128 with n = v + 32767 in
            // 382..=65152, where ⌊n / 255⌋ = (n·32897) >> 23 (true for every n below
            // 2¹⁶) and the product stays below 2³¹ (at most 2 143 305 344).
            let h = r.map(|v| {
                let n = _mm256_add_epi32(v, _mm256_set1_epi32(32767));
                let q = _mm256_srli_epi32::<23>(_mm256_mullo_epi32(n, _mm256_set1_epi32(32897)));
                _mm256_sub_epi32(q, _mm256_set1_epi32(128))
            });
            let l: [__m256i; 4] = std::array::from_fn(|k| {
                _mm256_sub_epi32(r[k], _mm256_sub_epi32(_mm256_slli_epi32::<8>(h[k]), h[k]))
            });
            let pack = |v: [__m256i; 4]| {
                let p = _mm256_packs_epi16(
                    _mm256_packs_epi32(v[0], v[1]),
                    _mm256_packs_epi32(v[2], v[3]),
                );
                _mm256_permutevar8x32_epi32(p, order)
            };
            _mm256_storeu_si256(qh.as_mut_ptr().add(32 * i) as *mut __m256i, pack(h));
            _mm256_storeu_si256(ql.as_mut_ptr().add(32 * i) as *mut __m256i, pack(l));
            d[i] = di;
            s[i] = _mm_cvtsi128_si32(sum);
        }
    }
}

/// f32 dot in the scalar reference's order: 8 lanes, a multiply then an add per
/// element (no FMA: its single rounding would differ from wasm and scalar).
///
/// # Safety
///
/// The CPU must have `avx2` (the `#[target_feature]` above): the kernel tables that hold
/// this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2")]
pub unsafe fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = _mm256_setzero_ps();
        let mut i = 0;
        while i + 8 <= n {
            acc = _mm256_add_ps(
                acc,
                _mm256_mul_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i))),
            );
            i += 8;
        }
        let mut s = reduce8(acc);
        for j in i..n {
            s += a[j] * b[j];
        }
        s
    }
}

/// `rows` strided rows of `width` floats (row j at j·stride) lie within `len`: the
/// bound the unchecked loads of `dots_f32` and `weighted_sum_f32` rely on.
pub(super) fn assert_rows_fit(len: usize, rows: usize, stride: usize, width: usize) {
    if let Some(last) = rows.checked_sub(1) {
        let end = last.checked_mul(stride).and_then(|e| e.checked_add(width));
        assert!(matches!(end, Some(e) if e <= len));
    }
}

/// Bytes ahead of the current key or value that attention asks the memory system
/// for. The KV cache is streamed once per token (about 9 MB at 192 positions for
/// SmolLM2): from memory, not cache. Without this, attention ran at a third of its
/// in-cache speed in decode; with it decode at 400-528 positions went from a median
/// of 93 to 107 tok/s (alternated runs; 8 KiB read the same).
const KV_PREFETCH: usize = 4096;

/// Prefetch `len` bytes from `KV_PREFETCH` past `at` (past the end of the cache is
/// harmless: a prefetch never faults).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn prefetch_kv(at: *const f32, len: usize) {
    prefetch_lines((at as *const u8).wrapping_add(KV_PREFETCH), len);
}

/// `weighted_sum_f32` with the running sums in registers for the whole pass over
/// the rows: 64 outputs (8 add chains) at a time, then 8, then one by one.
///
/// # Safety
///
/// The CPU must have `avx2` (the `#[target_feature]` above): the kernel tables that hold
/// this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2")]
pub unsafe fn weighted_sum_f32(w: &[f32], v: &[f32], stride: usize, out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let i = weighted_sums!(w, v, stride, out; 8, 8, __m256, _mm256_setzero_ps,
        _mm256_set1_ps, _mm256_loadu_ps, _mm256_add_ps, _mm256_mul_ps, _mm256_storeu_ps);
        for (j, o) in out.iter_mut().enumerate().skip(i) {
            let mut acc = 0f32;
            for (p, &wp) in w.iter().enumerate() {
                acc += wp * v[p * stride + j];
            }
            *o = acc;
        }
    }
}

/// `dot_f32` against 4 vectors at a time: 4 independent add chains instead of 1,
/// each in `dot_f32`'s order.
///
/// # Safety
///
/// The CPU must have `avx2` (the `#[target_feature]` above): the kernel tables that hold
/// this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2")]
pub unsafe fn dots_f32(a: &[f32], b: &[f32], stride: usize, out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let n = a.len();
        assert_rows_fit(b.len(), out.len(), stride, n);
        let n8 = n / 8 * 8;
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut j = 0;
        while j + 4 <= out.len() {
            let mut acc = [_mm256_setzero_ps(); 4];
            prefetch_kv(pb.wrapping_add(j * stride), 4 * 4 * stride);
            let mut i = 0;
            while i < n8 {
                let va = _mm256_loadu_ps(pa.add(i));
                for (c, acc) in acc.iter_mut().enumerate() {
                    let vb = _mm256_loadu_ps(pb.add((j + c) * stride + i));
                    *acc = _mm256_add_ps(*acc, _mm256_mul_ps(va, vb));
                }
                i += 8;
            }
            for (c, acc) in acc.iter().enumerate() {
                let mut s = reduce8(*acc);
                for i in n8..n {
                    s += a[i] * b[(j + c) * stride + i];
                }
                out[j + c] = s;
            }
            j += 4;
        }
        for (jj, o) in out.iter_mut().enumerate().skip(j) {
            *o = dot_f32(a, &b[jj * stride..jj * stride + n]);
        }
    }
}

/// # Safety
///
/// The CPU must have `avx2`, `f16c` (the `#[target_feature]` above): the kernel tables that
/// hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2,f16c")]
pub unsafe fn dot_f16(w: &[u8], x: &[f32]) -> f32 {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let n = x.len().min(w.len() / 2);
        let (pw, px) = (w.as_ptr(), x.as_ptr());
        let mut acc = _mm256_setzero_ps();
        let mut i = 0;
        while i + 8 <= n {
            let wv = _mm256_cvtph_ps(_mm_loadu_si128(pw.add(2 * i) as *const __m128i));
            acc = _mm256_add_ps(acc, _mm256_mul_ps(wv, _mm256_loadu_ps(px.add(i))));
            i += 8;
        }
        let mut s = reduce8(acc);
        for (j, &xj) in x.iter().enumerate().take(n).skip(i) {
            s += super::super::scalar::f16_at(w, 2 * j) * xj;
        }
        s
    }
}

// ---- q5_0, q5_1 and the k-quants (q4_k, q5_k, q6_k) ----
//
// One row at a time (decode, and the per-row fallback of prefill). Weights are widened
// to i16 (times their sub-block scale where the type has one, still exact in i16) and
// multiplied with the activation's i16 values (`values`), so each sub-block's exact
// integer sum comes out as in the scalar reference, in the same `Lanes8` lanes.

/// A q5_0/q5_1 block's 32 quants (0..31) as i16 (elements 0..16, then 16..32) from
/// `p` = its u32 `qh` and 16 nibble bytes: the nibbles, plus 16 where bit j of qh is
/// set (a compare against each lane's own bit).
///
/// # Safety
///
/// The CPU must have `avx2` (the `#[target_feature]` above): the kernel tables that hold
/// this, and its callers, are chosen only after detecting them.
/// `p` must be valid for reading 20 bytes (`qh`, then 16 nibble bytes).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn widen_q5(p: *const u8) -> (__m256i, __m256i) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let qh = (p as *const u32).read_unaligned();
        let (lo, hi) = widen_nibbles(p.add(4));
        let bit = _mm256_setr_epi16(
            1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, -32768,
        );
        let fifth = |half: u32| {
            let v = _mm256_set1_epi16(half as u16 as i16);
            let set = _mm256_cmpeq_epi16(_mm256_and_si256(v, bit), bit);
            _mm256_and_si256(set, _mm256_set1_epi16(16))
        };
        (
            _mm256_or_si256(lo, fifth(qh & 0xffff)),
            _mm256_or_si256(hi, fifth(qh >> 16)),
        )
    }
}

/// # Safety
///
/// The CPU must have `avx2`, `fma`, `f16c` (the `#[target_feature]` above): the kernel
/// tables that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn dot_q5_0(w: &[u8], x: &Q8Row) -> f32 {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        assert!(x.v.len() >= 32 * (w.len() / 22));
        let isum = |b: usize| {
            let q = widen_q5(w.as_ptr().add(22 * b + 2));
            values(x, b, q, |w0, x0, w1, x1| mul2(w0, x0, w1, x1))
        };
        // The quants are q + 16; `blocks8` takes 16·Σx back off.
        blocks8::<16>(w, x, 22, isum, |i| each8(isum, i))
    }
}

/// # Safety
///
/// The CPU must have `avx2`, `fma`, `f16c` (the `#[target_feature]` above): the kernel
/// tables that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn dot_q5_1(w: &[u8], x: &Q8Row) -> f32 {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        assert!(x.v.len() >= 32 * (w.len() / 24));
        let isum = |b: usize| {
            let q = widen_q5(w.as_ptr().add(24 * b + 4));
            values(x, b, q, |w0, x0, w1, x1| mul2(w0, x0, w1, x1))
        };
        blocks8::<0>(w, x, 24, isum, |i| each8(isum, i)) + min_offsets(w, x, 24)
    }
}

/// The super-blocks of a k-quant row and the checks every k kernel needs: `bs` bytes
/// each, 8 activation blocks of 32 each, for every token.
#[inline]
pub(super) fn k_blocks(w: &[u8], xs: &[Q8Row], bs: usize) -> usize {
    let n = w.len() / bs;
    for x in xs {
        assert!(x.d.len() >= 8 * n && x.s.len() >= 8 * n && x.v.len() >= 256 * n);
    }
    n
}

/// Tokens per `dot_tokens` call (prefill's k-quant rows).
pub const K_TOKENS: usize = 8;

k_dots!("avx2,fma,f16c");

/// The k-quant dots for `T` tokens: per super-block, sub-block j's weights widened to
/// i16 and multiplied by their scale (q4_k/q5_k: the 6-bit scale, |·| ≤ 31·63; q6_k:
/// q − 32 times the i8 scale of its 16-weight half, |·| ≤ 32·128: exact in i16), then
/// against each token's values; a token's 8 sub-block sums reduce into one vector,
/// lane j for sub-block j as in the scalar `Lanes8`, times d·d_x. q4_k's and q5_k's
/// min terms m_j·Σx times dmin·d_x go to a second accumulator, taken off at the end.
///
/// # Safety
///
/// The CPU must have `avx2`, `fma`, `f16c` (the `#[target_feature]` above): the kernel
/// tables that hold this, and its callers, are chosen only after detecting them.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn k_tokens<const T: usize>(dtype: DType, w: &[u8], x: &[Q8Row], out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        assert!(x.len() == T && out.len() == T);
        let bs = dtype.block().1;
        let n = k_blocks(w, x, bs);
        let z = _mm256_setzero_si256();
        let (mut acc, mut accm) = ([_mm256_setzero_ps(); T], [_mm256_setzero_ps(); T]);
        // v[t][j]: token t's i32 lane sums of sub-block j, every one written by each
        // super-block before it is read (zeroed here once, not per super-block: that
        // was a 2 KiB memset per super-block).
        let mut v = [[z; 8]; T];
        for k in 0..n {
            prefetch_ahead(w, bs * k, bs);
            let b = &w[bs * k..bs * (k + 1)];
            let p = b.as_ptr();
            let wide = |at: usize| {
                [0, 16]
                    .map(|o| _mm256_cvtepu8_epi16(_mm_loadu_si128(p.add(at + o) as *const __m128i)))
            };
            let mut sub = |j: usize, q: [__m256i; 2]| {
                for (t, v) in v.iter_mut().enumerate() {
                    v[j] = values(&x[t], 8 * k + j, (q[0], q[1]), |w0, x0, w1, x1| {
                        mul2(w0, x0, w1, x1)
                    });
                }
            };
            let mins = if dtype == DType::Q6K {
                q6_k_subs(b, &wide, &mut sub);
                None
            } else {
                Some(k4_subs(dtype == DType::Q5K, b, &wide, &mut sub))
            };
            k_block_terms(dtype, b, k, x, &v, mins, &mut acc, &mut accm);
        }
        k_finish(dtype, &acc, &accm, out);
    }
}

/// Super-block k's terms for each token, from `v[t][j]` (token t's i32 lane sums of
/// sub-block j): the 8 sub-block sums (`hsum8`, lane j) times d·d_x into `acc[t]`, and
/// for q4_k/q5_k the min terms (m_j·Σx)·(dmin·d_x) into `accm[t]` (`mins`: m_j as i32
/// lanes). Shared by every x86 k-quant kernel, whatever width formed the sums.
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them. `k_blocks` checked the tokens' rows.
#[inline(always)]
#[allow(clippy::too_many_arguments, reason = "one super-block's whole state")]
pub(super) unsafe fn k_block_terms<const T: usize>(
    dtype: DType,
    b: &[u8],
    k: usize,
    x: &[Q8Row],
    v: &[[__m256i; 8]; T],
    mins: Option<__m256i>,
    acc: &mut [__m256; T],
    accm: &mut [__m256; T],
) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let f16_at = super::super::scalar::f16_at;
        let d = _mm256_set1_ps(f16_at(b, if dtype == DType::Q6K { 208 } else { 0 }));
        for t in 0..T {
            let dx = _mm256_loadu_ps(x[t].d.as_ptr().add(8 * k));
            let sums = _mm256_cvtepi32_ps(hsum8(&v[t]));
            acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(sums, _mm256_mul_ps(d, dx)));
            if let Some(m) = mins {
                let ms = _mm256_mullo_epi32(
                    m,
                    _mm256_loadu_si256(x[t].s.as_ptr().add(8 * k) as *const __m256i),
                );
                let dmin = _mm256_mul_ps(_mm256_set1_ps(f16_at(b, 2)), dx);
                accm[t] = _mm256_add_ps(accm[t], _mm256_mul_ps(_mm256_cvtepi32_ps(ms), dmin));
            }
        }
    }
}

/// Each token's k-quant dot from its accumulators: `reduce8` of the sums, minus that
/// of the min terms for q4_k/q5_k (the scalar `s.finish() - sm.finish()`).
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
pub(super) unsafe fn k_finish<const T: usize>(
    dtype: DType,
    acc: &[__m256; T],
    accm: &[__m256; T],
    out: &mut [f32],
) {
    // Safety: the caller keeps this function's `# Safety` contract (AVX2).
    unsafe {
        for t in 0..T {
            out[t] = if dtype == DType::Q6K {
                reduce8(acc[t])
            } else {
                reduce8(acc[t]) - reduce8(accm[t])
            };
        }
    }
}

/// A q4_k or q5_k super-block's 8 sub-block scales (as i16) and mins (as i32).
#[inline(always)]
pub(super) fn k4_scales_mins(b: &[u8]) -> ([i16; 8], [i32; 8]) {
    let mut sc = [0i16; 8];
    let mut m = [0i32; 8];
    for j in 0..8 {
        let (s, mm) = crate::quant::scale_min_k4(j, &b[4..16]);
        (sc[j], m[j]) = (s as i16, mm as i32);
    }
    (sc, m)
}

/// A q4_k (`q5` false) or q5_k super-block's 8 sub-blocks as scaled i16 weights,
/// handed to `sub(j, weights)`; returns the 8 minima m_j as i32 lanes.
///
/// # Safety
///
/// The CPU must have `avx2`, `fma`, `f16c` (the `#[target_feature]` above): the kernel
/// tables that hold this, and its callers, are chosen only after detecting them.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn k4_subs(
    q5: bool,
    b: &[u8],
    wide: &impl Fn(usize) -> [__m256i; 2],
    sub: &mut impl FnMut(usize, [__m256i; 2]),
) -> __m256i {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let (sc, m) = k4_scales_mins(b);
        let low = _mm256_set1_epi16(0x0f);
        // q5_k's fifth bits: byte l's bit j belongs to weight l of sub-block j.
        let qh = wide(16);
        let qs = if q5 { 48 } else { 16 };
        for g in 0..4 {
            let z = wide(qs + 32 * g);
            for half in 0..2 {
                let j = 2 * g + half;
                let count = _mm_cvtsi32_si128(j as i32);
                let s = _mm256_set1_epi16(sc[j]);
                let q = |h: usize| {
                    let mut q = if half == 0 {
                        _mm256_and_si256(z[h], low)
                    } else {
                        _mm256_srli_epi16::<4>(z[h])
                    };
                    if q5 {
                        let bit =
                            _mm256_and_si256(_mm256_srl_epi16(qh[h], count), _mm256_set1_epi16(1));
                        q = _mm256_or_si256(q, _mm256_slli_epi16::<4>(bit));
                    }
                    _mm256_mullo_epi16(q, s)
                };
                sub(j, [q(0), q(1)]);
            }
        }
        _mm256_loadu_si256(m.as_ptr() as *const __m256i)
    }
}

/// A q6_k super-block's 8 sub-blocks as scaled i16 weights, handed to `sub(j, weights)`.
///
/// # Safety
///
/// The CPU must have `avx2`, `fma`, `f16c` (the `#[target_feature]` above): the kernel
/// tables that hold this, and its callers, are chosen only after detecting them.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q6_k_subs(
    b: &[u8],
    wide: &impl Fn(usize) -> [__m256i; 2],
    sub: &mut impl FnMut(usize, [__m256i; 2]),
) {
    let (low, three, bias) = (
        _mm256_set1_epi16(0x0f),
        _mm256_set1_epi16(3),
        _mm256_set1_epi16(32),
    );
    for h in 0..2 {
        let qh = wide(128 + 32 * h);
        let ql = [wide(64 * h), wide(64 * h + 32)];
        for c in 0..4 {
            let j = 4 * h + c;
            let count = _mm_cvtsi32_si128(2 * c as i32);
            let q = |l: usize| {
                let z = ql[c % 2][l];
                let lo = if c < 2 {
                    _mm256_and_si256(z, low)
                } else {
                    _mm256_srli_epi16::<4>(z)
                };
                let hi = _mm256_and_si256(_mm256_srl_epi16(qh[l], count), three);
                let q = _mm256_sub_epi16(_mm256_or_si256(lo, _mm256_slli_epi16::<4>(hi)), bias);
                _mm256_mullo_epi16(q, _mm256_set1_epi16(b[192 + 2 * j + l] as i8 as i16))
            };
            sub(j, [q(0), q(1)]);
        }
    }
}
