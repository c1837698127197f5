//! Partition field summaries of a manifest (`field_summary`: contains_null, contains_nan,
//! lower/upper bound). The bounds are chosen here with the spec's ordering rules (NaN is left
//! out and reported as `contains_nan`; -0.0 orders before 0.0) and serialised by the shared
//! Appendix D encoder of `crate::serde`.

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use crate::serde::array::encode_array;
use crate::serde::PrimitiveType;
use crate::{Error, Result};

/// One partition field's summary.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSummary {
    pub contains_null: bool,
    pub contains_nan: bool,
    pub lower: Option<Vec<u8>>,
    pub upper: Option<Vec<u8>>,
}

/// Scans rows `0..n`: whether some are null, whether some are skipped (NaN), and the rows of
/// the smallest and largest remaining values.
fn minmax<T: Copy>(
    n: usize,
    valid: impl Fn(usize) -> bool,
    get: impl Fn(usize) -> T,
    skip: impl Fn(T) -> bool,
    cmp: impl Fn(&T, &T) -> Ordering,
) -> (bool, bool, Option<(usize, usize)>) {
    let (mut has_null, mut has_skip) = (false, false);
    let mut acc: Option<(usize, T, usize, T)> = None;
    for i in 0..n {
        if !valid(i) {
            has_null = true;
            continue;
        }
        let v = get(i);
        if skip(v) {
            has_skip = true;
            continue;
        }
        acc = Some(match acc {
            None => (i, v, i, v),
            Some((li, lo, hi_i, hi)) => {
                let (li, lo) = if cmp(&v, &lo) == Ordering::Less {
                    (i, v)
                } else {
                    (li, lo)
                };
                let (hi_i, hi) = if cmp(&v, &hi) == Ordering::Greater {
                    (i, v)
                } else {
                    (hi_i, hi)
                };
                (li, lo, hi_i, hi)
            }
        });
    }
    (has_null, has_skip, acc.map(|(l, _, h, _)| (l, h)))
}

/// Summarises one partition column (a child of the partition struct) of Iceberg type `t`.
pub fn summarize(col: &ArrayRef, t: &PrimitiveType) -> Result<FieldSummary> {
    let n = col.len();
    let valid = |i: usize| col.is_valid(i);
    macro_rules! ord {
        ($a:expr) => {{
            let a = $a;
            minmax(n, valid, |i| a.value(i), |_| false, |x, y| x.cmp(y))
        }};
    }
    let (contains_null, contains_nan, rows) = match col.data_type() {
        DataType::Boolean => ord!(col.as_boolean()),
        DataType::Int32 => ord!(col.as_primitive::<Int32Type>()),
        DataType::Date32 => ord!(col.as_primitive::<Date32Type>()),
        DataType::Int64 => ord!(col.as_primitive::<Int64Type>()),
        DataType::Timestamp(_, _) | DataType::Time64(_) => {
            let data = col.to_data();
            let vals: &[i64] = &data.buffers()[0].typed_data::<i64>()[data.offset()..];
            minmax(n, valid, |i| vals[i], |_| false, |x, y| x.cmp(y))
        }
        DataType::Float32 => {
            let a = col.as_primitive::<Float32Type>();
            minmax(n, valid, |i| a.value(i), f32::is_nan, |x, y| x.total_cmp(y))
        }
        DataType::Float64 => {
            let a = col.as_primitive::<Float64Type>();
            minmax(n, valid, |i| a.value(i), f64::is_nan, |x, y| x.total_cmp(y))
        }
        DataType::Decimal128(_, _) => ord!(col.as_primitive::<Decimal128Type>()),
        DataType::Utf8 => {
            let a = col.as_string::<i32>();
            minmax(
                n,
                valid,
                |i| a.value(i).as_bytes(),
                |_| false,
                |x, y| x.cmp(y),
            )
        }
        DataType::Binary => ord!(col.as_binary::<i32>()),
        DataType::FixedSizeBinary(_) => ord!(col.as_fixed_size_binary()),
        DataType::Null => (n > 0, false, None),
        other => {
            return Err(Error::validation(format!(
                "partition values of type {other} cannot be summarised"
            )))
        }
    };
    let encode = |row: usize| -> Result<Vec<u8>> {
        let b = encode_array(t, col.slice(row, 1).as_ref())?;
        Ok(b.value(0).to_vec())
    };
    let (lower, upper) = match rows {
        Some((lo, hi)) => (Some(encode(lo)?), Some(encode(hi)?)),
        None => (None, None),
    };
    Ok(FieldSummary {
        contains_null,
        contains_nan,
        lower,
        upper,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Decimal128Array, Float64Array, Int32Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn decimal_bounds_are_minimal_bytes() {
        // Appendix D: unscaled, two's complement, big-endian, minimal length.
        let a: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(1234567), None, Some(-1234567), Some(11)])
                .with_precision_and_scale(9, 2)
                .unwrap(),
        );
        let t = PrimitiveType::Decimal {
            precision: 9,
            scale: 2,
        };
        let s = summarize(&a, &t).unwrap();
        assert!(s.contains_null);
        assert_eq!(s.lower.unwrap(), vec![0xed, 0x29, 0x79]);
        assert_eq!(s.upper.unwrap(), vec![0x12, 0xd6, 0x87]);
    }

    #[test]
    fn summaries_follow_nan_and_zero_rules() {
        let a: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(0.0),
            Some(f64::NAN),
            None,
            Some(-0.0),
        ]));
        let s = summarize(&a, &PrimitiveType::Double).unwrap();
        assert!(s.contains_null && s.contains_nan);
        assert_eq!(s.lower.unwrap(), (-0.0f64).to_le_bytes().to_vec());
        assert_eq!(s.upper.unwrap(), 0.0f64.to_le_bytes().to_vec());
        let a: ArrayRef = Arc::new(Float64Array::from(vec![f64::NAN]));
        let s = summarize(&a, &PrimitiveType::Double).unwrap();
        assert!(s.contains_nan && !s.contains_null && s.lower.is_none());
        let a: ArrayRef = Arc::new(Int32Array::from(vec![5, -3, 7]));
        let s = summarize(&a, &PrimitiveType::Int).unwrap();
        assert_eq!(s.lower.unwrap(), (-3i32).to_le_bytes().to_vec());
        assert_eq!(s.upper.unwrap(), 7i32.to_le_bytes().to_vec());
        assert!(!s.contains_null);
        let a: ArrayRef = Arc::new(StringArray::from(vec!["b", "a", "c"]));
        let s = summarize(&a, &PrimitiveType::String).unwrap();
        assert_eq!(s.upper.unwrap(), b"c".to_vec());
        assert_eq!(s.lower.unwrap(), b"a".to_vec());
    }
}
