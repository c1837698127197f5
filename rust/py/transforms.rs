//! Bindings of the partition transforms (`crate::transforms`).

use arrow_array::make_array;
use arrow_data::ArrayData;
use arrow_pyarrow::{FromPyArrowUnchecked, PyArrowType};
use arrow_schema::DataType;
use pyo3::prelude::*;

use super::guard;

/// Imports a pyarrow array. The import trusts pyarrow's buffers (no O(n) re-validation, which
/// would cost more than most kernels) but checks the layout; view types, whose views point
/// into data buffers, are validated fully because their kernels follow those pointers.
pub(crate) fn import_array(obj: &Bound<'_, PyAny>) -> PyResult<ArrayData> {
    // Safety: the data is checked below before any kernel reads it.
    let data = unsafe { ArrayData::from_pyarrow_bound_unchecked(obj)? };
    guard(|| {
        match data.data_type() {
            DataType::Utf8View | DataType::BinaryView => data.validate_full()?,
            _ => data.validate()?,
        }
        Ok(())
    })?;
    Ok(data)
}

/// Applies the transform named by its spec JSON form (`bucket[16]`, `day`, ...) to an array.
#[pyfunction]
fn transform_apply(
    py: Python<'_>,
    transform: &str,
    array: &Bound<'_, PyAny>,
) -> PyResult<PyArrowType<ArrayData>> {
    let data = import_array(array)?;
    let name = transform.to_owned();
    let out = py.detach(move || {
        guard(move || {
            let arr = make_array(data);
            crate::transforms::apply(&name, arr.as_ref()).map(|r| r.to_data())
        })
    })?;
    Ok(PyArrowType(out))
}

/// The position of the first value of a decimal array with more digits than its type's
/// precision (nulls skipped), or `None`.
#[pyfunction]
fn decimal_out_of_precision(py: Python<'_>, array: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    let data = import_array(array)?;
    Ok(py.detach(move || crate::decimal::first_out_of_precision(make_array(data).as_ref())))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(transform_apply, m)?)?;
    m.add_function(wrap_pyfunction!(decimal_out_of_precision, m)?)?;
    Ok(())
}
