//! Dictionary columns of strings or binaries decoded to plain arrays, optionally keeping only
//! the rows of a keep-mask in the same pass.
//!
//! The reader asks Parquet for small-dictionary string columns as Arrow dictionaries (decoding
//! indices is cheaper than materialising strings) and decodes them after deleted rows are gone.
//! pyarrow's `dictionary_decode` is a generic `take` that calls `memcpy` per value: on short
//! strings it cost about a fifth of a whole read. Here each value is copied with one 8- or 16-byte
//! move from a padded copy of the dictionary (values longer than 16 bytes use `memcpy`), and
//! deleted rows are skipped while gathering, so their keys are never compacted.
//!
//! Keys are bounds-checked against the dictionary (a bad key is an error, never a read out of
//! bounds); keys under null slots are not read.

use arrow_array::{
    make_array, Array, ArrayRef, BooleanArray, OffsetSizeTrait, RecordBatch, RecordBatchOptions,
};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, Buffer, MutableBuffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Schema};
use std::sync::Arc;

use super::compact::{compact_bits_into, Compactor};
use crate::{Error, Result};

/// Bytes every value copy may write (and read) past its end.
const SLACK: usize = 16;

/// Whether [`decode_dictionary`] decodes columns of this type.
pub fn decodable(dt: &DataType) -> bool {
    match dt {
        DataType::Dictionary(key, value) => {
            key.is_dictionary_key_type()
                && matches!(
                    value.as_ref(),
                    DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary
                )
        }
        _ => false,
    }
}

/// The rows to keep: all of them, or those set in a mask (with how many are set).
#[derive(Clone, Copy)]
pub enum Rows<'a> {
    All,
    Masked(&'a BooleanBuffer, usize),
}

impl Rows<'_> {
    fn count(&self, n: usize) -> usize {
        match self {
            Rows::All => n,
            Rows::Masked(_, c) => *c,
        }
    }
}

/// `data`, a dictionary column accepted by [`decodable`], decoded to its value type with only
/// the kept `rows`.
pub fn decode_dictionary(data: &ArrayData, rows: Rows<'_>) -> Result<ArrayData> {
    let DataType::Dictionary(key, value) = data.data_type() else {
        return Err(Error::internal(format!(
            "cannot decode a {} column as a dictionary",
            data.data_type()
        )));
    };
    if let Rows::Masked(mask, count) = rows {
        // `count` sizes the output: a wrong one must be an error, not a write past the end.
        if mask.len() != data.len() || mask.count_set_bits() != count {
            return Err(Error::internal(
                "keep-mask and column differ in length, or the count is wrong",
            ));
        }
    }
    macro_rules! by_key {
        ($o:ty) => {
            match key.as_ref() {
                DataType::Int8 => decode::<i8, $o>(data, value, rows),
                DataType::Int16 => decode::<i16, $o>(data, value, rows),
                DataType::Int32 => decode::<i32, $o>(data, value, rows),
                DataType::Int64 => decode::<i64, $o>(data, value, rows),
                DataType::UInt8 => decode::<u8, $o>(data, value, rows),
                DataType::UInt16 => decode::<u16, $o>(data, value, rows),
                DataType::UInt32 => decode::<u32, $o>(data, value, rows),
                DataType::UInt64 => decode::<u64, $o>(data, value, rows),
                other => Err(Error::internal(format!(
                    "{other} is not a dictionary key type"
                ))),
            }
        };
    }
    match value.as_ref() {
        DataType::Utf8 | DataType::Binary => by_key!(i32),
        DataType::LargeUtf8 | DataType::LargeBinary => by_key!(i64),
        other => Err(Error::internal(format!(
            "cannot decode a dictionary of {other} values"
        ))),
    }
}

/// The dictionary's values as one padded byte run with each entry's start and length, and one
/// empty entry after the last for null rows.
struct Entries {
    bytes: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

impl Entries {
    fn new<O: OffsetSizeTrait>(dict: &ArrayData) -> Result<Self> {
        dict.validate_full()?;
        let m = dict.len();
        let offsets = &dict.buffer::<O>(0)[..m + 1];
        let values = dict.buffers()[1].as_slice();
        let first = offsets[0].as_usize();
        let last = offsets[m].as_usize();
        let mut bytes = Vec::with_capacity(last - first + SLACK);
        bytes.extend_from_slice(&values[first..last]);
        bytes.resize(last - first + SLACK, 0);
        let spans = offsets
            .windows(2)
            .map(|w| (w[0].as_usize() - first, w[1].as_usize() - w[0].as_usize()))
            .chain([(0, 0)]) // the empty entry null rows read
            .collect();
        Ok(Self { bytes, spans })
    }
}

/// The entry a row reads: its key when the row is valid and the key is inside the
/// dictionary, else the empty entry `m` after the last (so loops never branch on nulls).
#[inline(always)]
fn entry<K: ArrowNativeType>(
    keys: &[K],
    valid: Option<&BooleanBuffer>,
    i: usize,
    m: usize,
) -> (usize, bool) {
    // SAFETY: callers pass rows below keys.len() == valid.len() (see `decode`).
    let (key, ok) = unsafe {
        (
            keys.get_unchecked(i).to_usize().unwrap_or(usize::MAX),
            valid.is_none_or(|v| v.value_unchecked(i)),
        )
    };
    let inside = key < m;
    (if ok && inside { key } else { m }, ok && !inside)
}

/// Calls `f(i, valid)` for each kept row `i` in order (the set bits of `keep`, or all `n`
/// rows), with whether the row is valid, walking the mask and validity 64 rows at a time (no
/// per-row bit lookup or `Option` test).
#[inline(always)]
fn for_each_kept<F: FnMut(usize, bool)>(
    keep: Option<&BooleanBuffer>,
    n: usize,
    valid: Option<&BooleanBuffer>,
    mut f: F,
) {
    let keep_chunks = keep.map(|b| b.bit_chunks());
    let valid_chunks = valid.map(|b| b.bit_chunks());
    let mut keep_words = keep_chunks.as_ref().map(|c| c.iter_padded());
    let mut valid_words = valid_chunks.as_ref().map(|c| c.iter_padded());
    let words = n.div_ceil(64);
    for c in 0..words {
        let tail = n - c * 64;
        let in_range = if tail >= 64 {
            u64::MAX
        } else {
            (1u64 << tail) - 1
        };
        let mut kw = keep_words
            .as_mut()
            .map_or(u64::MAX, |w| w.next().unwrap_or(0))
            & in_range;
        let vw = valid_words
            .as_mut()
            .map_or(u64::MAX, |w| w.next().unwrap_or(0));
        let base = c * 64;
        while kw != 0 {
            let t = kw.trailing_zeros() as usize;
            f(base + t, (vw >> t) & 1 != 0);
            kw &= kw - 1;
        }
    }
}

/// The total length of the values of the kept rows, and whether a valid row has a key
/// outside the dictionary. `spans` ends with the empty entry.
#[inline(always)]
fn total_len<K: ArrowNativeType>(
    keep: Option<&BooleanBuffer>,
    keys: &[K],
    valid: Option<&BooleanBuffer>,
    spans: &[(usize, usize)],
) -> (usize, bool) {
    let m = spans.len() - 1;
    let (mut total, mut bad) = (0usize, false);
    for_each_kept(keep, keys.len(), valid, |i, ok| {
        // SAFETY: i < keys.len(); a negative key becomes a huge one, outside the dictionary.
        let key = unsafe { keys.get_unchecked(i) }.as_usize();
        let inside = key < m;
        bad |= ok & !inside;
        let k = if ok & inside { key } else { m };
        // SAFETY: k <= m < spans.len().
        total += unsafe { spans.get_unchecked(k) }.1;
    });
    (total, bad)
}

/// Copies one value: a `W`-byte move when `W` is nonzero and the value fits it (the caller
/// picks `W` from the longest dictionary entry), else `memcpy`.
///
/// # Safety
/// `src` must be readable and `dst` writable for `len.max(W)` bytes.
#[inline(always)]
unsafe fn copy_value<const W: usize>(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: forwarded from the caller.
    unsafe {
        match W {
            8 if len <= 8 => std::ptr::write_unaligned(
                dst as *mut u64,
                std::ptr::read_unaligned(src as *const u64),
            ),
            16 if len <= 16 => std::ptr::write_unaligned(
                dst as *mut [u8; 16],
                std::ptr::read_unaligned(src as *const [u8; 16]),
            ),
            _ => std::ptr::copy_nonoverlapping(src, dst, len),
        }
    }
}

/// Writes the values of the kept rows to `dst` and their end offsets to `offsets[1..]`,
/// copying values of up to `W` bytes with one move (see [`copy_value`]).
///
/// # Safety
/// `dst` must be writable for the total length of the kept rows' entries (as [`total_len`]
/// counts them) plus [`SLACK`] bytes, `offsets` for one more than the kept rows, and `src`
/// readable for [`SLACK`] bytes past every span start.
#[inline(always)]
unsafe fn gather<const W: usize, K: ArrowNativeType, O: OffsetSizeTrait>(
    keep: Option<&BooleanBuffer>,
    keys: &[K],
    valid: Option<&BooleanBuffer>,
    spans: &[(usize, usize)],
    src: *const u8,
    dst: *mut u8,
    offsets: *mut O,
) -> usize {
    let m = spans.len() - 1;
    let (mut pos, mut j) = (0usize, 0usize);
    for_each_kept(keep, keys.len(), valid, |i, ok| {
        // SAFETY: i < keys.len().
        let key = unsafe { keys.get_unchecked(i) }.as_usize();
        let k = if ok & (key < m) { key } else { m };
        // SAFETY: k <= m < spans.len().
        let &(start, len) = unsafe { spans.get_unchecked(k) };
        // SAFETY: forwarded from the caller (see above).
        unsafe { copy_value::<W>(src.add(start), dst.add(pos), len) };
        pos += len;
        j += 1;
        // SAFETY: j <= kept rows.
        unsafe { *offsets.add(j) = O::usize_as(pos) };
    });
    j
}

/// [`gather`] over the kept rows with the widest single move the dictionary needs.
///
/// # Safety
/// As for [`gather`].
unsafe fn gather_rows<K: ArrowNativeType, O: OffsetSizeTrait>(
    keep: Option<&BooleanBuffer>,
    keys: &[K],
    valid: Option<&BooleanBuffer>,
    entries: &Entries,
    dst: *mut u8,
    offsets: *mut O,
) -> usize {
    let longest = entries.spans.iter().map(|s| s.1).max().unwrap_or(0);
    let (spans, src) = (&entries.spans[..], entries.bytes.as_ptr());
    match longest {
        // SAFETY: forwarded from the caller; every entry fits an 8-byte move.
        0..=8 => unsafe { gather::<8, K, O>(keep, keys, valid, spans, src, dst, offsets) },
        // SAFETY: forwarded from the caller; every entry fits a 16-byte move.
        9..=16 => unsafe { gather::<16, K, O>(keep, keys, valid, spans, src, dst, offsets) },
        // SAFETY: forwarded from the caller (values copied by their length).
        _ => unsafe { gather::<0, K, O>(keep, keys, valid, spans, src, dst, offsets) },
    }
}

fn decode<K: ArrowNativeType, O: OffsetSizeTrait>(
    data: &ArrayData,
    value_type: &DataType,
    rows: Rows<'_>,
) -> Result<ArrayData> {
    let n = data.len();
    let dict = data
        .child_data()
        .first()
        .ok_or_else(|| Error::internal("dictionary column without values"))?;
    let entries = Entries::new::<O>(dict)?;
    let spans = &entries.spans[..];
    let keys = &data.buffer::<K>(0)[..n];
    let key_nulls = data.nulls().filter(|b| b.null_count() > 0);
    let valid = key_nulls.map(|b| b.inner());
    let count = rows.count(n);

    if valid.is_some_and(|v| v.len() != n) {
        return Err(Error::internal(
            "dictionary keys and validity differ in length",
        ));
    }
    let m = spans.len() - 1;
    let keep = match rows {
        Rows::All => None,
        Rows::Masked(mask, _) => Some(mask),
    };
    let (total, bad) = total_len(keep, keys, valid, spans);
    if bad {
        let is_bad = |i: &usize| entry(keys, valid, *i, m).1;
        let i = match rows {
            Rows::All => (0..n).find(is_bad),
            Rows::Masked(mask, _) => mask.set_indices().find(is_bad),
        }
        .unwrap_or(0);
        // Keys come from the file's pages: a key outside the dictionary is a damaged file.
        return Err(Error::corrupt(format!(
            "dictionary key {:?} at row {i} is outside the dictionary of {m} values",
            keys[i]
        )));
    }
    if O::from_usize(total).is_none() {
        return Err(Error::validation(format!(
            "decoded dictionary column holds {total} bytes, more than its offset type allows"
        )));
    }
    let mut values = MutableBuffer::with_capacity(total + SLACK);
    let mut offsets: Vec<O> = Vec::with_capacity(count + 1);
    let (dst, op) = (values.as_mut_ptr(), offsets.as_mut_ptr());
    // SAFETY: keys were checked by `total_len`; `values` holds total + SLACK bytes, `offsets`
    // count + 1 entries, `entries.bytes` SLACK bytes past every span.
    let written = unsafe {
        *op = O::usize_as(0);
        gather_rows(keep, keys, valid, &entries, dst, op)
    };
    if written != count {
        return Err(Error::internal("keep-mask count mismatch"));
    }
    // SAFETY: count + 1 offsets and `total` bytes were written above.
    unsafe {
        offsets.set_len(count + 1);
        values.set_len(total);
    }
    let dict_nulls = dict.nulls().filter(|b| b.null_count() > 0);
    let nulls = match (dict_nulls, key_nulls, rows) {
        (Some(d), _, _) => {
            let row_valid = |i: usize| {
                key_nulls.is_none_or(|b| b.is_valid(i)) && d.is_valid(keys[i].as_usize())
            };
            let v: Vec<bool> = match rows {
                Rows::All => (0..n).map(row_valid).collect(),
                Rows::Masked(mask, _) => mask.set_indices().map(row_valid).collect(),
            };
            Some(NullBuffer::from(v))
        }
        (None, None, _) => None,
        (None, Some(k), Rows::All) => Some(k.clone()),
        (None, Some(k), Rows::Masked(mask, _)) => {
            Some(NullBuffer::new(compact_bits_into(k.inner(), mask, count)))
        }
    };
    let out = ArrayData::builder(value_type.clone())
        .len(count)
        .add_buffer(Buffer::from_vec(offsets))
        .add_buffer(values.into())
        .nulls(nulls);
    // SAFETY: offsets are non-decreasing sums of entry lengths ending at the bytes written,
    // and each value is a whole dictionary entry (validated, so UTF-8 where the type says
    // so); `validate` below re-checks the layout.
    let out = unsafe { out.build_unchecked() };
    out.validate()?;
    Ok(out)
}

/// `batch` with the named dictionary columns decoded and, given a keep-mask (`count` set, no
/// nulls), only the kept rows of every column. Columns not decodable stay as they are.
pub fn shape_batch(
    batch: &RecordBatch,
    keep: Option<(&BooleanArray, usize)>,
    decode: &[String],
) -> Result<RecordBatch> {
    let schema = batch.schema();
    let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(batch.num_columns());
    let (rows, mut compactor) = match keep {
        Some((mask, count)) => (
            Rows::Masked(mask.values(), count),
            Some(Compactor::new(mask, count)?),
        ),
        None => (Rows::All, None),
    };
    for (i, col) in batch.columns().iter().enumerate() {
        let field = &schema.fields()[i];
        if decode.iter().any(|d| d == field.name()) && decodable(field.data_type()) {
            let out = decode_dictionary(&col.to_data(), rows)?;
            fields[i] = Arc::new(
                field
                    .as_ref()
                    .clone()
                    .with_data_type(out.data_type().clone()),
            );
            columns.push(make_array(out));
        } else if let Some(c) = compactor.as_mut() {
            columns.push(make_array(c.column(&col.to_data())?));
        } else {
            columns.push(col.clone());
        }
    }
    let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let options = RecordBatchOptions::new().with_row_count(Some(rows.count(batch.num_rows())));
    RecordBatch::try_new_with_options(schema, columns, &options)
        .map_err(|e| Error::internal(format!("cannot shape batch: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deletes::compact::tests::Rng;
    use arrow_array::types::{Int16Type, Int32Type};
    use arrow_array::{BooleanArray, DictionaryArray, Int32Array, StringArray};
    use arrow_buffer::BooleanBuffer;

    fn reference(dict: &DictionaryArray<Int32Type>, keep: Option<&BooleanArray>) -> ArrayRef {
        let decoded = arrow_select::take::take(dict.values(), dict.keys(), None).unwrap();
        match keep {
            Some(k) => arrow_select::filter::filter(&decoded, k).unwrap(),
            None => decoded,
        }
    }

    fn random_dict(
        rng: &mut Rng,
        n: usize,
        nulls: u64,
        dict_nulls: bool,
    ) -> DictionaryArray<Int32Type> {
        let words = [
            "",
            "a",
            "bb",
            "ccc",
            "exactly sixteen!",
            "seventeen bytes!!",
            "é€😀",
            "x",
        ];
        let long = "L".repeat(100);
        let values: StringArray = (0..words.len() + 1)
            .map(|i| {
                if dict_nulls && i == 2 {
                    None
                } else if i == words.len() {
                    Some(long.as_str())
                } else {
                    Some(words[i])
                }
            })
            .collect();
        let keys: Int32Array = (0..n)
            .map(|_| (!rng.chance(nulls)).then(|| (rng.next() % values.len() as u64) as i32))
            .collect();
        DictionaryArray::try_new(keys, Arc::new(values)).unwrap()
    }

    #[test]
    fn decodes_like_take_with_and_without_a_mask() {
        let mut rng = Rng(7);
        for n in [0usize, 1, 63, 64, 65, 1000, 4099] {
            for (nulls, dict_nulls) in [(0, false), (10, false), (0, true), (30, true)] {
                let dict = random_dict(&mut rng, n, nulls, dict_nulls);
                let got = make_array(decode_dictionary(&dict.to_data(), Rows::All).unwrap());
                assert_eq!(&got, &reference(&dict, None), "n={n} nulls={nulls}");
                for pct in [0u64, 10, 50, 100] {
                    let keep: BooleanArray = (0..n).map(|_| Some(!rng.chance(pct))).collect();
                    let count = keep.true_count();
                    let rows = Rows::Masked(keep.values(), count);
                    let got = make_array(decode_dictionary(&dict.to_data(), rows).unwrap());
                    assert_eq!(&got, &reference(&dict, Some(&keep)), "n={n} pct={pct}");
                }
            }
        }
    }

    #[test]
    fn decodes_sliced_columns_and_other_key_types() {
        let mut rng = Rng(11);
        let dict = random_dict(&mut rng, 300, 10, false);
        let sliced = dict.slice(37, 200);
        let got = make_array(decode_dictionary(&sliced.to_data(), Rows::All).unwrap());
        assert_eq!(&got, &reference(&sliced, None));

        let keys = arrow_array::Int16Array::from(vec![Some(1), None, Some(0), Some(1)]);
        let values = Arc::new(arrow_array::LargeStringArray::from(vec!["zero", "one"]));
        let d16 = DictionaryArray::<Int16Type>::try_new(keys, values).unwrap();
        let got = make_array(decode_dictionary(&d16.to_data(), Rows::All).unwrap());
        let want =
            arrow_array::LargeStringArray::from(vec![Some("one"), None, Some("zero"), Some("one")]);
        assert_eq!(&got, &(Arc::new(want) as ArrayRef));
    }

    #[test]
    fn rejects_keys_outside_the_dictionary() {
        let values = StringArray::from(vec!["a", "b"]);
        let data = ArrayData::builder(DataType::Dictionary(
            Box::new(DataType::Int32),
            Box::new(DataType::Utf8),
        ))
        .len(3)
        .add_buffer(Buffer::from_vec(vec![0i32, 5, 1]))
        .child_data(vec![values.to_data()]);
        // SAFETY: the layout is valid (Int32 keys, a Utf8 dictionary); only the key 5 is out of
        // the dictionary's range, which is what decode_dictionary must reject.
        let data = unsafe { data.build_unchecked() };
        let err = decode_dictionary(&data, Rows::All).unwrap_err();
        assert!(err.to_string().contains("outside the dictionary"), "{err}");
        let neg = ArrayData::builder(data.data_type().clone())
            .len(1)
            .add_buffer(Buffer::from_vec(vec![-1i32]))
            .child_data(vec![values.to_data()]);
        // SAFETY: as above, with a negative key that decode_dictionary must reject.
        let neg = unsafe { neg.build_unchecked() };
        assert!(decode_dictionary(&neg, Rows::All).is_err());
        let mask = BooleanBuffer::from(vec![true, false, true]);
        // the bad key is at a deleted row: nothing reads it
        let got = decode_dictionary(&data, Rows::Masked(&mask, 2)).unwrap();
        assert_eq!(
            make_array(got).as_ref(),
            &StringArray::from(vec!["a", "b"]) as &dyn Array
        );
    }

    #[test]
    fn shapes_batches() {
        let mut rng = Rng(3);
        let dict = random_dict(&mut rng, 500, 10, false);
        let ids = Int32Array::from_iter_values(0..500);
        let batch = RecordBatch::try_from_iter([
            ("id", Arc::new(ids) as ArrayRef),
            ("s", Arc::new(dict.clone()) as ArrayRef),
        ])
        .unwrap();
        let keep: BooleanArray = (0..500).map(|_| Some(!rng.chance(10))).collect();
        let count = keep.true_count();
        let names = vec!["s".to_string()];
        let out = shape_batch(&batch, Some((&keep, count)), &names).unwrap();
        assert_eq!(out.schema().field(1).data_type(), &DataType::Utf8);
        assert_eq!(out.num_rows(), count);
        let want_ids = arrow_select::filter::filter(batch.column(0), &keep).unwrap();
        assert_eq!(out.column(0), &want_ids);
        assert_eq!(out.column(1), &reference(&dict, Some(&keep)));
        let plain = shape_batch(&batch, None, &names).unwrap();
        assert_eq!(plain.column(1), &reference(&dict, None));
        assert_eq!(plain.column(0), batch.column(0));
    }
}
