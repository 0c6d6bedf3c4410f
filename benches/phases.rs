//! Each phase of the pipeline at 10⁵ points (and the load at 10⁶): parse a
//! measurement CSV, merge into the store, write the store, load it, group
//! and assemble the lines, and verify. The data is generated here, the same
//! on every run. Run with `cargo bench --bench phases`.

use std::fmt::Write as _;
use std::path::PathBuf;
use vramfit::points::{csv_input, merge, store};
use vramfit::workspace::Workspace;

fn main() {
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
    let rows = csv_input::parse_csv(csv(n).as_bytes(), "bench.csv", &registry).unwrap();
    let points: Vec<_> = rows.into_iter().map(|r| r.point).collect();
    std::fs::write(dir.join("measurements/vae.json"), store::to_bytes(&points)).unwrap();
    vramfit::commands::emit::run(&dir, false, true).unwrap();
    dir
}

const N: usize = 100_000;

#[divan::bench(sample_count = 10)]
fn parse_csv(bencher: divan::Bencher) {
    let text = csv(N);
    let registry = Workspace::new(&root(1000)).policy().unwrap().registry;
    bencher.bench(|| csv_input::parse_csv(divan::black_box(text.as_bytes()), "bench.csv", &registry).unwrap().len());
}

#[divan::bench(sample_count = 10)]
fn merge_into_empty(bencher: divan::Bencher) {
    let registry = Workspace::new(&root(1000)).policy().unwrap().registry;
    let rows = csv_input::parse_csv(csv(N).as_bytes(), "bench.csv", &registry).unwrap();
    bencher.with_inputs(|| rows.clone()).bench_values(|r| merge::merge(vec![], r).unwrap().points.len());
}

#[divan::bench(sample_count = 10)]
fn write_store(bencher: divan::Bencher) {
    let ws = Workspace::new(&root(N));
    let points = ws.points(&ws.policy().unwrap()).unwrap();
    bencher.bench(|| store::to_bytes(divan::black_box(&points)).len());
}

#[divan::bench(sample_count = 10, args = [100_000, 1_000_000])]
fn load_store(bencher: divan::Bencher, n: usize) {
    let ws = Workspace::new(&root(n));
    let policy = ws.policy().unwrap();
    bencher.bench(|| ws.points(&policy).unwrap().len());
}

#[divan::bench(sample_count = 10)]
fn assemble_lines(bencher: divan::Bencher) {
    let ws = Workspace::new(&root(N));
    let inputs = ws.inputs().unwrap();
    bencher.bench(|| vramfit::lines::assemble(&inputs.points, &inputs.policy).unwrap().len());
}

#[divan::bench(sample_count = 10)]
fn verify(bencher: divan::Bencher) {
    let dir = root(N);
    bencher.bench(|| vramfit::commands::verify::run(&dir).unwrap().findings.len());
}
