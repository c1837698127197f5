//! Bindings of `crate::parquet_write` (small data files encoded natively with their metrics).

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use super::guard;
use crate::parquet_write::{encode_files, ColumnSpec, EncodedFile, FileOptions, MetricsMode};
use crate::serde::primitive::PrimitiveType;

/// One column of the files: field id, Iceberg type string, metrics mode (`none`, `counts`,
/// `truncate`, `full`) and truncate width.
type ColumnTuple = (i32, String, String, usize);

fn column(c: ColumnTuple) -> crate::Result<ColumnSpec> {
    let (field_id, type_name, mode, width) = c;
    let mode = match mode.as_str() {
        "none" => MetricsMode::None,
        "counts" => MetricsMode::Counts,
        "truncate" => MetricsMode::Truncate(width),
        "full" => MetricsMode::Full,
        other => {
            return Err(crate::Error::validation(format!(
                "unknown metrics mode {other:?}"
            )));
        }
    };
    Ok(ColumnSpec {
        field_id,
        iceberg_type: PrimitiveType::parse(&type_name)?,
        mode,
    })
}

fn pairs<'py, T: IntoPyObject<'py> + Clone>(
    py: Python<'py>,
    items: &[(i32, T)],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in items {
        d.set_item(k, v.clone())?;
    }
    Ok(d)
}

fn byte_pairs<'py>(py: Python<'py>, items: &[(i32, Vec<u8>)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in items {
        d.set_item(k, PyBytes::new(py, v))?;
    }
    Ok(d)
}

fn file_dict<'py>(py: Python<'py>, f: &EncodedFile) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("data", PyBytes::new(py, &f.bytes))?;
    d.set_item("record_count", f.rows)?;
    d.set_item("column_sizes", pairs(py, &f.column_sizes)?)?;
    d.set_item("value_counts", pairs(py, &f.value_counts)?)?;
    d.set_item("null_value_counts", pairs(py, &f.null_counts)?)?;
    d.set_item("nan_value_counts", pairs(py, &f.nan_counts)?)?;
    d.set_item("lower_bounds", byte_pairs(py, &f.lower)?)?;
    d.set_item("upper_bounds", byte_pairs(py, &f.upper)?)?;
    d.set_item("split_offsets", f.split_offsets.clone())?;
    Ok(d)
}

/// Encodes the rows `(start, length)` of `batches` (one table) named by each of `slices` as one Parquet
/// file each (in memory, in parallel on `threads` threads without the GIL), with the page
/// checksums and the Iceberg metrics of `columns` (one per top-level column). Each file comes
/// back as a dict: `data` (the file's bytes), `record_count`, the metric maps and
/// `split_offsets`.
#[pyfunction]
#[pyo3(signature = (
    batches, slices, columns, compression, compression_level, dictionary, page_size,
    dictionary_page_size, row_group_rows, key_value, threads = None
))]
#[allow(clippy::too_many_arguments)]
fn parquet_encode_files<'py>(
    py: Python<'py>,
    batches: Vec<PyArrowType<RecordBatch>>,
    slices: Vec<(usize, usize)>,
    columns: Vec<ColumnTuple>,
    compression: String,
    compression_level: Option<i32>,
    dictionary: Vec<String>,
    page_size: usize,
    dictionary_page_size: usize,
    row_group_rows: usize,
    key_value: Vec<(String, String)>,
    threads: Option<usize>,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let files = guard(|| {
        let columns = columns
            .into_iter()
            .map(column)
            .collect::<crate::Result<Vec<_>>>()?;
        let options = FileOptions {
            compression,
            compression_level,
            dictionary,
            page_size,
            dictionary_page_size,
            row_group_rows,
            key_value,
        };
        let batches: Vec<RecordBatch> = batches.into_iter().map(|b| b.0).collect();
        py.detach(|| encode_files(&batches, &slices, &columns, &options, threads))
    })?;
    files.iter().map(|f| file_dict(py, f)).collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parquet_encode_files, m)?)?;
    Ok(())
}
