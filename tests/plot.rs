//! `vramfit plot`: one SVG per line, an index, byte-identical reruns, and
//! every point's marker where its data says.

use crate::common::*;
use std::fs;

/// A numeric attribute of an SVG tag.
fn attr(tag: &str, name: &str) -> Option<f64> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    tag[at..].split('"').next()?.parse().ok()
}

/// `(cx, cy, r)` of every circle in an SVG.
fn circles(svg: &str) -> Vec<(f64, f64, f64)> {
    svg.split("<circle")
        .skip(1)
        .filter_map(|t| {
            let tag = t.split('>').next()?;
            Some((attr(tag, "cx")?, attr(tag, "cy")?, attr(tag, "r")?))
        })
        .collect()
}

/// `(x, y)` of every polygon vertex of the triangle markers.
fn triangles(svg: &str) -> Vec<Vec<(f64, f64)>> {
    svg.split("<polygon")
        .skip(1)
        .filter_map(|t| {
            let tag = t.split('>').next()?;
            let at = tag.find(" points=\"")? + 9;
            let pts: Vec<(f64, f64)> = tag[at..]
                .split('"')
                .next()?
                .split_whitespace()
                .filter_map(|p| {
                    let (x, y) = p.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect();
            (pts.len() == 3).then_some(pts)
        })
        .collect()
}

/// Midpoints of the `<line>` strokes (a cross marker is two of them
/// crossing at the point; grid lines span the whole plot and never pair up).
fn strokes(svg: &str) -> Vec<(f64, f64)> {
    svg.split("<line")
        .skip(1)
        .filter_map(|t| {
            let tag = t.split('>').next()?;
            let (x1, y1, x2, y2) = (attr(tag, "x1")?, attr(tag, "y1")?, attr(tag, "x2")?, attr(tag, "y2")?);
            Some(((x1 + x2) / 2.0, (y1 + y2) / 2.0))
        })
        .collect()
}

/// Plots the lines of `root` and checks that every point of every plotted
/// line has the marker its aggregate says (● mean, ✕ max, ▲ single or
/// unknown) where its data says, support points ringed, a PNG beside each
/// SVG; returns how many points were checked.
fn check_every_marker(root: &std::path::Path) -> (usize, serde_json::Value) {
    let out_dir = tempfile::tempdir().unwrap();
    let out =
        vramfit().current_dir(root).args(["--format", "json", "plot", "--out"]).arg(out_dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let j = json_of(&out);
    let files = j["files"].as_array().unwrap();
    let fit = json_of(&vramfit().current_dir(root).args(["--format", "json", "fit"]).output().unwrap());
    let shipped = fit["lines"].as_array().unwrap().iter().filter(|l| l["kind"] != "insufficient").count();
    assert_eq!(files.len(), shipped, "one plot per fitted or carried line");
    let mut checked = 0;
    for f in files {
        let svg = fs::read_to_string(out_dir.path().join(f["file"].as_str().unwrap())).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains(f["key"].as_str().unwrap()), "the title names the key");
        let png = fs::read(out_dir.path().join(f["png"].as_str().unwrap())).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG beside {}", f["file"]);
        let fr = &f["frame"];
        let (l, r, t, b) = (
            fr["left"].as_f64().unwrap(),
            fr["right"].as_f64().unwrap(),
            fr["top"].as_f64().unwrap(),
            fr["bottom"].as_f64().unwrap(),
        );
        let (xm, ym) = (fr["x_max_mpx"].as_f64().unwrap(), fr["y_max_mib"].as_f64().unwrap());
        let (cs, ts, ss) = (circles(&svg), triangles(&svg), strokes(&svg));
        for p in f["plot"]["points"].as_array().unwrap() {
            // The data coordinates, mapped onto the plotting area.
            let x = p["pixels"].as_f64().unwrap() / 1e6;
            let y = p["demand_bytes"].as_f64().unwrap() / 1_048_576.0;
            let px = l + x / xm * (r - l - 1.0);
            let py = b - 1.0 - y / ym * (b - t - 1.0);
            let near = |cx: f64, cy: f64| (cx - px).abs() <= 1.5 && (cy - py).abs() <= 1.5;
            let at_circle = cs.iter().any(|&(cx, cy, _)| near(cx, cy));
            let at_triangle = ts.iter().any(|v| {
                let (cx, cy) = (v.iter().map(|p| p.0).sum::<f64>() / 3.0, v.iter().map(|p| p.1).sum::<f64>() / 3.0);
                (cx - px).abs() <= 2.0 && (cy - py).abs() <= 4.0
            });
            let at_cross = ss.iter().filter(|&&(cx, cy)| near(cx, cy)).count() >= 2;
            let id = &p["id"];
            match (p["excluded"].is_null(), p["aggregate"].as_str()) {
                (false, _) => assert!(at_circle, "{}: excluded {id} is a grey dot", f["key"]),
                (true, Some("mean")) => assert!(at_circle, "{}: mean {id} is a dot", f["key"]),
                (true, Some("max")) => assert!(at_cross, "{}: max {id} is a cross at ({px:.1}, {py:.1})", f["key"]),
                (true, _) => assert!(at_triangle, "{}: single {id} is a triangle", f["key"]),
            }
            if p["support"] == true {
                assert!(cs.iter().any(|&(cx, cy, rad)| near(cx, cy) && rad >= 9.0), "{}: support ring", p["id"]);
            }
            checked += 1;
        }
    }
    // The index shows every plot.
    let index = fs::read_to_string(out_dir.path().join("index.html")).unwrap();
    for f in files {
        assert!(index.contains(&format!("<img src=\"{}\"", f["file"].as_str().unwrap())));
    }
    (checked, fit)
}

#[test]
fn one_svg_per_line_with_each_point_at_its_coordinates() {
    let (checked, _) = check_every_marker(&data_root());
    assert_eq!(checked, 138 - 5, "every point of every shipped line (the 5 on too-thin keys have no plot)");
    let d = tempfile::tempdir().unwrap();
    vramfit().current_dir(data_root()).args(["plot", "--out"]).arg(d.path()).assert().code(0);
    let index = fs::read_to_string(d.path().join("index.html")).unwrap();
    assert!(index.contains("<table>") && index.contains("4452.00 B/px · x + 36 MiB"));
}

#[test]
fn a_new_platform_of_max_aggregates_plots_with_its_own_marker() {
    let root = scratch();
    let f = root.path().join("max.csv");
    fs::write(
        &f,
        "source,conv_backend,allocator,model,op,run_dtype,width,height,reserved_mib,aggregate\n\
         max test,cudnn,cudaMallocAsync,sdxl,decode,fp16,512,512,900,max\n\
         max test,cudnn,cudaMallocAsync,sdxl,decode,fp16,1024,1024,3500,max\n\
         max test,cudnn,cudaMallocAsync,sdxl,decode,fp16,1536,1536,7600,max\n",
    )
    .unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
    vramfit().arg("--root").arg(root.path()).arg("emit").assert().code(0);
    let (checked, fit) = check_every_marker(root.path());
    let plotted: u64 = fit["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kind"] != "insufficient")
        .map(|l| l["points"].as_array().map_or(0, |p| p.len() as u64))
        .sum();
    assert!(checked as u64 >= plotted && checked > 133, "{checked} of {plotted}");
}

#[test]
fn reruns_are_byte_identical() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for d in [&a, &b] {
        vramfit().current_dir(data_root()).args(["plot", "--out"]).arg(d.path()).assert().code(0);
    }
    assert_eq!(
        snapshot(a.path()).into_iter().map(|(p, b)| (p.file_name().unwrap().to_owned(), b)).collect::<Vec<_>>(),
        snapshot(b.path()).into_iter().map(|(p, b)| (p.file_name().unwrap().to_owned(), b)).collect::<Vec<_>>()
    );
}

#[test]
fn excluded_points_are_drawn_grey() {
    let out_dir = tempfile::tempdir().unwrap();
    let out = vramfit()
        .current_dir(data_root())
        .args(["--format", "json", "plot", "--out"])
        .arg(out_dir.path())
        .output()
        .unwrap();
    let j = json_of(&out);
    let f = j["files"].as_array().unwrap().iter().find(|f| f["key"] == "sd/decode/0/cudnn/native/any/fp32").unwrap();
    let ex: Vec<_> = f["plot"]["points"].as_array().unwrap().iter().filter(|p| !p["excluded"].is_null()).collect();
    assert_eq!(ex.len(), 1, "the PR #7673 native fp32 decode");
    assert!(ex[0]["excluded"].as_str().unwrap().contains("28%"));
    let svg = fs::read_to_string(out_dir.path().join(f["file"].as_str().unwrap())).unwrap();
    assert!(svg.contains("fill=\"#BDBDBD\""), "a grey marker");
}
