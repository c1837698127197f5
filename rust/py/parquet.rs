//! Bindings of `crate::parquet_footer` (the footer check the general reader runs before pyarrow
//! builds column-chunk metadata) and `crate::parquet_read` (the native reader of small files).

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use arrow_schema::Schema;
use pyo3::prelude::*;

use super::deletes::PositionBitmap;
use super::guard;
use crate::parquet_footer::check_footer;
use crate::parquet_read::{read_files, FileRequest, Projection};

/// Per row group: (row count, data page offsets, dictionary page offsets or -1), one offset per
/// leaf column.
type RowGroupTuple = (i64, Vec<i64>, Vec<i64>);

/// Checks a Parquet footer (the Thrift bytes before the length and magic); raises
/// `CorruptFileError` when pyarrow could abort on it, else returns each row group's facts.
#[pyfunction]
fn parquet_check_footer(footer: &[u8]) -> PyResult<Vec<RowGroupTuple>> {
    guard(|| {
        let info = check_footer(footer)?;
        Ok(info
            .row_groups
            .into_iter()
            .map(|g| {
                let data = g.columns.iter().map(|c| c.data_page_offset).collect();
                let dict = g
                    .columns
                    .iter()
                    .map(|c| c.dictionary_page_offset.unwrap_or(-1))
                    .collect();
                (g.num_rows, data, dict)
            })
            .collect())
    })
}

/// The batches of each whole local Parquet file in `paths` (with `rows` rows by its manifest,
/// 0 when unknown), the top-level columns of `field_ids` typed as `schema`, without the rows
/// at the positions of its `deleted` bitmap; `None` for a file to read with the general
/// reader. Files are decoded in parallel on `threads` threads without the GIL. A column whose
/// `optional` flag is set reads as nulls from a file without it; with `positions`, the last
/// field of `schema` (int64) receives each row's position in its file.
#[pyfunction]
#[pyo3(signature = (
    paths, rows, deleted, field_ids, schema, batch_size, threads = None, optional = None,
    positions = false
))]
#[allow(clippy::too_many_arguments)]
fn parquet_read_files(
    py: Python<'_>,
    paths: Vec<String>,
    rows: Vec<i64>,
    deleted: Vec<Option<Py<PositionBitmap>>>,
    field_ids: Vec<i32>,
    schema: PyArrowType<Schema>,
    batch_size: usize,
    threads: Option<usize>,
    optional: Option<Vec<bool>>,
    positions: bool,
) -> PyResult<Vec<Option<Vec<PyArrowType<RecordBatch>>>>> {
    guard(|| {
        if paths.len() != rows.len() {
            return Err(crate::Error::validation(format!(
                "{} paths but {} row counts",
                paths.len(),
                rows.len()
            )));
        }
        let files: Vec<FileRequest> = paths
            .into_iter()
            .zip(rows)
            .map(|(path, rows)| FileRequest { path, rows })
            .collect();
        let projection = Projection {
            field_ids,
            optional: optional.unwrap_or_default(),
            positions,
            schema: Arc::new(schema.0),
            batch_size,
        };
        let out = py.detach(|| {
            let bitmaps: Vec<_> = deleted
                .iter()
                .map(|d| d.as_ref().map(|b| b.get().core()))
                .collect();
            read_files(&files, &bitmaps, &projection, threads)
        })?;
        Ok(out
            .into_iter()
            .map(|f| f.map(|batches| batches.into_iter().map(PyArrowType).collect()))
            .collect())
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parquet_check_footer, m)?)?;
    m.add_function(wrap_pyfunction!(parquet_read_files, m)?)?;
    Ok(())
}
