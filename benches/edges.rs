//! The worst inputs of "trust at the edges", each through the whole CLI in
//! process: work bounded in the numbers asked (a tile search that bisects,
//! a composition over a few smaller requests) and reads bounded in the
//! file (a link to an endless device). Time per run and, through divan's
//! allocation profiler, the bytes each run allocates (an upper bound on
//! its heap). Run with `cargo bench --bench edges`; the figures are in
//! benches/README.md.

#[global_allocator]
static ALLOC: divan::AllocProfiler = divan::AllocProfiler::system();

fn main() {
    divan::main();
}

/// One command line through `cli::run_from`, on a Linux host with no
/// allocator variables; its exit code.
fn run(args: &[&str]) -> u8 {
    let env = vramfit::pricing::platform::EnvSnapshot::default().on(vramfit::vocab::Os::Linux);
    let argv: Vec<String> = std::iter::once("vramfit").chain(args.iter().copied()).map(String::from).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    vramfit::cli::run_from(argv, &env, &mut out, &mut err)
}

/// The inputs, by name.
const CASES: &[(&str, &[&str])] = &[
    ("plan 2^32 x 2, 8 GiB", &["plan", "sdxl", "decode", "4294967296x2", "--dtype", "fp16", "--free", "8GiB"]),
    (
        "max-tile-for 2^32-1 x 8, 6 GiB",
        &["reserve", "sdxl", "decode", "4294967295x8", "--dtype", "fp16", "--max-tile-for", "6GiB"],
    ),
    (
        "plan ltx2 10^6 x 10^6 x 2000 frames",
        &["plan", "ltx2", "decode", "1000000x1000000", "--frames", "2000", "--dtype", "bf16", "--free", "8GiB"],
    ),
    (
        "reserve ltx2 temporal tile 99999",
        &[
            "reserve",
            "ltx-2",
            "decode",
            "1248x704",
            "--frames",
            "121",
            "--tile",
            "512",
            "--temporal-tile",
            "99999",
            "--dtype",
            "bf16",
        ],
    ),
    (
        "reserve sd3 tile 4088 of 1024x4096",
        &["reserve", "sd3", "decode", "1024x4096", "--dtype", "fp16", "--tile", "4088"],
    ),
    ("reserve sdxl 1024^2 (a plain query)", &["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16"]),
    (
        "reserve --coefficients /dev/zero",
        &["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--coefficients", "/dev/zero"],
    ),
];

#[divan::bench(sample_count = 20, args = 0..CASES.len())]
fn worst_inputs(bencher: divan::Bencher, case: usize) {
    let (_, args) = CASES[case];
    // Every case answers (0, 1) or refuses (2), and never hangs or aborts.
    assert!(run(args) <= 2);
    bencher.bench(|| run(divan::black_box(args)));
}
