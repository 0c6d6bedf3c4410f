//! Which declared first use a platform takes (docs/fit.md, "First use").
//!
//! The policy declares a term per (conv backend, allocator, OS); the
//! shipped file carries them; the fit subtracts a fresh point's term from
//! its demand and the pricer adds the query's term back. Both sides find
//! the term here, so a point's line is fitted on the same term its answer
//! adds.

use crate::vocab::{Os, Platform};
use serde::Serialize;

/// How a declared term matches a platform, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FirstUseMatch {
    /// Declared for this backend and allocator, on this OS or on `any`.
    Own,
    /// Declared for this backend and allocator on another OS (or the
    /// query's OS is unknown): borrowed, the largest such term.
    OtherOs,
    /// Declared for this backend under another allocator: borrowed, the
    /// largest such term. The kernels the first convolution loads belong
    /// to the CUDA libraries, not to the allocator.
    OtherAllocator,
}

impl FirstUseMatch {
    pub fn as_str(&self) -> &'static str {
        match self {
            FirstUseMatch::Own => "own",
            FirstUseMatch::OtherOs => "other-os",
            FirstUseMatch::OtherAllocator => "other-allocator",
        }
    }
}

/// One declared term as the lookup sees it.
pub trait Platformed {
    fn platform(&self) -> Platform;
    fn mib(&self) -> u64;
}

impl Platformed for super::file::FirstUse {
    fn platform(&self) -> Platform {
        Platform::new(self.conv_backend, self.allocator, self.os)
    }
    fn mib(&self) -> u64 {
        self.mib
    }
}

/// The term a platform takes: its own, else the largest borrowed from the
/// nearest tier (another OS, then another allocator of the same backend);
/// the first declared among equals. None: no term for its backend.
pub fn first_use_for<T: Platformed>(terms: &[T], here: Platform) -> Option<(&T, FirstUseMatch)> {
    let tier = |t: &T| -> Option<FirstUseMatch> {
        let there = t.platform();
        if there.conv_backend != here.conv_backend {
            None
        } else if there.allocator != here.allocator {
            Some(FirstUseMatch::OtherAllocator)
        } else if there.os == Os::Any || (there.os == here.os && here.os != Os::Any) {
            Some(FirstUseMatch::Own)
        } else {
            Some(FirstUseMatch::OtherOs)
        }
    };
    let mut best: Option<(&T, FirstUseMatch)> = None;
    for t in terms {
        let Some(m) = tier(t) else { continue };
        if best.is_none_or(|(b, bm)| m < bm || (m == bm && t.mib() > b.mib())) {
            best = Some((t, m));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{Allocator, ConvBackend};

    struct T(ConvBackend, Allocator, Os, u64);
    impl Platformed for T {
        fn platform(&self) -> Platform {
            Platform::new(self.0, self.1, self.2)
        }
        fn mib(&self) -> u64 {
            self.3
        }
    }

    #[test]
    fn the_own_term_wins_then_the_largest_borrowed_one() {
        use Allocator::*;
        let terms = [
            T(ConvBackend::Cudnn, Native, Os::Linux, 166),
            T(ConvBackend::Cudnn, CudaMallocAsync, Os::Linux, 200),
            T(ConvBackend::Cudnn, Native, Os::Windows, 150),
        ];
        let got = |a, o| first_use_for(&terms, Platform::new(ConvBackend::Cudnn, a, o)).map(|(t, m)| (t.3, m));
        assert_eq!(got(Native, Os::Linux), Some((166, FirstUseMatch::Own)));
        assert_eq!(got(Native, Os::Windows), Some((150, FirstUseMatch::Own)));
        // The query's OS unknown: the largest term of its allocator, borrowed.
        assert_eq!(got(Native, Os::Any), Some((166, FirstUseMatch::OtherOs)));
        assert_eq!(got(CudaMallocAsync, Os::Windows), Some((200, FirstUseMatch::OtherOs)));
        assert_eq!(got(ExpandableSegments, Os::Linux), Some((200, FirstUseMatch::OtherAllocator)));
        assert_eq!(first_use_for(&terms, Platform::new(ConvBackend::Miopen, Native, Os::Linux)).map(|t| t.1), None);
    }
}
