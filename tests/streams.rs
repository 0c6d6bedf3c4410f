//! Large inputs are read in parts on every core (the store in batches of
//! point lines, a CSV in parts split at line ends). These tests use inputs
//! large enough to be split and check that the parts change nothing: the
//! same points, and the first error in the file is the one reported, with
//! its line.

use crate::common::*;
use std::fmt::Write as _;
use vramfit::points::{csv_input, store, Point};
use vramfit::progress::Silent;
use vramfit::registry::Registry;
use vramfit::workspace::Workspace;

/// Enough points for three batches of the store reader.
const N: usize = 20_000;

fn registry() -> Registry {
    Workspace::new(&data_root()).policy().unwrap().registry
}

/// A CSV of `n` rows; `eol` ends each line and every 97th row is followed
/// by a blank line. Returns the text and the physical line of each row.
fn csv(n: usize, eol: &str) -> (String, Vec<u64>) {
    let mut s =
        format!("id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_bytes{eol}");
    let (mut line, mut lines) = (1u64, Vec::with_capacity(n));
    for j in 0..n {
        let (w, h) = (64 * (4 + (j * 7) % 61) as u64, 64 * (4 + (j * 13) % 61) as u64);
        let demand = 3000 * w * h + (100 << 20);
        write!(s, "s-{j:06},streams test,cudnn,native,linux,sd,decode,0,fp16,{w},{h},1,{demand}{eol}").unwrap();
        line += 1;
        lines.push(line);
        if j % 97 == 0 {
            s.push_str(eol);
            line += 1;
        }
    }
    (s, lines)
}

fn points() -> Vec<Point> {
    csv_input::parse_csv(csv(N, "\n").0.as_bytes(), "s.csv", &registry()).unwrap().points
}

/// The store's lines; point `i` is on line `i + 2`.
fn store_lines(points: &[Point]) -> Vec<String> {
    String::from_utf8(store::to_bytes(points)).unwrap().lines().map(str::to_string).collect()
}

fn parse(lines: &[String]) -> Result<Vec<Point>, String> {
    let mut text = lines.join("\n");
    text.push('\n');
    store::parse(&text, "vae.json", &registry()).map_err(|e| format!("{e:#}"))
}

#[test]
fn a_store_in_batches_reads_back_every_point_in_order() {
    let pts = points();
    assert_eq!(parse(&store_lines(&pts)).unwrap(), pts);
}

#[test]
fn the_first_bad_line_of_a_batched_store_is_the_one_named() {
    let lines = store_lines(&points());
    let at = |i: usize| format!("vae.json:{}:", i + 2);
    // A non-canonical line in the third batch, and a truncated end after it.
    let mut bad = lines.clone();
    bad[1 + 17_000] = bad[1 + 17_000].replacen("\"tile\":0", "\"tile\":00", 1);
    bad.pop();
    let e = parse(&bad).unwrap_err();
    assert!(e.contains(&at(17_000)), "{e}");
    // A missing comma in the second batch wins over that later bad line.
    bad[1 + 9_000] = bad[1 + 9_000].trim_end_matches(',').to_string();
    let e = parse(&bad).unwrap_err();
    assert!(e.contains(&at(9_000)) && e.contains("followed by a comma"), "{e}");
    // Two points swapped across the first batch boundary: the order check
    // between batches names both ids.
    let mut swapped = lines.clone();
    swapped.swap(1 + 8_191, 1 + 8_192);
    let e = parse(&swapped).unwrap_err();
    assert!(e.contains("s-008192") && e.contains("s-008191") && e.contains("smaller id"), "{e}");
    // A truncated store with nothing else wrong says so.
    let mut cut = lines.clone();
    cut.truncate(12_345);
    let e = parse(&cut).unwrap_err();
    assert!(e.contains("truncated"), "{e}");
}

#[test]
fn a_csv_read_in_parts_keeps_every_rows_line_number() {
    for eol in ["\n", "\r\n"] {
        let (text, lines) = csv(N, eol);
        assert!(text.len() > 1 << 20, "large enough to be split");
        let rows = csv_input::parse_csv(text.as_bytes(), "s.csv", &registry()).unwrap();
        let got: Vec<u64> = rows.origins.iter().map(|o| o.line).collect();
        assert_eq!(got, lines);
        // An error near the end (in the last part) and one in the middle:
        // the earlier one is named, with its physical line.
        let late = format!("s-{:06},", N - 10);
        let mid = format!("s-{:06},", N / 2 + 3);
        let broken =
            text.replacen(&format!("{late}streams test,cudnn,native"), &format!("{late}streams test,vulkan,native"), 1);
        let e = csv_input::parse_csv(broken.as_bytes(), "s.csv", &registry()).unwrap_err().to_string();
        assert!(e.starts_with(&format!("s.csv:{}: conv_backend", lines[N - 10])), "{e}");
        let broken =
            broken.replacen(&format!("{mid}streams test,cudnn,native"), &format!("{mid}streams test,cudnn,nope"), 1);
        let e = csv_input::parse_csv(broken.as_bytes(), "s.csv", &registry()).unwrap_err().to_string();
        assert!(e.starts_with(&format!("s.csv:{}: allocator", lines[N / 2 + 3])), "{e}");
    }
}

#[test]
fn a_csv_read_in_small_chunks_gives_the_same_rows_lines_and_errors() {
    let registry = registry();
    for eol in ["\n", "\r\n", "\r"] {
        let (body, lines) = csv(300, eol);
        // A BOM and blank lines before the header move every line number.
        let text = format!("\u{FEFF}{eol}  {eol}{body}");
        let lines: Vec<u64> = lines.iter().map(|l| l + 2).collect();
        let whole = csv_input::parse_csv(text.as_bytes(), "s.csv", &registry).unwrap();
        assert_eq!(whole.origins.iter().map(|o| o.line).collect::<Vec<_>>(), lines);
        let broken = text.replacen("s-000250,streams test,cudnn", "s-000250,streams test,vulkan", 1);
        let want = csv_input::parse_csv(broken.as_bytes(), "s.csv", &registry).unwrap_err().to_string();
        assert!(want.starts_with(&format!("s.csv:{}: conv_backend", lines[250])), "{want}");
        // Chunks that cut inside the BOM, the header, a CR LF pair and rows.
        for chunk in [1, 2, 3, 5, 64, 1000, 4096] {
            let read = |t: &str, len: u64| {
                csv_input::read_csv_in_chunks(
                    &mut t.as_bytes(),
                    len,
                    "s.csv",
                    &registry,
                    chunk,
                    csv_input::Keep::All,
                    &Silent,
                )
                .map_err(|e| e.to_string())
            };
            // With the length known, and unknown (a pipe).
            for len in [text.len() as u64, 0] {
                let got = read(&text, len).unwrap();
                assert_eq!(got.points, whole.points, "chunk {chunk}, eol {eol:?}");
                assert_eq!(got.origins, whole.origins, "chunk {chunk}, eol {eol:?}");
                assert_eq!(read(&broken, len).unwrap_err(), want, "chunk {chunk}, eol {eol:?}");
            }
        }
    }
    // Only blank lines: an empty file, at any chunk size.
    for chunk in [1, 4, 4096] {
        let e = csv_input::read_csv_in_chunks(
            &mut &b"\n \r\n\t\n"[..],
            0,
            "e.csv",
            &registry,
            chunk,
            csv_input::Keep::All,
            &Silent,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("e.csv:1: empty file"), "{e}");
    }
}

/// Records what is reported.
#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<String>>, std::sync::atomic::AtomicU64);

impl vramfit::progress::Progress for Recorder {
    fn start(&self, what: &str, total: u64, unit: vramfit::progress::Unit) {
        self.0.lock().unwrap().push(format!("start {what} {total} {unit:?}"));
    }
    fn advance(&self, done: u64) {
        self.1.fetch_add(done, std::sync::atomic::Ordering::SeqCst);
    }
    fn finish(&self) {
        self.0.lock().unwrap().push("finish".into());
    }
}

#[test]
fn reading_a_csv_reports_every_byte_once() {
    let (body, _) = csv(3000, "\r\n");
    let text = format!("\u{FEFF}\r\n{body}");
    let r = Recorder::default();
    let rows = csv_input::read_csv(&mut text.as_bytes(), text.len() as u64, "p.csv", &registry(), &r);
    assert_eq!(rows.unwrap().len(), 3000);
    assert_eq!(*r.0.lock().unwrap(), vec![format!("start p.csv {} Bytes", text.len()), "finish".to_string()]);
    assert_eq!(r.1.load(std::sync::atomic::Ordering::SeqCst), text.len() as u64);
}

#[test]
fn crossval_reports_each_fitted_line() {
    let ws = Workspace::new(&data_root());
    let inp = ws.inputs_strict(vramfit::workspace::Digest::Skip).unwrap();
    let lines = vramfit::lines::assemble(&inp.points, &inp.policy).unwrap();
    let fitted = lines.iter().filter(|l| l.kind == vramfit::lines::LineKind::Fitted).count();
    let r = Recorder::default();
    vramfit::crossval::crossval(
        &inp.points,
        &inp.policy,
        &lines,
        &Default::default(),
        vramfit::crossval::HoldOut::Size,
        &r,
    )
    .unwrap();
    assert_eq!(*r.0.lock().unwrap(), vec![format!("start crossval {fitted} Items"), "finish".to_string()]);
    assert_eq!(r.1.load(std::sync::atomic::Ordering::SeqCst), fitted as u64);
    // Through a pipe, nothing but the report: no bar on standard error.
    let out = vramfit().current_dir(data_root()).arg("crossval").output().unwrap();
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}
