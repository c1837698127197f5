//! Bindings of `crate::local_fs` (many local files created or synced in one call).

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::local_fs::{sync_paths, write_new_files, WriteFailure};

fn os_error(e: &std::io::Error, path: &str) -> PyErr {
    match e.raw_os_error() {
        Some(code) => PyOSError::new_err((code, e.to_string(), path.to_string())),
        None => PyOSError::new_err(format!("{e}: {path}")),
    }
}

/// Creates each `paths[i]` with the bytes `data[i]` (directories made, an existing file an
/// error, no `fsync`) on up to `threads` threads, the GIL released. One entry per file: None,
/// or `(created, error)` for one that failed, `created` telling whether a partial file of
/// this call is left, `error` an `OSError` naming the path.
#[pyfunction]
fn write_new_files_local(
    py: Python<'_>,
    paths: Vec<String>,
    data: Vec<Bound<'_, PyBytes>>,
    threads: usize,
) -> PyResult<Vec<Option<(bool, PyErr)>>> {
    if paths.len() != data.len() {
        return Err(crate::Error::validation("one byte string per path").into());
    }
    let items: Vec<(&str, &[u8])> = paths
        .iter()
        .zip(&data)
        .map(|(p, d)| (p.as_str(), d.as_bytes()))
        .collect();
    let results = py.detach(|| write_new_files(&items, threads));
    Ok(results
        .iter()
        .zip(&paths)
        .map(|(r, p)| match r {
            Ok(()) => None,
            Err(WriteFailure::Create(e)) => Some((false, os_error(e, p))),
            Err(WriteFailure::Write(e)) => Some((true, os_error(e, p))),
        })
        .collect())
}

/// `fsync`s every path (file or directory; missing ones skipped) on up to `threads` threads,
/// the GIL released; the first failure raises `OSError` naming its path.
#[pyfunction]
fn sync_paths_local(py: Python<'_>, paths: Vec<String>, threads: usize) -> PyResult<()> {
    let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
    py.detach(|| sync_paths(&refs, threads))
        .map_err(|(i, e)| os_error(&e, &paths[i]))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(write_new_files_local, m)?)?;
    m.add_function(wrap_pyfunction!(sync_paths_local, m)?)?;
    Ok(())
}
