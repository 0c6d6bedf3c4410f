//! The answer types as Python sees them: each holds the runtime's own value
//! and shows it in the CLI's JSON field order (`to_dict()` is `vramfit
//! reserve --format json`, key for key), with the few typed views a host
//! reads (`line`, `run_dtype`, …). And the keyword arguments, checked
//! against the names each call takes.

use pyo3::exceptions::{PyAttributeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use vramfit_runtime::contract;
use vramfit_runtime::pricing::ReserveReport;

/// A serde value as Python objects in field order, as JSON reads it back:
/// pythonize makes a Rust pair or array a tuple, JSON (and the CLI) a list.
pub fn to_python<'py, T: serde::Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    fn lists<'py>(v: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(t) = v.cast::<PyTuple>() {
            let items = t.iter().map(lists).collect::<PyResult<Vec<_>>>()?;
            return Ok(PyList::new(v.py(), items)?.into_any());
        }
        if let Ok(l) = v.cast::<PyList>() {
            for i in 0..l.len() {
                l.set_item(i, lists(l.get_item(i)?)?)?;
            }
        } else if let Ok(d) = v.cast::<PyDict>() {
            for (k, item) in d.iter() {
                if item.is_instance_of::<PyDict>()
                    || item.is_instance_of::<PyList>()
                    || item.is_instance_of::<PyTuple>()
                {
                    d.set_item(k, lists(item)?)?;
                }
            }
        }
        Ok(v)
    }
    lists(pythonize::pythonize(py, value)?)
}

/// The query keywords every pricing call takes after its four positional
/// arguments (`Coefficients.reserve`).
pub const QUERY_KEYWORDS: &[&str] = &[
    "dtype",
    "loaded_dtype",
    "batch",
    "tile",
    "backend",
    "allocator",
    "os",
    "fp32",
    "env",
    "host",
    "frames",
    "temporal_tile",
    "warm",
];

/// What `reserve()` takes besides: the coefficients.
pub const RESERVE_KEYWORDS: &[&[&str]] = &[QUERY_KEYWORDS, &["coefficients"]];

/// What `plan()` takes besides: the coefficients and the budget.
pub const PLAN_KEYWORDS: &[&[&str]] = &[QUERY_KEYWORDS, &["coefficients", "free", "share", "cap"]];

/// A call's keyword arguments, each a name the call takes.
pub struct Keywords<'py> {
    given: Vec<(String, Bound<'py, PyAny>)>,
}

impl<'py> Keywords<'py> {
    pub fn of(kw: Option<&Bound<'py, PyDict>>, allowed: &[&[&str]]) -> PyResult<Keywords<'py>> {
        let mut given = Vec::new();
        if let Some(kw) = kw {
            for (k, v) in kw.iter() {
                let name: String = k.extract()?;
                if !allowed.iter().any(|names| names.contains(&name.as_str())) {
                    return Err(PyTypeError::new_err(format!("got an unexpected keyword argument '{name}'")));
                }
                given.push((name, v));
            }
        }
        Ok(Keywords { given })
    }

    pub fn get(&self, name: &str) -> Option<&Bound<'py, PyAny>> {
        self.given.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// `warm=`: True or False only.
    pub fn warm(&self) -> PyResult<bool> {
        match self.get("warm") {
            None => Ok(false),
            Some(v) => {
                v.extract::<bool>().ok().filter(|_| v.is_instance_of::<pyo3::types::PyBool>()).ok_or_else(|| {
                    super::args::value_error(format!("warm: expected True or False, got {}", super::args::repr(v)))
                })
            }
        }
    }
}

/// The seven fields that name a line, and a video family's temporal tile.
#[pyclass(frozen, eq, ord, hash, module = "vramfit_vae")]
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineKey {
    key: contract::LineKey,
}

impl From<contract::LineKey> for LineKey {
    fn from(key: contract::LineKey) -> LineKey {
        LineKey { key }
    }
}

#[pymethods]
impl LineKey {
    #[getter]
    fn vae(&self) -> String {
        self.key.vae.to_string()
    }
    #[getter]
    fn op(&self) -> &'static str {
        self.key.op.as_str()
    }
    #[getter]
    fn tile(&self) -> u32 {
        self.key.tile
    }
    #[getter]
    fn conv_backend(&self) -> &'static str {
        self.key.conv_backend.as_str()
    }
    #[getter]
    fn allocator(&self) -> &'static str {
        self.key.allocator.as_str()
    }
    #[getter]
    fn os(&self) -> &'static str {
        self.key.os.as_str()
    }
    #[getter]
    fn dtype(&self) -> &'static str {
        self.key.dtype.as_str()
    }
    /// A video line's temporal tile in frames (0: none); None for an image family.
    #[getter]
    fn temporal_tile(&self) -> Option<u32> {
        self.key.temporal_tile
    }

    /// `512` for an image line, `16f` for a video line (`512x16f` with a spatial tile).
    fn tiles_text(&self) -> String {
        self.key.tiles_text()
    }

    /// vramfit's order of keys, as a tuple Python sorts alike.
    fn sort_key<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let k = &self.key;
        let tt = k.temporal_tile.map_or((0u8, 0u32), |t| (1, t));
        (k.vae.to_string(), k.op as u8, k.tile, tt, k.conv_backend as u8, k.allocator as u8, k.os as u8, k.dtype as u8)
            .into_pyobject(py)
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.key)
    }

    fn __str__(&self) -> String {
        self.key.to_string()
    }

    fn __repr__(&self) -> String {
        format!("LineKey('{}')", self.key)
    }
}

/// A value and where it came from (`flag`, an environment variable, `host`, …).
#[pyclass(frozen, eq, hash, module = "vramfit_vae")]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Detected {
    #[pyo3(get)]
    value: String,
    #[pyo3(get)]
    source: String,
}

#[pymethods]
impl Detected {
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("value", &self.value)?;
        d.set_item("from", &self.source)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!("Detected(value='{}', source='{}')", self.value, self.source)
    }
}

fn detected<T: std::fmt::Display>(d: &vramfit_runtime::pricing::platform::Detected<T>) -> Detected {
    Detected { value: d.value.to_string(), source: d.from.to_string() }
}

/// The fields an answer may leave out of its dict (absent: None).
const OPTIONAL: &[&str] = &["video", "traced", "follows_trace", "lifted"];

/// The answer to one query: `to_dict()` is what `vramfit reserve --format
/// json` prints; every key of it is also an attribute.
#[pyclass(frozen, module = "vramfit_vae")]
pub struct Reservation {
    report: ReserveReport,
    /// The query it answers (what an observation of the op records), and
    /// what priced it: `with_batch` asks the same question for more items.
    query: vramfit_runtime::pricing::Query,
    priced: Priced,
    dict: Py<PyDict>,
}

/// The coefficients and environment a reservation was priced with.
#[derive(Clone)]
pub struct Priced {
    pub coefficients: std::sync::Arc<vramfit_runtime::pricing::Coefficients>,
    pub env: vramfit_runtime::pricing::platform::EnvSnapshot,
}

impl Reservation {
    pub fn new(
        py: Python<'_>,
        report: ReserveReport,
        query: vramfit_runtime::pricing::Query,
        priced: Priced,
    ) -> PyResult<Reservation> {
        let dict = to_python(py, &report)?.cast_into::<PyDict>()?.unbind();
        Ok(Reservation { report, query, priced, dict })
    }

    /// Prices `query` as this reservation was priced.
    pub fn price(py: Python<'_>, query: vramfit_runtime::pricing::Query, priced: Priced) -> PyResult<Reservation> {
        use vramfit_runtime::pricing::Pricer;
        let c = priced.coefficients.clone();
        let price = py.detach(|| c.price(&query, &priced.env)).map_err(|e| crate::refusal(py, e))?;
        Reservation::new(py, ReserveReport { price, coefficients: c.source.clone() }, query, priced)
    }

    pub fn report(&self) -> &ReserveReport {
        &self.report
    }

    /// The coefficients that priced it.
    pub fn coefficients(&self) -> &vramfit_runtime::pricing::Coefficients {
        &self.priced.coefficients
    }

    pub fn query(&self) -> &vramfit_runtime::pricing::Query {
        &self.query
    }
}

#[pymethods]
impl Reservation {
    /// The same question for `batch` items (a host that runs several at
    /// once, as ComfyUI does with its per-item estimate).
    fn with_batch(&self, py: Python<'_>, batch: &Bound<'_, PyAny>) -> PyResult<Reservation> {
        super::boundary(py, || {
            let n = super::args::numbers(
                &pyo3::types::PyInt::new(py, self.query.width).into_any(),
                &pyo3::types::PyInt::new(py, self.query.height).into_any(),
                batch,
                &pyo3::types::PyInt::new(py, self.query.tile).into_any(),
                &pyo3::types::PyInt::new(py, self.query.frames).into_any(),
                None,
            )?;
            let query = vramfit_runtime::pricing::Query { batch: n.batch, ..self.query.clone() };
            Reservation::price(py, query, self.priced.clone())
        })
    }

    /// The reservation, bytes.
    #[getter]
    fn bytes(&self) -> u64 {
        self.report.price.bytes
    }

    /// The query's line key as text, `vae/op/tile/backend/allocator/os/dtype`.
    #[getter]
    fn key(&self) -> String {
        self.report.price.line.to_string()
    }

    #[getter]
    fn line(&self) -> LineKey {
        LineKey::from(self.report.price.line.clone())
    }

    #[getter]
    fn priced_by(&self) -> Option<LineKey> {
        self.report.price.priced_by.clone().map(LineKey::from)
    }

    #[getter]
    fn run_dtype(&self) -> Detected {
        detected(&self.report.price.run_dtype)
    }

    #[getter]
    fn allocator(&self) -> Detected {
        detected(&self.report.price.allocator)
    }

    #[getter]
    fn os(&self) -> Detected {
        detected(&self.report.price.os)
    }

    /// The pricing line's measured size range, pixels (a tuple), or None.
    #[getter]
    fn size_range(&self) -> Option<(u64, u64)> {
        self.report.price.size_range.map(|[lo, hi]| (lo, hi))
    }

    /// Any other field of the answer, as `to_dict()` holds it.
    fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.dict.bind(py).get_item(name)? {
            Some(v) => Ok(v),
            None if OPTIONAL.contains(&name) => Ok(py.None().into_bound(py)),
            None => Err(PyAttributeError::new_err(format!("'Reservation' object has no attribute '{name}'"))),
        }
    }

    /// The answer as `vramfit reserve --format json` prints it (same keys, same order); a new dict each call.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(to_python(py, &self.report)?.cast_into::<PyDict>()?)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        match other.cast::<Reservation>() {
            Ok(o) => self.dict.bind(py).eq(o.get().dict.bind(py)),
            Err(_) => Ok(false),
        }
    }

    fn __repr__(&self) -> String {
        let p = &self.report.price;
        format!("Reservation(bytes={}, rule='{}', key='{}')", p.bytes, p.rule.as_str(), p.line)
    }
}

/// `min(cap, floor(share × free))`, and which bound set it.
#[pyclass(frozen, eq, hash, module = "vramfit_vae")]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Budget {
    #[pyo3(get)]
    bytes: u64,
    /// `share` (share × free), `cap`, or `cap-unknown-free`.
    #[pyo3(get)]
    bound: &'static str,
}

impl From<vramfit_runtime::plan::Budget> for Budget {
    fn from(b: vramfit_runtime::plan::Budget) -> Budget {
        Budget { bytes: b.bytes, bound: b.from.as_str() }
    }
}

#[pymethods]
impl Budget {
    fn __int__(&self) -> u64 {
        self.bytes
    }

    fn __index__(&self) -> u64 {
        self.bytes
    }

    fn __repr__(&self) -> String {
        format!("Budget(bytes={}, bound='{}')", self.bytes, self.bound)
    }
}
