//! `truncate[W]` over Arrow arrays (spec "Truncate Transform Details"): integers and decimal
//! unscaled values to the multiple of W at or below them (positive remainder), strings to at most
//! W unicode code points (never splitting a character), binary to at most W bytes. The result
//! has the input's Arrow type; nulls stay null.

use std::sync::Arc;

use arrow_array::builder::{BinaryViewBuilder, StringViewBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, GenericByteArray, PrimitiveArray};
use arrow_buffer::{i256, ArrowNativeType, Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;

use super::unsupported;
use crate::{Error, Result};

fn primitive<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    f: impl Fn(T::Native) -> T::Native,
) -> PrimitiveArray<T> {
    let out: Vec<T::Native> = a.values().iter().map(|v| f(*v)).collect();
    PrimitiveArray::<T>::new(ScalarBuffer::from(out), a.nulls().cloned())
}

/// Byte length of the first `w` code points of valid UTF-8 `s`.
#[inline]
pub fn utf8_prefix_len(s: &[u8], w: usize) -> usize {
    if s.len() <= w {
        return s.len();
    }
    let mut count = 0usize;
    for (i, &b) in s.iter().enumerate() {
        if b & 0xC0 != 0x80 {
            if count == w {
                return i;
            }
            count += 1;
        }
    }
    s.len()
}

/// Truncates every value of an offset-based byte array (string or binary) with `cut`, which
/// returns the kept byte length of a value. Values are copied into one new data buffer.
fn offsets_array<T: ByteArrayType>(
    a: &GenericByteArray<T>,
    cut: impl Fn(&[u8]) -> usize,
) -> Result<ArrayRef> {
    let offs = a.value_offsets();
    let data = a.value_data();
    let mut out_offsets: Vec<T::Offset> = Vec::with_capacity(offs.len());
    let mut out_data: Vec<u8> = Vec::with_capacity(data.len().min(offs.len() * 16));
    out_offsets.push(T::Offset::usize_as(0));
    for w in offs.windows(2) {
        let v = &data[w[0].as_usize()..w[1].as_usize()];
        out_data.extend_from_slice(&v[..cut(v)]);
        out_offsets.push(T::Offset::usize_as(out_data.len()));
    }
    // Safety: offsets are monotonic by construction and each cut keeps valid UTF-8 for strings.
    let arr = unsafe {
        GenericByteArray::<T>::new_unchecked(
            OffsetBuffer::new_unchecked(ScalarBuffer::from(out_offsets)),
            Buffer::from_vec(out_data),
            a.nulls().cloned(),
        )
    };
    Ok(Arc::new(arr))
}

/// `v - (((v % W) + W) % W)` computed without intermediate overflow; the final subtraction
/// wraps like Java's int/long arithmetic at the very bottom of the range.
#[inline(always)]
fn trunc_i64(v: i64, w: i64) -> i64 {
    v.wrapping_sub(v.rem_euclid(w))
}

#[inline(always)]
fn trunc_i32(v: i32, w: i32) -> i32 {
    v.wrapping_sub(v.rem_euclid(w))
}

#[inline(always)]
fn trunc_i128(v: i128, w: i128) -> i128 {
    v.wrapping_sub(v.rem_euclid(w))
}

#[inline(always)]
fn trunc_i256(v: i256, w: i256) -> i256 {
    let mut r = v.wrapping_rem(w);
    if r < i256::ZERO {
        r = r.wrapping_add(w);
    }
    v.wrapping_sub(r)
}

/// Applies `truncate[w]` to `array`.
pub fn truncate(array: &dyn Array, w: i32) -> Result<ArrayRef> {
    if w <= 0 {
        return Err(Error::validation(format!(
            "invalid truncate width: {w} (must be > 0)"
        )));
    }
    let wu = w as usize;
    Ok(match array.data_type() {
        DataType::Int32 => Arc::new(primitive(array.as_primitive::<Int32Type>(), |v| {
            trunc_i32(v, w)
        })),
        DataType::Int64 => {
            let wl = w as i64;
            Arc::new(primitive(array.as_primitive::<Int64Type>(), |v| {
                trunc_i64(v, wl)
            }))
        }
        DataType::Decimal128(p, s) => {
            let wd = w as i128;
            let a = primitive(array.as_primitive::<Decimal128Type>(), |v| {
                trunc_i128(v, wd)
            });
            Arc::new(a.with_precision_and_scale(*p, *s)?)
        }
        DataType::Decimal256(p, s) => {
            let wd = i256::from_i128(w as i128);
            let a = primitive(array.as_primitive::<Decimal256Type>(), |v| {
                trunc_i256(v, wd)
            });
            Arc::new(a.with_precision_and_scale(*p, *s)?)
        }
        DataType::Utf8 => offsets_array(array.as_string::<i32>(), |v| utf8_prefix_len(v, wu))?,
        DataType::LargeUtf8 => offsets_array(array.as_string::<i64>(), |v| utf8_prefix_len(v, wu))?,
        DataType::Binary => offsets_array(array.as_binary::<i32>(), |v| v.len().min(wu))?,
        DataType::LargeBinary => offsets_array(array.as_binary::<i64>(), |v| v.len().min(wu))?,
        DataType::Utf8View => {
            let a = array.as_string_view();
            let mut b = StringViewBuilder::with_capacity(a.len());
            for v in a.iter() {
                match v {
                    Some(s) => b.append_value(&s[..utf8_prefix_len(s.as_bytes(), wu)]),
                    None => b.append_null(),
                }
            }
            Arc::new(b.finish())
        }
        DataType::BinaryView => {
            let a = array.as_binary_view();
            let mut b = BinaryViewBuilder::with_capacity(a.len());
            for v in a.iter() {
                match v {
                    Some(s) => b.append_value(&s[..s.len().min(wu)]),
                    None => b.append_null(),
                }
            }
            Arc::new(b.finish())
        }
        other => return Err(unsupported("truncate", other)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{BinaryArray, Decimal128Array, Int32Array, Int64Array, StringArray};

    #[test]
    fn integers_use_positive_remainder() {
        let input = [0, 1, 5, 9, 10, 11, -1, -5, -10, -11];
        let want = [0, 0, 0, 0, 10, 10, -10, -10, -10, -20];
        let a = Int32Array::from(input.to_vec());
        let r = truncate(&a, 10).unwrap();
        assert_eq!(
            r.as_primitive::<Int32Type>().values().to_vec(),
            want.to_vec()
        );
        let a = Int64Array::from(input.iter().map(|v| *v as i64).collect::<Vec<_>>());
        let r = truncate(&a, 10).unwrap();
        let want64: Vec<i64> = want.iter().map(|v| *v as i64).collect();
        assert_eq!(r.as_primitive::<Int64Type>().values().to_vec(), want64);
    }

    #[test]
    fn decimals_by_unscaled_value() {
        let a = Decimal128Array::from(vec![
            Some(1234),
            Some(1230),
            Some(1229),
            Some(5),
            Some(-5),
            None,
        ])
        .with_precision_and_scale(9, 2)
        .unwrap();
        let r = truncate(&a, 10).unwrap();
        assert_eq!(r.data_type(), &DataType::Decimal128(9, 2));
        let got: Vec<Option<i128>> = r.as_primitive::<Decimal128Type>().iter().collect();
        assert_eq!(
            got,
            vec![Some(1230), Some(1230), Some(1220), Some(0), Some(-10), None]
        );
        let a = Decimal128Array::from(vec![1065])
            .with_precision_and_scale(4, 2)
            .unwrap();
        let r = truncate(&a, 50).unwrap();
        assert_eq!(r.as_primitive::<Decimal128Type>().value(0), 1050);
    }

    #[test]
    fn strings_by_code_points_binary_by_bytes() {
        let a = StringArray::from(vec![
            Some("abcdefg"),
            Some("abc"),
            None,
            Some("ééééé€"),
            Some("iceberg"),
        ]);
        let r = truncate(&a, 5).unwrap();
        let got: Vec<Option<&str>> = r.as_string::<i32>().iter().collect();
        assert_eq!(
            got,
            vec![
                Some("abcde"),
                Some("abc"),
                None,
                Some("ééééé"),
                Some("icebe")
            ]
        );
        let r = truncate(&a, 3).unwrap();
        assert_eq!(r.as_string::<i32>().value(4), "ice");
        let a = BinaryArray::from(vec![&b"abcdefg"[..], &b"ab"[..]]);
        let r = truncate(&a, 4).unwrap();
        let got: Vec<Option<&[u8]>> = r.as_binary::<i32>().iter().collect();
        assert_eq!(got, vec![Some(&b"abcd"[..]), Some(&b"ab"[..])]);
    }

    #[test]
    fn rejects_zero_width() {
        let a = Int32Array::from(vec![1]);
        let e = truncate(&a, 0).unwrap_err();
        assert_eq!(e.message(), "invalid truncate width: 0 (must be > 0)");
    }
}
