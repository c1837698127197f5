//! Python bindings: the only module that imports pyo3. Each area registers its functions from a
//! file of its own here; this file only assembles the module.

mod avro_data;
mod deletes;
mod delta;
mod errors;
mod expr;
mod geo;
mod local_fs;
mod manifest;
mod parquet;
mod parquet_write;
mod plan;
mod plan_read;
mod puffin;
mod regroup;
mod serde;
mod sketch;
mod task_build;
mod tasks;
mod transforms;
mod variant;

use pyo3::prelude::*;

pub(crate) use errors::guard;

/// The extension's allocator: the system's, keeping large freed blocks for reuse
/// (see `crate::alloc`).
#[global_allocator]
static GLOBAL: crate::alloc::BlockCache = crate::alloc::BlockCache::new();

/// Bytes held in cached free blocks, and how many allocations a cached block served.
#[pyfunction]
fn _block_cache_stats() -> (usize, u64) {
    GLOBAL.stats()
}

/// Returns the extension's cached free blocks to the system.
#[pyfunction]
fn release_memory() {
    GLOBAL.release()
}

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
    m.add_function(wrap_pyfunction!(_block_cache_stats, m)?)?;
    m.add_function(wrap_pyfunction!(release_memory, m)?)?;
    avro_data::register(m)?;
    delta::register(m)?;
    deletes::register(m)?;
    expr::register(m)?;
    geo::register(m)?;
    local_fs::register(m)?;
    manifest::register(m)?;
    parquet::register(m)?;
    parquet_write::register(m)?;
    plan::register(m)?;
    plan_read::register(m)?;
    puffin::register(m)?;
    serde::register(m)?;
    sketch::register(m)?;
    regroup::register(m)?;
    task_build::register(m)?;
    tasks::register(m)?;
    transforms::register(m)?;
    variant::register(m)?;
    Ok(())
}
