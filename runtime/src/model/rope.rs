//! Rotary position embeddings.
//!
//! Two conventions exist. GPT-J / llama.cpp rotate *adjacent* pairs (x[2i], x[2i+1]);
//! GPT-NeoX / HF rotate the two *halves* (x[i], x[i + d/2]). This runtime uses the HF
//! rotate-half convention everywhere; the GGUF importer un-permutes llama Q/K rows
//! (which llama.cpp stores for the adjacent-pair convention) so the weights match.
//!
//! Frequencies are computed in f32 exactly as transformers does, so first-step logits
//! agree to ~1e-5.

use super::config::ModelConfig;

pub struct Rope {
    half: usize,
    /// Inverse frequency of each rotated pair, f32 as in transformers.
    inv_freq: Vec<f32>,
}

impl Rope {
    pub fn new(cfg: &ModelConfig) -> Rope {
        let d = cfg.head_dim;
        let half = d / 2;
        let base = cfg.rope_theta as f32;
        let mut inv_freq: Vec<f32> = (0..half)
            .map(|i| {
                let exponent = (2 * i) as f32 / d as f32;
                1.0 / (base as f64).powf(exponent as f64) as f32
            })
            .collect();
        if let Some(s) = &cfg.rope_scaling {
            let factor = s.factor as f32;
            let (low, high) = (s.low_freq_factor as f32, s.high_freq_factor as f32);
            let old = s.original_max_position_embeddings as f32;
            let low_wavelen = old / low;
            let high_wavelen = old / high;
            for f in inv_freq.iter_mut() {
                let wavelen = 2.0 * std::f32::consts::PI / *f;
                let scaled = if wavelen > low_wavelen {
                    *f / factor
                } else {
                    *f
                };
                // transformers' mask, `~(wavelen < high) * ~(wavelen > low)`, written
                // the same way so that a NaN wavelength takes the same branch.
                #[allow(clippy::neg_cmp_op_on_partial_ord)]
                let medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
                *f = if medium {
                    let smooth = (old / wavelen - low) / (high - low);
                    (1.0 - smooth) * scaled / factor + smooth * scaled
                } else {
                    scaled
                };
            }
        }
        Rope { half, inv_freq }
    }

    /// Fill `cos`/`sin` (length head_dim/2) for position `pos`.
    #[inline]
    pub fn angles(&self, pos: usize, cos: &mut [f32], sin: &mut [f32]) {
        for i in 0..self.half {
            // The angle is formed in f32 as before; sin/cos in f64 and rounded once, so
            // every platform's libm gives the same f32 (see `model::exp`).
            let a = (pos as f32 * self.inv_freq[i]) as f64;
            cos[i] = a.cos() as f32;
            sin[i] = a.sin() as f32;
        }
    }

    /// Rotate every head of `x` (heads × head_dim) in place.
    #[inline]
    pub fn apply(&self, x: &mut [f32], head_dim: usize, cos: &[f32], sin: &[f32]) {
        let h = self.half;
        for head in x.chunks_exact_mut(head_dim) {
            for i in 0..h {
                let (a, b) = (head[i], head[i + h]);
                head[i] = a * cos[i] - b * sin[i];
                head[i + h] = b * cos[i] + a * sin[i];
            }
        }
    }
}
