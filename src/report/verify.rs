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
        s.push_str(&super::annotation("error", f.file, &format!("vramfit {}", f.code), &msg));
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

/// Below this many findings, their tables are drawn on one thread.
const FEW_FINDINGS: usize = 2_000;

/// Findings grouped by line, one table per line (also used by `fit` and
/// `emit`). A synthetic or first import can report 10⁵ findings: the
/// tables are then drawn on every core, in runs of lines holding about as
/// many findings each, and joined in order (the same bytes as on one).
pub(super) fn findings_tables(findings: &[Finding]) -> String {
    let mut groups: Vec<(String, Vec<&Finding>)> = Vec::new();
    for f in findings {
        let key = f.line.as_deref().unwrap_or("(whole files)");
        match groups.last_mut() {
            Some((k, v)) if *k == key => v.push(f),
            _ => groups.push((key.to_string(), vec![f])),
        }
    }
    let threads = if findings.len() < FEW_FINDINGS { 1 } else { crate::par::cores() };
    let style = super::grid::current_style();
    let runs = crate::par::balanced(&groups, |(_, fs)| fs.len(), threads);
    let drawn =
        crate::par::map(runs, |run| super::with_style(style, || run.iter().map(line_table).collect::<String>()));
    drawn.concat()
}

/// One line's findings: its key, then their table.
fn line_table((key, fs): &(String, Vec<&Finding>)) -> String {
    let rows =
        fs.iter().map(|f| vec![f.code.to_string(), f.file.to_string(), f.points.join("\n"), detail(f)]).collect();
    let mut s = format!("{key}\n");
    s.push_str(&grid(&["code", "file", "points", "finding"], rows, &[]));
    s.push('\n');
    s
}

impl Report for VerifyReport {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Code;
    use crate::report::{with_style, TableStyle};

    /// Many findings over lines of uneven size: drawn on every core, the
    /// tables are the bytes drawn one line at a time on this thread, in
    /// the caller's style (a worker thread starts with the default one).
    #[test]
    fn tables_drawn_in_parts_are_the_tables_drawn_in_line() {
        let mut findings = Vec::new();
        for line in 0..23 {
            for j in 0..(line * 37) % 401 + 1 {
                let f =
                    Finding::new(Code::RatioBound, "fits/policy.toml", format!("point p-{line}-{j} is over"), "fix it")
                        .line(format!("sd/decode/{line}/cudnn/native/any/fp16"))
                        .values("≤ 1.3", format!("1.{j}"));
                findings.push(f);
            }
        }
        findings.push(Finding::new(Code::Coverage, "fits/vae.json", "a whole-file finding", "look"));
        assert!(findings.len() >= FEW_FINDINGS, "{}", findings.len());
        for style in [TableStyle::PLAIN, TableStyle::BOXED, TableStyle { boxed: true, width: Some(80) }] {
            let drawn = with_style(style, || findings_tables(&findings));
            let one_by_one: String = with_style(style, || {
                let mut groups: Vec<(String, Vec<&Finding>)> = Vec::new();
                for f in &findings {
                    let key = f.line.clone().unwrap_or_else(|| "(whole files)".into());
                    match groups.last_mut() {
                        Some((k, v)) if *k == key => v.push(f),
                        _ => groups.push((key, vec![f])),
                    }
                }
                groups.iter().map(line_table).collect()
            });
            assert_eq!(drawn, one_by_one);
            assert_eq!(drawn.contains('│'), style.boxed);
        }
    }
}
