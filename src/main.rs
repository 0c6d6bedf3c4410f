//! The `vramfit` binary: the process's arguments, environment and streams
//! into [`vramfit::cli::run_from`], its result into the exit code (0
//! success, 1 findings, 2 usage or input error).

/// The C library's allocator for a small command, mimalloc for a large
/// one: each costs the other kind of command time (`vramfit::alloc`).
#[global_allocator]
static ALLOCATOR: vramfit::alloc::Hybrid = vramfit::alloc::Hybrid::new();

fn main() -> std::process::ExitCode {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr());
    let env = vramfit::pricing::platform::EnvSnapshot::from_process();
    let terminal = vramfit::cli::terminal::Terminal::detect();
    std::process::ExitCode::from(vramfit::cli::run_on(std::env::args_os(), &env, &terminal, &mut out, &mut err))
}
