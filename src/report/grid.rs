//! The rounded table every human report draws, drawn by hand.
//!
//! A report of 10⁴–10⁵ findings (a synthetic store, a first import of a
//! noisy GPU) is a table of as many rows; the table crate spent a third of
//! `verify`'s time on it at 10⁵ points. This draws the same characters: a
//! test renders generated tables both ways and compares them byte for byte.

use std::cell::Cell;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// How tables are drawn: the rounded box on a terminal, plain columns
/// elsewhere (a pipe or a file: no box characters to strip), and the width
/// to fit when the terminal's is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableStyle {
    pub boxed: bool,
    /// Columns available; a wider table wraps its widest cells.
    pub width: Option<usize>,
}

impl TableStyle {
    /// The box, at its natural width: what the library draws unless a
    /// caller says otherwise.
    pub const BOXED: TableStyle = TableStyle { boxed: true, width: None };
    /// Plain columns, at their natural width.
    pub const PLAIN: TableStyle = TableStyle { boxed: false, width: None };
}

thread_local! {
    static STYLE: Cell<TableStyle> = const { Cell::new(TableStyle::BOXED) };
}

/// Runs `f` with the tables it draws on this thread in `style` (the CLI
/// decides it once, from the terminal). The style is restored after.
pub fn with_style<R>(style: TableStyle, f: impl FnOnce() -> R) -> R {
    let before = STYLE.replace(style);
    let result = f();
    STYLE.set(before);
    result
}

/// A table in the current style (see [`with_style`]); the `right` columns
/// are right-aligned numbers. Cells may hold several lines; every column is
/// as wide as its widest line, unless the style's width asks for less.
pub fn grid(headers: &[&str], rows: Vec<Vec<String>>, right: &[usize]) -> String {
    let style = STYLE.get();
    let columns = headers.len().max(rows.iter().map(Vec::len).max().unwrap_or(0));
    let header: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    let mut widths = vec![0usize; columns];
    for row in std::iter::once(&header).chain(rows.iter()) {
        for (c, cell) in row.iter().enumerate() {
            for line in cell.split('\n') {
                widths[c] = widths[c].max(cols(line));
            }
        }
    }
    let frame = if style.boxed { 3 * columns + 1 } else { 2 * columns.saturating_sub(1) };
    let (header, rows) = match style.width {
        Some(total) if widths.iter().sum::<usize>() + frame > total => {
            widths = narrow(&widths, total.saturating_sub(frame));
            let w = &widths;
            let wrap_row = |r: Vec<String>| -> Vec<String> {
                r.into_iter().enumerate().map(|(c, cell)| wrap(&cell, w[c])).collect()
            };
            (wrap_row(header), rows.into_iter().map(wrap_row).collect())
        }
        _ => (header, rows),
    };
    if style.boxed {
        boxed(&header, &rows, &widths, right)
    } else {
        plain(&header, &rows, &widths, right)
    }
}

/// Below this many columns a cell is not narrowed (a wrapped number or a
/// ten-letter word is still read at a glance).
const NARROWEST: usize = 10;

/// Column widths that fit `room`: the widest column gives up a character
/// at a time, none below [`NARROWEST`] (a table that cannot fit stays as
/// narrow as that, and the terminal wraps the rest).
fn narrow(natural: &[usize], room: usize) -> Vec<usize> {
    let floor: Vec<usize> = natural.iter().map(|w| (*w).min(NARROWEST)).collect();
    let mut widths = natural.to_vec();
    while widths.iter().sum::<usize>() > room {
        let Some(c) = (0..widths.len()).filter(|c| widths[*c] > floor[*c]).max_by_key(|c| (widths[*c], usize::MAX - c))
        else {
            break;
        };
        widths[c] -= 1;
    }
    widths
}

/// A cell's lines wrapped to `width`: at spaces, and inside a longer word
/// (an id, a line key) after its last `/`, `-` or `_` that fits, else at
/// the width.
fn wrap(cell: &str, width: usize) -> String {
    let width = width.max(1);
    let mut out: Vec<String> = Vec::new();
    for line in cell.split('\n') {
        if line.width() <= width {
            out.push(line.to_string());
            continue;
        }
        let mut current = String::new();
        for word in line.split(' ') {
            let sep = usize::from(!current.is_empty());
            if current.width() + sep + word.width() <= width {
                if sep == 1 {
                    current.push(' ');
                }
                current.push_str(word);
                continue;
            }
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            let mut rest = word;
            while rest.width() > width {
                let (piece, after) = split_word(rest, width);
                out.push(piece.to_string());
                rest = after;
            }
            current.push_str(rest);
        }
        out.push(current);
    }
    out.join("\n")
}

/// The longest head of `word` that fits `width`, ending after a `/`, `-`
/// or `_` where one fits (else cut at the width; at least one character).
fn split_word(word: &str, width: usize) -> (&str, &str) {
    let mut fits = 0;
    let mut used = 0;
    let mut at_separator = None;
    for (i, ch) in word.char_indices() {
        used += ch.width().unwrap_or(0);
        if used > width && fits > 0 {
            break;
        }
        fits = i + ch.len_utf8();
        if matches!(ch, '/' | '-' | '_') {
            at_separator = Some(fits);
        }
    }
    let cut = at_separator.filter(|s| *s < word.len()).unwrap_or(fits);
    word.split_at(cut)
}

/// Columns a line takes: its length for printable ASCII (nearly every
/// cell, and tables of 10⁵ findings measure half a million of them), else
/// its Unicode width.
fn cols(line: &str) -> usize {
    if line.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        line.len()
    } else {
        line.width()
    }
}

/// Plain columns, two spaces apart, the header first; no trailing spaces.
fn plain(header: &[String], rows: &[Vec<String>], widths: &[usize], right: &[usize]) -> String {
    let mut out = String::with_capacity((rows.len() + 1) * (widths.iter().sum::<usize>() + 2 * widths.len()));
    let mut cells = Cells::new(widths.len());
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        cells.split(row, right);
        for l in 0..cells.height() {
            let start = out.len();
            for (c, width) in widths.iter().enumerate() {
                let text = cells.line(c, l);
                if c > 0 {
                    out.push_str("  ");
                }
                let lead = if right.contains(&c) { width - cells.block(c).min(*width) } else { 0 };
                pad(&mut out, lead);
                out.push_str(text);
                // The last column's padding would be trimmed at once.
                if c + 1 < widths.len() {
                    pad(&mut out, width.saturating_sub(lead + cols(text)));
                }
            }
            let kept = out[start..].trim_end().len();
            out.truncate(start + kept);
            out.push('\n');
        }
    }
    out.pop();
    out
}

/// The rounded box.
fn boxed(header: &[String], rows: &[Vec<String>], widths: &[usize], right: &[usize]) -> String {
    let columns = widths.len();
    let all: Vec<&[String]> = std::iter::once(header).chain(rows.iter().map(Vec::as_slice)).collect();
    let mut out = String::with_capacity(all.len() * (widths.iter().sum::<usize>() + 3 * columns + 2) * 2);
    let mut cells = Cells::new(columns);
    rule(&mut out, widths, ['╭', '┬', '╮']);
    for (i, row) in all.iter().enumerate() {
        if i == 1 {
            rule(&mut out, widths, ['├', '┼', '┤']);
        }
        cells.split(row, right);
        for l in 0..cells.height() {
            out.push('│');
            for (c, width) in widths.iter().enumerate() {
                let text = cells.line(c, l);
                // A right-aligned cell moves as a block: its lines keep their
                // left edges, and its widest line touches the right border.
                let lead = if right.contains(&c) { width - cells.block(c) } else { 0 };
                out.push(' ');
                pad(&mut out, lead);
                out.push_str(text);
                pad(&mut out, width - lead - cols(text));
                out.push_str(" │");
            }
            out.push('\n');
        }
    }
    // A table of headers alone ends on the header rule, as the table crate
    // drew it before this (so outputs stay byte-identical).
    let last = if all.len() == 1 { ['├', '┼', '┤'] } else { ['╰', '┴', '╯'] };
    rule(&mut out, widths, last);
    out.pop(); // no line end after the last rule
    out
}

/// One row's cells split into their lines, in lists kept from row to row
/// (a table of 10⁵ findings allocated two lists a row before).
struct Cells<'a> {
    lines: Vec<Vec<&'a str>>,
    /// Each right-aligned cell's widest line.
    blocks: Vec<usize>,
}

impl<'a> Cells<'a> {
    fn new(columns: usize) -> Cells<'a> {
        Cells { lines: vec![Vec::new(); columns], blocks: vec![0; columns] }
    }

    /// Splits `row`; a missing cell is one empty line. The widest line
    /// is measured in the `right` columns only (no other needs it).
    fn split(&mut self, row: &'a [String], right: &[usize]) {
        for (c, (lines, block)) in self.lines.iter_mut().zip(&mut self.blocks).enumerate() {
            lines.clear();
            match row.get(c) {
                Some(cell) => lines.extend(cell.split('\n')),
                None => lines.push(""),
            }
            if right.contains(&c) {
                *block = lines.iter().map(|l| cols(l)).max().unwrap_or(0);
            }
        }
    }

    /// Lines in the tallest cell.
    fn height(&self) -> usize {
        self.lines.iter().map(Vec::len).max().unwrap_or(1)
    }

    /// Line `l` of cell `c` (empty below the cell's last line).
    fn line(&self, c: usize, l: usize) -> &'a str {
        self.lines[c].get(l).copied().unwrap_or("")
    }

    fn block(&self, c: usize) -> usize {
        self.blocks[c]
    }
}

/// Appends `n` spaces, a slice at a time.
fn pad(out: &mut String, mut n: usize) {
    const SPACES: &str = "                                                                ";
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
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

    /// A deterministic pick below `n` (xorshift), so generated tables are the same on every run.
    fn picker(mut seed: u64) -> impl FnMut(usize) -> usize {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        }
    }

    #[test]
    fn plain_tables_have_no_box_and_keep_their_columns() {
        let rows = vec![vec!["sd/decode".to_string(), "12".into()], vec!["a\nb".into(), "1 048 576".into()]];
        let t = super::with_style(super::TableStyle::PLAIN, || grid(&["key", "px"], rows, &[1]));
        assert_eq!(t, "key               px\nsd/decode         12\na          1 048 576\nb");
        assert!(!t.contains(['│', '─', '╭']));
    }

    #[test]
    fn a_table_wider_than_the_terminal_wraps_and_loses_nothing() {
        let mut next = picker(0x5EED_1234_ABCD_0001);
        const WORDS: &[&str] =
            &["sd/decode/0/cudnn/native/any/fp16", "i7785061-flux1-decode", "over", "1.0738", "漢字", "x"];
        for _ in 0..300 {
            let columns = 1 + next(6);
            let rows: Vec<Vec<String>> = (0..1 + next(5))
                .map(|_| {
                    (0..columns)
                        .map(|_| (0..1 + next(4)).map(|_| WORDS[next(WORDS.len())]).collect::<Vec<_>>().join(" "))
                        .collect()
                })
                .collect();
            let headers: Vec<&str> = ["line key", "kind", "points", "max ratio", "support", "note"][..columns].to_vec();
            for boxed in [true, false] {
                let width = 20 + next(100);
                let style = super::TableStyle { boxed, width: Some(width) };
                let t = super::with_style(style, || grid(&headers, rows.clone(), &[]));
                // Every column at its floor is the narrowest the table gets.
                let floor: usize = (0..columns)
                    .map(|c| {
                        let natural = std::iter::once(headers[c].to_string())
                            .chain(rows.iter().map(|r| r[c].clone()))
                            .map(|s| unicode_width::UnicodeWidthStr::width(s.as_str()))
                            .max()
                            .unwrap();
                        natural.min(10)
                    })
                    .sum::<usize>()
                    + if boxed { 3 * columns + 1 } else { 2 * (columns - 1) };
                for line in t.lines() {
                    let w = unicode_width::UnicodeWidthStr::width(line);
                    assert!(w <= width.max(floor), "{w} > {width} (floor {floor}):\n{t}");
                }
                // Nothing is lost: every cell's characters are still there, in order.
                let squash = |s: &str| {
                    s.chars().filter(|c| !c.is_whitespace() && !"│─╭╮╰╯├┤┬┴┼".contains(*c)).collect::<String>()
                };
                let all: String = headers.iter().map(|h| h.to_string()).chain(rows.iter().flatten().cloned()).collect();
                let mut shown = squash(&t);
                for ch in squash(&all).chars() {
                    let at = shown.find(ch).unwrap_or_else(|| panic!("{ch} lost:\n{t}"));
                    shown.remove(at);
                }
            }
        }
    }

    #[test]
    fn draws_what_the_table_crate_draws() {
        const PIECES: &[&str] =
            &["a", "sd/decode/0", "1 048 576", "≤ 1.3", "×", "→", "é", "漢", "\t", "", " ", "-", "12", "\n"];
        let mut next = picker(0xC0FF_EE00_1234_5678);
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
