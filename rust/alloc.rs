//! The extension's allocator: the system allocator, plus a small cache of large freed blocks.
//!
//! Filtered columns (deletes applied to a batch) are allocated here, a few blocks of 0.25-2 MiB
//! per batch, and freed when the reader's table is dropped. glibc hands such blocks back to the
//! kernel (they are `mmap`ed, or trimmed off a thread arena), so every batch of the next read
//! paid page faults and zeroing again: 10-15 ms of kernel time per 5M-row read. Freed blocks of
//! at least [`MIN_BLOCK`] bytes are kept instead, up to [`CACHE_BYTES`] in all, and handed out
//! again for a request of the same rounded size. Smaller requests go straight to the system
//! allocator.
//!
//! The cache never blocks: when another thread holds its lock, a request bypasses it (so a
//! process forked while the lock was held still allocates).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Blocks smaller than this are never cached.
pub const MIN_BLOCK: usize = 256 * 1024;
/// Sizes of cached blocks are rounded up to a multiple of this.
const GRAIN: usize = 64 * 1024;
/// Bytes kept in freed blocks, at most.
pub const CACHE_BYTES: usize = 64 * 1024 * 1024;
/// Freed blocks kept, at most.
const SLOTS: usize = 256;

#[derive(Clone, Copy)]
struct Block {
    ptr: usize,
    size: usize,
    align: usize,
}

struct Blocks {
    slots: [Block; SLOTS],
    len: usize,
    bytes: usize,
}

/// A [`GlobalAlloc`] that caches large freed blocks (see the module docs).
pub struct BlockCache {
    blocks: Mutex<Blocks>,
    hits: AtomicU64,
}

impl Default for BlockCache {
    fn default() -> Self {
        Self::new()
    }
}

/// The layout actually requested from the system for `layout` (large sizes rounded up).
fn system_layout(layout: Layout) -> Layout {
    if layout.size() < MIN_BLOCK {
        return layout;
    }
    let size = layout.size().div_ceil(GRAIN) * GRAIN;
    // A multiple of GRAIN no larger than the rounded size is still a valid layout size.
    Layout::from_size_align(size, layout.align()).unwrap_or(layout)
}

impl BlockCache {
    /// An empty cache.
    pub const fn new() -> Self {
        Self {
            blocks: Mutex::new(Blocks {
                slots: [Block {
                    ptr: 0,
                    size: 0,
                    align: 0,
                }; SLOTS],
                len: 0,
                bytes: 0,
            }),
            hits: AtomicU64::new(0),
        }
    }

    /// Bytes held in cached free blocks, and how many requests a cached block served.
    pub fn stats(&self) -> (usize, u64) {
        let bytes = self.blocks.lock().map(|b| b.bytes).unwrap_or(0);
        (bytes, self.hits.load(Ordering::Relaxed))
    }

    /// Returns every cached block to the system.
    pub fn release(&self) {
        if let Ok(mut b) = self.blocks.lock() {
            while b.len > 0 {
                b.len -= 1;
                let Block { ptr, size, align } = b.slots[b.len];
                b.bytes -= size;
                // SAFETY: the block came from System with exactly this layout and is unused.
                unsafe {
                    System.dealloc(
                        ptr as *mut u8,
                        Layout::from_size_align_unchecked(size, align),
                    )
                };
            }
        }
    }

    /// A cached block of exactly `sys`'s size and alignment, if any.
    fn take(&self, sys: Layout) -> Option<*mut u8> {
        let mut b = self.blocks.try_lock().ok()?;
        let i = b.slots[..b.len]
            .iter()
            .position(|k| k.size == sys.size() && k.align == sys.align())?;
        let block = b.slots[i];
        b.len -= 1;
        let last = b.slots[b.len];
        b.slots[i] = last;
        b.bytes -= block.size;
        drop(b);
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(block.ptr as *mut u8)
    }

    /// Keeps the freed block if there is room; false when the caller must free it.
    fn keep(&self, ptr: *mut u8, sys: Layout) -> bool {
        let Ok(mut b) = self.blocks.try_lock() else {
            return false;
        };
        if b.len == SLOTS || b.bytes + sys.size() > CACHE_BYTES {
            return false;
        }
        let len = b.len;
        b.slots[len] = Block {
            ptr: ptr as usize,
            size: sys.size(),
            align: sys.align(),
        };
        b.len += 1;
        b.bytes += sys.size();
        true
    }
}

// SAFETY: every block handed out is either fresh from `System` for `system_layout(layout)` or a
// block freed earlier with that same system layout and not handed out since; every block is
// returned to `System` with the layout it was allocated with.
unsafe impl GlobalAlloc for BlockCache {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let sys = system_layout(layout);
        if sys.size() >= MIN_BLOCK {
            if let Some(p) = self.take(sys) {
                return p;
            }
        }
        // SAFETY: `sys` has a non-zero size (at least layout's).
        unsafe { System.alloc(sys) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let sys = system_layout(layout);
        if sys.size() >= MIN_BLOCK {
            if let Some(p) = self.take(sys) {
                // SAFETY: the block holds sys.size() >= layout.size() writable bytes.
                unsafe { std::ptr::write_bytes(p, 0, layout.size()) };
                return p;
            }
        }
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(sys) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let sys = system_layout(layout);
        if sys.size() >= MIN_BLOCK && self.keep(ptr, sys) {
            return;
        }
        // SAFETY: `ptr` was allocated by `System` with `sys` (see `alloc`).
        unsafe { System.dealloc(ptr, sys) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = system_layout(layout);
        // SAFETY: the caller guarantees new_size > 0 and a valid layout with it.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let new = system_layout(new_layout);
        if old.size() < MIN_BLOCK && new.size() < MIN_BLOCK {
            // SAFETY: small blocks are plain System blocks of exactly `layout`.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        if old.size() == new.size() {
            return ptr;
        }
        // SAFETY: a fresh block for the new layout, the common prefix copied, the old freed.
        unsafe {
            let p = self.alloc(new_layout);
            if !p.is_null() {
                std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            p
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(p: *mut u8, n: usize, v: u8) {
        // SAFETY: the tests only pass blocks of at least n bytes.
        unsafe { std::ptr::write_bytes(p, v, n) };
    }

    #[test]
    fn large_blocks_are_reused_small_ones_are_not() {
        let cache = BlockCache::new();
        let big = Layout::from_size_align(MIN_BLOCK + 100, 64).unwrap();
        let small = Layout::from_size_align(1000, 8).unwrap();
        // SAFETY: every pointer comes from this cache's alloc with the layout it is freed with,
        // and is written and read only within that layout's size.
        unsafe {
            let a = cache.alloc(big);
            fill(a, big.size(), 1);
            cache.dealloc(a, big);
            assert_eq!(cache.stats(), (MIN_BLOCK + GRAIN, 0));
            // Any size rounding to the same grain gets the same block back.
            let b = cache.alloc(Layout::from_size_align(MIN_BLOCK + 5000, 64).unwrap());
            assert_eq!(a, b);
            assert_eq!(cache.stats(), (0, 1));
            // Other alignment: not served from the cache.
            cache.dealloc(b, Layout::from_size_align(MIN_BLOCK + 5000, 64).unwrap());
            let c = cache.alloc(Layout::from_size_align(MIN_BLOCK + 100, 128).unwrap());
            assert_eq!(cache.stats().1, 1);
            cache.dealloc(c, Layout::from_size_align(MIN_BLOCK + 100, 128).unwrap());
            let s = cache.alloc(small);
            cache.dealloc(s, small);
            assert_eq!(cache.stats().0, 2 * (MIN_BLOCK + GRAIN));
            cache.release();
            assert_eq!(cache.stats().0, 0);
        }
    }

    #[test]
    fn zeroed_and_reallocated_blocks_hold_the_right_bytes() {
        let cache = BlockCache::new();
        let big = Layout::from_size_align(MIN_BLOCK * 2, 64).unwrap();
        // SAFETY: every pointer comes from this cache's alloc/alloc_zeroed/realloc with the
        // layout it is freed with, and is accessed only within that layout's size.
        unsafe {
            let a = cache.alloc(big);
            fill(a, big.size(), 0xab);
            cache.dealloc(a, big);
            let z = cache.alloc_zeroed(big);
            assert_eq!(z, a);
            assert!(std::slice::from_raw_parts(z, big.size())
                .iter()
                .all(|&v| v == 0));
            fill(z, big.size(), 7);
            // Growing past the grain moves the bytes to a new block; shrinking within it stays.
            let g = cache.realloc(z, big, big.size() * 2);
            let grown = Layout::from_size_align(big.size() * 2, 64).unwrap();
            assert!(std::slice::from_raw_parts(g, big.size())
                .iter()
                .all(|&v| v == 7));
            let same = cache.realloc(g, grown, grown.size() - 10);
            assert_eq!(same, g);
            let shrunk = Layout::from_size_align(grown.size() - 10, 64).unwrap();
            // Small to small goes through the system allocator.
            let s = cache.realloc(same, shrunk, 100);
            assert!(std::slice::from_raw_parts(s, 100).iter().all(|&v| v == 7));
            cache.dealloc(s, Layout::from_size_align(100, 64).unwrap());
            cache.release();
        }
    }

    #[test]
    fn the_cache_is_bounded() {
        let cache = BlockCache::new();
        let big = Layout::from_size_align(4 << 20, 64).unwrap();
        // SAFETY: every block is allocated by this cache with `big` and freed once with it.
        unsafe {
            let blocks: Vec<*mut u8> = (0..CACHE_BYTES / big.size() + 4)
                .map(|_| cache.alloc(big))
                .collect();
            for p in blocks {
                cache.dealloc(p, big);
            }
            assert_eq!(cache.stats().0, CACHE_BYTES);
            cache.release();
        }
    }
}
