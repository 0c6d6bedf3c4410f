//! The `vramfit` binary: the process's arguments, environment and streams
//! into [`vramfit::cli::run_from`], its result into the exit code (0
//! success, 1 findings, 2 usage or input error).

/// mimalloc keeps the pages it has touched for reuse: with glibc's
/// allocator, a command on 10^5 points spent a third of its time in the
/// kernel faulting pages in for its worker threads' arenas. It is built
/// without transparent huge pages (`no_thp` in Cargo.toml): with them each
/// first touch zeroed 2 MiB, a fifth of a small command's time, and peak
/// memory at 10^6 points varied by 200 MiB from run to run.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr());
    let env = vramfit::pricing::platform::EnvSnapshot::from_process();
    let terminal = vramfit::cli::terminal::Terminal::detect();
    std::process::ExitCode::from(vramfit::cli::run_on(std::env::args_os(), &env, &terminal, &mut out, &mut err))
}
