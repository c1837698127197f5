//! Bindings of scan planning (`crate::plan`): partition keys and delete file matching. Arrays
//! cross as Arrow; the work runs with the GIL released.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{make_array, Array, BooleanArray, Int32Array, ListArray, RecordBatch};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_data::ArrayData;
use arrow_pyarrow::PyArrowType;
use arrow_schema::{DataType, Field};
use pyo3::prelude::*;
use rayon::prelude::*;

use super::guard;
use super::transforms::import_array;
use crate::expr::{parse, Expr};
use crate::plan::{partition_keys, DeleteIndex};
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

/// The entries of one decoded manifest a scan keeps: not DELETED (status 2), partition tuple
/// satisfying the batch's projected partition filter (if any) and column metrics that may match
/// the table filter (if any).
fn entry_mask(
    batch: &RecordBatch,
    partition: Option<&Expr>,
    metrics: Option<&Expr>,
) -> crate::Result<BooleanArray> {
    let n = batch.num_rows();
    let status = batch
        .column_by_name("status")
        .ok_or_else(|| Error::validation("manifest batch lacks the status column"))?;
    let status = status
        .as_primitive_opt::<Int32Type>()
        .ok_or_else(|| Error::validation("manifest status must be int32"))?;
    let mut keep: Vec<bool> = (0..n)
        .map(|i| status.is_null(i) || status.value(i) != 2)
        .collect();
    let mut and = |m: BooleanArray| {
        for (i, k) in keep.iter_mut().enumerate() {
            // a null mask value is treated as "may match"
            *k = *k && (m.is_null(i) || m.value(i));
        }
    };
    if let Some(expr) = partition {
        let col = batch
            .column_by_name("partition")
            .ok_or_else(|| Error::validation("manifest batch lacks the partition column"))?;
        let s = as_struct(col.as_ref(), "the partition column")?;
        and(crate::expr::partition::partition_mask(&s, expr)?);
    }
    if let Some(expr) = metrics {
        if n > 0 {
            and(crate::expr::metrics::metrics_mask(batch, expr)?);
        }
    }
    Ok(BooleanArray::from(keep))
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
                        entry_mask(b, parts[k].as_ref(), metrics.as_ref()).map(|m| m.into_data())
                    })
                    .collect::<crate::Result<Vec<ArrayData>>>()
            };
            match threads {
                Some(t) if t > 0 => rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .map_err(|e| Error::internal(format!("thread pool: {e}")))?
                    .install(work),
                _ => work(),
            }
        })
    })?;
    Ok(out.into_iter().map(PyArrowType).collect())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(plan_entry_masks, m)?)?;
    m.add_function(wrap_pyfunction!(plan_match_deletes, m)?)?;
    m.add_function(wrap_pyfunction!(plan_partition_keys, m)?)?;
    Ok(())
}
