//! Trust at the edges, the inputs and the outputs: ingest refuses a point
//! the pricer could not price; a folder output never writes through a link
//! planted in its folder; exit 2 means nothing was written; every input
//! file is read with a size bound.

use crate::common::*;
use std::fs;
use std::path::Path;

const HEADER: &str =
    "id,vae,op,tile,temporal_tile,conv_backend,allocator,run_dtype,width,height,frames,batch,reserved_mib,source";

/// A video row too large to price (frames past a u64, or a clip past 2^48
/// pixel-frames) is refused with its file, line and field, exit 2, and the
/// store is left as it was; so is a hand-edited store holding one.
#[test]
fn ingest_refuses_a_clip_the_pricer_cannot_price() {
    let rows = [
        "v-1,ltx2,decode,512,16,miopen,native,bf16,1248,704,18446744073709551615,1,3000,test",
        "v-2,ltx2,decode,512,16,miopen,native,bf16,16777216,16777216,4294967295,1,3000,test",
        "v-3,ltx2,decode,512,16,miopen,native,bf16,65536,65536,65537,1,3000,test",
    ];
    for row in rows {
        let root = scratch_of(&fixture("video"));
        let before = snapshot(root.path());
        let csv = root.path().join("new.csv");
        fs::write(&csv, format!("{HEADER}\n{row}\n")).unwrap();
        let out = vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&csv).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{row}: {}", stderr_of(&out));
        let err = stderr_of(&out);
        assert!(err.contains("new.csv:2: frames:") && err.contains("too large to price"), "{err}");
        let mut after = snapshot(root.path());
        after.retain(|(p, _)| !p.ends_with("new.csv"));
        assert_eq!(before, after, "{row}: nothing written");
    }
    // One frame under the bound is priceable and is stored.
    let root = scratch_of(&fixture("video"));
    let csv = root.path().join("new.csv");
    fs::write(&csv, format!("{HEADER}\nv-4,ltx2,decode,512,16,miopen,native,bf16,65536,65536,65536,1,3000,test\n"))
        .unwrap();
    let out = vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&csv).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // A store edited by hand to hold such a point is refused on load, naming it.
    let store = root.path().join("measurements/vae.json");
    let text = fs::read_to_string(&store).unwrap().replace("\"frames\":65536", "\"frames\":65537");
    fs::write(&store, text).unwrap();
    let out = vramfit().arg("--root").arg(root.path()).arg("verify").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("point 'v-4': frames:"), "{}", stderr_of(&out));
}

/// Links planted in the output folder: a `report.md` link to a file
/// outside, a `plots` link to another folder, a dangling `.png` link. Each
/// is refused by name, exit 2, and nothing is written anywhere.
#[cfg(unix)]
#[test]
fn folder_outputs_never_write_through_a_planted_link() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("bashrc");
    fs::write(&victim, "keep me\n").unwrap();
    let elsewhere = outside.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let png = {
        let out = tempfile::tempdir().unwrap();
        let ran = vramfit().args(["plot", "--out"]).arg(out.path()).output().unwrap();
        assert_eq!(ran.status.code(), Some(0), "{}", stderr_of(&ran));
        let name = fs::read_dir(out.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| n.ends_with(".png"))
            .unwrap();
        name
    };
    type Plant<'a> = Box<dyn Fn(&Path) + 'a>;
    let cases: Vec<(&str, Plant, &str)> = vec![
        ("report", Box::new(|d: &Path| symlink(&victim, d.join("report.md")).unwrap()), "report.md"),
        ("report", Box::new(|d: &Path| symlink(&elsewhere, d.join("plots")).unwrap()), "plots"),
        ("plot", Box::new(|d: &Path| symlink(outside.path().join("dangling.png"), d.join(&png)).unwrap()), ".png"),
        ("plot", Box::new(|d: &Path| symlink(&victim, d.join("index.html")).unwrap()), "index.html"),
    ];
    for (command, plant, name) in cases {
        let out = tempfile::tempdir().unwrap();
        plant(out.path());
        let before_out = listing(out.path());
        let before_outside = listing(outside.path());
        let ran = vramfit().arg(command).arg("--out").arg(out.path()).output().unwrap();
        assert_eq!(ran.status.code(), Some(2), "{command} with a link at {name}: {}", stderr_of(&ran));
        let err = stderr_of(&ran);
        assert!(err.contains("a symbolic link") && err.contains(name), "{err}");
        assert_eq!(before_out, listing(out.path()), "{command}/{name}: nothing written in the folder");
        assert_eq!(before_outside, listing(outside.path()), "{command}/{name}: nothing written outside");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me\n");
        assert!(!outside.path().join("dangling.png").exists());
    }
}

/// Every entry under `dir` with what it holds, links not followed (a
/// link as its target's name, a file as its bytes).
fn listing(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let m = fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                out.push((p.clone(), fs::read_link(&p).unwrap().into_os_string().into_encoded_bytes()));
            } else if m.is_dir() {
                out.push((p.clone(), Vec::new()));
                todo.push(p);
            } else {
                out.push((p.clone(), fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// A write that succeeded and an answer that could not be printed: exit 1,
/// naming what was written (exit 2 promises nothing was). A command that
/// writes nothing still exits 2.
#[cfg(target_os = "linux")]
#[test]
fn a_failed_print_after_a_write_says_what_was_written() {
    let full = || fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let bin = || std::process::Command::new(assert_cmd::cargo::cargo_bin("vramfit"));
    let root = scratch();
    let csv = root.path().join("new.csv");
    fs::write(
        &csv,
        "id,vae,op,conv_backend,allocator,run_dtype,width,height,reserved_mib,source\n\
         n-1,sd,decode,cudnn,native,fp16,1280,1280,4800,test\n",
    )
    .unwrap();
    let ingest = bin().arg("--root").arg(root.path()).arg("ingest").arg(&csv).stdout(full()).output().unwrap();
    assert_eq!(ingest.status.code(), Some(1), "{}", stderr_of(&ingest));
    assert!(stderr_of(&ingest).contains("written:") && stderr_of(&ingest).contains("vae.json"));
    assert!(fs::read_to_string(root.path().join("measurements/vae.json")).unwrap().contains("\"n-1\""));
    let emit = bin().arg("--root").arg(root.path()).args(["emit", "--force"]).stdout(full()).output().unwrap();
    assert_eq!(emit.status.code(), Some(1), "{}", stderr_of(&emit));
    assert!(stderr_of(&emit).contains("written:"), "{}", stderr_of(&emit));
    let verify = bin().arg("--root").arg(root.path()).arg("verify").stdout(full()).output().unwrap();
    assert_eq!(verify.status.code(), Some(2));
    assert!(!stderr_of(&verify).contains("written:"));
}

/// Every input read with a bound: the coefficients, the policy and the
/// store as links to an endless device end at once with exit 2 (a device
/// is no regular file, and is not opened for reading at all), and a regular
/// file past the bound is refused after one byte more than it.
#[cfg(unix)]
#[test]
fn an_endless_input_is_refused_not_read_forever() {
    let out = vramfit()
        .args(["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--coefficients", "/dev/zero"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("a device, not a regular file"), "{}", stderr_of(&out));
    let dir = scratch();
    let huge = dir.path().join("huge.json");
    // Sparse: 17 MiB of zeros that take no disk.
    fs::File::create(&huge).unwrap().set_len(17 << 20).unwrap();
    let out = vramfit()
        .args(["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--coefficients"])
        .arg(&huge)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("larger than"), "{}", stderr_of(&out));
    for file in ["fits/policy.toml", "measurements/vae.json", "fits/vae.json"] {
        let root = scratch();
        let path = root.path().join(file);
        fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        // `points` reads no coefficients file.
        let commands: &[&str] = if file == "fits/vae.json" { &["verify"] } else { &["verify", "points"] };
        for command in commands {
            let out = vramfit().arg("--root").arg(root.path()).arg(command).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{file} {command}: {}", stderr_of(&out));
        }
    }
}

/// Invisible format characters (a right-to-left override, a zero-width
/// space, a byte order mark inside text) are refused like control
/// characters: in a policy string (written or as a TOML escape) and in a
/// CSV field.
#[test]
fn format_characters_are_refused_like_control_characters() {
    for (written, shown) in
        [("\u{202E}", "U+202E"), ("\\u202E", "U+202E"), ("\\u200B", "U+200B"), ("\\u2066", "U+2066")]
    {
        let root = scratch();
        let policy = root.path().join("fits/policy.toml");
        let text = fs::read_to_string(&policy).unwrap();
        fs::write(
            &policy,
            format!(
                "{text}\n[[exception]]\nid = \"i7785061-sd15-decode-fp16-512x512\"\nreason = \"fine {written}enif\"\n"
            ),
        )
        .unwrap();
        for cmd in ["fit", "emit", "verify"] {
            let out = vramfit().arg("--root").arg(root.path()).arg(cmd).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{cmd} {shown}");
            let err = stderr_of(&out);
            assert!(err.contains("exception[1].reason: an invisible format character"), "{cmd}: {err}");
            let code = shown.trim_start_matches("U+").to_lowercase();
            assert!(err.contains(&format!("\\u{{{code}}}")), "{err}");
        }
    }
    let root = scratch();
    let csv = root.path().join("new.csv");
    fs::write(
        &csv,
        "id,vae,op,conv_backend,allocator,run_dtype,width,height,reserved_mib,source\n\
         n-1,sd,decode,cudnn,native,fp16,1280,1280,4800,made \u{202E}up\n",
    )
    .unwrap();
    let before = snapshot(&root.path().join("measurements"));
    let out = vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&csv).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("new.csv:2: source:"), "{}", stderr_of(&out));
    assert_eq!(before, snapshot(&root.path().join("measurements")));
}

/// A `bytes_per_score` of 0 or less would silently remove the attention
/// phase: refused in the policy (fit, emit, verify) and in a coefficients
/// file edited by hand (reserve).
#[test]
fn a_zero_or_negative_bytes_per_score_is_refused() {
    for value in ["0", "-1", "0.000"] {
        let root = scratch();
        let policy = root.path().join("fits/policy.toml");
        let text = fs::read_to_string(&policy).unwrap();
        let at = text.find("bytes_per_score = \"").unwrap();
        let end = at + text[at..].find('\n').unwrap();
        fs::write(&policy, format!("{}bytes_per_score = \"{value}\"{}", &text[..at], &text[end..])).unwrap();
        for cmd in ["fit", "emit", "verify"] {
            let out = vramfit().arg("--root").arg(root.path()).arg(cmd).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{cmd} {value}: {}", stdout_of(&out));
            // A negative number is already refused as one; 0 by its meaning.
            let want = if value.starts_with('-') {
                "bytes_per_score: expected a non-negative"
            } else {
                "bytes_per_score: more than 0"
            };
            assert!(stderr_of(&out).contains(want), "{cmd}: {}", stderr_of(&out));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vae.json");
    let shipped = fs::read_to_string(repo().join("fits/vae.json")).unwrap();
    let at = shipped.find("\"bytes_per_score\": \"").unwrap();
    let end = at + shipped[at..].find(',').unwrap();
    fs::write(&file, format!("{}\"bytes_per_score\": \"0\"{}", &shipped[..at], &shipped[end..])).unwrap();
    let out = vramfit()
        .args(["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--backend", "miopen", "--coefficients"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("bytes_per_score: more than 0"), "{}", stderr_of(&out));
}

/// A family whose decoder runs every frame at once (mochi) takes no
/// temporal tile: refused in a query and in a CSV row, as a causal one is.
#[test]
fn a_temporal_tile_is_refused_where_the_walk_has_none() {
    let out = vramfit()
        .args(["reserve", "mochi", "decode", "848x480", "--frames", "31", "--temporal-tile", "8", "--dtype", "bf16"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("decodes every frame at once and takes no temporal tile"), "{}", stderr_of(&out));
    // 0 (every frame at once) is what it does: accepted.
    let out = vramfit()
        .args(["reserve", "mochi", "decode", "848x480", "--frames", "31", "--temporal-tile", "0", "--dtype", "bf16"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let root = scratch_of(&fixture("docs"));
    let csv = root.path().join("new.csv");
    fs::write(&csv, format!("{HEADER}\nm-1,mochi,decode,0,8,cudnn,native,bf16,848,480,31,1,9000,test\n")).unwrap();
    let out = vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&csv).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("new.csv:2: temporal_tile:"), "{}", stderr_of(&out));
}

/// A declared mid-block attention is priced on every path of its family:
/// Wan 2.1 (a video family) on a math-kernel platform takes the attention
/// phase of one latent frame, as an image family of the same shape does.
#[test]
fn a_video_familys_attention_is_priced_on_the_video_path() {
    let price = |model: &str| {
        let out = vramfit()
            .args(["--format", "json", "reserve", model, "decode", "2048x2048", "--dtype", "fp16"])
            .args(["--backend", "miopen", "--os", "linux"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        json_of(&out)
    };
    let (wan, qwen) = (price("wan2.1"), price("qwen-image"));
    assert_eq!(wan["rule"], "attention-phase", "{wan}");
    // One latent frame of Wan's causal step: the same S² scores as the image family's.
    assert_eq!(wan["attention"]["sequence"], qwen["attention"]["sequence"]);
    assert_eq!(wan["attention"]["score_bytes"], qwen["attention"]["score_bytes"]);
}

/// The worst inputs benches/edges.rs times (`tests/fixtures/worst_inputs.json`),
/// each run once in-process on a Linux host: each answers or refuses with
/// its exit code, never hangs, aborts or panics. (This replaced CI's
/// one-sample run of the benchmark, which asserted only that they ran.)
#[test]
fn the_worst_inputs_answer_with_their_exit_codes() {
    let table: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("worst_inputs.json")).unwrap()).unwrap();
    let cases = table["cases"].as_array().unwrap();
    assert!(cases.len() >= 7);
    for c in cases {
        let args: Vec<String> = c["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
        let ran = run_in_process(&args).unwrap_or_else(|p| panic!("{}: panicked: {p}", c["name"]));
        assert_eq!(u64::from(ran.code), c["exit"].as_u64().unwrap(), "{}: {}", c["name"], ran.err);
    }
}
