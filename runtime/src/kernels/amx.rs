//! Batched q8_0/q4_0/q4_1/q5_0/q5_1/q4_k/q5_k/q6_k matrix products on Intel AMX tiles
//! (`tdpbssd`, `tdpbf16ps`), for prefill (the q5 types and the k-quants in the bf16
//! form only: `kernels::tile_form`; the offset terms of q4_1, q5_1 and the k-quants in
//! a pass of their own, `offset_sums`; a k-quant's 32-weight sub-block is a block here,
//! its scales applied in the epilogue: `KIND`).
//!
//! One `tdpbssd` multiplies a 16-token × 32-byte tile of activation digits (one block
//! of 16 tokens, as `Q8Act::pack_tiles` lays them out) by an 8 × 64-byte tile of
//! weights (one block of 16 rows, four consecutive weights of a row side by side:
//! AMX's operand layout, which each row tile is decoded to once) into 16 × 16 exact
//! i32 sums, a row per token; one product per digit plane, then 255·hi + lo per
//! element gives the block sums. Those are the very integers the dot kernels form, and
//! they are scaled and added in the scalar reference's `Lanes8` order (block b into
//! lane b % 8, a product then an add, padding lanes add 0.0, then the `reduce8` tree),
//! so every output equals the dot path's bit for bit; the tests compare the two.
//! Each token's 16 results are adjacent in the output, so they are stored as they are.
//!
//! 13-bit activations take the bf16 form instead (`TileForm::Bf16`, where the CPU has
//! AMX-BF16): each value as 256·h and l in bf16, the weights as bf16, and both
//! `tdpbf16ps` products into one f32 tile, which holds the same exact block sum (every
//! partial sum is an integer below 2²⁴: this bound is what sets `ACT_MAX`). One sum
//! tile to store and one row to load per token instead of two and a combination:
//! fewer tile operations, which is what counts while another core shares the tile unit
//! (q4_0 prefill_probe with an AMX job on the other vCPU: median 525 against 428 tok/s
//! for the digits), and with its activation tiles loaded past L1 (`tileloaddt1`) the
//! faster form alone too (SmolLM2 q8_0 prefill_probe, alternated: 730 → 840 tok/s).
//! The digit form serves the 8-bit mode (one plane) and CPUs without AMX-BF16.
//!
//! Rust has no stable AMX intrinsics, so the five tile instructions are inline asm.
//! Linux hands out AMX state only on request (`arch_prctl(ARCH_REQ_XCOMP_PERM)`); a
//! kernel that refuses leaves this path unused.

use super::{tile_form, Band, Lines, Plain, Q8Act, TileForm, GEMM_TILE, GROUP};
use crate::quant::{DType, QK};
use std::arch::asm;
use std::arch::x86_64::*;

/// Rows of weights and tokens per tile product.
const TILE: usize = GEMM_TILE;

/// Elements of one block of a decoded row tile (the weight operand): 512 i8 (8 rows of
/// 64 bytes) for digits, 512 bf16 (16 rows of 64 bytes) for `TileForm::Bf16`.
const WBLOCK: usize = TILE * QK;

/// Rows of 64 bytes that start on cache lines, as `Lines` (the sum tiles' stores and
/// the epilogue's loads are whole lines).
#[repr(C, align(64))]
struct OnLines<T>(T);

/// Whether this CPU has AMX-TILE and AMX-INT8, AVX-512F/BW/VL for the scaling and the
/// weight decoding, and Linux granted the tile state to this process. Asked once.
pub(super) fn usable() -> bool {
    use std::sync::OnceLock;
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        // cpuid leaf 7 exists on every CPU with AVX2, which is checked first.
        let cpu = is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl")
            && __cpuid_count(7, 0).edx & (3 << 24) == 3 << 24;
        cpu && request_tile_state()
    })
}

/// Whether `usable()` and the CPU has AMX-BF16 (`tdpbf16ps`) and AVX-512BW (for
/// `bf16_parts`), for `TileForm::Bf16`.
pub(crate) fn has_bf16() -> bool {
    use std::sync::OnceLock;
    static OK: OnceLock<bool> = OnceLock::new();
    // cpuid leaf 7 EDX bit 22: AMX-BF16.
    *OK.get_or_init(|| {
        usable() && is_x86_feature_detected!("avx512bw") && __cpuid_count(7, 0).edx & (1 << 22) != 0
    })
}

/// `kernels::bf16_of` on AVX-512: 16 i32 lanes, each an integer of at most 8
/// significant bits, as their bf16 bit patterns.
#[inline]
#[target_feature(enable = "avx512f")]
fn bf16_bits(x: __m512i) -> __m256i {
    _mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(_mm512_castps_si512(
        _mm512_cvtepi32_ps(x),
    )))
}

/// `kernels::bf16_parts` on AVX-512, 16 values at a time (the same integers, converted
/// exactly, so the same bits).
///
/// # Safety
///
/// The CPU must have AVX-512F and AVX-512BW (`has_bf16` checks both).
#[target_feature(enable = "avx512f,avx512bw")]
pub(crate) unsafe fn bf16_parts(v: &[i16], h: &mut [u16], l: &mut [u16]) {
    let n = v.len();
    assert!(h.len() >= n && l.len() >= n);
    let mut i = 0;
    while i + 16 <= n {
        // Safety: 16 values within `v`, `h` and `l` (n ≤ their lengths).
        unsafe {
            let x = _mm512_cvtepi16_epi32(_mm256_loadu_si256(v.as_ptr().add(i) as *const __m256i));
            let hi = _mm512_srai_epi32::<8>(_mm512_add_epi32(x, _mm512_set1_epi32(128)));
            let hs = _mm512_slli_epi32::<8>(hi);
            _mm256_storeu_si256(h.as_mut_ptr().add(i) as *mut __m256i, bf16_bits(hs));
            _mm256_storeu_si256(
                l.as_mut_ptr().add(i) as *mut __m256i,
                bf16_bits(_mm512_sub_epi32(x, hs)),
            );
        }
        i += 16;
    }
    for j in i..n {
        (h[j], l[j]) = super::bf16_part(v[j]);
    }
}

#[cfg(target_os = "linux")]
fn request_tile_state() -> bool {
    const SYS_ARCH_PRCTL: i64 = 158;
    const ARCH_REQ_XCOMP_PERM: i64 = 0x1023;
    const XFEATURE_XTILEDATA: i64 = 18;
    let ret: i64;
    // Safety: arch_prctl only changes which extended states this process may use.
    unsafe {
        asm!("syscall",
            inlateout("rax") SYS_ARCH_PRCTL => ret,
            in("rdi") ARCH_REQ_XCOMP_PERM,
            in("rsi") XFEATURE_XTILEDATA,
            lateout("rcx") _, lateout("r11") _,
            options(nostack));
    }
    ret == 0
}

#[cfg(not(target_os = "linux"))]
fn request_tile_state() -> bool {
    false
}

/// The tile shapes: tmm0-1 weights (8 rows × 64 bytes), tmm2-3 the activation's high
/// and low digits (16 tokens × 32 bytes), tmm4-7 16 × 16 i32 sums (4-5 high, 6-7 low);
/// for bf16 products see `new`.
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

impl TileConfig {
    /// `bf16`: for `tdpbf16ps` (`TileForm::Bf16`), tmm0-1 are 16 pairs of weights × 16
    /// rows (16 × 64 bytes), tmm2-3 the activation's two bf16 planes (16 tokens × 32
    /// values) and tmm4-5 16 × 16 f32 sums.
    fn new(bf16: bool) -> TileConfig {
        let mut c = [0u8; 64];
        c[0] = 1; // palette 1
        let (w, x) = if bf16 { (16, 64) } else { (8, 32) };
        let shapes = [
            (w, 64u16),
            (w, 64),
            (16, x),
            (16, x),
            (16, 64),
            (16, 64),
            (16, 64),
            (16, 64),
        ];
        for (i, (rows, colsb)) in shapes.into_iter().enumerate() {
            c[16 + 2 * i..18 + 2 * i].copy_from_slice(&colsb.to_le_bytes());
            c[48 + i] = rows;
        }
        TileConfig(c)
    }
}

/// W[r] · x[t] into row r, token t of `y` for the whole 16-row tiles of `w` (`rows`
/// rows of `row_bytes`); returns how many rows it did (the rest is left to the dot
/// kernels). Only the types `tile_form` gives a form (q8_0, q4_0; q5_0 as bf16), else
/// 0. `x` must be packed in tiles
/// (`Q8Act::pack_tiles`).
///
/// # Safety
///
/// `usable()` must have returned true (the kernel table that holds this is
/// only handed out then).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,f16c")]
pub(super) unsafe fn gemm(
    dtype: DType,
    w: &[u8],
    interleaved: bool,
    rows: usize,
    cols: usize,
    x: &Q8Act,
    y: &mut Band,
) -> usize {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        // 13-bit activations (two bf16 planes, or two digit planes without AMX-BF16) or
        // 8-bit ones (the high digits only); q5_0 has the bf16 form only.
        let wide = x.wide();
        let Some(form) = tile_form(dtype, wide) else {
            return 0;
        };
        if rows < TILE {
            return 0;
        }
        let nb = cols / QK;
        let n = x.rows();
        let tiles = n.div_ceil(TILE);
        let row_bytes = w.len() / rows;
        let mode = match (form, wide) {
            (TileForm::Bf16, _) => BF16,
            (TileForm::Digits, true) => WIDE,
            (TileForm::Digits, false) => NARROW,
        };
        assert!(x.cols() == cols && y.tokens() == n && y.rows() >= rows);
        assert!(row_bytes * rows == w.len() && nb * QK == cols);
        // Whole tiles of tokens to load from, packed from this very activation.
        assert!(
            x.packed(form),
            "Q8Act::pack_tiles must run before a tile product"
        );
        let padded = tiles * TILE;
        assert!(x.tiled_d.len() >= padded * nb);
        match mode {
            BF16 => assert!(x.tiled_bf16.len() >= padded * cols * 2),
            WIDE => assert!(x.tiled.len() >= padded * cols * 2),
            _ => assert!(x.tiled.len() >= padded * cols),
        }
        let done = rows / TILE * TILE;
        // One row tile decoded to the weight operand, [block][k][row][4] bytes (digits) or
        // [block][k / 2][row][2] bf16, and its block scales, [block][row].
        // (q6_k: two operands per block, one per 16-weight half.)
        let kind = kind_of(dtype);
        let halves = if kind == HALVES { 2 } else { 1 };
        let mut wt_i8 = Lines::<i8>::default();
        let mut wt_bf16 = Lines::<u16>::default();
        if mode == BF16 {
            wt_bf16.resize(halves * nb * WBLOCK, 0);
        } else {
            wt_i8.resize(nb * WBLOCK, 0);
        }
        let mut sc = TileScales::new(nb, dtype);
        // Types with offset terms (q4_1, q5_1, q4_k, q5_k) are those with `m`.
        let offsets = !sc.m.is_empty();
        assert!(!offsets || x.tiled_s.len() >= padded * nb);
        // The k-quants have the bf16 form only, and are never interleaved.
        assert!(kind == PLAIN || (mode == BF16 && !interleaved));
        // Two blocks' 16 × 16 sums, each as [high digits, low digits].
        let mut c = OnLines([[[0i32; TILE * TILE]; 2]; 2]);
        let order: Vec<usize> = (0..8.min(nb)).flat_map(|k| (k..nb).step_by(8)).collect();
        // lanes[k][token][row]: the `Lanes8` accumulator k of one 16 × 16 output tile.
        // Zeroed once: every lane that has blocks is overwritten for each tile, and a lane
        // without blocks (fewer than 8) stays +0.0, which is what adding 0.0 would give.
        let mut lanes = OnLines([[[0f32; TILE]; TILE]; 8]);
        let cfg = TileConfig::new(mode == BF16);
        asm!("ldtilecfg [{0}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly));
        for r0 in (0..done).step_by(TILE) {
            let tile_rows = &w[r0 * row_bytes..(r0 + TILE) * row_bytes];
            if interleaved {
                // Two interleaved groups of 8 rows.
                for (h, g) in tile_rows.chunks_exact(GROUP * row_bytes).enumerate() {
                    // This function's features include the decoders'.
                    if mode == BF16 {
                        decode_group_bf16(dtype, g, nb, h, &mut wt_bf16, &mut sc)
                    } else {
                        decode_group(dtype, g, nb, h, &mut wt_i8, &mut sc)
                    }
                }
            } else {
                for (r, row) in tile_rows.chunks_exact(row_bytes).enumerate() {
                    if kind != PLAIN {
                        decode_row_k(dtype, row, r, &mut wt_bf16, &mut sc);
                    } else if mode == BF16 {
                        decode_row_bf16(dtype, row, r, &mut wt_bf16, &mut sc);
                    } else {
                        decode_row(dtype, row, r, &mut wt_i8, &mut sc);
                    }
                }
            }
            let wt = if mode == BF16 {
                bytes_of(&wt_bf16)
            } else {
                bytes_of(&wt_i8)
            };
            for tt in 0..tiles {
                let (c, lanes) = (&mut c.0, &mut lanes.0);
                let mut sums = match (mode, kind) {
                    (BF16, SCALED) => tile::<BF16, SCALED>(wt, &sc, x, tt, &order, c, lanes),
                    (BF16, HALVES) => tile::<BF16, HALVES>(wt, &sc, x, tt, &order, c, lanes),
                    (BF16, _) => tile::<BF16, PLAIN>(wt, &sc, x, tt, &order, c, lanes),
                    (WIDE, _) => tile::<WIDE, PLAIN>(wt, &sc, x, tt, &order, c, lanes),
                    _ => tile::<NARROW, PLAIN>(wt, &sc, x, tt, &order, c, lanes),
                };
                // The offset terms: q4_1's and q5_1's are added (`dot_q4_1`), the
                // k-quants' mins subtracted (`dot_k4`).
                if offsets && kind == SCALED {
                    let m = offset_sums::<true>(&sc, x, tt, &order, lanes);
                    for (s, m) in sums.iter_mut().zip(m) {
                        *s = _mm512_sub_ps(*s, m);
                    }
                } else if offsets {
                    let m = offset_sums::<false>(&sc, x, tt, &order, lanes);
                    for (s, m) in sums.iter_mut().zip(m) {
                        *s = _mm512_add_ps(*s, m);
                    }
                }
                let t0 = tt * TILE;
                for (t, v) in sums.iter().enumerate().take(n - t0) {
                    _mm512_storeu_ps(y.span(t0 + t, r0, TILE).as_mut_ptr(), *v);
                }
            }
        }
        asm!("tilerelease", options(nostack, nomem));
        done
    }
}

/// A decoded row tile's per-block factors, [block][row] (a k-quant's block is one of
/// its 32-weight sub-blocks: block 8k + j is sub-block j of super-block k), each empty
/// where the type has none:
/// - `d`: the scale (k-quants: the super-block's d);
/// - `m`: q4_1's and q5_1's offset m, or a k-quant's dmin;
/// - `sc`: q4_k's and q5_k's sub-block scale, q6_k's first half's (integers, exact);
/// - `sc2`: q6_k's second half's scale;
/// - `mins`: q4_k's and q5_k's sub-block min (an integer, exact).
#[derive(Default)]
struct TileScales {
    d: Lines<f32>,
    m: Lines<f32>,
    sc: Lines<f32>,
    sc2: Lines<f32>,
    mins: Lines<f32>,
}

impl TileScales {
    fn new(nb: usize, dtype: DType) -> TileScales {
        let mut sc = TileScales::default();
        let len = nb * TILE;
        sc.d.resize(len, 0.0);
        match dtype {
            _ if has_offsets(dtype) => sc.m.resize(len, 0.0),
            DType::Q4K | DType::Q5K => {
                sc.m.resize(len, 0.0);
                sc.sc.resize(len, 0.0);
                sc.mins.resize(len, 0.0);
            }
            DType::Q6K => {
                sc.sc.resize(len, 0.0);
                sc.sc2.resize(len, 0.0);
            }
            _ => {}
        }
        sc
    }
}

/// Whether blocks of `dtype` carry a per-block offset m after their scale (q4_1 and
/// q5_1: x = d·q + m), which `offset_sums` adds.
fn has_offsets(dtype: DType) -> bool {
    matches!(dtype, DType::Q4_1 | DType::Q5_1)
}

/// How `tile` turns a block's exact sum(s) into its term before d·d_x, per type:
/// - `PLAIN` (q8_0, q4_0, q4_1, q5_0): the sum itself, isum·(d·d_x);
/// - `SCALED` (q4_k, q5_k): (sc·isum)·(d·d_x), sc·isum rounded to f32 once, as the
///   scalar's i32 product converted (an f32 product of two exact integers rounds the
///   same exact value the same way);
/// - `HALVES` (q6_k): (sc_a·Σ_a + sc_b·Σ_b)·(d·d_x), the two 16-weight halves' sums
///   from two products, combined in i32 (the scalar's, exact) before one conversion.
const PLAIN: u8 = 0;
const SCALED: u8 = 1;
const HALVES: u8 = 2;

fn kind_of(dtype: DType) -> u8 {
    match dtype {
        DType::Q4K | DType::Q5K => SCALED,
        DType::Q6K => HALVES,
        _ => PLAIN,
    }
}

/// What `tile` multiplies: 8-bit digits (one plane), 13-bit digits (two planes, two
/// i32 sums per block) or bf16 parts (two planes into one f32 sum per block).
const NARROW: u8 = 0;
const WIDE: u8 = 1;
const BF16: u8 = 2;
/// `product`'s bf16 form for q6_k: two weight operands a block (its halves, each with
/// the other half's weights zero), into two f32 sum tiles.
const BF16_HALVES: u8 = 3;

/// The bytes of a buffer of plain numbers.
fn bytes_of<T: Plain>(x: &[T]) -> &[u8] {
    // Safety: plain numbers have no padding, and u8 has no alignment to meet.
    unsafe { std::slice::from_raw_parts(x.as_ptr() as *const u8, std::mem::size_of_val(x)) }
}

/// Runs `$body` for t = 0..16 written out, so that arrays indexed by t stay in registers.
macro_rules! each_token {
    ($t:ident => $body:block) => {
        each_token!(@ $t $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $t:ident $body:block; $($i:literal)*) => {
        $( { #[allow(non_upper_case_globals)] const $t: usize = $i; $body } )*
    };
}

/// One 16 × 16 output tile: the decoded row tile `wt` (its scales `dw`, [block][row])
/// against token tile `tt`, every block; returns the 16 tokens' sums (`reduce8` of the
/// lanes) as 16 rows each.
///
/// Blocks go in lane-major `order` (0, 8, 16, …, then 1, 9, …): each `Lanes8` lane is
/// still summed in block order, and its 16 token accumulators stay in registers. A
/// three-stage pipeline runs along that order: while block i's sums are scaled and
/// added, block i + 1's tile is being stored and block i + 2's product runs. (Reading
/// a tile right after storing it waits for the store, and so does storing right after
/// the product.)
///
/// # Safety
///
/// The CPU must have `avx512f`, `avx2`, `f16c` (the `#[target_feature]` above): the kernel
/// tables that hold this, and its callers, are chosen only after detecting them.
#[target_feature(enable = "avx512f,avx2,f16c")]
unsafe fn tile<const MODE: u8, const KIND: u8>(
    wt: &[u8],
    sc: &TileScales,
    x: &Q8Act,
    tt: usize,
    order: &[usize],
    c: &mut [[[i32; TILE * TILE]; 2]; 2],
    lanes: &mut [[[f32; TILE]; TILE]; 8],
) -> [__m512; TILE] {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let nb = order.len();
        let dw = &sc.d[..];
        assert!(dw.len() >= nb * TILE && x.tiled_d.len() >= (tt + 1) * TILE * nb);
        match KIND {
            SCALED => assert!(sc.sc.len() >= nb * TILE),
            HALVES => assert!(sc.sc.len() >= nb * TILE && sc.sc2.len() >= nb * TILE),
            _ => {}
        }
        // The 16 tokens' scales of each block, side by side (`Q8Act::pack_tiles`).
        let dx = x.tiled_d.as_ptr().add(tt * TILE * nb);
        let blk = |i: usize| order[i];
        // Two sum tiles a block where there are two planes of digits or two halves.
        let two = MODE == WIDE || KIND == HALVES;
        let mode = if KIND == HALVES { BF16_HALVES } else { MODE };
        product(wt, x, tt, blk(0), 0, mode);
        if nb > 1 {
            product(wt, x, tt, blk(1), 1, mode);
        }
        store(0, &mut c[0], two);
        let mut acc = [_mm512_setzero_ps(); TILE];
        for i in 0..nb {
            let b = blk(i);
            if i + 2 < nb {
                product(wt, x, tt, blk(i + 2), i % 2, mode);
            }
            if i + 1 < nb {
                store((i + 1) % 2, &mut c[(i + 1) % 2], two);
            }
            let cb = &c[i % 2];
            let dwb = _mm512_loadu_ps(dw.as_ptr().add(b * TILE));
            // The rows' sub-block scales (k-quants), as f32 (`SCALED`) or i32 (`HALVES`).
            let load_or_zero = |v: &[f32], load: bool| {
                if load {
                    _mm512_loadu_ps(v.as_ptr().add(b * TILE))
                } else {
                    _mm512_setzero_ps()
                }
            };
            let scb = load_or_zero(&sc.sc, KIND != PLAIN);
            let sc2b = load_or_zero(&sc.sc2, KIND == HALVES);
            let (sci, sc2i) = (_mm512_cvtps_epi32(scb), _mm512_cvtps_epi32(sc2b));
            let dxv = _mm512_loadu_ps(dx.add(b * TILE));
            let mut quad = _mm512_setzero_ps();
            each_token!(t => {
                // isum · (d_w · d_x), then added: the scalar reference's arithmetic.
                // d_x of token t, spread over the row lanes: lane t % 4 of 128-bit lane
                // t / 4 (shuffles, not 16 broadcast loads: loads are what this loop is
                // short of).
                if t.is_multiple_of(4) {
                    quad = _mm512_shuffle_f32x4::<{ (t / 4 * 0x55) as i32 }>(dxv, dxv);
                }
                let scale = _mm512_mul_ps(dwb, _mm512_shuffle_ps::<{ (t % 4 * 0x55) as i32 }>(quad, quad));
                let ld = |p: &[i32; TILE * TILE]| {
                    _mm512_loadu_si512(p.as_ptr().add(t * TILE) as *const _)
                };
                // 255·h + l: Σw·x, exact in i32 (8-bit: h, on its coarser scale); bf16:
                // Σw·x itself, the same integer held exactly in f32.
                let sums = if KIND == SCALED {
                    _mm512_mul_ps(_mm512_castsi512_ps(ld(&cb[0])), scb)
                } else if KIND == HALVES {
                    // Each half's sum is an exact integer in f32, so converts exactly.
                    let a = _mm512_cvtps_epi32(_mm512_castsi512_ps(ld(&cb[0])));
                    let b = _mm512_cvtps_epi32(_mm512_castsi512_ps(ld(&cb[1])));
                    _mm512_cvtepi32_ps(_mm512_add_epi32(
                        _mm512_mullo_epi32(a, sci),
                        _mm512_mullo_epi32(b, sc2i),
                    ))
                } else if MODE == BF16 {
                    _mm512_castsi512_ps(ld(&cb[0]))
                } else {
                    let h = ld(&cb[0]);
                    let isum = if MODE == WIDE {
                        let l = ld(&cb[1]);
                        _mm512_add_epi32(_mm512_sub_epi32(_mm512_slli_epi32::<8>(h), h), l)
                    } else {
                        h
                    };
                    _mm512_cvtepi32_ps(isum)
                };
                acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(sums, scale));
            });
            end_lane(order, i, &mut acc, lanes);
        }
        reduce_lanes(lanes)
    }
}

/// After block `order[i]`: where its `Lanes8` lane is complete (the next block in
/// `order` goes to another lane, or there is none), keep the 16 tokens' accumulators
/// in `lanes` and start the next lane from zero. (`Lanes8::finish`'s 0.0 for lanes
/// past the last block changes nothing: see `Lanes8`.)
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
unsafe fn end_lane(
    order: &[usize],
    i: usize,
    acc: &mut [__m512; TILE],
    lanes: &mut [[[f32; TILE]; TILE]; 8],
) {
    let b = order[i];
    if i + 1 == order.len() || order[i + 1] % 8 != b % 8 {
        let lane = &mut lanes[b % 8];
        // Safety: each store is one row of 16 floats of `lane`; AVX-512F is the caller's.
        unsafe {
            each_token!(t => {
                _mm512_storeu_ps(lane[t].as_mut_ptr(), acc[t]);
                acc[t] = _mm512_setzero_ps();
            });
        }
    }
}

/// `reduce8` per token of the 8 lanes, a vector of its 16 rows at once.
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
unsafe fn reduce_lanes(lanes: &[[[f32; TILE]; TILE]; 8]) -> [__m512; TILE] {
    std::array::from_fn(|t| {
        // Safety: each load is one row of 16 floats of a lane; AVX-512F is the caller's.
        let l = |k: usize| unsafe { _mm512_loadu_ps(lanes[k][t].as_ptr()) };
        // Safety: as above.
        unsafe {
            _mm512_add_ps(
                _mm512_add_ps(_mm512_add_ps(l(0), l(4)), _mm512_add_ps(l(1), l(5))),
                _mm512_add_ps(_mm512_add_ps(l(2), l(6)), _mm512_add_ps(l(3), l(7))),
            )
        }
    })
}

/// The offset terms of one 16 × 16 output tile, as the scalar reference's second
/// accumulation, added in the same lane-major `order` into `Lanes8` lanes, then
/// `reduce8` per token:
/// - q4_1 and q5_1 (`K4` false): Σx · (m · d_x) per block (Σx of the token's whole values,
///   exact in f32); `tile`'s sums plus these are `dot_q4_1`'s `s.finish() +
///   sm.finish()`;
/// - q4_k and q5_k (`K4`): (min · Σx) · (dmin · d_x) per sub-block, min · Σx exact in
///   f32 (63 · 32 · 3825 < 2²⁴) as the scalar's i32; `tile`'s sums minus these are
///   `dot_k4`'s `s.finish() - sm.finish()`.
///
/// No tile product is involved: the terms need only the rows' factors (`sc`) and the
/// tokens' scales and sums (`Q8Act::pack_tiles`).
///
/// # Safety
///
/// The CPU must have `avx512f` (the `#[target_feature]` above): the kernel tables that
/// hold this, and its callers, are chosen only after detecting it.
#[target_feature(enable = "avx512f,avx2")]
unsafe fn offset_sums<const K4: bool>(
    sc: &TileScales,
    x: &Q8Act,
    tt: usize,
    order: &[usize],
    lanes: &mut [[[f32; TILE]; TILE]; 8],
) -> [__m512; TILE] {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let nb = order.len();
        let dm = &sc.m[..];
        assert!(dm.len() >= nb * TILE && (!K4 || sc.mins.len() >= nb * TILE));
        assert!(x.tiled_d.len() >= (tt + 1) * TILE * nb && x.tiled_s.len() >= (tt + 1) * TILE * nb);
        let dx = x.tiled_d.as_ptr().add(tt * TILE * nb);
        let sx = x.tiled_s.as_ptr().add(tt * TILE * nb);
        let mut acc = [_mm512_setzero_ps(); TILE];
        for (i, &b) in order.iter().enumerate() {
            let mb = _mm512_loadu_ps(dm.as_ptr().add(b * TILE));
            let minb = if K4 {
                _mm512_loadu_ps(sc.mins.as_ptr().add(b * TILE))
            } else {
                _mm512_setzero_ps()
            };
            let dxv = _mm512_loadu_ps(dx.add(b * TILE));
            let sxv = _mm512_loadu_ps(sx.add(b * TILE));
            let (mut dq, mut sq) = (_mm512_setzero_ps(), _mm512_setzero_ps());
            each_token!(t => {
                // Σx · (m · d_x), then added, as `dot_q4_1`'s `sm`; token t's d_x and Σx
                // spread over the row lanes as in `tile`.
                if t.is_multiple_of(4) {
                    dq = _mm512_shuffle_f32x4::<{ (t / 4 * 0x55) as i32 }>(dxv, dxv);
                    sq = _mm512_shuffle_f32x4::<{ (t / 4 * 0x55) as i32 }>(sxv, sxv);
                }
                let scale = _mm512_mul_ps(mb, _mm512_shuffle_ps::<{ (t % 4 * 0x55) as i32 }>(dq, dq));
                let s = _mm512_shuffle_ps::<{ (t % 4 * 0x55) as i32 }>(sq, sq);
                let s = if K4 { _mm512_mul_ps(minb, s) } else { s };
                acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(s, scale));
            });
            end_lane(order, i, &mut acc, lanes);
        }
        reduce_lanes(lanes)
    }
}

/// Start block b's 16 × 16 sums into the sum tiles of `slot` (tmm4 and tmm6, or tmm5
/// and tmm7): of both digit planes (`WIDE`, only the high one when `NARROW`), or of
/// both bf16 planes into one f32 tile (`BF16`, tmm4 or tmm5), or of both halves' bf16
/// products into two (`BF16_HALVES`); the weights alternate between tmm0 and tmm1.
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline]
unsafe fn product(wt: &[u8], x: &Q8Act, tt: usize, b: usize, slot: usize, mode: u8) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let nb = x.cols() / QK;
        macro_rules! go {
        ($tw:literal, $th:literal, $tl:literal) => {
            if mode == BF16_HALVES {
                // As `BF16` below, with the block's two half operands in turn into the
                // slot's two sum tiles.
                let at = (tt * nb + b) * 2 * TILE * QK;
                let tiled = &x.tiled_bf16[..];
                assert!(wt.len() >= (b + 1) * 4 * WBLOCK && at + 2 * TILE * QK <= tiled.len());
                asm!(
                    concat!("tileloadd tmm", $tw, ", [{w} + {s}*1]"),
                    "tileloaddt1 tmm2, [{h} + {s}*1]",
                    "tileloaddt1 tmm3, [{l} + {s}*1]",
                    concat!("tilezero tmm", $th),
                    concat!("tilezero tmm", $tl),
                    concat!("tdpbf16ps tmm", $th, ", tmm2, tmm", $tw),
                    concat!("tdpbf16ps tmm", $th, ", tmm3, tmm", $tw),
                    concat!("tileloadd tmm", $tw, ", [{w2} + {s}*1]"),
                    concat!("tdpbf16ps tmm", $tl, ", tmm2, tmm", $tw),
                    concat!("tdpbf16ps tmm", $tl, ", tmm3, tmm", $tw),
                    w = in(reg) wt.as_ptr().add(4 * WBLOCK * b),
                    w2 = in(reg) wt.as_ptr().add(4 * WBLOCK * b + 2 * WBLOCK),
                    h = in(reg) tiled.as_ptr().add(at),
                    l = in(reg) tiled.as_ptr().add(at + TILE * QK),
                    s = in(reg) 64usize,
                    options(nostack, readonly),
                )
            } else if mode == BF16 {
                // The 16 token rows of block b as 256·h, then as l (`pack_tiles`),
                // loaded with the hint not to keep them in L1 (`tileloaddt1`): in a pass
                // over one row tile each serves one product, while the weight tile
                // (twice the digits' bytes) serves every token tile, and stays in L1
                // only so. SmolLM2 q4_0 prefill_probe, alternated: median 802 → 923
                // tok/s. The digit form's operands fit L1 together, and the hint made
                // it slower.
                let at = (tt * nb + b) * 2 * TILE * QK;
                let tiled = &x.tiled_bf16[..];
                assert!(wt.len() >= (b + 1) * 2 * WBLOCK && at + 2 * TILE * QK <= tiled.len());
                asm!(
                    concat!("tileloadd tmm", $tw, ", [{w} + {s}*1]"),
                    "tileloaddt1 tmm2, [{h} + {s}*1]",
                    "tileloaddt1 tmm3, [{l} + {s}*1]",
                    concat!("tilezero tmm", $th),
                    concat!("tdpbf16ps tmm", $th, ", tmm2, tmm", $tw),
                    concat!("tdpbf16ps tmm", $th, ", tmm3, tmm", $tw),
                    w = in(reg) wt.as_ptr().add(2 * WBLOCK * b),
                    h = in(reg) tiled.as_ptr().add(at),
                    l = in(reg) tiled.as_ptr().add(at + TILE * QK),
                    s = in(reg) 64usize,
                    options(nostack, readonly),
                )
            } else {
                // The 16 token rows of block b, high digits then low (`pack_tiles`).
                let planes = if mode == WIDE { 2 } else { 1 };
                let at = (tt * nb + b) * planes * TILE * QK;
                let tiled = &x.tiled[..];
                assert!(wt.len() >= (b + 1) * WBLOCK && at + planes * TILE * QK <= tiled.len());
                if mode == WIDE {
                    asm!(
                        concat!("tileloadd tmm", $tw, ", [{w} + {sw}*1]"),
                        "tileloadd tmm2, [{h} + {sx}*1]",
                        "tileloadd tmm3, [{l} + {sx}*1]",
                        concat!("tilezero tmm", $th),
                        concat!("tilezero tmm", $tl),
                        concat!("tdpbssd tmm", $th, ", tmm2, tmm", $tw),
                        concat!("tdpbssd tmm", $tl, ", tmm3, tmm", $tw),
                        w = in(reg) wt.as_ptr().add(WBLOCK * b),
                        sw = in(reg) 64usize,
                        h = in(reg) tiled.as_ptr().add(at),
                        l = in(reg) tiled.as_ptr().add(at + TILE * QK),
                        sx = in(reg) QK,
                        options(nostack, readonly),
                    )
                } else {
                    asm!(
                        concat!("tileloadd tmm", $tw, ", [{w} + {sw}*1]"),
                        "tileloadd tmm2, [{h} + {sx}*1]",
                        concat!("tilezero tmm", $th),
                        concat!("tdpbssd tmm", $th, ", tmm2, tmm", $tw),
                        w = in(reg) wt.as_ptr().add(WBLOCK * b),
                        sw = in(reg) 64usize,
                        h = in(reg) tiled.as_ptr().add(at),
                        sx = in(reg) QK,
                        options(nostack, readonly),
                    )
                }
            }
        };
    }
        if slot == 0 {
            go!("0", "4", "6");
        } else {
            go!("1", "5", "7");
        }
    }
}

/// Store the sum tiles of `slot` into `c` ([high, low], 16 tokens × 16 rows' i32; the
/// low one only when `wide`).
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline]
unsafe fn store(slot: usize, c: &mut [[i32; TILE * TILE]; 2], wide: bool) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let (h, l) = (c[0].as_mut_ptr(), c[1].as_mut_ptr());
        let sc = 64usize;
        match (slot, wide) {
            (0, true) => asm!("tilestored [{h} + {sc}*1], tmm4", "tilestored [{l} + {sc}*1], tmm6",
            h = in(reg) h, l = in(reg) l, sc = in(reg) sc, options(nostack)),
            (0, false) => asm!("tilestored [{h} + {sc}*1], tmm4",
            h = in(reg) h, sc = in(reg) sc, options(nostack)),
            (_, true) => asm!("tilestored [{h} + {sc}*1], tmm5", "tilestored [{l} + {sc}*1], tmm7",
            h = in(reg) h, l = in(reg) l, sc = in(reg) sc, options(nostack)),
            (_, false) => asm!("tilestored [{h} + {sc}*1], tmm5",
            h = in(reg) h, sc = in(reg) sc, options(nostack)),
        }
    }
}

/// Row r (0..16) of a row tile, as stored (not interleaved), into the weight operand
/// `wt` (weight j of block b at [b][j / 4][r][j % 4]; q4_0: nibble − 8) and its scales
/// into `sc.d` ([block][row]), q4_1's offsets m into `sc.m` likewise. Only for
/// matrices whose row count is not a multiple of 8 (`Weight::new` interleaves all rows
/// or none), so plain.
#[inline(always)]
fn decode_row(dtype: DType, row: &[u8], r: usize, wt: &mut [i8], sc: &mut TileScales) {
    decode_row_as::<_, 4>(dtype, row, r, wt, sc, |v| v as i8);
}

/// `decode_row` for any operand layout that puts `G` consecutive weights of a row side
/// by side ([block][j / G][row][j % G]: 4 bytes for `tdpbssd`, 2 bf16 for `tdpbf16ps`),
/// each weight as `put` makes it.
#[inline(always)]
fn decode_row_as<T, const G: usize>(
    dtype: DType,
    row: &[u8],
    r: usize,
    wt: &mut [T],
    sc: &mut TileScales,
    put: impl Fn(i32) -> T,
) {
    let bs = dtype.block().1;
    for (b, blk) in row.chunks_exact(bs).enumerate() {
        sc.d[b * TILE + r] = half::f16::from_le_bytes([blk[0], blk[1]]).to_f32();
        if has_offsets(dtype) {
            sc.m[b * TILE + r] = half::f16::from_le_bytes([blk[2], blk[3]]).to_f32();
        }
        for j in 0..QK {
            wt[b * WBLOCK + j / G * (TILE * G) + G * r + j % G] = put(stored_weight(dtype, blk, j));
        }
    }
}

/// Weight j of a stored q8_0, q4_0, q4_1, q5_0 or q5_1 block (q4_0: nibble − 8, byte j
/// holds weights j and j + 16; q4_1: the nibble itself, after d and m; q5_0: q4_0's
/// nibbles with bit j of `qh` on top, − 16; q5_1: q5_0's without the − 16, after d and
/// m).
#[inline(always)]
fn stored_weight(dtype: DType, blk: &[u8], j: usize) -> i32 {
    match dtype {
        DType::Q8_0 => blk[2 + j] as i8 as i32,
        DType::Q4_1 => (blk[4 + j % 16] >> (4 * (j / 16)) & 0x0f) as i32,
        DType::Q5_0 => {
            let qh = u32::from_le_bytes([blk[2], blk[3], blk[4], blk[5]]);
            let nib = (blk[6 + j % 16] >> (4 * (j / 16)) & 0x0f) as i32;
            (nib | (((qh >> j) & 1) as i32) << 4) - 16
        }
        DType::Q5_1 => {
            let qh = u32::from_le_bytes([blk[4], blk[5], blk[6], blk[7]]);
            let nib = (blk[8 + j % 16] >> (4 * (j / 16)) & 0x0f) as i32;
            nib | (((qh >> j) & 1) as i32) << 4
        }
        _ => (blk[2 + j % 16] >> (4 * (j / 16)) & 0x0f) as i32 - 8,
    }
}

/// Group h (rows 8h..8h + 8) of a row tile, in `interleave8` groups, into the weight
/// operand `wt` and its scales into `sc` (as `decode_row`). Chunk c of a block holds
/// each row's payload bytes 2c and 2c + 1, so interleaving the 16-bit units of chunks
/// 2k and 2k + 1 gives bytes 4k..4k + 4 of rows 0..4, then of rows 4..8: operand row k.
///
/// # Safety
///
/// The CPU must have AVX2 and F16C (`gemm`, whose features include them, is
/// the caller).
#[inline(always)]
unsafe fn decode_group(
    dtype: DType,
    g: &[u8],
    nb: usize,
    h: usize,
    wt: &mut [i8],
    sc: &mut TileScales,
) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        // q4_0's nibbles are offset by 8, q4_1's not (its m is added in `tile`).
        let bias = if dtype == DType::Q4_1 { 0 } else { 8 };
        each_group_block(dtype, g, nb, h, wt, sc, |blk, out| {
            // Sound under the function contract: every load is within `blk` (16 + 16·chunks = bs·8 bytes) and every
            // store within `out` (8 operand rows of 64 bytes); the features are the caller's.
            {
                let chunk =
                    |c: usize| _mm_loadu_si128(blk.as_ptr().add(16 + 16 * c) as *const __m128i);
                // Rows 0..4 and 4..8 of operand row k go to bytes 32h..32h + 32 of it.
                let put = |out: &mut [i8], k: usize, v: [__m128i; 2]| {
                    let o = out.as_mut_ptr().add(64 * k + 32 * h);
                    _mm_storeu_si128(o as *mut __m128i, v[0]);
                    _mm_storeu_si128(o.add(16) as *mut __m128i, v[1]);
                };
                let pairs = |k: usize| {
                    let (p, q) = (chunk(2 * k), chunk(2 * k + 1));
                    [_mm_unpacklo_epi16(p, q), _mm_unpackhi_epi16(p, q)]
                };
                match dtype {
                    DType::Q8_0 => (0..8).for_each(|k| put(out, k, pairs(k))),
                    _ => {
                        for k in 0..4 {
                            let [a, b] = pairs(k).map(|v| q4_weights(v, bias));
                            put(out, k, [a[0], b[0]]);
                            put(out, k + 4, [a[1], b[1]]);
                        }
                    }
                }
            }
        })
    }
}

/// The frame of the group decoders: group h's blocks in turn, each block's 8 row
/// scales into `sc.d` ([block][row], rows 8h..8h + 8) and, for q4_1 and q5_1, its 8
/// offsets m (chunk 0 of its payload) into `sc.m` likewise, then `body(the block's
/// bytes, its slice of the operand)`. For those types the bytes start 16 later, past the offsets, so
/// that its nibble chunks sit where q4_0's do.
///
/// # Safety
///
/// The CPU must have F16C.
#[inline(always)]
unsafe fn each_group_block<T>(
    dtype: DType,
    g: &[u8],
    nb: usize,
    h: usize,
    wt: &mut [T],
    sc: &mut TileScales,
    mut body: impl FnMut(&[u8], &mut [T]),
) {
    let bs = dtype.block().1;
    let offsets = has_offsets(dtype);
    assert!(g.len() == GROUP * bs * nb && wt.len() >= nb * WBLOCK && sc.d.len() >= nb * TILE);
    assert!(h < 2 && (!offsets || sc.m.len() >= nb * TILE));
    for b in 0..nb {
        let blk = &g[b * GROUP * bs..(b + 1) * GROUP * bs];
        // Safety: 8 f16 scales at the start of `blk` (and for q4_1 8 offsets right after
        // them), 8 floats within `sc.d` and `sc.m` (checked above); F16C is the caller's.
        unsafe {
            let scales = _mm256_cvtph_ps(_mm_loadu_si128(blk.as_ptr() as *const __m128i));
            _mm256_storeu_ps(sc.d.as_mut_ptr().add(b * TILE + GROUP * h), scales);
            if offsets {
                let m = _mm256_cvtph_ps(_mm_loadu_si128(blk.as_ptr().add(16) as *const __m128i));
                _mm256_storeu_ps(sc.m.as_mut_ptr().add(b * TILE + GROUP * h), m);
            }
        }
        let payload = if offsets { &blk[16..] } else { blk };
        body(payload, &mut wt[b * WBLOCK..(b + 1) * WBLOCK]);
    }
}

/// Nibble bytes as weights (nibble − `bias`: 8 for q4_0, 0 for q4_1): [low nibbles,
/// high nibbles] (byte j holds weights j and j + 16).
///
/// # Safety
///
/// Only for callers compiled with the CPU features its intrinsics need (it is inlined into
/// them), on a CPU that has them.
#[inline(always)]
unsafe fn q4_weights(v: __m128i, bias: i8) -> [__m128i; 2] {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let (m, bias) = (_mm_set1_epi8(0x0f), _mm_set1_epi8(bias));
        [
            _mm_sub_epi8(_mm_and_si128(v, m), bias),
            _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16::<4>(v), m), bias),
        ]
    }
}

/// Lane n: the bf16 bits of the weight n − `bias` (8: q4_0; 0: q4_1), for `vpermw`.
const fn bf16_of_nibble(bias: i32) -> __m256i {
    let mut t = [0u16; 16];
    let mut n = 0;
    while n < 16 {
        t[n] = super::bf16_of(n as i32 - bias);
        n += 1;
    }
    // Safety: 16 u16 are the 32 bytes of a __m256i.
    unsafe { std::mem::transmute::<[u16; 16], __m256i>(t) }
}

/// Lane n: the bf16 bits of the q5_0 weight n − 16, for `vpermt2w` (two halves).
const fn bf16_of_q5(bias: i32) -> [__m256i; 2] {
    let mut t = [[0u16; 16]; 2];
    let mut n = 0;
    while n < 32 {
        t[n / 16][n % 16] = super::bf16_of(n as i32 - bias);
        n += 1;
    }
    // Safety: 16 u16 are the 32 bytes of a __m256i.
    unsafe {
        [
            std::mem::transmute::<[u16; 16], __m256i>(t[0]),
            std::mem::transmute::<[u16; 16], __m256i>(t[1]),
        ]
    }
}

/// A q8_0, q4_0, q4_1, q5_0 or q5_1 row r (0..16) of a row tile, as stored, into the bf16
/// weight operand (weight j of block b at [b][j / 2][r][j % 2]) and its scales into
/// `sc` ([block][row]), q4_1's and q5_1's offsets too; as `decode_row`.
#[inline(always)]
fn decode_row_bf16(dtype: DType, row: &[u8], r: usize, wt: &mut [u16], sc: &mut TileScales) {
    decode_row_as::<_, 2>(dtype, row, r, wt, sc, super::bf16_of);
}

/// Row r (0..16) of a q4_k, q5_k or q6_k row tile into the bf16 weight operand (as
/// `decode_row_bf16`, block 8k + j being sub-block j of super-block k) and its factors
/// into `sc` (`TileScales`). q6_k's block has two operands, [half][j / 2][r][j % 2],
/// each holding its 16 weights and zeros for the other half's (never written: the
/// buffer starts zeroed), so that its two products give the halves' sums.
///
/// # Safety
///
/// The CPU must have AVX-512F/BW/VL (`gemm`, whose features include them, is the
/// caller).
#[inline(always)]
unsafe fn decode_row_k(dtype: DType, row: &[u8], r: usize, wt: &mut [u16], sc: &mut TileScales) {
    let bs = dtype.block().1;
    let q6 = dtype == DType::Q6K;
    let f16 = |b: &[u8], at: usize| half::f16::from_le_bytes([b[at], b[at + 1]]).to_f32();
    assert!(r < TILE && wt.len() >= row.len() / bs * 8 * if q6 { 2 } else { 1 } * WBLOCK);
    // Weights j0..j0 + 16 of `q` (−128..=127, 8 significant bits at most) into
    // operand `op`'s pair rows j0 / 2.. for row r: each as the top half of its exact
    // f32, two to a u32, one u32 per pair row (16 u32 = 64 bytes apart).
    let put = |wt: &mut [u16], op: usize, q: &[i8; 32], j0: usize| {
        // Safety: the last u32 written is op·WBLOCK + (j0/2 + 7)·32 + 2r (+ 1), within
        // `wt` (checked above); the features are the caller's.
        unsafe {
            let v = _mm_loadu_si128(q.as_ptr().add(j0) as *const __m128i);
            let f = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
            let bf = _mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(_mm512_castps_si512(f)));
            let pair_rows = _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112);
            let at = op * WBLOCK + j0 / 2 * (2 * TILE) + 2 * r;
            _mm256_i32scatter_epi32::<4>(wt.as_mut_ptr().add(at) as *mut i32, pair_rows, bf);
        }
    };
    for (k, blk) in row.chunks_exact(bs).enumerate() {
        for j in 0..8 {
            let b = 8 * k + j;
            let at = b * TILE + r;
            if q6 {
                let (q, s) = crate::quant::q6_k_sub(blk, j);
                sc.d[at] = f16(blk, 208);
                sc.sc[at] = s[0] as f32;
                sc.sc2[at] = s[1] as f32;
                put(wt, 2 * b, &q, 0);
                put(wt, 2 * b + 1, &q, 16);
            } else {
                let (q, s, m) = crate::quant::k4_sub(dtype == DType::Q5K, blk, j);
                sc.d[at] = f16(blk, 0);
                sc.m[at] = f16(blk, 2);
                sc.sc[at] = s as f32;
                sc.mins[at] = m as f32;
                // 0..=31: the same bits as i8.
                let q = q.map(|q| q as i8);
                put(wt, b, &q, 0);
                put(wt, b, &q, 16);
            }
        }
    }
}

/// Group h (rows 8h..8h + 8) of a q8_0, q4_0, q4_1, q5_0 or q5_1 row tile, in
/// `interleave8` groups, into the bf16 weight operand and its scales (and offsets) into
/// `sc` (as `decode_row_bf16`). Chunk c of a block holds each row's payload bytes 2c and 2c + 1. For q8_0 those are weights 2c
/// and 2c + 1 of rows 0..8 in operand order: pair row c. For q4_0 their low nibbles
/// are (pair row c), and their high nibbles are weights 2c + 16 and 2c + 17 (pair row
/// c + 8).
///
/// # Safety
///
/// The CPU must have AVX-512F/BW/VL, AVX2 and F16C (`gemm`, whose features
/// include them, is the caller).
#[inline(always)]
unsafe fn decode_group_bf16(
    dtype: DType,
    g: &[u8],
    nb: usize,
    h: usize,
    wt: &mut [u16],
    sc: &mut TileScales,
) {
    // Safety: the caller keeps this function's `# Safety` contract, which
    // is all that the operations below rely on.
    unsafe {
        let nibble_table = if dtype == DType::Q4_1 {
            const { bf16_of_nibble(0) }
        } else {
            const { bf16_of_nibble(8) }
        };
        let q5_table = if dtype == DType::Q5_1 {
            const { bf16_of_q5(0) }
        } else {
            const { bf16_of_q5(16) }
        };
        each_group_block(dtype, g, nb, h, wt, sc, |blk, out| {
            // Sound under the function contract: every load is within `blk` (16 + 16·chunks = bs·8 bytes) and every
            // store within `out` (16 pair rows of 16 values); the features are the caller's.
            {
                if dtype == DType::Q8_0 {
                    // 16 weights (i8) as bf16 (exact: 8 significant bits at most).
                    for c in 0..16 {
                        let w = _mm_loadu_si128(blk.as_ptr().add(16 + 16 * c) as *const __m128i);
                        let bf = bf16_bits(_mm512_cvtepi8_epi32(w));
                        _mm256_storeu_si256(
                            out.as_mut_ptr().add(32 * c + 16 * h) as *mut __m256i,
                            bf,
                        );
                    }
                    return;
                }
                let m = _mm_set1_epi8(0x0f);
                if matches!(dtype, DType::Q5_0 | DType::Q5_1) {
                    // Chunks 0 and 1 hold each row's qh, low and high 16 bits; chunks
                    // 2..10 its nibble pairs as q4_0's chunks 0..8 (q5_1: past its
                    // offsets, `each_group_block`). Weight j of row r is nibble + 16·bit
                    // j of qh, looked up as the bf16 of that − 16 (q5_1: of that).
                    // Each row's half of qh, twice (the two weights of a pair).
                    let twice = |c: usize| {
                        let v = _mm256_cvtepu16_epi32(_mm_loadu_si128(
                            blk.as_ptr().add(16 + 16 * c) as *const __m128i,
                        ));
                        _mm256_or_si256(v, _mm256_slli_epi32::<16>(v))
                    };
                    let (lo, hi) = (twice(0), twice(1));
                    let one = _mm256_set1_epi16(1);
                    let put = |out: &mut [u16], k: usize, nibbles: __m128i, qh: __m256i, c: i16| {
                        // Bits 2c and 2c + 1 of the half for the pair's two weights.
                        let shift = _mm256_setr_epi16(
                            c,
                            c + 1,
                            c,
                            c + 1,
                            c,
                            c + 1,
                            c,
                            c + 1,
                            c,
                            c + 1,
                            c,
                            c + 1,
                            c,
                            c + 1,
                            c,
                            c + 1,
                        );
                        let bit = _mm256_and_si256(_mm256_srlv_epi16(qh, shift), one);
                        let idx = _mm256_or_si256(
                            _mm256_cvtepu8_epi16(nibbles),
                            _mm256_slli_epi16::<4>(bit),
                        );
                        let bf = _mm256_permutex2var_epi16(q5_table[0], idx, q5_table[1]);
                        _mm256_storeu_si256(
                            out.as_mut_ptr().add(32 * k + 16 * h) as *mut __m256i,
                            bf,
                        );
                    };
                    for c in 0..8 {
                        let v = _mm_loadu_si128(blk.as_ptr().add(48 + 16 * c) as *const __m128i);
                        let bits = 2 * c as i16;
                        // Weights 2c, 2c + 1 (low nibbles, qh bits 2c..) and 2c + 16,
                        // 2c + 17 (high nibbles, bits 2c.. of qh's high half).
                        put(out, c, _mm_and_si128(v, m), lo, bits);
                        put(
                            out,
                            c + 8,
                            _mm_and_si128(_mm_srli_epi16::<4>(v), m),
                            hi,
                            bits,
                        );
                    }
                    return;
                }
                // 16 nibbles, each looked up as the bf16 of its weight (q4_0: nibble − 8,
                // q4_1: the nibble), into columns 8h..8h + 8 of pair row k (one permute
                // instead of three conversions).
                let put = |out: &mut [u16], k: usize, nibbles: __m128i| {
                    let bf = _mm256_permutexvar_epi16(_mm256_cvtepu8_epi16(nibbles), nibble_table);
                    _mm256_storeu_si256(out.as_mut_ptr().add(32 * k + 16 * h) as *mut __m256i, bf);
                };
                for c in 0..8 {
                    let v = _mm_loadu_si128(blk.as_ptr().add(16 + 16 * c) as *const __m128i);
                    put(out, c, _mm_and_si128(v, m));
                    put(out, c + 8, _mm_and_si128(_mm_srli_epi16::<4>(v), m));
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::interleave8;
    use crate::kernels::ACT_MAX;
    use crate::quant;

    /// `tdpbssd` on plain integers: activation rows (16 tokens × 32 digits, 32 apart)
    /// times the weight operand ([k][row][4]).
    fn tile_product(a: &[i8], w: &[i8]) -> [[i32; TILE]; TILE] {
        std::array::from_fn(|t| {
            std::array::from_fn(|r| {
                (0..QK)
                    .map(|j| a[t * QK + j] as i32 * w[j / 4 * 64 + 4 * r + j % 4] as i32)
                    .sum()
            })
        })
    }

    /// A deterministic stream of values in [−1, 1).
    fn values(mut seed: u64) -> impl FnMut() -> f32 {
        move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0
        }
    }

    /// A row tile (16 rows of `cols`) of random q8_0, q4_0, q4_1, q5_0 or q5_1 weights, as
    /// stored and as a model holds it (in `interleave8` groups or not).
    struct RowTile {
        dtype: DType,
        interleaved: bool,
        stored: Vec<u8>,
        held: Vec<u8>,
        row_bytes: usize,
    }

    impl RowTile {
        fn new(dtype: DType, cols: usize, interleaved: bool, f: &mut impl FnMut() -> f32) -> Self {
            let wf: Vec<f32> = (0..TILE * cols).map(|_| f()).collect();
            let mut stored = Vec::new();
            if matches!(dtype, DType::Q5_0 | DType::Q5_1) {
                // No quantizer writes q5: q8_0 blocks' scales (q5_1: twice, as d and
                // m), and payload bytes from the values (every qh bit and nibble
                // pattern occurs).
                quant::quantize(DType::Q8_0, &wf, &mut stored).unwrap();
                let q8 = std::mem::take(&mut stored);
                for (i, b) in q8.chunks_exact(34).enumerate() {
                    stored.extend_from_slice(&b[..2]);
                    if dtype == DType::Q5_1 {
                        stored.extend_from_slice(&b[..2]);
                    }
                    stored.extend((0..20).map(|k| b[2 + k] ^ b[12 + k] ^ (i * 37 + k) as u8));
                }
            } else {
                quant::quantize(dtype, &wf, &mut stored).unwrap();
            }
            if dtype == DType::Q8_0 {
                // A weight of −128, which a file may hold though our quantizer never
                // writes it: row 1, block 0, weight 5.
                let rb = stored.len() / TILE;
                stored[rb + 2 + 5] = 0x80;
            }
            let row_bytes = stored.len() / TILE;
            let mut held = stored.clone();
            if interleaved {
                interleave8(dtype, &mut held, row_bytes);
            }
            RowTile {
                dtype,
                interleaved,
                stored,
                held,
                row_bytes,
            }
        }

        fn block(&self, r: usize, b: usize) -> &[u8] {
            let bs = self.dtype.block().1;
            &self.stored[r * self.row_bytes + b * bs..][..bs]
        }

        /// Row r's weight j of block b, as stored (written out here, not taken from the
        /// code under test).
        fn weight(&self, r: usize, b: usize, j: usize) -> i32 {
            let blk = self.block(r, b);
            match self.dtype {
                DType::Q8_0 => blk[2 + j] as i8 as i32,
                DType::Q5_0 => quant::q5_quants(&blk[2..22])[j] as i32 - 16,
                DType::Q5_1 => quant::q5_quants(&blk[4..24])[j] as i32,
                DType::Q4_1 => (blk[4 + j % 16] >> (4 * (j / 16)) & 0x0f) as i32,
                _ => (blk[2 + j % 16] >> (4 * (j / 16)) & 0x0f) as i32 - 8,
            }
        }

        /// The weight operand as the code under test decodes it: by `group` (group h's
        /// bytes, h) where the tile is interleaved, by `row` (row r's bytes, r) where
        /// not; the decoded scales (and q4_1's offsets) are checked against the stored
        /// ones.
        fn decode<T: Copy + Default>(
            &self,
            group: impl Fn(&[u8], usize, &mut [T], &mut TileScales),
            row: impl Fn(&[u8], usize, &mut [T], &mut TileScales),
        ) -> Vec<T> {
            let nb = self.row_bytes / self.dtype.block().1;
            let mut wt = vec![T::default(); nb * WBLOCK];
            // q4_1's factors (d and m) for every type, m NaN until written.
            let mut sc = TileScales::new(nb, DType::Q4_1);
            sc.m.iter_mut().for_each(|m| *m = f32::NAN);
            if self.interleaved {
                for (h, g) in self.held.chunks_exact(GROUP * self.row_bytes).enumerate() {
                    group(g, h, &mut wt, &mut sc);
                }
            } else {
                for (r, bytes) in self.held.chunks_exact(self.row_bytes).enumerate() {
                    row(bytes, r, &mut wt, &mut sc);
                }
            }
            self.check_scales(&sc.d, &sc.m, nb);
            wt
        }

        /// The decoded scales `dw` ([block][row]) are the stored ones, and so are
        /// q4_1's offsets `dm` (the other types leave them alone).
        fn check_scales(&self, dw: &[f32], dm: &[f32], nb: usize) {
            for b in 0..nb {
                for r in 0..TILE {
                    let blk = self.block(r, b);
                    let d = half::f16::from_le_bytes([blk[0], blk[1]]).to_f32();
                    assert_eq!(dw[b * TILE + r], d, "{:?} scale {r} {b}", self.dtype);
                    let m = dm[b * TILE + r];
                    if has_offsets(self.dtype) {
                        let want = half::f16::from_le_bytes([blk[2], blk[3]]).to_f32();
                        assert_eq!(m, want, "{:?} offset {r} {b}", self.dtype);
                    } else {
                        assert!(m.is_nan(), "{:?} wrote an offset", self.dtype);
                    }
                }
            }
        }
    }

    /// The layouts alone, without AMX (so that any x86 machine with AVX2 checks them):
    /// `pack_tiles`' activation tiles times `decode_group`'s or `decode_row`'s weight
    /// operand, multiplied as `tdpbssd` does, give every block's exact Σw·x, and the
    /// decoded and packed scales are the stored ones.
    #[test]
    fn packed_operands_multiply_to_the_block_sums() {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c")) {
            return;
        }
        let (cols, n) = (96, 20); // 3 blocks; a whole token tile and a partial one
        let nb = cols / QK;
        let mut f = values(7);
        for dtype in [DType::Q8_0, DType::Q4_0, DType::Q4_1] {
            for interleaved in [false, true] {
                let w = RowTile::new(dtype, cols, interleaved, &mut f);
                let wt = w.decode(
                    // Safety: AVX2 and F16C were just detected.
                    |g, h, wt, sc| unsafe { decode_group(dtype, g, nb, h, wt, sc) },
                    |row, r, wt, sc| decode_row(dtype, row, r, wt, sc),
                );
                let xf: Vec<f32> = (0..n * cols).map(|_| f() * 3.0).collect();
                let mut x = Q8Act::default();
                x.quantize_bits(&xf, cols, 13);
                x.pack_forms([true, false]);
                for tt in 0..n.div_ceil(TILE) {
                    for b in 0..nb {
                        let at = (tt * nb + b) * 2 * TILE * QK;
                        let wb = &wt[b * WBLOCK..(b + 1) * WBLOCK];
                        let h = tile_product(&x.tiled[at..], wb);
                        let l = tile_product(&x.tiled[at + TILE * QK..], wb);
                        for t in 0..TILE.min(n - tt * TILE) {
                            let d = x.row(tt * TILE + t).d[b];
                            assert_eq!(x.tiled_d[(tt * nb + b) * TILE + t], d, "scale {t} {b}");
                            let s = x.row(tt * TILE + t).s[b];
                            assert_eq!(x.tiled_s[(tt * nb + b) * TILE + t], s as f32, "Σx {t} {b}");
                            let v = &x.row(tt * TILE + t).v[QK * b..QK * (b + 1)];
                            for r in 0..TILE {
                                let want: i32 =
                                    (0..QK).map(|j| w.weight(r, b, j) * v[j] as i32).sum();
                                assert_eq!(
                                    255 * h[t][r] + l[t][r],
                                    want,
                                    "{dtype:?} interleaved {interleaved} token {t} row {r} block {b}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// `decode_row_k`'s operand and factors, without AMX: every q4_k, q5_k and q6_k
    /// weight of a 16-row tile at its place as the bf16 of its value (q6_k's halves in
    /// their own operands, zeros in the other's), and the scales and mins as the
    /// blocks hold them (`quant::k4_sub`, `quant::q6_k_sub`, the scalar dots' own
    /// unpacking).
    #[test]
    fn k_quant_operands_hold_the_sub_blocks() {
        if !(is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl"))
        {
            return;
        }
        let bf = |u: u16| f32::from_bits((u as u32) << 16);
        let f16 = |b: &[u8], at: usize| half::f16::from_le_bytes([b[at], b[at + 1]]).to_f32();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut byte = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            (seed >> 56) as u8
        };
        for dtype in [DType::Q4K, DType::Q5K, DType::Q6K] {
            let (cols, bs) = (512, dtype.block().1);
            let row_bytes = cols / 256 * bs;
            let mut rows: Vec<u8> = (0..TILE * row_bytes).map(|_| byte()).collect();
            // Finite scales (f16 fields): d and dmin, or q6_k's d.
            let fields: &[usize] = if dtype == DType::Q6K { &[208] } else { &[0, 2] };
            for blk in rows.chunks_exact_mut(bs) {
                for &at in fields {
                    blk[at + 1] &= 0x3b;
                }
            }
            let q6 = dtype == DType::Q6K;
            let nb = cols / QK;
            let mut wt = vec![0u16; nb * WBLOCK * if q6 { 2 } else { 1 }];
            let mut sc = TileScales::new(nb, dtype);
            for (r, row) in rows.chunks_exact(row_bytes).enumerate() {
                // Safety: the features were just detected.
                unsafe { decode_row_k(dtype, row, r, &mut wt, &mut sc) };
            }
            for r in 0..TILE {
                for b in 0..nb {
                    let blk = &rows[r * row_bytes + b / 8 * bs..][..bs];
                    let at = b * TILE + r;
                    let got =
                        |op: usize, j: usize| bf(wt[op * WBLOCK + j / 2 * 32 + 2 * r + j % 2]);
                    if q6 {
                        let (q, s) = quant::q6_k_sub(blk, b % 8);
                        assert_eq!(
                            (sc.d[at], sc.sc[at], sc.sc2[at]),
                            (f16(blk, 208), s[0] as f32, s[1] as f32)
                        );
                        for (j, &q) in q.iter().enumerate() {
                            let (mine, other) = if j < 16 {
                                (2 * b, 2 * b + 1)
                            } else {
                                (2 * b + 1, 2 * b)
                            };
                            assert_eq!(got(mine, j), q as f32, "q6_k row {r} block {b} weight {j}");
                            assert_eq!(got(other, j), 0.0, "q6_k row {r} block {b} weight {j}");
                        }
                    } else {
                        let (q, s, m) = quant::k4_sub(dtype == DType::Q5K, blk, b % 8);
                        let want = (f16(blk, 0), f16(blk, 2), s as f32, m as f32);
                        assert_eq!((sc.d[at], sc.m[at], sc.sc[at], sc.mins[at]), want);
                        for (j, &q) in q.iter().enumerate() {
                            assert_eq!(
                                got(b, j),
                                q as f32,
                                "{dtype:?} row {r} block {b} weight {j}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// `TileForm::Bf16` likewise: `pack_tiles`' bf16 planes times `decode_group_bf16`'s
    /// or `decode_row_bf16`'s operand give every q8_0 and q4_0 block's exact Σw·x, and
    /// `tdpbf16ps`'s f32 accumulator rounds none of it: the products' magnitudes add up
    /// to less than 2²⁴ in every block (so does any partial sum, in any order), even
    /// for q8_0 weights of −128 against values of ±ACT_MAX. Every part is an integer
    /// that bf16 holds exactly.
    #[test]
    fn bf16_operands_multiply_to_the_block_sums() {
        let avx512 = is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("f16c");
        let (cols, n) = (96, 20);
        let nb = cols / QK;
        let mut f = values(11);
        let bf = |u: u16| f32::from_bits((u as u32) << 16) as f64;
        for (dtype, interleaved) in [
            DType::Q8_0,
            DType::Q4_0,
            DType::Q4_1,
            DType::Q5_0,
            DType::Q5_1,
        ]
        .into_iter()
        .flat_map(|d| [(d, false), (d, true)])
        {
            if interleaved && !avx512 {
                continue;
            }
            let w = RowTile::new(dtype, cols, interleaved, &mut f);
            let wt = w.decode(
                // Safety: the features were just detected.
                |g, h, wt, sc| unsafe { decode_group_bf16(dtype, g, nb, h, wt, sc) },
                |row, r, wt, sc| decode_row_bf16(dtype, row, r, wt, sc),
            );
            // Extreme values too: ±ACT_MAX and the part boundaries.
            let mut xf: Vec<f32> = (0..n * cols).map(|_| f() * 3.0).collect();
            xf[5] = 1e6;
            xf[40] = -1e6;
            let mut x = Q8Act::default();
            x.quantize_bits(&xf, cols, 13);
            x.pack_forms([false, true]);
            for tt in 0..n.div_ceil(TILE) {
                for b in 0..nb {
                    let at = (tt * nb + b) * 2 * TILE * QK;
                    let wb = &wt[b * WBLOCK..(b + 1) * WBLOCK];
                    for t in 0..TILE.min(n - tt * TILE) {
                        let v = &x.row(tt * TILE + t).v[QK * b..QK * (b + 1)];
                        for r in 0..TILE {
                            let (mut got, mut magnitude) = (0f64, 0f64);
                            for j in 0..QK {
                                let wj = bf(wb[j / 2 * 32 + 2 * r + j % 2]);
                                let h = bf(x.tiled_bf16[at + t * QK + j]);
                                let l = bf(x.tiled_bf16[at + TILE * QK + t * QK + j]);
                                assert_eq!(h + l, v[j] as f64, "parts of value {j}");
                                assert_eq!(h % 256.0, 0.0);
                                got += wj * h + wj * l;
                                magnitude += (wj * h).abs() + (wj * l).abs();
                            }
                            let want: i32 = (0..QK).map(|j| w.weight(r, b, j) * v[j] as i32).sum();
                            let at = format!(
                                "{dtype:?} interleaved {interleaved} token {t} row {r} block {b}"
                            );
                            assert_eq!(got, want as f64, "{at}");
                            assert!(magnitude < (1 << 24) as f64, "{at}: {magnitude}");
                        }
                    }
                }
            }
        }
        // The worst block: 32 weights of −128 times the largest parts of any value.
        let widest = (-ACT_MAX..=ACT_MAX)
            .map(|v| {
                let (h, l) = crate::kernels::bf16_part(v as i16);
                bf(h).abs() + bf(l).abs()
            })
            .fold(0f64, f64::max);
        assert!(32.0 * 128.0 * widest < (1 << 24) as f64, "{widest}");
        // The parts of every value, against their definition, on the path in use.
        let v: Vec<i16> = (-ACT_MAX..=ACT_MAX).map(|v| v as i16).collect();
        let (mut h, mut l) = (vec![0u16; v.len()], vec![0u16; v.len()]);
        crate::kernels::bf16_parts(&v, &mut h, &mut l);
        for ((&v, &h), &l) in v.iter().zip(&h).zip(&l) {
            let hi = (v as i32 + 128).div_euclid(256);
            assert!((-15..=15).contains(&hi));
            assert_eq!(bf(h), 256.0 * hi as f64, "{v}");
            assert_eq!(bf(l), (v as i32 - 256 * hi) as f64, "{v}");
        }
    }
}
