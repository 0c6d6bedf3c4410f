use super::{grid, Report};
use crate::points::summary::IngestReport;

impl Report for IngestReport {
    const FORMATS: &'static [crate::report::Format] = {
        use crate::report::Format;
        &[Format::Table, Format::Json, Format::Github]
    };

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
                listed(&self.missing)
            ));
        }
        if !self.orphans.is_empty() {
            s.push_str(&format!(
                "  {} stored point(s) come from none of these files: {}\n",
                self.orphans.len(),
                listed(&self.orphans)
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
        // One annotation per row, on the row itself.
        for m in &self.missing {
            let msg =
                format!("row {} is not in the store; run `vramfit ingest` on this file and commit the store", m.id);
            s.push_str(&super::annotation("error", &m.file, m.line, title, &msg));
        }
        for o in &self.orphans {
            let msg = format!(
                "stored point {} comes from none of measurements/raw/*.csv (a hand edit, or its row was removed)",
                o.id
            );
            s.push_str(&super::annotation("error", &o.file, o.line, title, &msg));
        }
        for n in &self.notes {
            s.push_str(&super::annotation("warning", &self.store, 1, "vramfit ingest", n));
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

/// Places as `file:line (id)`, the first 20 and then how many more.
fn listed(places: &[crate::points::summary::Placed]) -> String {
    const SHOWN: usize = 20;
    let mut parts: Vec<String> = places.iter().take(SHOWN).map(ToString::to_string).collect();
    if places.len() > SHOWN {
        parts.push(format!("… and {} more", places.len() - SHOWN));
    }
    parts.join(", ")
}
