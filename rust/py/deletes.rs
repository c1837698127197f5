//! Bindings of `crate::deletes`: position bitmaps (deletion vectors), position delete indexes,
//! equality delete sets and keep-masks. Heavy work runs with the GIL released.

use std::sync::Arc;

use arrow_array::{make_array, Array, BooleanArray, Int64Array, RecordBatch};
use arrow_data::ArrayData;
use arrow_pyarrow::{FromPyArrowUnchecked, PyArrowType};
use arrow_schema::DataType;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::guard;
use crate::deletes::dictionary::shape_batch;
use crate::deletes::dv::{decode_dv, encode_dv};
use crate::deletes::equality::EqualityDeleteSet as CoreEqualitySet;
use crate::deletes::key_index;
use crate::deletes::mask::{apply_keep_mask, keep_mask_from_bitmap, keep_mask_from_sorted};
use crate::deletes::position_index::PositionDeleteIndex as CoreIndex;
use crate::deletes::PositionBitmap as CoreBitmap;
use crate::Error;

type PyArray = PyArrowType<ArrayData>;

fn int64_values(data: ArrayData, what: &str) -> crate::Result<Int64Array> {
    if data.data_type() != &DataType::Int64 {
        return Err(Error::validation(format!(
            "{what} must be an int64 array, not {}",
            data.data_type()
        )));
    }
    let arr = Int64Array::from(data);
    if arr.null_count() > 0 {
        return Err(Error::validation(format!("{what} must not contain nulls")));
    }
    Ok(arr)
}

/// Masks are per batch: refuse lengths no batch can have, rather than fail to allocate.
const MAX_MASK_LEN: usize = 1 << 31;

fn check_len(length: usize) -> crate::Result<()> {
    if length > MAX_MASK_LEN {
        return Err(Error::validation(format!(
            "keep-mask length {length} exceeds the {MAX_MASK_LEN} rows a batch can hold"
        )));
    }
    Ok(())
}

fn to_py(arr: impl Array) -> PyArray {
    PyArrowType(arr.into_data())
}

/// A set of row positions of one data file (the content of a deletion vector).
#[pyclass(module = "icefloe._native", frozen)]
pub struct PositionBitmap {
    inner: CoreBitmap,
}

impl PositionBitmap {
    pub(crate) fn core(&self) -> &CoreBitmap {
        &self.inner
    }

    pub(crate) fn from_core(inner: CoreBitmap) -> Self {
        Self { inner }
    }
}

#[pymethods]
impl PositionBitmap {
    /// Builds the set from an int64 Arrow array of positions (any order, duplicates allowed).
    #[staticmethod]
    fn from_positions(py: Python<'_>, positions: PyArray) -> PyResult<Self> {
        guard(|| {
            let arr = int64_values(positions.0, "positions")?;
            let inner = py.detach(|| CoreBitmap::from_i64(arr.values()))?;
            Ok(Self { inner })
        })
    }

    /// Decodes a `deletion-vector-v1` blob, checking length, magic, CRC and, when given, the
    /// cardinality.
    #[staticmethod]
    #[pyo3(signature = (blob, expected_cardinality=None))]
    fn from_blob(py: Python<'_>, blob: &[u8], expected_cardinality: Option<u64>) -> PyResult<Self> {
        guard(|| {
            let inner = py.detach(|| decode_dv(blob, expected_cardinality))?;
            Ok(Self { inner })
        })
    }

    /// Reads the 64-bit Roaring portable serialisation (no DV framing).
    #[staticmethod]
    fn deserialize(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        guard(|| {
            let inner = py.detach(|| CoreBitmap::deserialize(data))?;
            Ok(Self { inner })
        })
    }

    /// The `deletion-vector-v1` blob.
    fn to_blob<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let blob = py.detach(|| encode_dv(&self.inner));
        Ok(PyBytes::new(py, &blob))
    }

    /// The 64-bit Roaring portable serialisation.
    fn serialize<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let data = py.detach(|| self.inner.serialize());
        Ok(PyBytes::new(py, &data))
    }

    /// The positions, ascending, as an int64 Arrow array.
    fn positions(&self, py: Python<'_>) -> PyArray {
        let v = py.detach(|| self.inner.to_i64_vec());
        to_py(Int64Array::from(v))
    }

    /// The number of positions.
    fn cardinality(&self) -> u64 {
        self.inner.cardinality()
    }

    /// The largest position, None when empty.
    fn max(&self) -> Option<u64> {
        self.inner.max()
    }

    fn __len__(&self) -> usize {
        self.inner.cardinality() as usize
    }

    /// Whether ``pos`` is in the set; any other value (a negative or too large int, not an
    /// int) is not, as a Python set would answer.
    fn __contains__(&self, pos: &Bound<'_, PyAny>) -> bool {
        match pos.extract::<u64>() {
            Ok(p) => self.inner.contains(p),
            Err(_) => false,
        }
    }

    fn __eq__(&self, other: &Self) -> bool {
        self.inner == other.inner
    }

    /// A new set holding the positions of both.
    fn union(&self, py: Python<'_>, other: &Self) -> Self {
        let inner = py.detach(|| {
            let mut m = self.inner.clone();
            m.union_with(&other.inner);
            m
        });
        Self { inner }
    }

    /// The keep-mask (`True` = row survives) of rows `[start, start + length)`.
    fn keep_mask(&self, py: Python<'_>, start: u64, length: usize) -> PyResult<PyArray> {
        guard(|| {
            check_len(length)?;
            Ok(to_py(py.detach(|| {
                keep_mask_from_bitmap(&self.inner, start, length)
            })))
        })
    }

    /// The rows of `batch` (rows `[start, start + num_rows)` of the data file) not in the set:
    /// `batch` itself when none of them is, else a compacted copy. Mask and compaction in one
    /// call with the GIL released; the batch is imported only when rows are deleted or
    /// columns are to be decoded. The dictionary columns named in `decode` come back decoded
    /// (deleted rows skipped while gathering).
    #[pyo3(signature = (batch, start, decode = Vec::new()))]
    fn filter_rows<'py>(
        &self,
        py: Python<'py>,
        batch: &Bound<'py, PyAny>,
        start: u64,
        decode: Vec<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n: usize = batch.getattr("num_rows")?.extract()?;
        guard(|| check_len(n))?;
        let (keep, count) = py.detach(|| {
            let keep = keep_mask_from_bitmap(&self.inner, start, n);
            let count = keep.true_count();
            (keep, count)
        });
        if count == n && decode.is_empty() {
            return Ok(batch.clone());
        }
        let rb = import_batch_for_filter(batch)?;
        let out = guard(|| {
            py.detach(|| {
                if decode.is_empty() {
                    apply_keep_mask(rb.clone(), &keep)
                } else {
                    let mask = (count < n).then_some((&keep, count));
                    shape_batch(&rb, mask, &decode)
                }
            })
        })?;
        PyArrowType(out).into_pyobject(py)
    }
}

/// The keep-mask of rows `[start, start + length)` from sorted deleted positions (int64).
#[pyfunction]
fn keep_mask_from_positions(
    py: Python<'_>,
    positions: PyArray,
    start: u64,
    length: usize,
) -> PyResult<PyArray> {
    guard(|| {
        check_len(length)?;
        let arr = int64_values(positions.0, "positions")?;
        let mask = py.detach(|| keep_mask_from_sorted(arr.values(), start, length))?;
        Ok(to_py(mask))
    })
}

/// Imports a pyarrow record batch for the filter kernel. The checked import re-validates
/// every value (dictionary keys against their dictionary, UTF-8, offsets), an O(n) pass that
/// cost as much as the filter itself. The filter copies fixed-width values, validity bits and
/// dictionary keys by position and never follows them, so for those columns the layout check
/// (buffer sizes, children) is enough. String and binary columns are copied value by value
/// through their offsets, so every offset is checked (in bounds, non-decreasing), but not the
/// UTF-8 of the bytes: whole values are copied, never read as text, and the result holds the
/// bytes pyarrow handed over. Columns whose kernels follow views or child offsets (views,
/// lists, structs, ...) are still validated fully.
fn import_batch_for_filter(batch: &Bound<'_, PyAny>) -> PyResult<RecordBatch> {
    // Safety: every column is checked below before any kernel reads it.
    let batch = unsafe { RecordBatch::from_pyarrow_bound_unchecked(batch)? };
    guard(|| {
        for col in batch.columns() {
            check_for_filter(&col.to_data())?;
        }
        Ok(())
    })?;
    Ok(batch)
}

/// The checks [`import_batch_for_filter`] makes of one column.
fn check_for_filter(data: &ArrayData) -> crate::Result<()> {
    let dt = data.data_type();
    if dt.is_primitive() || matches!(dt, DataType::Boolean | DataType::Dictionary(_, _)) {
        data.validate()?;
    } else if matches!(dt, DataType::Utf8 | DataType::Binary) {
        data.validate()?;
        check_offsets::<i32>(data)?;
    } else if matches!(dt, DataType::LargeUtf8 | DataType::LargeBinary) {
        data.validate()?;
        check_offsets::<i64>(data)?;
    } else {
        data.validate_full()?;
    }
    Ok(())
}

/// Every offset of a (validated-layout) string or binary array is within its values and no
/// offset is below the one before.
fn check_offsets<O: arrow_array::OffsetSizeTrait>(data: &ArrayData) -> crate::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    // `validate` checked that the offsets buffer holds `len + 1` entries from the array's offset.
    let offsets = &data.buffer::<O>(0)[..data.len() + 1];
    let values = data.buffers()[1].len();
    let ordered = offsets.windows(2).fold(true, |ok, w| ok & (w[0] <= w[1]));
    let first = offsets[0].to_usize();
    let last = offsets[data.len()].to_usize();
    match (ordered, first, last) {
        (true, Some(_), Some(last)) if last <= values => Ok(()),
        _ => Err(Error::validation(format!(
            "{} array has offsets outside its {values} bytes of values or out of order",
            data.data_type()
        ))),
    }
}

/// The rows of `batch` where the boolean array `keep` is true, all columns in one pass; the
/// dictionary columns named in `decode` come back decoded.
#[pyfunction]
#[pyo3(signature = (batch, keep, decode = Vec::new()))]
fn filter_batch(
    py: Python<'_>,
    batch: &Bound<'_, PyAny>,
    keep: PyArray,
    decode: Vec<String>,
) -> PyResult<PyArrowType<RecordBatch>> {
    let batch = PyArrowType(import_batch_for_filter(batch)?);
    guard(|| {
        if keep.0.data_type() != &DataType::Boolean {
            return Err(Error::validation(format!(
                "keep-mask must be a boolean array, not {}",
                keep.0.data_type()
            )));
        }
        let keep = BooleanArray::from(keep.0);
        let out = py.detach(|| {
            if decode.is_empty() || keep.null_count() > 0 || keep.len() != batch.0.num_rows() {
                let out = apply_keep_mask(batch.0.clone(), &keep)?;
                if decode.is_empty() {
                    return Ok(out);
                }
                return shape_batch(&out, None, &decode);
            }
            let count = keep.true_count();
            let mask = (count < keep.len()).then_some((&keep, count));
            shape_batch(&batch.0, mask, &decode)
        })?;
        Ok(PyArrowType(out))
    })
}

/// `batch` with the dictionary columns (of strings or binaries) named in `names` decoded to
/// plain arrays; other columns are returned as they are.
#[pyfunction]
fn decode_dictionaries(
    py: Python<'_>,
    batch: &Bound<'_, PyAny>,
    names: Vec<String>,
) -> PyResult<PyArrowType<RecordBatch>> {
    let batch = import_batch_for_filter(batch)?;
    guard(|| {
        Ok(PyArrowType(
            py.detach(|| shape_batch(&batch, None, &names))?,
        ))
    })
}

/// Deleted positions per data file, built from position delete files.
#[pyclass(module = "icefloe._native")]
pub struct PositionDeleteIndex {
    inner: CoreIndex,
}

#[pymethods]
impl PositionDeleteIndex {
    #[new]
    fn new() -> Self {
        Self {
            inner: CoreIndex::new(),
        }
    }

    /// Adds a batch with columns `file_path` (string) and `pos` (int64).
    fn add_batch(&mut self, py: Python<'_>, batch: PyArrowType<RecordBatch>) -> PyResult<()> {
        let inner = &mut self.inner;
        guard(|| py.detach(|| inner.add_batch(&batch.0)))
    }

    /// Adds the positions of `bitmap` to `path` (e.g. an existing DV).
    fn merge(&mut self, path: &str, bitmap: &PositionBitmap) {
        self.inner.merge(path, &bitmap.inner);
    }

    /// The data file paths with deletes, sorted.
    fn paths(&self) -> Vec<String> {
        self.inner.paths().into_iter().map(str::to_owned).collect()
    }

    /// The deleted positions of `path`, or None.
    fn get(&self, path: &str) -> Option<PositionBitmap> {
        self.inner
            .get(path)
            .map(|b| PositionBitmap { inner: b.clone() })
    }

    /// The total number of deleted positions.
    fn cardinality(&self) -> u64 {
        self.inner.cardinality()
    }

    /// The keep-mask of rows `[start, start + length)` of data file `path`.
    fn keep_mask(
        &self,
        py: Python<'_>,
        path: &str,
        start: u64,
        length: usize,
    ) -> PyResult<PyArray> {
        guard(|| {
            check_len(length)?;
            let empty = CoreBitmap::new();
            let bm = self.inner.get(path).unwrap_or(&empty);
            Ok(to_py(
                py.detach(|| keep_mask_from_bitmap(bm, start, length)),
            ))
        })
    }
}

/// Equality delete rows, hashed once, probed per data batch.
#[pyclass(module = "icefloe._native")]
pub struct EqualityDeleteSet {
    inner: Arc<CoreEqualitySet>,
}

impl EqualityDeleteSet {
    pub(crate) fn core(&self) -> &CoreEqualitySet {
        &self.inner
    }

    /// The set itself, for a read that keeps it beyond this borrow (a key selection).
    pub(crate) fn shared(&self) -> Arc<CoreEqualitySet> {
        self.inner.clone()
    }
}

#[pymethods]
impl EqualityDeleteSet {
    #[new]
    fn new() -> Self {
        Self {
            inner: Arc::new(CoreEqualitySet::new()),
        }
    }

    /// Adds delete rows; every column of `batch` is an equality column. Refused while a key
    /// selection made of the set is alive.
    fn add_batch(&mut self, py: Python<'_>, batch: PyArrowType<RecordBatch>) -> PyResult<()> {
        guard(|| {
            let inner = Arc::get_mut(&mut self.inner).ok_or_else(|| {
                crate::Error::validation("the key set is in use by a read and cannot change")
            })?;
            py.detach(|| inner.add_batch(&batch.0))
        })
    }

    /// The keep-mask of `batch` (`True` = no delete row matches).
    fn keep_mask(&self, py: Python<'_>, batch: PyArrowType<RecordBatch>) -> PyResult<PyArray> {
        guard(|| {
            let mask = py.detach(|| self.inner.keep_mask(&batch.0))?;
            Ok(to_py(mask))
        })
    }

    /// The column sets (sorted names), one per group of delete files.
    fn column_sets(&self) -> Vec<Vec<String>> {
        self.inner.column_sets()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

/// For each of `values`, the index of its first occurrence in `value_set` (null when absent or
/// null); `None` for a type the native lookup does not take (not an integer, date, time or
/// timestamp column). Both arrays must have the same type.
#[pyfunction]
fn index_in(py: Python<'_>, values: PyArray, value_set: PyArray) -> PyResult<Option<PyArray>> {
    guard(|| {
        let (values, set) = (make_array(values.0), make_array(value_set.0));
        let out = py.detach(|| key_index::index_in(values.as_ref(), set.as_ref()))?;
        Ok(out.map(to_py))
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PositionBitmap>()?;
    m.add_class::<PositionDeleteIndex>()?;
    m.add_class::<EqualityDeleteSet>()?;
    m.add_function(wrap_pyfunction!(filter_batch, m)?)?;
    m.add_function(wrap_pyfunction!(index_in, m)?)?;
    m.add_function(wrap_pyfunction!(decode_dictionaries, m)?)?;
    m.add_function(wrap_pyfunction!(keep_mask_from_positions, m)?)?;
    Ok(())
}
