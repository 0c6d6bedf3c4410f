//! Merging parsed rows into the store: idempotent, order-free, and strict
//! about an id that comes back with different content.
//!
//! Both sides are sorted by id and walked together, moving each point once
//! (no map of ids, no copies): at 10^6 rows a map keyed by cloned ids was
//! most of `ingest`'s memory.

use super::row::ParsedRow;
use super::Point;
use anyhow::{bail, Result};

/// What happened to one input row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFate {
    /// New to the store.
    Added,
    /// Already stored (or given earlier in the input) with identical content.
    Unchanged,
}

/// The merged store and each row's fate, in input order.
pub struct Merged {
    /// Every point, sorted by id.
    pub points: Vec<Point>,
    pub fates: Vec<RowFate>,
    /// Positions in `points` of the points new to the store, in input order.
    pub added: Vec<usize>,
}

/// Adds `rows` to `stored` (sorted by id, as the store keeps it). An id
/// that is already stored (or given twice in the input) with different
/// content is an error naming both places and the first field that
/// differs; of several such rows, the first in input order is named.
pub fn merge(stored: Vec<Point>, rows: Vec<ParsedRow>) -> Result<Merged> {
    // Input positions sorted by (id, position): equal ids sit together, first given first.
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|a, b| rows[*a].point.id.cmp(&rows[*b].point.id).then(a.cmp(b)));
    check_conflicts(&stored, &rows, &order)?;

    let mut fates = vec![RowFate::Unchanged; rows.len()];
    let mut new_rows: Vec<usize> = Vec::new();
    let mut s = 0;
    for (k, &i) in order.iter().enumerate() {
        let id = &rows[i].point.id;
        let repeat = k > 0 && rows[order[k - 1]].point.id == *id;
        while s < stored.len() && stored[s].id < *id {
            s += 1;
        }
        let is_stored = stored.get(s).is_some_and(|p| p.id == *id);
        if !repeat && !is_stored {
            fates[i] = RowFate::Added;
            new_rows.push(i);
        }
    }

    // Move the new points out of the rows (in id order, as `new_rows` is)
    // and merge them into the stored ones: each point is moved once.
    let mut slots: Vec<Option<Point>> = rows.into_iter().map(|r| Some(r.point)).collect();
    let mut points = Vec::with_capacity(stored.len() + new_rows.len());
    let mut at_of_row: Vec<(usize, usize)> = Vec::with_capacity(new_rows.len());
    let mut stored = stored.into_iter().peekable();
    let mut fresh = new_rows.iter().filter_map(|i| slots[*i].take().map(|p| (*i, p))).peekable();
    loop {
        let take_stored = match (stored.peek(), fresh.peek()) {
            (Some(a), Some((_, b))) => a.id < b.id,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if take_stored {
            points.extend(stored.next());
        } else if let Some((row, p)) = fresh.next() {
            at_of_row.push((row, points.len()));
            points.push(p);
        }
    }
    at_of_row.sort_unstable();
    let added = at_of_row.into_iter().map(|(_, at)| at).collect();
    Ok(Merged { points, fates, added })
}

/// The first row (in input order) whose id is stored, or given earlier,
/// with other content.
fn check_conflicts(stored: &[Point], rows: &[ParsedRow], order: &[usize]) -> Result<()> {
    let mut worst: Option<(usize, Conflict)> = None;
    let mut s = 0;
    let mut k = 0;
    while k < order.len() {
        let first = order[k];
        let id = &rows[first].point.id;
        let mut end = k + 1;
        while end < order.len() && rows[order[end]].point.id == *id {
            end += 1;
        }
        while s < stored.len() && stored[s].id < *id {
            s += 1;
        }
        let existing = stored.get(s).filter(|p| p.id == *id);
        // The reference every row of this id must equal: the stored point, else the first row.
        let (reference, from) = match existing {
            Some(p) => (p, Conflict::Stored),
            None => (&rows[first].point, Conflict::Row(first)),
        };
        for &i in &order[k..end] {
            if rows[i].point != *reference && worst.as_ref().is_none_or(|(w, _)| i < *w) {
                // A row that equals the stored point before it was first given: name that row.
                let named = match (&from, order[k..end].iter().find(|j| rows[**j].point == *reference)) {
                    (Conflict::Stored, Some(j)) if *j < i => Conflict::Row(*j),
                    _ => from.clone(),
                };
                worst = Some((i, named));
            }
        }
        k = end;
    }
    let Some((i, against)) = worst else { return Ok(()) };
    let row = &rows[i];
    let (where_, other) = match against {
        Conflict::Stored => {
            let p = stored.iter().find(|p| p.id == row.point.id);
            ("the stored point in measurements/vae.json".to_string(), p)
        }
        Conflict::Row(j) => (rows[j].origin.to_string(), Some(&rows[j].point)),
    };
    bail!(
        "{}: id: duplicate id '{}' with different content than {where_} ({}); \
         give the new figure its own id, or fix the one that is wrong",
        row.origin,
        row.point.id,
        other.map(|o| first_difference(o, &row.point)).unwrap_or_else(|| "content differs".into())
    )
}

#[derive(Clone)]
enum Conflict {
    Stored,
    Row(usize),
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
