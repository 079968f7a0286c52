//! Batched q8_0/q4_0 matrix products on Intel AMX tiles (`tdpbssd`), for prefill.
//!
//! One `tdpbssd` multiplies a 16-row × 32-byte tile of weights (one block of 16 rows)
//! by an 8 × 64-byte tile of activation digits (one block of 16 tokens, four
//! consecutive digits of a token side by side: the layout `PackedAct` holds) into
//! 16 × 16 exact i32 sums; one product per digit plane, then 255·hi + lo per element
//! gives the block sums. Those are the very integers the dot kernels form, and they are
//! scaled and added in the scalar reference's `Lanes8` order (block b into lane b % 8,
//! a product then an add, padding lanes add 0.0, then the `reduce8` tree), so every
//! output equals the dot path's bit for bit; the tests compare the two.
//!
//! Rust has no stable AMX intrinsics, so the five tile instructions are inline asm.
//! Linux hands out AMX state only on request (`arch_prctl(ARCH_REQ_XCOMP_PERM)`); a
//! kernel that refuses leaves this path unused.

use super::{Band, PackedAct, GROUP};
use crate::quant::{DType, QK};
use std::arch::asm;
use std::arch::x86_64::*;

/// Rows of weights and tokens per tile product.
const TILE: usize = 16;

/// Whether this CPU has AMX-TILE and AMX-INT8, AVX-512F for the scaling, and Linux
/// granted the tile state to this process. Asked once.
pub(super) fn usable() -> bool {
    use std::sync::OnceLock;
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        // cpuid leaf 7 exists on every CPU with AVX2, which is checked first.
        let cpu = is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("avx512f")
            && __cpuid_count(7, 0).edx & (3 << 24) == 3 << 24;
        cpu && request_tile_state()
    })
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

/// The tile shapes: tmm0-1 weights (16 rows × 32 bytes), tmm2-3 the activation's high
/// and low digits (8 rows × 64 bytes), tmm4-7 16 × 16 i32 sums (4-5 high, 6-7 low).
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

impl TileConfig {
    fn new() -> TileConfig {
        let mut c = [0u8; 64];
        c[0] = 1; // palette 1
        let shapes = [
            (16u8, 32u16),
            (16, 32),
            (8, 64),
            (8, 64),
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
/// kernels).
/// Only q8_0 and q4_0.
///
/// Safety: `usable()` must have returned true (the kernel table that holds this is
/// only handed out then).
#[target_feature(enable = "avx512f,avx2,f16c")]
pub(super) unsafe fn gemm(
    dtype: DType,
    w: &[u8],
    interleaved: bool,
    rows: usize,
    cols: usize,
    x: &PackedAct,
    y: &mut Band,
) -> usize {
    if !matches!(dtype, DType::Q8_0 | DType::Q4_0) || rows < TILE {
        return 0;
    }
    let nb = cols / QK;
    let n = x.n;
    let row_bytes = w.len() / rows;
    assert!(x.nb == nb && y.tokens() == n && y.rows() >= rows && row_bytes * rows == w.len());
    let done = rows / TILE * TILE;
    // 16-bit activations (two digit planes) or 8-bit ones (the high digits only).
    let wide = x.wide();
    // One row tile decoded to i8 (16 × cols) and its block scales, [block][row].
    let mut a = vec![0i8; TILE * cols];
    let mut dw = vec![0f32; nb * TILE];
    // Two blocks' 16 × 16 sums, each as [high digits, low digits].
    let mut c = [[[0i32; TILE * TILE]; 2]; 2];
    let order: Vec<usize> = (0..8.min(nb)).flat_map(|k| (k..nb).step_by(8)).collect();
    // lanes[k][row][token]: the `Lanes8` accumulator k of one 16 × 16 output tile.
    // Zeroed once: every lane that has blocks is overwritten for each tile, and a lane
    // without blocks (fewer than 8) stays +0.0, which is what adding 0.0 would give.
    let mut lanes = [[[0f32; TILE]; TILE]; 8];
    let cfg = TileConfig::new();
    asm!("ldtilecfg [{0}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly));
    for r0 in (0..done).step_by(TILE) {
        if interleaved {
            // Two interleaved groups of 8 rows.
            for (h, (a, g)) in a
                .chunks_exact_mut(GROUP * cols)
                .zip(w[r0 * row_bytes..(r0 + TILE) * row_bytes].chunks_exact(GROUP * row_bytes))
                .enumerate()
            {
                decode_group(dtype, g, cols, a, |b, d| {
                    dw[b * TILE + GROUP * h..][..GROUP].copy_from_slice(&d)
                });
            }
        } else {
            for r in 0..TILE {
                let row = &w[(r0 + r) * row_bytes..(r0 + r + 1) * row_bytes];
                decode_row(dtype, row, &mut a[r * cols..(r + 1) * cols], |b, d| {
                    dw[b * TILE + r] = d
                });
            }
        }
        for tt in 0..x.tiles {
            let sums = if wide {
                tile::<true>(&a, cols, &dw, x, tt, &order, &mut c, &mut lanes)
            } else {
                tile::<false>(&a, cols, &dw, x, tt, &order, &mut c, &mut lanes)
            };
            let t0 = tt * TILE;
            for (t, v) in transpose16(sums).iter().enumerate().take(n - t0) {
                _mm512_storeu_ps(y.span(t0 + t, r0, TILE).as_mut_ptr(), *v);
            }
        }
    }
    asm!("tilerelease", options(nostack, nomem));
    done
}

/// Runs `$body` for r = 0..16 written out, so that arrays indexed by r stay in registers.
macro_rules! each_row {
    ($r:ident => $body:block) => {
        each_row!(@ $r $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $r:ident $body:block; $($i:literal)*) => {
        $( { let $r: usize = $i; $body } )*
    };
}

/// One 16 × 16 output tile: the row tile `a` (its scales `dw`, [block][row]) against
/// token tile `tt`, every block; returns the 16 rows' sums (`reduce8` of the lanes) as
/// 16 tokens each.
///
/// Blocks go in lane-major `order` (0, 8, 16, …, then 1, 9, …): each `Lanes8` lane is
/// still summed in block order, and its 16 row accumulators stay in registers. A
/// three-stage pipeline runs along that order: while block i's sums are scaled and
/// added, block i + 1's tile is being stored and block i + 2's product runs. (Reading
/// a tile right after storing it waits for the store, and so does storing right after
/// the product.)
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx2,f16c")]
unsafe fn tile<const WIDE: bool>(
    a: &[i8],
    cols: usize,
    dw: &[f32],
    x: &PackedAct,
    tt: usize,
    order: &[usize],
    c: &mut [[[i32; TILE * TILE]; 2]; 2],
    lanes: &mut [[[f32; TILE]; TILE]; 8],
) -> [__m512; TILE] {
    let nb = order.len();
    assert!(dw.len() >= nb * TILE);
    let blk = |i: usize| order[i];
    product(a, cols, x, tt, blk(0), 0, WIDE);
    if nb > 1 {
        product(a, cols, x, tt, blk(1), 1, WIDE);
    }
    store(0, &mut c[0], WIDE);
    let mut acc = [_mm512_setzero_ps(); TILE];
    for i in 0..nb {
        let b = blk(i);
        if i + 2 < nb {
            product(a, cols, x, tt, blk(i + 2), i % 2, WIDE);
        }
        if i + 1 < nb {
            store((i + 1) % 2, &mut c[(i + 1) % 2], WIDE);
        }
        let cb = &c[i % 2];
        let dx = _mm512_loadu_ps(x.block(tt, b).d.as_ptr());
        let dwb = &dw[b * TILE..b * TILE + TILE];
        each_row!(r => {
            // isum · (d_w · d_x), then added: the scalar reference's arithmetic.
            let scale = _mm512_mul_ps(_mm512_set1_ps(dwb[r]), dx);
            let ld = |p: &[i32; TILE * TILE]| {
                _mm512_loadu_si512(p.as_ptr().add(r * TILE) as *const _)
            };
            // 255·h + l: Σw·x, exact in i32 (8-bit: h, on its coarser scale).
            let h = ld(&cb[0]);
            let isum = if WIDE {
                let l = ld(&cb[1]);
                _mm512_add_epi32(_mm512_sub_epi32(_mm512_slli_epi32::<8>(h), h), l)
            } else {
                h
            };
            let sums = _mm512_cvtepi32_ps(isum);
            acc[r] = _mm512_add_ps(acc[r], _mm512_mul_ps(sums, scale));
        });
        // The lane is complete: keep it and start the next. (`Lanes8::finish`'s 0.0
        // for lanes past the last block changes nothing: see `Lanes8`.)
        if i + 1 == nb || blk(i + 1) % 8 != b % 8 {
            let lane = &mut lanes[b % 8];
            each_row!(r => {
                _mm512_storeu_ps(lane[r].as_mut_ptr(), acc[r]);
                acc[r] = _mm512_setzero_ps();
            });
        }
    }
    // `reduce8` for 16 tokens at once.
    std::array::from_fn(|r| {
        let l = |k: usize| _mm512_loadu_ps(lanes[k][r].as_ptr());
        _mm512_add_ps(
            _mm512_add_ps(_mm512_add_ps(l(0), l(4)), _mm512_add_ps(l(1), l(5))),
            _mm512_add_ps(_mm512_add_ps(l(2), l(6)), _mm512_add_ps(l(3), l(7))),
        )
    })
}

/// The 16 × 16 transpose: out[j] lane i = m[i] lane j.
#[inline]
#[target_feature(enable = "avx512f")]
fn transpose16(m: [__m512; TILE]) -> [__m512; TILE] {
    // Pairs, then quads within each 128-bit lane: u[4i + c] lane j holds m[4i..4i+4]
    // at column 4j + c.
    let t: [__m512; TILE] = std::array::from_fn(|k| {
        let (a, b) = (m[k & !1], m[k | 1]);
        if k % 2 == 0 {
            _mm512_unpacklo_ps(a, b)
        } else {
            _mm512_unpackhi_ps(a, b)
        }
    });
    let u: [__m512; TILE] = std::array::from_fn(|k| {
        let (i, c) = (k / 4, k % 4);
        let (a, b) = (
            _mm512_castps_pd(t[4 * i + c / 2]),
            _mm512_castps_pd(t[4 * i + 2 + c / 2]),
        );
        _mm512_castpd_ps(if c % 2 == 0 {
            _mm512_unpacklo_pd(a, b)
        } else {
            _mm512_unpackhi_pd(a, b)
        })
    });
    // Then a 4 × 4 transpose of 128-bit lanes for each c: column 4j + c gathers lane j
    // of u[c], u[4 + c], u[8 + c], u[12 + c].
    let mut out = [_mm512_setzero_ps(); TILE];
    for c in 0..4 {
        let v0 = _mm512_shuffle_f32x4::<0b01_00_01_00>(u[c], u[4 + c]);
        let v1 = _mm512_shuffle_f32x4::<0b11_10_11_10>(u[c], u[4 + c]);
        let v2 = _mm512_shuffle_f32x4::<0b01_00_01_00>(u[8 + c], u[12 + c]);
        let v3 = _mm512_shuffle_f32x4::<0b11_10_11_10>(u[8 + c], u[12 + c]);
        out[c] = _mm512_shuffle_f32x4::<0b10_00_10_00>(v0, v2);
        out[4 + c] = _mm512_shuffle_f32x4::<0b11_01_11_01>(v0, v2);
        out[8 + c] = _mm512_shuffle_f32x4::<0b10_00_10_00>(v1, v3);
        out[12 + c] = _mm512_shuffle_f32x4::<0b11_01_11_01>(v1, v3);
    }
    out
}

/// Start block b's 16 × 16 sums of both digit planes (only the high one when not
/// `wide`) into the sum tiles of `slot` (tmm4 and tmm6, or tmm5 and tmm7); the weights
/// alternate between tmm0 and tmm1.
#[inline]
unsafe fn product(
    a: &[i8],
    cols: usize,
    x: &PackedAct,
    tt: usize,
    b: usize,
    slot: usize,
    wide: bool,
) {
    assert!(a.len() >= TILE * cols && b < cols / QK);
    let blk = x.block(tt, b);
    assert!(!wide || blk.lo.len() == blk.hi.len());
    macro_rules! go {
        ($ta:literal, $th:literal, $tl:literal) => {
            if wide {
                asm!(
                    concat!("tileloadd tmm", $ta, ", [{a} + {sa}*1]"),
                    "tileloadd tmm2, [{h} + {sx}*1]",
                    "tileloadd tmm3, [{l} + {sx}*1]",
                    concat!("tilezero tmm", $th),
                    concat!("tilezero tmm", $tl),
                    concat!("tdpbssd tmm", $th, ", tmm", $ta, ", tmm2"),
                    concat!("tdpbssd tmm", $tl, ", tmm", $ta, ", tmm3"),
                    a = in(reg) a.as_ptr().add(QK * b),
                    sa = in(reg) cols,
                    h = in(reg) blk.hi.as_ptr(),
                    l = in(reg) blk.lo.as_ptr(),
                    sx = in(reg) 64usize,
                    options(nostack, readonly),
                )
            } else {
                asm!(
                    concat!("tileloadd tmm", $ta, ", [{a} + {sa}*1]"),
                    "tileloadd tmm2, [{h} + {sx}*1]",
                    concat!("tilezero tmm", $th),
                    concat!("tdpbssd tmm", $th, ", tmm", $ta, ", tmm2"),
                    a = in(reg) a.as_ptr().add(QK * b),
                    sa = in(reg) cols,
                    h = in(reg) blk.hi.as_ptr(),
                    sx = in(reg) 64usize,
                    options(nostack, readonly),
                )
            }
        };
    }
    if slot == 0 {
        go!("0", "4", "6");
    } else {
        go!("1", "5", "7");
    }
}

/// Store the sum tiles of `slot` into `c` ([high, low], 16 rows of 16 i32 each; the
/// low one only when `wide`).
#[inline]
unsafe fn store(slot: usize, c: &mut [[i32; TILE * TILE]; 2], wide: bool) {
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

/// One weight row as i8 values (q4_0: nibble − 8) and its f32 block scales. Inlined
/// into `gemm`, so that it is compiled with AVX-512 too.
#[inline(always)]
fn decode_row(dtype: DType, row: &[u8], out: &mut [i8], mut scale: impl FnMut(usize, f32)) {
    let f16 = |b: &[u8]| half::f16::from_le_bytes([b[0], b[1]]).to_f32();
    match dtype {
        DType::Q8_0 => {
            for (b, (blk, o)) in row
                .chunks_exact(34)
                .zip(out.chunks_exact_mut(QK))
                .enumerate()
            {
                scale(b, f16(blk));
                for (o, &v) in o.iter_mut().zip(&blk[2..]) {
                    *o = v as i8;
                }
            }
        }
        DType::Q4_0 => {
            for (b, (blk, o)) in row
                .chunks_exact(18)
                .zip(out.chunks_exact_mut(QK))
                .enumerate()
            {
                scale(b, f16(blk));
                for j in 0..16 {
                    o[j] = (blk[2 + j] & 0x0f) as i8 - 8;
                    o[j + 16] = (blk[2 + j] >> 4) as i8 - 8;
                }
            }
        }
        _ => unreachable!("gemm takes q8_0 and q4_0 only"),
    }
}

/// One `interleave8` group of 8 rows as i8 values (8 × cols, as `decode_row` gives
/// them) and, per block, its 8 f32 scales. A block's chunks, as 16-bit units (one row's
/// byte pair each), form an 8 × 8 matrix per 8 chunks (chunk × row); its transpose is
/// each row's 16 payload bytes in their own order.
#[inline(always)]
fn decode_group(
    dtype: DType,
    g: &[u8],
    cols: usize,
    out: &mut [i8],
    mut scales: impl FnMut(usize, [f32; GROUP]),
) {
    let bs = dtype.block().1;
    let nb = cols / QK;
    assert!(g.len() == GROUP * bs * nb && out.len() == GROUP * cols);
    let f16 = |b: &[u8]| half::f16::from_le_bytes([b[0], b[1]]).to_f32();
    for b in 0..nb {
        let blk = &g[b * GROUP * bs..(b + 1) * GROUP * bs];
        scales(b, std::array::from_fn(|r| f16(&blk[2 * r..])));
        // q8_0: chunks 0..8 are bytes 0..16 of each row, 8..16 bytes 16..32; q4_0's 8
        // chunks are its 16 nibble bytes.
        for half in 0..(bs - 2) / 16 {
            let c0 = 16 + 16 * GROUP * half;
            // Safety: 8 loads of 16 bytes, within `blk` (sliced just before).
            let rows = unsafe { transpose8x8_u16(blk[c0..c0 + 16 * GROUP].as_ptr()) };
            for (r, v) in rows.iter().enumerate() {
                let o = &mut out[r * cols + QK * b..r * cols + QK * (b + 1)];
                // Safety: stores of 16 bytes within `o` (32 bytes).
                unsafe {
                    if dtype == DType::Q8_0 {
                        _mm_storeu_si128(o.as_mut_ptr().add(16 * half) as *mut __m128i, *v);
                    } else {
                        let m = _mm_set1_epi8(0x0f);
                        let eight = _mm_set1_epi8(8);
                        let lo = _mm_sub_epi8(_mm_and_si128(*v, m), eight);
                        let hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16::<4>(*v), m), eight);
                        _mm_storeu_si128(o.as_mut_ptr() as *mut __m128i, lo);
                        _mm_storeu_si128(o.as_mut_ptr().add(16) as *mut __m128i, hi);
                    }
                }
            }
        }
    }
}

/// Rows r of the result are u16 lane r of the 8 loaded vectors (an 8 × 8 transpose).
///
/// Safety: `p` must be valid for 128 bytes.
#[inline(always)]
unsafe fn transpose8x8_u16(p: *const u8) -> [__m128i; 8] {
    let a: [__m128i; 8] = std::array::from_fn(|i| _mm_loadu_si128(p.add(16 * i) as *const __m128i));
    let t = [
        _mm_unpacklo_epi16(a[0], a[1]),
        _mm_unpackhi_epi16(a[0], a[1]),
        _mm_unpacklo_epi16(a[2], a[3]),
        _mm_unpackhi_epi16(a[2], a[3]),
        _mm_unpacklo_epi16(a[4], a[5]),
        _mm_unpackhi_epi16(a[4], a[5]),
        _mm_unpacklo_epi16(a[6], a[7]),
        _mm_unpackhi_epi16(a[6], a[7]),
    ];
    // u[0]: rows 0-1 of chunks 0..4, u[1]: rows 2-3, u[2]: rows 4-5, u[3]: rows 6-7;
    // u[4..8] likewise for chunks 4..8.
    let u = [
        _mm_unpacklo_epi32(t[0], t[2]),
        _mm_unpackhi_epi32(t[0], t[2]),
        _mm_unpacklo_epi32(t[1], t[3]),
        _mm_unpackhi_epi32(t[1], t[3]),
        _mm_unpacklo_epi32(t[4], t[6]),
        _mm_unpackhi_epi32(t[4], t[6]),
        _mm_unpacklo_epi32(t[5], t[7]),
        _mm_unpackhi_epi32(t[5], t[7]),
    ];
    std::array::from_fn(|r| {
        let (x, y) = (u[r / 2], u[4 + r / 2]);
        if r % 2 == 0 {
            _mm_unpacklo_epi64(x, y)
        } else {
            _mm_unpackhi_epi64(x, y)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose16_transposes() {
        if !is_x86_feature_detected!("avx512f") {
            return;
        }
        let m: [[f32; TILE]; TILE] =
            std::array::from_fn(|i| std::array::from_fn(|j| (16 * i + j) as f32));
        // Safety: AVX-512F was just detected.
        let out = unsafe {
            let rows = m.map(|r| _mm512_loadu_ps(r.as_ptr()));
            transpose16(rows).map(|v| {
                let mut a = [0f32; TILE];
                _mm512_storeu_ps(a.as_mut_ptr(), v);
                a
            })
        };
        for (j, row) in out.iter().enumerate() {
            for (i, &v) in row.iter().enumerate() {
                assert_eq!(v, m[i][j], "out[{j}][{i}]");
            }
        }
    }
}
