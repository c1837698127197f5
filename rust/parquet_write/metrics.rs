//! The Iceberg metrics of an encoded file, from its column chunks' statistics and its rows.

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, RecordBatch};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;

use super::{ColumnSpec, EncodedFile, MetricsMode};
use crate::serde::primitive::PrimitiveType;
use crate::transforms::murmur::minimal_twos_complement;
use crate::{Error, Result};

/// The Iceberg metrics of the file of `batch` whose footer is `metadata`.
pub(super) fn metrics(
    batch: &RecordBatch,
    columns: &[ColumnSpec],
    metadata: &ParquetMetaData,
) -> Result<EncodedFile> {
    let mut out = EncodedFile {
        rows: batch.num_rows() as i64,
        ..Default::default()
    };
    for rg in metadata.row_groups() {
        let first = rg.column(0);
        let data = first.data_page_offset();
        let start = match first.dictionary_page_offset() {
            Some(d) if d > 0 && d < data => d,
            _ => data,
        };
        out.split_offsets.push(start);
    }
    out.split_offsets.sort_unstable();
    for (i, spec) in columns.iter().enumerate() {
        if spec.mode == MetricsMode::None {
            continue;
        }
        let fid = spec.field_id;
        let array = batch.column(i);
        let size: i64 = metadata
            .row_groups()
            .iter()
            .map(|rg| rg.column(i).compressed_size())
            .sum();
        out.column_sizes.push((fid, size));
        out.value_counts.push((fid, array.len() as i64));
        out.null_counts.push((fid, array.null_count() as i64));
        if let Some(nan) = nan_count(array) {
            out.nan_counts.push((fid, nan));
        }
        if spec.mode == MetricsMode::Counts {
            continue;
        }
        let stats: Vec<Option<&Statistics>> = metadata
            .row_groups()
            .iter()
            .map(|rg| rg.column(i).statistics())
            .collect();
        if let Some((lo, hi)) = bounds(&spec.iceberg_type, spec.mode, &stats)? {
            out.lower.push((fid, lo));
            if let Some(hi) = hi {
                out.upper.push((fid, hi));
            }
        }
    }
    Ok(out)
}

fn nan_count(array: &ArrayRef) -> Option<i64> {
    fn count<T: Copy>(values: &[T], array: &dyn Array, is_nan: impl Fn(T) -> bool) -> i64 {
        values
            .iter()
            .enumerate()
            .filter(|(i, v)| is_nan(**v) && array.is_valid(*i))
            .count() as i64
    }
    if let Some(a) = array.as_any().downcast_ref::<Float64Array>() {
        return Some(count(a.values(), a, f64::is_nan));
    }
    if let Some(a) = array.as_any().downcast_ref::<Float32Array>() {
        return Some(count(a.values(), a, f32::is_nan));
    }
    None
}

/// A footer minimum or maximum, comparable within one column.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Extreme {
    Int(i128),
    Float(f64),
    Bytes(Vec<u8>),
}

fn extremes(t: &PrimitiveType, s: &Statistics) -> Result<Option<(Extreme, Extreme)>> {
    if s.min_bytes_opt().is_none() || s.max_bytes_opt().is_none() {
        return Ok(None);
    }
    if !s.min_is_exact() || !s.max_is_exact() {
        // statistics truncation is off: inexact bounds would be a writer change to catch
        return Err(Error::internal("inexact column statistics"));
    }
    let decimal = matches!(t, PrimitiveType::Decimal { .. });
    let be = |b: &[u8]| {
        crate::serde::binary::decimal_from_be(b)
            .map(Extreme::Int)
            .ok_or_else(|| Error::internal("decimal statistics wider than 16 bytes"))
    };
    Ok(match s {
        Statistics::Boolean(v) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (Extreme::Int(i128::from(*a)), Extreme::Int(i128::from(*b)))),
        Statistics::Int32(v) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (Extreme::Int(i128::from(*a)), Extreme::Int(i128::from(*b)))),
        Statistics::Int64(v) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (Extreme::Int(i128::from(*a)), Extreme::Int(i128::from(*b)))),
        Statistics::Float(v) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (Extreme::Float(f64::from(*a)), Extreme::Float(f64::from(*b)))),
        Statistics::Double(v) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (Extreme::Float(*a), Extreme::Float(*b))),
        Statistics::ByteArray(v) => match v.min_opt().zip(v.max_opt()) {
            Some((a, b)) if decimal => Some((be(a.data())?, be(b.data())?)),
            Some((a, b)) => Some((
                Extreme::Bytes(a.data().to_vec()),
                Extreme::Bytes(b.data().to_vec()),
            )),
            None => None,
        },
        Statistics::FixedLenByteArray(v) => match v.min_opt().zip(v.max_opt()) {
            Some((a, b)) if decimal => Some((be(a.data())?, be(b.data())?)),
            _ => None,
        },
        Statistics::Int96(_) => None,
    })
}

type Bounds = Option<(Vec<u8>, Option<Vec<u8>>)>;

fn bounds(t: &PrimitiveType, mode: MetricsMode, stats: &[Option<&Statistics>]) -> Result<Bounds> {
    let mut lo: Option<Extreme> = None;
    let mut hi: Option<Extreme> = None;
    for s in stats {
        let Some(s) = s else {
            return Err(Error::internal("a column chunk without statistics"));
        };
        // A row group of only nulls has no minimum; one of only NaN (and nulls) has NaN as
        // both: neither adds to the bounds, which cover the values neither null nor NaN.
        let Some((a, b)) = extremes(t, s)? else {
            continue;
        };
        if let (Extreme::Float(x), Extreme::Float(y)) = (&a, &b) {
            if x.is_nan() || y.is_nan() {
                continue;
            }
        }
        if lo.as_ref().is_none_or(|l| a < *l) {
            lo = Some(a);
        }
        if hi.as_ref().is_none_or(|h| b > *h) {
            hi = Some(b);
        }
    }
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return Ok(None);
    };
    encode_bounds(t, mode, lo, hi)
}

fn encode_bounds(t: &PrimitiveType, mode: MetricsMode, lo: Extreme, hi: Extreme) -> Result<Bounds> {
    let truncate = match mode {
        MetricsMode::Truncate(n) => Some(n),
        _ => None,
    };
    Ok(match (t, lo, hi) {
        (PrimitiveType::Boolean, Extreme::Int(a), Extreme::Int(b)) => {
            Some((vec![u8::from(a != 0)], Some(vec![u8::from(b != 0)])))
        }
        (PrimitiveType::Int | PrimitiveType::Date, Extreme::Int(a), Extreme::Int(b)) => Some((
            (a as i32).to_le_bytes().to_vec(),
            Some((b as i32).to_le_bytes().to_vec()),
        )),
        (
            PrimitiveType::Long
            | PrimitiveType::Time
            | PrimitiveType::Timestamp
            | PrimitiveType::Timestamptz
            | PrimitiveType::TimestampNs
            | PrimitiveType::TimestamptzNs,
            Extreme::Int(a),
            Extreme::Int(b),
        ) => Some((
            (a as i64).to_le_bytes().to_vec(),
            Some((b as i64).to_le_bytes().to_vec()),
        )),
        (PrimitiveType::Decimal { .. }, Extreme::Int(a), Extreme::Int(b)) => Some((
            minimal_twos_complement(&a.to_be_bytes()).to_vec(),
            Some(minimal_twos_complement(&b.to_be_bytes()).to_vec()),
        )),
        (PrimitiveType::Float, Extreme::Float(a), Extreme::Float(b)) => {
            let (a, b) = signed_zeros(a, b);
            Some((
                (a as f32).to_le_bytes().to_vec(),
                Some((b as f32).to_le_bytes().to_vec()),
            ))
        }
        (PrimitiveType::Double, Extreme::Float(a), Extreme::Float(b)) => {
            let (a, b) = signed_zeros(a, b);
            Some((a.to_le_bytes().to_vec(), Some(b.to_le_bytes().to_vec())))
        }
        (PrimitiveType::String, Extreme::Bytes(a), Extreme::Bytes(b)) => match truncate {
            None => Some((a, Some(b))),
            Some(n) => {
                let a = std::str::from_utf8(&a)
                    .map_err(|_| Error::validation("string column holds invalid UTF-8"))?;
                let b = std::str::from_utf8(&b)
                    .map_err(|_| Error::validation("string column holds invalid UTF-8"))?;
                Some((
                    truncate_lower_str(a, n).into_bytes(),
                    truncate_upper_str(b, n).map(String::into_bytes),
                ))
            }
        },
        (PrimitiveType::Binary, Extreme::Bytes(a), Extreme::Bytes(b)) => match truncate {
            None => Some((a, Some(b))),
            Some(n) => Some((a[..a.len().min(n)].to_vec(), truncate_upper(&b, n))),
        },
        (t, _, _) => {
            return Err(Error::internal(format!(
                "statistics do not match column type {}",
                t.name()
            )))
        }
    })
}

/// Zero as a lower bound is `-0.0`, as an upper bound `+0.0` (the spec orders `-0.0` first).
fn signed_zeros(lo: f64, hi: f64) -> (f64, f64) {
    (
        if lo == 0.0 { -0.0 } else { lo },
        if hi == 0.0 { 0.0 } else { hi },
    )
}

/// The first `n` code points of `s`.
pub(super) fn truncate_lower_str(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The smallest string of at most `n` code points above every string that starts with the
/// first `n` of `s` (the last incrementable code point incremented, surrogates skipped), `s`
/// itself when short enough, `None` when no code point can be incremented.
pub(super) fn truncate_upper_str(s: &str, n: usize) -> Option<String> {
    let mut chars: Vec<char> = s.chars().take(n + 1).collect();
    if chars.len() <= n {
        return Some(s.to_string());
    }
    chars.truncate(n);
    while let Some(last) = chars.pop() {
        let mut cp = last as u32 + 1;
        if (0xD800..=0xDFFF).contains(&cp) {
            cp = 0xE000;
        }
        if let Some(c) = char::from_u32(cp) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// As [`truncate_upper_str`] for bytes: the prefix of `n` bytes with its last byte below 0xFF
/// incremented, `value` itself when short enough, `None` when every byte is 0xFF.
pub(super) fn truncate_upper(value: &[u8], n: usize) -> Option<Vec<u8>> {
    if value.len() <= n {
        return Some(value.to_vec());
    }
    let mut prefix = value[..n].to_vec();
    while let Some(last) = prefix.pop() {
        if last < 0xFF {
            prefix.push(last + 1);
            return Some(prefix);
        }
    }
    None
}
