//! The hosts' own image estimators, as declared in `[[host_estimator]]`
//! (docs/hosts.md): what `crossval --against` prices each measured point
//! with beside vramfit's answer. Pure arithmetic, exact: a host's float
//! product of integers and a decimal factor is exact at these magnitudes,
//! and `int()` truncates, so the floor of the exact value is its answer.

use crate::exact::{Ratio, MIB};
use crate::vocab::{ConvBackend, Dtype, Op};
use serde::Serialize;

pub use super::document::ElementRule;

/// One declared estimator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostEstimator {
    pub host: String,
    pub version: String,
    pub vae: String,
    pub op: Op,
    pub conv_backend: Option<ConvBackend>,
    #[serde(serialize_with = "serialize_dec")]
    pub per_element: Ratio,
    pub element: ElementRule,
    #[serde(serialize_with = "serialize_opt")]
    pub tile_factor: Option<Ratio>,
    #[serde(serialize_with = "serialize_dec")]
    pub tile_copies: Ratio,
    pub fp32_extra_mib: u64,
    pub batch: bool,
    #[serde(serialize_with = "serialize_opt")]
    pub score_bytes: Option<Ratio>,
    pub score_on: Vec<ConvBackend>,
    pub source: String,
}

fn serialize_dec<S: serde::Serializer>(r: &Ratio, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&crate::exact::exact_decimal(r))
}

fn serialize_opt<S: serde::Serializer>(r: &Option<Ratio>, s: S) -> Result<S::Ok, S::Error> {
    match r {
        Some(r) => s.serialize_str(&crate::exact::exact_decimal(r)),
        None => s.serialize_none(),
    }
}

/// What a host is asked: one decode or encode as it calls its estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCall {
    pub width: u64,
    pub height: u64,
    pub batch: u64,
    /// The tile edge (0: untiled).
    pub tile: u32,
    pub dtype: Dtype,
    pub conv_backend: ConvBackend,
}

impl HostEstimator {
    /// The bytes the host's estimator returns for `call` (None: overflow).
    pub fn bytes(&self, call: HostCall) -> Option<u64> {
        let elem = match self.element {
            ElementRule::Dtype => call.dtype.elem_bytes(),
            ElementRule::Fp32Switch if call.dtype == Dtype::Fp32 => 4,
            ElementRule::Fp32Switch => 2,
        };
        let tiled = call.tile > 0 && self.tile_factor.is_some();
        let (area, factor) = match self.tile_factor.filter(|_| tiled) {
            Some(f) => (u64::from(call.tile).checked_mul(u64::from(call.tile))?, f),
            None => (call.width.checked_mul(call.height)?, Ratio::int(1)),
        };
        let batch = if self.batch { call.batch } else { 1 };
        let int = |n: u64| Ratio::int(i128::from(n));
        let mut v = self
            .per_element
            .checked_mul(factor)
            .and_then(|r| r.checked_mul(int(elem)))
            .and_then(|r| r.checked_mul(int(area)))
            .and_then(|r| r.checked_mul(int(batch)))
            .ok()?;
        if tiled {
            let image = int(3 * elem).checked_mul(int(call.width.checked_mul(call.height)?)).ok()?;
            v = v.checked_add(self.tile_copies.checked_mul(image).ok()?).ok()?;
        }
        if call.dtype == Dtype::Fp32 {
            v = v.checked_add(int(self.fp32_extra_mib.checked_mul(MIB)?)).ok()?;
        }
        if let Some(per_score) = self.score_bytes.filter(|_| self.score_on.contains(&call.conv_backend)) {
            let (w, h) = if tiled { (u64::from(call.tile), u64::from(call.tile)) } else { (call.width, call.height) };
            let s = u128::from(w / 8) * u128::from(h / 8);
            let scores = s.checked_mul(s)?.checked_mul(u128::from(batch))?;
            let score = per_score.checked_mul(Ratio::int(i128::try_from(scores).ok()?)).ok()?;
            if score.cmp_exact(&v).ok()? == std::cmp::Ordering::Greater {
                v = score;
            }
        }
        u64::try_from(v.floor()).ok()
    }

    /// The host's estimator for this family, op and backend: the one
    /// naming the backend, else the one naming none.
    pub fn for_call<'a>(
        all: &'a [HostEstimator],
        host: &str,
        vae: &str,
        op: Op,
        backend: ConvBackend,
    ) -> Option<&'a HostEstimator> {
        let of = |b: Option<ConvBackend>| {
            all.iter().find(|e| e.host == host && e.vae == vae && e.op == op && e.conv_backend == b)
        };
        of(Some(backend)).or_else(|| of(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invokeai_sd() -> HostEstimator {
        HostEstimator {
            host: "invokeai".into(),
            version: "6.14.2".into(),
            vae: "sd".into(),
            op: Op::Decode,
            conv_backend: None,
            per_element: Ratio::int(2200),
            element: ElementRule::Fp32Switch,
            tile_factor: Some(Ratio::new(5, 4).unwrap()),
            tile_copies: Ratio::zero(),
            fp32_extra_mib: 250,
            batch: false,
            score_bytes: None,
            score_on: vec![],
            source: "test".into(),
        }
    }

    fn call(w: u64, h: u64, tile: u32, dtype: Dtype) -> HostCall {
        HostCall { width: w, height: h, batch: 2, tile, dtype, conv_backend: ConvBackend::Cudnn }
    }

    #[test]
    fn the_terms_are_the_hosts_arithmetic() {
        let e = invokeai_sd();
        // Untiled: pixels × 2 bytes × 2200, the batch ignored.
        assert_eq!(e.bytes(call(1024, 768, 0, Dtype::Bf16)), Some(1024 * 768 * 2 * 2200));
        // fp32: 4 bytes and 250 MiB more.
        assert_eq!(e.bytes(call(1024, 768, 0, Dtype::Fp32)), Some(1024 * 768 * 4 * 2200 + 250 * MIB));
        // Tiled: one tile × 1.25, whatever the image.
        assert_eq!(e.bytes(call(4096, 4096, 512, Dtype::Fp16)), Some(512 * 512 * 2 * 2200 * 5 / 4));
        // A batch-aware estimator with image copies when tiled.
        let q = HostEstimator {
            batch: true,
            tile_copies: Ratio::int(5),
            element: ElementRule::Dtype,
            fp32_extra_mib: 0,
            ..e
        };
        let c = call(2560, 1440, 512, Dtype::Bf16);
        let linear = 2 * (512 * 512 * 2 * 2200 * 5 / 4) + 5 * 3 * 2 * 2560 * 1440;
        assert_eq!(q.bytes(c), Some(linear));
        // The score term: only on a backend it names, and the larger of the two.
        let q = HostEstimator { score_bytes: Some(Ratio::int(17)), score_on: vec![ConvBackend::Miopen], ..q };
        assert_eq!(q.bytes(c), Some(linear), "cuDNN has no score term");
        let tile_scores = 17 * ((512u64 / 8) * (512 / 8)).pow(2) * 2;
        assert!(tile_scores < linear);
        assert_eq!(q.bytes(HostCall { conv_backend: ConvBackend::Miopen, ..c }), Some(linear), "the smaller term");
        let untiled = HostCall { tile: 0, conv_backend: ConvBackend::Miopen, ..c };
        let scores = 17 * ((2560u64 / 8) * (1440 / 8)).pow(2) * 2;
        assert!(scores > 2 * 2200 * 2 * 2560 * 1440);
        assert_eq!(q.bytes(untiled), Some(scores));
    }
}
