use super::*;
use proptest::prelude::*;

fn pts(v: &[(u64, u64)]) -> Vec<(u64, u64, String)> {
    v.iter().enumerate().map(|(i, (x, y))| (*x, *y, format!("p{i:02}"))).collect()
}

fn fit(v: &[(u64, u64)]) -> Envelope {
    let owned = pts(v);
    let fp: Vec<FitPoint> = owned.iter().map(|(x, y, id)| FitPoint { x: *x, y: *y, id }).collect();
    envelope(&fp).unwrap()
}

fn r(n: i128, d: i128) -> Ratio {
    Ratio::new(n, d).unwrap()
}

#[test]
fn mean_on_an_interior_vertex_takes_the_left_edge() {
    // Mean size is exactly 2, the middle vertex: both edges are optimal,
    // and the rule picks the steeper one on the left.
    let e = fit(&[(1, 100), (2, 130), (3, 140)]);
    assert_eq!((e.slope, e.base), (Ratio::int(30), Ratio::int(70)));
    assert_eq!(e.support, Support::Edge { left: "p00".into(), right: "p01".into() });
    // Both edges give the same total: the tie is real.
    let owned = pts(&[(1, 100), (2, 130), (3, 140)]);
    let fp: Vec<FitPoint> = owned.iter().map(|(x, y, id)| FitPoint { x: *x, y: *y, id }).collect();
    assert_eq!(
        total_over(Ratio::int(30), Ratio::int(70), &fp).unwrap(),
        total_over(Ratio::int(10), Ratio::int(110), &fp).unwrap()
    );
}

#[test]
fn mean_inside_the_first_edge_starts_at_the_leftmost_vertex() {
    // Many points at the smallest size pull the mean into the first edge.
    let e = fit(&[(1, 100), (1, 90), (1, 95), (1, 99), (2, 130), (3, 140)]);
    assert_eq!(e.support, Support::Edge { left: "p00".into(), right: "p04".into() });
    assert_eq!((e.slope, e.base), (Ratio::int(30), Ratio::int(70)));
}

#[test]
fn mean_past_a_vertex_takes_the_right_edge() {
    let e = fit(&[(1, 100), (2, 130), (3, 140), (3, 10)]);
    assert_eq!(e.support, Support::Edge { left: "p01".into(), right: "p02".into() });
    assert_eq!((e.slope, e.base), (Ratio::int(10), Ratio::int(110)));
}

#[test]
fn collinear_points_keep_the_outer_ones() {
    let e = fit(&[(1, 110), (2, 120), (3, 130), (4, 140)]);
    assert_eq!((e.slope, e.base), (Ratio::int(10), Ratio::int(100)));
    assert_eq!(e.support, Support::Edge { left: "p00".into(), right: "p03".into() });
}

#[test]
fn repeated_sizes_use_the_highest_demand_and_count_every_point() {
    // At x=3 the highest demand binds; the two low points at x=1 shift the mean left.
    let e = fit(&[(1, 50), (1, 40), (1, 45), (3, 70), (3, 90), (5, 100)]);
    assert_eq!(e.support, Support::Edge { left: "p00".into(), right: "p04".into() });
    assert_eq!((e.slope, e.base), (Ratio::int(20), Ratio::int(30)));
    // Equal duplicates: the smaller id is the support whatever the order.
    let e1 = fit(&[(1, 50), (1, 50), (4, 80)]);
    assert_eq!(e1.support.ids(), vec!["p00", "p02"]);
}

#[test]
fn all_points_at_one_size_go_through_the_origin() {
    let e = fit(&[(4, 100), (4, 120), (4, 80)]);
    assert_eq!((e.slope, e.base), (Ratio::int(30), Ratio::zero()));
    assert_eq!(e.support, Support::SingleSize { point: "p01".into() });
}

#[test]
fn two_sizes_give_the_line_through_their_tops() {
    let e = fit(&[(2, 50), (6, 70), (2, 40)]);
    assert_eq!((e.slope, e.base), (r(5, 1), Ratio::int(40)));
}

#[test]
fn negative_base_pivots_on_the_origin() {
    // The hull edge (2,40)-(4,100) has b = -20: the optimum is b = 0 with the
    // steepest y/x, 40/2 = 20 at p00... and 100/4 = 25 at p01: 25 wins.
    let e = fit(&[(2, 40), (4, 100), (1, 5)]);
    assert_eq!((e.slope, e.base), (r(25, 1), Ratio::zero()));
    assert_eq!(e.support, Support::Origin { point: "p01".into() });
}

#[test]
fn negative_slope_goes_flat_at_the_highest_demand() {
    let e = fit(&[(1, 100), (2, 60), (3, 50)]);
    assert_eq!((e.slope, e.base), (Ratio::zero(), Ratio::int(100)));
    assert_eq!(e.support, Support::Flat { point: "p00".into() });
}

#[test]
fn huge_sizes_at_the_limit_fit_exactly_and_beyond_it_are_refused() {
    let m = MAX_PIXELS;
    let b = MAX_BYTES;
    let e = fit(&[(1, 1 << 20), (m / 2, b / 2), (m, b)]);
    assert!(e.slope.num() > 0);
    let rounded = round(&e, r(1, 20)).unwrap();
    assert!(reserve_bytes(rounded.slope_centi, rounded.base_mib, m).unwrap() >= b);
    let owned = pts(&[(m + 1, 5), (1, 1)]);
    let fp: Vec<FitPoint> = owned.iter().map(|(x, y, id)| FitPoint { x: *x, y: *y, id }).collect();
    assert!(matches!(envelope(&fp), Err(FitError::TooLarge { .. })));
    let owned = pts(&[(5, b + 1), (1, 1)]);
    let fp: Vec<FitPoint> = owned.iter().map(|(x, y, id)| FitPoint { x: *x, y: *y, id }).collect();
    assert!(matches!(envelope(&fp), Err(FitError::TooLarge { .. })));
    // Evaluating beyond u64 is an error, not a wrap.
    assert_eq!(reserve_bytes(u64::MAX, u64::MAX, u64::MAX), Err(Overflow));
}

#[test]
fn errors_say_which_point() {
    assert_eq!(FitError::NoPoints.to_string(), "no points to fit");
    assert_eq!(FitError::ZeroSize { id: "a".into() }.to_string(), "point a: size 0 pixels");
    assert!(FitError::TooLarge { id: "b".into() }.to_string().starts_with("point b: size above"));
    assert!(FitError::Overflow.to_string().contains("overflow"));
}

#[test]
fn zero_size_and_no_points_are_errors() {
    assert_eq!(envelope(&[]), Err(FitError::NoPoints));
    assert!(matches!(envelope(&[FitPoint { x: 0, y: 5, id: "z" }]), Err(FitError::ZeroSize { .. })));
}

#[test]
fn rounding_matches_the_closed_form_for_a_five_percent_margin() {
    // docs/DESIGN.md, "The exact fit": slope_centi = ceil(105·(q.y − p.y) / (q.x − p.x)).
    let e = fit(&[(262_144, 1_140_850_688), (1_048_576, 4_481_613_824), (4_194_304, 17_819_038_106)]);
    let Support::Edge { .. } = e.support else { panic!("edge expected") };
    let rounded = round(&e, r(1, 20)).unwrap();
    let closed = crate::exact::ceil_div(105 * e.slope.num(), e.slope.den());
    assert_eq!(i128::from(rounded.slope_centi), closed);
    assert_eq!(
        i128::from(rounded.base_mib),
        crate::exact::ceil_div(e.base.num() * 105, e.base.den() * 100 * (1 << 20))
    );
}

#[test]
fn reserve_rounds_the_pixel_term_up() {
    assert_eq!(reserve_bytes(101, 0, 1).unwrap(), 2);
    assert_eq!(reserve_bytes(100, 1, 3).unwrap(), 3 + (1 << 20));
    assert_eq!(reserve_bytes(0, 0, 10).unwrap(), 0);
}

/// The best total over every feasible line pinned by the data: through two
/// points, through the origin and one point, or flat through one point.
fn brute_force(v: &[(u64, u64)]) -> Ratio {
    let owned = pts(v);
    let fp: Vec<FitPoint> = owned.iter().map(|(x, y, id)| FitPoint { x: *x, y: *y, id }).collect();
    let mut candidates: Vec<(Ratio, Ratio)> = Vec::new();
    for (i, a) in v.iter().enumerate() {
        candidates.push((r(a.1 as i128, a.0 as i128), Ratio::zero()));
        candidates.push((Ratio::zero(), Ratio::int(a.1 as i128)));
        for b in &v[i + 1..] {
            if a.0 != b.0 {
                let s = r(b.1 as i128 - a.1 as i128, b.0 as i128 - a.0 as i128);
                let base =
                    Ratio::int(a.1 as i128).checked_sub(s.checked_mul(Ratio::int(a.0 as i128)).unwrap()).unwrap();
                candidates.push((s, base));
            }
        }
    }
    candidates
        .into_iter()
        .filter(|(s, b)| !s.is_negative() && !b.is_negative())
        .filter(|(s, b)| {
            v.iter().all(|(x, y)| {
                s.checked_mul(Ratio::int(*x as i128))
                    .unwrap()
                    .checked_add(*b)
                    .unwrap()
                    .cmp_exact(&Ratio::int(*y as i128))
                    .unwrap()
                    != Ordering::Less
            })
        })
        .map(|(s, b)| total_over(s, b, &fp).unwrap())
        .min_by(|a, b| a.cmp_exact(b).unwrap())
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn envelope_covers_every_point_and_is_optimal(v in prop::collection::vec((1u64..40, 0u64..2000), 1..9)) {
        let e = fit(&v);
        prop_assert!(!e.slope.is_negative() && !e.base.is_negative());
        for (x, y) in &v {
            prop_assert!(envelope_at(&e, *x).unwrap().cmp_exact(&Ratio::int(*y as i128)).unwrap() != Ordering::Less);
        }
        let owned = pts(&v);
        let fp: Vec<FitPoint> = owned.iter().map(|(x, y, id)| FitPoint { x: *x, y: *y, id }).collect();
        if v.iter().any(|p| p.0 != v[0].0) {
            let total = total_over(e.slope, e.base, &fp).unwrap();
            prop_assert_eq!(total.cmp_exact(&brute_force(&v)).unwrap(), Ordering::Equal);
        }
        // The rounded line covers every point too.
        let rd = round(&e, r(1, 20)).unwrap();
        for (x, y) in &v {
            prop_assert!(reserve_bytes(rd.slope_centi, rd.base_mib, *x).unwrap() >= *y);
        }
    }

    #[test]
    fn result_ignores_input_order(v in prop::collection::vec((1u64..40, 0u64..2000), 2..12), seed in any::<u64>()) {
        let owned = pts(&v);
        let fp: Vec<FitPoint> = owned.iter().map(|(x, y, id)| FitPoint { x: *x, y: *y, id }).collect();
        let mut shuffled = fp.clone();
        let mut s = seed | 1;
        for i in (1..shuffled.len()).rev() {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            shuffled.swap(i, (s % (i as u64 + 1)) as usize);
        }
        prop_assert_eq!(envelope(&fp).unwrap(), envelope(&shuffled).unwrap());
    }
}
