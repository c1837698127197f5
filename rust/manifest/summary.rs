//! Partition field summaries of a manifest (`field_summary`: contains_null, contains_nan,
//! lower/upper bound in the spec's single-value binary form, Appendix D).
//!
//! The binary encoding of the bounds is implemented here for the partition value types; it
//! should be unified with `rust/serde/` (single-value serialisation) once that is on main.

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use super::partition::decimal_size;
use crate::{Error, Result};

/// (contains_null, contains_nan, encoded (lower, upper)).
type Acc = (bool, bool, Option<(Vec<u8>, Vec<u8>)>);

/// One partition field's summary.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSummary {
    pub contains_null: bool,
    pub contains_nan: bool,
    pub lower: Option<Vec<u8>>,
    pub upper: Option<Vec<u8>>,
}

fn minmax<T: Copy>(
    n: usize,
    valid: impl Fn(usize) -> bool,
    get: impl Fn(usize) -> T,
    skip: impl Fn(T) -> bool,
    cmp: impl Fn(&T, &T) -> Ordering,
) -> (bool, bool, Option<(T, T)>) {
    let (mut has_null, mut has_skip) = (false, false);
    let mut acc: Option<(T, T)> = None;
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
            None => (v, v),
            Some((lo, hi)) => (
                if cmp(&v, &lo) == Ordering::Less {
                    v
                } else {
                    lo
                },
                if cmp(&v, &hi) == Ordering::Greater {
                    v
                } else {
                    hi
                },
            ),
        });
    }
    (has_null, has_skip, acc)
}

/// Minimal big-endian two's complement bytes of an unscaled decimal (Java's
/// `BigInteger.toByteArray`).
pub fn decimal_bytes(v: i128) -> Vec<u8> {
    let b = v.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (cur, next) = (b[start], b[start + 1]);
        if (cur == 0 && next & 0x80 == 0) || (cur == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    b[start..].to_vec()
}

/// Summarises one partition column (a child of the partition struct).
pub fn summarize(col: &ArrayRef) -> Result<FieldSummary> {
    let n = col.len();
    let valid = |i: usize| col.is_valid(i);
    let pack = |(has_null, nan, acc): Acc| FieldSummary {
        contains_null: has_null,
        contains_nan: nan,
        lower: acc.as_ref().map(|a| a.0.clone()),
        upper: acc.map(|a| a.1),
    };
    macro_rules! prim {
        ($t:ty, $enc:expr) => {{
            let a = col.as_primitive::<$t>();
            let (h, s, acc) = minmax(n, valid, |i| a.value(i), |_| false, |x, y| x.cmp(y));
            pack((h, s, acc.map(|(l, u)| ($enc(l), $enc(u)))))
        }};
    }
    let le4 = |v: i32| v.to_le_bytes().to_vec();
    let le8 = |v: i64| v.to_le_bytes().to_vec();
    Ok(match col.data_type() {
        DataType::Boolean => {
            let a = col.as_boolean();
            let (h, s, acc) = minmax(n, valid, |i| a.value(i), |_| false, |x, y| x.cmp(y));
            pack((h, s, acc.map(|(l, u)| (vec![l as u8], vec![u as u8]))))
        }
        DataType::Int32 => prim!(Int32Type, le4),
        DataType::Date32 => prim!(Date32Type, le4),
        DataType::Int64 => prim!(Int64Type, le8),
        DataType::Timestamp(_, _) | DataType::Time64(_) => {
            let data = col.to_data();
            let vals: &[i64] = &data.buffers()[0].typed_data::<i64>()[data.offset()..];
            let (h, s, acc) = minmax(n, valid, |i| vals[i], |_| false, |x, y| x.cmp(y));
            pack((h, s, acc.map(|(l, u)| (le8(l), le8(u)))))
        }
        DataType::Float32 => {
            let a = col.as_primitive::<Float32Type>();
            let (h, s, acc) = minmax(n, valid, |i| a.value(i), f32::is_nan, |x, y| x.total_cmp(y));
            pack((
                h,
                s,
                acc.map(|(l, u)| (l.to_le_bytes().to_vec(), u.to_le_bytes().to_vec())),
            ))
        }
        DataType::Float64 => {
            let a = col.as_primitive::<Float64Type>();
            let (h, s, acc) = minmax(n, valid, |i| a.value(i), f64::is_nan, |x, y| x.total_cmp(y));
            pack((
                h,
                s,
                acc.map(|(l, u)| (l.to_le_bytes().to_vec(), u.to_le_bytes().to_vec())),
            ))
        }
        DataType::Decimal128(p, _) => {
            let a = col.as_primitive::<Decimal128Type>();
            let _ = decimal_size(*p);
            let (h, s, acc) = minmax(n, valid, |i| a.value(i), |_| false, |x, y| x.cmp(y));
            pack((h, s, acc.map(|(l, u)| (decimal_bytes(l), decimal_bytes(u)))))
        }
        DataType::Utf8 => {
            let a = col.as_string::<i32>();
            let (h, s, acc) = minmax(
                n,
                valid,
                |i| a.value(i).as_bytes(),
                |_| false,
                |x, y| x.cmp(y),
            );
            pack((h, s, acc.map(|(l, u)| (l.to_vec(), u.to_vec()))))
        }
        DataType::Binary => {
            let a = col.as_binary::<i32>();
            let (h, s, acc) = minmax(n, valid, |i| a.value(i), |_| false, |x, y| x.cmp(y));
            pack((h, s, acc.map(|(l, u)| (l.to_vec(), u.to_vec()))))
        }
        DataType::FixedSizeBinary(_) => {
            let a = col.as_fixed_size_binary();
            let (h, s, acc) = minmax(n, valid, |i| a.value(i), |_| false, |x, y| x.cmp(y));
            pack((h, s, acc.map(|(l, u)| (l.to_vec(), u.to_vec()))))
        }
        DataType::Null => FieldSummary {
            contains_null: n > 0,
            ..Default::default()
        },
        other => {
            return Err(Error::validation(format!(
                "partition values of type {other} cannot be summarised"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, Int32Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn decimal_minimal_bytes() {
        assert_eq!(decimal_bytes(345), vec![0x01, 0x59]);
        assert_eq!(decimal_bytes(1234567), vec![0x12, 0xd6, 0x87]);
        assert_eq!(decimal_bytes(-1234567), vec![0xed, 0x29, 0x79]);
        assert_eq!(decimal_bytes(11), vec![0x0b]);
        assert_eq!(decimal_bytes(0), vec![0]);
        assert_eq!(decimal_bytes(-1), vec![0xff]);
        assert_eq!(decimal_bytes(128), vec![0, 0x80]);
    }

    #[test]
    fn summaries_follow_nan_and_zero_rules() {
        let a: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(0.0),
            Some(f64::NAN),
            None,
            Some(-0.0),
        ]));
        let s = summarize(&a).unwrap();
        assert!(s.contains_null && s.contains_nan);
        assert_eq!(s.lower.unwrap(), (-0.0f64).to_le_bytes().to_vec());
        assert_eq!(s.upper.unwrap(), 0.0f64.to_le_bytes().to_vec());
        let a: ArrayRef = Arc::new(Int32Array::from(vec![5, -3, 7]));
        let s = summarize(&a).unwrap();
        assert_eq!(s.lower.unwrap(), (-3i32).to_le_bytes().to_vec());
        assert!(!s.contains_null);
        let a: ArrayRef = Arc::new(StringArray::from(vec!["b", "a", "c"]));
        assert_eq!(summarize(&a).unwrap().upper.unwrap(), b"c".to_vec());
    }
}
