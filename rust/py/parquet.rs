//! Bindings of `crate::parquet_footer` (the footer check the general reader runs before pyarrow
//! builds column-chunk metadata), `crate::parquet_read` (the native reader of small files) and
//! `crate::parquet_deletes` (position delete files naming one data file) and
//! `crate::parquet_stream` (one large file streamed, its columns decoded in parallel).

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use arrow_schema::{Field, Schema};
use pyo3::prelude::*;

use super::deletes::{EqualityDeleteSet, PositionBitmap};
use super::guard;
use crate::expr::parse;
use crate::expr::rows::RowFilter;
use crate::parquet_deletes::{read_position_files, PositionFile};
use crate::parquet_footer::check_footer;
use crate::parquet_pages::check_page_counts;
use crate::parquet_read::{read_files, Deletes, FileRequest, Projection, Selection};
use crate::parquet_stream::{FileStream, Step};

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

/// Checks that the data pages of each column chunk hold as many values as `footer` says (see
/// `crate::parquet_pages::check_page_counts`); `data` is the whole file, else `path` names a
/// local file (one that cannot be opened is left to the read that follows, which reports it).
#[pyfunction]
#[pyo3(signature = (footer, data=None, path=None))]
fn parquet_check_page_counts(
    py: Python<'_>,
    footer: &[u8],
    data: Option<&[u8]>,
    path: Option<&str>,
) -> PyResult<()> {
    guard(|| match (data, path) {
        (Some(data), None) => {
            let data = bytes::Bytes::copy_from_slice(data);
            py.detach(|| check_page_counts(data, footer))
        }
        (None, Some(path)) => match std::fs::File::open(path) {
            Ok(file) => py.detach(|| check_page_counts(file, footer)),
            Err(_) => Ok(()),
        },
        _ => Err(crate::Error::validation(
            "give the file's bytes or its path",
        )),
    })
}

/// The rows a read keeps of each file (see `row_selection` and `key_selection`), passed as
/// `selection` to `parquet_read_files` / `parquet_open_stream`.
#[pyclass(module = "icefloe._native", frozen)]
pub struct RowSelection {
    selection: Selection,
}

/// The filter `filter_json` (the compact JSON of a bound expression) over the top-level
/// columns of `field_ids` typed as the first fields of `schema`, or `None` when it reads
/// another column or a type or operation the native evaluator does not take. Each batch read
/// with it holds only the positions of the live rows the filter selects.
#[pyfunction]
fn row_selection(
    filter_json: &str,
    field_ids: Vec<i32>,
    schema: PyArrowType<Schema>,
) -> PyResult<Option<RowSelection>> {
    guard(|| {
        let expr = parse(filter_json)?;
        let types: Vec<_> = schema
            .0
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        Ok(RowFilter::compile(&expr, &field_ids, &types)
            .ok()
            .map(|f| RowSelection {
                selection: Selection::Filter(Arc::new(f)),
            }))
    })
}

/// The rows whose key is in `keys` (a set of the columns `names`): the first `len(names)`
/// fields of `schema` are the key columns, matched by those names. Each batch read with it
/// holds every projected column of those rows and their positions.
#[pyfunction]
fn key_selection(
    keys: PyRef<'_, EqualityDeleteSet>,
    names: Vec<String>,
    schema: PyArrowType<Schema>,
) -> PyResult<RowSelection> {
    guard(|| {
        let fields = schema.0.fields();
        if names.len() > fields.len() {
            return Err(crate::Error::validation(format!(
                "{} key names for a schema of {} fields",
                names.len(),
                fields.len()
            )));
        }
        let named: Vec<Field> = names
            .iter()
            .zip(fields.iter())
            .map(|(n, f)| Field::new(n, f.data_type().clone(), true))
            .collect();
        Ok(RowSelection {
            selection: Selection::Keys {
                set: keys.shared(),
                names: Arc::new(Schema::new(named)),
            },
        })
    })
}

/// The batches of each whole local Parquet file in `paths` (with `rows` rows by its manifest,
/// 0 when unknown), the top-level columns of `field_ids` typed as `schema`, without the rows
/// at the positions of its `deleted` bitmap; `None` for a file to read with the general
/// reader. Files are decoded in parallel on `threads` threads without the GIL. A column whose
/// `optional` flag is set reads as nulls from a file without it; with `positions`, the last
/// field of `schema` (int64) receives each row's position in its file. A file's `equality`
/// set drops the rows whose projected columns (named by field id) it matches. With a
/// `selection` (and `positions`), a file's batches hold only the live rows it selects.
#[pyfunction]
#[pyo3(signature = (
    paths, rows, deleted, field_ids, schema, batch_size, threads = None, optional = None,
    positions = false, equality = None, selection = None
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
    equality: Option<Vec<Option<PyRef<'_, EqualityDeleteSet>>>>,
    selection: Option<PyRef<'_, RowSelection>>,
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
            selection: selection.map(|s| s.selection.clone()),
        };
        let equality = equality.unwrap_or_default();
        if !equality.is_empty() && equality.len() != files.len() {
            return Err(crate::Error::validation(format!(
                "{} equality delete sets for {} files",
                equality.len(),
                files.len()
            )));
        }
        // the sets stay borrowed (read-only) while the files are decoded without the GIL
        let sets: Vec<_> = equality
            .iter()
            .map(|e| e.as_ref().map(|s| s.core()))
            .collect();
        let out = py.detach(|| {
            let deletes: Vec<Deletes<'_>> = deleted
                .iter()
                .enumerate()
                .map(|(i, d)| Deletes {
                    positions: d.as_ref().map(|b| b.get().core()),
                    equality: sets.get(i).copied().flatten(),
                })
                .collect();
            read_files(&files, &deletes, &projection, threads)
        })?;
        Ok(out
            .into_iter()
            .map(|f| f.map(|batches| batches.into_iter().map(PyArrowType).collect()))
            .collect())
    })
}

/// The positions of each local position delete file in `paths` whose footer statistics prove
/// that every row names the data file in `referenced` (same order), read by `pos` alone; `None`
/// for a file to read the general way, also when its footer counts other rows than its entry
/// in `record_counts` (same order; `None` or 0: not known). Decoded in parallel without the GIL.
#[pyfunction]
#[pyo3(signature = (paths, referenced, threads = None, record_counts = None))]
fn parquet_read_position_deletes(
    py: Python<'_>,
    paths: Vec<String>,
    referenced: Vec<String>,
    threads: Option<usize>,
    record_counts: Option<Vec<Option<i64>>>,
) -> PyResult<Vec<Option<PositionBitmap>>> {
    guard(|| {
        if paths.len() != referenced.len() {
            return Err(crate::Error::validation(format!(
                "{} paths but {} referenced data files",
                paths.len(),
                referenced.len()
            )));
        }
        let counts = record_counts.unwrap_or_else(|| vec![None; paths.len()]);
        if counts.len() != paths.len() {
            return Err(crate::Error::validation(format!(
                "{} paths but {} record counts",
                paths.len(),
                counts.len()
            )));
        }
        let files: Vec<PositionFile> = paths
            .into_iter()
            .zip(referenced)
            .zip(counts)
            .map(|((path, referenced), rows)| PositionFile {
                path,
                referenced,
                rows,
            })
            .collect();
        let out = py.detach(|| read_position_files(&files, threads))?;
        Ok(out
            .into_iter()
            .map(|b| b.map(PositionBitmap::from_core))
            .collect())
    })
}

/// A stream of one large local Parquet file (see `parquet_open_stream`): iterating it gives
/// its batches of live rows; when it stops with `failed` set, the rest of the file could not
/// be decoded here and is the general reader's to read (or to report).
#[pyclass(module = "icefloe._native")]
pub struct ParquetFileStream {
    stream: Mutex<FileStream>,
    equality: Option<Py<EqualityDeleteSet>>,
    failed: bool,
}

#[pymethods]
impl ParquetFileStream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> Option<PyArrowType<RecordBatch>> {
        let set = self.equality.as_ref().map(|s| s.borrow(py));
        let equality = set.as_ref().map(|s| s.core());
        let stream = &self.stream;
        let step = py.detach(|| match stream.lock() {
            Ok(mut s) => s.next_step(equality),
            Err(_) => Step::Failed,
        });
        match step {
            Step::Batch(batch) => Some(PyArrowType(batch)),
            Step::End => None,
            Step::Failed => {
                self.failed = true;
                None
            }
        }
    }

    /// Whether the stream stopped before the end of the file (its rest left to the general
    /// reader).
    #[getter]
    fn failed(&self) -> bool {
        self.failed
    }
}

/// Opens a stream of the local Parquet file `path` (with `rows` rows by its manifest, 0 when
/// unknown): the top-level columns of `field_ids` typed as `schema`, in batches of
/// `batch_size` rows, each step decoding the columns in parallel on `threads` threads without
/// the GIL; the rows of `deleted` and those `equality` matches are dropped, `optional` and
/// `positions` and `selection` as in `parquet_read_files`. With `start` and `length`, only the
/// row groups of that split are read. `None` when the file does not fit the native path.
#[pyfunction]
#[pyo3(signature = (
    path, rows, deleted, field_ids, schema, batch_size, threads = None, optional = None,
    positions = false, equality = None, start = 0, length = None, selection = None
))]
#[allow(clippy::too_many_arguments)]
fn parquet_open_stream(
    py: Python<'_>,
    path: String,
    rows: i64,
    deleted: Option<Py<PositionBitmap>>,
    field_ids: Vec<i32>,
    schema: PyArrowType<Schema>,
    batch_size: usize,
    threads: Option<usize>,
    optional: Option<Vec<bool>>,
    positions: bool,
    equality: Option<Py<EqualityDeleteSet>>,
    start: u64,
    length: Option<u64>,
    selection: Option<PyRef<'_, RowSelection>>,
) -> PyResult<Option<ParquetFileStream>> {
    guard(|| {
        let projection = Projection {
            field_ids,
            optional: optional.unwrap_or_default(),
            positions,
            schema: Arc::new(schema.0),
            batch_size,
            selection: selection.map(|s| s.selection.clone()),
        };
        let range = match (start, length) {
            (0, None) => None,
            (s, l) => Some((s, l.unwrap_or(u64::MAX - s))),
        };
        let request = FileRequest { path, rows };
        let set = equality.as_ref().map(|s| s.borrow(py));
        let deletes = Deletes {
            positions: deleted.as_ref().map(|b| b.get().core()),
            equality: set.as_ref().map(|s| s.core()),
        };
        let opened =
            py.detach(|| FileStream::open(&request, range, &deletes, projection, threads))?;
        drop(set);
        Ok(opened.map(|stream| ParquetFileStream {
            stream: Mutex::new(stream),
            equality,
            failed: false,
        }))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parquet_check_footer, m)?)?;
    m.add_function(wrap_pyfunction!(parquet_check_page_counts, m)?)?;
    m.add_function(wrap_pyfunction!(parquet_read_files, m)?)?;
    m.add_function(wrap_pyfunction!(parquet_read_position_deletes, m)?)?;
    m.add_function(wrap_pyfunction!(parquet_open_stream, m)?)?;
    m.add_class::<ParquetFileStream>()?;
    m.add_function(wrap_pyfunction!(row_selection, m)?)?;
    m.add_function(wrap_pyfunction!(key_selection, m)?)?;
    m.add_class::<RowSelection>()?;
    Ok(())
}
