//! Preallocated key/value cache: per layer and KV head, `capacity` positions of
//! `head_dim` floats. Head-major, so that attention streams one head's keys (and then
//! its values) from contiguous memory.

use crate::model::pages::Pages;

pub struct KvCache {
    pub capacity: usize,
    kv_heads: usize,
    head_dim: usize,
    /// [layer][kv head][position][head_dim], in `Pages`: mapped only as positions fill
    /// (on small pages: see `Pages::zeroed`), starting on a cache line (attention loads
    /// 32 bytes at a time).
    k: Pages<f32>,
    v: Pages<f32>,
    /// Number of positions filled (the same for every layer between forward calls).
    pub len: usize,
}

impl KvCache {
    pub fn new(layers: usize, capacity: usize, kv_heads: usize, head_dim: usize) -> KvCache {
        let n = layers * kv_heads * capacity * head_dim;
        KvCache {
            capacity,
            kv_heads,
            head_dim,
            k: Pages::zeroed(n, false),
            v: Pages::zeroed(n, false),
            len: 0,
        }
    }

    fn at(&self, layer: usize, head: usize, pos: usize) -> usize {
        ((layer * self.kv_heads + head) * self.capacity + pos) * self.head_dim
    }

    /// Append one position's keys and values (`kv_heads × head_dim` each).
    pub fn store(&mut self, layer: usize, pos: usize, k: &[f32], v: &[f32]) {
        let hd = self.head_dim;
        for h in 0..self.kv_heads {
            let o = self.at(layer, h, pos);
            self.k[o..o + hd].copy_from_slice(&k[h * hd..(h + 1) * hd]);
            self.v[o..o + hd].copy_from_slice(&v[h * hd..(h + 1) * hd]);
        }
    }

    /// Keys and values of positions 0..n of one KV head of `layer` (`n × head_dim`).
    pub fn head(&self, layer: usize, head: usize, n: usize) -> (&[f32], &[f32]) {
        let o = self.at(layer, head, 0);
        let len = n * self.head_dim;
        (&self.k[o..o + len], &self.v[o..o + len])
    }

    /// Forget everything after `n` positions (prefix reuse keeps the first `n`).
    pub fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n);
    }

    pub fn bytes(&self) -> usize {
        (self.k.len() + self.v.len()) * 4
    }
}

#[cfg(test)]
mod tests {
    use super::KvCache;

    #[test]
    fn heads_start_on_cache_lines_and_keep_what_was_stored() {
        let mut c = KvCache::new(2, 5, 3, 64);
        let k: Vec<f32> = (0..3 * 64).map(|i| i as f32).collect();
        let v: Vec<f32> = k.iter().map(|x| -x).collect();
        c.store(1, 4, &k, &v);
        for h in 0..3 {
            let (ks, vs) = c.head(1, h, 5);
            assert_eq!(ks.as_ptr() as usize % 64, 0);
            assert_eq!(vs.as_ptr() as usize % 64, 0);
            assert_eq!(&ks[4 * 64..], &k[h * 64..(h + 1) * 64]);
            assert_eq!(&vs[4 * 64..], &v[h * 64..(h + 1) * 64]);
        }
        assert_eq!(c.bytes(), 2 * 2 * 5 * 3 * 64 * 4);
    }
}
