//! Reserving room, appending nulls and turning the decoder tree into Arrow arrays.

use std::sync::Arc;

use arrow_array::Array;
use arrow_array::{
    new_null_array, ArrayRef, BinaryArray, BooleanArray, Decimal128Array, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int32Array, Int64Array, ListArray, MapArray, StringArray,
    StructArray,
};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Fields};

use super::node::{MapValues, Node};
use crate::{Error, Result};

impl Node {
    /// Reserves room for `n` more values, children sized by the averages decoded so far.
    /// Every stored value or byte takes at least one byte of input, so no reservation exceeds
    /// `budget`, the input bytes left.
    pub(super) fn reserve(&mut self, n: usize, budget: usize) {
        let scaled = |n: usize, items: usize, rows: usize| -> usize {
            if rows == 0 {
                0
            } else {
                n.saturating_mul(items.div_ceil(rows)).min(budget)
            }
        };
        match self {
            Node::Bool(v, nl) => {
                v.reserve(n);
                nl.reserve(n);
            }
            Node::I32(_, v, nl) => {
                v.reserve(n);
                nl.reserve(n);
            }
            Node::I64(_, v, nl) => {
                v.reserve(n);
                nl.reserve(n);
            }
            Node::F32(v, nl) => {
                v.reserve(n);
                nl.reserve(n);
            }
            Node::F64(_, v, nl) => {
                v.reserve(n);
                nl.reserve(n);
            }
            Node::Bin(_, offs, data, nl) => {
                let rows = offs.len() - 1;
                data.reserve(scaled(n, data.len(), rows));
                offs.reserve(n);
                nl.reserve(n);
            }
            Node::FixedBin(_, size, data, nl) => {
                data.reserve(n.saturating_mul(*size).min(budget));
                nl.reserve(n);
            }
            Node::Dec(_, v, nl) => {
                v.reserve(n);
                nl.reserve(n);
            }
            Node::Opt { inner, .. } => inner.reserve(n, budget),
            Node::List {
                offsets,
                nulls,
                item,
                ..
            } => {
                let total = *offsets.last().unwrap_or(&0) as usize;
                item.reserve(scaled(n, total, offsets.len() - 1), budget);
                offsets.reserve(n);
                nulls.reserve(n);
            }
            Node::Record {
                children, nulls, ..
            } => {
                for c in children.iter_mut() {
                    c.reserve(n, budget);
                }
                nulls.reserve(n);
            }
            Node::Missing(_) => {}
            Node::IntMap {
                offsets,
                nulls,
                keys,
                values,
                ..
            } => {
                let rows = offsets.len() - 1;
                let pairs = scaled(n, keys.len(), rows);
                match values {
                    MapValues::Long(v) => v.reserve(pairs),
                    MapValues::Bin(offs, data) => {
                        data.reserve(scaled(n, data.len(), rows));
                        offs.reserve(pairs);
                    }
                }
                keys.reserve(pairs);
                offsets.reserve(n);
                nulls.reserve(n);
            }
        }
    }

    /// Appends a null: inline for the common leaves, a call for the rest.
    #[inline(always)]
    pub(super) fn push_null(&mut self) {
        match self {
            Node::I32(_, v, n) => {
                v.push(0);
                n.null();
            }
            Node::I64(_, v, n) => {
                v.push(0);
                n.null();
            }
            Node::Bin(_, offs, _, n) => {
                offs.push(*offs.last().unwrap_or(&0));
                n.null();
            }
            _ => self.push_null_nested(),
        }
    }

    #[inline(never)]
    pub(super) fn push_null_nested(&mut self) {
        match self {
            Node::Bool(v, n) => {
                v.push(false);
                n.null();
            }
            Node::I32(_, v, n) => {
                v.push(0);
                n.null();
            }
            Node::I64(_, v, n) => {
                v.push(0);
                n.null();
            }
            Node::F32(v, n) => {
                v.push(0.0);
                n.null();
            }
            Node::F64(_, v, n) => {
                v.push(0.0);
                n.null();
            }
            Node::Bin(_, offs, _, n) => {
                offs.push(*offs.last().unwrap_or(&0));
                n.null();
            }
            Node::FixedBin(_, size, data, n) => {
                data.resize(data.len() + *size, 0);
                n.null();
            }
            Node::Dec(_, v, n) => {
                v.push(0);
                n.null();
            }
            Node::Opt { inner, .. } => inner.push_null(),
            Node::List { offsets, nulls, .. } => {
                offsets.push(*offsets.last().unwrap_or(&0));
                nulls.null();
            }
            Node::Record {
                children,
                nulls,
                len,
                ..
            } => {
                for c in children.iter_mut() {
                    c.push_null();
                }
                nulls.null();
                *len += 1;
            }
            Node::Missing(len) => *len += 1,
            Node::IntMap { offsets, nulls, .. } => {
                offsets.push(*offsets.last().unwrap_or(&0));
                nulls.null();
            }
        }
    }

    pub(super) fn finish(self, t: &DataType) -> Result<ArrayRef> {
        Ok(match self {
            Node::Bool(v, n) => Arc::new(BooleanArray::new(v.into(), n.finish())),
            Node::I32(_, v, n) => {
                let a = Int32Array::new(v.into(), n.finish());
                if *t == DataType::Int32 {
                    Arc::new(a)
                } else {
                    arrow_array::make_array(
                        a.into_data().into_builder().data_type(t.clone()).build()?,
                    )
                }
            }
            Node::I64(_, v, n) => {
                let a = Int64Array::new(v.into(), n.finish());
                if *t == DataType::Int64 {
                    Arc::new(a)
                } else {
                    arrow_array::make_array(
                        a.into_data().into_builder().data_type(t.clone()).build()?,
                    )
                }
            }
            Node::F32(v, n) => Arc::new(Float32Array::new(v.into(), n.finish())),
            Node::F64(_, v, n) => Arc::new(Float64Array::new(v.into(), n.finish())),
            Node::Bin(_, offs, data, n) => {
                let offsets = OffsetBuffer::new(ScalarBuffer::from(offs));
                if *t == DataType::Utf8 {
                    Arc::new(
                        StringArray::try_new(offsets, Buffer::from_vec(data), n.finish())
                            .map_err(|e| Error::corrupt(format!("string column: {e}")))?,
                    )
                } else {
                    Arc::new(BinaryArray::new(
                        offsets,
                        Buffer::from_vec(data),
                        n.finish(),
                    ))
                }
            }
            Node::FixedBin(_, size, data, n) => Arc::new(FixedSizeBinaryArray::try_new(
                size as i32,
                Buffer::from_vec(data),
                n.finish(),
            )?),
            Node::Dec(_, v, n) => {
                let DataType::Decimal128(p, s) = t else {
                    return Err(Error::internal("decimal target"));
                };
                Arc::new(
                    Decimal128Array::new(v.into(), n.finish()).with_precision_and_scale(*p, *s)?,
                )
            }
            Node::Opt { inner, .. } => inner.finish(t)?,
            Node::List {
                offsets,
                nulls,
                item,
                ..
            } => {
                let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
                match t {
                    DataType::List(f) => Arc::new(ListArray::try_new(
                        f.clone(),
                        offsets,
                        item.finish(f.data_type())?,
                        nulls.finish(),
                    )?),
                    DataType::Map(f, sorted) => {
                        let entries = item.finish(f.data_type())?;
                        let entries = entries
                            .as_any()
                            .downcast_ref::<StructArray>()
                            .ok_or_else(|| Error::internal("map entries are not a struct"))?;
                        if entries.column(0).null_count() > 0 || entries.null_count() > 0 {
                            return Err(Error::corrupt("map with a null key or entry"));
                        }
                        let entries = StructArray::new(
                            match f.data_type() {
                                DataType::Struct(fs) => fs.clone(),
                                _ => return Err(Error::internal("map entries type")),
                            },
                            entries.columns().to_vec(),
                            None,
                        );
                        Arc::new(MapArray::try_new(
                            f.clone(),
                            offsets,
                            entries,
                            nulls.finish(),
                            *sorted,
                        )?)
                    }
                    _ => return Err(Error::internal("list target")),
                }
            }
            Node::Record {
                children,
                nulls,
                len,
                ..
            } => {
                let DataType::Struct(fields) = t else {
                    return Err(Error::internal("record target"));
                };
                finish_struct(fields, children, nulls.finish(), len)?
            }
            Node::Missing(len) => new_null_array(t, len),
            Node::IntMap {
                offsets,
                nulls,
                keys,
                values,
                ..
            } => {
                let DataType::Map(f, sorted) = t else {
                    return Err(Error::internal("map target"));
                };
                let DataType::Struct(fs) = f.data_type() else {
                    return Err(Error::internal("map entries type"));
                };
                let values: ArrayRef = match values {
                    MapValues::Long(v) => Arc::new(Int64Array::new(v.into(), None)),
                    MapValues::Bin(offs, data) => Arc::new(BinaryArray::new(
                        OffsetBuffer::new(ScalarBuffer::from(offs)),
                        Buffer::from_vec(data),
                        None,
                    )),
                };
                let keys: ArrayRef = Arc::new(Int32Array::new(keys.into(), None));
                let entries = StructArray::try_new(fs.clone(), vec![keys, values], None)?;
                Arc::new(MapArray::try_new(
                    f.clone(),
                    OffsetBuffer::new(ScalarBuffer::from(offsets)),
                    entries,
                    nulls.finish(),
                    *sorted,
                )?)
            }
        })
    }
}

pub(super) fn finish_struct(
    fields: &Fields,
    children: Vec<Node>,
    nulls: Option<NullBuffer>,
    len: usize,
) -> Result<ArrayRef> {
    let mut cols = Vec::with_capacity(children.len());
    for (c, f) in children.into_iter().zip(fields.iter()) {
        let c = match c {
            Node::Missing(_) => new_null_array(f.data_type(), len),
            other => other.finish(f.data_type())?,
        };
        cols.push(c);
    }
    Ok(Arc::new(StructArray::try_new_with_length(
        fields.clone(),
        cols,
        nulls,
        len,
    )?))
}
