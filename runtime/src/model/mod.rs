//! The decoder-only transformer shared by Llama and Qwen2:
//! embeddings → N × (RMSNorm → GQA attention with RoPE → residual → RMSNorm → SwiGLU →
//! residual) → RMSNorm → LM head. All activations and accumulations are f32.

pub mod config;
pub mod kv_cache;
pub mod rope;
pub mod weight;

use crate::error::{Result, SlmError};
use crate::format::manifest::Manifest;
use crate::quant::DType;
use config::ModelConfig;
use kv_cache::KvCache;
use rope::Rope;
use weight::Weight;

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
    /// Native threads for matrix-vector products (1 in wasm).
    pub threads: usize,
}

/// Working memory for one forward step, allocated once per session.
pub struct Scratch {
    x: Vec<f32>,
    xn: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    att_out: Vec<f32>,
    scores: Vec<f32>,
    gate: Vec<f32>,
    up: Vec<f32>,
    cos: Vec<f32>,
    sin: Vec<f32>,
    pub logits: Vec<f32>,
}

impl Scratch {
    pub fn new(cfg: &ModelConfig, capacity: usize) -> Scratch {
        Scratch {
            x: vec![0.0; cfg.hidden_size],
            xn: vec![0.0; cfg.hidden_size],
            q: vec![0.0; cfg.q_dim()],
            k: vec![0.0; cfg.kv_dim()],
            v: vec![0.0; cfg.kv_dim()],
            att_out: vec![0.0; cfg.q_dim()],
            scores: vec![0.0; capacity],
            gate: vec![0.0; cfg.intermediate_size],
            up: vec![0.0; cfg.intermediate_size],
            cos: vec![0.0; cfg.head_dim / 2],
            sin: vec![0.0; cfg.head_dim / 2],
            logits: vec![0.0; cfg.vocab_size],
        }
    }
}

/// HF LlamaRMSNorm: x · rsqrt(mean(x²) + eps) · w, in f32.
fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    let ss: f32 = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let r = 1.0 / (ss + eps).sqrt();
    for ((o, v), g) in out.iter_mut().zip(x).zip(w) {
        *o = g * (v * r);
    }
}

fn add_bias(x: &mut [f32], b: &Option<Vec<f32>>) {
    if let Some(b) = b {
        for (v, bb) in x.iter_mut().zip(b) {
            *v += bb;
        }
    }
}

type ReadTensor<'a> = dyn FnMut(&str) -> Result<Vec<u8>> + 'a;

fn load_weight(
    m: &Manifest,
    read: &mut ReadTensor,
    name: &str,
    rows: usize,
    cols: usize,
) -> Result<Weight> {
    let t = m
        .tensor(name)
        .ok_or_else(|| SlmError::malformed(".slm", format!("tensor {name} is missing")))?;
    if t.shape != [rows as u64, cols as u64] {
        return Err(SlmError::malformed(
            ".slm",
            format!(
                "tensor {name} has shape {:?}, expected [{rows}, {cols}]",
                t.shape
            ),
        ));
    }
    Weight::new(t.dtype, rows, cols, read(name)?)
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
        let embed = load_weight(m, &mut *read, "model.embed_tokens.weight", v, h)?;
        let lm_head = if cfg.tie_word_embeddings {
            None
        } else {
            Some(load_weight(m, &mut *read, "lm_head.weight", v, h)?)
        };
        let norm = load_vector(m, &mut *read, "model.norm.weight", h)?;
        let mut layers = Vec::with_capacity(cfg.num_layers);
        for l in 0..cfg.num_layers {
            let p = format!("model.layers.{l}.");
            let bias = cfg.attention_bias;
            layers.push(Layer {
                attn_norm: load_vector(m, &mut *read, &format!("{p}input_layernorm.weight"), h)?,
                bq: if bias {
                    Some(load_vector(
                        m,
                        &mut *read,
                        &format!("{p}self_attn.q_proj.bias"),
                        qd,
                    )?)
                } else {
                    None
                },
                bk: if bias {
                    Some(load_vector(
                        m,
                        &mut *read,
                        &format!("{p}self_attn.k_proj.bias"),
                        kvd,
                    )?)
                } else {
                    None
                },
                bv: if bias {
                    Some(load_vector(
                        m,
                        &mut *read,
                        &format!("{p}self_attn.v_proj.bias"),
                        kvd,
                    )?)
                } else {
                    None
                },
                ffn_norm: load_vector(
                    m,
                    &mut *read,
                    &format!("{p}post_attention_layernorm.weight"),
                    h,
                )?,
                wq: load_weight(m, &mut *read, &format!("{p}self_attn.q_proj.weight"), qd, h)?,
                wk: load_weight(
                    m,
                    &mut *read,
                    &format!("{p}self_attn.k_proj.weight"),
                    kvd,
                    h,
                )?,
                wv: load_weight(
                    m,
                    &mut *read,
                    &format!("{p}self_attn.v_proj.weight"),
                    kvd,
                    h,
                )?,
                wo: load_weight(m, &mut *read, &format!("{p}self_attn.o_proj.weight"), h, qd)?,
                w_gate: load_weight(m, &mut *read, &format!("{p}mlp.gate_proj.weight"), i, h)?,
                w_up: load_weight(m, &mut *read, &format!("{p}mlp.up_proj.weight"), i, h)?,
                w_down: load_weight(m, &mut *read, &format!("{p}mlp.down_proj.weight"), h, i)?,
            });
        }
        let rope = Rope::new(&cfg);
        Ok(Model {
            cfg,
            embed,
            layers,
            norm,
            lm_head,
            rope,
            threads: 1,
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
        KvCache::new(self.cfg.num_layers, capacity, self.cfg.kv_dim())
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
        let cfg = &self.cfg;
        let pos = cache.len;
        if pos >= cache.capacity {
            return Err(SlmError::Invalid(format!(
                "context full: {} of {} positions used",
                pos, cache.capacity
            )));
        }
        if token as usize >= cfg.vocab_size {
            return Err(SlmError::Invalid(format!(
                "token id {token} is outside the vocab ({})",
                cfg.vocab_size
            )));
        }
        let eps = cfg.rms_norm_eps as f32;
        let (hd, nh, nkv) = (cfg.head_dim, cfg.num_heads, cfg.num_kv_heads);
        let group = nh / nkv;
        let scale = 1.0 / (hd as f32).sqrt();
        let t = self.threads;
        self.embed.row(token as usize, &mut s.x);
        self.rope.angles(pos, &mut s.cos, &mut s.sin);

        for (li, l) in self.layers.iter().enumerate() {
            // Attention block.
            rms_norm(&s.x, &l.attn_norm, eps, &mut s.xn);
            l.wq.matvec(&s.xn, &mut s.q, t);
            l.wk.matvec(&s.xn, &mut s.k, t);
            l.wv.matvec(&s.xn, &mut s.v, t);
            add_bias(&mut s.q, &l.bq);
            add_bias(&mut s.k, &l.bk);
            add_bias(&mut s.v, &l.bv);
            self.rope.apply(&mut s.q, hd, &s.cos, &s.sin);
            self.rope.apply(&mut s.k, hd, &s.cos, &s.sin);
            cache.store(li, pos, &s.k, &s.v);
            let n = pos + 1;
            let (ks, vs) = cache.layer(li, n);
            let kvd = cfg.kv_dim();
            for h in 0..nh {
                let kvh = h / group;
                attend(
                    &s.q[h * hd..(h + 1) * hd],
                    ks,
                    vs,
                    kvd,
                    kvh * hd,
                    hd,
                    scale,
                    &mut s.scores[..n],
                    &mut s.att_out[h * hd..(h + 1) * hd],
                );
            }
            l.wo.matvec(&s.att_out, &mut s.xn, t);
            for (x, d) in s.x.iter_mut().zip(&s.xn) {
                *x += d;
            }

            // SwiGLU MLP block.
            rms_norm(&s.x, &l.ffn_norm, eps, &mut s.xn);
            l.w_gate.matvec(&s.xn, &mut s.gate, t);
            l.w_up.matvec(&s.xn, &mut s.up, t);
            for (g, u) in s.gate.iter_mut().zip(&s.up) {
                *g = *g / (1.0 + (-*g).exp()) * u;
            }
            l.w_down.matvec(&s.gate, &mut s.xn, t);
            for (x, d) in s.x.iter_mut().zip(&s.xn) {
                *x += d;
            }
        }
        cache.len = pos + 1;
        if want_logits {
            rms_norm(&s.x, &self.norm, eps, &mut s.xn);
            self.lm_head
                .as_ref()
                .unwrap_or(&self.embed)
                .matvec(&s.xn, &mut s.logits, t);
        }
        Ok(())
    }

    /// Prefill `tokens` after whatever the cache holds; logits of the last one in
    /// `s.logits`. Runs in batches so each weight is read once per batch.
    pub fn prefill(&self, tokens: &[u32], cache: &mut KvCache, s: &mut Scratch) -> Result<()> {
        if cache.len + tokens.len() > cache.capacity {
            return Err(SlmError::Invalid(format!(
                "prompt of {} tokens does not fit: {} of {} context positions already used",
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
        let chunks = tokens.chunks(PREFILL_BATCH);
        let last = chunks.len().saturating_sub(1);
        for (i, chunk) in tokens.chunks(PREFILL_BATCH).enumerate() {
            self.forward_batch(chunk, cache, s, i == last)?;
        }
        Ok(())
    }

    /// The forward pass for `toks.len()` consecutive positions at once (same math as
    /// `forward`, with matrix-matrix products).
    fn forward_batch(
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
        let t = self.threads;
        let half = hd / 2;

        let mut x = vec![0f32; n * h];
        for (i, &tok) in toks.iter().enumerate() {
            self.embed.row(tok as usize, &mut x[i * h..(i + 1) * h]);
        }
        let mut cos = vec![0f32; n * half];
        let mut sin = vec![0f32; n * half];
        for i in 0..n {
            self.rope.angles(
                p0 + i,
                &mut cos[i * half..(i + 1) * half],
                &mut sin[i * half..(i + 1) * half],
            );
        }
        let mut xn = vec![0f32; n * h];
        let mut q = vec![0f32; n * qd];
        let mut k = vec![0f32; n * kvd];
        let mut v = vec![0f32; n * kvd];
        let mut att = vec![0f32; n * qd];
        let mut gate = vec![0f32; n * inter];
        let mut up = vec![0f32; n * inter];
        let mut scores = vec![0f32; p0 + n];

        for (li, l) in self.layers.iter().enumerate() {
            for i in 0..n {
                rms_norm(
                    &x[i * h..(i + 1) * h],
                    &l.attn_norm,
                    eps,
                    &mut xn[i * h..(i + 1) * h],
                );
            }
            l.wq.matmul(&xn, n, &mut q, t);
            l.wk.matmul(&xn, n, &mut k, t);
            l.wv.matmul(&xn, n, &mut v, t);
            for i in 0..n {
                let (qi, ki, vi) = (
                    &mut q[i * qd..(i + 1) * qd],
                    &mut k[i * kvd..(i + 1) * kvd],
                    &mut v[i * kvd..(i + 1) * kvd],
                );
                add_bias(qi, &l.bq);
                add_bias(ki, &l.bk);
                add_bias(vi, &l.bv);
                let (c, sn) = (
                    &cos[i * half..(i + 1) * half],
                    &sin[i * half..(i + 1) * half],
                );
                self.rope.apply(qi, hd, c, sn);
                self.rope.apply(ki, hd, c, sn);
                cache.store(li, p0 + i, ki, vi);
            }
            let (ks, vs) = cache.layer(li, p0 + n);
            for i in 0..n {
                let ctx = p0 + i + 1;
                for head in 0..nh {
                    let kvh = head / group;
                    let qh = &q[i * qd + head * hd..i * qd + (head + 1) * hd];
                    attend(
                        qh,
                        ks,
                        vs,
                        kvd,
                        kvh * hd,
                        hd,
                        scale,
                        &mut scores[..ctx],
                        &mut att[i * qd + head * hd..i * qd + (head + 1) * hd],
                    );
                }
            }
            l.wo.matmul(&att, n, &mut xn, t);
            for (a, d) in x.iter_mut().zip(&xn) {
                *a += d;
            }
            for i in 0..n {
                rms_norm(
                    &x[i * h..(i + 1) * h],
                    &l.ffn_norm,
                    eps,
                    &mut xn[i * h..(i + 1) * h],
                );
            }
            l.w_gate.matmul(&xn, n, &mut gate, t);
            l.w_up.matmul(&xn, n, &mut up, t);
            for (g, u) in gate.iter_mut().zip(&up) {
                *g = *g / (1.0 + (-*g).exp()) * u;
            }
            l.w_down.matmul(&gate, n, &mut xn, t);
            for (a, d) in x.iter_mut().zip(&xn) {
                *a += d;
            }
        }
        cache.len = p0 + n;
        if want_logits {
            s.x.copy_from_slice(&x[(n - 1) * h..n * h]);
            rms_norm(&s.x, &self.norm, eps, &mut s.xn);
            self.lm_head
                .as_ref()
                .unwrap_or(&self.embed)
                .matvec(&s.xn, &mut s.logits, t);
        }
        Ok(())
    }
}

/// Prompt tokens per batched forward pass: bounds the activation buffers
/// (`PREFILL_BATCH × intermediate` floats) while amortizing weight reads.
const PREFILL_BATCH: usize = 128;

/// One head's causal attention: softmax(q·Kᵀ·scale)·V over the `scores.len()` cached
/// positions, reading head `off..off+hd` of each `kvd`-wide cache row.
#[allow(clippy::too_many_arguments)]
fn attend(
    q: &[f32],
    ks: &[f32],
    vs: &[f32],
    kvd: usize,
    off: usize,
    hd: usize,
    scale: f32,
    scores: &mut [f32],
    out: &mut [f32],
) {
    let mut max = f32::NEG_INFINITY;
    for (p, sc) in scores.iter_mut().enumerate() {
        *sc = weight::dot_f32(q, &ks[p * kvd + off..p * kvd + off + hd]) * scale;
        max = max.max(*sc);
    }
    let mut sum = 0f32;
    for sc in scores.iter_mut() {
        *sc = (*sc - max).exp();
        sum += *sc;
    }
    out.fill(0.0);
    for (p, sc) in scores.iter().enumerate() {
        let w = sc / sum;
        for (o, vv) in out.iter_mut().zip(&vs[p * kvd + off..p * kvd + off + hd]) {
            *o += w * vv;
        }
    }
}
