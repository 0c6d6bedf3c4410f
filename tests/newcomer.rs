//! What a newcomer meets first: a typo, a name that means two VAEs, a sign
//! typed by mistake, the help of `--os`, the count `--version` gives. Each
//! answer says what happened in words, and the same words in Python.

use crate::common::*;

fn run(args: &[&str]) -> Ran {
    run_in_process(args).expect("no panic")
}

#[test]
fn a_model_typo_gets_a_guess_and_a_short_message() {
    let r = run(&["reserve", "sdxxl", "decode", "1024x1024", "--dtype", "fp16"]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("unknown vae or model 'sdxxl': did you mean 'sdxl'?"), "{}", r.err);
    assert!(r.err.len() < 300, "{} characters: {}", r.err.len(), r.err);
    // A model name a typo away is guessed too, whatever its case.
    let r = run(&["reserve", "FLUX1-DEVV", "decode", "1024x1024", "--dtype", "bf16"]);
    assert!(r.err.contains("did you mean 'flux1-dev'?"), "{}", r.err);
    // Nothing near: the names it knows, and no guess.
    let r = run(&["reserve", "zzzzzzzz", "decode", "1024x1024", "--dtype", "fp16"]);
    assert!(r.err.contains("(known: ") && !r.err.contains("did you mean"), "{}", r.err);
    // A name of one or two letters is not "a typo away" from everything.
    let r = run(&["reserve", "q", "decode", "1024x1024", "--dtype", "fp16"]);
    assert!(!r.err.contains("did you mean"), "{}", r.err);
}

#[test]
fn the_guess_is_the_nearest_name_by_edits() {
    let file = vramfit::contract::parse(vramfit::contract::EMBEDDED, "embedded").unwrap();
    let registry = vramfit::registry::Registry(file.registry);
    assert_eq!(registry.nearest("sdxl"), Some("sdxl"));
    assert_eq!(registry.nearest("sd-xl"), Some("sdxl"));
    assert_eq!(registry.nearest("WAN2.l"), Some("wan2.1"));
    assert_eq!(registry.nearest("completely-else"), None);
    // Two edits between two short names of two families is no typo.
    assert_eq!(registry.nearest("ltx2"), Some("ltx2"));
    assert_eq!(registry.nearest("ltx3"), Some("ltx2"));
    assert_eq!(registry.nearest("lux9"), None);
}

/// A name that covers two VAEs is refused with the names that choose one:
/// `wan2.2` (Wan 2.2 A14B ships Wan 2.1's VAE, TI2V-5B its own) and `wan`
/// (InvokeAI's base of both), in any case; the names that say which VAE
/// price.
#[test]
fn a_name_that_covers_two_vaes_is_refused_with_the_choice_named() {
    let args = |m: &str| {
        ["--format", "json", "reserve", m, "decode", "1280x704", "--frames", "81", "--dtype", "bf16", "--os", "linux"]
            .map(str::to_string)
            .to_vec()
    };
    for m in ["Wan2.2", "wan", " WAN "] {
        let r = run_in_process(&args(m)).unwrap();
        assert_eq!(r.code, 2, "{m}: {}", r.out);
        let asked = m.trim().to_ascii_lowercase();
        assert!(r.err.contains(&format!("'{asked}' names more than one VAE")), "{m}: {}", r.err);
        assert!(r.err.contains("wan2.2-a14b") && r.err.contains("wan2.2-ti2v-5b"), "{m}: {}", r.err);
    }
    for (m, family) in
        [("wan2.2-5b", "wan22"), ("wan2.2-ti2v-5b", "wan22"), ("wan2.2-a14b", "wan21"), ("wan22", "wan22")]
    {
        let r = run_in_process(&args(m)).unwrap();
        assert_eq!(r.code, 0, "{m}: {}", r.err);
        let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
        assert_eq!(v["line"]["vae"], family, "{m}");
    }
}

/// `cosmos` alone names Cosmos 1.0's wavelet tokenizer and the Wan 2.1 VAE
/// Cosmos 2 and 2.5 decode through (diffusers' Cosmos2*Pipeline takes
/// AutoencoderKLWan): refused with both choices; the versioned names price.
#[test]
fn cosmos_alone_is_refused_and_its_versions_name_their_vae() {
    let args = |m: &str| {
        ["--format", "json", "reserve", m, "decode", "832x480", "--frames", "17", "--dtype", "bf16", "--os", "linux"]
            .map(str::to_string)
            .to_vec()
    };
    let r = run_in_process(&args("Cosmos")).unwrap();
    assert_eq!(r.code, 2, "{}", r.out);
    assert!(r.err.contains("'cosmos' names more than one VAE"), "{}", r.err);
    assert!(r.err.contains("cosmos-1.0") && r.err.contains("cosmos-2"), "{}", r.err);
    for (m, family) in [("cosmos-1.0", "cosmos1"), ("cosmos-2", "wan21"), ("cosmos-predict2.5", "wan21")] {
        let r = run_in_process(&args(m)).unwrap();
        assert_eq!(r.code, 0, "{m}: {}", r.err);
        let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
        assert_eq!(v["line"]["vae"], family, "{m}");
    }
}

#[test]
fn an_ambiguous_name_must_be_one_of_the_familys_models() {
    let dir = scratch();
    copy_dir(&fixture("root"), dir.path());
    let policy = dir.path().join("fits/policy.toml");
    let text = std::fs::read_to_string(&policy).unwrap();
    let family = text.lines().find_map(|l| l.strip_prefix("[vae.")?.strip_suffix(']')).unwrap().to_string();
    let edited =
        text.replace(&format!("[vae.{family}]\n"), &format!("[vae.{family}]\nambiguous = {{ \"nope\" = \"x\" }}\n"));
    assert_ne!(edited, text);
    std::fs::write(&policy, edited).unwrap();
    let r = run(&["--root", &dir.path().display().to_string(), "fit"]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains(&format!("vae.{family}: ambiguous.nope: not one of {family}'s models")), "{}", r.err);
}

#[test]
fn a_negative_size_is_refused_in_its_own_words() {
    let r = run(&["reserve", "sdxl", "decode", "-1024x1024", "--dtype", "fp16"]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("size '-1024x1024': width must be a positive integer"), "{}", r.err);
    assert!(!r.err.contains("unexpected argument"), "{}", r.err);
}

#[test]
fn the_os_help_names_every_value_it_accepts() {
    let r = run(&["reserve", "--help"]);
    let os = r.out.split("--os <OS>").nth(1).unwrap().split("--coefficients").next().unwrap();
    for value in ["auto", "linux", "windows", "macos", "any"] {
        assert!(os.contains(value), "--os help lacks {value}: {os}");
    }
}

#[test]
fn the_version_says_why_its_count_is_not_verifys() {
    let r = run(&["--version"]);
    let v = &r.out;
    assert!(v.contains("keys too thin to fit, on ") && v.contains("`vramfit verify` counts every stored point"), "{v}");
    // Both counts are the shipped file's own.
    let file = vramfit::contract::parse(vramfit::contract::EMBEDDED, "embedded").unwrap();
    let lines: usize = file.lines.iter().map(|l| l.points).sum();
    let thin: usize = file.insufficient.iter().map(|l| l.points).sum();
    assert!(v.contains(&format!("on {lines} points; ")) && v.contains(&format!("on {thin} more")), "{v}");
}

/// An input error's annotation is placed by the error's data: a TOML syntax
/// error on its line, a policy entry in the policy, a store point on its
/// store line; an error with no file on none.
#[test]
fn input_errors_are_annotated_from_their_place() {
    let dir = scratch();
    copy_dir(&fixture("root"), dir.path());
    let root = dir.path().display().to_string();
    let policy = dir.path().join("fits/policy.toml");
    let text = std::fs::read_to_string(&policy).unwrap();
    // A syntax error on line 3.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(2, "margin = = 1");
    std::fs::write(&policy, lines.join("\n") + "\n").unwrap();
    let r = run(&["--root", &root, "--format", "github", "verify"]);
    assert_eq!(r.code, 2);
    assert!(r.out.starts_with("::error file=") && r.out.contains("policy.toml,line=3,"), "{}", r.out);
    // An error that names no file: no file in the annotation.
    let r = run(&["--format", "github", "reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--batch", "0"]);
    assert_eq!(r.code, 2);
    assert!(r.out.starts_with("::error title=") || !r.out.contains("file="), "{}", r.out);
}
