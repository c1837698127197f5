//! Small Parquet data files encoded natively, many at once, with their Iceberg metrics.
//!
//! A partitioned write or an upsert makes hundreds of files of a few hundred rows; through the
//! Python writer each costs more in per-file overhead (writer set-up, metrics from the footer,
//! all under the GIL) than in encoding. Here each file of flat primitive columns is encoded by
//! the `parquet` crate into memory on the Rust pool and its metrics are computed from the
//! column chunks just written:
//!
//! * `column_sizes` (compressed bytes of the column chunks), `value_counts` (rows),
//!   `null_value_counts`, `nan_value_counts` (float and double);
//! * lower and upper bounds in the spec's single-value binary form from the chunk statistics
//!   (exact: statistics truncation is off; NaN is never a bound, a zero lower bound is `-0.0`
//!   and a zero upper bound `+0.0`), strings and binary truncated under `truncate(N)`.
//!
//! Every page gets a CRC-32 of its bytes in its header, as the Python writer and Java write it
//! (the `parquet` crate writes none): pages are encoded into a store that keeps them, and each
//! column chunk is spliced into the file with the checksum added to each page header.
//!
//! zstd pages are compressed here too, while splicing, with one context kept per thread: the
//! crate makes a codec for every column chunk, and its zstd codec creates a compression and a
//! decompression context each time (about 50 us on the benchmark machine, more than
//! compressing a small file's page). The crate writes such chunks uncompressed; each page is
//! compressed as the crate would have (the same level, one frame per page) and its header
//! given the compressed size.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowRowGroupWriterFactory};
use parquet::arrow::ArrowSchemaConverter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::column::page_store::{PageKey, PageStore, PageStoreArgs, PageStoreFactory};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;

use crate::serde::primitive::PrimitiveType;
use crate::{Error, Result};

mod metrics;
mod page_crc;
#[cfg(test)]
mod tests;

use metrics::metrics;
use page_crc::{header_with_crc, DATA_PAGE_V2, DICTIONARY_PAGE};

/// How much of a column's metrics a file records (`write.metadata.metrics.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsMode {
    None,
    Counts,
    Truncate(usize),
    Full,
}

/// One top-level column of the files: its field id, Iceberg type and metrics mode.
#[derive(Debug, Clone)]
pub struct ColumnSpec {
    pub field_id: i32,
    pub iceberg_type: PrimitiveType,
    pub mode: MetricsMode,
}

/// The Parquet settings of the files.
#[derive(Debug, Clone)]
pub struct FileOptions {
    /// `zstd`, `snappy` or `none`.
    pub compression: String,
    pub compression_level: Option<i32>,
    /// Columns (by name) written with dictionary encoding.
    pub dictionary: Vec<String>,
    pub page_size: usize,
    pub dictionary_page_size: usize,
    /// Rows per row group.
    pub row_group_rows: usize,
    pub key_value: Vec<(String, String)>,
}

/// One encoded file: its bytes and its metrics (pairs of field id and value, in column order).
#[derive(Debug, Clone, Default)]
pub struct EncodedFile {
    pub bytes: Vec<u8>,
    pub rows: i64,
    pub column_sizes: Vec<(i32, i64)>,
    pub value_counts: Vec<(i32, i64)>,
    pub null_counts: Vec<(i32, i64)>,
    pub nan_counts: Vec<(i32, i64)>,
    pub lower: Vec<(i32, Vec<u8>)>,
    pub upper: Vec<(i32, Vec<u8>)>,
    pub split_offsets: Vec<i64>,
}

/// Whether the native writer takes columns of Iceberg type `t` (flat primitives whose Parquet
/// form and statistics it knows).
pub fn supported(t: &PrimitiveType) -> bool {
    matches!(
        t,
        PrimitiveType::Boolean
            | PrimitiveType::Int
            | PrimitiveType::Long
            | PrimitiveType::Float
            | PrimitiveType::Double
            | PrimitiveType::Date
            | PrimitiveType::Time
            | PrimitiveType::Timestamp
            | PrimitiveType::Timestamptz
            | PrimitiveType::TimestampNs
            | PrimitiveType::TimestamptzNs
            | PrimitiveType::String
            | PrimitiveType::Binary
            | PrimitiveType::Decimal { .. }
    )
}

/// Encodes the rows `[start, start + len)` of `batch` named by each of `slices` as one Parquet
/// file each, in parallel on `threads` threads.
pub fn encode_files(
    batches: &[RecordBatch],
    slices: &[(usize, usize)],
    columns: &[ColumnSpec],
    options: &FileOptions,
    threads: Option<usize>,
) -> Result<Vec<EncodedFile>> {
    let Some(schema) = batches.first().map(RecordBatch::schema) else {
        return match slices.is_empty() {
            true => Ok(Vec::new()),
            false => Err(Error::validation("rows asked of no batches")),
        };
    };
    if batches.iter().any(|b| b.schema() != schema) {
        return Err(Error::validation("batches of different schemas"));
    }
    if schema.fields().len() != columns.len() {
        return Err(Error::validation(format!(
            "{} columns but {} column specs",
            schema.fields().len(),
            columns.len()
        )));
    }
    for (f, c) in schema.fields().iter().zip(columns) {
        if !supported(&c.iceberg_type) || matches!(f.data_type(), DataType::Struct(_)) {
            return Err(Error::unsupported(format!(
                "column {:?} of type {} is not written natively",
                f.name(),
                c.iceberg_type.name()
            )));
        }
    }
    let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
    for &(start, len) in slices {
        if start.checked_add(len).is_none_or(|end| end > total) || len == 0 {
            return Err(Error::validation(format!(
                "rows {start}..+{len} are not in batches of {total} rows"
            )));
        }
    }
    let (props, zstd) = properties(&schema, options)?;
    let props = Arc::new(props);
    crate::pool::install(threads, || {
        slices
            .par_iter()
            .map(|&(start, len)| {
                let rows = rows_of(batches, &schema, start, len)?;
                encode_file(&rows, columns, &props, zstd, options.row_group_rows.max(1))
            })
            .collect()
    })
}

/// Rows `[start, start + len)` of `batches` taken as one table: a slice of one batch, or the
/// pieces of several concatenated.
fn rows_of(
    batches: &[RecordBatch],
    schema: &SchemaRef,
    start: usize,
    len: usize,
) -> Result<RecordBatch> {
    let mut pieces = Vec::new();
    let mut offset = 0usize;
    for b in batches {
        let (lo, hi) = (offset, offset + b.num_rows());
        offset = hi;
        let (from, to) = (start.max(lo), (start + len).min(hi));
        if from < to {
            pieces.push(b.slice(from - lo, to - from));
        }
    }
    match pieces.len() {
        1 => Ok(pieces.remove(0)),
        _ => arrow_select::concat::concat_batches(schema, &pieces)
            .map_err(|e| Error::internal(format!("concatenating rows: {e}"))),
    }
}

/// The writer properties of the files, and the zstd level when pages are compressed here
/// (then the crate writes them uncompressed).
fn properties(
    schema: &SchemaRef,
    options: &FileOptions,
) -> Result<(WriterProperties, Option<ZstdLevel>)> {
    let compression = match options.compression.as_str() {
        "zstd" => {
            // Arrow C++ (the Python writer) uses level 1 when none is set.
            let level = ZstdLevel::try_new(options.compression_level.unwrap_or(1))
                .map_err(|e| Error::validation(format!("zstd compression level: {e}")))?;
            Compression::ZSTD(level)
        }
        "snappy" => Compression::SNAPPY,
        "none" | "uncompressed" => Compression::UNCOMPRESSED,
        other => {
            return Err(Error::unsupported(format!(
                "compression {other:?} is not written natively"
            )))
        }
    };
    let zstd = match compression {
        Compression::ZSTD(level) => Some(level),
        _ => None,
    };
    let mut builder = WriterProperties::builder()
        .set_compression(match zstd {
            Some(_) => Compression::UNCOMPRESSED,
            None => compression,
        })
        .set_data_page_size_limit(options.page_size.max(1))
        .set_dictionary_page_size_limit(options.dictionary_page_size.max(1))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_statistics_truncate_length(None)
        .set_column_index_truncate_length(None)
        .set_offset_index_disabled(true)
        .set_dictionary_enabled(false)
        .set_max_row_group_row_count(None)
        .set_key_value_metadata(Some(
            options
                .key_value
                .iter()
                .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
                .collect(),
        ));
    for f in schema.fields() {
        if options.dictionary.iter().any(|d| d == f.name()) {
            builder =
                builder.set_column_dictionary_enabled(ColumnPath::from(f.name().as_str()), true);
        }
    }
    Ok((builder.build(), zstd))
}

/// A page store that keeps every blob (page header, page data) where the caller can reach it.
#[derive(Debug, Default)]
struct Kept(Blobs);

impl PageStore for Kept {
    fn put(&mut self, value: Bytes) -> parquet::errors::Result<PageKey> {
        let mut blobs = self.0.lock().expect("page store lock");
        blobs.push(value);
        Ok(PageKey::new(blobs.len() as u64 - 1))
    }

    fn take(&mut self, key: PageKey) -> parquet::errors::Result<Bytes> {
        let blobs = self.0.lock().expect("page store lock");
        blobs
            .get(key.get() as usize)
            .cloned()
            .ok_or_else(|| parquet::errors::ParquetError::General("no such page".into()))
    }
}

/// Hands out one [`Kept`] store per column chunk and remembers them by column.
#[derive(Debug, Default)]
struct Keeper(Mutex<Vec<(usize, Blobs)>>);

/// The page blobs of one column chunk, shared by its store and the writer.
type Blobs = Arc<Mutex<Vec<Bytes>>>;

impl PageStoreFactory for Keeper {
    fn create(&self, args: &PageStoreArgs<'_>) -> parquet::errors::Result<Box<dyn PageStore>> {
        let blobs = Arc::new(Mutex::new(Vec::new()));
        self.0
            .lock()
            .expect("page store lock")
            .push((args.column_index(), blobs.clone()));
        Ok(Box::new(Kept(blobs)))
    }
}

impl Keeper {
    fn blobs(&self, column: usize) -> Result<Vec<Bytes>> {
        let stores = self.0.lock().expect("page store lock");
        let (_, blobs) = stores
            .iter()
            .find(|(c, _)| *c == column)
            .ok_or_else(|| Error::internal(format!("no pages kept for column {column}")))?;
        let out = std::mem::take(&mut *blobs.lock().expect("page store lock"));
        Ok(out)
    }
}

fn parquet_err(e: parquet::errors::ParquetError) -> Error {
    Error::internal(format!("Parquet writer: {e}"))
}

fn encode_file(
    batch: &RecordBatch,
    columns: &[ColumnSpec],
    props: &WriterPropertiesPtr,
    zstd: Option<ZstdLevel>,
    row_group_rows: usize,
) -> Result<EncodedFile> {
    let schema = batch.schema();
    let descr = ArrowSchemaConverter::new()
        .with_coerce_types(false)
        .convert(&schema)
        .map_err(parquet_err)?;
    if descr.num_columns() != columns.len() {
        return Err(Error::internal("a flat schema with nested Parquet columns"));
    }
    let mut buf: Vec<u8> = Vec::with_capacity(batch.get_array_memory_size() / 2 + 1024);
    let mut writer = SerializedFileWriter::new(&mut buf, descr.root_schema_ptr(), props.clone())
        .map_err(parquet_err)?;
    let mut start = 0;
    let mut group = 0;
    while start < batch.num_rows() {
        let len = row_group_rows.min(batch.num_rows() - start);
        let rows = batch.slice(start, len);
        let keeper = Arc::new(Keeper::default());
        let factory = ArrowRowGroupWriterFactory::new(&writer, schema.clone())
            .with_page_store_factory(keeper.clone());
        let mut column_writers = factory.create_column_writers(group).map_err(parquet_err)?;
        for ((field, array), w) in schema
            .fields()
            .iter()
            .zip(rows.columns())
            .zip(column_writers.iter_mut())
        {
            for leaf in compute_leaves(field, array).map_err(parquet_err)? {
                w.write(&leaf).map_err(parquet_err)?;
            }
        }
        let mut row_group = writer.next_row_group().map_err(parquet_err)?;
        for (column, w) in column_writers.into_iter().enumerate() {
            let chunk = w.close().map_err(parquet_err)?;
            let close = chunk.close().clone();
            drop(chunk);
            append_checksummed(&mut row_group, keeper.blobs(column)?, close, zstd)?;
        }
        row_group.close().map_err(parquet_err)?;
        start += len;
        group += 1;
    }
    let metadata = writer.finish().map_err(parquet_err)?;
    drop(writer);
    let mut out = metrics(batch, columns, &metadata)?;
    out.bytes = buf;
    Ok(out)
}

thread_local! {
    static DEFLATE: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
        const { RefCell::new(None) };
}

/// `page` compressed as one zstd frame at `level`, with this thread's context.
fn compress_page(page: &[u8], level: ZstdLevel) -> Result<Vec<u8>> {
    let level = level.compression_level();
    let fail = |e: std::io::Error| Error::internal(format!("zstd compression: {e}"));
    DEFLATE.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|(l, _)| *l != level) {
            *slot = Some((level, zstd::bulk::Compressor::new(level).map_err(fail)?));
        }
        let (_, ctx) = slot.as_mut().expect("made above");
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(page.len()));
        ctx.compress_to_buffer(page, &mut out).map_err(fail)?;
        Ok(out)
    })
}

/// Splices one column chunk whose pages (header and data blobs, the dictionary page's last)
/// are `blobs` into `row_group`, each page header with the CRC-32 of its page; with `zstd`,
/// the pages (written uncompressed) are compressed at that level first.
fn append_checksummed<W: std::io::Write + Send>(
    row_group: &mut SerializedRowGroupWriter<'_, W>,
    blobs: Vec<Bytes>,
    close: ColumnCloseResult,
    zstd: Option<ZstdLevel>,
) -> Result<()> {
    if !blobs.len().is_multiple_of(2) {
        return Err(Error::internal(
            "page blobs do not come in header/data pairs",
        ));
    }
    let mut dictionary: Vec<u8> = Vec::new();
    let mut data: Vec<u8> = Vec::new();
    let original: usize = blobs.iter().map(|b| b.len()).sum();
    let mut uncompressed = 0usize;
    for pair in blobs.chunks_exact(2) {
        let (header, page) = (&pair[0], &pair[1]);
        let compressed = zstd.map(|level| compress_page(page, level)).transpose()?;
        let stored: &[u8] = compressed.as_deref().unwrap_or(page);
        let size = match &compressed {
            Some(c) => Some(
                i32::try_from(c.len())
                    .map_err(|_| Error::internal("a compressed page over 2 GiB"))?,
            ),
            None => None,
        };
        let (with_crc, page_type) = header_with_crc(header, crc32fast::hash(stored), size)?;
        if size.is_some() && page_type == DATA_PAGE_V2 {
            // its levels are stored uncompressed: not a page this writer makes
            return Err(Error::internal("a version 2 data page to compress"));
        }
        uncompressed += with_crc.len() + page.len();
        let target = if page_type == DICTIONARY_PAGE {
            &mut dictionary
        } else {
            &mut data
        };
        target.extend_from_slice(&with_crc);
        target.extend_from_slice(stored);
    }
    let meta = &close.metadata;
    if meta.compressed_size() as usize != original {
        return Err(Error::internal(format!(
            "column chunk of {} bytes but {original} bytes of pages",
            meta.compressed_size()
        )));
    }
    let dictionary_len = dictionary.len() as i64;
    let has_dictionary = !dictionary.is_empty();
    dictionary.extend_from_slice(&data);
    let chunk = Bytes::from(dictionary);
    let mut builder = meta
        .clone()
        .into_builder()
        .set_total_compressed_size(chunk.len() as i64)
        .set_total_uncompressed_size(uncompressed as i64)
        .set_dictionary_page_offset(has_dictionary.then_some(0))
        .set_data_page_offset(dictionary_len);
    if let Some(level) = zstd {
        builder = builder.set_compression(Compression::ZSTD(level));
    }
    let metadata = builder.build().map_err(parquet_err)?;
    let close = ColumnCloseResult {
        bytes_written: chunk.len() as u64,
        rows_written: close.rows_written,
        metadata,
        bloom_filter: None,
        column_index: None,
        offset_index: None,
    };
    row_group.append_column(&chunk, close).map_err(parquet_err)
}
