//! Bindings of `crate::sketch`: a theta sketch fed with Arrow arrays.

use arrow_array::make_array;
use arrow_data::ArrayData;
use arrow_pyarrow::PyArrowType;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::guard;
use crate::sketch;

/// A theta sketch (lgK 12, seed 9001) of one column's distinct values.
#[pyclass(module = "icefloe._native", name = "ThetaSketch")]
#[derive(Default)]
pub struct ThetaSketch {
    inner: sketch::ThetaSketch,
}

#[pymethods]
impl ThetaSketch {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Adds every non-null, non-empty value of `array`, fed as Iceberg serialises it.
    fn update(&mut self, py: Python<'_>, array: PyArrowType<ArrayData>) -> PyResult<()> {
        let inner = &mut self.inner;
        let array = make_array(array.0);
        guard(|| py.detach(|| sketch::update_from_array(inner, array.as_ref())))
    }

    /// A sketch from its compact serialisation (any writer's), to merge with others: the
    /// serialised sketches of a column's parts merge into the sketch of the whole column.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Ok(ThetaSketch {
            inner: guard(|| sketch::ThetaSketch::from_bytes(data))?,
        })
    }

    /// Folds `other` into this sketch (a union).
    fn merge(&mut self, other: &ThetaSketch) {
        self.inner.merge(&other.inner);
    }

    /// The distinct-count estimate, exact up to 4,096 distinct values.
    fn estimate(&self) -> f64 {
        self.inner.estimate()
    }

    /// True while the count is exact.
    fn is_exact(&self) -> bool {
        self.inner.is_exact()
    }

    /// The compact serialisation Iceberg Java writes into a Puffin blob.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.to_bytes())
    }
}

/// The estimate of a serialised compact theta sketch (any writer's header).
#[pyfunction]
fn theta_sketch_estimate(data: &[u8]) -> PyResult<f64> {
    guard(|| sketch::estimate_of(data))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ThetaSketch>()?;
    m.add_function(wrap_pyfunction!(theta_sketch_estimate, m)?)?;
    Ok(())
}
