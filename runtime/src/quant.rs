//! Weight block formats and their scalar (reference) kernels.
//!
//! Block layouts are GGML's, so that a GGUF tensor of the same type is copied byte for
//! byte and so that our quantizers produce what llama.cpp's do:
//! - `q8_0`: 32 weights, f16 scale `d` then 32 × i8 `q`;            x = d·q
//! - `q4_0`: 32 weights, f16 `d` then 16 bytes of nibbles;          x = d·(q − 8)
//! - `q4_1`: 32 weights, f16 `d`, f16 `m`, then 16 bytes of nibbles; x = d·q + m
//! - `q5_0`: 32 weights, f16 `d`, u32 `qh` (bit j: weight j's fifth bit), 16 bytes of
//!   nibbles;                                                        x = d·(q − 16)
//! - `q5_1`: as q5_0 with f16 `m` after `d`;                         x = d·q + m
//! - `q4_k`: 256 weights in 8 sub-blocks of 32: f16 `d`, f16 `dmin`, 12 bytes of 6-bit
//!   (scale, min) pairs, 128 bytes of nibbles;        x = d·sc_j·q − dmin·m_j
//! - `q5_k`: as q4_k plus 32 bytes `qh` (bit j of byte l: sub-block j's fifth bit)
//! - `q6_k`: 256 weights in 16 sub-blocks of 16: 128 bytes of low nibbles `ql`, 64
//!   bytes of high bit pairs `qh`, 16 × i8 scales, f16 `d`;  x = d·sc_k·(q − 32)
//!
//! Nibble order of the 32-weight blocks: byte j holds weight j (low nibble) and weight
//! j+16 (high nibble). The k-quant orders are in `k4_sub` and `q6_k_sub`.
//!
//! The scalar functions here are the reference every faster path is tested against.
//! The k-quant and q5 types are only ever copied from a GGUF: the converter has no
//! quantizer for them (`quantize` refuses).

use crate::error::{Result, SlmError};
use half::f16;
use serde::{Deserialize, Serialize};

/// Number of weights in one 32-weight block (q8_0, q4_0, q4_1, q5_0, q5_1), and in one
/// k-quant sub-block as the kernels take it.
pub const QK: usize = 32;
/// Number of weights in one k-quant super-block (q4_k, q5_k, q6_k).
pub const QK_K: usize = 256;

/// Storage type of a tensor inside a `.slm` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DType {
    #[serde(rename = "f32")]
    F32,
    #[serde(rename = "f16")]
    F16,
    #[serde(rename = "q8_0")]
    Q8_0,
    #[serde(rename = "q4_0")]
    Q4_0,
    #[serde(rename = "q4_1")]
    Q4_1,
    #[serde(rename = "q5_0")]
    Q5_0,
    #[serde(rename = "q5_1")]
    Q5_1,
    #[serde(rename = "q4_k")]
    Q4K,
    #[serde(rename = "q5_k")]
    Q5K,
    #[serde(rename = "q6_k")]
    Q6K,
}

impl DType {
    /// Every type, in the order of §4 of docs/slm-format.md.
    pub const ALL: [DType; 10] = [
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
    ];

    /// (weights per block, bytes per block)
    pub fn block(self) -> (usize, usize) {
        match self {
            DType::F32 => (1, 4),
            DType::F16 => (1, 2),
            DType::Q8_0 => (QK, 34),
            DType::Q4_0 => (QK, 18),
            DType::Q4_1 => (QK, 20),
            DType::Q5_0 => (QK, 22),
            DType::Q5_1 => (QK, 24),
            DType::Q4K => (QK_K, 144),
            DType::Q5K => (QK_K, 176),
            DType::Q6K => (QK_K, 210),
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
            DType::Q5_0 => "q5_0",
            DType::Q5_1 => "q5_1",
            DType::Q4K => "q4_k",
            DType::Q5K => "q5_k",
            DType::Q6K => "q6_k",
        }
    }

    pub fn parse(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
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
        DType::Q5_0 => {
            for (y, b) in dst.chunks_exact_mut(QK).zip(src.chunks_exact(22)) {
                let d = f16_at(b, 0);
                for (o, q) in y.iter_mut().zip(q5_quants(&b[2..22])) {
                    *o = d * (q as i32 - 16) as f32;
                }
            }
        }
        DType::Q5_1 => {
            for (y, b) in dst.chunks_exact_mut(QK).zip(src.chunks_exact(24)) {
                let (d, m) = (f16_at(b, 0), f16_at(b, 2));
                for (o, q) in y.iter_mut().zip(q5_quants(&b[4..24])) {
                    *o = d * q as f32 + m;
                }
            }
        }
        DType::Q4K | DType::Q5K => {
            let bs = dtype.block().1;
            for (y, b) in dst.chunks_exact_mut(QK_K).zip(src.chunks_exact(bs)) {
                let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
                for (j, yy) in y.chunks_exact_mut(QK).enumerate() {
                    let (q, sc, m) = k4_sub(dtype == DType::Q5K, b, j);
                    let (d1, m1) = (d * sc as f32, dmin * m as f32);
                    for (o, q) in yy.iter_mut().zip(q) {
                        *o = d1 * q as f32 - m1;
                    }
                }
            }
        }
        DType::Q6K => {
            for (y, b) in dst.chunks_exact_mut(QK_K).zip(src.chunks_exact(210)) {
                let d = f16_at(b, 208);
                for (j, yy) in y.chunks_exact_mut(QK).enumerate() {
                    let (q, sc) = q6_k_sub(b, j);
                    for (l, (o, q)) in yy.iter_mut().zip(q).enumerate() {
                        *o = d * sc[l / 16] as f32 * q as f32;
                    }
                }
            }
        }
    }
}

/// The 32 quants (0..31) of a q5_0/q5_1 block from its `qh` word and 16 nibble bytes
/// (`p` = the 20 bytes after the scale(s)): weight j's low 4 bits are nibble j (as in
/// q4_0), its fifth bit is bit j of `qh`.
#[inline]
pub fn q5_quants(p: &[u8]) -> [u8; 32] {
    let qh = u32::from_le_bytes([p[0], p[1], p[2], p[3]]);
    let qs = &p[4..20];
    std::array::from_fn(|j| {
        let nib = if j < 16 {
            qs[j] & 0x0f
        } else {
            qs[j - 16] >> 4
        };
        nib | ((((qh >> j) & 1) as u8) << 4)
    })
}

/// The 6-bit (scale, min) pair of sub-block `j` (0..8) from a q4_k/q5_k super-block's
/// 12 scale bytes: pairs 0..4 are the low 6 bits of bytes j and j + 4; pairs 4..8
/// take their low 4 bits from byte j + 4's nibbles and their top 2 bits from the top
/// bits of bytes j − 4 (scale) and j (min).
#[inline]
pub fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// Sub-block `j` (0..8, weights 32j..32j + 32) of a q4_k super-block `b`, or of a q5_k
/// one when `q5`: its quants (q4_k 0..15, q5_k 0..31), scale and min. The quants of sub-blocks 2g and
/// 2g + 1 share the 32 nibble bytes qs[32g..32g + 32] (low nibbles, high nibbles);
/// q5_k's fifth bit of weight l of sub-block j is bit j of qh[l].
#[inline]
pub fn k4_sub(q5: bool, b: &[u8], j: usize) -> ([u8; 32], u8, u8) {
    let (sc, m) = scale_min_k4(j, &b[4..16]);
    let (qs, qh) = if q5 {
        (&b[48 + 32 * (j / 2)..][..32], Some(&b[16..48]))
    } else {
        (&b[16 + 32 * (j / 2)..][..32], None)
    };
    let shift = 4 * (j % 2);
    let q = std::array::from_fn(|l| {
        let h = qh.map_or(0, |qh| ((qh[l] >> j) & 1) << 4);
        ((qs[l] >> shift) & 0x0f) | h
    });
    (q, sc, m)
}

/// Sub-block `j` (0..8, weights 32j..32j + 32) of a q6_k super-block `b`: its weights
/// as q − 32 (−32..31) and the i8 scales of its two 16-weight halves. Weight l of
/// sub-block j = 4h + c (h the 128-weight half, c 0..4) has its low 4 bits in
/// ql[64h + 32·(c % 2) + l] (low nibble for c < 2, high for c ≥ 2) and its top 2 bits
/// at bits 2c, 2c + 1 of qh[32h + l]; the scales are sc[2j], sc[2j + 1] at byte 192.
#[inline]
pub fn q6_k_sub(b: &[u8], j: usize) -> ([i8; 32], [i8; 2]) {
    let (h, c) = (j / 4, j % 4);
    let ql = &b[64 * h + 32 * (c % 2)..][..32];
    let qh = &b[128 + 32 * h..][..32];
    let q = std::array::from_fn(|l| {
        let lo = (ql[l] >> (4 * (c / 2))) & 0x0f;
        let hi = (qh[l] >> (2 * c)) & 3;
        (lo | (hi << 4)) as i8 - 32
    });
    (q, [b[192 + 2 * j] as i8, b[193 + 2 * j] as i8])
}

/// Encode f32 weights (a whole number of blocks) as `dtype`, appending to `out`.
/// q8_0 and q4_1 follow llama.cpp's reference quantizers (`quantize_row_*_ref`); q4_0
/// picks its scale by least squares (see `q4_0_scale`). The q5 and k-quant types have
/// no quantizer here: they are refused, naming the type.
pub fn quantize(dtype: DType, src: &[f32], out: &mut Vec<u8>) -> Result<()> {
    match dtype {
        DType::Q5_0 | DType::Q5_1 | DType::Q4K | DType::Q5K | DType::Q6K => {
            return Err(SlmError::Invalid(format!(
                "no quantizer for {}: its blocks are only copied from a GGUF that has them",
                dtype.name()
            )))
        }
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
    Ok(())
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
        quantize(DType::Q8_0, &x, &mut enc).unwrap();
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
        quantize(DType::Q4_0, &x, &mut enc).unwrap();
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
            quantize(DType::Q4_0, &x, &mut enc).unwrap();
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
}
