//! Feeding Arrow columns into a sketch, each value as its Iceberg single-value binary
//! serialisation (spec Appendix D), which is what Java's `Conversions.toByteBuffer` produces:
//! 4-byte LE int/date, 8-byte LE long/time/timestamps, raw IEEE bits for floats (not
//! canonicalised), one byte for booleans, UTF-8 for strings, raw bytes for binary, fixed and
//! uuid (16 bytes big-endian), and the minimal big-endian two's complement of a decimal's
//! unscaled value. Nulls and empty strings/binaries are skipped.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
    Time64MicrosecondType, Time64NanosecondType, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray};
use arrow_schema::{DataType, TimeUnit};

use super::{theta_hash, ThetaSketch};
use crate::{Error, Result};

fn feed_primitive<T, const N: usize>(
    sketch: &mut ThetaSketch,
    array: &PrimitiveArray<T>,
    bytes: impl Fn(T::Native) -> [u8; N],
) where
    T: ArrowPrimitiveType,
{
    let values = array.values();
    match array.nulls().filter(|n| n.null_count() > 0) {
        None => values
            .iter()
            .for_each(|&v| sketch.update_hash(theta_hash(&bytes(v)))),
        Some(nulls) => nulls
            .valid_indices()
            .for_each(|i| sketch.update_hash(theta_hash(&bytes(values[i])))),
    }
}

fn feed_bytes<'a>(sketch: &mut ThetaSketch, values: impl Iterator<Item = Option<&'a [u8]>>) {
    values.flatten().for_each(|v| sketch.update_bytes(v));
}

/// `BigInteger.toByteArray()` of an unscaled decimal: minimal big-endian two's complement.
pub(crate) fn decimal_bytes(v: i128, out: &mut [u8; 16]) -> &[u8] {
    *out = v.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (b, next) = (out[start], out[start + 1]);
        if (b == 0x00 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    &out[start..]
}

/// Adds every non-null, non-empty value of `array` to `sketch`.
pub fn update_from_array(sketch: &mut ThetaSketch, array: &dyn Array) -> Result<()> {
    match array.data_type() {
        DataType::Boolean => {
            let a = array.as_boolean();
            a.iter()
                .flatten()
                .for_each(|b| sketch.update_hash(theta_hash(&[u8::from(b)])));
        }
        DataType::Int32 => {
            feed_primitive(sketch, array.as_primitive::<Int32Type>(), i32::to_le_bytes)
        }
        DataType::Date32 => {
            feed_primitive(sketch, array.as_primitive::<Date32Type>(), i32::to_le_bytes)
        }
        DataType::Int64 => {
            feed_primitive(sketch, array.as_primitive::<Int64Type>(), i64::to_le_bytes)
        }
        DataType::Time64(TimeUnit::Microsecond) => feed_primitive(
            sketch,
            array.as_primitive::<Time64MicrosecondType>(),
            i64::to_le_bytes,
        ),
        DataType::Time64(TimeUnit::Nanosecond) => feed_primitive(
            sketch,
            array.as_primitive::<Time64NanosecondType>(),
            i64::to_le_bytes,
        ),
        DataType::Timestamp(unit, _) => match unit {
            TimeUnit::Second => feed_primitive(
                sketch,
                array.as_primitive::<TimestampSecondType>(),
                i64::to_le_bytes,
            ),
            TimeUnit::Millisecond => feed_primitive(
                sketch,
                array.as_primitive::<TimestampMillisecondType>(),
                i64::to_le_bytes,
            ),
            TimeUnit::Microsecond => feed_primitive(
                sketch,
                array.as_primitive::<TimestampMicrosecondType>(),
                i64::to_le_bytes,
            ),
            TimeUnit::Nanosecond => feed_primitive(
                sketch,
                array.as_primitive::<TimestampNanosecondType>(),
                i64::to_le_bytes,
            ),
        },
        DataType::Float32 => feed_primitive(sketch, array.as_primitive::<Float32Type>(), |v| {
            v.to_bits().to_le_bytes()
        }),
        DataType::Float64 => feed_primitive(sketch, array.as_primitive::<Float64Type>(), |v| {
            v.to_bits().to_le_bytes()
        }),
        DataType::Decimal128(_, _) => {
            let a = array.as_primitive::<Decimal128Type>();
            let mut buf = [0u8; 16];
            for v in a.iter().flatten() {
                sketch.update_hash(theta_hash(decimal_bytes(v, &mut buf)));
            }
        }
        DataType::Utf8 => feed_bytes(
            sketch,
            array
                .as_string::<i32>()
                .iter()
                .map(|v| v.map(str::as_bytes)),
        ),
        DataType::LargeUtf8 => feed_bytes(
            sketch,
            array
                .as_string::<i64>()
                .iter()
                .map(|v| v.map(str::as_bytes)),
        ),
        DataType::Utf8View => feed_bytes(
            sketch,
            array.as_string_view().iter().map(|v| v.map(str::as_bytes)),
        ),
        DataType::Binary => feed_bytes(sketch, array.as_binary::<i32>().iter()),
        DataType::LargeBinary => feed_bytes(sketch, array.as_binary::<i64>().iter()),
        DataType::BinaryView => feed_bytes(sketch, array.as_binary_view().iter()),
        DataType::FixedSizeBinary(_) => feed_bytes(sketch, array.as_fixed_size_binary().iter()),
        other => {
            return Err(Error::unsupported(format!(
                "theta sketches of {other} columns are not supported"
            )))
        }
    }
    Ok(())
}
