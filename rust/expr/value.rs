//! Value comparison and column access shared by the evaluators: ordering of physical values,
//! bound decoding by stored length (bounds written before a type promotion), lookups in the
//! int-keyed metrics maps, and typed values of partition columns.

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
    Time64MicrosecondType, TimestampMicrosecondType, TimestampNanosecondType,
};
use arrow_array::{Array, MapArray};
use arrow_schema::{DataType, TimeUnit};

use crate::serde::binary::from_bytes;
use crate::serde::{PrimitiveType, Value};
use crate::{Error, Result};

/// The order of two physical values of one type: integers numerically, floats as IEEE 754
/// (`None` when either is NaN; `-0.0 == 0.0`), bytes and strings as unsigned bytes.
pub fn cmp(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.as_slice().cmp(y.as_slice())),
        (Value::Str(x), Value::Str(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// The two unsigned ranges of uuid bounds `lower` and `upper` written in signed order (lower
/// above upper as bytes): older Iceberg Java releases ordered uuids as signed 128-bit numbers
/// in partition summaries and metrics, so such bounds hold the values from `lower` to the
/// largest uuid and from the smallest to `upper`. `None` for bounds in unsigned order.
pub fn signed_uuid_ranges(lower: &Value, upper: &Value) -> Option<[(Value, Value); 2]> {
    match (lower, upper) {
        (Value::Bytes(l), Value::Bytes(u)) if l.len() == 16 && u.len() == 16 && l > u => Some([
            (lower.clone(), Value::Bytes(vec![0xff; 16])),
            (Value::Bytes(vec![0; 16]), upper.clone()),
        ]),
        _ => None,
    }
}

/// Whether `v` is a float NaN.
pub fn is_nan(v: &Value) -> bool {
    matches!(v, Value::Float(f) if f.is_nan())
}

/// The bytes of a string or binary value.
pub fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::Bytes(b) => Some(b),
        Value::Str(s) => Some(s.as_bytes()),
        _ => None,
    }
}

/// Whether the type's values have a binary bound form the evaluators compare.
pub fn has_bounds(t: &PrimitiveType) -> bool {
    !matches!(
        t,
        PrimitiveType::Unknown
            | PrimitiveType::Variant
            | PrimitiveType::Geometry
            | PrimitiveType::Geography
    )
}

/// Decodes a serialised bound of a column of type `t`, by its stored length: 4-byte ints under
/// a long column, 4-byte floats under a double column (both handled by the serde), and 4-byte
/// dates under a timestamp column (promoted to the first instant of the day). Strings stay
/// bytes (a truncated bound need not be checked as UTF-8 to be ordered).
pub fn decode_bound(t: &PrimitiveType, data: &[u8]) -> Result<Value> {
    use PrimitiveType as T;
    match t {
        T::String => Ok(Value::Bytes(data.to_vec())),
        T::Timestamp | T::Timestamptz | T::TimestampNs | T::TimestamptzNs if data.len() == 4 => {
            let days = i32::from_le_bytes([data[0], data[1], data[2], data[3]]) as i128;
            let per_day: i128 = if matches!(t, T::TimestampNs | T::TimestamptzNs) {
                86_400_000_000_000
            } else {
                86_400_000_000
            };
            Ok(Value::Int(days * per_day))
        }
        _ => from_bytes(t, data),
    }
}

/// For each row of an int-keyed map column, the index into the map's value array of the entry
/// keyed `id` (for each of `ids`), or `None` when the row, the map, or the entry is missing,
/// or when the map holds the key twice.
pub fn map_lookup(
    col: Option<&MapArray>,
    ids: &[i32],
    rows: usize,
) -> Result<Vec<Vec<Option<usize>>>> {
    let mut out = vec![vec![None; rows]; ids.len()];
    let Some(map) = col else { return Ok(out) };
    let keys = map
        .keys()
        .as_primitive_opt::<Int32Type>()
        .ok_or_else(|| Error::validation("metrics map keys must be int32 field ids"))?;
    let offsets = map.value_offsets();
    let value_nulls = map.values().logical_nulls();
    for row in 0..rows.min(map.len()) {
        if map.is_null(row) {
            continue;
        }
        let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
        for e in start..end {
            if value_nulls.as_ref().is_some_and(|n| n.is_null(e)) {
                continue;
            }
            let k = keys.value(e);
            for (slot, id) in ids.iter().enumerate() {
                if *id == k {
                    out[slot][row] = match out[slot][row] {
                        None => Some(e),
                        // a key given twice (a damaged map) has no one value: unknown
                        Some(_) => Some(usize::MAX),
                    };
                }
            }
        }
        for slot in &mut out {
            if slot[row] == Some(usize::MAX) {
                slot[row] = None;
            }
        }
    }
    Ok(out)
}

/// The values of a partition column (an Arrow array of an Iceberg primitive's physical type)
/// as [`Value`]s, strings as bytes; `None` for nulls.
pub fn array_values(a: &dyn Array) -> Result<Vec<Option<Value>>> {
    let n = a.len();
    let nulls = a.logical_nulls();
    let valid = |i: usize| nulls.as_ref().is_none_or(|m| m.is_valid(i));
    let collect = |f: &dyn Fn(usize) -> Value| -> Vec<Option<Value>> {
        (0..n)
            .map(|i| if valid(i) { Some(f(i)) } else { None })
            .collect()
    };
    Ok(match a.data_type() {
        DataType::Boolean => {
            let b = a.as_boolean();
            collect(&|i| Value::Bool(b.value(i)))
        }
        DataType::Int32 => {
            let p = a.as_primitive::<Int32Type>();
            collect(&|i| Value::Int(p.value(i) as i128))
        }
        DataType::Int64 => {
            let p = a.as_primitive::<Int64Type>();
            collect(&|i| Value::Int(p.value(i) as i128))
        }
        DataType::Date32 => {
            let p = a.as_primitive::<Date32Type>();
            collect(&|i| Value::Int(p.value(i) as i128))
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            let p = a.as_primitive::<Time64MicrosecondType>();
            collect(&|i| Value::Int(p.value(i) as i128))
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            let p = a.as_primitive::<TimestampMicrosecondType>();
            collect(&|i| Value::Int(p.value(i) as i128))
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            let p = a.as_primitive::<TimestampNanosecondType>();
            collect(&|i| Value::Int(p.value(i) as i128))
        }
        DataType::Decimal128(_, _) => {
            let p = a.as_primitive::<Decimal128Type>();
            collect(&|i| Value::Int(p.value(i)))
        }
        DataType::Float32 => {
            let p = a.as_primitive::<Float32Type>();
            collect(&|i| Value::Float(p.value(i) as f64))
        }
        DataType::Float64 => {
            let p = a.as_primitive::<Float64Type>();
            collect(&|i| Value::Float(p.value(i)))
        }
        DataType::Utf8 => {
            let s = a.as_string::<i32>();
            collect(&|i| Value::Bytes(s.value(i).as_bytes().to_vec()))
        }
        DataType::LargeUtf8 => {
            let s = a.as_string::<i64>();
            collect(&|i| Value::Bytes(s.value(i).as_bytes().to_vec()))
        }
        DataType::Utf8View => {
            let s = a.as_string_view();
            collect(&|i| Value::Bytes(s.value(i).as_bytes().to_vec()))
        }
        DataType::Binary => {
            let b = a.as_binary::<i32>();
            collect(&|i| Value::Bytes(b.value(i).to_vec()))
        }
        DataType::LargeBinary => {
            let b = a.as_binary::<i64>();
            collect(&|i| Value::Bytes(b.value(i).to_vec()))
        }
        DataType::FixedSizeBinary(_) => {
            let b = a.as_fixed_size_binary();
            collect(&|i| Value::Bytes(b.value(i).to_vec()))
        }
        other => {
            return Err(Error::validation(format!(
                "cannot evaluate a filter over a partition column of Arrow type {other}"
            )))
        }
    })
}
