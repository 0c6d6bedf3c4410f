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
        write!(f, "unknown {} '{}' (accepted: {})", self.what, self.given, self.accepted)
    }
}

impl std::error::Error for UnknownSpelling {}

macro_rules! vocabulary {
    ($(#[$doc:meta])* $name:ident, $what:literal, { $($variant:ident => $canon:literal $(| $alias:literal)*),+ $(,)? }) => {
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

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> { s.serialize_str(self.as_str()) }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
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

/// PyTorch's caching-allocator configuration, named as PyTorch names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Allocator {
    Native,
    CudaMallocAsync,
    ExpandableSegments,
}

impl Allocator {
    pub const ALL: &'static [Allocator] =
        &[Allocator::Native, Allocator::CudaMallocAsync, Allocator::ExpandableSegments];

    pub fn as_str(&self) -> &'static str {
        match self {
            Allocator::Native => "native",
            Allocator::CudaMallocAsync => "cudaMallocAsync",
            Allocator::ExpandableSegments => "expandable_segments",
        }
    }

    pub fn accepted() -> String {
        "native, cudaMallocAsync, expandable_segments (also PYTORCH_CUDA_ALLOC_CONF forms: backend:native, \
         backend:cudaMallocAsync, expandable_segments:True, expandable_segments:False)"
            .to_string()
    }
}

impl FromStr for Allocator {
    type Err = UnknownSpelling;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t: String = s.trim().chars().filter(|c| !c.is_whitespace()).collect();
        let lower = t.to_ascii_lowercase();
        let a = match lower.as_str() {
            "native" | "backend:native" | "expandable_segments:false" => Some(Allocator::Native),
            "cudamallocasync" | "backend:cudamallocasync" => Some(Allocator::CudaMallocAsync),
            "expandable_segments" | "expandable_segments:true" | "expandable-segments" => {
                Some(Allocator::ExpandableSegments)
            }
            _ => None,
        };
        a.ok_or(UnknownSpelling { what: "allocator", given: s.trim().to_string(), accepted: Allocator::accepted() })
    }
}

impl fmt::Display for Allocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Allocator {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Allocator {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
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
}
