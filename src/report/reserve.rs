use super::Report;
use crate::pricing::ReserveReport;
use crate::pricing::Rule;
use crate::units::thousands;

impl Report for ReserveReport {
    fn table(&self) -> String {
        let p = &self.price;
        let mut rows: Vec<(&str, String)> = vec![("rule", p.rule.as_str().to_string())];
        if let Some(l) = &p.lifted {
            let tile = if l.tile == 0 { "untiled".to_string() } else { format!("tile {}", l.tile) };
            let clip = l.temporal_tile.map_or(String::new(), |t| format!(" × {} frames, temporal tile {t}", l.frames));
            let by = l.priced_by.as_ref().map_or(String::new(), |k| format!(" ({k})"));
            rows.push((
                "lifted from",
                format!(
                    "{}x{}{clip} {tile}: {} B by the {}{by}",
                    l.width,
                    l.height,
                    thousands(l.bytes),
                    l.rule.as_str()
                ),
            ));
            rows.push(("own rule", format!("{}: {} B", l.own_rule.as_str(), thousands(l.own_bytes))));
        }
        rows.push(("key", p.line.to_string()));
        match (p.rule, &p.priced_by, &p.slope, p.base_mib) {
            (Rule::Legacy, ..) => rows.push(("formula", "pixels × element size × k (v1 estimator)".into())),
            (_, Some(by), Some(slope), Some(base)) => {
                if by != &p.line {
                    let label = match p.rule {
                        Rule::AnyOsLine => "OS-less line",
                        Rule::DerivedTile => "untiled line",
                        Rule::MeasuredCap => "larger tile's line",
                        _ => "largest line",
                    };
                    rows.push((label, by.to_string()));
                }
                let at = match (&p.tiled, &p.video) {
                    (Some(t), _) => t.tile_pixels,
                    (_, Some(v)) => v.working_set,
                    _ => p.pixels,
                };
                let one_tile = match (&p.tiled, &p.video) {
                    (Some(_), _) => " (one tile)",
                    (_, Some(_)) => " (working set)",
                    _ => "",
                };
                rows.push(("formula", format!("{slope} B/px × {} px{one_tile} + {base} MiB", thousands(at))));
                if let Some(f) = &p.follows_trace {
                    rows.push((
                        "follows trace",
                        format!(
                            "past {} px measured: {} B there × {} / {} traced B ({})",
                            thousands(f.measured_to),
                            thousands(f.line_bytes_at_end),
                            thousands(f.traced_at),
                            thousands(f.traced_at_end),
                            f.shape
                        ),
                    ));
                }
                if let Some(b) = p.line_bytes {
                    rows.push(("line price", format!("{} B", thousands(b))));
                }
                if !p.measured_on.is_empty() {
                    rows.push(("measured on", p.measured_on.join("; ")));
                }
                if let Some(t) = &p.tiled {
                    rows.push((
                        "output copies",
                        format!(
                            "{} × 3 × {} B × {} px = {} B ({} host, {})",
                            t.copies,
                            p.line.dtype.elem_bytes(),
                            thousands(p.pixels),
                            thousands(t.copies_bytes),
                            t.host.value,
                            t.host.from
                        ),
                    ));
                }
            }
            _ => {}
        }
        if let Some(v) = &p.video {
            video_rows(p, v, &mut rows);
        }
        if let Some(t) = &p.traced {
            traced_rows(p, t, &mut rows);
        }
        if let Some(l) = p.legacy_bytes {
            rows.push(("legacy", format!("{} B", thousands(l))));
        }
        if let Some(a) = &p.attention {
            rows.push((
                "attention",
                format!(
                    "S = {} ({} head{}): {} B × S² = {} B scores + {} B beside them",
                    thousands(a.sequence),
                    a.heads,
                    if a.heads == 1 { "" } else { "s" },
                    a.bytes_per_score,
                    thousands(a.score_bytes),
                    thousands(a.held_bytes)
                ),
            ));
            let (line_mib, phase_mib) =
                (crate::units::mib_up(a.line_phase_bytes, 0), crate::units::mib_up(a.phase_bytes, 0));
            let which = if p.rule == Rule::AttentionPhase {
                "the attention phase sets the price"
            } else {
                "the line sets the price"
            };
            rows.push((
                "phases",
                format!("line {} MiB ({}), attention {} MiB: {which}", line_mib, a.line_rule.as_str(), phase_mib),
            ));
            rows.push(("score bytes", a.source.clone()));
        }
        let range = match p.size_range {
            Some([lo, hi]) => format!(" (measured {}–{} px)", thousands(lo), thousands(hi)),
            None => String::new(),
        };
        match &p.video {
            // A video line's range is in working-set units, as its formula.
            Some(v) => rows.push((
                "size",
                format!(
                    "{} px × {} frames; working set {} px{range}",
                    thousands(p.pixels),
                    v.frames,
                    thousands(v.working_set)
                ),
            )),
            None => rows.push(("size", format!("{} px{range}", thousands(p.pixels)))),
        }
        rows.push(("run dtype", format!("{} ({})", p.run_dtype.value, p.run_dtype.from)));
        rows.push(("loaded dtype", p.loaded_dtype.to_string()));
        rows.push(("cast growth", format!("{} B", thousands(p.weight_growth_bytes))));
        rows.push(("op price", format!("{} B (the op's own demand)", thousands(p.op_bytes))));
        rows.push(("first use", first_use_row(p)));
        rows.push(("allocator", format!("{} ({})", p.allocator.value, p.allocator.from)));
        rows.push(("os", format!("{} ({})", p.os.value, p.os.from)));
        rows.push(("coefficients", self.coefficients.clone()));
        let mut s = format!("{} MiB  ({} bytes)\n", p.mib, thousands(p.bytes));
        for (k, v) in rows {
            s.push_str(&format!("  {k:<13} {v}\n"));
        }
        for w in &p.warnings {
            s.push_str(&format!("warning: {w}\n"));
        }
        s
    }
}

/// The answer's first-use term: added, left out for a warm host, or none known.
fn first_use_row(p: &crate::pricing::Price) -> String {
    match &p.first_use {
        None => "none declared for this backend".to_string(),
        Some(t) => {
            let whose = match t.matched {
                crate::contract::first_use::FirstUseMatch::Own => t.declared_for.clone(),
                _ => format!("{}, borrowed", t.declared_for),
            };
            if t.included {
                format!("+ {} MiB ({whose}; a fresh process's first run; --warm leaves it out)", t.mib)
            } else {
                format!("{} MiB left out (--warm; {whose})", t.mib)
            }
        }
    }
}

/// A video answer's terms: the walk and tiles, the working set, the clip
/// copies and the host estimate consulted.
fn video_rows(p: &crate::pricing::Price, v: &crate::pricing::VideoTerms, rows: &mut Vec<(&str, String)>) {
    let tile = if v.tile == 0 { "untiled".to_string() } else { format!("{} px tile", v.tile) };
    let time = match (v.walk, v.temporal_tile) {
        (crate::registry::Walk::Causal, _) => format!("causal steps of {} frame(s)", v.working_frames),
        (_, 0) => "every frame at once".to_string(),
        (_, t) => format!("{t}-frame temporal tile"),
    };
    rows.push(("video", format!("{} frames; {tile}, {time}", v.frames)));
    let area = if v.tile == 0 { "W × H" } else { "min(T, W) × min(T, H)" };
    rows.push((
        "working set",
        format!("{area} × {} frame(s) × batch = {} px", v.working_frames, thousands(v.working_set)),
    ));
    rows.push((
        "clip copies",
        format!(
            "{} × 3 × {} B × {} px × {} frames = {} B",
            v.clip_copies,
            p.line.dtype.elem_bytes(),
            thousands(p.pixels),
            v.frames,
            thousands(v.clip_bytes)
        ),
    ));
    if let Some(e) = &v.estimate {
        rows.push(("estimate", format!("{} B ({}): {}", thousands(e.bytes), e.host, e.source)));
    }
}

impl Report for crate::plan::MaxTileReport {
    fn table(&self) -> String {
        let mut s = match &self.search.chosen {
            Some(p) => format!(
                "tile {} px: {} MiB ({} bytes) ≤ budget {}, by the {} ({})\n",
                p.spatial_tile(),
                p.mib,
                thousands(p.bytes),
                crate::units::mib_text(self.budget_bytes),
                p.rule.as_str(),
                p.priced_by.as_ref().map_or_else(|| p.line.to_string(), |k| k.to_string())
            ),
            None => format!("no tile fits {}\n", crate::units::mib_text(self.budget_bytes)),
        };
        for r in &self.search.reasons {
            s.push_str(&format!("  - {r}\n"));
        }
        s.push_str(&format!("  coefficients  {}\n", self.coefficients));
        let warnings = self.search.chosen.iter().flat_map(|p| p.warnings.iter());
        for w in warnings {
            s.push_str(&format!("warning: {w}\n"));
        }
        s
    }
}

/// The traced rule's terms: the shape, the calibration, what it offered.
fn traced_rows(p: &crate::pricing::Price, t: &crate::pricing::TracedTerms, rows: &mut Vec<(&str, String)>) {
    let unit = match t.unit {
        crate::contract::traced::ShapeUnit::Pixels => "px",
        crate::contract::traced::ShapeUnit::WorkingSet => "px (working set)",
    };
    rows.push((
        "traced",
        format!(
            "{} B at {} {unit}: shape {} = {} B/px × x + {} B{}",
            thousands(t.traced_bytes),
            thousands(t.at),
            t.shape,
            t.shape_slope,
            t.shape_base,
            if t.extrapolated { " (extrapolated)" } else { "" }
        ),
    ));
    rows.push((
        "calibration",
        format!(
            "{}: {} × traced + {} MiB (margin {}; {} point(s) of {}{})",
            t.calibration,
            t.slope,
            t.base_mib,
            t.margin,
            t.points,
            t.families.join(", "),
            t.slope_from.as_ref().map_or(String::new(), |f| format!(
                "; too few sizes for a slope of their own: {f}'s slope, the base lifted to cover them"
            ))
        ),
    ));
    let which = if p.rule == Rule::Traced { "sets the price" } else { "consulted" };
    let copies = match t.tile_copies_bytes {
        0 => String::new(),
        c => format!(" (one tile of the untiled shape, plus {} B of the host's output copies)", thousands(c)),
    };
    rows.push(("traced price", format!("{} B{copies}: {which}", thousands(t.bytes))));
}
