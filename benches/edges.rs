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

/// The inputs, by name, with the exit code each gives: one table with
/// the test that runs them once (`tests/fixtures/worst_inputs.json`).
fn cases() -> Vec<(String, Vec<String>)> {
    let table: serde_json::Value = serde_json::from_str(include_str!("../tests/fixtures/worst_inputs.json")).unwrap();
    table["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let args = c["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
            (c["name"].as_str().unwrap().to_string(), args)
        })
        .collect()
}

/// How many cases the table holds (divan's arguments are fixed at build time).
const CASES: usize = 7;

#[divan::bench(sample_count = 20, args = 0..CASES)]
fn worst_inputs(bencher: divan::Bencher, case: usize) {
    let all = cases();
    assert_eq!(all.len(), CASES, "tests/fixtures/worst_inputs.json holds {} cases", all.len());
    let args: Vec<&str> = all[case].1.iter().map(String::as_str).collect();
    // Every case answers (0, 1) or refuses (2), and never hangs or aborts.
    assert!(run(&args) <= 2);
    bencher.bench(|| run(divan::black_box(&args)));
}
