//! The v1 estimator: `x × E × k(backend, op)`, tiled
//! `tile² × batch × E × k × 1.25`, and +250 MiB for the `sd` family in fp32.
//!
//! v1 priced a tiled decode by one tile; a batch decodes one tile of every
//! item at once, so the tiled figure scales with the batch here, as the
//! untiled one does through `x = width × height × batch`.

use crate::exact::{Ratio, MIB};
use crate::policy::Legacy;
use crate::vocab::{ConvBackend, Dtype, Op};

/// The legacy estimate in bytes, or None where the table has no element
/// size for the dtype.
#[allow(clippy::too_many_arguments)]
pub fn legacy_bytes(
    legacy: &Legacy,
    family: &str,
    op: Op,
    tile: u32,
    backend: ConvBackend,
    dtype: Dtype,
    pixels: u64,
    batch: u64,
) -> Option<u64> {
    let e = *legacy.elem_bytes.get(&dtype)?;
    let k = legacy.k.get(&backend).or_else(|| legacy.k.get(&legacy.fallback_backend))?;
    let k = match op {
        Op::Decode => k.decode,
        Op::Encode => k.encode,
    };
    let work: u128 = if tile == 0 {
        u128::from(pixels) * u128::from(e) * u128::from(k)
    } else {
        let t = u128::from(tile);
        let raw = Ratio::int(i128::try_from(t * t * u128::from(batch) * u128::from(e) * u128::from(k)).ok()?);
        u128::try_from(raw.checked_mul(legacy.tile_factor).ok()?.ceil()).ok()?
    };
    let extra = if dtype == Dtype::Fp32 { legacy.fp32_extra_mib.get(family).copied().unwrap_or(0) } else { 0 };
    u64::try_from(work + u128::from(extra) * u128::from(MIB)).ok()
}
