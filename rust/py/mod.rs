//! Python bindings: the only module that imports pyo3. Each area registers its functions from a
//! file of its own here; this file only assembles the module.

mod deletes;
mod errors;
mod expr;
mod manifest;
mod plan;
mod plan_read;
mod puffin;
mod serde;
mod transforms;

use pyo3::prelude::*;

pub(crate) use errors::guard;

/// Raises a Rust panic inside a guarded call; lets tests prove a panic arrives as a Python
/// exception (`icefloe.exceptions.InternalError`) instead of aborting the interpreter.
#[pyfunction]
fn _debug_panic(message: String) -> PyResult<()> {
    guard(move || -> crate::Result<()> { panic!("{message}") })
}

/// Returns the error of the given kind; lets tests check the Rust-to-Python error mapping.
#[pyfunction]
fn _debug_error(kind: &str, message: String) -> PyResult<()> {
    let err = match kind {
        "validation" => crate::Error::validation(message),
        "corrupt" => crate::Error::corrupt(message),
        "unsupported" => crate::Error::unsupported(message),
        _ => crate::Error::internal(message),
    };
    guard(move || Err(err))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_debug_panic, m)?)?;
    m.add_function(wrap_pyfunction!(_debug_error, m)?)?;
    deletes::register(m)?;
    expr::register(m)?;
    manifest::register(m)?;
    plan::register(m)?;
    plan_read::register(m)?;
    puffin::register(m)?;
    serde::register(m)?;
    transforms::register(m)?;
    Ok(())
}
