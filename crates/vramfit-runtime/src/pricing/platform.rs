//! Platform detection: which allocator PyTorch would run and on which OS.
//! Reads an injected [`EnvSnapshot`], never the process environment, so a
//! developer's own variables never change a test or a check.

use crate::contract::AllocatorDefault;
use crate::vocab::{Allocator, ConvBackend, Os};
use serde::Serialize;
use std::collections::BTreeMap;

/// The allocator variables, in the order PyTorch reads them (ROCm reads
/// `PYTORCH_HIP_ALLOC_CONF` first).
pub const ALLOC_VARS: &[&str] = &["PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"];
pub const HIP_ALLOC_VAR: &str = "PYTORCH_HIP_ALLOC_CONF";

/// What detection may read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvSnapshot {
    /// Environment variables (only the allocator ones matter).
    pub vars: BTreeMap<String, String>,
    /// The host OS, when known.
    pub host_os: Option<Os>,
}

impl EnvSnapshot {
    /// The real process environment and host; only the CLI calls this.
    pub fn from_process() -> EnvSnapshot {
        let mut vars = BTreeMap::new();
        for v in ALLOC_VARS.iter().chain(std::iter::once(&HIP_ALLOC_VAR)) {
            if let Ok(val) = std::env::var(v) {
                vars.insert(v.to_string(), val);
            }
        }
        let host_os = match std::env::consts::OS {
            "linux" => Some(Os::Linux),
            "windows" => Some(Os::Windows),
            "macos" => Some(Os::Macos),
            _ => None,
        };
        EnvSnapshot { vars, host_os }
    }

    /// A snapshot with one variable set (tests and checks).
    pub fn with(mut self, var: &str, value: &str) -> EnvSnapshot {
        self.vars.insert(var.to_string(), value.to_string());
        self
    }

    pub fn on(mut self, os: Os) -> EnvSnapshot {
        self.host_os = Some(os);
        self
    }
}

/// A detected (or given) value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[schemars(rename = "Detected_{T}")]
pub struct Detected<T> {
    pub value: T,
    /// `flag`, an environment variable with its value, `policy default …` or `host`.
    pub from: std::borrow::Cow<'static, str>,
}

/// The allocator PyTorch would use on this platform, and why: the reason
/// is made into words ([`AllocatorWhy::text`]) only for an answer that is
/// shown (`verify` asks thousands of times and shows none of them).
pub fn choose_allocator(
    backend: ConvBackend,
    os: Os,
    env: &EnvSnapshot,
    defaults: &[AllocatorDefault],
    fallback: Allocator,
) -> (Allocator, AllocatorWhy) {
    let rocm_first = backend.is_rocm().then_some(HIP_ALLOC_VAR);
    for var in rocm_first.into_iter().chain(ALLOC_VARS.iter().copied()) {
        if let Some(val) = env.vars.get(var).filter(|v| !v.trim().is_empty()) {
            if let Some(a) = Allocator::from_conf(val) {
                return (a, AllocatorWhy::Var { var, val: val.clone() });
            }
            // The first variable set is the one PyTorch reads; if it names
            // no allocator, the platform default applies.
            let (value, default) = platform_default(backend, os, defaults, fallback);
            return (value, AllocatorWhy::VarNamesNone { var, val: val.clone(), default });
        }
    }
    let (value, default) = platform_default(backend, os, defaults, fallback);
    (value, AllocatorWhy::Default(default))
}

/// Why [`choose_allocator`] chose what it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocatorWhy {
    /// An allocator variable named it.
    Var { var: &'static str, val: String },
    /// The first variable set names no allocator: the default applies.
    VarNamesNone { var: &'static str, val: String, default: PlatformDefault },
    /// No variable is set.
    Default(PlatformDefault),
}

/// Where the default allocator comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlatformDefault {
    /// The policy's default for this backend and OS.
    Policy(ConvBackend, Os),
    /// Nothing configured: PyTorch's own.
    PyTorch,
}

impl PlatformDefault {
    fn text(self) -> std::borrow::Cow<'static, str> {
        match self {
            PlatformDefault::Policy(backend, os) => format!("platform default for {backend} on {os} (policy)").into(),
            PlatformDefault::PyTorch => "nothing configured: PyTorch's default".into(),
        }
    }
}

impl AllocatorWhy {
    /// The reason in words, as an answer shows it.
    pub fn text(&self) -> std::borrow::Cow<'static, str> {
        match self {
            AllocatorWhy::Var { var, val } => format!("{var}={val}").into(),
            AllocatorWhy::VarNamesNone { var, val, default } => {
                format!("{var}={val} names no allocator; {}", default.text()).into()
            }
            AllocatorWhy::Default(d) => d.text(),
        }
    }
}

fn platform_default(
    backend: ConvBackend,
    os: Os,
    defaults: &[AllocatorDefault],
    fallback: Allocator,
) -> (Allocator, PlatformDefault) {
    match defaults.iter().find(|d| d.conv_backend == backend && d.os == os) {
        Some(d) => (d.allocator, PlatformDefault::Policy(backend, os)),
        None => (fallback, PlatformDefault::PyTorch),
    }
}

/// The host OS from the snapshot.
pub fn detect_os(env: &EnvSnapshot) -> Option<Detected<Os>> {
    env.host_os.map(|o| Detected { value: o, from: "host".into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Vec<AllocatorDefault> {
        vec![AllocatorDefault {
            conv_backend: ConvBackend::Miopen,
            os: Os::Windows,
            allocator: Allocator::ExpandableSegments,
        }]
    }

    fn detect(backend: ConvBackend, os: Os, env: &EnvSnapshot) -> Detected<Allocator> {
        let (value, why) = choose_allocator(backend, os, env, &defaults(), Allocator::Native);
        Detected { value, from: why.text() }
    }

    #[test]
    fn conf_strings_as_pytorch_reads_them() {
        assert_eq!(Allocator::from_conf("backend:cudaMallocAsync"), Some(Allocator::CudaMallocAsync));
        assert_eq!(
            Allocator::from_conf("expandable_segments:True,max_split_size_mb:512"),
            Some(Allocator::ExpandableSegments)
        );
        assert_eq!(Allocator::from_conf("expandable_segments:False"), Some(Allocator::Native));
        assert_eq!(Allocator::from_conf("max_split_size_mb:512"), None);
        assert_eq!(
            Allocator::from_conf("expandable_segments:True,backend:cudaMallocAsync"),
            Some(Allocator::CudaMallocAsync)
        );
    }

    #[test]
    fn each_variable_is_read_in_pytorch_order() {
        let e = EnvSnapshot::default();
        assert_eq!(detect(ConvBackend::Cudnn, Os::Linux, &e).value, Allocator::Native);
        let e1 = e.clone().with("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync");
        assert_eq!(detect(ConvBackend::Cudnn, Os::Linux, &e1).value, Allocator::CudaMallocAsync);
        let e2 = e1.clone().with("PYTORCH_ALLOC_CONF", "expandable_segments:True");
        let d = detect(ConvBackend::Cudnn, Os::Linux, &e2);
        assert_eq!(d.value, Allocator::ExpandableSegments);
        assert_eq!(d.from, "PYTORCH_ALLOC_CONF=expandable_segments:True");
        // The HIP variable only counts on ROCm, and there it comes first.
        let e3 = e2.clone().with("PYTORCH_HIP_ALLOC_CONF", "backend:cudaMallocAsync");
        assert_eq!(detect(ConvBackend::Cudnn, Os::Linux, &e3).value, Allocator::ExpandableSegments);
        assert_eq!(detect(ConvBackend::Miopen, Os::Linux, &e3).value, Allocator::CudaMallocAsync);
    }

    #[test]
    fn platform_default_applies_when_nothing_chooses() {
        let e = EnvSnapshot::default();
        assert_eq!(detect(ConvBackend::Miopen, Os::Windows, &e).value, Allocator::ExpandableSegments);
        assert_eq!(detect(ConvBackend::Miopen, Os::Linux, &e).value, Allocator::Native);
        let e1 = e.with("PYTORCH_HIP_ALLOC_CONF", "max_split_size_mb:256");
        let d = detect(ConvBackend::Miopen, Os::Windows, &e1);
        assert_eq!(d.value, Allocator::ExpandableSegments);
        assert!(d.from.contains("names no allocator"));
    }
}
