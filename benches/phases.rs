//! Each phase of the pipeline at 10⁵ and 10⁶ points: parse a measurement
//! CSV, merge into the store, write the store, load it, group, fit, assemble
//! the lines, verify, cross-validate by size; and the whole pipeline (ingest → emit → verify). The
//! data is generated here, the same on every run. Run with
//! `cargo bench --bench phases`. The allocator is the binary's: the C
//! library's, set up by `vramfit::heap::tune`.

use std::fmt::Write as _;
use std::path::PathBuf;
use vramfit::fit::{envelope, FitPoint};
use vramfit::points::{csv_input, merge, store};
use vramfit::workspace::Workspace;

fn main() {
    // The allocator set up as the binary sets it up.
    vramfit::heap::tune();
    divan::main();
}

/// A measurement CSV of `n` rows over 12 line keys, every point on its line.
fn csv(n: usize) -> String {
    let mut s =
        String::from("id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_bytes\n");
    for j in 0..n {
        let k = j % 12;
        let (vae, op, dtype) =
            (["sd", "flux1", "flux2"][k % 3], ["decode", "encode"][(k / 3) % 2], ["fp16", "fp32"][k / 6]);
        let (w, h) = (64 * (4 + (j * 7) % 61) as u64, 64 * (4 + (j * 13) % 61) as u64);
        let demand = (3000 + 100 * k as u64) * w * h + (100 << 20);
        writeln!(s, "bench-{j:07},bench,cudnn,native,linux,{vae},{op},0,{dtype},{w},{h},1,{demand}").unwrap();
    }
    s
}

/// A root with the shipped policy (less the entries naming shipped points)
/// and a store of `n` points.
fn root(n: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vramfit-bench-{n}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("fits")).unwrap();
    std::fs::create_dir_all(dir.join("measurements")).unwrap();
    let policy = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fits/policy.toml")).unwrap();
    let kept: Vec<&str> =
        policy.split("\n\n").filter(|b| !b.starts_with("[[exclude]]") && !b.starts_with("[[keep]]")).collect();
    std::fs::write(dir.join("fits/policy.toml"), kept.join("\n\n")).unwrap();
    let registry = Workspace::new(&dir).policy().unwrap().registry;
    let points = csv_input::parse_csv(csv(n).as_bytes(), "bench.csv", &registry).unwrap().points;
    std::fs::write(dir.join("measurements/vae.json"), store::to_bytes(&points)).unwrap();
    vramfit::commands::emit::run(&dir, false, true, vramfit::fsio::DEFAULT_WAIT).unwrap();
    dir
}

/// The sizes every phase is measured at.
const SIZES: [usize; 2] = [100_000, 1_000_000];

#[divan::bench(sample_count = 5, args = SIZES)]
fn parse_csv(bencher: divan::Bencher, n: usize) {
    let text = csv(n);
    let registry = Workspace::new(&root(1000)).policy().unwrap().registry;
    bencher.bench(|| csv_input::parse_csv(divan::black_box(text.as_bytes()), "bench.csv", &registry).unwrap().len());
}

#[divan::bench(sample_count = 5, args = SIZES)]
fn merge_into_empty(bencher: divan::Bencher, n: usize) {
    let registry = Workspace::new(&root(1000)).policy().unwrap().registry;
    let rows = csv_input::parse_csv(csv(n).as_bytes(), "bench.csv", &registry).unwrap();
    bencher.with_inputs(|| rows.clone()).bench_values(|r| merge::merge(vec![], r).unwrap().points.len());
}

#[divan::bench(sample_count = 5, args = SIZES)]
fn write_store(bencher: divan::Bencher, n: usize) {
    let ws = Workspace::new(&root(n));
    let points = ws.points(&ws.policy().unwrap()).unwrap();
    bencher.bench(|| store::to_bytes(divan::black_box(&points)).len());
}

#[divan::bench(sample_count = 5, args = SIZES)]
fn load_store(bencher: divan::Bencher, n: usize) {
    let ws = Workspace::new(&root(n));
    let policy = ws.policy().unwrap();
    bencher.bench(|| ws.points(&policy).unwrap().len());
}

#[divan::bench(sample_count = 5, args = SIZES)]
fn group(bencher: divan::Bencher, n: usize) {
    let ws = Workspace::new(&root(n));
    let inputs = ws.inputs().unwrap();
    bencher.bench(|| vramfit::lines::group(&inputs.points, &inputs.policy).len());
}

#[divan::bench(sample_count = 5, args = SIZES)]
fn fit(bencher: divan::Bencher, n: usize) {
    let ws = Workspace::new(&root(n));
    let inputs = ws.inputs().unwrap();
    let groups = vramfit::lines::group(&inputs.points, &inputs.policy);
    let sets: Vec<Vec<FitPoint>> = groups
        .values()
        .map(|pts| pts.iter().map(|p| FitPoint { x: p.pixels, y: p.demand_bytes, id: &p.id }).collect())
        .collect();
    bencher.bench(|| sets.iter().map(|s| envelope(divan::black_box(s)).unwrap().support.ids().len()).sum::<usize>());
}

/// `crossval --by size` over the whole store, beside `fit` and `verify`.
#[divan::bench(sample_count = 5, args = SIZES)]
fn crossval_by_size(bencher: divan::Bencher, n: usize) {
    let dir = root(n);
    let quiet = vramfit::progress::Silent;
    bencher.bench(|| vramfit::crossval::of_root(&dir, vramfit::crossval::HoldOut::Size, &quiet).unwrap().lines.len());
}

#[divan::bench(sample_count = 5, args = SIZES)]
fn assemble_lines(bencher: divan::Bencher, n: usize) {
    let ws = Workspace::new(&root(n));
    let inputs = ws.inputs().unwrap();
    bencher.bench(|| vramfit::lines::assemble(&inputs.points, &inputs.policy).unwrap().len());
}

#[divan::bench(sample_count = 5, args = SIZES)]
fn verify(bencher: divan::Bencher, n: usize) {
    let dir = root(n);
    bencher.bench(|| vramfit::verify::audit(&dir).unwrap().findings.len());
}

/// The whole pipeline a maintainer runs: ingest a CSV into an empty store,
/// emit, verify.
#[divan::bench(sample_count = 5, args = SIZES)]
fn pipeline(bencher: divan::Bencher, n: usize) {
    let dir = root(1000);
    let csv_path = dir.join("bench.csv");
    std::fs::write(&csv_path, csv(n)).unwrap();
    let opts = vramfit::commands::ingest::IngestOptions {
        files: vec![csv_path],
        from: vramfit::commands::ingest::InputFormat::Csv,
        check: false,
        allow_simulated: false,
        wait: vramfit::fsio::DEFAULT_WAIT,
    };
    bencher.with_inputs(|| std::fs::remove_file(dir.join("measurements/vae.json")).unwrap()).bench_values(|()| {
        vramfit::commands::ingest::run(&dir, &opts, &vramfit::progress::Silent).unwrap();
        vramfit::commands::emit::run(&dir, false, true, vramfit::fsio::DEFAULT_WAIT).unwrap();
        vramfit::verify::audit(&dir).unwrap().findings.len()
    });
}
