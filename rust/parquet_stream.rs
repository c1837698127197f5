//! One large local Parquet file streamed batch by batch, its columns decoded in parallel.
//!
//! The native reader of small files ([`crate::parquet_read`]) decodes whole files, one per
//! thread. A large file read that way would sit on one core and be held in memory whole. Here
//! each projected root column gets a reader of its own (its own file handle), decoding its next
//! batch as a task on the thread pool whenever fewer than [`AHEAD`] of its batches wait to be
//! taken. A file's columns so decode on every core, a cheap column runs ahead while an
//! expensive one catches up, the decoding goes on while the caller uses the last batch, and at
//! most [`AHEAD`] batches of each column are held. The files get the same checks as in
//! [`crate::parquet_read`]: footer, field-id digest, page checksums, row counts.
//!
//! A file that does not fit this path is refused when the stream is opened (`None`). Damage
//! found later (a failing page, a short column) ends the stream with [`Step::Failed`] after
//! the batches already returned; the caller then reads the rest with the general reader,
//! which reports the damage as a typed error naming the file.

use std::collections::VecDeque;
use std::fs::File;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow_schema::{Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReader;
use rayon::ThreadPool;

use crate::deletes::dictionary::decodable;
use crate::deletes::equality::EqualityDeleteSet;
use crate::deletes::mask::{apply_keep_mask, keep_mask_from_bitmap};
use crate::deletes::PositionBitmap;
use crate::parquet_pages::page_counts_match;
use crate::parquet_read::dictionaries::keep_rows;
use crate::parquet_read::{open_parquet, plan_file, Deletes, FilePlan, FileRequest, Projection};
use crate::quiet_panic::catch_quietly;
use crate::Result;

/// What one step of a [`FileStream`] gives.
#[derive(Debug)]
pub enum Step {
    /// The next batch of live rows (never empty).
    Batch(RecordBatch),
    /// Every row of the file (or split) was read.
    End,
    /// The file could not be decoded from here on; the batches returned so far are good.
    Failed,
}

/// Batches of one column decoded ahead of the caller, at most.
pub const AHEAD: usize = 2;

/// A streamed read of one local Parquet file, or of the row groups of one split of it.
pub struct FileStream {
    plan: FilePlan,
    projection: Projection,
    columns: Arc<Columns>,
    /// The file position of the next row to decode.
    next_row: u64,
    /// The file position after the last row to decode.
    end_row: u64,
    finished: bool,
}

impl std::fmt::Debug for FileStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileStream")
            .field("columns", &self.plan.roots.len())
            .field("next_row", &self.next_row)
            .field("end_row", &self.end_row)
            .finish()
    }
}

impl Drop for FileStream {
    fn drop(&mut self) {
        // decodes under way finish their batch and start no more
        self.columns.lock().closed = true;
    }
}

/// What one column reader's step gave: a batch of the rows not deleted, with how many rows
/// were decoded for it.
enum Decoded {
    Batch(RecordBatch, usize),
    End,
    Failed,
}

/// A column's reader and the file position of the next row it decodes.
struct ColumnReader {
    reader: ParquetRecordBatchReader,
    next_row: u64,
}

/// The column readers of a stream and the batches they decoded ahead, shared with the decode
/// tasks on the pool.
struct Columns {
    /// One reader per root column of the plan (a single one with no column for a count).
    readers: Vec<Mutex<ColumnReader>>,
    /// The deleted positions, dropped from each column as it is decoded.
    deleted: Option<PositionBitmap>,
    /// The keep-masks of the latest row ranges `(first row, rows)`, made once for every
    /// column of a batch (and the batch itself) instead of once per column.
    masks: Mutex<VecDeque<(u64, usize, BooleanArray)>>,
    state: Mutex<Queues>,
    changed: Condvar,
    /// `None`: no pool could be kept; the caller decodes each batch itself.
    pool: Option<&'static ThreadPool>,
    /// The process the stream was opened in (a forked child has none of its tasks).
    pid: u32,
}

struct Queues {
    ready: Vec<VecDeque<Decoded>>,
    running: Vec<bool>,
    /// A reader that gave its end or a failure: nothing more is asked of it.
    done: Vec<bool>,
    closed: bool,
}

impl Columns {
    fn lock(&self) -> MutexGuard<'_, Queues> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The keep-mask of rows `[base, base + n)` given the deleted positions of `bitmap`,
    /// shared by the columns decoding that range.
    fn keep_mask(&self, bitmap: &PositionBitmap, base: u64, n: usize) -> BooleanArray {
        let find = |m: &VecDeque<(u64, usize, BooleanArray)>| {
            m.iter()
                .find(|(b, k, _)| (*b, *k) == (base, n))
                .map(|(_, _, a)| a.clone())
        };
        if let Some(hit) = find(&self.masks.lock().unwrap_or_else(|e| e.into_inner())) {
            return hit;
        }
        let mask = keep_mask_from_bitmap(bitmap, base, n);
        let mut masks = self.masks.lock().unwrap_or_else(|e| e.into_inner());
        if find(&masks).is_none() {
            // a range the slowest column has not reached stays: columns decode at most
            // `AHEAD` batches apart
            if masks.len() > 4 * AHEAD {
                masks.pop_front();
            }
            masks.push_back((base, n, mask.clone()));
        }
        mask
    }

    /// Starts a decode task for every column with fewer than [`AHEAD`] batches ready.
    fn pump(self: &Arc<Self>, q: &mut Queues) {
        let Some(pool) = self.pool else { return };
        if q.closed {
            return;
        }
        for c in 0..self.readers.len() {
            if !q.running[c] && !q.done[c] && q.ready[c].len() < AHEAD {
                q.running[c] = true;
                let me = Arc::clone(self);
                pool.spawn(move || me.decode(c));
            }
        }
    }

    /// Decodes column `c`'s next batch and queues it.
    fn decode(self: &Arc<Self>, c: usize) {
        let got = self.next_of(c);
        let mut q = self.lock();
        if !matches!(got, Decoded::Batch(..)) {
            q.done[c] = true;
        }
        q.ready[c].push_back(got);
        q.running[c] = false;
        self.pump(&mut q);
        drop(q);
        self.changed.notify_all();
    }

    fn next_of(&self, c: usize) -> Decoded {
        // a panic in the decoder (a malformed page it does not guard against) is a failure
        catch_quietly(AssertUnwindSafe(|| {
            let Ok(mut column) = self.readers[c].lock() else {
                return Decoded::Failed;
            };
            let batch = match column.reader.next() {
                None => return Decoded::End,
                Some(Ok(batch)) => batch,
                Some(Err(_)) => return Decoded::Failed,
            };
            let (base, n) = (column.next_row, batch.num_rows());
            column.next_row += n as u64;
            // each column drops the deleted rows on the thread that decoded it
            let keep = (self.deleted.as_ref())
                .map(|bitmap| self.keep_mask(bitmap, base, n))
                .filter(|keep| keep.true_count() < n);
            if batch.columns().iter().any(|c| decodable(c.data_type())) {
                let rows = keep.as_ref().map_or(n, BooleanArray::true_count);
                let (_, columns, _) = batch.into_parts();
                return match keep_rows(columns, keep.as_ref()).and_then(|c| batch_of(c, rows)) {
                    Some(kept) => Decoded::Batch(kept, n),
                    None => Decoded::Failed,
                };
            }
            let Some(keep) = keep else {
                return Decoded::Batch(batch, n);
            };
            match apply_keep_mask(batch, &keep) {
                Ok(kept) => Decoded::Batch(kept, n),
                Err(_) => Decoded::Failed,
            }
        }))
        .unwrap_or(Decoded::Failed)
    }

    /// The next step of every column, waiting for the decode tasks.
    fn take(self: &Arc<Self>) -> Vec<Decoded> {
        if self.pid != std::process::id() {
            return vec![Decoded::Failed];
        }
        if self.pool.is_none() {
            return (0..self.readers.len()).map(|c| self.next_of(c)).collect();
        }
        let mut q = self.lock();
        self.pump(&mut q);
        while q.ready.iter().any(VecDeque::is_empty) {
            q = self.changed.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        let out = q.ready.iter_mut().filter_map(VecDeque::pop_front).collect();
        self.pump(&mut q);
        out
    }
}

/// `columns` of `rows` rows as a batch (only its columns are used).
fn batch_of(columns: Vec<ArrayRef>, rows: usize) -> Option<RecordBatch> {
    let fields: Vec<Field> = (columns.iter().enumerate())
        .map(|(i, c)| Field::new(format!("c{i}"), c.data_type().clone(), true))
        .collect();
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options).ok()
}

impl FileStream {
    /// Opens `request` to stream `projection` from it, the deletes of `deleted` to be dropped
    /// (the same ones must be given to every [`FileStream::next_step`]). With `range` (byte
    /// start and length of a split), only the row groups whose first page starts in it are
    /// read. `None` when the file does not fit this path; an error only for a projection that
    /// does not describe its own schema.
    pub fn open(
        request: &FileRequest,
        range: Option<(u64, u64)>,
        deleted: &Deletes<'_>,
        projection: Projection,
        threads: Option<usize>,
    ) -> Result<Option<Self>> {
        projection.check()?;
        Ok(catch_quietly(AssertUnwindSafe(|| {
            Self::try_open(request, range, deleted, projection, threads)
        }))
        .ok()
        .flatten())
    }

    fn try_open(
        request: &FileRequest,
        range: Option<(u64, u64)>,
        deleted: &Deletes<'_>,
        projection: Projection,
        threads: Option<usize>,
    ) -> Option<Self> {
        let (_, footer) = open_parquet(&request.path)?;
        let plan = plan_file(&footer, request, deleted, &projection)?;
        // the row groups of the split: contiguous, so their rows are one run of positions
        let metadata = plan.meta.metadata().clone();
        let mut groups = Vec::new();
        let (mut first_row, mut row) = (None, 0u64);
        let mut rows = 0u64;
        for (i, rg) in metadata.row_groups().iter().enumerate() {
            let n = u64::try_from(rg.num_rows()).ok()?;
            let inside = match range {
                None => true,
                Some((start, length)) => {
                    let c = rg.columns().first()?;
                    let data = c.data_page_offset();
                    let begin = match c.dictionary_page_offset() {
                        Some(d) if d > 0 => d.min(data),
                        _ => data,
                    };
                    let begin = u64::try_from(begin).ok()?;
                    start <= begin && begin < start.saturating_add(length)
                }
            };
            if inside {
                if let Some(last) = groups.last() {
                    if *last + 1 != i {
                        return None;
                    }
                }
                groups.push(i);
                first_row.get_or_insert(row);
                rows += n;
            }
            row += n;
        }
        let next_row = first_row.unwrap_or(0);
        let batch_size = projection.batch_size.max(1);
        let columns: Vec<Vec<usize>> = if plan.roots.is_empty() {
            vec![Vec::new()]
        } else {
            plan.roots.iter().map(|r| vec![*r]).collect()
        };
        // page headers carry no checksum, and a chunk's pages are counted only at its end, after
        // its first batches went out: a damaged count would shift values to other rows in them
        let all: Vec<usize> = columns.iter().flatten().copied().collect();
        let file = Arc::new(File::open(&request.path).ok()?);
        if !page_counts_match(&file, &metadata, &groups, &plan.mask(&all)) {
            return None; // the general reader names the damage
        }
        let mut readers = Vec::with_capacity(columns.len());
        for roots in &columns {
            // a handle per reader: readers on other threads must not share a file offset
            let file = File::open(&request.path).ok()?;
            let reader = crate::parquet_pages::record_batches(
                file,
                &plan.meta,
                plan.mask(roots),
                Some(groups.clone()),
                batch_size,
            )
            .ok()?;
            readers.push(Mutex::new(ColumnReader { reader, next_row }));
        }
        let n = readers.len();
        let columns = Arc::new(Columns {
            readers,
            deleted: deleted.positions.cloned(),
            masks: Mutex::new(VecDeque::new()),
            state: Mutex::new(Queues {
                ready: (0..n).map(|_| VecDeque::with_capacity(AHEAD)).collect(),
                running: vec![false; n],
                done: vec![false; n],
                closed: false,
            }),
            changed: Condvar::new(),
            pool: crate::pool::shared(threads).ok().flatten(),
            pid: std::process::id(),
        });
        // the first batches decode from now on: a stream opened ahead of its turn (the next
        // file of a scan) overlaps the end of the one before
        columns.pump(&mut columns.lock());
        Some(Self {
            plan,
            projection,
            columns,
            next_row,
            end_row: next_row + rows,
            finished: false,
        })
    }

    /// The next batch of live rows, the end, or a failure; `equality` must be the equality
    /// deletes the stream was opened with (its position deletes it holds itself).
    pub fn next_step(&mut self, equality: Option<&EqualityDeleteSet>) -> Step {
        if self.finished {
            return Step::End;
        }
        let step =
            catch_quietly(AssertUnwindSafe(|| self.advance(equality))).unwrap_or(Step::Failed);
        if !matches!(step, Step::Batch(_)) {
            self.finished = true;
        }
        step
    }

    fn advance(&mut self, equality: Option<&EqualityDeleteSet>) -> Step {
        let deleted = Deletes {
            positions: None,
            equality,
        };
        loop {
            let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.plan.roots.len());
            let mut rows: Option<(usize, usize)> = None;
            let mut ended = 0;
            let decoded = self.columns.take();
            let width = decoded.len();
            for got in decoded {
                match got {
                    Decoded::End => ended += 1,
                    Decoded::Batch(batch, decoded) => {
                        let shape = (decoded, batch.num_rows());
                        if *rows.get_or_insert(shape) != shape {
                            return Step::Failed;
                        }
                        columns.extend(batch.into_parts().1);
                    }
                    Decoded::Failed => return Step::Failed,
                }
            }
            if ended > 0 {
                // every column must end together, after exactly the rows of the row groups
                let whole = ended == width
                    && width == self.columns.readers.len()
                    && self.next_row == self.end_row;
                return if whole { Step::End } else { Step::Failed };
            }
            let (n, _) = rows.unwrap_or((0, 0));
            let base = self.next_row;
            self.next_row += n as u64;
            if n == 0 || self.next_row > self.end_row {
                return Step::Failed;
            }
            let kept = self
                .columns
                .deleted
                .as_ref()
                .map(|bitmap| self.columns.keep_mask(bitmap, base, n));
            match self
                .plan
                .finish(columns, n, base, kept.as_ref(), &deleted, &self.projection)
            {
                Some(Some(batch)) => return Step::Batch(batch),
                Some(None) => continue,
                None => return Step::Failed,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::rows::RowFilter;
    use crate::parquet_read::{field_ids_digest, id_field as field, Selection};
    use arrow_array::{Array, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema, SchemaRef};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;
    use std::sync::Arc;

    fn file_schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            field("id", DataType::Int64, 1),
            field("name", DataType::Utf8, 2),
            field("code", DataType::Int64, 3),
        ]))
    }

    /// A file of `rows` rows in row groups of 1,000 (id = position, name = "n{id}").
    fn write(name: &str, rows: i64) -> String {
        let schema = file_schema();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(0..rows)),
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|i| format!("n{i}")),
                )),
                Arc::new(Int64Array::from_iter_values((0..rows).map(|i| i % 7))),
            ],
        )
        .unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(1000))
            .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
                crate::parquet_read::FIELD_IDS_DIGEST_KEY.to_string(),
                field_ids_digest(&schema),
            )]))
            .build();
        let dir = std::env::temp_dir().join(format!("icefloe-ps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        let mut w =
            ArrowWriter::try_new(File::create(&path).unwrap(), schema, Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        path.to_string_lossy().into_owned()
    }

    fn metadata_of(path: &str) -> parquet::file::metadata::ParquetMetaData {
        let reader =
            parquet::file::serialized_reader::SerializedFileReader::new(File::open(path).unwrap())
                .unwrap();
        parquet::file::reader::FileReader::metadata(&reader).clone()
    }

    fn projection(ids: &[i32], fields: Vec<Field>, positions: bool) -> Projection {
        Projection {
            field_ids: ids.to_vec(),
            optional: Vec::new(),
            positions,
            schema: Arc::new(Schema::new(fields)),
            batch_size: 300,
            selection: None,
        }
    }

    fn drain(stream: &mut FileStream, deleted: &Deletes<'_>) -> (Vec<RecordBatch>, bool) {
        let mut out = Vec::new();
        loop {
            match stream.next_step(deleted.equality) {
                Step::Batch(b) => out.push(b),
                Step::End => return (out, true),
                Step::Failed => return (out, false),
            }
        }
    }

    fn ints(batches: &[RecordBatch], col: usize) -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| {
                let a = b.column(col).as_any().downcast_ref::<Int64Array>().unwrap();
                a.values().to_vec()
            })
            .collect()
    }

    #[test]
    fn columns_stream_in_requested_order_without_deleted_rows() {
        let path = write("order.parquet", 2500);
        let p = projection(
            &[3, 2, 1],
            vec![
                Field::new("c", DataType::Int64, true),
                Field::new("s", DataType::Utf8, true),
                Field::new("i", DataType::Int64, true),
                Field::new("_pos", DataType::Int64, false),
            ],
            true,
        );
        let bitmap = PositionBitmap::from_positions([0u64, 299, 300, 1999, 2499]).unwrap();
        let deleted: Deletes<'_> = Some(&bitmap).into();
        let req = FileRequest { path, rows: 2500 };
        let mut stream = FileStream::open(&req, None, &deleted, p, Some(2))
            .unwrap()
            .expect("streamed");
        let (batches, ended) = drain(&mut stream, &deleted);
        assert!(ended);
        let ids = ints(&batches, 2);
        let want: Vec<i64> = (0..2500)
            .filter(|i| ![0, 299, 300, 1999, 2499].contains(i))
            .collect();
        assert_eq!(ids, want);
        assert_eq!(ints(&batches, 3), want);
        assert_eq!(
            ints(&batches, 0),
            want.iter().map(|i| i % 7).collect::<Vec<_>>()
        );
        let names = batches[0]
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!(names.value(0), "n1");
        assert!(matches!(stream.next_step(deleted.equality), Step::End));
    }

    #[test]
    fn a_selection_streams_the_positions_of_the_live_rows_it_selects() {
        let path = write("select.parquet", 2500);
        let fields = vec![
            Field::new("c", DataType::Int64, true),
            Field::new("i", DataType::Int64, true),
            Field::new("_pos", DataType::Int64, false),
        ];
        let text = r#"{"type": "and",
            "left": {"type": "eq", "term": {"id": 3, "path": ["c"], "type": "long"}, "value": 3},
            "right": {"type": "lt", "term": {"id": 1, "path": ["i"], "type": "long"}, "value": 2000}}"#;
        let types: Vec<DataType> = fields[..2].iter().map(|f| f.data_type().clone()).collect();
        let filter = RowFilter::compile(&crate::expr::parse(text).unwrap(), &[3, 1], &types);
        let p = Projection {
            selection: Some(Selection::Filter(Arc::new(filter.unwrap()))),
            ..projection(&[3, 1], fields, true)
        };
        let gone = [3u64, 10, 300, 1984];
        let bitmap = PositionBitmap::from_positions(gone).unwrap();
        let deleted: Deletes<'_> = Some(&bitmap).into();
        let req = FileRequest { path, rows: 2500 };
        let mut stream = FileStream::open(&req, None, &deleted, p, Some(2))
            .unwrap()
            .expect("streamed");
        let (batches, ended) = drain(&mut stream, &deleted);
        assert!(ended);
        assert!(batches.iter().all(|b| b.num_columns() == 1));
        let want: Vec<i64> = (0..2000)
            .filter(|i| i % 7 == 3 && !gone.contains(&(*i as u64)))
            .collect();
        assert_eq!(ints(&batches, 0), want);
    }

    #[test]
    fn a_split_reads_its_row_groups_with_file_positions() {
        let path = write("split.parquet", 3500);
        let meta = metadata_of(&path);
        let start = |g: usize| {
            let c = meta.row_group(g).column(0);
            c.dictionary_page_offset()
                .unwrap_or(c.data_page_offset())
                .min(c.data_page_offset()) as u64
        };
        // the second and third row groups: positions 1000..3000
        let range = (start(1), start(3) - start(1));
        let p = projection(
            &[1],
            vec![
                Field::new("i", DataType::Int64, true),
                Field::new("_pos", DataType::Int64, false),
            ],
            true,
        );
        let req = FileRequest { path, rows: 3500 };
        let none = Deletes::default();
        let mut stream = FileStream::open(&req, Some(range), &none, p.clone(), None)
            .unwrap()
            .unwrap();
        let (batches, ended) = drain(&mut stream, &none);
        assert!(ended);
        assert_eq!(ints(&batches, 0), (1000..3000).collect::<Vec<i64>>());
        assert_eq!(ints(&batches, 1), (1000..3000).collect::<Vec<i64>>());
        // a count: no column, only rows
        let count = projection(&[], Vec::new(), false);
        let mut stream = FileStream::open(&req, None, &none, count, None)
            .unwrap()
            .unwrap();
        let (batches, ended) = drain(&mut stream, &none);
        assert!(ended);
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 3500);
    }

    #[test]
    fn refusals_and_damage() {
        let path = write("damage.parquet", 3000);
        let p = projection(&[1], vec![Field::new("i", DataType::Int64, true)], false);
        let none = Deletes::default();
        let req = |rows| FileRequest {
            path: path.clone(),
            rows,
        };
        // a wrong row count or a column of another type: refused at open
        assert!(FileStream::open(&req(2999), None, &none, p.clone(), None)
            .unwrap()
            .is_none());
        let typed = projection(&[2], vec![Field::new("s", DataType::Int64, true)], false);
        assert!(FileStream::open(&req(3000), None, &none, typed, None)
            .unwrap()
            .is_none());
        // a page damaged after the stream was opened: the batches before it, then Failed
        let mut stream = FileStream::open(&req(3000), None, &none, p, None)
            .unwrap()
            .unwrap();
        let first = match stream.next_step(None) {
            Step::Batch(b) => b,
            other => panic!("{other:?}"),
        };
        assert_eq!(first.num_rows(), 300);
        let bytes = std::fs::read(&path).unwrap();
        let mut broken = bytes.clone();
        // zero the pages of the column in the last row group
        let meta = metadata_of(&path);
        let at = meta.row_group(2).column(0).data_page_offset() as usize;
        broken[at..at + 64].fill(0);
        std::fs::write(&path, &broken).unwrap();
        let (rest, ended) = drain(&mut stream, &none);
        assert!(!ended, "damage must not end cleanly");
        assert!(rest.iter().map(|b| b.num_rows()).sum::<usize>() < 2700);
        assert!(matches!(stream.next_step(None), Step::End));
        std::fs::write(&path, &bytes).unwrap();
    }

    #[test]
    fn a_damaged_page_count_is_refused_before_any_batch() {
        // the count of the last row group's first page one more: its values would shift
        let path = write("count.parquet", 3000);
        let bytes = std::fs::read(&path).unwrap();
        let meta = metadata_of(&path);
        let start = meta.row_group(2).column(0).data_page_offset() as usize;
        let at = crate::parquet_pages::tests::num_values_at(&bytes, start);
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x02; // the zigzag varint's value moves by one
        let path = path.replace("count.parquet", "count-damaged.parquet");
        std::fs::write(&path, &damaged).unwrap();
        let none = Deletes::default();
        let request = FileRequest {
            path: path.clone(),
            rows: 3000,
        };
        let int = |id: i32| projection(&[id], vec![Field::new("i", DataType::Int64, true)], false);
        assert!(FileStream::open(&request, None, &none, int(1), None)
            .unwrap()
            .is_none());
        // a column the damage does not touch, or a split without that row group, streams
        let mut stream = FileStream::open(&request, None, &none, int(3), None)
            .unwrap()
            .unwrap();
        let (batches, ended) = drain(&mut stream, &none);
        assert!(ended);
        assert_eq!(
            ints(&batches, 0),
            (0..3000).map(|i| i % 7).collect::<Vec<_>>()
        );
        let first_two = meta
            .row_group(2)
            .column(0)
            .dictionary_page_offset()
            .unwrap_or(0) as u64;
        let mut split = FileStream::open(&request, Some((0, first_two)), &none, int(1), None)
            .unwrap()
            .unwrap();
        let (batches, ended) = drain(&mut split, &none);
        assert!(ended);
        assert_eq!(ints(&batches, 0), (0..2000).collect::<Vec<_>>());
    }

    #[test]
    fn streams_dropped_early_or_read_at_once_do_not_wait_on_each_other() {
        let path = write("many.parquet", 4000);
        let none = Deletes::default();
        let req = FileRequest { path, rows: 4000 };
        let p = |batch_size| Projection {
            batch_size,
            ..projection(
                &[1, 2, 3],
                vec![
                    Field::new("i", DataType::Int64, true),
                    Field::new("s", DataType::Utf8, true),
                    Field::new("c", DataType::Int64, true),
                ],
                false,
            )
        };
        for threads in [Some(1), Some(2), Some(3)] {
            let mut early = FileStream::open(&req, None, &none, p(7), threads)
                .unwrap()
                .unwrap();
            assert!(matches!(early.next_step(None), Step::Batch(_)));
            drop(early);
        }
        let handles: Vec<_> = (0..4)
            .map(|k| {
                let req = req.clone();
                let p = p(100 + 37 * k);
                std::thread::spawn(move || {
                    let none = Deletes::default();
                    let mut s = FileStream::open(&req, None, &none, p, Some(2))
                        .unwrap()
                        .unwrap();
                    let (batches, ended) = drain(&mut s, &none);
                    assert!(ended);
                    ints(&batches, 0)
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), (0..4000).collect::<Vec<i64>>());
        }
    }
}
