//! Bindings of filter evaluation for scan planning (`crate::expr`). Filters cross as the compact
//! JSON text of `icefloe.expressions.serde.to_dict`; arrays and batches as Arrow; masks return
//! as Arrow boolean arrays. Evaluation runs with the GIL released.

use arrow_array::cast::AsArray;
use arrow_array::{make_array, Array, RecordBatch};
use arrow_data::ArrayData;
use arrow_pyarrow::PyArrowType;
use pyo3::prelude::*;

use super::guard;
use super::transforms::import_array;
use crate::expr::{manifest, metrics, parse, partition, strict};
use crate::Error;

type PyArray = PyArrowType<ArrayData>;

/// Manifest-list pruning mask over a `partitions` summaries column (list<struct>), for a
/// projected partition filter whose term ids are among `field_ids` (the spec's partition field
/// ids in order).
#[pyfunction]
fn expr_manifest_mask(
    py: Python<'_>,
    summaries: &Bound<'_, PyAny>,
    filter_json: &str,
    field_ids: Vec<i32>,
) -> PyResult<PyArray> {
    let data = import_array(summaries)?;
    let text = filter_json.to_owned();
    let out = py.detach(move || {
        guard(move || {
            let expr = parse(&text)?;
            let arr = make_array(data);
            let list = arr.as_list_opt::<i32>().ok_or_else(|| {
                Error::validation(format!(
                    "manifest partitions summaries must be a list array, got {}",
                    arr.data_type()
                ))
            })?;
            Ok(manifest::manifest_mask(list, &expr, &field_ids)?.into_data())
        })
    })?;
    Ok(PyArrowType(out))
}

/// Exact partition-filter mask over a `partition` struct column.
#[pyfunction]
fn expr_partition_mask(
    py: Python<'_>,
    partition: &Bound<'_, PyAny>,
    filter_json: &str,
) -> PyResult<PyArray> {
    let data = import_array(partition)?;
    let text = filter_json.to_owned();
    let out = py.detach(move || {
        guard(move || {
            let expr = parse(&text)?;
            let arr = make_array(data);
            let s = arr.as_struct_opt().ok_or_else(|| {
                Error::validation(format!(
                    "the partition column must be a struct array, got {}",
                    arr.data_type()
                ))
            })?;
            Ok(partition::partition_mask(s, &expr)?.into_data())
        })
    })?;
    Ok(PyArrowType(out))
}

fn entries_batch(entries: ArrayData) -> crate::Result<RecordBatch> {
    let arr = make_array(entries);
    let s = arr.as_struct_opt().ok_or_else(|| {
        Error::validation(format!(
            "manifest entries must be a struct array, got {}",
            arr.data_type()
        ))
    })?;
    if s.null_count() > 0 {
        return Err(Error::validation(
            "manifest entries struct array has null rows",
        ));
    }
    Ok(RecordBatch::from(s.clone()))
}

/// A mask of `eval` over a manifest batch given as a struct array of its columns.
fn entries_mask(
    py: Python<'_>,
    entries: &Bound<'_, PyAny>,
    filter_json: &str,
    eval: fn(&RecordBatch, &crate::expr::Expr) -> crate::Result<arrow_array::BooleanArray>,
) -> PyResult<PyArray> {
    let data = import_array(entries)?;
    let text = filter_json.to_owned();
    let out = py.detach(move || {
        guard(move || {
            let expr = parse(&text)?;
            Ok(eval(&entries_batch(data)?, &expr)?.into_data())
        })
    })?;
    Ok(PyArrowType(out))
}

/// Inclusive metrics mask over a manifest batch given as a struct array of its columns.
#[pyfunction]
fn expr_metrics_mask(
    py: Python<'_>,
    entries: &Bound<'_, PyAny>,
    filter_json: &str,
) -> PyResult<PyArray> {
    entries_mask(py, entries, filter_json, metrics::metrics_mask)
}

/// Strict metrics mask over a manifest batch given as a struct array of its columns: whether
/// each file's metrics prove that every row matches.
#[pyfunction]
fn expr_strict_metrics_mask(
    py: Python<'_>,
    entries: &Bound<'_, PyAny>,
    filter_json: &str,
) -> PyResult<PyArray> {
    entries_mask(py, entries, filter_json, strict::strict_metrics_mask)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(expr_manifest_mask, m)?)?;
    m.add_function(wrap_pyfunction!(expr_metrics_mask, m)?)?;
    m.add_function(wrap_pyfunction!(expr_partition_mask, m)?)?;
    m.add_function(wrap_pyfunction!(expr_strict_metrics_mask, m)?)?;
    Ok(())
}
