use super::{grid, Report};
use crate::points::summary::IngestReport;

impl Report for IngestReport {
    fn table(&self) -> String {
        let files = self
            .files
            .iter()
            .map(|f| vec![f.file.clone(), f.rows.to_string(), f.added.to_string(), f.unchanged.to_string()])
            .collect();
        let lines = self.lines.iter().map(|(k, n)| vec![k.clone(), n.to_string()]).collect();
        let mut s = grid(&["file", "rows", "added", "unchanged"], files, &[1, 2, 3]);
        s.push('\n');
        s.push_str(&grid(&["line key (vae/op/tile/backend/allocator/os/dtype)", "points"], lines, &[1]));
        s.push('\n');
        s.push_str(&headline(self));
        if !self.missing.is_empty() {
            s.push_str(&format!(
                "  {} row(s) not ingested yet: {}\n  run `vramfit ingest` on the same files\n",
                self.missing.len(),
                self.missing.join(", ")
            ));
        }
        if !self.orphans.is_empty() {
            s.push_str(&format!(
                "  {} stored point(s) come from none of these files: {}\n",
                self.orphans.len(),
                self.orphans.join(", ")
            ));
        }
        for n in &self.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        s
    }

    /// An `::error` on the store for each kind of drift (`--check`), a
    /// `::warning` per note, then the one-line summary.
    fn github(&self) -> Option<String> {
        let mut s = String::new();
        let title = "vramfit ingest --check";
        if !self.missing.is_empty() {
            let msg = format!(
                "{} row(s) of these files are not in the store: {}\nrun `vramfit ingest` on the same files and commit the store",
                self.missing.len(),
                self.missing.join(", ")
            );
            s.push_str(&super::annotation("error", &self.store, title, &msg));
        }
        if !self.orphans.is_empty() {
            let msg = format!(
                "{} stored point(s) come from none of these files: {}",
                self.orphans.len(),
                self.orphans.join(", ")
            );
            s.push_str(&super::annotation("error", &self.store, title, &msg));
        }
        for n in &self.notes {
            s.push_str(&super::annotation("warning", &self.store, "vramfit ingest", n));
        }
        s.push_str(&headline(self));
        Some(s)
    }
}

/// The store's state in one line, the last of every form.
fn headline(r: &IngestReport) -> String {
    match (r.check, r.up_to_date) {
        (true, true) => format!("{}: up to date ({} points)\n", r.store, r.points),
        (true, false) => format!("{}: NOT up to date with these files\n", r.store),
        (false, _) => format!(
            "{}: {} points ({} added{})\n",
            r.store,
            r.points,
            r.added,
            if r.written { "" } else { ", nothing written" }
        ),
    }
}
