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
    /// Ids of the rows new to the store, in input order.
    pub added: Vec<String>,
}

/// Adds `rows` to `stored`, moving each point (nothing is copied). An id
/// that is already stored (or given twice in the input) with different
/// content is an error naming both places and the first field that differs.
pub fn merge(stored: Vec<Point>, rows: Vec<ParsedRow>) -> Result<Merged> {
    let mut points: BTreeMap<String, Point> = stored.into_iter().map(|p| (p.id.clone(), p)).collect();
    // Where an id was first given in the input: an index into `origins`.
    let mut first_seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut origins: Vec<super::csv_input::RowOrigin> = Vec::with_capacity(rows.len());
    let mut fates = Vec::with_capacity(rows.len());
    let mut added = Vec::new();
    for (i, row) in rows.into_iter().enumerate() {
        let p = row.point;
        match points.get(&p.id) {
            Some(existing) if *existing == p => {
                first_seen.entry(p.id.clone()).or_insert(i);
                fates.push(RowFate::Unchanged)
            }
            Some(existing) => {
                let where_ = first_seen
                    .get(&p.id)
                    .map(|j| origins[*j].to_string())
                    .unwrap_or_else(|| "the stored point in measurements/vae.json".to_string());
                bail!(
                    "{}: id: duplicate id '{}' with different content than {where_} ({}); \
                     give the new figure its own id, or fix the one that is wrong",
                    row.origin,
                    p.id,
                    first_difference(existing, &p)
                );
            }
            None => {
                first_seen.insert(p.id.clone(), i);
                added.push(p.id.clone());
                points.insert(p.id.clone(), p);
                fates.push(RowFate::Added);
            }
        }
        origins.push(row.origin);
    }
    Ok(Merged { points, fates, added })
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
