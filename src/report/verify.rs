use super::{grid, markdown_table, Report};
use crate::verify::{Finding, VerifyReport};

fn summary(r: &VerifyReport) -> String {
    format!(
        "verify: {} lines ({} too thin to fit), {} points ({} included), {} pricings: {} finding(s)",
        r.lines,
        r.insufficient,
        r.points,
        r.included,
        r.pricings,
        r.findings.len()
    )
}

/// One GitHub `::error` annotation per finding, on the file to fix.
pub(super) fn findings_annotations(findings: &[Finding]) -> String {
    let mut s = String::new();
    for f in findings {
        let mut msg = String::new();
        if let Some(l) = &f.line {
            msg.push_str(&format!("[{l}] "));
        }
        msg.push_str(&detail(f));
        if !f.points.is_empty() {
            msg.push_str(&format!("\npoints: {}", f.points.join(", ")));
        }
        s.push_str(&super::annotation("error", f.file, f.at.unwrap_or(1), &format!("vramfit {}", f.code), &msg));
    }
    s
}

pub(super) fn detail(f: &Finding) -> String {
    let mut s = String::with_capacity(f.message.len() + f.hint.len() + 64);
    s.push_str(&f.message);
    if let (Some(e), Some(x)) = (&f.expected, &f.found) {
        for part in ["\nexpected: ", e, "\nfound:    ", x] {
            s.push_str(part);
        }
    }
    s.push_str("\n→ ");
    s.push_str(&f.hint);
    s
}

/// Findings grouped by line, one table per line (also used by `fit` and `emit`).
pub(super) fn findings_tables(findings: &[Finding]) -> String {
    let mut s = String::new();
    let mut groups: Vec<(String, Vec<&Finding>)> = Vec::new();
    for f in findings {
        let key = f.line.clone().unwrap_or_else(|| "(whole files)".into());
        match groups.last_mut() {
            Some((k, v)) if *k == key => v.push(f),
            _ => groups.push((key, vec![f])),
        }
    }
    for (key, fs) in groups {
        s.push_str(&format!("{key}\n"));
        let rows =
            fs.iter().map(|f| vec![f.code.to_string(), f.file.to_string(), f.points.join("\n"), detail(f)]).collect();
        s.push_str(&grid(&["code", "file", "points", "finding"], rows, &[]));
        s.push('\n');
    }
    s
}

impl Report for VerifyReport {
    const FORMATS: &'static [crate::report::Format] = {
        use crate::report::Format;
        &[Format::Table, Format::Json, Format::Github, Format::Markdown]
    };

    fn table(&self) -> String {
        let mut s = findings_tables(&self.findings);
        s.push_str(&summary(self));
        s.push('\n');
        s
    }

    fn github(&self) -> Option<String> {
        let mut s = findings_annotations(&self.findings);
        s.push_str(&summary(self));
        s.push('\n');
        Some(s)
    }

    fn markdown(&self) -> Option<String> {
        if self.findings.is_empty() {
            return Some(format!("No findings.\n\n{}\n", summary(self)));
        }
        let rows: Vec<Vec<String>> = self
            .findings
            .iter()
            .map(|f| {
                vec![
                    f.code.to_string(),
                    f.line.clone().unwrap_or_default(),
                    f.points.join(", "),
                    detail(f).replace('\n', "<br>"),
                ]
            })
            .collect();
        let mut s = markdown_table(&["code", "line", "points", "finding"], &rows);
        s.push_str(&format!("\n{}\n", summary(self)));
        Some(s)
    }
}
