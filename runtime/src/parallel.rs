//! The threads a model's products run on: the calling thread plus a pool of workers
//! that lives as long as the model, so that a product hands out work instead of
//! spawning threads (spawning per product cost decode more than a second thread
//! gained: 105 → 50 tok/s on SmolLM2 with 2 threads).
//!
//! Work is split into tasks of fixed boundaries (whole groups or tiles of rows), each
//! computed exactly as it would be alone, so the thread count never changes a result.
//!
//! A decode step hands out about 170 products (Qwen2.5-0.5B), each tens of
//! microseconds long. A pool thread that sleeps between them (rayon's idle threads
//! wait on a futex; in wasm, `Atomics.wait`) is woken for every one, and that wake-up
//! costs about what the product saves. So the pool's threads only serve as threads:
//! each runs one `crew` loop that spins on the job word for a while before it parks.

use crate::error::{Result, SlmError};

/// What a pool thread runs (`Threads::spawned`).
#[cfg(pool)]
pub use rayon::ThreadBuilder;

/// Threads for the forward pass: 1 means the calling thread only (no pool).
pub struct Threads {
    n: usize,
    #[cfg(pool)]
    pool: Option<(rayon::ThreadPool, std::sync::Arc<crew::Crew>)>,
}

#[cfg(pool)]
impl Drop for Threads {
    fn drop(&mut self) {
        if let Some((_, crew)) = &self.pool {
            crew.shut_down();
        }
    }
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
        let crew = std::sync::Arc::new(crew::Crew::default());
        for _ in 1..n {
            // Each pool thread takes one of these and keeps it until shut down.
            let c = crew.clone();
            pool.spawn(move || c.serve());
        }
        Ok(Threads {
            n,
            pool: Some((pool, crew)),
        })
    }

    /// All cores this process may use.
    pub fn all() -> Threads {
        Threads::new(Self::all_count()).unwrap_or_else(|_| Threads::one())
    }

    /// How many threads `all` starts.
    pub fn all_count() -> usize {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_THREADS)
    }

    pub fn count(&self) -> usize {
        self.n
    }

    /// Runs `f(task)` once for every task in `0..tasks`, spread over the threads, and
    /// returns when all are done. Each thread (the caller too) takes the next task
    /// not yet taken, so uneven tasks (attention's later tokens cost more) balance.
    pub fn run(&self, tasks: usize, f: impl Fn(usize) + Sync) {
        #[cfg(pool)]
        if let (Some((_, crew)), true) = (&self.pool, tasks > 1) {
            if crew.run(tasks, &f) {
                return;
            }
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
    fn back_to_back_jobs_each_run_every_task_once() {
        // Decode's pattern: many short jobs in a row, the crew spinning between them.
        let t = Threads::new(3).unwrap();
        let hits: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(0)).collect();
        for round in 0..20_000 {
            let tasks = 2 + round % 63;
            t.run(tasks, |i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
        }
        let want: Vec<usize> = (0..64)
            .map(|i| (0..20_000).filter(|r| i < 2 + r % 63).count())
            .collect();
        let got: Vec<usize> = hits.iter().map(|h| h.load(Ordering::Relaxed)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_task_that_panics_reaches_the_caller_and_the_pool_still_works() {
        let t = Threads::new(2).unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            t.run(8, |i| assert!(i != 5, "task 5 fails"));
        }));
        assert!(r.is_err());
        let n = AtomicUsize::new(0);
        t.run(8, |_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(n.load(Ordering::Relaxed), 8);
        // A run inside a task runs on its own thread, in full.
        let inner = AtomicUsize::new(0);
        t.run(4, |_| {
            t.run(3, |_| {
                inner.fetch_add(1, Ordering::Relaxed);
            })
        });
        assert_eq!(inner.load(Ordering::Relaxed), 12);
    }

    #[test]
    fn counts_outside_the_range_are_refused() {
        assert!(Threads::new(0).is_err());
        assert!(Threads::new(MAX_THREADS + 1).is_err());
    }
}

/// The pool threads' loop and the job they share.
///
/// One job at a time, published in one atomic word: (epoch, tasks, next task). A thread
/// claims task i by a compare-exchange of that word from (e, tasks, i) to
/// (e, tasks, i + 1), so a claim can only succeed for the job the word describes,
/// while it still has tasks, whatever the thread read before. The caller returns once
/// every task is done, so a claimed task's closure is always alive.
#[cfg(pool)]
mod crew {
    use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::SeqCst};
    use std::sync::{Condvar, Mutex};

    /// Field widths of the job word: epoch 24 bits, tasks and next 20 bits each.
    const FIELD: u32 = 20;
    const MASK: u64 = (1 << FIELD) - 1;
    /// The epoch that tells the threads to leave.
    const SHUT: u64 = (1 << 24) - 1;

    /// Spins on the job word before a thread parks: about 100 µs either way (a spin
    /// hint is a `pause` natively and nothing in wasm, where a load is the step).
    #[cfg(not(target_arch = "wasm32"))]
    const SPINS: u32 = 1 << 12;
    #[cfg(target_arch = "wasm32")]
    const SPINS: u32 = 1 << 17;

    type Job = dyn Fn(usize) + Sync;

    #[derive(Default)]
    pub struct Crew {
        word: AtomicU64,
        /// The job's closure (a `*const &Job`), valid while its epoch has tasks left.
        job: AtomicPtr<&'static Job>,
        done: AtomicUsize,
        /// A task's panic, re-raised by the caller.
        panicked: Mutex<Option<Box<dyn std::any::Any + Send>>>,
        /// A job is running (a nested or concurrent `run` then runs on its own).
        busy: AtomicBool,
        parked: Mutex<usize>,
        wake: Condvar,
    }

    fn unpack(w: u64) -> (u64, u64, u64) {
        (w >> (2 * FIELD), (w >> FIELD) & MASK, w & MASK)
    }

    impl Crew {
        /// Run tasks 0..tasks on the caller and the crew; false (nothing run) when the
        /// crew is busy or the tasks do not fit the word.
        pub fn run(&self, tasks: usize, f: &(dyn Fn(usize) + Sync + '_)) -> bool {
            if tasks as u64 > MASK || self.busy.swap(true, SeqCst) {
                return false;
            }
            let (epoch, _, _) = unpack(self.word.load(SeqCst));
            let next_epoch = if epoch + 1 >= SHUT { 1 } else { epoch + 1 };
            // Safety: the erased lifetime: no thread calls the job after every task
            // is done (see the module doc), and this returns only then.
            let f: &'static Job =
                unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync + '_), &'static Job>(f) };
            let slot: *const &'static Job = &f;
            self.done.store(0, SeqCst);
            self.job.store(slot as *mut _, SeqCst);
            self.word
                .store(next_epoch << (2 * FIELD) | (tasks as u64) << FIELD, SeqCst);
            if *self.parked.lock().unwrap_or_else(|e| e.into_inner()) > 0 {
                self.wake.notify_all();
            }
            while self.claim(next_epoch) {}
            while self.done.load(SeqCst) < tasks {
                std::hint::spin_loop();
            }
            self.busy.store(false, SeqCst);
            if let Some(p) = self
                .panicked
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
            {
                std::panic::resume_unwind(p);
            }
            true
        }

        /// Claim and run one task of job `epoch`; false when it has none left.
        fn claim(&self, epoch: u64) -> bool {
            let mut w = self.word.load(SeqCst);
            loop {
                let (e, tasks, next) = unpack(w);
                if e != epoch || next >= tasks {
                    return false;
                }
                match self.word.compare_exchange_weak(w, w + 1, SeqCst, SeqCst) {
                    Ok(_) => break,
                    Err(now) => w = now,
                }
            }
            let (_, _, t) = unpack(w);
            // Safety: the claim succeeded for a job with tasks left, so its caller is
            // still waiting in `run` and the closure behind `job` is alive.
            let f = unsafe { *self.job.load(SeqCst) };
            if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(t as usize)))
            {
                *self.panicked.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
            }
            self.done.fetch_add(1, SeqCst);
            true
        }

        /// A pool thread's loop: wait for a new job (spinning, then parked), help with
        /// it, and again, until `shut_down`.
        pub fn serve(&self) {
            // Epoch 0 is never a job's (epochs wrap to 1): a thread that starts late
            // still helps with the job running then.
            let mut seen = 0;
            loop {
                let mut spins = 0;
                let epoch = loop {
                    let e = unpack(self.word.load(SeqCst)).0;
                    if e != seen {
                        break e;
                    }
                    if spins < SPINS {
                        spins += 1;
                        std::hint::spin_loop();
                        continue;
                    }
                    // The epoch is checked again under the lock that `run` takes
                    // after publishing, so a wake-up cannot fall between.
                    let mut parked = self.parked.lock().unwrap_or_else(|e| e.into_inner());
                    *parked += 1;
                    while unpack(self.word.load(SeqCst)).0 == seen {
                        parked = self.wake.wait(parked).unwrap_or_else(|e| e.into_inner());
                    }
                    *parked -= 1;
                    spins = 0;
                };
                if epoch == SHUT {
                    return;
                }
                seen = epoch;
                while self.claim(epoch) {}
            }
        }

        pub fn shut_down(&self) {
            self.word.store(SHUT << (2 * FIELD), SeqCst);
            let _guard = self.parked.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_all();
        }
    }
}
