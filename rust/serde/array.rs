//! Vectorised binary single-value decoding: a binary Arrow array of serialised values (a column
//! of lower or upper bounds, say) into a typed Arrow array, and the reverse. Null stays null.
//!
//! Arrow types: boolean, int32, int64, float32, float64, decimal128(P, S), date32, time64[us],
//! timestamp[us] (tz "UTC" for timestamptz), timestamp[ns] (likewise), utf8, fixed_size_binary(16)
//! for uuid, fixed_size_binary(L), binary.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, FixedSizeBinaryBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, BinaryArray, BooleanArray, PrimitiveArray};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, TimeUnit};

use super::binary::{decimal_from_be, from_bytes, to_bytes};
use super::primitive::{PrimitiveType, Value};
use crate::{Error, Result};

/// Uniform access to the values of binary, large_binary and binary_view arrays.
type ByteFn<'a> = Box<dyn Fn(usize) -> &'a [u8] + 'a>;

fn byte_values<'a>(array: &'a dyn Array) -> Result<ByteFn<'a>> {
    Ok(match array.data_type() {
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            Box::new(move |i| a.value(i))
        }
        DataType::LargeBinary => {
            let a = array.as_binary::<i64>();
            Box::new(move |i| a.value(i))
        }
        DataType::BinaryView => {
            let a = array.as_binary_view();
            Box::new(move |i| a.value(i))
        }
        DataType::FixedSizeBinary(_) => {
            let a = array.as_fixed_size_binary();
            Box::new(move |i| a.value(i))
        }
        other => {
            return Err(Error::validation(format!(
                "cannot decode serialised values from Arrow type {other} (expected binary)"
            )))
        }
    })
}

/// The Arrow type a decoded column of Iceberg type `t` has.
pub fn arrow_type(t: &PrimitiveType) -> Result<DataType> {
    use PrimitiveType as T;
    Ok(match t {
        T::Boolean => DataType::Boolean,
        T::Int => DataType::Int32,
        T::Long => DataType::Int64,
        T::Float => DataType::Float32,
        T::Double => DataType::Float64,
        T::Decimal { precision, scale } => {
            let s = i8::try_from(*scale).map_err(|_| {
                Error::validation(format!(
                    "decimal scale {scale} does not fit an Arrow decimal128"
                ))
            })?;
            DataType::Decimal128(*precision as u8, s)
        }
        T::Date => DataType::Date32,
        T::Time => DataType::Time64(TimeUnit::Microsecond),
        T::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        T::Timestamptz => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        T::TimestampNs => DataType::Timestamp(TimeUnit::Nanosecond, None),
        T::TimestamptzNs => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
        T::String => DataType::Utf8,
        T::Uuid => DataType::FixedSizeBinary(16),
        T::Fixed(l) => DataType::FixedSizeBinary(*l as i32),
        T::Binary => DataType::Binary,
        other => {
            return Err(Error::validation(format!(
                "type {} has no binary single-value serialisation",
                other.name()
            )))
        }
    })
}

fn context(e: Error, i: usize) -> Error {
    e.context(format!("value {i}"))
}

/// Decodes fixed-width little-endian values with `f` (which sees the raw bytes).
fn primitive<'a, T: ArrowPrimitiveType>(
    len: usize,
    nulls: Option<NullBuffer>,
    value: &dyn Fn(usize) -> &'a [u8],
    f: impl Fn(&[u8]) -> Option<T::Native>,
    t: &PrimitiveType,
    dt: DataType,
) -> Result<ArrayRef> {
    let mut out: Vec<T::Native> = Vec::with_capacity(len);
    for i in 0..len {
        let valid = nulls.as_ref().is_none_or(|n| n.is_valid(i));
        if !valid {
            out.push(T::Native::default());
            continue;
        }
        let bytes = value(i);
        match f(bytes) {
            Some(v) => out.push(v),
            // from_bytes gives the precise error message for the malformed value
            None => {
                return Err(context(
                    from_bytes(t, bytes).err().unwrap_or_else(|| {
                        Error::validation(format!("invalid value for type {}", t.name()))
                    }),
                    i,
                ))
            }
        }
    }
    let arr = PrimitiveArray::<T>::new(ScalarBuffer::from(out), nulls).with_data_type(dt);
    Ok(Arc::new(arr))
}

fn le4(b: &[u8]) -> Option<[u8; 4]> {
    b.try_into().ok()
}

fn le8(b: &[u8]) -> Option<[u8; 8]> {
    b.try_into().ok()
}

/// Decodes a binary array of serialised values of type `t` into a typed Arrow array.
pub fn decode_array(t: &PrimitiveType, array: &dyn Array) -> Result<ArrayRef> {
    use PrimitiveType as T;
    let value = byte_values(array)?;
    let value = value.as_ref();
    let len = array.len();
    let nulls = array.logical_nulls();
    let dt = arrow_type(t)?;
    let valid = |i: usize| nulls.as_ref().is_none_or(|n| n.is_valid(i));
    match t {
        T::Boolean => {
            let mut b = BooleanBufferBuilder::new(len);
            for i in 0..len {
                let v = if valid(i) {
                    match value(i) {
                        [x] => *x != 0,
                        other => return Err(context(from_bytes(t, other).unwrap_err(), i)),
                    }
                } else {
                    false
                };
                b.append(v);
            }
            Ok(Arc::new(BooleanArray::new(b.finish(), nulls)))
        }
        T::Int => primitive::<Int32Type>(
            len,
            nulls,
            value,
            |b| Some(i32::from_le_bytes(le4(b)?)),
            t,
            dt,
        ),
        T::Date => primitive::<Date32Type>(
            len,
            nulls,
            value,
            |b| Some(i32::from_le_bytes(le4(b)?)),
            t,
            dt,
        ),
        T::Long => primitive::<Int64Type>(
            len,
            nulls,
            value,
            |b| match b.len() {
                4 => Some(i32::from_le_bytes(le4(b)?) as i64),
                _ => Some(i64::from_le_bytes(le8(b)?)),
            },
            t,
            dt,
        ),
        T::Time => primitive::<Time64MicrosecondType>(
            len,
            nulls,
            value,
            |b| Some(i64::from_le_bytes(le8(b)?)),
            t,
            dt,
        ),
        T::Timestamp | T::Timestamptz => primitive::<TimestampMicrosecondType>(
            len,
            nulls,
            value,
            |b| Some(i64::from_le_bytes(le8(b)?)),
            t,
            dt,
        ),
        T::TimestampNs | T::TimestamptzNs => primitive::<TimestampNanosecondType>(
            len,
            nulls,
            value,
            |b| Some(i64::from_le_bytes(le8(b)?)),
            t,
            dt,
        ),
        T::Float => primitive::<Float32Type>(
            len,
            nulls,
            value,
            |b| Some(f32::from_le_bytes(le4(b)?)),
            t,
            dt,
        ),
        T::Double => primitive::<Float64Type>(
            len,
            nulls,
            value,
            |b| match b.len() {
                4 => Some(f32::from_le_bytes(le4(b)?) as f64),
                _ => Some(f64::from_le_bytes(le8(b)?)),
            },
            t,
            dt,
        ),
        T::Decimal { .. } => primitive::<Decimal128Type>(len, nulls, value, decimal_from_be, t, dt),
        T::String => {
            let mut b = StringBuilder::with_capacity(len, len * 8);
            for i in 0..len {
                if !valid(i) {
                    b.append_null();
                    continue;
                }
                let bytes = value(i);
                match std::str::from_utf8(bytes) {
                    Ok(s) => b.append_value(s),
                    Err(_) => return Err(context(from_bytes(t, bytes).unwrap_err(), i)),
                }
            }
            Ok(Arc::new(b.finish()))
        }
        T::Uuid | T::Fixed(_) => {
            let width = if let T::Fixed(l) = t { *l } else { 16 };
            let mut b = FixedSizeBinaryBuilder::with_capacity(len, width as i32);
            for i in 0..len {
                if !valid(i) {
                    b.append_null();
                    continue;
                }
                let bytes = value(i);
                if bytes.len() != width {
                    return Err(context(from_bytes(t, bytes).unwrap_err(), i));
                }
                b.append_value(bytes)?;
            }
            Ok(Arc::new(b.finish()))
        }
        T::Binary => {
            let mut b = BinaryBuilder::with_capacity(len, len * 8);
            for i in 0..len {
                if valid(i) {
                    b.append_value(value(i));
                } else {
                    b.append_null();
                }
            }
            Ok(Arc::new(b.finish()))
        }
        _ => Err(Error::validation(format!(
            "type {} has no binary single-value serialisation",
            t.name()
        ))),
    }
}

/// Reads slot `i` of a typed Arrow array as the physical [`Value`] of `t`.
fn value_at(t: &PrimitiveType, a: &dyn Array, i: usize) -> Result<Value> {
    use PrimitiveType as T;
    let mismatch = || {
        Error::validation(format!(
            "cannot serialise Arrow type {} as Iceberg type {}",
            a.data_type(),
            t.name()
        ))
    };
    let dt = a.data_type();
    Ok(match (t, dt) {
        (T::Boolean, DataType::Boolean) => Value::Bool(a.as_boolean().value(i)),
        (T::Int, DataType::Int32) => Value::Int(a.as_primitive::<Int32Type>().value(i) as i128),
        (T::Long, DataType::Int64) => Value::Int(a.as_primitive::<Int64Type>().value(i) as i128),
        (T::Float, DataType::Float32) => {
            Value::Float(a.as_primitive::<Float32Type>().value(i) as f64)
        }
        (T::Double, DataType::Float64) => Value::Float(a.as_primitive::<Float64Type>().value(i)),
        (T::Decimal { .. }, DataType::Decimal128(_, _)) => {
            Value::Int(a.as_primitive::<Decimal128Type>().value(i))
        }
        (T::Date, DataType::Date32) => Value::Int(a.as_primitive::<Date32Type>().value(i) as i128),
        (T::Time, DataType::Time64(TimeUnit::Microsecond)) => {
            Value::Int(a.as_primitive::<Time64MicrosecondType>().value(i) as i128)
        }
        (T::Timestamp | T::Timestamptz, DataType::Timestamp(TimeUnit::Microsecond, _)) => {
            Value::Int(a.as_primitive::<TimestampMicrosecondType>().value(i) as i128)
        }
        (T::TimestampNs | T::TimestamptzNs, DataType::Timestamp(TimeUnit::Nanosecond, _)) => {
            Value::Int(a.as_primitive::<TimestampNanosecondType>().value(i) as i128)
        }
        (T::String, DataType::Utf8) => Value::Str(a.as_string::<i32>().value(i).to_owned()),
        (T::String, DataType::LargeUtf8) => Value::Str(a.as_string::<i64>().value(i).to_owned()),
        (T::String, DataType::Utf8View) => Value::Str(a.as_string_view().value(i).to_owned()),
        (T::Uuid | T::Fixed(_) | T::Binary, _) => Value::Bytes(byte_values(a)?(i).to_vec()),
        _ => return Err(mismatch()),
    })
}

/// Serialises every value of a typed Arrow array as Iceberg type `t` into a binary array.
pub fn encode_array(t: &PrimitiveType, array: &dyn Array) -> Result<BinaryArray> {
    let nulls = array.logical_nulls();
    let mut b = BinaryBuilder::with_capacity(array.len(), array.len() * 8);
    for i in 0..array.len() {
        if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            b.append_null();
            continue;
        }
        let v = value_at(t, array, i)?;
        b.append_value(to_bytes(t, &v).map_err(|e| context(e, i))?);
    }
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Decimal128Array, Int32Array, StringArray};

    #[test]
    fn decodes_with_nulls_and_promotion() {
        let a = BinaryArray::from(vec![
            Some(&[0xea, 0x48, 0x01, 0x00][..]),
            None,
            Some(&[0xc8, 0, 0, 0, 0, 0, 0, 0][..]),
        ]);
        let r = decode_array(&PrimitiveType::Long, &a).unwrap();
        let got: Vec<Option<i64>> = r.as_primitive::<Int64Type>().iter().collect();
        assert_eq!(got, vec![Some(84202), None, Some(200)]);
        let dec = PrimitiveType::Decimal {
            precision: 7,
            scale: 4,
        };
        let a = BinaryArray::from(vec![&[0x12, 0xd6, 0x87][..], &[0xed, 0x29, 0x79][..]]);
        let r = decode_array(&dec, &a).unwrap();
        assert_eq!(r.data_type(), &DataType::Decimal128(7, 4));
        let got: Vec<Option<i128>> = r.as_primitive::<Decimal128Type>().iter().collect();
        assert_eq!(got, vec![Some(1234567), Some(-1234567)]);
    }

    #[test]
    fn reports_the_bad_slot() {
        let a = BinaryArray::from(vec![&[1u8, 0, 0, 0][..], &[1u8, 2][..]]);
        let e = decode_array(&PrimitiveType::Int, &a).unwrap_err();
        assert!(e.message().starts_with("value 1: "), "{e}");
        assert!(e.message().contains("0102"), "{e}");
    }

    #[test]
    fn encode_then_decode() {
        let a = Int32Array::from(vec![Some(84202), None, Some(-1)]);
        let enc = encode_array(&PrimitiveType::Int, &a).unwrap();
        assert_eq!(enc.value(0), &[0xea, 0x48, 0x01, 0x00]);
        let dec = decode_array(&PrimitiveType::Int, &enc).unwrap();
        assert_eq!(dec.as_ref(), &a as &dyn Array);
        let s = StringArray::from(vec![Some("ABC"), None]);
        let enc = encode_array(&PrimitiveType::String, &s).unwrap();
        assert_eq!(enc.value(0), b"ABC");
        let d = Decimal128Array::from(vec![345])
            .with_precision_and_scale(3, 2)
            .unwrap();
        let t = PrimitiveType::Decimal {
            precision: 3,
            scale: 2,
        };
        assert_eq!(encode_array(&t, &d).unwrap().value(0), &[0x01, 0x59]);
        assert!(encode_array(&PrimitiveType::Long, &a).is_err());
    }
}
