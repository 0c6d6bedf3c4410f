//! The shipped coefficients indexed for pricing: each line's values by
//! key, the candidates of the unmeasured rule, the measured tiles of each
//! family, every name a query may give. Built once per file; a pricing
//! only looks things up.

use super::{Query, Rule};
use crate::contract::{reserve_bytes, CoefficientsFile, LineKey};
use crate::error::Result;
use crate::registry::Registry;
use crate::vocab::{Dtype, Op, Os};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// One line's shipped values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineCoef {
    pub slope_centi: u64,
    pub base_mib: u64,
    pub carried: bool,
    pub size_range: Option<[u64; 2]>,
    /// Points of the line made on a simulated device.
    pub simulated_points: usize,
    /// The devices the line's points were measured on.
    pub devices: Vec<String>,
}

impl LineCoef {
    pub fn at(&self, pixels: u64) -> Result<u64> {
        reserve_bytes(self.slope_centi, self.base_mib, pixels)
            .map_err(|e| crate::error::Error::too_large(e.to_string()))
    }
}

/// The shipped coefficients, indexed for pricing.
///
/// `verify` prices thousands of queries on the shipped data (10^6 at
/// scale), so every index a pricing consults is a hash map with rustc's
/// Fx hash: SipHash and a B-tree walk comparing family names were a third
/// of its floor check. Nothing iterates over these maps, so their order
/// never reaches an answer; where order matters (the unmeasured rule's
/// candidates) it is the lines' key order, kept in a vector.
#[derive(Debug, Clone)]
pub struct Coefficients {
    pub file: CoefficientsFile,
    /// Which file priced it (a path, or `embedded`).
    pub source: String,
    /// How a record that must hold no path names it (an observation row, a
    /// host's log line): its content's SHA-256, and whether it is the
    /// compiled-in copy. Set by [`super::source::CoefficientSource::load`];
    /// `unnamed coefficients` for a file built in memory.
    pub identity: String,
    /// Each line's values by its key.
    pub(super) lines: FxHashMap<LineKey, LineCoef>,
    /// The file's registry, built once (every pricing resolves a family).
    pub(super) registry: Registry,
    /// [`Coefficients::known_tiles`], built once (every pricing checks its tile).
    pub(super) known_tiles: Vec<u32>,
    /// Families with at least one line, built once (every pricing asks).
    pub(super) measured_families: std::collections::BTreeSet<crate::text::Text>,
    /// Every name a query may give (each family and its models, in ASCII
    /// lower case) to its family's name as one shared `Text`: a pricing
    /// resolves a family and builds a key, and `verify` makes 10^6 of them
    /// (the registry's walk compared each name with every family and model,
    /// and a key's name was allocated each time).
    pub(super) names: FxHashMap<String, crate::text::Text>,
    /// The lines of each (family, op, tile, dtype), in key order: the
    /// unmeasured rule's candidates (a walk of every line per pricing was
    /// most of the thousands of floor pricings `verify` makes).
    pub(super) by_use: FxHashMap<Use, Vec<(LineKey, LineCoef)>>,
    /// The spatial tiles (above 0) with a line of each (family, op), sorted:
    /// where the monotone composition looks for a measured tile's price.
    pub(super) line_tiles: FxHashMap<(crate::text::Text, Op), Vec<u32>>,
    /// The tiles that end a rule's domain, by (family, op): every line's
    /// tile, every traced image shape's and every tiled calibration's of
    /// the family's class (the monotone composition's spatial corners).
    pub(super) corner_tiles: FxHashMap<(crate::text::Text, Op), Vec<u32>>,
    /// The temporal tiles (above 0) with a line or a traced shape of each
    /// video (family, op), sorted: the monotone composition's temporal corners.
    pub(super) line_temporal_tiles: FxHashMap<(crate::text::Text, Op), Vec<u32>>,
}

/// A tile edge is a whole number of latent pixels of an 8x VAE.
pub const TILE_STEP: u32 = 8;

/// What the unmeasured rule matches a query's lines by: family, op, tile,
/// dtype. Every video line has tile 0, so a video key's candidates are its
/// family's lines of every temporal tile: in working-set units, a line
/// measured at one temporal tile prices another's working set.
type Use = (crate::text::Text, Op, u32, Dtype);

impl Coefficients {
    pub fn new(file: CoefficientsFile, source: String) -> Result<Coefficients> {
        // In key order, so that each family's candidates are too.
        let mut sorted: BTreeMap<&LineKey, LineCoef> = BTreeMap::new();
        for l in &file.lines {
            let coef = LineCoef {
                slope_centi: l.slope_centi()?,
                base_mib: l.base_mib,
                carried: l.kind == crate::contract::LineKind::Carried,
                size_range: l.size_range,
                simulated_points: l.simulated_points,
                devices: l.devices.clone(),
            };
            if sorted.insert(&l.key, coef).is_some() {
                crate::error::refuse!("{source}: line {} appears twice", l.key);
            }
        }
        let registry = Registry(file.registry.clone());
        let known_tiles = tiles_of(&file);
        let measured_families = sorted.keys().map(|k| k.vae.clone()).collect();
        let names = names_of(&registry);
        let mut by_use: FxHashMap<Use, Vec<(LineKey, LineCoef)>> = FxHashMap::default();
        let mut line_tiles: FxHashMap<(crate::text::Text, Op), Vec<u32>> = FxHashMap::default();
        let mut line_temporal_tiles: FxHashMap<(crate::text::Text, Op), Vec<u32>> = FxHashMap::default();
        for (k, c) in &sorted {
            by_use.entry((k.vae.clone(), k.op, k.tile, k.dtype)).or_default().push(((*k).clone(), c.clone()));
            if k.tile > 0 {
                line_tiles.entry((k.vae.clone(), k.op)).or_default().push(k.tile);
            }
            if let Some(t @ 1..) = k.temporal_tile {
                line_temporal_tiles.entry((k.vae.clone(), k.op)).or_default().push(t);
            }
        }
        // A traced shape's tile ends the traced rule's domain as a line's
        // tile ends a line's: the monotone composition's spatial corners.
        let mut corner_tiles = line_tiles.clone();
        for s in file.traced.iter().flat_map(|t| &t.shapes) {
            let family = || (crate::text::Text::from(s.vae.as_str()), s.op);
            match s.temporal_tile {
                None if s.tile > 0 => corner_tiles.entry(family()).or_default().push(s.tile),
                Some(t @ 1..) => line_temporal_tiles.entry(family()).or_default().push(t),
                _ => {}
            }
        }
        // So does a calibration's tile, for every family of its class: a
        // tile with a calibration of its own is priced by it, the next
        // tile by the untiled one (which may price lower).
        for c in file.traced.iter().flat_map(|t| &t.calibrations).filter(|c| c.tile > 0) {
            for (name, _) in file.registry.iter().filter(|(_, e)| e.class == Some(c.class)) {
                corner_tiles.entry((crate::text::Text::from(name.as_str()), c.op)).or_default().push(c.tile);
            }
        }
        for tiles in line_tiles.values_mut().chain(line_temporal_tiles.values_mut()).chain(corner_tiles.values_mut()) {
            tiles.sort_unstable();
            tiles.dedup();
        }
        let lines = sorted.into_iter().map(|(k, c)| (k.clone(), c)).collect();
        Ok(Coefficients {
            file,
            lines,
            source,
            identity: "unnamed coefficients".into(),
            registry,
            known_tiles,
            measured_families,
            names,
            by_use,
            line_tiles,
            corner_tiles,
            line_temporal_tiles,
        })
    }

    pub(super) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The family a query names; an unknown one lists the known ones, and
    /// a name that covers two VAEs (`wan2.2`: Wan 2.2 A14B ships Wan 2.1's
    /// VAE, TI2V-5B its own) is refused with the names that choose one.
    pub fn family(&self, name: &str) -> Result<&str> {
        self.family_text(name).map(|t| t.as_str())
    }

    /// [`Coefficients::family`] as the shared name: what
    /// [`Registry::resolve`] answers, from the index built once.
    pub(super) fn family_text(&self, name: &str) -> Result<&crate::text::Text> {
        let n = name.trim();
        // Longer than any name: refused by its start and length, before the
        // typo search (whose cost grows with the name's length).
        if n.len() > crate::registry::MAX_NAME_BYTES {
            crate::error::refuse!(crate::words::NAME_TOO_LONG
                .fill(&[("name", &crate::text::quoted(n)), ("most", &crate::registry::MAX_NAME_BYTES)]));
        }
        let found = if n.bytes().any(|b| b.is_ascii_uppercase()) {
            self.names.get(&n.to_ascii_lowercase())
        } else {
            self.names.get(n)
        };
        if let Some(family) = found {
            let entry = self.registry.0.get(family.as_str());
            let ambiguous = entry.and_then(|e| e.ambiguous.iter().find(|(a, _)| a.eq_ignore_ascii_case(n)));
            if let Some((asked, words)) = ambiguous {
                crate::error::refuse!(crate::words::AMBIGUOUS_NAME.fill(&[("name", asked), ("words", words)]));
            }
        }
        found.ok_or_else(|| {
            let words = match self.registry.nearest(name) {
                Some(guess) => {
                    let families = self.registry.0.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
                    crate::words::UNKNOWN_MODEL_GUESS.fill(&[
                        ("name", &crate::text::quoted(name)),
                        ("guess", &guess),
                        ("families", &families),
                    ])
                }
                None => crate::words::UNKNOWN_MODEL
                    .fill(&[("name", &crate::text::quoted(name)), ("known", &self.registry().describe())]),
            };
            crate::error::refused!(words)
        })
    }

    /// Tile edges a query may ask for: 0 (untiled), the tiles `plan` falls
    /// back to, and every tile a line or a too-thin key was measured at.
    pub fn known_tiles(&self) -> &[u32] {
        &self.known_tiles
    }
}

fn tiles_of(file: &CoefficientsFile) -> Vec<u32> {
    let mut t: Vec<u32> = std::iter::once(0)
        .chain(file.tiles.iter().copied())
        .chain(file.lines.iter().map(|l| l.key.tile))
        .chain(file.insufficient.iter().map(|l| l.key.tile))
        .collect();
    t.sort_unstable();
    t.dedup();
    t
}

impl Coefficients {
    /// The measured line that prices a key, if any: its own line, or (for
    /// an OS-specific key) the line of the same platform measured without
    /// an OS, whichever prices higher at this size.
    /// `key` is borrowed mutably only to look up its any-OS twin in place:
    /// building a second key cloned the family's shared name, and the
    /// threads pricing 10^6 points contended for its count. It is left as
    /// it was given.
    pub(super) fn measured_line(
        &self,
        key: &mut LineKey,
        pixels: u64,
    ) -> Result<Option<(Rule, &LineKey, &LineCoef, u64)>> {
        let own = self.lines.get_key_value(key).map(|(k, c)| {
            let rule = if c.carried { Rule::CarriedLine } else { Rule::FittedLine };
            (rule, k, c)
        });
        let os = key.os;
        key.os = Os::Any;
        let unknown_os = (os != Os::Any).then(|| self.lines.get_key_value(key)).flatten();
        key.os = os;
        let unknown_os = unknown_os.map(|(k, c)| (Rule::AnyOsLine, k, c));
        let mut best: Option<(Rule, &LineKey, &LineCoef, u64)> = None;
        for (rule, k, c) in own.into_iter().chain(unknown_os) {
            let b = self.line_price(k, c, pixels)?;
            if best.is_none_or(|(_, _, _, bb)| b > bb) {
                best = Some((rule, k, c, b));
            }
        }
        Ok(best)
    }

    /// The lowest price a measured line of `key`'s platform gives a larger
    /// tile than `key`'s, or no tile, of the query's image (the line, its
    /// bytes). `key` is left as it was given.
    #[allow(clippy::type_complexity)]
    pub(super) fn measured_cap(
        &self,
        key: &mut LineKey,
        q: &Query,
        pixels: u64,
    ) -> Result<Option<(&LineKey, &LineCoef, u64)>> {
        let tile = key.tile;
        let longest = q.width.max(q.height);
        let larger = self.line_tiles.get(&(key.vae.clone(), key.op)).map_or(&[][..], Vec::as_slice);
        let tiles: Vec<u32> =
            larger.iter().copied().filter(|k| *k > tile && u64::from(*k) < longest).chain([0]).collect();
        let mut best: Option<(&LineKey, &LineCoef, u64)> = None;
        for t in tiles {
            key.tile = t;
            let found = self.measured_line(key, pixels);
            key.tile = tile;
            if let Some((_, k, c, b)) = found? {
                if best.is_none_or(|(_, _, bb)| b < bb) {
                    best = Some((k, c, b));
                }
            }
        }
        Ok(best)
    }

    /// Whether any line was measured for a family, at any op, backend or dtype.
    pub(super) fn family_measured(&self, family: &str) -> bool {
        self.measured_families.contains(family)
    }

    /// The measured family a family nobody measured is priced as: its
    /// architecture's twin, where the shipped file names one.
    pub(super) fn twin_of(&self, family: &str) -> Option<&crate::contract::traced::Twin> {
        if self.family_measured(family) {
            return None;
        }
        self.file.traced.as_ref()?.twins.get(family)
    }
}

impl Coefficients {
    /// The lines the unmeasured rule may price `key` by: every platform's
    /// line of its (vae, op, tile, dtype), and its own platform's lines of
    /// the same VAE, op and tile in the other dtypes (an OS-specific key also
    /// takes its platform's line measured without an OS).
    pub(super) fn unmeasured_candidates(&self, key: &LineKey) -> Vec<(&LineKey, &LineCoef)> {
        let same_platform = |k: &LineKey| {
            k.conv_backend == key.conv_backend && k.allocator == key.allocator && (k.os == key.os || k.os == Os::Any)
        };
        let mut out = Vec::new();
        for dtype in [Dtype::Fp16, Dtype::Bf16, Dtype::Fp32] {
            let lines = self.by_use.get(&(key.vae.clone(), key.op, key.tile, dtype));
            for (k, c) in lines.map_or(&[][..], Vec::as_slice) {
                if dtype == key.dtype || same_platform(k) {
                    out.push((k, c));
                }
            }
        }
        out
    }
}

/// Each name [`Registry::resolve`] accepts, in ASCII lower case, to the
/// family it resolves to: families in the registry's order, the first to
/// claim a name keeping it (as the registry's walk finds the first).
fn names_of(registry: &Registry) -> FxHashMap<String, crate::text::Text> {
    let mut names = FxHashMap::default();
    for (family, entry) in &registry.0 {
        let text = crate::text::Text::from(family.as_str());
        for name in std::iter::once(family).chain(&entry.models) {
            names.entry(name.to_ascii_lowercase()).or_insert_with(|| text.clone());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::Coefficients;
    use crate::registry::{Registry, VaeEntry};

    /// The index answers what the registry's walk answers, for every name
    /// in every case and with spaces around it, for unknown names, and
    /// where two families claim the same name in different cases.
    #[test]
    fn the_name_index_resolves_as_the_registry_does() {
        let shipped = crate::contract::parse(crate::contract::EMBEDDED, "embedded").unwrap();
        let mut file = shipped.clone();
        let entry = |models: &[&str]| VaeEntry {
            models: models.iter().map(|m| m.to_string()).collect(),
            params: None,
            attention: None,
            video: None,
            fp32_switch: false,
            ambiguous: Default::default(),
            class: None,
        };
        // A model named like a later family, a family differing only in
        // case, and a model with spaces in its stored name.
        file.registry.insert("AAA".into(), entry(&["zzz", "Flux1", " padded "]));
        file.registry.insert("aaa".into(), entry(&["other"]));
        file.registry.insert("zzz".into(), entry(&[]));
        let mut two = entry(&["both", "one"]);
        two.ambiguous.insert("both".into(), "one VAE or another: ask for one".into());
        file.registry.insert("mmm".into(), two);
        let c = Coefficients::new(file.clone(), "test".into()).unwrap();
        let registry = Registry(file.registry.clone());
        let mut names: Vec<String> = vec!["".into(), "nope".into(), "ß".into(), "padded".into(), " padded ".into()];
        for (family, e) in &file.registry {
            names.push(family.clone());
            names.extend(e.models.iter().cloned());
        }
        let (mut asked, mut refused) = (0, 0);
        for n in names {
            for variant in [n.clone(), n.to_uppercase(), n.to_lowercase(), format!("  {n}\t"), n.replace('1', "I")] {
                // A name that covers two VAEs is refused; every other resolves alike.
                let ambiguous = registry
                    .resolve(&variant)
                    .and_then(|f| file.registry.get(f))
                    .is_some_and(|e| e.ambiguous.keys().any(|a| a.eq_ignore_ascii_case(variant.trim())));
                refused += usize::from(ambiguous);
                let want = if ambiguous { None } else { registry.resolve(&variant) };
                assert_eq!(c.family(&variant).ok(), want, "{variant:?}");
                asked += 1;
            }
        }
        assert!(asked > 50 && refused >= 3, "{asked} {refused}");
    }
}
