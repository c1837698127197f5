//! Bindings of the Avro data-file reader: bytes in, Arrow record batches out, the GIL released
//! while decoding.

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use arrow_schema::Schema;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::guard;
use crate::avro::{data_file, Codec};

/// The writer schema JSON and record count of an Avro container file.
#[pyfunction]
#[pyo3(signature = (data, *, name="<bytes>"))]
fn avro_file_header(py: Python<'_>, data: &[u8], name: &str) -> PyResult<(String, u64)> {
    guard(|| py.detach(|| data_file::header(data).map_err(|e| e.context(name))))
}

/// The records of an Avro container file's blocks from byte `offset` (0: the first block) as
/// one batch of `schema` ending at the first block boundary at or after `batch_rows` rows,
/// with the offset of the next block (`None` at the end). `schema`'s fields (nested ones
/// included) are matched to the writer's by the field ids in their `field_id` metadata.
#[pyfunction]
#[pyo3(signature = (data, schema, *, offset=0, batch_rows=131_072, name="<bytes>"))]
fn read_avro_batch(
    py: Python<'_>,
    data: &[u8],
    schema: PyArrowType<Schema>,
    offset: usize,
    batch_rows: usize,
    name: &str,
) -> PyResult<(PyArrowType<RecordBatch>, Option<usize>)> {
    let fields = schema.0.fields().clone();
    guard(|| {
        py.detach(|| {
            data_file::read_from(data, &fields, offset, batch_rows).map_err(|e| e.context(name))
        })
        .map(|(b, next)| (PyArrowType(b), next))
    })
}

/// `batches` encoded as one Avro container file of the writer schema `schema_json`, with
/// `metadata` in its header; `codec` is an Iceberg codec name (`gzip`/`deflate`, `zstd`,
/// `snappy`, `uncompressed`) and `level` its level.
#[pyfunction]
#[pyo3(signature = (batches, schema_json, *, metadata=vec![], codec="deflate", level=None))]
fn write_avro_file<'py>(
    py: Python<'py>,
    batches: Vec<PyArrowType<RecordBatch>>,
    schema_json: &str,
    metadata: Vec<(String, Vec<u8>)>,
    codec: &str,
    level: Option<i32>,
) -> PyResult<Bound<'py, PyBytes>> {
    let batches: Vec<RecordBatch> = batches.into_iter().map(|b| b.0).collect();
    let out = guard(|| {
        let codec = Codec::from_name(codec, level)?;
        py.detach(|| data_file::write(&batches, schema_json, &metadata, codec))
    })?;
    Ok(PyBytes::new(py, &out))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(avro_file_header, m)?)?;
    m.add_function(wrap_pyfunction!(read_avro_batch, m)?)?;
    m.add_function(wrap_pyfunction!(write_avro_file, m)?)?;
    Ok(())
}
