//! Bindings of the manifest and manifest-list readers and writers. Bytes in, Arrow out; the GIL
//! is released while decoding and encoding.

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;

use super::guard;
use crate::avro::Codec;
use crate::manifest::{self, Inherit, ListOptions, ManifestOptions, Projection};

/// Decodes a manifest into one RecordBatch, applying inheritance from its manifest_file.
#[pyfunction]
#[pyo3(signature = (data, *, snapshot_id=None, sequence_number=None, first_row_id=None, name="<bytes>", columns=None, stats_ids=None))]
#[allow(clippy::too_many_arguments)]
fn read_manifest(
    py: Python<'_>,
    data: &[u8],
    snapshot_id: Option<i64>,
    sequence_number: Option<i64>,
    first_row_id: Option<i64>,
    name: &str,
    columns: Option<Vec<String>>,
    stats_ids: Option<Vec<i32>>,
) -> PyResult<PyArrowType<RecordBatch>> {
    let inherit = Inherit {
        snapshot_id,
        sequence_number,
        first_row_id,
    };
    let projection = Projection { columns, stats_ids };
    guard(|| {
        py.detach(|| {
            manifest::read_manifest_projected(data, &inherit, &projection)
                .map_err(|e| e.context(name))
        })
        .map(PyArrowType)
    })
}

/// Decodes many manifests in parallel (one RecordBatch each).
#[pyfunction]
#[pyo3(signature = (data, *, snapshot_ids=None, sequence_numbers=None, first_row_ids=None, names=None, threads=None, columns=None, stats_ids=None))]
#[allow(clippy::too_many_arguments)]
fn read_manifests(
    py: Python<'_>,
    data: Vec<Bound<'_, PyBytes>>,
    snapshot_ids: Option<Vec<Option<i64>>>,
    sequence_numbers: Option<Vec<Option<i64>>>,
    first_row_ids: Option<Vec<Option<i64>>>,
    names: Option<Vec<String>>,
    threads: Option<usize>,
    columns: Option<Vec<String>>,
    stats_ids: Option<Vec<i32>>,
) -> PyResult<Vec<PyArrowType<RecordBatch>>> {
    let n = data.len();
    let projection = Projection { columns, stats_ids };
    let pick = |v: &Option<Vec<Option<i64>>>, what: &str| -> crate::Result<Vec<Option<i64>>> {
        match v {
            None => Ok(vec![None; n]),
            Some(v) if v.len() == n => Ok(v.clone()),
            Some(v) => Err(crate::Error::validation(format!(
                "{what} has {} values for {n} manifests",
                v.len()
            ))),
        }
    };
    guard(|| {
        let snaps = pick(&snapshot_ids, "snapshot_ids")?;
        let seqs = pick(&sequence_numbers, "sequence_numbers")?;
        let firsts = pick(&first_row_ids, "first_row_ids")?;
        let names = names
            .clone()
            .unwrap_or_else(|| (0..n).map(|i| format!("<manifest {i}>")).collect());
        if names.len() != n {
            return Err(crate::Error::validation(
                "names must have one entry per manifest",
            ));
        }
        let slices: Vec<&[u8]> = data.iter().map(|b| b.as_bytes()).collect();
        let out = py.detach(|| {
            let work = || {
                slices
                    .par_iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let inherit = Inherit {
                            snapshot_id: snaps[i],
                            sequence_number: seqs[i],
                            first_row_id: firsts[i],
                        };
                        manifest::read_manifest_projected(d, &inherit, &projection)
                            .map_err(|e| e.context(&names[i]))
                    })
                    .collect::<crate::Result<Vec<_>>>()
            };
            crate::pool::install(threads, work)
        })?;
        Ok(out.into_iter().map(PyArrowType).collect())
    })
}

/// Decodes a manifest list into one RecordBatch (v1 defaults applied).
#[pyfunction]
#[pyo3(signature = (data, *, name="<bytes>"))]
fn read_manifest_list(
    py: Python<'_>,
    data: &[u8],
    name: &str,
) -> PyResult<PyArrowType<RecordBatch>> {
    guard(|| {
        py.detach(|| manifest::read_manifest_list(data).map_err(|e| e.context(name)))
            .map(PyArrowType)
    })
}

/// Writes a manifest; returns its bytes and the one-row manifest_file RecordBatch.
#[pyfunction]
#[pyo3(signature = (batch, *, format_version, schema_json, spec_json, spec_id, path, content=0, snapshot_id=None, schema_id=None, codec="deflate", level=None))]
#[allow(clippy::too_many_arguments)]
fn write_manifest<'py>(
    py: Python<'py>,
    batch: PyArrowType<RecordBatch>,
    format_version: u8,
    schema_json: String,
    spec_json: String,
    spec_id: i32,
    path: String,
    content: i32,
    snapshot_id: Option<i64>,
    schema_id: Option<i32>,
    codec: &str,
    level: Option<i32>,
) -> PyResult<(Bound<'py, PyBytes>, PyArrowType<RecordBatch>)> {
    let (bytes, row) = guard(|| {
        let opts = ManifestOptions {
            format_version,
            schema_json,
            schema_id,
            spec_json,
            spec_id,
            content,
            codec: Codec::from_name(codec, level)?,
            path,
            snapshot_id,
        };
        py.detach(|| manifest::write_manifest(&batch.0, &opts))
    })?;
    Ok((PyBytes::new(py, &bytes), PyArrowType(row)))
}

/// Writes a manifest list; returns its bytes and the next row id (v3).
#[pyfunction]
#[pyo3(signature = (batch, *, format_version, snapshot_id, sequence_number, parent_snapshot_id=None, first_row_id=None, codec="deflate", level=None))]
#[allow(clippy::too_many_arguments)]
fn write_manifest_list<'py>(
    py: Python<'py>,
    batch: PyArrowType<RecordBatch>,
    format_version: u8,
    snapshot_id: i64,
    sequence_number: i64,
    parent_snapshot_id: Option<i64>,
    first_row_id: Option<i64>,
    codec: &str,
    level: Option<i32>,
) -> PyResult<(Bound<'py, PyBytes>, Option<i64>)> {
    let (bytes, next) = guard(|| {
        let opts = ListOptions {
            format_version,
            snapshot_id,
            parent_snapshot_id,
            sequence_number,
            first_row_id,
            codec: Codec::from_name(codec, level)?,
        };
        py.detach(|| manifest::write_manifest_list(&batch.0, &opts))
    })?;
    Ok((PyBytes::new(py, &bytes), next))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(read_manifests, m)?)?;
    m.add_function(wrap_pyfunction!(read_manifest_list, m)?)?;
    m.add_function(wrap_pyfunction!(write_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(write_manifest_list, m)?)?;
    Ok(())
}
