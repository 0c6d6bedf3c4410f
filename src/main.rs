//! The `vramfit` binary: the process's arguments, environment and streams
//! into [`vramfit::cli::run_on`], its result into the exit code (0
//! success, 1 findings, 2 usage or input error).
//!
//! The allocator is the C library's, set up by [`vramfit::heap::tune`]
//! (why not mimalloc: benches/README.md, "The C library's allocator").

fn main() -> std::process::ExitCode {
    vramfit::heap::tune();
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr());
    let env = vramfit::pricing::platform::EnvSnapshot::from_process();
    let terminal = vramfit::cli::terminal::Terminal::detect();
    std::process::ExitCode::from(vramfit::cli::run_on(std::env::args_os(), &env, &terminal, &mut out, &mut err))
}
