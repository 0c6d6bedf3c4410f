//! The hosts' own calling conventions (docs/hosts.md): InvokeAI's and
//! ComfyUI's drop-ins and `vramfit.plan` answer what the CLI answers for the
//! same query. Each host-style call is written beside the CLI query it must
//! equal by hand, so the test states the translation (latents × 8, the
//! tile sentinels, batch from the tensor, the platform from torch) rather
//! than reusing the package's own.

use crate::common::{repo, stderr_of, vramfit};
use serde_json::{json, Value};
use vramfit::pricing::platform::EnvSnapshot;

fn python_run(input: &Value) -> Vec<Value> {
    crate::python_package::python_json("hosts.py", input)
}

/// The CLI's answer (exit 0: its JSON; exit 2: its first error line).
fn cli(args: &str) -> Result<Value, String> {
    let mut a: Vec<String> = vec!["vramfit".into(), "--format".into(), "json".into()];
    a.extend(args.split_whitespace().map(String::from));
    a.extend(["--coefficients".into(), repo().join("fits/vae.json").display().to_string()]);
    let env = EnvSnapshot { vars: Default::default(), host_os: Some(vramfit::vocab::Os::Linux) };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    match vramfit::cli::run_from(a, &env, &mut out, &mut err) {
        0 | 1 => Ok(serde_json::from_slice(&out).unwrap()),
        _ => Err(String::from_utf8_lossy(&err).lines().next().unwrap_or("").to_string()),
    }
}

fn tensor(dims: &[u64]) -> Value {
    json!({ "tensor": dims })
}

fn vae(dtype: &str) -> Value {
    json!({ "vae": { "dtype": dtype, "attrs": { "tile_sample_min_size": 512 } } })
}

fn wan_vae(dtype: &str, z_dim: u64) -> Value {
    json!({ "vae": { "dtype": dtype, "config": { "z_dim": z_dim } } })
}

/// (the host's call, the `vramfit reserve` query it must equal).
fn cases() -> Vec<(Value, &'static str)> {
    let linux = json!({ "env": {}, "os": "linux" });
    let call = |name: &str, args: Value, extra: Value| {
        let mut kwargs = linux.clone();
        kwargs.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({ "call": name, "args": args, "kwargs": kwargs })
    };
    let rocm = |mut c: Value| {
        c["torch_hip"] = json!("6.2");
        c
    };
    let sd = "invokeai.estimate_vae_working_memory_sd15_sdxl";
    let flux2 = "invokeai.estimate_vae_working_memory_flux2";
    let qwen = "invokeai.estimate_vae_working_memory_qwen_image";
    let wan = "invokeai.estimate_vae_working_memory_wan";
    let ltx = "invokeai.estimate_vae_working_memory_ltx2";
    let decode = "comfyui.memory_used_decode";
    let encode = "comfyui.memory_used_encode";
    vec![
        // InvokeAI: a decode's tensor is the latents (× 8), an encode's the pixels.
        (call(sd, json!(["decode", tensor(&[1, 4, 128, 128]), vae("torch.float16"), null, false]), json!({})),
         "reserve sdxl decode 1024x1024 --dtype fp16 --os linux"),
        // A host that has already decoded in this process: the first use left out.
        (call(sd, json!(["decode", tensor(&[1, 4, 128, 128]), vae("torch.float16"), null, false]), json!({"warm": true})),
         "reserve sdxl decode 1024x1024 --dtype fp16 --os linux --warm"),
        (call(decode, json!(["sdxl", [1, 4, 128, 128], "fp16"]), json!({"warm": true})),
         "reserve sdxl decode 1024x1024 --dtype fp16 --host comfyui --os linux --warm"),
        (call(sd, json!(["decode", tensor(&[2, 4, 96, 128]), vae("torch.float16"), 0, false]), json!({})),
         "reserve sd decode 1024x768 --batch 2 --tile 512 --dtype fp16 --host diffusers --os linux"),
        (call(sd, json!(["decode", tensor(&[1, 4, 192, 192]), vae("torch.float16"), null, true]), json!({})),
         "reserve sd decode 1536x1536 --dtype fp32 --loaded-dtype fp16 --os linux"),
        (call(sd, json!(["encode", tensor(&[1, 3, 1024, 1024]), vae("torch.float32"), 768, true]), json!({})),
         "reserve sd encode 1024x1024 --tile 768 --dtype fp32 --os linux"),
        (call("invokeai.estimate_vae_working_memory_flux", json!(["decode", tensor(&[1, 16, 128, 160]), vae("torch.bfloat16")]), json!({})),
         "reserve flux1 decode 1280x1024 --dtype bf16 --host invokeai-flux --os linux"),
        (rocm(call(flux2, json!(["decode", tensor(&[1, 32, 160, 96]), vae("torch.bfloat16")]), json!({"device": {"device": "cuda"}}))),
         "reserve flux2 decode 768x1280 --dtype bf16 --backend miopen --os linux"),
        (call(flux2, json!(["encode", tensor(&[1, 3, 1024, 1024]), vae("torch.bfloat16"), 512]), json!({})),
         "reserve flux2 encode 1024x1024 --tile 512 --dtype bf16 --backend cudnn --os linux"),
        (call(flux2, json!(["decode", tensor(&[3, 32, 128, 128]), vae("torch.bfloat16")]), json!({"device": {"device": "mps"}})),
         "reserve flux2 decode 1024x1024 --batch 3 --dtype bf16 --backend mps --os linux"),
        (call(qwen, json!(["decode", tensor(&[1, 16, 1, 160, 160]), vae("torch.bfloat16"), 512]), json!({})),
         "reserve qwen_image decode 1280x1280 --tile 512 --dtype bf16 --os linux"),
        (rocm(call(qwen, json!(["encode", tensor(&[1, 3, 1, 1440, 2560]), vae("torch.bfloat16")]), json!({}))),
         "reserve qwen_image encode 2560x1440 --dtype bf16 --backend miopen --os linux"),
        (call("invokeai.estimate_vae_working_memory_sd3", json!(["decode", tensor(&[1, 16, 128, 128]), vae("torch.float16")]), json!({})),
         "reserve sd3 decode 1024x1024 --dtype fp16 --os linux"),
        (call("invokeai.estimate_vae_working_memory_cogview4", json!(["encode", tensor(&[1, 3, 1024, 1024]), vae("torch.bfloat16")]), json!({})),
         "reserve cogview4 encode 1024x1024 --dtype bf16 --os linux"),
        (call("invokeai.estimate_vae_working_memory_anima", json!(["decode", tensor(&[1, 16, 1, 128, 128]), vae("torch.bfloat16"), null]), json!({})),
         "reserve wan21 decode 1024x1024 --dtype bf16 --os linux"),
        (call(wan, json!(["decode", wan_vae("torch.float16", 16), 480, 832, 81]), json!({})),
         "reserve wan21 decode 832x480 --frames 81 --dtype fp16 --os linux"),
        (call(wan, json!(["decode", wan_vae("torch.bfloat16", 48), 704, 1280, 121, 256]), json!({"streaming": true})),
         "reserve wan22 decode 1280x704 --frames 121 --tile 256 --dtype bf16 --os linux"),
        (call(wan, json!(["encode", wan_vae("torch.float16", 16), 480, 832, 1]), json!({"allocator": "cudaMallocAsync"})),
         "reserve wan21 encode 832x480 --dtype fp16 --allocator cudaMallocAsync --os linux"),
        (rocm(call(ltx, json!(["decode", {"vae": {"dtype": "torch.bfloat16"}}, 704, 1248, 121]), json!({}))),
         "reserve ltx2 decode 1248x704 --frames 121 --tile 512 --temporal-tile 16 --dtype bf16 --backend miopen --os linux"),
        (rocm(call(ltx, json!(["encode", {"vae": {"dtype": "torch.bfloat16"}}, 704, 1248, 121]), json!({}))),
         "reserve ltx2 encode 1248x704 --frames 121 --tile 0 --temporal-tile 0 --dtype bf16 --backend miopen --os linux"),
        (call(ltx, json!(["encode", {"vae": {"dtype": "torch.bfloat16"}}, 1088, 1920, 241, 768, 32, true]), json!({})),
         "reserve ltx2 encode 1920x1088 --frames 241 --tile 768 --temporal-tile 32 --dtype bf16 --os linux"),
        // MiniMax-H3 as InvokeAI 7.0 asks it: pixels, the class's own 256 px tiles while use_tiling holds.
        (rocm(call("invokeai.estimate_vae_working_memory_minimax_h3",
                   json!(["decode", {"vae": {"dtype": "torch.float32", "attrs": {"use_tiling": true, "tile_sample_min_height": 256}}}, 1344, 768, 90]),
                   json!({}))),
         "reserve minimax-h3 decode 768x1344 --frames 90 --tile 256 --dtype fp32 --backend miopen --os linux"),
        (call("invokeai.estimate_vae_working_memory_minimax_h3",
              json!(["encode", {"vae": {"dtype": "torch.bfloat16", "attrs": {"use_tiling": false}}}, 480, 832, 1]),
              json!({})),
         "reserve minimax_h3 encode 832x480 --dtype bf16 --os linux"),
        // No dtype on the parameters: the element size (4 bytes is fp32).
        (call(sd, json!(["decode", tensor(&[1, 4, 64, 64]), {"vae": {"element_size": 4}}, null, false]), json!({})),
         "reserve sd decode 512x512 --dtype fp32 --os linux"),
        // ComfyUI: per batch item, latents [B, C, (T,) h, w], pixels with the channels first.
        (call(decode, json!(["sdxl", [4, 4, 128, 128], "torch.float16"]), json!({})),
         "reserve sdxl decode 1024x1024 --dtype fp16 --host comfyui --os linux"),
        (call(decode, json!(["wan21", [1, 16, 21, 60, 104], "torch.float16"]), json!({})),
         "reserve wan21 decode 832x480 --frames 81 --dtype fp16 --host comfyui --os linux"),
        (call(decode, json!(["hunyuanvideo", [1, 16, 33, 90, 160], "torch.bfloat16"]), json!({})),
         "reserve hunyuanvideo decode 1280x720 --frames 129 --dtype bf16 --host comfyui --os linux"),
        (call(decode, json!(["ltx2", [1, 128, 16, 22, 39], "torch.bfloat16"]), json!({"backend": "miopen"})),
         "reserve ltx2 decode 1248x704 --frames 121 --dtype bf16 --host comfyui --backend miopen --os linux"),
        // HunyuanVideo 1.5: 32 channels at 1/16, 4x in time.
        (call(decode, json!(["hunyuanvideo-1.5", [1, 32, 21, 45, 80], "torch.bfloat16"]), json!({})),
         "reserve hunyuanvideo15 decode 1280x720 --frames 81 --dtype bf16 --host comfyui --os linux"),
        // LTX-Video 0.9.x: the same ComfyUI type, its own VAE.
        (call(decode, json!(["ltx-video", [1, 128, 16, 16, 24], "torch.bfloat16"]), json!({})),
         "reserve ltxv decode 768x512 --frames 121 --dtype bf16 --host comfyui --os linux"),
        // HunyuanImage 2.1: 64 channels at 1/32, an image type; Cosmos 1.0: 16 channels, 8x8x8.
        (call(decode, json!(["hunyuanimage-2.1", [1, 64, 64, 64], "torch.bfloat16"]), json!({})),
         "reserve hunyuanimage decode 2048x2048 --dtype bf16 --host comfyui --os linux"),
        // HunyuanImage 2.1's refiner: a 3-D type ComfyUI asks with one-frame latents.
        (call(decode, json!(["hunyuanimage-2.1-refiner", [1, 32, 1, 64, 64], "torch.bfloat16"]), json!({})),
         "reserve hunyuanimage_refiner decode 1024x1024 --dtype bf16 --host comfyui --os linux"),
        (call(decode, json!(["cosmos-1.0", [1, 16, 16, 88, 160], "torch.bfloat16"]), json!({})),
         "reserve cosmos1 decode 1280x704 --frames 121 --dtype bf16 --host comfyui --os linux"),
        (call(encode, json!(["cosmos-1.0", [1, 3, 121, 704, 1280], "torch.bfloat16"]), json!({})),
         "reserve cosmos1 encode 1280x704 --frames 121 --dtype bf16 --host comfyui --os linux"),
        (call(decode, json!(["wan2.2-5b", [1, 48, 31, 44, 80], "torch.bfloat16"]), json!({})),
         "reserve wan22 decode 1280x704 --frames 121 --dtype bf16 --host comfyui --os linux"),
        (call(encode, json!(["flux1", [1, 3, 1024, 768], "torch.bfloat16"]), json!({})),
         "reserve flux1 encode 768x1024 --dtype bf16 --host comfyui --os linux"),
        (call(encode, json!(["wan21", [1, 3, 81, 480, 832], "torch.float16"]), json!({})),
         "reserve wan21 encode 832x480 --frames 81 --dtype fp16 --host comfyui --os linux"),
        (call(encode, json!(["qwen_image", [1, 3, 1, 1328, 1328], "torch.bfloat16"]), json!({})),
         "reserve qwen_image encode 1328x1328 --frames 1 --dtype bf16 --host comfyui --os linux"),
    ]
}

#[test]
fn the_drop_ins_answer_what_reserve_answers_for_the_same_query() {
    let cases = cases();
    let answers = python_run(&Value::Array(cases.iter().map(|(c, _)| c.clone()).collect()));
    for ((call, query), py) in cases.iter().zip(answers) {
        let want = cli(query).unwrap_or_else(|e| panic!("{query}: {e}"));
        assert_eq!(py.get("ok"), Some(&want["bytes"]), "{call} ≠ {query}: {py}");
    }
}

#[test]
fn a_refused_host_call_raises_the_clis_words() {
    let linux = json!({ "env": {}, "os": "linux" });
    let calls = [
        (
            json!({"call": "comfyui.memory_used_decode", "args": ["nosuchvae", [1, 4, 64, 64], "fp16"], "kwargs": linux}),
            "reserve nosuchvae decode 512x512 --dtype fp16 --os linux",
        ),
        (
            json!({"call": "comfyui.memory_used_decode", "args": ["sdxl", [1, 4, 64, 64], "int8"], "kwargs": linux}),
            "reserve sdxl decode 512x512 --dtype int8 --os linux",
        ),
        (
            json!({"call": "invokeai.estimate_vae_working_memory_wan",
                "args": ["decode", wan_vae("torch.float16", 16), 480, 832, 81, 7], "kwargs": linux}),
            "reserve wan21 decode 832x480 --frames 81 --tile 7 --dtype fp16 --os linux",
        ),
    ];
    let answers = python_run(&Value::Array(calls.iter().map(|(c, _)| c.clone()).collect()));
    for ((call, query), py) in calls.iter().zip(answers) {
        let err = cli(query).expect_err(query);
        let words = py["error"].as_str().unwrap_or_else(|| panic!("{call} was not refused: {py}"));
        // A flag's value the CLI's parser refuses carries the flag's name
        // before the same words (a keyword has no flag).
        assert!(err.starts_with("error: ") && err.ends_with(words), "{call}: {err} / {words}");
    }
}

/// (`vramfit.plan` keyword arguments, the `vramfit plan` query).
fn plans() -> Vec<(Value, String)> {
    let mut out = Vec::new();
    let image = [
        ("sdxl", "decode", 1024, 1024, "fp16", "cudnn"),
        ("sdxl", "decode", 4096, 4096, "fp16", "cudnn"),
        ("sdxl", "decode", 2048, 2048, "fp32", "cudnn"),
        ("flux1", "decode", 2048, 1536, "bf16", "cudnn"),
        ("flux2", "encode", 1536, 1536, "bf16", "miopen"),
        ("sdxl", "decode", 4096, 4096, "fp16", "mps"),
        ("cogview4", "decode", 2048, 2048, "bf16", "cudnn"),
        ("qwen_image", "decode", 2560, 1440, "fp16", "cudnn"),
    ];
    for (i, (model, op, w, h, dtype, backend)) in image.into_iter().enumerate() {
        for (free_mib, batch) in [(24 * 1024u64, 16u64), (6 * 1024, 1), (512, 1), (80 * 1024, 4)] {
            let tile = if i % 3 == 2 { 512 } else { 0 };
            let kw = json!({"free": free_mib << 20, "batch": batch, "dtype": dtype, "backend": backend, "os": "linux",
                            "env": {}, "tile": tile});
            out.push((
                json!({"plan": kw, "args": [model, op, w, h]}),
                format!(
                    "plan {model} {op} {w}x{h} --free {free_mib}MiB --batch {batch} --dtype {dtype} --backend {backend} \
                     --os linux --tile {tile}"
                ),
            ));
        }
    }
    let video = [
        ("wan21", 1280, 720, 81, "bf16", "cudnn"),
        ("ltx2", 1248, 704, 121, "bf16", "miopen"),
        ("hunyuanvideo", 1280, 720, 129, "bf16", "cudnn"),
        ("cogvideox", 720, 480, 49, "bf16", "cudnn"),
    ];
    for (model, w, h, frames, dtype, backend) in video {
        for free_mib in [2048u64, 8 * 1024, 140 * 1024] {
            let kw = json!({"free": free_mib << 20, "frames": frames, "dtype": dtype, "backend": backend, "os": "linux",
                            "env": {}, "share": "0.75", "cap": 100u64 << 30});
            out.push((
                json!({"plan": kw, "args": [model, "decode", w, h]}),
                format!(
                    "plan {model} decode {w}x{h} --free {free_mib}MiB --frames {frames} --dtype {dtype} --backend \
                     {backend} --os linux --share 0.75 --cap 100GiB"
                ),
            ));
        }
    }
    out
}

#[test]
fn plan_in_python_answers_what_vramfit_plan_answers() {
    let plans = plans();
    let answers = python_run(&Value::Array(plans.iter().map(|(p, _)| p.clone()).collect()));
    let mut verdicts = std::collections::BTreeSet::new();
    for ((kw, query), py) in plans.iter().zip(answers) {
        let want = cli(query).unwrap_or_else(|e| panic!("{query}: {e}"));
        assert_eq!(py.get("ok"), Some(&want), "{kw} ≠ {query}");
        verdicts.insert(want["verdict"].as_str().unwrap().to_string());
    }
    // Every verdict a VAE plan can give was compared.
    assert_eq!(verdicts.into_iter().collect::<Vec<_>>(), ["chunked", "full", "host", "tiled"]);
    // The same refusals, in the same words.
    let refused = [
        (
            json!({"plan": {"free": 0, "dtype": "fp16"}, "args": ["sdxl", "decode", 1024, 1024]}),
            "plan sdxl decode 1024x1024 --free 0 --dtype fp16",
        ),
        (
            json!({"plan": {"free": 1u64 << 30, "share": "1.5", "dtype": "fp16"}, "args": ["sdxl", "decode", 1024, 1024]}),
            "plan sdxl decode 1024x1024 --free 1GiB --share 1.5 --dtype fp16",
        ),
        (
            json!({"plan": {"free": 1u64 << 30}, "args": ["nosuchvae", "decode", 1024, 1024]}),
            "plan nosuchvae decode 1024x1024 --free 1GiB",
        ),
    ];
    let answers = python_run(&Value::Array(refused.iter().map(|(p, _)| p.clone()).collect()));
    for ((kw, query), py) in refused.iter().zip(answers) {
        let err = cli(query).expect_err(query);
        let words = py["error"].as_str().unwrap_or_else(|| panic!("{kw} was not refused: {py}"));
        assert_eq!(err, format!("error: {words}"), "{kw}");
    }
}

/// A root of SD decodes measured at three sizes (one a 512-px tile, one fp32
/// at batch 2), with a declared host estimator and its refusals.
fn against_root(estimators: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("fits")).unwrap();
    std::fs::write(root.join("fits/policy.toml"), format!("[vae.sd]\nmodels = [\"sdxl\"]\n\n{TILING}{estimators}"))
        .unwrap();
    let mut csv =
        String::from("id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_bytes\n");
    for (id, tile, dtype, side, batch, demand) in [
        ("a", 0, "fp16", 512u64, 1u64, 1_000_000_000u64),
        ("b", 0, "fp16", 1024, 1, 5_000_000_000),
        ("c", 0, "fp16", 1536, 1, 9_000_000_000),
        ("d", 512, "fp16", 2048, 1, 2_000_000_000),
        ("e", 0, "fp32", 1024, 2, 9_000_000_000),
    ] {
        csv.push_str(&format!(
            "{id},test,cudnn,native,linux,sd,decode,{tile},{dtype},{side},{side},{batch},{demand}\n"
        ));
    }
    std::fs::write(root.join("points.csv"), csv).unwrap();
    crate::common::vramfit().arg("--root").arg(root).arg("ingest").arg(root.join("points.csv")).assert().code(0);
    // Five points of made-up demand: emit writes with its findings (exit 1).
    crate::common::vramfit().arg("--root").arg(root).args(["emit", "--force"]).output().unwrap();
    assert!(root.join("fits/vae.json").exists());
    dir
}

const TILING: &str = "[tiling]\ndefault_host = \"diffusers\"\nreason = \"a test\"\n\n[tiling.host.diffusers]\n\
copies = \"1.78\"\nsource = \"a test\"\n\n";

const SD_DECODE: &str = "[[host_estimator]]\nhost = \"myhost\"\nversion = \"1.0\"\nvae = \"sd\"\nop = \"decode\"\n\
per_element = \"2200\"\nelement = \"fp32-switch\"\ntile_factor = \"1.25\"\nfp32_extra_mib = 250\nsource = \"a test\"\n";

#[test]
fn crossval_against_prices_every_point_by_the_hosts_formula_and_by_vramfit() {
    let dir = against_root(SD_DECODE);
    let root = dir.path();
    let out = crate::common::vramfit()
        .arg("--root")
        .arg(root)
        .args(["--format", "json", "crossval", "--against", "myhost"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let host = |id: &str| r["points"].as_array().unwrap().iter().find(|p| p["id"] == id).unwrap()["host_bytes"].clone();
    // The host's own arithmetic, point by point: 2200 × 2 B × pixels; a tile
    // prices one tile × 1.25; fp32 is 4 B and 250 MiB more, the batch ignored.
    assert_eq!(host("a"), 2200u64 * 2 * 512 * 512);
    assert_eq!(host("b"), 2200u64 * 2 * 1024 * 1024);
    assert_eq!(host("c"), 2200u64 * 2 * 1536 * 1536);
    assert_eq!(host("d"), 2200u64 * 2 * 512 * 512 * 5 / 4);
    assert_eq!(host("e"), 2200u64 * 4 * 1024 * 1024 + 250 * 1_048_576);
    // a: 1.15 GB ≥ 1.0; b: 4.61 GB < 5.0; c: 10.4 GB ≥ 9.0; d: 1.44 GB < 2.0; e: 9.49 GB ≥ 9.0.
    assert_eq!(r["host_side"]["covered"], 3);
    assert_eq!(r["host_side"]["under"], json!(["b", "d"]));
    assert_eq!(r["host_side"]["worst_ratio"], "0.7208"); // d: 1 441 792 000 / 2e9, rounded down
    assert_eq!(r["priced"], 5);
    assert_eq!(r["versions"], json!(["1.0"]));
    // vramfit's side is its shipped answer for each point's own query.
    for p in r["points"].as_array().unwrap() {
        let q = format!(
            "reserve sd decode {w}x{h} --batch {b} --tile {t} --dtype {d} --backend cudnn --allocator native --os linux",
            w = p["width"],
            h = p["height"],
            b = p["batch"],
            t = p["line"].as_str().unwrap().split('/').nth(2).unwrap(),
            d = p["line"].as_str().unwrap().rsplit('/').next().unwrap()
        );
        let mut c = crate::common::vramfit();
        c.arg("--root").arg(root).args(["--format", "json"]).args(q.split_whitespace());
        let want: Value = serde_json::from_slice(&c.output().unwrap().stdout).unwrap();
        assert_eq!(p["vramfit_bytes"], want["bytes"], "{q}");
    }
    // Its summary counts what its rows say.
    let under: Vec<&str> = r["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["vramfit_bytes"].as_u64() < p["demand_bytes"].as_u64())
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(r["vramfit_side"]["under"], json!(under));
    assert_eq!(r["vramfit_side"]["covered"], 5 - under.len());
    assert!(under.len() < 2, "{under:?}: the fitted fp16 line covers its own points");
    // The pull-request report carries the side-by-side, naming what the host under-reserves.
    let out_dir = root.join("rep");
    crate::common::vramfit()
        .arg("--root")
        .arg(root)
        .args(["report", "--before", "embedded", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(md.contains("## Against myhost's own estimator"), "{md}");
    assert!(md.contains("myhost 1.0: 3 of 5 covered (60.0%)"), "{md}");
    assert!(md.contains("| sd/decode/512/cudnn/native/linux/fp16 | d |"), "{md}");
    // A host the policy does not declare is refused.
    let out =
        crate::common::vramfit().arg("--root").arg(root).args(["crossval", "--against", "other"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("declares no estimator of that host (declared: myhost)"));
}

#[test]
fn a_wrong_host_estimator_is_refused_with_its_line() {
    for (bad, words) in [
        (
            SD_DECODE.replace("vae = \"sd\"", "vae = \"nosuch\""),
            "host_estimator[1]: vae: 'nosuch' is not a registered family",
        ),
        (
            format!("{SD_DECODE}\n{SD_DECODE}"),
            "host_estimator[2]: myhost sd decode on every other backend is declared twice",
        ),
        (SD_DECODE.replace("source", "score_on = [\"miopen\"]\nsource"), "score_bytes and score_on go together"),
        (SD_DECODE.replace("fp32-switch", "fp64"), "element"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("fits")).unwrap();
        std::fs::write(dir.path().join("fits/policy.toml"), format!("[vae.sd]\nmodels = [\"sdxl\"]\n\n{bad}")).unwrap();
        let out = crate::common::vramfit()
            .arg("--root")
            .arg(dir.path())
            .args(["crossval", "--against", "myhost"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("policy.toml:") && err.contains(words), "{words}: {err}");
    }
}

fn isqrt(n: u64) -> u64 {
    let mut r = (n as f64).sqrt() as u64;
    while r * r > n {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= n {
        r += 1;
    }
    r
}

#[test]
fn an_export_priced_the_hosts_way_is_what_reserve_answers_inside_each_range() {
    let root = crate::common::data_root();
    for host in ["invokeai", "comfyui"] {
        let out = crate::common::vramfit()
            .arg("--root")
            .arg(&root)
            .args(["--format", "json", "export", "--host", host])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let e: Value = serde_json::from_slice(&out.stdout).unwrap();
        let bytes = std::fs::read(root.join("fits/vae.json")).unwrap();
        assert_eq!(e["coefficients_digest"], vramfit::fsio::sha256_tag(&bytes), "provenance");
        assert_eq!(e["host"], host);
        let entries = e["entries"].as_array().unwrap();
        assert!(!entries.is_empty());
        let mut compared = 0;
        for entry in entries {
            let Some([lo, hi]) =
                entry["size_range"].as_array().map(|r| [r[0].as_u64().unwrap(), r[1].as_u64().unwrap()])
            else {
                continue;
            };
            let pe: vramfit::exact::Ratio =
                vramfit::exact::parse_decimal(entry["per_element"].as_str().unwrap()).unwrap();
            let base = entry["base_bytes"].as_u64().unwrap();
            let dtype = entry["dtype"].as_str().unwrap();
            let elem = if dtype == "fp32" { 4 } else { 2 };
            let op = entry["op"].as_str().unwrap();
            let tile = entry["tile"].as_u64().unwrap();
            let (small, large) = ((isqrt(lo - 1) + 1).div_ceil(8) * 8, isqrt(hi) / 8 * 8);
            for side in [small, (small + large) / 16 * 8, large].into_iter().filter(|s| *s > tile && *s * *s >= lo) {
                // The host's way, from the export's words alone.
                let host_way = |pixels: u64| {
                    let v = pe.checked_mul(vramfit::exact::Ratio::int(i128::from(pixels * elem))).unwrap();
                    u64::try_from(v.ceil()).unwrap() + base
                };
                let priced = match (host, op) {
                    ("comfyui", "decode") => host_way((side / 8) * (side / 8) * 64),
                    _ => host_way(side * side),
                };
                let os = entry["os"].as_str().unwrap();
                let q = format!(
                    "reserve {vae} {op} {side}x{side} --tile {tile} --dtype {dtype} --backend {b} --allocator {a} --os {os}",
                    vae = entry["vae"].as_str().unwrap(),
                    b = entry["conv_backend"].as_str().unwrap(),
                    a = entry["allocator"].as_str().unwrap(),
                );
                let mut c = crate::common::vramfit();
                c.arg("--root").arg(&root).args(["--format", "json"]).args(q.split_whitespace());
                let want: Value = serde_json::from_slice(&c.output().unwrap().stdout).unwrap();
                let attention_caveat = entry["caveats"].to_string().contains("attention scores");
                if want["rule"] == "attention-phase" {
                    assert!(attention_caveat, "{q}: the entry must say the attention phase can set the price");
                    continue;
                }
                if want["rule"] == "monotone-floor" {
                    let says = entry["caveats"].to_string().contains("monotone");
                    assert!(says, "{q}: the entry must say a smaller request can set the price");
                    assert!(want["bytes"].as_u64() > Some(priced), "{q}: the lift only raises");
                    continue;
                }
                assert_eq!(Some(priced), want["bytes"].as_u64(), "{host}: {q}");
                compared += 1;
            }
        }
        assert!(compared >= 2 * entries.len(), "{host}: {compared} prices compared");
        // Every video line is listed with why, none is exported.
        assert!(e["not_exported"].as_array().unwrap().iter().all(|n| n.as_str().unwrap().contains("video line")));
    }
}

#[test]
fn an_export_written_to_a_file_is_the_json_it_prints_and_a_wrong_host_is_refused() {
    let root = crate::common::data_root();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("constants.json");
    let out = crate::common::vramfit()
        .arg("--root")
        .arg(&root)
        .args(["export", "--host", "invokeai", "--out"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let printed = crate::common::vramfit()
        .arg("--root")
        .arg(&root)
        .args(["--format", "json", "export", "--host", "invokeai"])
        .output()
        .unwrap();
    let written: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(written, serde_json::from_slice::<Value>(&printed.stdout).unwrap());
    let out = crate::common::vramfit()
        .arg("--root")
        .arg(&root)
        .args(["export", "--host", "automatic1111", "--out"])
        .arg(dir.path().join("x.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invokeai or comfyui"));
    assert!(!dir.path().join("x.json").exists(), "a refusal writes nothing");
}

/// The drop-ins take exactly what their host passes (docs/hosts.md, the
/// convention tables): everything the host's own types exclude is refused
/// with `ValueError` or `TypeError` and words, never priced as something
/// else and never another exception. The table is
/// `tests/fixtures/host_refusals.json`: the wrong operation word, a tensor
/// of another rank or channel count, bools, zeros and floats as sizes, a
/// VAE without `parameters()` or with none, malformed config values.
#[test]
fn the_drop_ins_refuse_what_the_hosts_types_exclude() {
    let table: Value =
        serde_json::from_str(&std::fs::read_to_string(crate::common::fixture("host_refusals.json")).unwrap()).unwrap();
    let rows = table["cases"].as_array().unwrap();
    assert!(rows.len() >= 40, "{} cases", rows.len());
    let answers = python_run(&Value::Array(rows.iter().map(|r| r["call"].clone()).collect()));
    for (row, py) in rows.iter().zip(answers) {
        let (call, kind, words) = (&row["call"], row["raises"].as_str().unwrap(), row["words"].as_str().unwrap());
        assert!(py.get("ok").is_none(), "{call} was priced: {py}");
        let raised = py.get("raised").and_then(Value::as_str).unwrap_or("ValueError");
        assert_eq!(raised, kind, "{call}: {py}");
        let msg = py["error"].as_str().unwrap();
        assert!(msg.contains(words), "{call}: '{msg}' lacks '{words}'");
    }
}

/// ComfyUI's FLUX.2 latents are 128 channels at 1/16 of the image
/// (`comfy/sd.py`, the KL branch with a batch-norm latent): `[1, 128, 64,
/// 64]` is a 1024² decode, and the drop-in prices it as one; ComfyUI loads
/// Qwen-Image's VAE as its Wan VAE and asks with `[B, 16, 1, h, w]`.
#[test]
fn comfyui_shapes_price_the_image_comfyui_is_about_to_run() {
    let linux = json!({ "env": {}, "os": "linux" });
    let call = |name: &str, args: Value| json!({ "call": name, "args": args, "kwargs": linux.clone() });
    let rows = [
        (
            call("comfyui.memory_used_decode", json!(["flux2", [1, 128, 64, 64], "torch.bfloat16"])),
            "reserve flux2 decode 1024x1024 --dtype bf16 --host comfyui --os linux",
        ),
        (
            call("comfyui.memory_used_decode", json!(["flux2", [2, 128, 48, 80], "torch.bfloat16"])),
            "reserve flux2 decode 1280x768 --dtype bf16 --host comfyui --os linux",
        ),
        (
            call("comfyui.memory_used_encode", json!(["flux2", [1, 3, 1024, 1024], "torch.bfloat16"])),
            "reserve flux2 encode 1024x1024 --dtype bf16 --host comfyui --os linux",
        ),
        (
            call("comfyui.memory_used_decode", json!(["qwen_image", [1, 16, 1, 128, 160], "torch.bfloat16"])),
            "reserve qwen_image decode 1280x1024 --dtype bf16 --host comfyui --os linux",
        ),
        (
            call("comfyui.memory_used_decode", json!(["mochi", [1, 12, 28, 60, 106], "torch.bfloat16"])),
            "reserve mochi decode 848x480 --frames 163 --dtype bf16 --host comfyui --os linux",
        ),
        (
            call("comfyui.memory_used_decode", json!(["sd3", [1, 16, 128, 128], "torch.float16"])),
            "reserve sd3 decode 1024x1024 --dtype fp16 --host comfyui --os linux",
        ),
    ];
    let answers = python_run(&Value::Array(rows.iter().map(|(c, _)| c.clone()).collect()));
    for ((call, query), py) in rows.iter().zip(answers) {
        let want = cli(query).unwrap_or_else(|e| panic!("{query}: {e}"));
        assert_eq!(py.get("ok"), Some(&want["bytes"]), "{call} ≠ {query}: {py}");
    }
}

/// `coefficients=` names a file or a loaded one; anything else, a file that
/// cannot be read, or one that is not a coefficients file is a `ValueError`
/// or `TypeError` naming it (never an `OSError` or `AttributeError`).
#[test]
fn a_coefficients_argument_that_is_not_coefficients_is_refused_with_words() {
    let dir = tempfile::tempdir().unwrap();
    let not_json = dir.path().join("passwd");
    std::fs::write(&not_json, "root:x:0:0:root:/root:/bin/bash\n").unwrap();
    let binary = dir.path().join("bin.json");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x01]).unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(&other, "{\"format\": \"something else\"}").unwrap();
    let q = |c: Value| json!({"reserve": {"coefficients": c, "dtype": "fp16", "os": "linux", "env": {}}, "args": ["sd", "decode", 512, 512]});
    let rows = [
        (q(json!(not_json.display().to_string())), "ValueError", "not valid JSON"),
        (q(json!(binary.display().to_string())), "ValueError", "not UTF-8 text"),
        (q(json!(other.display().to_string())), "ValueError", "other.json"),
        (q(json!(dir.path().join("missing.json").display().to_string())), "ValueError", "cannot read"),
        (q(json!(dir.path().display().to_string())), "ValueError", "a folder, not a regular file"),
        (q(json!(3)), "TypeError", "coefficients"),
        (q(json!({"format": "vramfit-vae-coefficients"})), "TypeError", "coefficients"),
    ];
    let answers = python_run(&Value::Array(rows.iter().map(|(c, _, _)| c.clone()).collect()));
    for ((call, kind, words), py) in rows.iter().zip(answers) {
        assert!(py.get("ok").is_none(), "{call} was priced: {py}");
        assert_eq!(py.get("raised").and_then(Value::as_str).unwrap_or("ValueError"), *kind, "{call}: {py}");
        let said = py["error"].as_str().unwrap();
        assert!(said.contains(words), "{call}: {py}");
        // A file is refused by the runtime's loader, in the words the CLI prints for it.
        if let Some(path) = call["reserve"]["coefficients"].as_str() {
            let out = vramfit()
                .args([
                    "reserve",
                    "sd",
                    "decode",
                    "512x512",
                    "--dtype",
                    "fp16",
                    "--os",
                    "linux",
                    "--coefficients",
                    path,
                ])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{path}");
            assert_eq!(stderr_of(&out).lines().next(), Some(format!("error: {said}").as_str()), "{path}");
        }
    }
    // The shipped file by path prices as the bundled copy.
    let ok = python_run(&json!([q(json!(crate::common::repo().join("fits/vae.json").display().to_string()))]));
    assert!(ok[0]["ok"].as_u64().is_some(), "{}", ok[0]);
}

/// docs/hosts.md's table of InvokeAI's bases holds: every base name it
/// gives a family resolves to that family (video families asked for one
/// frame of a clip), and a name it says is refused is refused.
#[test]
fn the_host_table_names_the_family_each_base_resolves_to() {
    let doc = std::fs::read_to_string(repo().join("docs/hosts.md")).unwrap();
    let section = doc.split("**InvokeAI 6.14.2**").nth(1).unwrap().split("**ComfyUI**").next().unwrap();
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .filter(|t| !t.contains('.') || t.starts_with("sd"))
            .map(str::to_string)
            .collect()
    };
    let mut checked = 0;
    for row in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (names, family) = (ticked(cells[1]), ticked(cells[3]));
        if names.iter().any(|n| n.contains("estimate_") || n == "external") {
            continue;
        }
        for name in &names {
            let out = vramfit()
                .args(["--format", "json", "reserve", name, "decode", "1024x1024", "--dtype", "bf16", "--os", "linux"])
                .output()
                .unwrap();
            match family.as_slice() {
                [f] => {
                    assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr_of(&out));
                    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                    // A family nobody measured whose architecture is a
                    // measured family's is priced by that family's line,
                    // and says so (docs/traced.md, "One architecture, one price").
                    let line = v["line"]["vae"].as_str().unwrap_or_default();
                    let twin = format!("{f} VAE, but its architecture is {line}'s");
                    assert!(
                        line == f.as_str() || v["warnings"].to_string().contains(&twin),
                        "{name}: priced by {line}'s line, not {f}'s: {v}"
                    );
                }
                _ => assert_eq!(out.status.code(), Some(2), "{name} is said to be refused"),
            }
            checked += 1;
        }
    }
    assert!(checked >= 15, "{checked}");
}
