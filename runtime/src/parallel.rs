//! The threads a model's products run on: the calling thread plus a pool of workers
//! that lives as long as the model, so that a product hands out work instead of
//! spawning threads (spawning per product cost decode more than a second thread
//! gained: 105 → 50 tok/s on SmolLM2 with 2 threads).
//!
//! Work is split into tasks of fixed boundaries (whole groups or tiles of rows), each
//! computed exactly as it would be alone, so the thread count never changes a result.

use crate::error::{Result, SlmError};

/// Threads for the forward pass: 1 means the calling thread only (no pool).
pub struct Threads {
    n: usize,
    #[cfg(not(target_arch = "wasm32"))]
    pool: Option<rayon::ThreadPool>,
}

impl Default for Threads {
    fn default() -> Self {
        Threads::one()
    }
}

impl std::fmt::Debug for Threads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Threads({})", self.n)
    }
}

/// The most threads a model takes: beyond this the split only adds overhead on any
/// machine we run on, and a typo such as `--threads 10000` is refused instead.
pub const MAX_THREADS: usize = 256;

impl Threads {
    /// The calling thread alone.
    pub fn one() -> Threads {
        Threads {
            n: 1,
            #[cfg(not(target_arch = "wasm32"))]
            pool: None,
        }
    }

    /// `n` threads in all (the caller and n − 1 workers). In wasm (no threads yet) only
    /// 1 is possible.
    pub fn new(n: usize) -> Result<Threads> {
        if n == 0 || n > MAX_THREADS {
            return Err(SlmError::Invalid(format!(
                "threads = {n}: must be 1..={MAX_THREADS}"
            )));
        }
        if n == 1 {
            return Ok(Threads::one());
        }
        #[cfg(target_arch = "wasm32")]
        return Err(SlmError::Invalid(format!(
            "threads = {n}: this build runs on one thread"
        )));
        #[cfg(not(target_arch = "wasm32"))]
        {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n - 1)
                .thread_name(|i| format!("slm-worker-{i}"))
                .build()
                .map_err(|e| SlmError::Invalid(format!("threads = {n}: {e}")))?;
            Ok(Threads {
                n,
                pool: Some(pool),
            })
        }
    }

    /// All cores this process may use.
    pub fn all() -> Threads {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        Threads::new(n.min(MAX_THREADS)).unwrap_or_else(|_| Threads::one())
    }

    pub fn count(&self) -> usize {
        self.n
    }

    /// Runs `f(task)` once for every task in `0..tasks`, spread over the threads, and
    /// returns when all are done. Each thread (the caller too) takes the next task
    /// not yet taken, so uneven tasks (attention's later tokens cost more) balance.
    pub fn run(&self, tasks: usize, f: impl Fn(usize) + Sync) {
        #[cfg(not(target_arch = "wasm32"))]
        if let (Some(pool), true) = (&self.pool, tasks > 1) {
            use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
            let next = AtomicUsize::new(0);
            let take = || loop {
                let t = next.fetch_add(1, Relaxed);
                if t >= tasks {
                    break;
                }
                f(t);
            };
            let take = &take;
            pool.in_place_scope(|s| {
                for _ in 1..self.n.min(tasks) {
                    s.spawn(move |_| take());
                }
                take();
            });
            return;
        }
        (0..tasks).for_each(f);
    }

    /// `run` with one task per part: `f(i, part)` gets part i alone.
    pub fn run_each<P: Send>(&self, parts: Vec<P>, f: impl Fn(usize, &mut P) + Sync) {
        let parts: Vec<std::sync::Mutex<P>> =
            parts.into_iter().map(std::sync::Mutex::new).collect();
        self.run(parts.len(), |i| {
            // Each part is taken by exactly one task: the lock is never contended.
            let mut part = parts[i].lock().unwrap_or_else(|e| e.into_inner());
            f(i, &mut part)
        });
    }

    /// `run_each` over disjoint parts of `out`, `per` elements each (the last one
    /// shorter): part i starts at element i·per.
    pub fn run_parts<T: Send>(
        &self,
        out: &mut [T],
        per: usize,
        f: impl Fn(usize, &mut [T]) + Sync,
    ) {
        self.run_each(out.chunks_mut(per.max(1)).collect(), |i, part| f(i, part));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_task_runs_once() {
        for n in [1, 2, 3] {
            let t = Threads::new(n).unwrap();
            assert_eq!(t.count(), n);
            let hits: Vec<AtomicUsize> = (0..17).map(|_| AtomicUsize::new(0)).collect();
            t.run(hits.len(), |i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
            t.run(0, |_| panic!("no tasks"));
        }
    }

    #[test]
    fn counts_outside_the_range_are_refused() {
        assert!(Threads::new(0).is_err());
        assert!(Threads::new(MAX_THREADS + 1).is_err());
    }
}
