//! Portable reference kernels. Every SIMD path reproduces these results bit for bit:
//! the per-block integer sums, the f32 products and the order of the additions.

use super::{act_scale, round_to_act, split_act, Q8Row, QK};
use half::f16;

#[inline]
pub fn f16_at(b: &[u8], i: usize) -> f32 {
    f16::from_le_bytes([b[i], b[i + 1]]).to_f32()
}

#[inline]
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    // 8 independent accumulators let the compiler vectorize without reassociation flags.
    let mut acc = [0f32; 8];
    let n = a.len() / 8 * 8;
    for (ca, cb) in a[..n].chunks_exact(8).zip(b[..n].chunks_exact(8)) {
        for k in 0..8 {
            acc[k] += ca[k] * cb[k];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for i in n..a.len() {
        s += a[i] * b[i];
    }
    s
}

/// Σx in `dot_f32`'s order (8 lane sums, `reduce8`, then the tail in order).
#[inline]
pub fn sum_f32(x: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let n = x.len() / 8 * 8;
    for c in x[..n].chunks_exact(8) {
        for k in 0..8 {
            acc[k] += c[k];
        }
    }
    let mut s = reduce8(&acc);
    for v in &x[n..] {
        s += v;
    }
    s
}

/// The reference activation quantizer (see `Quantize`).
pub fn quantize(x: &[f32], max: i32, d: &mut [f32], hi: &mut [i8], lo: &mut [i8], s: &mut [i32]) {
    assert!(0 < max && max <= super::DIGITS_MAX);
    for (i, xs) in x.chunks_exact(QK).enumerate() {
        // Eight running maxima written as compares (`f32::max`'s NaN rule kept the
        // loop scalar). Maxima are exact in any order; a NaN is caught separately.
        let mut m = [0f32; 8];
        let mut nan = false;
        for c in xs.chunks_exact(8) {
            for k in 0..8 {
                let a = c[k].abs();
                m[k] = if a > m[k] { a } else { m[k] };
                nan |= c[k].is_nan();
            }
        }
        let amax = m.iter().fold(0f32, |x, &y| if y > x { y } else { x });
        let (di, id) = act_scale(amax, nan, max);
        let mut sum = 0i32;
        let r = i * QK..(i + 1) * QK;
        for ((h, l), &v) in hi[r.clone()].iter_mut().zip(&mut lo[r]).zip(xs) {
            let q = round_to_act(v * id, max);
            (*h, *l) = split_act(q);
            sum += q;
        }
        d[i] = di;
        s[i] = sum;
    }
}

pub fn dots_f32(a: &[f32], b: &[f32], stride: usize, out: &mut [f32]) {
    for (j, o) in out.iter_mut().enumerate() {
        *o = dot_f32(a, &b[j * stride..j * stride + a.len()]);
    }
}

pub fn weighted_sum_f32(w: &[f32], v: &[f32], stride: usize, out: &mut [f32]) {
    let n = out.len();
    out.fill(0.0);
    for (p, &wp) in w.iter().enumerate() {
        for (o, vv) in out.iter_mut().zip(&v[p * stride..p * stride + n]) {
            *o += wp * vv;
        }
    }
}

pub fn dot_f16(w: &[u8], x: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let n = x.len() / 8 * 8;
    for (cw, cx) in w[..2 * n].chunks_exact(16).zip(x[..n].chunks_exact(8)) {
        for k in 0..8 {
            acc[k] += f16_at(cw, 2 * k) * cx[k];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (i, &xi) in x.iter().enumerate().skip(n) {
        s += f16_at(w, 2 * i) * xi;
    }
    s
}

/// Σ_j w_j·x_j of one block over the activation's values (`Q8Row::v`), exact in i32:
/// |sum| ≤ 32·128·ACT_MAX < 2²⁸. Fixed-size arrays so that the compiler vectorizes it
/// without bounds checks.
#[inline]
fn isum_i8(w: &[u8; 32], x: &[i16; 32]) -> i32 {
    (0..32)
        .map(|j| (w[j] as i8) as i32 * x[j] as i32)
        .sum::<i32>()
}

/// Block i's 32 values.
#[inline]
fn block(v: &[i16], i: usize) -> &[i16; 32] {
    v[32 * i..32 * i + 32].try_into().unwrap()
}

/// The one accumulation order of block terms, shared by every path: term `b` goes to
/// lane `b % 8` (a product, then an add), lanes past the last block add 0.0 so the
/// count is a multiple of 8 (as the 8-wide SIMD code does), then `reduce8`. Eight
/// independent lanes keep SIMD fast; one order keeps every path's bits equal. A lane
/// starts at +0.0 and is never −0.0 (x + y is −0.0 only when both are), so those
/// padding adds leave it unchanged: a path may skip them.
pub struct Lanes8 {
    acc: [f32; 8],
    n: usize,
}

impl Lanes8 {
    #[inline]
    pub fn new() -> Lanes8 {
        Lanes8 {
            acc: [0.0; 8],
            n: 0,
        }
    }

    #[inline]
    pub fn push(&mut self, term: f32) {
        self.acc[self.n % 8] += term;
        self.n += 1;
    }

    #[inline]
    pub fn finish(mut self) -> f32 {
        while !self.n.is_multiple_of(8) {
            self.push(0.0);
        }
        reduce8(&self.acc)
    }
}

impl Default for Lanes8 {
    fn default() -> Self {
        Lanes8::new()
    }
}

/// ((a0 + a4) + (a1 + a5)) + ((a2 + a6) + (a3 + a7)): the tree every path uses.
#[inline]
pub fn reduce8(a: &[f32; 8]) -> f32 {
    ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]))
}

pub fn dot_q8_0(w: &[u8], x: &Q8Row) -> f32 {
    let mut s = Lanes8::new();
    for (i, b) in w.chunks_exact(34).enumerate() {
        let isum = isum_i8(b[2..34].try_into().unwrap(), block(x.v, i));
        s.push(isum as f32 * (f16_at(b, 0) * x.d[i]));
    }
    s.finish()
}

/// Σ_j (nibble_j − 8)·x_j, or Σ_j nibble_j·x_j when `offset` is 0 (as `isum_i8`).
#[inline]
fn isum_q4(nib: &[u8; 16], x: &[i16; 32], offset: i32) -> i32 {
    let mut s = 0i32;
    for j in 0..16 {
        s += ((nib[j] & 0x0f) as i32 - offset) * x[j] as i32;
        s += ((nib[j] >> 4) as i32 - offset) * x[j + 16] as i32;
    }
    s
}

pub fn dot_q4_0(w: &[u8], x: &Q8Row) -> f32 {
    let mut s = Lanes8::new();
    for (i, b) in w.chunks_exact(18).enumerate() {
        let isum = isum_q4(b[2..18].try_into().unwrap(), block(x.v, i), 8);
        s.push(isum as f32 * (f16_at(b, 0) * x.d[i]));
    }
    s.finish()
}

/// Two accumulations, each in the `Lanes8` order: the d·Σnibble·x terms and the m·Σx
/// terms; their sum is the result.
pub fn dot_q4_1(w: &[u8], x: &Q8Row) -> f32 {
    let (mut s, mut sm) = (Lanes8::new(), Lanes8::new());
    for (i, b) in w.chunks_exact(20).enumerate() {
        let isum = isum_q4(b[4..20].try_into().unwrap(), block(x.v, i), 0);
        s.push(isum as f32 * (f16_at(b, 0) * x.d[i]));
        sm.push(x.s[i] as f32 * (f16_at(b, 2) * x.d[i]));
    }
    s.finish() + sm.finish()
}

/// Σ_j w_j·x_j of 32 small weights (already offset) with a block's values.
#[inline]
fn isum_w(w: &[i8; 32], x: &[i16; 32]) -> i32 {
    (0..32).map(|j| w[j] as i32 * x[j] as i32).sum::<i32>()
}

/// q5_0: x = d·(q − 16), as q4_0 with a fifth bit.
pub fn dot_q5_0(w: &[u8], x: &Q8Row) -> f32 {
    let mut s = Lanes8::new();
    for (i, b) in w.chunks_exact(22).enumerate() {
        let q = crate::quant::q5_quants(&b[2..22]).map(|q| q as i8 - 16);
        s.push(isum_w(&q, block(x.v, i)) as f32 * (f16_at(b, 0) * x.d[i]));
    }
    s.finish()
}

/// q5_1: x = d·q + m, in q4_1's two accumulations.
pub fn dot_q5_1(w: &[u8], x: &Q8Row) -> f32 {
    let (mut s, mut sm) = (Lanes8::new(), Lanes8::new());
    for (i, b) in w.chunks_exact(24).enumerate() {
        let q = crate::quant::q5_quants(&b[4..24]).map(|q| q as i8);
        s.push(isum_w(&q, block(x.v, i)) as f32 * (f16_at(b, 0) * x.d[i]));
        sm.push(x.s[i] as f32 * (f16_at(b, 2) * x.d[i]));
    }
    s.finish() + sm.finish()
}

/// q4_k and q5_k: sub-block j of super-block k meets activation block 8k + j, so it
/// lands in `Lanes8` lane j. Its terms, in two accumulations as q4_1's:
/// (sc_j·Σq·x) · (d·d_x) and (m_j·Σx) · (dmin·d_x), both integer products exact in
/// i32 (63·32·31·3825 < 2³¹); the result is the first sum minus the second.
pub fn dot_k4(dtype: crate::quant::DType, w: &[u8], x: &Q8Row) -> f32 {
    let bs = dtype.block().1;
    let (mut s, mut sm) = (Lanes8::new(), Lanes8::new());
    for (k, b) in w.chunks_exact(bs).enumerate() {
        let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
        for j in 0..8 {
            let i = 8 * k + j;
            let (q, sc, m) = crate::quant::k4_sub(dtype == crate::quant::DType::Q5K, b, j);
            let isum = isum_w(&q.map(|q| q as i8), block(x.v, i));
            s.push((sc as i32 * isum) as f32 * (d * x.d[i]));
            sm.push((m as i32 * x.s[i]) as f32 * (dmin * x.d[i]));
        }
    }
    s.finish() - sm.finish()
}

pub fn dot_q4_k(w: &[u8], x: &Q8Row) -> f32 {
    dot_k4(crate::quant::DType::Q4K, w, x)
}

pub fn dot_q5_k(w: &[u8], x: &Q8Row) -> f32 {
    dot_k4(crate::quant::DType::Q5K, w, x)
}

/// q6_k: sub-block j (activation block 8·(super-block) + j, `Lanes8` lane j) sums
/// sc_a·Σ(q − 32)·x over its first 16 weights plus sc_b·Σ(q − 32)·x over the other 16,
/// exact in i32 (2·128·16·32·3825 < 2³¹), times d·d_x.
pub fn dot_q6_k(w: &[u8], x: &Q8Row) -> f32 {
    let mut s = Lanes8::new();
    for (k, b) in w.chunks_exact(210).enumerate() {
        let d = f16_at(b, 208);
        for j in 0..8 {
            let i = 8 * k + j;
            let (q, sc) = crate::quant::q6_k_sub(b, j);
            let v = block(x.v, i);
            let half = |h: usize| {
                (16 * h..16 * h + 16)
                    .map(|l| q[l] as i32 * v[l] as i32)
                    .sum::<i32>()
            };
            let isum = sc[0] as i32 * half(0) + sc[1] as i32 * half(1);
            s.push(isum as f32 * (d * x.d[i]));
        }
    }
    s.finish()
}
