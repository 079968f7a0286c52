//! The decoder-only transformer shared by Llama and Qwen2:
//! embeddings → N × (RMSNorm → GQA attention with RoPE → residual → RMSNorm → SwiGLU →
//! residual) → RMSNorm → LM head. All activations and accumulations are f32.

pub mod config;
pub mod kv_cache;
pub mod memory;
pub mod pages;
pub mod rope;
pub mod weight;

use crate::error::{Result, SlmError};
use crate::format::manifest::Manifest;
use crate::kernels::Lines;
use crate::parallel::Threads;
use crate::quant::DType;
use config::ModelConfig;
use kv_cache::KvCache;
use pages::Pages;
use rope::Rope;
use std::sync::Arc;
use weight::{matmul_group, Stored, Weight, WeightData};

pub struct Layer {
    /// [hidden]
    pub attn_norm: Vec<f32>,
    /// [num_heads·head_dim, hidden]
    pub wq: Weight,
    /// [num_kv_heads·head_dim, hidden]
    pub wk: Weight,
    /// [num_kv_heads·head_dim, hidden]
    pub wv: Weight,
    /// Qwen2 only: [q_dim], [kv_dim], [kv_dim]
    pub bq: Option<Vec<f32>>,
    pub bk: Option<Vec<f32>>,
    pub bv: Option<Vec<f32>>,
    /// [hidden, num_heads·head_dim]
    pub wo: Weight,
    /// [hidden]
    pub ffn_norm: Vec<f32>,
    /// [intermediate, hidden]
    pub w_gate: Weight,
    /// [intermediate, hidden]
    pub w_up: Weight,
    /// [hidden, intermediate]
    pub w_down: Weight,
}

pub struct Model {
    pub cfg: ModelConfig,
    /// [vocab, hidden]
    pub embed: Weight,
    pub layers: Vec<Layer>,
    /// [hidden]
    pub norm: Vec<f32>,
    /// [vocab, hidden]; None when tied to `embed`.
    pub lm_head: Option<Weight>,
    pub rope: Rope,
    /// The threads the products run on (1 in wasm).
    pub threads: Threads,
}

/// Working memory for forward passes of up to `batch` tokens, allocated once per
/// session so the decode loop allocates nothing.
pub struct Scratch {
    batch: usize,
    /// [batch, hidden] residual stream, and its normalized / projected copy.
    x: Lines<f32>,
    xn: Lines<f32>,
    /// [batch, q_dim], [batch, kv_dim], [batch, kv_dim], [batch, q_dim]
    q: Lines<f32>,
    k: Lines<f32>,
    v: Lines<f32>,
    att: Lines<f32>,
    /// [batch, intermediate]
    gate: Lines<f32>,
    up: Lines<f32>,
    /// [batch, head_dim/2]
    cos: Lines<f32>,
    sin: Lines<f32>,
    /// [heads per KV head, capacity] attention scores of one KV head's query heads.
    scores: Lines<f32>,
    /// [vocab] next-token logits of the last position.
    pub logits: Vec<f32>,
    /// Empty, or [layers, hidden]: the residual stream of a batch's last position
    /// after each layer (`capture_hidden`), which a clarify probe reads.
    pub hidden: Vec<f32>,
}

/// A zeroed buffer whose pages are already mapped (a `vec![0.0; n]` is mapped lazily,
/// so the first forward pass would pay the page faults), starting on a cache line (the
/// kernels load 32 or 64 bytes at a time). The opaque zero stops LLVM from turning the
/// fill back into a lazily mapped zeroed allocation.
fn touched(n: usize) -> Lines<f32> {
    let mut v = Lines::default();
    v.resize(n, std::hint::black_box(0.0));
    v
}

impl Scratch {
    /// Buffers for batches up to `PREFILL_BATCH` tokens, allocated (and touched) here
    /// so that no forward pass allocates.
    pub fn new(cfg: &ModelConfig, capacity: usize) -> Scratch {
        let b = PREFILL_BATCH.min(capacity.max(1));
        Scratch {
            batch: b,
            x: touched(b * cfg.hidden_size),
            xn: touched(b * cfg.hidden_size),
            q: touched(b * cfg.q_dim()),
            k: touched(b * cfg.kv_dim()),
            v: touched(b * cfg.kv_dim()),
            att: touched(b * cfg.q_dim()),
            gate: touched(b * cfg.intermediate_size),
            up: touched(b * cfg.intermediate_size),
            cos: touched(b * cfg.head_dim / 2),
            sin: touched(b * cfg.head_dim / 2),
            scores: touched(cfg.num_heads / cfg.num_kv_heads.max(1) * capacity),
            logits: vec![0.0; cfg.vocab_size],
            hidden: Vec::new(),
        }
    }

    /// Keep, from now on, the last position's residual stream after each layer in
    /// `hidden` ([layers, hidden_size]).
    pub fn capture_hidden(&mut self, cfg: &ModelConfig) {
        self.hidden = vec![0.0; cfg.num_layers * cfg.hidden_size];
    }
}

/// HF LlamaRMSNorm: x · rsqrt(mean(x²) + eps) · w, in f32.
#[inline]
fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    // Σx² in `dot_f32`'s 8 lanes: a single running sum was one add latency per value.
    let ss: f32 = crate::kernels::scalar::dot_f32(x, x) / x.len() as f32;
    let r = 1.0 / (ss + eps).sqrt();
    for ((o, v), g) in out.iter_mut().zip(x).zip(w) {
        *o = g * (v * r);
    }
}

/// `f(i, a_row, b_row)` for each token i of the `n` tokens of two batch buffers (`da`
/// and `db` values a token), the tokens split into a few ranges a thread (when one
/// thread or one token, all on the calling thread without a hand-off). Each range runs
/// through `kernels::with_avx2`: a pool thread's task is not inlined into the caller's
/// AVX2 build (`Model::forward_batch`), and would otherwise run 4 floats wide.
fn by_tokens(
    t: &Threads,
    n: usize,
    a: &mut [f32],
    da: usize,
    b: &mut [f32],
    db: usize,
    f: impl Fn(usize, &mut [f32], &mut [f32]) + Sync,
) {
    let (a, b) = (&mut a[..n * da], &mut b[..n * db]);
    let each = |i0: usize, a: &mut [f32], b: &mut [f32]| {
        crate::kernels::with_avx2(
            #[inline(always)]
            || {
                for (j, (a, b)) in a
                    .chunks_exact_mut(da)
                    .zip(b.chunks_exact_mut(db))
                    .enumerate()
                {
                    f(i0 + j, a, b)
                }
            },
        )
    };
    if t.count() == 1 || n < 2 {
        return each(0, a, b);
    }
    let per = n.div_ceil(GLUE_PARTS_PER_THREAD * t.count());
    let parts: Vec<_> = a.chunks_mut(per * da).zip(b.chunks_mut(per * db)).collect();
    t.run_each(parts, |p, (a, b)| each(p * per, a, b));
}

/// Token ranges a thread in `by_tokens`: a thread that the machine delays takes fewer.
const GLUE_PARTS_PER_THREAD: usize = 2;

#[inline]
fn add_bias(x: &mut [f32], b: &Option<Vec<f32>>) {
    if let Some(b) = b {
        for (v, bb) in x.iter_mut().zip(b) {
            *v += bb;
        }
    }
}

type ReadTensor<'a> = dyn FnMut(&str) -> Result<Vec<u8>> + 'a;

/// The weight matrices named in `specs` (name, rows, cols), in that order. Where the
/// OS maps memory for us (Linux: `Pages::mapped`), the block weights (q8_0, q4_0, …)
/// go into one region on huge pages, each at a cache line, in the order of `specs`:
/// given in the order a forward pass reads them, decode streams one region from start
/// to end, and `rows8`'s prefetch runs on from one matrix into the next instead of into
/// unrelated memory. One tensor is read at a time and freed once copied, so memory
/// holds the model plus one matrix. Elsewhere (wasm) each weight keeps the buffer it
/// was read into: a copy would gain nothing there and, in a wasm memory that never
/// shrinks, keep both.
fn load_weights(
    m: &Manifest,
    read: &mut ReadTensor,
    specs: &[(String, usize, usize)],
) -> Result<Vec<Weight>> {
    let mut entries = Vec::with_capacity(specs.len());
    for (name, rows, cols) in specs {
        let t = m
            .tensor(name)
            .ok_or_else(|| SlmError::malformed(".slm", format!("tensor {name} is missing")))?;
        if t.shape != [*rows as u64, *cols as u64] {
            return Err(SlmError::malformed(
                ".slm",
                format!(
                    "tensor {name} has shape {:?}, expected [{rows}, {cols}]",
                    t.shape
                ),
            ));
        }
        entries.push(t);
    }
    // Each block tensor's place, as stored (f32 ones are decoded to their own buffers).
    let mut places = Vec::with_capacity(entries.len());
    let mut end = 0usize;
    for t in &entries {
        let len = if t.dtype == DType::F32 { 0 } else { t.length };
        let start = end;
        end = usize::try_from(len)
            .ok()
            .and_then(|n| n.checked_next_multiple_of(64))
            .and_then(|n| start.checked_add(n))
            .ok_or_else(|| SlmError::malformed(".slm", "tensor sizes overflow memory"))?;
        places.push(start..start + len as usize);
    }
    let mut pages = Pages::<u8>::mapped(end, true);
    // Read in file order (the largest tensor, the embedding, usually comes first, while
    // little of the region is filled yet).
    let mut by_offset: Vec<usize> = (0..specs.len()).collect();
    by_offset.sort_by_key(|&k| entries[k].offset);
    let mut placed: Vec<Option<Weight>> = (0..specs.len()).map(|_| None).collect();
    for k in by_offset {
        let ((name, rows, cols), t, r) = (&specs[k], entries[k], &places[k]);
        let mut w = Weight::new(t.dtype, *rows, *cols, read(name)?)?;
        if let (WeightData::Blocks(b), Some(pages)) = (&w.data, &mut pages) {
            if b.len() != r.len() {
                return Err(SlmError::malformed(
                    ".slm",
                    format!("tensor {name} does not match its manifest length"),
                ));
            }
            pages[r.clone()].copy_from_slice(b);
            // Freed here, before the next tensor is read; `Shared` below.
            w.data = WeightData::Blocks(Stored::Own(Vec::new()));
        }
        placed[k] = Some(w);
    }
    let pages = pages.map(Arc::new);
    Ok(placed
        .into_iter()
        .zip(places)
        .map(|(w, r)| {
            let mut w = w.expect("every spec was read");
            // With pages, every block weight was moved into them above.
            if let (WeightData::Blocks(_), Some(pages)) = (&w.data, &pages) {
                w.data = WeightData::Blocks(Stored::Shared(pages.clone(), r));
            }
            w
        })
        .collect())
}

fn load_vector(m: &Manifest, read: &mut ReadTensor, name: &str, n: usize) -> Result<Vec<f32>> {
    let t = m
        .tensor(name)
        .ok_or_else(|| SlmError::malformed(".slm", format!("tensor {name} is missing")))?;
    if t.shape != [n as u64] || t.dtype != DType::F32 {
        return Err(SlmError::malformed(
            ".slm",
            format!("tensor {name} must be f32 [{n}]"),
        ));
    }
    let b = read(name)?;
    Ok(b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

impl Model {
    /// Build the model from a manifest, fetching each tensor's bytes through `read`
    /// (one tensor in memory at a time besides the model itself).
    pub fn load(m: &Manifest, read: &mut dyn FnMut(&str) -> Result<Vec<u8>>) -> Result<Model> {
        let cfg = m.model.clone();
        cfg.validate()?;
        let (h, v, i) = (cfg.hidden_size, cfg.vocab_size, cfg.intermediate_size);
        let (qd, kvd) = (cfg.q_dim(), cfg.kv_dim());
        // The matrices in the order a forward pass reads them (`load_weights`): layer by
        // layer, then the LM head, which is the embedding when tied (an untied
        // embedding, read one row per token, goes last).
        let mut specs = Vec::new();
        for l in 0..cfg.num_layers {
            let p = format!("model.layers.{l}.");
            for (name, rows, cols) in [
                ("self_attn.q_proj", qd, h),
                ("self_attn.k_proj", kvd, h),
                ("self_attn.v_proj", kvd, h),
                ("self_attn.o_proj", h, qd),
                ("mlp.gate_proj", i, h),
                ("mlp.up_proj", i, h),
                ("mlp.down_proj", h, i),
            ] {
                specs.push((format!("{p}{name}.weight"), rows, cols));
            }
        }
        if !cfg.tie_word_embeddings {
            specs.push(("lm_head.weight".to_string(), v, h));
        }
        specs.push(("model.embed_tokens.weight".to_string(), v, h));
        let mut weights = load_weights(m, &mut *read, &specs)?.into_iter();
        let mut next = || weights.next().expect("one weight per spec");

        let mut layers = Vec::with_capacity(cfg.num_layers);
        for l in 0..cfg.num_layers {
            let p = format!("model.layers.{l}.");
            let bias = cfg.attention_bias;
            let [wq, wk, wv, wo, w_gate, w_up, w_down] = std::array::from_fn(|_| next());
            let mut bias_of = |name: &str, n: usize| -> Result<Option<Vec<f32>>> {
                if bias {
                    load_vector(m, &mut *read, &format!("{p}self_attn.{name}.bias"), n).map(Some)
                } else {
                    Ok(None)
                }
            };
            let (bq, bk, bv) = (
                bias_of("q_proj", qd)?,
                bias_of("k_proj", kvd)?,
                bias_of("v_proj", kvd)?,
            );
            layers.push(Layer {
                attn_norm: load_vector(m, &mut *read, &format!("{p}input_layernorm.weight"), h)?,
                bq,
                bk,
                bv,
                ffn_norm: load_vector(
                    m,
                    &mut *read,
                    &format!("{p}post_attention_layernorm.weight"),
                    h,
                )?,
                wq,
                wk,
                wv,
                wo,
                w_gate,
                w_up,
                w_down,
            });
        }
        let lm_head = (!cfg.tie_word_embeddings).then(&mut next);
        let embed = next();
        let norm = load_vector(m, &mut *read, "model.norm.weight", h)?;
        let rope = Rope::new(&cfg);
        Ok(Model {
            cfg,
            embed,
            layers,
            norm,
            lm_head,
            rope,
            threads: Threads::one(),
        })
    }

    pub fn weight_bytes(&self) -> usize {
        let mut n = self.embed.bytes()
            + self.lm_head.as_ref().map_or(0, |w| w.bytes())
            + self.norm.len() * 4;
        for l in &self.layers {
            for w in [&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down] {
                n += w.bytes();
            }
        }
        n
    }

    pub fn new_cache(&self, capacity: usize) -> KvCache {
        KvCache::new(
            self.cfg.num_layers,
            capacity,
            self.cfg.num_kv_heads,
            self.cfg.head_dim,
        )
    }

    /// A 5-token prefill and one decode step on a cache and scratch of their own,
    /// discarded: every kernel of both phases runs (the token tiles and their tail,
    /// attention, the lm head). In the browser, a wasm function starts in V8's
    /// baseline code and is recompiled optimized only once it has run hot, on
    /// background threads that share the cores with the model's: the page's first
    /// reply read its prompt at 110-120 tok/s where later ones read at 160-170
    /// (SmolLM2, 2 threads). A page runs this at load, so the first reply starts on
    /// optimized code. Under 1 MB (a cache of 6 positions, buffers for a 5-token
    /// batch, one logits vector), freed before the session allocates its own.
    pub fn warm_up(&self) -> Result<()> {
        let ids: Vec<u32> = (0..5).map(|i| i % self.cfg.vocab_size as u32).collect();
        let mut cache = self.new_cache(ids.len() + 1);
        let mut s = Scratch::new(&self.cfg, ids.len() + 1);
        self.prefill(&ids, &mut cache, &mut s)?;
        self.forward(ids[0], &mut cache, &mut s, true)
    }

    /// Measure a decode step under each of the kernels' read-ahead modes
    /// (`kernels::ReadAhead`), each the best of `TUNE_ROUNDS` steps taken in turn, and
    /// keep the fastest (a mode that reads ahead less wins ties within 2%: it costs the
    /// other thread's memory traffic nothing). `now` is a clock in milliseconds. None
    /// where this build has no read-ahead to choose (native). Results do not depend on
    /// the choice, only speed. Costs 3·`TUNE_ROUNDS` decode steps and a cache of as
    /// many positions.
    pub fn tune_read_ahead(&self, now: &dyn Fn() -> f64) -> Result<Option<ReadAheadTuning>> {
        if !crate::kernels::HAS_READ_AHEAD {
            return Ok(None);
        }
        self.measure_read_ahead(now).map(Some)
    }

    /// `tune_read_ahead`'s measurement and choice, on any build (where there is no
    /// read-ahead, every mode runs the same code).
    pub fn measure_read_ahead(&self, now: &dyn Fn() -> f64) -> Result<ReadAheadTuning> {
        use crate::kernels::ReadAhead;
        let modes = ReadAhead::ALL;
        let ms = self.best_step_ms(modes.len(), now, |m| {
            crate::kernels::set_read_ahead(modes[m])
        })?;
        // Modes in order of how much they read ahead: a later one must beat the best
        // so far by more than 2%.
        let mut best = 0;
        for m in 1..modes.len() {
            if ms[m] * 1.02 < ms[best] {
                best = m;
            }
        }
        crate::kernels::set_read_ahead(modes[best]);
        Ok(ReadAheadTuning {
            mode: modes[best],
            ms_off: ms[0],
            ms_page: ms[1],
            ms_line: ms[2],
        })
    }

    /// The best decode step in ms under each of `settings` kernel settings (`set`
    /// applies one), `TUNE_ROUNDS` steps each, taken in turn so that drift on a shared
    /// machine falls on all of them alike; `now` is a clock in milliseconds.
    fn best_step_ms(
        &self,
        settings: usize,
        now: &dyn Fn() -> f64,
        set: impl Fn(usize),
    ) -> Result<Vec<f64>> {
        let steps = settings * TUNE_ROUNDS;
        let mut cache = self.new_cache(steps);
        let mut s = Scratch::new(&self.cfg, steps);
        let mut ms = vec![f64::INFINITY; settings];
        for i in 0..steps {
            let m = i % settings;
            set(m);
            let t = now();
            self.forward((i % self.cfg.vocab_size) as u32, &mut cache, &mut s, true)?;
            ms[m] = ms[m].min(now() - t);
        }
        Ok(ms)
    }

    /// Measure a decode step with the path's full-width `rows8` and with its
    /// `rows8_narrow` (`kernels::Kernels::rows8_narrow`), each the best of
    /// `TUNE_ROUNDS` steps taken in turn on this model's weights and threads, and keep
    /// the faster (the full width wins ties within 2%). None where the path has one
    /// width only. Results do not depend on the choice, only speed.
    pub fn tune_decode_width(&self, now: &dyn Fn() -> f64) -> Result<Option<WidthTuning>> {
        if crate::kernels::active().rows8_narrow.is_none() {
            return Ok(None);
        }
        // Setting 0 the full width, 1 the narrow one.
        let ms = self.best_step_ms(2, now, |m| crate::kernels::set_wide_decode(m == 0))?;
        let wide = ms[1] * 1.02 >= ms[0];
        crate::kernels::set_wide_decode(wide);
        Ok(Some(WidthTuning {
            wide,
            ms_wide: ms[0],
            ms_narrow: ms[1],
        }))
    }

    /// Run one token at position `cache.len`, append its K/V, and (if `want_logits`)
    /// leave the next-token logits in `s.logits`.
    pub fn forward(
        &self,
        token: u32,
        cache: &mut KvCache,
        s: &mut Scratch,
        want_logits: bool,
    ) -> Result<()> {
        self.check_room(&[token], cache)?;
        self.forward_batch(&[token], cache, s, want_logits)
    }

    fn check_room(&self, tokens: &[u32], cache: &KvCache) -> Result<()> {
        if cache.len + tokens.len() > cache.capacity {
            return Err(SlmError::Invalid(format!(
                "context full: {} tokens do not fit, {} of {} positions already used",
                tokens.len(),
                cache.len,
                cache.capacity
            )));
        }
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= self.cfg.vocab_size) {
            return Err(SlmError::Invalid(format!(
                "token id {bad} is outside the vocab ({})",
                self.cfg.vocab_size
            )));
        }
        Ok(())
    }

    /// Prefill `tokens` after whatever the cache holds; logits of the last one in
    /// `s.logits`. Runs in batches so each weight is read once per batch.
    pub fn prefill(&self, tokens: &[u32], cache: &mut KvCache, s: &mut Scratch) -> Result<()> {
        self.prefill_part(tokens, cache, s, true)
    }

    /// Part of a prompt: `tokens` after whatever the cache holds, with the logits of the
    /// last one in `s.logits` only if `last` (the lm head is a decode step's worth of
    /// work, wasted on a part that is not the end). A prompt fed in parts leaves the
    /// same cache and logits as fed whole: each position's arithmetic does not depend
    /// on the batch it runs in.
    pub fn prefill_part(
        &self,
        tokens: &[u32],
        cache: &mut KvCache,
        s: &mut Scratch,
        last: bool,
    ) -> Result<()> {
        self.check_room(tokens, cache)?;
        let n = tokens.len().div_ceil(s.batch);
        for (i, chunk) in tokens.chunks(s.batch).enumerate() {
            self.forward_batch(chunk, cache, s, last && i + 1 == n)?;
        }
        Ok(())
    }

    /// The forward pass for `toks.len()` consecutive positions at once (same math as
    /// `forward`, with matrix-matrix products). The glue between the kernels runs
    /// through `kernels::with_avx2` (same bits; the parity tests check the result).
    fn forward_batch(
        &self,
        toks: &[u32],
        cache: &mut KvCache,
        s: &mut Scratch,
        want_logits: bool,
    ) -> Result<()> {
        crate::kernels::with_avx2(
            #[inline(always)]
            || self.forward_batch_body(toks, cache, s, want_logits),
        )
    }

    #[inline(always)]
    fn forward_batch_body(
        &self,
        toks: &[u32],
        cache: &mut KvCache,
        s: &mut Scratch,
        want_logits: bool,
    ) -> Result<()> {
        let cfg = &self.cfg;
        let n = toks.len();
        let p0 = cache.len;
        let (h, hd, nh, nkv) = (
            cfg.hidden_size,
            cfg.head_dim,
            cfg.num_heads,
            cfg.num_kv_heads,
        );
        let (qd, kvd, inter) = (cfg.q_dim(), cfg.kv_dim(), cfg.intermediate_size);
        let eps = cfg.rms_norm_eps as f32;
        let group = nh / nkv;
        let scale = 1.0 / (hd as f32).sqrt();
        let t = &self.threads;
        let half = hd / 2;

        let Scratch {
            x,
            xn,
            q,
            k,
            v,
            att,
            gate,
            up,
            cos,
            sin,
            scores,
            logits,
            hidden,
            ..
        } = s;
        let (x, xn) = (&mut x[..n * h], &mut xn[..n * h]);
        let (q, k, v, att) = (
            &mut q[..n * qd],
            &mut k[..n * kvd],
            &mut v[..n * kvd],
            &mut att[..n * qd],
        );
        let (gate, up) = (&mut gate[..n * inter], &mut up[..n * inter]);
        let (cos, sin) = (&mut cos[..n * half], &mut sin[..n * half]);
        for (i, &tok) in toks.iter().enumerate() {
            self.embed.row(tok as usize, &mut x[i * h..(i + 1) * h]);
            self.rope.angles(
                p0 + i,
                &mut cos[i * half..(i + 1) * half],
                &mut sin[i * half..(i + 1) * half],
            );
        }

        // The glue between the products works token by token, so it is split over the
        // threads by tokens (`by_tokens`), which changes no result.
        if let Some(l) = self.layers.first() {
            by_tokens(t, n, x, h, xn, h, |_, x, xn| {
                rms_norm(x, &l.attn_norm, eps, xn)
            });
        }
        for (li, l) in self.layers.iter().enumerate() {
            matmul_group(
                &mut [(&l.wq, &mut *q), (&l.wk, &mut *k), (&l.wv, &mut *v)],
                xn,
                n,
                t,
            );
            {
                let (cos, sin) = (&*cos, &*sin);
                by_tokens(t, n, q, qd, k, kvd, |i, qi, ki| {
                    add_bias(qi, &l.bq);
                    add_bias(ki, &l.bk);
                    let (c, sn) = (
                        &cos[i * half..(i + 1) * half],
                        &sin[i * half..(i + 1) * half],
                    );
                    self.rope.apply(qi, hd, c, sn);
                    self.rope.apply(ki, hd, c, sn);
                });
            }
            for i in 0..n {
                let vi = &mut v[i * kvd..(i + 1) * kvd];
                add_bias(vi, &l.bv);
                cache.store(li, p0 + i, &k[i * kvd..(i + 1) * kvd], vi);
            }
            // Tokens i0.. of `att_part` (whole tokens), every KV head.
            let cache_r = &*cache;
            let attend_tokens = |i0: usize, att_part: &mut [f32], scores: &mut [f32]| {
                for kvh in 0..nkv {
                    let (ks, vs) = cache_r.head(li, kvh, p0 + n);
                    for (j, att_i) in att_part.chunks_exact_mut(qd).enumerate() {
                        let i = i0 + j;
                        let ctx = p0 + i + 1;
                        // The query heads that share KV head kvh are adjacent.
                        let heads = kvh * group * hd..(kvh + 1) * group * hd;
                        attend(
                            &q[i * qd..(i + 1) * qd][heads.clone()],
                            &ks[..ctx * hd],
                            &vs[..ctx * hd],
                            hd,
                            scale,
                            &mut scores[..group * ctx],
                            &mut att_i[heads],
                        );
                    }
                }
            };
            if t.count() == 1 || n == 1 {
                attend_tokens(0, att, scores);
            } else {
                // Several token ranges per thread: later tokens see more context, and
                // the threads take ranges as they finish. Each head of each token is
                // computed alone, as above, so the split changes no result.
                let per = n.div_ceil(4 * t.count());
                t.run_parts(att, per * qd, |c, part| {
                    let mut scores = vec![0f32; group * (p0 + n)];
                    // (A pool thread's task: see `by_tokens`.)
                    crate::kernels::with_avx2(
                        #[inline(always)]
                        || attend_tokens(c * per, part, &mut scores),
                    );
                });
            }
            l.wo.matmul(att, n, xn, t);
            // The residual, then the FFN's norm of it.
            by_tokens(t, n, x, h, xn, h, |_, x, xn| {
                for (a, d) in x.iter_mut().zip(xn.iter()) {
                    *a += d;
                }
                rms_norm(x, &l.ffn_norm, eps, xn);
            });
            matmul_group(
                &mut [(&l.w_gate, &mut *gate), (&l.w_up, &mut *up)],
                xn,
                n,
                t,
            );
            by_tokens(t, n, gate, inter, up, inter, |_, gate, up| {
                for (g, u) in gate.iter_mut().zip(up.iter()) {
                    *g = *g / (1.0 + crate::model::exp(-*g)) * u;
                }
            });
            l.w_down.matmul(gate, n, xn, t);
            // The residual, then the next layer's attention norm of it.
            let next = self.layers.get(li + 1);
            by_tokens(t, n, x, h, xn, h, |_, x, xn| {
                for (a, d) in x.iter_mut().zip(xn.iter()) {
                    *a += d;
                }
                if let Some(next) = next {
                    rms_norm(x, &next.attn_norm, eps, xn);
                }
            });
            if let Some(kept) = hidden.get_mut(li * h..(li + 1) * h) {
                kept.copy_from_slice(&x[(n - 1) * h..n * h]);
            }
        }
        cache.len = p0 + n;
        if want_logits {
            let last = &x[(n - 1) * h..n * h];
            rms_norm(last, &self.norm, eps, &mut xn[..h]);
            self.lm_head
                .as_ref()
                .unwrap_or(&self.embed)
                .matvec(&xn[..h], logits, t);
        }
        Ok(())
    }
}

/// Decode steps `Model::tune_read_ahead` and `Model::tune_decode_width` time each way.
const TUNE_ROUNDS: usize = 3;

/// What `Model::tune_read_ahead` measured and chose: the best decode step in ms under
/// each read-ahead mode.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReadAheadTuning {
    pub mode: crate::kernels::ReadAhead,
    pub ms_off: f64,
    pub ms_page: f64,
    pub ms_line: f64,
}

impl ReadAheadTuning {
    /// One line for a person: the choice and the three times.
    pub fn describe(&self) -> String {
        format!(
            "{}: a decode step took {:.1} ms without it, {:.1} ms reading one line per page, {:.1} ms reading every line (measured at load)",
            self.mode.as_str(),
            self.ms_off,
            self.ms_page,
            self.ms_line
        )
    }
}

/// What `Model::tune_decode_width` measured and chose: the best decode step in ms
/// with the path's full-width `rows8` and with its narrow one.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WidthTuning {
    pub wide: bool,
    pub ms_wide: f64,
    pub ms_narrow: f64,
}

/// Prompt tokens per batched forward pass: bounds the activation buffers
/// (`PREFILL_BATCH × intermediate` floats) while amortizing weight reads.
pub(crate) const PREFILL_BATCH: usize = 128;

/// Causal attention of the query heads in `q` (`group × hd`) that share one KV head:
/// per head, softmax(q·Kᵀ·scale)·V over that head's `ctx = scores.len() / group`
/// cached positions (`ks`, `vs`: ctx × hd). Each head's arithmetic, and its order, is
/// that of attending alone; the group's passes find the head's K and V in cache.
#[inline(always)] // into the AVX2 build of forward_batch
fn attend(
    q: &[f32],
    ks: &[f32],
    vs: &[f32],
    hd: usize,
    scale: f32,
    scores: &mut [f32],
    out: &mut [f32],
) {
    let group = q.len() / hd;
    let ctx = scores.len() / group;
    // The kernel's dots (LLVM vectorized an inlined reference dot poorly here).
    let dots = crate::kernels::active().dots_f32;
    for (g, sc) in scores.chunks_exact_mut(ctx).enumerate() {
        dots(&q[g * hd..(g + 1) * hd], ks, hd, sc);
        for v in sc.iter_mut() {
            *v *= scale;
        }
    }
    for sc in scores.chunks_exact_mut(ctx) {
        let max = max_f32(sc);
        // Separate loops: the exps are independent (and vectorize), the sum in 8 lanes.
        for v in sc.iter_mut() {
            *v = exp(*v - max);
        }
        let sum = crate::kernels::scalar::sum_f32(sc);
        // Normalized in place: each score becomes its weight, score / sum.
        for v in sc.iter_mut() {
            *v /= sum;
        }
    }
    let weighted_sum = crate::kernels::active().weighted_sum_f32;
    for (g, o) in out.chunks_exact_mut(hd).enumerate() {
        weighted_sum(&scores[g * ctx..(g + 1) * ctx], vs, hd, o);
    }
}

/// The largest of `xs` (−∞ if empty), ignoring NaNs as `f32::max` does, in 8 running
/// maxima: written as compares so that it vectorizes (`f32::max`'s NaN rule kept the
/// loop scalar). A maximum is exact in any order; of +0.0 and −0.0 either may come
/// out, as with `f32::max`, and x − (±0.0) is the same number but for x = −0.0,
/// whose `exp` is 1 either way.
#[inline(always)]
fn max_f32(xs: &[f32]) -> f32 {
    let pick = |m: f32, v: f32| if v > m { v } else { m };
    let mut m = [f32::NEG_INFINITY; 8];
    let chunks = xs.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for k in 0..8 {
            m[k] = pick(m[k], c[k]);
        }
    }
    tail.iter()
        .chain(&m)
        .fold(f32::NEG_INFINITY, |a, &v| pick(a, v))
}

/// e^x for f32, by our own code: the platform's f32 `exp` differs between glibc (the
/// CLI) and the wasm libm by an ulp here and there, and a libm call per element was
/// 5-7% of a forward pass. Plain IEEE adds and multiplies (no FMA) give the same bits
/// everywhere, so the browser computes the same logits as the CLI (see `kernels`).
///
/// Cephes' expf, in f32 so that it runs 8 wide: x = k·ln2 + r with |r| ≤ ln2/2 (k
/// rounded with the 1.5·2²³ trick; ln2 split in two so that k·C1 is exact), e^r by a
/// degree-7 minimax polynomial, times 2^k built from its bits as two factors (so that
/// subnormal results need no special case). Over every f32 in [−104, 89] it gave the
/// correctly rounded value for 99.19% of inputs and the other neighbour of the true
/// value for the rest (at most 0.99 ulp off). Inputs are clamped to [−104, 89], past
/// which the result is 0 or ∞ anyway; NaN stays NaN.
#[inline]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const SHIFT: f32 = 12_582_912.0; // 1.5·2²³: k sits in the low mantissa bits
    const C1: f32 = 355.0 / 512.0; // ln2 to 9 significant bits, exact
    const C2: f32 = -2.121_944_4e-4; // ln2 − C1
    let x = x.clamp(-104.0, 89.0);
    let shifted = x * LOG2E + SHIFT;
    let k = shifted - SHIFT;
    let r = (x - k * C1) - k * C2;
    let p = ((((1.987_569_2e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5; // Cephes' 5.0000001201e-1 rounds to 0.5 in f32
    let y = p * (r * r) + r + 1.0;
    // k ∈ [−150, 128], so each half of it makes a normal power of two.
    let ki = (shifted.to_bits() as i32).wrapping_sub(SHIFT.to_bits() as i32);
    let (k1, k2) = (ki >> 1, ki - (ki >> 1));
    let pow2 = |k: i32| f32::from_bits((k.wrapping_add(127) as u32) << 23);
    y * pow2(k1) * pow2(k2)
}
