use super::verify::{detail, findings_tables};
use super::{before_after, grid, markdown_table, Report};
use crate::verify::Finding;

/// The findings `verify` would report, after the lines.
fn findings_summary(s: &mut String, findings: &[Finding], what: &str) {
    if findings.is_empty() {
        return;
    }
    s.push_str(&format!("verify would report {} finding(s) on {what}:\n", findings.len()));
    s.push_str(&findings_tables(findings));
}

fn findings_markdown(s: &mut String, findings: &[Finding]) {
    if findings.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = findings
        .iter()
        .map(|f| vec![f.code.to_string(), f.line.clone().unwrap_or_default(), detail(f).replace('\n', "<br>")])
        .collect();
    s.push_str(&format!("\n**verify would report {} finding(s):**\n\n", findings.len()));
    s.push_str(&markdown_table(&["code", "line", "finding"], &rows));
}
use crate::coefficients::emit::{BundledCopy, Change, EmitReport};
use crate::lines::{FitReport, LineKind};

const FIT_HEADERS: &[&str] = &[
    "line (vae/op/tile/backend/allocator/os/dtype)",
    "kind",
    "points",
    "sizes",
    "slope B/px",
    "base MiB",
    "max ratio",
    "over bound",
    "support",
];

fn fit_rows(r: &FitReport) -> Vec<Vec<String>> {
    r.lines
        .iter()
        .filter(|l| l.kind != LineKind::Insufficient)
        .map(|l| {
            vec![
                l.key.to_string(),
                l.kind.as_str().to_string(),
                l.points.len().to_string(),
                l.distinct_sizes.to_string(),
                l.slope.clone().unwrap_or_default(),
                l.base_mib.map(|b| b.to_string()).unwrap_or_default(),
                l.max_ratio.clone().unwrap_or_else(|| "-".into()),
                l.over_bound.len().to_string(),
                if l.support.is_empty() { "-".into() } else { l.support.join(" + ") },
            ]
        })
        .collect()
}

fn insufficient(r: &FitReport) -> Vec<Vec<String>> {
    r.lines
        .iter()
        .filter(|l| l.kind == LineKind::Insufficient)
        .map(|l| vec![l.key.to_string(), l.points.len().to_string(), l.reason.clone().unwrap_or_default()])
        .collect()
}

impl Report for FitReport {
    const FORMATS: &'static [crate::report::Format] = {
        use crate::report::Format;
        &[Format::Table, Format::Json, Format::Markdown]
    };

    fn table(&self) -> String {
        let mut s = grid(FIT_HEADERS, fit_rows(self), &[2, 3, 4, 5, 6, 7]);
        s.push('\n');
        let ins = insufficient(self);
        if !ins.is_empty() {
            s.push_str("Not fitted:\n");
            s.push_str(&grid(&["line", "points", "reason"], ins, &[1]));
            s.push('\n');
        }
        for l in &self.lines {
            if let Some(mixed) = crate::lines::mixed_contexts(&l.contexts) {
                s.push_str(&format!(
                    "note: {} mixes points taken in different contexts ({mixed}): each is fitted on the op's \
                     own demand, a fresh one's less its platform's first use (docs/fit.md, \"Demand per \
                     context\")\n",
                    l.key
                ));
            }
        }
        let over: usize = self.lines.iter().map(|l| l.over_bound.len()).sum();
        s.push_str(&format!(
            "{} lines fitted or carried, {} not fitted; margin {}, ratio bound {}: {} point(s) over the bound\n",
            self.lines.iter().filter(|l| l.kind != LineKind::Insufficient).count(),
            self.lines.iter().filter(|l| l.kind == LineKind::Insufficient).count(),
            self.margin,
            self.ratio_bound,
            over
        ));
        findings_summary(&mut s, &self.findings, "these lines");
        s
    }

    fn markdown(&self) -> Option<String> {
        let mut s = markdown_table(FIT_HEADERS, &fit_rows(self));
        for l in &self.lines {
            if let Some(mixed) = crate::lines::mixed_contexts(&l.contexts) {
                s.push_str(&format!("\n`{}` mixes points taken in different contexts ({mixed}).  ", l.key));
            }
        }
        findings_markdown(&mut s, &self.findings);
        Some(s)
    }
}

const EMIT_HEADERS: &[&str] = &["line", "change", "slope B/px", "base MiB"];

fn emit_rows(r: &EmitReport) -> Vec<Vec<String>> {
    r.changes
        .iter()
        .filter(|c| c.change != Change::Unchanged)
        .map(|c| {
            let kind = match (&c.old_kind, &c.new_kind) {
                (Some(a), Some(b)) if a != b => format!("changed ({a} → {b})"),
                _ => c.change.as_str().to_string(),
            };
            vec![
                c.key.clone(),
                kind,
                before_after(c.old_slope.clone(), c.new_slope.clone()),
                before_after(c.old_base_mib.map(|b| b.to_string()), c.new_base_mib.map(|b| b.to_string())),
            ]
        })
        .collect()
}

/// What a stale copy needs, in words a maintainer acts on.
fn copy_message(r: &EmitReport, b: &BundledCopy) -> String {
    format!(
        "{} ({}) differs from {} as emit writes it; run `vramfit emit`, which writes every copy, and commit them \
         together",
        b.file, b.what, r.file
    )
}

/// Each copy's state line, where there is something to say.
fn copy_lines(r: &EmitReport) -> String {
    let mut s = String::new();
    for b in &r.copies {
        let line = match b {
            b if b.written => format!("{}: written ({})\n", b.file, b.what),
            b if b.stale && r.check => format!("{}: OUT OF DATE: {}\n", b.file, copy_message(r, b)),
            b if b.stale => format!("{}: NOT written (the file was not written either)\n", b.file),
            _ => String::new(),
        };
        s.push_str(&line);
    }
    s
}

impl Report for EmitReport {
    const FORMATS: &'static [crate::report::Format] = {
        use crate::report::Format;
        &[Format::Table, Format::Json, Format::Markdown, Format::Github]
    };

    fn table(&self) -> String {
        let rows = emit_rows(self);
        let mut s = String::new();
        if !rows.is_empty() {
            s.push_str(&grid(EMIT_HEADERS, rows, &[]));
            s.push('\n');
        }
        let unchanged = self.changes.iter().filter(|c| c.change == Change::Unchanged).count();
        s.push_str(&match (self.check, self.changed) {
            (true, false) => format!("{}: up to date ({} lines)\n", self.file, self.changes.len()),
            (true, true) => format!(
                "{}: OUT OF DATE: a fresh emit would change it ({} of {} lines unchanged); run `vramfit emit` and commit it\n",
                self.file,
                unchanged,
                self.changes.len()
            ),
            (false, false) => format!("{}: unchanged ({} lines)\n", self.file, self.changes.len()),
            (false, true) if !self.written => format!(
                "{}: NOT written: {} finding(s) below ({} of {} lines unchanged); fix them, or write anyway with --force\n",
                self.file,
                self.findings.len(),
                unchanged,
                self.changes.len()
            ),
            (false, true) => format!("{}: written ({} of {} lines unchanged)\n", self.file, unchanged, self.changes.len()),
        });
        s.push_str(&copy_lines(self));
        findings_summary(&mut s, &self.findings, "the new file");
        s
    }

    fn markdown(&self) -> Option<String> {
        let mut s = markdown_table(EMIT_HEADERS, &emit_rows(self));
        findings_markdown(&mut s, &self.findings);
        Some(s)
    }

    /// With `--check`, an `::error` on the file when a fresh emit would
    /// change it, naming each changed line; the findings on the new file;
    /// then the summary line.
    fn github(&self) -> Option<String> {
        let mut s = String::new();
        if self.check && self.changed {
            let changed: Vec<String> = emit_rows(self)
                .iter()
                .map(|r| format!("{}: {}, slope {} B/px, base {} MiB", r[0], r[1], r[2], r[3]))
                .collect();
            let msg = format!(
                "a fresh emit would change this file; run `vramfit emit` and commit it\n{}",
                changed.join("\n")
            );
            s.push_str(&super::annotation("error", &self.file, self.changed_at, "vramfit emit --check", &msg));
        }
        for b in self.copies.iter().filter(|b| self.check && b.stale) {
            s.push_str(&super::annotation("error", &b.file, 1, "vramfit emit --check", &copy_message(self, b)));
        }
        s.push_str(&super::verify::findings_annotations(&self.findings));
        s.push_str(&copy_lines(self));
        s.push_str(&match (self.check, self.changed) {
            (true, false) => format!("{}: up to date ({} lines)\n", self.file, self.changes.len()),
            (true, true) => format!("{}: OUT OF DATE\n", self.file),
            (false, changed) => format!("{}: {}\n", self.file, if changed { "changed" } else { "unchanged" }),
        });
        Some(s)
    }
}

impl Report for crate::family::FamilyAddReport {
    fn table(&self) -> String {
        let f = &self.facts;
        let mut s = format!(
            "registered {} (class {}{}{}{}) from {} traced row(s){}\n",
            self.family,
            f.class,
            f.params.map(|p| format!(", {p} weights")).unwrap_or_default(),
            f.attention.map(|(h, d)| format!(", mid-block attention {h}x{d}")).unwrap_or_default(),
            f.video
                .as_ref()
                .map(|v| format!(", video {}x/{}x, {} walk", f.spatial, v.temporal, v.walk.as_str()))
                .unwrap_or_default(),
            self.rows,
            self.config_source.as_deref().map(|c| format!(" of {c}")).unwrap_or_default(),
        );
        s.push_str(&format!("{}: the traces\n{}: [vae.{}] added\n", self.traces, self.policy, self.family));
        s.push_str(&self.emit.table());
        // The example asks a clip of a video family (a one-frame clip lies outside its trace).
        let clip = if f.video.is_some() { " --frames 49" } else { "" };
        s.push_str(&format!(
            "priced by the traced rule until its points are measured: vramfit reserve {} decode 1024x1024{clip} --dtype bf16 --root .\n",
            self.family
        ));
        s
    }
}
