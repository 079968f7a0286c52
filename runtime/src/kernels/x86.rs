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
static AVX2: Kernels = Kernels {
    name: "avx2",
    dot_f32: |a, b| unsafe { avx2::dot_f32(a, b) },
    dots_f32: |a, b, stride, out| unsafe { avx2::dots_f32(a, b, stride, out) },
    weighted_sum_f32: |w, v, stride, out| unsafe { avx2::weighted_sum_f32(w, v, stride, out) },
    dot_f16: |w, x| unsafe { avx2::dot_f16(w, x) },
    dot_q8_0: |w, x| unsafe { avx2::dot_q8_0(w, x) },
    dot_q4_0: |w, x| unsafe { avx2::dot_q4_0(w, x) },
    dot_q4_1: |w, x| unsafe { avx2::dot_q4_1(w, x) },
    quantize: |x, max, d, qh, ql, s| unsafe { avx2::quantize(x, max, d, qh, ql, s) },
    gemm: None,
    rows8: Some(|d, w, x, out| unsafe { avx2::rows8(d, w, x, out) }),
    rows8_tokens: Some(|d, w, x, out| unsafe { avx2::rows8_tokens(d, w, x, out) }),
    tile_tokens: avx2::TILE_TOKENS,
    rows8_q4_1: true,
    rows8_spread: false,
};

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

static AMX: Kernels = Kernels {
    name: "amx",
    dots_f32: |a, b, stride, out| unsafe { avx512::dots_f32(a, b, stride, out) },
    weighted_sum_f32: |w, v, stride, out| unsafe { avx512::weighted_sum_f32(w, v, stride, out) },
    quantize: |x, max, d, qh, ql, s| unsafe { avx512::quantize(x, max, d, qh, ql, s) },
    rows8: Some(|d, w, x, out| unsafe { avx512::rows8(d, w, x, out) }),
    // avx512::rows8 takes q8_0 and q4_0 only.
    rows8_q4_1: false,
    rows8_spread: true,
    gemm: Some(|d, w, il, rows, cols, x, y| unsafe {
        super::amx::gemm(d, w, il, rows, cols, x, y)
    }),
    ..AVX_VNNI
};

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
macro_rules! q4_dots {
    ($features:literal) => {
        #[target_feature(enable = $features)]
        pub unsafe fn dot_q4_0(w: &[u8], x: &Q8Row) -> f32 {
            if x.wide() {
                q4_sums::<8, true>(w, x, 18, 2)
            } else {
                q4_sums::<8, false>(w, x, 18, 2)
            }
        }

        #[target_feature(enable = $features)]
        pub unsafe fn dot_q4_1(w: &[u8], x: &Q8Row) -> f32 {
            let sums = if x.wide() {
                q4_sums::<0, true>(w, x, 20, 4)
            } else {
                q4_sums::<0, false>(w, x, 20, 4)
            };
            sums + q4_1_offsets(w, x)
        }

        /// The nibble block sums of q4_0 (`BIAS` 8, nibbles at byte 2 of 18) or q4_1
        /// (`BIAS` 0, at byte 4 of 20), for a wide row (`W`) or an 8-bit one.
        #[target_feature(enable = $features)]
        unsafe fn q4_sums<const BIAS: i32, const W: bool>(
            w: &[u8],
            x: &Q8Row,
            stride: usize,
            off: usize,
        ) -> f32 {
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
        #[inline(always)]
        unsafe fn chunk<const K: usize>(w: &[f32], v: *const f32, stride: usize, out: *mut f32) {
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

mod avx2 {
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
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn nibbles(p: *const u8) -> __m256i {
        let t = _mm_loadu_si128(p as *const __m128i);
        let both = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
        _mm256_and_si256(both, _mm256_set1_epi8(0x0f))
    }

    /// A block's 32 q8_0 weights as i16: elements 0..16, then 16..32.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn widen_i8(p: *const u8) -> (__m256i, __m256i) {
        let half = |k: usize| _mm256_cvtepi8_epi16(_mm_loadu_si128(p.add(k) as *const __m128i));
        (half(0), half(16))
    }

    /// 16 bytes of nibbles as i16: the low nibbles (elements 0..16), then the high
    /// ones (16..32).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn widen_nibbles(p: *const u8) -> (__m256i, __m256i) {
        let z = _mm256_cvtepu8_epi16(_mm_loadu_si128(p as *const __m128i));
        (
            _mm256_and_si256(z, _mm256_set1_epi16(0x0f)),
            _mm256_srli_epi16::<4>(z),
        )
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
    #[inline(always)]
    pub(super) unsafe fn values(
        x: &Q8Row,
        blk: usize,
        w: (__m256i, __m256i),
        mul2: impl Fn(__m256i, __m256i, __m256i, __m256i) -> __m256i,
    ) -> __m256i {
        debug_assert!(x.v.len() >= 32 * blk + 32);
        let p = x.v.as_ptr().add(32 * blk);
        let ld = |k: usize| _mm256_loadu_si256(p.add(k) as *const __m256i);
        mul2(w.0, ld(0), w.1, ld(16))
    }

    /// `Rows8` for q8_0/q4_0 over `interleave8` groups, one block of 8 rows per step:
    /// each 16-byte chunk widened to i16 is two weights of every row, multiplied by
    /// that pair of values broadcast (`dp(acc, w, x)` adds the i16 pair products into
    /// i32 lanes), so each row's exact block sum builds up in its own lanes; then
    /// d_w·d_x for the 8 rows at once and `Lanes8`'s lane b % 8, vectorized over rows.
    #[inline(always)]
    pub(super) unsafe fn rows8_with(
        dtype: DType,
        w: &[u8],
        x: &Q8Row,
        out: &mut [f32],
        dp: impl Fn(__m256i, __m256i, __m256i) -> __m256i,
    ) {
        use super::super::{rows8_layout, GROUP};
        let (bs, bias, nb, group) = super::super::rows8_shape(dtype, w, x, out);
        let (nibbles, at, offsets) = rows8_layout(dtype);
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
                    for c in (0..8).step_by(2) {
                        for (k, sum) in sum.chunks_exact_mut(2).enumerate() {
                            let q = _mm256_cvtepu8_epi16(chunk(c + k));
                            sum[0] = dp(sum[0], _mm256_and_si256(q, nib), pair(c + k));
                            sum[1] = dp(sum[1], _mm256_srli_epi16::<4>(q), pair(c + k + 8));
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

    /// A `rows8` block's exact sums `isum` (8 rows) into its lane `acc`: q4_0's offset
    /// taken off (nibbles 0..15 were multiplied, the weights are nibble − 8), then
    /// isum · (d_w · d_x) added, d_w from the group block at `p`.
    #[inline(always)]
    pub(super) unsafe fn rows8_add_block(
        mut isum: __m256i,
        p: *const u8,
        x: &Q8Row,
        b: usize,
        bias: i32,
        acc: &mut __m256,
    ) {
        if bias != 0 {
            isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(bias * x.s[b]));
        }
        let dw = _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i));
        let scale = _mm256_mul_ps(dw, _mm256_set1_ps(x.d[b]));
        *acc = _mm256_add_ps(*acc, _mm256_mul_ps(_mm256_cvtepi32_ps(isum), scale));
    }

    /// q4_1's offset term of block b for 8 rows into its lane: Σx · (m · d_x), with
    /// the rows' m from the group block at `p` (after their 8 scales).
    #[inline(always)]
    pub(super) unsafe fn rows8_add_offset(p: *const u8, x: &Q8Row, b: usize, acc: &mut __m256) {
        let m = _mm256_cvtph_ps(_mm_loadu_si128(p.add(16) as *const __m128i));
        let scale = _mm256_mul_ps(m, _mm256_set1_ps(x.d[b]));
        let s = _mm256_cvtepi32_ps(_mm256_set1_epi32(x.s[b]));
        *acc = _mm256_add_ps(*acc, _mm256_mul_ps(s, scale));
    }

    /// o += the offsets' `reduce8` tree (the scalar dot's s.finish() + sm.finish()).
    #[inline(always)]
    pub(super) unsafe fn rows8_finish_offsets(a: &[__m256; 8], o: &mut [f32]) {
        let mut m = [0f32; 8];
        rows8_finish(a, &mut m);
        let sum = _mm256_add_ps(_mm256_loadu_ps(o.as_ptr()), _mm256_loadu_ps(m.as_ptr()));
        _mm256_storeu_ps(o.as_mut_ptr(), sum);
    }

    /// `reduce8`'s tree over the 8 lanes, for 8 rows at once, into `o`.
    #[inline(always)]
    pub(super) unsafe fn rows8_finish(a: &[__m256; 8], o: &mut [f32]) {
        let sum = _mm256_add_ps(
            _mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[1], a[5])),
            _mm256_add_ps(_mm256_add_ps(a[2], a[6]), _mm256_add_ps(a[3], a[7])),
        );
        _mm256_storeu_ps(o.as_mut_ptr(), sum);
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn rows8(dtype: DType, w: &[u8], x: &Q8Row, out: &mut [f32]) {
        rows8_with(dtype, w, x, out, |acc, w, x| {
            _mm256_add_epi32(acc, _mm256_madd_epi16(w, x))
        })
    }

    /// Tokens per `rows8_tokens` call: 8 accumulators and the chunk's weights fit the
    /// 16 ymm registers.
    pub const TILE_TOKENS: usize = 8;

    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn rows8_tokens(dtype: DType, w: &[u8], x: &[Q8Row], out: &mut [f32]) {
        rows8_tokens_with::<TILE_TOKENS>(dtype, w, x, out, |acc, w, x| {
            _mm256_add_epi32(acc, _mm256_madd_epi16(w, x))
        })
    }

    /// `rows8_with` for one group of 8 rows and `T` tokens at once (prefill): each
    /// chunk of weights is loaded and widened once and multiplied by every token's
    /// value pair, so the widening, the nibble split and the group's scales are shared
    /// by the tokens, and the tokens' sums are independent chains that keep the
    /// multipliers busy. Token t's results go to out[8t..8t + 8]. Per token, the block
    /// sums are the same exact integers and each block's f32 product is added into
    /// lane b % 8 and reduced by `rows8_finish`, as in `rows8_with`: the same bits.
    #[inline(always)]
    pub(super) unsafe fn rows8_tokens_with<const T: usize>(
        dtype: DType,
        w: &[u8],
        x: &[Q8Row],
        out: &mut [f32],
        dp: impl Fn(__m256i, __m256i, __m256i) -> __m256i,
    ) {
        use super::super::GROUP;
        assert!(x.len() == T && out.len() == GROUP * T);
        let (bs, bias, nb, _) = super::super::rows8_shape(dtype, w, &x[0], &out[..GROUP]);
        let (nibbles, at, offsets) = super::super::rows8_layout(dtype);
        for x in &x[1..] {
            // The other tokens' rows are as long and as aligned (rows8_shape checked
            // the first).
            assert!(x.d.len() == nb && x.v.len() >= 32 * nb && x.s.len() >= nb);
            assert!((x.v.as_ptr() as usize).is_multiple_of(4));
        }
        let xv: [*const f32; T] = std::array::from_fn(|t| x[t].v.as_ptr() as *const f32);
        let (nib, z) = (_mm256_set1_epi16(0x0f), _mm256_setzero_si256());
        let mut acc = [[_mm256_setzero_ps(); 8]; T];
        let mut accm = [[_mm256_setzero_ps(); 8]; T];
        for (b, k) in (0..nb).zip((0..8).cycle()) {
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
                for c in 0..8 {
                    let q = _mm256_cvtepu8_epi16(chunk(c));
                    let (lo, hi) = (_mm256_and_si256(q, nib), _mm256_srli_epi16::<4>(q));
                    for (t, s) in sum.iter_mut().enumerate() {
                        *s = dp(*s, lo, pair(t, c));
                        *s = dp(*s, hi, pair(t, c + 8));
                    }
                }
            }
            for (t, &s) in sum.iter().enumerate() {
                rows8_add_block(s, p, &x[t], b, bias, &mut acc[t][k]);
                if offsets {
                    rows8_add_offset(p, &x[t], b, &mut accm[t][k]);
                }
            }
        }
        for ((a, m), o) in acc.iter().zip(&accm).zip(out.chunks_exact_mut(GROUP)) {
            rows8_finish(a, o);
            if offsets {
                rows8_finish_offsets(m, o);
            }
        }
    }

    /// 255·f(hi) + f(lo), lane by lane, over block `blk`'s two digit planes (only
    /// f(hi) for an 8-bit row, whose scale holds the 255): `f` gives a product's i32
    /// partial sums, so this gives those of Σw·x (exact in i32).
    #[inline(always)]
    pub(super) unsafe fn digits<const W: bool>(
        x: &Q8Row,
        blk: usize,
        f: impl Fn(__m256i) -> __m256i,
    ) -> __m256i {
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

    /// q4_1's Σ m_w·d_x·Σx (Σx came with the activation), in the `Lanes8` order.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn q4_1_offsets(w: &[u8], x: &Q8Row) -> f32 {
        let nb = w.len() / 20;
        assert!(x.s.len() >= nb);
        let mut acc = _mm256_setzero_ps();
        let mut i = 0;
        while i < nb {
            let mut s = [0i32; 8];
            let n = (nb - i).min(8);
            s[..n].copy_from_slice(&x.s[i..i + n]);
            // Safety: a local array of 8 i32.
            let sq =
                _mm256_cvtepi32_ps(unsafe { _mm256_loadu_si256(s.as_ptr() as *const __m256i) });
            acc = _mm256_add_ps(acc, _mm256_mul_ps(sq, scales8!(w, x.d, i, nb, 20, 2)));
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

    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn dot_q8_0(w: &[u8], x: &Q8Row) -> f32 {
        by_width!(q8_0_at, w, x)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn q8_0_at<const W: bool>(w: &[u8], x: &Q8Row) -> f32 {
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
    #[target_feature(enable = "avx2")]
    pub unsafe fn quantize(
        x: &[f32],
        max: i32,
        d: &mut [f32],
        qh: &mut [i8],
        ql: &mut [i8],
        s: &mut [i32],
    ) {
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

    /// f32 dot in the scalar reference's order: 8 lanes, a multiply then an add per
    /// element (no FMA: its single rounding would differ from wasm and scalar).
    #[target_feature(enable = "avx2")]
    pub unsafe fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
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
    #[target_feature(enable = "avx2")]
    pub unsafe fn weighted_sum_f32(w: &[f32], v: &[f32], stride: usize, out: &mut [f32]) {
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

    /// `dot_f32` against 4 vectors at a time: 4 independent add chains instead of 1,
    /// each in `dot_f32`'s order.
    #[target_feature(enable = "avx2")]
    pub unsafe fn dots_f32(a: &[f32], b: &[f32], stride: usize, out: &mut [f32]) {
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

    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn dot_f16(w: &[u8], x: &[f32]) -> f32 {
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

/// AVX2 with AVX-VNNI: the AVX2 kernels with `vpdpbusd` for the i8 products. Each i32
/// lane is the exact sum of the same four byte products as maddubs + madd give (no
/// saturation either way), so every block sum, and every result, is unchanged.
mod vnni {
    use super::avx2::{
        blocks8, digits, each8, nibbles, q4_1_offsets, values, widen_i8, widen_nibbles,
    };
    use super::*;

    #[target_feature(enable = "avx2,fma,f16c,avxvnni")]
    pub unsafe fn rows8(dtype: DType, w: &[u8], x: &Q8Row, out: &mut [f32]) {
        super::avx2::rows8_with(dtype, w, x, out, |acc, w, x| {
            _mm256_dpwssd_avx_epi32(acc, w, x)
        })
    }

    #[target_feature(enable = "avx2,fma,f16c,avxvnni")]
    pub unsafe fn rows8_tokens(dtype: DType, w: &[u8], x: &[Q8Row], out: &mut [f32]) {
        super::avx2::rows8_tokens_with::<{ super::avx2::TILE_TOKENS }>(
            dtype,
            w,
            x,
            out,
            |acc, w, x| _mm256_dpwssd_avx_epi32(acc, w, x),
        )
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
    #[target_feature(enable = "avx2,fma,f16c,avxvnni")]
    pub unsafe fn dot_q8_0(w: &[u8], x: &Q8Row) -> f32 {
        by_width!(q8_0_at, w, x)
    }

    #[target_feature(enable = "avx2,fma,f16c,avxvnni")]
    unsafe fn q8_0_at<const W: bool>(w: &[u8], x: &Q8Row) -> f32 {
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

    q4_dots!("avx2,fma,f16c,avxvnni");
}

/// AVX-512BW: two blocks per zmm register. There is no 512-bit `sign_epi8`, so x is
/// negated under the mask of w's sign bits instead; the integer sums are the same.
mod avx512 {
    use super::avx2::{self, blocks8, digits, q4_1_offsets};
    use super::*;

    /// `avx2::rows8_with` with two chunks of a block per AVX-512 step: 32 bytes widened
    /// to a zmm of i16 (chunk c's 8 rows × 2 weights, then chunk c + 1's), times pairs c
    /// and c + 1 of the block's values spread over the two halves, with `vpdpwssd`;
    /// the halves' exact i32 sums added give each row's block sum, and the same
    /// epilogue follows. q4_0 decode was bound by the AVX2 kernel's speed rather than
    /// by memory (15 GB/s from cache, about what the stream delivers), and that by its
    /// shuffles (two widenings and two broadcasts per chunk, all on one port): here one
    /// widening serves two chunks, and the pairs come spread (`Q8Row::spread`, once per
    /// activation) or are spread here per block where the row has none. From cache
    /// (kernel_probe, RESIDENT=1): q4_0 15 → 20 GB/s; SmolLM2 q4_0 decode, median of
    /// alternated runs, 89 → 140 tok/s.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
    pub unsafe fn rows8(dtype: DType, w: &[u8], x: &Q8Row, out: &mut [f32]) {
        // q4_1 is not interleaved for this path (`Kernels::rows8_q4_1`).
        assert!(matches!(dtype, DType::Q8_0 | DType::Q4_0));
        if x.spread.len() >= x.d.len() * super::super::SPREAD_PER_BLOCK {
            rows8_pairs::<true>(dtype, w, x, out)
        } else {
            rows8_pairs::<false>(dtype, w, x, out)
        }
    }

    #[inline(always)]
    unsafe fn rows8_pairs<const SPREAD: bool>(dtype: DType, w: &[u8], x: &Q8Row, out: &mut [f32]) {
        use super::super::{GROUP, SPREAD_PER_BLOCK};
        let (bs, bias, nb, group) = super::super::rows8_shape(dtype, w, x, out);
        let (xv, sp) = (x.v.as_ptr() as *const i32, x.spread.as_ptr());
        let nib = _mm512_set1_epi16(0x0f);
        // Lane i of the result takes i32 lane i / 8 of the source: [pair c ×8, pair c+1 ×8].
        let spread = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
        for (g, o) in w.chunks_exact(group).zip(out.chunks_exact_mut(GROUP)) {
            let mut acc = [_mm256_setzero_ps(); 8];
            // Block b into accumulator b % 8.
            for (b, k) in (0..nb).zip((0..8).cycle()) {
                let acc = &mut acc[k];
                avx2::prefetch_ahead(g, b * GROUP * bs, GROUP * bs);
                let p = g.as_ptr().add(b * GROUP * bs);
                // Chunks c and c + 1 (within the block: checked by rows8_shape).
                let chunks = |c: usize| _mm256_loadu_si256(p.add(16 + 16 * c) as *const __m256i);
                // Pairs c and c + 1 of block b's values (values 2c..2c + 4), spread.
                let pairs = |c: usize| {
                    if SPREAD {
                        _mm512_loadu_si512(sp.add(b * SPREAD_PER_BLOCK + 8 * c) as *const _)
                    } else {
                        let two = _mm_loadl_epi64(xv.add(16 * b + c) as *const __m128i);
                        _mm512_permutexvar_epi32(spread, _mm512_castsi128_si512(two))
                    }
                };
                let z = _mm512_setzero_si512();
                let (mut s0, mut s1) = (z, z);
                if bias == 0 {
                    for c in (0..16).step_by(4) {
                        s0 = _mm512_dpwssd_epi32(s0, _mm512_cvtepi8_epi16(chunks(c)), pairs(c));
                        s1 = _mm512_dpwssd_epi32(
                            s1,
                            _mm512_cvtepi8_epi16(chunks(c + 2)),
                            pairs(c + 2),
                        );
                    }
                } else {
                    // Chunk c's low nibbles are weights 2c, 2c + 1, its high ones
                    // 2c + 16, 2c + 17 (q4_0's byte j holds weights j and j + 16).
                    for c in (0..8).step_by(2) {
                        let q = _mm512_cvtepu8_epi16(chunks(c));
                        s0 = _mm512_dpwssd_epi32(s0, _mm512_and_si512(q, nib), pairs(c));
                        s1 = _mm512_dpwssd_epi32(s1, _mm512_srli_epi16::<4>(q), pairs(c + 8));
                    }
                }
                let s = _mm512_add_epi32(s0, s1);
                let isum =
                    _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64::<1>(s));
                avx2::rows8_add_block(isum, p, x, b, bias, acc);
            }
            avx2::rows8_finish(&acc, o);
        }
    }

    /// `avx2::weighted_sum_f32` with 16 outputs per register: each output still adds
    /// its rows one by one in order, so the bits are the same, for half the adds and
    /// multiplies.
    #[target_feature(enable = "avx512f,avx2")]
    pub unsafe fn weighted_sum_f32(w: &[f32], v: &[f32], stride: usize, out: &mut [f32]) {
        let i = weighted_sums!(w, v, stride, out; 16, 4, __m512, _mm512_setzero_ps,
            _mm512_set1_ps, _mm512_loadu_ps, _mm512_add_ps, _mm512_mul_ps, _mm512_storeu_ps);
        if i < out.len() {
            // (With no rows, `v` may be shorter than i.)
            avx2::weighted_sum_f32(w, v.get(i..).unwrap_or(&[]), stride, &mut out[i..]);
        }
    }

    /// `avx2::dots_f32` with two rows per register: the low half takes row j's 8 lanes,
    /// the high half row j + 1's, each in `dot_f32`'s order, then `reduce8` on each
    /// half; 8 rows (4 add chains) at a time.
    #[target_feature(enable = "avx512f,avx2")]
    pub unsafe fn dots_f32(a: &[f32], b: &[f32], stride: usize, out: &mut [f32]) {
        let n = a.len();
        avx2::assert_rows_fit(b.len(), out.len(), stride, n);
        let n8 = n / 8 * 8;
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let pair = |r: usize, i: usize| {
            let lo = _mm256_castps_pd(_mm256_loadu_ps(pb.add(r * stride + i)));
            let hi = _mm256_castps_pd(_mm256_loadu_ps(pb.add((r + 1) * stride + i)));
            _mm512_castpd_ps(_mm512_insertf64x4::<1>(_mm512_castpd256_pd512(lo), hi))
        };
        let mut j = 0;
        while j + 8 <= out.len() {
            let mut acc = [_mm512_setzero_ps(); 4];
            avx2::prefetch_kv(pb.wrapping_add(j * stride), 4 * 8 * stride);
            let mut i = 0;
            while i < n8 {
                let va = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(
                    _mm256_loadu_ps(pa.add(i)),
                )));
                for (c, acc) in acc.iter_mut().enumerate() {
                    *acc = _mm512_add_ps(*acc, _mm512_mul_ps(va, pair(j + 2 * c, i)));
                }
                i += 8;
            }
            for (c, acc) in acc.iter().enumerate() {
                let halves = [
                    _mm512_castps512_ps256(*acc),
                    _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(*acc))),
                ];
                for (h, half) in halves.into_iter().enumerate() {
                    let r = j + 2 * c + h;
                    let mut s = avx2::reduce8(half);
                    for i in n8..n {
                        s += a[i] * b[r * stride + i];
                    }
                    out[r] = s;
                }
            }
            j += 8;
        }
        if j < out.len() {
            avx2::dots_f32(a, &b[j * stride..], stride, &mut out[j..]);
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn mul_sum_i8(w: __m512i, x: __m512i) -> __m512i {
        let neg = _mm512_movepi8_mask(w);
        let sx = _mm512_mask_sub_epi8(x, neg, _mm512_setzero_si512(), x);
        _mm512_madd_epi16(
            _mm512_maddubs_epi16(_mm512_abs_epi8(w), sx),
            _mm512_set1_epi16(1),
        )
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn mul_sum_u8_i8(w: __m512i, x: __m512i) -> __m512i {
        _mm512_madd_epi16(_mm512_maddubs_epi16(w, x), _mm512_set1_epi16(1))
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn join(lo: __m256i, hi: __m256i) -> __m512i {
        _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1)
    }

    /// `avx2::digits` for blocks blk and blk + 1 at once.
    #[inline(always)]
    unsafe fn digits2<const W: bool>(
        x: &Q8Row,
        blk: usize,
        f: impl Fn(__m512i) -> __m512i,
    ) -> __m512i {
        debug_assert!(x.hi.len() >= 32 * blk + 64 && W == x.wide());
        let h = f(_mm512_loadu_si512(x.hi.as_ptr().add(32 * blk) as *const _));
        if !W {
            return h;
        }
        debug_assert!(x.lo.len() >= 32 * blk + 64);
        let l = f(_mm512_loadu_si512(x.lo.as_ptr().add(32 * blk) as *const _));
        _mm512_add_epi32(_mm512_sub_epi32(_mm512_slli_epi32::<8>(h), h), l)
    }

    /// `avx2::quantize` with a block in two registers, and the digits formed in 16-bit
    /// lanes: the same arithmetic element for element (the rounding is
    /// `round_to_act`'s, the digits `split_act`'s), so the same bits.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub unsafe fn quantize(
        x: &[f32],
        max: i32,
        d: &mut [f32],
        qh: &mut [i8],
        ql: &mut [i8],
        s: &mut [i32],
    ) {
        let nb = avx2::quantize_blocks(x, max, d, qh, ql, s);
        let (hi, lo) = (_mm512_set1_ps(max as f32), _mm512_set1_ps(-max as f32));
        let (half, nhalf) = (_mm512_set1_ps(0.5), _mm512_set1_ps(-0.5));
        let one = _mm512_set1_epi32(1);
        for i in 0..nb {
            let p = x.as_ptr().add(32 * i);
            let v = [_mm512_loadu_ps(p), _mm512_loadu_ps(p.add(16))];
            let nan = (_mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v[0], v[0])
                | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v[1], v[1]))
                != 0;
            let m = _mm512_max_ps(_mm512_abs_ps(v[0]), _mm512_abs_ps(v[1]));
            let m = _mm256_max_ps(
                _mm512_castps512_ps256(m),
                _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(m), 1)),
            );
            let amax = avx2::max8(m);
            let (di, id) = super::super::act_scale(amax, nan, max);
            let id = _mm512_set1_ps(id);
            let r = v.map(|v| {
                let y = _mm512_mul_ps(v, id);
                // NaN → 0, else clamped to ±max (so the truncation below is exact).
                let ord = _mm512_cmp_ps_mask::<_CMP_ORD_Q>(y, y);
                let c = _mm512_maskz_mov_ps(ord, _mm512_min_ps(_mm512_max_ps(y, lo), hi));
                let t = _mm512_cvttps_epi32(c);
                let frac = _mm512_sub_ps(c, _mm512_cvtepi32_ps(t));
                // t + (frac ≥ ½) − (frac ≤ −½)
                let up = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(frac, half);
                let down = _mm512_cmp_ps_mask::<_CMP_LE_OQ>(frac, nhalf);
                _mm512_mask_sub_epi32(_mm512_mask_add_epi32(t, up, t, one), down, t, one)
            });
            s[i] = _mm512_reduce_add_epi32(_mm512_add_epi32(r[0], r[1]));
            // |v| ≤ 32385 fits i16. The digits as in `avx2::quantize`, with
            // n = v + 32767 in 382..=65152 as u16 and ⌊n / 255⌋ = (n·32897) >> 23 as
            // the high half of the 32-bit product, shifted by 7.
            let v16 = _mm512_inserti64x4::<1>(
                _mm512_castsi256_si512(_mm512_cvtepi32_epi16(r[0])),
                _mm512_cvtepi32_epi16(r[1]),
            );
            let n = _mm512_add_epi16(v16, _mm512_set1_epi16(32767));
            let q = _mm512_srli_epi16::<7>(_mm512_mulhi_epu16(n, _mm512_set1_epi16(-32639)));
            let h = _mm512_sub_epi16(q, _mm512_set1_epi16(128));
            let l = _mm512_sub_epi16(v16, _mm512_sub_epi16(_mm512_slli_epi16::<8>(h), h));
            _mm256_storeu_si256(
                qh.as_mut_ptr().add(32 * i) as *mut __m256i,
                _mm512_cvtepi16_epi8(h),
            );
            _mm256_storeu_si256(
                ql.as_mut_ptr().add(32 * i) as *mut __m256i,
                _mm512_cvtepi16_epi8(l),
            );
            d[i] = di;
        }
    }

    /// Eight block sums from four two-block registers (one block per 256-bit half).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn pairs8(isum2: impl Fn(usize) -> __m512i, i: usize) -> [__m256i; 8] {
        let (a, b, c, d) = (isum2(i), isum2(i + 2), isum2(i + 4), isum2(i + 6));
        let lo = _mm512_castsi512_si256;
        let hi = |v| _mm512_extracti64x4_epi64(v, 1);
        [lo(a), hi(a), lo(b), hi(b), lo(c), hi(c), lo(d), hi(d)]
    }

    #[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
    pub unsafe fn dot_q8_0(w: &[u8], x: &Q8Row) -> f32 {
        by_width!(q8_0_at, w, x)
    }

    #[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
    unsafe fn q8_0_at<const W: bool>(w: &[u8], x: &Q8Row) -> f32 {
        let p = w.as_ptr();
        let ld = |k: usize| _mm256_loadu_si256(p.add(34 * k + 2) as *const __m256i);
        let isum = |b: usize| {
            let wq = ld(b);
            digits::<W>(x, b, |xq| avx2::mul_sum_i8(wq, xq))
        };
        let isum2 = |b: usize| {
            let wq = join(ld(b), ld(b + 1));
            digits2::<W>(x, b, |xq| mul_sum_i8(wq, xq))
        };
        blocks8::<0>(w, x, 34, isum, |i| pairs8(isum2, i))
    }

    /// The nibble block sums of q4_0 (`BIAS` 8, nibbles at byte 2 of 18) or q4_1
    /// (`BIAS` 0, at byte 4 of 20), two blocks per register.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
    unsafe fn q4_blocks<const BIAS: i32, const W: bool>(
        w: &[u8],
        x: &Q8Row,
        stride: usize,
        off: usize,
    ) -> f32 {
        let p = w.as_ptr();
        let nib = |b: usize| avx2::nibbles(p.add(stride * b + off));
        let isum = |b: usize| {
            let n = nib(b);
            digits::<W>(x, b, |xq| avx2::mul_sum_u8_i8(n, xq))
        };
        let isum2 = |b: usize| {
            let n = join(nib(b), nib(b + 1));
            digits2::<W>(x, b, |xq| mul_sum_u8_i8(n, xq))
        };
        blocks8::<BIAS>(w, x, stride, isum, |i| pairs8(isum2, i))
    }

    #[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
    pub unsafe fn dot_q4_0(w: &[u8], x: &Q8Row) -> f32 {
        if x.wide() {
            q4_blocks::<8, true>(w, x, 18, 2)
        } else {
            q4_blocks::<8, false>(w, x, 18, 2)
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
    pub unsafe fn dot_q4_1(w: &[u8], x: &Q8Row) -> f32 {
        let sums = if x.wide() {
            q4_blocks::<0, true>(w, x, 20, 4)
        } else {
            q4_blocks::<0, false>(w, x, 20, 4)
        };
        sums + q4_1_offsets(w, x)
    }
}
