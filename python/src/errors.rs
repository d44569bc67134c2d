//! The crate's errors as Python exceptions, numpy's way: `ValueError` for bad
//! input (shape, dtype, non-finite, bad selection), `MemoryError` for a
//! problem that does not fit (the message has the figures),
//! `numpy.linalg.LinAlgError` for no convergence and a matrix that is not
//! positive definite (as numpy's `cholesky` and scipy's `eigh(a, b)` raise), `KeyboardInterrupt` for a
//! cancelled run, `RuntimeError` for the rest.

use eigenflow::Error;
use pyo3::exceptions::{PyKeyboardInterrupt, PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// The innermost error deciding the exception class: a task's or a batch
/// item's own error.
fn cause(e: &Error) -> &Error {
    match e {
        Error::TaskFailed { source, .. } | Error::BatchItem { source, .. } => cause(source),
        other => other,
    }
}

/// `numpy.linalg.LinAlgError(msg)`, or a `RuntimeError` if numpy cannot be
/// imported (it always can when arrays were passed in).
fn linalg_error(py: Python<'_>, msg: String) -> PyErr {
    let made = py
        .import("numpy.linalg")
        .and_then(|m| m.getattr("LinAlgError"))
        .and_then(|cls| cls.call1((msg.clone(),)));
    match made {
        Ok(v) => PyErr::from_value(v),
        Err(_) => PyRuntimeError::new_err(msg),
    }
}

/// The Python exception for `e` (message: the crate's, whole).
pub fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let msg = e.to_string();
    match cause(&e) {
        Error::Shape(_) | Error::NonFinite { .. } | Error::InvalidArgument(_) => {
            PyValueError::new_err(msg)
        }
        Error::OutOfMemory { .. } => PyMemoryError::new_err(msg),
        Error::NoConvergence { .. } | Error::NotPositiveDefinite { .. } => linalg_error(py, msg),
        Error::Cancelled => PyKeyboardInterrupt::new_err(msg),
        _ => PyRuntimeError::new_err(msg),
    }
}
