//! `vramfit_vae._native`: the runtime crate's pricer and planner for
//! Python. This file only translates: Python's arguments into the runtime's
//! `Query` and budget ([`args`]), the runtime's answers into Python objects
//! in the CLI's JSON field order ([`answer`]), and the runtime's typed
//! refusals into `ValueError`s carrying their words and code. A pricing rule
//! lives in the runtime alone; nothing here restates one.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use std::sync::{Arc, OnceLock};
use vramfit_runtime::contract;
use vramfit_runtime::pricing::{self, Query};

mod answer;
mod args;
mod observe;

use answer::{Budget, Detected, LineKey, Reservation};

pyo3::create_exception!(
    _native,
    Refusal,
    PyValueError,
    "vramfit's refusal: a ValueError whose words are the CLI's, with the runtime's stable `code`."
);

/// The runtime's refusal as a Python `Refusal` (a `ValueError`), its code
/// attached.
pub(crate) fn refusal(py: Python<'_>, e: vramfit_runtime::error::Error) -> PyErr {
    let err = Refusal::new_err(e.words().to_string());
    let _ = err.value(py).setattr("code", e.code().as_str());
    err
}

/// One call from Python, with the guarantee the package documents: it
/// returns, or raises `ValueError` (a `Refusal`) or `TypeError`, nothing
/// else (docs/python.md, "What a call raises"). A panic (a bug in vramfit)
/// becomes a `Refusal` with code `internal` instead of PyO3's
/// `PanicException`, a `BaseException` a host's `except Exception` would
/// not catch; an `Exception` of any other class raised by the caller's own
/// objects on the way in (a `__str__`, `__index__`, `__bool__` or mapping
/// that raises) becomes a `TypeError` naming it, the original chained as its
/// cause. What is not an `Exception` (`KeyboardInterrupt`, `SystemExit`)
/// passes untouched: a caller's interrupt is never swallowed.
pub(crate) fn boundary<T>(py: Python<'_>, call: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    use pyo3::exceptions::PyException;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)).unwrap_or_else(|payload| {
        let words = vramfit_runtime::error::panic_words(payload.as_ref());
        Err(refusal(py, vramfit_runtime::error::internal(&words, None)))
    });
    result.map_err(|e| {
        let kept = e.is_instance_of::<PyValueError>(py)
            || e.is_instance_of::<PyTypeError>(py)
            || !e.is_instance_of::<PyException>(py);
        if kept {
            return e;
        }
        let kind = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "an exception".into());
        let words = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
        let err = PyTypeError::new_err(format!(
            "an argument's own code raised {kind}: {words} (vramfit reads an argument with str(), \
             int() or its mapping's items())"
        ));
        err.set_cause(py, Some(e));
        err
    })
}

/// The shipped coefficients, loaded and indexed.
#[pyclass(frozen, module = "vramfit_vae")]
pub struct Coefficients {
    inner: Arc<pricing::Coefficients>,
}

#[pymethods]
impl Coefficients {
    /// Where the coefficients came from, as every answer names them.
    #[getter]
    fn source(&self) -> String {
        self.inner.source.clone()
    }

    /// The families, each with its registry entry (models, video facts…),
    /// as the coefficients file holds them.
    #[getter]
    fn registry<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        answer::to_python(py, &self.inner.file.registry)
    }

    /// The keys of the shipped lines, in the file's order.
    #[getter]
    fn lines(&self) -> Vec<LineKey> {
        self.inner.file.lines.iter().map(|l| LineKey::from(l.key.clone())).collect()
    }

    /// The file's format version.
    #[getter]
    fn version(&self) -> u32 {
        self.inner.file.version
    }

    /// The family a family or model name resolves to (refused in the CLI's
    /// words where none does).
    fn family(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<String> {
        boundary(py, || {
            let name = args::text(name)?;
            self.inner.family(&name).map(str::to_string).map_err(|e| refusal(py, e))
        })
    }

    #[pyo3(signature = (model, op, width, height, **query))]
    fn reserve(
        &self,
        py: Python<'_>,
        model: &Bound<'_, PyAny>,
        op: &Bound<'_, PyAny>,
        width: &Bound<'_, PyAny>,
        height: &Bound<'_, PyAny>,
        query: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<Reservation> {
        boundary(py, || {
            let kw = answer::Keywords::of(query, &[answer::QUERY_KEYWORDS])?;
            reserve_with(py, &self.inner, model, op, width, height, &kw)
        })
    }

    fn __repr__(&self) -> String {
        format!("<vramfit_vae.Coefficients {}>", self.inner.source)
    }
}

static BUNDLED: OnceLock<Arc<pricing::Coefficients>> = OnceLock::new();

fn bundled_inner(py: Python<'_>) -> PyResult<Arc<pricing::Coefficients>> {
    if let Some(c) = BUNDLED.get() {
        return Ok(c.clone());
    }
    let c = pricing::source::CoefficientSource::Embedded.load().map_err(|e| refusal(py, e))?;
    let mut c = c;
    c.source = format!("bundled fits/vae.json (vramfit {})", env!("CARGO_PKG_VERSION"));
    Ok(BUNDLED.get_or_init(|| Arc::new(c)).clone())
}

/// The coefficients compiled into this package (a copy of vramfit's
/// `fits/vae.json`, kept identical by `vramfit emit` and checked by `verify`).
#[pyfunction]
fn bundled(py: Python<'_>) -> PyResult<Coefficients> {
    boundary(py, || Ok(Coefficients { inner: bundled_inner(py)? }))
}

/// Loads a coefficients file (any `fits/vae.json` vramfit wrote), through
/// the runtime's strict loader: a file that cannot be read, is not JSON or is
/// not a coefficients file raises `ValueError` naming it; a `path` that is
/// not a path raises `TypeError`.
#[pyfunction]
fn load(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<Coefficients> {
    boundary(py, || load_path(py, path))
}

fn load_path(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<Coefficients> {
    let fspath = if path.is_instance_of::<PyString>() || path.is_instance_of::<PyBytes>() {
        path.clone()
    } else if path.hasattr("__fspath__")? {
        path.call_method0("__fspath__")?
    } else {
        let kind = path.get_type().name()?.to_string();
        return Err(PyTypeError::new_err(format!("coefficients: expected a path or a Coefficients, got {kind}")));
    };
    let os = py.import("os")?;
    let shown: String = os.call_method1("fsdecode", (&fspath,))?.extract()?;
    let p = std::path::PathBuf::from(&shown);
    let mut c = pricing::source::CoefficientSource::File(p).load().map_err(|e| refusal(py, e))?;
    c.source = shown;
    Ok(Coefficients { inner: Arc::new(c) })
}

/// `coefficients=` as every call reads it, for the host drop-ins.
#[pyfunction]
#[pyo3(name = "coefficients_of", signature = (given=None))]
fn coefficients_of_py(py: Python<'_>, given: Option<&Bound<'_, PyAny>>) -> PyResult<Coefficients> {
    boundary(py, || Ok(Coefficients { inner: coefficients_of(py, given)? }))
}

/// What `coefficients=` names: None for the bundled copy, a `Coefficients`,
/// or a path to load.
fn coefficients_of(py: Python<'_>, given: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<pricing::Coefficients>> {
    match given.filter(|g| !g.is_none()) {
        None => bundled_inner(py),
        Some(g) => match g.cast::<Coefficients>() {
            Ok(c) => Ok(c.get().inner.clone()),
            Err(_) => Ok(load_path(py, g)?.inner),
        },
    }
}

/// The query the keywords ask, read as the CLI reads its flags.
fn query_of(
    model: &Bound<'_, PyAny>,
    op: &Bound<'_, PyAny>,
    width: &Bound<'_, PyAny>,
    height: &Bound<'_, PyAny>,
    kw: &answer::Keywords<'_>,
) -> PyResult<(Query, vramfit_runtime::pricing::platform::EnvSnapshot)> {
    let warm = kw.warm()?;
    let one = pyo3::types::PyInt::new(model.py(), 1).into_any();
    let zero = pyo3::types::PyInt::new(model.py(), 0).into_any();
    let n = args::numbers(
        width,
        height,
        kw.get("batch").unwrap_or(&one),
        kw.get("tile").unwrap_or(&zero),
        kw.get("frames").unwrap_or(&one),
        kw.get("temporal_tile").filter(|v| !v.is_none()),
    )?;
    let env = args::env(kw.get("env"))?;
    let op = args::spelled(op)?;
    let conv_backend = match kw.get("backend") {
        Some(b) => args::spelled(b)?,
        None => vramfit_runtime::vocab::ConvBackend::Cudnn,
    };
    let dtype = args::dtype(kw.get("dtype"))?;
    let loaded_dtype = args::dtype(kw.get("loaded_dtype"))?;
    let allocator = match kw.get("allocator") {
        Some(a) => args::choice(a)?,
        None => pricing::Choice::Auto,
    };
    let os = match kw.get("os") {
        Some(o) => args::choice(o)?,
        None => pricing::Choice::Auto,
    };
    let fp32 = kw.get("fp32").filter(|v| !v.is_none()).map(|v| v.is_truthy()).transpose()?;
    let host = kw.get("host").filter(|v| !v.is_none()).map(args::text).transpose()?;
    let q = Query {
        vae: args::text(model)?.as_str().into(),
        op,
        tile: n.tile,
        width: n.width,
        height: n.height,
        batch: n.batch,
        frames: n.frames,
        temporal_tile: n.temporal_tile,
        dtype,
        loaded_dtype,
        fp32,
        conv_backend,
        allocator,
        os,
        host,
        warm,
    };
    Ok((q, env))
}

fn reserve_with(
    py: Python<'_>,
    c: &Arc<pricing::Coefficients>,
    model: &Bound<'_, PyAny>,
    op: &Bound<'_, PyAny>,
    width: &Bound<'_, PyAny>,
    height: &Bound<'_, PyAny>,
    kw: &answer::Keywords<'_>,
) -> PyResult<Reservation> {
    let (q, env) = query_of(model, op, width, height, kw)?;
    Reservation::price(py, q, answer::Priced { coefficients: c.clone(), env })
}

/// What this VAE decode or encode reserves, as `vramfit reserve` answers
/// (see the package's documentation for every keyword).
#[pyfunction]
#[pyo3(signature = (model, op, width, height, **query))]
fn reserve(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    op: &Bound<'_, PyAny>,
    width: &Bound<'_, PyAny>,
    height: &Bound<'_, PyAny>,
    query: Option<&Bound<'_, pyo3::types::PyDict>>,
) -> PyResult<Reservation> {
    boundary(py, || {
        let kw = answer::Keywords::of(query, answer::RESERVE_KEYWORDS)?;
        let c = coefficients_of(py, kw.get("coefficients"))?;
        reserve_with(py, &c, model, op, width, height, &kw)
    })
}

fn budget_of(
    py: Python<'_>,
    free: Option<&Bound<'_, PyAny>>,
    share: Option<&Bound<'_, PyAny>>,
    cap: Option<&Bound<'_, PyAny>>,
) -> PyResult<vramfit_runtime::plan::Budget> {
    let one = pyo3::types::PyInt::new(py, 1).into_any();
    let share = args::factor("--share", share.unwrap_or(&one))?;
    let free = args::bytes("--free", free)?;
    let cap = args::bytes("--cap", cap)?;
    vramfit_runtime::plan::budget(free, share, cap).map_err(|e| refusal(py, e))
}

/// `min(cap, floor(share × free))` bytes, as `vramfit plan` computes its
/// budget, refused in its words.
#[pyfunction]
#[pyo3(signature = (free=None, share=None, cap=None))]
fn budget(
    py: Python<'_>,
    free: Option<&Bound<'_, PyAny>>,
    share: Option<&Bound<'_, PyAny>>,
    cap: Option<&Bound<'_, PyAny>>,
) -> PyResult<Budget> {
    boundary(py, || Ok(Budget::from(budget_of(py, free, share, cap)?)))
}

/// Does this work fit, and how should it run? `vramfit plan`'s answer for a
/// VAE query, as the dict its `--format json` prints.
#[pyfunction]
#[pyo3(signature = (model, op, width, height, **query))]
fn plan<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    op: &Bound<'py, PyAny>,
    width: &Bound<'py, PyAny>,
    height: &Bound<'py, PyAny>,
    query: Option<&Bound<'py, pyo3::types::PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    boundary(py, || {
        let kw = answer::Keywords::of(query, answer::PLAN_KEYWORDS)?;
        let b = budget_of(py, kw.get("free"), kw.get("share"), kw.get("cap"))?;
        let c = coefficients_of(py, kw.get("coefficients"))?;
        let (q, env) = query_of(model, op, width, height, &kw)?;
        let tiles = c.file.tiles.clone();
        let p =
            py.detach(|| vramfit_runtime::plan::vae(c.as_ref(), &q, &env, &b, &tiles)).map_err(|e| refusal(py, e))?;
        answer::to_python(py, &p)
    })
}

/// Raises what [`boundary`] makes of a panic (`"panic"`) or of a foreign
/// exception (`"foreign"`) inside a call: it exists so that the package's
/// tests can prove the boundary holds without a real defect to provoke it.
#[pyfunction]
fn _boundary_check(py: Python<'_>, kind: &str) -> PyResult<()> {
    boundary(py, || match kind {
        "panic" => panic!("the boundary check's own panic"),
        "foreign" => Err(pyo3::exceptions::PyRuntimeError::new_err("the boundary check's own RuntimeError")),
        _ => Ok(()),
    })
}

/// The allocator a `PYTORCH_*_ALLOC_CONF` value chooses, read as PyTorch
/// reads it; None where it chooses none.
#[pyfunction]
fn allocator_of_conf(conf: &str) -> Option<&'static str> {
    vramfit_runtime::vocab::Allocator::from_conf(conf).map(|a| a.as_str())
}

/// The words of every code a `Refusal` carries.
#[pyfunction]
fn refusal_codes() -> Vec<&'static str> {
    vramfit_runtime::error::Code::ALL.iter().map(|c| c.as_str()).collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Refusal", m.py().get_type::<Refusal>())?;
    m.add("VERSION", contract::VERSION)?;
    m.add("RUNTIME_VERSION", env!("CARGO_PKG_VERSION"))?;
    // The allocator variables in the order PyTorch reads them; ROCm reads HIP_ALLOC_VAR first.
    m.add("ALLOC_VARS", pyo3::types::PyTuple::new(m.py(), pricing::platform::ALLOC_VARS)?)?;
    m.add("HIP_ALLOC_VAR", pricing::platform::HIP_ALLOC_VAR)?;
    m.add_class::<Coefficients>()?;
    m.add_class::<Reservation>()?;
    m.add_class::<LineKey>()?;
    m.add_class::<Detected>()?;
    m.add_class::<Budget>()?;
    m.add_function(wrap_pyfunction!(reserve, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(budget, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(bundled, m)?)?;
    m.add_function(wrap_pyfunction!(allocator_of_conf, m)?)?;
    m.add_function(wrap_pyfunction!(refusal_codes, m)?)?;
    m.add_function(wrap_pyfunction!(coefficients_of_py, m)?)?;
    m.add_function(wrap_pyfunction!(observe::observation, m)?)?;
    m.add_function(wrap_pyfunction!(observe::check_observation_path, m)?)?;
    m.add_function(wrap_pyfunction!(observe::append_observation, m)?)?;
    m.add_function(wrap_pyfunction!(_boundary_check, m)?)?;
    m.add("OBSERVATION_HEADER", vramfit_runtime::observe::header())?;
    Ok(())
}
