//! Equality deletes: a data row is deleted when, for some delete row, every equality column of
//! that delete row equals the data row's value (null equals null). Values are compared after
//! Iceberg's type promotions (int -> long, float -> double, decimal precision widening), so a
//! delete file written before a promotion still applies; a date key matches a timestamp at
//! midnight of that day (v3's date -> timestamp promotion, either side the older). Floats
//! compare like Java's `Double.equals`: NaN equals NaN, and -0.0 differs from 0.0.
//!
//! Each delete set (one group per distinct set of columns) is hashed once; data batches are
//! probed against every group.

use std::borrow::Cow;
use std::sync::OnceLock;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow_schema::{DataType, TimeUnit};
use hashbrown::HashSet;

use super::dense_probe::dense_contains;
use super::key_filter::{confirm, fold, fold_all, KeyFilter};
use crate::{Error, Result};

/// The comparable class of an Arrow type after Iceberg's promotions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Date,
    Float,
    Decimal(i8),
    Bool,
    Bytes,
    Time(TimeUnit),
    Timestamp(TimeUnit, bool),
}

fn kind_of(dt: &DataType, column: &str) -> Result<Kind> {
    Ok(match dt {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => Kind::Int,
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 => Kind::Int,
        DataType::Date32 => Kind::Date,
        DataType::Float32 | DataType::Float64 => Kind::Float,
        DataType::Decimal128(_, s) => Kind::Decimal(*s),
        DataType::Boolean => Kind::Bool,
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => Kind::Bytes,
        DataType::Time32(u) | DataType::Time64(u) => Kind::Time(*u),
        DataType::Timestamp(u, tz) => Kind::Timestamp(*u, tz.is_some()),
        other => {
            return Err(Error::unsupported(format!(
                "equality delete column {column:?} has type {other}, which cannot be compared"
            )))
        }
    })
}

const CANONICAL_NAN: u64 = 0x7ff8_0000_0000_0000;

fn float_key(d: f64) -> i64 {
    if d.is_nan() {
        CANONICAL_NAN as i64
    } else {
        d.to_bits() as i64
    }
}

/// One column, viewed in its canonical form.
enum Col<'a> {
    /// Int, date, time, timestamp values and float bits, widened to i64.
    Fixed(Cow<'a, [i64]>, Option<&'a NullBuffer>),
    Decimal(&'a [i128], Option<&'a NullBuffer>),
    Bool(&'a BooleanArray),
    Bytes(&'a dyn Array),
}

fn widened<T: ArrowPrimitiveType>(a: &dyn Array, f: impl Fn(T::Native) -> i64) -> Cow<'_, [i64]> {
    Cow::Owned(
        a.as_primitive::<T>()
            .values()
            .iter()
            .map(|&v| f(v))
            .collect(),
    )
}

/// The values of an integer, date, time or timestamp column as i64 (borrowed when stored so;
/// null slots hold whatever the buffer does); `None` for other types.
pub(crate) fn int_values(a: &dyn Array) -> Option<Cow<'_, [i64]>> {
    use TimeUnit::*;
    Some(match a.data_type() {
        DataType::Int64 => Cow::Borrowed(a.as_primitive::<Int64Type>().values()),
        DataType::Int8 => widened::<Int8Type>(a, i64::from),
        DataType::Int16 => widened::<Int16Type>(a, i64::from),
        DataType::Int32 => widened::<Int32Type>(a, i64::from),
        DataType::UInt8 => widened::<UInt8Type>(a, i64::from),
        DataType::UInt16 => widened::<UInt16Type>(a, i64::from),
        DataType::UInt32 => widened::<UInt32Type>(a, i64::from),
        DataType::Date32 => widened::<Date32Type>(a, i64::from),
        DataType::Time32(Second) => widened::<Time32SecondType>(a, i64::from),
        DataType::Time32(_) => widened::<Time32MillisecondType>(a, i64::from),
        DataType::Time64(Nanosecond) => {
            Cow::Borrowed(a.as_primitive::<Time64NanosecondType>().values())
        }
        DataType::Time64(_) => Cow::Borrowed(a.as_primitive::<Time64MicrosecondType>().values()),
        // each unit is its own Arrow type: read the values in the column's unit
        DataType::Timestamp(Second, _) => {
            Cow::Borrowed(a.as_primitive::<TimestampSecondType>().values())
        }
        DataType::Timestamp(Millisecond, _) => {
            Cow::Borrowed(a.as_primitive::<TimestampMillisecondType>().values())
        }
        DataType::Timestamp(Microsecond, _) => {
            Cow::Borrowed(a.as_primitive::<TimestampMicrosecondType>().values())
        }
        DataType::Timestamp(Nanosecond, _) => {
            Cow::Borrowed(a.as_primitive::<TimestampNanosecondType>().values())
        }
        _ => return None,
    })
}

fn view(a: &dyn Array) -> Col<'_> {
    if let Some(values) = int_values(a) {
        return Col::Fixed(values, a.nulls());
    }
    match a.data_type() {
        DataType::Float32 => Col::Fixed(
            widened::<Float32Type>(a, |v| float_key(f64::from(v))),
            a.nulls(),
        ),
        DataType::Float64 => Col::Fixed(widened::<Float64Type>(a, float_key), a.nulls()),
        DataType::Decimal128(_, _) => {
            let p = a.as_primitive::<Decimal128Type>();
            Col::Decimal(p.values(), p.nulls())
        }
        DataType::Boolean => Col::Bool(a.as_boolean()),
        _ => Col::Bytes(a),
    }
}

impl Col<'_> {
    fn is_null(&self, i: usize) -> bool {
        match self {
            Col::Fixed(_, n) | Col::Decimal(_, n) => n.is_some_and(|n| n.is_null(i)),
            Col::Bool(a) => a.is_null(i),
            Col::Bytes(a) => a.is_null(i),
        }
    }

    /// Appends the canonical encoding of row `i`: a null tag, then the value.
    fn encode(&self, i: usize, out: &mut Vec<u8>) {
        if self.is_null(i) {
            out.push(0);
            return;
        }
        out.push(1);
        match self {
            Col::Fixed(v, _) => out.extend_from_slice(&v[i].to_le_bytes()),
            Col::Decimal(v, _) => out.extend_from_slice(&v[i].to_le_bytes()),
            Col::Bool(a) => out.push(a.value(i) as u8),
            Col::Bytes(a) => {
                let b = bytes_at(*a, i);
                out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                out.extend_from_slice(b);
            }
        }
    }
}

fn bytes_at(a: &dyn Array, i: usize) -> &[u8] {
    match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().value(i).as_bytes(),
        DataType::LargeUtf8 => a.as_string::<i64>().value(i).as_bytes(),
        DataType::Utf8View => a.as_string_view().value(i).as_bytes(),
        DataType::Binary => a.as_binary::<i32>().value(i),
        DataType::LargeBinary => a.as_binary::<i64>().value(i),
        DataType::BinaryView => a.as_binary_view().value(i),
        DataType::FixedSizeBinary(_) => a.as_fixed_size_binary().value(i),
        other => unreachable!("bytes_at on {other}"),
    }
}

/// The probe structure of single-column i64 keys, built once from every added key.
#[derive(Debug, Clone)]
enum IntSet {
    /// Keys within a span at most [`DENSE_BITS_PER_KEY`] times their count: one bit per value
    /// of `[min, min + 64 * bits.len())`. Probing touches one word (no hashing, and a
    /// million keys over ten million values take 1.25 MB, which stays in cache).
    Dense { min: i64, bits: Vec<u64> },
    /// Sparse keys: a hash set, behind a filter that rules out most values that miss it.
    Hash(HashSet<i64>, KeyFilter),
}

/// A dense bitmap is used when its size (`span / 8` bytes) is within `DENSE_BITS_PER_KEY / 8`
/// bytes per key, about what the hash set would take, or at most 1 MiB.
const DENSE_BITS_PER_KEY: u128 = 128;
const DENSE_MIN_BITS: u128 = 1 << 23;

impl IntSet {
    fn build(values: &[i64]) -> Self {
        let (Some(&lo), Some(&hi)) = (values.iter().min(), values.iter().max()) else {
            return IntSet::Hash(HashSet::new(), KeyFilter::new(0, std::iter::empty()));
        };
        let span = (hi as i128 - lo as i128) as u128 + 1;
        if span <= (values.len() as u128 * DENSE_BITS_PER_KEY).max(DENSE_MIN_BITS) {
            let mut bits = vec![0u64; span.div_ceil(64) as usize];
            for &v in values {
                let d = v.wrapping_sub(lo) as u64;
                bits[(d >> 6) as usize] |= 1 << (d & 63);
            }
            IntSet::Dense { min: lo, bits }
        } else {
            let mut set = HashSet::with_capacity(values.len());
            set.extend(values.iter().copied());
            let filter = KeyFilter::new(set.len(), set.iter().map(|&k| fold(k)));
            IntSet::Hash(set, filter)
        }
    }

    /// `true` for each of `values` that is a key (whatever the value under a null).
    fn hits(&self, values: &[i64]) -> BooleanBuffer {
        match self {
            IntSet::Dense { min, bits } => dense_contains(*min, bits, values),
            IntSet::Hash(set, filter) => {
                let mut words = filter.candidates(values);
                confirm(values, &mut words, |v| set.contains(&v));
                BooleanBuffer::new(Buffer::from_vec(words), 0, values.len())
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            IntSet::Dense { bits, .. } => bits.iter().map(|w| w.count_ones() as usize).sum(),
            IntSet::Hash(set, _) => set.len(),
        }
    }
}

/// The keys of one group.
#[derive(Debug, Clone)]
enum Keys {
    /// A single Int/Float/Time/Timestamp column: values widened to i64 (collected as added,
    /// indexed on first use), plus "null deleted".
    Single(Vec<i64>, OnceLock<IntSet>, bool),
    /// Two Int/Float/Time/Timestamp columns: their values widened to i64 and a bit per null
    /// column, hashed without an allocation per key.
    Pair(FixedSet<2>),
    /// Three to [`FIXED_MAX`] such columns, the same way.
    Fixed(FixedSet<FIXED_MAX>),
    /// Any other column set: canonical row encodings.
    Rows(HashSet<Box<[u8]>>),
}

/// The most columns a [`Keys::Fixed`] key holds.
const FIXED_MAX: usize = 4;

/// The values of a row's columns (0 where null, padded with 0) and its null bits.
type FixedKey<const N: usize> = ([i64; N], u8);

fn is_fixed(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Int | Kind::Date | Kind::Float | Kind::Time(_) | Kind::Timestamp(..)
    )
}

/// The key of row `i` over `views` (every one a [`Col::Fixed`], at most `N`).
#[inline]
fn fixed_key<const N: usize>(views: &[Col<'_>], i: usize) -> FixedKey<N> {
    let mut key = ([0i64; N], 0u8);
    for (j, c) in views.iter().enumerate() {
        if let Col::Fixed(v, nulls) = c {
            if nulls.is_some_and(|n| n.is_null(i)) {
                key.1 |= 1 << j;
            } else {
                key.0[j] = v[i];
            }
        }
    }
    key
}

/// Keys of up to `N` fixed-width columns: a hash set, and the filter in front of it (built on
/// the first probe after keys were added).
#[derive(Debug, Clone, Default)]
struct FixedSet<const N: usize> {
    set: HashSet<FixedKey<N>>,
    filter: OnceLock<KeyFilter>,
}

impl<const N: usize> FixedSet<N> {
    /// Adds the keys of the `n` rows of `views`.
    fn insert(&mut self, views: &[Col<'_>], n: usize) {
        self.filter.take();
        self.set.reserve(n);
        self.set.extend((0..n).map(|i| fixed_key(views, i)));
    }

    /// `true` for each of the `n` rows of `views` whose key is not in the set.
    fn keep(&self, views: &[Col<'_>], n: usize) -> BooleanBuffer {
        let filter = self.filter.get_or_init(|| {
            let folded = self.set.iter().map(|k| fold_all(&k.0, k.1));
            KeyFilter::new(self.set.len(), folded)
        });
        BooleanBuffer::collect_bool(n, |i| {
            let key = fixed_key::<N>(views, i);
            !(filter.may_hold(fold_all(&key.0, key.1)) && self.set.contains(&key))
        })
    }
}

/// The delete rows of one set of equality columns (sorted by name).
#[derive(Debug, Clone)]
struct Group {
    columns: Vec<String>,
    kinds: Vec<Kind>,
    keys: Keys,
}

fn columns_of<'a>(batch: &'a RecordBatch, names: &[String]) -> Result<Vec<&'a ArrayRef>> {
    names
        .iter()
        .map(|n| {
            batch.column_by_name(n).ok_or_else(|| {
                Error::validation(format!("batch has no equality delete column {n:?}"))
            })
        })
        .collect()
}

/// Units of a timestamp of `unit` in one day.
fn per_day(unit: TimeUnit) -> i64 {
    86_400
        * match unit {
            TimeUnit::Second => 1,
            TimeUnit::Millisecond => 1_000,
            TimeUnit::Microsecond => 1_000_000,
            TimeUnit::Nanosecond => 1_000_000_000,
        }
}

/// A data column of kind `got` as values of the keys' kind `want`, when one is a date and the
/// other a timestamp: the day of a timestamp at midnight, or the midnight of a date; with the
/// rows that have no such value (set: kept whatever the keys hold). None for other pairs.
fn promoted(col: &ArrayRef, got: Kind, want: Kind) -> Option<(ArrayRef, Option<BooleanBuffer>)> {
    let values = int_values(col.as_ref())?;
    let (converted, none): (Vec<i64>, Vec<bool>) = match (got, want) {
        (Kind::Timestamp(unit, _), Kind::Date) => {
            let day = per_day(unit);
            values
                .iter()
                .map(|&v| match v % day {
                    0 => (v / day, false),
                    _ => (0, true),
                })
                .unzip()
        }
        (Kind::Date, Kind::Timestamp(unit, _)) => {
            let day = per_day(unit);
            values
                .iter()
                .map(|&d| match d.checked_mul(day) {
                    Some(v) => (v, false),
                    None => (0, true),
                })
                .unzip()
        }
        _ => return None,
    };
    let none = match none.iter().any(|&b| b) {
        // a null row is never "unmatched": null keys match null values
        true => {
            let bits = BooleanBuffer::from(none);
            Some(match col.nulls() {
                Some(n) => &bits & n.inner(),
                None => bits,
            })
        }
        false => None,
    };
    let array = arrow_array::Int64Array::new(converted.into(), col.nulls().cloned());
    Some((std::sync::Arc::new(array) as ArrayRef, none))
}

impl Group {
    fn len(&self) -> usize {
        match &self.keys {
            Keys::Single(values, probe, null) => {
                probe.get_or_init(|| IntSet::build(values)).len() + *null as usize
            }
            Keys::Pair(s) => s.set.len(),
            Keys::Fixed(s) => s.set.len(),
            Keys::Rows(s) => s.len(),
        }
    }

    fn insert(&mut self, batch: &RecordBatch) -> Result<()> {
        let cols = columns_of(batch, &self.columns)?;
        let views: Vec<Col<'_>> = cols.iter().map(|c| view(c.as_ref())).collect();
        match &mut self.keys {
            Keys::Single(values, probe, null) => {
                if let Col::Fixed(v, nulls) = &views[0] {
                    probe.take();
                    match nulls {
                        Some(nulls) if nulls.null_count() > 0 => {
                            *null = true;
                            values.extend(nulls.valid_indices().map(|i| v[i]));
                        }
                        _ => values.extend_from_slice(v),
                    }
                }
            }
            Keys::Pair(set) => set.insert(&views, batch.num_rows()),
            Keys::Fixed(set) => set.insert(&views, batch.num_rows()),
            Keys::Rows(set) => {
                let mut buf = Vec::new();
                set.reserve(batch.num_rows());
                for i in 0..batch.num_rows() {
                    buf.clear();
                    for c in &views {
                        c.encode(i, &mut buf);
                    }
                    if !set.contains(buf.as_slice()) {
                        set.insert(buf.clone().into_boxed_slice());
                    }
                }
            }
        }
        Ok(())
    }

    fn keep(&self, batch: &RecordBatch) -> Result<BooleanBuffer> {
        let mut cols: Vec<ArrayRef> = columns_of(batch, &self.columns)?
            .into_iter()
            .cloned()
            .collect();
        // rows whose value has no equal of the keys' type (a timestamp not at midnight against
        // date keys): kept whatever the other columns hold
        let mut unmatched: Option<BooleanBuffer> = None;
        for ((c, name), want) in cols.iter_mut().zip(&self.columns).zip(&self.kinds) {
            let got = kind_of(c.data_type(), name)?;
            if got == *want {
                continue;
            }
            let Some((converted, none)) = promoted(c, got, *want) else {
                return Err(Error::validation(format!(
                    "equality delete column {name:?} has type {} in the data, which is not \
                     comparable with the delete file's ({want:?})",
                    c.data_type()
                )));
            };
            *c = converted;
            if let Some(none) = none {
                unmatched = Some(match unmatched {
                    Some(u) => &u | &none,
                    None => none,
                });
            }
        }
        let keep = self.keep_views(&cols, batch.num_rows())?;
        Ok(match unmatched {
            Some(u) => &keep | &u,
            None => keep,
        })
    }

    fn keep_views(&self, cols: &[ArrayRef], n: usize) -> Result<BooleanBuffer> {
        let views: Vec<Col<'_>> = cols.iter().map(|c| view(c.as_ref())).collect();
        Ok(match &self.keys {
            Keys::Single(values, probe, null_deleted) => {
                let Col::Fixed(v, nulls) = &views[0] else {
                    unreachable!("single-column groups hold fixed-width kinds")
                };
                let hit = probe.get_or_init(|| IntSet::build(values)).hits(v);
                match nulls {
                    // a null row is deleted exactly when a delete row is null
                    Some(n) if *null_deleted => &!&hit & n.inner(),
                    Some(n) => !&(&hit & n.inner()),
                    None => !&hit,
                }
            }
            Keys::Pair(set) => set.keep(&views, n),
            Keys::Fixed(set) => set.keep(&views, n),
            Keys::Rows(set) => {
                let mut buf = Vec::new();
                BooleanBuffer::collect_bool(n, |i| {
                    buf.clear();
                    for c in &views {
                        c.encode(i, &mut buf);
                    }
                    !set.contains(buf.as_slice())
                })
            }
        })
    }
}

/// Equality delete rows from any number of delete files, grouped by their column sets.
#[derive(Debug, Clone, Default)]
pub struct EqualityDeleteSet {
    groups: Vec<Group>,
}

impl EqualityDeleteSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds delete rows. Every column of `batch` is an equality column (project the delete
    /// file to its `equality_ids` first). Batches with the same column names share one hash set.
    pub fn add_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let schema = batch.schema();
        if schema.fields().is_empty() {
            return Err(Error::validation(
                "an equality delete batch needs at least one column",
            ));
        }
        let mut cols: Vec<(String, Kind)> = schema
            .fields()
            .iter()
            .map(|f| Ok((f.name().clone(), kind_of(f.data_type(), f.name())?)))
            .collect::<Result<_>>()?;
        cols.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = cols.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(Error::validation(format!(
                "equality delete batch has column {:?} twice",
                w[0].0
            )));
        }
        let (columns, kinds): (Vec<String>, Vec<Kind>) = cols.into_iter().unzip();
        let idx = match self.groups.iter().position(|g| g.columns == columns) {
            Some(i) => {
                if self.groups[i].kinds != kinds {
                    return Err(Error::validation(format!(
                        "equality delete files disagree on the types of columns {columns:?}"
                    )));
                }
                i
            }
            None => {
                let fixed = kinds.iter().all(|k| is_fixed(*k));
                let keys = if fixed && kinds.len() == 1 {
                    Keys::Single(Vec::new(), OnceLock::new(), false)
                } else if fixed && kinds.len() == 2 {
                    Keys::Pair(FixedSet::default())
                } else if fixed && kinds.len() <= FIXED_MAX {
                    Keys::Fixed(FixedSet::default())
                } else {
                    Keys::Rows(HashSet::new())
                };
                self.groups.push(Group {
                    columns,
                    kinds,
                    keys,
                });
                self.groups.len() - 1
            }
        };
        self.groups[idx].insert(batch)
    }

    /// The number of distinct delete keys over all groups.
    pub fn len(&self) -> usize {
        self.groups.iter().map(Group::len).sum()
    }

    /// Whether no delete rows were added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The column sets (sorted names) of the groups.
    pub fn column_sets(&self) -> Vec<Vec<String>> {
        self.groups.iter().map(|g| g.columns.clone()).collect()
    }

    /// `true` for each row of `batch` that no delete row matches. `batch` must hold every
    /// equality column of every group, by name.
    pub fn keep_mask(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        let mut keep = BooleanBuffer::new_set(batch.num_rows());
        for g in &self.groups {
            keep = &keep & &g.keep(batch)?;
        }
        Ok(BooleanArray::new(keep, None))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Float32Array, Float64Array, Int32Array, Int64Array, StringArray};

    use super::*;

    fn batch(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
        RecordBatch::try_from_iter(cols).unwrap()
    }

    #[test]
    fn promoted_single_column_with_nulls() {
        let mut set = EqualityDeleteSet::new();
        let del: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(7)]));
        set.add_batch(&batch(vec![("id", del)])).unwrap();
        let data: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(2), None, Some(7)]));
        let m = set.keep_mask(&batch(vec![("id", data)])).unwrap();
        assert_eq!(m, BooleanArray::from(vec![false, true, false, false]));
    }

    #[test]
    fn date_keys_match_timestamps_at_midnight_and_back() {
        use arrow_array::{Date32Array, TimestampMicrosecondArray, TimestampNanosecondArray};
        const DAY_US: i64 = 86_400_000_000;
        // date keys (a file written before date -> timestamp) against promoted data
        let mut set = EqualityDeleteSet::new();
        let days: ArrayRef = Arc::new(Date32Array::from(vec![Some(19_723), None]));
        let other: ArrayRef = Arc::new(Int64Array::from(vec![Some(5), Some(6)]));
        set.add_batch(&batch(vec![("d", days), ("k", other)]))
            .unwrap();
        let stamps: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
            Some(19_723 * DAY_US),
            Some(19_723 * DAY_US + 1),
            None,
            Some(19_723 * DAY_US),
            Some(i64::MIN + 7),
        ]));
        let k: ArrayRef = Arc::new(Int64Array::from(vec![5, 5, 6, 6, 5]));
        let m = set
            .keep_mask(&batch(vec![("d", stamps), ("k", k)]))
            .unwrap();
        assert_eq!(m, BooleanArray::from(vec![false, true, false, true, true]));
        // timestamp keys against dates (an old data file read as stored)
        let mut set = EqualityDeleteSet::new();
        let keys: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![
            19_723 * DAY_US * 1000,
            5,
        ]));
        set.add_batch(&batch(vec![("d", keys)])).unwrap();
        let dates: ArrayRef = Arc::new(Date32Array::from(vec![
            Some(19_723),
            Some(19_724),
            None,
            Some(i32::MAX),
        ]));
        let m = set.keep_mask(&batch(vec![("d", dates)])).unwrap();
        assert_eq!(m, BooleanArray::from(vec![false, true, true, true]));
        // other kinds still do not compare
        let strings: ArrayRef = Arc::new(StringArray::from(vec!["x"]));
        assert!(set.keep_mask(&batch(vec![("d", strings)])).is_err());
    }

    #[test]
    fn dense_keys_with_null_rows_in_the_data() {
        // 1 and 7 make a dense set; null rows of the data are deleted only by a null key
        let data: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(7), Some(8)]));
        let sliced = data.slice(1, 3);
        for (keys, want, want_sliced) in [
            (
                vec![Some(1), Some(7)],
                [false, true, false, true],
                [true, false, true],
            ),
            (
                vec![Some(1), None],
                [false, false, true, true],
                [false, true, true],
            ),
        ] {
            let mut set = EqualityDeleteSet::new();
            let del: ArrayRef = Arc::new(Int64Array::from(keys));
            set.add_batch(&batch(vec![("id", del)])).unwrap();
            let m = set.keep_mask(&batch(vec![("id", data.clone())])).unwrap();
            assert_eq!(m, BooleanArray::from(want.to_vec()));
            let m = set.keep_mask(&batch(vec![("id", sliced.clone())])).unwrap();
            assert_eq!(m, BooleanArray::from(want_sliced.to_vec()));
        }
    }

    #[test]
    fn timestamps_of_every_unit_and_64_bit_times_are_keys() {
        use arrow_array::{
            Time64NanosecondArray, TimestampMillisecondArray, TimestampNanosecondArray,
            TimestampSecondArray,
        };
        let cols: Vec<(ArrayRef, ArrayRef)> = vec![
            (
                Arc::new(TimestampNanosecondArray::from(vec![5])),
                Arc::new(TimestampNanosecondArray::from(vec![4, 5, 6])),
            ),
            (
                Arc::new(TimestampMillisecondArray::from(vec![5]).with_timezone("UTC")),
                Arc::new(TimestampMillisecondArray::from(vec![4, 5, 6]).with_timezone("UTC")),
            ),
            (
                Arc::new(TimestampSecondArray::from(vec![5])),
                Arc::new(TimestampSecondArray::from(vec![4, 5, 6])),
            ),
            (
                Arc::new(Time64NanosecondArray::from(vec![5])),
                Arc::new(Time64NanosecondArray::from(vec![4, 5, 6])),
            ),
        ];
        for (del, data) in cols {
            let mut set = EqualityDeleteSet::new();
            set.add_batch(&batch(vec![("t", del)])).unwrap();
            let m = set.keep_mask(&batch(vec![("t", data)])).unwrap();
            assert_eq!(m, BooleanArray::from(vec![true, false, true]));
        }
    }

    #[test]
    fn multi_column_and_several_groups() {
        let mut set = EqualityDeleteSet::new();
        let a: ArrayRef = Arc::new(StringArray::from(vec![Some("x"), None]));
        let f: ArrayRef = Arc::new(Float32Array::from(vec![1.5, f32::NAN]));
        set.add_batch(&batch(vec![("name", a), ("f", f)])).unwrap();
        let id: ArrayRef = Arc::new(Int64Array::from(vec![10]));
        set.add_batch(&batch(vec![("id", id)])).unwrap();
        assert_eq!(set.len(), 3);
        let data = batch(vec![
            ("id", Arc::new(Int64Array::from(vec![1, 10, 2, 3, 4]))),
            (
                "name",
                Arc::new(StringArray::from(vec![
                    Some("x"),
                    Some("x"),
                    None,
                    Some("y"),
                    None,
                ])),
            ),
            (
                "f",
                Arc::new(Float64Array::from(vec![1.5, 0.0, f64::NAN, 1.5, 2.0])),
            ),
        ]);
        let m = set.keep_mask(&data).unwrap();
        assert_eq!(m, BooleanArray::from(vec![false, false, false, true, true]));
        let wrong = batch(vec![
            ("id", Arc::new(StringArray::from(vec!["1"])) as ArrayRef),
            ("name", Arc::new(StringArray::from(vec!["x"]))),
            ("f", Arc::new(Float64Array::from(vec![1.0]))),
        ]);
        assert!(set.keep_mask(&wrong).is_err());
    }

    #[test]
    fn dense_and_sparse_int_keys_agree_with_a_plain_set() {
        use std::collections::HashSet as StdSet;
        // Dense (a run of values), sparse (extremes force the hash set), and both signs.
        let cases: Vec<Vec<i64>> = vec![
            (-50..50).step_by(3).collect(),
            vec![i64::MIN, -1, 0, 1, i64::MAX],
            (0..5000).map(|i| i * 7919 - 20_000).collect(),
            vec![1 << 40, (1 << 40) + 5, 3],
        ];
        for keys in cases {
            let mut set = EqualityDeleteSet::new();
            let (a, b) = keys.split_at(keys.len() / 2);
            for part in [a, b] {
                let arr: ArrayRef = Arc::new(Int64Array::from(part.to_vec()));
                set.add_batch(&batch(vec![("id", arr)])).unwrap();
            }
            let oracle: StdSet<i64> = keys.iter().copied().collect();
            assert_eq!(set.len(), oracle.len());
            let mut probe: Vec<i64> = keys
                .iter()
                .flat_map(|&k| [k.wrapping_sub(1), k, k.wrapping_add(1)])
                .collect();
            probe.extend([i64::MIN, i64::MAX, 0, 64, 65, -64]);
            let data: ArrayRef = Arc::new(Int64Array::from(probe.clone()));
            let m = set.keep_mask(&batch(vec![("id", data)])).unwrap();
            for (i, v) in probe.iter().enumerate() {
                assert_eq!(m.value(i), !oracle.contains(v), "value {v}");
            }
        }
    }

    #[test]
    fn fixed_width_column_sets_agree_with_a_plain_set() {
        use crate::deletes::compact::tests::Rng;
        use std::collections::HashSet as StdSet;
        // Two to five columns (five take the row encodings), small domains so that keys
        // repeat, nulls, NaN and -0.0 among the floats, int32 deletes against int64 data.
        let mut rng = Rng(29);
        for width in 2..=5 {
            let mut value = |rng: &mut Rng| -> Option<i64> {
                (!rng.chance(15)).then(|| (rng.next() % 4) as i64)
            };
            let floats = [0.0, -0.0, f64::NAN, 1.5];
            let rows = |rng: &mut Rng, n: usize, value: &mut dyn FnMut(&mut Rng) -> Option<i64>| {
                (0..n)
                    .map(|_| (0..width).map(|_| value(rng)).collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            };
            let del = rows(&mut rng, 40, &mut value);
            let data = rows(&mut rng, 400, &mut value);
            let column = |rows: &[Vec<Option<i64>>], j: usize, narrow: bool| -> ArrayRef {
                let vals = rows.iter().map(|r| r[j]);
                if j == 1 {
                    Arc::new(Float64Array::from_iter(
                        vals.map(|v| v.map(|v| floats[v as usize])),
                    ))
                } else if narrow {
                    Arc::new(Int32Array::from_iter(vals.map(|v| v.map(|v| v as i32))))
                } else {
                    Arc::new(Int64Array::from_iter(vals))
                }
            };
            let names: Vec<String> = (0..width).map(|j| format!("c{j}")).collect();
            let to_batch = |rows: &[Vec<Option<i64>>], narrow: bool| {
                RecordBatch::try_from_iter(
                    (0..width).map(|j| (names[j].clone(), column(rows, j, narrow))),
                )
                .unwrap()
            };
            let mut set = EqualityDeleteSet::new();
            let (a, b) = del.split_at(20);
            set.add_batch(&to_batch(a, true)).unwrap();
            set.add_batch(&to_batch(b, true)).unwrap();
            // Each float stands for one class (-0.0 is its own value, NaN equals NaN).
            let oracle: StdSet<Vec<Option<i64>>> = del.iter().cloned().collect();
            assert_eq!(set.len(), oracle.len(), "width {width}");
            let m = set.keep_mask(&to_batch(&data, false)).unwrap();
            for (i, r) in data.iter().enumerate() {
                assert_eq!(m.value(i), !oracle.contains(r), "width {width} row {r:?}");
            }
        }
    }
}
