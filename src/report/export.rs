use super::{grid, Report};
use crate::export::Export;

const HEADERS: [&str; 5] = ["line", "per_element", "base bytes", "measured px", "caveats"];

impl Report for Export {
    fn table(&self) -> String {
        let rows = self
            .entries
            .iter()
            .map(|e| {
                vec![
                    format!("{}/{}/{}/{}/{}/{}/{}", e.vae, e.op, e.tile, e.conv_backend, e.allocator, e.os, e.dtype),
                    e.per_element.clone(),
                    e.base_bytes.to_string(),
                    e.size_range.map_or_else(|| "-".into(), |[lo, hi]| format!("{lo}–{hi}")),
                    e.caveats.len().to_string(),
                ]
            })
            .collect();
        let mut s = grid(&HEADERS, rows, &[1, 2, 4]);
        s.push_str(&format!(
            "\n{} entries for {} from {} ({}); formula: {}\n",
            self.entries.len(),
            self.host.as_str(),
            self.coefficients,
            self.coefficients_digest,
            self.formula
        ));
        for n in &self.not_exported {
            s.push_str(&format!("not exported: {n}\n"));
        }
        s
    }
}
