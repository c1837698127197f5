//! Bindings of the fused manifest decode and selection of scan planning: a manifest is decoded
//! and its kept entries selected in one native step, and the decoded manifest stays in Rust as
//! a [`DecodedManifest`] handle (what the planner's manifest cache holds), so decoded batches
//! never cross into Python and back just to be filtered.

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;

use super::guard;
use crate::expr::{parse, Expr};
use crate::manifest::Inherit;
use crate::plan::read::{join, keep_entries, read_keep, split_metrics};
use crate::Error;

/// A decoded manifest (or the metrics maps of one) held in Rust for a manifest cache.
#[pyclass(module = "icefloe._native", frozen)]
pub struct DecodedManifest {
    batch: RecordBatch,
}

#[pymethods]
impl DecodedManifest {
    /// The bytes of the Arrow buffers held (the manifest cache's measure).
    #[getter]
    fn nbytes(&self) -> usize {
        self.batch.get_array_memory_size()
    }

    /// The number of manifest entries.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }

    /// The decoded columns as a pyarrow RecordBatch.
    fn to_arrow(&self) -> PyArrowType<RecordBatch> {
        PyArrowType(self.batch.clone())
    }
}

fn parse_filters(
    partition_filters: &[Option<String>],
    spec_index: &[usize],
    metrics_filter: Option<&str>,
) -> crate::Result<(Vec<Option<Expr>>, Option<Expr>)> {
    let parts: Vec<Option<Expr>> = partition_filters
        .iter()
        .map(|f| f.as_deref().map(parse).transpose())
        .collect::<crate::Result<_>>()?;
    if let Some(&k) = spec_index.iter().find(|&&k| k >= parts.len()) {
        return Err(Error::validation(format!("spec index {k} out of range")));
    }
    Ok((parts, metrics_filter.map(parse).transpose()?))
}

type Decoded = (
    PyArrowType<RecordBatch>,
    Option<DecodedManifest>,
    Option<DecodedManifest>,
);

/// Decodes data manifests for planning and selects their kept entries, in parallel with the
/// GIL released: `plan_read_manifests` then `plan_keep_entries` per manifest in one step.
/// For each manifest: its kept entries reduced to `keep_columns` and, with `full`, the decoded
/// manifest as handles for a cache: the planning columns, and (with `metric_ids`) the trimmed
/// metrics maps apart. `spec_index[i]` picks manifest `i`'s partition filter.
#[pyfunction]
#[pyo3(signature = (data, snapshot_ids, sequence_numbers, first_row_ids, names, metric_ids, spec_index, partition_filters, metrics_filter, keep_columns, full, threads=None))]
#[allow(clippy::too_many_arguments)]
fn plan_read_keep_manifests(
    py: Python<'_>,
    data: Vec<Bound<'_, PyBytes>>,
    snapshot_ids: Vec<Option<i64>>,
    sequence_numbers: Vec<Option<i64>>,
    first_row_ids: Vec<Option<i64>>,
    names: Vec<String>,
    metric_ids: Option<Vec<i32>>,
    spec_index: Vec<usize>,
    partition_filters: Vec<Option<String>>,
    metrics_filter: Option<String>,
    keep_columns: Vec<String>,
    full: bool,
    threads: Option<usize>,
) -> PyResult<Vec<Decoded>> {
    let n = data.len();
    let slices: Vec<&[u8]> = data.iter().map(|b| b.as_bytes()).collect();
    let out = py.detach(|| {
        guard(|| {
            for (len, what) in [
                (snapshot_ids.len(), "snapshot_ids"),
                (sequence_numbers.len(), "sequence_numbers"),
                (first_row_ids.len(), "first_row_ids"),
                (names.len(), "names"),
                (spec_index.len(), "spec_index"),
            ] {
                if len != n {
                    return Err(Error::validation(format!(
                        "{what} has {len} entries for {n} manifests"
                    )));
                }
            }
            let (parts, metrics) =
                parse_filters(&partition_filters, &spec_index, metrics_filter.as_deref())?;
            let cols: &[&str] = if metric_ids.is_some() {
                crate::plan::read::METRICS_COLUMNS
            } else {
                &[]
            };
            let keep: Vec<&str> = keep_columns.iter().map(String::as_str).collect();
            crate::pool::install(threads, || {
                slices
                    .par_iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let inherit = Inherit {
                            snapshot_id: snapshot_ids[i],
                            sequence_number: sequence_numbers[i],
                            first_row_id: first_row_ids[i],
                        };
                        let (kept, whole) = read_keep(
                            d,
                            &inherit,
                            cols,
                            metric_ids.as_deref(),
                            parts[spec_index[i]].as_ref(),
                            metrics.as_ref(),
                            &keep,
                        )
                        .map_err(|e| e.context(&names[i]))?;
                        if !full {
                            return Ok((kept, None, None));
                        }
                        let base = split_metrics(&whole, false)?;
                        let extra = match metric_ids {
                            Some(_) => Some(split_metrics(&whole, true)?),
                            None => None,
                        };
                        Ok((kept, Some(base), extra))
                    })
                    .collect::<crate::Result<Vec<_>>>()
            })
        })
    })?;
    Ok(out
        .into_iter()
        .map(|(k, b, e)| {
            (
                PyArrowType(k),
                b.map(|batch| DecodedManifest { batch }),
                e.map(|batch| DecodedManifest { batch }),
            )
        })
        .collect())
}

/// `plan_keep_entries` over cached decoded manifests: batch `i` is `bases[i]` with the
/// columns of `extras[i]` (its metrics maps) beside it, when given.
#[pyfunction]
#[pyo3(signature = (bases, extras, spec_index, partition_filters, metrics_filter, keep_columns, threads=None))]
#[allow(clippy::too_many_arguments)]
fn plan_keep_decoded(
    py: Python<'_>,
    bases: Vec<Py<DecodedManifest>>,
    extras: Vec<Option<Py<DecodedManifest>>>,
    spec_index: Vec<usize>,
    partition_filters: Vec<Option<String>>,
    metrics_filter: Option<String>,
    keep_columns: Vec<String>,
    threads: Option<usize>,
) -> PyResult<Vec<PyArrowType<RecordBatch>>> {
    let out = py.detach(|| {
        guard(|| {
            let n = bases.len();
            if extras.len() != n || spec_index.len() != n {
                return Err(Error::validation(format!(
                    "{} extras and {} spec indices for {n} manifests",
                    extras.len(),
                    spec_index.len()
                )));
            }
            let (parts, metrics) =
                parse_filters(&partition_filters, &spec_index, metrics_filter.as_deref())?;
            let keep: Vec<&str> = keep_columns.iter().map(String::as_str).collect();
            crate::pool::install(threads, || {
                (0..n)
                    .into_par_iter()
                    .map(|i| {
                        let base = &bases[i].get().batch;
                        let joined;
                        let batch = match &extras[i] {
                            Some(e) => {
                                joined = join(base, &e.get().batch)?;
                                &joined
                            }
                            None => base,
                        };
                        keep_entries(
                            batch,
                            parts[spec_index[i]].as_ref(),
                            metrics.as_ref(),
                            &keep,
                        )
                    })
                    .collect::<crate::Result<Vec<_>>>()
            })
        })
    })?;
    Ok(out.into_iter().map(PyArrowType).collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DecodedManifest>()?;
    m.add_function(wrap_pyfunction!(plan_keep_decoded, m)?)?;
    m.add_function(wrap_pyfunction!(plan_read_keep_manifests, m)?)?;
    Ok(())
}
