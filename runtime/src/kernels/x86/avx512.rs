//! AVX-512BW: two blocks per zmm register. There is no 512-bit `sign_epi8`, so x is
//! negated under the mask of w's sign bits instead; the integer sums are the same.

use super::avx2::{self, blocks8, digits, min_offsets};
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
/// alternated runs, 89 → 140 tok/s. q4_1 and q5 take it too: q5's fifth bits added
/// to the widened nibbles under a bit-test mask, q4_1's and q5_1's offset terms in
/// their own lanes as `avx2::rows8_with` adds them (the same epilogue functions).
///
/// # Safety
///
/// The CPU must have `avx512f`, `avx512bw`, `avx512vnni`, `avx2`, `fma`, `f16c` (the
/// `#[target_feature]` above): the kernel tables that hold this, and its callers, are
/// chosen only after detecting them.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
pub unsafe fn rows8(dtype: DType, w: &[u8], x: &Q8Row, out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        assert!(super::super::interleaves(dtype));
        if x.spread.len() >= x.d.len() * super::super::SPREAD_PER_BLOCK {
            rows8_pairs::<true>(dtype, w, x, out)
        } else {
            rows8_pairs::<false>(dtype, w, x, out)
        }
    }
}

/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
unsafe fn rows8_pairs<const SPREAD: bool>(dtype: DType, w: &[u8], x: &Q8Row, out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        use super::super::{GROUP, SPREAD_PER_BLOCK};
        let super::super::Rows8Shape {
            bs,
            bias,
            nb,
            group,
            nibbles,
            at,
            offsets,
            fifth,
        } = super::super::rows8_shape(dtype, w, x, out);
        let (xv, sp) = (x.v.as_ptr() as *const i32, x.spread.as_ptr());
        let nib = _mm512_set1_epi16(0x0f);
        // q5's fifth bits: for chunks c and c + 1 (c even) in one zmm, i16 lane 2r + j
        // of the low half tests bit 2c + j of row r's half word of qh, of the high half
        // bit 2c + 2 + j.
        let bit_of: [__m512i; 4] = std::array::from_fn(|k| {
            let base = _mm512_inserti64x4::<1>(
                _mm512_castsi256_si512(_mm256_set1_epi32(0x0002_0001)),
                _mm256_set1_epi32(0x0008_0004),
            );
            _mm512_sll_epi16(base, _mm_cvtsi32_si128(4 * k as i32))
        });
        // Lane i of the result takes i32 lane i / 8 of the source: [pair c ×8, pair c+1 ×8].
        let spread = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
        for (g, o) in w.chunks_exact(group).zip(out.chunks_exact_mut(GROUP)) {
            let mut acc = [_mm256_setzero_ps(); 8];
            // q4_1's and q5_1's Σx·(m·d_x) terms, in their own lanes as in the scalar dot.
            let mut accm = [_mm256_setzero_ps(); 8];
            // Block b into accumulator b % 8.
            for (b, k) in (0..nb).zip((0..8).cycle()) {
                avx2::prefetch_ahead(g, b * GROUP * bs, GROUP * bs);
                let p = g.as_ptr().add(b * GROUP * bs);
                // Chunks c and c + 1 (within the block: checked by rows8_shape).
                let chunks = |c: usize| _mm256_loadu_si256(p.add(at + 16 * c) as *const __m256i);
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
                if !nibbles {
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
                    // q5: the 8 rows' half words of qh, each in i16 lanes 2r and 2r + 1
                    // of both halves: [weights 0..16, weights 16..32].
                    let halves = fifth.map(|f| fifth_pair(p.add(f), p.add(f)));
                    for c in (0..8).step_by(2) {
                        let q = _mm512_cvtepu8_epi16(chunks(c));
                        let (mut lo, mut hi) =
                            (_mm512_and_si512(q, nib), _mm512_srli_epi16::<4>(q));
                        if let Some(f) = halves {
                            [lo, hi] = add_fifth([lo, hi], f, bit_of[c / 2]);
                        }
                        s0 = _mm512_dpwssd_epi32(s0, lo, pairs(c));
                        s1 = _mm512_dpwssd_epi32(s1, hi, pairs(c + 8));
                    }
                }
                let s = _mm512_add_epi32(s0, s1);
                let isum =
                    _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64::<1>(s));
                avx2::rows8_add_block(isum, p, x, b, bias, &mut acc[k]);
                if offsets {
                    avx2::rows8_add_offset(p, x, b, &mut accm[k]);
                }
            }
            avx2::rows8_finish(&acc, o);
            if offsets {
                avx2::rows8_finish_offsets(&accm, o);
            }
        }
    }
}

/// `avx2::rows8` with `vpdpwssd` on ymm registers (AVX-512 VNNI with VL, EVEX-encoded):
/// one instruction where AVX2 takes `vpmaddwd` and an add, for the same exact i32 lane
/// sums. This is the narrow decode of the `avx512vnni` table: on Zen 4, which runs each
/// 512-bit operation as two 256-bit halves, 256 bits decode faster than `rows8`
/// (`Model::tune_decode_width` times both), and AVX-VNNI's VEX form, which
/// `vnni::rows8` uses, is absent there.
///
/// # Safety
///
/// The CPU must have `avx512f`, `avx512vl`, `avx512vnni`, `avx2`, `fma`, `f16c` (the
/// `#[target_feature]` above): the kernel tables that hold this, and its callers, are
/// chosen only after detecting them.
#[target_feature(enable = "avx512f,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn rows8_vl(dtype: DType, w: &[u8], x: &Q8Row, out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe { avx2::rows8_with(dtype, w, x, out, |acc, w, x| _mm256_dpwssd_epi32(acc, w, x)) }
}

/// The q5 fifth bits of two interleaved group blocks (`Rows8Shape::fifth` at `lo` and
/// `hi`: the same block twice where one group's chunks fill both halves) as
/// [weights 0..16, weights 16..32]: `avx2::fifth_lanes` of `lo` in the low 256 bits, of
/// `hi` in the high ones.
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them. `lo` and `hi` must be valid for reading 32 bytes.
#[inline(always)]
unsafe fn fifth_pair(lo: *const u8, hi: *const u8) -> [__m512i; 2] {
    // Safety: the caller keeps this function's `# Safety` contract.
    unsafe {
        let ([l0, h0], [l1, h1]) = (avx2::fifth_lanes(lo), avx2::fifth_lanes(hi));
        let join = |a: __m256i, b| _mm512_inserti64x4::<1>(_mm512_castsi256_si512(a), b);
        [join(l0, l1), join(h0, h1)]
    }
}

/// Widened q5 nibbles [low, high] with 16 added in each lane whose bit `m` is set in the
/// matching fifth-bit lanes `f` (`fifth_pair`).
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
unsafe fn add_fifth(q: [__m512i; 2], f: [__m512i; 2], m: __m512i) -> [__m512i; 2] {
    // Safety: the caller keeps this function's `# Safety` contract.
    unsafe {
        let sixteen = _mm512_set1_epi16(16);
        [0, 1].map(|i| _mm512_mask_add_epi16(q[i], _mm512_test_epi16_mask(f[i], m), q[i], sixteen))
    }
}

/// Tokens per `rows16_tokens` call: 8 sums, the chunk's weights and a broadcast
/// value pair stay in registers (AVX-512 has 32).
pub const TILE_TOKENS: usize = 8;

/// acc + the pair products of `w` and the 32-bit value pair `at.0[at.1]`, broadcast:
/// `vpdpwssd` with an embedded broadcast, the same exact i32 sums as the intrinsic.
/// In asm because LLVM's machine combiner, to shorten a chain of `vpdpwssd`s on the
/// same accumulator, rewrites every other one as `vpbroadcastd`, `vpmaddwd` and
/// `vpaddd`: three operations on the vector ports instead of one, which on Zen 4 made
/// `rows16_tokens` issue-bound rather than bound by the multiplies (the tile's eight
/// independent chains need no shorter latency).
///
/// # Safety
///
/// The CPU must have `avx512f`, `avx512vnni`; `at.0.add(at.1)` must be valid for
/// reading 4 bytes. (A base and an index, so that no address is computed apart.)
#[inline]
#[target_feature(enable = "avx512f,avx512vnni")]
unsafe fn dp_pair(acc: __m512i, w: __m512i, at: (*const i32, usize)) -> __m512i {
    let mut acc = acc;
    // Safety: the caller keeps this function's `# Safety` contract; the asm reads
    // 4 bytes at at.0 + 4·at.1 and writes only `acc`.
    unsafe {
        std::arch::asm!(
            "vpdpwssd {acc}, {w}, dword ptr [{p} + 4*{k}]{{1to16}}",
            acc = inout(zmm_reg) acc,
            w = in(zmm_reg) w,
            p = in(reg) at.0,
            k = in(reg) at.1,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    acc
}

/// `avx2::rows8_tokens_with` for two consecutive `interleave8` groups (16 rows) at
/// once, every interleaved type (q5's fifth bits added under a bit-test mask, q4_1's
/// and q5_1's offset terms in lanes of their own): chunk c of both groups is one zmm
/// of i16 weights (group 0's
/// 8 rows × 2 weights in i32 lanes 0..8, group 1's in 8..16), so a single broadcast
/// value pair multiplies 16 rows with one `vpdpwssd`, twice the work of AVX2's per
/// instruction, and the widening is shared by the tile's tokens. Without AMX this is
/// prefill's product (the rows × tokens tile of issue 17). Per row and token the
/// block sums are the same exact integers, and each lane does what `rows8_add_block`
/// and `rows8_finish` do to one lane of a ymm (the same f32 multiplies and adds, no
/// FMA, in the same order): the scalar dot's bits. Token t's 16 results go to
/// out[16t..16t + 16].
///
/// # Safety
///
/// The CPU must have `avx512f`, `avx512bw`, `avx512vnni`, `avx2`, `fma`, `f16c` (the
/// `#[target_feature]` above): the kernel tables that hold this, and its callers, are
/// chosen only after detecting them.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
pub unsafe fn rows16_tokens(dtype: DType, w: &[u8], x: &[Q8Row], out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        use super::super::GROUP;
        const T: usize = TILE_TOKENS;
        assert!(super::super::interleaves(dtype));
        assert!(x.len() == T && out.len() == 2 * GROUP * T);
        // Two groups: rows8_shape checks w's length against 16 outputs.
        let super::super::Rows8Shape {
            bs,
            bias,
            nb,
            group,
            nibbles,
            at,
            offsets,
            fifth,
        } = super::super::rows8_shape(dtype, w, &x[0], &out[..2 * GROUP]);
        super::super::check_tile_tokens(x, nb);
        let (g0, g1) = (w.as_ptr(), w.as_ptr().add(group));
        let xv: [*const f32; T] = std::array::from_fn(|t| x[t].v.as_ptr() as *const f32);
        let (nib, z) = (_mm512_set1_epi16(0x0f), _mm512_setzero_si512());
        // [token][block b % 8]: lanes 0..8 group 0's rows, 8..16 group 1's; q4_1's and
        // q5_1's Σx·(m·d_x) terms apart, as in the scalar dot.
        // Written before read (`super::LaneSums`).
        let mut acc = super::LaneSums::<__m512, T>::new(_mm512_setzero_ps());
        let mut accm = super::LaneSums::<__m512, T>::new(_mm512_setzero_ps());
        for b in 0..nb {
            let (p0, p1) = (g0.add(b * GROUP * bs), g1.add(b * GROUP * bs));
            // 16 bytes at `off` of block b in group 0, then in group 1.
            let both = |off: usize| {
                _mm256_inserti128_si256::<1>(
                    _mm256_castsi128_si256(_mm_loadu_si128(p0.add(off) as *const __m128i)),
                    _mm_loadu_si128(p1.add(off) as *const __m128i),
                )
            };
            // Values 2k and 2k + 1 of token t's block b, as one 32-bit lane that
            // `dp_pair` broadcasts from memory (a load, no shuffle).
            let pair = |t: usize, k: usize| (xv[t].add(16 * b) as *const i32, k);
            let mut sum = [z; T];
            if !nibbles {
                for c in 0..16 {
                    let wc = _mm512_cvtepi8_epi16(both(at + 16 * c));
                    for (t, s) in sum.iter_mut().enumerate() {
                        *s = dp_pair(*s, wc, pair(t, c));
                    }
                }
            } else {
                // Chunk c's low nibbles are weights 2c, 2c + 1, its high ones 2c + 16,
                // 2c + 17 (q4_0's byte j holds weights j and j + 16).
                // q5: both groups' rows' half words of qh (group 0's in the low 256
                // bits, row r in i16 lanes 2r and 2r + 1): [weights 0..16, 16..32].
                let halves = fifth.map(|f| fifth_pair(p0.add(f), p1.add(f)));
                for c in 0..8 {
                    let q = _mm512_cvtepu8_epi16(both(at + 16 * c));
                    let (mut lo, mut hi) = (_mm512_and_si512(q, nib), _mm512_srli_epi16::<4>(q));
                    if let Some(f) = halves {
                        // Lane 2r + j takes bit 2c + j of its row's half word.
                        let m = _mm512_sll_epi16(
                            _mm512_set1_epi32(0x0002_0001),
                            _mm_cvtsi32_si128(2 * c as i32),
                        );
                        [lo, hi] = add_fifth([lo, hi], f, m);
                    }
                    for (t, s) in sum.iter_mut().enumerate() {
                        *s = dp_pair(*s, lo, pair(t, c));
                        *s = dp_pair(*s, hi, pair(t, c + 8));
                    }
                }
            }
            // rows8_add_block, 16 lanes: q4_0's offset off, then isum · (d_w · d_x).
            let dw = _mm512_cvtph_ps(both(0));
            for (t, &s) in sum.iter().enumerate() {
                let isum = if bias != 0 {
                    _mm512_sub_epi32(s, _mm512_set1_epi32(bias * x[t].s[b]))
                } else {
                    s
                };
                let scale = _mm512_mul_ps(dw, _mm512_set1_ps(x[t].d[b]));
                acc.update(t, b, |a| {
                    *a = _mm512_add_ps(*a, _mm512_mul_ps(_mm512_cvtepi32_ps(isum), scale))
                });
            }
            if offsets {
                // rows8_add_offset, 16 lanes: Σx · (m · d_x), m after the scales.
                let m = _mm512_cvtph_ps(both(2 * GROUP));
                for (t, xt) in x.iter().enumerate() {
                    let scale = _mm512_mul_ps(m, _mm512_set1_ps(xt.d[b]));
                    let s = _mm512_cvtepi32_ps(_mm512_set1_epi32(xt.s[b]));
                    accm.update(t, b, |a| *a = _mm512_add_ps(*a, _mm512_mul_ps(s, scale)));
                }
            }
        }
        // rows8_finish's tree, lane by lane (plus the offsets' tree: rows8_finish_offsets).
        let tree = |a: &[__m512; 8]| {
            _mm512_add_ps(
                _mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[1], a[5])),
                _mm512_add_ps(_mm512_add_ps(a[2], a[6]), _mm512_add_ps(a[3], a[7])),
            )
        };
        let acc = acc.finish(nb);
        let accm = offsets.then(|| accm.finish(nb));
        for (t, o) in out.chunks_exact_mut(2 * GROUP).enumerate() {
            let mut sum = tree(&acc[t]);
            if let Some(m) = accm {
                sum = _mm512_add_ps(sum, tree(&m[t]));
            }
            _mm512_storeu_ps(o.as_mut_ptr(), sum);
        }
    }
}

/// `avx2::weighted_sum_f32` with 16 outputs per register: each output still adds
/// its rows one by one in order, so the bits are the same, for half the adds and
/// multiplies.
///
/// # Safety
///
/// The CPU must have `avx512f`, `avx2` (the `#[target_feature]` above): the kernel tables
/// that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx512f,avx2")]
pub unsafe fn weighted_sum_f32(w: &[f32], v: &[f32], stride: usize, out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let i = weighted_sums!(w, v, stride, out; 16, 4, __m512, _mm512_setzero_ps,
        _mm512_set1_ps, _mm512_loadu_ps, _mm512_add_ps, _mm512_mul_ps, _mm512_storeu_ps);
        if i < out.len() {
            // (With no rows, `v` may be shorter than i.)
            avx2::weighted_sum_f32(w, v.get(i..).unwrap_or(&[]), stride, &mut out[i..]);
        }
    }
}

/// `avx2::dots_f32` with two rows per register: the low half takes row j's 8 lanes,
/// the high half row j + 1's, each in `dot_f32`'s order, then `reduce8` on each
/// half; 8 rows (4 add chains) at a time.
///
/// # Safety
///
/// The CPU must have `avx512f`, `avx2` (the `#[target_feature]` above): the kernel tables
/// that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx512f,avx2")]
pub unsafe fn dots_f32(a: &[f32], b: &[f32], stride: usize, out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
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
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
unsafe fn digits2<const W: bool>(x: &Q8Row, blk: usize, f: impl Fn(__m512i) -> __m512i) -> __m512i {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        debug_assert!(x.hi.len() >= 32 * blk + 64 && W == x.wide());
        let h = f(_mm512_loadu_si512(x.hi.as_ptr().add(32 * blk) as *const _));
        if !W {
            return h;
        }
        debug_assert!(x.lo.len() >= 32 * blk + 64);
        let l = f(_mm512_loadu_si512(x.lo.as_ptr().add(32 * blk) as *const _));
        _mm512_add_epi32(_mm512_sub_epi32(_mm512_slli_epi32::<8>(h), h), l)
    }
}

/// `avx2::quantize` with a block in two registers, and the digits formed in 16-bit
/// lanes: the same arithmetic element for element (the rounding is
/// `round_to_act`'s, the digits `split_act`'s), so the same bits.
///
/// # Safety
///
/// The CPU must have `avx512f`, `avx512bw` (the `#[target_feature]` above): the kernel
/// tables that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx512f,avx512bw")]
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

/// # Safety
///
/// The CPU must have `avx512f`, `avx512bw`, `avx2`, `fma`, `f16c` (the `#[target_feature]`
/// above): the kernel tables that hold this, and its callers, are chosen only after
/// detecting them.
#[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
pub unsafe fn dot_q8_0(w: &[u8], x: &Q8Row) -> f32 {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe { by_width!(q8_0_at, w, x) }
}

/// # Safety
///
/// The CPU must have `avx512f`, `avx512bw`, `avx2`, `fma`, `f16c` (the `#[target_feature]`
/// above): the kernel tables that hold this, and its callers, are chosen only after
/// detecting them.
#[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
unsafe fn q8_0_at<const W: bool>(w: &[u8], x: &Q8Row) -> f32 {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
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
}

/// The nibble block sums of q4_0 (`BIAS` 8, nibbles at byte 2 of 18) or q4_1
/// (`BIAS` 0, at byte 4 of 20), two blocks per register.
///
/// # Safety
///
/// The CPU must have `avx512f`, `avx512bw`, `avx2`, `fma`, `f16c` (the `#[target_feature]`
/// above): the kernel tables that hold this, and its callers, are chosen only after
/// detecting them.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
unsafe fn q4_blocks<const BIAS: i32, const W: bool>(
    w: &[u8],
    x: &Q8Row,
    stride: usize,
    off: usize,
) -> f32 {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
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
}

/// # Safety
///
/// The CPU must have `avx512f`, `avx512bw`, `avx2`, `fma`, `f16c` (the `#[target_feature]`
/// above): the kernel tables that hold this, and its callers, are chosen only after
/// detecting them.
#[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
pub unsafe fn dot_q4_0(w: &[u8], x: &Q8Row) -> f32 {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        if x.wide() {
            q4_blocks::<8, true>(w, x, 18, 2)
        } else {
            q4_blocks::<8, false>(w, x, 18, 2)
        }
    }
}

/// # Safety
///
/// The CPU must have `avx512f`, `avx512bw`, `avx2`, `fma`, `f16c` (the `#[target_feature]`
/// above): the kernel tables that hold this, and its callers, are chosen only after
/// detecting them.
#[target_feature(enable = "avx512f,avx512bw,avx2,fma,f16c")]
pub unsafe fn dot_q4_1(w: &[u8], x: &Q8Row) -> f32 {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let sums = if x.wide() {
            q4_blocks::<0, true>(w, x, 20, 4)
        } else {
            q4_blocks::<0, false>(w, x, 20, 4)
        };
        sums + min_offsets(w, x, 20)
    }
}

k_dots!("avx512f,avx512bw,avx2,fma,f16c");

/// `avx2::k_tokens` with each sub-block's 32 scaled i16 weights in one zmm (one
/// widening of 32 bytes serves two sub-blocks, one `vpmaddwd` a token and sub-block
/// where AVX2 takes two and an add), the 16 i32 lane sums folded to AVX2's 8 (an
/// exact integer regrouping), then AVX2's epilogue as it is: `hsum8`, d·d_x, the min
/// terms apart. Every sub-block sum is the same exact integer, so every result is the
/// same f32.
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
unsafe fn k_tokens<const T: usize>(dtype: DType, w: &[u8], x: &[Q8Row], out: &mut [f32]) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        assert!(x.len() == T && out.len() == T);
        let bs = dtype.block().1;
        // Checks every token's d, s and v against the row's super-blocks.
        let n = avx2::k_blocks(w, x, bs);
        let z = _mm256_setzero_si256();
        let (mut acc, mut accm) = ([_mm256_setzero_ps(); T], [_mm256_setzero_ps(); T]);
        // v[t][j]: token t's i32 lane sums of sub-block j, every one written by each
        // super-block before it is read (zeroed here once, not per super-block: that
        // was a 2 KiB memset per super-block).
        let mut v = [[z; 8]; T];
        for k in 0..n {
            avx2::prefetch_ahead(w, bs * k, bs);
            let b = &w[bs * k..bs * (k + 1)];
            let p = b.as_ptr();
            // Bytes at..at + 32 of the super-block, widened to 32 u16 lanes.
            let wide =
                |at: usize| _mm512_cvtepu8_epi16(_mm256_loadu_si256(p.add(at) as *const __m256i));
            let mut sub = |j: usize, q: __m512i| {
                for (t, v) in v.iter_mut().enumerate() {
                    let xv = _mm512_loadu_si512(x[t].v.as_ptr().add(32 * (8 * k + j)) as *const _);
                    let s = _mm512_madd_epi16(q, xv);
                    v[j] = _mm256_add_epi32(
                        _mm512_castsi512_si256(s),
                        _mm512_extracti64x4_epi64::<1>(s),
                    );
                }
            };
            let mins = if dtype == DType::Q6K {
                q6_k_subs(b, &wide, &mut sub);
                None
            } else {
                Some(k4_subs(dtype == DType::Q5K, b, &wide, &mut sub))
            };
            avx2::k_block_terms(dtype, b, k, x, &v, mins, &mut acc, &mut accm);
        }
        avx2::k_finish(dtype, &acc, &accm, out);
    }
}

/// `avx2::k4_subs` with sub-block j's 32 weights in one zmm.
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
unsafe fn k4_subs(
    q5: bool,
    b: &[u8],
    wide: &impl Fn(usize) -> __m512i,
    sub: &mut impl FnMut(usize, __m512i),
) -> __m256i {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let (sc, m) = avx2::k4_scales_mins(b);
        let low = _mm512_set1_epi16(0x0f);
        // q5_k's fifth bits: byte l's bit j belongs to weight l of sub-block j.
        let qh = if q5 { wide(16) } else { _mm512_setzero_si512() };
        let qs = if q5 { 48 } else { 16 };
        for g in 0..4 {
            let z = wide(qs + 32 * g);
            for half in 0..2 {
                let j = 2 * g + half;
                let mut q = if half == 0 {
                    _mm512_and_si512(z, low)
                } else {
                    _mm512_srli_epi16::<4>(z)
                };
                if q5 {
                    let count = _mm_cvtsi32_si128(j as i32);
                    let bit = _mm512_and_si512(_mm512_srl_epi16(qh, count), _mm512_set1_epi16(1));
                    q = _mm512_or_si512(q, _mm512_slli_epi16::<4>(bit));
                }
                sub(j, _mm512_mullo_epi16(q, _mm512_set1_epi16(sc[j])));
            }
        }
        _mm256_loadu_si256(m.as_ptr() as *const __m256i)
    }
}

/// `avx2::q6_k_subs` with sub-block j's 32 weights in one zmm (its two halves' scales
/// in the low and high 16 lanes).
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
unsafe fn q6_k_subs(
    b: &[u8],
    wide: &impl Fn(usize) -> __m512i,
    sub: &mut impl FnMut(usize, __m512i),
) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let (low, three, bias) = (
            _mm512_set1_epi16(0x0f),
            _mm512_set1_epi16(3),
            _mm512_set1_epi16(32),
        );
        for h in 0..2 {
            let qh = wide(128 + 32 * h);
            let ql = [wide(64 * h), wide(64 * h + 32)];
            for c in 0..4 {
                let j = 4 * h + c;
                let count = _mm_cvtsi32_si128(2 * c as i32);
                let z = ql[c % 2];
                let lo = if c < 2 {
                    _mm512_and_si512(z, low)
                } else {
                    _mm512_srli_epi16::<4>(z)
                };
                let hi = _mm512_and_si512(_mm512_srl_epi16(qh, count), three);
                let q = _mm512_sub_epi16(_mm512_or_si512(lo, _mm512_slli_epi16::<4>(hi)), bias);
                let scale = _mm512_inserti64x4::<1>(
                    _mm512_castsi256_si512(_mm256_set1_epi16(b[192 + 2 * j] as i8 as i16)),
                    _mm256_set1_epi16(b[193 + 2 * j] as i8 as i16),
                );
                sub(j, _mm512_mullo_epi16(q, scale));
            }
        }
    }
}
