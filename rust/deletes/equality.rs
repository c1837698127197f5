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
#[path = "equality_tests.rs"]
mod tests;
