use super::{grid, markdown_table, Report};
use crate::crossval::{CrossvalReport, LineCheck};
use crate::units::mib_up;

const HEADERS: [&str; 7] = ["line", "folds", "held out", "covered", "worst ratio", "mean ratio", "under-reserved"];

fn under(c: &LineCheck) -> String {
    let u: Vec<String> = c
        .points
        .iter()
        .filter(|p| !p.covered)
        .map(|p| {
            let pct = (p.under_bytes as u128 * 1000).div_ceil(p.demand_bytes as u128);
            let mut s = format!(
                "{} ({} px): {} MiB under ({}.{}%)",
                p.id,
                p.pixels,
                mib_up(p.under_bytes, 2),
                pct / 10,
                pct % 10
            );
            if let Some(at) = &p.position {
                s.push_str(&format!(", {}", at.advice()));
            }
            s
        })
        .collect();
    if u.is_empty() {
        "-".into()
    } else {
        u.join("; ")
    }
}

fn rows(r: &CrossvalReport) -> Vec<Vec<String>> {
    r.lines
        .iter()
        .map(|c| {
            vec![
                c.key.to_string(),
                c.folds.to_string(),
                c.points.len().to_string(),
                c.covered.to_string(),
                c.worst_ratio.clone().unwrap_or_else(|| "-".into()),
                c.mean_ratio.clone().unwrap_or_else(|| "-".into()),
                under(c),
            ]
        })
        .collect()
}

/// How the under-reserved points sat against their refits' sizes: what
/// would settle them (`crossval::Position`).
fn misses(r: &CrossvalReport) -> Option<String> {
    use crate::crossval::Place;
    let mut counts = [0usize; 4];
    for p in r.lines.iter().flat_map(|c| c.points.iter()).filter(|p| !p.covered) {
        let i = match p.position?.place {
            Place::Below { .. } => 0,
            Place::At { .. } => 1,
            Place::Between { .. } => 2,
            Place::Past { .. } => 3,
        };
        counts[i] += 1;
    }
    let words = [
        "below the smallest size left",
        "at a size another source measured",
        "between two measured sizes",
        "past the largest size left",
    ];
    let parts: Vec<String> =
        counts.iter().zip(words).filter(|(n, _)| **n > 0).map(|(n, w)| format!("{n} {w}")).collect();
    (!parts.is_empty()).then(|| format!("under-reserved: {} (each row says what to measure)\n", parts.join(", ")))
}

fn summary(r: &CrossvalReport) -> String {
    let what = match r.by {
        crate::crossval::HoldOut::Size => "leave one measured size out, refit, price it",
        crate::crossval::HoldOut::Source => "leave one source out, refit, price it",
        crate::crossval::HoldOut::Tile => "leave each tile's own line out, price it from the untiled line",
        crate::crossval::HoldOut::Family => {
            "leave each family out, calibrate its class on the others, price it from its own trace"
        }
        crate::crossval::HoldOut::Class => {
            "leave each class out, price it from its own traces by the other classes' calibrations"
        }
    };
    let mut s = format!(
        "crossval ({what}): {} of {} held-out points covered ({}%), worst ratio {}, mean {}\n",
        r.covered,
        r.held_out,
        r.coverage_pct.clone().unwrap_or_else(|| "-".into()),
        r.worst_ratio.clone().unwrap_or_else(|| "-".into()),
        r.mean_ratio.clone().unwrap_or_else(|| "-".into()),
    );
    if let Some(line) = misses(r) {
        s.push_str(&line);
    }
    for n in &r.not_validated {
        s.push_str(&format!("not validated: {n}\n"));
    }
    s
}

impl Report for CrossvalReport {
    const FORMATS: &'static [crate::report::Format] = {
        use crate::report::Format;
        &[Format::Table, Format::Json, Format::Markdown]
    };

    fn table(&self) -> String {
        let mut s = grid(&HEADERS, rows(self), &[1, 2, 3, 4, 5]);
        s.push('\n');
        s.push_str(&summary(self));
        s
    }

    fn markdown(&self) -> Option<String> {
        let mut s = markdown_table(&HEADERS, &rows(self));
        s.push('\n');
        s.push_str(&summary(self).replace('\n', "  \n"));
        Some(s)
    }
}

mod against {
    use super::super::{grid, markdown_table, Report};
    use crate::crossval::against::{AgainstReport, Side};
    use crate::units::mib_up;

    const HEADERS: [&str; 6] = ["line", "point", "demand MiB", "host MiB", "vramfit MiB", "host estimator"];

    fn rows(r: &AgainstReport) -> Vec<Vec<String>> {
        r.points
            .iter()
            .map(|p| {
                let mark = |b: u64, ratio: &str| {
                    format!("{} ({ratio}×{})", mib_up(b, 0), if b < p.demand_bytes { ", UNDER" } else { "" })
                };
                vec![
                    p.line.clone(),
                    p.id.clone(),
                    mib_up(p.demand_bytes, 0),
                    mark(p.host_bytes, &p.host_ratio),
                    mark(p.vramfit_bytes, &p.vramfit_ratio),
                    p.estimator.clone(),
                ]
            })
            .collect()
    }

    fn side(name: &str, s: &Side, n: usize) -> String {
        let mut out = format!(
            "{name}: {} of {n} covered ({}%), mean ratio {}, worst {}",
            s.covered,
            s.coverage_pct.clone().unwrap_or_else(|| "-".into()),
            s.mean_ratio.clone().unwrap_or_else(|| "-".into()),
            s.worst_ratio.clone().unwrap_or_else(|| "-".into()),
        );
        if !s.under.is_empty() {
            out.push_str(&format!("; under-reserves {} point(s) (marked UNDER)", s.under.len()));
        }
        out.push('\n');
        out
    }

    fn summary(r: &AgainstReport) -> String {
        let versions = if r.versions.is_empty() { String::new() } else { format!(" {}", r.versions.join(", ")) };
        let mut s = format!("crossval against {}: every measured point priced by both on the same points\n", r.host);
        s.push_str(&side(&format!("{}{versions}", r.host), &r.host_side, r.priced));
        s.push_str(&side("vramfit", &r.vramfit_side, r.priced));
        if !r.not_priced.is_empty() {
            s.push_str(&format!("{} point(s) {} has no estimator for\n", r.not_priced.len(), r.host));
        }
        s
    }

    impl Report for AgainstReport {
        const FORMATS: &'static [crate::report::Format] = {
            use crate::report::Format;
            &[Format::Table, Format::Json, Format::Markdown]
        };

        fn table(&self) -> String {
            let mut s = grid(&HEADERS, rows(self), &[2, 3, 4]);
            s.push('\n');
            s.push_str(&summary(self));
            s
        }

        /// The summary, and the points either side under-reserves (the
        /// table of every point is `crossval --against`'s own).
        fn markdown(&self) -> Option<String> {
            let mut s = summary(self).replace('\n', "  \n");
            let under: Vec<Vec<String>> =
                rows(self).into_iter().filter(|r| r.iter().any(|c| c.contains("UNDER"))).collect();
            if !under.is_empty() {
                s.push('\n');
                s.push_str(&markdown_table(&HEADERS, &under));
            }
            Some(s)
        }
    }
}

mod simulated {
    use super::{grid, markdown_table};
    use crate::report::Report;
    use crate::traced::validation::SimulatedReport;

    const GROUP_HEADERS: [&str; 6] = ["group", "points", "within band", "min", "median", "max"];
    const POINT_HEADERS: [&str; 8] =
        ["id", "class", "platform", "metric", "measured MiB", "simulated MiB", "ratio", "band"];

    fn group_rows(r: &SimulatedReport) -> Vec<Vec<String>> {
        r.groups
            .iter()
            .map(|g| {
                vec![
                    g.group.clone(),
                    g.points.to_string(),
                    format!("{} ({}%)", g.within, g.within * 100 / g.points.max(1)),
                    g.min.clone(),
                    g.median.clone(),
                    g.max.clone(),
                ]
            })
            .collect()
    }

    fn point_rows(r: &SimulatedReport, outside_only: bool) -> Vec<Vec<String>> {
        r.compared
            .iter()
            .filter(|c| !outside_only || !c.within)
            .map(|c| {
                vec![
                    c.id.clone(),
                    c.class.clone(),
                    c.platform.clone(),
                    format!("{:?}", c.metric).to_lowercase(),
                    (c.measured_bytes >> 20).to_string(),
                    (c.simulated_bytes >> 20).to_string(),
                    c.ratio.clone(),
                    if c.within { "in".into() } else { "OUTSIDE".into() },
                ]
            })
            .collect()
    }

    fn summary(r: &SimulatedReport) -> String {
        let all = r.groups.iter().find(|g| g.group == "all");
        let mut s = format!(
            "crossval --simulated: measured ÷ simulated peak (reserved where published, else allocated) at each point's own \
             configuration; {} of {} points within [{}, {}]\n",
            all.map_or(0, |g| g.within),
            all.map_or(0, |g| g.points),
            r.band[0],
            r.band[1]
        );
        for n in &r.not_compared {
            s.push_str(&format!("not compared: {n}\n"));
        }
        s
    }

    impl Report for SimulatedReport {
        const FORMATS: &'static [crate::report::Format] = {
            use crate::report::Format;
            &[Format::Table, Format::Json, Format::Markdown]
        };

        fn table(&self) -> String {
            let mut s = grid(&POINT_HEADERS, point_rows(self, false), &[4, 5, 6]);
            s.push('\n');
            s.push_str(&grid(&GROUP_HEADERS, group_rows(self), &[1, 3, 4, 5]));
            s.push('\n');
            s.push_str(&summary(self));
            s
        }

        fn markdown(&self) -> Option<String> {
            let mut s = summary(self).replace('\n', "  \n");
            s.push('\n');
            s.push_str(&markdown_table(&GROUP_HEADERS, &group_rows(self)));
            let outside = point_rows(self, true);
            if !outside.is_empty() {
                s.push('\n');
                s.push_str(&markdown_table(&POINT_HEADERS, &outside));
            }
            Some(s)
        }
    }
}
