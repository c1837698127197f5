//! String and binary columns stored with a small dictionary, read as Arrow dictionaries and
//! decoded in the pass that drops deleted rows.
//!
//! Decoded straight to strings, a dictionary column costs a copy of every row's value, deleted
//! rows included, and then a second copy of the kept ones when the deletes are dropped. Read as
//! a dictionary, the decoder only unpacks the keys; [`decode_dictionary`] then copies the values
//! of the kept rows alone, each with one wide move from a padded copy of the dictionary.
//!
//! Without deletes the crate's own decode of dictionary pages to strings is faster (one pass,
//! no keys kept), so only reads that drop deleted positions take this path. Only columns whose
//! every data page is dictionary-encoded (the footer's page-encoding
//! statistics say so) and whose dictionary pages are small take this path: a chunk that fell
//! back to plain pages would be hashed back into a dictionary by the decoder, and a large
//! dictionary would be copied for every batch.

use std::sync::Arc;

use arrow_array::{make_array, ArrayRef, BooleanArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::basic::Encoding;

use crate::deletes::compact::Compactor;
use crate::deletes::dictionary::{decodable, decode_dictionary, Rows};
use crate::deletes::mask::keep_mask_from_bitmap;
use crate::deletes::PositionBitmap;

/// A dictionary page larger than this (compressed, with its header) keeps its column plain.
const MAX_DICTIONARY_PAGE: i64 = 64 * 1024;

/// `meta` with the `roots` columns that qualify (see the module documentation) typed as
/// `Dictionary(Int32, _)`, or `None` when none does.
pub(crate) fn with_dictionaries(
    meta: &ArrowReaderMetadata,
    roots: &[usize],
) -> Option<ArrowReaderMetadata> {
    let schema = meta.schema();
    let descr = meta.parquet_schema();
    let metadata = meta.metadata();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut any = false;
    for &root in roots {
        let field = schema.fields().get(root)?;
        if !matches!(
            field.data_type(),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary
        ) {
            continue;
        }
        let leaves: Vec<usize> = (0..descr.num_columns())
            .filter(|&i| descr.get_column_root_idx(i) == root)
            .collect();
        let [leaf] = leaves[..] else { continue };
        let dictionary_everywhere = metadata.row_groups().iter().all(|rg| {
            let c = rg.column(leaf);
            let Some(dict) = c.dictionary_page_offset().filter(|d| *d > 0) else {
                return false;
            };
            let size = c.data_page_offset() - dict;
            (0..=MAX_DICTIONARY_PAGE).contains(&size)
                && c.page_encoding_stats_mask().is_some_and(|m| {
                    m.is_only(Encoding::RLE_DICTIONARY) || m.is_only(Encoding::PLAIN_DICTIONARY)
                })
        });
        if dictionary_everywhere && metadata.num_row_groups() > 0 {
            let value = field.data_type().clone();
            fields[root] = field.as_ref().clone().with_data_type(DataType::Dictionary(
                Box::new(DataType::Int32),
                Box::new(value),
            ));
            any = true;
        }
    }
    if !any {
        return None;
    }
    let supplied = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let options = ArrowReaderOptions::new().with_schema(supplied);
    ArrowReaderMetadata::try_new(metadata.clone(), options).ok()
}

/// `columns`, `n` decoded rows from file position `base`, with dictionary columns decoded and,
/// when `positions` deletes some of those rows, only the kept rows of every column: then with
/// the keep-mask, for [`super::FilePlan::finish`] to know the deletes were applied.
pub(crate) fn keep_decoded(
    columns: Vec<ArrayRef>,
    n: usize,
    base: u64,
    positions: Option<&PositionBitmap>,
) -> Option<(Vec<ArrayRef>, Option<BooleanArray>)> {
    let keep = positions
        .map(|bitmap| keep_mask_from_bitmap(bitmap, base, n))
        .filter(|k| k.true_count() < n);
    let columns = keep_rows(columns, keep.as_ref())?;
    Some((columns, keep))
}

/// `columns` with dictionary columns decoded, only the rows of `keep` (without nulls) when
/// given.
pub(crate) fn keep_rows(
    columns: Vec<ArrayRef>,
    keep: Option<&BooleanArray>,
) -> Option<Vec<ArrayRef>> {
    let Some(keep) = keep else {
        return columns
            .into_iter()
            .map(|c| match decodable(c.data_type()) {
                true => decode_dictionary(&c.to_data(), Rows::All)
                    .ok()
                    .map(make_array),
                false => Some(c),
            })
            .collect();
    };
    let count = keep.true_count();
    let mut compactor = Compactor::new(keep, count).ok()?;
    columns
        .into_iter()
        .map(|c| {
            let data = c.to_data();
            drop(c); // the batch's reference: `data` may now be the only one
            let out = match decodable(data.data_type()) {
                true => decode_dictionary(&data, Rows::Masked(keep.values(), count)),
                false => compactor.column_owned(data),
            };
            out.ok().map(make_array)
        })
        .collect()
}
