//! Preallocated key/value cache: per layer, `capacity` positions of `kv_dim` floats.

pub struct KvCache {
    pub capacity: usize,
    kv_dim: usize,
    /// [layer][position][kv_dim]
    k: Vec<f32>,
    v: Vec<f32>,
    /// Number of positions filled (the same for every layer between forward calls).
    pub len: usize,
}

impl KvCache {
    pub fn new(layers: usize, capacity: usize, kv_dim: usize) -> KvCache {
        KvCache {
            capacity,
            kv_dim,
            k: vec![0.0; layers * capacity * kv_dim],
            v: vec![0.0; layers * capacity * kv_dim],
            len: 0,
        }
    }

    fn at(&self, layer: usize, pos: usize) -> usize {
        (layer * self.capacity + pos) * self.kv_dim
    }

    pub fn store(&mut self, layer: usize, pos: usize, k: &[f32], v: &[f32]) {
        let o = self.at(layer, pos);
        self.k[o..o + self.kv_dim].copy_from_slice(k);
        self.v[o..o + self.kv_dim].copy_from_slice(v);
    }

    /// Keys and values of positions 0..n of `layer`.
    pub fn layer(&self, layer: usize, n: usize) -> (&[f32], &[f32]) {
        let o = self.at(layer, 0);
        (
            &self.k[o..o + n * self.kv_dim],
            &self.v[o..o + n * self.kv_dim],
        )
    }

    /// Forget everything after `n` positions (prefix reuse keeps the first `n`).
    pub fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n);
    }

    pub fn bytes(&self) -> usize {
        (self.k.len() + self.v.len()) * 4
    }
}
