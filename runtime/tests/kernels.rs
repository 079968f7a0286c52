//! Every available kernel path against the scalar reference, and the scalar reference
//! against a naive dequantize-then-dot in f64, so that a wrong reference fails too.
//! Also built for wasm32 with simd128 and run under node (`scripts/wasm-kernel-test.sh`),
//! which is the only way the simd128 path gets checked.

use half::f16;
use slm_runtime::kernels::{
    available, round_to_act, scalar, set_act_bits, set_read_ahead, split_act, Q8Act, Q8Row,
    ReadAhead, ACT_MAX, DIGITS_MAX, SCALAR,
};

/// Both activation precisions (`kernels::act_bits`): two digit planes, or one.
const ACT_BITS: [u32; 2] = [13, 8];
/// The ranges a quantizer rounds to: the 13-bit default and the 8-bit mode's first
/// rounding.
const ACT_MAXES: [i32; 2] = [ACT_MAX, DIGITS_MAX];
use slm_runtime::model::weight::Weight;
use slm_runtime::parallel::Threads;
use slm_runtime::quant::{self, DType};

struct Rng(u64);
impl Rng {
    fn u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 32) as u32
    }
    fn f(&mut self) -> f32 {
        self.u32() as f32 / u32::MAX as f32 * 2.0 - 1.0
    }
    fn below(&mut self, n: u32) -> u32 {
        self.u32() % n
    }
}

/// Every quantized type (those whose dots take a quantized activation).
fn qdtypes() -> impl Iterator<Item = DType> {
    DType::ALL.into_iter().filter(|&d| SCALAR.qdot(d).is_some())
}

/// The widths of `COLS` that are whole rows of `dtype`'s blocks.
fn cols_of(dtype: DType) -> impl Iterator<Item = usize> {
    COLS.into_iter()
        .filter(move |c| c.is_multiple_of(dtype.block().0))
}

/// Byte offsets of a block's f16 fields (scales, minima), which are set to finite
/// values; every other byte is payload.
fn f16_fields(dtype: DType) -> &'static [usize] {
    match dtype {
        DType::Q8_0 | DType::Q4_0 | DType::Q5_0 => &[0],
        DType::Q4_1 | DType::Q5_1 | DType::Q4K | DType::Q5K => &[0, 2],
        DType::Q6K => &[208],
        DType::F32 | DType::F16 => &[],
    }
}
const COLS: [usize; 11] = [32, 64, 96, 224, 256, 288, 544, 576, 1536, 4096, 4864];

/// A random row of `cols` activations with edge blocks: all zero, one dominant value
/// (quantizes to exactly ±ACT_MAX), tiny and large magnitudes.
fn activation(rng: &mut Rng, cols: usize) -> Vec<f32> {
    let mut x = vec![0f32; cols];
    for blk in x.chunks_exact_mut(32) {
        let scale = [1e-3f32, 0.1, 1.0, 30.0][rng.below(4) as usize];
        match rng.below(6) {
            0 => {} // zero block
            1 => {
                let big = rng.below(32) as usize;
                blk[big] = if rng.below(2) == 0 { -scale } else { scale };
            }
            _ => blk.iter_mut().for_each(|v| *v = rng.f() * scale),
        }
    }
    x
}

/// `n` activation rows of different magnitudes (cycling through 1, 1e-3, 40, 0.25),
/// to be quantized together.
fn tokens_of_magnitudes(rng: &mut Rng, n: usize, cols: usize) -> Vec<f32> {
    (0..n)
        .flat_map(|t| {
            let s = [1.0, 1e-3, 40.0, 0.25][t % 4];
            activation(rng, cols).into_iter().map(move |v| v * s)
        })
        .collect()
}

fn f16_bytes(v: f32) -> [u8; 2] {
    f16::from_f32(v).to_le_bytes()
}

/// A random encoded row: random quants (so every i8 / nibble / bit pattern occurs),
/// with edge blocks: every payload byte 0x80 (q8_0 −128; q6_k's scales −128 with
/// quants −32: the largest product), 0x7f, 0x00 (nibble 0) or 0xff (nibble 15 and
/// every fifth bit; k-quant scales and minima 63), and zero scales.
fn weight_row(rng: &mut Rng, dtype: DType, cols: usize) -> Vec<u8> {
    let (bw, bb) = dtype.block();
    let fields = f16_fields(dtype);
    let mut out = Vec::new();
    for _ in 0..cols / bw {
        let mut b: Vec<u8> = (0..bb).map(|_| rng.u32() as u8).collect();
        let fill = match rng.below(7) {
            0 => Some(0x80u8),
            1 => Some(0x7f),
            2 => Some(0x00),
            3 => Some(0xff),
            4 if dtype == DType::Q4_0 => Some(0x88), // (8 − 8) = 0
            _ => None,
        };
        if let Some(f) = fill {
            b.iter_mut().for_each(|v| *v = f);
        }
        for (k, &at) in fields.iter().enumerate() {
            let v = if k == 0 && rng.below(8) == 0 {
                0.0
            } else {
                rng.f() * if k == 0 { 0.05 } else { 0.1 }
            };
            b[at..at + 2].copy_from_slice(&f16_bytes(v));
        }
        out.extend_from_slice(&b);
    }
    out
}

/// Naive f64 reference: dequantize weights and activations, dot; also the scale the
/// tolerance is relative to: Σ|terms| per (sub-)block, the min terms of the types that
/// have them (q4_1, q5_1, q4_k, q5_k) counted apart, as the kernels add them apart.
fn naive(dtype: DType, w: &[u8], x: &Q8Row, cols: usize) -> (f64, f64) {
    let mut wd = vec![0f32; cols];
    quant::dequantize(dtype, w, &mut wd);
    let (mut s, mut mag) = (0f64, 0f64);
    for b in 0..cols / 32 {
        let mut t = 0f64;
        for (j, &w) in wd.iter().enumerate().skip(32 * b).take(32) {
            t += w as f64 * (x.d[b] as f64 * x.value(j) as f64);
        }
        s += t;
        // The min (offset) of block b: m for q4_1/q5_1, −dmin·m_j for the k-quants.
        let m = match dtype {
            DType::Q4_1 => scalar::f16_at(w, 20 * b + 2) as f64,
            DType::Q5_1 => scalar::f16_at(w, 24 * b + 2) as f64,
            DType::Q4K | DType::Q5K => {
                let sb = &w[dtype.block().1 * (b / 8)..];
                let (_, m) = quant::scale_min_k4(b % 8, &sb[4..16]);
                -(scalar::f16_at(sb, 2) as f64) * m as f64
            }
            _ => 0.0,
        };
        let tm = m * x.d[b] as f64 * x.s[b] as f64;
        mag += (t - tm).abs() + tm.abs();
    }
    (s, mag)
}

fn close(got: f32, want: f64, mag: f64) -> bool {
    (got as f64 - want).abs() <= 1e-5 * mag + 1e-30
}

/// The branch-free rounding equals `round().clamp() as i32` (ties away from zero) on
/// every half-integer in range and its neighbours, and on a stride through all the
/// other bit patterns, for both ranges.
#[test]
fn activation_rounding_equals_round_half_away() {
    for max in ACT_MAXES {
        rounding_equals_round_half_away(max);
    }
}

fn rounding_equals_round_half_away(max: i32) {
    let m = max as f32;
    let reference = |v: f32| v.round().clamp(-m, m) as i32;
    let mut checked = 0u64;
    let mut check = |v: f32| {
        assert_eq!(
            round_to_act(v, max),
            reference(v),
            "{v:e} ({:#010x}) max {max}",
            v.to_bits()
        );
        checked += 1;
    };
    for bits in 0..=u32::MAX / 4099 {
        check(f32::from_bits(bits * 4099));
    }
    // Every half-integer and its two neighbours, where the rounding could go wrong.
    for k in -2 * max - 4..=2 * max + 4 {
        let h = k as f32 * 0.5;
        for v in [
            h,
            f32::from_bits(h.to_bits().wrapping_sub(1)),
            f32::from_bits(h.to_bits().wrapping_add(1)),
        ] {
            check(v);
        }
    }
    for v in [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
    ] {
        check(v);
    }
    assert!(checked > 1_000_000);
}

/// Every value the digits hold splits into two digits in −127..=127 that give it back.
#[test]
fn activation_digits_cover_the_range() {
    for v in -DIGITS_MAX..=DIGITS_MAX {
        let (h, l) = split_act(v);
        assert!(h != -128 && l != -128, "{v}: {h} {l}");
        assert_eq!(255 * h as i32 + l as i32, v);
    }
}

/// The model's own exp (used by SiLU and softmax) is faithful: within one ulp of the
/// true value (f64 exp) on the f32 values in [−104, 89] at a stride and on the
/// specials, and mostly the correctly rounded value. (Run once on every f32 in that
/// range, 2.24e9 inputs: 99.19% correctly rounded, the rest the other neighbour.)
#[test]
fn exp_is_faithful() {
    // Within one ulp of the true value: the correctly rounded f32 or its neighbour.
    // Positive floats order like their bits, so that is a bit distance of at most 1.
    let (mut checked, mut exact) = (0u64, 0u64);
    let mut check = |x: f32| {
        let want = (x as f64).exp() as f32;
        let got = slm_runtime::model::exp(x);
        if want.is_nan() {
            assert!(got.is_nan(), "exp({x:e}) = {got:e}, want NaN");
            return;
        }
        let dist = (got.to_bits() as i64 - want.to_bits() as i64).abs();
        assert!(dist <= 1, "exp({x:e}) = {got:e}, want {want:e}");
        checked += 1;
        exact += (dist == 0) as u64;
    };
    let (lo, hi) = (-104f32, 89f32);
    for bits in (0..=u32::MAX).step_by(331) {
        let x = f32::from_bits(bits);
        if (lo..=hi).contains(&x) {
            check(x);
        }
    }
    for x in [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1.0,
        88.72,
        88.73,
        -87.5,
        -103.9,
        -104.0,
        1e-30,
        -1e-30,
    ] {
        check(x);
    }
    assert!(checked > 5_000_000, "{checked}");
    // The full sweep gave 99.19% correctly rounded.
    assert!(exact as f64 > 0.99 * checked as f64, "{exact} of {checked}");
    assert_eq!(slm_runtime::model::exp(0.0), 1.0);
}

#[test]
fn activation_quantization_is_bounded_and_summed() {
    let mut rng = Rng(7);
    let x = activation(&mut rng, 4096);
    let mut a = Q8Act::default();
    a.quantize_bits(&x, 4096, 13);
    let r = a.row(0);
    for b in 0..128 {
        let xs = &x[32 * b..32 * b + 32];
        let amax = xs.iter().fold(0f32, |m, v| m.max(v.abs()));
        assert_eq!(r.d[b], amax / ACT_MAX as f32);
        let q: Vec<i32> = (32 * b..32 * b + 32).map(|j| r.value(j)).collect();
        assert_eq!(r.s[b], q.iter().sum::<i32>());
        // The values and the digits the byte-product paths take are one number.
        for (j, &qv) in (32 * b..).zip(&q) {
            assert_eq!(qv, 255 * r.hi[j] as i32 + r.lo[j] as i32, "value {j}");
        }
        if amax > 0.0 {
            assert!(
                q.iter().any(|v| v.abs() == ACT_MAX),
                "block {b} does not reach ±{ACT_MAX}"
            );
        }
        for (v, &qv) in xs.iter().zip(&q) {
            // Half a step, and the rounding of x/d (an f32 product) on top.
            let err = (*v as f64 - r.d[b] as f64 * qv as f64).abs();
            assert!(err <= r.d[b] as f64 * 0.51, "{v} vs {qv}");
        }
    }
    // NaN is not silently quantized away.
    let mut y = vec![1f32; 32];
    y[3] = f32::NAN;
    a.quantize_bits(&y, 32, 13);
    assert!((scalar::dot_q8_0(&weight_row(&mut rng, DType::Q8_0, 32), &a.row(0))).is_nan());
}

/// Each path's activation quantizer gives the scalar one's bits, at both ranges:
/// random blocks, and blocks with NaN, ±∞, −0.0, subnormals and values that land
/// exactly on ±k.5 steps.
#[test]
fn every_path_quantizes_like_scalar() {
    for max in ACT_MAXES {
        quantizes_like_scalar(max);
    }
}

fn quantizes_like_scalar(max: i32) {
    let mut rng = Rng(11);
    let mut x = Vec::new();
    for _ in 0..64 {
        x.extend(activation(&mut rng, 32 * 16));
    }
    let specials = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        1e-40,
        -3e-39,
    ];
    for (b, &sp) in specials.iter().enumerate() {
        let blk = &mut x[32 * b..32 * b + 32];
        blk[(7 * b) % 32] = sp;
    }
    // A block of subnormals only: d is subnormal and 1/d overflows to ∞ (id = 0).
    for (j, v) in x[32 * 9..32 * 10].iter_mut().enumerate() {
        *v = f32::from_bits(j as u32 * 3 + 1) * if j % 2 == 0 { 1.0 } else { -1.0 };
    }
    // Exact ties: amax = max gives d = 1, so k + 0.5 sits on a rounding boundary.
    for (j, v) in x[32 * 8..32 * 9].iter_mut().enumerate() {
        *v = if j == 0 { max as f32 } else { j as f32 - 15.5 };
    }
    // Every whole value in range, d = 1 again: each SIMD digit split is checked.
    let sweep = x.len();
    for v in -max..=max {
        if x.len() % 32 == 0 {
            x.push(max as f32);
        }
        x.push(v as f32);
    }
    x.resize(x.len().div_ceil(32) * 32, 0.0);
    let nb = x.len() / 32;
    let quantize = |k: &slm_runtime::kernels::Kernels| {
        let (mut d, mut s) = (vec![0f32; nb], vec![0i32; nb]);
        let (mut hi, mut lo) = (vec![0i8; nb * 32], vec![0i8; nb * 32]);
        (k.quantize)(&x, max, &mut d, &mut hi, &mut lo, &mut s);
        (d.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), hi, lo, s)
    };
    let want = quantize(&SCALAR);
    let value = |j: usize| 255 * want.1[j] as i32 + want.2[j] as i32;
    assert!(f32::from_bits(want.0[0]).is_nan() && value(32 * 8 + 1) == -15);
    assert_eq!(value(sweep + 1), -max);
    for k in available() {
        assert_eq!(quantize(k), want, "{} max {max}", k.name);
    }
}

#[test]
fn scalar_reference_matches_naive_dequantized_dot() {
    let mut rng = Rng(1);
    for (dtype, bits) in qdtypes().flat_map(|d| ACT_BITS.map(|b| (d, b))) {
        for cols in cols_of(dtype) {
            for _ in 0..5 {
                let x = activation(&mut rng, cols);
                let mut a = Q8Act::default();
                a.quantize_bits(&x, cols, bits);
                let w = weight_row(&mut rng, dtype, cols);
                let got = (SCALAR.qdot(dtype).unwrap())(&w, &a.row(0));
                let (want, mag) = naive(dtype, &w, &a.row(0), cols);
                assert!(
                    close(got, want, mag),
                    "{dtype:?} {cols}: {got} vs {want} (Σ|t| {mag})"
                );
            }
        }
    }
}

#[test]
fn every_path_matches_scalar_on_quantized_rows() {
    let paths = available();
    eprintln!(
        "kernel paths: {:?}",
        paths.iter().map(|k| k.name).collect::<Vec<_>>()
    );
    let mut rng = Rng(2);
    for k in &paths {
        for (dtype, bits) in qdtypes().flat_map(|d| ACT_BITS.map(|b| (d, b))) {
            for cols in cols_of(dtype) {
                // Three rows (odd) of one weight, one activation, like a tiny matvec.
                let x = activation(&mut rng, cols);
                let mut a = Q8Act::default();
                a.quantize_bits(&x, cols, bits);
                for _ in 0..3 {
                    let w = weight_row(&mut rng, dtype, cols);
                    let want = (SCALAR.qdot(dtype).unwrap())(&w, &a.row(0));
                    let got = (k.qdot(dtype).unwrap())(&w, &a.row(0));
                    let (naive, mag) = naive(dtype, &w, &a.row(0), cols);
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "{} {dtype:?} {bits}-bit {cols}: {got} vs scalar {want} (paths must agree bit for bit)",
                        k.name
                    );
                    assert!(
                        close(got, naive, mag),
                        "{} {dtype:?} {cols}: {got} vs naive {naive}",
                        k.name
                    );
                }
            }
        }
    }
}

/// `k_tokens` (one k-quant row against several tokens) gives each token's scalar dot
/// bit for bit, at both precisions, on every path that has it.
#[test]
fn k_quant_token_runs_match_scalar() {
    let mut rng = Rng(11);
    let paths: Vec<_> = available()
        .into_iter()
        .filter(|k| k.k_tokens.is_some())
        .collect();
    for k in paths {
        let (f, per) = (k.k_tokens.unwrap(), k.k_tokens_n);
        for (dtype, bits) in [DType::Q4K, DType::Q5K, DType::Q6K]
            .into_iter()
            .flat_map(|d| ACT_BITS.map(|b| (d, b)))
        {
            for cols in cols_of(dtype) {
                let x = tokens_of_magnitudes(&mut rng, per, cols);
                let mut a = Q8Act::default();
                a.quantize_bits(&x, cols, bits);
                let w = weight_row(&mut rng, dtype, cols);
                let xs: Vec<Q8Row> = (0..per).map(|t| a.row(t)).collect();
                let mut got = vec![0f32; per];
                f(dtype, &w, &xs, &mut got);
                for (t, g) in got.iter().enumerate() {
                    let want = (SCALAR.qdot(dtype).unwrap())(&w, &a.row(t));
                    assert_eq!(
                        g.to_bits(),
                        want.to_bits(),
                        "{} {dtype:?} {bits}-bit {cols} token {t}: {g} vs scalar {want}",
                        k.name
                    );
                }
            }
        }
    }
}

/// `rows8` (8 rows at once in the `interleave8` layout) gives each row's scalar dot bit
/// for bit, at both precisions, for every path that has it, at both of a path's
/// decode widths (`rows8_narrow`).
#[test]
fn interleaved_rows_match_scalar() {
    let mut rng = Rng(7);
    let all = available();
    let widths = all.iter().flat_map(|k| {
        [k.rows8, k.rows8_narrow]
            .into_iter()
            .flatten()
            .map(move |f| (k, f))
    });
    for (k, rows8) in widths {
        for (dtype, bits) in qdtypes()
            .filter(|&d| k.interleaves(d))
            .flat_map(|d| ACT_BITS.map(|b| (d, b)))
        {
            for cols in COLS {
                let x = activation(&mut rng, cols);
                let mut a = Q8Act::default();
                a.quantize_bits(&x, cols, bits);
                // Two groups of 8 rows.
                let rows: Vec<Vec<u8>> =
                    (0..16).map(|_| weight_row(&mut rng, dtype, cols)).collect();
                let mut w = rows.concat();
                slm_runtime::kernels::interleave8(dtype, &mut w, rows[0].len());
                assert_ne!(w, rows.concat(), "the layout moves bytes");
                let mut out = vec![0f32; 16];
                rows8(dtype, &w, &a.row(0), &mut out);
                for (r, row) in rows.iter().enumerate() {
                    let want = (SCALAR.qdot(dtype).unwrap())(row, &a.row(0));
                    assert_eq!(
                        out[r].to_bits(),
                        want.to_bits(),
                        "{} {dtype:?} {bits}-bit {cols} row {r}: {} vs scalar {want}",
                        k.name,
                        out[r]
                    );
                }
            }
        }
    }
}

/// simd128's f16 → f32 (the group scales of `rows8`) equals half's conversion on every
/// bit pattern: zeros, subnormals, normals, infinities, NaNs. Eight at a time, it takes
/// a shorter path when all eight are finite: each pattern goes through both, alone
/// (eight copies) and beside an infinity or a NaN (the general path).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[test]
fn simd_f16_conversion_is_exact_on_every_pattern() {
    let check = |hs: [u16; 8]| {
        let got = slm_runtime::kernels::f16x8_to_f32_simd(hs);
        for (h, g) in hs.into_iter().zip(got) {
            let want = f16::from_bits(h).to_f32();
            assert_eq!(
                g.to_bits(),
                want.to_bits(),
                "f16 bits {h:#06x} in {hs:04x?}"
            );
        }
    };
    for h in 0..=u16::MAX {
        check([h; 8]);
        check([h, h, h, 0x7c00, h, h, h, h]);
        check([h, h, h, h, h, h, 0xfe01, h]);
    }
}

/// `rows8_tokens` (one group of 8 rows, the path's `tile_tokens` tokens at once) gives each row's
/// scalar dot for each token, bit for bit, at both precisions, on every path that has
/// it: the tokens must not share anything but the weights.
#[test]
fn token_tiles_match_scalar() {
    let mut rng = Rng(11);
    let paths: Vec<_> = available()
        .into_iter()
        .filter(|k| k.rows8_tokens.is_some())
        .collect();
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        assert!(!paths.is_empty(), "an AVX2 machine has a token-tile kernel");
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    assert!(!paths.is_empty(), "simd128 has a token-tile kernel");
    for k in paths {
        assert!(k.tile_tokens > 0, "{}: a tile kernel takes tokens", k.name);
        let dtypes: Vec<DType> = qdtypes().filter(|&d| k.interleaves(d)).collect();
        tiles_match_scalar(
            &mut rng,
            k.name,
            k.rows8_tokens.unwrap(),
            k.tile_tokens,
            1,
            &dtypes,
        );
    }
}

/// A tile kernel over `groups` interleaved groups of 8 rows and `tokens` tokens gives
/// each row's scalar dot for each token bit for bit, at both activation precisions;
/// token t's results at out[8·groups·t..].
fn tiles_match_scalar(
    rng: &mut Rng,
    name: &str,
    tile: slm_runtime::kernels::Rows8Tokens,
    tokens: usize,
    groups: usize,
    dtypes: &[DType],
) {
    let rows_n = 8 * groups;
    for (dtype, bits) in dtypes.iter().flat_map(|&d| ACT_BITS.map(|b| (d, b))) {
        for cols in COLS {
            let x = tokens_of_magnitudes(rng, tokens, cols);
            let mut a = Q8Act::default();
            a.quantize_bits(&x, cols, bits);
            let rows: Vec<Vec<u8>> = (0..rows_n).map(|_| weight_row(rng, dtype, cols)).collect();
            let mut w = rows.concat();
            slm_runtime::kernels::interleave8(dtype, &mut w, rows[0].len());
            let xs: Vec<_> = (0..tokens).map(|t| a.row(t)).collect();
            let mut out = vec![f32::NAN; rows_n * tokens];
            tile(dtype, &w, &xs, &mut out);
            for t in 0..tokens {
                for (r, row) in rows.iter().enumerate() {
                    let want = (SCALAR.qdot(dtype).unwrap())(row, &a.row(t));
                    let got = out[rows_n * t + r];
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "{name} {dtype:?} {bits}-bit {cols} token {t} row {r}: {got} vs scalar {want}",
                    );
                }
            }
        }
    }
}

/// `rows16_tokens` (two groups, 16 rows, of any interleaved type, the path's `tile_tokens` tokens
/// at once) gives each row's scalar dot for each token, bit for bit, at both precisions:
/// the two groups share registers, never sums.
#[test]
fn two_group_token_tiles_match_scalar() {
    let mut rng = Rng(13);
    let paths: Vec<_> = available()
        .into_iter()
        .filter(|k| k.rows16_tokens.is_some())
        .collect();
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512vnni") {
        assert!(
            !paths.is_empty(),
            "an AVX-512 VNNI machine has a two-group tile kernel"
        );
    }
    for k in paths {
        let tile = k.rows16_tokens.unwrap();
        let dtypes: Vec<DType> = qdtypes()
            .filter(|&d| slm_runtime::kernels::interleaves(d))
            .collect();
        tiles_match_scalar(&mut rng, k.name, tile, k.tile_tokens, 2, &dtypes);
    }
}

/// With one non-zero block, no cross-block accumulation happens, so every path must be
/// bit-identical to the scalar one: this pins the per-block integer sums exactly, for
/// the block in each position of the 8-block batches and of the tail.
#[test]
fn per_block_sums_are_bit_identical() {
    let mut rng = Rng(3);
    for k in available() {
        for (dtype, bits) in qdtypes().flat_map(|d| ACT_BITS.map(|b| (d, b))) {
            let (bw, bb) = dtype.block();
            let widths: [usize; 7] = [32, 96, 288, 544, 256, 768, 2304];
            for cols in widths.into_iter().filter(|c| c.is_multiple_of(bw)) {
                for nz in 0..cols / bw {
                    let x = activation(&mut rng, cols);
                    let mut a = Q8Act::default();
                    a.quantize_bits(&x, cols, bits);
                    let mut w = weight_row(&mut rng, dtype, cols);
                    for b in (0..cols / bw).filter(|&b| b != nz) {
                        // Scales (and minima) 0.
                        for &at in f16_fields(dtype) {
                            w[b * bb + at..b * bb + at + 2].fill(0);
                        }
                    }
                    let want = (SCALAR.qdot(dtype).unwrap())(&w, &a.row(0));
                    let got = (k.qdot(dtype).unwrap())(&w, &a.row(0));
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "{} {dtype:?} {bits}-bit {cols} block {nz}: {got} vs {want}",
                        k.name
                    );
                }
            }
        }
    }
}

#[test]
fn every_path_matches_scalar_on_f32_and_f16() {
    let mut rng = Rng(4);
    for k in available() {
        for n in [1usize, 7, 8, 33, 64, 100, 577, 1536, 4096, 4099] {
            let a: Vec<f32> = (0..n).map(|_| rng.f() * 3.0).collect();
            let b: Vec<f32> = (0..n).map(|_| rng.f()).collect();
            let h: Vec<u8> = a.iter().flat_map(|v| f16_bytes(*v)).collect();
            let ah: Vec<f32> = a.iter().map(|v| f16::from_f32(*v).to_f32()).collect();
            for (got, w) in [((k.dot_f32)(&a, &b), &a), ((k.dot_f16)(&h, &b), &ah)] {
                let want: f64 = w.iter().zip(&b).map(|(p, q)| *p as f64 * *q as f64).sum();
                let mag: f64 = w
                    .iter()
                    .zip(&b)
                    .map(|(p, q)| (*p as f64 * *q as f64).abs())
                    .sum();
                assert!(close(got, want, mag), "{} n={n}: {got} vs {want}", k.name);
            }
            assert_eq!(
                (k.dot_f32)(&a, &b).to_bits(),
                (SCALAR.dot_f32)(&a, &b).to_bits(),
                "{} f32 n={n}",
                k.name
            );
            assert_eq!(
                (k.dot_f16)(&h, &b).to_bits(),
                (SCALAR.dot_f16)(&h, &b).to_bits(),
                "{} f16 n={n}",
                k.name
            );
        }
    }
}

/// `dots_f32` (attention scores) is `dot_f32` per strided row, bit for bit, on every
/// path: lengths with and without a tail, 0..9 rows (whole groups of 4 and leftovers).
#[test]
fn every_path_dots_like_dot_f32() {
    let mut rng = Rng(6);
    for k in available() {
        // Also an empty query and overlapping rows (stride < n).
        for (n, stride) in [
            (64usize, 192usize),
            (64, 64),
            (7, 9),
            (33, 40),
            (128, 256),
            (0, 4),
            (16, 8),
        ] {
            for rows in 0..10 {
                let a: Vec<f32> = (0..n).map(|_| rng.f()).collect();
                let b: Vec<f32> = (0..rows * stride + n).map(|_| rng.f() * 2.0).collect();
                let mut got = vec![f32::NAN; rows];
                (k.dots_f32)(&a, &b, stride, &mut got);
                let want: Vec<u32> = (0..rows)
                    .map(|j| (SCALAR.dot_f32)(&a, &b[j * stride..j * stride + n]).to_bits())
                    .collect();
                let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
                assert_eq!(got, want, "{} n={n} stride={stride} rows={rows}", k.name);
            }
        }
    }
}

/// `weighted_sum_f32` (attention's sum over V) gives the scalar bits on every path:
/// widths with 64-, 16-, 8- and 1-wide parts, 0..9 rows.
#[test]
fn every_path_weighted_sums_like_scalar() {
    let mut rng = Rng(8);
    for k in available() {
        for (n, stride) in [
            (64usize, 192usize),
            (64, 64),
            (7, 9),
            (75, 80),
            (100, 128),
            (128, 256),
            (0, 4),
        ] {
            for rows in 0..10 {
                let w: Vec<f32> = (0..rows).map(|_| rng.f()).collect();
                let v: Vec<f32> = (0..rows * stride + n).map(|_| rng.f() * 2.0).collect();
                let run = |k: &slm_runtime::kernels::Kernels| {
                    let mut out = vec![f32::NAN; n];
                    (k.weighted_sum_f32)(&w, &v, stride, &mut out);
                    out.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                };
                assert_eq!(run(k), run(&SCALAR), "{} n={n} rows={rows}", k.name);
            }
        }
    }
}

/// Weight::matvec / matmul with the active path: threads do not change results, and
/// matmul's per-token outputs equal matvec's bit for bit.
#[test]
fn matvec_and_matmul_agree_across_threads() {
    let mut rng = Rng(5);
    // wasm builds run on one thread (Threads::new(2) is refused there).
    #[cfg(not(target_arch = "wasm32"))]
    let (one, two) = (Threads::one(), Threads::new(2).unwrap());
    #[cfg(target_arch = "wasm32")]
    let (one, two) = (Threads::one(), Threads::one());
    // 517 rows: 32 whole 16-row tiles and 5 left over (not interleaved: not whole
    // groups of 8); 3 and 37 tokens: a partial tile, and two whole ones plus a partial
    // one; 96 columns: fewer blocks than lanes; 264 × 1024: interleaved and large
    // enough for matvec's thread split (groups of 8 per thread), 8 rows past the
    // second band's tiles. The k-quants take the shapes whose columns are whole
    // super-blocks (517 × 512 for their leftover rows). This is the one test here that
    // sets the global precision (the others pass theirs).
    for (bits, (rows, cols, n)) in ACT_BITS.into_iter().flat_map(|b| {
        [
            (517usize, 576usize, 3usize),
            (517, 576, 37),
            (517, 512, 37),
            (48, 1536, 20),
            (40, 96, 17),
            (264, 1024, 5),
        ]
        .map(|c| (b, c))
    }) {
        set_act_bits(bits);
        for dtype in [
            DType::F32,
            DType::F16,
            DType::Q8_0,
            DType::Q4_0,
            DType::Q4_1,
            DType::Q5_0,
            DType::Q5_1,
            DType::Q4K,
            DType::Q5K,
            DType::Q6K,
        ] {
            if !cols.is_multiple_of(dtype.block().0) {
                continue;
            }
            let mut bytes = Vec::new();
            if quant::quantize(dtype, &[0.0; 256][..dtype.block().0], &mut Vec::new()).is_err() {
                // No quantizer writes q5_0 or the k-quants (a GGUF's blocks are copied):
                // random blocks.
                (0..rows).for_each(|_| bytes.extend(weight_row(&mut rng, dtype, cols)));
            } else {
                let wf: Vec<f32> = (0..rows * cols).map(|_| rng.f()).collect();
                quant::quantize(dtype, &wf, &mut bytes).unwrap();
            }
            // The weight may rewrite its bytes (`interleave8`): keep the rows as stored.
            let stored = bytes.clone();
            let w = Weight::new(dtype, rows, cols, bytes).unwrap();
            let x: Vec<f32> = (0..n).flat_map(|_| activation(&mut rng, cols)).collect();
            let mut y1 = vec![0f32; n * rows];
            let mut y2 = vec![0f32; n * rows];
            w.matmul(&x, n, &mut y1, &one);
            w.matmul(&x, n, &mut y2, &two);
            assert_eq!(y1, y2, "{dtype:?} {bits}-bit matmul threads");
            // Against the scalar reference on the stored rows, and each row decoded.
            let rb = stored.len() / rows;
            let mut a = Q8Act::default();
            let (mut got, mut want) = (vec![0f32; cols], vec![0f32; cols]);
            for t in [0, n - 1] {
                a.quantize_bits(&x[t * cols..(t + 1) * cols], cols, bits);
                for r in 0..rows {
                    let row = &stored[r * rb..(r + 1) * rb];
                    if let Some(dot) = SCALAR.qdot(dtype) {
                        let want = dot(row, &a.row(0));
                        assert_eq!(
                            y1[t * rows + r].to_bits(),
                            want.to_bits(),
                            "{dtype:?} {bits}-bit {rows}×{cols} row {r} token {t} vs scalar"
                        );
                    }
                    if t == 0 {
                        w.row(r, &mut got);
                        quant::dequantize(dtype, row, &mut want);
                        assert_eq!(got, want, "{dtype:?} {rows}×{cols} row {r} decoded");
                    }
                }
            }
            for t in 0..n {
                let mut v = vec![0f32; rows];
                w.matvec(&x[t * cols..(t + 1) * cols], &mut v, &two);
                assert_eq!(
                    v,
                    &y1[t * rows..(t + 1) * rows],
                    "{dtype:?} {bits}-bit token {t} of {n}"
                );
                // Reading ahead (wasm) only reads: the same bits in every mode.
                for mode in ReadAhead::ALL {
                    set_read_ahead(mode);
                    let mut u = vec![0f32; rows];
                    w.matvec(&x[t * cols..(t + 1) * cols], &mut u, &two);
                    assert_eq!(u, v, "{dtype:?} {bits}-bit token {t}, read-ahead {mode:?}");
                }
                set_read_ahead(ReadAhead::Page);
            }
        }
    }
    set_act_bits(13);
}

/// The kernel paths this machine must offer, so that a regressed CPU detection fails
/// loudly instead of quietly testing (and running) fewer paths: `SLM_EXPECT_KERNELS`
/// (comma-separated names) when set, else what /proc/cpuinfo's flags imply (avx2 with
/// fma and f16c; avx512 with avx512f and avx512bw; avx512vnni with avx512_vnni too;
/// avxvnni). AMX also needs the OS's permission, so it is expected only when named.
#[test]
fn the_expected_kernel_paths_are_detected() {
    let have: Vec<&str> = slm_runtime::kernels::available()
        .iter()
        .map(|k| k.name)
        .collect();
    let want: Vec<String> = match std::env::var("SLM_EXPECT_KERNELS") {
        Ok(v) if !v.is_empty() => v.split(',').map(|s| s.trim().to_string()).collect(),
        _ => {
            let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
            let flags: Vec<&str> = cpuinfo
                .lines()
                .find(|l| l.starts_with("flags"))
                .map(|l| l.split_whitespace().collect())
                .unwrap_or_default();
            let f = |x: &str| flags.contains(&x);
            let mut w = vec!["scalar".to_string()];
            if cfg!(all(target_arch = "wasm32", target_feature = "simd128")) {
                w.push("simd128".into());
            }
            if cfg!(target_arch = "x86_64") && f("avx2") && f("fma") && f("f16c") {
                w.push("avx2".into());
                if f("avx512f") && f("avx512bw") {
                    w.push("avx512".into());
                    if f("avx512_vnni") {
                        w.push("avx512vnni".into());
                    }
                }
                if f("avx_vnni") {
                    w.push("avxvnni".into());
                }
            }
            w
        }
    };
    eprintln!("kernel paths: have {have:?}, expected {want:?}");
    for w in &want {
        assert!(
            have.contains(&w.as_str()),
            "expected kernel path {w} is missing: have {have:?}"
        );
    }
}

/// A mistyped SLM_KERNEL is an error naming the paths, never a silent fallback (wasm
/// reads no environment).
#[test]
#[cfg(not(target_arch = "wasm32"))]
fn a_mistyped_kernel_name_is_refused() {
    // The variable is read per call by `requested` (only `active` caches), and this
    // test binary's other tests do not read it.
    std::env::set_var("SLM_KERNEL", "avx3");
    let e = slm_runtime::kernels::requested()
        .err()
        .map(|e| e.to_string());
    std::env::remove_var("SLM_KERNEL");
    let e = e.expect("SLM_KERNEL=avx3 was accepted");
    assert!(e.contains("SLM_KERNEL=avx3") && e.contains("scalar"), "{e}");
}
