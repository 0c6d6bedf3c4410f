//! Shell completions and the man page are generated from the same command
//! definition the binary parses with, so they name every subcommand and flag.

use crate::common::*;

const SUBCOMMANDS: &[&str] =
    &["ingest", "fit", "emit", "verify", "reserve", "plan", "diff", "crossval", "plot", "report", "points", "schema"];

fn stdout(args: &[&str]) -> String {
    let out = vramfit().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn completions_name_every_subcommand_in_every_shell() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let script = stdout(&["completions", shell]);
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{shell}: {sub} missing");
        }
        assert!(script.contains("coefficients"), "{shell}: flags");
        if shell != "powershell" {
            assert!(script.contains("markdown"), "{shell}: the values of --format");
        }
    }
    // The bash script is valid bash.
    let script = stdout(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vramfit.bash");
    std::fs::write(&path, script).unwrap();
    let check = std::process::Command::new("bash").arg("-n").arg(&path).status().unwrap();
    assert!(check.success());
    vramfit().args(["completions", "tcsh"]).assert().code(2);
}

#[test]
fn the_man_page_documents_every_subcommand() {
    let page = stdout(&["man"]);
    assert!(page.contains(".TH vramfit 1"), "a section-1 page");
    assert!(page.contains(&format!("vramfit {}", env!("CARGO_PKG_VERSION"))));
    for sub in SUBCOMMANDS {
        assert!(page.contains(&format!("vramfit\\-{sub}")) || page.contains(sub), "{sub} missing");
    }
    assert!(page.contains("\\-\\-root"), "global flags are listed");
}
