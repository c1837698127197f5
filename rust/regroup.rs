//! Rows of a table regrouped: scattered into groups by a key, or gathered by index.
//!
//! A partitioned write regroups its rows by partition. pyarrow's `take` of the sorted row
//! numbers runs on one thread, copies each string with its own `memcpy`, and reads the source
//! once per group (each group's rows are spread over all of it): regrouping a million rows of
//! a 60-column table took it about two seconds.
//!
//! [`group_by_key`] and [`scatter_columns`] instead read every column once, in order, and
//! write each row to the next slot of its group: one pass over the source and as many write
//! streams as groups. The result is the same as taking the rows in the order of a stable sort
//! by key. Columns are scattered in parallel; types without a scatter of their own (nested
//! ones, dictionaries) are gathered with the permutation by `arrow_select`'s `take`.
//!
//! [`take_pieces`] gathers rows by index (a write sorted by the table's sort order), the index
//! list cut into pieces taken in parallel, which become the chunks of each column.
//!
//! Strings and binaries of at most [`SHORT`] bytes are copied with one 16-byte move when the
//! source has 16 readable bytes from the value's start (all but the last few values of a
//! buffer); longer ones, and those near the end, use `copy_from_slice`.

use arrow_array::cast::AsArray;
use arrow_array::types::{BinaryType, ByteArrayType, LargeBinaryType, LargeUtf8Type, Utf8Type};
use arrow_array::{make_array, Array, ArrayRef, GenericByteArray, UInt64Array};
use arrow_buffer::bit_util::{get_bit, set_bit};
use arrow_buffer::{ArrowNativeType, Buffer, MutableBuffer, NullBuffer, OffsetBuffer};
use arrow_data::ArrayData;
use arrow_schema::DataType;
use rayon::prelude::*;
use std::sync::Arc;

use crate::{Error, Result};

/// Values up to this long are copied with one unaligned 16-byte move.
const SHORT: usize = 16;

/// Rows per piece below which a column is not split further.
const MIN_PIECE_ROWS: usize = 16 * 1024;

/// The rows `indices` of each of `columns` (all of one length), as `pieces` consecutive chunks
/// per column (fewer when there are few indices), gathered on up to `threads` threads of the
/// shared pool (`None`: its default). An index out of range is an error.
pub fn take_pieces(
    columns: &[ArrayRef],
    indices: &UInt64Array,
    pieces: usize,
    threads: Option<usize>,
) -> Result<Vec<Vec<ArrayRef>>> {
    let rows = columns.first().map_or(0, |c| c.len());
    if let Some(c) = columns.iter().find(|c| c.len() != rows) {
        return Err(Error::validation(format!(
            "columns differ in length: {} and {rows} rows",
            c.len()
        )));
    }
    if indices.null_count() > 0 {
        return Err(Error::validation("take indices must not contain nulls"));
    }
    if let Some(&bad) = indices.values().iter().find(|&&i| i as usize >= rows) {
        return Err(Error::validation(format!(
            "take index {bad} is out of range for {rows} rows"
        )));
    }
    let n = indices.len();
    let pieces = pieces.clamp(1, n.div_ceil(MIN_PIECE_ROWS).max(1));
    let step = n.div_ceil(pieces).max(1);
    let ranges: Vec<(usize, usize)> = (0..n).step_by(step).map(|s| (s, step.min(n - s))).collect();
    let ranges = if ranges.is_empty() {
        vec![(0, 0)]
    } else {
        ranges
    };
    // One job per (column, piece): long string columns and short numeric ones balance out.
    let jobs: Vec<(usize, usize)> = (0..columns.len())
        .flat_map(|c| (0..ranges.len()).map(move |p| (c, p)))
        .collect();
    let taken: Vec<ArrayRef> = crate::pool::install(threads, || {
        jobs.par_iter()
            .map(|&(c, p)| {
                let (start, len) = ranges[p];
                take_column(&columns[c], &indices.values()[start..start + len])
            })
            .collect::<Result<Vec<_>>>()
    })?;
    let mut out: Vec<Vec<ArrayRef>> = (0..columns.len())
        .map(|_| Vec::with_capacity(ranges.len()))
        .collect();
    for ((c, _), arr) in jobs.iter().zip(taken) {
        out[*c].push(arr);
    }
    Ok(out)
}

/// Rows regrouped by key: where each source row goes, and the groups in key order.
pub struct Grouping {
    /// The destination row of each source row.
    dest: Vec<u32>,
    /// The group (index into `groups`) of each source row.
    group_of: Vec<u32>,
    /// `(first source row, rows)` of each key present, in ascending key order.
    pub groups: Vec<(usize, usize)>,
}

/// Keys may exceed the row count by this much (a counting array of that size is allocated).
const MAX_KEY_SLACK: usize = 1 << 20;

/// The grouping of rows by `keys` (non-negative, below the row count plus [`MAX_KEY_SLACK`]):
/// groups in ascending key order, rows in their order within each.
pub fn group_by_key(keys: &[i64]) -> Result<Grouping> {
    let n = keys.len();
    if n >= u32::MAX as usize {
        return Err(Error::validation(format!(
            "{n} rows are too many to regroup at once"
        )));
    }
    let mut width = 0usize;
    for &k in keys {
        if k < 0 || k as u64 >= (n + MAX_KEY_SLACK) as u64 {
            return Err(Error::validation(format!(
                "group key {k} is out of range for {n} rows"
            )));
        }
        width = width.max(k as usize + 1);
    }
    let mut counts = vec![0u32; width];
    let mut firsts = vec![0u32; width];
    for (r, &k) in keys.iter().enumerate() {
        let c = &mut counts[k as usize];
        if *c == 0 {
            firsts[k as usize] = r as u32;
        }
        *c += 1;
    }
    let mut cursor = vec![0u32; width];
    let mut index = vec![0u32; width];
    let mut groups = Vec::new();
    let mut at = 0u32;
    for k in 0..width {
        cursor[k] = at;
        if counts[k] > 0 {
            index[k] = groups.len() as u32;
            groups.push((firsts[k] as usize, counts[k] as usize));
            at += counts[k];
        }
    }
    let mut dest = Vec::with_capacity(n);
    let mut group_of = Vec::with_capacity(n);
    for &k in keys {
        let c = &mut cursor[k as usize];
        dest.push(*c);
        group_of.push(index[k as usize]);
        *c += 1;
    }
    Ok(Grouping {
        dest,
        group_of,
        groups,
    })
}

impl Grouping {
    /// The source row of each destination row (the indices a `take` would need).
    pub fn permutation(&self) -> UInt64Array {
        let mut perm = vec![0u64; self.dest.len()];
        for (r, &d) in self.dest.iter().enumerate() {
            perm[d as usize] = r as u64;
        }
        UInt64Array::from(perm)
    }
}

/// Whether [`scatter_columns`] scatters columns of type `dt` itself (others are gathered with
/// the permutation).
fn scatters(dt: &DataType) -> bool {
    dt.primitive_width().is_some()
        || matches!(
            dt,
            DataType::Boolean
                | DataType::FixedSizeBinary(_)
                | DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Binary
                | DataType::LargeBinary
        )
}

/// `columns` (of the grouping's length) regrouped by `grouping`, on up to `threads` threads of
/// the shared pool (`None`: its default).
pub fn scatter_columns(
    columns: &[ArrayRef],
    grouping: &Grouping,
    threads: Option<usize>,
) -> Result<Vec<ArrayRef>> {
    let n = grouping.dest.len();
    if let Some(c) = columns.iter().find(|c| c.len() != n) {
        return Err(Error::validation(format!(
            "a column of {} rows cannot be regrouped by {n} keys",
            c.len()
        )));
    }
    let perm = columns
        .iter()
        .any(|c| !scatters(c.data_type()))
        .then(|| grouping.permutation());
    crate::pool::install(threads, || {
        columns
            .par_iter()
            .map(|c| scatter_column(c, grouping, perm.as_ref()))
            .collect()
    })
}

fn scatter_column(
    col: &ArrayRef,
    grouping: &Grouping,
    perm: Option<&UInt64Array>,
) -> Result<ArrayRef> {
    let dest = &grouping.dest[..];
    let dt = col.data_type();
    let width = match dt {
        DataType::FixedSizeBinary(w) => Some(*w as usize),
        _ => dt.primitive_width(),
    };
    if let Some(w) = width {
        return scatter_fixed(&col.to_data(), w, dest);
    }
    match dt {
        DataType::Boolean => scatter_booleans(&col.to_data(), dest),
        DataType::Utf8 => Ok(Arc::new(scatter_bytes::<Utf8Type>(
            col.as_bytes(),
            grouping,
        ))),
        DataType::LargeUtf8 => Ok(Arc::new(scatter_bytes::<LargeUtf8Type>(
            col.as_bytes(),
            grouping,
        ))),
        DataType::Binary => Ok(Arc::new(scatter_bytes::<BinaryType>(
            col.as_bytes(),
            grouping,
        ))),
        DataType::LargeBinary => Ok(Arc::new(scatter_bytes::<LargeBinaryType>(
            col.as_bytes(),
            grouping,
        ))),
        _ => {
            let perm =
                perm.ok_or_else(|| Error::internal("no permutation for a gathered column"))?;
            arrow_select::take::take(col.as_ref(), perm, None)
                .map_err(|e| Error::internal(format!("take of a {dt} column: {e}")))
        }
    }
}

/// The validity of a column regrouped (None when every row is valid).
fn scatter_nulls(nulls: Option<&NullBuffer>, dest: &[u32]) -> Option<NullBuffer> {
    let nulls = nulls.filter(|n| n.null_count() > 0)?;
    let mut bits = MutableBuffer::from_len_zeroed(dest.len().div_ceil(8));
    let out = bits.as_slice_mut();
    for (r, &d) in dest.iter().enumerate() {
        if nulls.is_valid(r) {
            set_bit(out, d as usize);
        }
    }
    Some(NullBuffer::new(arrow_buffer::BooleanBuffer::new(
        bits.into(),
        0,
        dest.len(),
    )))
}

fn scatter_fixed_width<const W: usize>(src: &[u8], dst: &mut [u8], dest: &[u32]) {
    for (value, &d) in src.chunks_exact(W).zip(dest) {
        let d = d as usize * W;
        dst[d..d + W].copy_from_slice(value);
    }
}

/// A column of `w`-byte values regrouped.
fn scatter_fixed(data: &ArrayData, w: usize, dest: &[u32]) -> Result<ArrayRef> {
    let n = dest.len();
    let start = data.offset() * w;
    let src = &data.buffers()[0].as_slice()[start..start + n * w];
    let mut values = MutableBuffer::from_len_zeroed(n * w);
    let dst = values.as_slice_mut();
    match w {
        1 => scatter_fixed_width::<1>(src, dst, dest),
        2 => scatter_fixed_width::<2>(src, dst, dest),
        4 => scatter_fixed_width::<4>(src, dst, dest),
        8 => scatter_fixed_width::<8>(src, dst, dest),
        16 => scatter_fixed_width::<16>(src, dst, dest),
        _ => {
            for (value, &d) in src.chunks_exact(w.max(1)).zip(dest) {
                let d = d as usize * w;
                dst[d..d + w].copy_from_slice(value);
            }
        }
    }
    let builder = ArrayData::builder(data.data_type().clone())
        .len(n)
        .add_buffer(values.into())
        .nulls(scatter_nulls(data.nulls(), dest));
    // SAFETY: one buffer of `n` values of the type's width, and a validity bitmap of `n` bits:
    // the layout of the input's type, whose values are moved, never made.
    Ok(make_array(unsafe { builder.build_unchecked() }))
}

/// A boolean column regrouped.
fn scatter_booleans(data: &ArrayData, dest: &[u32]) -> Result<ArrayRef> {
    let n = dest.len();
    let src = data.buffers()[0].as_slice();
    let mut bits = MutableBuffer::from_len_zeroed(n.div_ceil(8));
    let out = bits.as_slice_mut();
    for (r, &d) in dest.iter().enumerate() {
        if get_bit(src, data.offset() + r) {
            set_bit(out, d as usize);
        }
    }
    let builder = ArrayData::builder(DataType::Boolean)
        .len(n)
        .add_buffer(bits.into())
        .nulls(scatter_nulls(data.nulls(), dest));
    // SAFETY: a value bitmap and a validity bitmap of `n` bits each.
    Ok(make_array(unsafe { builder.build_unchecked() }))
}

/// A string or binary column regrouped: the lengths scattered, their running sum taken, then
/// each value copied to its slot. Values are written in source order, not in slot order: a
/// value's 16-byte store may spill past it only inside its own group, whose later slots are
/// written after it (rows keep their order within a group); never into the next group's bytes,
/// which may be written already.
fn scatter_bytes<T: ByteArrayType>(
    arr: &GenericByteArray<T>,
    grouping: &Grouping,
) -> GenericByteArray<T> {
    let dest = &grouping.dest[..];
    let n = dest.len();
    let offsets = arr.value_offsets();
    let values: &[u8] = arr.value_data();
    let nulls = arr.nulls().filter(|n| n.null_count() > 0);
    let mut lens = vec![0usize; n];
    for (r, &d) in dest.iter().enumerate() {
        if nulls.is_none_or(|m| m.is_valid(r)) {
            lens[d as usize] = (offsets[r + 1] - offsets[r]).as_usize();
        }
    }
    let mut out_offsets: Vec<T::Offset> = Vec::with_capacity(n + 1);
    out_offsets.push(T::Offset::usize_as(0));
    let mut total = 0usize;
    for len in lens {
        total += len;
        out_offsets.push(T::Offset::usize_as(total));
    }
    // the byte where each group's values end
    let mut ends = Vec::with_capacity(grouping.groups.len());
    let mut row = 0;
    for &(_, rows) in &grouping.groups {
        row += rows;
        ends.push(out_offsets[row].as_usize());
    }
    let mut data = MutableBuffer::from_len_zeroed(total + SHORT);
    let dst = data.as_slice_mut();
    for (r, (&d, &g)) in dest.iter().zip(&grouping.group_of).enumerate() {
        let at = out_offsets[d as usize].as_usize();
        let len = out_offsets[d as usize + 1].as_usize() - at;
        if len == 0 {
            continue;
        }
        copy_value(
            dst,
            at,
            values,
            offsets[r].as_usize(),
            len,
            ends[g as usize],
        );
    }
    data.truncate(total);
    // SAFETY: see `take_bytes`.
    unsafe {
        GenericByteArray::<T>::new_unchecked(
            OffsetBuffer::new_unchecked(out_offsets.into()),
            Buffer::from(data),
            scatter_nulls(nulls, dest),
        )
    }
}

/// Copies `len` bytes of `values` from `start` to `dst` at `at`, with one 16-byte move when
/// the source has 16 readable bytes and the move ends by `limit` in `dst` (whose bytes from the
/// value's end to `limit` are written later, or are slack).
#[inline]
fn copy_value(dst: &mut [u8], at: usize, values: &[u8], start: usize, len: usize, limit: usize) {
    if len <= SHORT && start + SHORT <= values.len() && at + SHORT <= limit {
        let chunk: &[u8; SHORT] = values[start..start + SHORT]
            .try_into()
            .expect("SHORT bytes");
        dst[at..at + SHORT].copy_from_slice(chunk);
    } else {
        dst[at..at + len].copy_from_slice(&values[start..start + len]);
    }
}

/// The rows `idx` (each checked to be in range) of `column`.
fn take_column(column: &ArrayRef, idx: &[u64]) -> Result<ArrayRef> {
    match column.data_type() {
        DataType::Utf8 => Ok(Arc::new(take_bytes::<Utf8Type>(column.as_bytes(), idx))),
        DataType::LargeUtf8 => Ok(Arc::new(take_bytes::<LargeUtf8Type>(
            column.as_bytes(),
            idx,
        ))),
        DataType::Binary => Ok(Arc::new(take_bytes::<BinaryType>(column.as_bytes(), idx))),
        DataType::LargeBinary => Ok(Arc::new(take_bytes::<LargeBinaryType>(
            column.as_bytes(),
            idx,
        ))),
        _ => {
            let indices = UInt64Array::from(idx.to_vec());
            arrow_select::take::take(column.as_ref(), &indices, None).map_err(|e| {
                Error::internal(format!("take of a {} column: {e}", column.data_type()))
            })
        }
    }
}

/// The values `idx` of a string or binary array (indices in range).
fn take_bytes<T: ByteArrayType>(arr: &GenericByteArray<T>, idx: &[u64]) -> GenericByteArray<T> {
    let offsets = arr.value_offsets();
    let values: &[u8] = arr.value_data();
    let nulls = arr.nulls();
    let mut out_offsets: Vec<T::Offset> = Vec::with_capacity(idx.len() + 1);
    out_offsets.push(T::Offset::usize_as(0));
    let mut total = 0usize;
    for &i in idx {
        let i = i as usize;
        let valid = nulls.is_none_or(|n| n.is_valid(i));
        if valid {
            total += (offsets[i + 1] - offsets[i]).as_usize();
        }
        out_offsets.push(T::Offset::usize_as(total));
    }
    // SHORT bytes of slack: a short value is written with one 16-byte store.
    let mut data = MutableBuffer::from_len_zeroed(total + SHORT);
    let dst = data.as_slice_mut();
    let mut at = 0usize;
    for (k, &i) in idx.iter().enumerate() {
        let len = (out_offsets[k + 1] - out_offsets[k]).as_usize();
        if len == 0 {
            continue;
        }
        // values are written in order: a move spills only onto slots written after it
        copy_value(
            dst,
            at,
            values,
            offsets[i as usize].as_usize(),
            len,
            usize::MAX,
        );
        at += len;
    }
    data.truncate(total);
    let out_nulls = nulls.and_then(|n| {
        let taken = NullBuffer::from_iter(idx.iter().map(|&i| n.is_valid(i as usize)));
        (taken.null_count() > 0).then_some(taken)
    });
    // SAFETY: offsets start at 0 and never decrease; the values between them are whole values
    // of a valid array of the same type (UTF-8 where the type says so), and null slots are
    // empty.
    unsafe {
        GenericByteArray::<T>::new_unchecked(
            OffsetBuffer::new_unchecked(out_offsets.into()),
            Buffer::from(data),
            out_nulls,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, LargeStringArray, StringArray, StructArray};
    use arrow_schema::Field;

    fn strings(n: usize) -> StringArray {
        (0..n)
            .map(|i| (i % 7 != 3).then(|| "x".repeat(i % 40) + &i.to_string()))
            .collect()
    }

    fn check(columns: Vec<ArrayRef>, idx: Vec<u64>, pieces: usize) {
        let indices = UInt64Array::from(idx.clone());
        let got = take_pieces(&columns, &indices, pieces, Some(2)).unwrap();
        for (col, chunks) in columns.iter().zip(&got) {
            let refs: Vec<&dyn Array> = chunks.iter().map(|a| a.as_ref()).collect();
            let whole = arrow_select::concat::concat(&refs).unwrap();
            let expected = arrow_select::take::take(col.as_ref(), &indices, None).unwrap();
            assert_eq!(whole.to_data(), expected.to_data());
            whole.to_data().validate_full().unwrap();
        }
    }

    #[test]
    fn matches_arrow_take_on_strings_and_other_types() {
        let n = 50_000;
        let s: ArrayRef = Arc::new(strings(n));
        let large: ArrayRef = Arc::new(LargeStringArray::from_iter(
            strings(n).iter().map(|v| v.map(str::to_owned)),
        ));
        let ints: ArrayRef = Arc::new(Int32Array::from_iter(
            (0..n as i32).map(|i| (i % 5 != 0).then_some(i)),
        ));
        let st: ArrayRef = Arc::new(StructArray::from(vec![
            (
                Arc::new(Field::new("a", DataType::Int32, true)),
                ints.clone(),
            ),
            (Arc::new(Field::new("b", DataType::Utf8, true)), s.clone()),
        ]));
        let idx: Vec<u64> = (0..n as u64).map(|i| (i * 7919) % n as u64).collect();
        check(vec![s.clone(), large, ints, st], idx, 3);
        // repeated rows, the last value of the buffer (no 16 readable bytes after it), a slice
        let sliced = s.slice(10, 1000);
        check(vec![sliced], vec![999, 0, 999, 5, 5], 2);
        check(vec![s], vec![], 4);
    }

    /// `columns` regrouped by `keys`, checked against a `take` of the stable sort by key.
    fn check_scatter(columns: Vec<ArrayRef>, keys: Vec<i64>) {
        let grouping = group_by_key(&keys).unwrap();
        let mut order: Vec<u64> = (0..keys.len() as u64).collect();
        order.sort_by_key(|&r| keys[r as usize]); // stable
        let indices = UInt64Array::from(order.clone());
        assert_eq!(grouping.permutation(), indices);
        let got = scatter_columns(&columns, &grouping, Some(2)).unwrap();
        for (col, out) in columns.iter().zip(&got) {
            let expected = arrow_select::take::take(col.as_ref(), &indices, None).unwrap();
            out.to_data().validate_full().unwrap();
            assert_eq!(out.to_data(), expected.to_data(), "{}", col.data_type());
        }
        let mut firsts: Vec<(i64, usize)> = Vec::new();
        for (r, &k) in keys.iter().enumerate() {
            if !firsts.iter().any(|(key, _)| *key == k) {
                firsts.push((k, r));
            }
        }
        firsts.sort();
        let counts = firsts
            .iter()
            .map(|(k, r)| (*r, keys.iter().filter(|&&x| x == *k).count()));
        assert_eq!(grouping.groups, counts.collect::<Vec<_>>());
    }

    #[test]
    fn scatter_matches_a_take_of_the_stable_sort() {
        let n = 20_000;
        let s: ArrayRef = Arc::new(strings(n));
        let large: ArrayRef = Arc::new(LargeStringArray::from_iter(
            strings(n).iter().map(|v| v.map(str::to_owned)),
        ));
        let ints: ArrayRef = Arc::new(Int32Array::from_iter(
            (0..n as i32).map(|i| (i % 5 != 0).then_some(i)),
        ));
        let bools: ArrayRef = Arc::new(arrow_array::BooleanArray::from_iter(
            (0..n).map(|i| (i % 9 != 0).then_some(i % 3 == 0)),
        ));
        let fixed: ArrayRef = Arc::new(
            arrow_array::FixedSizeBinaryArray::try_from_iter((0..n).map(|i| [i as u8; 3])).unwrap(),
        );
        let st: ArrayRef = Arc::new(StructArray::from(vec![
            (
                Arc::new(Field::new("a", DataType::Int32, true)),
                ints.clone(),
            ),
            (Arc::new(Field::new("b", DataType::Utf8, true)), s.clone()),
        ]));
        // short values at group ends (one-byte strings), keys with gaps, sliced columns
        let tiny: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| ["a", "bc", "", "defghijklmnopqrstuvwxyz"][i % 4]),
        ));
        let keys: Vec<i64> = (0..n as i64).map(|i| (i * 7919 % 13) * 3).collect();
        check_scatter(
            vec![
                s.clone(),
                large,
                ints.clone(),
                bools.clone(),
                fixed,
                st,
                tiny.clone(),
            ],
            keys.clone(),
        );
        let m = n - 100;
        check_scatter(
            vec![
                s.slice(100, m),
                ints.slice(100, m),
                bools.slice(100, m),
                tiny.slice(7, m),
            ],
            keys[..m].to_vec(),
        );
        check_scatter(vec![s.clone()], vec![0; n]);
        check_scatter(vec![s.slice(0, 0)], vec![]);
    }

    #[test]
    fn bad_group_keys_are_errors() {
        assert!(group_by_key(&[0, -1]).is_err());
        assert!(group_by_key(&[0, 1 << 40]).is_err());
        let grouping = group_by_key(&[0, 1]).unwrap();
        let s: ArrayRef = Arc::new(strings(3));
        assert!(scatter_columns(&[s], &grouping, None).is_err());
    }

    #[test]
    fn out_of_range_is_an_error() {
        let s: ArrayRef = Arc::new(strings(10));
        let err = take_pieces(&[s], &UInt64Array::from(vec![3, 10]), 1, None).unwrap_err();
        assert!(err.to_string().contains("out of range"), "{err}");
    }
}
