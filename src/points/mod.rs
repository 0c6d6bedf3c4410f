//! Measured points: the model, the measurement-CSV reader, importers for
//! third-party formats, and the canonical points file (`measurements/vae.json`).

mod codec;
pub use codec::write_u64;
pub mod csv_input;
pub mod invokeai;
pub mod merge;
pub mod row;
pub mod store;
mod stream;
pub mod summary;
pub mod traced;
mod wire;

pub use crate::contract::LineKey;
use crate::text::Text;
use crate::vocab::{Aggregate, Context, Dtype};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One measured demand of one run configuration (docs/DESIGN.md, "Points").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(from = "wire::PointWire")]
// The store refuses unknown fields (every line must re-serialise to itself).
#[schemars(deny_unknown_fields)]
pub struct Point {
    /// Stable id; derived from the content when the input gave none.
    pub id: Text,
    /// The run configuration: VAE family, op, tile, conv backend (which
    /// stands for the platform), allocator, the OS it was measured on (`any`
    /// when unknown) and the dtype the VAE ran in (`run_dtype` in the CSV).
    #[serde(flatten)]
    pub key: LineKey,
    /// Model name as given (`sdxl`, `sd15`, …), informational once the family is known.
    pub model: Option<Text>,
    /// The dtype the weights were loaded in, when recorded.
    pub loaded_dtype: Option<Dtype>,
    /// Output width in pixels (decode: decoded image; encode: input image).
    pub width: u64,
    /// Output height in pixels.
    pub height: u64,
    /// Frames of the clip (1 for an image; written only when above 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub frames: u64,
    /// Images in the batch.
    pub batch: u64,
    /// `width × height × batch`: the size an image line is fitted against
    /// (a video line's is the working set, docs/DESIGN.md, "Video").
    pub pixels: u64,
    /// `max(driver, reserved, allocated)` in bytes: what a cache must cover.
    pub demand_bytes: u64,
    /// Measured `torch.cuda.memory_reserved` delta, bytes (rounded up).
    pub reserved_bytes: Option<u64>,
    /// Measured `torch.cuda.memory_allocated` delta, bytes (rounded up).
    pub allocated_bytes: Option<u64>,
    /// Measured driver-level (nvidia-smi / rocm-smi) delta, bytes (rounded up).
    pub driver_bytes: Option<u64>,
    /// Where the figure comes from (URL, harness name and version).
    pub source: Text,
    /// GPU name, informational.
    pub device: Option<Text>,
    /// torch version, informational.
    pub torch: Option<Text>,
    /// 1-based index of this run within its fresh process.
    pub run: Option<u32>,
    /// Number of runs behind the figure.
    pub runs: Option<u32>,
    /// How the runs were aggregated.
    pub aggregate: Option<Aggregate>,
    /// Whether the VAE ran alone or inside a generation.
    pub context: Option<Context>,
    /// Free text.
    pub note: Option<Text>,
    /// Columns vramfit does not know, kept verbatim.
    pub metadata: Metadata,
}

/// The columns of a row vramfit does not read, kept beside its point,
/// sorted by name. One allocation a point: its names joined (a shared
/// [`Text`]: a host's 10⁶ observed rows carry the same ten columns), then
/// its values, each a shared `Text` where rows repeat it. As an owned map
/// these were 1.2 GB of an `ingest` of 10⁶ observed rows (issue 61). It
/// serialises as the JSON object a map of strings would.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata(Box<[Text]>);

/// What joins the names (no field holds a control character).
const NAME_SEPARATOR: char = '\0';

impl Metadata {
    /// From pairs in any order; a name given twice keeps its last value.
    pub fn of(pairs: impl IntoIterator<Item = (Text, Text)>) -> Metadata {
        Metadata::interned(pairs.into_iter().collect(), &mut crate::text::Interner::default())
    }

    /// [`Metadata::of`] with the joined names shared through `names`.
    pub fn interned(mut v: Vec<(Text, Text)>, names: &mut crate::text::Interner) -> Metadata {
        if v.is_empty() {
            return Metadata::default();
        }
        // Stable: of two equal names the later stays after, and dedup keeps the first of a run.
        v.reverse();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v.dedup_by(|a, b| a.0 == b.0);
        let joined = Metadata::join(&v.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>());
        let mut all = Vec::with_capacity(v.len() + 1);
        all.push(names.intern(&joined));
        all.extend(v.into_iter().map(|(_, value)| value));
        Metadata(all.into_boxed_slice())
    }

    /// Names as a metadata holds them, joined.
    pub(crate) fn join(names: &[&str]) -> String {
        names.join(&NAME_SEPARATOR.to_string())
    }

    /// From the joined names (sorted, each once: [`Metadata::join`]) and
    /// then the values, in that order: what a reader that meets the
    /// columns sorted builds without sorting.
    pub(crate) fn from_parts(names_then_values: Vec<Text>) -> Metadata {
        Metadata(names_then_values.into_boxed_slice())
    }

    /// The pairs, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Text)> {
        let names = self.0.first().map_or("", |n| n.as_str());
        names.split(NAME_SEPARATOR).filter(|_| !self.0.is_empty()).zip(self.0.iter().skip(1))
    }

    /// The value of a name.
    pub fn get(&self, name: &str) -> Option<&Text> {
        self.iter().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        self.0.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<K: Into<Text>, V: Into<Text>> FromIterator<(K, V)> for Metadata {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(pairs: I) -> Metadata {
        Metadata::of(pairs.into_iter().map(|(k, v)| (k.into(), v.into())))
    }
}

impl<K: Into<Text>, V: Into<Text>, const N: usize> From<[(K, V); N]> for Metadata {
    fn from(pairs: [(K, V); N]) -> Metadata {
        pairs.into_iter().collect()
    }
}

impl Serialize for Metadata {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Metadata, D::Error> {
        Ok(BTreeMap::<String, String>::deserialize(d)?.into_iter().collect())
    }
}

impl schemars::JsonSchema for Metadata {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Metadata".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <BTreeMap<String, String>>::json_schema(g)
    }
}

fn one() -> u64 {
    1
}

fn is_one(n: &u64) -> bool {
    *n == 1
}

impl Point {
    /// Whether the row says it was made on a simulated device (the
    /// harness's `--device fake` writes `device = fake` and "SIMULATED" in
    /// the note): figures of a memory model, never a measurement.
    pub fn is_simulated(&self) -> bool {
        let device = self.device.as_deref().unwrap_or_default().trim().to_ascii_lowercase();
        device == "fake"
            || device.starts_with("simulated")
            || self.note.as_deref().is_some_and(|n| n.contains("SIMULATED"))
    }

    /// Whether its answer leaves out the platform's first use, as a warm
    /// host's does (`--warm`): a figure taken warm, inside a generation or
    /// isolated by a host is the whole demand its line covers; a fresh
    /// one's answer adds the first use, and one that does not say is
    /// priced as the default answer is (docs/fit.md, "Demand per context").
    pub fn priced_warm(&self) -> bool {
        self.context.is_some_and(|c| c != Context::Fresh)
    }

    /// What a fresh point's driver saw beyond its reserved delta: the
    /// first use it measures (None: not fresh, or a delta missing).
    pub fn first_use_gap(&self) -> Option<u64> {
        (self.context == Some(Context::Fresh)).then_some(())?;
        Some(self.driver_bytes?.saturating_sub(self.reserved_bytes?))
    }

    /// The point's own key, with the OS it was measured on.
    pub fn key(&self) -> LineKey {
        self.key.clone()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_point_stays_small() {
        // 224: a video clip's frames and temporal tile added 8 bytes; each
        // byte is 1 MB at 10^6 points.
        assert!(std::mem::size_of::<super::Point>() <= 224, "{}", std::mem::size_of::<super::Point>());
    }
}
