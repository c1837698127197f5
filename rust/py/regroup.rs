//! Bindings of `crate::regroup` (rows of a table regrouped by key or by index, in parallel).

use arrow_array::{make_array, Array, Int64Array, UInt64Array};
use arrow_data::ArrayData;
use arrow_pyarrow::PyArrowType;
use arrow_schema::DataType;
use pyo3::prelude::*;

use super::guard;
use crate::regroup::{group_by_key, scatter_columns, take_pieces};
use crate::Error;

type PyArray = PyArrowType<ArrayData>;

/// The rows `indices` (a uint64 array without nulls, each below the columns' length) of each
/// of `columns` (arrays of one length), as up to `pieces` consecutive chunks per column,
/// gathered on `threads` threads (None: the default count) with the GIL released.
#[pyfunction]
#[pyo3(signature = (columns, indices, pieces, threads = None))]
fn take_arrays(
    py: Python<'_>,
    columns: Vec<PyArray>,
    indices: PyArray,
    pieces: usize,
    threads: Option<usize>,
) -> PyResult<Vec<Vec<PyArray>>> {
    guard(|| {
        if indices.0.data_type() != &DataType::UInt64 {
            return Err(Error::validation(format!(
                "take indices must be a uint64 array, not {}",
                indices.0.data_type()
            )));
        }
        let indices = UInt64Array::from(indices.0);
        let columns: Vec<_> = columns.into_iter().map(|c| make_array(c.0)).collect();
        let out = py.detach(|| take_pieces(&columns, &indices, pieces, threads))?;
        Ok(out
            .into_iter()
            .map(|chunks| {
                chunks
                    .into_iter()
                    .map(|a| PyArrowType(a.to_data()))
                    .collect()
            })
            .collect())
    })
}

/// `columns` (arrays of one length) with their rows grouped by `keys` (an int64 array without
/// nulls, one non-negative key per row, at most the row count plus about a million): groups
/// in ascending key order, rows in their order within each; the same rows as a `take` of a
/// stable sort by key. Returns the regrouped columns, `(first row, rows)` of each group in
/// order (the first row numbered in the input), and the permutation as a uint64 array when
/// `permutation` is set. Runs on `threads` threads (None: the default count), the GIL
/// released.
#[pyfunction]
#[pyo3(signature = (columns, keys, threads = None, permutation = false))]
#[allow(clippy::type_complexity)]
fn regroup_by_key(
    py: Python<'_>,
    columns: Vec<PyArray>,
    keys: PyArray,
    threads: Option<usize>,
    permutation: bool,
) -> PyResult<(Vec<PyArray>, Vec<(usize, usize)>, Option<PyArray>)> {
    guard(|| {
        if keys.0.data_type() != &DataType::Int64 {
            return Err(Error::validation(format!(
                "group keys must be an int64 array, not {}",
                keys.0.data_type()
            )));
        }
        let keys = Int64Array::from(keys.0);
        if keys.null_count() > 0 {
            return Err(Error::validation("group keys must not contain nulls"));
        }
        let columns: Vec<_> = columns.into_iter().map(|c| make_array(c.0)).collect();
        let (out, groups, perm) = py.detach(|| -> crate::Result<_> {
            let grouping = group_by_key(keys.values())?;
            let out = scatter_columns(&columns, &grouping, threads)?;
            let perm = permutation.then(|| grouping.permutation());
            Ok((out, grouping.groups, perm))
        })?;
        Ok((
            out.into_iter().map(|a| PyArrowType(a.to_data())).collect(),
            groups,
            perm.map(|p| PyArrowType(p.into_data())),
        ))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(take_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(regroup_by_key, m)?)?;
    Ok(())
}
