//! The `vramfit` binary: parse, run, map the outcome to the documented exit
//! codes (0 success, 1 findings, 2 usage or input error).

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(vramfit::cli::main())
}
