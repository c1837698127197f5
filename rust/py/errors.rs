//! Mapping of core errors and panics to the Python exception hierarchy defined in
//! `icefloe.exceptions` (the classes live in Python so there is exactly one hierarchy).

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::Error;

fn class_name(e: &Error) -> &'static str {
    match e {
        Error::Validation(_) => "ValidationError",
        Error::CorruptFile(_) => "CorruptFileError",
        Error::Unsupported(_) => "UnsupportedFeatureError",
        Error::Internal(_) => "InternalError",
    }
}

fn raise(py: Python<'_>, name: &str, message: String) -> PyErr {
    let cls = py
        .import("icefloe.exceptions")
        .and_then(|m| m.getattr(name))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match cls {
        Ok(cls) => PyErr::from_type(cls, message),
        Err(_) => PyRuntimeError::new_err(format!("{name}: {message}")),
    }
}

impl From<Error> for PyErr {
    fn from(e: Error) -> Self {
        Python::attach(|py| raise(py, class_name(&e), e.message().to_owned()))
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    }
}

/// Runs `f`, turning its error into the matching Python exception and a panic into
/// `icefloe.exceptions.InternalError`. Every binding that calls into the core goes through here.
pub(crate) fn guard<T>(f: impl FnOnce() -> crate::Result<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.into()),
        Err(payload) => {
            let msg = format!(
                "internal error (Rust panic): {}",
                panic_message(payload.as_ref())
            );
            Err(Python::attach(|py| raise(py, "InternalError", msg)))
        }
    }
}
