//! Leave-one-size-out envelopes in `O(n log n)`: for every distinct size,
//! the envelope [`envelope`](super::envelope) gives the points without that
//! size, without refitting each fold from scratch (`crossval --by size`,
//! which was quadratic: 15 s for one key of 10 000 sizes).
//!
//! Why it is exact. A fold drops one column of points (one size). The
//! other columns' tops are unchanged, so the fold's upper hull is the full
//! hull unless the dropped top was one of its vertices; then only the
//! stretch between that vertex's two hull neighbours changes, and it is the
//! upper hull of the tops strictly between them. Each top lies between at
//! most two such pairs of neighbours, so all these pockets together cost
//! `O(n)`. The fold's mean size is the full mean less the column's points;
//! its edge is found by bisection over the (virtual) fold hull; the two
//! fallbacks (the origin pivot, the flat line) take the best point of the
//! whole set or, when that point was dropped, the runner-up. Every choice
//! breaks ties as [`envelope`](super::envelope) does, so the result is the
//! same envelope, support included (a property test holds the two equal on
//! random point sets).

use super::{flat_order, on_edge, tops, upper_hull, Envelope, FitError, FitPoint, Vertex};
use std::cmp::Ordering;

/// One fold: the size left out and the envelope of the rest (an error
/// where the rest cannot be fitted: no points left).
pub struct Fold {
    pub size: u64,
    pub envelope: Result<Envelope, FitError>,
}

/// For each distinct size of `points`, ascending, the envelope of the
/// points of every other size. An error where the whole set cannot be
/// fitted (a zero size, a value too large).
pub fn folds(points: &[FitPoint]) -> Result<Vec<Fold>, FitError> {
    if points.is_empty() {
        return Err(FitError::NoPoints);
    }
    let tops = tops(points)?;
    let mut count = vec![0u128; tops.len()];
    let mut sum_x: u128 = 0;
    for p in points {
        sum_x += u128::from(p.x);
        // tops are sorted by size and distinct.
        if let Ok(at) = tops.binary_search_by(|v| v.x.cmp(&i128::from(p.x))) {
            count[at] += 1;
        }
    }
    let n = points.len() as u128;
    let hull_at: Vec<usize> = hull_indices(&tops);
    let ratio = runners_up(&tops, ratio_order);
    let flat = runners_up(&tops, flat_order);
    let mut out = Vec::with_capacity(tops.len());
    for (t, top) in tops.iter().enumerate() {
        let size = top.x as u64;
        let left_n = n - count[t];
        let left_sum = sum_x - count[t] * top.x as u128;
        let rest = tops.len() - 1;
        let envelope = if rest == 0 {
            Err(FitError::NoPoints)
        } else if rest == 1 {
            let v = tops[if t == 0 { 1 } else { 0 }];
            super::Ratio::new(v.y, v.x).map_err(FitError::from).map(|slope| Envelope {
                slope,
                base: super::Ratio::zero(),
                support: super::Support::SingleSize { point: v.id.to_string() },
            })
        } else {
            let hull = FoldHull::new(&tops, &hull_at, t);
            // The first edge whose right end is at or past the fold's mean.
            let (mut lo, mut hi) = (1usize, hull.len() - 1);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if left_n * (hull.get(mid).x as u128) < left_sum {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let pick = |best: (usize, Option<usize>)| -> Result<Vertex, FitError> {
                let at = if best.0 == t { best.1.ok_or(FitError::NoPoints)? } else { best.0 };
                Ok(tops[at])
            };
            on_edge(hull.get(lo - 1), hull.get(lo), || pick(ratio), || pick(flat))
        };
        out.push(Fold { size, envelope });
    }
    Ok(out)
}

/// `a` over `b` by `y/x` as `max_by_ratio` picks: a strictly larger ratio
/// wins, and on a tie the one met first (the smaller size).
fn ratio_order(a: &Vertex, b: &Vertex) -> Ordering {
    match (a.y * b.x).cmp(&(b.y * a.x)) {
        Ordering::Equal => b.x.cmp(&a.x),
        o => o,
    }
}

/// The best top by `order` and the best of the others (None: one top).
fn runners_up(tops: &[Vertex], order: impl Fn(&Vertex, &Vertex) -> Ordering) -> (usize, Option<usize>) {
    let best = (1..tops.len()).fold(0, |b, i| if order(&tops[i], &tops[b]) == Ordering::Greater { i } else { b });
    let second = (0..tops.len()).filter(|i| *i != best).fold(None, |b: Option<usize>, i| match b {
        Some(b) if order(&tops[i], &tops[b]) != Ordering::Greater => Some(b),
        _ => Some(i),
    });
    (best, second)
}

/// The positions in `tops` of the upper hull's vertices, left to right.
fn hull_indices(tops: &[Vertex]) -> Vec<usize> {
    let hull = upper_hull(tops);
    let mut at = Vec::with_capacity(hull.len());
    let mut i = 0;
    for v in &hull {
        while tops[i].x != v.x {
            i += 1;
        }
        at.push(i);
    }
    at
}

/// The upper hull of the tops without top `t`: the full hull, with the
/// stretch between `t`'s hull neighbours replaced by its pocket.
struct FoldHull<'a, 'b> {
    tops: &'b [Vertex<'a>],
    hull: &'b [usize],
    /// Hull vertices kept before the pocket, and where they resume after it.
    before: usize,
    after: usize,
    pocket: Vec<Vertex<'a>>,
}

impl<'a, 'b> FoldHull<'a, 'b> {
    fn new(tops: &'b [Vertex<'a>], hull: &'b [usize], t: usize) -> FoldHull<'a, 'b> {
        let Ok(i) = hull.binary_search(&t) else {
            // Not a vertex: the hull is unchanged.
            return FoldHull { tops, hull, before: hull.len(), after: hull.len(), pocket: Vec::new() };
        };
        // The tops from the previous vertex (or the first top) to the next
        // vertex (or the last top), without `t`.
        let from = if i == 0 { 0 } else { hull[i - 1] };
        let to = if i + 1 == hull.len() { tops.len() - 1 } else { hull[i + 1] };
        let stretch: Vec<Vertex<'a>> = (from..=to).filter(|k| *k != t).map(|k| tops[k]).collect();
        let pocket = upper_hull(&stretch);
        // The pocket's own ends are the kept neighbours (when `t` was inner),
        // or the new ends of the whole hull.
        let before = if i == 0 { 0 } else { i - 1 };
        let after = if i + 1 == hull.len() { hull.len() } else { i + 2 };
        FoldHull { tops, hull, before, after, pocket }
    }

    fn len(&self) -> usize {
        self.before + self.pocket.len() + (self.hull.len() - self.after)
    }

    fn get(&self, k: usize) -> Vertex<'a> {
        if k < self.before {
            self.tops[self.hull[k]]
        } else if k < self.before + self.pocket.len() {
            self.pocket[k - self.before]
        } else {
            self.tops[self.hull[self.after + (k - self.before - self.pocket.len())]]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute(points: &[FitPoint]) -> Vec<(u64, Result<Envelope, FitError>)> {
        let sizes: std::collections::BTreeSet<u64> = points.iter().map(|p| p.x).collect();
        sizes
            .into_iter()
            .map(|s| {
                let rest: Vec<FitPoint> = points.iter().copied().filter(|p| p.x != s).collect();
                (s, super::super::envelope(&rest))
            })
            .collect()
    }

    fn check(raw: &[(u64, u64)]) {
        let ids: Vec<String> = (0..raw.len()).map(|i| format!("p{:03}", (i * 7919) % 1000)).collect();
        let points: Vec<FitPoint> =
            raw.iter().zip(&ids).map(|((x, y), id)| FitPoint { x: *x, y: *y, id: id.as_str() }).collect();
        let fast = folds(&points).unwrap();
        let slow = brute(&points);
        assert_eq!(fast.len(), slow.len());
        for (f, (s, e)) in fast.iter().zip(&slow) {
            assert_eq!(f.size, *s);
            assert_eq!(f.envelope, *e, "size {s} of {raw:?}");
        }
    }

    #[test]
    fn each_case_of_the_fold_hull() {
        // A vertex dropped inside, at either end, a non-vertex, collinear
        // points, a fold that needs the origin pivot or the flat line.
        check(&[(1, 10), (2, 30), (3, 35), (4, 60), (5, 62)]);
        check(&[(1, 100), (2, 20), (3, 30), (4, 40)]);
        check(&[(1, 10), (2, 20), (3, 30), (4, 40), (4, 41), (2, 19)]);
        check(&[(10, 100), (20, 90), (30, 80), (40, 70)]);
        check(&[(1, 1), (100, 1000), (101, 1001), (102, 5000)]);
        check(&[(1, 5), (2, 5)]);
        check(&[(3, 9)]);
    }

    proptest! {
        #[test]
        fn every_fold_is_the_envelope_refitted(raw in prop::collection::vec((1u64..40, 0u64..400), 1..40)) {
            check(&raw);
        }

        #[test]
        fn every_fold_on_a_convex_or_concave_curve(n in 2usize..30, bend in 0u64..3, base in 0u64..1000) {
            let raw: Vec<(u64, u64)> = (1..=n as u64)
                .map(|x| (x * 16, base + x * 100 + match bend { 0 => x * x, 1 => 0, _ => 4000 - x * x }))
                .collect();
            check(&raw);
        }
    }
}
