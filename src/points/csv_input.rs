//! The measurement CSV: physical lines, quoted fields and the header,
//! read into rows that [`row_to_point`] turns into points.

use super::row::{
    demand_column_names, row_to_point, Col, Interners, Row, RowOrigin, Rows, DEMAND_COLUMNS, REQUIRED_COLUMNS,
};
use crate::places::InputError;
use crate::progress::{Progress, Silent, Unit};
use crate::registry::Registry;
use crate::text::Text;
use anyhow::{bail, Result};
use std::io::Read;

/// Reads one measurement CSV held in memory (see [`read_csv`]).
pub fn parse_csv(bytes: &[u8], file: &str, registry: &Registry) -> Result<Rows> {
    read_csv(&mut &*bytes, bytes.len() as u64, file, registry, &Silent)
}

/// Bytes of the file taken at a time. The file is never held whole (at
/// 10^6 rows it was 142 MB beside the points): a chunk is parsed, in parts
/// on every core, while the next one is read.
const CHUNK: usize = 16 << 20;

/// The longest line a CSV may hold: a row of real fields is a few hundred
/// bytes; a file with no line end (`/dev/zero`) is refused here, with
/// memory bounded, instead of being read whole.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The largest CSV read: 10^6 real rows are about 300 MiB.
pub const MAX_INPUT_BYTES: u64 = 4 << 30;

/// Reads one measurement CSV as a stream. A UTF-8 BOM and CRLF (or
/// CR-only) line ends are accepted; an empty file (no header) is an error,
/// a header-only file has no rows. Every message counts physical lines of
/// the file, blank ones included, so `file:N` is the line an editor shows
/// as N, and the first error in file order is the one reported. `len`
/// (the file's length, 0 when unknown) only sizes the lists up front; the
/// bytes read are reported to `progress`.
pub fn read_csv(
    r: &mut (dyn Read + Send),
    len: u64,
    file: &str,
    registry: &Registry,
    progress: &dyn Progress,
) -> Result<Rows> {
    read_csv_keeping(r, len, file, registry, Keep::All, progress)
}

/// What of each row a reader keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The whole point (what `ingest` stores).
    All,
    /// The point without its metadata, never built (what `report
    /// --observed` prices and fits: a host's 10⁶ observed rows carry ten
    /// columns it never shows). Each row is still checked whole, so a row
    /// `ingest` refuses is refused.
    Fit,
}

/// [`read_csv`], keeping what `keep` says.
pub fn read_csv_keeping(
    r: &mut (dyn Read + Send),
    len: u64,
    file: &str,
    registry: &Registry,
    keep: Keep,
    progress: &dyn Progress,
) -> Result<Rows> {
    progress.start(file, len, Unit::Bytes);
    let rows = read_csv_in_chunks(r, len, file, registry, CHUNK, keep, progress);
    progress.finish();
    rows
}

/// [`read_csv`] with chunks of `chunk` bytes (the tests cut small files
/// at every kind of place).
#[doc(hidden)]
pub fn read_csv_in_chunks(
    r: &mut (dyn Read + Send),
    len: u64,
    file: &str,
    registry: &Registry,
    chunk: usize,
    keep: Keep,
    progress: &dyn Progress,
) -> Result<Rows> {
    let mut input = Input { r, file, at_end: false, chunk: chunk.max(1), read: 0 };
    let mut buf = Vec::new();
    input.fill_to(&mut buf, BOM.len().max(input.chunk))?;
    if buf.starts_with(BOM) {
        buf.drain(..BOM.len());
        progress.advance(BOM.len() as u64);
    }
    // `line` numbers the first line in `buf`; the header is the first
    // line with text.
    let mut line = 1;
    let mut consumed = 0u64;
    let header = loop {
        let cut = input.cut(&mut buf, line)?;
        let found = physical_lines(&buf[..cut], line).find(|(_, l, _)| !blank(l));
        if let Some((n, bytes, after)) = found {
            let names: Vec<String> = split_fields(line_text(bytes, file, n)?, file, n, None)?
                .into_iter()
                .map(|s| s.trim().to_string())
                .collect();
            check_header(&names, file, n)?;
            consumed += (cut - after) as u64;
            progress.advance((cut - after) as u64);
            buf.drain(..cut - after);
            line = n + 1;
            break Header::new(names);
        }
        if input.at_end {
            bail!("{file}:1: empty file: expected a header row naming the columns");
        }
        line += count_lines(&buf[..cut]);
        consumed += cut as u64;
        progress.advance(cut as u64);
        buf.drain(..cut);
        input.fill(&mut buf)?;
    };
    let shared_file = Text::from(file);
    let mut rows = Rows::default();
    // Each part's rows are parsed into a list kept from chunk to chunk:
    // fresh lists per chunk faulted their pages in again every time. Its
    // interners are kept too, so a value rows repeat across chunks (a
    // host's reservation for a size it decodes again) is one allocation.
    let mut spare: Vec<(Rows, Interners)> = Vec::new();
    loop {
        let cut = input.cut(&mut buf, line)?;
        let rest = buf.split_off(cut);
        let this = std::mem::replace(&mut buf, rest);
        let last = input.at_end;
        // This chunk is parsed while the next one is read.
        let (read, (parts, next_line)) = crate::par::join(
            !last,
            || input.fill(&mut buf),
            || parse_chunk(&this, line, &header, &shared_file, file, registry, keep, std::mem::take(&mut spare)),
        );
        consumed += this.len() as u64;
        progress.advance(this.len() as u64);
        // The first error in file order; then the chunk's rows, room made
        // once for all of them (at the rate of the whole chunk).
        let mut checked = Vec::with_capacity(parts.len());
        for (part, texts, parsed) in parts {
            parsed?;
            checked.push((part, texts));
        }
        let more = checked.iter().map(|(r, _)| r.len()).sum();
        reserve_for(&mut rows, more, this.len(), len.saturating_sub(consumed));
        for (mut part, texts) in checked {
            rows.append(&mut part);
            spare.push((part, texts));
        }
        read?;
        line = next_line;
        if last {
            return Ok(rows);
        }
    }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The rows of one chunk, in parts of about one per core, in file order:
/// each part's rows go into one of the `spare` lists (or a new one). Also
/// the number of the line after the chunk.
// The chunk's place and the reader's shared state: one call site, no struct worth naming.
#[allow(clippy::too_many_arguments)]
fn parse_chunk(
    chunk: &[u8],
    first: u64,
    header: &Header,
    shared_file: &Text,
    file: &str,
    registry: &Registry,
    keep: Keep,
    spare: Vec<(Rows, Interners)>,
) -> (Vec<(Rows, Interners, Result<()>)>, u64) {
    let mut spare = spare.into_iter();
    let (parts, next_line) = split_at_lines(chunk, first);
    let jobs: Vec<_> = parts
        .into_iter()
        .map(|p| (p, spare.next().unwrap_or_else(|| (Rows::default(), Interners::keeping_metadata(keep == Keep::All)))))
        .collect();
    let parsed = crate::par::map(jobs, |((part, first), (mut rows, mut texts))| {
        let parsed = read_rows(part, first, header, shared_file, file, registry, &mut texts, &mut rows);
        (rows, texts, parsed)
    });
    (parsed, next_line)
}

/// Makes room for a chunk's `more` rows when the list lacks it: room for
/// the rest of the file too, at this chunk's rate of rows per byte (`rest`:
/// the bytes still unread), so the later rows are appended without copying
/// the list; an estimate that falls short at least doubles the room.
fn reserve_for(rows: &mut Rows, more: usize, chunk_bytes: usize, rest: u64) {
    if rows.points.capacity() - rows.len() >= more {
        return;
    }
    let ahead = u128::from(rest) * more as u128 * 51 / (50 * chunk_bytes.max(1) as u128);
    let ahead = usize::try_from(ahead).unwrap_or(usize::MAX / 2);
    rows.reserve(more.saturating_add(ahead).max(rows.len()));
}

/// The file, read a chunk at a time.
struct Input<'r> {
    r: &'r mut (dyn Read + Send),
    file: &'r str,
    /// Whether the whole file has been read.
    at_end: bool,
    /// Bytes taken at a time.
    chunk: usize,
    /// Bytes read so far.
    read: u64,
}

impl Input<'_> {
    /// Reads on until `buf` holds a chunk or the file ends.
    fn fill(&mut self, buf: &mut Vec<u8>) -> Result<()> {
        let want = self.chunk;
        self.fill_to(buf, want)
    }

    /// Reads on until `buf` holds `want` bytes or the file ends.
    fn fill_to(&mut self, buf: &mut Vec<u8>, want: usize) -> Result<()> {
        while !self.at_end && buf.len() < want {
            let ask = want - buf.len();
            let got = (&mut *self.r)
                .take(ask as u64)
                .read_to_end(buf)
                .map_err(|e| anyhow::anyhow!(InputError::in_file(self.file, format!("cannot read file: {e}"))))?;
            self.at_end = got < ask;
            self.read += got as u64;
            if self.read > MAX_INPUT_BYTES {
                bail!(InputError::in_file(
                    self.file,
                    format!("more than {} GiB: larger than a measurement CSV may be", MAX_INPUT_BYTES >> 30)
                ));
            }
        }
        Ok(())
    }

    /// Where the text that can be parsed now ends: just after the last
    /// `\n` (a `\r\n` is never cut in two), or at the end of the file.
    /// A buffer with no line end yet (a very long line, or a file whose
    /// lines end in a lone `\r`) is read on until it has one.
    fn cut(&mut self, buf: &mut Vec<u8>, line: u64) -> Result<usize> {
        loop {
            if self.at_end {
                return Ok(buf.len());
            }
            if let Some(i) = buf.iter().rposition(|b| *b == b'\n') {
                return Ok(i + 1);
            }
            if buf.len() > MAX_LINE_BYTES && memchr::memchr(b'\r', buf).is_none() {
                bail!(InputError::at_line(
                    self.file,
                    line,
                    format!("a line longer than {} MiB: not a measurement CSV", MAX_LINE_BYTES >> 20)
                ));
            }
            let want = buf.len() + self.chunk;
            self.fill_to(buf, want)?;
        }
    }
}

/// The number of physical lines in some text (see [`physical_lines`]).
fn count_lines(text: &[u8]) -> u64 {
    if memchr::memchr(b'\r', text).is_some() {
        return physical_lines(text, 0).count() as u64;
    }
    let ends = memchr::memchr_iter(b'\n', text).count() as u64;
    ends + u64::from(text.last().is_some_and(|b| *b != b'\n'))
}

/// The rows of one part of the file, whose first line is numbered `first`,
/// appended to `rows`.
#[allow(clippy::too_many_arguments)]
fn read_rows(
    part: &[u8],
    first: u64,
    header: &Header,
    shared_file: &Text,
    file: &str,
    registry: &Registry,
    texts: &mut Interners,
    rows: &mut Rows,
) -> Result<()> {
    // Room for the part's lines (at most one row each), counted: an
    // estimate from its bytes over-reserved long rows fourfold.
    let lines = memchr::memchr_iter(b'\n', part).count() + 1;
    rows.reserve(lines.saturating_sub(rows.points.capacity() - rows.len()));
    for (line, raw, _) in physical_lines(part, first).filter(|(_, l, _)| !blank(l)) {
        let values = split_fields(line_text(raw, file, line)?, file, line, Some(&header.names))?;
        if values.len() != header.names.len() {
            bail!(InputError::at_line(
                file,
                line,
                format!("row has {} fields, the header has {}", values.len(), header.names.len())
            ));
        }
        let origin = RowOrigin { file: shared_file.clone(), line };
        // A line of printable ASCII (and tabs) no longer than a field may be
        // holds no field `field_problem` refuses: one pass over the line
        // instead of one per field.
        let plain = raw.len() <= super::row::MAX_FIELD_BYTES
            && !raw.iter().fold(false, |odd, b| odd | ((*b < 0x20 || *b > 0x7e) & (*b != b'\t')));
        let point = row_to_point(&CsvRow { header, values, plain }, &origin, registry, texts)?;
        rows.push(point, origin);
    }
    Ok(())
}

fn blank(line: &[u8]) -> bool {
    line.iter().all(|b| b.is_ascii_whitespace())
}

/// Splits text into about one part per core (one part below 1 MiB), each
/// ending just after a `\n`, with the number of its first line; and the
/// number of the line after the text.
fn split_at_lines(text: &[u8], first: u64) -> (Vec<(&[u8], u64)>, u64) {
    let n = if text.len() < 1 << 20 { 1 } else { crate::par::cores() };
    let mut parts = Vec::with_capacity(n);
    let (mut start, mut number) = (0, first);
    for k in 1..=n {
        let target = (text.len() * k / n).max(start);
        let end = if k == n {
            text.len()
        } else {
            text[target..].iter().position(|b| *b == b'\n').map_or(text.len(), |i| target + i + 1)
        };
        let part = &text[start..end];
        parts.push((part, number));
        number += count_lines(part);
        start = end;
        if start == text.len() {
            break;
        }
    }
    (parts, number)
}

/// The physical lines of some text, numbered from `first`, each with the
/// length of the text after it; `\r\n`, `\n` and a lone `\r` each end a line.
fn physical_lines(bytes: &[u8], first: u64) -> impl Iterator<Item = (u64, &[u8], usize)> {
    let mut rest = bytes;
    let mut number = first.wrapping_sub(1);
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        number = number.wrapping_add(1);
        let end = memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
        let line = &rest[..end];
        let skip = match (rest.get(end), rest.get(end + 1)) {
            (Some(b'\r'), Some(b'\n')) => 2,
            (Some(_), _) => 1,
            (None, _) => 0,
        };
        rest = &rest[end + skip..];
        Some((number, line, rest.len()))
    })
}

fn line_text<'a>(bytes: &'a [u8], file: &str, line: u64) -> Result<&'a str> {
    if bytes.len() > MAX_LINE_BYTES {
        bail!(InputError::at_line(
            file,
            line,
            format!("a line of {} bytes, longer than a line may be ({} MiB)", bytes.len(), MAX_LINE_BYTES >> 20)
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(InputError::at_line(
            file,
            line,
            format!("not valid UTF-8 (byte {} of the line)", e.valid_up_to() + 1)
        ))
    })?;
    if let Some(at) = text.find('\u{FEFF}') {
        let what = if line == 1 && at == 0 { "a second byte-order mark" } else { "a byte-order mark (U+FEFF)" };
        bail!(InputError::at_line(
            file,
            line,
            format!("{what} inside the data: save the file as UTF-8 with at most one BOM at its start")
        ));
    }
    Ok(text)
}

/// Splits one physical line into fields. A field that starts with `"` is
/// quoted (`""` inside is one quote) and must close on the same line: a
/// field that spans lines is refused rather than silently swallowing the
/// rows after it. A quote inside an unquoted field is kept as text.
pub(crate) fn split_fields<'a>(
    text: &'a str,
    file: &str,
    line: u64,
    headers: Option<&[String]>,
) -> Result<Vec<std::borrow::Cow<'a, str>>> {
    use std::borrow::Cow;
    let column = |i: usize| match headers.and_then(|h| h.get(i)) {
        Some(name) => format!("{name}: "),
        None => format!("column {}: ", i + 1),
    };
    let bytes = text.as_bytes();
    let mut fields: Vec<Cow<'a, str>> = Vec::with_capacity(headers.map_or(8, <[String]>::len));
    let mut at = 0;
    loop {
        let mut start = at;
        while bytes.get(start).is_some_and(|b| *b == b' ' || *b == b'\t') {
            start += 1;
        }
        if bytes.get(start) == Some(&b'"') {
            // A quoted field: up to the quote not followed by another.
            let mut i = start + 1;
            let mut doubled = false;
            loop {
                match bytes.get(i) {
                    None => bail!(InputError::at_line(
                        file,
                        line,
                        format!(
                            "{}a quoted field opens here and does not close on this line \
                         (close the quote; a field cannot span lines)",
                            column(fields.len())
                        )
                    )),
                    Some(b'"') if bytes.get(i + 1) == Some(&b'"') => {
                        doubled = true;
                        i += 2;
                    }
                    Some(b'"') => break,
                    Some(_) => i += 1,
                }
            }
            let inner = &text[start + 1..i];
            fields.push(if doubled { Cow::Owned(inner.replace("\"\"", "\"")) } else { Cow::Borrowed(inner) });
            let mut j = i + 1;
            while bytes.get(j).is_some_and(|b| *b == b' ' || *b == b'\t') {
                j += 1;
            }
            match bytes.get(j) {
                None => return Ok(fields),
                Some(b',') => at = j + 1,
                Some(_) => bail!(InputError::at_line(
                    file,
                    line,
                    format!(
                        "{}text after the closing quote of a quoted field (quote the whole field)",
                        column(fields.len() - 1)
                    )
                )),
            }
        } else {
            let end = memchr::memchr(b',', &bytes[at..]).map_or(bytes.len(), |p| at + p);
            fields.push(Cow::Borrowed(&text[at..end]));
            if end == bytes.len() {
                return Ok(fields);
            }
            at = end + 1;
        }
    }
}

fn check_header(headers: &[String], file: &str, line: u64) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for h in headers {
        if h.is_empty() {
            bail!(InputError::at_line(file, line, "the header has an empty column name"));
        }
        if !seen.insert(h.as_str()) {
            bail!(InputError::at_line(file, line, format!("{h}: column named twice in the header")));
        }
    }
    // Every missing column in one message, and the whole list of what is
    // required, so a hand-written file is fixed in one go. The message's
    // field is the first missing column.
    let mut missing: Vec<(&str, String)> = REQUIRED_COLUMNS
        .iter()
        .map(|c| c.name())
        .filter(|c| !seen.contains(c))
        .map(|c| (c, format!("`{c}`")))
        .collect();
    if !seen.contains("vae") && !seen.contains("model") {
        missing.push(("vae", "`vae` or `model`".into()));
    }
    if !DEMAND_COLUMNS.iter().any(|c| seen.contains(c.name())) {
        missing.push(("reserved_mib", "a demand column".into()));
    }
    if let Some((field, _)) = missing.first() {
        let names: Vec<&str> = missing.iter().map(|(_, shown)| shown.as_str()).collect();
        let required: Vec<String> = REQUIRED_COLUMNS.iter().map(|c| format!("`{}`", c.name())).collect();
        bail!(InputError::at_line(
            file,
            line,
            format!(
                "{field}: missing column{} {}; required: {}, `vae` (a family) or `model` (a registered \
             model name), and at least one demand column ({}); optional: `os` (empty: any), `tile` (0), `batch` (1), \
             `frames` (1), `temporal_tile` (0), `id`, `device`, `torch`, `loaded_dtype`, `run`, `runs`, `aggregate`, \
             `context`, `note`",
                if missing.len() > 1 { "s" } else { "" },
                names.join(", "),
                required.join(", "),
                demand_column_names()
            )
        ));
    }
    Ok(())
}

/// The header of a CSV: its names, and where each known column sits,
/// resolved once for all rows.
struct Header {
    names: Vec<String>,
    known: [Option<usize>; Col::ALL.len()],
    unknown: Vec<usize>,
}

impl Header {
    fn new(names: Vec<String>) -> Header {
        let mut known = [None; Col::ALL.len()];
        let mut unknown = Vec::new();
        for (i, name) in names.iter().enumerate() {
            match Col::of(name) {
                Some(c) => known[c as usize] = Some(i),
                None => unknown.push(i),
            }
        }
        // By name: a point's metadata is kept sorted, so rows hand it over
        // in that order and no row sorts its own.
        unknown.sort_by(|a, b| names[*a].cmp(&names[*b]));
        Header { names, known, unknown }
    }
}

/// One CSV row: its values, borrowed from the line where no quote needed
/// undoing, looked up through the header.
struct CsvRow<'a> {
    header: &'a Header,
    values: Vec<std::borrow::Cow<'a, str>>,
    /// The raw line is printable ASCII within a field's bound.
    plain: bool,
}

impl Row for CsvRow<'_> {
    fn plain(&self) -> bool {
        self.plain
    }

    fn unknown_sorted(&self) -> bool {
        true
    }

    fn field(&self, column: Col) -> Option<&str> {
        self.header.known[column as usize].and_then(|i| self.values.get(i)).map(|v| v.as_ref())
    }

    fn unknown(&self) -> Vec<(&str, &str)> {
        self.header.unknown.iter().map(|i| (self.header.names[*i].as_str(), self.values[*i].as_ref())).collect()
    }
}
