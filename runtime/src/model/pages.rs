//! Zeroed, lazily mapped memory for the two big streams of a forward pass, the weights
//! (on huge pages where the OS has them) and the KV cache.
//!
//! Decode reads every weight once per token, about 90 MB for SmolLM2-135M at q4_0,
//! and one thread's read bandwidth is bounded by the misses it keeps in flight. On
//! 4 KiB pages that stream crosses a page every 4 KiB: a TLB miss and a page walk each
//! time, and the hardware prefetcher stops at every page boundary. Transparent huge
//! pages (2 MiB) remove both. Measured here with a plain prefetched read loop over
//! 100 MB: 14-15 GB/s on 4 KiB pages, 16-17 GB/s on huge pages; SmolLM2-135M q4_0
//! decode went from 85-102 to 110-113 tok/s with huge pages. Linux hands out
//! anonymous huge pages only to mappings that ask (`madvise(MADV_HUGEPAGE)`, the
//! default `enabled=madvise` mode); malloc's buffers never ask.
//!
//! Elsewhere (wasm, other OSes) `Pages` is a zeroed buffer that starts on a cache line.

use crate::kernels::{Lines, Plain};

/// `len` zeroed values of a plain number type, read and written as a slice.
pub struct Pages<T: Plain> {
    memory: Memory<T>,
}

enum Memory<T: Plain> {
    /// A private anonymous mapping that starts on a 2 MiB boundary.
    #[cfg(target_os = "linux")]
    Mapped {
        /// The mapping as made (unaligned), for `munmap`.
        base: *mut libc::c_void,
        size: usize,
        /// The first 2 MiB boundary in it, where the `len` values start.
        at: *mut T,
        len: usize,
    },
    Heap(Lines<T>),
}

// Safety: `Mapped` owns its mapping as a `Vec` owns its buffer; shared references
// only read it.
unsafe impl<T: Plain + Send> Send for Pages<T> {}
unsafe impl<T: Plain + Sync> Sync for Pages<T> {}

/// The huge page size this module aligns to (x86-64 and arm64 Linux).
pub const HUGE_PAGE: usize = 2 << 20;

impl<T: Plain> Pages<T> {
    /// `len` zeros, on huge pages if `huge` (and the OS has them). Pages are mapped
    /// (and zeroed) by the OS only when first touched, so a KV cache costs memory as
    /// positions fill; on huge pages that happens 2 MiB at a time, which for a KV cache
    /// (a region per layer and head, each touched from the first token on) would map
    /// nearly all of it at once. Where the mapping fails, the values live on the heap
    /// instead: the same values, only slower to stream.
    pub fn zeroed(len: usize, huge: bool) -> Pages<T> {
        #[cfg(target_os = "linux")]
        if let Some(memory) = Self::map(len, huge) {
            return Pages { memory };
        }
        let _ = huge;
        let mut lines = Lines::default();
        lines.resize(len, Self::zero());
        Pages {
            memory: Memory::Heap(lines),
        }
    }

    fn zero() -> T {
        // Safety: `Plain` types take any bit pattern, all zeros included.
        unsafe { std::mem::zeroed() }
    }

    #[cfg(target_os = "linux")]
    fn map(len: usize, huge: bool) -> Option<Memory<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        if bytes == 0 {
            return None;
        }
        // One huge page of slack to start on a boundary.
        let size = bytes.checked_add(HUGE_PAGE)?;
        // Safety: a fresh private anonymous mapping; no existing memory is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let at = (base as *mut u8).wrapping_add((base as *mut u8).align_offset(HUGE_PAGE));
        if huge {
            // Advice, not a requirement: without THP (`enabled=never`) pages are small.
            // Safety: the range lies within the mapping just made.
            unsafe { libc::madvise(at as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE) };
        }
        Some(Memory::Mapped {
            base,
            size,
            at: at as *mut T,
            len,
        })
    }

    /// Whether the values live in a mapping (with `huge`, one that asked for huge
    /// pages; what the OS granted shows in /proc/self/smaps as AnonHugePages).
    pub fn mapped(&self) -> bool {
        !matches!(self.memory, Memory::Heap(_))
    }
}

impl<T: Plain> Drop for Pages<T> {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Memory::Mapped { base, size, .. } = self.memory {
            // Safety: the mapping `map` made, unmapped once; no slice of it outlives
            // `self`.
            unsafe { libc::munmap(base, size) };
        }
    }
}

impl<T: Plain> std::ops::Deref for Pages<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.memory {
            #[cfg(target_os = "linux")]
            // Safety: `len` values of T from a page-aligned start within the mapping,
            // zero-initialized by the OS, and T takes any bits.
            Memory::Mapped { at, len, .. } => unsafe { std::slice::from_raw_parts(*at, *len) },
            Memory::Heap(lines) => lines,
        }
    }
}

impl<T: Plain> std::ops::DerefMut for Pages<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.memory {
            #[cfg(target_os = "linux")]
            // Safety: as in `deref`; `&mut self` keeps the slice unique.
            Memory::Mapped { at, len, .. } => unsafe { std::slice::from_raw_parts_mut(*at, *len) },
            Memory::Heap(lines) => lines,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_writable_and_aligned() {
        for len in [0, 1, 1000, HUGE_PAGE / 4 + 3] {
            let mut p = Pages::<f32>::zeroed(len, len % 2 == 1);
            assert_eq!(p.len(), len);
            assert!(p.iter().all(|&x| x == 0.0));
            assert_eq!(p.as_ptr() as usize % 64, 0);
            #[cfg(target_os = "linux")]
            if len > 0 {
                assert!(p.mapped());
                assert_eq!(p.as_ptr() as usize % HUGE_PAGE, 0);
            }
            for (i, x) in p.iter_mut().enumerate() {
                *x = i as f32;
            }
            assert!(p.iter().enumerate().all(|(i, &x)| x == i as f32));
        }
    }
}
