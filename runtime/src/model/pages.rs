//! Zeroed, lazily mapped memory for the two big streams of a forward pass: the weights
//! (on huge pages where the OS has them) and the KV cache.
//!
//! Decode reads every weight once per token, about 90 MB for SmolLM2-135M at q4_0,
//! and one thread's read bandwidth is bounded by the misses it keeps in flight. On
//! 4 KiB pages that stream crosses a page every 4 KiB: a TLB miss and a page walk each
//! time, and the hardware prefetcher stops at every page boundary. Transparent huge
//! pages (2 MiB) remove both. Measured here with a plain prefetched read loop over
//! 100 MB: 14-15 GB/s on 4 KiB pages, 16-17 GB/s on huge pages; SmolLM2-135M q4_0
//! decode went from a median of 89 to 114 tok/s with its weights on huge pages. Linux
//! hands out anonymous huge pages only to mappings that ask (`madvise(MADV_HUGEPAGE)`,
//! under the default `enabled=madvise`); malloc's buffers never ask.
//!
//! Elsewhere (wasm, other OSes) `Pages` is zeroed heap memory that starts on a cache
//! line, from the allocator's zeroed allocation (which the OS, or the wasm engine, also
//! maps as it is touched).

use crate::kernels::Plain;
use std::alloc::Layout;

/// `len` zeroed values of a plain number type, read and written as a slice.
pub struct Pages<T: Plain> {
    at: *mut T,
    len: usize,
    memory: Memory,
}

enum Memory {
    /// A private anonymous mapping; the values start at its first 2 MiB boundary.
    #[cfg(target_os = "linux")]
    Mapped {
        base: *mut libc::c_void,
        size: usize,
    },
    /// From `std::alloc::alloc_zeroed` with this layout (none for `len` 0).
    Heap(Option<Layout>),
}

// Safety: `Pages` owns its memory as a `Vec` owns its buffer; shared references only
// read it.
unsafe impl<T: Plain + Send> Send for Pages<T> {}
// Safety: as for `Send`.
unsafe impl<T: Plain + Sync> Sync for Pages<T> {}

/// The huge page size this module aligns to (x86-64 and arm64 Linux).
pub const HUGE_PAGE: usize = 2 << 20;

impl<T: Plain> Pages<T> {
    /// `len` zeros: a mapping where the OS makes one (`mapped`), else the heap. Either
    /// way the memory is mapped (and zeroed) by the OS only when first touched, so a KV
    /// cache costs memory as positions fill.
    pub fn zeroed(len: usize, huge: bool) -> Pages<T> {
        Self::mapped(len, huge).unwrap_or_else(|| Self::heap(len))
    }

    /// `len` zeros in a private anonymous mapping that starts on a 2 MiB boundary, on
    /// huge pages if `huge` (as far as the OS grants them), on small pages otherwise:
    /// huge pages are mapped 2 MiB at a time, which for a KV cache (a region per layer
    /// and head, each touched from the first token on) would map nearly all of it at
    /// once. None off Linux, for `len` 0, or if the mapping fails.
    pub fn mapped(len: usize, huge: bool) -> Option<Pages<T>> {
        #[cfg(target_os = "linux")]
        {
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
            // Advice, not a requirement (without THP all pages are small); explicit
            // both ways, since `enabled=always` would give huge pages unasked.
            let advice = if huge {
                libc::MADV_HUGEPAGE
            } else {
                libc::MADV_NOHUGEPAGE
            };
            // Safety: the range lies within the mapping just made.
            unsafe { libc::madvise(at as *mut libc::c_void, bytes, advice) };
            Some(Pages {
                at: at as *mut T,
                len,
                memory: Memory::Mapped { base, size },
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (len, huge);
            None
        }
    }

    fn heap(len: usize) -> Pages<T> {
        let layout = Layout::array::<T>(len)
            .and_then(|l| l.align_to(64))
            .expect("a buffer larger than the address space");
        if layout.size() == 0 {
            return Pages {
                // Dangling, on a line, as `NonNull::dangling` for a 64-byte type.
                at: layout.align() as *mut T,
                len,
                memory: Memory::Heap(None),
            };
        }
        // Safety: a layout of non-zero size.
        let at = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
        if at.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Pages {
            at,
            len,
            memory: Memory::Heap(Some(layout)),
        }
    }

    /// Whether the values live in a mapping (`mapped`).
    pub fn is_mapped(&self) -> bool {
        !matches!(self.memory, Memory::Heap(_))
    }
}

impl<T: Plain> Drop for Pages<T> {
    fn drop(&mut self) {
        match self.memory {
            #[cfg(target_os = "linux")]
            // Safety: the mapping `mapped` made, unmapped once; no slice of it
            // outlives `self`.
            Memory::Mapped { base, size } => unsafe {
                libc::munmap(base, size);
            },
            // Safety: allocated by `heap` with this layout, freed once.
            Memory::Heap(Some(layout)) => unsafe {
                std::alloc::dealloc(self.at as *mut u8, layout)
            },
            Memory::Heap(None) => {}
        }
    }
}

impl<T: Plain> std::ops::Deref for Pages<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // Safety: `len` values of T, zero-initialized (by the OS or `alloc_zeroed`) and
        // T takes any bits; `at` is aligned (a page, 64 bytes, or dangling for 0).
        unsafe { std::slice::from_raw_parts(self.at, self.len) }
    }
}

impl<T: Plain> std::ops::DerefMut for Pages<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // Safety: as in `deref`; `&mut self` keeps the slice unique.
        unsafe { std::slice::from_raw_parts_mut(self.at, self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_writable_and_aligned() {
        for len in [0, 1, 1000, HUGE_PAGE / 4 + 3] {
            for p in [Pages::<f32>::zeroed(len, len % 2 == 1), Pages::heap(len)] {
                let mut p = p;
                assert_eq!(p.len(), len);
                assert!(p.iter().all(|&x| x == 0.0));
                assert_eq!(p.as_ptr() as usize % 64, 0);
                if p.is_mapped() {
                    assert_eq!(p.as_ptr() as usize % HUGE_PAGE, 0);
                }
                for (i, x) in p.iter_mut().enumerate() {
                    *x = i as f32;
                }
                assert!(p.iter().enumerate().all(|(i, &x)| x == i as f32));
            }
        }
        #[cfg(target_os = "linux")]
        assert!(Pages::<u8>::mapped(10, true).is_some());
        assert!(Pages::<u8>::mapped(0, true).is_none());
    }
}
