//! Keep-masks: for the rows `[start, start + len)` of a data file, `true` where the row survives.

use arrow_array::{Array, BooleanArray, RecordBatch};
use arrow_buffer::{BooleanBuffer, MutableBuffer};
use arrow_select::filter::filter_record_batch;

use super::compact::compact_batch;
use super::roaring::PositionBitmap;
use crate::{Error, Result};

fn all_true(len: usize) -> MutableBuffer {
    let mut buf = MutableBuffer::from_len_zeroed(len.div_ceil(8));
    buf.as_slice_mut().fill(0xff);
    buf
}

#[inline]
fn clear(bits: &mut [u8], i: usize) {
    bits[i >> 3] &= !(1u8 << (i & 7));
}

fn finish(buf: MutableBuffer, len: usize) -> BooleanArray {
    BooleanArray::new(BooleanBuffer::new(buf.into(), 0, len), None)
}

/// The keep-mask of rows `[start, start + len)` given the deleted positions in `bitmap`.
pub fn keep_mask_from_bitmap(bitmap: &PositionBitmap, start: u64, len: usize) -> BooleanArray {
    let mut buf = all_true(len);
    let bits = buf.as_slice_mut();
    let end = start.saturating_add(len as u64);
    bitmap.for_each_in_range(start, end, |i| clear(bits, i as usize));
    finish(buf, len)
}

/// The keep-mask of rows `[start, start + len)` given deleted positions sorted ascending
/// (duplicates allowed). Unsorted input is rejected, since it would silently keep rows.
pub fn keep_mask_from_sorted(positions: &[i64], start: u64, len: usize) -> Result<BooleanArray> {
    if let Some(w) = positions.windows(2).find(|w| w[1] < w[0]) {
        return Err(Error::validation(format!(
            "delete positions must be sorted ascending: {} follows {}",
            w[1], w[0]
        )));
    }
    let mut buf = all_true(len);
    let bits = buf.as_slice_mut();
    let end = start.saturating_add(len as u64);
    let from = positions.partition_point(|&p| p < 0 || (p as u64) < start);
    for &p in &positions[from..] {
        let p = p as u64;
        if p >= end {
            break;
        }
        clear(bits, (p - start) as usize);
    }
    Ok(finish(buf, len))
}

/// The rows of `batch` where `keep` is true, every column filtered in one pass (the
/// selection is analysed once and shared by all columns). A mask of all-true returns the
/// batch unchanged (no copy).
pub fn apply_keep_mask(batch: RecordBatch, keep: &BooleanArray) -> Result<RecordBatch> {
    if keep.len() != batch.num_rows() {
        return Err(Error::validation(format!(
            "keep-mask has {} entries for a batch of {} rows",
            keep.len(),
            batch.num_rows()
        )));
    }
    if keep.null_count() == 0 {
        let count = keep.true_count();
        if count == keep.len() {
            return Ok(batch);
        }
        // Word-by-word compaction costs the same at any density; arrow-select's filter is
        // cheaper when few rows survive.
        if count >= keep.len() / 2 {
            return compact_batch(batch, keep, count);
        }
    }
    filter_record_batch(&batch, keep)
        .map_err(|e| Error::internal(format!("cannot apply keep-mask: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_agree() {
        let pos: Vec<i64> = vec![0, 3, 8, 9, 64, 65, 1 << 33];
        let bm = PositionBitmap::from_i64(&pos).unwrap();
        for (start, len) in [
            (0u64, 100usize),
            (3, 7),
            (9, 0),
            (60, 10),
            ((1 << 33) - 2, 5),
        ] {
            let a = keep_mask_from_bitmap(&bm, start, len);
            let b = keep_mask_from_sorted(&pos, start, len).unwrap();
            assert_eq!(a, b);
            for i in 0..len {
                let deleted = pos.contains(&((start + i as u64) as i64));
                assert_eq!(a.value(i), !deleted, "start {start} row {i}");
            }
        }
        assert!(keep_mask_from_sorted(&[3, 1], 0, 4).is_err());
    }

    #[test]
    fn apply_keep_mask_filters_every_column() {
        use std::sync::Arc;

        use arrow_array::{ArrayRef, Int64Array, StringArray};

        let ids: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3, 4]));
        let names: ArrayRef = Arc::new(StringArray::from(vec![
            Some("a"),
            None,
            Some("c"),
            Some("d"),
        ]));
        let batch = RecordBatch::try_from_iter([("id", ids), ("s", names)]).unwrap();
        let keep = BooleanArray::from(vec![true, false, true, false]);
        let out = apply_keep_mask(batch.clone(), &keep).unwrap();
        assert_eq!(out.num_rows(), 2);
        assert_eq!(
            out.column(0).as_ref(),
            &Int64Array::from(vec![1, 3]) as &dyn Array
        );
        assert_eq!(
            out.column(1).as_ref(),
            &StringArray::from(vec!["a", "c"]) as &dyn Array
        );
        let all = BooleanArray::from(vec![true; 4]);
        assert_eq!(apply_keep_mask(batch.clone(), &all).unwrap(), batch);
        assert!(apply_keep_mask(batch, &BooleanArray::from(vec![true])).is_err());
    }
}
