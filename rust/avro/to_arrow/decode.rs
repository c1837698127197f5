//! Decoding one value into the decoder tree: inline leaves, nested values and int-keyed maps.

use super::super::binary::Reader;
use super::node::{KeySet, MapValues, Node, Src, Step};
use crate::{Error, Result};

/// Appends bytes; the 4- and 8-byte values of bounds are copied without a call to memcpy.
#[inline(always)]
pub(super) fn extend_small(data: &mut Vec<u8>, b: &[u8]) {
    if let Ok(a) = <[u8; 8]>::try_from(b) {
        data.extend_from_slice(&a);
    } else if let Ok(a) = <[u8; 4]>::try_from(b) {
        data.extend_from_slice(&a);
    } else {
        data.extend_from_slice(b);
    }
}

/// Reads the blocks of one int-keyed map, appending its pairs.
#[inline]
pub(super) fn decode_int_map(
    r: &mut Reader<'_>,
    key_first: bool,
    keys: &mut Vec<i32>,
    values: &mut MapValues,
) -> Result<()> {
    loop {
        let c = r.block_count(2)?;
        if c == 0 {
            return Ok(());
        }
        keys.reserve(c);
        match values {
            MapValues::Long(v) => {
                v.reserve(c);
                for _ in 0..c {
                    let (k, x) = if key_first {
                        r.int_long()?
                    } else {
                        let x = r.long()?;
                        (r.int()?, x)
                    };
                    keys.push(k);
                    v.push(x);
                }
            }
            MapValues::Bin(offs, data) => {
                offs.reserve(c);
                for _ in 0..c {
                    let (k, b) = if key_first {
                        r.int_bytes()?
                    } else {
                        let b = r.bytes()?;
                        (r.int()?, b)
                    };
                    keys.push(k);
                    extend_small(data, b);
                    offs.push(
                        i32::try_from(data.len())
                            .map_err(|_| Error::corrupt("binary column exceeds 2 GiB"))?,
                    );
                }
            }
        }
    }
}

/// [`decode_int_map`] keeping only the pairs whose key is in `keep`; the others are read past
/// without being stored.
pub(super) fn decode_int_map_kept(
    r: &mut Reader<'_>,
    key_first: bool,
    keys: &mut Vec<i32>,
    values: &mut MapValues,
    keep: &KeySet,
) -> Result<()> {
    loop {
        let c = r.block_count(2)?;
        if c == 0 {
            return Ok(());
        }
        for _ in 0..c {
            match values {
                MapValues::Long(v) => {
                    let (k, x) = if key_first {
                        r.int_long()?
                    } else {
                        let x = r.long()?;
                        (r.int()?, x)
                    };
                    if keep.contains(k) {
                        keys.push(k);
                        v.push(x);
                    }
                }
                MapValues::Bin(offs, data) => {
                    let (k, b) = if key_first {
                        r.int_bytes()?
                    } else {
                        let b = r.bytes()?;
                        (r.int()?, b)
                    };
                    if keep.contains(k) {
                        keys.push(k);
                        extend_small(data, b);
                        offs.push(
                            i32::try_from(data.len())
                                .map_err(|_| Error::corrupt("binary column exceeds 2 GiB"))?,
                        );
                    }
                }
            }
        }
    }
}

#[inline]
pub(super) fn read_i64(src: Src, r: &mut Reader<'_>) -> Result<i64> {
    match src {
        Src::Int => r.int().map(i64::from),
        _ => r.long(),
    }
}

#[inline]
pub(super) fn read_bytes<'a>(src: Src, r: &mut Reader<'a>) -> Result<&'a [u8]> {
    match src {
        Src::Fixed(n) => r.fixed(n),
        _ => r.bytes(),
    }
}

pub(super) fn decimal_from_be(b: &[u8]) -> Result<i128> {
    if b.len() > 16 {
        return Err(Error::corrupt(format!(
            "decimal of {} bytes exceeds 16",
            b.len()
        )));
    }
    if b.is_empty() {
        return Ok(0);
    }
    let fill = if b[0] & 0x80 != 0 { 0xff } else { 0 };
    let mut a = [fill; 16];
    a[16 - b.len()..].copy_from_slice(b);
    Ok(i128::from_be_bytes(a))
}

#[cold]
pub(super) fn union_branch(b: i64, branches: usize) -> Error {
    Error::corrupt(format!(
        "unknown union branch {b} (the union has {branches})"
    ))
}

impl Node {
    /// Decodes one value. Optional values and the common leaves (ints, longs, bytes and
    /// strings) are decoded inline wherever a record or list decodes a child; everything else
    /// goes through [`Node::decode_nested`], so only nested values cost a call.
    #[inline(always)]
    pub(super) fn decode(&mut self, r: &mut Reader<'_>) -> Result<()> {
        match self {
            Node::Opt {
                null,
                value,
                branches,
                inner,
            } => {
                let b = r.long()?;
                if b >= 0 && b as usize == *value {
                    inner.decode_value(r)
                } else if b >= 0 && Some(b as usize) == *null {
                    inner.push_null();
                    Ok(())
                } else {
                    Err(union_branch(b, *branches))
                }
            }
            _ => self.decode_value(r),
        }
    }

    /// [`Node::decode`] of a value that is not a union.
    #[inline(always)]
    pub(super) fn decode_value(&mut self, r: &mut Reader<'_>) -> Result<()> {
        match self {
            Node::I32(src, v, n) => {
                v.push(if *src == Src::Int {
                    r.int()?
                } else {
                    let x = r.long()?;
                    i32::try_from(x)
                        .map_err(|_| Error::corrupt(format!("value {x} out of the int range")))?
                });
                n.valid();
            }
            Node::I64(src, v, n) => {
                v.push(read_i64(*src, r)?);
                n.valid();
            }
            Node::Bin(src, offs, data, n) => {
                let b = read_bytes(*src, r)?;
                data.extend_from_slice(b);
                let end = i32::try_from(data.len())
                    .map_err(|_| Error::corrupt("binary column exceeds 2 GiB"))?;
                offs.push(end);
                n.valid();
            }
            _ => self.decode_nested(r)?,
        }
        Ok(())
    }

    /// [`Node::decode`] of the nodes it does not decode inline.
    #[inline(never)]
    pub(super) fn decode_nested(&mut self, r: &mut Reader<'_>) -> Result<()> {
        match self {
            // decoded inline by `decode_value`, which is the only caller
            Node::I32(..) | Node::I64(..) | Node::Bin(..) => self.decode_value(r)?,
            Node::Bool(v, n) => {
                v.push(r.boolean()?);
                n.valid();
            }
            Node::F32(v, n) => {
                v.push(r.float()?);
                n.valid();
            }
            Node::F64(src, v, n) => {
                v.push(if *src == Src::Float {
                    r.float()? as f64
                } else {
                    r.double()?
                });
                n.valid();
            }
            Node::FixedBin(src, size, data, n) => {
                let b = read_bytes(*src, r)?;
                if b.len() != *size {
                    return Err(Error::corrupt(format!(
                        "fixed value of {} bytes, expected {size}",
                        b.len()
                    )));
                }
                data.extend_from_slice(b);
                n.valid();
            }
            Node::Dec(src, v, n) => {
                v.push(decimal_from_be(read_bytes(*src, r)?)?);
                n.valid();
            }
            Node::Opt {
                null,
                value,
                branches,
                inner,
            } => {
                let b = r.long()?;
                if b >= 0 && b as usize == *value {
                    inner.decode(r)?;
                } else if b >= 0 && Some(b as usize) == *null {
                    inner.push_null();
                } else {
                    return Err(union_branch(b, *branches));
                }
            }
            Node::List {
                offsets,
                nulls,
                item_min,
                item,
            } => {
                let mut total = *offsets.last().unwrap_or(&0) as usize;
                loop {
                    let c = r.block_count(*item_min)?;
                    if c == 0 {
                        break;
                    }
                    for _ in 0..c {
                        item.decode(r)?;
                    }
                    total += c;
                }
                offsets.push(
                    i32::try_from(total).map_err(|_| Error::corrupt("list column too long"))?,
                );
                nulls.valid();
            }
            Node::Record {
                steps,
                children,
                missing,
                nulls,
                len,
            } => {
                for s in steps.iter() {
                    match s {
                        Step::Read(i) => children[*i].decode(r)?,
                        Step::Skip(schema) => schema.skip(r)?,
                    }
                }
                for &i in missing.iter() {
                    children[i].push_null();
                }
                nulls.valid();
                *len += 1;
            }
            Node::Missing(len) => *len += 1,
            Node::IntMap {
                offsets,
                nulls,
                key_first,
                keys,
                values,
                keep,
            } => {
                match keep {
                    None => decode_int_map(r, *key_first, keys, values)?,
                    Some(keep) => decode_int_map_kept(r, *key_first, keys, values, keep)?,
                }
                offsets.push(
                    i32::try_from(keys.len()).map_err(|_| Error::corrupt("map column too long"))?,
                );
                nulls.valid();
            }
        }
        Ok(())
    }
}
