//! The kernels of the forward pass: row dots for `Weight::matvec`/`matmul`, activation
//! quantization and attention's two loops, as a scalar reference plus SIMD paths (x86
//! AVX2/FMA, AVX-VNNI and AVX-512BW chosen at run time; wasm simd128 at compile time).
//!
//! Quantized weights (q8_0, q4_0, q4_1, q5_0, q5_1, and the k-quants q4_k, q5_k,
//! q6_k, whose 32-weight sub-blocks meet one activation block each) are dotted with
//! an activation that was itself quantized in blocks of 32 (`Q8Act`), as llama.cpp
//! does, but to about 13 bits instead of 8 (held as i16 values and as two i8 digits): the inner products become exact
//! integer sums and the weights are never decoded to f32. f32 and f16 weights keep f32
//! activations.
//!
//! Every path returns the same bits as the scalar reference: the same per-block integer
//! sums, the same f32 products, added in the same order (block by block for quantized
//! rows; 8 lanes and a fixed tree for f32 dots; never FMA). That is not pedantry:
//! activation quantization rounds x/d to an integer, so a one-ulp difference upstream
//! can move an activation by a whole step, and over 30 layers such flips moved
//! SmolLM2's logits by up to 1.3 between AVX2 and scalar. With one order, the browser
//! (simd128) and the CLI (AVX2) compute identical logits.
//!
//! Prefill can also run whole tiles of rows × tokens at once (`gemm`, Intel AMX), and
//! decode 8 interleaved rows at once (`rows8`, after `interleave8` at load), with the
//! same integer sums added in the same order.
//!
//! `SLM_ACT_BITS=8` quantizes activations to 8 bits, as llama.cpp does (`act_bits`).
//! `SLM_KERNEL=scalar|avx2|avxvnni|avx512vnni|amx|avx512|simd128` forces a path (for benchmarks and bisecting);
//! a name this machine does not run is an error (`requested`), never a silent fallback.

#[cfg(target_arch = "x86_64")]
mod amx;
pub mod scalar;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod wasm;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub use wasm::f16x8_to_f32_simd;
#[cfg(target_arch = "x86_64")]
mod x86;

use crate::parallel::Threads;
use crate::quant::{DType, QK};
use std::marker::PhantomData;
use std::sync::OnceLock;

/// Largest magnitude of a quantized activation value: 15·255 = 3825, about 13 bits. At
/// this range q8_0 block sums stay exact in `tdpbf16ps`'s f32 accumulator
/// (`TileForm::Bf16`; any |x| ≤ 3967 would, and 15·255 keeps the digits whole); 16
/// bits (127·255) cost q8_0 prefill a second sum tile per block (730 against 840 tok/s
/// on SmolLM2, alternated), while either precision's rounding vanishes next to the
/// weights' (see `Q8Act`).
pub const ACT_MAX: i32 = 15 * ACT_BASE;
// The bf16 form's bound (`TileForm::Bf16`): a value's parts add up to at most
// |x| + 256 in magnitude, times 32 weights of at most 128.
const _: () = assert!(32 * 128 * (ACT_MAX + 256) < 1 << 24);
/// Largest magnitude the two i8 digits hold (`split_act`), and the range of the 8-bit
/// mode's first rounding (`act_bits`): 127·255.
pub const DIGITS_MAX: i32 = 127 * ACT_BASE;
/// The base of the two digits: x = ACT_BASE·hi + lo.
pub const ACT_BASE: i32 = 255;

/// An activation quantized in blocks of 32 to integers of about 13 bits (|x| ≤ 3825,
/// `ACT_MAX`), for `n` rows of `cols` values. 8-bit activations, as llama.cpp uses,
/// put one rounding of up to half of max|x|/127 on every input of every product: on
/// SmolLM2 that alone moved the logits' cosine to the f32 model to 0.99917 and flipped
/// a near-tie top token. At 1/30 of that step the activation's rounding vanishes next
/// to the weights' (cosine 0.999998, 20/20; 16 bits read 1.000000). The scalar
/// reference and the paths that multiply i16 pairs take the values (`v`); byte
/// products (AMX digit tiles, the AVX-512 dots, x86 dots of 8-bit rows) take the i8
/// digits, x = 255·hi + lo, and form a block sum Σw·x as 255·Σw·hi + Σw·lo (Σw·hi
/// alone for an 8-bit row); AMX bf16 products (`TileForm::Bf16`) take v as two bf16
/// parts. Every way the sum is exact, and the same integer on every path.
#[derive(Default)]
pub struct Q8Act {
    /// Per-block scale, max|x| / ACT_MAX (8-bit: see `act_bits`).
    pub d: Lines<f32>,
    /// High digits, in −127..=127 (never −128, so the x86 sign trick cannot overflow).
    pub hi: Lines<i8>,
    /// Low digits, in −127..=127 (scratch when 8-bit: see `act_bits`).
    pub lo: Lines<i8>,
    /// The values themselves as i16: 255·hi + lo, or hi when 8-bit (on the scale
    /// that holds the 255). Kernels with i16 × i16 products (x86 `madd`/`dpwssd`, wasm)
    /// form Σw·x in one pass instead of one per digit: the same integers, so the same
    /// sums.
    pub v: Lines<i16>,
    /// Per-block Σx (of the whole values), which q4_1's offset term needs.
    pub s: Lines<i32>,
    cols: usize,
    /// The digit planes in tile order, after `pack_tiles` (`TileForm::Digits`).
    pub(crate) tiled: Lines<i8>,
    /// The values as two bf16 planes in tile order, after `pack_tiles`
    /// (`TileForm::Bf16`).
    pub(crate) tiled_bf16: Lines<u16>,
    /// The scales in tile order, after `pack_tiles`: for each tile of 16 token rows
    /// and each block, the 16 rows' scales.
    pub(crate) tiled_d: Lines<f32>,
    /// The blocks' Σx as f32 (exact: |Σx| ≤ 32·`ACT_MAX` < 2²⁴) in `tiled_d`'s order,
    /// after `pack_tiles`: the offset terms of q4_1, q5_1 and the k-quants.
    pub(crate) tiled_s: Lines<f32>,
    /// Whether `tiled` and `tiled_bf16` hold this quantization's values (`pack_tiles`
    /// since the last `quantize`).
    packed: [bool; 2],
    /// Every row's `Q8Row::spread`, after `spread_pairs`.
    spread: Lines<i32>,
    /// Whether `spread` holds this quantization's pairs.
    spread_ready: bool,
    /// Rows quantized.
    rows: usize,
    /// Whether `lo` is in use (`act_bits() == 13`).
    wide: bool,
}

/// The activation precision in bits: 13 (the default, |x| ≤ `ACT_MAX`: two digits) or
/// 8, where a block is first quantized to ±`DIGITS_MAX` and only the high digit is
/// kept: each value is hi on the scale 255·d (hi is the rounding of x/(255·d),
/// llama.cpp's precision) and each product is one byte product instead of two and no
/// combination, for a rounding error 30 times larger. `SLM_ACT_BITS=8` or
/// `set_act_bits(8)` selects it; every path gives the same bits in either mode.
pub fn act_bits() -> u32 {
    use std::sync::atomic::Ordering::Relaxed;
    match ACT_BITS.load(Relaxed) {
        0 => {
            let b = match std::env::var("SLM_ACT_BITS").as_deref() {
                Ok("8") => 8,
                _ => 13,
            };
            // A `set_act_bits` that ran meanwhile wins over the environment.
            match ACT_BITS.compare_exchange(0, b, Relaxed, Relaxed) {
                Ok(_) => b,
                Err(set) => set,
            }
        }
        b => b,
    }
}

/// Choose the activation precision (8 or 13 bits; anything else means 13) for every
/// product quantized from now on.
pub fn set_act_bits(bits: u32) {
    let b = if bits == 8 { 8 } else { 13 };
    ACT_BITS.store(b, std::sync::atomic::Ordering::Relaxed);
}

static ACT_BITS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// One quantized activation row.
#[derive(Clone, Copy)]
pub struct Q8Row<'a> {
    pub d: &'a [f32],
    pub hi: &'a [i8],
    /// Empty when the activation is 8-bit.
    pub lo: &'a [i8],
    /// The values as i16 (`Q8Act::v`).
    pub v: &'a [i16],
    pub s: &'a [i32],
    /// The value pairs spread for `rows8` kernels that take them (`Q8Act::spread_pairs`),
    /// `SPREAD_PER_BLOCK` per block; empty unless prepared.
    pub spread: &'a [i32],
}

/// i32s of `Q8Row::spread` per block: for j in 0..8, value pair 2j (values 4j, 4j + 1
/// as one i32) eight times, then pair 2j + 1 eight times. An AVX-512 `rows8` multiplies
/// two 16-byte chunks of 8 rows at once by pairs 2j and 2j + 1: spreading them once per
/// activation instead of once per row group took the shuffles out of its loop.
pub const SPREAD_PER_BLOCK: usize = 8 * 16;

impl<'a> Q8Row<'a> {
    /// The row without its first `blocks` blocks.
    pub fn skip(&self, blocks: usize) -> Q8Row<'a> {
        Q8Row {
            d: &self.d[blocks..],
            hi: &self.hi[QK * blocks..],
            // A wide row keeps its low digits (slicing past them panics, as for `hi`).
            lo: if self.wide() {
                &self.lo[QK * blocks..]
            } else {
                &[]
            },
            v: &self.v[QK * blocks..],
            s: &self.s[blocks..],
            spread: self.spread.get(SPREAD_PER_BLOCK * blocks..).unwrap_or(&[]),
        }
    }

    /// Value j as the integer it stands for.
    pub fn value(&self, j: usize) -> i32 {
        self.v[j] as i32
    }

    /// Whether the low digits are in use; 8-bit rows have none (`lo` is empty).
    pub fn wide(&self) -> bool {
        !self.lo.is_empty()
    }
}

impl Q8Act {
    /// Quantize `x` (`n` rows of `cols`, `cols` a multiple of 32) with the active
    /// path's `quantize`. Reuses the buffers, so a decode loop of same-sized calls
    /// allocates only on the first.
    pub fn quantize(&mut self, x: &[f32], cols: usize) {
        self.quantize_bits(x, cols, act_bits());
    }

    /// `quantize` at a given precision (13, or 8: see `act_bits`).
    pub fn quantize_bits(&mut self, x: &[f32], cols: usize, bits: u32) {
        self.quantize_on(x, cols, bits, &Threads::one());
    }

    /// `quantize_bits` with the rows split over `threads` (a batch's rows are
    /// quantized independently, so the split changes no result).
    pub fn quantize_on(&mut self, x: &[f32], cols: usize, bits: u32, threads: &Threads) {
        debug_assert_eq!(cols % QK, 0);
        debug_assert_eq!(x.len() % cols.max(1), 0);
        let nb = x.len() / QK;
        self.cols = cols;
        self.rows = x.len() / cols.max(1);
        self.packed = [false; 2];
        self.spread_ready = false;
        self.wide = bits != 8;
        self.d.resize(nb, 0.0);
        self.s.resize(nb, 0);
        self.hi.resize(nb * QK, 0);
        self.lo.resize(nb * QK, 0);
        self.v.resize(nb * QK, 0);
        let max = if bits == 8 { DIGITS_MAX } else { ACT_MAX };
        let wide = self.wide;
        if threads.count() == 1 {
            // No hand-off (and no allocation) for one thread: decode's case.
            let x = &x[..nb * QK];
            let (d, s, hi, lo, v) = (
                &mut self.d,
                &mut self.s,
                &mut self.hi,
                &mut self.lo,
                &mut self.v,
            );
            return quantize_rows(x, max, wide, d, s, hi, lo, v);
        }
        // Rows per part: a few parts a thread, so that a late thread takes fewer.
        let per = self
            .rows
            .div_ceil(PARTS_PER_THREAD * threads.count())
            .max(1);
        let (row_blocks, row_vals) = (per * cols / QK, per * cols);
        let parts: Vec<_> = x[..nb * QK]
            .chunks(row_vals.max(1))
            .zip(self.d.chunks_mut(row_blocks.max(1)))
            .zip(self.s.chunks_mut(row_blocks.max(1)))
            .zip(self.hi.chunks_mut(row_vals.max(1)))
            .zip(self.lo.chunks_mut(row_vals.max(1)))
            .zip(self.v.chunks_mut(row_vals.max(1)))
            .collect();
        threads.run_each(parts, |_, (((((x, d), s), hi), lo), v)| {
            quantize_rows(x, max, wide, d, s, hi, lo, v)
        });
    }

    /// Rows quantized.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns per row.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Whether the low digits are in use (13-bit activations, not 8).
    pub fn wide(&self) -> bool {
        self.wide
    }

    /// Lay the activation out for a tile kernel (`Gemm`) about to multiply it by
    /// weights of the types in `dtypes`, in each form those take (`tile_form`), and
    /// the scales and sums into `tiled_d` and `tiled_s`; in whole `GEMM_TILE`s of rows.
    /// For each tile of 16 token rows and each block:
    /// - `Digits` (`tiled`): the 16 rows' 32 high digits (512 bytes), then their 32
    ///   low digits when 13-bit;
    /// - `Bf16` (`tiled_bf16`): the 16 rows' 32 values v as 256·h (1 KiB of bf16),
    ///   then as l (`bf16_parts`).
    ///
    /// A tile operand is then contiguous, which the hardware streams far better than
    /// 16 rows `cols` apart. The padding rows are zeros or an earlier call's (the
    /// kernel ignores their results).
    pub fn pack_tiles(&mut self, dtypes: impl IntoIterator<Item = DType>) {
        self.pack_tiles_on(dtypes, &Threads::one());
    }

    /// `pack_tiles` with the tiles split over `threads`.
    pub fn pack_tiles_on(&mut self, dtypes: impl IntoIterator<Item = DType>, threads: &Threads) {
        let mut want = [false; 2];
        for d in dtypes {
            if let Some(f) = tile_form(d, self.wide) {
                want[f as usize] = true;
            }
        }
        if want != [false; 2] {
            self.pack_forms_on(want, threads);
        }
    }

    /// `pack_tiles` for the forms `want` (indexed by `TileForm`).
    #[cfg(test)]
    pub(crate) fn pack_forms(&mut self, want: [bool; 2]) {
        self.pack_forms_on(want, &Threads::one());
    }

    /// `pack_forms` with the tiles of token rows split over `threads` (each tile's
    /// layout is written from its own rows alone).
    pub(crate) fn pack_forms_on(&mut self, want: [bool; 2], threads: &Threads) {
        let (n, cols, nb) = (self.rows, self.cols, self.cols / QK);
        let tiles = n.div_ceil(GEMM_TILE);
        let padded = tiles * GEMM_TILE;
        let (digits, bf16) = (
            want[TileForm::Digits as usize],
            want[TileForm::Bf16 as usize],
        );
        let planes = if self.wide { 2 } else { 1 };
        // Grown only: a shorter batch reuses the buffers.
        let grow = |len: usize, have: usize| len.max(have);
        self.tiled_d
            .resize(grow(padded * nb, self.tiled_d.len()), 0.0);
        self.tiled_s
            .resize(grow(padded * nb, self.tiled_s.len()), 0.0);
        if digits {
            self.tiled
                .resize(grow(padded * cols * planes, self.tiled.len()), 0);
        }
        if bf16 {
            self.tiled_bf16
                .resize(grow(padded * cols * 2, self.tiled_bf16.len()), 0);
        }
        // Each tile's part of the four buffers (empty where a form is not wanted).
        let (tile_d, tile_digits, tile_bf16) = (
            GEMM_TILE * nb,
            GEMM_TILE * cols * planes,
            GEMM_TILE * cols * 2,
        );
        let ds = self.tiled_d[..padded * nb]
            .chunks_mut(tile_d)
            .zip(self.tiled_s[..padded * nb].chunks_mut(tile_d));
        let mut digit_parts: Vec<&mut [i8]> = if digits {
            self.tiled[..padded * cols * planes]
                .chunks_mut(tile_digits)
                .collect()
        } else {
            (0..tiles).map(|_| &mut [][..]).collect()
        };
        let mut bf16_parts_: Vec<&mut [u16]> = if bf16 {
            self.tiled_bf16[..padded * cols * 2]
                .chunks_mut(tile_bf16)
                .collect()
        } else {
            (0..tiles).map(|_| &mut [][..]).collect()
        };
        let parts: Vec<_> = ds
            .zip(digit_parts.drain(..))
            .zip(bf16_parts_.drain(..))
            .collect();
        let (d, s, hi, lo, v, wide) = (
            &self.d[..],
            &self.s[..],
            &self.hi[..],
            &self.lo[..],
            &self.v[..],
            self.wide,
        );
        threads.run_each(parts, |tile, (((td, ts), tdig), tbf)| {
            for r in 0..GEMM_TILE.min(n - tile * GEMM_TILE) {
                let t = tile * GEMM_TILE + r;
                for b in 0..nb {
                    td[b * GEMM_TILE + r] = d[t * nb + b];
                    ts[b * GEMM_TILE + r] = s[t * nb + b] as f32;
                    let src = t * cols + QK * b;
                    if digits {
                        let at = (b * planes * GEMM_TILE + r) * QK;
                        tdig[at..at + QK].copy_from_slice(&hi[src..src + QK]);
                        if wide {
                            let at = at + GEMM_TILE * QK;
                            tdig[at..at + QK].copy_from_slice(&lo[src..src + QK]);
                        }
                    }
                    if bf16 {
                        let at = (b * 2 * GEMM_TILE + r) * QK;
                        let (h, l) = tbf[at..].split_at_mut(GEMM_TILE * QK);
                        bf16_parts(&v[src..src + QK], &mut h[..QK], &mut l[..QK]);
                    }
                }
            }
        });
        self.packed = want;
    }

    /// Whether `pack_tiles` laid this quantization out in `form`.
    pub fn packed(&self, form: TileForm) -> bool {
        self.packed[form as usize]
    }

    /// Fill `Q8Row::spread` for every row (for a `rows8` that takes it:
    /// `Kernels::rows8_spread`).
    pub fn spread_pairs(&mut self) {
        let pairs = self.rows * self.cols / 2;
        self.spread.resize(8 * pairs, 0);
        let v = &self.v[..2 * pairs];
        for (p, out) in self.spread.chunks_exact_mut(8).enumerate() {
            // Chunks of 8 go pair by pair: chunk p holds pair p (pairs 2j, 2j + 1 in turn).
            let pair = (v[2 * p] as u16 as u32 | (v[2 * p + 1] as u16 as u32) << 16) as i32;
            out.fill(pair);
        }
        self.spread_ready = true;
    }

    pub fn row(&self, t: usize) -> Q8Row<'_> {
        let nb = self.cols / QK;
        let per_row = nb * SPREAD_PER_BLOCK;
        Q8Row {
            d: &self.d[t * nb..(t + 1) * nb],
            hi: &self.hi[t * self.cols..(t + 1) * self.cols],
            lo: if self.wide {
                &self.lo[t * self.cols..(t + 1) * self.cols]
            } else {
                &[]
            },
            v: &self.v[t * self.cols..(t + 1) * self.cols],
            s: &self.s[t * nb..(t + 1) * nb],
            spread: if self.spread_ready {
                &self.spread[t * per_row..(t + 1) * per_row]
            } else {
                &[]
            },
        }
    }
}

/// Parts of a batch per thread where its glue is split (`Q8Act::quantize_on`,
/// `pack_forms_on`): a thread that the machine delays takes fewer.
const PARTS_PER_THREAD: usize = 2;

/// Quantize whole rows into their parts of a `Q8Act`'s buffers: the blocks' scales
/// `d` and sums `s`, the digits and the values (see `Q8Act`).
#[allow(clippy::too_many_arguments, reason = "one slice per buffer of `Q8Act`")]
fn quantize_rows(
    x: &[f32],
    max: i32,
    wide: bool,
    d: &mut [f32],
    s: &mut [i32],
    hi: &mut [i8],
    lo: &mut [i8],
    v: &mut [i16],
) {
    (active().quantize)(x, max, d, hi, lo, s);
    if wide {
        for ((v, &h), &l) in v.iter_mut().zip(hi.iter()).zip(lo.iter()) {
            *v = (ACT_BASE * h as i32 + l as i32) as i16;
        }
    } else {
        for (v, &h) in v.iter_mut().zip(hi.iter()) {
            *v = h as i16;
        }
        // The values become hi on a 255 times coarser scale; Σx follows them.
        for ((s, d), hi) in s.iter_mut().zip(d.iter_mut()).zip(hi.chunks_exact(QK)) {
            *s = hi.iter().map(|&h| h as i32).sum::<i32>();
            *d *= ACT_BASE as f32;
        }
    }
}

/// The digits of a quantized value v (|v| ≤ DIGITS_MAX): hi = ⌊(v + 127) / 255⌋ and
/// lo = v − 255·hi, both in −127..=127.
#[inline(always)]
pub fn split_act(v: i32) -> (i8, i8) {
    let hi = (v + 127).div_euclid(ACT_BASE);
    (hi as i8, (v - ACT_BASE * hi) as i8)
}

/// How a tile kernel (`Gemm`) takes the activation, per weight type.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TileForm {
    /// i8 digit planes for `tdpbssd`: the high digits, and the low ones when 13-bit.
    Digits = 0,
    /// Each 13-bit value v as two bf16 parts, 256·h and l (`bf16_parts`), for
    /// `tdpbf16ps`: both products add into one f32 sum per block, where digits need two
    /// i32 sums and a combination. Exact: every part is an integer of at most 8
    /// significant bits (|256·h| ≤ 3840, |l| ≤ 128), so is every weight (q8_0
    /// −128..=127, q4_0 −8..=7, q4_1 0..=15, q5_0 −16..=15), and every partial sum of
    /// a block is an integer below
    /// 32·128·(3840 + 128) < 2²⁴, so an f32 accumulator rounds nothing, in any order.
    /// (With 16-bit values q8_0's sums approach 2²⁷; that is why `ACT_MAX` is 3825.)
    Bf16 = 1,
}

/// The form a tile kernel takes the activation in for weights of `dtype` (13-bit when
/// `wide`), or None where there is no tile kernel for the type.
pub fn tile_form(dtype: DType, wide: bool) -> Option<TileForm> {
    match dtype {
        // q4_1's weights are its nibbles (0..=15); its offsets m are added apart from
        // the tile products (`amx::offset_sums`).
        DType::Q8_0 | DType::Q4_0 | DType::Q4_1 if wide && bf16_tiles() => Some(TileForm::Bf16),
        DType::Q8_0 | DType::Q4_0 | DType::Q4_1 => Some(TileForm::Digits),
        // q5_0's weights (−16..=15) and q5_1's (0..=31) have 8 significant bits at
        // most, and their blocks' partial sums stay below 32·32·(3840 + 128) < 2²⁴: the
        // bf16 form's bound holds (q5_1's offsets as q4_1's). No digit form: without
        // AMX-BF16 (or at 8 bits) their rows take the token tiles.
        DType::Q5_0 | DType::Q5_1 if wide && bf16_tiles() => Some(TileForm::Bf16),
        // The k-quants' sub-blocks are blocks of 32 here, their weights q4_k 0..=15,
        // q5_k 0..=31, q6_k −32..=31 (8 significant bits at most; sums below
        // 32·32·(3840 + 128) < 2²⁴); their sub-block scales and mins are applied in
        // `amx::tile`'s epilogue and `amx::offset_sums`. The bf16 form only.
        DType::Q4K | DType::Q5K | DType::Q6K if wide && bf16_tiles() => Some(TileForm::Bf16),
        _ => None,
    }
}

/// Whether the tile kernel has bf16 products (AMX-BF16).
fn bf16_tiles() -> bool {
    #[cfg(target_arch = "x86_64")]
    return amx::has_bf16();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Values v (|v| ≤ ACT_MAX) as the bf16 bit patterns of 256·h and l, where
/// h = ⌊(v + 128) / 256⌋ in −15..=15 and l = v − 256·h in −128..=127: both parts are
/// integers of at most 8 significant bits, so bf16 holds them exactly (for any
/// |v| ≤ 32767, in fact).
pub fn bf16_parts(v: &[i16], h: &mut [u16], l: &mut [u16]) {
    #[cfg(target_arch = "x86_64")]
    if amx::has_bf16() {
        // Safety: AMX-BF16 comes with AVX-512 (checked with it).
        return unsafe { amx::bf16_parts(v, h, l) };
    }
    for ((&v, h), l) in v.iter().zip(h).zip(l) {
        (*h, *l) = bf16_part(v);
    }
}

/// `bf16_parts` of one value.
#[inline]
pub(crate) fn bf16_part(v: i16) -> (u16, u16) {
    let hi = (v as i32 + 128) >> 8;
    (bf16_of(256 * hi), bf16_of(v as i32 - 256 * hi))
}

/// The bf16 bit pattern of an integer of at most 8 significant bits (exact: the f32's
/// low 16 bits are zero).
#[inline]
pub(crate) const fn bf16_of(x: i32) -> u16 {
    ((x as f32).to_bits() >> 16) as u16
}

/// Runs `f` compiled with AVX2 where the CPU has it. The crate is built for baseline
/// x86-64 (SSE2), so plain loops outside the kernels (softmax, norms, RoPE, SiLU)
/// would run 4 floats wide; `f` is inlined into an AVX2 function and
/// compiled a second time. Only for code whose every add has a fixed order: Rust never
/// fuses a multiply and an add, so both builds give the same bits.
#[inline(always)]
pub fn with_avx2<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        /// # Safety
        ///
        /// The CPU must have AVX2 (detected just above).
        #[target_feature(enable = "avx2")]
        unsafe fn run<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        // Safety: AVX2 was just detected.
        return unsafe { run(f) };
    }
    f()
}

/// `v.round().clamp(-max, max) as i32` (ties away from zero; NaN gives 0),
/// without the libm `roundf` call that the baseline x86-64 target makes for `round`:
/// clamping first keeps the truncation exact, and `v - trunc(v)` is exact for
/// |v| ≤ max ≤ DIGITS_MAX < 2²⁴, so the result is the same for every input. Written so
/// that LLVM vectorizes it.
#[inline(always)]
pub fn round_to_act(v: f32, max: i32) -> i32 {
    let m = max as f32;
    #[allow(clippy::eq_op)] // v == v is false for NaN only
    let c = if v == v { v.clamp(-m, m) } else { 0.0 };
    // Safety: c is finite and within ±max. (A plain `as` cast saturates, which LLVM
    // could not vectorize.)
    let t: i32 = unsafe { c.to_int_unchecked() }; // toward zero
    let frac = c - t as f32;
    t + (frac >= 0.5) as i32 - (frac <= -0.5) as i32
}

/// A block's scale and its inverse from its largest magnitude: d = amax / max (max is
/// `ACT_MAX`, or `DIGITS_MAX` for the 8-bit mode), or NaN if the block has a NaN
/// (which must reach the output as it would without quantization), and 1/d, or 0
/// where d is 0 or not finite (so that x/d becomes 0). Every quantizer takes both from
/// here.
#[inline(always)]
pub fn act_scale(amax: f32, nan: bool, max: i32) -> (f32, f32) {
    let d = if nan { f32::NAN } else { amax / max as f32 };
    let id = if d != 0.0 && d.is_finite() {
        1.0 / d
    } else {
        0.0
    };
    (d, id)
}

/// Quantizes whole blocks of 32: `(x, max, d, hi, lo, s)` writes each block's scale
/// max|x| / max (NaN if the block has a NaN), its values round(x/d) clamped to ±max
/// (ties away from zero; 0 where x/d is NaN) as `split_act` digits, and their sum.
/// `max` is `ACT_MAX` or `DIGITS_MAX` (the 8-bit mode's first rounding). Every path
/// gives the scalar one's bits.
pub type Quantize = fn(&[f32], i32, &mut [f32], &mut [i8], &mut [i8], &mut [i32]);

/// Dot of one encoded weight row with a quantized activation row.
pub type QDot = fn(&[u8], &Q8Row) -> f32;

/// `(dtype, groups, x, out)`: out[8g + r] = row r of group g · x, for whole groups of
/// 8 rows in the `interleave8` layout; bit for bit the dot kernel's result per row.
pub type Rows8 = fn(DType, &[u8], &Q8Row, &mut [f32]);

/// `(dtype, row, x, out)`: one q4_k/q5_k/q6_k row against `Kernels::k_tokens_n`
/// tokens at once (prefill), out[t] bit for bit the dot kernel's result for token t.
pub type KTokens = fn(DType, &[u8], &[Q8Row], &mut [f32]);

/// Whether a type is a k-quant (256-weight super-blocks), which `KTokens` takes.
pub fn is_k_quant(dtype: DType) -> bool {
    matches!(dtype, DType::Q4K | DType::Q5K | DType::Q6K)
}

/// Whether this build's kernels read ahead of their streams at all: the wasm ones,
/// which have no prefetch instruction (`wasm::touch_ahead`). Native paths leave it to
/// the CPU.
pub const HAS_READ_AHEAD: bool = cfg!(all(target_arch = "wasm32", target_feature = "simd128"));

/// How the wasm kernels read ahead of a weight stream (`wasm::touch_ahead`). Which one
/// pays depends on the CPU, not on the code, so a page measures them at load
/// (`Model::tune_read_ahead`):
/// - on Sapphire Rapids, whose prefetcher stops at every 4 KiB page, touching every
///   line 8 KiB ahead took q8_0's weight stream in V8 from 3.7 to 5.6 GB/s;
/// - on AMD Zen 5 that cost 40% of the stream, and one line per page 8%; there the
///   prefetcher crosses pages itself and off is fastest.
///
/// A read that misses holds its place in the reorder buffer until its line arrives,
/// which is what a needless one costs. Results never depend on the mode: a read-ahead
/// only reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadAhead {
    Off,
    /// One line per 4 KiB page, 32 KiB ahead.
    Page,
    /// Every line, 8 KiB ahead.
    Line,
}

impl ReadAhead {
    /// Every mode, in the order `Model::tune_read_ahead` measures them.
    pub const ALL: [ReadAhead; 3] = [ReadAhead::Off, ReadAhead::Page, ReadAhead::Line];

    pub fn as_str(self) -> &'static str {
        match self {
            ReadAhead::Off => "off",
            ReadAhead::Page => "one line per page",
            ReadAhead::Line => "every line",
        }
    }
}

static READ_AHEAD: std::sync::atomic::AtomicU8 =
    std::sync::atomic::AtomicU8::new(ReadAhead::Page as u8);

/// The wasm kernels' read-ahead (`ReadAhead::Page` until `set_read_ahead`).
#[inline(always)]
pub fn read_ahead() -> ReadAhead {
    match READ_AHEAD.load(std::sync::atomic::Ordering::Relaxed) {
        0 => ReadAhead::Off,
        1 => ReadAhead::Page,
        _ => ReadAhead::Line,
    }
}

/// Set the read-ahead for every stream from now on (all threads).
pub fn set_read_ahead(mode: ReadAhead) {
    READ_AHEAD.store(mode as u8, std::sync::atomic::Ordering::Relaxed);
}

/// Reads ahead of a weight stream where the path has no prefetch of its own (wasm:
/// `wasm::touch_ahead`, as `read_ahead()` says); elsewhere nothing. `w` is the whole
/// matrix (or the part a thread streams), `[from, from + len)` the bytes about to be
/// read.
#[inline(always)]
pub fn touch_ahead(w: &[u8], from: usize, len: usize) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    wasm::touch_ahead(w, from, len);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    let _ = (w, from, len);
}

static WIDE_DECODE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Whether decode takes a path's full-width `rows8` (true until `set_wide_decode`).
#[inline(always)]
pub fn wide_decode() -> bool {
    WIDE_DECODE.load(std::sync::atomic::Ordering::Relaxed)
}

/// Choose between a path's `rows8` (true) and its `rows8_narrow` (false) for every
/// decode step from now on (all threads). Results never depend on it.
pub fn set_wide_decode(wide: bool) {
    WIDE_DECODE.store(wide, std::sync::atomic::Ordering::Relaxed);
}

/// Rows per group of the interleaved layout.
pub const GROUP: usize = 8;

/// `(dtype, group, x, out)`: `Rows8` of one `interleave8` group of 8 rows for the
/// path's `Kernels::tile_tokens` tokens at once (prefill; `x` holds exactly that many),
/// token t's 8 results in out[8t..8t + 8]; bit for bit `Rows8`'s per token.
pub type Rows8Tokens = fn(DType, &[u8], &[Q8Row], &mut [f32]);

/// A `Rows8` call's shape, checked against its slices, and how its interleaved blocks
/// are read.
#[cfg(any(
    target_arch = "x86_64",
    all(target_arch = "wasm32", target_feature = "simd128")
))]
pub(crate) struct Rows8Shape {
    /// Bytes per block of one row.
    pub bs: usize,
    /// The offset the quants carry (q4_0 8, q5_0 16), taken off as bias·Σx; 0 for the
    /// others.
    pub bias: i32,
    /// Blocks per row.
    pub nb: usize,
    /// Bytes per group of 8 rows.
    pub group: usize,
    /// Whether the payload is nibbles (q4_0, q4_1) rather than bytes (q8_0).
    pub nibbles: bool,
    /// Where a group block's 16-byte payload chunks start. `interleave8` moves the
    /// payload after the 2-byte scale pair by pair, so q4_1's m (its first payload
    /// pair) becomes one chunk of the 8 rows' m right after their scales, and its
    /// nibbles follow.
    pub at: usize,
    /// Whether blocks carry q4_1's or q5_1's per-row offsets m (at byte 16 of a group
    /// block).
    pub offsets: bool,
    /// Where q5_0's and q5_1's fifth bits start in a group block: two chunks, the 8
    /// rows' `qh` low halves (bits of weights 0..16) as u16 lanes, then the high
    /// halves (weights 16..32).
    pub fifth: Option<usize>,
}

/// The shape of a `Rows8` call over `w`, `x` and `out`, checked.
#[cfg(any(
    target_arch = "x86_64",
    all(target_arch = "wasm32", target_feature = "simd128")
))]
pub(crate) fn rows8_shape(dtype: DType, w: &[u8], x: &Q8Row, out: &[f32]) -> Rows8Shape {
    // The payload after the scales, in chunks of 16 bytes: q4_1's and q5_1's m first,
    // then q5's qh (two chunks), then the nibbles or bytes.
    let (nibbles, at, offsets, fifth) = match dtype {
        DType::Q8_0 => (false, 2 * GROUP, false, None),
        DType::Q4_0 => (true, 2 * GROUP, false, None),
        DType::Q4_1 => (true, 4 * GROUP, true, None),
        DType::Q5_0 => (true, 6 * GROUP, false, Some(2 * GROUP)),
        DType::Q5_1 => (true, 8 * GROUP, true, Some(4 * GROUP)),
        _ => panic!("{dtype:?} is not interleaved"),
    };
    let bs = dtype.block().1;
    let nb = x.d.len();
    let group = GROUP * bs * nb;
    assert!(out.len().is_multiple_of(GROUP) && w.len() == group * (out.len() / GROUP));
    assert!(x.v.len() >= QK * nb && x.s.len() >= nb);
    // Value pairs are read as 4-byte words (x86 broadcasts them through an f32
    // reference): `Q8Act` rows start on cache lines, any other row must be aligned too.
    assert!(
        (x.v.as_ptr() as usize).is_multiple_of(4),
        "value rows are 4-byte aligned"
    );
    Rows8Shape {
        bs,
        bias: match dtype {
            DType::Q4_0 => 8,
            DType::Q5_0 => 16,
            _ => 0,
        },
        nb,
        group,
        nibbles,
        at,
        offsets,
        fifth,
    }
}

/// The checks a token tile kernel makes on its tokens after the first (which
/// `rows8_shape` checked): every row as long, and its values 4-byte aligned.
#[cfg(any(
    target_arch = "x86_64",
    all(target_arch = "wasm32", target_feature = "simd128")
))]
pub(crate) fn check_tile_tokens(x: &[Q8Row], nb: usize) {
    for x in x.iter().skip(1) {
        assert!(x.d.len() == nb && x.v.len() >= QK * nb && x.s.len() >= nb);
        assert!((x.v.as_ptr() as usize).is_multiple_of(4));
    }
}

/// Whether `interleave8` applies to this type.
pub fn interleaves(dtype: DType) -> bool {
    matches!(
        dtype,
        DType::Q8_0 | DType::Q4_0 | DType::Q4_1 | DType::Q5_0 | DType::Q5_1
    )
}

/// Rewrites whole groups of 8 rows of q8_0/q4_0 (`row_bytes` each) in place into the
/// layout that `Rows8` kernels read: for each block b, the 8 rows' blocks b together,
/// as their 8 f16 scales (16 bytes) and then chunks of 16 bytes, chunk c holding
/// payload bytes 2c and 2c + 1 of rows 0..8 in turn (byte 2r + j is row r's payload
/// byte 2c + j; the payload is q8_0's 32 i8, or q4_0's 16 nibble bytes). Widened to
/// i16, a chunk is one register of two weights per row, so that one multiply-add
/// serves 8 rows with each row in its own lanes: no horizontal sums, and the 8 rows'
/// scales load as one vector. A permutation: the same bytes, the same size.
pub fn interleave8(dtype: DType, bytes: &mut [u8], row_bytes: usize) {
    assert!(interleaves(dtype) && bytes.len().is_multiple_of(GROUP * row_bytes));
    let bs = dtype.block().1;
    let mut group = vec![0u8; GROUP * row_bytes];
    for g in bytes.chunks_exact_mut(GROUP * row_bytes) {
        group.copy_from_slice(g);
        for b in 0..row_bytes / bs {
            let out = &mut g[b * GROUP * bs..(b + 1) * GROUP * bs];
            for r in 0..GROUP {
                let blk = &group[r * row_bytes + b * bs..r * row_bytes + (b + 1) * bs];
                out[2 * r..2 * r + 2].copy_from_slice(&blk[..2]);
                for (c, pair) in blk[2..].chunks_exact(2).enumerate() {
                    out[pair_at(c, r)..][..2].copy_from_slice(pair);
                }
            }
        }
    }
}

/// Block b of row r (0..8) of one interleaved group, in its own encoding (`bs` bytes
/// into `out`): the inverse of `interleave8` for one block.
pub fn deinterleave_block(dtype: DType, group: &[u8], b: usize, r: usize, out: &mut [u8]) {
    let bs = dtype.block().1;
    let blk = &group[b * GROUP * bs..(b + 1) * GROUP * bs];
    out[..2].copy_from_slice(&blk[2 * r..2 * r + 2]);
    for (c, pair) in out[2..bs].chunks_exact_mut(2).enumerate() {
        pair.copy_from_slice(&blk[pair_at(c, r)..][..2]);
    }
}

/// Where row r's payload bytes 2c and 2c + 1 sit within one block of an interleaved
/// group: after the 8 scales, in chunk c.
fn pair_at(c: usize, r: usize) -> usize {
    2 * GROUP + 2 * GROUP * c + 2 * r
}

/// A batched product for whole tiles of rows: `(dtype, rows' bytes, whether they are
/// in `interleave8` groups, rows, cols, x, y)` writes W[r]·x[t] (bit for bit what the dot kernel gives) to row r, token t of the
/// band `y`, for as many leading rows as it handles, and returns that count.
/// The activation must be packed in tiles (`Q8Act::pack_tiles`).
pub type Gemm = fn(DType, &[u8], bool, usize, usize, &Q8Act, &mut Band) -> usize;

/// Where a batched product writes: columns `first..first + rows` of a token-major
/// `n × ld` matrix (y[t·ld + r], the layout the model keeps activations in), row r of
/// the weight being column r. Threads take disjoint bands of one matrix (`split`), so a
/// product needs neither a transpose pass nor scratch.
pub struct Band<'a> {
    /// y[first].
    y: *mut f32,
    ld: usize,
    n: usize,
    first: usize,
    rows: usize,
    _y: PhantomData<&'a mut [f32]>,
}

// Safety: a band writes only its own columns (every access is bounds-checked against
// them), and the bands of one matrix are disjoint.
unsafe impl Send for Band<'_> {}

impl<'a> Band<'a> {
    /// All `ld` columns of `y` (`n × ld`).
    pub fn new(y: &'a mut [f32], n: usize, ld: usize) -> Band<'a> {
        assert_eq!(n.checked_mul(ld), Some(y.len()));
        Band {
            y: y.as_mut_ptr(),
            ld,
            n,
            first: 0,
            rows: ld,
            _y: PhantomData,
        }
    }

    /// Disjoint bands of `per` (> 0) columns (the last one narrower), in order.
    pub fn split(self, per: usize) -> impl Iterator<Item = Band<'a>> {
        assert!(per > 0);
        (0..self.rows).step_by(per).map(move |r0| Band {
            // Wrapping: with no tokens (n = 0) y may be dangling, and is never read.
            y: self.y.wrapping_add(r0),
            first: self.first + r0,
            rows: per.min(self.rows - r0),
            ..self
        })
    }

    /// The first column, as a row of the whole weight.
    pub fn first(&self) -> usize {
        self.first
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn tokens(&self) -> usize {
        self.n
    }

    pub fn set(&mut self, t: usize, r: usize, v: f32) {
        self.span(t, r, 1)[0] = v;
    }

    /// Rows `r..r + len` of token t, which are adjacent in y.
    pub fn span(&mut self, t: usize, r: usize, len: usize) -> &mut [f32] {
        assert!(t < self.n && len <= self.rows && r <= self.rows - len);
        // Safety: within this band's columns of token t's row of y, which the band
        // borrows exclusively; `&mut self` keeps the slice unique.
        unsafe { std::slice::from_raw_parts_mut(self.y.add(t * self.ld + r), len) }
    }
}

/// A growable buffer of plain numbers that starts on a cache line (a `Vec` starts
/// wherever malloc puts it, often 16 bytes past one). Kernels load 32 or 64 bytes at a
/// time, and tile rows are 32 or 64 bytes: from a misaligned start every other such
/// access (or every one) straddles two lines and costs two. Reads as a slice.
pub struct Lines<T: Plain> {
    lines: Vec<Line>,
    len: usize,
    _t: PhantomData<T>,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// Numbers for which every bit pattern (and all zeros) is a value, whose size divides
/// a line: what `Lines` may hold.
///
/// # Safety
/// An implementer must be such a type (the six below are).
pub unsafe trait Plain: Copy + 'static {}
// Safety: plain numbers of 1, 2 and 4 bytes.
unsafe impl Plain for u8 {}
// Safety: as above.
unsafe impl Plain for i8 {}
// Safety: as above.
unsafe impl Plain for i16 {}
// Safety: as above.
unsafe impl Plain for u16 {}
// Safety: as above.
unsafe impl Plain for i32 {}
// Safety: as above.
unsafe impl Plain for f32 {}

impl<T: Plain> Default for Lines<T> {
    fn default() -> Self {
        Lines {
            lines: Vec::new(),
            len: 0,
            _t: PhantomData,
        }
    }
}

impl<T: Plain> Lines<T> {
    /// As `Vec::resize`: new elements are `value`, a shorter length keeps the memory.
    pub fn resize(&mut self, len: usize, value: T) {
        const { assert!(std::mem::size_of::<T>() > 0 && 64 % std::mem::size_of::<T>() == 0) };
        let per = 64 / std::mem::size_of::<T>();
        let need = len.div_ceil(per);
        if self.lines.len() < need {
            self.lines.resize(need, Line([0; 64]));
        }
        let old = self.len;
        self.len = len;
        if len > old {
            self[old..].fill(value);
        }
    }
}

impl<T: Plain> std::ops::Deref for Lines<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // Safety: `resize` keeps len elements of T within the lines, T is plain (any
        // bits are a value) and a line's alignment is a multiple of T's.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr() as *const T, self.len) }
    }
}

impl<T: Plain> std::ops::DerefMut for Lines<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // Safety: as in `deref`; `&mut self` keeps the slice unique.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr() as *mut T, self.len) }
    }
}

/// Weight rows and tokens per tile product of a `Gemm`: threads take whole tiles of
/// rows, and `Q8Act::pack_tiles` arranges the tokens in whole tiles.
pub const GEMM_TILE: usize = 16;

/// One implementation of every kernel. The SIMD tables hold safe wrappers around
/// `#[target_feature]` functions; they are only handed out after feature detection,
/// which is what makes those wrappers sound.
pub struct Kernels {
    pub name: &'static str,
    pub dot_f32: fn(&[f32], &[f32]) -> f32,
    /// `dot_f32` of one vector with many: `(a, b, stride, out)` sets out[j] to
    /// dot_f32(a, b[j·stride..j·stride + a.len()]), bit for bit (attention scores: a
    /// query against the cached keys, several at once to hide the add latency).
    pub dots_f32: fn(&[f32], &[f32], usize, &mut [f32]),
    /// `(w, v, stride, out)` sets out[i] to 0.0 + w[0]·v[i] + w[1]·v[stride + i] + …,
    /// added in that order (attention's weighted sum of the cached values).
    pub weighted_sum_f32: fn(&[f32], &[f32], usize, &mut [f32]),
    /// f16 weight bytes · f32 activation.
    pub dot_f16: fn(&[u8], &[f32]) -> f32,
    pub dot_q8_0: QDot,
    pub dot_q4_0: QDot,
    pub dot_q4_1: QDot,
    pub dot_q5_0: QDot,
    pub dot_q5_1: QDot,
    pub dot_q4_k: QDot,
    pub dot_q5_k: QDot,
    pub dot_q6_k: QDot,
    pub quantize: Quantize,
    /// A batched product for prefill of the types `tile_form` names, where the CPU
    /// has one (AMX).
    pub gemm: Option<Gemm>,
    /// Rows in the `interleave8` layout (`rows8_dtypes`), 8 at a time, where a path has it.
    pub rows8: Option<Rows8>,
    /// `rows8` for `tile_tokens` tokens at once, where a path has it.
    pub rows8_tokens: Option<Rows8Tokens>,
    /// Tokens per `rows8_tokens` call (as many as the path's registers hold).
    pub tile_tokens: usize,
    /// `rows8_tokens` over two consecutive groups (16 rows) of an `interleaves` type at
    /// once, where a path has it (AVX-512: one zmm per chunk of both groups); token t's
    /// 16 results at out[16t..16t + 16], for `tile_tokens` tokens. `rows16_for` says
    /// whether it takes a type.
    pub rows16_tokens: Option<Rows8Tokens>,
    /// The types `rows8` (and `rows8_tokens`) take: q8_0 and q4_0 always, and of the
    /// other `interleaves` types those the path has code for.
    pub rows8_dtypes: &'static [DType],
    /// Whether `rows8` runs faster on a `Q8Row::spread` (it works without one too).
    pub rows8_spread: bool,
    /// A second decode `rows8` of half the width, where a path has one (AVX-512 with
    /// VNNI: AVX2's), bit for bit the same results. Which of the two decodes faster
    /// depends on the CPU, not on the features it reports: on Zen 4, which runs a
    /// 512-bit operation as two 256-bit halves, AVX2's read SmolLM2 Q8_0 at 144
    /// tok/s against 101; on Zen 5 and on Intel the 512-bit one is faster. So
    /// `Model::tune_decode_width` measures both on the loaded model and
    /// `set_wide_decode` keeps the faster (`Kernels::decode_rows8`).
    pub rows8_narrow: Option<Rows8>,
    /// k-quant rows against several tokens at once, where a path has it.
    pub k_tokens: Option<KTokens>,
    /// Tokens per `k_tokens` call.
    pub k_tokens_n: usize,
}

impl Kernels {
    /// This path's two-group tile kernel for `dtype`, if it has one for that type.
    pub fn rows16_for(&self, dtype: DType) -> Option<Rows8Tokens> {
        self.rows16_tokens.filter(|_| interleaves(dtype))
    }

    /// The `rows8` a single token takes (a decode step, and prefill's tokens left
    /// over from whole tiles): `rows8_narrow` where the path has one and
    /// `set_wide_decode(false)` chose it, else `rows8`. The results are the same
    /// either way.
    pub fn decode_rows8(&self) -> Option<Rows8> {
        match self.rows8_narrow {
            Some(narrow) if !wide_decode() => Some(narrow),
            _ => self.rows8,
        }
    }

    /// Whether a decode step should spread its value pairs first: only for the
    /// `rows8` that takes them (`rows8_spread`), not when `rows8_narrow` runs instead.
    pub fn decode_spread(&self) -> bool {
        self.rows8_spread && (self.rows8_narrow.is_none() || wide_decode())
    }

    /// Whether weights of `dtype` are laid out in `interleave8` groups for this path.
    pub fn interleaves(&self, dtype: DType) -> bool {
        self.rows8.is_some() && interleaves(dtype) && self.rows8_dtypes.contains(&dtype)
    }

    /// The kernel for a weight type whose activations are quantized, or None for
    /// f32/f16 (which take f32 activations).
    pub fn qdot(&self, dtype: DType) -> Option<QDot> {
        match dtype {
            DType::Q8_0 => Some(self.dot_q8_0),
            DType::Q4_0 => Some(self.dot_q4_0),
            DType::Q4_1 => Some(self.dot_q4_1),
            DType::Q5_0 => Some(self.dot_q5_0),
            DType::Q5_1 => Some(self.dot_q5_1),
            DType::Q4K => Some(self.dot_q4_k),
            DType::Q5K => Some(self.dot_q5_k),
            DType::Q6K => Some(self.dot_q6_k),
            DType::F32 | DType::F16 => None,
        }
    }
}

pub static SCALAR: Kernels = Kernels {
    name: "scalar",
    dot_f32: scalar::dot_f32,
    dots_f32: scalar::dots_f32,
    weighted_sum_f32: scalar::weighted_sum_f32,
    dot_f16: scalar::dot_f16,
    dot_q8_0: scalar::dot_q8_0,
    dot_q4_0: scalar::dot_q4_0,
    dot_q4_1: scalar::dot_q4_1,
    dot_q5_0: scalar::dot_q5_0,
    dot_q5_1: scalar::dot_q5_1,
    dot_q4_k: scalar::dot_q4_k,
    dot_q5_k: scalar::dot_q5_k,
    dot_q6_k: scalar::dot_q6_k,
    quantize: scalar::quantize,
    gemm: None,
    rows8: None,
    rows8_tokens: None,
    tile_tokens: 0,
    rows16_tokens: None,
    rows8_dtypes: &[],
    rows8_spread: false,
    rows8_narrow: None,
    k_tokens: None,
    k_tokens_n: 0,
};

/// Every type an `interleave8` layout exists for, as the full-featured `rows8` kernels
/// (AVX2, AVX-VNNI, simd128) take them.
pub const ROWS8_ALL: &[DType] = &[
    DType::Q8_0,
    DType::Q4_0,
    DType::Q4_1,
    DType::Q5_0,
    DType::Q5_1,
];

/// Every path this machine can run, preferred first; the scalar reference is always last.
// Built by pushes because each path is behind its own cfg.
#[allow(clippy::vec_init_then_push)]
pub fn available() -> Vec<&'static Kernels> {
    let mut v: Vec<&'static Kernels> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    v.extend(x86::available());
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    v.push(&wasm::SIMD128);
    v.push(&SCALAR);
    v
}

/// The path `SLM_KERNEL` asks for: None when unset or empty, an error naming the
/// paths this machine has when the name is not one of them (a typo never falls back
/// silently).
pub fn requested() -> crate::Result<Option<&'static Kernels>> {
    #[cfg(not(target_arch = "wasm32"))]
    let want = std::env::var("SLM_KERNEL").unwrap_or_default();
    #[cfg(target_arch = "wasm32")]
    let want = String::new();
    if want.is_empty() {
        return Ok(None);
    }
    let all = available();
    all.iter()
        .find(|k| k.name == want)
        .copied()
        .map(Some)
        .ok_or_else(|| {
            crate::SlmError::Invalid(format!(
                "SLM_KERNEL={want}: this machine runs {:?}",
                all.iter().map(|k| k.name).collect::<Vec<_>>()
            ))
        })
}

/// The path used by the model: chosen once (detection and the env lookup are not free).
/// `Engine::load` refuses a bad `SLM_KERNEL` first ([`requested`]).
pub fn active() -> &'static Kernels {
    static K: OnceLock<&'static Kernels> = OnceLock::new();
    K.get_or_init(|| requested().ok().flatten().unwrap_or(available()[0]))
}

#[cfg(test)]
mod tests {
    use super::{Band, Lines};

    #[test]
    fn bands_cover_their_columns_once() {
        // 3 tokens × 10 columns in bands of 4: widths 4, 4, 2.
        let mut y = vec![0f32; 30];
        let bands: Vec<Band> = Band::new(&mut y, 3, 10).split(4).collect();
        assert_eq!(
            bands.iter().map(|b| b.rows()).collect::<Vec<_>>(),
            [4, 4, 2]
        );
        for mut b in bands {
            for t in 0..3 {
                for r in 0..b.rows() {
                    let v = (100 * t + b.first() + r) as f32;
                    b.set(t, r, v);
                }
            }
        }
        let want: Vec<f32> = (0..30).map(|i| (100 * (i / 10) + i % 10) as f32).collect();
        assert_eq!(y, want);
        // No tokens: bands exist, nothing is written.
        let mut empty: Vec<f32> = Vec::new();
        assert_eq!(Band::new(&mut empty, 0, 10).split(4).count(), 3);
    }

    #[test]
    fn lines_start_on_a_cache_line_and_resize_like_a_vec() {
        let mut a: Lines<i16> = Lines::default();
        assert!(a.is_empty());
        a.resize(40, 7);
        assert_eq!(a.as_ptr() as usize % 64, 0);
        assert_eq!(&a[..], &[7i16; 40][..]);
        a[3] = -1;
        a.resize(5, 0);
        assert_eq!(&a[..], &[7, 7, 7, -1, 7][..]);
        a.resize(100, 2);
        assert_eq!(a.len(), 100);
        assert_eq!(&a[..5], &[7, 7, 7, -1, 7][..]);
        assert!(a[5..].iter().all(|&v| v == 2));
        assert_eq!(a.as_ptr() as usize % 64, 0);
    }

    #[test]
    #[should_panic]
    fn a_span_past_the_band_is_refused() {
        let mut y = vec![0f32; 20];
        let mut b = Band::new(&mut y, 2, 10).split(4).nth(2).unwrap();
        b.span(0, usize::MAX, 2);
    }
}
