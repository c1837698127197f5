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
use pyo3::types::{PyBytes, PyList, PyTuple};
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

/// Runs `work` on a pool of `threads` threads (None or 0: rayon's global pool).
pub(super) fn on_pool<T: Send>(
    threads: Option<usize>,
    work: impl FnOnce() -> crate::Result<T> + Send,
) -> crate::Result<T> {
    match threads {
        Some(t) if t > 0 => rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .map_err(|e| Error::internal(format!("thread pool: {e}")))?
            .install(work),
        _ => work(),
    }
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
            on_pool(threads, || {
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
            on_pool(threads, || {
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

fn py_opt_i64<'py>(
    py: Python<'py>,
    col: &arrow_array::Int64Array,
    i: usize,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(if col.is_null(i) {
        py.None().into_bound(py)
    } else {
        col.value(i).into_pyobject(py)?.into_any()
    })
}

/// The Python value of row `i` of an int64 column, reusing the previous row's object when the
/// value repeats (sequence numbers do, across a manifest's files).
struct IntColumn<'a, 'py> {
    col: &'a arrow_array::Int64Array,
    last: Option<(Option<i64>, Bound<'py, PyAny>)>,
}

impl<'a, 'py> IntColumn<'a, 'py> {
    fn new(col: &'a arrow_array::Int64Array) -> Self {
        Self { col, last: None }
    }

    fn get(&mut self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        let v = (!self.col.is_null(i)).then(|| self.col.value(i));
        if let Some((lv, obj)) = &self.last {
            if *lv == v {
                return Ok(obj.clone());
            }
        }
        let obj = py_opt_i64(py, self.col, i)?;
        self.last = Some((v, obj.clone()));
        Ok(obj)
    }
}

/// `object.__setattr__(obj, name, value)`: the generic attribute store a frozen dataclass's
/// `__init__` uses, which keeps the values in the instance's shared-key storage instead of
/// materialising a per-object `__dict__`.
fn store(
    obj: &Bound<'_, PyAny>,
    name: &Bound<'_, pyo3::types::PyString>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    // SAFETY: the three pointers are live Python objects borrowed for the call, the GIL is
    // held (the Bound values prove it), and the function does not steal references.
    let rc =
        unsafe { pyo3::ffi::PyObject_GenericSetAttr(obj.as_ptr(), name.as_ptr(), value.as_ptr()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(PyErr::fetch(obj.py()))
    }
}

fn batch_col<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> crate::Result<&'a T> {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| Error::validation(format!("task columns lack a well-typed {name:?}")))
}

/// One `FileScanTask` (and its `DataFileRef`) per row of `columns` (file_path, file_format
/// (lower case), record_count, file_size_in_bytes, first_row_id, sequence_number,
/// file_sequence_number: the planned entries of one manifest; residual_index: int32 into
/// `residuals`; partition_index: int32 into `partitions`, the distinct partition tuples, shared
/// by the files of one partition; deletes: list<int32> into `refs`). The objects are built
/// like `object.__new__` plus `object.__setattr__` per field in declaration order (what a
/// frozen dataclass's `__init__` does), without a Python loop.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn plan_build_tasks<'py>(
    py: Python<'py>,
    task_cls: &Bound<'py, PyAny>,
    data_cls: &Bound<'py, PyAny>,
    spec_id: i32,
    columns: PyArrowType<RecordBatch>,
    partitions: &Bound<'py, PyList>,
    residuals: &Bound<'py, PyList>,
    refs: &Bound<'py, PyList>,
) -> PyResult<Bound<'py, PyList>> {
    let b = columns.0;
    let n = b.num_rows();
    let cols = guard(|| {
        let path = batch_col::<arrow_array::StringArray>(&b, "file_path")?;
        let fmt = batch_col::<arrow_array::StringArray>(&b, "file_format")?;
        let count = batch_col::<arrow_array::Int64Array>(&b, "record_count")?;
        let size = batch_col::<arrow_array::Int64Array>(&b, "file_size_in_bytes")?;
        let first = batch_col::<arrow_array::Int64Array>(&b, "first_row_id")?;
        let seq = batch_col::<arrow_array::Int64Array>(&b, "sequence_number")?;
        let fseq = batch_col::<arrow_array::Int64Array>(&b, "file_sequence_number")?;
        let res = batch_col::<Int32Array>(&b, "residual_index")?;
        let part = batch_col::<Int32Array>(&b, "partition_index")?;
        let dels = batch_col::<ListArray>(&b, "deletes")?;
        let dels_values = dels
            .values()
            .as_any()
            .downcast_ref::<Int32Array>()
            .ok_or_else(|| Error::validation("deletes must be list<int32>"))?;
        let check = |col: &Int32Array, len: usize, what: &str| -> crate::Result<()> {
            match col
                .iter()
                .find(|v| !matches!(*v, Some(x) if x >= 0 && (x as usize) < len))
            {
                Some(v) => Err(Error::validation(format!(
                    "{what} index {v:?} out of range for {len} values"
                ))),
                None => Ok(()),
            }
        };
        check(res, residuals.len(), "residual")?;
        check(part, partitions.len(), "partition")?;
        check(dels_values, refs.len(), "delete file")?;
        Ok((
            path,
            fmt,
            (count, size, first, seq, fseq),
            res,
            part,
            dels,
            dels_values,
        ))
    })?;
    let (path, fmt, (count, size, first, seq, fseq), res, part, dels, dels_values) = cols;
    let object_new = py
        .import(pyo3::intern!(py, "builtins"))?
        .getattr(pyo3::intern!(py, "object"))?
        .getattr(pyo3::intern!(py, "__new__"))?;
    let k = |s: &'static str| pyo3::types::PyString::intern(py, s);
    let (k_path, k_fmt, k_count, k_size, k_spec, k_part, k_first, k_seq, k_fseq) = (
        k("file_path"),
        k("file_format"),
        k("record_count"),
        k("file_size_in_bytes"),
        k("spec_id"),
        k("partition"),
        k("first_row_id"),
        k("data_sequence_number"),
        k("file_sequence_number"),
    );
    let (k_data, k_deletes, k_start, k_length, k_residual) = (
        k("data_file"),
        k("delete_files"),
        k("start"),
        k("length"),
        k("residual"),
    );
    let spec = spec_id.into_pyobject(py)?.into_any();
    let zero = 0i64.into_pyobject(py)?.into_any();
    let none = py.None().into_bound(py);
    let empty = PyTuple::empty(py).into_any();
    let (mut count, mut size, mut first, mut seq, mut fseq) = (
        IntColumn::new(count),
        IntColumn::new(size),
        IntColumn::new(first),
        IntColumn::new(seq),
        IntColumn::new(fseq),
    );
    let mut formats: Vec<(String, Bound<'py, PyAny>)> = Vec::new();
    let offsets = dels.value_offsets();
    let mut out: Vec<Bound<'py, PyAny>> = Vec::with_capacity(n);
    for i in 0..n {
        if path.is_null(i) {
            return Err(Error::validation(format!("data file {i} has a null file_path")).into());
        }
        let f = if fmt.is_null(i) { "" } else { fmt.value(i) };
        let fmt_obj = match formats.iter().find(|(s, _)| s == f) {
            Some((_, o)) => o.clone(),
            None => {
                let o = pyo3::types::PyString::new(py, f).into_any();
                formats.push((f.to_owned(), o.clone()));
                o
            }
        };
        // fields in declaration order (DataFileRef, then FileScanTask)
        let data = object_new.call1((data_cls,))?;
        store(
            &data,
            &k_path,
            pyo3::types::PyString::new(py, path.value(i)).as_any(),
        )?;
        store(&data, &k_fmt, &fmt_obj)?;
        store(&data, &k_count, &count.get(py, i)?)?;
        store(&data, &k_size, &size.get(py, i)?)?;
        store(&data, &k_spec, &spec)?;
        store(
            &data,
            &k_part,
            &partitions.get_item(part.value(i) as usize)?,
        )?;
        store(&data, &k_first, &first.get(py, i)?)?;
        store(&data, &k_seq, &seq.get(py, i)?)?;
        store(&data, &k_fseq, &fseq.get(py, i)?)?;
        let (lo, hi) = (offsets[i] as usize, offsets[i + 1] as usize);
        let deletes = if hi > lo {
            let items = (lo..hi)
                .map(|j| refs.get_item(dels_values.value(j) as usize))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any()
        } else {
            empty.clone()
        };
        let task = object_new.call1((task_cls,))?;
        store(&task, &k_data, &data)?;
        store(&task, &k_deletes, &deletes)?;
        store(&task, &k_start, &zero)?;
        store(&task, &k_length, &none)?;
        store(
            &task,
            &k_residual,
            &residuals.get_item(res.value(i) as usize)?,
        )?;
        store(&task, &k_spec, &spec)?;
        out.push(task);
    }
    PyList::new(py, out)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(plan_build_tasks, m)?)?;
    m.add_function(wrap_pyfunction!(plan_check_unique_paths, m)?)?;
    m.add_function(wrap_pyfunction!(plan_entry_masks, m)?)?;
    m.add_function(wrap_pyfunction!(plan_keep_entries, m)?)?;
    m.add_function(wrap_pyfunction!(plan_match_deletes, m)?)?;
    m.add_function(wrap_pyfunction!(plan_partition_keys, m)?)?;
    m.add_function(wrap_pyfunction!(plan_read_manifests, m)?)?;
    Ok(())
}
