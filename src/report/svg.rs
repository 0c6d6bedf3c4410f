//! One SVG per line, drawn with plotters' SVG backend (no system fonts, no
//! native code). It draws what [`crate::plot`] computed and nothing else.

use crate::plot::{mib_f, LinePlot};
use crate::vocab::Aggregate;
use plotters::prelude::*;
const GREY_400: RGBColor = RGBColor(189, 189, 189);
const ORANGE_700: RGBColor = RGBColor(245, 124, 0);

pub use crate::plot::Frame;

const SIZE: (u32, u32) = (960, 600);

fn palette(i: usize) -> RGBColor {
    const C: [RGBColor; 6] = [
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(214, 39, 40),
        RGBColor(23, 190, 207),
        RGBColor(140, 86, 75),
    ];
    C[i % C.len()]
}

fn mpx(x: u64) -> f64 {
    x as f64 / 1e6
}

fn y_max(p: &LinePlot) -> f64 {
    let top = p
        .points
        .iter()
        .map(|q| q.demand_bytes)
        .chain(std::iter::once(p.line_at(p.x_max)))
        .chain(p.legacy.iter().map(|l| l[1]))
        .max()
        .unwrap_or(1);
    (mib_f(top) * 1.08).max(1.0)
}

/// A source label short enough for the legend: its beginning and its end
/// (two sources of one project often differ only at the end).
fn short(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    if chars.len() <= 56 {
        return source.to_string();
    }
    let head: String = chars[..20].iter().collect();
    let tail: String = chars[chars.len() - 34..].iter().collect();
    format!("{head}…{tail}")
}

/// The SVG of one line, and where its plotting area is.
pub fn line_svg(p: &LinePlot) -> anyhow::Result<(String, Frame)> {
    let mut svg = String::new();
    let frame;
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let (x_max, ym) = (mpx(p.x_max), y_max(p));
        let title = format!("{}   reserve(x) = {}", p.key, p.formula);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17))
            .margin(14)
            .x_label_area_size(46)
            .y_label_area_size(72)
            .build_cartesian_2d(0f64..x_max, 0f64..ym)
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        chart
            .configure_mesh()
            .x_desc(if p.key.temporal_tile.is_some() {
                "working set (tile px × frames × batch / 10^6); points at demand less the clip copies"
            } else {
                "size (megapixels = width × height × batch / 10^6)"
            })
            .y_desc("reservation / demand (MiB)")
            .x_labels(10)
            .y_labels(10)
            .y_label_formatter(&|v| format!("{:.0}", v))
            .label_style(("sans-serif", 13))
            .light_line_style(RGBColor(236, 236, 236))
            .draw()
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let err = |e: DrawingAreaErrorKind<_>| anyhow::anyhow!("{e:?}");
        let line = |x: u64| mib_f(p.line_at(x));
        // The ratio-bound band: between line / bound and the line.
        let bound = p.ratio_bound.num() as f64 / p.ratio_bound.den() as f64;
        let band = vec![(0.0, line(0) / bound), (x_max, line(p.x_max) / bound), (x_max, line(p.x_max)), (0.0, line(0))];
        chart
            .draw_series(std::iter::once(Polygon::new(band, RGBColor(255, 214, 170).mix(0.35))))
            .map_err(err)?
            .label(format!(
                "ratio-bound band (a point below it is over-reserved > {}×)",
                crate::exact::exact_decimal(&p.ratio_bound)
            ))
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 20, y + 5)], RGBColor(255, 214, 170).filled()));
        // The legacy estimate.
        if let Some([l0, l1]) = p.legacy {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(0.0, mib_f(l0)), (x_max, mib_f(l1))],
                    6,
                    4,
                    ORANGE_700.stroke_width(2),
                ))
                .map_err(err)?
                .label("legacy v1 estimate")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], ORANGE_700.stroke_width(2)));
        }
        // The unrounded envelope.
        if let Some((a, b)) = p.envelope {
            let at = |x: u64| {
                let v = a.checked_mul(crate::exact::Ratio::int(i128::from(x))).and_then(|v| v.checked_add(b));
                v.map(|v| v.num() as f64 / v.den() as f64 / crate::exact::MIB as f64).unwrap_or(0.0)
            };
            chart
                .draw_series(LineSeries::new(vec![(0.0, at(0)), (x_max, at(p.x_max))], BLACK.stroke_width(1)))
                .map_err(err)?
                .label("exact envelope (no margin)")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(1)));
        }
        // The shipped line: solid over the measured range, dashed where extrapolated.
        let red = RGBColor(200, 30, 30);
        let [lo, hi] = p.size_range.unwrap_or([0, p.x_max]);
        chart
            .draw_series(LineSeries::new(vec![(mpx(lo), line(lo)), (mpx(hi), line(hi))], red.stroke_width(3)))
            .map_err(err)?
            .label(format!("shipped line (margin included): {}", p.formula))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(3)));
        for (a, b) in [(0, lo), (hi, p.x_max)] {
            if a < b {
                chart
                    .draw_series(DashedLineSeries::new(
                        vec![(mpx(a), line(a)), (mpx(b), line(b))],
                        8,
                        6,
                        red.stroke_width(2),
                    ))
                    .map_err(err)?;
            }
        }
        // The points: colour by source, shape by aggregate, excluded grey,
        // support ringed.
        let mut sources: Vec<&str> =
            p.points.iter().filter(|q| q.excluded.is_none()).map(|q| q.source.as_str()).collect();
        sources.sort_unstable();
        sources.dedup();
        for (i, src) in sources.iter().enumerate() {
            let c = palette(i);
            let pts: Vec<_> = p.points.iter().filter(|q| q.excluded.is_none() && q.source == *src).collect();
            chart
                .draw_series(pts.iter().map(|q| {
                    let at = (mpx(q.pixels), mib_f(q.demand_bytes));
                    match q.aggregate.unwrap_or(Aggregate::Single) {
                        Aggregate::Mean => Circle::new(at, 5, c.filled()).into_dyn(),
                        Aggregate::Max => Cross::new(at, 5, c.stroke_width(2)).into_dyn(),
                        Aggregate::Single => TriangleMarker::new(at, 6, c.filled()).into_dyn(),
                    }
                }))
                .map_err(err)?
                .label(format!("source: {}", short(src)))
                .legend(move |(x, y)| Rectangle::new([(x + 4, y - 5), (x + 14, y + 5)], c.filled()));
        }
        // What the shapes mean, once, in the legend.
        let shapes = [Aggregate::Mean, Aggregate::Single, Aggregate::Max].into_iter().filter(|a| {
            p.points.iter().any(|q| q.excluded.is_none() && q.aggregate.unwrap_or(Aggregate::Single) == *a)
        });
        for a in shapes.collect::<Vec<_>>() {
            let dark = RGBColor(90, 90, 90);
            let label = match a {
                Aggregate::Mean => "a mean of runs",
                Aggregate::Max => "the largest of runs",
                Aggregate::Single => "a single run",
            };
            chart.draw_series(std::iter::empty::<Circle<(f64, f64), i32>>()).map_err(err)?.label(label).legend(
                move |(x, y)| -> DynElement<'static, SVGBackend, (i32, i32)> {
                    match a {
                        Aggregate::Mean => Circle::new((x + 10, y), 4, dark.filled()).into_dyn(),
                        Aggregate::Max => Cross::new((x + 10, y), 4, dark.stroke_width(2)).into_dyn(),
                        Aggregate::Single => TriangleMarker::new((x + 10, y), 5, dark.filled()).into_dyn(),
                    }
                },
            );
        }
        let excluded: Vec<_> = p.points.iter().filter(|q| q.excluded.is_some()).collect();
        if !excluded.is_empty() {
            chart
                .draw_series(
                    excluded.iter().map(|q| Circle::new((mpx(q.pixels), mib_f(q.demand_bytes)), 5, GREY_400.filled())),
                )
                .map_err(err)?
                .label("excluded by the policy (see its reason)")
                .legend(|(x, y)| Circle::new((x + 10, y), 5, GREY_400.filled()));
        }
        let support: Vec<_> = p.points.iter().filter(|q| q.support).collect();
        if !support.is_empty() {
            chart
                .draw_series(
                    support
                        .iter()
                        .map(|q| Circle::new((mpx(q.pixels), mib_f(q.demand_bytes)), 10, BLACK.stroke_width(2))),
                )
                .map_err(err)?
                .label("support points (pin the envelope)")
                .legend(|(x, y)| Circle::new((x + 10, y), 6, BLACK.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(180, 180, 180))
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(err)?;
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        frame = Frame { left: xr.start, right: xr.end, top: yr.start, bottom: yr.end, x_max_mpx: x_max, y_max_mib: ym };
        root.present().map_err(|e| anyhow::anyhow!("{e:?}"))?;
    }
    Ok((svg, frame))
}
