//! A weight matrix in its stored type, with the row-dot kernels it needs.

use crate::error::{Result, SlmError};
use crate::quant::{self, DType};

pub enum WeightData {
    /// f32 weights are decoded once at load so the hot loop reads native floats.
    F32(Vec<f32>),
    /// Any block format, kept encoded (f16, q8_0, q4_0, q4_1).
    Blocks(Vec<u8>),
}

pub struct Weight {
    pub dtype: DType,
    pub rows: usize,
    pub cols: usize,
    pub data: WeightData,
    row_bytes: usize,
}

impl Weight {
    pub fn new(dtype: DType, rows: usize, cols: usize, bytes: Vec<u8>) -> Result<Weight> {
        let row_bytes = dtype.bytes_for(cols as u64).ok_or_else(|| {
            SlmError::malformed(
                "model",
                format!("{cols} columns are not whole {} blocks", dtype.name()),
            )
        })? as usize;
        if row_bytes * rows != bytes.len() {
            return Err(SlmError::malformed(
                "model",
                "weight byte length does not match its shape",
            ));
        }
        let data = if dtype == DType::F32 {
            let mut v = vec![0f32; rows * cols];
            quant::dequantize(DType::F32, &bytes, &mut v);
            WeightData::F32(v)
        } else {
            WeightData::Blocks(bytes)
        };
        Ok(Weight {
            dtype,
            rows,
            cols,
            data,
            row_bytes,
        })
    }

    pub fn bytes(&self) -> usize {
        self.rows * self.row_bytes
    }

    /// Decode row `r` into `out` (length `cols`); used for embedding lookup.
    pub fn row(&self, r: usize, out: &mut [f32]) {
        match &self.data {
            WeightData::F32(v) => out.copy_from_slice(&v[r * self.cols..(r + 1) * self.cols]),
            WeightData::Blocks(b) => quant::dequantize(
                self.dtype,
                &b[r * self.row_bytes..(r + 1) * self.row_bytes],
                out,
            ),
        }
    }

    #[inline]
    fn dot(&self, r: usize, x: &[f32]) -> f32 {
        match &self.data {
            WeightData::F32(v) => dot_f32(&v[r * self.cols..(r + 1) * self.cols], x),
            WeightData::Blocks(b) => quant::dot_row(
                self.dtype,
                &b[r * self.row_bytes..(r + 1) * self.row_bytes],
                x,
            ),
        }
    }

    /// out[r] = Σ_c W[r, c] · x[c] for rows in `range`.
    fn matvec_rows(&self, x: &[f32], out: &mut [f32], first: usize) {
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.dot(first + i, x);
        }
    }

    /// out = W · x, split across `threads` native threads for large matrices.
    pub fn matvec(&self, x: &[f32], out: &mut [f32], threads: usize) {
        debug_assert_eq!(x.len(), self.cols);
        debug_assert_eq!(out.len(), self.rows);
        #[cfg(not(target_arch = "wasm32"))]
        if threads > 1 && self.rows * self.cols >= 1 << 18 {
            let per = self.rows.div_ceil(threads);
            std::thread::scope(|s| {
                for (t, chunk) in out.chunks_mut(per).enumerate() {
                    s.spawn(move || self.matvec_rows(x, chunk, t * per));
                }
            });
            return;
        }
        let _ = threads;
        self.matvec_rows(x, out, 0);
    }
}

impl Weight {
    /// Y = X · Wᵀ for a batch: `x` is `n × cols` row-major, `y` is `n × rows`. Each weight
    /// row is decoded once and used for every token, so prefill reads the weights once per
    /// batch instead of once per token. For f32 weights each output equals `matvec`'s.
    pub fn matmul(&self, x: &[f32], n: usize, y: &mut [f32], threads: usize) {
        debug_assert_eq!(x.len(), n * self.cols);
        debug_assert_eq!(y.len(), n * self.rows);
        if n == 1 {
            // Decode: no transposition buffer, nothing allocated.
            return self.matvec(x, y, threads);
        }
        // Rows × tokens, so that each thread owns a contiguous slice; transposed below.
        let mut yt = vec![0f32; self.rows * n];
        let work = |first: usize, out: &mut [f32]| {
            let mut row = vec![0f32; self.cols];
            for (i, o) in out.chunks_exact_mut(n).enumerate() {
                let r = first + i;
                let w: &[f32] = match &self.data {
                    WeightData::F32(v) => &v[r * self.cols..(r + 1) * self.cols],
                    WeightData::Blocks(_) => {
                        self.row(r, &mut row);
                        &row
                    }
                };
                for (t, v) in o.iter_mut().enumerate() {
                    *v = dot_f32(w, &x[t * self.cols..(t + 1) * self.cols]);
                }
            }
        };
        #[cfg(not(target_arch = "wasm32"))]
        if threads > 1 {
            let per = self.rows.div_ceil(threads);
            std::thread::scope(|s| {
                for (k, chunk) in yt.chunks_mut(per * n).enumerate() {
                    let work = &work;
                    s.spawn(move || work(k * per, chunk));
                }
            });
        } else {
            work(0, &mut yt);
        }
        #[cfg(target_arch = "wasm32")]
        {
            let _ = threads;
            work(0, &mut yt);
        }
        for r in 0..self.rows {
            for t in 0..n {
                y[t * self.rows + r] = yt[r * n + t];
            }
        }
    }
}

/// f32 dot product with 8 independent accumulators, so the compiler can vectorize
/// it without reassociation flags.
#[inline]
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
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
