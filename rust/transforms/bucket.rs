//! `bucket[N]` over Arrow arrays: murmur3 x86_32 (seed 0) of each value's spec-defined bytes,
//! then `(hash & Integer.MAX_VALUE) % N`. Null in, null out: the input's validity is reused and
//! the hash loop runs branch-free over every slot (null slots compute a value nobody reads).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, Int32Array, PrimitiveArray};
use arrow_buffer::{i256, ScalarBuffer};
use arrow_schema::{DataType, TimeUnit};

use super::murmur::{hash_bytes, hash_double, hash_i128, hash_long, minimal_twos_complement};
use super::unsupported;
use crate::{Error, Result};

/// `a % d` for a fixed divisor without a division instruction (Lemire, Kaser, Kurz:
/// "Faster remainder by direct computation", 2019); exact for every u32 `a` and `d >= 1`.
#[derive(Clone, Copy)]
struct FastMod {
    m: u64,
    d: u32,
}

impl FastMod {
    fn new(d: u32) -> Self {
        debug_assert!(d >= 1);
        FastMod {
            m: (u64::MAX / d as u64).wrapping_add(1),
            d,
        }
    }

    #[inline(always)]
    fn rem(self, a: u32) -> u32 {
        let low = self.m.wrapping_mul(a as u64);
        ((low as u128 * self.d as u128) >> 64) as u32
    }
}

#[inline(always)]
fn to_bucket(h: i32, fm: FastMod) -> i32 {
    fm.rem(h as u32 & 0x7fff_ffff) as i32
}

fn from_values(values: Vec<i32>, input: &dyn Array) -> ArrayRef {
    Arc::new(Int32Array::new(
        ScalarBuffer::from(values),
        input.logical_nulls(),
    ))
}

fn primitive<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    fm: FastMod,
    hash: impl Fn(T::Native) -> i32,
) -> ArrayRef {
    let out: Vec<i32> = a.values().iter().map(|v| to_bucket(hash(*v), fm)).collect();
    from_values(out, a)
}

fn bytes_each<'a>(
    len: usize,
    value: impl Fn(usize) -> &'a [u8],
    fm: FastMod,
    input: &dyn Array,
) -> ArrayRef {
    let out: Vec<i32> = (0..len)
        .map(|i| to_bucket(hash_bytes(value(i)), fm))
        .collect();
    from_values(out, input)
}

fn offsets<O: arrow_array::OffsetSizeTrait>(
    offs: &[O],
    data: &[u8],
    fm: FastMod,
    input: &dyn Array,
) -> ArrayRef {
    let out: Vec<i32> = offs
        .windows(2)
        .map(|w| to_bucket(hash_bytes(&data[w[0].as_usize()..w[1].as_usize()]), fm))
        .collect();
    from_values(out, input)
}

#[inline]
fn hash_i256(v: i256) -> i32 {
    let be = v.to_be_bytes();
    hash_bytes(minimal_twos_complement(&be))
}

/// Applies `bucket[n]` to `array`; the result is an int32 array of bucket numbers.
pub fn bucket(array: &dyn Array, n: i32) -> Result<ArrayRef> {
    if n <= 0 {
        return Err(Error::validation(format!(
            "invalid bucket count: {n} (must be > 0)"
        )));
    }
    let fm = FastMod::new(n as u32);
    let dt = array.data_type();
    Ok(match dt {
        DataType::Int32 => primitive(array.as_primitive::<Int32Type>(), fm, |v| {
            hash_long(v as i64)
        }),
        DataType::Int64 => primitive(array.as_primitive::<Int64Type>(), fm, hash_long),
        DataType::Date32 => primitive(array.as_primitive::<Date32Type>(), fm, |v| {
            hash_long(v as i64)
        }),
        DataType::Time64(TimeUnit::Microsecond) => {
            primitive(array.as_primitive::<Time64MicrosecondType>(), fm, hash_long)
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => primitive(
            array.as_primitive::<TimestampMicrosecondType>(),
            fm,
            hash_long,
        ),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            primitive(array.as_primitive::<TimestampNanosecondType>(), fm, |v| {
                hash_long(v.div_euclid(1000))
            })
        }
        DataType::Decimal128(_, _) => {
            primitive(array.as_primitive::<Decimal128Type>(), fm, hash_i128)
        }
        DataType::Decimal256(_, _) => {
            primitive(array.as_primitive::<Decimal256Type>(), fm, hash_i256)
        }
        DataType::Float32 => primitive(array.as_primitive::<Float32Type>(), fm, |v| {
            hash_double(v as f64)
        }),
        DataType::Float64 => primitive(array.as_primitive::<Float64Type>(), fm, hash_double),
        DataType::Boolean => {
            let a = array.as_boolean();
            let out: Vec<i32> = a
                .values()
                .iter()
                .map(|b| to_bucket(hash_long(b as i64), fm))
                .collect();
            from_values(out, a)
        }
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            offsets(a.value_offsets(), a.value_data(), fm, a)
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            offsets(a.value_offsets(), a.value_data(), fm, a)
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            offsets(a.value_offsets(), a.value_data(), fm, a)
        }
        DataType::LargeBinary => {
            let a = array.as_binary::<i64>();
            offsets(a.value_offsets(), a.value_data(), fm, a)
        }
        DataType::Utf8View => {
            let a = array.as_string_view();
            bytes_each(
                a.len(),
                // SAFETY: bytes_each calls this only with i < a.len().
                |i| unsafe { a.value_unchecked(i) }.as_bytes(),
                fm,
                a,
            )
        }
        DataType::BinaryView => {
            let a = array.as_binary_view();
            // SAFETY: bytes_each calls this only with i < a.len().
            bytes_each(a.len(), |i| unsafe { a.value_unchecked(i) }, fm, a)
        }
        DataType::FixedSizeBinary(_) => {
            let a = array.as_fixed_size_binary();
            bytes_each(a.len(), |i| a.value(i), fm, a)
        }
        other => return Err(unsupported("bucket", other)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
        Float32Array, Float64Array, Int64Array, StringArray, StringViewArray,
        TimestampNanosecondArray,
    };

    fn ints(a: ArrayRef) -> Vec<Option<i32>> {
        a.as_primitive::<Int32Type>().iter().collect()
    }

    #[test]
    fn fastmod_is_exact() {
        for d in [
            1u32,
            2,
            3,
            7,
            16,
            100,
            128,
            1000,
            65537,
            0x7fff_ffff,
            u32::MAX,
        ] {
            let fm = FastMod::new(d);
            for a in [
                0u32,
                1,
                2,
                99,
                12345,
                0x7fff_fffe,
                0x7fff_ffff,
                u32::MAX - 1,
            ] {
                assert_eq!(fm.rem(a), a % d, "{a} % {d}");
            }
        }
    }

    #[test]
    fn spec_buckets_with_nulls() {
        let a = Int64Array::from(vec![Some(34), None, Some(0)]);
        assert_eq!(
            ints(bucket(&a, 100).unwrap()),
            vec![Some(79), None, Some(76)] // hash(0) = 1669671676 (spec-facts 3.1)
        );
        let a = Int32Array::from(vec![Some(34), None]);
        assert_eq!(ints(bucket(&a, 16).unwrap()), vec![Some(3), None]);
        let a = Date32Array::from(vec![17486]);
        assert_eq!(ints(bucket(&a, 100).unwrap()), vec![Some(26)]);
        let a = StringArray::from(vec![Some("iceberg"), None]);
        assert_eq!(ints(bucket(&a, 100).unwrap()), vec![Some(89), None]);
        let a = StringViewArray::from(vec![Some("iceberg"), None, Some("a much longer string")]);
        let b = StringArray::from(vec![Some("iceberg"), None, Some("a much longer string")]);
        assert_eq!(ints(bucket(&a, 7).unwrap()), ints(bucket(&b, 7).unwrap()));
        let a = Decimal128Array::from(vec![1420])
            .with_precision_and_scale(9, 2)
            .unwrap();
        assert_eq!(ints(bucket(&a, 100).unwrap()), vec![Some(59)]);
        let a = Decimal128Array::from(vec![-128])
            .with_precision_and_scale(5, 2)
            .unwrap();
        assert_eq!(ints(bucket(&a, 16).unwrap()), vec![Some(13)]);
        let a = FixedSizeBinaryArray::try_from_iter(vec![b"foo".to_vec()].into_iter()).unwrap();
        assert_eq!(ints(bucket(&a, 128).unwrap()), vec![Some(32)]);
        let a = BinaryArray::from(vec![&[0u8, 1, 2, 3][..]]);
        assert_eq!(ints(bucket(&a, 128).unwrap()), vec![Some(57)]);
        let a = BooleanArray::from(vec![Some(true), None]);
        let t = (1392991556u32 & 0x7fff_ffff) % 10;
        assert_eq!(ints(bucket(&a, 10).unwrap()), vec![Some(t as i32), None]);
    }

    #[test]
    fn nanos_floor_to_micros_and_floats_canonicalise() {
        let ns = TimestampNanosecondArray::from(vec![1_510_871_468_000_001_001, -1]);
        let us = Int64Array::from(vec![1_510_871_468_000_001, -1]);
        assert_eq!(
            ints(bucket(&ns, 1000).unwrap()),
            ints(bucket(&us, 1000).unwrap())
        );
        let f = Float32Array::from(vec![1.0f32, -0.0, f32::NAN]);
        let d = Float64Array::from(vec![1.0f64, 0.0, f64::NAN]);
        assert_eq!(
            ints(bucket(&f, 1000).unwrap()),
            ints(bucket(&d, 1000).unwrap())
        );
    }

    #[test]
    fn rejects_bad_count_and_type() {
        let a = Int64Array::from(vec![1]);
        assert!(matches!(bucket(&a, 0), Err(Error::Validation(_))));
        let a = arrow_array::Int16Array::from(vec![1]);
        let e = bucket(&a, 4).unwrap_err();
        assert!(e.message().contains("Int16"), "{e}");
    }
}
