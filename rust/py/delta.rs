//! Bindings of the Delta converter's per-file work (`crate::delta`).

use arrow_array::cast::AsArray;
use arrow_array::{make_array, Array};
use arrow_data::ArrayData;
use arrow_pyarrow::PyArrowType;
use arrow_schema::DataType;
use pyo3::prelude::*;

use super::guard;
use super::transforms::import_array;
use crate::delta::stats::{parse_stats, StatKind, StatsColumn};
use crate::Error;

type Arrays = Vec<PyArrowType<ArrayData>>;
/// `(num_records, tight_bounds, null_counts, mins, maxs)`.
type Parsed = (
    PyArrowType<ArrayData>,
    PyArrowType<ArrayData>,
    Arrays,
    Arrays,
    Arrays,
);

/// Parses Delta stats JSON strings (a string array) for the leaf columns at `paths` (physical
/// names) read as `kinds` (`int`, `float`, `bool`, `string`, `decimal(P)`); returns
/// `(num_records, tight_bounds, null_counts, mins, maxs)`, the last three one array per column.
#[pyfunction]
fn delta_parse_stats(
    py: Python<'_>,
    stats: &Bound<'_, PyAny>,
    paths: Vec<Vec<String>>,
    kinds: Vec<String>,
) -> PyResult<Parsed> {
    let data = import_array(stats)?;
    let parsed = py.detach(move || {
        guard(move || {
            if paths.len() != kinds.len() {
                return Err(Error::validation("paths and kinds differ in length"));
            }
            let columns = paths
                .into_iter()
                .zip(kinds.iter())
                .map(|(path, k)| {
                    Ok(StatsColumn {
                        path,
                        kind: StatKind::parse(k)?,
                    })
                })
                .collect::<crate::Result<Vec<_>>>()?;
            let array = make_array(data);
            if array.data_type() != &DataType::Utf8 {
                return Err(Error::validation(format!(
                    "stats must be a string array, got {}",
                    array.data_type()
                )));
            }
            Ok(parse_stats(array.as_string::<i32>(), &columns))
        })
    })?;
    let wrap = |a: &dyn Array| PyArrowType(a.to_data());
    Ok((
        wrap(&parsed.num_records),
        wrap(&parsed.tight_bounds),
        parsed.null_counts.iter().map(|a| wrap(a)).collect(),
        parsed.mins.iter().map(|a| wrap(a.as_ref())).collect(),
        parsed.maxs.iter().map(|a| wrap(a.as_ref())).collect(),
    ))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(delta_parse_stats, m)?)?;
    Ok(())
}
