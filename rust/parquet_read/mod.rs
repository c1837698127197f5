//! Whole Parquet files on local disk decoded natively, many at once and without the GIL.
//!
//! A scan of many small files spends most of its time on per-file work (opening, checking the
//! footer, projecting, handing columns over), which the general reader does in Python while
//! holding the GIL. This module reads a list of such files in parallel on the rayon pool and
//! returns batches already typed as the scan outputs them. Each file is held to the same checks
//! as in the general reader: the footer passes [`check_footer`], the field-id digest icefloe
//! writes into the key-value metadata matches the schema, every page checksum is verified, and
//! the rows decoded add up to the footer's and the manifest's counts.
//!
//! A file that does not fit this path is reported as not read (`None`), never as an error: a
//! requested column missing or stored with another type (schema evolution), a top-level column
//! without a field id (name mapping), a codec not built in, or any failure at all. The caller
//! then reads it with the general reader, which applies the evolution rules or raises the typed
//! error naming the file.

use std::cell::RefCell;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use arrow_array::{
    new_null_array, ArrayRef, BooleanArray, Int64Array, RecordBatch, RecordBatchOptions,
};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use arrow_select::filter::FilterBuilder;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::arrow::{ProjectionMask, PARQUET_FIELD_ID_META_KEY};
use parquet::file::metadata::ParquetMetaDataReader;
use parquet::file::reader::ChunkReader;
use rayon::prelude::*;

use crate::deletes::equality::EqualityDeleteSet;
use crate::deletes::mask::{apply_keep_mask, keep_mask_from_bitmap};
use crate::deletes::PositionBitmap;
use crate::expr::rows::RowFilter;
use crate::parquet_footer::check_footer;
use crate::parquet_types::{convertible, retype};
use crate::quiet_panic::catch_quietly;
use crate::Result;

pub(crate) mod dictionaries;

/// The key-value entry icefloe writes: a CRC-32 of the schema's field ids and nullability.
pub const FIELD_IDS_DIGEST_KEY: &str = "icefloe.field-ids.crc32";
/// A file at most this large is read into memory in one request; larger ones are read by
/// column chunk.
const WHOLE_FILE_BYTES: u64 = 1 << 20;
/// Bytes read from the end of a larger file to find its footer in one request.
const TAIL_BYTES: u64 = 64 * 1024;

/// One file to read: its path and the row count its manifest entry gives (0: unknown).
#[derive(Debug, Clone)]
pub struct FileRequest {
    pub path: String,
    pub rows: i64,
}

/// What to read from every file: top-level columns by field id, typed as `schema` (one field
/// per id, in order, then an `Int64` field for each row's file position when `positions`), in
/// batches of at most `batch_size` rows. A column whose `optional` flag is set (an empty
/// `optional`: none is) may be absent from a file and then reads as nulls. With a
/// `selection` (and `positions`), a batch holds only the live rows it selects.
#[derive(Debug, Clone)]
pub struct Projection {
    pub field_ids: Vec<i32>,
    pub optional: Vec<bool>,
    pub positions: bool,
    pub schema: SchemaRef,
    pub batch_size: usize,
    pub selection: Option<Selection>,
}

/// The rows of a row-level change, found as the columns decode.
#[derive(Debug, Clone)]
pub enum Selection {
    /// The rows a filter selects; a batch holds their positions alone (one `Int64` column),
    /// the decoded columns are dropped.
    Filter(Arc<RowFilter>),
    /// The rows whose key (the first projected columns, named as `names`' fields) is in the
    /// set; a batch holds every projected column of those rows and their positions.
    Keys {
        set: Arc<EqualityDeleteSet>,
        names: SchemaRef,
    },
}

impl Projection {
    pub(crate) fn check(&self) -> Result<()> {
        let want = self.field_ids.len() + usize::from(self.positions);
        if want != self.schema.fields().len() {
            return Err(crate::Error::validation(format!(
                "{} field ids{} for a schema of {} fields",
                self.field_ids.len(),
                if self.positions { " and positions" } else { "" },
                self.schema.fields().len()
            )));
        }
        if self.selection.is_some() && !self.positions {
            return Err(crate::Error::validation(
                "a row selection gives positions: ask for them",
            ));
        }
        if !self.optional.is_empty() && self.optional.len() != self.field_ids.len() {
            return Err(crate::Error::validation(format!(
                "{} optional flags for {} field ids",
                self.optional.len(),
                self.field_ids.len()
            )));
        }
        if self.positions && self.schema.fields()[want - 1].data_type() != &DataType::Int64 {
            return Err(crate::Error::validation(
                "the position field must be of type int64".to_string(),
            ));
        }
        Ok(())
    }

    fn optional(&self, i: usize) -> bool {
        self.optional.get(i).copied().unwrap_or(false)
    }
}

/// The deletes of one file: the positions its deletion vector or position delete files name,
/// and the equality deletes that apply to it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Deletes<'a> {
    pub positions: Option<&'a PositionBitmap>,
    /// Matched against the projected columns, each named by its field id; a set naming a
    /// column the projection lacks sends the file to the general reader.
    pub equality: Option<&'a EqualityDeleteSet>,
}

impl<'a> From<Option<&'a PositionBitmap>> for Deletes<'a> {
    fn from(positions: Option<&'a PositionBitmap>) -> Self {
        Self {
            positions,
            equality: None,
        }
    }
}

/// The batches of each file in `files` (same order), or `None` for a file this path does not
/// read; the rows a file's `deletes` name (positions, equality deletes) are dropped. Files are
/// read in parallel on `threads` threads (rayon's pool when `None`).
pub fn read_files(
    files: &[FileRequest],
    deletes: &[Deletes<'_>],
    projection: &Projection,
    threads: Option<usize>,
) -> Result<Vec<Option<Vec<RecordBatch>>>> {
    if deletes.len() != files.len() {
        return Err(crate::Error::validation(format!(
            "{} delete sets for {} files",
            deletes.len(),
            files.len()
        )));
    }
    projection.check()?;
    crate::pool::install(threads, || {
        Ok(files
            .par_iter()
            .zip(deletes.par_iter())
            .map(|(f, d)| {
                // A panic in the decoder (a malformed file it does not guard against) sends
                // the file to the general reader, which reports it.
                catch_quietly(AssertUnwindSafe(|| read_file(f, d, projection)))
                    .ok()
                    .flatten()
            })
            .collect())
    })
}

fn read_file(
    request: &FileRequest,
    deleted: &Deletes<'_>,
    projection: &Projection,
) -> Option<Vec<RecordBatch>> {
    match open_parquet(&request.path)? {
        (Source::Whole(bytes), footer) => decode(bytes, &footer, request, deleted, projection),
        (Source::Part(file), footer) => decode(file, &footer, request, deleted, projection),
    }
}

/// A Parquet file's bytes: all of a small file, or the open file to read by column chunk.
pub(crate) enum Source {
    Whole(Bytes),
    Part(File),
}

/// Opens a local Parquet file: its bytes (all of them when it is at most 1 MiB) and the Thrift
/// footer; `None` when it cannot be opened, is not a regular file (opening a pipe waits for a
/// writer) or has no footer.
pub(crate) fn open_parquet(path: &str) -> Option<(Source, Vec<u8>)> {
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut file = File::open(path).ok()?;
    let size = file.metadata().ok()?.len();
    if size < 12 {
        return None;
    }
    if size <= WHOLE_FILE_BYTES {
        let mut buf = Vec::with_capacity(size as usize);
        file.read_to_end(&mut buf).ok()?;
        let bytes = Bytes::from(buf);
        let (lo, hi) = footer_of(&bytes, 0)?;
        let footer = bytes[lo as usize..hi as usize].to_vec();
        Some((Source::Whole(bytes), footer))
    } else {
        let start = size.saturating_sub(TAIL_BYTES);
        let mut tail = vec![0u8; (size - start) as usize];
        file.read_exact_at(&mut tail, start).ok()?;
        let (lo, hi) = footer_of(&tail, start)?;
        let footer = if lo >= start {
            tail[(lo - start) as usize..(hi - start) as usize].to_vec()
        } else {
            let mut buf = vec![0u8; (hi - lo) as usize];
            file.read_exact_at(&mut buf, lo).ok()?;
            buf
        };
        Some((Source::Part(file), footer))
    }
}

/// The byte range of the Thrift footer, given the last bytes of the file (which start at
/// `offset` in it).
fn footer_of(tail: &[u8], offset: u64) -> Option<(u64, u64)> {
    let n = tail.len();
    if n < 8 || &tail[n - 4..] != b"PAR1" {
        return None;
    }
    let length = u32::from_le_bytes(tail[n - 8..n - 4].try_into().ok()?) as u64;
    let end = offset + n as u64 - 8;
    // the footer and the leading magic must fit in the file
    if length + 4 > end {
        return None;
    }
    Some((end - length, end))
}

/// What reading `projection` from one file takes, found from its footer: the file's Arrow
/// metadata, its row count, the root columns to decode and where each requested field is
/// among them.
pub(crate) struct FilePlan {
    pub(crate) meta: ArrowReaderMetadata,
    pub(crate) num_rows: i64,
    /// The file's root columns to decode, in file order (the order a reader yields them).
    pub(crate) roots: Vec<usize>,
    /// Per requested field: its index in `roots`, or `None` for an optional column the file
    /// lacks.
    columns_at: Vec<Option<usize>>,
    /// Whether some columns decode as dictionaries (see [`dictionaries`]).
    pub(crate) dictionaries: bool,
    /// The projected columns named by field id, as equality delete sets name them.
    key_schema: Option<SchemaRef>,
}

/// The plan for reading `projection` from the file whose Thrift footer is `footer`, or `None`
/// when the file does not fit this path (see the module documentation).
pub(crate) fn plan_file(
    footer: &[u8],
    request: &FileRequest,
    deleted: &Deletes<'_>,
    projection: &Projection,
) -> Option<FilePlan> {
    check_footer(footer).ok()?;
    let metadata = ParquetMetaDataReader::decode_metadata(footer).ok()?;
    let num_rows = metadata.file_metadata().num_rows();
    if request.rows > 0 && num_rows != request.rows {
        return None;
    }
    let stored_digest = metadata
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|e| e.key == FIELD_IDS_DIGEST_KEY))
        .map(|e| e.value.clone());
    let meta = ArrowReaderMetadata::try_new(Arc::new(metadata), ArrowReaderOptions::new()).ok()?;
    let file_schema = meta.schema().clone();
    if let Some(stored) = stored_digest {
        if stored.as_deref() != Some(field_ids_digest(&file_schema).as_str()) {
            return None;
        }
    }
    // top-level columns by field id; a column without one needs the table's name mapping
    let mut ids = Vec::with_capacity(file_schema.fields().len());
    for f in file_schema.fields() {
        ids.push(
            f.metadata()
                .get(PARQUET_FIELD_ID_META_KEY)?
                .parse::<i32>()
                .ok()?,
        );
    }
    // per requested id: its root column, or None for an optional column the file lacks
    let mut wanted: Vec<Option<usize>> = Vec::with_capacity(projection.field_ids.len());
    for (k, id) in projection.field_ids.iter().enumerate() {
        let mut hits = ids.iter().enumerate().filter(|(_, i)| *i == id);
        match hits.next() {
            Some((root, _)) if hits.next().is_none() => wanted.push(Some(root)),
            None if projection.optional(k) => wanted.push(None),
            _ => return None,
        }
    }
    for (root, f) in wanted.iter().zip(projection.schema.fields()) {
        if let Some(r) = root {
            if !convertible(file_schema.field(*r).data_type(), f.data_type()) {
                return None;
            }
        }
    }
    let mut roots: Vec<usize> = wanted.iter().flatten().copied().collect();
    roots.sort_unstable();
    roots.dedup();
    let mut columns_at = Vec::with_capacity(wanted.len());
    for root in &wanted {
        columns_at.push(match root {
            Some(r) => Some(roots.binary_search(r).ok()?),
            None => None,
        });
    }
    let key_schema = deleted.equality.map(|_| {
        let fields: Vec<Field> = projection
            .field_ids
            .iter()
            .zip(projection.schema.fields())
            .map(|(id, f)| Field::new(id.to_string(), f.data_type().clone(), true))
            .collect();
        Arc::new(Schema::new(fields))
    });
    // with position deletes, small-dictionary string columns decode without the deleted rows
    // (see `dictionaries`); without them the crate's own decode to strings is faster
    let typed = deleted
        .positions
        .and_then(|_| dictionaries::with_dictionaries(&meta, &roots));
    let (meta, dictionaries) = match typed {
        Some(typed) => (typed, true),
        None => (meta, false),
    };
    Some(FilePlan {
        meta,
        dictionaries,
        num_rows,
        roots,
        columns_at,
        key_schema,
    })
}

/// Null columns longer than this are allocated for their batch, not kept for the next one.
const SHARED_NULL_ROWS: usize = 1 << 20;

thread_local! {
    /// Per thread, the longest null column made of each type, sliced for the next batches.
    static NULLS: RefCell<Vec<ArrayRef>> = const { RefCell::new(Vec::new()) };
}

/// An all-null column of `rows` rows (an optional column a file lacks). Arrow arrays are
/// immutable, so batches share the zeroed buffers of one column per type and thread, sliced:
/// a new zeroed megabyte for every batch of a 131,072-row int64 column cost page faults
/// worth a quarter of decoding the columns the file has.
fn null_column(dt: &DataType, rows: usize) -> ArrayRef {
    if rows > SHARED_NULL_ROWS {
        return new_null_array(dt, rows);
    }
    NULLS.with_borrow_mut(|kept| {
        let at = kept.iter().position(|a| a.data_type() == dt);
        match at {
            Some(k) if kept[k].len() >= rows => kept[k].slice(0, rows),
            _ => {
                let fresh = new_null_array(dt, rows);
                match at {
                    Some(k) => kept[k] = fresh.clone(),
                    None => kept.push(fresh.clone()),
                }
                fresh
            }
        }
    })
}

impl FilePlan {
    /// A projection mask of `roots` (indexes of the file's root columns).
    pub(crate) fn mask(&self, roots: &[usize]) -> ProjectionMask {
        ProjectionMask::roots(self.meta.parquet_schema(), roots.iter().copied())
    }

    /// The output batch of `n` decoded rows starting at file position `base`, given the
    /// decoded root columns (`decoded[k]` holds `roots[k]`): typed as the projection, with
    /// the positions column when asked for, without the deleted rows. With `kept`, the
    /// decoded columns hold only the rows that mask keeps (the position deletes were applied
    /// to each column as it was decoded), and `deleted.positions` is not applied again.
    /// `Some(None)` when every row is deleted; `None` when a column does not convert. Taking
    /// the decoded columns lets the deleted rows be dropped in their own buffers.
    pub(crate) fn finish(
        &self,
        decoded: Vec<ArrayRef>,
        n: usize,
        base: u64,
        kept: Option<&BooleanArray>,
        deleted: &Deletes<'_>,
        projection: &Projection,
    ) -> Option<Option<RecordBatch>> {
        let want = &projection.schema;
        let rows = kept.map_or(n, |k| k.true_count());
        let mut decoded: Vec<Option<ArrayRef>> = decoded.into_iter().map(Some).collect();
        let mut columns = Vec::with_capacity(self.columns_at.len() + 1);
        for (i, (p, f)) in self.columns_at.iter().zip(want.fields()).enumerate() {
            columns.push(match p {
                Some(p) => {
                    // moved out on its last use, so that the output holds the only reference
                    let again = self.columns_at[i + 1..].contains(&Some(*p));
                    let column = match again {
                        true => decoded.get(*p)?.clone(),
                        false => decoded.get_mut(*p)?.take(),
                    };
                    retype(column?, f)?
                }
                None => null_column(f.data_type(), rows),
            });
        }
        drop(decoded);
        let live = self.live_rows(&columns, n, base, kept, deleted)?;
        if let Some(selection) = &projection.selection {
            return select(columns, rows, base, kept, live, projection, selection);
        }
        if projection.positions {
            let first = base as i64;
            columns.push(Arc::new(match kept {
                None => Int64Array::from_iter_values(first..first + n as i64),
                Some(k) => {
                    Int64Array::from_iter_values(k.values().set_indices().map(|i| first + i as i64))
                }
            }));
        }
        // with a row count: a projection of no columns (a count) still has rows
        let mut batch = with_rows(want, columns, rows)?;
        if let Some(live) = live {
            let keep = BooleanArray::new(live, None);
            if keep.true_count() < rows {
                batch = if batch.num_columns() == 0 {
                    with_rows(want, Vec::new(), keep.true_count())?
                } else {
                    apply_keep_mask(batch, &keep).ok()?
                };
            }
        }
        Some((batch.num_rows() > 0).then_some(batch))
    }

    /// Which of the rows of `columns` (the projected columns of `n` decoded rows from `base`,
    /// holding only the rows of `kept` when given) no delete removes: `None` when all of them.
    /// The outer `None` when the equality keys do not line up with the columns.
    fn live_rows(
        &self,
        columns: &[ArrayRef],
        n: usize,
        base: u64,
        kept: Option<&BooleanArray>,
        deleted: &Deletes<'_>,
    ) -> Option<Option<BooleanBuffer>> {
        // rows `kept` dropped were deleted by position during the decode
        let mut live = match kept {
            Some(_) => None,
            None => deleted
                .positions
                .map(|bitmap| keep_mask_from_bitmap(bitmap, base, n).values().clone()),
        };
        if let Some(set) = deleted.equality {
            let by_id = RecordBatch::try_new(self.key_schema.clone()?, columns.to_vec()).ok()?;
            let matched = set.keep_mask(&by_id).ok()?;
            live = Some(match live {
                Some(k) => &k & matched.values(),
                None => matched.values().clone(),
            });
        }
        Some(live)
    }
}

/// [`FilePlan::finish`] under a selection: the rows of `columns` (`rows` long, holding only
/// the rows of `kept` when given, the first from file position `base`) that are `live` and
/// `selection` selects, as [`Selection`] says. The positions of the other rows are never made.
fn select(
    columns: Vec<ArrayRef>,
    rows: usize,
    base: u64,
    kept: Option<&BooleanArray>,
    live: Option<BooleanBuffer>,
    projection: &Projection,
    selection: &Selection,
) -> Option<Option<RecordBatch>> {
    let mut hit = match selection {
        Selection::Filter(filter) => filter.eval(&columns, rows).ok()?,
        Selection::Keys { set, names } => {
            let keys = columns.get(..names.fields().len())?.to_vec();
            let by_name = RecordBatch::try_new(names.clone(), keys).ok()?;
            !set.keep_mask(&by_name).ok()?.values()
        }
    };
    if let Some(live) = live {
        hit = &hit & &live;
    }
    let first = base as i64;
    let positions = match kept {
        None => Int64Array::from_iter_values(hit.set_indices().map(|i| first + i as i64)),
        Some(k) => {
            let at: Vec<usize> = k.values().set_indices().collect();
            Int64Array::from_iter_values(hit.set_indices().map(|r| first + at[r] as i64))
        }
    };
    if positions.is_empty() {
        return Some(None);
    }
    if let Selection::Keys { .. } = selection {
        let mask = BooleanArray::new(hit, None);
        let keep = FilterBuilder::new(&mask).optimize().build();
        let mut out = columns
            .iter()
            .map(|c| keep.filter(c.as_ref()).ok())
            .collect::<Option<Vec<ArrayRef>>>()?;
        out.push(Arc::new(positions));
        return RecordBatch::try_new(projection.schema.clone(), out)
            .ok()
            .map(Some);
    }
    let field = projection.schema.fields().last()?.clone();
    let schema = Arc::new(Schema::new(vec![field]));
    RecordBatch::try_new(schema, vec![Arc::new(positions)])
        .ok()
        .map(Some)
}

fn decode<T: ChunkReader + 'static>(
    reader: T,
    footer: &[u8],
    request: &FileRequest,
    deleted: &Deletes<'_>,
    projection: &Projection,
) -> Option<Vec<RecordBatch>> {
    let plan = plan_file(footer, request, deleted, projection)?;
    let batches = crate::parquet_pages::record_batches(
        reader,
        &plan.meta,
        plan.mask(&plan.roots),
        None,
        projection.batch_size.max(1),
    )
    .ok()?;
    let mut out = Vec::new();
    let mut seen: i64 = 0;
    for batch in batches {
        let batch = batch.ok()?;
        let (base, n) = (seen as u64, batch.num_rows());
        seen += n as i64;
        if n == 0 {
            continue;
        }
        let (_, columns, _) = batch.into_parts();
        let (columns, kept) = match plan.dictionaries {
            true => dictionaries::keep_decoded(columns, n, base, deleted.positions)?,
            false => (columns, None),
        };
        if let Some(batch) = plan.finish(columns, n, base, kept.as_ref(), deleted, projection)? {
            out.push(batch);
        }
    }
    // a damaged page header could make the decoder stop early without an error
    (seen == plan.num_rows).then_some(out)
}

fn with_rows(schema: &SchemaRef, columns: Vec<ArrayRef>, rows: usize) -> Option<RecordBatch> {
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema.clone(), columns, &options).ok()
}

/// A CRC-32 (hex) of every field's id and nullability, nested fields included, in order: the
/// digest icefloe's writer stores under [`FIELD_IDS_DIGEST_KEY`] (the Python
/// `icefloe.arrow_schema.field_ids_digest` of the same schema).
pub fn field_ids_digest(schema: &Schema) -> String {
    fn walk(f: &Field, out: &mut String) {
        out.push_str(
            f.metadata()
                .get(PARQUET_FIELD_ID_META_KEY)
                .map_or("-", |v| v.as_str()),
        );
        if !f.is_nullable() {
            out.push('!');
        }
        let children: Vec<&Field> = match f.data_type() {
            DataType::Struct(fields) => fields.iter().map(|c| c.as_ref()).collect(),
            DataType::List(c)
            | DataType::LargeList(c)
            | DataType::ListView(c)
            | DataType::LargeListView(c)
            | DataType::FixedSizeList(c, _) => vec![c.as_ref()],
            DataType::Map(entries, _) => match entries.data_type() {
                DataType::Struct(fields) => fields.iter().map(|c| c.as_ref()).collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        if children.is_empty() {
            out.push(',');
        } else {
            out.push('(');
            for c in children {
                walk(c, out);
            }
            out.push(')');
        }
    }
    let mut text = String::new();
    for f in schema.fields() {
        walk(f, &mut text);
    }
    format!("{:08x}", crc32fast::hash(text.as_bytes()))
}

/// A nullable field with a Parquet field id, for the native readers' tests.
#[cfg(test)]
pub(crate) fn id_field(name: &str, t: DataType, id: i32) -> Field {
    Field::new(name, t, true).with_metadata(std::collections::HashMap::from([(
        PARQUET_FIELD_ID_META_KEY.to_string(),
        id.to_string(),
    )]))
}

#[cfg(test)]
mod tests;
