//! Merging parsed rows into the store: idempotent, order-free, and strict
//! about an id that comes back with different content.
//!
//! Both sides are sorted by id and walked together, moving each point once
//! (no map of ids, no copies): at 10^6 rows a map keyed by cloned ids was
//! most of `ingest`'s memory.

use super::row::{RowOrigin, Rows};
use super::Point;
use crate::text::Text;
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
    /// Rows given again, with the same content, in this input: where each
    /// repeat is, where its row was first given, and its id, in input order.
    pub repeats: Vec<(RowOrigin, RowOrigin, Text)>,
}

/// Adds `rows` to `stored` (sorted by id, as the store keeps it). An id
/// that is already stored (or given twice in the input) with different
/// content is an error naming both places and the first field that
/// differs; of several such rows, the first in input order is named.
pub fn merge(stored: Vec<Point>, rows: Rows) -> Result<Merged> {
    let Rows { points: mut rows, origins } = rows;
    keep_legacy_derived_ids(&stored, &mut rows);
    // Input positions sorted by (id, position): equal ids sit together, first given first.
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|a, b| rows[*a].id.cmp(&rows[*b].id).then(a.cmp(b)));
    check_conflicts(&stored, &rows, &origins, &order)?;
    let repeats = repeated_rows(&rows, &origins, &order);
    drop(origins);

    let mut fates = vec![RowFate::Unchanged; rows.len()];
    let mut s = 0;
    for (k, &i) in order.iter().enumerate() {
        let id = &rows[i].id;
        let repeat = k > 0 && rows[order[k - 1]].id == *id;
        while s < stored.len() && stored[s].id < *id {
            s += 1;
        }
        let is_stored = stored.get(s).is_some_and(|p| p.id == *id);
        if !repeat && !is_stored {
            fates[i] = RowFate::Added;
        }
    }

    // The rows are put in id order in place and only the new ones kept,
    // in place too; the stored points are then merged in: at 10^6 rows no
    // second list of points is ever allocated.
    let mut fresh = rows;
    permute(&mut fresh, &order);
    let mut keep = order.iter().map(|i| fates[*i] == RowFate::Added);
    fresh.retain(|_| keep.next().unwrap_or(false));
    // The new rows' input positions, in id order (the order `fresh` holds them).
    let new_rows: Vec<usize> = order.iter().copied().filter(|i| fates[*i] == RowFate::Added).collect();
    let new_ids: Vec<Text> = fresh.iter().map(|p| p.id.clone()).collect();
    // The smaller list is moved into the larger; two sorted runs are then
    // merged by one pass of the stable sort.
    let (mut points, smaller) = if stored.len() >= fresh.len() { (stored, fresh) } else { (fresh, stored) };
    if !smaller.is_empty() {
        points.extend(smaller);
        points.sort_by(|a, b| a.id.cmp(&b.id));
    }
    // Where each new row landed, in input order. (Stored and new ids are
    // disjoint, so an id names its point.)
    let mut at_of_row: Vec<(usize, usize)> = Vec::with_capacity(new_ids.len());
    let mut next_new = new_rows.iter().zip(&new_ids).peekable();
    for (at, p) in points.iter().enumerate() {
        if let Some((row, _)) = next_new.next_if(|(_, id)| **id == p.id) {
            at_of_row.push((*row, at));
        }
    }
    at_of_row.sort_unstable();
    let added = at_of_row.into_iter().map(|(_, at)| at).collect();
    Ok(Merged { points, fates, added, repeats })
}

/// A row without an id whose content the store already holds under the id
/// an older vramfit derived for it (`p-` and 16 hex digits) keeps that id,
/// so re-ingesting an old CSV into an old store adds nothing. Only a store
/// that holds such ids pays for the check.
fn keep_legacy_derived_ids(stored: &[Point], rows: &mut [Point]) {
    let legacy: std::collections::HashSet<&str> =
        stored.iter().map(|p| p.id.as_str()).filter(|id| super::row::is_legacy_derived_id(id)).collect();
    if legacy.is_empty() {
        return;
    }
    for p in rows.iter_mut() {
        if p.id == super::row::derived_id(p) {
            let old = super::row::legacy_derived_id(p);
            if legacy.contains(old.as_str()) {
                p.id = old;
            }
        }
    }
}

/// Rows whose id was given earlier in the input with the same content
/// (a differing one is a conflict, refused before this). `order` sorts the
/// positions by (id, position), so a row's first giving leads its run.
fn repeated_rows(rows: &[Point], origins: &[RowOrigin], order: &[usize]) -> Vec<(RowOrigin, RowOrigin, Text)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut k = 0;
    while k < order.len() {
        let first = order[k];
        let mut end = k + 1;
        while end < order.len() && rows[order[end]].id == rows[first].id {
            out.push((order[end], first));
            end += 1;
        }
        k = end;
    }
    out.sort_unstable();
    out.into_iter()
        .map(|(again, first)| (origins[again].clone(), origins[first].clone(), rows[first].id.clone()))
        .collect()
}

/// Puts `v` in the order `order` gives (`v[k]` becomes the old
/// `v[order[k]]`) with one swap per moved element and no second list.
fn permute<T>(v: &mut [T], order: &[usize]) {
    let n = v.len();
    // `pos[j]`: where the element first at `j` is now; `at[p]`: whose element is at `p`.
    let mut pos: Vec<usize> = (0..n).collect();
    let mut at: Vec<usize> = (0..n).collect();
    for (k, &want) in order.iter().enumerate() {
        let p = pos[want];
        if p != k {
            v.swap(k, p);
            let displaced = at[k];
            at[p] = displaced;
            pos[displaced] = p;
            at[k] = want;
            pos[want] = k;
        }
    }
}

/// The first row (in input order) whose id is stored, or given earlier,
/// with other content.
fn check_conflicts(stored: &[Point], rows: &[Point], origins: &[RowOrigin], order: &[usize]) -> Result<()> {
    let mut worst: Option<(usize, Conflict)> = None;
    let mut s = 0;
    let mut k = 0;
    while k < order.len() {
        let first = order[k];
        let id = &rows[first].id;
        let mut end = k + 1;
        while end < order.len() && rows[order[end]].id == *id {
            end += 1;
        }
        while s < stored.len() && stored[s].id < *id {
            s += 1;
        }
        let existing = stored.get(s).filter(|p| p.id == *id);
        // The reference every row of this id must equal: the stored point, else the first row.
        let (reference, from) = match existing {
            Some(p) => (p, Conflict::Stored),
            None => (&rows[first], Conflict::Row(first)),
        };
        for &i in &order[k..end] {
            if rows[i] != *reference && worst.as_ref().is_none_or(|(w, _)| i < *w) {
                // A row that equals the stored point before it was first given: name that row.
                let named = match (&from, order[k..end].iter().find(|j| rows[**j] == *reference)) {
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
            let p = stored.iter().find(|p| p.id == row.id);
            ("the stored point in measurements/vae.json".to_string(), p)
        }
        Conflict::Row(j) => (origins[j].to_string(), Some(&rows[j])),
    };
    bail!(
        "{}: id: duplicate id '{}' with different content than {where_} ({}); \
         give the new figure its own id, or fix the one that is wrong",
        origins[i],
        row.id,
        other.map(|o| first_difference(o, row)).unwrap_or_else(|| "content differs".into())
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

#[cfg(test)]
mod tests {
    use super::permute;

    #[test]
    fn permute_puts_every_element_where_the_order_says() {
        let mut seed: u64 = 0x1234_5678_9ABC_DEF1;
        for n in [0usize, 1, 2, 3, 10, 257] {
            for _ in 0..20 {
                let mut order: Vec<usize> = (0..n).collect();
                for i in (1..n).rev() {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    order.swap(i, (seed % (i as u64 + 1)) as usize);
                }
                let mut v: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
                permute(&mut v, &order);
                let want: Vec<String> = order.iter().map(|i| format!("v{i}")).collect();
                assert_eq!(v, want);
            }
        }
    }
}
