//! Bindings of scan planning (`crate::plan`): partition keys and delete file matching. Arrays
//! cross as Arrow; the work runs with the GIL released.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{make_array, Array, Int32Array, ListArray, RecordBatch};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_data::ArrayData;
use arrow_pyarrow::PyArrowType;
use arrow_schema::{DataType, Field};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;

use super::guard;
use super::transforms::import_array;
use crate::expr::{parse, Expr};
use crate::manifest::Inherit;
use crate::plan::read::{entry_mask, keep_entries, mask_array, read_projected};
use crate::plan::{check_unique_paths, partition_keys, DeleteIndex};
use crate::Error;

type PyArray = PyArrowType<ArrayData>;

fn as_struct(arr: &dyn Array, what: &str) -> crate::Result<arrow_array::StructArray> {
    arr.as_struct_opt().cloned().ok_or_else(|| {
        Error::validation(format!(
            "{what} must be a struct array, got {}",
            arr.data_type()
        ))
    })
}

/// Byte keys of a `partition` struct column's rows (equal exactly for equal tuples).
#[pyfunction]
fn plan_partition_keys(py: Python<'_>, partition: &Bound<'_, PyAny>) -> PyResult<PyArray> {
    let data = import_array(partition)?;
    let out = py.detach(move || {
        guard(move || {
            let arr = make_array(data);
            let s = as_struct(arr.as_ref(), "the partition column")?;
            Ok(partition_keys(&s)?.into_data())
        })
    })?;
    Ok(PyArrowType(out))
}

/// For each data file, the indices of the delete files that apply to it (a list<int32> array);
/// see `crate::plan::DeleteIndex` for the columns of both struct arrays.
#[pyfunction]
fn plan_match_deletes(
    py: Python<'_>,
    data_files: &Bound<'_, PyAny>,
    delete_files: &Bound<'_, PyAny>,
) -> PyResult<PyArray> {
    let data = import_array(data_files)?;
    let deletes = import_array(delete_files)?;
    let out = py.detach(move || {
        guard(move || {
            let data = as_struct(make_array(data).as_ref(), "data files")?;
            let deletes = as_struct(make_array(deletes).as_ref(), "delete files")?;
            let index = DeleteIndex::new(&deletes)?;
            let (offsets, indices) = index.match_all(&data)?;
            let values = Int32Array::from_iter_values(indices.into_iter().map(|i| i as i32));
            let list = ListArray::try_new(
                Arc::new(Field::new("item", DataType::Int32, false)),
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                Arc::new(values),
                None,
            )?;
            Ok(list.into_data())
        })
    })?;
    Ok(PyArrowType(out))
}

/// Raises a `CorruptFileError` naming a data file path that occurs twice across the string
/// arrays `paths` (a `ValidationError` for a null path); the arrays are checked in place.
#[pyfunction]
fn plan_check_unique_paths(py: Python<'_>, paths: Vec<Bound<'_, PyAny>>) -> PyResult<()> {
    let data = paths
        .iter()
        .map(import_array)
        .collect::<PyResult<Vec<ArrayData>>>()?;
    py.detach(move || {
        guard(move || {
            let arrays: Vec<_> = data.into_iter().map(make_array).collect();
            check_unique_paths(&arrays)
        })
    })
}

/// For each decoded manifest batch, the mask of entries a scan keeps (see `entry_mask`).
/// `partition_filters[spec_index[i]]` is batch `i`'s projected partition filter (None: no
/// partition pruning); `metrics_filter` is the table filter (None: no metrics pruning). Batches
/// are evaluated in parallel with the GIL released.
#[pyfunction]
#[pyo3(signature = (batches, spec_index, partition_filters, metrics_filter=None, threads=None))]
fn plan_entry_masks(
    py: Python<'_>,
    batches: Vec<PyArrowType<RecordBatch>>,
    spec_index: Vec<usize>,
    partition_filters: Vec<Option<String>>,
    metrics_filter: Option<String>,
    threads: Option<usize>,
) -> PyResult<Vec<PyArray>> {
    let batches: Vec<RecordBatch> = batches.into_iter().map(|b| b.0).collect();
    let out = py.detach(move || {
        guard(move || {
            if spec_index.len() != batches.len() {
                return Err(Error::validation(format!(
                    "{} spec indices for {} batches",
                    spec_index.len(),
                    batches.len()
                )));
            }
            let parts: Vec<Option<Expr>> = partition_filters
                .iter()
                .map(|f| f.as_deref().map(parse).transpose())
                .collect::<crate::Result<_>>()?;
            let metrics = metrics_filter.as_deref().map(parse).transpose()?;
            for &k in &spec_index {
                if k >= parts.len() {
                    return Err(Error::validation(format!("spec index {k} out of range")));
                }
            }
            let work = || {
                batches
                    .par_iter()
                    .zip(spec_index.par_iter())
                    .map(|(b, &k)| {
                        entry_mask(b, parts[k].as_ref(), metrics.as_ref())
                            .map(|m| mask_array(&m).into_data())
                    })
                    .collect::<crate::Result<Vec<ArrayData>>>()
            };
            crate::pool::install(threads, work)
        })
    })?;
    Ok(out.into_iter().map(PyArrowType).collect())
}

fn per_manifest(
    v: Option<Vec<Option<i64>>>,
    n: usize,
    what: &str,
) -> crate::Result<Vec<Option<i64>>> {
    match v {
        None => Ok(vec![None; n]),
        Some(v) if v.len() == n => Ok(v),
        Some(v) => Err(Error::validation(format!(
            "{what} has {} values for {n} manifests",
            v.len()
        ))),
    }
}

/// Decodes manifests for planning (in parallel, GIL released): only the base planning columns
/// plus `columns`, inheritance applied; with `metric_ids`, metrics maps trimmed to those field
/// ids (see `crate::plan::read::read_projected`).
#[pyfunction]
#[pyo3(signature = (data, snapshot_ids=None, sequence_numbers=None, first_row_ids=None, names=None, columns=Vec::new(), metric_ids=None, threads=None))]
#[allow(clippy::too_many_arguments)]
fn plan_read_manifests(
    py: Python<'_>,
    data: Vec<Bound<'_, PyBytes>>,
    snapshot_ids: Option<Vec<Option<i64>>>,
    sequence_numbers: Option<Vec<Option<i64>>>,
    first_row_ids: Option<Vec<Option<i64>>>,
    names: Option<Vec<String>>,
    columns: Vec<String>,
    metric_ids: Option<Vec<i32>>,
    threads: Option<usize>,
) -> PyResult<Vec<PyArrowType<RecordBatch>>> {
    let n = data.len();
    let slices: Vec<&[u8]> = data.iter().map(|b| b.as_bytes()).collect();
    let out = py.detach(|| {
        guard(|| {
            let snaps = per_manifest(snapshot_ids, n, "snapshot_ids")?;
            let seqs = per_manifest(sequence_numbers, n, "sequence_numbers")?;
            let firsts = per_manifest(first_row_ids, n, "first_row_ids")?;
            let names =
                names.unwrap_or_else(|| (0..n).map(|i| format!("<manifest {i}>")).collect());
            if names.len() != n {
                return Err(Error::validation("names must have one entry per manifest"));
            }
            let cols: Vec<&str> = columns.iter().map(String::as_str).collect();
            crate::pool::install(threads, || {
                slices
                    .par_iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let inherit = Inherit {
                            snapshot_id: snaps[i],
                            sequence_number: seqs[i],
                            first_row_id: firsts[i],
                        };
                        read_projected(d, &inherit, &cols, metric_ids.as_deref())
                            .map_err(|e| e.context(&names[i]))
                    })
                    .collect::<crate::Result<Vec<_>>>()
            })
        })
    })?;
    Ok(out.into_iter().map(PyArrowType).collect())
}

/// For each decoded manifest batch, its kept entries (see `crate::plan::read::keep_entries`)
/// reduced to `columns`; `partition_filters[spec_index[i]]` is batch `i`'s projected partition
/// filter (None: no partition pruning), `metrics_filter` the table filter (None: no metrics
/// pruning). In parallel with the GIL released.
#[pyfunction]
#[pyo3(signature = (batches, spec_index, partition_filters, metrics_filter, columns, threads=None))]
fn plan_keep_entries(
    py: Python<'_>,
    batches: Vec<PyArrowType<RecordBatch>>,
    spec_index: Vec<usize>,
    partition_filters: Vec<Option<String>>,
    metrics_filter: Option<String>,
    columns: Vec<String>,
    threads: Option<usize>,
) -> PyResult<Vec<PyArrowType<RecordBatch>>> {
    let batches: Vec<RecordBatch> = batches.into_iter().map(|b| b.0).collect();
    let out = py.detach(move || {
        guard(move || {
            if spec_index.len() != batches.len() {
                return Err(Error::validation(format!(
                    "{} spec indices for {} batches",
                    spec_index.len(),
                    batches.len()
                )));
            }
            let parts: Vec<Option<Expr>> = partition_filters
                .iter()
                .map(|f| f.as_deref().map(parse).transpose())
                .collect::<crate::Result<_>>()?;
            let metrics = metrics_filter.as_deref().map(parse).transpose()?;
            if let Some(&k) = spec_index.iter().find(|&&k| k >= parts.len()) {
                return Err(Error::validation(format!("spec index {k} out of range")));
            }
            let cols: Vec<&str> = columns.iter().map(String::as_str).collect();
            crate::pool::install(threads, || {
                batches
                    .par_iter()
                    .zip(spec_index.par_iter())
                    .map(|(b, &k)| keep_entries(b, parts[k].as_ref(), metrics.as_ref(), &cols))
                    .collect::<crate::Result<Vec<_>>>()
            })
        })
    })?;
    Ok(out.into_iter().map(PyArrowType).collect())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(plan_check_unique_paths, m)?)?;
    m.add_function(wrap_pyfunction!(plan_entry_masks, m)?)?;
    m.add_function(wrap_pyfunction!(plan_keep_entries, m)?)?;
    m.add_function(wrap_pyfunction!(plan_match_deletes, m)?)?;
    m.add_function(wrap_pyfunction!(plan_partition_keys, m)?)?;
    m.add_function(wrap_pyfunction!(plan_read_manifests, m)?)?;
    Ok(())
}
