//! The binary's memory allocator: the C library's for a small command,
//! mimalloc once the process has asked for much memory.
//!
//! Why two. mimalloc keeps the pages it has touched for reuse, so a
//! command on 10^6 points spends a sixth less time than with glibc's
//! allocator (whose worker-thread arenas fault fresh pages in and hand
//! them back). But starting mimalloc costs a small command about a
//! millisecond: it sets up an arena's bitmaps and a page per size class,
//! 130 more page faults than glibc on the shipped data's `verify`, a fifth
//! of that command's time.
//!
//! So blocks come from the C library until the process has allocated
//! [`SWITCH_AT`] bytes in all, and from mimalloc after that. A block is
//! always given back to the allocator that made it: mimalloc answers
//! whether an address is one of its own from its page map, and says no
//! to every address before it has allocated anything.
//!
//! mimalloc is built without transparent huge pages (`no_thp` in
//! Cargo.toml): with them each first touch zeroed 2 MiB, and peak memory
//! at 10^6 points varied by 200 MiB from run to run.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

/// Bytes allocated (not freed: asked for, in all) after which new blocks
/// come from mimalloc. The shipped data's commands stay well below it
/// (`verify` asks for 0.7 MiB); 10^4 points pass it while the store
/// is being read.
pub const SWITCH_AT: usize = 8 << 20;

/// The C library's allocator, then mimalloc (see the module's notes).
pub struct Hybrid {
    /// Set once [`SWITCH_AT`] bytes have been asked for; never unset.
    large: AtomicBool,
    /// Bytes asked for while small. Updated with a plain load and store,
    /// not an atomic add: threads racing may lose a few counts, which only
    /// delays the switch, and a locked add on every allocation of a small
    /// command was a cost of its own.
    asked: AtomicUsize,
}

impl Hybrid {
    /// A fresh allocator: small, nothing asked for.
    pub const fn new() -> Hybrid {
        Hybrid { large: AtomicBool::new(false), asked: AtomicUsize::new(0) }
    }

    /// Bytes asked for while small (it stops counting once large).
    pub fn asked(&self) -> usize {
        self.asked.load(Relaxed)
    }

    /// Whether blocks now come from mimalloc.
    pub fn is_large(&self) -> bool {
        self.large.load(Relaxed)
    }

    /// Whether a block of `size` bytes comes from mimalloc.
    #[inline]
    fn next_from_mimalloc(&self, size: usize) -> bool {
        if self.large.load(Relaxed) {
            return true;
        }
        let asked = self.asked.load(Relaxed).saturating_add(size);
        self.asked.store(asked, Relaxed);
        if asked >= SWITCH_AT {
            self.large.store(true, Relaxed);
        }
        false
    }

    /// Whether mimalloc made the block at `ptr`.
    #[inline]
    fn is_mimalloc(ptr: *mut u8) -> bool {
        // SAFETY: the call only reads mimalloc's page map; any address may
        // be asked, and one mimalloc never handed out gets `false`.
        unsafe { libmimalloc_sys::mi_is_in_heap_region(ptr as *const c_void) }
    }
}

impl Default for Hybrid {
    fn default() -> Hybrid {
        Hybrid::new()
    }
}

// SAFETY: every block is made by exactly one of two sound allocators and
// given back (freed, or grown) to the one that made it.
unsafe impl GlobalAlloc for Hybrid {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if self.next_from_mimalloc(layout.size()) {
            mimalloc::MiMalloc.alloc(layout)
        } else {
            System.alloc(layout)
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if self.next_from_mimalloc(layout.size()) {
            mimalloc::MiMalloc.alloc_zeroed(layout)
        } else {
            System.alloc_zeroed(layout)
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if Hybrid::is_mimalloc(ptr) {
            mimalloc::MiMalloc.dealloc(ptr, layout)
        } else {
            System.dealloc(ptr, layout)
        }
    }

    /// A block grows within the allocator that made it: a vector begun
    /// small stays with the C library, which moves a large one by
    /// remapping its pages rather than copying them.
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if Hybrid::is_mimalloc(ptr) {
            mimalloc::MiMalloc.realloc(ptr, layout, new_size)
        } else {
            System.realloc(ptr, layout, new_size)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Hybrid, SWITCH_AT};
    use std::alloc::{GlobalAlloc, Layout};

    /// Blocks made before the switch come from the C library and those
    /// after from mimalloc; each is grown, read and freed by the one that
    /// made it (a block freed by the wrong allocator would abort the test).
    #[test]
    fn blocks_switch_to_mimalloc_and_go_back_to_their_maker() {
        let a = Hybrid::new();
        let small = Layout::from_size_align(24, 8).unwrap();
        let aligned = Layout::from_size_align(100, 64).unwrap();
        unsafe {
            let before = [a.alloc(small), a.alloc_zeroed(aligned)];
            assert!(!a.is_large());
            assert!(before.iter().all(|p| !p.is_null() && !Hybrid::is_mimalloc(*p)));
            assert_eq!(a.asked(), 124);
            // One block as large as the rest of the allowance tips it over.
            let big = Layout::from_size_align(SWITCH_AT - 124, 8).unwrap();
            let last_small = a.alloc(big);
            assert!(a.is_large() && !Hybrid::is_mimalloc(last_small));
            let after = [a.alloc(small), a.alloc_zeroed(aligned)];
            assert!(after.iter().all(|p| !p.is_null() && Hybrid::is_mimalloc(*p)));
            assert_eq!(after[1] as usize % 64, 0);
            assert!(std::slice::from_raw_parts(after[1], 100).iter().all(|b| *b == 0));
            assert!(std::slice::from_raw_parts(before[1], 100).iter().all(|b| *b == 0));
            // Grown, each stays with its maker and keeps its bytes.
            for p in [before[0], after[0]] {
                std::ptr::copy_nonoverlapping(b"0123456789abcdef01234567".as_ptr(), p, 24);
            }
            let grown = [a.realloc(before[0], small, 4096), a.realloc(after[0], small, 4096)];
            assert!(!Hybrid::is_mimalloc(grown[0]) && Hybrid::is_mimalloc(grown[1]));
            for p in grown {
                assert_eq!(std::slice::from_raw_parts(p, 24), b"0123456789abcdef01234567");
            }
            let grown_layout = Layout::from_size_align(4096, 8).unwrap();
            for p in grown {
                a.dealloc(p, grown_layout);
            }
            a.dealloc(last_small, big);
            a.dealloc(before[1], aligned);
            a.dealloc(after[1], aligned);
        }
    }

    /// An address mimalloc never handed out is not its own, whether it
    /// lies on the stack, in the C library's heap or nowhere.
    #[test]
    fn foreign_addresses_are_not_mimallocs() {
        let on_stack = 7u64;
        let boxed = Box::new(7u64); // the test binary's allocator: the C library's
        assert!(!Hybrid::is_mimalloc(&on_stack as *const u64 as *mut u8));
        assert!(!Hybrid::is_mimalloc(&*boxed as *const u64 as *mut u8));
        assert!(!Hybrid::is_mimalloc(std::ptr::null_mut()));
        assert!(!Hybrid::is_mimalloc(usize::MAX as *mut u8));
    }
}
