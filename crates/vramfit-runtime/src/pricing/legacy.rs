//! The v1 estimator: `x × E × k(backend, op)`, tiled
//! `tile² × batch × E × k × 1.25`, and +250 MiB for the `sd` family in fp32.
//!
//! v1 priced a tiled decode by one tile; a batch decodes one tile of every
//! item at once, so the tiled figure scales with the batch here, as the
//! untiled one does through `x = width × height × batch`.
//!
//! Two departures from v1 keep the floor monotone (docs/DESIGN.md,
//! "Monotone composition"): the tile is clamped to the image (`min(T, W) ×
//! min(T, H)` where v1 wrote `T²`, which priced a 4088-px tile of a
//! 1024×4096 image at 16 times its pixels), and a tiled figure never
//! exceeds the untiled one of the same image (v1's 1.25 made a tile one
//! step smaller than the image cost a quarter more than no tile at all).

use crate::contract::Legacy;
use crate::exact::{Ratio, MIB};
use crate::vocab::{ConvBackend, Dtype, Op};

/// The image a legacy figure is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub width: u64,
    pub height: u64,
    pub batch: u64,
}

impl Shape {
    /// A query's image.
    pub fn of(q: &crate::pricing::Query) -> Shape {
        Shape { width: q.width, height: q.height, batch: q.batch }
    }

    /// `pixels` in one row, batch 1: an untiled figure at a number of pixels
    /// (a video working set; a line's own axis). A tile is then clamped to
    /// a one-pixel-high image, so give a tiled key its real shape.
    pub fn pixels(pixels: u64) -> Shape {
        Shape { width: pixels, height: 1, batch: 1 }
    }

    /// A square image of `side` pixels, batch 1.
    pub fn square(side: u64) -> Shape {
        Shape { width: side, height: side, batch: 1 }
    }
}

/// The legacy estimate in bytes, or None where the table has no element
/// size for the dtype or the figure does not fit.
#[allow(clippy::too_many_arguments)]
pub fn legacy_bytes(
    legacy: &Legacy,
    family: &str,
    op: Op,
    tile: u32,
    backend: ConvBackend,
    dtype: Dtype,
    shape: Shape,
) -> Option<u64> {
    let e = *legacy.elem_bytes.get(&dtype)?;
    let k = legacy.k.get(&backend).or_else(|| legacy.k.get(&legacy.fallback_backend))?;
    let k = match op {
        Op::Decode => k.decode,
        Op::Encode => k.encode,
    };
    let pixels = u128::from(shape.width) * u128::from(shape.height) * u128::from(shape.batch);
    let untiled = pixels.checked_mul(u128::from(e))?.checked_mul(u128::from(k))?;
    let work: u128 = if tile == 0 {
        untiled
    } else {
        let t = u64::from(tile);
        let area = u128::from(t.min(shape.width)) * u128::from(t.min(shape.height));
        let raw =
            [u128::from(shape.batch), u128::from(e), u128::from(k)].into_iter().try_fold(area, u128::checked_mul)?;
        tiled(raw, legacy.tile_factor)?.min(untiled)
    };
    let extra = if dtype == Dtype::Fp32 { legacy.fp32_extra_mib.get(family).copied().unwrap_or(0) } else { 0 };
    u64::try_from(work.checked_add(u128::from(extra) * u128::from(MIB))?).ok()
}

/// `ceil(raw × factor)`, or None where it is negative or does not fit.
/// In integers where `raw` and `raw × num` fit an `i128` (always, for real tiles
/// and factors): `verify` prices thousands of tiled queries, and a
/// fraction reduced by two gcds each was a tenth of its time. Else the
/// same value as an exact fraction.
fn tiled(raw: u128, factor: Ratio) -> Option<u128> {
    let fits = |v: u128| v <= i128::MAX as u128;
    if let (Ok(num), Ok(den), true) = (u128::try_from(factor.num()), u128::try_from(factor.den()), fits(raw)) {
        if let Some(product) = raw.checked_mul(num).filter(|p| fits(*p)) {
            return Some(crate::exact::ceil_div_u128(product, den));
        }
    }
    let exact = Ratio::int(i128::try_from(raw).ok()?).checked_mul(factor).ok()?;
    u128::try_from(exact.ceil()).ok()
}

#[cfg(test)]
mod tests {
    use super::tiled;
    use crate::exact::Ratio;

    /// The integer path gives the fraction's value, over factors of every
    /// sign and size, at the edges where it hands over to the fraction.
    #[test]
    fn a_tiled_estimate_is_the_exact_fractions_ceiling() {
        let by_fraction = |raw: u128, f: Ratio| {
            Ratio::int(i128::try_from(raw).ok()?).checked_mul(f).ok().and_then(|r| u128::try_from(r.ceil()).ok())
        };
        let factors = [(5, 4), (1, 1), (0, 1), (-5, 4), (7, 3), (1, 1_000_000_007), (i128::MAX, 1), (3, i128::MAX)];
        let raws = [0u128, 1, 3, 4, 1 << 40, 12_345_678_901, i128::MAX as u128 / 5, i128::MAX as u128, u128::MAX];
        let mut compared = 0;
        for (n, d) in factors {
            let f = Ratio::new(n, d).unwrap();
            for raw in raws {
                assert_eq!(tiled(raw, f), by_fraction(raw, f), "{raw} × {n}/{d}");
                compared += 1;
            }
        }
        assert_eq!(compared, factors.len() * raws.len());
        // Rounded up, not down.
        assert_eq!(tiled(3, Ratio::new(5, 4).unwrap()), Some(4));
    }
}
