//! Bindings of scan planning (`crate::plan`): partition keys and delete file matching. Arrays
//! cross as Arrow; the work runs with the GIL released.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{make_array, Array, Int32Array, ListArray};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_data::ArrayData;
use arrow_pyarrow::PyArrowType;
use arrow_schema::{DataType, Field};
use pyo3::prelude::*;

use super::guard;
use super::transforms::import_array;
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

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(plan_match_deletes, m)?)?;
    m.add_function(wrap_pyfunction!(plan_partition_keys, m)?)?;
    Ok(())
}
