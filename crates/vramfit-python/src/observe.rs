//! `observation()`: what the package's `observe` read around an op, made
//! into the measurement row and verdict by the runtime
//! (`vramfit_runtime::observe`). The Python side reads the accelerator and
//! appends the line; the row's words and fields are decided here once.

use crate::answer::Reservation;
use crate::args;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use vramfit_runtime::observe::{Facts, Observation, Peaks};
use vramfit_runtime::vocab::Context;

fn fact(facts: &Bound<'_, PyDict>, name: &str) -> PyResult<String> {
    match facts.get_item(name)? {
        None => Ok(String::new()),
        Some(v) if v.is_none() => Ok(String::new()),
        Some(v) => v.extract::<String>().map_err(|_| args::value_error(format!("facts['{name}']: expected a str"))),
    }
}

fn spelled<T: std::str::FromStr>(facts: &Bound<'_, PyDict>, name: &str) -> PyResult<T>
where
    T::Err: std::fmt::Display,
{
    let text = fact(facts, name)?;
    text.parse::<T>().map_err(|e| args::value_error(format!("facts['{name}']: {e}")))
}

fn bytes(name: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    v.extract::<u64>().map_err(|_| args::value_error(format!("{name}: expected a non-negative int of bytes")))
}

/// The row (a CSV line), the op's demand in bytes, and the line a host's
/// log gets when the reservation was short (None when it held).
#[pyfunction]
#[pyo3(signature = (reservation, reserved, allocated, driver, facts, context, nonce, date, observed_by))]
#[allow(clippy::too_many_arguments)]
pub fn observation(
    py: Python<'_>,
    reservation: &Reservation,
    reserved: &Bound<'_, PyAny>,
    allocated: &Bound<'_, PyAny>,
    driver: &Bound<'_, PyAny>,
    facts: &Bound<'_, PyDict>,
    context: &str,
    nonce: &str,
    date: &str,
    observed_by: &str,
) -> PyResult<(String, u64, Option<String>)> {
    crate::boundary(py, || {
        let peaks = Peaks {
            reserved: bytes("reserved", reserved)?,
            allocated: bytes("allocated", allocated)?,
            driver: bytes("driver", driver)?,
        };
        let facts = Facts {
            device: fact(facts, "device")?,
            torch: fact(facts, "torch")?,
            accelerator: fact(facts, "accelerator")?,
            conv_library: fact(facts, "conv_library")?,
            driver_version: fact(facts, "driver_version")?,
            diffusers: fact(facts, "diffusers")?,
            allocator_conf: fact(facts, "allocator_conf")?,
            conv_backend: spelled(facts, "conv_backend")?,
            allocator: spelled(facts, "allocator")?,
            os: spelled(facts, "os")?,
        };
        let context: Context = context
            .parse()
            .map_err(|e: vramfit_runtime::vocab::UnknownSpelling| args::value_error(format!("context: {e}")))?;
        let report = reservation.report();
        let o = Observation {
            query: reservation.query(),
            price: &report.price,
            // Named by its digest, never by its path (a row holds no path).
            coefficients: &reservation.coefficients().identity,
            peaks,
            facts: &facts,
            context,
            date,
            nonce,
            observed_by,
        };
        let row = o.csv_line().map_err(|e| args::value_error(e.to_string()))?;
        Ok((row, peaks.demand(), o.under_reserved()))
    })
}

/// Refuses (a `Refusal`, a `ValueError`) a path the observer must not
/// write: a link, anything not a regular file, a file that is not an
/// observation file (`vramfit_runtime::observe::file::check_path`). An
/// absent path passes: the first row creates it.
#[pyfunction]
pub fn check_observation_path(py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
    crate::boundary(py, || {
        vramfit_runtime::observe::file::check_path(&path, &vramfit_runtime::observe::header()).map_err(|e| {
            crate::refusal(py, vramfit_runtime::error::Error::new(vramfit_runtime::error::Code::File, e.to_string()))
        })
    })
}

/// Appends one row under the file's lock: `("written", "")`, `("full",
/// "")` past `max_bytes`, or `("refused", words)` for a file it must not
/// touch and `("error", words)` where the file system refused; never
/// raises for the file, so an op's result is never lost to its row.
#[pyfunction]
pub fn append_observation(
    py: Python<'_>,
    path: std::path::PathBuf,
    row: &str,
    max_bytes: u64,
) -> PyResult<(&'static str, String)> {
    use vramfit_runtime::observe::file::{append, AppendError, Appended};
    crate::boundary(py, || {
        let header = vramfit_runtime::observe::header();
        Ok(match py.detach(|| append(&path, &header, row, max_bytes)) {
            Ok(Appended::Written) => ("written", String::new()),
            Ok(Appended::Full) => ("full", String::new()),
            Err(e @ AppendError::NotOurs(_)) => ("refused", e.to_string()),
            Err(e @ AppendError::Io(_)) => ("error", e.to_string()),
        })
    })
}
