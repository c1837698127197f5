//! Bindings of `crate::geo`: geometry bounds of a WKB column and the per-row box test.

use arrow_array::{make_array, Array};
use arrow_data::ArrayData;
use arrow_pyarrow::PyArrowType;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::guard;
use super::transforms::import_array;
use crate::geo;

type Bounds<'py> = Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>;

/// The lower and upper bound points (`x:y[:z][:m]`) of a WKB array, or None when no value has
/// both X and Y. Malformed WKB raises ValidationError naming the row.
#[pyfunction]
fn geo_bounds<'py>(py: Python<'py>, array: &Bound<'py, PyAny>) -> PyResult<Bounds<'py>> {
    let data = import_array(array)?;
    let out = py.detach(move || {
        guard(move || Ok(geo::array_bbox(make_array(data).as_ref())?.to_bounds()))
    })?;
    Ok(out.map(|(lo, hi)| (PyBytes::new(py, &lo), PyBytes::new(py, &hi))))
}

/// One boolean per WKB value: whether its bounding box intersects `query` (`[xmin, ymin, xmax,
/// ymax]`, then optionally `zmin, zmax` and `mmin, mmax`, NaN pairs for no constraint); null
/// for a null value.
#[pyfunction]
fn geo_intersects_mask(
    py: Python<'_>,
    array: &Bound<'_, PyAny>,
    query: Vec<f64>,
) -> PyResult<PyArrowType<ArrayData>> {
    let data = import_array(array)?;
    let out = py.detach(move || {
        guard(move || {
            let q = geo::query_box(&query)?;
            Ok(geo::intersects_mask(make_array(data).as_ref(), &q)?.into_data())
        })
    })?;
    Ok(PyArrowType(out))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(geo_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(geo_intersects_mask, m)?)?;
    Ok(())
}
