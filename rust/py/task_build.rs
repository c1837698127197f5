//! Bulk creation of scan tasks: one `FileScanTask` (and its `DataFileRef`) per planned data
//! file of a manifest batch, in one call per batch, without a Python loop. The partition tuples
//! are made once per distinct partition of the batch and shared by its files.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    Time64MicrosecondType, Time64NanosecondType, TimestampMicrosecondType, TimestampNanosecondType,
};
use arrow_array::{make_array, Array, ArrayRef, Int32Array, Int64Array, ListArray, RecordBatch};
use arrow_data::ArrayData;
use arrow_pyarrow::PyArrowType;
use arrow_schema::{DataType, TimeUnit};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyList, PyString, PyTuple};

use super::guard;
use super::tasks::{DataFileRef, FilePath, FileScanTask};
use crate::plan::partition_keys;
use crate::Error;

fn batch_col<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> crate::Result<&'a T> {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| Error::validation(format!("planned entries lack a well-typed {name:?}")))
}

/// True if [`py_value`] converts every value of type `t`.
fn convertible(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Null
            | DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Date32
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::Time64(_)
            | DataType::Timestamp(TimeUnit::Microsecond | TimeUnit::Nanosecond, _)
    )
}

/// Row `i` of `a` as the Python value `pyarrow` gives after `columnar._physical` (dates,
/// times and timestamps as their integer counts); `a`'s type passed [`convertible`].
fn py_value(py: Python<'_>, a: &dyn Array, i: usize) -> PyResult<Py<PyAny>> {
    if a.is_null(i) {
        return Ok(py.None());
    }
    let int = |v: i64| -> PyResult<Py<PyAny>> { Ok(v.into_pyobject(py)?.into_any().unbind()) };
    match a.data_type() {
        DataType::Boolean => Ok(PyBool::new(py, a.as_boolean().value(i))
            .to_owned()
            .into_any()
            .unbind()),
        DataType::Int8 => int(a.as_primitive::<Int8Type>().value(i).into()),
        DataType::Int16 => int(a.as_primitive::<Int16Type>().value(i).into()),
        DataType::Int32 => int(a.as_primitive::<Int32Type>().value(i).into()),
        DataType::Int64 => int(a.as_primitive::<Int64Type>().value(i)),
        DataType::Date32 => int(a.as_primitive::<Date32Type>().value(i).into()),
        DataType::Time64(TimeUnit::Microsecond) => {
            int(a.as_primitive::<Time64MicrosecondType>().value(i))
        }
        DataType::Time64(_) => int(a.as_primitive::<Time64NanosecondType>().value(i)),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            int(a.as_primitive::<TimestampMicrosecondType>().value(i))
        }
        DataType::Timestamp(_, _) => int(a.as_primitive::<TimestampNanosecondType>().value(i)),
        DataType::Float32 => {
            let v = f64::from(a.as_primitive::<Float32Type>().value(i));
            Ok(PyFloat::new(py, v).into_any().unbind())
        }
        DataType::Float64 => {
            let v = a.as_primitive::<Float64Type>().value(i);
            Ok(PyFloat::new(py, v).into_any().unbind())
        }
        DataType::Utf8 => Ok(PyString::new(py, a.as_string::<i32>().value(i))
            .into_any()
            .unbind()),
        DataType::LargeUtf8 => Ok(PyString::new(py, a.as_string::<i64>().value(i))
            .into_any()
            .unbind()),
        DataType::Binary => Ok(PyBytes::new(py, a.as_binary::<i32>().value(i))
            .into_any()
            .unbind()),
        DataType::LargeBinary => Ok(PyBytes::new(py, a.as_binary::<i64>().value(i))
            .into_any()
            .unbind()),
        t => Err(Error::internal(format!("no Python conversion of {t}")).into()),
    }
}

/// Per row, an index into the distinct partition tuples (numbered in order of first
/// occurrence), and those tuples; None when a partition field has a type without a Rust
/// conversion (the caller then converts in Python).
#[allow(clippy::type_complexity)]
fn distinct_partitions(
    py: Python<'_>,
    partition: &ArrayRef,
) -> PyResult<Option<(Vec<u32>, Vec<Py<PyAny>>)>> {
    let n = partition.len();
    let s = partition.as_struct_opt().ok_or_else(|| {
        Error::validation(format!(
            "the partition column must be a struct, got {}",
            partition.data_type()
        ))
    })?;
    if s.num_columns() == 0 {
        return Ok(Some((
            vec![0; n],
            vec![PyTuple::empty(py).into_any().unbind()],
        )));
    }
    if !s.columns().iter().all(|c| convertible(c.data_type())) {
        return Ok(None);
    }
    let keys = guard(|| partition_keys(s))?;
    let mut seen: hashbrown::HashMap<&[u8], u32> = hashbrown::HashMap::new();
    let mut first: Vec<usize> = Vec::new();
    let mut index: Vec<u32> = Vec::with_capacity(n);
    for i in 0..n {
        let key = keys.value(i);
        // the files of a manifest often come partition by partition
        if i > 0 && keys.value(i - 1) == key {
            index.push(index[i - 1]);
            continue;
        }
        let next = first.len() as u32;
        index.push(*seen.entry(key).or_insert_with(|| {
            first.push(i);
            next
        }));
    }
    let tuples = first
        .iter()
        .map(|&row| {
            let items = s
                .columns()
                .iter()
                .map(|c| py_value(py, c.as_ref(), row))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyTuple::new(py, items)?.into_any().unbind())
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Some((index, tuples)))
}

fn check_index(col: &Int32Array, len: usize, what: &str) -> crate::Result<()> {
    match col
        .iter()
        .find(|v| !matches!(*v, Some(x) if x >= 0 && (x as usize) < len))
    {
        Some(v) => Err(Error::validation(format!(
            "{what} index {v:?} out of range for {len} values"
        ))),
        None => Ok(()),
    }
}

/// One `FileScanTask` (and its `DataFileRef`) per row of `entries`, the planned entries of one
/// manifest (columns file_path, file_format (lower-cased here), record_count,
/// file_size_in_bytes, optional first_row_id, sequence_number, file_sequence_number,
/// partition); `residual_index` (int32) points into `residuals`; `deletes` (list<int32>, None:
/// no deletes) into `refs`. `partitions` (an int32 index per row into a list of tuples) gives
/// the partition values; without it they are converted here, one tuple per distinct
/// partition shared by its files, and the result is None if a partition field's type has no
/// conversion here (the caller then passes `partitions`).
#[pyfunction]
#[pyo3(signature = (spec_id, entries, residual_index, residuals, deletes=None, refs=Vec::new(), partitions=None))]
#[allow(clippy::too_many_arguments)]
fn plan_build_tasks<'py>(
    py: Python<'py>,
    spec_id: i32,
    entries: PyArrowType<RecordBatch>,
    residual_index: PyArrowType<ArrayData>,
    residuals: Vec<Py<PyAny>>,
    deletes: Option<PyArrowType<ArrayData>>,
    refs: Vec<Py<PyAny>>,
    partitions: Option<(PyArrowType<ArrayData>, Vec<Py<PyAny>>)>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let b = entries.0;
    let n = b.num_rows();
    let res = make_array(residual_index.0);
    let deletes = deletes.map(|d| make_array(d.0));
    let (path, fmt, count, size, first, seq, fseq, res, dels) = guard(|| {
        let path = Arc::new(batch_col::<arrow_array::StringArray>(&b, "file_path")?.clone());
        let fmt = batch_col::<arrow_array::StringArray>(&b, "file_format")?;
        let count = batch_col::<Int64Array>(&b, "record_count")?;
        let size = batch_col::<Int64Array>(&b, "file_size_in_bytes")?;
        let first = match b.column_by_name("first_row_id") {
            Some(_) => Some(batch_col::<Int64Array>(&b, "first_row_id")?),
            None => None,
        };
        let seq = batch_col::<Int64Array>(&b, "sequence_number")?;
        let fseq = batch_col::<Int64Array>(&b, "file_sequence_number")?;
        let res = res
            .as_any()
            .downcast_ref::<Int32Array>()
            .ok_or_else(|| Error::validation("residual_index must be int32"))?;
        let dels = match &deletes {
            Some(d) => {
                let list = d
                    .as_any()
                    .downcast_ref::<ListArray>()
                    .ok_or_else(|| Error::validation("deletes must be list<int32>"))?;
                let values = list
                    .values()
                    .as_any()
                    .downcast_ref::<Int32Array>()
                    .ok_or_else(|| Error::validation("deletes must be list<int32>"))?;
                check_index(values, refs.len(), "delete file")?;
                Some((list, values))
            }
            None => None,
        };
        for (len, what) in [
            (res.len(), "residual_index"),
            (dels.map_or(n, |d| d.0.len()), "deletes"),
        ] {
            if len != n {
                return Err(Error::validation(format!(
                    "{what} has {len} rows for {n} entries"
                )));
            }
        }
        check_index(res, residuals.len(), "residual")?;
        for (c, name) in [(count, "record_count"), (size, "file_size_in_bytes")] {
            if c.null_count() > 0 {
                return Err(Error::validation(format!("a data file has a null {name}")));
            }
        }
        if let Some(i) = (0..n).find(|&i| path.is_null(i)) {
            return Err(Error::validation(format!(
                "data file {i} has a null file_path"
            )));
        }
        Ok((path, fmt, count, size, first, seq, fseq, res, dels))
    })?;
    let (part_index, part_tuples) = match partitions {
        Some((index, tuples)) => {
            let index = make_array(index.0);
            let index = guard(|| {
                let index = index
                    .as_any()
                    .downcast_ref::<Int32Array>()
                    .ok_or_else(|| Error::validation("the partition index must be int32"))?;
                if index.len() != n {
                    return Err(Error::validation(format!(
                        "the partition index has {} rows for {n} entries",
                        index.len()
                    )));
                }
                check_index(index, tuples.len(), "partition")?;
                Ok(index.values().iter().map(|&v| v as u32).collect())
            })?;
            (index, tuples)
        }
        None => {
            let partition = b.column_by_name("partition").ok_or_else(|| {
                PyErr::from(Error::validation("planned entries lack a \"partition\""))
            })?;
            match distinct_partitions(py, partition)? {
                Some(p) => p,
                None => return Ok(None),
            }
        }
    };
    let opt = |c: &Int64Array, i: usize| (!c.is_null(i)).then(|| c.value(i));
    let empty = PyTuple::empty(py).unbind();
    let mut formats: Vec<(String, Py<PyString>)> = Vec::new();
    let spec = i64::from(spec_id);
    let mut out: Vec<Py<FileScanTask>> = Vec::with_capacity(n);
    for i in 0..n {
        let f = if fmt.is_null(i) { "" } else { fmt.value(i) };
        let file_format = match formats.iter().find(|(s, _)| s == f) {
            Some((_, o)) => o.clone_ref(py),
            None => {
                let o = PyString::new(py, &f.to_lowercase()).unbind();
                formats.push((f.to_owned(), o.clone_ref(py)));
                o
            }
        };
        let data = Py::new(
            py,
            DataFileRef {
                file_path: FilePath::Arrow(path.clone(), i),
                file_format,
                record_count: count.value(i),
                file_size_in_bytes: size.value(i),
                spec_id: spec,
                partition: part_tuples[part_index[i] as usize].clone_ref(py),
                first_row_id: first.and_then(|c| opt(c, i)),
                data_sequence_number: opt(seq, i),
                file_sequence_number: opt(fseq, i),
            },
        )?;
        let delete_files = match dels {
            Some((list, values)) => {
                let offsets = list.value_offsets();
                let (lo, hi) = (offsets[i] as usize, offsets[i + 1] as usize);
                if hi > lo {
                    let items = (lo..hi).map(|j| refs[values.value(j) as usize].clone_ref(py));
                    PyTuple::new(py, items)?.unbind()
                } else {
                    empty.clone_ref(py)
                }
            }
            None => empty.clone_ref(py),
        };
        out.push(Py::new(
            py,
            FileScanTask {
                data_file: data,
                delete_files,
                start: 0,
                length: None,
                residual: residuals[res.value(i) as usize].clone_ref(py),
                spec_id: spec,
            },
        )?);
    }
    Ok(Some(PyList::new(py, out)?))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(plan_build_tasks, m)?)?;
    Ok(())
}
