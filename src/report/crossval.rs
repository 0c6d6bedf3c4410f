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
            format!("{} ({} px): {} MiB under ({}.{}%)", p.id, p.pixels, mib_up(p.under_bytes, 2), pct / 10, pct % 10)
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

fn summary(r: &CrossvalReport) -> String {
    let what = match r.by {
        crate::crossval::HoldOut::Size => "leave one measured size out, refit, price it",
        crate::crossval::HoldOut::Source => "leave one source out, refit, price it",
        crate::crossval::HoldOut::Tile => "leave each tile's own line out, price it from the untiled line",
        crate::crossval::HoldOut::Family => {
            "leave each family out, calibrate its class on the others, price it from its own trace"
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
