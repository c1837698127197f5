//! Record batch readers whose zstd pages are inflated with one decompression context per
//! thread.
//!
//! The `parquet` crate gives every column chunk it reads a codec of its own, and its zstd codec
//! makes a compression and a decompression context when it is created: about 50 us on the
//! benchmark machine (each runs `cpuid`, which a virtual machine traps), more than inflating a
//! 200 KB page takes. A read of 480 small files of 5 columns made 2,400 of them, a fifth of its
//! CPU time. Here a zstd column chunk is handed to the crate's page reader as if it were
//! uncompressed (no codec is made), and its pages are inflated on the way out with a context
//! kept per thread. Page checksums are still verified by the crate, on the stored bytes. Other
//! codecs keep the crate's page reader as it is.

use std::cell::RefCell;
use std::sync::Arc;

use bytes::Bytes;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReader, RowGroups};
use parquet::arrow::{parquet_to_arrow_field_levels, ProjectionMask};
use parquet::basic::Compression;
use parquet::column::page::{Page, PageIterator, PageMetadata, PageReader};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData, RowGroupMetaData};
use parquet::file::page_index::offset_index::PageLocation;
use parquet::file::reader::ChunkReader;
use parquet::file::serialized_reader::SerializedPageReader;

thread_local! {
    static INFLATE: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Largest page a zstd frame may declare (the crate's writers and Arrow's cap pages far lower).
const MAX_PAGE_BYTES: u64 = 1 << 31;

/// The bytes of one zstd frame inflated, with this thread's context; the frame must declare its
/// size (every Parquet writer's does), and inflate to exactly that.
fn inflate(data: &[u8]) -> Result<Bytes> {
    if data.is_empty() {
        return Ok(Bytes::new()); // a page of no values
    }
    let size = match zstd::zstd_safe::get_frame_content_size(data) {
        Ok(Some(n)) if n <= MAX_PAGE_BYTES => n as usize,
        _ => return Err(ParquetError::General("zstd page of unknown size".into())),
    };
    let mut out = Vec::with_capacity(size);
    INFLATE.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(zstd::bulk::Decompressor::new()?);
        }
        let ctx = slot.as_mut().expect("made above");
        ctx.decompress_to_buffer(data, &mut out)
    })?;
    if out.len() != size {
        return Err(ParquetError::General(
            "zstd page shorter than it says".into(),
        ));
    }
    Ok(Bytes::from(out))
}

/// `page` as the crate would have given it with its codec: values inflated.
fn inflate_page(mut page: Page) -> Result<Page> {
    match &mut page {
        Page::DictionaryPage { buf, .. } | Page::DataPage { buf, .. } => *buf = inflate(buf)?,
        Page::DataPageV2 {
            buf,
            def_levels_byte_len,
            rep_levels_byte_len,
            is_compressed,
            ..
        } => {
            if *is_compressed {
                let levels =
                    (*def_levels_byte_len as usize).saturating_add(*rep_levels_byte_len as usize);
                if levels > buf.len() {
                    return Err(ParquetError::General("invalid page header".into()));
                }
                let values = inflate(&buf[levels..])?;
                let mut whole = Vec::with_capacity(levels + values.len());
                whole.extend_from_slice(&buf[..levels]);
                whole.extend_from_slice(&values);
                *buf = Bytes::from(whole);
                *is_compressed = false;
            }
        }
    }
    Ok(page)
}

/// A zstd column chunk's pages, read as stored by the crate and inflated here.
struct ZstdPages<R: ChunkReader> {
    inner: SerializedPageReader<R>,
}

impl<R: ChunkReader> Iterator for ZstdPages<R> {
    type Item = Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl<R: ChunkReader> PageReader for ZstdPages<R> {
    fn get_next_page(&mut self) -> Result<Option<Page>> {
        self.inner.get_next_page()?.map(inflate_page).transpose()
    }

    fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
        self.inner.peek_next_page()
    }

    fn skip_next_page(&mut self) -> Result<()> {
        self.inner.skip_next_page()
    }

    fn supports_deferred_dictionary(&self) -> bool {
        self.inner.supports_deferred_dictionary()
    }

    fn take_deferred_dictionary(&mut self) -> Result<Option<Page>> {
        self.inner
            .take_deferred_dictionary()?
            .map(inflate_page)
            .transpose()
    }

    fn at_record_boundary(&mut self) -> Result<bool> {
        self.inner.at_record_boundary()
    }
}

/// A column chunk's pages, checked to hold as many values as its metadata says.
///
/// Page headers carry no checksum: a damaged `num_values` makes the decoder take a value too
/// many (or too few) from the page, and every later value of the column moves to the next row,
/// with no error. The chunk's own count (in the footer, which is checked) settles it when its
/// last page has been read. A chunk whose pages were skipped (a row selection) is not counted.
struct CountedPages {
    inner: Box<dyn PageReader>,
    expected: i64,
    seen: i64,
    skipped: bool,
}

impl Iterator for CountedPages {
    type Item = Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl PageReader for CountedPages {
    fn get_next_page(&mut self) -> Result<Option<Page>> {
        let page = self.inner.get_next_page()?;
        match &page {
            Some(Page::DataPage { num_values, .. } | Page::DataPageV2 { num_values, .. }) => {
                self.seen += i64::from(*num_values);
            }
            Some(Page::DictionaryPage { .. }) => {}
            None if !self.skipped && self.seen != self.expected => {
                return Err(ParquetError::General(format!(
                    "column chunk pages hold {} values, its metadata says {}",
                    self.seen, self.expected
                )));
            }
            None => {}
        }
        Ok(page)
    }

    fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
        self.inner.peek_next_page()
    }

    fn skip_next_page(&mut self) -> Result<()> {
        self.skipped = true;
        self.inner.skip_next_page()
    }

    fn supports_deferred_dictionary(&self) -> bool {
        self.inner.supports_deferred_dictionary()
    }

    fn take_deferred_dictionary(&mut self) -> Result<Option<Page>> {
        self.inner.take_deferred_dictionary()
    }

    fn at_record_boundary(&mut self) -> Result<bool> {
        self.inner.at_record_boundary()
    }
}

/// Checks that the data pages of every column chunk of a file hold as many values as the
/// footer (`footer`, checked by `crate::parquet_footer` first) says, reading page headers
/// only: the check [`CountedPages`] makes while decoding, for the general reader, whose
/// decoders (pyarrow's) trust a page header's count. A damaged count is a `CorruptFile` error,
/// as is a header that cannot be read; a panic of the crate on such a header too.
pub fn check_page_counts<R: ChunkReader + 'static>(source: R, footer: &[u8]) -> crate::Result<()> {
    let source = Arc::new(source);
    let checked = crate::quiet_panic::catch_quietly(std::panic::AssertUnwindSafe(|| {
        count_pages(source, footer)
    }));
    match checked {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(crate::Error::CorruptFile(e.to_string())),
        Err(payload) => Err(crate::Error::CorruptFile(format!(
            "unreadable page header: {}",
            crate::quiet_panic::panic_text(payload.as_ref()).unwrap_or("no message")
        ))),
    }
}

fn count_pages<R: ChunkReader + 'static>(source: Arc<R>, footer: &[u8]) -> Result<()> {
    let metadata = parquet::file::metadata::ParquetMetaDataReader::decode_metadata(footer)?;
    let groups: Vec<usize> = (0..metadata.num_row_groups()).collect();
    count_chunk_pages(&source, &metadata, &groups, &ProjectionMask::all())
}

/// Whether the pages of the column chunks `mask` selects in row groups `groups` hold the values
/// the footer gives each chunk (see [`check_page_counts`]); `false` also when a page header
/// cannot be read (or the crate panics on one). For a stream that hands out batches before it
/// reaches the end of a chunk, where [`CountedPages`] would find a damaged count too late.
pub fn page_counts_match<R: ChunkReader + 'static>(
    source: &Arc<R>,
    metadata: &ParquetMetaData,
    groups: &[usize],
    mask: &ProjectionMask,
) -> bool {
    crate::quiet_panic::catch_quietly(std::panic::AssertUnwindSafe(|| {
        count_chunk_pages(source, metadata, groups, mask)
    }))
    .is_ok_and(|counted| counted.is_ok())
}

fn count_chunk_pages<R: ChunkReader + 'static>(
    source: &Arc<R>,
    metadata: &ParquetMetaData,
    groups: &[usize],
    mask: &ProjectionMask,
) -> Result<()> {
    for &g in groups {
        let rg = metadata.row_group(g);
        for (c, chunk) in rg.columns().iter().enumerate() {
            if !mask.leaf_included(c) {
                continue;
            }
            // page headers are read, no page is inflated (and no codec made)
            let rows = rg.num_rows().max(0) as usize;
            let mut pages = stored_pages(source.clone(), chunk, rows, None)?;
            let mut seen: i64 = 0;
            while let Some(page) = pages.peek_next_page()? {
                if !page.is_dict {
                    seen = seen.saturating_add(page.num_levels.map_or(0, |n| n as i64));
                }
                pages.skip_next_page()?;
            }
            if seen != chunk.num_values() {
                return Err(ParquetError::General(format!(
                    "the pages of row group {g}, column {c} hold {seen} values, the footer says {}",
                    chunk.num_values()
                )));
            }
        }
    }
    Ok(())
}

/// The pages of `chunk` as stored: the crate is told the chunk is uncompressed, so it hands out
/// page bytes without inflating them (page checksums are still verified on those bytes).
fn stored_pages<R: ChunkReader + 'static>(
    source: Arc<R>,
    chunk: &ColumnChunkMetaData,
    rows: usize,
    locations: Option<Vec<PageLocation>>,
) -> Result<SerializedPageReader<R>> {
    let stored = chunk
        .clone()
        .into_builder()
        .set_compression(Compression::UNCOMPRESSED)
        .build()?;
    SerializedPageReader::new(source, &stored, rows, locations)
}

/// The row groups `groups` of a file, their zstd chunks read through [`ZstdPages`].
struct Groups<R: ChunkReader> {
    source: Arc<R>,
    metadata: Arc<ParquetMetaData>,
    groups: Vec<usize>,
}

struct Chunks<R: ChunkReader> {
    source: Arc<R>,
    metadata: Arc<ParquetMetaData>,
    column: usize,
    groups: std::vec::IntoIter<usize>,
}

impl<R: ChunkReader + 'static> Chunks<R> {
    fn reader(&self, group: usize) -> Result<Box<dyn PageReader>> {
        let rg = self.metadata.row_group(group);
        let chunk = rg.column(self.column);
        let locations = self
            .metadata
            .page_index()
            .and_then(|index| index.page_locations(group, self.column).cloned());
        let rows = rg.num_rows() as usize;
        let inner: Box<dyn PageReader> = if matches!(chunk.compression(), Compression::ZSTD(_)) {
            let inner = stored_pages(self.source.clone(), chunk, rows, locations)?;
            Box::new(ZstdPages { inner })
        } else {
            Box::new(SerializedPageReader::new(
                self.source.clone(),
                chunk,
                rows,
                locations,
            )?)
        };
        Ok(Box::new(CountedPages {
            inner,
            expected: chunk.num_values(),
            seen: 0,
            skipped: false,
        }))
    }
}

impl<R: ChunkReader + 'static> Iterator for Chunks<R> {
    type Item = Result<Box<dyn PageReader>>;

    fn next(&mut self) -> Option<Self::Item> {
        let group = self.groups.next()?;
        Some(self.reader(group))
    }
}

impl<R: ChunkReader + 'static> PageIterator for Chunks<R> {}

impl<R: ChunkReader + 'static> RowGroups for Groups<R> {
    fn num_rows(&self) -> usize {
        self.groups
            .iter()
            .map(|&g| self.metadata.row_group(g).num_rows() as usize)
            .sum()
    }

    fn column_chunks(&self, i: usize) -> Result<Box<dyn PageIterator>> {
        Ok(Box::new(Chunks {
            source: self.source.clone(),
            metadata: self.metadata.clone(),
            column: i,
            groups: self.groups.clone().into_iter(),
        }))
    }

    fn row_groups(&self) -> Box<dyn Iterator<Item = &RowGroupMetaData> + '_> {
        Box::new(self.groups.iter().map(|&g| self.metadata.row_group(g)))
    }

    fn metadata(&self) -> &ParquetMetaData {
        self.metadata.as_ref()
    }
}

/// A reader of the columns `mask` of `source`'s row groups `groups` (None: all), as
/// `ParquetRecordBatchReaderBuilder::new_with_metadata(source, meta)` with that projection,
/// those row groups and batch size builds it, its zstd pages inflated as above.
pub fn record_batches<R: ChunkReader + 'static>(
    source: R,
    meta: &ArrowReaderMetadata,
    mask: ProjectionMask,
    groups: Option<Vec<usize>>,
    batch_size: usize,
) -> Result<ParquetRecordBatchReader> {
    let metadata = meta.metadata().clone();
    let rows = metadata.file_metadata().num_rows().max(0) as usize;
    let groups = groups.unwrap_or_else(|| (0..metadata.num_row_groups()).collect());
    let levels =
        parquet_to_arrow_field_levels(meta.parquet_schema(), mask, Some(meta.schema().fields()))?;
    let row_groups = Groups {
        source: Arc::new(source),
        metadata,
        groups,
    };
    // as the crate's builder: no buffers sized beyond the file's rows
    let batch_size = batch_size.min(rows).max(1);
    ParquetRecordBatchReader::try_new_with_row_groups(&levels, &row_groups, batch_size, None)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
    use parquet::arrow::ArrowWriter;
    use parquet::basic::ZstdLevel;
    use parquet::file::properties::{WriterProperties, WriterVersion};

    fn file(compression: Compression, version: WriterVersion, dictionary: bool) -> Bytes {
        let n = 10_000i64;
        let ids: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..n).map(|i| (i % 7 != 0).then_some(i * 31)),
        ));
        let words: ArrayRef = Arc::new(StringArray::from_iter(
            (0..n).map(|i| (i % 5 != 0).then(|| format!("word-{}", i % 40))),
        ));
        let nulls: ArrayRef = Arc::new(Int64Array::from(vec![None::<i64>; n as usize]));
        let batch =
            RecordBatch::try_from_iter([("id", ids), ("w", words), ("none", nulls)]).unwrap();
        let props = WriterProperties::builder()
            .set_compression(compression)
            .set_writer_version(version)
            .set_dictionary_enabled(dictionary)
            .set_data_page_row_count_limit(1_000)
            .set_write_batch_size(500)
            .set_max_row_group_row_count(Some(4_000))
            .build();
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        Bytes::from(out)
    }

    fn read(data: &Bytes, mask: &[usize], groups: Option<Vec<usize>>) -> Vec<RecordBatch> {
        let meta = ArrowReaderMetadata::load(data, ArrowReaderOptions::new()).unwrap();
        let mask = ProjectionMask::roots(meta.parquet_schema(), mask.iter().copied());
        record_batches(data.clone(), &meta, mask, groups, 1_024)
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap()
    }

    fn crate_read(data: &Bytes, mask: &[usize], groups: Option<Vec<usize>>) -> Vec<RecordBatch> {
        let builder = ParquetRecordBatchReaderBuilder::try_new(data.clone()).unwrap();
        let mask = ProjectionMask::roots(builder.parquet_schema(), mask.iter().copied());
        let mut builder = builder.with_projection(mask).with_batch_size(1_024);
        if let Some(g) = groups {
            builder = builder.with_row_groups(g);
        }
        builder
            .build()
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn reads_as_the_crate_reads_with_every_page_kind() {
        for compression in [
            Compression::ZSTD(ZstdLevel::try_new(3).unwrap()),
            Compression::SNAPPY,
            Compression::UNCOMPRESSED,
        ] {
            for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
                for dictionary in [true, false] {
                    let data = file(compression, version, dictionary);
                    for (mask, groups) in [
                        (vec![0, 1, 2], None),
                        (vec![1], Some(vec![2, 0])),
                        (vec![2, 0], Some(vec![1])),
                    ] {
                        let ours = read(&data, &mask, groups.clone());
                        assert_eq!(ours, crate_read(&data, &mask, groups), "{compression:?}");
                    }
                }
            }
        }
    }

    /// Where the `num_values` varint of the data page header at `start` begins: after the
    /// header's i32 fields (type, sizes, crc), inside its data page header struct.
    pub(crate) fn num_values_at(data: &[u8], start: usize) -> usize {
        let mut pos = start;
        loop {
            let field = data[pos];
            pos += 1;
            if field & 0x0f == 0x0c {
                assert_eq!(
                    data[pos] & 0x0f,
                    0x05,
                    "num_values is the struct's first field"
                );
                return pos + 1;
            }
            assert_eq!(field & 0x0f, 0x05, "only i32 fields come before it");
            while data[pos] & 0x80 != 0 {
                pos += 1;
            }
            pos += 1;
        }
    }

    #[test]
    fn a_page_holding_more_or_fewer_values_than_its_chunk_is_an_error() {
        // row groups of 100 rows, one page each; levels bit-packed in runs of 8, so a page
        // header saying 101 leaves the decoder a padding level to take as the 101st value
        let n = 250i64;
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n));
        let some: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..n).map(|i| (i % 5 != 0).then_some(i % 7)),
        ));
        let batch = RecordBatch::try_from_iter([("id", ids), ("n", some)]).unwrap();
        let props = WriterProperties::builder()
            .set_compression(Compression::UNCOMPRESSED)
            .set_dictionary_enabled(false)
            .set_max_row_group_row_count(Some(100))
            .build();
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let data = Bytes::from(out);
        let meta = ArrowReaderMetadata::load(&data, ArrowReaderOptions::new()).unwrap();
        let tail = data.len() - 8;
        let footer_len = u32::from_le_bytes(data[tail..tail + 4].try_into().unwrap()) as usize;
        let footer = data.slice(tail - footer_len..tail);
        check_page_counts(data.clone(), &footer).unwrap();
        let start = meta.metadata().row_group(0).column(1).data_page_offset() as usize;
        let at = num_values_at(&data, start);
        assert_eq!(&data[at..at + 2], &[0xc8, 0x01]); // 100 values (zigzag 200)
        for low in [0xca_u8, 0xc6] {
            // 101 and 99
            let mut damaged = data.to_vec();
            damaged[at] = low;
            let damaged = Bytes::from(damaged);
            let mask = ProjectionMask::roots(meta.parquet_schema(), [0, 1]);
            let read = record_batches(damaged.clone(), &meta, mask, None, 1_024)
                .unwrap()
                .collect::<std::result::Result<Vec<_>, _>>();
            let err = read.expect_err("a shifted column").to_string();
            assert!(err.contains("metadata says 100"), "{err}");
            let err = check_page_counts(damaged, &footer).unwrap_err();
            assert!(err.to_string().contains("row group 0, column 1"), "{err}");
        }
    }

    #[test]
    fn damaged_zstd_pages_are_errors() {
        let frame = zstd::bulk::compress(b"some bytes of a page, some bytes of a page", 1).unwrap();
        assert_eq!(inflate(&frame).unwrap().len(), 42);
        assert!(inflate(&frame[..frame.len() - 3]).is_err()); // cut short
        assert!(inflate(&frame[4..]).is_err()); // no frame header
        let mut no_size = Vec::new();
        {
            let mut enc = zstd::stream::Encoder::new(&mut no_size, 1).unwrap();
            enc.include_contentsize(false).unwrap();
            std::io::Write::write_all(&mut enc, b"abc").unwrap();
            enc.finish().unwrap();
        }
        assert!(inflate(&no_size).is_err()); // a frame that does not say its size
        assert!(inflate(&[]).unwrap().is_empty()); // a page of no values
    }
}
