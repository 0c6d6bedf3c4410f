use super::Report;
use crate::plan::Plan;
use crate::units::mib_text as mib;

impl Report for Plan {
    fn table(&self) -> String {
        let n = self.items;
        let mut s = self.verdict.as_str().to_uppercase();
        let tiles = |t: u32| match self.temporal_tile {
            None => format!("{t}-pixel tiles"),
            Some(0) if t == 0 => "untiled, all frames at once".to_string(),
            Some(0) => format!("{t}-pixel tiles over all frames at once"),
            Some(f) if t == 0 => format!("untiled in space, {f}-frame temporal tiles"),
            Some(f) => format!("{t}-pixel × {f}-frame tiles"),
        };
        s.push_str(&match (self.tile, self.group_size, self.groups) {
            (Some(t), _, _) if self.steps.iter().any(|st| st.role == crate::plan::StepRole::Tile) => {
                format!(": {}, one item at a time ({n} item(s))", tiles(t))
            }
            (Some(t), Some(1), Some(k)) if k > 1 => format!(": {}, one item at a time ({n} items)", tiles(t)),
            (Some(t), Some(g), Some(k)) if k > 1 => {
                format!(": {}, {k} groups of up to {g} items ({n} in all)", tiles(t))
            }
            (Some(t), _, _) => format!(": {}, all {n} item(s) at once", tiles(t)),
            (None, Some(1), Some(k)) if k > 1 => format!(": one item at a time ({n} items)"),
            (None, Some(g), Some(k)) if k > 1 => format!(": {k} groups of up to {g} items ({n} in all)"),
            (None, Some(_), Some(_)) => format!(": all {n} item(s) at once"),
            _ => format!(": {n} item(s) on the host"),
        });
        s.push('\n');
        let b = &self.budget;
        let bound = match b.from {
            crate::plan::BudgetFrom::Share => {
                format!("share {} × free {}", b.share, b.free.map(mib).unwrap_or_default())
            }
            crate::plan::BudgetFrom::Cap => {
                format!("cap (below share {} × free {})", b.share, b.free.map(mib).unwrap_or_default())
            }
            crate::plan::BudgetFrom::CapUnknownFree => "cap (free memory unknown)".into(),
        };
        let mut rows: Vec<(&str, String)> =
            vec![("budget", format!("{} ({} B) from {bound}", mib(self.budget_bytes), self.budget_bytes))];
        if let Some(p) = self.per_item_bytes {
            rows.push(("per item", format!("{} B", p)));
        }
        if let Some(p) = self.peak_bytes {
            rows.push(("peak", format!("{} ({} B)", mib(p), p)));
        }
        if !self.boundaries.is_empty() {
            let shown: Vec<String> = self.boundaries.iter().map(|[a, b]| format!("[{a}, {b})")).collect();
            rows.push(("groups", shown.join(" … ")));
        }
        if let Some(sc) = self.subchunk_frames {
            rows.push(("transient", format!("sub-chunks of {sc} frame(s)")));
        }
        for (k, v) in rows {
            s.push_str(&format!("  {k:<10} {v}\n"));
        }
        for r in &self.reasons {
            s.push_str(&format!("  - {r}\n"));
        }
        if !self.steps.is_empty() {
            s.push_str("  priced by:\n");
            for st in &self.steps {
                // What each pricing was for, so no two rows read the same.
                let items = match (st.role, st.batch) {
                    (crate::plan::StepRole::All, 1) => "the item".to_string(),
                    (crate::plan::StepRole::All, b) => format!("all {b} items"),
                    (crate::plan::StepRole::One, _) => "one item".to_string(),
                    (crate::plan::StepRole::Group, b) => format!("a group of {b}"),
                    (crate::plan::StepRole::NextGroup, b) => format!("a group of {b}"),
                    (crate::plan::StepRole::Tile, _) => "one item".to_string(),
                };
                let what = match (st.tile, st.temporal_tile) {
                    (0, None) => items,
                    (t, None) => format!("{items}, tile {t}"),
                    (0, Some(0)) => format!("{items}, all frames"),
                    (t, Some(0)) => format!("{items}, tile {t}, all frames"),
                    (0, Some(f)) => format!("{items}, {f} frames"),
                    (t, Some(f)) => format!("{items}, tile {t}×{f}f"),
                };
                let by = match &st.priced_by {
                    Some(k) if *k != st.line => format!("{} (for {})", k, st.line),
                    _ => st.line.to_string(),
                };
                let extra = if st.extrapolated { ", extrapolated" } else { "" };
                let fits = if st.fits { "fits" } else { "over" };
                s.push_str(&format!(
                    "    {what:<24} {:>10} {fits:<5} {} {by}{extra}\n",
                    mib(st.bytes),
                    st.rule.as_str()
                ));
            }
        }
        for w in &self.warnings {
            s.push_str(&format!("warning: {w}\n"));
        }
        s
    }
}
