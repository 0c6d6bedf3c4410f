//! Reading the store. The first, pretty-printed format is read whole (by
//! `store`); the canonical one as a stream: this thread frames the lines (the
//! first line, a comma after every point but the last, the closing line,
//! nothing after it) and hands batches of point lines to workers, one per
//! core, that parse and check them. Batches come back in file order, so the
//! first error in the file is the one reported, exactly as a line-by-line
//! read would report it, and the points arrive in store order.

use super::row::Interners;
use super::store::{check_point, ordered, parse_line, parse_whole, HEAD, MIN_LINE, TAIL};
use super::{codec, Point};
use crate::places::InputError;
use crate::registry::Registry;
use anyhow::{anyhow, bail, Result};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Mutex;

/// How the store was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// One point a line, exactly as [`super::store::write`] writes it: its bytes as read
    /// are the canonical bytes (and their digest is the points digest).
    Canonical,
    /// The first, pretty-printed format: the next write converts it, and
    /// its digest is that of the bytes [`super::store::write`] would write.
    Pretty,
}

/// Parses a points file and checks every invariant; an error names the
/// file, the point id and the field.
pub fn parse(text: &str, file: &str, registry: &Registry) -> Result<Vec<Point>> {
    Ok(read(&mut text.as_bytes(), text.len() as u64, file, registry)?.0)
}

/// No line of a store is longer (a point's fields are each at most 64 KiB
/// of text and a CSV line at most 1 MiB): reading stops there.
pub const MAX_LINE: usize = 4 << 20;

/// Reads a points file as a stream. The canonical form is read line by
/// line, one point a line, and never held whole; an older store (the
/// pretty-printed first format) is read whole.
/// `len` (the file's length) only sizes the list of points up front, so
/// 10^6 points are never copied to a larger list as it grows.
pub fn read(r: &mut dyn BufRead, len: u64, file: &str, registry: &Registry) -> Result<(Vec<Point>, Form)> {
    let mut first = Vec::new();
    // The first line is a fixed header: a file that is not a store (a link
    // to /dev/zero) is told apart without reading on.
    let limit = u64::try_from(MAX_LINE).unwrap_or(u64::MAX);
    std::io::Read::take(&mut *r, limit)
        .read_until(b'\n', &mut first)
        .map_err(|e| anyhow!(InputError::in_file(file, format!("cannot read: {e}"))))?;
    if first.len() >= MAX_LINE && !first.ends_with(b"\n") {
        bail!("{file}:1: a line over {MAX_LINE} bytes: not a points file");
    }
    if first.strip_suffix(b"\n") == Some(HEAD.as_bytes()) {
        let capacity = usize::try_from(len / MIN_LINE).unwrap_or(0);
        return Ok((read_lines(r, len, capacity, file, registry)?, Form::Canonical));
    }
    r.read_to_end(&mut first).map_err(|e| anyhow!(InputError::in_file(file, format!("cannot read: {e}"))))?;
    let text =
        String::from_utf8(first).map_err(|e| anyhow!(InputError::in_file(file, format!("not UTF-8 text ({e})"))))?;
    Ok((parse_whole(&text, file, registry)?, Form::Pretty))
}

/// Point lines per batch: large enough that a batch costs far more than
/// handing it over, small enough that a store of a few thousand points is
/// read on this thread alone.
const BATCH_LINES: usize = 8192;

/// Consecutive point lines as read (commas included, line ends not).
struct Batch {
    /// The line number of the first.
    first_line: usize,
    bytes: Vec<u8>,
    /// Where each line ends in `bytes`.
    ends: Vec<usize>,
    /// Whether the last line is the store's last point (followed by the
    /// closing line, so it has no comma).
    ends_store: bool,
}

impl Batch {
    /// A batch with room for `bytes` bytes of lines (a small store is not
    /// given a full batch's 4 MiB: fresh pages cost more than its parse).
    fn new(first_line: usize, bytes: usize) -> Batch {
        Batch {
            first_line,
            bytes: Vec::with_capacity(bytes.min((BATCH_LINES + 1) * 512)),
            ends: Vec::with_capacity((bytes / MIN_LINE as usize).min(BATCH_LINES) + 1),
            ends_store: false,
        }
    }
}

/// A parsed batch: its points up to the first bad line, and that line's error.
type Parsed = (Vec<Point>, Option<anyhow::Error>);

fn parse_batch(b: &Batch, file: &str, registry: &Registry) -> Parsed {
    let mut texts = Interners::default();
    let mut out: Vec<Point> = Vec::with_capacity(b.ends.len());
    let mut start = 0;
    for (i, end) in b.ends.iter().enumerate() {
        let raw = &b.bytes[start..*end];
        start = *end;
        let number = b.first_line + i;
        let last = b.ends_store && i + 1 == b.ends.len();
        let checked = point_of_line(raw, last, number, file, &mut texts).and_then(|p| {
            check_point(&p, registry, file)?;
            if let Some(prev) = out.last() {
                ordered(prev, &p, file)?;
            }
            Ok(p)
        });
        match checked {
            Ok(p) => out.push(p),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

/// One point line: UTF-8, a comma unless it is the last point, then the
/// point (by the codec, else by the serde path).
fn point_of_line(raw: &[u8], last: bool, number: usize, file: &str, texts: &mut Interners) -> Result<Point> {
    let line = std::str::from_utf8(raw).map_err(|e| {
        anyhow!(InputError::at_line(
            file,
            number,
            format!("not valid UTF-8 (byte {} of the line)", e.valid_up_to() + 1)
        ))
    })?;
    let json = if last { line } else { line.strip_suffix(',').unwrap_or(line) };
    if !last && json.len() == line.len() {
        bail!(InputError::at_line(file, number, "expected a point followed by a comma"));
    }
    match codec::read_point(json, texts) {
        Some(p) => Ok(p),
        None => parse_line(json, file, number),
    }
}

/// Workers started at the first full batch.
struct Pool {
    jobs: Option<SyncSender<(usize, Batch)>>,
    results: Receiver<(usize, Parsed)>,
    sent: usize,
}

/// The points so far, in store order, and the batches that came back early.
struct Merged {
    points: Vec<Point>,
    next: usize,
    early: BTreeMap<usize, Parsed>,
}

impl Merged {
    /// Appends every batch whose turn has come; the first error stops it.
    /// A batch is in id order already: only its first point is checked
    /// against the last one before it.
    fn settle(&mut self, file: &str) -> Result<()> {
        while let Some((points, error)) = self.early.remove(&self.next) {
            self.next += 1;
            if let (Some(prev), Some(first)) = (self.points.last(), points.first()) {
                ordered(prev, first, file)?;
            }
            self.points.extend(points);
            if let Some(e) = error {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Reads the point lines after the first line of a canonical store, up to
/// and including the closing line.
fn read_lines(r: &mut dyn BufRead, len: u64, capacity: usize, file: &str, registry: &Registry) -> Result<Vec<Point>> {
    std::thread::scope(|scope| {
        let mut pool: Option<Pool> = None;
        let mut merged = Merged { points: Vec::with_capacity(capacity), next: 0, early: BTreeMap::new() };
        let mut batch = Batch::new(2, usize::try_from(len).unwrap_or(usize::MAX));
        // Set when a parsed batch, not the frame, stopped the walk.
        let mut batch_failed = false;
        let framed = frame(r, &mut batch, file, &mut |full: Batch| {
            let p = pool.get_or_insert_with(|| start(scope, crate::par::cores(), file, registry));
            if let Some(jobs) = &p.jobs {
                jobs.send((p.sent, full))
                    .map_err(|_| anyhow!(InputError::in_file(file, "a reading thread stopped")))?;
                p.sent += 1;
            }
            while let Ok((i, parsed)) = p.results.try_recv() {
                merged.early.insert(i, parsed);
            }
            merged.settle(file).inspect_err(|_| batch_failed = true)
        });
        // Everything framed before the stop (or the end) is parsed and
        // merged first: an error on an earlier line wins.
        let mut sent = 0;
        if let Some(mut p) = pool {
            drop(p.jobs.take());
            if batch_failed {
                // Every earlier line is merged: this is the first error.
                return Err(framed.err().unwrap_or_else(|| anyhow!(InputError::in_file(file, "a batch failed"))));
            }
            sent = p.sent;
            while merged.next + merged.early.len() < sent {
                let (i, parsed) =
                    p.results.recv().map_err(|_| anyhow!(InputError::in_file(file, "a reading thread stopped")))?;
                merged.early.insert(i, parsed);
            }
        }
        if !batch.ends.is_empty() {
            merged.early.insert(sent, parse_batch(&batch, file, registry));
        }
        merged.settle(file)?;
        framed?;
        Ok(merged.points)
    })
}

fn start<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    workers: usize,
    file: &'scope str,
    registry: &'scope Registry,
) -> Pool {
    let (jobs, queue) = sync_channel::<(usize, Batch)>(workers * 2);
    let (done, results) = channel::<(usize, Parsed)>();
    let queue = std::sync::Arc::new(Mutex::new(queue));
    for _ in 0..workers {
        let (queue, done): (_, Sender<(usize, Parsed)>) = (queue.clone(), done.clone());
        scope.spawn(move || loop {
            let job = queue.lock().map_err(|_| ()).and_then(|q| q.recv().map_err(|_| ()));
            let Ok((i, batch)) = job else { break };
            if done.send((i, parse_batch(&batch, file, registry))).is_err() {
                break;
            }
        });
    }
    Pool { jobs: Some(jobs), results, sent: 0 }
}

/// Walks the lines, reading each straight into `batch`, and checks the
/// frame: the closing line, exactly one line end after it, nothing more.
/// A full batch is handed to `full` once the line after it is read (so it
/// is known whether its last line is the last point); what is left when
/// the walk stops stays in `batch`. Stops at the first error, its own or
/// `full`'s.
fn frame(r: &mut dyn BufRead, batch: &mut Batch, file: &str, full: &mut dyn FnMut(Batch) -> Result<()>) -> Result<()> {
    let mut number = 2;
    loop {
        let start = batch.bytes.len();
        let limit = u64::try_from(MAX_LINE).unwrap_or(u64::MAX);
        std::io::Read::take(&mut *r, limit)
            .read_until(b'\n', &mut batch.bytes)
            .map_err(|e| anyhow!(InputError::in_file(file, format!("cannot read: {e}"))))?;
        if batch.bytes.len() - start >= MAX_LINE && batch.bytes.last() != Some(&b'\n') {
            bail!(InputError::at_line(file, number, format!("a line over {MAX_LINE} bytes: no point is that long")));
        }
        let ended = batch.bytes.pop_if(|b| *b == b'\n').is_some();
        if batch.bytes[start..] == *TAIL.as_bytes() {
            batch.bytes.truncate(start);
            batch.ends_store = true;
            // Closed: exactly one line end after `]}`, then nothing.
            let mut rest = Vec::new();
            let more = ended
                && (r
                    .read_until(b'\n', &mut rest)
                    .map_err(|e| anyhow!(InputError::in_file(file, format!("cannot read: {e}"))))?
                    > 0);
            if !ended || more {
                bail!(InputError::at_line(file, number + 1, "text after the closing `]}`"));
            }
            return Ok(());
        }
        if !ended {
            batch.bytes.truncate(start);
            bail!(InputError::in_file(file, "the store ends before its closing `]}` (a truncated file)"));
        }
        if batch.ends.is_empty() {
            batch.first_line = number;
        }
        batch.ends.push(batch.bytes.len());
        if batch.ends.len() > BATCH_LINES {
            // The line just read starts the next batch.
            let mut next = Batch::new(number, usize::MAX);
            let cut = batch.ends[BATCH_LINES - 1];
            next.bytes.extend_from_slice(&batch.bytes[cut..]);
            next.ends.push(next.bytes.len());
            batch.bytes.truncate(cut);
            batch.ends.truncate(BATCH_LINES);
            full(std::mem::replace(batch, next))?;
        }
        number += 1;
    }
}
