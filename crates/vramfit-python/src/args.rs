//! Python's arguments read as the CLI reads its flags: the same spellings
//! (through the runtime's vocabularies), the same ranges and the same words
//! (clap's, where the CLI's refusal is clap's), plus the refusals only Python
//! can meet (a float, a bool, a non-mapping `env`) in words of their own.
//! Nothing here prices: every rule is the runtime's.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};
use vramfit_runtime::exact::Ratio;
use vramfit_runtime::pricing::platform::EnvSnapshot;
use vramfit_runtime::pricing::Choice;
use vramfit_runtime::vocab::Dtype;
use vramfit_runtime::words;

const U32_MAX: u64 = u32::MAX as u64;

/// A whole number as Python holds it: any size, so a range check can name
/// the value as given.
pub enum Whole {
    /// Fits in an i128.
    Small(i128),
    /// Past i128 either way (its sign).
    Huge { negative: bool },
}

impl Whole {
    fn above(&self, limit: u64) -> bool {
        match self {
            Whole::Small(v) => *v > i128::from(limit),
            Whole::Huge { negative } => !negative,
        }
    }

    fn below(&self, limit: i128) -> bool {
        match self {
            Whole::Small(v) => *v < limit,
            Whole::Huge { negative } => *negative,
        }
    }

    /// The value, where it fits in a u64.
    fn as_u64(&self) -> Option<u64> {
        match self {
            Whole::Small(v) => u64::try_from(*v).ok(),
            Whole::Huge { .. } => None,
        }
    }
}

pub fn value_error(words: impl Into<String>) -> PyErr {
    PyValueError::new_err(words.into())
}

/// `repr(v)`, for the words of a refusal.
pub fn repr(v: &Bound<'_, PyAny>) -> String {
    v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "<unprintable>".into())
}

/// `str(v)`: how a name, a dtype (`torch.float16`) or an allocator is read.
pub fn text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(v.str()?.to_string())
}

/// An integer argument (a bool is not one), with its decimal digits.
pub fn integer(name: &str, v: &Bound<'_, PyAny>) -> PyResult<(Whole, String)> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(value_error(format!("{name}: expected an integer, got {}", repr(v))));
    }
    let digits = text(v)?;
    let whole = match v.extract::<i128>() {
        Ok(n) => Whole::Small(n),
        Err(_) => Whole::Huge { negative: digits.starts_with('-') },
    };
    Ok((whole, digits))
}

/// The numbers of a query, checked as `reserve` and `plan` check them.
pub struct Numbers {
    pub width: u64,
    pub height: u64,
    pub batch: u64,
    pub tile: u32,
    pub frames: u64,
    pub temporal_tile: Option<u32>,
}

/// The CLI's refusals of a query's numbers, in its words (its size parser's,
/// and clap's for the flags), in the order the CLI meets them.
pub fn numbers(
    width: &Bound<'_, PyAny>,
    height: &Bound<'_, PyAny>,
    batch: &Bound<'_, PyAny>,
    tile: &Bound<'_, PyAny>,
    frames: &Bound<'_, PyAny>,
    temporal_tile: Option<&Bound<'_, PyAny>>,
) -> PyResult<Numbers> {
    let (w, wt) = integer("width", width)?;
    let (h, ht) = integer("height", height)?;
    let (b, bt) = integer("batch", batch)?;
    let (t, tt) = integer("tile", tile)?;
    let (f, ft) = integer("frames", frames)?;
    let temporal = temporal_tile.map(|v| integer("temporal_tile", v)).transpose()?;
    for (what, v) in [("width", &w), ("height", &h)] {
        if v.below(1) || v.above(u64::MAX) {
            return Err(value_error(format!("size '{wt}x{ht}': {what} must be a positive integer (digits only)")));
        }
    }
    let flags =
        [("--tile <TILE>", Some((&t, &tt))), ("--temporal-tile <FRAMES>", temporal.as_ref().map(|(v, d)| (v, d)))];
    for (flag, v) in flags {
        if let Some((v, d)) = v {
            if v.below(0) || v.above(U32_MAX) {
                return Err(value_error(format!("invalid value '{d}' for '{flag}': {d} is not in 0..={U32_MAX}")));
            }
        }
    }
    for (flag, v, d) in [("--batch <BATCH>", &b, &bt), ("--frames <FRAMES>", &f, &ft)] {
        if v.above(u64::MAX) {
            return Err(value_error(format!(
                "invalid value '{d}' for '{flag}': number too large to fit in target type"
            )));
        }
    }
    if b.below(1) {
        return Err(value_error(words::BATCH_POSITIVE.text));
    }
    if f.below(0) {
        return Err(value_error(words::FRAMES_POSITIVE.text));
    }
    let small = |v: &Whole| v.as_u64().unwrap_or_default();
    Ok(Numbers {
        width: small(&w),
        height: small(&h),
        batch: small(&b),
        tile: u32::try_from(small(&t)).unwrap_or_default(),
        frames: small(&f),
        temporal_tile: temporal.map(|(v, _)| u32::try_from(small(&v)).unwrap_or_default()),
    })
}

/// `env=`: a mapping of text names to text values (None: this process's).
pub fn env(given: Option<&Bound<'_, PyAny>>) -> PyResult<EnvSnapshot> {
    let Some(given) = given.filter(|g| !g.is_none()) else {
        return Ok(EnvSnapshot::from_process());
    };
    if !given.hasattr("items")? {
        let kind = given.get_type().name()?.to_string();
        return Err(value_error(format!(
            "env: expected a mapping of environment names to values (like os.environ), got {kind}"
        )));
    }
    let mut snapshot = EnvSnapshot { host_os: EnvSnapshot::from_process().host_os, ..EnvSnapshot::default() };
    for item in given.call_method0("items")?.try_iter()? {
        let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        if !k.is_instance_of::<PyString>() || !v.is_instance_of::<PyString>() {
            return Err(value_error(format!(
                "env: {} = {}: the environment holds text names and values",
                repr(&k),
                repr(&v)
            )));
        }
        snapshot.vars.insert(k.extract()?, v.extract()?);
    }
    Ok(snapshot)
}

/// A spelling of one of the runtime's vocabularies (`str(v)`, trimmed).
pub fn spelled<T: std::str::FromStr>(v: &Bound<'_, PyAny>) -> PyResult<T>
where
    T::Err: std::fmt::Display,
{
    text(v)?.trim().parse::<T>().map_err(|e| value_error(e.to_string()))
}

pub fn dtype(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Dtype>> {
    v.filter(|v| !v.is_none()).map(spelled::<Dtype>).transpose()
}

/// `auto`, or a name (for the allocator, a conf string too).
pub fn choice<T: std::str::FromStr>(v: &Bound<'_, PyAny>) -> PyResult<Choice<T>>
where
    T::Err: std::fmt::Display,
{
    if text(v)?.trim() == "auto" {
        return Ok(Choice::Auto);
    }
    spelled::<T>(v).map(Choice::Given)
}

/// `share=`: a number or a decimal text, read exactly as `--share` reads
/// its text (a float is read as the text it prints as).
pub fn factor(flag: &str, v: &Bound<'_, PyAny>) -> PyResult<Ratio> {
    let plain = v.is_instance_of::<PyInt>() || v.is_instance_of::<PyString>() || v.is_instance_of::<PyFloat>();
    let fraction = v.get_type().name()? == "Fraction";
    if v.is_instance_of::<PyBool>() || !(plain || fraction) {
        return Err(value_error(format!("{}: expected a number, got {}", flag.trim_start_matches('-'), repr(v))));
    }
    let t = if v.is_instance_of::<PyFloat>() { repr(v) } else { text(v)? };
    vramfit_runtime::units::parse_factor(&t).map_err(|e| value_error(format!("{flag} {e}")))
}

/// `free=` / `cap=`: a whole number of bytes, or None.
pub fn bytes(flag: &str, v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(None) };
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(value_error(format!(
            "{}: expected a whole number of bytes, got {}",
            flag.trim_start_matches('-'),
            repr(v)
        )));
    }
    let (whole, digits) = integer(flag, v)?;
    if whole.below(0) {
        return Err(value_error(format!("{flag} '{digits}': negative value (must be zero or more)")));
    }
    if matches!(whole, Whole::Huge { .. }) {
        return Err(value_error(format!("{flag} '{digits}': value too large")));
    }
    whole.as_u64().map(Some).ok_or_else(|| value_error(format!("{flag} '{digits}': too large")))
}
