//! Weight block formats and their scalar (reference) kernels.
//!
//! Block layouts are GGML-compatible so that a GGUF tensor of the same type can be
//! copied byte for byte and so that our quantizers produce what llama.cpp's do:
//! - `q8_0`: 32 weights, f16 scale `d` then 32 × i8 `q`;            x = d·q
//! - `q4_0`: 32 weights, f16 `d` then 16 bytes of nibbles;          x = d·(q − 8)
//! - `q4_1`: 32 weights, f16 `d`, f16 `m`, then 16 bytes of nibbles; x = d·q + m
//!
//! Nibble order: byte j holds weight j (low nibble) and weight j+16 (high nibble).
//!
//! The scalar functions here are the reference every faster path is tested against.

use half::f16;
use serde::{Deserialize, Serialize};

/// Number of weights in one q8_0 / q4_0 / q4_1 block.
pub const QK: usize = 32;
/// Number of weights in one k-quant super-block (GGUF Q4_K, Q5_K, Q6_K).
pub const QK_K: usize = 256;

/// Storage type of a tensor inside a `.slm` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DType {
    F32,
    F16,
    Q8_0,
    Q4_0,
    Q4_1,
}

impl DType {
    /// (weights per block, bytes per block)
    pub fn block(self) -> (usize, usize) {
        match self {
            DType::F32 => (1, 4),
            DType::F16 => (1, 2),
            DType::Q8_0 => (QK, 34),
            DType::Q4_0 => (QK, 18),
            DType::Q4_1 => (QK, 20),
        }
    }

    /// Bytes needed for `n` weights, or None when `n` is not a whole number of blocks
    /// or the size overflows.
    pub fn bytes_for(self, n: u64) -> Option<u64> {
        let (bw, bb) = self.block();
        if !n.is_multiple_of(bw as u64) {
            return None;
        }
        (n / bw as u64).checked_mul(bb as u64)
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::Q8_0 => "q8_0",
            DType::Q4_0 => "q4_0",
            DType::Q4_1 => "q4_1",
        }
    }

    pub fn parse(s: &str) -> Option<DType> {
        Some(match s {
            "f32" => DType::F32,
            "f16" => DType::F16,
            "q8_0" => DType::Q8_0,
            "q4_0" => DType::Q4_0,
            "q4_1" => DType::Q4_1,
            _ => return None,
        })
    }
}

#[inline]
fn f16_at(b: &[u8], i: usize) -> f32 {
    f16::from_le_bytes([b[i], b[i + 1]]).to_f32()
}

/// Decode `src` (whole blocks of `dtype`) into `dst` (f32, one per weight).
pub fn dequantize(dtype: DType, src: &[u8], dst: &mut [f32]) {
    match dtype {
        DType::F32 => {
            for (o, c) in dst.iter_mut().zip(src.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        DType::F16 => {
            for (o, c) in dst.iter_mut().zip(src.chunks_exact(2)) {
                *o = f16::from_le_bytes([c[0], c[1]]).to_f32();
            }
        }
        DType::Q8_0 => {
            for (y, b) in dst.chunks_exact_mut(QK).zip(src.chunks_exact(34)) {
                let d = f16_at(b, 0);
                for j in 0..QK {
                    y[j] = d * (b[2 + j] as i8) as f32;
                }
            }
        }
        DType::Q4_0 => {
            for (y, b) in dst.chunks_exact_mut(QK).zip(src.chunks_exact(18)) {
                let d = f16_at(b, 0);
                for j in 0..16 {
                    y[j] = d * ((b[2 + j] & 0x0f) as i32 - 8) as f32;
                    y[j + 16] = d * ((b[2 + j] >> 4) as i32 - 8) as f32;
                }
            }
        }
        DType::Q4_1 => {
            for (y, b) in dst.chunks_exact_mut(QK).zip(src.chunks_exact(20)) {
                let d = f16_at(b, 0);
                let m = f16_at(b, 2);
                for j in 0..16 {
                    y[j] = d * (b[4 + j] & 0x0f) as f32 + m;
                    y[j + 16] = d * (b[4 + j] >> 4) as f32 + m;
                }
            }
        }
    }
}

/// Encode f32 weights (a whole number of blocks) as `dtype`, appending to `out`.
/// q8_0 and q4_1 follow llama.cpp's reference quantizers (`quantize_row_*_ref`); q4_0
/// picks its scale by least squares (see `q4_0_scale`).
pub fn quantize(dtype: DType, src: &[f32], out: &mut Vec<u8>) {
    match dtype {
        DType::F32 => {
            for v in src {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        DType::F16 => {
            for v in src {
                out.extend_from_slice(&f16::from_f32(*v).to_le_bytes());
            }
        }
        DType::Q8_0 => {
            for x in src.chunks_exact(QK) {
                let amax = x.iter().fold(0f32, |a, v| a.max(v.abs()));
                let d = amax / 127.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
                for v in x {
                    out.push(((v * id).round() as i32).clamp(-128, 127) as i8 as u8);
                }
            }
        }
        DType::Q4_0 => {
            for x in src.chunks_exact(QK) {
                // The value of largest magnitude maps to -8, keeping its sign.
                let mut amax = 0f32;
                let mut max = 0f32;
                for &v in x {
                    if v.abs() > amax {
                        amax = v.abs();
                        max = v;
                    }
                }
                let d = q4_0_scale(x, max);
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
                for j in 0..16 {
                    let q0 = ((x[j] * id).round() as i32 + 8).clamp(0, 15) as u8;
                    let q1 = ((x[j + 16] * id).round() as i32 + 8).clamp(0, 15) as u8;
                    out.push(q0 | (q1 << 4));
                }
            }
        }
        DType::Q4_1 => {
            for x in src.chunks_exact(QK) {
                let min = x.iter().cloned().fold(f32::INFINITY, f32::min);
                let max = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                let d = (max - min) / 15.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
                out.extend_from_slice(&f16::from_f32(min).to_le_bytes());
                for j in 0..16 {
                    let q0 = (((x[j] - min) * id + 0.5) as i32).clamp(0, 15) as u8;
                    let q1 = (((x[j + 16] - min) * id + 0.5) as i32).clamp(0, 15) as u8;
                    out.push(q0 | (q1 << 4));
                }
            }
        }
    }
}

/// The q4_0 block scale. llama.cpp's reference maps the largest-magnitude weight to
/// exactly −8·d; we search scales around that (as stored in f16) and keep the one with
/// the least squared error, which matters when re-quantizing already-quantized GGUF
/// weights whose grid does not line up with q4_0's. The block layout is unchanged.
fn q4_0_scale(x: &[f32], max: f32) -> f32 {
    let base = max / -8.0;
    if base == 0.0 {
        return 0.0;
    }
    let mut best = (f32::INFINITY, base);
    for k in 0..=24 {
        let d = f16::from_f32(base * (0.76 + 0.01 * k as f32)).to_f32();
        let id = 1.0 / d;
        let err: f32 = x
            .iter()
            .map(|v| {
                let q = ((v * id).round()).clamp(-8.0, 7.0);
                (v - d * q).powi(2)
            })
            .sum();
        if err < best.0 {
            best = (err, d);
        }
    }
    best.1
}

/// Dot product of one encoded row with an f32 vector (scalar reference).
pub fn dot_row(dtype: DType, row: &[u8], x: &[f32]) -> f32 {
    match dtype {
        DType::F32 => {
            // 8 independent accumulators let the compiler vectorize without -ffast-math.
            let mut acc = [0f32; 8];
            let n8 = x.len() / 8 * 8;
            for (i, c) in row[..n8 * 4].chunks_exact(32).enumerate() {
                for k in 0..8 {
                    let w =
                        f32::from_le_bytes([c[4 * k], c[4 * k + 1], c[4 * k + 2], c[4 * k + 3]]);
                    acc[k] += w * x[i * 8 + k];
                }
            }
            let mut s: f32 = acc.iter().sum();
            for i in n8..x.len() {
                let c = &row[4 * i..4 * i + 4];
                s += f32::from_le_bytes([c[0], c[1], c[2], c[3]]) * x[i];
            }
            s
        }
        DType::F16 => row
            .chunks_exact(2)
            .zip(x)
            .map(|(c, v)| f16::from_le_bytes([c[0], c[1]]).to_f32() * v)
            .sum(),
        DType::Q8_0 => {
            let mut s = 0f32;
            for (b, xs) in row.chunks_exact(34).zip(x.chunks_exact(QK)) {
                let mut bs = 0f32;
                for j in 0..QK {
                    bs += (b[2 + j] as i8) as f32 * xs[j];
                }
                s += f16_at(b, 0) * bs;
            }
            s
        }
        DType::Q4_0 => {
            let mut s = 0f32;
            for (b, xs) in row.chunks_exact(18).zip(x.chunks_exact(QK)) {
                let mut bs = 0f32;
                for j in 0..16 {
                    bs += ((b[2 + j] & 0x0f) as i32 - 8) as f32 * xs[j];
                    bs += ((b[2 + j] >> 4) as i32 - 8) as f32 * xs[j + 16];
                }
                s += f16_at(b, 0) * bs;
            }
            s
        }
        DType::Q4_1 => {
            let mut s = 0f32;
            for (b, xs) in row.chunks_exact(20).zip(x.chunks_exact(QK)) {
                let (d, m) = (f16_at(b, 0), f16_at(b, 2));
                let mut bs = 0f32;
                let mut xsum = 0f32;
                for j in 0..16 {
                    bs += (b[4 + j] & 0x0f) as f32 * xs[j];
                    bs += (b[4 + j] >> 4) as f32 * xs[j + 16];
                    xsum += xs[j] + xs[j + 16];
                }
                s += d * bs + m * xsum;
            }
            s
        }
    }
}

/// GGUF-only block formats that are dequantized on import (never stored in `.slm`).
pub mod gguf_blocks {
    use super::{f16_at, QK, QK_K};

    pub fn q5_0(src: &[u8], dst: &mut [f32]) {
        for (y, b) in dst.chunks_exact_mut(QK).zip(src.chunks_exact(22)) {
            let d = f16_at(b, 0);
            let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
            let qs = &b[6..22];
            for j in 0..16 {
                let h0 = ((qh >> j) << 4) & 0x10;
                let h1 = (qh >> (j + 12)) & 0x10;
                let x0 = (((qs[j] & 0x0f) as u32 | h0) as i32) - 16;
                let x1 = (((qs[j] >> 4) as u32 | h1) as i32) - 16;
                y[j] = d * x0 as f32;
                y[j + 16] = d * x1 as f32;
            }
        }
    }

    pub fn q5_1(src: &[u8], dst: &mut [f32]) {
        for (y, b) in dst.chunks_exact_mut(QK).zip(src.chunks_exact(24)) {
            let d = f16_at(b, 0);
            let m = f16_at(b, 2);
            let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
            let qs = &b[8..24];
            for j in 0..16 {
                let h0 = ((qh >> j) << 4) & 0x10;
                let h1 = (qh >> (j + 12)) & 0x10;
                y[j] = d * ((qs[j] & 0x0f) as u32 | h0) as f32 + m;
                y[j + 16] = d * ((qs[j] >> 4) as u32 | h1) as f32 + m;
            }
        }
    }

    /// The 6-bit (scale, min) pair `j` of a Q4_K / Q5_K super-block.
    fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
        if j < 4 {
            (q[j] & 63, q[j + 4] & 63)
        } else {
            (
                (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4),
                (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
            )
        }
    }

    pub fn q4_k(src: &[u8], dst: &mut [f32]) {
        for (y, b) in dst.chunks_exact_mut(QK_K).zip(src.chunks_exact(144)) {
            let d = f16_at(b, 0);
            let dmin = f16_at(b, 2);
            let scales = &b[4..16];
            let qs = &b[16..144];
            for (g, (yy, q)) in y.chunks_exact_mut(64).zip(qs.chunks_exact(32)).enumerate() {
                let (sc1, m1) = scale_min_k4(2 * g, scales);
                let (sc2, m2) = scale_min_k4(2 * g + 1, scales);
                let (d1, m1) = (d * sc1 as f32, dmin * m1 as f32);
                let (d2, m2) = (d * sc2 as f32, dmin * m2 as f32);
                for l in 0..32 {
                    yy[l] = d1 * (q[l] & 0x0f) as f32 - m1;
                    yy[l + 32] = d2 * (q[l] >> 4) as f32 - m2;
                }
            }
        }
    }

    pub fn q5_k(src: &[u8], dst: &mut [f32]) {
        for (y, b) in dst.chunks_exact_mut(QK_K).zip(src.chunks_exact(176)) {
            let d = f16_at(b, 0);
            let dmin = f16_at(b, 2);
            let scales = &b[4..16];
            let qh = &b[16..48];
            let qs = &b[48..176];
            for (g, (yy, q)) in y.chunks_exact_mut(64).zip(qs.chunks_exact(32)).enumerate() {
                let (sc1, m1) = scale_min_k4(2 * g, scales);
                let (sc2, m2) = scale_min_k4(2 * g + 1, scales);
                let (d1, m1) = (d * sc1 as f32, dmin * m1 as f32);
                let (d2, m2) = (d * sc2 as f32, dmin * m2 as f32);
                let (u1, u2) = (1u8 << (2 * g), 2u8 << (2 * g));
                for l in 0..32 {
                    let h1 = if qh[l] & u1 != 0 { 16 } else { 0 };
                    let h2 = if qh[l] & u2 != 0 { 16 } else { 0 };
                    yy[l] = d1 * ((q[l] & 0x0f) + h1) as f32 - m1;
                    yy[l + 32] = d2 * ((q[l] >> 4) + h2) as f32 - m2;
                }
            }
        }
    }

    pub fn q6_k(src: &[u8], dst: &mut [f32]) {
        for (y, b) in dst.chunks_exact_mut(QK_K).zip(src.chunks_exact(210)) {
            let d = f16_at(b, 208);
            for half in 0..2 {
                let ql = &b[64 * half..64 * half + 64];
                let qh = &b[128 + 32 * half..128 + 32 * half + 32];
                let sc = &b[192 + 8 * half..192 + 8 * half + 8];
                let yy = &mut y[128 * half..128 * half + 128];
                for l in 0..32 {
                    let is = l / 16;
                    let q1 = ((ql[l] & 0x0f) | ((qh[l] & 3) << 4)) as i32 - 32;
                    let q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) as i32 - 32;
                    let q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i32 - 32;
                    let q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i32 - 32;
                    yy[l] = d * (sc[is] as i8) as f32 * q1 as f32;
                    yy[l + 32] = d * (sc[is + 2] as i8) as f32 * q2 as f32;
                    yy[l + 64] = d * (sc[is + 4] as i8) as f32 * q3 as f32;
                    yy[l + 96] = d * (sc[is + 6] as i8) as f32 * q4 as f32;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-checked q8_0 block: amax 127 ⇒ d = 1, weights round to integers.
    #[test]
    fn q8_0_roundtrip_is_exact_on_integers() {
        let x: Vec<f32> = (0..32)
            .map(|i| (i as f32 - 16.0) * 4.0 + if i == 0 { -1.0 } else { 0.0 })
            .collect();
        let mut enc = Vec::new();
        quantize(DType::Q8_0, &x, &mut enc);
        assert_eq!(enc.len(), 34);
        let mut y = vec![0f32; 32];
        dequantize(DType::Q8_0, &enc, &mut y);
        let d = 65.0f32 / 127.0;
        for (a, b) in x.iter().zip(&y) {
            assert!((a - b).abs() <= d / 2.0 + 1e-3, "{a} vs {b}");
        }
    }

    /// q4_0: the largest-magnitude weight maps to exactly -8·d.
    #[test]
    fn q4_0_keeps_extreme_exactly() {
        let mut x = vec![0f32; 32];
        x[5] = -2.0;
        x[20] = 1.0;
        let mut enc = Vec::new();
        quantize(DType::Q4_0, &x, &mut enc);
        let mut y = vec![0f32; 32];
        dequantize(DType::Q4_0, &enc, &mut y);
        assert_eq!(y[5], -2.0);
        assert_eq!(y[20], 1.0);
        assert_eq!(y[0], 0.0);
    }

    /// The least-squares q4_0 scale is never worse than llama.cpp's max/−8 rule.
    #[test]
    fn q4_0_scale_search_never_loses_to_the_reference_rule() {
        let mut seed = 12345u64;
        for _ in 0..500 {
            let x: Vec<f32> = (0..32)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 3.0
                })
                .collect();
            let mut enc = Vec::new();
            quantize(DType::Q4_0, &x, &mut enc);
            let mut y = vec![0f32; 32];
            dequantize(DType::Q4_0, &enc, &mut y);
            let searched: f32 = x.iter().zip(&y).map(|(a, b)| (a - b).powi(2)).sum();
            let max = x
                .iter()
                .cloned()
                .fold(0f32, |m, v| if v.abs() > m.abs() { v } else { m });
            let d = f16::from_f32(max / -8.0).to_f32();
            let reference: f32 = x
                .iter()
                .map(|v| (v - d * ((v / d).round().clamp(-8.0, 7.0))).powi(2))
                .sum();
            assert!(
                searched <= reference * (1.0 + 1e-6),
                "{searched} > {reference}"
            );
        }
    }

    #[test]
    fn dot_matches_dequantized_dot() {
        let x: Vec<f32> = (0..64)
            .map(|i| ((i * 37 % 17) as f32 - 8.0) / 7.0)
            .collect();
        let w: Vec<f32> = (0..64)
            .map(|i| ((i * 13 % 11) as f32 - 5.0) / 3.0)
            .collect();
        for dt in [
            DType::F32,
            DType::F16,
            DType::Q8_0,
            DType::Q4_0,
            DType::Q4_1,
        ] {
            let mut enc = Vec::new();
            quantize(dt, &w, &mut enc);
            let mut deq = vec![0f32; 64];
            dequantize(dt, &enc, &mut deq);
            let want: f32 = deq.iter().zip(&x).map(|(a, b)| a * b).sum();
            let got = dot_row(dt, &enc, &x);
            assert!((want - got).abs() < 1e-4, "{dt:?}: {want} vs {got}");
        }
    }
}
