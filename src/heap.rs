//! How the binary sets up the C library's allocator before a command runs.
//!
//! glibc hands freed memory at the top of a heap back to the kernel once
//! 128 KiB of it is free, and the next batch faults the same pages in
//! again, zeroed. A command on a large store reads, parses and prices in
//! batches, so it would pay for the same pages many times: freed memory is
//! kept up to 1 GiB and a heap grows 64 MiB at a time. A small command
//! touches no page it would not have (growing only reserves addresses).
//! The measurements behind the settings: benches/README.md, "The C
//! library's allocator".
//!
//! Elsewhere than glibc the allocator is left as it is.

/// Sets the allocator up for the process (see the module's notes); says
/// whether the C library took every setting.
pub fn tune() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::ffi::c_int;
        extern "C" {
            fn mallopt(param: c_int, value: c_int) -> c_int;
        }
        // glibc's <malloc.h>.
        const M_TRIM_THRESHOLD: c_int = -1;
        const M_TOP_PAD: c_int = -2;
        /// Bytes of freed memory the allocator keeps before it trims a heap.
        const KEEP_FREED: c_int = 1 << 30;
        /// Bytes a heap grows by beyond what an allocation needs.
        const GROW_BY: c_int = 64 << 20;
        // SAFETY: mallopt only sets the allocator's parameters, under the
        // allocator's own lock; any thread may call it at any time.
        unsafe { mallopt(M_TRIM_THRESHOLD, KEEP_FREED) == 1 && mallopt(M_TOP_PAD, GROW_BY) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        true
    }
}

#[cfg(test)]
mod tests {
    /// glibc takes both settings (it answers 0 for a parameter it does not
    /// know or a value it refuses), and allocating after them still works.
    #[test]
    fn the_c_library_takes_the_settings() {
        assert!(super::tune());
        let v: Vec<u8> = vec![7; 3 << 20];
        assert_eq!(v.iter().map(|b| u64::from(*b)).sum::<u64>(), 7 * (3 << 20));
    }
}
