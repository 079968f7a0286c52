//! A weight matrix in its stored type, with the row-dot kernels it needs.

use crate::error::{Result, SlmError};
use crate::kernels::{self, Band, Q8Act, Q8Row, GROUP};
use crate::model::pages::Pages;
use crate::parallel::Threads;
use crate::quant::{self, DType, QK};
use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;

pub enum WeightData {
    /// f32 weights are decoded once at load so the hot loop reads native floats.
    F32(Vec<f32>),
    /// Any block format, kept encoded (f16, q8_0, q4_0, q4_1).
    Blocks(Stored),
}

/// A block weight's bytes: its own buffer, or its range of the pages a model loads
/// all its block weights into (`Model::load`).
pub enum Stored {
    Own(Vec<u8>),
    Shared(Arc<Pages<u8>>, Range<usize>),
}

impl std::ops::Deref for Stored {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Stored::Own(v) => v,
            Stored::Shared(p, r) => &p[r.clone()],
        }
    }
}

pub struct Weight {
    pub dtype: DType,
    pub rows: usize,
    pub cols: usize,
    pub data: WeightData,
    row_bytes: usize,
    /// The rows are in `kernels::interleave8` groups (where the active path has a
    /// `rows8` kernel): rewritten once at load, in place.
    interleaved: bool,
}

impl Weight {
    pub fn new(dtype: DType, rows: usize, cols: usize, mut bytes: Vec<u8>) -> Result<Weight> {
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
        let interleaved =
            kernels::active().interleaves(dtype) && row_bytes > 0 && rows.is_multiple_of(GROUP);
        if interleaved {
            kernels::interleave8(dtype, &mut bytes, row_bytes);
        }
        let data = if dtype == DType::F32 {
            let mut v = vec![0f32; rows * cols];
            quant::dequantize(DType::F32, &bytes, &mut v);
            WeightData::F32(v)
        } else {
            WeightData::Blocks(Stored::Own(bytes))
        };
        Ok(Weight {
            dtype,
            rows,
            cols,
            data,
            row_bytes,
            interleaved,
        })
    }

    pub fn bytes(&self) -> usize {
        self.rows * self.row_bytes
    }

    /// Decode row `r` into `out` (length `cols`); used for embedding lookup.
    pub fn row(&self, r: usize, out: &mut [f32]) {
        match &self.data {
            WeightData::F32(v) => out.copy_from_slice(&v[r * self.cols..(r + 1) * self.cols]),
            WeightData::Blocks(b) if self.interleaved => {
                let group = &b[r / GROUP * GROUP * self.row_bytes..][..GROUP * self.row_bytes];
                let bs = self.dtype.block().1;
                let mut blk = [0u8; 2 + QK]; // the largest block, q8_0's
                for (i, o) in out.chunks_exact_mut(QK).enumerate() {
                    kernels::deinterleave_block(self.dtype, group, i, r % GROUP, &mut blk);
                    quant::dequantize(self.dtype, &blk[..bs], o);
                }
            }
            WeightData::Blocks(b) => quant::dequantize(
                self.dtype,
                &b[r * self.row_bytes..(r + 1) * self.row_bytes],
                out,
            ),
        }
    }

    /// out[i] = W[first + i] · x, with x already quantized when the weight type is.
    fn matvec_rows(&self, x: &[f32], xq: &Q8Act, out: &mut [f32], first: usize) {
        let k = kernels::active();
        match (&self.data, k.qdot(self.dtype)) {
            (WeightData::F32(v), _) => {
                let rows = v[first * self.cols..].chunks_exact(self.cols);
                for (o, w) in out.iter_mut().zip(rows) {
                    *o = (k.dot_f32)(w, x);
                }
            }
            (WeightData::Blocks(b), None) => {
                let rows = b[first * self.row_bytes..].chunks_exact(self.row_bytes);
                for (o, w) in out.iter_mut().zip(rows) {
                    *o = (k.dot_f16)(w, x);
                }
            }
            (WeightData::Blocks(b), Some(_)) if self.interleaved => {
                let rows8 = k
                    .decode_rows8()
                    .expect("interleaved only where rows8 exists");
                let w = &b[first * self.row_bytes..(first + out.len()) * self.row_bytes];
                rows8(self.dtype, w, &xq.row(0), out);
            }
            (WeightData::Blocks(b), Some(dot)) => {
                let xr = xq.row(0);
                let rows = b[first * self.row_bytes..].chunks_exact(self.row_bytes);
                for (i, (o, w)) in out.iter_mut().zip(rows).enumerate() {
                    kernels::touch_ahead(b, (first + i) * self.row_bytes, self.row_bytes);
                    *o = dot(w, &xr);
                }
            }
        }
    }

    /// out = W · x, split across `threads` for large matrices.
    pub fn matvec(&self, x: &[f32], out: &mut [f32], threads: &Threads) {
        matmul_group(&mut [(self, out)], x, 1, threads)
    }

    /// Y = X · Wᵀ for a batch: `x` is `n × cols` row-major, `y` is `n × rows`.
    pub fn matmul(&self, x: &[f32], n: usize, y: &mut [f32], threads: &Threads) {
        matmul_group(&mut [(self, y)], x, n, threads)
    }

    /// One token: rows split across `threads` for large matrices.
    fn matvec_prepared(&self, x: &[f32], act: &Q8Act, out: &mut [f32], threads: &Threads) {
        debug_assert_eq!(x.len(), self.cols);
        debug_assert_eq!(out.len(), self.rows);
        let n = threads.count();
        if n > 1 && self.rows * self.cols >= 1 << 18 {
            // Whole groups per thread for interleaved rows.
            let per = self.rows.div_ceil(n).next_multiple_of(GROUP);
            threads.run_parts(out, per, |t, chunk| {
                self.matvec_rows(x, act, chunk, t * per)
            });
            return;
        }
        self.matvec_rows(x, act, out, 0);
    }

    /// A batch: each weight row is read once and used for every token, so prefill
    /// reads the weights once per batch instead of once per token. Each output equals
    /// `matvec`'s for that token.
    fn matmul_prepared(&self, x: &[f32], n: usize, act: &Q8Act, y: &mut [f32], threads: &Threads) {
        debug_assert_eq!(x.len(), n * self.cols);
        debug_assert_eq!(y.len(), n * self.rows);
        let k = kernels::active();
        let qdot = k.qdot(self.dtype);
        // A tile kernel (AMX) takes whole 16-row tiles; the dots do the other rows.
        let tiles = match (&self.data, k.gemm, qdot) {
            (WeightData::Blocks(b), Some(gemm), Some(_)) => Some((gemm, b)),
            _ => None,
        };
        let work = |out: &mut Band| {
            let (first, rows) = (out.first(), out.rows());
            let xt = |t: usize| &x[t * self.cols..(t + 1) * self.cols];
            let mut row = Vec::new();
            let mut res = Vec::new();
            // Every token's quantized row, once per band (only quantized weights read it).
            let xs: Vec<Q8Row> = match qdot {
                Some(_) => (0..n).map(|t| act.row(t)).collect(),
                None => Vec::new(),
            };
            let mut done = 0;
            if let Some((gemm, b)) = tiles {
                let w = &b[first * self.row_bytes..(first + rows) * self.row_bytes];
                done = gemm(self.dtype, w, self.interleaved, rows, self.cols, act, out);
            }
            if let (WeightData::Blocks(b), true) = (&self.data, self.interleaved) {
                let rows8 = k
                    .decode_rows8()
                    .expect("interleaved only where rows8 exists");
                // Tokens in tiles where the path has a kernel for that.
                let per = if k.rows8_tokens.is_some() {
                    k.tile_tokens
                } else {
                    0
                };
                let tiled = n.checked_div(per).map_or(0, |q| q * per);
                // Two groups per call where the path has that for this type.
                let pairs = k.rows16_for(self.dtype);
                res.resize(2 * GROUP * per, 0.0);
                // `groups` groups of 8 rows from row i of the band.
                let group_w = |i: usize, groups: usize| {
                    let r = first + i;
                    &b[r * self.row_bytes..(r + GROUP * groups) * self.row_bytes]
                };
                // A panel of groups at a time (its weights stay in L2), and within it
                // a tile of tokens at a time (its activation rows stay in L1): the
                // activation is read once per panel instead of once per group.
                let panel = GROUP * PANEL_GROUPS;
                for p0 in (done..rows).step_by(panel) {
                    let end = (p0 + panel).min(rows);
                    let groups = (p0..end).step_by(GROUP);
                    for t in (0..tiled).step_by(per.max(1)) {
                        let tile = k.rows8_tokens.expect("tiles only where the kernel exists");
                        let mut i = p0;
                        while i < end {
                            let (f, n_groups) = match pairs {
                                Some(f) if i + 2 * GROUP <= end => (f, 2),
                                _ => (tile, 1),
                            };
                            let res = &mut res[..n_groups * GROUP * per];
                            f(self.dtype, group_w(i, n_groups), &xs[t..t + per], res);
                            for (j, o) in res.chunks_exact(n_groups * GROUP).enumerate() {
                                out.span(t + j, i, n_groups * GROUP).copy_from_slice(o);
                            }
                            i += n_groups * GROUP;
                        }
                    }
                    for (t, x) in xs.iter().enumerate().skip(tiled) {
                        for i in groups.clone() {
                            rows8(self.dtype, group_w(i, 1), x, out.span(t, i, GROUP));
                        }
                    }
                }
                done = rows;
            }
            for i in done..rows {
                let r = first + i;
                match (&self.data, qdot) {
                    (WeightData::F32(v), _) => {
                        let w = &v[r * self.cols..(r + 1) * self.cols];
                        for t in 0..n {
                            out.set(t, i, (k.dot_f32)(w, xt(t)));
                        }
                    }
                    (WeightData::Blocks(b), Some(dot)) => {
                        let w = &b[r * self.row_bytes..(r + 1) * self.row_bytes];
                        let mut t = 0;
                        // k-quant rows: unpacked once for a run of tokens.
                        if let (Some(f), true) = (k.k_tokens, kernels::is_k_quant(self.dtype)) {
                            let per = k.k_tokens_n;
                            res.resize(per, 0.0);
                            while t + per <= n {
                                f(self.dtype, w, &xs[t..t + per], &mut res[..per]);
                                for (j, &v) in res[..per].iter().enumerate() {
                                    out.set(t + j, i, v);
                                }
                                t += per;
                            }
                        }
                        for (t, x) in xs.iter().enumerate().skip(t) {
                            out.set(t, i, dot(w, x));
                        }
                    }
                    // f16: decode the row once for all n tokens.
                    (WeightData::Blocks(_), None) => {
                        row.resize(self.cols, 0f32);
                        self.row(r, &mut row);
                        for t in 0..n {
                            out.set(t, i, (k.dot_f32)(&row, xt(t)));
                        }
                    }
                }
            }
        };
        let mut y = Band::new(y, n, self.rows);
        if threads.count() > 1 {
            // `BANDS_PER_THREAD` bands a thread, taken as threads finish (`Threads::run`):
            // a thread that other work delays (in a page, the browser's own threads share
            // the cores) takes fewer, instead of the others waiting for its half. Whole
            // panels each (so whole tiles), so that only the last band has leftover
            // rows and no band reads the activation for a part of a panel.
            let per = self
                .rows
                .div_ceil(BANDS_PER_THREAD * threads.count())
                .next_multiple_of(GROUP * PANEL_GROUPS);
            threads.run_each(y.split(per).collect(), |_, band| work(band));
            return;
        }
        work(&mut y);
    }
}

/// Bands of rows per thread in a batched product (`matmul_prepared`).
const BANDS_PER_THREAD: usize = 4;

/// Groups of 8 rows per panel of a batched product: 64 rows, 55 KiB of q4_0 or
/// 104 KiB of q8_0 weights at 1536 columns, well inside an L2.
const PANEL_GROUPS: usize = 8;

/// Per-thread buffers of the products, reused so that neither decode nor prefill
/// allocates (fresh large allocations cost page faults on every call).
#[derive(Default)]
struct Buffers {
    act: Q8Act,
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers::default());
}

/// Products of several weights with one input (q/k/v, gate/up): `x` is `n × cols`
/// row-major, each output `n × rows`. The input is quantized (and packed for a tile
/// kernel) once for the whole group.
pub fn matmul_group(group: &mut [(&Weight, &mut [f32])], x: &[f32], n: usize, threads: &Threads) {
    let Some(cols) = group.first().map(|(w, _)| w.cols) else {
        return;
    };
    let k = kernels::active();
    BUFFERS.with(|b| {
        let b = &mut *b.borrow_mut();
        let quantized = group.iter().any(|(w, _)| k.qdot(w.dtype).is_some());
        // A batch's rows are quantized and packed on every thread (decode's one row
        // is not worth a hand-off).
        let glue = if n > 1 { threads } else { &Threads::one() };
        if quantized {
            b.act.quantize_on(x, cols, kernels::act_bits(), glue);
        }
        if n > 1 && quantized && k.gemm.is_some() {
            b.act
                .pack_tiles_on(group.iter().map(|(w, _)| w.dtype), glue);
        }
        // Once for the group, before any thread takes rows.
        if n == 1 && quantized && k.decode_spread() {
            b.act.spread_pairs();
        }
        for (w, y) in group.iter_mut() {
            assert_eq!(w.cols, cols, "a matmul group shares its input");
            if n == 1 {
                w.matvec_prepared(x, &b.act, y, threads);
            } else {
                w.matmul_prepared(x, n, &b.act, y, threads);
            }
        }
    })
}
