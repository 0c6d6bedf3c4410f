//! The one formula every shipped line is priced by, here and in every
//! runtime (the Python package restates it).

use crate::exact::{Overflow, MIB};

/// `reserve_bytes(x) = ceil(slope_centi × x / 100) + base_mib × 2^20`.
pub fn reserve_bytes(slope_centi: u64, base_mib: u64, x: u64) -> Result<u64, Overflow> {
    let per_pixel = crate::exact::ceil_div_u128(u128::from(slope_centi) * u128::from(x), 100);
    let base = u128::from(base_mib) * u128::from(MIB);
    u64::try_from(per_pixel.checked_add(base).ok_or(Overflow)?).map_err(|_| Overflow)
}
