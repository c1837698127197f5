//! Compaction of fixed-width columns by a keep-mask that keeps most rows.
//!
//! Deleting 10% of a file's rows at random leaves runs of ~9 surviving rows, and arrow-select's
//! filter copies each run with its own `memcpy` call: most of its time goes to call overhead.
//! Here every 64-row word of the mask is handled at once: all-kept words copy 64 values, the
//! others store every value and advance the output by the mask bit (no branch per row), or
//! with AVX2, permute 8 values at a time (see [`super::compact_simd`]).
//! Validity and boolean bits are packed the same way, word by word. Only fixed-width
//! columns (primitives, booleans, dictionary keys) take this path; the others go through
//! arrow-select with a predicate built once per batch.

use arrow_array::{make_array, Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow_buffer::{i256, ArrowNativeType, BooleanBuffer, Buffer, MutableBuffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::DataType;
use arrow_select::filter::{FilterBuilder, FilterPredicate};

use super::compact_simd::{compact_words, extract_bits};
use crate::{Error, Result};

/// Stores the first `n` values at `src` to `dst`, advancing the output only where `word`
/// has a 1 bit; returns how many were kept.
///
/// # Safety
/// `src` must be readable for `n` values and `dst` writable for `n` values.
#[inline(always)]
unsafe fn compact_word<T: Copy>(src: *const T, dst: *mut T, word: u64, n: usize) -> usize {
    let mut j = 0usize;
    for i in 0..n {
        // SAFETY: i < n and j <= i < n.
        unsafe { *dst.add(j) = *src.add(i) };
        j += ((word >> i) & 1) as usize;
    }
    j
}

/// Writes the values at `src` (`mask.len()` of them) where `mask` is set (`count` of them) to
/// `dst`, in order.
///
/// # Safety
/// `src` must be readable for `mask.len()` values, and `dst` aligned for `T` and writable
/// for `count + 64` values, or equal to `src` (in place: every value is stored at or before
/// the place it was read from, after it was read, and nothing past `mask.len()` is written).
unsafe fn compact_values<T: ArrowNativeType>(
    src: *const T,
    mask: &BooleanBuffer,
    count: usize,
    dst: *mut T,
) {
    let chunks = mask.bit_chunks();
    let s = src;
    // SAFETY: forwarded from the caller (count + 64 values at `dst`, or in place).
    let simd = unsafe { compact_words(s, &chunks, dst) };
    let mut j = simd.unwrap_or(0);
    let scalar_words = if simd.is_some() {
        0
    } else {
        chunks.chunk_len()
    };
    for (c, word) in chunks.iter().take(scalar_words).enumerate() {
        // SAFETY: chunk c covers values [64c, 64c + 64) < mask.len(); j counts the set bits
        // seen so far, so j <= count and j <= 64c: dst[j..j + 64] is writable (`count + 64`
        // values, or in place below 64c + 64).
        unsafe {
            let sp = s.add(c * 64);
            if word == u64::MAX {
                // `copy`: in place, the output trails the input and may overlap it
                if !std::ptr::eq(dst.add(j), sp) {
                    std::ptr::copy(sp, dst.add(j), 64);
                }
                j += 64;
            } else if word != 0 {
                j += compact_word(sp, dst.add(j), word, 64);
            }
        }
    }
    let rem = chunks.remainder_len();
    if rem > 0 {
        // SAFETY: the remainder covers the last `rem` values; j <= count as above.
        unsafe {
            j += compact_word(
                s.add(chunks.chunk_len() * 64),
                dst.add(j),
                chunks.remainder_bits(),
                rem,
            );
        }
    }
    assert_eq!(j, count, "keep-mask count mismatch");
}

/// Appends bit runs of up to 64 bits to a buffer of words.
struct BitWriter {
    out: *mut u64,
    words: usize,
    acc: u64,
    used: u32,
    len: usize,
}

impl BitWriter {
    /// Appends the low `n` bits of `v` (n <= 64).
    ///
    /// # Safety
    /// `out` must be writable for `(len + n).div_ceil(64)` words.
    #[inline]
    unsafe fn push(&mut self, v: u64, n: u32) {
        if n == 0 {
            return;
        }
        let v = if n == 64 { v } else { v & ((1u64 << n) - 1) };
        self.acc |= v << self.used;
        let total = self.used + n;
        if total >= 64 {
            // SAFETY: this word holds bits below len + n.
            unsafe { *self.out.add(self.words) = self.acc };
            self.words += 1;
            // The bits of v that did not fit (none when the word was empty before).
            self.acc = if self.used == 0 {
                0
            } else {
                v >> (64 - self.used)
            };
            self.used = total - 64;
        } else {
            self.used = total;
        }
        self.len += n as usize;
    }

    /// # Safety
    /// As for [`BitWriter::push`].
    unsafe fn finish(self) -> usize {
        if self.used > 0 {
            // SAFETY: the last partial word is below len.div_ceil(64).
            unsafe { *self.out.add(self.words) = self.acc };
        }
        self.len
    }
}

/// Writes the bits of `bits` where `mask` is set (`count` of them) to `dst`, in order.
///
/// # Safety
/// `dst` must be aligned for `u64` and writable for `count.div_ceil(64)` words.
unsafe fn compact_bits(bits: &BooleanBuffer, mask: &BooleanBuffer, count: usize, dst: *mut u64) {
    assert_eq!(
        bits.len(),
        mask.len(),
        "bits and keep-mask differ in length"
    );
    let mut w = BitWriter {
        out: dst,
        words: 0,
        acc: 0,
        used: 0,
        len: 0,
    };
    let b = bits.bit_chunks();
    let m = mask.bit_chunks();
    for (v, k) in b.iter_padded().zip(m.iter_padded()) {
        let (packed, n) = extract_bits(v, k);
        assert!(w.len + n as usize <= count, "keep-mask count mismatch");
        // SAFETY: checked just above against the size of `dst`.
        unsafe { w.push(packed, n) };
    }
    // SAFETY: as above.
    let len = unsafe { w.finish() };
    assert_eq!(len, count, "keep-mask count mismatch");
}

/// A buffer of at least `need` bytes, 64-byte aligned, as a writable pointer.
fn out_ptr(buf: &mut MutableBuffer, need: usize) -> Result<*mut u8> {
    let ptr = buf.as_mut_ptr();
    if buf.capacity() < need || !(ptr as usize).is_multiple_of(64) {
        return Err(Error::internal(format!(
            "compaction buffer of {} bytes (need {need}, 64-byte aligned)",
            buf.capacity()
        )));
    }
    Ok(ptr)
}

/// `buf` with its first `len` bytes (written through [`out_ptr`]) as an immutable buffer.
///
/// # Safety
/// The first `len` bytes must have been written.
unsafe fn written(mut buf: MutableBuffer, len: usize) -> Buffer {
    // SAFETY: the caller wrote `len` <= capacity bytes.
    unsafe { buf.set_len(len) };
    buf.into()
}

/// The byte sizes of the output buffers of a fixed-width column compacted to `count` rows:
/// values (with room for the 64 values one word may write past the end) and validity (0 when
/// the column has no nulls); `None` for columns this module does not compact.
pub fn buffer_sizes(data: &ArrayData, count: usize) -> Option<(usize, usize)> {
    let dt = data.data_type();
    let values = match dt {
        DataType::Boolean => count.div_ceil(64) * 8,
        DataType::Dictionary(key, _) => (count + 64) * key.primitive_width()?,
        _ if dt.is_primitive() => (count + 64) * dt.primitive_width()?,
        _ => return None,
    };
    let validity = match data.nulls() {
        Some(n) if n.null_count() > 0 => count.div_ceil(64) * 8,
        _ => 0,
    };
    Some((values, validity))
}

/// Compacts the `n` values of `width` bytes at `src` by `mask` to `dst`.
///
/// # Safety
/// As for [`compact_values`]: `src` readable for `n = mask.len()` values aligned for their
/// width, `dst` aligned and writable for `count + 64` of them, or equal to `src`.
unsafe fn compact_by_width(
    src: *const u8,
    width: usize,
    mask: &BooleanBuffer,
    count: usize,
    dst: *mut u8,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    unsafe {
        match width {
            1 => compact_values(src, mask, count, dst),
            2 => compact_values(src as *const u16, mask, count, dst as *mut u16),
            4 => compact_values(src as *const u32, mask, count, dst as *mut u32),
            8 => compact_values(src as *const u64, mask, count, dst as *mut u64),
            16 => compact_values(src as *const i128, mask, count, dst as *mut i128),
            32 => compact_values(src as *const i256, mask, count, dst as *mut i256),
            _ => {
                return Err(Error::internal(format!(
                    "cannot compact values of {width} bytes"
                )))
            }
        }
    }
    Ok(())
}

/// The first `n` values of `data`'s value buffer (`width` bytes each) as a pointer, checked
/// for length and alignment.
fn values_ptr(data: &ArrayData, width: usize) -> Result<*const u8> {
    let buf = &data.buffers()[0];
    let start = data.offset() * width;
    let ptr = buf.as_ptr().wrapping_add(start);
    let align = width.min(16);
    if buf.len() < start + data.len() * width || !(ptr as usize).is_multiple_of(align) {
        return Err(Error::internal(format!(
            "value buffer of {} bytes does not hold {} values of {width} bytes",
            buf.len(),
            data.len()
        )));
    }
    Ok(ptr)
}

/// The byte width of the values a fixed-width column stores in its first buffer: `None` for
/// booleans (bits) and columns this module does not compact.
fn value_width(dt: &DataType) -> Option<usize> {
    match dt {
        DataType::Dictionary(key, _) => key.primitive_width(),
        DataType::Boolean => None,
        _ if dt.is_primitive() => dt.primitive_width(),
        _ => None,
    }
}

/// `data` (a column for which [`buffer_sizes`] is `Some`) compacted to the rows where `mask`
/// is set, written to `values` and `validity` (given exactly when the column has nulls).
pub fn compact_column(
    data: &ArrayData,
    mask: &BooleanBuffer,
    count: usize,
    mut values: MutableBuffer,
    validity: Option<MutableBuffer>,
) -> Result<ArrayData> {
    let Some((value_bytes, validity_bytes)) = buffer_sizes(data, count) else {
        return Err(Error::internal(format!(
            "cannot compact a {} column",
            data.data_type()
        )));
    };
    if mask.len() != data.len() || (validity_bytes > 0) != validity.is_some() {
        return Err(Error::internal(
            "compaction buffers do not match the column",
        ));
    }
    let dt = data.data_type();
    let dst = out_ptr(&mut values, value_bytes)?;
    let (written_bytes, children) = match dt {
        DataType::Boolean => {
            let bits = BooleanBuffer::new(data.buffers()[0].clone(), data.offset(), data.len());
            // SAFETY: checked above: aligned, count.div_ceil(64) words.
            unsafe { compact_bits(&bits, mask, count, dst as *mut u64) };
            (count.div_ceil(8), vec![])
        }
        _ => {
            let w = value_width(dt).unwrap_or(0);
            let src = values_ptr(data, w)?;
            // SAFETY: `src` holds the column's values (checked by `values_ptr`); `dst` is
            // checked above: aligned, count + 64 values.
            unsafe { compact_by_width(src, w, mask, count, dst)? };
            (count * w, data.child_data().to_vec())
        }
    };
    // SAFETY: `written` bytes were written above.
    let values = unsafe { written(values, written_bytes) };
    let nulls = match (data.nulls(), validity) {
        (Some(n), Some(mut out)) => {
            let dst = out_ptr(&mut out, validity_bytes)?;
            // SAFETY: checked above: aligned, count.div_ceil(64) words.
            unsafe { compact_bits(n.inner(), mask, count, dst as *mut u64) };
            // SAFETY: count.div_ceil(8) bytes were written above.
            let buf = unsafe { written(out, count.div_ceil(8)) };
            Some(NullBuffer::new(BooleanBuffer::new(buf, 0, count)))
        }
        _ => None,
    };
    let out = ArrayData::builder(dt.clone())
        .len(count)
        .add_buffer(values)
        .nulls(nulls)
        .child_data(children);
    // SAFETY: the buffers are built above for exactly `count` rows of this type (the
    // dictionary values are the input's, unchanged); the layout is checked below.
    let out = unsafe { out.build_unchecked() };
    out.validate()?;
    Ok(out)
}

/// `data` (a column of fixed-width values, not booleans) compacted to the rows where `mask`
/// is set, written over its own value buffer: no new buffer, and the values are rewritten
/// while the decoder's writes to them are still in the cache. [`InPlace::Not`] with the
/// column as given, when it is shared, sliced or not of such a type.
fn compact_in_place(data: ArrayData, mask: &BooleanBuffer, count: usize) -> Result<InPlace> {
    let Some(w) = value_width(data.data_type()) else {
        return Ok(InPlace::Not(data));
    };
    if data.offset() != 0 || data.buffers().len() != 1 || mask.len() != data.len() {
        return Ok(InPlace::Not(data));
    }
    let dt = data.data_type().clone();
    let (len, nulls, children) = (
        data.len(),
        data.nulls().cloned(),
        data.child_data().to_vec(),
    );
    let values = data.buffers()[0].clone();
    drop(data);
    let rebuild = |values: Buffer| {
        let b = ArrayData::builder(dt.clone())
            .len(len)
            .add_buffer(values)
            .nulls(nulls.clone())
            .child_data(children.clone());
        // SAFETY: the parts of the valid column given, unchanged.
        unsafe { b.build_unchecked() }
    };
    let mut values = match values.into_mutable() {
        Ok(m) => m,
        Err(values) => return Ok(InPlace::Not(rebuild(values))),
    };
    if values.len() < len * w || !(values.as_ptr() as usize).is_multiple_of(w.min(16)) {
        return Ok(InPlace::Not(rebuild(values.into())));
    }
    let ptr = values.as_mut_ptr();
    // SAFETY: the buffer holds `len` aligned values of `w` bytes (checked above), and this
    // function owns it alone (`into_mutable` succeeded): compacted in place.
    unsafe { compact_by_width(ptr, w, mask, count, ptr)? };
    values.truncate(count * w);
    let nulls = match nulls {
        Some(n) if n.null_count() > 0 => {
            Some(NullBuffer::new(compact_bits_into(n.inner(), mask, count)))
        }
        _ => None,
    };
    let out = ArrayData::builder(dt)
        .len(count)
        .add_buffer(values.into())
        .nulls(nulls)
        .child_data(children);
    // SAFETY: `count` compacted values of the column's type, its validity compacted by the
    // same mask, the dictionary values unchanged; the layout is checked below.
    let out = unsafe { out.build_unchecked() };
    out.validate()?;
    Ok(InPlace::Done(out))
}

/// What [`compact_in_place`] did with a column.
enum InPlace {
    /// Compacted in its own buffer.
    Done(ArrayData),
    /// Left as given (shared, sliced or not fixed-width): to be compacted into a new buffer.
    Not(ArrayData),
}

/// The bits of `bits` where `mask` (`count` set) is set, in a new buffer.
pub fn compact_bits_into(
    bits: &BooleanBuffer,
    mask: &BooleanBuffer,
    count: usize,
) -> BooleanBuffer {
    let mut out = MutableBuffer::from_len_zeroed(count.div_ceil(64) * 8);
    // SAFETY: the buffer holds count.div_ceil(64) aligned words.
    unsafe { compact_bits(bits, mask, count, out.as_mut_ptr() as *mut u64) };
    BooleanBuffer::new(out.into(), 0, count)
}

/// Compacts columns to the rows where a keep-mask (no nulls, `count` set) is true:
/// fixed-width columns by [`compact_column`], the others through arrow-select's filter with one
/// predicate, built on first use and shared by every column.
pub struct Compactor<'a> {
    keep: &'a BooleanArray,
    count: usize,
    predicate: Option<FilterPredicate>,
}

impl<'a> Compactor<'a> {
    /// A compactor for columns of `keep.len()` rows; `count` must be the number of rows kept.
    pub fn new(keep: &'a BooleanArray, count: usize) -> Result<Self> {
        if keep.null_count() > 0 || keep.true_count() != count {
            return Err(Error::internal(
                "compaction needs a keep-mask without nulls and the number of rows it keeps",
            ));
        }
        Ok(Self {
            keep,
            count,
            predicate: None,
        })
    }

    /// `data` (one entry per mask entry) with only the kept rows, compacted in its own
    /// buffer when nothing else holds it.
    pub fn column_owned(&mut self, data: ArrayData) -> Result<ArrayData> {
        match compact_in_place(data, self.keep.values(), self.count)? {
            InPlace::Done(out) => Ok(out),
            InPlace::Not(data) => self.column(&data),
        }
    }

    /// `data` (one entry per mask entry) with only the kept rows.
    pub fn column(&mut self, data: &ArrayData) -> Result<ArrayData> {
        if data.len() != self.keep.len() {
            return Err(Error::internal("keep-mask and column differ in length"));
        }
        if let Some((v, n)) = buffer_sizes(data, self.count) {
            return compact_column(
                data,
                self.keep.values(),
                self.count,
                MutableBuffer::with_capacity(v),
                (n > 0).then(|| MutableBuffer::with_capacity(n)),
            );
        }
        let keep = self.keep;
        let pred = self
            .predicate
            .get_or_insert_with(|| FilterBuilder::new(keep).optimize().build());
        pred.filter(make_array(data.clone()).as_ref())
            .map(|a| a.to_data())
            .map_err(|e| Error::internal(format!("cannot apply keep-mask: {e}")))
    }
}

/// The rows of `batch` where `keep` (no nulls, `count` set) is true, every column through one
/// [`Compactor`]; columns only this batch holds are compacted in place.
pub fn compact_batch(batch: RecordBatch, keep: &BooleanArray, count: usize) -> Result<RecordBatch> {
    if keep.len() != batch.num_rows() {
        return Err(Error::internal(
            "compact_batch needs one keep-mask entry per row",
        ));
    }
    let mut compactor = Compactor::new(keep, count)?;
    let (schema, columns, _) = batch.into_parts();
    let columns = columns
        .into_iter()
        .map(|c| {
            let data = c.to_data();
            drop(c); // the batch's reference: `data` may now be the only one
            compactor.column_owned(data).map(make_array)
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(count));
    RecordBatch::try_new_with_options(schema, columns, &options)
        .map_err(|e| Error::internal(format!("cannot apply keep-mask: {e}")))
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use arrow_array::types::Int32Type;
    use arrow_array::Decimal128Array;
    use arrow_array::{
        DictionaryArray, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, StringArray,
        TimestampMicrosecondArray,
    };
    use arrow_select::filter::filter_record_batch;

    use super::*;

    /// A small deterministic generator (xorshift), so the tests need no extra crate.
    pub(crate) struct Rng(pub(crate) u64);
    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        pub(crate) fn chance(&mut self, percent: u64) -> bool {
            self.next() % 100 < percent
        }
    }

    fn batch(rng: &mut Rng, n: usize, nulls: u64) -> RecordBatch {
        let mut opt = |v: i64| if rng.chance(nulls) { None } else { Some(v) };
        let i64s: Int64Array = (0..n as i64).map(&mut opt).collect();
        let i32s: Int32Array = (0..n as i64)
            .map(|v| opt(v).map(|v| v as i32 * 3))
            .collect();
        let i16s: Int16Array = (0..n as i64).map(|v| opt(v).map(|v| v as i16)).collect();
        let i8s: Int8Array = (0..n as i64).map(|v| opt(v).map(|v| v as i8)).collect();
        let f64s: Float64Array = (0..n as i64)
            .map(|v| opt(v).map(|v| v as f64 / 7.0))
            .collect();
        let ts: TimestampMicrosecondArray = (0..n as i64).map(&mut opt).collect();
        let dec = Decimal128Array::from_iter(
            (0..n as i64).map(|v| opt(v).map(|v| v as i128 * 1_000_000_007)),
        )
        .with_precision_and_scale(38, 2)
        .unwrap();
        let bools: BooleanArray = (0..n as i64).map(|v| opt(v).map(|v| v % 3 == 0)).collect();
        let strs: StringArray = (0..n as i64)
            .map(|v| opt(v).map(|v| format!("s{v}")))
            .collect();
        let dict: DictionaryArray<Int32Type> = (0..n as i64)
            .map(|v| opt(v).map(|v| ["a", "bb", "ccc"][(v % 3) as usize]))
            .collect();
        RecordBatch::try_from_iter(vec![
            ("i64", Arc::new(i64s) as ArrayRef),
            ("i32", Arc::new(i32s)),
            ("i16", Arc::new(i16s)),
            ("i8", Arc::new(i8s)),
            ("f64", Arc::new(f64s)),
            ("ts", Arc::new(ts)),
            ("dec", Arc::new(dec)),
            ("bool", Arc::new(bools)),
            ("str", Arc::new(strs)),
            ("dict", Arc::new(dict)),
        ])
        .unwrap()
    }

    #[test]
    fn compaction_matches_arrow_filter() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for &n in &[0usize, 1, 63, 64, 65, 127, 128, 200, 1000, 4099] {
            for &density in &[0u64, 10, 50, 90, 99, 100] {
                for &nulls in &[0u64, 30] {
                    for &(off, len) in &[(0usize, n), (n.min(3), n - n.min(3)), (n / 3, n / 2)] {
                        let b = batch(&mut rng, n, nulls).slice(off, len);
                        let keep: BooleanArray =
                            (0..n).map(|_| Some(rng.chance(density))).collect();
                        let keep = keep.slice(n - len, len);
                        let count = keep.true_count();
                        let want = filter_record_batch(&b, &keep).unwrap();
                        let got = compact_batch(b.clone(), &keep, count).unwrap();
                        assert_eq!(got, want, "n={n} density={density} nulls={nulls} off={off}");
                        for c in got.columns() {
                            c.to_data().validate_full().unwrap();
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn rejects_masks_with_nulls() {
        let b = RecordBatch::try_from_iter(vec![(
            "a",
            Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef,
        )])
        .unwrap();
        let keep = BooleanArray::from(vec![Some(true), None]);
        assert!(compact_batch(b, &keep, 1).is_err());
    }

    #[test]
    fn columns_held_only_by_the_batch_compact_in_place() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for &n in &[1usize, 63, 64, 65, 200, 4099] {
            for &density in &[0u64, 10, 90, 99, 100] {
                for &nulls in &[0u64, 30] {
                    let b = batch(&mut rng, n, nulls);
                    let keep: BooleanArray = (0..n).map(|_| Some(rng.chance(density))).collect();
                    let count = keep.true_count();
                    let want = filter_record_batch(&b, &keep).unwrap();
                    // a deep copy, so that the batch given holds the only references
                    let all = arrow_array::UInt32Array::from_iter_values(0..n as u32);
                    let own: Vec<ArrayRef> = b
                        .columns()
                        .iter()
                        .map(|c| arrow_select::take::take(c, &all, None).unwrap())
                        .collect();
                    let given: Vec<*const u8> = own
                        .iter()
                        .map(|c| c.to_data().buffers()[0].as_ptr())
                        .collect();
                    let owned = RecordBatch::try_new(b.schema(), own).unwrap();
                    let got = compact_batch(owned, &keep, count).unwrap();
                    assert_eq!(got, want, "n={n} density={density} nulls={nulls}");
                    for (c, (col, ptr)) in got.columns().iter().zip(&given).enumerate() {
                        col.to_data().validate_full().unwrap();
                        if value_width(col.data_type()).is_some() {
                            let same = col.to_data().buffers()[0].as_ptr() == *ptr;
                            assert!(same, "column {c}: compacted in place");
                        }
                    }
                }
            }
        }
    }
}
