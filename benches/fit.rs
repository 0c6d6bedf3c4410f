//! Benchmarks: the exact fit at 10³, 10⁵ and 10⁶ points on one line, every
//! leave-one-size-out fold of one line (`crossval --by size`'s refits), and
//! a whole `emit` (load, fit, build, serialise) on the shipped data.
//! Run with `cargo bench --bench fit`.

use std::path::PathBuf;
use vramfit::fit::{envelope, round, FitPoint};

fn main() {
    // The allocator set up as the binary sets it up.
    vramfit::heap::tune();
    divan::main();
}

/// A deterministic noisy line: a base of 300 MiB, ~4400 B/px, sizes from
/// 256² to 4096², with up to 3% noise (xorshift), ids like a real store.
fn synthetic(n: usize) -> (Vec<(u64, u64)>, Vec<String>) {
    let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let edge = 256 + (s % 3841);
        let x = edge * edge;
        let y = 300 * (1 << 20) + 4400 * x;
        let noise = (s >> 20) % (y / 33);
        out.push((x, y - noise));
    }
    let ids = (0..n).map(|i| format!("bench-point-{i:07}")).collect();
    (out, ids)
}

/// Every fold of `crossval --by size` on one line of `n` points (up to
/// 3841 distinct sizes): `fit::leave_out::folds`, beside one fit of the
/// same points (`fit_one_line`), which it should stay within a small
/// factor of; refitting each fold from scratch was quadratic.
#[divan::bench(args = [1_000, 100_000, 1_000_000], sample_count = 10)]
fn leave_one_size_out(bencher: divan::Bencher, n: usize) {
    let (xy, ids) = synthetic(n);
    let pts: Vec<FitPoint> = xy.iter().zip(&ids).map(|((x, y), id)| FitPoint { x: *x, y: *y, id }).collect();
    bencher.bench(|| vramfit::fit::leave_out::folds(divan::black_box(&pts)).unwrap().len());
}

#[divan::bench(args = [1_000, 100_000, 1_000_000], sample_count = 10)]
fn fit_one_line(bencher: divan::Bencher, n: usize) {
    let (xy, ids) = synthetic(n);
    let pts: Vec<FitPoint> = xy.iter().zip(&ids).map(|((x, y), id)| FitPoint { x: *x, y: *y, id }).collect();
    let margin = vramfit::exact::Ratio::new(1, 20).unwrap();
    bencher.bench(|| {
        let e = envelope(divan::black_box(&pts)).unwrap();
        round(&e, margin).unwrap()
    });
}

#[divan::bench(sample_count = 20)]
fn emit_shipped_data(bencher: divan::Bencher) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    bencher.bench(|| {
        vramfit::verify::fresh::fresh(divan::black_box(&root), vramfit::verify::fresh::Purpose::Write)
            .unwrap()
            .bytes
            .map_or(0, |b| b.len())
    });
}
