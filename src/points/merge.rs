//! Merging parsed rows into the store: idempotent, order-free, and strict
//! about an id that comes back with different content.

use super::csv_input::ParsedRow;
use super::Point;
use anyhow::{bail, Result};
use std::collections::BTreeMap;

/// What happened to one input row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFate {
    /// New to the store.
    Added,
    /// Already stored with identical content.
    Unchanged,
}

/// The merged store and each row's fate, in input order.
pub struct Merged {
    pub points: BTreeMap<String, Point>,
    pub fates: Vec<RowFate>,
}

/// Adds `rows` to `stored`. An id that is already stored (or given twice in
/// the input) with different content is an error naming both places and the
/// first field that differs.
pub fn merge(stored: &[Point], rows: &[ParsedRow]) -> Result<Merged> {
    let mut points: BTreeMap<String, Point> = stored.iter().map(|p| (p.id.clone(), p.clone())).collect();
    let mut first_seen: BTreeMap<String, String> = BTreeMap::new();
    let mut fates = Vec::with_capacity(rows.len());
    for row in rows {
        let p = &row.point;
        match points.get(&p.id) {
            Some(existing) if existing == p => fates.push(RowFate::Unchanged),
            Some(existing) => {
                let where_ = first_seen
                    .get(&p.id)
                    .cloned()
                    .unwrap_or_else(|| "the stored point in measurements/vae.json".to_string());
                bail!(
                    "{}: id: duplicate id '{}' with different content than {where_} ({}); \
                     give the new figure its own id, or fix the one that is wrong",
                    row.origin,
                    p.id,
                    first_difference(existing, p)
                );
            }
            None => {
                points.insert(p.id.clone(), p.clone());
                fates.push(RowFate::Added);
            }
        }
        first_seen.entry(p.id.clone()).or_insert_with(|| row.origin.to_string());
    }
    Ok(Merged { points, fates })
}

fn first_difference(a: &Point, b: &Point) -> String {
    let (Ok(serde_json::Value::Object(ja)), Ok(serde_json::Value::Object(jb))) =
        (serde_json::to_value(a), serde_json::to_value(b))
    else {
        return "content differs".into();
    };
    for (k, va) in &ja {
        let vb = jb.get(k).unwrap_or(&serde_json::Value::Null);
        if va != vb {
            return format!("{k}: {va} vs {vb}");
        }
    }
    "content differs".into()
}
