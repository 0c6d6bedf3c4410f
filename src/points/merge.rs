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
    // Input positions sorted by (id, position): equal ids sit together,
    // first given first; `again[k]`: the kth in that order repeats the id
    // before it. The rows are then put in that order, in place, so every
    // walk below reads them front to back.
    let (order, again) = order_by_id(&rows);
    permute(&mut rows, &order);
    // One walk over the sorted rows and the stored points: for each run of
    // one id, the stored point of that id, if any.
    let stored_of = stored_of_runs(&stored, &rows, &again);
    check_conflicts(&stored, &rows, &origins, &order, &again, &stored_of)?;
    let repeats = repeated_rows(&rows, &origins, &order, &again);
    drop(origins);

    // A row is added when its id is new to the store and it leads its run.
    let mut fates = vec![RowFate::Unchanged; rows.len()];
    let mut keep = Vec::with_capacity(rows.len());
    for (k, &i) in order.iter().enumerate() {
        let added = !again[k] && stored_of[k].is_none();
        if added {
            fates[i] = RowFate::Added;
        }
        keep.push(added);
    }
    // Only the new ones are kept, in place too: at 10^6 rows no second list
    // of points is ever allocated.
    let mut fresh = rows;
    let mut kept = keep.iter();
    fresh.retain(|_| *kept.next().unwrap_or(&false));
    // The new rows' input positions, in id order (the order `fresh` holds them).
    let new_rows: Vec<usize> = order.iter().zip(&keep).filter(|(_, k)| **k).map(|(i, _)| *i).collect();
    drop((order, again, keep, stored_of));
    // The smaller list is merged into the larger, in place.
    let fresh_is_larger = fresh.len() > stored.len();
    let (larger, smaller) = if fresh_is_larger { (fresh, stored) } else { (stored, fresh) };
    let (points, larger_at, smaller_at) = merge_runs(larger, smaller);
    // Where each new row landed, in input order.
    let fresh_at = if fresh_is_larger { larger_at } else { smaller_at };
    let mut at_of_row: Vec<(usize, usize)> = new_rows.into_iter().zip(fresh_at).collect();
    at_of_row.sort_unstable();
    let added = at_of_row.into_iter().map(|(_, at)| at).collect();
    Ok(Merged { points, fates, added, repeats })
}

/// For the kth of the rows (sorted by id), the position in `stored` of the
/// point with its id, if any: one walk of both sorted lists, or a binary
/// search per stored point where the store is much the smaller (a few
/// hundred points beside 10⁶ rows: no comparison per row).
fn stored_of_runs(stored: &[Point], rows: &[Point], again: &[bool]) -> Vec<Option<usize>> {
    let mut out = vec![None; rows.len()];
    let mut mark = |s: usize, k: usize| {
        // Every row of the run of `k` (its first, and the repeats after it).
        out[k] = Some(s);
        let mut j = k + 1;
        while j < rows.len() && again[j] {
            out[j] = Some(s);
            j += 1;
        }
    };
    if stored.len().saturating_mul(64) < rows.len() {
        for (s, p) in stored.iter().enumerate() {
            let k = rows.partition_point(|r| r.id < p.id);
            if rows.get(k).is_some_and(|r| r.id == p.id) {
                mark(s, k);
            }
        }
    } else {
        let mut s = 0;
        for (k, r) in rows.iter().enumerate() {
            if again[k] {
                continue;
            }
            while s < stored.len() && stored[s].id < r.id {
                s += 1;
            }
            if stored.get(s).is_some_and(|p| p.id == r.id) {
                mark(s, k);
            }
        }
    }
    out
}

/// Two lists sorted by id, with no id in both, as one sorted list, and
/// where each element of each landed. The smaller is merged into the
/// larger from the back, in place: no second list of points and no sort's
/// scratch (a stable sort of 10⁶ points borrowed half their size again).
/// Where the smaller list is much the smaller, each of its points finds its
/// place by a binary search and the points after it move up in one block:
/// no comparison per point of the larger.
fn merge_runs(mut larger: Vec<Point>, mut smaller: Vec<Point>) -> (Vec<Point>, Vec<usize>, Vec<usize>) {
    let (n, m) = (larger.len(), smaller.len());
    let mut larger_at: Vec<usize> = (0..n).collect();
    let mut smaller_at = vec![0; m];
    let Some(filler) = smaller.first().cloned() else { return (larger, larger_at, smaller_at) };
    // The room the smaller list takes, filled with copies of one of its
    // points (shared texts: a copy is cheap), overwritten as the merge goes.
    larger.resize(n + m, filler);
    let (mut i, mut w) = (n, n + m);
    // Fillers move Σ gap ≈ m²/2 times, and m searches cost m log n: both below n.
    let search = m.saturating_mul(m) < n;
    while let Some(next) = smaller.pop() {
        if search {
            // The larger's points above `next` move up by the gap of fillers
            // between `i` and `w`, in one rotation.
            let p = larger[..i].partition_point(|x| x.id < next.id);
            let gap = w - i;
            larger[p..w].rotate_right(gap);
            for (at, slot) in larger_at.iter_mut().enumerate().take(i).skip(p) {
                *slot = at + gap;
            }
            i = p;
            w = p + gap;
        } else {
            while i > 0 && larger[i - 1].id > next.id {
                i -= 1;
                w -= 1;
                larger.swap(i, w);
                larger_at[i] = w;
            }
        }
        w -= 1;
        smaller_at[smaller.len()] = w;
        larger[w] = next;
    }
    (larger, larger_at, smaller_at)
}

/// The bytes of an id a sort key holds inline, after the prefix every id
/// of the input shares.
const KEY_BYTES: usize = 24;

/// Positions of `rows` sorted by (id, position), and for each whether its
/// id is the one before it again. At 10⁶ rows a sort that compared ids
/// through the rows read two scattered allocations per comparison and was
/// a third of an `ingest`: each row's key here holds the first bytes of its
/// id after the prefix all ids share, inline, so most comparisons (and the
/// test for a repeat) read no id at all; the two halves either side of the
/// median are sorted side by side.
fn order_by_id(rows: &[Point]) -> (Vec<usize>, Vec<bool>) {
    let id = |i: usize| rows[i].id.as_bytes();
    let shared = rows.iter().map(|p| p.id.as_bytes()).reduce(|a, b| &a[..common_prefix(a, b)]).map_or(0, <[u8]>::len);
    let mut keys: Vec<([u8; KEY_BYTES], usize)> = (0..rows.len()).map(|i| (key_at(id(i), shared), i)).collect();
    // By the inline bytes alone (no id read): the median in place first,
    // so the halves, sorted side by side, are the whole in order.
    let half = keys.len() / 2;
    if half > 0 {
        keys.select_nth_unstable_by(half, |a, b| a.0.cmp(&b.0));
    }
    let (left, right) = keys.split_at_mut(half);
    crate::par::join(rows.len() >= 100_000, || left.sort_unstable(), || right.sort_unstable());
    // Then each run of equal inline bytes by the next bytes of its ids, and
    // so on (a multikey sort: each id is read once a round, never per
    // comparison); a run whose ids have no bytes left is one id, by position.
    let mut runs = vec![(0, keys.len(), shared)];
    while let Some((a, b, at)) = runs.pop() {
        let mut start = a;
        for k in a + 1..=b {
            if k < b && keys[k].0 == keys[start].0 {
                continue;
            }
            if k - start > 1 {
                let next = at + KEY_BYTES;
                let run = &mut keys[start..k];
                if run.iter().all(|(_, i)| id(*i).len() <= next) {
                    run.sort_unstable_by_key(|(_, i)| *i);
                } else {
                    for e in run.iter_mut() {
                        e.0 = key_at(id(e.1), next);
                    }
                    run.sort_unstable();
                    runs.push((start, k, next));
                }
            }
            start = k;
        }
    }
    let again = (0..keys.len()).map(|k| k > 0 && id(keys[k].1) == id(keys[k - 1].1)).collect();
    (keys.into_iter().map(|(_, i)| i).collect(), again)
}

/// The `KEY_BYTES` bytes of an id from `at`, zeros past its end (no id
/// holds a zero byte, so a shorter id sorts first, as it does whole).
fn key_at(id: &[u8], at: usize) -> [u8; KEY_BYTES] {
    let rest = id.get(at..).unwrap_or_default();
    let n = rest.len().min(KEY_BYTES);
    let mut k = [0u8; KEY_BYTES];
    k[..n].copy_from_slice(&rest[..n]);
    k
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
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
/// (a differing one is a conflict, refused before this). `rows` are sorted
/// by (id, position) and `order[k]` is the input position of the kth, so a
/// row's first giving leads its run.
fn repeated_rows(
    rows: &[Point],
    origins: &[RowOrigin],
    order: &[usize],
    again: &[bool],
) -> Vec<(RowOrigin, RowOrigin, Text)> {
    let mut out: Vec<(usize, usize, usize)> = Vec::new();
    let mut first = 0;
    for k in 0..rows.len() {
        if again[k] {
            out.push((order[k], order[first], first));
        } else {
            first = k;
        }
    }
    out.sort_unstable();
    out.into_iter()
        .map(|(again, first, k)| (origins[again].clone(), origins[first].clone(), rows[k].id.clone()))
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
/// with other content. `rows` are sorted, `order[k]` the input position of
/// the kth, `stored_of[k]` the stored point of its id.
fn check_conflicts(
    stored: &[Point],
    rows: &[Point],
    origins: &[RowOrigin],
    order: &[usize],
    again: &[bool],
    stored_of: &[Option<usize>],
) -> Result<()> {
    // (input position, sorted position) of the worst so far, and what it differs from.
    let mut worst: Option<(usize, usize, Conflict)> = None;
    let mut k = 0;
    while k < rows.len() {
        let mut end = k + 1;
        while end < rows.len() && again[end] {
            end += 1;
        }
        // The reference every row of this id must equal: the stored point, else the first row.
        let (reference, from) = match stored_of[k] {
            Some(s) => (&stored[s], Conflict::Stored),
            None => (&rows[k], Conflict::Row(k)),
        };
        for j in k..end {
            // A row is its own reference: no comparison (a whole point's, at 10⁶ rows).
            let differs = !std::ptr::eq(&rows[j], reference) && rows[j] != *reference;
            if differs && worst.as_ref().is_none_or(|(w, _, _)| order[j] < *w) {
                // A row that equals the stored point before it was first given: name that row.
                let named = match (&from, (k..end).find(|m| rows[*m] == *reference)) {
                    (Conflict::Stored, Some(m)) if order[m] < order[j] => Conflict::Row(m),
                    _ => from.clone(),
                };
                worst = Some((order[j], j, named));
            }
        }
        k = end;
    }
    let Some((i, j, against)) = worst else { return Ok(()) };
    let row = &rows[j];
    let (where_, other) = match against {
        Conflict::Stored => {
            let p = stored.iter().find(|p| p.id == row.id);
            ("the stored point in measurements/vae.json".to_string(), p)
        }
        Conflict::Row(m) => (origins[order[m]].to_string(), Some(&rows[m])),
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
