//! Bindings of `crate::puffin`: footer parsing, blob reading and an in-memory writer.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::deletes::PositionBitmap;
use super::guard;
use crate::puffin::{self, BlobMetadata, Codec};
use crate::Error;

/// Blob metadata as a tuple: (type, fields, snapshot_id, sequence_number, offset, length,
/// compression_codec, properties).
type BlobTuple = (
    String,
    Vec<i32>,
    i64,
    i64,
    u64,
    u64,
    Option<String>,
    Vec<(String, String)>,
);

/// (blobs, file properties, footer size).
type FooterTuple = (Vec<BlobTuple>, Vec<(String, String)>, usize);

fn to_tuple(b: BlobMetadata) -> BlobTuple {
    (
        b.blob_type,
        b.fields,
        b.snapshot_id,
        b.sequence_number,
        b.offset,
        b.length,
        b.compression_codec,
        b.properties,
    )
}

fn codec(name: Option<&str>) -> crate::Result<Codec> {
    name.map_or(Ok(Codec::None), Codec::from_name)
}

/// Parses the footer of a Puffin file: (blobs, file properties, footer size in bytes).
#[pyfunction]
fn puffin_read_footer(data: &[u8]) -> PyResult<FooterTuple> {
    guard(|| {
        let (meta, loc) = puffin::read_file_metadata(data)?;
        let blobs = meta.blobs.into_iter().map(to_tuple).collect();
        Ok((blobs, meta.properties, loc.size))
    })
}

/// The decompressed bytes of the blob at `offset`/`length` of `data`.
#[pyfunction]
#[pyo3(signature = (data, offset, length, compression_codec=None))]
fn puffin_read_blob<'py>(
    py: Python<'py>,
    data: &[u8],
    offset: u64,
    length: u64,
    compression_codec: Option<&str>,
) -> PyResult<Bound<'py, PyBytes>> {
    let out = guard(|| {
        let meta = BlobMetadata {
            blob_type: String::new(),
            fields: vec![],
            snapshot_id: -1,
            sequence_number: -1,
            offset,
            length,
            compression_codec: compression_codec.map(str::to_owned),
            properties: vec![],
        };
        py.detach(|| puffin::read_blob(data, &meta))
    })?;
    Ok(PyBytes::new(py, &out))
}

/// Builds a Puffin file in memory.
#[pyclass(module = "icefloe._native", name = "PuffinWriter")]
pub struct PyPuffinWriter {
    inner: Option<puffin::PuffinWriter>,
}

impl PyPuffinWriter {
    fn writer(&mut self) -> crate::Result<&mut puffin::PuffinWriter> {
        self.inner
            .as_mut()
            .ok_or_else(|| Error::validation("the puffin writer is already finished"))
    }
}

#[pymethods]
impl PyPuffinWriter {
    #[new]
    fn new() -> Self {
        Self {
            inner: Some(puffin::PuffinWriter::new()),
        }
    }

    /// Appends a blob and returns its metadata tuple.
    #[pyo3(signature = (data, blob_type, fields, snapshot_id, sequence_number, compression_codec=None, properties=Vec::new()))]
    #[allow(clippy::too_many_arguments)]
    fn add_blob(
        &mut self,
        py: Python<'_>,
        data: &[u8],
        blob_type: &str,
        fields: Vec<i32>,
        snapshot_id: i64,
        sequence_number: i64,
        compression_codec: Option<&str>,
        properties: Vec<(String, String)>,
    ) -> PyResult<BlobTuple> {
        guard(|| {
            let c = codec(compression_codec)?;
            let w = self.writer()?;
            let meta = py.detach(|| {
                w.add_blob(
                    data,
                    blob_type,
                    fields,
                    snapshot_id,
                    sequence_number,
                    c,
                    properties,
                )
            })?;
            Ok(to_tuple(meta))
        })
    }

    /// Appends a `deletion-vector-v1` blob for `referenced_data_file`.
    fn add_deletion_vector(
        &mut self,
        bitmap: &PositionBitmap,
        referenced_data_file: &str,
    ) -> PyResult<BlobTuple> {
        guard(|| {
            let meta = self
                .writer()?
                .add_deletion_vector(bitmap.core(), referenced_data_file)?;
            Ok(to_tuple(meta))
        })
    }

    /// Writes the footer and returns the whole file.
    #[pyo3(signature = (properties=Vec::new(), compress_footer=false))]
    fn finish<'py>(
        &mut self,
        py: Python<'py>,
        properties: Vec<(String, String)>,
        compress_footer: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let out = guard(|| {
            let w = self
                .inner
                .take()
                .ok_or_else(|| Error::validation("the puffin writer is already finished"))?;
            w.finish(properties, compress_footer)
        })?;
        Ok(PyBytes::new(py, &out))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPuffinWriter>()?;
    m.add_function(wrap_pyfunction!(puffin_read_footer, m)?)?;
    m.add_function(wrap_pyfunction!(puffin_read_blob, m)?)?;
    Ok(())
}
