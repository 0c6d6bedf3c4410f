use super::{grid, Report};
use crate::units::mib_up;

fn mib2(bytes: u64) -> String {
    mib_up(bytes, 2)
}
use crate::points::summary::PointList;

impl Report for PointList {
    fn table(&self) -> String {
        let opt = |v: Option<u64>| v.map(mib2).unwrap_or_else(|| "-".into());
        let rows = self
            .points
            .iter()
            .map(|p| {
                vec![
                    p.id.to_string(),
                    p.key().to_string(),
                    match p.frames {
                        1 => format!("{}x{}x{}", p.width, p.height, p.batch),
                        f => format!("{}x{}x{}, {f} frames", p.width, p.height, p.batch),
                    },
                    p.pixels.to_string(),
                    p.context.map_or("-", |c| c.as_str()).to_string(),
                    mib2(p.demand_bytes),
                    opt(p.reserved_bytes),
                    opt(p.allocated_bytes),
                    opt(p.driver_bytes),
                ]
            })
            .collect();
        let mut s = grid(
            &[
                "id",
                "key (vae/op/tile/backend/allocator/os/dtype)",
                "WxHxB",
                "pixels",
                "context",
                "demand MiB",
                "reserved",
                "allocated",
                "driver",
            ],
            rows,
            &[3, 5, 6, 7, 8],
        );
        match &self.line {
            Some(key) => {
                s.push_str(&format!("\n{} points in line {key}, as the fit groups them", self.points.len()));
                let mut contexts = std::collections::BTreeMap::new();
                for p in &self.points {
                    *contexts.entry(p.context.map_or("unsaid", |c| c.as_str()).to_string()).or_insert(0usize) += 1;
                }
                if let Some(mixed) = crate::lines::mixed_contexts(&contexts) {
                    s.push_str(&format!(", taken in more than one context ({mixed})"));
                }
                if !self.excluded.is_empty() {
                    s.push_str(&format!("; excluded by the policy: {}", self.excluded.join(", ")));
                }
                s.push('\n');
            }
            None => s.push_str(&format!("\n{} of {} points\n", self.points.len(), self.total)),
        }
        s
    }
}
