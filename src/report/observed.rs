//! `report --observed`: the observed ops against their answers, the lines
//! they would change, the rows the policy would refuse.

use super::{grid, Report};
use crate::observed::{ObservedReport, Values};

fn shown(v: &Values) -> String {
    match (&v.slope, v.base_mib) {
        (Some(s), Some(b)) => format!("{} {s} B/px + {b} MiB", v.kind),
        _ => v.kind.to_string(),
    }
}

impl Report for ObservedReport {
    fn table(&self) -> String {
        let files: Vec<String> = self.files.iter().map(|f| format!("{} ({} rows)", f.file, f.rows)).collect();
        let mut s = format!(
            "{} observed op(s) from {}, priced by {}: {} covered, {} under-reserved\n\n",
            self.rows,
            files.join(", "),
            self.coefficients,
            self.covered,
            self.under_rows
        );
        let rows = self
            .groups
            .iter()
            .map(|g| {
                vec![
                    g.key.clone(),
                    g.device.clone(),
                    g.context.clone(),
                    g.rows.to_string(),
                    g.covered.to_string(),
                    g.mean_ratio.clone(),
                    format!("{} ({})", g.worst_ratio, g.worst_row),
                ]
            })
            .collect();
        s.push_str(&grid(
            &["key", "device", "context", "ops", "covered", "mean reserved/demand", "worst (row)"],
            rows,
            &[3, 4],
        ));
        if !s.ends_with('\n') {
            s.push('\n');
        }
        if !self.under.is_empty() {
            s.push_str("\nunder-reserved (the op took more than the answer), the worst first:\n");
            for u in &self.under {
                s.push_str(&format!(
                    "  {}  {}: took {} B, {} B reserved ({} of the reservation)\n",
                    u.id, u.key, u.demand_bytes, u.reserved_bytes, u.ratio
                ));
            }
            s.push_str(&more(self.under_rows, self.under.len()));
        }
        if self.changes.is_empty() {
            s.push_str("\nno line would change if these rows were ingested\n");
        } else {
            s.push_str("\nlines the rows would change if ingested (`vramfit ingest` then `vramfit emit`):\n");
            for c in &self.changes {
                let before = c.before.as_ref().map_or("no line".to_string(), shown);
                let also = if c.row_count > c.rows.len() {
                    format!(" and {} more", c.row_count - c.rows.len())
                } else {
                    String::new()
                };
                s.push_str(&format!("  {}: {before} → {}; by {}{also}\n", c.key, shown(&c.after), c.rows.join(", ")));
            }
        }
        if self.stored > 0 {
            s.push_str(&format!(
                "\n{} row(s) are already stored with the same content: ingesting adds nothing\n",
                self.stored
            ));
        }
        if !self.refused.is_empty() {
            s.push_str("\nrows the policy would refuse:\n");
            for r in &self.refused {
                s.push_str(&format!("  {}: {}\n", r.id, r.why));
            }
            s.push_str(&more(self.refused_rows, self.refused.len()));
        }
        s
    }
}

/// The line after a bounded list that says how many rows it left out.
fn more(all: usize, shown: usize) -> String {
    if all > shown {
        format!(
            "  … and {} more (`--format json` gives the counts; the observation files hold every row)\n",
            all - shown
        )
    } else {
        String::new()
    }
}
