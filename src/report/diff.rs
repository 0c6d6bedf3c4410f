use super::{before_after, grid, markdown_table, Report};
use crate::diff::{Case, DiffReport, Priced};
use crate::pricing::Rule;

fn rule(r: Option<Rule>) -> &'static str {
    r.map_or("-", |r| r.short())
}

fn side(p: &Priced) -> String {
    match p.mib {
        Some(m) => format!("{m} ({})", rule(p.rule)),
        None => "cannot price".into(),
    }
}

fn size(c: &Case) -> String {
    let b = if c.batch > 1 { format!(" ×{}", c.batch) } else { String::new() };
    if c.width == c.height {
        format!("{}²{b}", c.width)
    } else {
        format!("{}x{}{b}", c.width, c.height)
    }
}

fn case_rows(r: &DiffReport) -> Vec<Vec<String>> {
    r.cases
        .iter()
        .map(|c| {
            vec![
                c.key.to_string(),
                size(c),
                side(&c.before),
                side(&c.after),
                c.change_pct.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect()
}

fn line_rows(r: &DiffReport) -> Vec<Vec<String>> {
    r.lines
        .iter()
        .map(|c| {
            let support = if c.old_support == c.new_support || c.old_support.is_empty() {
                c.new_support.join(" + ")
            } else if c.new_support.is_empty() {
                format!("{} → -", c.old_support.join(" + "))
            } else {
                format!("{} → {}", c.old_support.join(" + "), c.new_support.join(" + "))
            };
            vec![
                c.key.clone(),
                c.change.as_str().to_string(),
                before_after(c.old_slope.clone(), c.new_slope.clone()),
                before_after(c.old_base_mib.map(|b| b.to_string()), c.new_base_mib.map(|b| b.to_string())),
                support,
            ]
        })
        .collect()
}

const CASE_HEADERS: [&str; 5] =
    ["case (vae/op/tile/backend/allocator/os/dtype)", "size", "before MiB (rule)", "after MiB (rule)", "change"];
const LINE_HEADERS: [&str; 5] = ["line", "change", "slope B/px", "base MiB", "support"];

fn points_text(r: &DiffReport) -> String {
    // A long list is cut: its count, and the first ten (`--format json` has them all).
    const SHOWN: usize = 10;
    let list = |v: &[crate::text::Text]| match v.len() {
        0 => "none".to_string(),
        n if n <= SHOWN => v.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", "),
        n => format!(
            "{n}: {}, … and {} more",
            v.iter().take(SHOWN).map(|t| t.as_str()).collect::<Vec<_>>().join(", "),
            n - SHOWN
        ),
    };
    format!("points added: {}\npoints removed: {}\n", list(&r.points_added), list(&r.points_removed))
}

/// What the table leaves out, or that nothing changed.
fn unchanged_text(r: &DiffReport) -> String {
    match (r.cases.is_empty(), r.unchanged) {
        (_, 0) => String::new(),
        (true, n) => format!("no reservation changed ({n} asked; --all lists them)\n"),
        (false, n) => format!("{n} other reservation(s) unchanged (--all lists them too)\n"),
    }
}

impl Report for DiffReport {
    const FORMATS: &'static [crate::report::Format] = {
        use crate::report::Format;
        &[Format::Table, Format::Json, Format::Markdown]
    };

    fn table(&self) -> String {
        let mut s = format!("reservations, before = {} → after = {}\n", self.before, self.after);
        if !self.cases.is_empty() {
            s.push_str(&grid(&CASE_HEADERS, case_rows(self), &[2, 3, 4]));
            s.push('\n');
        }
        s.push_str(&unchanged_text(self));
        if self.lines.is_empty() {
            s.push_str("lines: no line added, removed or changed\n");
        } else {
            s.push_str(&grid(&LINE_HEADERS, line_rows(self), &[]));
            s.push('\n');
        }
        s.push_str(&points_text(self));
        s
    }

    fn markdown(&self) -> Option<String> {
        let mut s = format!("### Reservations: `{}` → `{}`\n\n", self.before, self.after);
        if !self.cases.is_empty() {
            s.push_str(&markdown_table(&CASE_HEADERS, &case_rows(self)));
            s.push('\n');
        }
        s.push_str(&unchanged_text(self));
        s.push_str("\n### Lines\n\n");
        if self.lines.is_empty() {
            s.push_str("No line added, removed or changed.\n");
        } else {
            s.push_str(&markdown_table(&LINE_HEADERS, &line_rows(self)));
        }
        s.push('\n');
        s.push_str(&points_text(self).replace('\n', "  \n"));
        Some(s)
    }
}
