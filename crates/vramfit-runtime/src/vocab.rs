//! The closed vocabularies of a line key, with the spellings users already
//! type (PyTorch's dtype and allocator names) accepted as aliases and stored
//! in one canonical spelling.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// Error for an unknown spelling: says what was given and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSpelling {
    pub what: &'static str,
    pub given: String,
    pub accepted: String,
}

impl fmt::Display for UnknownSpelling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at: [(&str, &dyn fmt::Display); 3] =
            [("what", &self.what), ("given", &crate::text::quoted(&self.given)), ("accepted", &self.accepted)];
        f.write_str(&crate::words::UNKNOWN_SPELLING.fill(&at))
    }
}

impl std::error::Error for UnknownSpelling {}

macro_rules! vocabulary {
    // The enum, its canonical spellings, `Display` and serde; parsing is
    // left to the caller (the allocator parses PyTorch's conf strings).
    (@base $(#[$doc:meta])* $name:ident, $what:literal, { $($variant:ident => $canon:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            /// Every value, in canonical order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The canonical spelling, as stored and shown.
            pub fn as_str(&self) -> &'static str {
                match self { $($name::$variant => $canon),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> { s.serialize_str(self.as_str()) }
        }

        /// In a schema: the canonical spellings (the ones written out).
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> { stringify!($name).into() }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "enum": [$($canon),+] })
            }
        }

        impl<'de> Deserialize<'de> for $name {
            /// Parses the string where it lies: no allocation per value
            /// (seven per stored point at 10^5 points).
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Spelling;
                impl<'de> serde::de::Visitor<'de> for Spelling {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "a {} spelling", $what)
                    }
                    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<$name, E> {
                        s.parse().map_err(E::custom)
                    }
                }
                d.deserialize_str(Spelling)
            }
        }
    };
    ($(#[$doc:meta])* $name:ident, $what:literal, { $($variant:ident => $canon:literal $(| $alias:literal)*),+ $(,)? }) => {
        vocabulary!(@base $(#[$doc])* $name, $what, { $($variant => $canon),+ });

        impl $name {
            /// Every spelling accepted, canonical ones and aliases (what the
            /// Python package's vocabularies are held to).
            pub const SPELLINGS: &'static [&'static str] = &[$($canon $(, $alias)*),+];

            /// Each canonical spelling with its aliases, in canonical order
            /// (what the Python package's generated vocabularies hold).
            pub const TABLE: &'static [(&'static str, &'static [&'static str])] = &[$(($canon, &[$($alias),*])),+];

            /// The canonical spellings joined for an error message.
            pub fn accepted() -> String {
                let all: &[&str] = &[$($canon),+];
                all.join(", ")
            }
        }

        impl FromStr for $name {
            type Err = UnknownSpelling;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let t = s.trim();
                $(
                    if t.eq_ignore_ascii_case($canon) $(|| t.eq_ignore_ascii_case($alias))* {
                        return Ok($name::$variant);
                    }
                )+
                Err(UnknownSpelling { what: $what, given: t.to_string(), accepted: $name::accepted() })
            }
        }
    };
}

vocabulary!(
    /// What the VAE does: latents to image, or image to latents.
    Op, "op", { Decode => "decode", Encode => "encode" }
);

vocabulary!(
    /// The dtype the VAE runs in. PyTorch's names are aliases.
    Dtype, "dtype", {
        Fp16 => "fp16" | "float16" | "half" | "torch.float16" | "torch.half" | "f16",
        Bf16 => "bf16" | "bfloat16" | "torch.bfloat16",
        Fp32 => "fp32" | "float32" | "float" | "torch.float32" | "torch.float" | "f32",
    }
);

vocabulary!(
    /// The convolution backend, which stands for the platform (cuDNN = CUDA,
    /// MIOpen = ROCm).
    ConvBackend, "conv_backend", {
        Cudnn => "cudnn" | "cuda",
        Miopen => "miopen" | "rocm" | "hip",
        Mps => "mps",
        Xpu => "xpu",
        Cpu => "cpu",
    }
);

vocabulary!(
    /// The operating system of a point or a line; `any` means "on every OS".
    Os, "os", {
        Linux => "linux",
        Windows => "windows" | "win32" | "win",
        Macos => "macos" | "darwin" | "osx",
        Any => "any",
    }
);

vocabulary!(
    /// How a point's figure was aggregated over its runs.
    Aggregate, "aggregate", { Single => "single", Mean => "mean", Max => "max" }
);

vocabulary!(
    /// How a point's figure was taken (docs/data.md, "Context"): the op
    /// alone in a fresh process, its first use (`fresh`: the CUDA
    /// libraries' kernels load with the first convolution and count); alone
    /// after earlier runs of the same op in the process (`warm`); inside a
    /// whole generation (`generation`); or alone, the source not saying
    /// which of the first two (`isolated`).
    Context, "context", {
        Isolated => "isolated",
        Generation => "generation",
        Fresh => "fresh" | "fresh-process",
        Warm => "warm",
    }
);

impl Dtype {
    /// Bytes per element of the weights.
    pub fn elem_bytes(&self) -> u64 {
        match self {
            Dtype::Fp16 | Dtype::Bf16 => 2,
            Dtype::Fp32 => 4,
        }
    }
}

impl ConvBackend {
    /// Whether this backend is a ROCm build of PyTorch, which reads
    /// `PYTORCH_HIP_ALLOC_CONF` before the other variables.
    pub fn is_rocm(&self) -> bool {
        matches!(self, ConvBackend::Miopen)
    }
}

vocabulary!(@base
    /// PyTorch's caching-allocator configuration, named as PyTorch names it.
    Allocator, "allocator", {
        Native => "native",
        CudaMallocAsync => "cudaMallocAsync",
        ExpandableSegments => "expandable_segments",
    }
);

impl Allocator {
    pub fn accepted() -> String {
        "native, cudaMallocAsync, expandable_segments (also PYTORCH_CUDA_ALLOC_CONF forms: backend:native, \
         backend:cudaMallocAsync, expandable_segments:True, expandable_segments:False)"
            .to_string()
    }

    /// The allocator a `PYTORCH_*_ALLOC_CONF` value chooses, read as PyTorch
    /// reads it: `backend:cudaMallocAsync` wins; else an explicit
    /// `expandable_segments:True/False`; else none (`max_split_size_mb` and
    /// the like choose no allocator, and `backend:native` alone keeps the
    /// platform's expandable-segments default). The one parser of these
    /// strings: detection and the `allocator` column both use it.
    pub fn from_conf(conf: &str) -> Option<Allocator> {
        let mut backend_async = false;
        let mut expandable: Option<bool> = None;
        for part in conf.split(',') {
            let Some((k, v)) = part.split_once(':') else { continue };
            match (k.trim(), v.trim()) {
                ("backend", v) if v.eq_ignore_ascii_case("cudaMallocAsync") => backend_async = true,
                ("expandable_segments", v) if v.eq_ignore_ascii_case("true") => expandable = Some(true),
                ("expandable_segments", v) if v.eq_ignore_ascii_case("false") => expandable = Some(false),
                _ => {}
            }
        }
        if backend_async {
            return Some(Allocator::CudaMallocAsync);
        }
        expandable.map(|on| if on { Allocator::ExpandableSegments } else { Allocator::Native })
    }
}

impl FromStr for Allocator {
    type Err = UnknownSpelling;
    /// A canonical name, or a conf string that names one (`backend:native`
    /// names the native allocator here, where a name is asked for).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Copied only when there are spaces to drop (a CSV gives one per row).
        let t: std::borrow::Cow<str> = if s.chars().any(char::is_whitespace) {
            s.chars().filter(|c| !c.is_whitespace()).collect::<String>().into()
        } else {
            s.into()
        };
        let named = Allocator::ALL.iter().copied().find(|a| {
            t.eq_ignore_ascii_case(a.as_str())
                || t.eq_ignore_ascii_case("expandable-segments") && *a == Allocator::ExpandableSegments
        });
        let conf = || {
            if t.eq_ignore_ascii_case("backend:native") {
                Some(Allocator::Native)
            } else {
                Allocator::from_conf(&t)
            }
        };
        named.or_else(conf).ok_or(UnknownSpelling {
            what: "allocator",
            given: s.trim().to_string(),
            accepted: Allocator::accepted(),
        })
    }
}

/// Where an op runs, as the measurements name it: the conv backend, the
/// allocator PyTorch uses and the OS (`any`: measured without one). One
/// value, so a lookup by platform (a first use, a calibration, a default)
/// takes one argument and says `cudnn/native/linux` one way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Platform {
    pub conv_backend: ConvBackend,
    pub allocator: Allocator,
    pub os: Os,
}

impl Platform {
    pub fn new(conv_backend: ConvBackend, allocator: Allocator, os: Os) -> Platform {
        Platform { conv_backend, allocator, os }
    }

    /// The same platform without an OS (how an OS-less line is keyed).
    pub fn any_os(self) -> Platform {
        Platform { os: Os::Any, ..self }
    }
}

/// `cudnn/native/linux`: the words answers and findings use.
impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.conv_backend, self.allocator, self.os)
    }
}

/// A line key's tile segment: `512` for an image line; `16f` for a video
/// line with a 16-frame temporal tile (`0f`: none), and `512x16f` for a
/// video point that also ran a 512-px spatial tile.
pub fn tiles_text(tile: u32, temporal_tile: Option<u32>) -> String {
    match temporal_tile {
        None => tile.to_string(),
        Some(t) if tile == 0 => format!("{t}f"),
        Some(t) => format!("{tile}x{t}f"),
    }
}

/// Reads a tile segment as [`tiles_text`] writes it: `(tile, temporal_tile)`.
pub fn parse_tiles(text: &str) -> Option<(u32, Option<u32>)> {
    let digits = |s: &str| (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u32>().ok())?;
    match text.strip_suffix('f') {
        None => Some((digits(text)?, None)),
        Some(rest) => match rest.split_once('x') {
            None => Some((0, Some(digits(rest)?))),
            Some((t, tt)) => Some((digits(t)?, Some(digits(tt)?))),
        },
    }
}

/// A spelling no vocabulary knows is a refusal of the query.
impl From<UnknownSpelling> for crate::error::Error {
    fn from(e: UnknownSpelling) -> crate::error::Error {
        crate::error::Error::refused(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytorch_spellings_are_aliases() {
        assert_eq!("torch.float16".parse::<Dtype>().unwrap(), Dtype::Fp16);
        assert_eq!("bfloat16".parse::<Dtype>().unwrap(), Dtype::Bf16);
        assert_eq!("torch.float32".parse::<Dtype>().unwrap(), Dtype::Fp32);
        assert_eq!("backend:cudaMallocAsync".parse::<Allocator>().unwrap(), Allocator::CudaMallocAsync);
        assert_eq!("expandable_segments:True".parse::<Allocator>().unwrap(), Allocator::ExpandableSegments);
        assert_eq!("expandable_segments:False".parse::<Allocator>().unwrap(), Allocator::Native);
        assert_eq!("ROCm".parse::<ConvBackend>().unwrap(), ConvBackend::Miopen);
    }

    #[test]
    fn unknown_spellings_list_what_is_accepted() {
        let e = "fp8".parse::<Dtype>().unwrap_err();
        assert_eq!(e.to_string(), "unknown dtype 'fp8' (accepted: fp16, bf16, fp32)");
        assert!("vulkan".parse::<ConvBackend>().unwrap_err().to_string().contains("cudnn, miopen, mps, xpu, cpu"));
    }

    #[test]
    fn a_tile_segment_reads_back_as_written_and_nothing_else_reads() {
        for (tile, tt) in [(0, None), (512, None), (0, Some(0)), (0, Some(16)), (512, Some(32))] {
            assert_eq!(super::parse_tiles(&super::tiles_text(tile, tt)), Some((tile, tt)));
        }
        assert_eq!(super::tiles_text(0, Some(16)), "16f");
        assert_eq!(super::tiles_text(512, Some(16)), "512x16f");
        for bad in ["", "f", "x16f", "512x", "512xf", "-1", "16 f", "1.5f", "99999999999f", "16F"] {
            assert_eq!(super::parse_tiles(bad), None, "{bad}");
        }
    }
}
