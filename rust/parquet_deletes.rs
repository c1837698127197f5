//! Position delete files naming one data file, decoded natively, many at once.
//!
//! The common v2 layout writes one position delete file per data file, and its manifest entry
//! names that data file (`referenced_data_file`). Reading such a file means proving from the
//! footer statistics that every row names the data file (no nulls, minimum and maximum of
//! `file_path` equal to it in every row group) and decoding `pos` alone. The Python reader
//! does this one file at a time under the GIL; [`read_position_files`] does it for a list of
//! files on the rayon pool. A file that does not fit (another layout, statistics that do not
//! prove the single target, missing columns, nulls, any damage) is reported as `None`, and the
//! caller reads it the general way, which raises the typed error when there is one.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use arrow_array::{Array, Int64Array};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::{ProjectionMask, PARQUET_FIELD_ID_META_KEY};
use parquet::file::metadata::ParquetMetaDataReader;
use parquet::file::reader::ChunkReader;
use rayon::prelude::*;

use crate::deletes::PositionBitmap;
use crate::parquet_footer::check_footer;
use crate::parquet_read::{open_parquet, Source};
use crate::quiet_panic::catch_quietly;
use crate::Result;

/// Field id of a position delete file's `file_path` column (the spec's reserved id).
pub const FILE_PATH_ID: i32 = 2147483546;
/// Field id of a position delete file's `pos` column.
pub const POS_ID: i32 = 2147483545;
const BATCH_ROWS: usize = 65536;

/// One position delete file, the data file its manifest entry says all its rows name, and
/// the rows the entry counts (`record_count`; `None` or 0 when not known).
#[derive(Debug, Clone)]
pub struct PositionFile {
    pub path: String,
    pub referenced: String,
    pub rows: Option<i64>,
}

/// The positions of each file in `files` (same order), or `None` for a file to read the
/// general way; decoded in parallel on `threads` threads (rayon's pool when `None`).
pub fn read_position_files(
    files: &[PositionFile],
    threads: Option<usize>,
) -> Result<Vec<Option<PositionBitmap>>> {
    crate::pool::install(threads, || {
        Ok(files
            .par_iter()
            .map(|f| {
                catch_quietly(AssertUnwindSafe(|| read_one(f)))
                    .ok()
                    .flatten()
            })
            .collect())
    })
}

fn read_one(file: &PositionFile) -> Option<PositionBitmap> {
    match open_parquet(&file.path)? {
        (Source::Whole(bytes), footer) => positions(bytes, &footer, file),
        (Source::Part(f), footer) => positions(f, &footer, file),
    }
}

fn positions<T: ChunkReader + 'static>(
    reader: T,
    footer: &[u8],
    file: &PositionFile,
) -> Option<PositionBitmap> {
    let referenced = file.referenced.as_str();
    check_footer(footer).ok()?;
    let metadata = ParquetMetaDataReader::decode_metadata(footer).ok()?;
    let num_rows = metadata.file_metadata().num_rows();
    if metadata.num_row_groups() == 0 {
        return None;
    }
    // rows other than the manifest entry counts: the general reader names the damage
    if matches!(file.rows, Some(rows) if rows > 0 && rows != num_rows) {
        return None;
    }
    let meta = ArrowReaderMetadata::try_new(Arc::new(metadata), ArrowReaderOptions::new()).ok()?;
    let root_of = |id: i32| {
        let mut hits = meta.schema().fields().iter().enumerate().filter(|(_, f)| {
            f.metadata()
                .get(PARQUET_FIELD_ID_META_KEY)
                .map(|v| v.as_str())
                == Some(id.to_string().as_str())
        });
        let (root, _) = hits.next()?;
        hits.next().is_none().then_some(root)
    };
    let path_root = root_of(FILE_PATH_ID)?;
    let pos_root = root_of(POS_ID)?;
    // the leaf of `file_path` (a top-level primitive: exactly one leaf under its root)
    let descr = meta.parquet_schema();
    let mut leaves =
        (0..descr.num_columns()).filter(|&i| descr.get_column_root_idx(i) == path_root);
    let leaf = leaves.next()?;
    if leaves.next().is_some() {
        return None;
    }
    for rg in meta.metadata().row_groups() {
        let st = rg.column(leaf).statistics()?;
        if st.null_count_opt() != Some(0)
            || st.min_bytes_opt()? != referenced.as_bytes()
            || st.max_bytes_opt()? != referenced.as_bytes()
        {
            return None;
        }
    }
    let mask = ProjectionMask::roots(descr, [pos_root]);
    let batches = ParquetRecordBatchReaderBuilder::new_with_metadata(reader, meta)
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .ok()?;
    let mut values: Vec<i64> = Vec::with_capacity(num_rows.max(0) as usize);
    for batch in batches {
        let batch = batch.ok()?;
        let col = batch.column(0).as_any().downcast_ref::<Int64Array>()?;
        if col.null_count() != 0 {
            return None;
        }
        values.extend_from_slice(col.values());
    }
    // a damaged page header could make the decoder stop early without an error
    if values.len() as i64 != num_rows {
        return None;
    }
    PositionBitmap::from_i64(&values).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::{EnabledStatistics, WriterProperties};
    use std::collections::HashMap;
    use std::fs::File;

    fn field(name: &str, t: DataType, id: i32) -> Field {
        Field::new(name, t, false).with_metadata(HashMap::from([(
            PARQUET_FIELD_ID_META_KEY.to_string(),
            id.to_string(),
        )]))
    }

    fn write(path: &std::path::Path, targets: &[&str], pos: &[i64], stats: bool) {
        let schema = Arc::new(Schema::new(vec![
            field("file_path", DataType::Utf8, FILE_PATH_ID),
            field("pos", DataType::Int64, POS_ID),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from_iter_values(targets.iter().copied())),
                Arc::new(Int64Array::from(pos.to_vec())),
            ],
        )
        .unwrap();
        let level = if stats {
            EnabledStatistics::Chunk
        } else {
            EnabledStatistics::None
        };
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(3))
            .set_statistics_enabled(level)
            .build();
        let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema, Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    #[test]
    fn single_target_files_decode_and_others_are_left() {
        let dir = std::env::temp_dir().join(format!("icefloe-pd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let one = dir.join("one.parquet");
        write(&one, &["d.parquet"; 7], &[9, 1, 4, 4, 100, 0, 70000], true);
        let two = dir.join("two.parquet");
        write(
            &two,
            &["d.parquet", "d.parquet", "e.parquet"],
            &[1, 2, 3],
            true,
        );
        let bare = dir.join("bare.parquet");
        write(&bare, &["d.parquet"; 3], &[1, 2, 3], false);
        let negative = dir.join("neg.parquet");
        write(&negative, &["d.parquet"; 2], &[1, -2], true);
        let counted = |p: &std::path::Path, r: &str, rows: Option<i64>| PositionFile {
            path: p.to_string_lossy().into_owned(),
            referenced: r.to_string(),
            rows,
        };
        let req = |p: &std::path::Path, r: &str| counted(p, r, None);
        let out = read_position_files(
            &[
                req(&one, "d.parquet"),
                counted(&one, "d.parquet", Some(7)),
                counted(&one, "d.parquet", Some(0)),
                // the manifest entry counts other rows: left to the general reader
                counted(&one, "d.parquet", Some(6)),
                req(&one, "x.parquet"),
                req(&two, "d.parquet"),
                req(&bare, "d.parquet"),
                req(&negative, "d.parquet"),
                req(&dir.join("missing.parquet"), "d.parquet"),
            ],
            Some(2),
        )
        .unwrap();
        let got = out[0].as_ref().expect("decoded");
        assert_eq!(got.cardinality(), 6);
        assert!(got.contains(70000) && got.contains(4) && !got.contains(2));
        assert!(out[1].is_some() && out[2].is_some());
        assert!(out[3..].iter().all(|o| o.is_none()));
        std::fs::remove_dir_all(dir).ok();
    }
}
