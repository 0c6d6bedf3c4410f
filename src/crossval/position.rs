//! Where a held-out point's size sat against the sizes its refit kept:
//! what a miss says to measure (docs/evidence.md, `vramfit crossval`).

pub use crate::contract::traced::ShapeUnit;
use serde::Serialize;
use std::collections::BTreeSet;

/// Where a held-out size sat against the refit's training sizes, in the
/// line's own coordinate (`unit`: pixels, or a video line's working set).
/// A miss `between` two sizes lies above the line through its neighbours
/// (their chord undershoots it), and only a size measured inside that
/// stretch tightens it. A miss `past` the largest (or `below` the
/// smallest) is an extrapolation: measure sizes beyond it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Position {
    #[serde(flatten)]
    pub place: Place,
    pub unit: ShapeUnit,
}

/// The place itself (see [`Position`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Place {
    /// Under the smallest training size: priced by the line's base.
    Below { smallest: u64 },
    /// At a training size (a source fold: another source measured it).
    At { size: u64 },
    /// Strictly between the two nearest training sizes.
    Between { below: u64, above: u64 },
    /// Past the largest training size; `traced`: the family's trace grew
    /// the price beyond the line's own.
    Past { largest: u64, traced: bool },
}

impl Position {
    /// Where `x` sits among `sizes` (empty: nowhere); `traced` says whether
    /// a price past the end was grown by the trace.
    /// The place of a size `x` that is not one of the kept sizes, from the
    /// kept sizes' ends and its nearest kept neighbours either side.
    pub(super) fn of_neighbours(
        x: u64,
        smallest: u64,
        largest: u64,
        (below, above): (Option<u64>, Option<u64>),
        traced: bool,
        unit: ShapeUnit,
    ) -> Position {
        let place = if x < smallest {
            Place::Below { smallest }
        } else if x > largest {
            Place::Past { largest, traced }
        } else {
            Place::Between { below: below.unwrap_or(smallest), above: above.unwrap_or(largest) }
        };
        Position { place, unit }
    }

    pub(super) fn of(x: u64, sizes: &BTreeSet<u64>, traced: bool, unit: ShapeUnit) -> Option<Position> {
        let (smallest, largest) = (*sizes.first()?, *sizes.last()?);
        let place = if sizes.contains(&x) {
            Place::At { size: x }
        } else if x < smallest {
            Place::Below { smallest }
        } else if x > largest {
            Place::Past { largest, traced }
        } else {
            let below = sizes.range(..x).next_back().copied().unwrap_or(smallest);
            let above = sizes.range(x..).next().copied().unwrap_or(largest);
            Place::Between { below, above }
        };
        Some(Position { place, unit })
    }

    /// The measurement that would settle a miss here, in words.
    pub fn advice(&self) -> String {
        let unit = match self.unit {
            ShapeUnit::Pixels => "px",
            ShapeUnit::WorkingSet => "px of working set",
        };
        let n = crate::units::thousands;
        match self.place {
            Place::Below { smallest } => {
                format!(
                    "below the smallest size left ({} {unit}): an extrapolation, measure sizes under this one",
                    n(smallest)
                )
            }
            Place::At { size } => {
                format!("at a size another source measured ({} {unit}): the sources disagree there", n(size))
            }
            Place::Between { below, above } => format!(
                "between {} and {} {unit}, above the line through those sizes: measure sizes inside that stretch",
                n(below),
                n(above)
            ),
            Place::Past { largest, traced } => format!(
                "past the largest size left ({} {unit}{}): an extrapolation, measure sizes beyond this one",
                n(largest),
                if traced { ", grown by the trace" } else { "" }
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(x: u64, sizes: &[u64]) -> Option<Place> {
        let sizes: BTreeSet<u64> = sizes.iter().copied().collect();
        Position::of(x, &sizes, true, ShapeUnit::Pixels).map(|p| p.place)
    }

    #[test]
    fn each_place_names_the_kept_sizes_nearest_the_point() {
        let kept = [100, 400, 900, 1600];
        assert_eq!(at(50, &kept), Some(Place::Below { smallest: 100 }));
        assert_eq!(at(400, &kept), Some(Place::At { size: 400 }));
        assert_eq!(at(500, &kept), Some(Place::Between { below: 400, above: 900 }));
        assert_eq!(at(899, &kept), Some(Place::Between { below: 400, above: 900 }));
        assert_eq!(at(2000, &kept), Some(Place::Past { largest: 1600, traced: true }));
        assert_eq!(at(10, &[]), None);
    }

    #[test]
    fn the_advice_names_the_unit_and_the_trace() {
        let sizes: BTreeSet<u64> = [1_048_576, 8_650_752].into_iter().collect();
        let video = Position::of(2_000_000, &sizes, false, ShapeUnit::WorkingSet).unwrap();
        assert!(video.advice().starts_with("between 1 048 576 and 8 650 752 px of working set"), "{}", video.advice());
        let past = Position::of(9_000_000, &sizes, true, ShapeUnit::Pixels).unwrap();
        assert!(past.advice().contains("(8 650 752 px, grown by the trace)"), "{}", past.advice());
        let untraced = Position::of(9_000_000, &sizes, false, ShapeUnit::Pixels).unwrap();
        assert!(!untraced.advice().contains("trace"), "{}", untraced.advice());
    }
}
