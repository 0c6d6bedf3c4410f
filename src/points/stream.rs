//! The canonical store, read as a stream: this thread frames the lines (the
//! first line, a comma after every point but the last, the closing line,
//! nothing after it) and hands batches of point lines to workers, one per
//! core, that parse and check them. Batches come back in file order, so the
//! first error in the file is the one reported, exactly as a line-by-line
//! read would report it, and the points arrive in store order.

use super::row::Interners;
use super::store::{check_point, ordered, parse_line, TAIL};
use super::{codec, Point};
use crate::registry::Registry;
use anyhow::{anyhow, bail, Result};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Mutex;

/// Point lines per batch: large enough that a batch costs far more than
/// handing it over, small enough that a store of a few thousand points is
/// read on this thread alone.
const BATCH_LINES: usize = 8192;

/// Consecutive point lines, without their commas.
struct Batch {
    /// The line number of the first.
    first_line: usize,
    text: String,
    /// Where each line ends in `text`.
    ends: Vec<usize>,
}

impl Batch {
    fn new(first_line: usize) -> Batch {
        Batch { first_line, text: String::with_capacity(BATCH_LINES * 512), ends: Vec::with_capacity(BATCH_LINES) }
    }
}

/// A parsed batch: its points up to the first bad line, and that line's error.
type Parsed = (Vec<Point>, Option<anyhow::Error>);

fn parse_batch(b: &Batch, file: &str, registry: &Registry) -> Parsed {
    let mut texts = Interners::default();
    let mut out: Vec<Point> = Vec::with_capacity(b.ends.len());
    let mut start = 0;
    for (i, end) in b.ends.iter().enumerate() {
        let json = &b.text[start..*end];
        start = *end;
        let number = b.first_line + i;
        let point = match codec::read_point(json, &mut texts) {
            Some(p) => Ok(p),
            None => parse_line(json, file, number),
        };
        let checked = point.and_then(|p| {
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
    fn settle(&mut self, file: &str) -> Result<()> {
        while let Some((points, error)) = self.early.remove(&self.next) {
            self.next += 1;
            for p in points {
                if let Some(prev) = self.points.last() {
                    ordered(prev, &p, file)?;
                }
                self.points.push(p);
            }
            if let Some(e) = error {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Reads the point lines after the first line of a canonical store, up to
/// and including the closing line.
pub(super) fn read_lines(r: &mut dyn BufRead, capacity: usize, file: &str, registry: &Registry) -> Result<Vec<Point>> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).max(1);
    std::thread::scope(|scope| {
        let mut pool: Option<Pool> = None;
        let mut merged = Merged { points: Vec::with_capacity(capacity), next: 0, early: BTreeMap::new() };
        let mut batch = Batch::new(2);
        // Set when a parsed batch, not the frame, stopped the walk.
        let mut batch_failed = false;
        let framed = frame(r, file, &mut |number, json| {
            if batch.ends.is_empty() {
                batch.first_line = number;
            }
            batch.text.push_str(json);
            batch.ends.push(batch.text.len());
            if batch.ends.len() < BATCH_LINES {
                return Ok(());
            }
            let full = std::mem::replace(&mut batch, Batch::new(number + 1));
            let p = pool.get_or_insert_with(|| start(scope, workers, file, registry));
            if let Some(jobs) = &p.jobs {
                jobs.send((p.sent, full)).map_err(|_| anyhow!("{file}: a reading thread stopped"))?;
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
                return Err(framed.err().unwrap_or_else(|| anyhow!("{file}: a batch failed")));
            }
            sent = p.sent;
            while merged.next + merged.early.len() < sent {
                let (i, parsed) = p.results.recv().map_err(|_| anyhow!("{file}: a reading thread stopped"))?;
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

/// Walks the lines: hands each point line (without its comma) to `point`
/// with its line number, and checks the frame. Stops at the first error,
/// its own or `point`'s.
fn frame(r: &mut dyn BufRead, file: &str, point: &mut dyn FnMut(usize, &str) -> Result<()>) -> Result<()> {
    let (mut cur, mut next) = (Vec::with_capacity(1024), Vec::with_capacity(1024));
    let mut ended = next_line(r, &mut cur, file)?;
    let mut number = 2;
    loop {
        if cur == TAIL.as_bytes() {
            // Closed: exactly one line end after `]}`, then nothing.
            let more = ended && (next_line(r, &mut next, file)? || !next.is_empty());
            if !ended || more {
                bail!("{file}:{}: text after the closing `]}}`", number + 1);
            }
            return Ok(());
        }
        if !ended {
            bail!("{file}: the store ends before its closing `]}}` (a truncated file)");
        }
        let next_ended = next_line(r, &mut next, file)?;
        let last = next == TAIL.as_bytes();
        let line = std::str::from_utf8(&cur)
            .map_err(|e| anyhow!("{file}:{number}: not valid UTF-8 (byte {} of the line)", e.valid_up_to() + 1))?;
        let json = if last { line } else { line.strip_suffix(',').unwrap_or(line) };
        if !last && json.len() == line.len() {
            bail!("{file}:{number}: expected a point followed by a comma");
        }
        point(number, json)?;
        std::mem::swap(&mut cur, &mut next);
        ended = next_ended;
        number += 1;
    }
}

/// One physical line of the store: its bytes without the line end, and
/// whether a line end closed it.
fn next_line(r: &mut dyn BufRead, buf: &mut Vec<u8>, file: &str) -> Result<bool> {
    buf.clear();
    r.read_until(b'\n', buf).map_err(|e| anyhow!("{file}: cannot read: {e}"))?;
    Ok(buf.pop_if(|b| *b == b'\n').is_some())
}
