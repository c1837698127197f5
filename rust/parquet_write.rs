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

use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowRowGroupWriterFactory};
use parquet::arrow::ArrowSchemaConverter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::column::page_store::{PageKey, PageStore, PageStoreArgs, PageStoreFactory};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::{KeyValue, ParquetMetaData};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesPtr};
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;

use crate::serde::primitive::PrimitiveType;
use crate::transforms::murmur::minimal_twos_complement;
use crate::{Error, Result};

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
    let props = Arc::new(properties(&schema, options)?);
    crate::pool::install(threads, || {
        slices
            .par_iter()
            .map(|&(start, len)| {
                let rows = rows_of(batches, &schema, start, len)?;
                encode_file(&rows, columns, &props, options.row_group_rows.max(1))
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

fn properties(schema: &SchemaRef, options: &FileOptions) -> Result<WriterProperties> {
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
    let mut builder = WriterProperties::builder()
        .set_compression(compression)
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
    Ok(builder.build())
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
            append_checksummed(&mut row_group, keeper.blobs(column)?, close)?;
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

/// Splices one column chunk whose pages (header and data blobs, the dictionary page's last)
/// are `blobs` into `row_group`, each page header with the CRC-32 of its page.
fn append_checksummed<W: std::io::Write + Send>(
    row_group: &mut SerializedRowGroupWriter<'_, W>,
    blobs: Vec<Bytes>,
    close: ColumnCloseResult,
) -> Result<()> {
    if !blobs.len().is_multiple_of(2) {
        return Err(Error::internal(
            "page blobs do not come in header/data pairs",
        ));
    }
    let mut dictionary: Vec<u8> = Vec::new();
    let mut data: Vec<u8> = Vec::new();
    let mut added = 0usize;
    let original: usize = blobs.iter().map(|b| b.len()).sum();
    for pair in blobs.chunks_exact(2) {
        let (header, page) = (&pair[0], &pair[1]);
        let (with_crc, page_type) = header_with_crc(header, crc32fast::hash(page))?;
        added += with_crc.len() - header.len();
        let target = if page_type == DICTIONARY_PAGE {
            &mut dictionary
        } else {
            &mut data
        };
        target.extend_from_slice(&with_crc);
        target.extend_from_slice(page);
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
    let metadata = meta
        .clone()
        .into_builder()
        .set_total_compressed_size(chunk.len() as i64)
        .set_total_uncompressed_size(meta.uncompressed_size() + added as i64)
        .set_dictionary_page_offset(has_dictionary.then_some(0))
        .set_data_page_offset(dictionary_len)
        .build()
        .map_err(parquet_err)?;
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

const DICTIONARY_PAGE: i32 = 2;
const T_I32: u8 = 5;
const CRC_FIELD: i16 = 4;

fn read_varint(data: &[u8], pos: &mut usize) -> Result<u64> {
    let mut out = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data
            .get(*pos)
            .ok_or_else(|| Error::internal("page header ends inside a varint"))?;
        *pos += 1;
        out |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(out);
        }
    }
    Err(Error::internal("page header varint too long"))
}

fn write_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A Thrift compact `PageHeader` with field 4 (`crc`) set to `crc`, and the page type. The
/// header's leading fields are 1-3 (type, sizes: all i32, in short form), which the `parquet`
/// crate always writes first; anything else is refused.
fn header_with_crc(header: &[u8], crc: u32) -> Result<(Vec<u8>, i32)> {
    let bad = || Error::internal("unexpected page header layout");
    let mut pos = 0usize;
    let mut last: i16 = 0;
    let mut page_type = -1;
    loop {
        let b = *header.get(pos).ok_or_else(bad)?;
        let delta = (b >> 4) as i16;
        let ftype = b & 0x0f;
        if b == 0 || (delta != 0 && last + delta > CRC_FIELD) {
            // insert the crc before this field (or the stop byte)
            let mut out = Vec::with_capacity(header.len() + 6);
            out.extend_from_slice(&header[..pos]);
            out.push((((CRC_FIELD - last) as u8) << 4) | T_I32);
            let zigzag = ((crc as i32) << 1) ^ ((crc as i32) >> 31);
            write_varint(u64::from(zigzag as u32), &mut out);
            if b == 0 {
                out.extend_from_slice(&header[pos..]);
            } else {
                let next = last + delta - CRC_FIELD;
                out.push(((next as u8) << 4) | ftype);
                out.extend_from_slice(&header[pos + 1..]);
            }
            return Ok((out, page_type));
        }
        if delta == 0 || ftype != T_I32 || last + delta == CRC_FIELD {
            return Err(bad());
        }
        pos += 1;
        last += delta;
        let v = read_varint(header, &mut pos)?;
        if last == 1 {
            page_type = ((v >> 1) as i64 ^ -((v & 1) as i64)) as i32;
        }
    }
}

/// The Iceberg metrics of the file of `batch` whose footer is `metadata`.
fn metrics(
    batch: &RecordBatch,
    columns: &[ColumnSpec],
    metadata: &ParquetMetaData,
) -> Result<EncodedFile> {
    let mut out = EncodedFile {
        rows: batch.num_rows() as i64,
        ..Default::default()
    };
    for rg in metadata.row_groups() {
        let first = rg.column(0);
        let data = first.data_page_offset();
        let start = match first.dictionary_page_offset() {
            Some(d) if d > 0 && d < data => d,
            _ => data,
        };
        out.split_offsets.push(start);
    }
    out.split_offsets.sort_unstable();
    for (i, spec) in columns.iter().enumerate() {
        if spec.mode == MetricsMode::None {
            continue;
        }
        let fid = spec.field_id;
        let array = batch.column(i);
        let size: i64 = metadata
            .row_groups()
            .iter()
            .map(|rg| rg.column(i).compressed_size())
            .sum();
        out.column_sizes.push((fid, size));
        out.value_counts.push((fid, array.len() as i64));
        out.null_counts.push((fid, array.null_count() as i64));
        if let Some(nan) = nan_count(array) {
            out.nan_counts.push((fid, nan));
        }
        if spec.mode == MetricsMode::Counts {
            continue;
        }
        let stats: Vec<Option<&Statistics>> = metadata
            .row_groups()
            .iter()
            .map(|rg| rg.column(i).statistics())
            .collect();
        if let Some((lo, hi)) = bounds(&spec.iceberg_type, spec.mode, &stats)? {
            out.lower.push((fid, lo));
            if let Some(hi) = hi {
                out.upper.push((fid, hi));
            }
        }
    }
    Ok(out)
}

fn nan_count(array: &ArrayRef) -> Option<i64> {
    fn count<T: Copy>(values: &[T], array: &dyn Array, is_nan: impl Fn(T) -> bool) -> i64 {
        values
            .iter()
            .enumerate()
            .filter(|(i, v)| is_nan(**v) && array.is_valid(*i))
            .count() as i64
    }
    if let Some(a) = array.as_any().downcast_ref::<Float64Array>() {
        return Some(count(a.values(), a, f64::is_nan));
    }
    if let Some(a) = array.as_any().downcast_ref::<Float32Array>() {
        return Some(count(a.values(), a, f32::is_nan));
    }
    None
}

/// A footer minimum or maximum, comparable within one column.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Extreme {
    Int(i128),
    Float(f64),
    Bytes(Vec<u8>),
}

fn extremes(t: &PrimitiveType, s: &Statistics) -> Result<Option<(Extreme, Extreme)>> {
    if s.min_bytes_opt().is_none() || s.max_bytes_opt().is_none() {
        return Ok(None);
    }
    if !s.min_is_exact() || !s.max_is_exact() {
        // statistics truncation is off: inexact bounds would be a writer change to catch
        return Err(Error::internal("inexact column statistics"));
    }
    let decimal = matches!(t, PrimitiveType::Decimal { .. });
    let be = |b: &[u8]| {
        crate::serde::binary::decimal_from_be(b)
            .map(Extreme::Int)
            .ok_or_else(|| Error::internal("decimal statistics wider than 16 bytes"))
    };
    Ok(match s {
        Statistics::Boolean(v) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (Extreme::Int(i128::from(*a)), Extreme::Int(i128::from(*b)))),
        Statistics::Int32(v) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (Extreme::Int(i128::from(*a)), Extreme::Int(i128::from(*b)))),
        Statistics::Int64(v) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (Extreme::Int(i128::from(*a)), Extreme::Int(i128::from(*b)))),
        Statistics::Float(v) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (Extreme::Float(f64::from(*a)), Extreme::Float(f64::from(*b)))),
        Statistics::Double(v) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (Extreme::Float(*a), Extreme::Float(*b))),
        Statistics::ByteArray(v) => match v.min_opt().zip(v.max_opt()) {
            Some((a, b)) if decimal => Some((be(a.data())?, be(b.data())?)),
            Some((a, b)) => Some((
                Extreme::Bytes(a.data().to_vec()),
                Extreme::Bytes(b.data().to_vec()),
            )),
            None => None,
        },
        Statistics::FixedLenByteArray(v) => match v.min_opt().zip(v.max_opt()) {
            Some((a, b)) if decimal => Some((be(a.data())?, be(b.data())?)),
            _ => None,
        },
        Statistics::Int96(_) => None,
    })
}

type Bounds = Option<(Vec<u8>, Option<Vec<u8>>)>;

fn bounds(t: &PrimitiveType, mode: MetricsMode, stats: &[Option<&Statistics>]) -> Result<Bounds> {
    let mut lo: Option<Extreme> = None;
    let mut hi: Option<Extreme> = None;
    for s in stats {
        let Some(s) = s else {
            return Err(Error::internal("a column chunk without statistics"));
        };
        // A row group of only nulls has no minimum; one of only NaN (and nulls) has NaN as
        // both: neither adds to the bounds, which cover the values neither null nor NaN.
        let Some((a, b)) = extremes(t, s)? else {
            continue;
        };
        if let (Extreme::Float(x), Extreme::Float(y)) = (&a, &b) {
            if x.is_nan() || y.is_nan() {
                continue;
            }
        }
        if lo.as_ref().is_none_or(|l| a < *l) {
            lo = Some(a);
        }
        if hi.as_ref().is_none_or(|h| b > *h) {
            hi = Some(b);
        }
    }
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return Ok(None);
    };
    encode_bounds(t, mode, lo, hi)
}

fn encode_bounds(t: &PrimitiveType, mode: MetricsMode, lo: Extreme, hi: Extreme) -> Result<Bounds> {
    let truncate = match mode {
        MetricsMode::Truncate(n) => Some(n),
        _ => None,
    };
    Ok(match (t, lo, hi) {
        (PrimitiveType::Boolean, Extreme::Int(a), Extreme::Int(b)) => {
            Some((vec![u8::from(a != 0)], Some(vec![u8::from(b != 0)])))
        }
        (PrimitiveType::Int | PrimitiveType::Date, Extreme::Int(a), Extreme::Int(b)) => Some((
            (a as i32).to_le_bytes().to_vec(),
            Some((b as i32).to_le_bytes().to_vec()),
        )),
        (
            PrimitiveType::Long
            | PrimitiveType::Time
            | PrimitiveType::Timestamp
            | PrimitiveType::Timestamptz
            | PrimitiveType::TimestampNs
            | PrimitiveType::TimestamptzNs,
            Extreme::Int(a),
            Extreme::Int(b),
        ) => Some((
            (a as i64).to_le_bytes().to_vec(),
            Some((b as i64).to_le_bytes().to_vec()),
        )),
        (PrimitiveType::Decimal { .. }, Extreme::Int(a), Extreme::Int(b)) => Some((
            minimal_twos_complement(&a.to_be_bytes()).to_vec(),
            Some(minimal_twos_complement(&b.to_be_bytes()).to_vec()),
        )),
        (PrimitiveType::Float, Extreme::Float(a), Extreme::Float(b)) => {
            let (a, b) = signed_zeros(a, b);
            Some((
                (a as f32).to_le_bytes().to_vec(),
                Some((b as f32).to_le_bytes().to_vec()),
            ))
        }
        (PrimitiveType::Double, Extreme::Float(a), Extreme::Float(b)) => {
            let (a, b) = signed_zeros(a, b);
            Some((a.to_le_bytes().to_vec(), Some(b.to_le_bytes().to_vec())))
        }
        (PrimitiveType::String, Extreme::Bytes(a), Extreme::Bytes(b)) => match truncate {
            None => Some((a, Some(b))),
            Some(n) => {
                let a = std::str::from_utf8(&a)
                    .map_err(|_| Error::validation("string column holds invalid UTF-8"))?;
                let b = std::str::from_utf8(&b)
                    .map_err(|_| Error::validation("string column holds invalid UTF-8"))?;
                Some((
                    truncate_lower_str(a, n).into_bytes(),
                    truncate_upper_str(b, n).map(String::into_bytes),
                ))
            }
        },
        (PrimitiveType::Binary, Extreme::Bytes(a), Extreme::Bytes(b)) => match truncate {
            None => Some((a, Some(b))),
            Some(n) => Some((a[..a.len().min(n)].to_vec(), truncate_upper(&b, n))),
        },
        (t, _, _) => {
            return Err(Error::internal(format!(
                "statistics do not match column type {}",
                t.name()
            )))
        }
    })
}

/// Zero as a lower bound is `-0.0`, as an upper bound `+0.0` (the spec orders `-0.0` first).
fn signed_zeros(lo: f64, hi: f64) -> (f64, f64) {
    (
        if lo == 0.0 { -0.0 } else { lo },
        if hi == 0.0 { 0.0 } else { hi },
    )
}

/// The first `n` code points of `s`.
pub fn truncate_lower_str(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The smallest string of at most `n` code points above every string that starts with the
/// first `n` of `s` (the last incrementable code point incremented, surrogates skipped), `s`
/// itself when short enough, `None` when no code point can be incremented.
pub fn truncate_upper_str(s: &str, n: usize) -> Option<String> {
    let mut chars: Vec<char> = s.chars().take(n + 1).collect();
    if chars.len() <= n {
        return Some(s.to_string());
    }
    chars.truncate(n);
    while let Some(last) = chars.pop() {
        let mut cp = last as u32 + 1;
        if (0xD800..=0xDFFF).contains(&cp) {
            cp = 0xE000;
        }
        if let Some(c) = char::from_u32(cp) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// As [`truncate_upper_str`] for bytes: the prefix of `n` bytes with its last byte below 0xFF
/// incremented, `value` itself when short enough, `None` when every byte is 0xFF.
pub fn truncate_upper(value: &[u8], n: usize) -> Option<Vec<u8>> {
    if value.len() <= n {
        return Some(value.to_vec());
    }
    let mut prefix = value[..n].to_vec();
    while let Some(last) = prefix.pop() {
        if last < 0xFF {
            prefix.push(last + 1);
            return Some(prefix);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_array::{
        BinaryArray, BooleanArray, Decimal128Array, Int32Array, Int64Array, StringArray,
        TimestampMicrosecondArray,
    };
    use arrow_schema::{Field, Schema, TimeUnit};
    use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::file::serialized_reader::ReadOptionsBuilder;

    use super::*;

    fn field(name: &str, t: DataType, id: i32) -> Field {
        Field::new(name, t, true).with_metadata(HashMap::from([(
            "PARQUET:field_id".to_string(),
            id.to_string(),
        )]))
    }

    fn sample() -> (RecordBatch, Vec<ColumnSpec>) {
        let schema = Arc::new(Schema::new(vec![
            field("id", DataType::Int64, 1),
            field("name", DataType::Utf8, 2),
            field("v", DataType::Float64, 3),
            field("b", DataType::Binary, 4),
            field("ok", DataType::Boolean, 5),
            field("d", DataType::Decimal128(20, 2), 6),
            field("n", DataType::Int32, 7),
            field("ts", DataType::Timestamp(TimeUnit::Microsecond, None), 8),
        ]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![Some(5), None, Some(-3), Some(9)])),
            Arc::new(StringArray::from(vec![
                Some("abcdefghijklmnopqrstuvwxyz"),
                Some("b"),
                None,
                Some("\u{10FFFF}\u{10FFFF}\u{10FFFF}"),
            ])),
            Arc::new(Float64Array::from(vec![
                Some(0.0),
                Some(f64::NAN),
                Some(2.5),
                None,
            ])),
            Arc::new(BinaryArray::from(vec![
                Some(&[1u8, 255, 255][..]),
                Some(&[0u8][..]),
                None,
                Some(&[1u8, 2][..]),
            ])),
            Arc::new(BooleanArray::from(vec![
                Some(true),
                None,
                Some(true),
                Some(true),
            ])),
            Arc::new(
                Decimal128Array::from(vec![Some(-12345), Some(1), None, Some(99999)])
                    .with_precision_and_scale(20, 2)
                    .unwrap(),
            ),
            Arc::new(Int32Array::from(vec![None, None, None, None])),
            Arc::new(TimestampMicrosecondArray::from(vec![
                Some(10),
                Some(20),
                Some(-5),
                None,
            ])),
        ];
        let spec = |id, t: &str, mode| ColumnSpec {
            field_id: id,
            iceberg_type: PrimitiveType::parse(t).unwrap(),
            mode,
        };
        let specs = vec![
            spec(1, "long", MetricsMode::Truncate(16)),
            spec(2, "string", MetricsMode::Truncate(2)),
            spec(3, "double", MetricsMode::Full),
            spec(4, "binary", MetricsMode::Truncate(2)),
            spec(5, "boolean", MetricsMode::Counts),
            spec(6, "decimal(20, 2)", MetricsMode::Full),
            spec(7, "int", MetricsMode::Full),
            spec(8, "timestamp", MetricsMode::None),
        ];
        (RecordBatch::try_new(schema, cols).unwrap(), specs)
    }

    fn options(dictionary: &[&str], rows: usize) -> FileOptions {
        FileOptions {
            compression: "zstd".into(),
            compression_level: None,
            dictionary: dictionary.iter().map(|s| s.to_string()).collect(),
            page_size: 1 << 20,
            dictionary_page_size: 1 << 20,
            row_group_rows: rows,
            key_value: vec![("k".into(), "v".into())],
        }
    }

    fn map<T: Clone>(pairs: &[(i32, T)]) -> HashMap<i32, T> {
        pairs.iter().cloned().collect()
    }

    #[test]
    fn files_read_back_with_checksums_and_field_ids() {
        let (batch, specs) = sample();
        for dict in [&[][..], &["id", "name", "v", "b", "ok", "d", "n", "ts"][..]] {
            for rows in [1, 3, 4] {
                let files = encode_files(
                    &[batch.slice(0, 1), batch.slice(1, 3)],
                    &[(0, 4), (1, 2)],
                    &specs,
                    &options(dict, rows),
                    Some(2),
                )
                .unwrap();
                assert_eq!(files.len(), 2);
                let bytes = Bytes::from(files[0].bytes.clone());
                // every page's CRC is checked on this read
                let reader = SerializedFileReader::new_with_options(
                    bytes.clone(),
                    ReadOptionsBuilder::new().build(),
                )
                .unwrap();
                let md = reader.metadata();
                assert_eq!(md.num_row_groups(), 4usize.div_ceil(rows));
                let kv = md.file_metadata().key_value_metadata().unwrap();
                assert_eq!(kv[0].key, "k");
                let fields = md.file_metadata().schema_descr().root_schema().get_fields();
                assert_eq!(fields[1].get_basic_info().id(), 2);
                let back = ParquetRecordBatchReaderBuilder::try_new_with_options(
                    bytes,
                    ArrowReaderOptions::new().with_skip_arrow_metadata(true),
                )
                .unwrap()
                .build()
                .unwrap()
                .collect::<std::result::Result<Vec<_>, _>>()
                .unwrap();
                let back = arrow_select::concat::concat_batches(&back[0].schema(), &back).unwrap();
                for c in 0..batch.num_columns() {
                    assert_eq!(
                        back.column(c).to_data(),
                        batch.column(c).to_data(),
                        "column {c}"
                    );
                }
                let second = &files[1];
                assert_eq!(second.rows, 2);
            }
        }
    }

    #[test]
    fn a_damaged_page_fails_its_checksum() {
        let (batch, specs) = sample();
        let file = &encode_files(
            std::slice::from_ref(&batch),
            &[(0, 4)],
            &specs,
            &options(&[], 4),
            None,
        )
        .unwrap()[0];
        let reader = SerializedFileReader::new(Bytes::from(file.bytes.clone())).unwrap();
        let col = reader.metadata().row_group(0).column(0);
        let (start, len) = col.byte_range();
        // flip the last byte of the chunk (page data, not header)
        let mut bytes = file.bytes.clone();
        bytes[(start + len - 1) as usize] ^= 0x55;
        let reader = SerializedFileReader::new(Bytes::from(bytes)).unwrap();
        let mut pages = reader
            .get_row_group(0)
            .unwrap()
            .get_column_page_reader(0)
            .unwrap();
        let err = loop {
            match pages.get_next_page() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("no checksum error"),
                Err(e) => break e.to_string(),
            }
        };
        assert!(
            err.to_lowercase().contains("checksum") || err.contains("crc"),
            "{err}"
        );
    }

    #[test]
    fn metrics_follow_the_modes() {
        let (batch, specs) = sample();
        let f = &encode_files(
            std::slice::from_ref(&batch),
            &[(0, 4)],
            &specs,
            &options(&["name"], 2),
            None,
        )
        .unwrap()[0];
        assert_eq!(f.rows, 4);
        let values = map(&f.value_counts);
        let nulls = map(&f.null_counts);
        let lower = map(&f.lower);
        let upper = map(&f.upper);
        assert!(!values.contains_key(&8), "mode none: no metrics");
        assert_eq!(values[&1], 4);
        assert_eq!(nulls[&1], 1);
        assert_eq!(nulls[&7], 4);
        assert_eq!(map(&f.nan_counts), HashMap::from([(3, 1)]));
        assert_eq!(lower[&1], (-3i64).to_le_bytes().to_vec());
        assert_eq!(upper[&1], 9i64.to_le_bytes().to_vec());
        assert_eq!(lower[&2], b"ab".to_vec());
        // the largest string's two code points cannot be incremented: no upper bound
        assert!(!upper.contains_key(&2));
        assert_eq!(lower[&3], (-0.0f64).to_le_bytes().to_vec());
        assert_eq!(upper[&3], 2.5f64.to_le_bytes().to_vec());
        assert_eq!(lower[&4], vec![0u8]);
        assert_eq!(upper[&4], vec![2u8]);
        assert!(!lower.contains_key(&5), "counts: no bounds");
        assert_eq!(
            lower[&6],
            minimal_twos_complement(&(-12345i128).to_be_bytes()).to_vec()
        );
        assert_eq!(
            upper[&6],
            minimal_twos_complement(&99999i128.to_be_bytes()).to_vec()
        );
        assert!(!lower.contains_key(&7), "all null: no bounds");
        let sizes = map(&f.column_sizes);
        let reader = SerializedFileReader::new(Bytes::from(f.bytes.clone())).unwrap();
        let total: i64 = reader
            .metadata()
            .row_groups()
            .iter()
            .map(|rg| rg.column(0).compressed_size())
            .sum();
        assert_eq!(sizes[&1], total);
        assert_eq!(f.split_offsets.len(), 2);
        assert_eq!(f.split_offsets[0], 4);
    }

    #[test]
    fn row_groups_of_nulls_or_nan_add_no_bounds() {
        let schema = Arc::new(Schema::new(vec![
            field("x", DataType::Float64, 1),
            field("l", DataType::Int64, 2),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Float64Array::from(vec![
                    Some(f64::NAN),
                    None,
                    Some(1.5),
                    Some(-2.0),
                ])),
                Arc::new(Int64Array::from(vec![None, None, Some(7), Some(3)])),
            ],
        )
        .unwrap();
        let specs = vec![
            ColumnSpec {
                field_id: 1,
                iceberg_type: PrimitiveType::Double,
                mode: MetricsMode::Full,
            },
            ColumnSpec {
                field_id: 2,
                iceberg_type: PrimitiveType::Long,
                mode: MetricsMode::Full,
            },
        ];
        let f = &encode_files(&[batch], &[(0, 4)], &specs, &options(&[], 1), None).unwrap()[0];
        let (lower, upper) = (map(&f.lower), map(&f.upper));
        assert_eq!(lower[&1], (-2.0f64).to_le_bytes().to_vec());
        assert_eq!(upper[&1], 1.5f64.to_le_bytes().to_vec());
        assert_eq!(lower[&2], 3i64.to_le_bytes().to_vec());
        assert_eq!(upper[&2], 7i64.to_le_bytes().to_vec());
        assert_eq!(map(&f.nan_counts)[&1], 1);
    }

    #[test]
    fn crc_goes_in_as_field_four() {
        // type=DATA_PAGE(0), sizes 10 and 7, then field 5 (a struct with one i32 field, stop)
        let header = [
            0x15, 0x00, 0x15, 0x14, 0x15, 0x0e, 0x2c, 0x15, 0x02, 0x00, 0x00,
        ];
        let (out, page_type) = header_with_crc(&header, 1).unwrap();
        assert_eq!(page_type, 0);
        assert_eq!(
            out,
            vec![0x15, 0x00, 0x15, 0x14, 0x15, 0x0e, 0x15, 0x02, 0x1c, 0x15, 0x02, 0x00, 0x00]
        );
        // a header that already has a crc, or starts in long form, is refused
        assert!(
            header_with_crc(&[0x15, 0x00, 0x15, 0x00, 0x15, 0x00, 0x15, 0x00, 0x00], 1).is_err()
        );
        assert!(header_with_crc(&[0x05, 0x02, 0x00], 1).is_err());
    }

    #[test]
    fn truncation_of_strings_and_bytes() {
        assert_eq!(truncate_upper_str("abc", 3).as_deref(), Some("abc"));
        assert_eq!(truncate_upper_str("abcd", 3).as_deref(), Some("abd"));
        assert_eq!(
            truncate_upper_str("a\u{D7FF}x", 2).as_deref(),
            Some("a\u{E000}")
        );
        assert_eq!(truncate_upper_str("a\u{10FFFF}x", 2).as_deref(), Some("b"));
        assert_eq!(truncate_upper(&[1, 255, 3], 2), Some(vec![2]));
        assert_eq!(truncate_upper(&[255, 255, 3], 2), None);
        assert_eq!(truncate_lower_str("héllo", 2), "hé");
    }

    #[test]
    fn refusals() {
        let (batch, specs) = sample();
        assert!(encode_files(
            std::slice::from_ref(&batch),
            &[(3, 2)],
            &specs,
            &options(&[], 4),
            None
        )
        .is_err());
        assert!(encode_files(
            std::slice::from_ref(&batch),
            &[(0, 4)],
            &specs[1..],
            &options(&[], 4),
            None
        )
        .is_err());
        let mut gzip = options(&[], 4);
        gzip.compression = "gzip".into();
        assert!(
            encode_files(std::slice::from_ref(&batch), &[(0, 4)], &specs, &gzip, None).is_err()
        );
    }
}
