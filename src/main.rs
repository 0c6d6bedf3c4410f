//! The `vramfit` binary: the process's arguments, environment and streams
//! into [`vramfit::cli::run_on`], its result into the exit code (0
//! success, 1 findings, 2 usage or input error; a panic, a bug, exits 2
//! through `cli::guarded`).
//!
//! The allocator is the C library's, set up by [`vramfit::heap::tune`]
//! (why not mimalloc: benches/README.md, "The C library's allocator").

fn main() -> std::process::ExitCode {
    vramfit::heap::tune();
    vramfit::cli::quiet_panics();
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr());
    let env = vramfit::pricing::platform::EnvSnapshot::from_process();
    let terminal = vramfit::cli::terminal::Terminal::detect();
    let code = vramfit::cli::guarded(&mut std::io::stderr(), || {
        vramfit::cli::run_on(std::env::args_os(), &env, &terminal, &mut out, &mut err)
    });
    std::process::ExitCode::from(code)
}
