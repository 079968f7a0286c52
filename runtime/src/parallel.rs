//! The threads a model's products run on: the calling thread plus a pool of workers
//! that lives as long as the model, so that a product hands out work instead of
//! spawning threads (spawning per product cost decode more than a second thread
//! gained: 105 → 50 tok/s on SmolLM2 with 2 threads).
//!
//! Work is split into tasks of fixed boundaries (whole groups or tiles of rows), each
//! computed exactly as it would be alone, so the thread count never changes a result.

use crate::error::{Result, SlmError};

/// What a pool thread runs (`Threads::spawned`).
#[cfg(pool)]
pub use rayon::ThreadBuilder;

/// Threads for the forward pass: 1 means the calling thread only (no pool).
pub struct Threads {
    n: usize,
    #[cfg(pool)]
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
            #[cfg(pool)]
            pool: None,
        }
    }

    /// `n` threads in all (the caller and n − 1 workers). In wasm only 1: a pool there
    /// needs its threads started by the page (`spawned`).
    pub fn new(n: usize) -> Result<Threads> {
        if Threads::counted(n)? == 1 {
            return Ok(Threads::one());
        }
        #[cfg(target_arch = "wasm32")]
        return Err(SlmError::Invalid(format!(
            "threads = {n}: {}",
            if cfg!(pool) {
                "a wasm pool's threads are Web Workers (`Threads::spawned`)"
            } else {
                "this build runs on one thread"
            }
        )));
        #[cfg(not(target_arch = "wasm32"))]
        {
            let b = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("slm-worker-{i}"));
            Threads::built(n, b.num_threads(n - 1).build())
        }
    }

    /// `n` threads whose n − 1 pool threads `spawn` starts: each `ThreadBuilder` must
    /// end up in `ThreadBuilder::run` on a thread of its own sharing this memory. In
    /// wasm that is a Web Worker instantiating the same module on the same shared
    /// memory; the embedder owns that, since the runtime has no web dependencies.
    #[cfg(pool)]
    pub fn spawned(
        n: usize,
        spawn: impl FnMut(ThreadBuilder) -> std::io::Result<()>,
    ) -> Result<Threads> {
        if Threads::counted(n)? == 1 {
            return Ok(Threads::one());
        }
        let b = rayon::ThreadPoolBuilder::new().spawn_handler(spawn);
        Threads::built(n, b.num_threads(n - 1).build())
    }

    fn counted(n: usize) -> Result<usize> {
        if n == 0 || n > MAX_THREADS {
            return Err(SlmError::Invalid(format!(
                "threads = {n}: must be 1..={MAX_THREADS}"
            )));
        }
        Ok(n)
    }

    #[cfg(pool)]
    fn built(
        n: usize,
        pool: std::result::Result<rayon::ThreadPool, rayon::ThreadPoolBuildError>,
    ) -> Result<Threads> {
        let pool = pool.map_err(|e| SlmError::Invalid(format!("threads = {n}: {e}")))?;
        Ok(Threads {
            n,
            pool: Some(pool),
        })
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
        #[cfg(pool)]
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
    fn a_pool_runs_on_threads_its_embedder_starts() {
        let started = std::sync::Arc::new(AtomicUsize::new(0));
        let s = started.clone();
        let t = Threads::spawned(3, move |b| {
            s.fetch_add(1, Ordering::Relaxed);
            std::thread::spawn(move || b.run());
            Ok(())
        })
        .unwrap();
        assert_eq!((t.count(), started.load(Ordering::Relaxed)), (3, 2));
        let on: std::sync::Mutex<std::collections::HashSet<_>> = Default::default();
        t.run(64, |_| {
            std::thread::sleep(std::time::Duration::from_millis(1));
            on.lock().unwrap().insert(std::thread::current().id());
        });
        assert!(on.lock().unwrap().len() > 1, "the tasks ran on one thread");
        let e = Threads::spawned(2, |_| Err(std::io::Error::other("no workers"))).unwrap_err();
        assert!(e.to_string().contains("no workers"), "{e}");
    }

    #[test]
    fn counts_outside_the_range_are_refused() {
        assert!(Threads::new(0).is_err());
        assert!(Threads::new(MAX_THREADS + 1).is_err());
    }
}
