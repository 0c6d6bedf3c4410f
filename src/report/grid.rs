//! The rounded table every human report draws, drawn by hand.
//!
//! A report of 10⁴–10⁵ findings (a synthetic store, a first import of a
//! noisy GPU) is a table of as many rows; the table crate spent a third of
//! `verify`'s time on it at 10⁵ points. This draws the same characters: a
//! test renders generated tables both ways and compares them byte for byte.

use unicode_width::UnicodeWidthStr;

/// A rounded table; the `right` columns are right-aligned numbers. Cells
/// may hold several lines; every column is as wide as its widest line.
pub fn grid(headers: &[&str], rows: Vec<Vec<String>>, right: &[usize]) -> String {
    let columns = headers.len().max(rows.iter().map(Vec::len).max().unwrap_or(0));
    let header: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    let all: Vec<&[String]> = std::iter::once(header.as_slice()).chain(rows.iter().map(Vec::as_slice)).collect();
    let mut widths = vec![0usize; columns];
    for row in &all {
        for (c, cell) in row.iter().enumerate() {
            for line in cell.split('\n') {
                widths[c] = widths[c].max(line.width());
            }
        }
    }
    let mut out = String::with_capacity(all.len() * (widths.iter().sum::<usize>() + 3 * columns + 2) * 2);
    rule(&mut out, &widths, ['╭', '┬', '╮']);
    for (i, row) in all.iter().enumerate() {
        if i == 1 {
            rule(&mut out, &widths, ['├', '┼', '┤']);
        }
        let lines: Vec<Vec<&str>> =
            (0..columns).map(|c| row.get(c).map_or(vec![""], |s| s.split('\n').collect())).collect();
        let height = lines.iter().map(Vec::len).max().unwrap_or(1);
        // A right-aligned cell moves as a block: its lines keep their
        // left edges, and its widest line touches the right border.
        let block: Vec<usize> = lines.iter().map(|c| c.iter().map(|l| l.width()).max().unwrap_or(0)).collect();
        for l in 0..height {
            out.push('│');
            for (c, cell) in lines.iter().enumerate() {
                let text = cell.get(l).copied().unwrap_or("");
                let lead = if right.contains(&c) { widths[c] - block[c] } else { 0 };
                out.push(' ');
                out.extend(std::iter::repeat_n(' ', lead));
                out.push_str(text);
                out.extend(std::iter::repeat_n(' ', widths[c] - lead - text.width()));
                out.push_str(" │");
            }
            out.push('\n');
        }
    }
    // A table of headers alone ends on the header rule, as the table crate
    // drew it before this (so outputs stay byte-identical).
    let last = if all.len() == 1 { ['├', '┼', '┤'] } else { ['╰', '┴', '╯'] };
    rule(&mut out, &widths, last);
    out.pop(); // no line end after the last rule
    out
}

fn rule(out: &mut String, widths: &[usize], [left, cross, end]: [char; 3]) {
    out.push(left);
    for (c, w) in widths.iter().enumerate() {
        if c > 0 {
            out.push(cross);
        }
        out.extend(std::iter::repeat_n('─', w + 2));
    }
    out.push(end);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::grid;
    use tabled::builder::Builder;
    use tabled::settings::object::Columns;
    use tabled::settings::{Alignment, Style};

    /// What the table crate draws for the same table.
    fn by_tabled(headers: &[&str], rows: Vec<Vec<String>>, right: &[usize]) -> String {
        let mut b = Builder::default();
        b.push_record(headers.iter().map(|h| h.to_string()));
        for r in rows {
            b.push_record(r);
        }
        let mut t = b.build();
        t.with(Style::rounded());
        for c in right {
            t.modify(Columns::single(*c), Alignment::right());
        }
        t.to_string()
    }

    #[test]
    fn draws_what_the_table_crate_draws() {
        const PIECES: &[&str] =
            &["a", "sd/decode/0", "1 048 576", "≤ 1.3", "×", "→", "é", "漢", "\t", "", " ", "-", "12", "\n"];
        let mut seed: u64 = 0xC0FF_EE00_1234_5678;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let headers = ["code", "file", "points", "finding"];
        let mut compared = 0;
        for _ in 0..2000 {
            let columns = 1 + next(4);
            let rows: Vec<Vec<String>> = (0..next(6))
                .map(|_| (0..columns).map(|_| (0..next(5)).map(|_| PIECES[next(PIECES.len())]).collect()).collect())
                .collect();
            let right: Vec<usize> = (0..columns).filter(|_| next(3) == 0).collect();
            let h = &headers[..columns];
            assert_eq!(grid(h, rows.clone(), &right), by_tabled(h, rows.clone(), &right), "{rows:?} {right:?}");
            compared += 1;
        }
        assert_eq!(compared, 2000);
    }
}
