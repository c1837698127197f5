//! Encoding Arrow columns as Avro values. An [`Enc`] tree is bound once per batch to the
//! columns and then encodes row after row into a container's datum buffer.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
};
use arrow_array::{Array, ArrayRef, BooleanArray, FixedSizeBinaryArray};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;

use super::binary::{put_bytes, put_int, put_long};
use crate::{Error, Result};

/// An encoder over borrowed Arrow data.
pub enum Enc<'a> {
    /// An absent optional column: always the null branch (0) of `["null", T]`.
    Null,
    /// A constant long or int (e.g. v1 `block_size_in_bytes`).
    Const(i64),
    /// `["null", T]`: branch 0 for null rows, else 1 and the value.
    Opt(Option<&'a NullBuffer>, Box<Enc<'a>>),
    /// A required value: rows that are null are an error naming the column.
    Req(Option<&'a NullBuffer>, String, Box<Enc<'a>>),
    Bool(&'a BooleanArray),
    Int(&'a [i32]),
    Long(&'a [i64]),
    Float(&'a [f32]),
    Double(&'a [f64]),
    Bin(&'a [i32], &'a [u8]),
    Fixed(&'a FixedSizeBinaryArray),
    /// Decimal as a big-endian fixed of the given size.
    Decimal(usize, &'a [i128]),
    Array(&'a [i32], Box<Enc<'a>>),
    Record(Vec<Enc<'a>>),
    /// An Arrow `map<int32, int64|binary>` without null keys or values as an Avro array of
    /// `{key, value}` records (the metric maps of data files): map offsets, keys, values.
    IntMap(&'a [i32], &'a [i32], MapVals<'a>),
}

/// The values of an [`Enc::IntMap`].
pub enum MapVals<'a> {
    Long(&'a [i64]),
    /// Offsets and data of binary values.
    Bin(&'a [i32], &'a [u8]),
}

impl<'a> Enc<'a> {
    /// A leaf encoder for a primitive Arrow array (`fixed_size` gives the Avro fixed size of
    /// decimals).
    pub fn leaf(arr: &'a ArrayRef, fixed_size: usize, name: &str) -> Result<Enc<'a>> {
        Ok(match arr.data_type() {
            DataType::Boolean => Enc::Bool(arr.as_boolean()),
            DataType::Int32 => Enc::Int(arr.as_primitive::<Int32Type>().values()),
            DataType::Date32 => Enc::Int(arr.as_primitive::<Date32Type>().values()),
            DataType::Int64 => Enc::Long(arr.as_primitive::<Int64Type>().values()),
            DataType::Timestamp(_, _) | DataType::Time64(_) => Enc::Long(long_values(arr)?),
            DataType::Float32 => Enc::Float(arr.as_primitive::<Float32Type>().values()),
            DataType::Float64 => Enc::Double(arr.as_primitive::<Float64Type>().values()),
            DataType::Binary => {
                let b = arr.as_binary::<i32>();
                Enc::Bin(b.value_offsets(), b.values().as_slice())
            }
            DataType::Utf8 => {
                let s = arr.as_string::<i32>();
                Enc::Bin(s.value_offsets(), s.values().as_slice())
            }
            DataType::FixedSizeBinary(_) => Enc::Fixed(arr.as_fixed_size_binary()),
            DataType::Decimal128(_, _) => {
                Enc::Decimal(fixed_size, arr.as_primitive::<Decimal128Type>().values())
            }
            other => {
                return Err(Error::validation(format!(
                    "column {name}: Arrow type {other} cannot be written"
                )))
            }
        })
    }

    /// Encodes row `i`. Optional values and leaves are encoded inline where a record or array
    /// encodes a child; records, arrays and maps go through [`Enc::encode_nested`].
    #[inline(always)]
    pub fn encode(&self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Enc::Opt(nulls, inner) => {
                if nulls.is_some_and(|n| n.is_null(i)) {
                    out.push(0);
                    Ok(())
                } else {
                    out.push(2); // zigzag(1)
                    inner.encode_value(i, out)
                }
            }
            _ => self.encode_value(i, out),
        }
    }

    /// [`Enc::encode`] of anything but an optional value.
    #[inline(always)]
    fn encode_value(&self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Enc::Int(v) => put_int(out, v[i]),
            Enc::Long(v) => put_long(out, v[i]),
            Enc::Bin(offs, data) => {
                put_bytes(out, &data[offs[i] as usize..offs[i + 1] as usize]);
            }
            _ => return self.encode_nested(i, out),
        }
        Ok(())
    }

    /// [`Enc::encode`] of the encoders it does not handle inline.
    #[inline(never)]
    fn encode_nested(&self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Enc::Null => out.push(0),
            Enc::Const(v) => put_long(out, *v),
            Enc::Opt(nulls, inner) => {
                if nulls.is_some_and(|n| n.is_null(i)) {
                    out.push(0);
                } else {
                    out.push(2); // zigzag(1)
                    inner.encode(i, out)?;
                }
            }
            Enc::Req(nulls, name, inner) => {
                if nulls.is_some_and(|n| n.is_null(i)) {
                    return Err(Error::validation(format!(
                        "{name} is required but row {i} is null"
                    )));
                }
                inner.encode(i, out)?;
            }
            Enc::Bool(a) => out.push(a.value(i) as u8),
            Enc::Int(v) => put_int(out, v[i]),
            Enc::Long(v) => put_long(out, v[i]),
            Enc::Float(v) => out.extend_from_slice(&v[i].to_le_bytes()),
            Enc::Double(v) => out.extend_from_slice(&v[i].to_le_bytes()),
            Enc::Bin(offs, data) => {
                put_bytes(out, &data[offs[i] as usize..offs[i + 1] as usize]);
            }
            Enc::Fixed(a) => out.extend_from_slice(a.value(i)),
            Enc::Decimal(size, v) => {
                let b = v[i].to_be_bytes();
                out.extend_from_slice(&b[16 - size..]);
            }
            Enc::Array(offs, item) => {
                let (s, e) = (offs[i] as usize, offs[i + 1] as usize);
                if e > s {
                    put_long(out, (e - s) as i64);
                    for j in s..e {
                        item.encode(j, out)?;
                    }
                }
                out.push(0);
            }
            Enc::Record(fields) => {
                for f in fields {
                    f.encode(i, out)?;
                }
            }
            Enc::IntMap(offs, keys, vals) => {
                let (s, e) = (offs[i] as usize, offs[i + 1] as usize);
                if e > s {
                    put_long(out, (e - s) as i64);
                    match vals {
                        MapVals::Long(v) => {
                            for (k, x) in keys[s..e].iter().zip(&v[s..e]) {
                                put_int(out, *k);
                                put_long(out, *x);
                            }
                        }
                        MapVals::Bin(vo, data) => {
                            for (j, k) in (s..e).zip(&keys[s..e]) {
                                put_int(out, *k);
                                put_bytes(out, &data[vo[j] as usize..vo[j + 1] as usize]);
                            }
                        }
                    }
                }
                out.push(0);
            }
        }
        Ok(())
    }
}

/// The i64 values of a Timestamp or Time64 array.
fn long_values(arr: &ArrayRef) -> Result<&[i64]> {
    use arrow_array::types::*;
    Ok(match arr.data_type() {
        DataType::Timestamp(u, _) => match u {
            arrow_schema::TimeUnit::Microsecond => {
                arr.as_primitive::<TimestampMicrosecondType>().values()
            }
            arrow_schema::TimeUnit::Nanosecond => {
                arr.as_primitive::<TimestampNanosecondType>().values()
            }
            arrow_schema::TimeUnit::Millisecond => {
                arr.as_primitive::<TimestampMillisecondType>().values()
            }
            arrow_schema::TimeUnit::Second => arr.as_primitive::<TimestampSecondType>().values(),
        },
        DataType::Time64(arrow_schema::TimeUnit::Nanosecond) => {
            arr.as_primitive::<Time64NanosecondType>().values()
        }
        DataType::Time64(_) => arr.as_primitive::<Time64MicrosecondType>().values(),
        other => return Err(Error::internal(format!("long_values of {other}"))),
    })
}
